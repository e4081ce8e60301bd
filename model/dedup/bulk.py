"""The time-bounded filter evaluated in bulk for streams of TEST_AND_INSERT: the answers and counters of
:class:`~apbbf.model.timewindow.TimedAPBBF`, at a cost that does not grow with the number of shifts.
"""

from __future__ import annotations


import numpy as np

from ..config import Config, check_config
from ..filters import scan_from
from ..hashing import HashSpec

__all__ = ["BULK_COMMANDS", "BULK_ENTRIES", "TimedTestAndInsert"]


_NEVER = np.iinfo(np.int64).max
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
    configuration; then, per block of commands, numpy computes every key's H3 bit positions in every physical
    segment (byte tables of the linear hash), the first command to set each bit of each segment incarnation
    (``np.minimum.at``), each query's match against the fresh segments, and Algorithm 1
    (:func:`~apbbf.model.filters.scan_from`).

    Times are given as plain (unwrapped) ticks, non-decreasing; the filter compares them modulo ``2**time_width``,
    which gives the same answers as long as every gap between consecutive commands plus the span is below
    ``2**(time_width - 1)`` ticks (checked).

    Parameters
    ----------
    config : Config
        With a span, ``key_width = 64``.

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

    def __init__(self, config: Config):
        check_config(config)
        if not config.timed:
            raise ValueError("config has no span: its window is bounded by count alone")
        if config.key_width != 64:
            raise ValueError(f"key_width must be 64 (the packet keys), not {config.key_width}")
        c = self._config = config
        self._P, self._k, self._g = c.physical_segments, c.k, c.generation
        self._span, self._interval, self._S = c.span, c.shift_interval, c.segment_bits
        self._limit = 1 << (c.time_width - 1)
        self._hash = HashSpec(config)
        masks = np.array(self._hash.segment_masks, dtype=np.uint64)                 # (P, hash_bits)
        values = np.arange(256, dtype=np.uint64)[:, None] << (8 * np.arange(8, dtype=np.uint64))[None, :]
        parities = np.bitwise_count(values[:, :, None, None] & masks[None, None, :, :]) & 1
        weights = np.uint64(1) << np.arange(c.hash_bits, dtype=np.uint64)
        # _tab[q, v, p]: H3 hash in physical segment p of the mixed key whose byte q is v and the others 0 (a row
        # per byte value: a gather by byte gives every segment's hash contiguously)
        self._tab = np.ascontiguousarray((parities.astype(np.uint64) * weights).sum(axis=3, dtype=np.uint64)
                                         .transpose(1, 0, 2))
        self.n = self.shifts = self.overflows = self.expired = self.restarts = 0
        self._base = 0
        self._inc_pos: list[int] = []                # physical position of each segment incarnation
        self._stamp: dict[int, int] = {}              # t_j of live incarnations outside the insert targets
        self._first = np.full((self._P, self._S), _NEVER, dtype=np.int64)   # first setter, per position
        self._index = 0                                # commands so far
        self._t_prev = None                            # time of the last command
        self._reset()

    config = property(lambda self: self._config, doc="The filter's Config.")

    @property
    def base(self) -> int:
        """Physical position of logical segment 0 (as TimedAPBBF's)."""
        return self._base

    def _new(self, position: int) -> int:
        self._inc_pos.append(position)
        self._first[position] = _NEVER
        return len(self._inc_pos) - 1

    def _reset(self) -> None:
        """After reset or a restart: k empty segments at base.., not started, generation full."""
        self._live = [self._new((self._base + i) % self._P) for i in range(self._k)]
        self._stamp = {}
        self._fill, self._started, self._t_shift = self._g, False, 0

    # Events ---------------------------------------------------------------------------------------------------

    def _event(self, t: int) -> None:
        """Restart, start and shift at a command at time ``t`` (every event shifts), then its insert."""
        k, span = self._k, self._span
        prev = self._t_prev
        if self._started and t - prev > span:
            self.expired += len(self._live)
            self.restarts += 1
            self._reset()
        just_started = not self._started
        if just_started:
            self._started, self._t_shift = True, t
        # the targets' t_j: their last insert, or the start
        target_stamp = t if just_started else prev
        for inc in self._live[:k]:
            self._stamp[inc] = target_stamp
        if just_started:
            for inc in self._live[k:]:
                self._stamp[inc] = t
        assert self._fill == self._g or t - self._t_shift >= self._interval
        while len(self._live) > k and t - self._stamp[self._live[-1]] > span:
            del self._stamp[self._live.pop()]
            self.expired += 1
        if len(self._live) >= self._P - 1:
            del self._stamp[self._live.pop()]
            self.overflows += 1
        self._base = (self._base - 1) % self._P
        self._live.insert(0, self._new(self._base))
        self._fill, self._t_shift = 0, t
        self.shifts += 1

    def _schedule(self, times: np.ndarray):
        """Run the events of a call; the configuration each command's query and insert see."""
        n, k, g, span = len(times), self._k, self._g, self._span
        previous = np.concatenate([[times[0] if self._t_prev is None else self._t_prev], times[:-1]])
        gaps = np.flatnonzero(times - previous > span)
        records = [self._record()]                   # configuration before each event command
        events = []
        j = 0
        while j < n:
            if not self._started:
                e = j
            else:
                e = j + self._g - self._fill
                due = self._t_shift + self._interval
                if len(self._live) >= self._P - 1 and due - self._stamp[self._live[-1]] <= span:
                    due = self._stamp[self._live[-1]] + span + 1   # the pool is full: a shift by time waits
                e = min(e, max(j, int(np.searchsorted(times, due, side="left"))))
                at = int(np.searchsorted(gaps, j, side="left"))
                if at < len(gaps):
                    e = min(e, int(gaps[at]))
            if e >= n:
                break
            if e > j:
                self._fill += e - j
                self._t_prev = int(times[e - 1])
            self._event(int(times[e]))
            self._fill += 1
            self._t_prev = int(times[e])
            events.append(e)
            records.append(self._record())
            j = e + 1
        if j < n:
            self._fill += n - j
            self._t_prev = int(times[-1])
        self.n += n
        return np.array(events, dtype=np.int64), records

    def _record(self):
        k = self._k
        return (tuple(self._live), tuple(self._stamp.get(inc, 0) for inc in self._live[k:]), self._started)

    # Bulk -----------------------------------------------------------------------------------------------------

    def _locate(self, keys: np.ndarray) -> np.ndarray:
        """Bit positions of each key in each physical segment, (n, P, b) int64."""
        c = self._config
        keys = self._hash.mix_many(np.asarray(keys, dtype=np.uint64))
        hashes = self._tab[0][(keys & np.uint64(0xFF)).astype(np.intp)]
        for q in range(1, 8):
            hashes ^= self._tab[q][((keys >> np.uint64(8 * q)) & np.uint64(0xFF)).astype(np.intp)]
        blocks = (hashes & np.uint64(c.row_blocks - 1)).astype(np.int64)
        if c.row_layout:
            blocks += self._hash.row_hash_many(keys)[:, None] * c.row_blocks
        parts = np.arange(c.block_hashes, dtype=np.uint64)
        shifts = np.uint64(c.segment_index_bits) + parts * np.uint64(c.offset_bits)
        offsets = ((hashes[:, :, None] >> shifts) & np.uint64(c.part_bits - 1)).astype(np.int64)
        return blocks[:, :, None] * c.block_bits + (parts.astype(np.int64) * c.part_bits) + offsets

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
        t_before = self._t_prev
        start = self._index
        first_rows = [self._first[self._inc_pos[inc]].copy() for inc in self._record()[0]]
        events, records = self._schedule(times)
        self._index += n
        # configuration index of each command's query (before its own event) and insert (after it)
        j = np.arange(n)
        insert_cfg = np.searchsorted(events, j, side="right")
        query_cfg = np.searchsorted(events, j - 1, side="right")
        k, P, b = self._k, self._P, self._config.block_hashes
        width = max(len(live) for live, _, _ in records)
        incs = np.full((len(records), width), -1, dtype=np.int64)
        stamps = np.full((len(records), max(width - k, 1)), np.iinfo(np.int64).min, dtype=np.int64)
        started = np.zeros(len(records), dtype=bool)
        for r, (live, old, on) in enumerate(records):
            incs[r, :len(live)] = live
            stamps[r, :len(old)] = old
            started[r] = on
        inc_pos = np.array(self._inc_pos, dtype=np.int64)
        previous = np.concatenate([[times[0] if t_before is None else t_before], times[:-1]])
        fresh_old = (stamps[query_cfg] >= (times - self._span)[:, None]).sum(axis=1)
        fresh = np.where(started[query_cfg] & (times - previous <= self._span), k + fresh_old, 0)
        hits = np.zeros(n, dtype=bool)
        # the first setters of the incarnations live before this call
        carried = dict(zip(records[0][0], first_rows))
        # Commands go in blocks: at most ``block`` of them, and segment incarnations spanning at most ``rows``
        # (the first setters of their bits are a dense (rows, segment_bits) array).
        block = max(16, min(BULK_COMMANDS, BULK_ENTRIES // (P * b)))
        rows_cap = max(P + 2 * k + 2, BULK_ENTRIES // self._S)
        newest = incs.max(axis=1)                                     # non-decreasing
        oldest = np.where(incs >= 0, incs, np.iinfo(np.int64).max).min(axis=1)
        S = self._S
        lo = 0
        while lo < n:
            inc_lo = int(oldest[query_cfg[lo]])
            last_ok = int(np.searchsorted(newest, inc_lo + rows_cap, side="right")) - 1
            hi = max(lo + 1, min(n, lo + block, int(np.searchsorted(insert_cfg, last_ok, side="right"))))
            inc_hi = int(newest[insert_cfg[hi - 1]])
            last_cfg = int(insert_cfg[hi - 1])
            dense = np.full((inc_hi - inc_lo + 1, S), _NEVER, dtype=np.int64)
            for inc, row in carried.items():
                dense[inc - inc_lo] = row
            flat = dense.reshape(-1)
            where = self._locate(keys[lo:hi])                         # (m, P, b)
            rows = np.arange(hi - lo)
            index = start + lo + rows                                 # global command numbers
            targets = incs[insert_cfg[lo:hi], :k]                     # (m, k)
            bits = where[rows[:, None], inc_pos[targets]]             # (m, k, b)
            np.minimum.at(flat, ((targets - inc_lo)[:, :, None] * S + bits).ravel(),
                          np.broadcast_to(index[:, None, None], bits.shape).ravel())
            most = int(fresh[lo:hi].max())
            if most:
                looked = incs[query_cfg[lo:hi], :most]                # (m, most)
                valid = np.arange(most)[None, :] < fresh[lo:hi, None]
                looked = np.where(valid, looked, inc_lo)
                bits = where[rows[:, None], inc_pos[looked]]          # (m, most, b)
                seen = (flat[(looked - inc_lo)[:, :, None] * S + bits] < index[:, None, None]).all(axis=2)
                hits[lo:hi] = scan_from(seen & valid, k, fresh[lo:hi] - k)[0]
            live_after = [inc for inc in incs[last_cfg] if inc >= 0]
            carried = {inc: dense[inc - inc_lo].copy() for inc in live_after}
            lo = hi
        for inc, row in carried.items():
            self._first[self._inc_pos[inc]] = row
        return hits
