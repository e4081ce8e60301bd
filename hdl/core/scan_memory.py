"""The memory scan: Algorithm 1 over segments kept in an external memory reached through a port of variable
latency (:class:`~apbbf.hdl.core.memory_port.MemoryPortSignature`), with commands in flight."""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config
from .buffer import BufferSignature
from .hash import HashSignature, block_mask, block_picks, hash_latency, segment_hash_layout
from .memory_port import MemoryPortSignature, check_depth
from .scan_fsm import enter_one_at_a_time
from .types import Op, asks, command_layout, response_layout

__all__ = ["MemoryScan", "descriptor_layout", "reads_unanswered", "TAG_DEPTH"]

#: Writes and markers the scan keeps in order while it waits for the memory's ``written`` (its tag queue).
TAG_DEPTH = 32

# What the tag queue holds, in the order of the requests (:class:`MemoryScan`).
_WRITE, _DONE, _CLEARED = 0, 1, 2


def descriptor_layout(config: Config) -> data.StructLayout:
    """A decided command on its way through the memory: its op, what the circular buffer decided for it (the
    segments it may match, writes and retires) and its hashes (the row, and each segment's block within it)."""
    P = config.physical_segments
    return data.StructLayout({
        "op": Op,
        "fresh": P,
        "targets": P,
        "retire": P,
        "row": max(1, config.row_index_bits),
        "hashes": data.ArrayLayout(segment_hash_layout(config), P),
    })


def reads_unanswered(config: Config, depth: int) -> int:
    """Reads a :class:`MemoryScan` of ``depth`` commands in flight leaves unanswered at most: its ``answer_depth``
    (two commands' reads, ``2 · physical_segments``), or one command's with ``depth`` 1 (a command starts its reads
    only once the one before it is done)."""
    return min(depth, 2) * config.physical_segments


def _lowest(bits):
    """The lowest set bit of ``bits``, one-hot (0 if none is set)."""
    return bits & (~bits + 1)[:len(bits)]


def _select(one_hot, values):
    """``values[j]`` for the one bit j set in ``one_hot`` (an OR of ANDs: 0 if none is set)."""
    result = 0
    for j, value in enumerate(values):
        result = result | Mux(one_hot[j], Value.cast(value), 0)
    return result


class MemoryScan(wiring.Component):
    """Algorithm 1 of paper 000 (its answer decided from all the match bits at once, as the parallel scan does) over
    segments in a memory whose answers come back after a latency that varies (refresh, bank conflicts, a
    controller's queue): up to ``depth`` commands in flight, every answer in order and equal to the model's.

    A command is accepted, hashed and decided by the circular buffer one at a time (its roles do not depend on
    what the memory holds), then goes through the memory in order: it reads its row's block of every segment it
    may match or writes (:meth:`~apbbf.model.Config.memory_block`: one row, one activation), merges into each
    block the bits of the inserts ahead of it whose writes it may have missed, decides, answers, and writes the
    k blocks of its insert back.

    The guarantee while writes are in flight: a command starts reading only when the command ``depth`` ahead of
    it has seen every write acknowledged (``written``), so every insert further ahead is in what its reads
    return; the ``depth - 1`` commands nearer ahead are kept in a table with their rows, blocks and bits, and each
    block read is ORed with the bits of every one of them that wrote the same block. Writes only ever set bits,
    and each write holds what it read and merged, so the merged block is exactly the one the model holds: no
    false negative, and no false positive the model would not have either.

    The table is kept in the order commands start, which is the order they are answered, so the ``depth - 1``
    commands ahead of a command are known when it issues its reads: each read is compared with the table in the
    three cycles after its request, and the bits to OR in wait for its answer in a queue beside the answers. An
    answer then costs one OR and the pick of the key's bits; the blocks to write leave in the order read.

    A retired segment is cleared in the background, row by row (its ``row_blocks`` words in each row), once the
    command that retired it has seen its writes and every earlier one acknowledged; its bits leave the table then,
    and it is clean (for the shift that takes it) once its zeros are acknowledged. After reset, and for a
    time-bounded window's restart (once nothing is in flight), every word of the memory is cleared;
    ``cmd.ready`` is low meanwhile.

    With ``one_row`` the requests are ordered for a memory that serves one open row at a time, in the order of
    its requests (LiteDRAM's native port on an SDR SDRAM): a row opened for a command's reads also takes its
    writes, and the memory turns from reads to writes and back once per command. A command reads its insert's
    targets first, its writes wait until all its reads are requested, and the next command starts reading only
    once they are requested; the clearing writes a row's ``row_blocks`` words at a time, between commands.

    Parameters
    ----------
    config : Config
        With a row layout.
    depth : int
        Commands in flight at most (:data:`~apbbf.hdl.core.memory_port.DEPTHS`): what the memory's latency needs
        to keep it busy (``apbbf.flows.memory_bench`` measures it).
    one_row : bool
        Order the requests for a memory that serves one open row at a time (see above); without it (the
        default) a command's reads start as soon as ``depth`` allows and its writes go out as its answers come,
        which suits a memory with a long latency and no row to keep open (an AXI4 slave).

    Attributes
    ----------
    cmd, rsp
        As the core's (:class:`~apbbf.hdl.core.apbbf.APBBF`).
    hash, buffer
        The hash unit's and the circular buffer's ports, from the driving side.
    memory : Out(MemoryPortSignature(config))
        The memory.
    in_flight : Out(range(depth + 1))
        Commands in flight now.
    idle : Out(1)
        High while no command is past the buffer's decision, nothing is requested or owed by the memory (every
        read answered, every write acknowledged) and no clearing is under way; registered (it says so of the
        cycle before). A command being hashed or decided does not lower it: a caller that resets the scan waits
        for its commands' answers as well.

    Raises
    ------
    TypeError
        If ``config`` is not a Config, ``depth`` not an integer or ``one_row`` not a bool.
    ValueError
        If the Config has no row layout, or ``depth`` is not 1..64.
    """

    def __init__(self, config: Config, *, depth: int = 8, one_row: bool = False):
        check_config(config)
        check_depth(depth)
        if not isinstance(one_row, bool):
            raise TypeError(f"one_row must be a bool, not {one_row!r}")
        self._config = config
        self._depth = depth
        self._one_row = one_row
        super().__init__({
            "cmd": In(stream.Signature(command_layout(config.key_width, config.time_width if config.timed else 0))),
            "rsp": Out(stream.Signature(response_layout())),
            "hash": Out(HashSignature(config).flip()),
            "buffer": Out(BufferSignature(config).flip()),
            "memory": Out(MemoryPortSignature(config)),
            "in_flight": Out(range(depth + 1)),
            "idle": Out(1),
        })

    @property
    def config(self) -> Config:
        return self._config

    @property
    def depth(self) -> int:
        """Commands in flight at most."""
        return self._depth

    @property
    def one_row(self) -> bool:
        """Requests ordered for a memory that serves one open row at a time."""
        return self._one_row

    @property
    def answer_depth(self) -> int:
        """Answers the scan holds unread, and so reads it leaves unanswered at most: two commands' reads
        (``2 · physical_segments``). The memory never has to hold an answer for it."""
        return 2 * self._config.physical_segments

    def elaborate(self, platform):
        c = self._config
        k, P, D = c.k, c.physical_segments, self._depth
        hash, buffer, port = self.hash, self.buffer, self.memory
        layout = descriptor_layout(c)
        m = Module()

        def address(row, segment, index):
            # memory_block: row * row_stride_blocks + segment * row_blocks + index (every factor a power of two).
            stride_bits = (c.row_stride_blocks - 1).bit_length()
            segment_bits = stride_bits - c.segment_index_bits
            word = Cat(Value.cast(index)[:c.segment_index_bits], Value.cast(segment)[:segment_bits],
                       Const(0, segment_bits - min(segment_bits, len(Value.cast(segment)))))
            return Cat(word, row[:c.row_index_bits]) if c.row_index_bits else word

        # Every request leaves from one register (``out``): the arbiter fills it when it is empty or being taken,
        # so ``req`` holds still until the memory takes it. The tag queue keeps, in request order, a tag per
        # write (waiting for ``written``) and markers (a command done, a segment clean) that leave it once every
        # write before them has landed: so "done" and "clean" always mean "acknowledged".
        out_valid = Signal()
        out = Signal(port.req.payload.shape())
        free = Signal()
        m.d.comb += [port.req.valid.eq(out_valid), port.req.payload.eq(out), free.eq(~out_valid | port.req.ready)]
        with m.If(port.req.ready):
            m.d.sync += out_valid.eq(0)

        m.submodules.tags = tags = fifo.SyncFIFOBuffered(width=2 + P, depth=TAG_DEPTH)
        tag_kind, tag_bits = tags.r_data[:2], tags.r_data[2:]
        acks = Signal(range(TAG_DEPTH + 2))                 # written pulses not yet matched with their tags
        ack_taken = Signal()
        m.d.comb += ack_taken.eq(tags.r_rdy & (tag_kind == _WRITE) & ((acks != 0) | port.written))
        m.d.sync += acks.eq(acks + port.written - ack_taken)
        done_now = Signal()                                 # a command's DONE marker leaves the queue
        released = Signal(P)                                # with these segments retired by it
        cleaned_now = Signal(P)                             # a CLEARED marker leaves: these segments are clean
        m.d.comb += [
            done_now.eq(tags.r_rdy & (tag_kind == _DONE)),
            released.eq(Mux(done_now, tag_bits, 0)),
            cleaned_now.eq(Mux(tags.r_rdy & (tag_kind == _CLEARED), tag_bits, 0)),
            tags.r_en.eq(ack_taken | (tags.r_rdy & (tag_kind != _WRITE))),
        ]

        # Commands in flight: counted from the first read to the DONE marker.
        in_flight = Signal(range(D + 1))
        started = Signal()                                  # a command starts its reads in this cycle
        m.d.sync += in_flight.eq(in_flight + started - done_now)
        m.d.comb += self.in_flight.eq(in_flight)

        # The front: one command at a time through the hash and the buffer's decision, as the FSM scan does (the
        # decision does not depend on the memory), then into the dispatch queue.
        m.submodules.dispatch = dispatch = fifo.SyncFIFOBuffered(width=layout.size, depth=2)
        op, key = Signal(Op), Signal(c.key_width)
        idle, ready = Signal(init=1), Signal()
        accept, idle_next = Signal(), Signal()
        initialized = Signal()                              # the reset's clearing is done
        clear_all = Signal()                                # start clearing every word (a restart)
        clearing_all = Signal(init=1)                       # every word is being cleared (after reset too)
        m.d.comb += [hash.key.eq(key), hash.en.eq(1), buffer.cleaned_next.eq(cleaned_now),
                     self.cmd.ready.eq(ready), accept.eq(self.cmd.valid & ready)]
        enter_one_at_a_time(m, c, buffer, self.cmd.payload, idle, op)
        hash_wait = Signal(range(hash_latency(c) + 1))
        with m.If(idle):
            m.d.sync += [op.eq(self.cmd.payload.op), key.eq(self.cmd.payload.key), hash_wait.eq(hash_latency(c) - 1)]
        with m.If(cleaned_now.all()):
            m.d.sync += initialized.eq(1)
        m.d.sync += [idle.eq(idle_next), ready.eq(idle_next & (initialized | cleaned_now.all()))]

        descriptor = Signal(layout)
        m.d.comb += [descriptor.op.eq(op), descriptor.fresh.eq(buffer.fresh), descriptor.targets.eq(buffer.targets),
                     descriptor.retire.eq(buffer.retire), descriptor.hashes.eq(hash.hashes),
                     dispatch.w_data.eq(descriptor)]
        if c.row_index_bits:
            m.d.comb += descriptor.row.eq(hash.row)

        drained = Signal()
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += idle_next.eq(~accept)
                with m.If(accept):
                    m.next = "HASH"
            with m.State("HASH"):
                with m.If(hash_wait != 0):
                    m.d.sync += hash_wait.eq(hash_wait - 1)
                with m.Elif(buffer.restart):
                    m.next = "DRAIN"
                with m.Elif(~buffer.wait):                 # a shift waits for its segment to be clean
                    m.next = "DISPATCH"
            with m.State("DRAIN"):
                # A restart clears every word once nothing is in flight, and forgets the table.
                with m.If(drained):
                    m.d.comb += clear_all.eq(1)
                    m.next = "CLEARING"
            with m.State("CLEARING"):
                with m.If(cleaned_now.all()):
                    m.next = "DISPATCH"
            with m.State("DISPATCH"):
                with m.If(dispatch.w_rdy):
                    m.d.comb += [dispatch.w_en.eq(1), buffer.decide.eq(1), idle_next.eq(1)]
                    m.next = "IDLE"

        # The reads: the command at the head of the dispatch queue starts once fewer than ``depth`` are in flight
        # and reads its row's block of each segment it may match (a query) or writes (an insert), lowest first;
        # its op, retires and row go into the in-flight queue, where its blocks find them. The next read's segment
        # (``read_pick``) is a register, so that the request's multiplexers hang on a flip-flop, not on the carry
        # chain that finds the lowest bit.
        flight_layout = data.StructLayout({"op": Op, "retire": P, "row": max(1, c.row_index_bits)})
        m.submodules.flight = flight = fifo.SyncFIFOBuffered(width=flight_layout.size, depth=D)
        head = Signal(layout)
        head_reads = Signal(P)
        entering_flight = Signal(flight_layout)
        m.d.comb += [head.eq(dispatch.r_data), head_reads.eq(Mux(asks(head.op), head.fresh, 0) | head.targets),
                     entering_flight.op.eq(head.op), entering_flight.retire.eq(head.retire),
                     entering_flight.row.eq(head.row), flight.w_data.eq(entering_flight)]
        issuing = Signal(layout)
        issue_left = Signal(P)                              # segments still to read, ``read_pick`` among them
        read_pick = Signal(P)                               # the next read: the lowest of ``issue_left``
        left_after = Signal(P)
        m.d.comb += left_after.eq(issue_left & ~read_pick)
        issue_idle = Signal(init=1)                         # no read left: ``read_pick`` is 0, as a flip-flop
        # (one_row) writes of the commands started that are not requested yet: the next command waits for them
        writes_due = Signal(range(D * k + 1))
        write_issued = Signal()
        clear_run = Signal()                                # (one_row) a row's clearing words go out now
        if self._one_row:
            # the targets first, so that the writes wait the least for their answers
            def first_pick(left, targets):
                return Mux((left & targets).any(), _lowest(left & targets), _lowest(left))
        else:
            def first_pick(left, targets):
                return _lowest(left)
        read_hash = Signal(segment_hash_layout(c))
        read_segment = Signal(range(P))
        m.d.comb += [read_hash.eq(_select(read_pick, [issuing.hashes[j] for j in range(P)])),
                     read_segment.eq(_select(read_pick, [Const(j, range(P)) for j in range(P)]))]
        read_addr = address(issuing.row, read_segment, read_hash.index)
        read_issued, answer_used = Signal(), Signal()

        # Each read (and a marker in place of a command that reads nothing) follows its request through three
        # stages to the info queue, which the gather pops with the read's answer: its segment, block and row are
        # compared with every slot of the table, the bits of the slots that wrote that block are ORed into
        # ``extra``, which is registered. So an arriving answer needs one OR, not the table's comparisons.
        info_layout = data.StructLayout({"read": 1, "last": 1, "fresh": 1, "target": 1, "segment": range(P),
                                         "hash": segment_hash_layout(c)})
        issued_valid, issued = Signal(), Signal(info_layout)       # stage 1: the read just requested
        issued_row = Signal(max(1, c.row_index_bits))
        compared_valid, compared = Signal(), Signal(info_layout)   # stage 2: its comparisons registered
        m.d.sync += issued_valid.eq(0)
        may_start = issue_idle & dispatch.r_rdy & (in_flight < D) & flight.w_rdy
        if self._one_row:
            may_start &= (writes_due == 0) & ~clear_run
        head_writes = sum(head.targets[j] for j in range(P))
        m.d.sync += writes_due.eq(writes_due + Mux(started, head_writes, 0) - write_issued)
        with m.If(may_start):
            m.d.comb += [started.eq(1), dispatch.r_en.eq(1), flight.w_en.eq(1)]
            m.d.sync += [issuing.eq(head), issue_left.eq(head_reads),
                         read_pick.eq(first_pick(head_reads, head.targets)), issue_idle.eq(head_reads == 0)]
            with m.If(head_reads == 0):
                # Nothing to read (the reserved op, a query with no live segment): a marker takes its place.
                m.d.sync += [issued_valid.eq(1), issued.read.eq(0), issued.last.eq(1), issued.fresh.eq(0),
                             issued.target.eq(0)]
        with m.If(read_issued):
            m.d.sync += [issue_left.eq(left_after), read_pick.eq(first_pick(left_after, issuing.targets)),
                         issue_idle.eq(left_after == 0),
                         issued_valid.eq(1), issued.read.eq(1), issued.last.eq(left_after == 0),
                         issued.fresh.eq((read_pick & issuing.fresh).any()),
                         issued.target.eq((read_pick & issuing.targets).any()),
                         issued.segment.eq(read_segment), issued.hash.eq(read_hash), issued_row.eq(issuing.row)]

        # The table: the ``depth - 1`` commands started before the one reading now (answered in the same order,
        # they are the ones whose writes its reads may miss), newest first, each as its row and a slot per target
        # (its segment, block and the bits its key sets, decoded). A command's targets collect in ``newest`` as
        # its reads pass stage 1; it joins the table the cycle after the next command starts, when the last of
        # its own reads has left stage 2 and before the next command's first read reaches stage 1. A segment
        # retired (its DONE marker out) leaves every slot: it is cleared next, and a later command that finds it
        # clean must not see its old bits. (No command in flight then reads it, so a comparison made just before
        # does not matter.)
        slot_layout = data.StructLayout({"valid": 1, "segment": range(P), "index": c.segment_index_bits,
                                         "mask": c.block_bits})
        entry_layout = data.StructLayout({"row": max(1, c.row_index_bits), "slots": data.ArrayLayout(slot_layout, k)})
        table = [Signal(entry_layout, name=f"table{n}") for n in range(D - 1)]
        # ``forget`` is registered: a cycle late is soon enough, as no command in flight reads a released segment
        # and the next to read it waits for its clearing (a restart's too).
        forget = Signal(P)
        m.d.sync += forget.eq(released | Mux(clear_all, (1 << P) - 1, 0))

        def kept(slot):
            return slot.valid & ~forget.bit_select(slot.segment, 1)

        same = Signal(max(1, len(table) * k))              # stage 2: the slots that wrote the block read
        m.d.sync += [compared_valid.eq(issued_valid), compared.eq(issued)]
        extra = Const(0, c.block_bits)
        if table:
            newest = Signal(entry_layout)
            joining = Signal()                              # the cycle after a start: ``newest`` joins the table
            m.d.sync += joining.eq(started)
            for entry in [newest, *table]:
                for held in entry.slots:
                    m.d.sync += held.valid.eq(kept(held))
            with m.If(joining):
                for newer, older in zip([newest, *table], table):
                    m.d.sync += older.eq(newer)
                    for old_slot, new_slot in zip(older.slots, newer.slots):
                        m.d.sync += old_slot.valid.eq(kept(new_slot))
                m.d.sync += [held.valid.eq(0) for held in newest.slots]
            with m.Elif(issued_valid & issued.target):
                m.d.sync += [newest.row.eq(issued_row), newest.slots[0].segment.eq(issued.segment),
                             newest.slots[0].index.eq(issued.hash.index),
                             newest.slots[0].mask.eq(block_mask(c, issued.hash)),
                             newest.slots[0].valid.eq(~forget.bit_select(issued.segment, 1))]
                for newer, older in zip(newest.slots, newest.slots[1:]):
                    m.d.sync += [older.eq(newer), older.valid.eq(kept(newer))]
            comparisons = []
            for entry in table:
                same_row = entry.row == issued_row
                for held in entry.slots:
                    comparisons.append(held.valid & same_row & (held.segment == issued.segment) &
                                       (held.index == issued.hash.index))
            m.d.sync += same.eq(Cat(*comparisons))
            slots = [held for entry in table for held in entry.slots]
            for n, held in enumerate(slots):
                extra = extra | Mux(same[n], held.mask, 0)

        # The answers land in a queue of the scan's own, as they come: a read is only issued while the queue has
        # room for its answer, so ``rsp.ready`` is always high and the memory never waits on the scan (a memory
        # that holds few answers would otherwise stop taking requests, the read ahead of the answered command's
        # writes among them, while the scan waited for those writes to go out before it took more answers). The
        # info queue holds at most as many reads, and a marker per command in flight.
        m.submodules.answers = answers = fifo.SyncFIFOBuffered(width=c.block_bits, depth=self.answer_depth)
        info_entry = data.StructLayout({"info": info_layout, "extra": c.block_bits})
        m.submodules.info = info = fifo.SyncFIFOBuffered(width=info_entry.size, depth=self.answer_depth + D)
        reads_out = Signal(range(self.answer_depth + 1))   # reads issued whose answer is not consumed yet
        m.d.sync += reads_out.eq(reads_out + read_issued - answer_used)
        m.d.comb += [answers.w_data.eq(port.rsp.payload.data), answers.w_en.eq(port.rsp.valid),
                     port.rsp.ready.eq(answers.w_rdy)]
        # A third stage registers the merged word: the OR of the slots ends in a flip-flop, not in the LUT RAM.
        merged_valid, merged = Signal(), Signal(info_entry)
        m.d.sync += [merged_valid.eq(compared_valid), merged.info.eq(compared), merged.extra.eq(extra)]
        m.d.comb += [info.w_data.eq(merged), info.w_en.eq(merged_valid)]

        # The gather, in two stages: a read's answer and its info are taken together and ORed into ``view``
        # (registered); then the key's bits are picked from it into the match bits, and an insert's target block
        # goes to the action queue with the key's bits set, to be written in the order read (its last carries the
        # command's DONE marker). The cycle after a command's last block its answer is decided from the match bits
        # (k consecutive matches among the fresh segments).
        gather_layout = data.StructLayout({"info": info_layout, "view": c.block_bits})
        action_layout = data.StructLayout({"write": 1, "done": 1, "addr": len(port.req.payload.addr),
                                           "data": c.block_bits, "retire": P})
        m.submodules.actions = actions = fifo.SyncFIFOBuffered(width=action_layout.size, depth=k + 1)
        m.submodules.responses = responses = fifo.SyncFIFOBuffered(width=len(self.rsp.payload.as_value()),
                                                                   depth=4)
        m.d.comb += [self.rsp.valid.eq(responses.r_rdy), self.rsp.payload.eq(responses.r_data),
                     responses.r_en.eq(self.rsp.ready)]
        info_head = Signal(info_entry)
        flight_head = Signal(flight_layout)
        m.d.comb += [info_head.eq(info.r_data), flight_head.eq(flight.r_data)]
        gathered_valid, gathered = Signal(), Signal(gather_layout)
        advance = Signal()                                  # the block in the second stage goes on
        take = Signal()
        m.d.comb += [take.eq(info.r_rdy & (~info_head.info.read | answers.r_rdy) & (~gathered_valid | advance)),
                     info.r_en.eq(take), answers.r_en.eq(take & info_head.info.read),
                     answer_used.eq(take & info_head.info.read)]
        with m.If(take):
            m.d.sync += [gathered_valid.eq(1), gathered.info.eq(info_head.info),
                         gathered.view.eq(answers.r_data | info_head.extra)]
        with m.Elif(advance):
            m.d.sync += gathered_valid.eq(0)

        h_match = Signal(P)
        answer_valid, answer_op = Signal(), Signal(Op)
        answering = Signal()
        got = gathered.info
        pushes = got.target | got.last
        m.d.comb += [answering.eq(answer_valid & responses.w_rdy),
                     advance.eq(gathered_valid & ~(answer_valid & ~responses.w_rdy) & (~pushes | actions.w_rdy))]
        action = Signal(action_layout)
        m.d.comb += [action.write.eq(got.target), action.done.eq(got.last),
                     action.addr.eq(address(flight_head.row, got.segment, got.hash.index)),
                     action.data.eq(gathered.view | block_mask(c, got.hash)), action.retire.eq(flight_head.retire),
                     actions.w_data.eq(action), actions.w_en.eq(advance & pushes)]
        picks = Cat(*block_picks(c, got.hash, gathered.view)).all()
        matched = Mux(advance & got.read & got.fresh & picks, (Const(1, P) << got.segment)[:P], 0)
        m.d.sync += h_match.eq(Mux(answering, 0, h_match) | matched)
        with m.If(answering):
            m.d.sync += answer_valid.eq(0)
        with m.If(advance & got.last):
            m.d.comb += flight.r_en.eq(1)
            m.d.sync += [answer_valid.eq(1), answer_op.eq(flight_head.op)]
        runs = Cat(*(Cat(*(h_match[(s + i) % P] for i in range(k))).all() for s in range(P)))
        m.d.comb += [responses.w_en.eq(answering), responses.w_data.eq(Cat(answer_op, runs.any() & asks(answer_op)))]

        # The background clearing: every word (after reset, and for a restart), or a retired segment's words,
        # row by row; each pass ends with a CLEARED marker.
        pending = Signal(P)                                 # retired, to be cleared
        clearing = Signal(P)                                # the segment of the pass running now (one-hot)
        sweep = Signal(range(max(c.memory_blocks, c.segment_blocks)))
        m.d.sync += pending.eq(pending | released)
        with m.If(clear_all):
            m.d.sync += [clearing_all.eq(1), sweep.eq(0), clearing.eq(0)]
        with m.Elif(~clearing_all & (clearing == 0) & (pending != 0)):
            m.d.sync += [clearing.eq(_lowest(pending)), sweep.eq(0)]
            m.d.sync += pending.eq((pending & ~_lowest(pending)) | released)
        sweep_row = sweep[c.segment_index_bits:] if c.row_index_bits else Const(0, 1)
        clearing_segment = Signal(range(P))
        m.d.comb += clearing_segment.eq(_select(clearing, [Const(j, range(P)) for j in range(P)]))
        segment_addr = address(sweep_row, clearing_segment, sweep)
        last_word = Mux(clearing_all, sweep == c.memory_blocks - 1, sweep == c.segment_blocks - 1)
        clear_marking = Signal()                            # the pass has written its last word: mark it
        clear_busy = clearing_all | (clearing != 0)

        # The arbiter, one action per cycle when the slot is free: the answered commands' writes and DONE markers
        # first (they free everything behind), then reads, then the clearing (which only waits: a shift that
        # needs it stops the reads until it is done). With ``one_row`` a command's reads come before its writes,
        # and a row's clearing, once started between two commands, before everything.
        act = Signal(action_layout)
        act_wrote = Signal()                                # the head action's write is out, its marker next
        m.d.comb += act.eq(actions.r_data)
        want_write = actions.r_rdy & act.write & ~act_wrote
        want_mark = actions.r_rdy & act.done & (act_wrote | ~act.write)
        want_read = ~issue_idle & (reads_out < self.answer_depth)
        want_clear = clear_busy & ~clear_marking & ~clear_all
        want_cleared = clear_marking
        run_ends = last_word | (sweep[:c.segment_index_bits] == c.row_blocks - 1)
        if self._one_row:
            want_write &= issue_idle
            want_clear &= clear_run | (issue_idle & (writes_due == 0))

        def write():
            m.d.comb += [tags.w_en.eq(1), tags.w_data.eq(_WRITE), write_issued.eq(1)]
            m.d.sync += [out_valid.eq(1), out.write.eq(1), out.addr.eq(act.addr), out.data.eq(act.data)]
            with m.If(act.done):
                m.d.sync += act_wrote.eq(1)
            with m.Else():
                m.d.comb += actions.r_en.eq(1)

        def mark():
            m.d.comb += [tags.w_en.eq(1), tags.w_data.eq(Cat(Const(_DONE, 2), act.retire)), actions.r_en.eq(1)]
            m.d.sync += act_wrote.eq(0)

        def read():
            m.d.sync += [out_valid.eq(1), out.write.eq(0), out.addr.eq(read_addr), out.data.eq(0)]
            m.d.comb += read_issued.eq(1)

        def cleared():
            m.d.comb += [tags.w_en.eq(1),
                         tags.w_data.eq(Cat(Const(_CLEARED, 2), Mux(clearing_all, (1 << P) - 1, clearing)))]
            m.d.sync += [clear_marking.eq(0), clearing_all.eq(0), clearing.eq(0)]

        def clear():
            m.d.comb += [tags.w_en.eq(1), tags.w_data.eq(_WRITE)]
            m.d.sync += [out_valid.eq(1), out.write.eq(1), out.data.eq(0),
                         out.addr.eq(Mux(clearing_all, sweep, segment_addr)), sweep.eq(sweep + 1),
                         clear_run.eq(~run_ends)]
            with m.If(last_word):
                m.d.sync += clear_marking.eq(1)

        choices = [(want_write & tags.w_rdy, write), (want_mark & tags.w_rdy, mark), (want_read, read),
                   (want_cleared & tags.w_rdy, cleared), (want_clear & tags.w_rdy, clear)]
        if self._one_row:
            choices.insert(0, (clear_run & want_clear & tags.w_rdy, clear))
        with m.If(free):
            for n, (wanted, action) in enumerate(choices):
                with (m.If if n == 0 else m.Elif)(wanted):
                    action()

        # Registered: once drained, nothing starts until the restart's clearing, so a cycle late is the same.
        m.d.sync += drained.eq((in_flight == 0) & ~dispatch.r_rdy & issue_idle & ~issued_valid &
                               ~compared_valid & ~merged_valid & ~info.r_rdy & ~gathered_valid & ~answer_valid &
                               ~actions.r_rdy &
                               ~tags.r_rdy & ~out_valid & ~clear_busy & (pending == 0))
        m.d.comb += self.idle.eq(drained)
        return m
