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

__all__ = ["MemoryScan", "descriptor_layout", "TAG_DEPTH"]

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

    A retired segment is cleared in the background, row by row (its ``row_blocks`` words in each row), once the
    command that retired it has seen its writes and every earlier one acknowledged; its bits leave the table then,
    and it is clean (for the shift that takes it) once its zeros are acknowledged. After reset, and for a
    time-bounded window's restart (once nothing is in flight), every word of the memory is cleared;
    ``cmd.ready`` is low meanwhile.

    Parameters
    ----------
    config : Config
        With a row layout.
    depth : int
        Commands in flight at most (:data:`~apbbf.hdl.core.memory_port.DEPTHS`): what the memory's latency needs
        to keep it busy (``apbbf.flows.memory_bench`` measures it).

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

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``depth`` not an integer.
    ValueError
        If the Config has no row layout, or ``depth`` is not 1..64.
    """

    def __init__(self, config: Config, *, depth: int = 8):
        check_config(config)
        check_depth(depth)
        self._config = config
        self._depth = depth
        super().__init__({
            "cmd": In(stream.Signature(command_layout(config.key_width, config.time_width if config.timed else 0))),
            "rsp": Out(stream.Signature(response_layout())),
            "hash": Out(HashSignature(config).flip()),
            "buffer": Out(BufferSignature(config).flip()),
            "memory": Out(MemoryPortSignature(config)),
            "in_flight": Out(range(depth + 1)),
        })

    @property
    def config(self) -> Config:
        return self._config

    @property
    def depth(self) -> int:
        """Commands in flight at most."""
        return self._depth

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

        def address(row, segment: int, index):
            # memory_block: row * row_stride_blocks + segment * row_blocks + index (every factor a power of two).
            stride_bits = (c.row_stride_blocks - 1).bit_length()
            word = Cat(Value.cast(index)[:c.segment_index_bits], Const(segment, stride_bits - c.segment_index_bits))
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

        # The reads: the command at the head of the dispatch queue starts once fewer than ``depth`` are in flight,
        # and reads its row's block of each segment it may match (a query) or writes (an insert), lowest first.
        # It enters the in-flight queue as it starts, where its answers will find it.
        m.submodules.flight = flight = fifo.SyncFIFOBuffered(width=layout.size, depth=D)
        issuing = Signal(layout)
        issue_left = Signal(P)                              # segments still to read
        head = Signal(layout)
        m.d.comb += [head.eq(dispatch.r_data), flight.w_data.eq(dispatch.r_data)]

        def reads(d):
            return Mux(asks(d.op), d.fresh, 0) | d.targets

        with m.If((issue_left == 0) & dispatch.r_rdy & (in_flight < D) & flight.w_rdy):
            m.d.comb += [started.eq(1), dispatch.r_en.eq(1), flight.w_en.eq(1)]
            m.d.sync += [issuing.eq(head), issue_left.eq(reads(head))]
        read_pick = _lowest(issue_left)
        read_addr = _select(read_pick, [address(issuing.row, j, issuing.hashes[j].index) for j in range(P)])

        # The answers: the oldest command in flight (``h``) takes its blocks in order, merges the table's bits
        # into each, registers its match bits and the blocks to write; then answers, joins the table, writes its
        # blocks (through the arbiter, first among requesters) and leaves a DONE marker with what it retired.
        m.submodules.responses = responses = fifo.SyncFIFOBuffered(width=len(self.rsp.payload.as_value()),
                                                                   depth=4)
        m.d.comb += [self.rsp.valid.eq(responses.r_rdy), self.rsp.payload.eq(responses.r_data),
                     responses.r_en.eq(self.rsp.ready)]
        h_valid = Signal()
        h = Signal(layout)
        h_left = Signal(P)                                  # blocks still to come
        h_match = Signal(P)
        h_blocks = Signal(data.ArrayLayout(c.block_bits, P))
        h_writes = Signal(P)                                # blocks still to write
        h_phase = Signal(2)                                 # 0 gathering, 1 writing, 2 marking done
        GATHER, WRITE, MARK = 0, 1, 2
        entering_h = Signal(layout)
        m.d.comb += entering_h.eq(flight.r_data)
        with m.If(~h_valid & flight.r_rdy):
            m.d.comb += flight.r_en.eq(1)
            m.d.sync += [h_valid.eq(1), h.eq(entering_h), h_left.eq(reads(entering_h)), h_match.eq(0),
                         h_phase.eq(GATHER)]

        # The table: the ``depth - 1`` commands answered last, newest first, each as its row and the k blocks its
        # insert wrote (a slot per target: its segment, block and bits; a query's slots are empty). A segment
        # retired (its DONE marker out) leaves every slot: it is cleared next, and a later command that finds it
        # clean must not see its old bits.
        slot_layout = data.StructLayout({"valid": 1, "segment": range(P), "hash": segment_hash_layout(c)})
        entry_layout = data.StructLayout({"row": max(1, c.row_index_bits), "slots": data.ArrayLayout(slot_layout, k)})
        table = [Signal(entry_layout, name=f"table{n}") for n in range(D - 1)]
        forget = Signal(P)
        m.d.comb += forget.eq(released | Mux(clear_all, (1 << P) - 1, 0))

        def kept(slot):
            return slot.valid & ~forget.bit_select(slot.segment, 1)

        for entry in table:
            for held in entry.slots:
                m.d.sync += held.valid.eq(kept(held))

        # A block arrives: the segment is the lowest still awaited. Each slot of the table that wrote the same
        # block (segment, row, block within the row) adds its bits.
        arriving = _lowest(h_left)
        arriving_segment = Signal(range(P))
        m.d.comb += arriving_segment.eq(_select(arriving, [Const(j, range(P)) for j in range(P)]))
        own = Signal(segment_hash_layout(c))
        m.d.comb += own.eq(_select(arriving, [h.hashes[j] for j in range(P)]))
        view = Signal(c.block_bits)
        # The answers land in a queue of the scan's own, as they come: a read is only issued while the queue has
        # room for its answer, so ``rsp.ready`` is always high and the memory never waits on the scan (a memory
        # that holds few answers would otherwise stop taking requests, the read ahead of the answered command's
        # writes among them, while the scan waited for those writes to go out before it took more answers).
        m.submodules.answers = answers = fifo.SyncFIFOBuffered(width=c.block_bits, depth=self.answer_depth)
        reads_out = Signal(range(self.answer_depth + 1))   # reads issued whose answer is not consumed yet
        read_issued, answer_used = Signal(), Signal()
        m.d.sync += reads_out.eq(reads_out + read_issued - answer_used)
        m.d.comb += [answers.w_data.eq(port.rsp.payload.data), answers.w_en.eq(port.rsp.valid),
                     port.rsp.ready.eq(answers.w_rdy)]
        merged = answers.r_data
        for entry in table:
            same_row = entry.row == h.row
            for held in entry.slots:
                same = held.valid & (held.segment == arriving_segment) & same_row & (held.hash.index == own.index)
                merged = merged | Mux(same, block_mask(c, held.hash), 0)
        m.d.comb += view.eq(merged)
        gathering = h_valid & (h_phase == GATHER) & (h_left != 0)
        m.d.comb += [answers.r_en.eq(gathering), answer_used.eq(gathering & answers.r_rdy)]
        with m.If(gathering & answers.r_rdy):
            m.d.sync += h_left.eq(h_left & ~arriving)
            picks = Cat(*block_picks(c, own, view)).all()
            for j in range(P):
                with m.If(arriving[j]):
                    m.d.sync += [h_match[j].eq(picks & h.fresh[j]), h_blocks[j].eq(view | block_mask(c, own))]

        # Every block is in: answer (k consecutive matches among the fresh segments), join the table, write.
        runs = Cat(*(Cat(*(h_match[(s + i) % P] for i in range(k))).all() for s in range(P)))
        with m.If(h_valid & (h_phase == GATHER) & (h_left == 0) & responses.w_rdy):
            m.d.comb += [responses.w_en.eq(1),
                         responses.w_data.eq(Cat(h.op, runs.any() & asks(h.op)))]
            m.d.sync += [h_writes.eq(h.targets), h_phase.eq(WRITE)]
            if table:
                # The insert's k targets into the slots, lowest segment first.
                remaining = h.targets
                m.d.sync += table[0].row.eq(h.row)
                for newest in table[0].slots:
                    pick = _lowest(remaining)
                    m.d.sync += [newest.valid.eq((pick & ~forget).any()),
                                 newest.segment.eq(_select(pick, [Const(j, range(P)) for j in range(P)])),
                                 newest.hash.eq(_select(pick, [h.hashes[j] for j in range(P)]))]
                    remaining = remaining & ~pick
                for newer, older in zip(table, table[1:]):
                    m.d.sync += older.eq(newer)
                    for old_slot, new_slot in zip(older.slots, newer.slots):
                        m.d.sync += old_slot.valid.eq(kept(new_slot))
        with m.If(h_valid & (h_phase == WRITE) & (h_writes == 0)):
            m.d.sync += h_phase.eq(MARK)
        write_pick = _lowest(h_writes)
        write_addr = _select(write_pick, [address(h.row, j, h.hashes[j].index) for j in range(P)])
        write_data = _select(write_pick, [h_blocks[j] for j in range(P)])

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
        segment_addr = _select(clearing, [address(sweep_row, j, sweep) for j in range(P)])
        last_word = Mux(clearing_all, sweep == c.memory_blocks - 1, sweep == c.segment_blocks - 1)
        clear_marking = Signal()                            # the pass has written its last word: mark it
        clear_busy = clearing_all | (clearing != 0)

        # The arbiter, one action per cycle when the slot is free: the answered command's writes and its DONE
        # marker first (they free everything behind), then reads, then the clearing (which only waits: a shift
        # that needs it stops the reads until it is done).
        want_write = h_valid & (h_phase == WRITE) & (h_writes != 0)
        want_mark = h_valid & (h_phase == MARK)
        want_read = (issue_left != 0) & (reads_out < self.answer_depth)
        want_clear = clear_busy & ~clear_marking & ~clear_all
        want_cleared = clear_marking
        with m.If(free):
            with m.If(want_write & tags.w_rdy):
                m.d.comb += [tags.w_en.eq(1), tags.w_data.eq(_WRITE)]
                m.d.sync += [out_valid.eq(1), out.write.eq(1), out.addr.eq(write_addr), out.data.eq(write_data),
                             h_writes.eq(h_writes & ~write_pick)]
            with m.Elif(want_mark & tags.w_rdy):
                m.d.comb += [tags.w_en.eq(1), tags.w_data.eq(Cat(Const(_DONE, 2), h.retire))]
                m.d.sync += h_valid.eq(0)
            with m.Elif(want_read):
                m.d.sync += [out_valid.eq(1), out.write.eq(0), out.addr.eq(read_addr), out.data.eq(0),
                             issue_left.eq(issue_left & ~read_pick)]
                m.d.comb += read_issued.eq(1)
            with m.Elif(want_cleared & tags.w_rdy):
                m.d.comb += [tags.w_en.eq(1),
                             tags.w_data.eq(Cat(Const(_CLEARED, 2), Mux(clearing_all, (1 << P) - 1, clearing)))]
                m.d.sync += [clear_marking.eq(0), clearing_all.eq(0), clearing.eq(0)]
            with m.Elif(want_clear & tags.w_rdy):
                m.d.comb += [tags.w_en.eq(1), tags.w_data.eq(_WRITE)]
                m.d.sync += [out_valid.eq(1), out.write.eq(1), out.data.eq(0),
                             out.addr.eq(Mux(clearing_all, sweep, segment_addr)), sweep.eq(sweep + 1)]
                with m.If(last_word):
                    m.d.sync += clear_marking.eq(1)

        m.d.comb += drained.eq((in_flight == 0) & ~dispatch.r_rdy & (issue_left == 0) & ~h_valid & ~tags.r_rdy &
                               ~out_valid & ~clear_busy & (pending == 0))
        return m
