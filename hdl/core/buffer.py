"""The circular buffer of segments (paper 000 §5.1) and, for a time-bounded window, its clock (paper 001): which
physical segment plays which role, when the filter shifts, which segments expire and which are retired."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config
from .types import ConfigSignature, Op, inserts

__all__ = ["STAGE_TIME_COPIES", "BufferSignature", "buffer_signature", "CircularBuffer"]

#: Copies of the staged time the buffer takes (a time-bounded window): the time feeds a carry chain per deadline
#: (twenty or more), so each group of chains reads its own copy, and the scan drives each from its own register
#: (:func:`.copies.register_copies`). Odd copies carry the time's complement.
STAGE_TIME_COPIES = 4


def _run(P: int, start: int, length: int) -> int:
    """A P-bit role vector with bits ``start .. start+length-1`` (modulo P) set."""
    return sum(1 << ((start + i) % P) for i in range(length))


def _buffer_members(config: Config) -> dict:
    """The buffer's ports (see :class:`CircularBuffer`); a scan that drives it takes
    ``Out(buffer_signature(config).flip())``."""
    P = config.physical_segments
    members = {
        "enter": In(1),
        "enter_op": In(Op),
        "enter_held": In(1),
        "decide": In(1),
        "cleaned_next": In(P),
        "base": Out(range(P)),
        "fresh": Out(P),
        "shift": Out(1),
        "restart": Out(1),
        "targets": Out(P),
        "retire": Out(P),
        "wait": Out(1),
        "wait_next_decided": Out(1),
        "wait_next_held": Out(1),
        "restart_next_decided": Out(1),
        "restart_next_held": Out(1),
        "inserts": Out(32),
        "shifts": Out(32),
    }
    if config.timed:
        members.update({"stage": In(1), "stage_time": In(data.ArrayLayout(config.time_width, STAGE_TIME_COPIES)),
                        "overflows": Out(32), "expired": Out(32)})
    return members


class BufferSignature(ConfigSignature):
    """The buffer's ports (see :class:`CircularBuffer` and :func:`_buffer_members`); a scan that drives it takes
    ``Out(BufferSignature(config).flip())``."""

    members_of = staticmethod(_buffer_members)


#: The former name of :class:`BufferSignature`.
buffer_signature = BufferSignature


class CircularBuffer(wiring.Component):
    """The state that ages the filter, as the golden model keeps it (:class:`apbbf.model.APBBF`, or
    :class:`apbbf.model.timewindow.TimedAPBBF` for a Config with a span), decided one command at a time.

    A command *enters* (its op and time are registered) and is later *decided*: its stale flags, restart,
    shift, retirements and insert are applied. Between the two the outputs describe it: which segments its
    query may match (``fresh``), which its insert writes (``targets``), which it retires (``retire``). A scan
    decides a command once its segments are known to be clean (``wait`` low); the next command enters in the
    cycle the previous one is decided (in a pipeline), or later, never before.

    After reset ``base`` is 0, the k + l segments at positions 0..k+l-1 are live (only k with a span), and the first insert shifts
    (``shifts`` reads 1 after it), so the first key lands in logical segment 0 = physical position
    ``physical_segments - 1``.

    Parameters
    ----------
    config : Config
    lookahead : bool
        (Time-bounded window.) The command's ``restart`` and ``shift`` are registered at entry, from the
        next-state flags, for a scan that decides a command in the cycle after the one ahead of it (the parallel
        scan at one command per clock, the FSM scan). Without it, for a scan that decides a command no earlier
        than its second cycle in the buffer (the parallel scan at ``pace=2``), ``shift`` (and ``targets``,
        ``retire`` and ``wait``, which follow it) is registered from the state as it is and holds from the
        command's second cycle on, and ``restart`` is computed as it is: the logic behind the decision is one
        command's, not two in a row. Without it too, the position below base counts as dirty (``wait``) until the
        cycle after the one in which ``cleaned`` says it is clear, unless a shift has just moved it there.
    runtime_window : bool
        (Time-bounded window.) The span and the shift interval come from :attr:`window_span` and
        :attr:`window_interval` (read when a command is staged) in place of the Config's, and
        :attr:`window_lower` lowers the deadlines for a shorter span
        (:meth:`apbbf.model.timewindow.TimedAPBBF.set_window`).

    Attributes
    ----------
    enter, enter_op : In
        A command enters in this cycle, with its op (for a time-bounded window, the staged one). While no
        command is undecided, ``enter`` may be high with no command: what it loads then is never decided.
    decide : In(1)
        The command that entered last is decided in this cycle.
    cleaned_next : In(k+l+1)
        Bit j: physical segment j will have just been cleared in the next cycle (a scrub or the clearing of every
        memory is done then): the buffer registers it, and from it, a cycle early (with ``lookahead``; a cycle
        late without), whether the position below base is cleaned, so that a waiting shift's release is one
        flip-flop in the decision.
    base : Out(range(k+l+1))
        Physical position of logical segment 0 now.
    fresh : Out(k+l+1)
        Bit j: physical segment j is live and, at the command's time, not expired: the segments its query
        looks at (Algorithm 1 over them, in age order).
    shift, restart : Out(1)
        The command's insert shifts first; it finds the whole filter expired and restarts it (a time-bounded
        window only: every memory must be cleared before it is decided).
    targets : Out(k+l+1)
        Bit j: the command's insert writes physical segment j (its logical 0..k-1 after the shift); 0 for a query.
    retire : Out(k+l+1)
        Bit j: the command's shift retires physical segment j (to be cleared once the commands before it are
        done with it).
    wait : Out(1)
        The command shifts into a segment that is not clean yet: it must not be decided.
    wait_next_decided, restart_next_decided : Out(1)
        ``wait`` and ``restart`` as they will read in the next cycle if the command is decided now and the next
        one enters at once (a pipeline): computed from the state's next values without ``decide`` and ``enter``,
        so that a scan can register its decision a cycle ahead, and its decision only chooses between these and
        the ``held`` pair at the last gate.
    wait_next_held, restart_next_held : Out(1)
        The same if the command is not decided now, and a command enters iff ``enter_held``. (Time-bounded
        window, with ``lookahead``: these four are exact or high where the exact ones are low, never the other
        way; a command they hold is decided a cycle later, from the exact flags: see
        ``_elaborate_next_flags``.)
    enter_held : In(1)
        What ``enter`` is in a cycle without a decision (for the ``held`` flags, and with a span for the
        registered ``restart`` and ``shift`` of a command that enters in such a cycle).
    inserts, shifts : Out(32)
        Inserts and shifts since reset (wrap), counted the cycle after each decision.
    overflows, expired : Out(32)
        (Time-bounded window.) Segments retired early because the pool was full, and segments retired because
        they expired (a restart counts every live segment), counted the cycle after each decision.
    stage, stage_time : In
        (Time-bounded window.) A command is staged in this cycle, with its time: the one that enters next. A
        command is staged at least a cycle before it enters, while the staged slot is empty or in the cycle its
        command enters; ``enter`` then takes the staged command's time (its op still comes with ``enter_op``).
        ``stage_time`` is :data:`STAGE_TIME_COPIES` copies of the time, each read by a group of the compares:
        even copies carry the time, odd ones its complement, and a scan that stages from registers drives each
        from its own (:func:`.copies.register_copies` with ``undo=False``). Without ``lookahead`` the buffer
        reads copy 0 only.

    window_span, window_interval : Signal(time_width)
        (``runtime_window``; plain signals, not ports of the signature the scan connects to.) The span and the
        shift interval (``span // l + 1``) of the commands staged from now on; reset: the Config's.
    window_lower : Signal(1)
        (``runtime_window``.) A pulse, in a cycle with no command in the buffer or staged, after
        :attr:`window_span` took its new value: every deadline beyond the last insert's time plus
        ``window_span + 1`` is lowered to it.

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``lookahead`` or ``runtime_window`` not a bool.
    ValueError
        If ``runtime_window`` is asked of a Config without a span.
    """

    def __init__(self, config: Config, *, lookahead: bool = True, runtime_window: bool = False):
        check_config(config)
        if not isinstance(lookahead, bool):
            raise TypeError(f"lookahead must be a bool, not {lookahead!r}")
        if not isinstance(runtime_window, bool):
            raise TypeError(f"runtime_window must be a bool, not {runtime_window!r}")
        if runtime_window and not config.timed:
            raise ValueError("runtime_window needs a Config with a span")
        self._config = config
        self._lookahead = lookahead
        self._runtime_window = runtime_window
        super().__init__(buffer_signature(config))
        if runtime_window:
            w = config.time_width
            self.window_span = Signal(w, init=config.span)
            self.window_interval = Signal(w, init=config.shift_interval)
            self.window_lower = Signal()

    @property
    def runtime_window(self) -> bool:
        return self._runtime_window

    @property
    def config(self) -> Config:
        return self._config

    @property
    def lookahead(self) -> bool:
        return self._lookahead

    def elaborate(self, platform):
        # Roles are P-bit vectors (bit j: physical segment j has the role) that rotate by one on a shift, so
        # no per-segment modular arithmetic sits in the paths that use them. Live segments form an arc from
        # base; the position below base (logical P-1) is always free, and the next shift takes it.
        #
        # Time: every age test "now - t_j > span" is done as "now >= t_j + span + 1", against a deadline
        # register per segment, and before the command is decided: a command is staged (``stage``) a cycle or
        # more before it enters, and its compares are made then, against every deadline it can meet when it
        # enters (each segment's as it stands, and the one the command ahead writes if it is decided first),
        # and kept up to date while it waits. So the carry chains run from the staged time into registers, and
        # neither entering nor the decision loop sees one: entering picks among registered compares with
        # ``decide`` and the writes of the command ahead. (A command only enters in the cycle its predecessor
        # is decided, or later.)
        #
        # The decision loop (state -> shift, wait -> decide -> state) runs once per command and cannot be
        # pipelined. So every state register is written from an explicit next value, and the flags the decision
        # tests (``wait``, ``restart``) are computed again from those next values, twice: ``*_next_decided`` and
        # ``*_next_held`` say now what the command in the buffer next cycle will find if this one is decided, or
        # not. A scan registers its decision a cycle early from them, so that ``decide`` (and everything it
        # enables) hangs on one flip-flop instead of on the flags' logic, and that flip-flop's own next value
        # only picks between the two pairs at its last gate (a Shannon expansion on ``decide``).
        #
        # With a span the exact flags need the pool's fill and the stale segments at a position that moves with
        # base (reductions over every segment): too deep for the scan's one register. So with the lookahead the
        # next-state flags are cheap supersets (see _elaborate_next_flags), and the exact ones, registered at a
        # command's entry (``restart``, ``shift``), read the flags at the positions below base from registers
        # of their own (see _elaborate_positions).
        c = self._config
        k, l, P, g = c.k, c.l, c.physical_segments, c.generation
        m = Module()

        op = Signal(Op)
        base_one = Signal(P, init=1)                             # one-hot: base
        newest = Signal(P, init=_run(P, 0, k))                   # logical 0..k-1 now
        newest_next = Signal(P, init=_run(P, P - 1, k))          # logical 0..k-1 after a shift
        # Live after reset: logical 0..k+l-1 (count), or 0..k-1 (time: empty segments would only crowd the pool).
        arc = Signal(P, init=_run(P, 0, k if c.timed else k + l))
        live = Signal(P, init=_run(P, 0, k if c.timed else k + l))
        dirty = Signal(P)                                        # retired, not yet cleared
        fill = Signal(range(g + 1), init=g)                      # inserts since the last shift
        full = Signal(init=1)                                    # fill == g
        almost_full = Signal(init=g == 1)                        # fill == g - 1
        below_dirty = Signal()                                   # (dirty & below).any()

        op_n = Signal(Op)
        m.d.comb += op_n.eq(Mux(self.enter, self.enter_op, op))
        m.d.sync += op.eq(op_n)

        inserting = inserts(op)        # not QUERY, nor the reserved op 3
        below = base_one.rotate_right(1)                         # logical P-1: the next logical 0
        shifting = Signal()                                      # decided now, and shifts
        m.d.comb += shifting.eq(self.decide & self.shift)
        if c.timed:
            now, upcoming, entering_expired, registered = self._elaborate_time(m, op, live, newest, newest_next,
                                                                               below)
            stale_now, shift_due, started, newest_stale = now
        else:
            stale_now, shift_due, started, newest_stale = Const(0, P), Const(0), Const(1), Const(0)
        if c.timed and self._lookahead:
            # A command's restart and shift do not change from its entry to its decision (only a decision
            # changes what they read): so they are registered at entry, from the same next-state flags the scan
            # decides from, and the next command's flags start from two flip-flops, not from the pool-full
            # reduction of this one's. (``wait`` moves with the scrubs: it stays a function of ``below_dirty``.)
            restart, shift = Signal(), Signal()
            wait = shift & ~restart & below_dirty
        elif c.timed:
            # Without the lookahead a command is decided in its second cycle at the earliest: its shift (behind
            # the pool-full reduction) is registered from the state as it is, and what the decision writes
            # (targets, retirements, the staged compares' updates) starts from that flip-flop. Its restart is
            # two LUT levels: it stays as it is, for a scan that must see it in the command's first cycle.
            restart, shift_now, _ = self._flags(inserting, full, below_dirty, below, live, stale_now, shift_due,
                                                started, newest_stale)
            shift = Signal()
            m.d.sync += shift.eq(shift_now)
            wait = shift & ~restart & below_dirty
        else:
            restart, shift, wait = self._flags(inserting, full, below_dirty, below, live, stale_now, shift_due,
                                               started, newest_stale)
        m.d.comb += [self.restart.eq(restart), self.shift.eq(shift), self.wait.eq(wait),
                     self.fresh.eq(live & ~stale_now),
                     self.targets.eq(Mux(inserting, Mux(self.shift, newest_next, newest), 0))]

        # A shift: retire the stale segments; if only the position below base is then free, retire the
        # oldest too (in count mode always: the spare of paper 000's k + l segments); take the position below.
        if c.timed:
            live_base = Mux(self.restart, arc, live)
            retire_stale = Mux(self.restart, 0, live & stale_now)
            live_kept = live_base & ~retire_stale
            # Only the position below base free means the one two below it is live and kept, and that one is
            # then the oldest (the farthest a live segment can be): so the overflow's retirement is a bitwise AND
            # with that one-hot position, and no reduction over the segments is in its path.
            two_below = below.rotate_right(1)
            retire_oldest = live_kept & two_below
            overflow = retire_oldest.any()
            retire = retire_stale | retire_oldest
            live_shifted = (live_kept & ~two_below) | below
        else:
            # The live arc is every position but the one below base: the oldest is the one below that.
            retire_stale, overflow = Const(0, P), Const(1)
            retire = below.rotate_right(1)
            live_shifted = live.rotate_right(1)
        m.d.comb += self.retire.eq(Mux(self.shift & ~self.restart, retire, 0))   # a restart has cleared all

        cleaned = Signal(P)
        m.d.sync += cleaned.eq(self.cleaned_next)
        below_cleaned = Signal()
        if self._lookahead:
            # (cleaned & below).any() next cycle: below moves on a shift only.
            m.d.sync += below_cleaned.eq(Mux(shifting, (self.cleaned_next & below.rotate_right(1)).any(),
                                             (self.cleaned_next & below).any()))
        else:
            # A command decided in its second cycle at the earliest can wait a cycle longer for its segment:
            # the position below base counts as dirty until the cycle after the one its clearing ends in. So the
            # flag is a reduction of registers into a register, with no clearing logic (``cleaned_next``) and no
            # decision in front. It is about the position below base a cycle ago, which a shift may have moved
            # since; but a shift is decided only while that position is clean (``wait``), or with a restart, after
            # which no segment is dirty: so the position it says was cleaned never matters after a shift.
            m.d.sync += below_cleaned.eq((cleaned & below).any())
        kept = dirty & ~cleaned
        # After a shift in count mode the next below is the oldest, which that shift retires; without one, below
        # stays where it is (one-hot) and stays dirty unless it is cleaned now.
        positions = None
        if c.timed and self._lookahead and P >= k + 4:
            positions = self._elaborate_positions(m, inserting, base_one=base_one, live=live, dirty=dirty,
                                                  cleaned=cleaned, started=started, stale_now=stale_now,
                                                  registered=registered)
            # The position below base is never live: so what the shift retires at the new below (two below base)
            # is whatever is live there, stale or the overflow's oldest.
            shifted_below_dirty = ~self.restart & ((positions["dirty1"] & ~positions["cleaned1"]) |
                                                   positions["live1"])
        elif c.timed:
            # (retire & p).any() at p, two below base, without the overflow reduction: the position below base is
            # never live, so the shift retires whatever is live at p, stale or the overflow's oldest (as with the
            # lookahead). Only the clearing moves ``kept`` while a command waits: ``restart`` and the live bit at p,
            # like ``shift``, are registered from the state as it is and hold from the command's second cycle.
            p = below.rotate_right(1)
            live_p, no_restart = Signal(), Signal()
            m.d.sync += [no_restart.eq(~self.restart), live_p.eq((live & p).any())]
            shifted_below_dirty = no_restart & ((kept & p).any() | live_p)
        else:
            shifted_below_dirty = Const(1)

        def next_state(decide, enter):
            """The state's next values if the command is decided (``decide``) and one enters (``enter``)."""
            shifts = decide & self.shift
            return {
                "op": Mux(enter, self.enter_op, op),
                "fill": Mux(decide & inserting, Mux(self.shift, 1, fill + 1), fill),
                "full": Mux(decide & inserting, Mux(self.shift, g == 1, almost_full), full),
                "live": Mux(shifts, live_shifted, live),
                "base_one": Mux(shifts, below, base_one),
                "dirty": Mux(shifts, Mux(self.restart, 0, kept | retire), kept),
                "below_dirty": Mux(shifts, shifted_below_dirty, below_dirty & ~below_cleaned),
            }

        state_n = {name: Signal.like(value, name=f"{name}_n")
                   for name, value in (("fill", fill), ("full", full), ("live", live), ("base_one", base_one),
                                       ("dirty", dirty), ("below_dirty", below_dirty))}
        for name, value in next_state(self.decide, self.enter).items():
            if name in state_n:
                m.d.comb += state_n[name].eq(value)
        fill_n, full_n, live_n = state_n["fill"], state_n["full"], state_n["live"]
        # almost_full's next value without fill's adder: fill moves to 1 on a shift, by one on another insert.
        almost_full_n = Mux(self.decide & inserting, Mux(self.shift, g == 2, fill == g - 2 if g >= 2 else 0),
                            almost_full)
        m.d.sync += [fill.eq(fill_n), full.eq(full_n), almost_full.eq(almost_full_n), live.eq(live_n),
                     base_one.eq(state_n["base_one"]), dirty.eq(state_n["dirty"]),
                     below_dirty.eq(state_n["below_dirty"])]
        with m.If(shifting):
            m.d.sync += [self.base.eq(Mux(self.base == 0, P - 1, self.base - 1)),
                         newest.eq(newest_next), newest_next.eq(newest_next.rotate_right(1)),
                         arc.eq(arc.rotate_right(1))]

        # The same flags for the command in the buffer next cycle, from the next state: once if the command is
        # decided now (and the next enters), once if it is held. Neither depends on ``decide``: a scan that
        # registers its decision picks between them with a copy of that register, at the last gate.
        flags_next = {}
        for suffix, decide, enter in (("decided", Const(1), Const(1)), ("held", Const(0), self.enter_held)):
            n = next_state(decide, enter)
            pool_full_n = None
            if c.timed:
                upcoming_flags = upcoming(decide, enter, n["live"])
                if suffix == "decided":
                    # The next command's pool-full bit reads one position, two below its base: two below this
                    # base if this command does not shift, three if it does. There the next state reduces
                    # exactly to this one's, without the overflow reduction of this command's shift: a shift
                    # adds only the position below base, and it retires the oldest only when the position two
                    # below is live, and then the oldest is not the one three below. So the bit is picked from
                    # this state's fresh segments (live and not stale), once per case, not from the next state.
                    # Neither position is one the command writes, unless it writes every segment (a restart,
                    # or the first insert): its targets are logical 0..k-1 from base or from below, and
                    # P >= k + 2. So the next command's compare there is picked from the registered staged
                    # compares by the one-hot position alone, and the decision only chooses at the end.
                    started_n = upcoming_flags[2]
                    p1, p2 = below.rotate_right(1), below.rotate_right(2)
                    writes_all = inserting & (~started | self.restart)
                    if positions is None:
                        expired_p1, expired_p2 = entering_expired(p1, writes_all), entering_expired(p2, writes_all)
                        fresh_p1, fresh_p2 = (self.fresh & p1).any(), (self.fresh & p2).any()
                        arc_p2 = (arc & p2).any()
                    else:
                        expired_p1 = Mux(writes_all, registered["staged_expired_next"], positions["staged1"])
                        expired_p2 = Mux(writes_all, registered["staged_expired_next"], positions["staged2"])
                        fresh_p1, fresh_p2 = positions["fresh1"], positions["fresh2"]
                        arc_p2 = positions["arc2"]
                    pool_full_n = Mux(
                        self.shift,
                        Mux(self.restart, arc_p2, fresh_p2) & ~expired_p2,
                        fresh_p1 & ~(started_n & expired_p1))
                elif positions is not None:
                    # Held: the state does not move; the command that enters, if any, meets the staged compares.
                    pool_full_n = (positions["live1"] & ~positions["stale1"] &
                                   ~(started & Mux(enter, positions["staged1"], positions["expired1"])))
            else:
                upcoming_flags = stale_now, shift_due, started, newest_stale
            restart_n, shift_n, wait_n = self._flags(inserts(n["op"]), n["full"], n["below_dirty"],
                                                     n["base_one"].rotate_right(1), n["live"], *upcoming_flags,
                                                     pool_full=pool_full_n)
            if not (c.timed and self._lookahead):
                m.d.comb += [getattr(self, f"restart_next_{suffix}").eq(restart_n),
                             getattr(self, f"wait_next_{suffix}").eq(wait_n)]
            flags_next[suffix] = restart_n, shift_n
        if c.timed and self._lookahead:
            # Held, a command keeps the flags it entered with: they are computed for one entering a buffer
            # without a command only.
            m.d.sync += [restart.eq(Mux(self.decide, flags_next["decided"][0],
                                        Mux(self.enter_held, flags_next["held"][0], restart))),
                         shift.eq(Mux(self.decide, flags_next["decided"][1],
                                      Mux(self.enter_held, flags_next["held"][1], shift)))]
            self._elaborate_next_flags(m, inserting, fill_flags=(full, almost_full), below_dirty=below_dirty,
                                       below_cleaned=below_cleaned, restart=restart, shift=shift,
                                       started=started, newest_stale=newest_stale, registered=registered)

        # The counters count a cycle after the decision, from registered pulses: off the decision loop.
        counted_insert, counted_shift = Signal(), Signal()
        m.d.sync += [counted_insert.eq(self.decide & inserting), counted_shift.eq(shifting)]
        with m.If(counted_insert):
            m.d.sync += self.inserts.eq(self.inserts + 1)
        with m.If(counted_shift):
            m.d.sync += self.shifts.eq(self.shifts + 1)
        if c.timed:
            counted_overflow, counted_restart = Signal(), Signal()
            counted_live, counted_stale = Signal(P), Signal(P)
            m.d.sync += [counted_overflow.eq(shifting & overflow),
                         counted_restart.eq(self.restart), counted_live.eq(live), counted_stale.eq(retire_stale)]
            m.d.sync += self.overflows.eq(self.overflows + counted_overflow)
            with m.If(counted_shift):
                m.d.sync += self.expired.eq(self.expired + Mux(counted_restart, _popcount(counted_live),
                                                               _popcount(counted_stale)))
        return m

    def _invariant(self, m, name: str, value, exact) -> None:
        """A hook for simulation: ``value``, kept in registers, equals in every cycle what ``exact()`` builds
        from the state (the reduction it stands for). The design builds nothing here; a test's subclass
        asserts the two equal."""

    def _elaborate_positions(self, m, inserting, *, base_one, live, dirty, cleaned, started, stale_now,
                             registered):
        """The per-segment flags at the positions two and three below base (``q1``, ``q2``), kept in registers.

        The exact flags of the command that enters next (its shift: the count floor, paper 001's pool; and its
        position below base once it shifts) read the live, stale and expired segments at these positions. Picked
        from the P-bit vectors by the one-hot base, each is a reduction over every segment in front of the
        decision; kept here as registers, each bit's next value is a multiplexer of the registers at its position
        and the one below it (a shift moves every position by one), and only the farthest (three below base)
        are reductions, of registers, into registers; the deadlines are kept at every position (a ring). Needs
        ``P >= k + 4``: the command writes q1..q3 only when it writes every segment (its targets are logical
        0..k-1 from base or from below), and the positions are distinct.

        Returns a dict of the registers' values now (``live1``, ``stale1``, ``expired1``, ``staged1``,
        ``dirty1``, ``cleaned1``, the same at 2 where kept, ``fresh1``, ``fresh2``, ``arc2``).
        """
        c = self._config
        k, P = c.k, c.physical_segments
        positions = [base_one.rotate_right(r + 1) for r in range(P)]        # q0 (below base) .. q(P-1) (base)

        def at(vector, r):
            return (vector & positions[r]).any()

        def bit_at(value, r):
            """The bit at q_r of a P-bit constant laid out from base 0."""
            return (value >> ((P - 1 - r) % P)) & 1

        restart, shift, decide, enter = self.restart, self.shift, self.decide, self.enter
        shifting = decide & shift
        writes_all = inserting & (~started | restart)           # the only way the command writes q1..q3
        staged_expired_next = registered["staged_expired_next"]
        staged_reached = registered["staged_reached"]
        next_deadline = registered["next_deadline"]
        w = c.time_width

        def register(name, r, init=0, shape=1):
            return Signal(shape, name=f"{name}_q{r}", init=init)

        live_at = {r: register("live", r, bit_at(_run(P, 0, k), r)) for r in (1, 2)}
        stale_at = {r: register("stale", r) for r in (1, 2)}
        expired_at = {r: register("expired", r) for r in (1, 2)}
        staged_at = {r: register("staged_expired", r) for r in (1, 2)}
        deadline_at = {r: register("deadline", r, shape=w) for r in range(P)}
        dirty1, cleaned1 = register("dirty", 1), register("cleaned", 1)

        def fresh(r):
            return live_at[r] & ~stale_at[r] & ~(started & expired_at[r])

        # The farthest positions, from the vectors (registers only).
        fresh3 = at(live & ~stale_now, 3)
        expired3 = at(registered["expired"], 3)
        staged3 = at(registered["staged_expired"], 3)
        def writes_at(r):
            """The command writes q_r (logical P-1-r from base): when it writes every segment, or when q_r is
            among its targets (logical 0..k-1, or P-1 and 0..k-2 if it shifts), a constant of P and k either way
            of ``shift``."""
            offset = (P - 1 - r) % P
            return inserting & (~started | restart | Mux(shift, offset == P - 1 or offset <= k - 2, offset <= k - 1))

        def pick(r):
            return Cat(*[Cat(*[d[b] & positions[r][j] for j, d in enumerate(registered["deadline"])]).any()
                         for b in range(w)])

        arc = _run(P, 0, k)
        for r in (1, 2):
            fresh_shifted = fresh(2) if r == 1 else fresh3
            m.d.sync += [
                live_at[r].eq(Mux(shifting, Mux(restart, bit_at(arc, r + 1), fresh_shifted), live_at[r])),
                stale_at[r].eq(Mux(decide, Mux(shift, 0, stale_at[r] | (started & live_at[r] & expired_at[r])),
                                   stale_at[r])),
            ]
        staged_shifted = {1: staged_at[2], 2: staged3}
        expired_shifted = {1: expired_at[2], 2: expired3}
        for r in (1, 2):
            m.d.sync += expired_at[r].eq(Mux(
                shifting,
                Mux(enter, Mux(writes_all, staged_expired_next, staged_shifted[r]), expired_shifted[r]),
                Mux(enter, Mux(decide & writes_all, staged_expired_next, staged_at[r]), expired_at[r])))
        # The staged compares at q1, q2: against the deadlines there, kept in registers too, so that the carry
        # chains start from registers, as the P compares of the staged command do. Which deadline applies (the
        # one the command ahead writes, the one shifted in, or the one there) is picked first, and each compare
        # only meets ``stage`` after it, so that a chain's output is a LUT or two from its register.
        for r in (1, 2):
            m.d.sync += staged_at[r].eq(Mux(
                decide & writes_all, Mux(self.stage, staged_reached(next_deadline), staged_expired_next),
                Mux(shifting, Mux(self.stage, staged_reached(deadline_at[r + 1]), staged_shifted[r]),
                    Mux(self.stage, staged_reached(deadline_at[r]), staged_at[r]))))
        # The deadlines by position, a ring of registers that turns with base: on a shift each takes the one
        # above it (the same segment, one position further from base), or the deadline the command writes there.
        # A deadline at a position is then a register, not a pick of every segment's by the one-hot base (the
        # deadline four below base, picked so, into q3, was the core's most congested spot: base's bits, each
        # to 32 LUTs of the pick, and the pick's 416 inputs). Each bit's next value reads its two neighbours.
        for r in range(P):
            above = (r + 1) % P
            m.d.sync += deadline_at[r].eq(Mux(shifting, Mux(writes_at(above), next_deadline, deadline_at[above]),
                                              Mux(decide & writes_at(r), next_deadline, deadline_at[r])))
        # Dirty at q1: after a shift, what was at q2, plus what the shift retires there (stale: the overflow
        # retires the oldest at q1 only); cleaned at q1: the segments' next cleaned flags, at the next q1.
        kept2 = at(dirty & ~cleaned, 2)
        retired2 = live_at[2] & (stale_at[2] | (started & expired_at[2]))
        m.d.sync += [
            dirty1.eq(Mux(shifting, Mux(restart, 0, kept2 | retired2), dirty1 & ~cleaned1)),
            cleaned1.eq(Mux(shifting, at(self.cleaned_next, 2), at(self.cleaned_next, 1))),
        ]
        for r in range(P):
            self._invariant(m, f"deadline_q{r}", deadline_at[r], lambda r=r: pick(r))
        for r in (1, 2):
            self._invariant(m, f"live_q{r}", live_at[r], lambda r=r: at(live, r))
            self._invariant(m, f"stale_q{r}", stale_at[r], lambda r=r: at(registered["stale"], r))
            self._invariant(m, f"expired_q{r}", expired_at[r], lambda r=r: at(registered["expired"], r))
            self._invariant(m, f"staged_expired_q{r}", staged_at[r], lambda r=r: at(registered["staged_expired"], r))
        self._invariant(m, "dirty_q1", dirty1, lambda: at(dirty, 1))
        self._invariant(m, "cleaned_q1", cleaned1, lambda: at(cleaned, 1))
        return {"live1": live_at[1], "stale1": stale_at[1], "expired1": expired_at[1], "staged1": staged_at[1],
                "staged2": staged_at[2], "dirty1": dirty1, "cleaned1": cleaned1, "fresh1": fresh(1),
                "fresh2": fresh(2), "arc2": Const(bit_at(arc, 2))}

    def _elaborate_next_flags(self, m, inserting, *, fill_flags, below_dirty, below_cleaned, restart, shift, started,
                              newest_stale, registered):
        """The scan's ``wait_next_*`` and ``restart_next_*`` for a time-bounded window with the lookahead.

        These decide whether the command in the buffer next cycle may be decided then, and they end in
        ``advance``, the one register of the decision loop: so they are made of registers and a LUT level or
        two, not of the exact flags, which need the stale segments and the pool's fill at a position that moves
        (reductions over every segment). Each is exact, or high where the exact one is low (never the other way
        around), in which case the scan holds the command a cycle longer and decides it then from the exact
        flags, registered at its entry (``restart``, ``shift``): the answers never change, only, rarely, a
        cycle. Where they differ from the exact flags:

        * an insert due to shift by time is held while the position below base is dirty (a segment retired
          since is still being cleared) even if the pool is full, so that it does not shift (the count floor);
        * after a shift, the next command is held if it may shift (it finds a full generation, is due to shift
          by time or restarts), even if the position it would shift into is clean.

        So the commands are held only around shifts: after a shift, a command whose time is a shift interval
        or more past the shifting one's (or every insert, with a generation of one key); and, while a retired
        segment is cleared, an insert due to shift by time that finds the pool full (an overloaded window
        during its clearing).
        """
        c = self._config
        g = c.generation
        full, almost_full = fill_flags
        entering = inserts(self.enter_op)
        below_dirty_held = below_dirty & ~below_cleaned                # the position below base, if no shift
        staged_expired_next = registered["staged_expired_next"]
        # If the command is decided now and the staged one enters: its restart exactly, its shift without the
        # count floor (a superset), and its wait as if its position below base were dirty after every shift.
        started_n = started | inserting
        full_n = Mux(inserting, Mux(shift, g == 1, almost_full), full)
        shift_due_n = Mux(shift, registered["staged_shift_due_next"], registered["staged_shift_due"])
        newest_stale_n = Mux(shift, 0, newest_stale) | (started_n & Mux(inserting, staged_expired_next,
                                                                        registered["staged_base_expired"]))
        restart_decided = entering & started_n & newest_stale_n
        may_shift_decided = entering & (restart_decided | ~started_n | full_n | shift_due_n)
        wait_decided = may_shift_decided & ~restart_decided & Mux(shift, 1, below_dirty_held)
        # If it is held: the command in the buffer keeps the flags registered at its entry (exact); or, with
        # none in the buffer, the staged one enters, and its flags are computed as above without a decision.
        restart_entering = entering & started & (registered["base_stale"] |
                                                 (started & registered["staged_base_expired"]))
        may_shift_entering = entering & (restart_entering | ~started | full | registered["staged_shift_due"])
        wait_entering = may_shift_entering & ~restart_entering & below_dirty_held
        m.d.comb += [
            self.restart_next_decided.eq(restart_decided),
            self.wait_next_decided.eq(wait_decided),
            self.restart_next_held.eq(Mux(self.enter_held, restart_entering, restart)),
            self.wait_next_held.eq(Mux(self.enter_held, wait_entering, shift & ~restart & below_dirty_held)),
        ]

    def _flags(self, inserting, full, below_dirty, below, live, stale_now, shift_due, started, newest_stale, *,
               pool_full=None):
        """(restart, shift, wait) of a command that inserts or not (``inserting``), in the given state.

        The count floor: a shift by time waits while the pool is full (the live segments that are not stale fill
        every position but the one below base), so that only a full generation retires one early (``pool_full``,
        if given, is that flag computed another way)."""
        restart = inserting & started & newest_stale
        if self._config.timed:
            if pool_full is None:
                pool_full = ((live & ~stale_now) & below.rotate_right(1)).any()
            shift = inserting & (restart | ~started | full | (shift_due & ~pool_full))
        else:
            shift = inserting & full
        wait = shift & ~restart & below_dirty
        return restart, shift, wait

    def _elaborate_time(self, m, op, live, newest, newest_next, below):
        """The per-segment deadlines and stale flags of a time-bounded window.

        Returns ``(stale_now, shift_due, started, newest_stale)`` for the command that entered last
        (``newest_stale`` being ``stale_now`` at base), and a function of ``decide``, ``enter`` and the next
        ``live`` that returns the same four for the command in the buffer next cycle; and a function of a
        one-hot position that gives that command's ``expired`` at the position alone, if the command in the
        buffer is decided and the staged one enters.

        The segment at base (logical 0) is always live and written by every insert, so its deadline is the last
        insert's and its flag ``stale_now[base]`` (the whole filter expired) is kept in two registers of its own:
        the one compare of the entering time with the last insert's deadline, and its stale flag."""
        c = self._config
        P, w = c.physical_segments, c.time_width
        inserting = inserts(op)        # not QUERY, nor the reserved op 3

        def reached(now, deadline):
            """``now >= deadline`` for times within half the counter's range of each other."""
            return ~(now - deadline)[w - 1]

        started = Signal()
        stale = Signal(P)
        deadline = [Signal(w, name=f"deadline{j}") for j in range(P)]   # t_j + span + 1
        shift_deadline = Signal(w)                                        # t_shift + shift_interval
        # The entered command: its deadline and shift deadline, as written if it inserts (and shifts).
        next_deadline = Signal(w)
        next_shift_deadline = Signal(w)
        expired = Signal(P)                                               # now >= deadline_j
        shift_due = Signal()
        last_deadline = Signal(w)                                         # the last insert's: deadline at base
        base_expired = Signal()                                           # expired at base
        base_stale = Signal()                                             # stale at base
        # The staged command: its deadline and shift deadline (as it will write them), and its compares with
        # every deadline it can meet when it enters: each segment's as it stands, and the one the command in
        # the buffer writes if it is decided first. Staged a cycle or more before it enters, so the carry
        # chains run from the staged time into these registers, and entering only picks among them.
        staged_deadline = Signal(w)
        staged_shift_deadline = Signal(w)
        staged_expired = Signal(P)                                        # staged time >= deadline_j
        staged_expired_next = Signal()                                    # >= next_deadline
        staged_shift_due = Signal()                                       # >= shift_deadline
        staged_shift_due_next = Signal()                                  # >= next_shift_deadline
        staged_base_expired = Signal()                                    # >= last_deadline
        with m.If(self.enter):
            m.d.sync += [next_deadline.eq(staged_deadline), next_shift_deadline.eq(staged_shift_deadline)]

        # What the command that entered last writes when it is decided; when another enters, it is decided now
        # or was before (see the comment in elaborate).
        writes = Mux(inserting, Mux(started & ~self.restart, self.targets, (1 << P) - 1), 0)

        def compares(decide, enter):
            """The next values of the registered compares, if the command is decided (``decide``) and the
            staged one enters (``enter``)."""
            return (Mux(enter, Cat(*[Mux(decide & writes[j], staged_expired_next, staged_expired[j])
                                     for j in range(P)]), expired),
                    Mux(enter, Mux(decide & self.shift, staged_shift_due_next, staged_shift_due), shift_due),
                    Mux(enter, Mux(decide & inserting, staged_expired_next, staged_base_expired), base_expired))

        # Staging: the new command's compares against the deadlines as they will stand next cycle (the command
        # in the buffer may be decided now), and against the deadlines the command in the buffer next cycle
        # (the staged one, if it enters now) will write. Otherwise the staged compares follow the decision.
        # The time's copies (STAGE_TIME_COPIES): the segments' deadlines, in two halves, read copies 0 and 1 (and
        # copy 0 the two sums); the ring's deadlines, the next and the last deadline copy 2; the shift deadlines
        # copy 3. The next deadline is compared once per copy that needs it (three carry chains), so that each
        # compare's result only goes to its own group's registers. An odd copy holds the complement ~now, and ``now >= deadline`` is then the sign of ~now + deadline
        # (= ~(now - deadline)): an adder, the same carry chain, with no inverter in front of it.
        # Without the lookahead (pace 2 and 3) copy 0 alone: there the copies measured slower (the de-duplicator
        # at 64 bits, docs/design-notes.md), the compares not being its limit.
        time = self.stage_time
        copies = STAGE_TIME_COPIES if self._lookahead else 1
        deadline_copy = {"segment": lambda j: 2 * j // P % copies, "ring": 2 % copies, "shift": 3 % copies}

        def staged_reached(deadline, copy=deadline_copy["ring"]):
            if copy & 1:
                return (time[copy] + deadline)[w - 1]
            return reached(time[copy], deadline)

        # Which deadline each compare is against is picked first, and the compares only meet ``stage`` after
        # it, so that a chain's output is a LUT or two from its register (the same next values as "if staged,
        # the compares; else ``compares(decide, 1)``").
        if self._runtime_window:
            # time + span + 1 in one carry chain: the carry in of a bit below both.
            span_deadline = (Cat(Const(1, 1), time[0]) + Cat(Const(1, 1), self.window_span))[1:w + 1]
            interval = self.window_interval
        else:
            span_deadline, interval = time[0] + c.span + 1, c.shift_interval
        with m.If(self.stage):
            m.d.sync += [
                staged_deadline.eq(span_deadline),
                staged_shift_deadline.eq(time[0] + interval),
                staged_expired_next.eq(Mux(self.enter, staged_reached(staged_deadline),
                                           staged_reached(next_deadline))),
                staged_shift_due_next.eq(Mux(self.enter, staged_reached(staged_shift_deadline, deadline_copy["shift"]),
                                             staged_reached(next_shift_deadline, deadline_copy["shift"]))),
            ]

        def staged_or(compare, kept):
            return Mux(self.stage, compare, kept)

        m.d.sync += [
            staged_expired.eq(Cat(*[Mux(self.decide & writes[j],
                                        staged_or(staged_reached(next_deadline, deadline_copy["segment"](j)),
                                                  staged_expired_next),
                                        staged_or(staged_reached(deadline[j], deadline_copy["segment"](j)),
                                                  staged_expired[j]))
                                    for j in range(P)])),
            staged_shift_due.eq(Mux(self.decide & self.shift,
                                    staged_or(staged_reached(next_shift_deadline, deadline_copy["shift"]),
                                              staged_shift_due_next),
                                    staged_or(staged_reached(shift_deadline, deadline_copy["shift"]),
                                              staged_shift_due))),
            staged_base_expired.eq(Mux(self.decide & inserting,
                                       staged_or(staged_reached(next_deadline), staged_expired_next),
                                       staged_or(staged_reached(last_deadline), staged_base_expired))),
        ]

        expired_n, shift_due_n, base_expired_n = Signal(P), Signal(), Signal()
        m.d.comb += [target.eq(value) for target, value in zip((expired_n, shift_due_n, base_expired_n),
                                                                compares(self.decide, self.enter))]
        m.d.sync += [expired.eq(expired_n), shift_due.eq(shift_due_n), base_expired.eq(base_expired_n)]

        stale_now = Signal(P)
        newest_stale = Signal()
        m.d.comb += [stale_now.eq(stale | (Mux(started, live & expired, 0))),
                     newest_stale.eq(base_stale | (started & base_expired))]

        # A position becomes stale only while live, and a shift retires every stale one (a restart every live
        # one): so after a shift none is stale, and the next flags do not wait for the shift's retirements.
        def flags(decide):
            """The next ``started``, ``stale`` and ``base_stale`` if the command is decided (``decide``)."""
            return (started | (decide & inserting),
                    Mux(decide, Mux(self.shift, 0, stale_now), stale),
                    Mux(decide, Mux(self.shift, 0, newest_stale), base_stale))

        started_n, stale_n, base_stale_n = Signal(), Signal(P), Signal()
        m.d.comb += [target.eq(value) for target, value in zip((started_n, stale_n, base_stale_n),
                                                                flags(self.decide))]
        m.d.sync += [started.eq(started_n), stale.eq(stale_n), base_stale.eq(base_stale_n)]
        with m.If(self.decide):
            with m.If(inserting):
                m.d.sync += last_deadline.eq(next_deadline)
                for j in range(P):
                    with m.If(writes[j]):
                        m.d.sync += deadline[j].eq(next_deadline)
            with m.If(self.shift):
                m.d.sync += shift_deadline.eq(next_shift_deadline)
        if self._runtime_window:
            # A shorter span: the deadlines beyond the last insert's time + span + 1 come down to it, so that the
            # segments still expire oldest first (the model's set_window). The last insert's time kept for it.
            staged_time, next_time, last_time = Signal(w), Signal(w), Signal(w)
            with m.If(self.stage):
                m.d.sync += staged_time.eq(time[0])
            with m.If(self.enter):
                m.d.sync += next_time.eq(staged_time)
            with m.If(self.decide & inserting):
                m.d.sync += last_time.eq(next_time)
            cap = Signal(w)
            m.d.comb += cap.eq((Cat(Const(1, 1), last_time) + Cat(Const(1, 1), self.window_span))[1:w + 1])
            with m.If(self.window_lower & started):
                for register in (*deadline, last_deadline):
                    with m.If((cap - register)[w - 1]):
                        m.d.sync += register.eq(cap)

        def upcoming(decide, enter, live_n):
            expired_n, shift_due_n, base_expired_n = compares(decide, enter)
            started_n, stale_n, base_stale_n = flags(decide)
            stale_now_n = stale_n | Mux(started_n, live_n & expired_n, 0)
            return stale_now_n, shift_due_n, started_n, base_stale_n | (started_n & base_expired_n)

        def entering_expired(position, written):
            """``expired`` at the one-hot ``position`` for the staged command, if it enters as the command in
            the buffer is decided: the compare with the deadline that command writes there (``written``), or
            the registered staged compare at that position."""
            return Mux(written, staged_expired_next, (staged_expired & position).any())

        registered = {"base_stale": base_stale, "staged_base_expired": staged_base_expired,
                      "staged_expired_next": staged_expired_next, "staged_shift_due": staged_shift_due,
                      "staged_shift_due_next": staged_shift_due_next, "stale": stale, "expired": expired,
                      "staged_expired": staged_expired, "deadline": deadline, "next_deadline": next_deadline,
                      "staged_reached": staged_reached, "writes": writes}
        return (stale_now, shift_due, started, newest_stale), upcoming, entering_expired, registered


def _popcount(value):
    """Number of set bits, as an adder tree."""
    bits = [value[i] for i in range(len(value))]
    while len(bits) > 1:
        bits = [bits[i] + bits[i + 1] if i + 1 < len(bits) else bits[i] for i in range(0, len(bits), 2)]
    return bits[0]
