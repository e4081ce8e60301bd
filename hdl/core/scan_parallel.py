"""The parallel scan: a pipeline that takes a command every clock and decides from all segments at once."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring

from ...model.config import Config, check_config, check_integer
from .buffer import STAGE_TIME_COPIES
from .copies import register_copies
from .hash import block_mask, block_picks, hash_latency, segment_hash_layout
from .response import ResponseQueue
from .scan import scan_signature
from .segments import READ_LATENCY
from .types import Op, asks

__all__ = ["ParallelScan", "PACES", "check_pace", "staging", "response_latency", "queue_depth", "restart_cycles"]

#: Cycles per command at most that the parallel scan can be built for (:class:`ParallelScan`'s ``pace``).
PACES = (1, 2, 3)


def check_pace(pace) -> None:
    """Raise if ``pace`` is not one of :data:`PACES`.

    Raises
    ------
    TypeError
        If ``pace`` is not an integer.
    ValueError
        If it is not 1, 2 or 3.
    """
    check_integer("pace", pace, range(PACES[0], PACES[-1] + 1))

#: Stages from the first read-data stage M to the response queue: M (merge), W (write, pick), D (match), E (run),
#: F (respond).
_AFTER_READ = 5


def staging(config: Config) -> int:
    """Cycles a command spends between the skid register and A with a time-bounded window: in U (its time
    registered) and T (where the buffer compares that time with the deadlines); 2 with a span, 0 without."""
    return 2 if config.timed else 0


def response_latency(config: Config, pace: int = 1) -> int:
    """Cycles from a command's acceptance to its response on ``rsp`` with ``rsp.ready`` high, when it does not
    wait in A: U and T (:func:`staging`: 2 for a time-bounded window), A ``pace`` (a command is decided in its first
    cycle there at one command per clock, in its second at ``pace=2``, its third at ``pace=3``), hash ``latency``
    (the last stage reads), the rest of the read ``READ_LATENCY - 1``, M, W, D, E, F, then the response queue 2
    (:class:`~amaranth.lib.fifo.SyncFIFOBuffered`)."""
    return staging(config) + pace + hash_latency(config) + READ_LATENCY - 1 + _AFTER_READ + 2


def queue_depth(config: Config) -> int:
    """Responses the parallel scan's :class:`~apbbf.hdl.core.response.ResponseQueue` holds: a command holds its credit
    from A to the cycle its response is taken, :func:`response_latency` cycles (less T's) at one command per
    clock; and two of slack."""
    return response_latency(config) - staging(config) + 2


def restart_cycles(config: Config) -> tuple[int, int]:
    """The fewest and most cycles by which an insert that restarts a time-bounded window delays the commands
    behind it, against an ordinary insert, with ``rsp.ready`` high: the insert waits in A for the commands ahead
    of it to leave the stages that write (hash ``latency``, the rest of the read ``READ_LATENCY - 1``, M, W),
    then every memory is cleared (``segment_blocks`` cycles, from the cycle after the segments take the clear).
    The fewest when nothing was in flight (``segment_blocks + 3``), the most behind a command every clock. (The
    commands right behind it are taken into U, T and the skid register; the delay shows on the one after them.)"""
    in_flight = hash_latency(config) + READ_LATENCY - 1 + 2
    fewest = config.segment_blocks + 3
    return fewest, fewest + in_flight


class ParallelScan(wiring.Component):
    """A pipeline, one command per stage, a new one every clock; its answer is Algorithm 1's: "k consecutive
    matches among segments 0..k+l-1", decided from all k+l+1 match bits at once.

    Stages: accept → (U and T, with a span: the time registered, then compared) → A: key register, the circular
    buffer decides → hash (``latency``; its last stage R reads all segments) → the block RAMs' output registers
    (``READ_LATENCY - 1`` stages) → M: each block as it is now (read data and the writes the read missed) → W: write
    the blocks back, pick the key's bits → D: match bits → E: k consecutive matches → F: answer. A response comes
    :func:`response_latency` cycles after its command was accepted (when it does not wait in A) and waits in a
    :class:`~apbbf.hdl.core.response.ResponseQueue` of :func:`queue_depth` for ``rsp.ready``.

    Parameters
    ----------
    config : Config
    pace : {1, 2, 3}
        Cycles per command at most: 1, a command every clock (the buffer decides a command in the cycle the one
        ahead of it is decided, from flags computed a cycle ahead: its ``lookahead``); 2, a command every other
        clock at most, decided from the buffer's flags as they are (a ``CircularBuffer`` without
        ``lookahead``), which keeps that decision's logic about half as deep: for a stream that never needs a
        command every clock (a packet de-duplicator whose shortest frame is two beats or more); 3, a command
        every third clock at most, decided from the buffer's flags as they are registered in its second cycle,
        so that no reduction over the segments is in front of the decision (four beats or more).

    Attributes
    ----------
    cmd, rsp, hash, segments, buffer
        See :func:`~apbbf.hdl.core.scan.scan_signature`.

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``pace`` not an int.
    ValueError
        If ``pace`` is not 1, 2 or 3.
    """

    def __init__(self, config: Config, *, pace: int = 1):
        check_config(config)
        check_pace(pace)
        self._config = config
        self._pace = pace
        super().__init__(scan_signature(config))

    @property
    def config(self) -> Config:
        return self._config

    @property
    def pace(self) -> int:
        """Cycles per command at most (1, 2 or 3)."""
        return self._pace

    @property
    def response_latency(self) -> int:
        """:func:`response_latency` of the Config and pace."""
        return response_latency(self._config, self._pace)

    @property
    def queue_depth(self) -> int:
        """:func:`queue_depth` of the Config."""
        return queue_depth(self._config)

    def elaborate(self, platform):
        # One LUT level or two per stage. The read in R misses the writes W makes in the cycles from R to the
        # command's own M (the read's address edge and the READ_LATENCY cycles after it), so M ORs the blocks
        # the commands ahead write (the one in W now, and READ_LATENCY cycles of history) into the read data,
        # where the address matches (compared a stage earlier). Writes only ever set bits and a written
        # block holds everything earlier, so this is exact whatever the RAM returns on a read-during-write.
        # W writes the merged block with the key's bits back and, beside it, picks the key's b bits from the
        # block as it was (one multiplexer per part, registered); D ANDs them into match bits, E finds the run,
        # F hands the answer to the response queue.
        # Clearing is the exception; it never meets a command: a command that shifts is held in A until the
        # segment it shifts into is clean, and a retired segment is only cleared once the commands ahead of the
        # one that retired it are through W.
        c = self._config
        k, P = c.k, c.physical_segments
        latency = hash_latency(c)
        if READ_LATENCY < 2:
            raise ValueError("the parallel scan compares addresses while the block RAMs read: READ_LATENCY >= 2")
        hash, segments, buffer = self.hash, self.segments, self.buffer
        m = Module()

        # Responses wait in a queue; a command leaves A only with a credit (room for its response).
        m.submodules.responses = responses = ResponseQueue(self.queue_depth)
        wiring.connect(m, responses.o, wiring.flipped(self.rsp))

        hashes_layout = data.ArrayLayout(segment_hash_layout(c), P)
        blocks_layout = data.ArrayLayout(c.block_bits, P)
        indices_layout = data.ArrayLayout(c.block_index_bits, P)

        def stage(name, **fields):
            """The registers of one pipeline stage: valid, op and the named fields (name -> shape)."""
            record = {"valid": Signal(name=f"{name}_valid"), "op": Signal(Op, name=f"{name}_op")}
            record.update({field: Signal(shape, name=f"{name}_{field}") for field, shape in fields.items()})
            return record

        def follow(m, later, earlier):
            m.d.sync += [later[field].eq(earlier[field]) for field in later]

        # A: the command just accepted, with its key in front of the hash unit. The circular buffer decides it
        # here (what it may match, what it writes and retires), unless it must wait: for the segment its shift
        # takes to be clean, or, to restart a time-bounded window, for the pipeline to drain and every memory
        # to be cleared. The decision is the one loop that cannot be pipelined, so it is taken a cycle early:
        # ``advance`` (the command in A goes now) is a flip-flop, set from what the buffer, the response queue
        # and the segments will say in the next cycle (their next-state flags), and everything it enables (A,
        # the buffer's state, the first hash stage, the credit) hangs on that one register. ``advance`` drives
        # hundreds of enables, so its loads are spread wide; its own next value comes from a second copy
        # (``holding``, inverted so that Yosys keeps it apart) that drives nothing else, and only at the last
        # gate: the flags are computed twice, for "A goes now" and for "A holds" (a Shannon expansion on
        # ``advance``), and ``holding`` picks. ``cmd.ready`` is a flip-flop too: a command accepted while A holds
        # one waits in a skid register S, and ``cmd.ready`` is low while S is full.
        # (Named explicitly: Amaranth does not name the signals of a tuple assignment.)
        # A time-bounded window stages every command twice more, in U and T between S and A: U registers its
        # time, and the buffer compares that with the deadlines as the command moves to T, a cycle or more
        # before it enters, so that no carry chain sits in the decision (see CircularBuffer). It also takes
        # ``cmd.valid`` out of the decision: whether a command enters A next is T's valid flag. Its next-state
        # flags are registers and a LUT or two, high where the exact ones are and, rarely, where they are not (a
        # shift right after a shift): such a command goes a cycle later, from the exact flags registered at its
        # entry.
        a_valid, a_op, a_key = Signal(name="a_valid"), Signal(Op, name="a_op"), Signal(c.key_width, name="a_key")
        s_valid, s_op, s_key = Signal(name="s_valid"), Signal(Op, name="s_op"), Signal(c.key_width, name="s_key")
        ready, advance = Signal(name="ready"), Signal(name="advance")
        holding = Signal(init=1)                            # ~advance, for the next values of the two alone
        accept = Signal()
        take = Signal()                                     # A takes the next command now
        m.d.comb += [accept.eq(self.cmd.valid & ready), take.eq(~a_valid | advance), self.cmd.ready.eq(ready)]
        # Only the valid flags depend on cmd.valid: S captures the payload whenever it is free, and the stage
        # after it (and the buffer: ``enter``, ``stage``) loads whenever it may take a command, a don't-care when
        # none comes.
        incoming = s_valid | accept                         # a command from S or cmd
        incoming_op = Mux(s_valid, s_op, self.cmd.payload.op)
        incoming_key = Mux(s_valid, s_key, self.cmd.payload.key)
        with m.If(~s_valid):
            m.d.sync += [s_op.eq(self.cmd.payload.op), s_key.eq(self.cmd.payload.key)]
        if c.timed:
            # U registers the command (from S, else cmd) before T, so that the time T's compares start from is a
            # flip-flop, not the multiplexer between S and cmd: that net feeds every deadline's carry chain.
            u_valid, u_op, u_key = Signal(name="u_valid"), Signal(Op, name="u_op"), Signal(c.key_width, name="u_key")
            t_valid, t_op, t_key = Signal(name="t_valid"), Signal(Op, name="t_op"), Signal(c.key_width, name="t_key")
            s_time = Signal(c.time_width, name="s_time")
            with m.If(~s_valid):
                m.d.sync += s_time.eq(self.cmd.payload.time)
            t_take = Signal()                               # T takes the command in U now
            u_take = Signal()                               # U takes the next command (from S, else cmd) now
            m.d.comb += [t_take.eq(~t_valid | take), u_take.eq(~u_valid | t_take)]
            m.d.sync += [u_valid.eq(~u_take | incoming), s_valid.eq(~u_take & incoming),
                         t_valid.eq(~t_take | u_valid)]
            with m.If(u_take):
                m.d.sync += [u_op.eq(incoming_op), u_key.eq(incoming_key)]
            # At pace 1, U's time in a register per copy the buffer reads, each feeding its own group of carry
            # chains, odd copies its complement (not reset: the time of an empty U is never staged as a
            # command's). At pace 2 and 3 the buffer reads copy 0 alone.
            next_time = Mux(s_valid, s_time, self.cmd.payload.time)
            if self._pace == 1:
                u_time = register_copies(m, next_time, STAGE_TIME_COPIES, name="u_time", enable=u_take, undo=False)
            else:
                u_time = [Signal(c.time_width, name="u_time")]
                with m.If(u_take):
                    m.d.sync += u_time[0].eq(next_time)
            with m.If(t_take):
                m.d.sync += [t_op.eq(u_op), t_key.eq(u_key)]
            m.d.comb += [buffer.stage.eq(t_take)] + [buffer.stage_time[n].eq(copy) for n, copy in enumerate(u_time)]
            entering, enter_op, enter_key = t_valid, t_op, t_key
            # S is full next cycle iff U does not take and a command comes.
            s_full_if_held = a_valid & t_valid & u_valid & incoming
        else:
            m.d.sync += s_valid.eq(~take & incoming)
            entering, enter_op, enter_key = incoming, incoming_op, incoming_key
            s_full_if_held = a_valid & incoming
        m.d.sync += a_valid.eq(~take | entering)
        with m.If(take):
            m.d.sync += [a_op.eq(enter_op), a_key.eq(enter_key)]

        hashing = [stage(f"h{n}", targets=P, fresh=P, retire=P) for n in range(1, latency + 1)]
        fetching = [stage(f"rd{n}", targets=P, fresh=P, retire=P, hashes=hashes_layout)
                    for n in range(1, READ_LATENCY)]
        ms = stage("m", targets=P, fresh=P, retire=P, hashes=hashes_layout)
        ws = stage("w", targets=P, fresh=P, retire=P, hashes=hashes_layout, view=blocks_layout,
                   block=blocks_layout)
        ds = stage("d", fresh=P, picks=data.ArrayLayout(c.block_hashes, P))
        es = stage("e", match=P)
        fs = stage("f", hit=1)
        writing = [*hashing, *fetching, ms, ws]
        ahead = Cat(*(s["valid"] for s in writing)).any()
        cleared = Signal()                                  # the restart's clearing has been started
        # The segments will be ready next cycle (conservative: the cycle the clearing ends counts as not ready).
        segments_ok = segments.ready & ~segments.clear
        # If A goes now: the next command is in A next cycle iff one is entering (T holds one; without a span,
        # S holds one or one is accepted); the restart's clearing is over. If A holds: A stays full if it is, and
        # takes the next command if it is empty.
        if self._pace == 1:
            goes = (entering & responses.available_if_reserved & ~buffer.wait_next_decided &
                    ~buffer.restart_next_decided)
            holds = ((a_valid | entering) & responses.available_if_not & ~buffer.wait_next_held &
                     (~buffer.restart_next_held | cleared | segments.clear))
        elif self._pace == 2:
            # At pace 2 a command is decided in its second cycle in A at the earliest: the flags are those of
            # the command in A now, from the buffer's registers (the "held" case with nothing entering), and
            # none is computed for a command still entering.
            goes = Const(0)
            holds = (a_valid & responses.available_if_not & ~buffer.wait_next_held &
                     (~buffer.restart_next_held | cleared | segments.clear))
        else:
            # At pace 3 a command is decided in its third cycle in A at the earliest, from the buffer's flags as
            # they read in its second: ``shift`` (and ``wait``) registered from its first, ``restart`` a LUT or
            # two of registers. Held, a command's flags do not change but for the clearing, which only lowers
            # ``wait``: so what they say now holds next cycle, and the pool-full and stale reductions that the
            # buffer's next-state flags need are not in front of ``advance``.
            aged = Signal(name="a_aged")                    # the command in A was there last cycle too
            m.d.sync += aged.eq(a_valid & ~take)
            goes = Const(0)
            holds = (aged & responses.available_if_not & ~buffer.wait &
                     (~buffer.restart | cleared | segments.clear))
        advance_next = Signal()
        m.d.comb += advance_next.eq(Mux(holding, holds, goes) & segments_ok)
        m.d.sync += [
            advance.eq(advance_next), holding.eq(~advance_next),
            ready.eq(Mux(holding, ~s_full_if_held, 1) & segments_ok),
            cleared.eq(Mux(advance, 0, cleared | segments.clear)),
        ]
        m.d.comb += [
            segments.clear.eq(a_valid & buffer.restart & ~ahead & ~cleared),
            buffer.enter.eq(take), buffer.enter_held.eq(~a_valid if self._pace == 1 else 0),
            buffer.enter_op.eq(enter_op),
            buffer.decide.eq(advance), buffer.cleaned_next.eq(segments.cleaned_next),
            responses.reserve.eq(advance),
            hash.key.eq(a_key), hash.en.eq(1),
        ]

        # The hash pipeline, with what the buffer decided alongside (targets and retirements only for a command
        # that left A: a bubble writes nothing, and its forwarding enables stay low).
        first = hashing[0]
        m.d.sync += [first["valid"].eq(advance), first["op"].eq(a_op),
                     first["targets"].eq(Mux(advance, buffer.targets, 0)), first["fresh"].eq(buffer.fresh),
                     first["retire"].eq(Mux(advance, buffer.retire, 0))]
        for later, earlier in zip(hashing[1:], hashing):
            follow(m, later, earlier)

        # R (the last hash stage): read every segment at the key's block.
        rs = hashing[-1]
        m.d.comb += segments.read_en.eq(1)
        for j in range(P):
            m.d.comb += segments.read_addr[j].eq(hash.hashes[j].index)
        m.d.sync += [fetching[0][field].eq(rs[field]) for field in rs]
        m.d.sync += fetching[0]["hashes"].eq(hash.hashes)
        for later, earlier in zip(fetching[1:], fetching):
            follow(m, later, earlier)
        follow(m, ms, fetching[-1])

        # The writes a read misses: W's now (the command one ahead of M) and READ_LATENCY cycles of history.
        history = [(Signal(P, name=f"fwd_en{age}"), Signal(indices_layout, name=f"fwd_addr{age}"),
                    Signal(blocks_layout, name=f"fwd_data{age}")) for age in range(1, READ_LATENCY + 1)]
        w_index = Cat(*(ws["hashes"][j].index for j in range(P)))
        current = (ws["targets"], w_index, ws["block"])
        for age, entry in enumerate(history):
            source = current if age == 0 else history[age - 1]
            m.d.sync += [entry[n].eq(source[n]) for n in range(3)]
        # The command n ahead of the one in the last read stage is, a cycle later, n ahead of it in M: the
        # comparisons are made there against where those commands are now (M, W, then the history one cycle
        # younger than in M), and registered.
        ft = fetching[-1]
        m_index = Cat(*(ms["hashes"][j].index for j in range(P)))
        ahead_now = [(ms["targets"], m_index), (ws["targets"], w_index)] + \
                    [(en, addr.as_value()) for en, addr, _ in history[:READ_LATENCY - 1]]
        same = [Signal(P, name=f"same{n}") for n in range(1, READ_LATENCY + 2)]
        width = c.block_index_bits
        for n, (enable, indices) in enumerate(ahead_now):
            for j in range(P):
                index = indices[j * width:(j + 1) * width]
                m.d.sync += same[n][j].eq(enable[j] & (ft["hashes"][j].index == index))

        # M: each block as it is now (read data | the writes it missed), and the block to write back (| the key's
        # bits).
        follow(m, {f: ws[f] for f in ("valid", "op", "targets", "fresh", "retire", "hashes")}, ms)
        sources = [ws["block"]] + [written for _, _, written in history]
        for j in range(P):
            view = segments.read_data[j]
            for n, source in enumerate(sources):
                view = view | (source[j] & same[n][j].replicate(c.block_bits))
            m.d.sync += [ws["view"][j].eq(view), ws["block"][j].eq(view | block_mask(c, ms["hashes"][j]))]

        # W: write the blocks back; pick the key's bit of each part from the block as it was.
        m.d.comb += [segments.write_en.eq(ws["targets"]), segments.retire.eq(ws["retire"])]
        for j in range(P):
            m.d.comb += [segments.write_addr[j].eq(ws["hashes"][j].index), segments.write_data[j].eq(ws["block"][j])]
        m.d.sync += [ds["valid"].eq(ws["valid"]), ds["op"].eq(ws["op"]), ds["fresh"].eq(ws["fresh"])]
        for j in range(P):
            for part, pick in enumerate(block_picks(c, ws["hashes"][j], ws["view"][j])):
                m.d.sync += ds["picks"][j][part].eq(pick)

        # D: the match bits of the fresh segments.
        m.d.sync += [es["valid"].eq(ds["valid"]), es["op"].eq(ds["op"])]
        for j in range(P):
            m.d.sync += es["match"][j].eq(ds["picks"][j].all() & ds["fresh"][j])

        # E: k consecutive matches among the fresh segments (Algorithm 1's answer): the run cannot wrap
        # through the free positions below base, which are never fresh.
        runs = Cat(*(Cat(*(es["match"][(s + i) % P] for i in range(k))).all() for s in range(P)))
        m.d.sync += [fs["valid"].eq(es["valid"]), fs["op"].eq(es["op"]), fs["hit"].eq(runs.any() & asks(es["op"]))]

        # F: the answer goes to the response queue.
        m.d.comb += [responses.i.valid.eq(fs["valid"]), responses.i.payload.op.eq(fs["op"]),
                     responses.i.payload.hit.eq(fs["hit"])]
        return m
