"""The time-bounded filter evaluated in bulk for streams of TEST_AND_INSERT: the answers and counters of
:class:`~apbbf.model.timewindow.TimedAPBBF`, at a cost that does not grow with the number of shifts.
"""

from __future__ import annotations


import numpy as np

from ..compiled import kernels
from ..config import Config, check_config, check_integer
from ..filters import scan_from
from ..hashing import HashSpec

__all__ = ["BULK_COMMANDS", "BULK_ENTRIES", "TimedTestAndInsert"]


#: "Not set in this block of commands" in the working array of first setters (int32, relative command numbers).
_NEVER = np.iinfo(np.int32).max
#: Most commands :class:`TimedTestAndInsert` evaluates at once, and most entries (bits of segment incarnations, or
#: key positions) of its working arrays: they bound its memory.
BULK_COMMANDS = 1 << 16
BULK_ENTRIES = 1 << 23


class TimedTestAndInsert:
    """The time-bounded filter (:class:`~apbbf.model.timewindow.TimedAPBBF`) for a stream of TEST_AND_INSERT
    commands, evaluated in bulk: the same answers and counters as ``TimedAPBBF.run`` with every op
    TEST_AND_INSERT, at a cost that does not grow with the number of shifts.

    How: every command inserts, so which segments are live, fresh, the insert targets, and when the filter shifts,
    retires or restarts depend on the times alone. A loop over these events (a few per shift) records each
    configuration; then, per block of commands, numpy computes every key's bit positions in every physical
    segment (byte tables of the linear hash, :meth:`_position_tables`), the first command to set each bit of
    each segment incarnation (``np.minimum.at``), and each query's match against the fresh segments: in an
    insert target by the first setters (a bit counts if a command before it set it), in an older segment by
    its final bits (it takes no insert from the query's command on: one word per block tested), then
    Algorithm 1 (:func:`~apbbf.model.filters.scan_from`). When a block is a machine word (8 to 64 bits), the
    segments' bits are kept as words and the first setters are replaced by the inserts' words OR-ed in command
    order (:meth:`_run_words`).

    Times are given as plain (unwrapped) ticks, non-decreasing; the filter compares them modulo ``2**time_width``,
    which gives the same answers as long as every gap between consecutive commands plus the span is below
    ``2**(time_width - 1)`` ticks (checked).

    Parameters
    ----------
    config : Config
        With a span, ``key_width = 64``.
    run_seed : int
        The run-time seed of the hash (:class:`~apbbf.model.hashing.HashSpec`'s; 0, the default: the build seed's
        hash alone).

    Attributes
    ----------
    n, shifts, overflows, expired, restarts : int
        As :class:`~apbbf.model.timewindow.TimedAPBBF`'s.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no span or its keys are not 64 bits.
    """

    def __init__(self, config: Config, *, run_seed: int = 0):
        check_config(config)
        if not config.timed:
            raise ValueError("config has no span: its window is bounded by count alone")
        if config.key_width != 64:
            raise ValueError(f"key_width must be 64 (the packet keys), not {config.key_width}")
        c = self._config = config
        self._P, self._k, self._g = c.physical_segments, c.k, c.generation
        self._span, self._interval, self._S = c.span, c.shift_interval, c.segment_bits
        self._limit = 1 << (c.time_width - 1)
        self._hash = HashSpec(config, run_seed=run_seed)
        masks = np.array(self._hash.segment_masks, dtype=np.uint64)                 # (P, hash_bits)
        values = np.arange(256, dtype=np.uint64)[:, None] << (8 * np.arange(8, dtype=np.uint64))[None, :]
        parities = np.bitwise_count(values[:, :, None, None] & masks[None, None, :, :]) & 1
        weights = np.uint64(1) << np.arange(c.hash_bits, dtype=np.uint64)
        # _tab[q, v, p]: H3 hash in physical segment p of the mixed key whose byte q is v and the others 0 (a row
        # per byte value: a gather by byte gives every segment's hash contiguously)
        self._tab = np.ascontiguousarray((parities.astype(np.uint64) * weights).sum(axis=3, dtype=np.uint64)
                                         .transpose(1, 0, 2))
        self._positions = self._position_tables()
        B = c.block_bits
        #: the segments' bits as words of one block each, when a block is a machine word
        self._word = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}.get(B)
        self.n = self.shifts = self.overflows = self.expired = self.restarts = 0
        self._base = 0
        self._inc_pos: list[int] = []                # physical position of each segment incarnation
        self._stamp: dict[int, int] = {}              # t_j + span_j of live incarnations outside the insert targets
        self._set = np.zeros((self._P, self._S), dtype=bool)   # each physical segment's bits
        self._index = 0                                # commands so far
        self._t_prev = None                            # time of the last command
        self._expiry_prev = None                       # and its time plus the span it was inserted with
        self._reset()

    config = property(lambda self: self._config, doc="The filter's Config.")

    @property
    def base(self) -> int:
        """Physical position of logical segment 0 (as TimedAPBBF's)."""
        return self._base

    def _new(self, position: int) -> int:
        self._inc_pos.append(position)
        self._set[position] = False
        return len(self._inc_pos) - 1

    def _reset(self) -> None:
        """After reset or a restart: k empty segments at base.., not started, generation full."""
        self._live = [self._new((self._base + i) % self._P) for i in range(self._k)]
        self._stamp = {}
        self._fill, self._started, self._t_shift = self._g, False, 0
        self._shift_due = 0                            # t_shift plus the shift interval of that shift

    def set_window(self, span: int) -> None:
        """The window's span from the next command on (:meth:`apbbf.model.timewindow.TimedAPBBF.set_window`).

        Raises
        ------
        TypeError, ValueError
            If ``span`` is not an integer in ``1 .. 2**(time_width-1) - 1``.
        """
        check_integer("span", span, range(1, self._limit))
        self._span, self._interval = span, span // self._config.l + 1
        if self._started:
            cap = self._t_prev + span
            self._expiry_prev = min(self._previous_expiry(), cap)
            self._stamp = {inc: min(expiry, cap) for inc, expiry in self._stamp.items()}

    def _previous_expiry(self) -> int:
        return self._t_prev + self._span if self._expiry_prev is None else self._expiry_prev

    # Events ---------------------------------------------------------------------------------------------------

    def _event(self, t: int) -> None:
        """Restart, start and shift at a command at time ``t`` (every event shifts), then its insert."""
        k, span = self._k, self._span
        prev = self._t_prev
        if self._started and t > self._previous_expiry():
            self.expired += len(self._live)
            self.restarts += 1
            self._reset()
        just_started = not self._started
        if just_started:
            self._started, self._t_shift = True, t
        # the targets' t_j: their last insert, or the start
        target_expiry = t + span if just_started else self._previous_expiry()
        for inc in self._live[:k]:
            self._stamp[inc] = target_expiry
        if just_started:
            for inc in self._live[k:]:
                self._stamp[inc] = t + span
        assert self._fill == self._g or just_started or t >= self._shift_due
        while len(self._live) > k and t > self._stamp[self._live[-1]]:
            del self._stamp[self._live.pop()]
            self.expired += 1
        if len(self._live) >= self._P - 1:
            del self._stamp[self._live.pop()]
            self.overflows += 1
        self._base = (self._base - 1) % self._P
        self._live.insert(0, self._new(self._base))
        self._fill, self._t_shift, self._shift_due = 0, t, t + self._interval
        self.shifts += 1

    def _schedule(self, times: np.ndarray, fast=None):
        """Run the events of a call: (events, incs, stamps, started), the event commands and each configuration
        (before each event command, and after the last): its live incarnations (newest first, -1 after them), the
        t_j + span of those after the first k (the int64 minimum after them), whether the filter had started.
        With ``fast`` (the compiled kernels) in a compiled loop, else in Python (:meth:`_schedule_python`)."""
        if fast is None:
            events, records = self._schedule_python(times)
            width = max(len(live) for live, _, _ in records)
            incs = np.full((len(records), width), -1, dtype=np.int64)
            stamps = np.full((len(records), max(width - self._k, 1)), np.iinfo(np.int64).min, dtype=np.int64)
            started = np.zeros(len(records), dtype=bool)
            for r, (live, old, on) in enumerate(records):
                incs[r, :len(live)] = live
                stamps[r, :len(old)] = old
                started[r] = on
            return events, incs, stamps, started
        return self._schedule_compiled(fast, times)

    def _schedule_compiled(self, fast, times: np.ndarray):
        """:meth:`_schedule` in the compiled loop (``timed_schedule``): the same events and state."""
        n, k, P, span = len(times), self._k, self._P, self._span
        gaps = self._gaps(times)
        live = np.zeros(P + 1, dtype=np.int64)
        stamps = np.zeros(P + 1, dtype=np.int64)
        stamped = np.zeros(P + 1, dtype=bool)
        nlive = len(self._live)
        live[:nlive] = self._live
        for i, inc in enumerate(self._live):
            if inc in self._stamp:
                stamps[i], stamped[i] = self._stamp[inc], True
        has_prev = self._t_prev is not None
        state = np.zeros(16, dtype=np.int64)
        state[:8] = (self._started, self._fill, self._shift_due, self._t_prev if has_prev else 0,
                     self._previous_expiry() if has_prev else 0, has_prev, self._base, len(self._inc_pos))
        state[15] = nlive
        # at most one event per command; each makes one incarnation, k more at a restart
        incs = np.empty((n + 1, P), dtype=np.int64)
        old = np.empty((n + 1, max(P - k, 1)), dtype=np.int64)
        started = np.empty(n + 1, dtype=bool)
        events = np.empty(n, dtype=np.int64)
        made = np.empty(n * (k + 1), dtype=np.int64)
        records, count = fast.timed_schedule(times, gaps, k, self._g, P, span, self._interval, live, stamps, stamped,
                                             state, incs, old, started, events, made)
        on, fill, due, t_prev, expiry, has_prev, base, _ = state[:8].tolist()
        self._started, self._fill, self._shift_due, self._base = bool(on), fill, due, base
        if has_prev:
            self._t_prev, self._expiry_prev = t_prev, expiry
        if records > 1:
            self._t_shift = int(times[events[records - 2]])
        self.shifts, self.overflows, self.expired, self.restarts = \
            self.shifts + int(state[9]), self.overflows + int(state[10]), self.expired + int(state[11]), \
            self.restarts + int(state[12])
        made = made[:count]
        self._inc_pos.extend(made.tolist())
        self._set[made] = False
        nlive = int(state[15])
        self._live = live[:nlive].tolist()
        self._stamp = {inc: stamp for inc, stamp, on in zip(self._live, stamps[:nlive].tolist(),
                                                             stamped[:nlive].tolist()) if on}
        self.n += n
        width = int((incs[:records] >= 0).sum(axis=1).max())
        return events[:records - 1], incs[:records, :width], old[:records, :max(width - k, 1)], started[:records]

    def _gaps(self, times: np.ndarray) -> np.ndarray:
        """The commands at which the filter restarts if it has started: more than the span after the previous."""
        previous = np.concatenate([[times[0] if self._t_prev is None else self._t_prev], times[:-1]])
        lapsed = times - previous > self._span
        if self._t_prev is not None:
            lapsed[0] = times[0] > self._previous_expiry()
        return np.flatnonzero(lapsed)

    def _schedule_python(self, times: np.ndarray):
        """Run the events of a call; the configuration each command's query and insert see."""
        n, k, g, span = len(times), self._k, self._g, self._span
        gaps = self._gaps(times)
        records = [self._record()]                   # configuration before each event command
        events = []
        j = 0
        while j < n:
            if not self._started:
                e = j
            else:
                e = j + self._g - self._fill
                due = self._shift_due
                if len(self._live) >= self._P - 1 and due <= self._stamp[self._live[-1]]:
                    due = self._stamp[self._live[-1]] + 1   # the pool is full: a shift by time waits
                e = min(e, max(j, int(np.searchsorted(times, due, side="left"))))
                at = int(np.searchsorted(gaps, j, side="left"))
                if at < len(gaps):
                    e = min(e, int(gaps[at]))
            if e >= n:
                break
            if e > j:
                self._fill += e - j
                self._t_prev, self._expiry_prev = int(times[e - 1]), int(times[e - 1]) + span
            self._event(int(times[e]))
            self._fill += 1
            self._t_prev, self._expiry_prev = int(times[e]), int(times[e]) + span
            events.append(e)
            records.append(self._record())
            j = e + 1
        if j < n:
            self._fill += n - j
            self._t_prev, self._expiry_prev = int(times[-1]), int(times[-1]) + span
        self.n += n
        return np.array(events, dtype=np.int64), records

    def _record(self):
        k = self._k
        get = self._stamp.get
        return tuple(self._live), [get(inc, 0) for inc in self._live[k:]], self._started

    # Bulk -----------------------------------------------------------------------------------------------------

    def _position_tables(self) -> np.ndarray:
        """Tables of the keys' bit positions, (8, 256, P, b) int16 (int32 for segments of more than 2**15 bits):
        entry [q, v, p, j] is the position of part j in
        physical segment p (:meth:`_bit_positions`) for the mixed key whose byte q is v and the others 0, with the
        position of the zero key XORed out.

        A position is ``block · B + j · B/b + offset``: bit fields that do not overlap (B, B/b and the row's
        blocks are powers of two), each a linear function of the mixed key over GF(2) (the H3 segment hash and
        the row hash). So the position of any key is the zero key's XORed with the table entries of its eight
        bytes (:meth:`_locate`); the tests hold the result to the model's answers on every Config shape.
        """
        c = self._config
        P = self._P
        mixed = (np.arange(256, dtype=np.uint64)[None, :] << (8 * np.arange(8, dtype=np.uint64))[:, None])
        hashes = np.concatenate([self._tab.reshape(-1, P), np.zeros((1, P), dtype=np.uint64)])   # (2049, P)
        rows = None
        if c.row_layout:
            rows = np.broadcast_to(np.concatenate([self._hash.row_hash_many(mixed.reshape(-1)), [0]])[:, None],
                                   hashes.shape)
        positions = self._bit_positions(hashes, rows)                     # (2049, P, b)
        zero = positions[-1]
        # positions below 2**15 fit int16: half the bytes gathered per key
        kind = np.int16 if self._S <= 1 << 15 else np.int32
        return np.ascontiguousarray((positions[:-1] ^ zero).reshape(8, 256, P, -1).astype(kind)), zero.astype(kind)

    def _bit_positions(self, hashes: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        """The b bit positions in its segment (block · B + bit within the block) of each segment hash in
        ``hashes`` (uint64, any shape; ``rows``: the keys' rows, of the same shape, or None): shape + (b,), int32
        (:meth:`~apbbf.model.hashing.HashSpec.split_many`)."""
        blocks, bits = self._hash.split_many(hashes.reshape(-1), None if rows is None else rows.reshape(-1))
        positions = (blocks[:, None] * self._config.block_bits + bits).astype(np.int32)
        return positions.reshape(hashes.shape + (positions.shape[1],))

    def _locate(self, keys: np.ndarray) -> np.ndarray:
        """Bit positions of each key in each physical segment, (n, P, b) int16 or int32 (:meth:`_position_tables`)."""
        tables, zero = self._positions
        mixed = self._hash.mix_many(np.asarray(keys, dtype=np.uint64))
        octets = np.ascontiguousarray(mixed, dtype="<u8").view(np.uint8).reshape(-1, 8)
        where = tables[0][octets[:, 0]] ^ zero
        for q in range(1, 8):
            where ^= tables[q][octets[:, q]]
        return where

    def _locate_packed(self, keys: np.ndarray) -> np.ndarray | None:
        """:meth:`_locate` with each key's b positions in a segment packed into one unsigned word (lane j in bits
        ``j·L .. j·L + L - 1`` for positions of L bits), (n, P); None if they do not fill 16, 32 or 64 bits."""
        tables, zero = self._positions
        packing = {2: np.uint16, 4: np.uint32, 8: np.uint64}.get(tables.shape[-1] * tables.itemsize)
        if packing is None:
            return None
        packed = tables.view(packing)[..., 0]                                    # (8, 256, P)
        mixed = self._hash.mix_many(np.asarray(keys, dtype=np.uint64))
        octets = np.ascontiguousarray(mixed, dtype="<u8").view(np.uint8).reshape(-1, 8)
        where = np.take(packed[0], octets[:, 0], axis=0)
        where ^= zero.view(packing)[:, 0]
        for q in range(1, 8):
            where ^= np.take(packed[q], octets[:, q], axis=0)
        return where

    def _all_set(self, bits_set: np.ndarray, incarnations: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Whether all b bits at ``positions`` (..., b) are set in rows ``incarnations`` (...) of ``bits_set``
        (rows of segment bits, bool): one word per test when a block is a machine word."""
        if self._word is None:
            return bits_set[incarnations[..., None], positions].all(axis=-1)
        B = self._config.block_bits
        words = np.packbits(bits_set, axis=1, bitorder="little").view(self._word)   # (rows, segment_blocks)
        one = self._word(1)
        mask = np.zeros(positions.shape[:-1], dtype=self._word)
        for j in range(positions.shape[-1]):
            mask |= one << (positions[..., j] & (B - 1)).astype(self._word)
        word = words[incarnations, positions[..., 0] // B]
        return (word & mask) == mask

    def run(self, keys, times) -> np.ndarray:
        """TEST_AND_INSERT each key at its time, in order; the hits.

        Parameters
        ----------
        keys : array-like of uint64
        times : array-like of int
            Ticks, non-decreasing (also across calls), gaps plus span below ``2**(time_width - 1)``.

        Returns
        -------
        numpy.ndarray of bool

        Raises
        ------
        ValueError
            If keys and times differ in length, or the times decrease or leap too far.
        """
        keys = np.asarray(keys, dtype=np.uint64)
        times = np.asarray(times)
        if times.size and times.dtype.kind not in "iu":
            raise ValueError(f"times must be integers, not {times.dtype}")
        times = times.astype(np.int64)
        if keys.shape != times.shape or keys.ndim != 1:
            raise ValueError(f"keys and times must be 1-D of the same length, not {keys.shape} and {times.shape}")
        n = len(keys)
        if not n:
            return np.zeros(0, dtype=bool)
        steps = np.diff(times, prepend=times[0] if self._t_prev is None else self._t_prev)
        if steps.min() < 0:
            raise ValueError("times must be non-decreasing")
        if int(steps.max()) + self._span >= self._limit:
            raise ValueError(f"a gap of {int(steps.max())} ticks plus the span reaches 2**(time_width-1): the "
                             f"filter's modular times would alias (use a wider time_width)")
        t_before, expiry_before = self._t_prev, self._expiry_prev
        start = self._index
        set_rows = [self._set[self._inc_pos[inc]].copy() for inc in self._record()[0]]
        fast = kernels(64 * n)
        events, incs, stamps, started = self._schedule(times, fast)
        self._index += n
        # configuration index of each command's query (before its own event) and insert (after it)
        j = np.arange(n)
        insert_cfg = np.searchsorted(events, j, side="right")
        query_cfg = np.searchsorted(events, j - 1, side="right")
        k, P, b = self._k, self._P, self._config.block_hashes
        inc_pos = np.array(self._inc_pos, dtype=np.int64)
        previous = np.concatenate([[times[0] if t_before is None else t_before], times[:-1]])
        fresh_old = (stamps[query_cfg] >= times[:, None]).sum(axis=1)
        within = times - previous <= self._span
        if expiry_before is not None:
            within[0] = times[0] <= expiry_before
        fresh = np.where(started[query_cfg] & within, k + fresh_old, 0)
        hits = np.zeros(n, dtype=bool)
        # the bits of the incarnations live before this call
        carried = dict(zip(incs[0][incs[0] >= 0].tolist(), set_rows))
        newest = incs.max(axis=1)                                     # non-decreasing
        oldest = np.where(incs >= 0, incs, np.iinfo(np.int64).max).min(axis=1)
        if fast is not None and self._word is not None:
            hits, carried = self._run_compiled(fast, keys, incs, query_cfg, insert_cfg, fresh, inc_pos, carried)
            for inc, row in carried.items():
                self._set[self._inc_pos[inc]] = row
            return hits
        if self._word is not None:
            hits, carried = self._run_words(keys, incs, query_cfg, insert_cfg, fresh, inc_pos, carried, newest,
                                            oldest)
            for inc, row in carried.items():
                self._set[self._inc_pos[inc]] = row
            return hits
        # Commands go in blocks: at most ``block`` of them, and segment incarnations spanning at most ``rows``
        # (the first setters of their bits are a dense (rows, segment_bits) array).
        block = max(16, min(BULK_COMMANDS, BULK_ENTRIES // (P * b)))
        rows_cap = max(P + 2 * k + 2, BULK_ENTRIES // self._S)
        S = self._S
        lo = 0
        while lo < n:
            inc_lo = int(oldest[query_cfg[lo]])
            last_ok = int(np.searchsorted(newest, inc_lo + rows_cap, side="right")) - 1
            hi = max(lo + 1, min(n, lo + block, int(np.searchsorted(insert_cfg, last_ok, side="right"))))
            inc_hi = int(newest[insert_cfg[hi - 1]])
            last_cfg = int(insert_cfg[hi - 1])
            # the first setter of each bit of each incarnation, as a command number relative to lo (-1: set
            # before this block)
            dense = np.full((inc_hi - inc_lo + 1, S), _NEVER, dtype=np.int32)
            for inc, row in carried.items():
                dense[inc - inc_lo][row] = -1
            flat = dense.reshape(-1)
            where = self._locate(keys[lo:hi])                         # (m, P, b)
            m = hi - lo
            rows = np.arange(m)
            index = np.arange(m, dtype=np.int32)
            targets = incs[insert_cfg[lo:hi], :k]                     # (m, k)
            bits = where[rows[:, None], inc_pos[targets]]             # (m, k, b)
            np.minimum.at(flat, ((targets - inc_lo)[:, :, None] * S + bits).ravel(),
                          np.broadcast_to(index[:, None, None], bits.shape).ravel())
            final = dense != _NEVER                                   # every bit set up to the block's end
            most = int(fresh[lo:hi].max())
            if most:
                looked = incs[query_cfg[lo:hi], :most]                # (m, most)
                valid = np.arange(most)[None, :] < fresh[lo:hi, None]
                looked = np.where(valid, looked, inc_lo)
                seen = np.empty((m, most), dtype=bool)
                # the insert targets (the first k): by the first setters, the command's own order
                ahead = looked[:, :k]
                bits = where[rows[:, None], inc_pos[ahead]]
                seen[:, :k] = (flat[(ahead - inc_lo)[:, :, None] * S + bits] < index[:, None, None]).all(axis=2)
                if most > k:
                    # older segments take no insert from this command on: their bits are final
                    older = looked[:, k:]
                    bits = where[rows[:, None], inc_pos[older]]       # (m, most - k, b)
                    seen[:, k:] = self._all_set(final, older - inc_lo, bits)
                hits[lo:hi] = scan_from(seen & valid, k, fresh[lo:hi] - k)[0]
            live_after = [inc for inc in incs[last_cfg] if inc >= 0]
            carried = {inc: final[inc - inc_lo] for inc in live_after}
            lo = hi
        for inc, row in carried.items():
            self._set[self._inc_pos[inc]] = row
        return hits

    def _run_compiled(self, fast, keys, incs, query_cfg, insert_cfg, fresh, inc_pos, carried):
        """:meth:`run`'s evaluation when a block is a machine word, one command at a time in a compiled loop
        (:mod:`apbbf.model.compiled`): the segments' words, each command's query before its inserts.

        Returns
        -------
        hits, carried
            As :meth:`_run_words`'.
        """
        tables, zero = self._positions
        S, B = self._S, self._config.block_bits
        state = np.zeros((self._P, S // B), dtype=np.uint64)
        holder = np.full(self._P, -1, dtype=np.int64)
        for inc, row in carried.items():
            state[inc_pos[inc]] = np.packbits(row, bitorder="little").view(self._word)
            holder[inc_pos[inc]] = inc
        mixer = self._hash._np_tables if self._hash.rounds else np.zeros((0, 8, 256), dtype=np.uint64)
        if mixer.shape[1:] != (8, 256):
            keys, mixer = self._hash.mix_many(keys), np.zeros((0, 8, 256), dtype=np.uint64)
        hits = np.zeros(len(keys), dtype=bool)
        fast.timed_test_and_insert(np.ascontiguousarray(keys, dtype=np.uint64), mixer, tables, zero, incs, query_cfg, insert_cfg, fresh.astype(np.int64),
                                   inc_pos, self._k, B, state, holder, hits)
        after = {}
        for inc in incs[-1][incs[-1] >= 0].tolist():
            pos = inc_pos[inc]
            words = state[pos].astype(self._word) if holder[pos] == inc else np.zeros(S // B, dtype=self._word)
            after[inc] = np.unpackbits(words.view(np.uint8), bitorder="little")[:S].astype(bool)
        return hits, after

    def _run_words(self, keys, incs, query_cfg, insert_cfg, fresh, inc_pos, carried, newest, oldest):
        """:meth:`run`'s evaluation when a block is a machine word: each command's b bits in a segment are one
        word and a mask, so a segment's bits are words and the order of the inserts is kept word by word.

        Per block of commands: the inserts (a command's word and mask in each insert target) grouped by word,
        stably (in command order), and OR-ed within each group up to each insert; a query in an insert target
        sees the words' bits before the block OR-ed with the inserts before it in its word's group (its own
        insert comes after its query), and a query in an older segment sees the segment's final words (it takes
        no insert from the query's command on). Commands whose query and inserts see different segments (those
        at which the filter shifts) look their words up among the inserts by command number.

        Returns
        -------
        hits : numpy.ndarray of bool
        carried : dict
            The bits (bool rows) of the incarnations live after the last command.
        """
        n = len(keys)
        k, P, B, SB = self._k, self._P, self._config.block_bits, self._config.segment_blocks
        W = self._word
        shift = B.bit_length() - 1
        one64 = np.uint64(1)
        # incarnations a block spans: their words are one (rows, SB) array, and a word's group number fits 16 bits
        # when rows * SB does
        rows_cap = max(P + 2 * k + 2, min(1 << 16, BULK_ENTRIES) // SB)
        block = max(16, min(BULK_COMMANDS, BULK_ENTRIES // (P * self._config.block_hashes)))
        words = {inc: np.packbits(row, bitorder="little").view(W) for inc, row in carried.items()}
        hits = np.zeros(n, dtype=bool)
        lo = 0
        while lo < n:
            inc_lo = int(oldest[query_cfg[lo]])
            last_ok = int(np.searchsorted(newest, inc_lo + rows_cap, side="right")) - 1
            hi = max(lo + 1, min(n, lo + block, int(np.searchsorted(insert_cfg, last_ok, side="right"))))
            inc_hi = int(newest[insert_cfg[hi - 1]])
            last_cfg = int(insert_cfg[hi - 1])
            rows = inc_hi - inc_lo + 1
            m = hi - lo
            state = np.zeros((rows, SB), dtype=W)                 # the words before this block
            for inc, row in words.items():
                state[inc - inc_lo] = row
            r = np.arange(m)[:, None]
            packed = self._locate_packed(keys[lo:hi])             # (m, P): a key's b positions in one word
            where = self._locate(keys[lo:hi]) if packed is None else None
            b, lane = self._config.block_hashes, 8 * self._positions[1].itemsize
            lane_mask, low_bits = np.uint64((1 << lane) - 1), np.uint64(B - 1)

            def word_mask(segments, commands=r):
                """The word (a flat index into state) and mask of each command's bits in ``segments`` (one row
                per command of ``commands``)."""
                if packed is None:
                    bits = where[commands, inc_pos[segments]].astype(np.uint64)     # (commands, j, b)
                    parts = [bits[..., j] for j in range(b)]
                else:
                    both = packed[commands, inc_pos[segments]].astype(np.uint64, copy=False)
                    parts = [both >> np.uint64(lane * j) for j in range(b)]
                    parts[0] = parts[0] & lane_mask
                mask = np.zeros(segments.shape, dtype=np.uint64)
                for part in parts:
                    mask |= one64 << (part & low_bits)
                word = (parts[0] & lane_mask).astype(np.int64) >> shift
                return (segments - inc_lo) * SB + word, mask.astype(W, copy=False)

            targets = incs[insert_cfg[lo:hi], :k]                 # (m, k)
            group, mask = word_mask(targets)
            group, mask = group.reshape(-1), mask.reshape(-1)     # in command order
            order = np.argsort(group.astype(np.uint16) if rows * SB <= 1 << 16 else group, kind="stable")
            grouped, ored = group[order], mask[order]
            starts = np.flatnonzero(np.append(True, grouped[1:] != grouped[:-1]))
            sizes = np.diff(np.append(starts, len(grouped)))
            within = np.arange(len(grouped)) - np.repeat(starts, sizes)
            step = 1
            while step < int(sizes.max()):
                earlier = np.zeros_like(ored)
                earlier[step:] = ored[:-step]
                ored = ored | np.where(within >= step, earlier, 0)
                step *= 2
            # ored: each insert's word OR-ed with the inserts before it in its group (and itself)
            before = np.zeros_like(ored)
            before[1:] = ored[:-1]
            before = np.where(within > 0, before, 0)
            prior = np.empty_like(ored)
            prior[order] = before                                 # back in command order
            flat = state.reshape(-1)
            final = state.copy()
            ends = starts + sizes - 1
            final.reshape(-1)[grouped[ends]] |= ored[ends]
            most = int(fresh[lo:hi].max())
            if most:
                looked = incs[query_cfg[lo:hi], :most]            # (m, most)
                valid = np.arange(most)[None, :] < fresh[lo:hi, None]
                looked = np.where(valid, looked, inc_lo)
                seen = np.empty((m, most), dtype=bool)
                ahead = looked[:, :k]
                same = (query_cfg[lo:hi] == insert_cfg[lo:hi])
                # the insert targets, where they are the query's: the words before the block and the inserts before
                mine = (flat[group] | prior).reshape(m, k)
                own = mask.reshape(m, k)
                seen[:, :k] = (mine & own) == own
                shifting = np.flatnonzero(~same)
                if len(shifting):
                    # the query sees other segments than its inserts: its words among the inserts before it
                    g, q = word_mask(ahead[shifting], shifting[:, None])
                    g, q = g.reshape(-1), q.reshape(-1)
                    command = np.repeat(shifting, k)
                    keyed = grouped.astype(np.int64) * m + np.arange(m * k)[order] // k
                    at = np.searchsorted(keyed, g * m + command, side="left") - 1
                    hit = (at >= 0) & (grouped[np.maximum(at, 0)] == g)
                    words_seen = flat[g] | np.where(hit, ored[np.maximum(at, 0)], 0)
                    seen[shifting, :k] = ((words_seen & q) == q).reshape(-1, k)
                if most > k:
                    g, q = word_mask(looked[:, k:])
                    seen[:, k:] = (final.reshape(-1)[g] & q) == q
                hits[lo:hi] = scan_from(seen & valid, k, fresh[lo:hi] - k)[0]
            live_after = [inc for inc in incs[last_cfg] if inc >= 0]
            words = {inc: final[inc - inc_lo] for inc in live_after}
            lo = hi
        bits = self._S
        return hits, {inc: np.unpackbits(row.view(np.uint8), bitorder="little")[:bits].astype(bool)
                      for inc, row in words.items()}
