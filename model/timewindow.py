"""The time-bounded window of the hardware: paper 001's time-limited filter with fixed-size segments.

:class:`TimedAPBBF` is the specification of the gateware built for a :class:`~apbbf.model.config.Config` with a
``span``: every response of ``apbbf.hdl.APBBF`` equals the answer of this model for the same commands, each
command ``(op, key, time)`` with its timestamp in ticks. Paper 001 (:class:`~apbbf.model.timelimited.TimeLimitedAPBF`,
the reference) sizes each new slice from the measured rate; block RAMs have a fixed size, so here the segments are
the APBBF's and what varies is how many of them are alive, drawn from a pool of ``physical_segments``.

Definition
----------
Times are integers modulo ``2**time_width``; the *age* of a time t at time ``now`` is ``(now - t) mod
2**time_width``. The state is the count-based filter's (:class:`apbbf.model.filters.APBBF`: the circular buffer of
``physical_segments = k + l + 1 + extra_segments`` positions, ``base``, the generation fill, the hash of each
physical position) plus, per position, a timestamp ``t_j`` (paper 001's t_i: the time of the last insert into it)
and a *stale* flag, and the time of the last shift and of the last insert. The *live* segments are logical
0..L-1 (positions ``base .. base+L-1``); the others are free (cleared, or being cleared, by the hardware).

After reset L = k (logical 0..k-1 at positions ``base .. base+k-1``; the count-based filter starts with k + l, but
empty segments that would live for a span only crowd the pool), ``base = 0``, every bit is clear, the generation
is full (the first insert shifts, as in the count-based filter) and the filter is *not started*: it starts at its
first insert, which sets every ``t_j`` to that insert's time. Each command, in order:

1. **Expiry.** If started, every live segment whose age ``now - t_j`` exceeds ``span`` becomes stale, and stays
   stale until its position is reused. (Sticky: a segment seen expired once never comes back, whatever the
   modular ages do later.) Stale segments are the oldest ones: ``t_j`` never grows with the logical index.
2. **Query** (QUERY, and TEST_AND_INSERT before its insert): Algorithm 1 (paper 001's, with its timestamp
   condition) over the L' live segments that are not stale: start at logical ``L' - k``; present iff k
   consecutive of them hold all the key's bits. The access count is the number of steps (segments tested).
3. **Insert** (INSERT, TEST_AND_INSERT):

   a. *Restart*: if started and the last insert is older than ``span`` (``now - t_last > span``), every live
      segment has expired, including the k the insert would write, whose stale bits it would bring back to
      life. The filter is cleared instead (the hardware clears every memory, ``segment_blocks`` cycles, as
      after reset; its L live segments are counted as expired), keeps ``base``, and is as after reset.
   b. *Start*: if not started, every ``t_j`` and the time of the last shift become ``now``.
   c. *Shift* if the generation is full (g inserts since the last shift; count), or if the newest segment has
      been newest for :attr:`~apbbf.model.config.Config.shift_interval` ticks (``now - t_shift >= I``, I =
      ``span // l + 1``; time) and the pool is not full. The pool is *full* when the live segments that are
      not stale fill every position but the one below base (``fresh == physical_segments - 1``): a shift
      then would retire a segment early, so a shift by time waits and the newest generation fills by count
      instead (it shifts when it holds g, or by time once a segment has expired). A shift: the stale
      segments are retired (counted in ``expired``); if L is then ``physical_segments - 1`` (only when the
      generation is full: a shift by count), the oldest live segment is retired early (counted in
      ``overflows``); ``base`` moves down by one and the position below the old base, free and clear,
      becomes logical 0 with ``t = now``. At most one shift per insert: after a gap shorter than the span,
      the segments that are due simply stay older (they expire in step 1).
   d. The key's bits are set in logical 0..k-1 (never stale: their ``t_j`` is the last insert's); their
      ``t_j = now``.

Guarantees (tested). Let a key be inserted at t, and queried at t' (ages modulo ``2**time_width``; every
step between commands below ``2**(time_width-1)``).

1. **The span.** If no segment is retired early (``overflows`` does not move) between t and t', the key is
   reported present whenever ``t' - t <= span``: its k segments keep a ``t_j >= t`` and none is retired while
   not stale.
2. **The count floor.** With ``extra_segments >= l - 1``, the key is reported present whenever ``t' - t <=
   span`` and it is among the last ``l·g`` inserts at t', overflow or not ("within T, and under overload the
   last l·g inserts of T"). Proof: a segment retired early is the oldest, at a shift by count (a shift by
   time waits while the pool is full), with ``L = physical_segments - 1``; the only generation that loses a
   segment is the one for which it was logical k-1, say generation d (``d = l + extra_segments`` shifts
   before). Its last insert is within the span (the segment is not stale). The generations younger than d
   were closed by the shifts since the one that started generation d-1; a generation closed by count holds
   g inserts, and shifts by time are at least I ticks apart with ``l·I > span``, so at most ``l - 1`` of them
   fall within the span: at most ``l - 1`` of the ``l + extra_segments`` younger generations hold fewer than g,
   at least l hold g, and the last ``l·g`` inserts all come after generation d. With fewer extra segments
   the deferral still keeps the floor after a burst followed by slow traffic (the burst's generations are
   not retired for a generation of one key), but not when a burst follows up to ``l - 2`` partly filled
   generations younger than the span: the test of this module shows a key lost with ``l - 2``.
3. **Expiry.** The oldest of the key's segments receives no insert after the next shift. That shift comes
   before ``t + I`` unless the pool is full, in which case it waits until a segment expires (at most
   ``span + 1`` ticks after the oldest segment's last insert), or the filter restarts after a gap; after
   ``t + span + I`` (with the pool not full in between) the key is answered as a fresh key is (false
   positives only). A key older than the span is not kept for the count floor: the time bound is a bound
   both ways.
4. **Restart.** An insert at least ``span + 1`` ticks after the last insert finds every segment expired;
   it clears the filter first and is then the first insert after reset (the key it inserts is present
   afterwards).

Without a span (count only) none of this applies: the filter is :class:`apbbf.model.filters.APBBF`, and
:class:`TimedAPBBF` refuses the Config.
"""

from __future__ import annotations

import numpy as np

from .config import Config, check_config, check_integer
from .filters import Op, scan_from
from .hashing import HashSpec

__all__ = ["TimedAPBBF"]

_CHUNK = 1 << 14


class _Folded(np.ndarray):
    """Keys already folded to the segment hashes' input."""


class TimedAPBBF:
    """The time-bounded APBBF (module documentation): the specification of the gateware for a timed Config.

    Parameters
    ----------
    config : Config
        With ``span > 0``.
    run_seed : int
        The run-time seed of the hash (:class:`~apbbf.model.hashing.HashSpec`'s; 0, the default: the build seed's
        hash alone).

    Attributes
    ----------
    n : int
        Inserts since reset.
    shifts, overflows, expired, restarts : int
        Shifts; segments retired early (not expired); segments retired because they expired (restarts
        included); restarts.
    base : int
        Physical position of logical segment 0.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no span.
    """

    def __init__(self, config: Config, *, run_seed: int = 0):
        check_config(config)
        if not config.timed:
            raise ValueError("config has no span: its window is bounded by count alone (use apbbf.model.APBBF)")
        self._config = config
        self._hash = HashSpec(config, run_seed=run_seed)
        self._P = config.physical_segments
        self._mask = (1 << config.time_width) - 1
        self._bits = np.zeros((self._P, config.segment_bits), dtype=bool)
        self._stamps = np.zeros(self._P, dtype=np.uint64)
        self._span, self._interval = config.span, config.shift_interval
        self._spans = np.full(self._P, config.span, dtype=np.uint64)   # each position's span at its last write
        self._span_last = config.span                                    # the last insert's
        self._interval_shift = config.shift_interval                     # the last shift's
        self.n = self.shifts = self.overflows = self.expired = self.restarts = 0
        self._reset_state(base=0)

    def _reset_state(self, base: int) -> None:
        c = self._config
        self.base = base
        self._bits[:] = False
        self._live = np.zeros(self._P, dtype=bool)
        self._live[(base + np.arange(c.k)) % self._P] = True
        self._stale = np.zeros(self._P, dtype=bool)
        self._fill = c.generation                   # full: the next insert shifts
        self._started = False
        self._t_shift = self._t_last = 0

    def set_window(self, span: int) -> None:
        """Bound the window by ``span`` ticks from the next command on (a run-time change): each insert from then
        on writes its segments' expiry with ``span``, and each shift its deadline with ``span // l + 1`` ticks
        (:attr:`~apbbf.model.config.Config.shift_interval` of that span). So a longer window holds the keys
        inserted from then on (the keys already in keep their expiry). A shorter one also brings every live
        segment's expiry that lies beyond ``t_last + span`` (t_last: the last insert's time) down to it, so that
        the segments still expire oldest first (the query's order): it forgets the older keys that the new span,
        counted from the last insert, would not hold. The shift's deadline stays as it was. (The gateware keeps
        ``t_j + span + 1`` per segment, written by each insert, and lowers them in one cycle at the change.)

        Raises
        ------
        TypeError, ValueError
            If ``span`` is not an integer in ``1 .. 2**(time_width-1) - 1``.
        """
        check_integer("span", span, range(1, 1 << (self._config.time_width - 1)))
        self._span, self._interval = span, span // self._config.l + 1
        if self._started:
            left = self._spans.astype(np.int64) - self._age(self._t_last, self._stamps).astype(np.int64)
            lowered = self._live & (left > span)
            self._stamps[lowered] = self._t_last
            self._spans[lowered] = span
            self._span_last = min(self._span_last, span)

    @property
    def span(self) -> int:
        """The span inserts write now (the Config's until :meth:`set_window`)."""
        return self._span

    # Read-only state ----------------------------------------------------------------------------------------

    config = property(lambda self: self._config, doc="The filter's Config.")
    hash = property(lambda self: self._hash, doc="The filter's HashSpec.")

    @property
    def live(self) -> int:
        """L, the live segments (logical 0..L-1), stale ones included until they are retired."""
        return int(self._live.sum())

    @property
    def fresh(self) -> int:
        """L', the live segments that are not stale: the ones a query looks at."""
        return int((self._live & ~self._stale).sum())

    @property
    def pool_full(self) -> bool:
        """A shift now would retire a segment early: the live segments that are not stale fill every position
        but the one below base (``fresh == physical_segments - 1``). A shift by time then waits."""
        return self.fresh >= self._P - 1

    @property
    def started(self) -> bool:
        """An insert has happened since reset or the last restart."""
        return self._started

    def pos(self, i: int) -> int:
        """Physical position of logical segment i."""
        return (self.base + i) % self._P

    def stamp(self, i: int) -> int:
        """``t_j`` of logical segment i."""
        return int(self._stamps[self.pos(i)])

    def stale(self, i: int) -> bool:
        """Whether logical segment i is stale."""
        return bool(self._stale[self.pos(i)])

    def block(self, position: int, index: int) -> int:
        """Block ``index`` of physical segment ``position`` as a B-bit integer (bit 0 first)."""
        B = self._config.block_bits
        bits = self._bits[position, index * B:(index + 1) * B]
        return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")

    # Checks -------------------------------------------------------------------------------------------------

    def _prepare(self, keys) -> np.ndarray:
        if isinstance(keys, _Folded):
            return keys
        return self._hash.fold_many(self._hash.as_array(keys)).view(_Folded)

    def _check_time(self, now) -> int:
        if isinstance(now, bool) or not isinstance(now, (int, np.integer)):
            raise TypeError(f"time must be an integer, not {now!r}")
        now = int(now)
        if not 0 <= now <= self._mask:
            raise ValueError(f"time must be from 0 to 2**{self._config.time_width}-1, not {now}")
        return now

    def _age(self, now: int, then) -> int | np.ndarray:
        if isinstance(then, np.ndarray):
            return (np.uint64(now) - then) & np.uint64(self._mask)
        return (now - int(then)) & self._mask

    # Per-command path (the reference) -----------------------------------------------------------------------

    def _locate(self, position: int, folded: np.ndarray) -> np.ndarray:
        c = self._config
        blocks, offsets = self._hash.locate_many(position, folded)
        return blocks[:, None] * c.block_bits + offsets

    def _expire(self, now: int) -> None:
        if self._started:
            self._stale |= self._live & (self._age(now, self._stamps) > self._spans)

    def _probe(self, folded) -> tuple[bool, int]:
        k = self._config.k
        fresh = self.fresh

        def match(i):
            position = self.pos(i)
            return bool(self._bits[position, self._locate(position, folded)[0]].all())

        i, p, c, steps = fresh - k, 0, 0, 0
        while i >= 0:
            steps += 1
            if match(i):
                c, i = c + 1, i + 1
                if p + c == k:
                    return True, steps
            else:
                i, p, c = i - k, c, 0
        return False, steps

    def _restart(self) -> None:
        self.expired += self.live
        self.restarts += 1
        self._reset_state(self.base)

    def _shift(self, now: int) -> None:
        retire = self._live & self._stale
        self.expired += int(retire.sum())
        self._live &= ~retire
        self._bits[retire] = False
        if self.live >= self._P - 1:
            oldest = self.pos(self.live - 1)
            self._live[oldest] = False
            self._bits[oldest] = False
            self.overflows += 1
        self.base = (self.base - 1) % self._P
        self._live[self.base] = True
        self._stale[self.base] = False
        self._stamps[self.base] = now
        self._spans[self.base] = self._span
        self._fill = 0
        self._t_shift = now
        self._interval_shift = self._interval
        self.shifts += 1

    def _before_insert(self, now: int) -> bool:
        """Steps 3a-3c; whether a shift happened."""
        c = self._config
        if self._started and self._stale[self.base]:
            self._restart()
        if not self._started:
            self._stamps[:] = now
            self._spans[:] = self._span
            self._t_shift = now
            self._started = True
        shifting = self._fill == c.generation or (self._age(now, self._t_shift) >= self._interval_shift
                                                  and not self.pool_full)
        if shifting:
            self._shift(now)
        return shifting

    def _insert(self, folded, now: int) -> None:
        self._before_insert(now)
        for i in range(self._config.k):
            position = self.pos(i)
            self._bits[position, self._locate(position, folded)[0]] = True
            self._stamps[position] = now
            self._spans[position] = self._span
        self._fill += 1
        self._t_last = now
        self._span_last = self._span
        self.n += 1

    def command(self, op, key, now) -> tuple[bool, int]:
        """Execute one command at time ``now``: ``(hit, accesses)`` (hit False and accesses 0 for INSERT)."""
        op = Op(op)
        now = self._check_time(now)
        folded = self._prepare([key])
        self._expire(now)
        hit, steps = (False, 0) if op == Op.INSERT else self._probe(folded)
        if op != Op.QUERY:
            self._insert(folded, now)
        return hit, steps

    def query(self, key, now) -> bool:
        return self.command(Op.QUERY, key, now)[0]

    def insert(self, key, now) -> None:
        self.command(Op.INSERT, key, now)

    def test_and_insert(self, key, now) -> bool:
        return self.command(Op.TEST_AND_INSERT, key, now)[0]

    # Batch path ---------------------------------------------------------------------------------------------

    def run(self, ops, keys, times) -> tuple[np.ndarray, np.ndarray]:
        """Execute a command sequence; the same answers and state as :meth:`command` in order.

        Commands are cut into chunks with no insert that restarts or shifts, except at their first command.
        Inside a chunk the live set is fixed, the k targets are never stale, and the other segments' timestamps
        are fixed, so each command's stale flags are a cumulative OR over the chunk and its match bits follow
        from the bits before the chunk and the first inserting command of the chunk to set each bit
        (as :meth:`apbbf.model.filters.AgePartitioned.run`).

        Parameters
        ----------
        ops : sequence of Op (or int)
        keys : sequence of keys
        times : sequence of int
            Each command's time in ticks, ``0 <= time < 2**time_width``.

        Returns
        -------
        hits : numpy.ndarray of bool
        accesses : numpy.ndarray of int
        """
        c = self._config
        keys = self._prepare(keys)
        ops = np.array(ops, dtype=np.int64)
        if ops.ndim == 0:
            ops = np.full(len(keys), ops)
        times = np.asarray(times)
        if times.ndim == 0:
            times = np.full(len(keys), times)
        if not (len(ops) == len(keys) == len(times)):
            raise ValueError(f"ops, keys and times must have the same length, not {len(ops)}, {len(keys)} "
                             f"and {len(times)}")
        if np.any((ops < 0) | (ops > 2)):
            raise ValueError("ops must be QUERY (0), INSERT (1) or TEST_AND_INSERT (2)")
        if times.dtype.kind not in "iu" or (len(times) and (times.min() < 0 or int(times.max()) > self._mask)):
            raise ValueError(f"times must be integers from 0 to 2**{c.time_width}-1")
        times = times.astype(np.uint64)
        hits = np.zeros(len(ops), dtype=bool)
        accesses = np.zeros(len(ops), dtype=np.int64)
        inserting = ops != Op.QUERY
        span, mask = np.uint64(self._span), np.uint64(self._mask)
        t0 = 0
        while t0 < len(ops):
            if inserting[t0]:
                # The chunk's first command: expiry and query part at the filter before its insert; then
                # restart, start and shift as the per-command path does.
                now = int(times[t0])
                self._expire(now)
                if ops[t0] == Op.TEST_AND_INSERT:
                    hits[t0], accesses[t0] = self._probe(keys[t0:t0 + 1])
                self._before_insert(now)
                self._chunk(ops[t0:t0 + 1] * 0 + Op.INSERT, keys[t0:t0 + 1], times[t0:t0 + 1],
                            hits[t0:t0 + 1], accesses[t0:t0 + 1], probe=False)
                t0 += 1
            # The chunk runs to the next insert that restarts or shifts. An insert restarts if the newest
            # segment turned stale at a command since the insert before it (or already was).
            window = slice(t0, min(t0 + _CHUNK, len(ops)))
            at = np.flatnonzero(inserting[window]) + t0
            if len(at):
                since = np.searchsorted(at, np.arange(window.start, window.stop), side="left") - 1
                previous = np.where(since >= 0, times[at[np.maximum(since, 0)]], np.uint64(self._t_last))
                lapsed = ((times[window] - previous) & mask) > np.where(
                    since >= 0, span, np.uint64(self._span_last))
                lapsed[0] |= bool(self._stale[self.base])
                lapsed &= self._started
                lapsed_count = np.concatenate([[0], np.cumsum(lapsed)])
                starts = np.concatenate([[window.start], at[:-1] + 1]) - window.start
                restarts = lapsed_count[at - window.start + 1] > lapsed_count[starts]
                fills = self._fill + np.arange(len(at))
                due = ((times[at] - np.uint64(self._t_shift)) & mask) >= np.uint64(self._interval_shift)
                shifts = (fills >= c.generation) | (due & ~self._pool_full_at(times[window], at - window.start))
                stop_at = np.flatnonzero(restarts | shifts)
                t1 = int(at[stop_at[0]]) if len(stop_at) else window.stop
            else:
                t1 = window.stop
            if t1 > t0:
                self._chunk(ops[t0:t1], keys[t0:t1], times[t0:t1], hits[t0:t1], accesses[t0:t1], probe=True)
            t0 = t1
        return hits, accesses

    def _pool_full_at(self, times, at) -> np.ndarray:
        """:attr:`pool_full` at the commands ``at`` of ``times``, with no shift or restart before them: the k
        targets are fresh (an insert that finds them stale restarts), the older live segments turn stale
        for good once their age passes the span."""
        c = self._config
        older = [self.pos(i) for i in range(c.k, self.live)]
        if not older:
            return np.zeros(len(at), dtype=bool)
        stale = np.broadcast_to(self._stale[older][None, :], (len(times), len(older)))
        if self._started:
            ages = (times[:, None] - self._stamps[older][None, :]) & np.uint64(self._mask)
            stale = np.logical_or.accumulate(ages > self._spans[older][None, :], axis=0) | stale
        return c.k + (~stale[at]).sum(axis=1) >= self._P - 1

    def _chunk(self, ops, keys, times, hits, accesses, *, probe):
        """Commands with no restart or shift among their inserts (the state they need is already set)."""
        c = self._config
        k, n = c.k, len(ops)
        live = self.live
        positions = [self.pos(i) for i in range(live)]
        inserting = ops != Op.QUERY
        t = np.arange(n)
        # Stale flags per command and logical segment: sticky, so a cumulative OR down the chunk. The other
        # segments' t_j are fixed here; the k targets' is the time of the last insert before the command.
        if self._started and probe:
            stamps = np.broadcast_to(self._stamps[positions][None, :], (n, live)).copy()
            before = np.maximum.accumulate(np.where(inserting, t, -1))
            before = np.concatenate([[-1], before[:-1]])
            stamps[:, :k] = np.where(before >= 0, times[np.maximum(before, 0)], np.uint64(self._t_last))[:, None]
            spans = np.broadcast_to(self._spans[positions][None, :], (n, live)).copy()
            spans[:, :k] = np.where(before >= 0, np.uint64(self._span), np.uint64(self._span_last))[:, None]
            expired = ((times[:, None] - stamps) & np.uint64(self._mask)) > spans
            stale = np.logical_or.accumulate(expired, axis=0) | self._stale[positions][None, :]
        else:
            stale = np.broadcast_to(self._stale[positions][None, :], (n, live))
        match = np.zeros((n, live), dtype=bool)
        updates = []
        for i, position in enumerate(positions):
            where = self._locate(position, keys)
            seen = self._bits[position][where]
            if i < k and inserting.any():
                first = np.full(self._bits.shape[1], n, dtype=np.int64)
                written = where[inserting]
                np.minimum.at(first, written.ravel(), np.repeat(t[inserting], written.shape[1]))
                seen |= first[where] < t[:, None]
                updates.append((position, written.ravel()))
            match[:, i] = seen.all(axis=1)
        if probe:
            asking = ops != Op.INSERT
            fresh = live - stale.sum(axis=1)
            chunk_hits, chunk_steps = scan_from(match[asking] & ~stale[asking], k, fresh[asking] - k)
            hits[asking] = chunk_hits
            accesses[asking] = chunk_steps
        for position, written in updates:
            self._bits[position, written] = True
        if inserting.any():
            last = int(np.flatnonzero(inserting)[-1])
            self._stamps[positions[:k]] = times[last]
            self._spans[positions[:k]] = self._span
            self._t_last = int(times[last])
            self._span_last = self._span
            self._fill += int(inserting.sum())
            self.n += int(inserting.sum())
        self._stale[positions] = stale[-1]
