"""Time-limited Age-Partitioned Bloom Filter (paper 001, Rodrigues et al., *Time-limited Bloom Filter*).

The count-based APBF of paper 000 §5 keeps the last ``l`` generations of ``g`` insertions. The time-limited
filter keeps every element inserted within the last ``span`` time units instead, whatever the insertion rate:

* every slice carries the timestamp ``t_i`` of its last update; a slice is *expired* when
  ``t_i < now - span`` (eq. 3). Expired slices are retired, oldest first, only when a shift happens, and
  never below ``k + l`` slices; queries skip expired slices (Algorithm 1 of paper 001);
* slices have individual sizes ``m_i``; a shift is due when one of the k insertion slices would pass half
  fill, so after every shift the generation size is ``g = min_i floor((m_i ln2 - n_i) / (k - i))``
  (eq. 4-5) and a counter of the insertions left triggers the next shift;
* the new slice ``s_0`` is sized from the measured insertion rate: the target generation
  ``tg = g * span / (t_s * l)`` (eq. 6) is what keeps one shift every ``span / l``, the new capacity is
  ``c_0 = count + j * tg`` (eq. 7) and the size ``m_0 = ceil(c_0 / ln2)`` (eq. 8);
* when the rate rises the tail slices are not yet expired at a shift, so the filter grows beyond
  ``k + l`` slices; when it falls back they expire and are retired down to ``k + l`` again.

Every slice has its own hash: slice ids run from 0 upwards in creation order and slice ``id`` hashes a key
with ``slice_index(key, slice_salt(seed, id), m_i)`` (:mod:`.hashing`), so the hash travels with the slice
as it ages (paper 000 §5.1) and slices of different sizes need no common modulus.

Design decisions where the paper is not explicit are listed in :class:`TimeLimitedAPBF`.
"""

from __future__ import annotations

import math
import numbers
import time
from typing import Callable, Iterable, Sequence

import numpy as np

from .hashing import slice_index, slice_index_many, slice_salt

__all__ = ["TimeLimitedAPBF", "algorithm1", "realistic_fills", "fp_from_fills", "design_fp"]

LN2 = math.log(2.0)
_M64 = (1 << 64) - 1


# Analytics ----------------------------------------------------------------------------------------------------

def realistic_fills(k: int, l: int) -> list[float]:
    """Expected fill ratios just before a shift in the steady state (paper 001 eq. 2).

    ``r_i = 1 - 2**(-(i + 1) / k)`` for the k insertion slices, ``1/2`` for the l older ones. This is the
    realistic model: slice i has received ``(i + 1) * g`` elements with ``g = m ln2 / k`` and a slice of m
    bits holding n elements has fill ``1 - exp(-n / m)`` (eq. 1).
    """
    return [1.0 - 2.0 ** (-(i + 1) / k) if i < k else 0.5 for i in range(k + l)]


def fp_from_fills(fills: Sequence[float], k: int) -> float:
    """Probability that an absent key matches k consecutive slices with the given fill ratios.

    This is the recursion F of paper 000 §5.3 (``F(k, l, 0, 0)`` with ``l = len(fills) - k``), computed as a
    dynamic programme over the length of the current run of matches. Slices are independent (own hash), so
    for the actual fill ratios of a filter it is the exact false-positive probability of a random absent key.
    An expired slice counts as fill 0: Algorithm 1 of paper 001 never matches it.

    Parameters
    ----------
    fills : sequence of float
        Fill ratio of each slice, s_0 first; each in [0, 1].
    k : int
        Consecutive matches needed.

    Returns
    -------
    float
        The false-positive probability.
    """
    run = [1.0] + [0.0] * (k - 1)     # run[a]: probability of a current run of a matches and no success yet
    done = 0.0
    for r in fills:
        done += run[k - 1] * r        # F(k, l, a, i) = 1 when a reaches k
        run = [sum(run) * (1.0 - r)] + [p * r for p in run[:-1]]
    return done


def design_fp(k: int, l: int) -> float:
    """Worst-case false-positive rate of a steady ``k + l`` slice filter, realistic fill model (eq. 2)."""
    return fp_from_fills(realistic_fills(k, l), k)


def algorithm1(num_slices: int, k: int, probe: Callable[[int], bool | None]) -> tuple[bool, int]:
    """Algorithm 1 of paper 001: is there a run of k consecutive matching slices among 0..num_slices-1?

    Starts at slice ``num_slices - k``, counts consecutive matches c going up, and on a mismatch jumps k
    slices down keeping the matches found in p; stops when ``p + c = k`` (true) or the index is negative.

    Parameters
    ----------
    num_slices, k : int
        Slices in the filter and matches needed.
    probe : callable
        ``probe(i)`` is True/False for a live slice whose bit is set/clear and None for an expired slice
        (``t_i < now - span``): a mismatch that costs no bit-array access.

    Returns
    -------
    (bool, int)
        The answer and the number of bit-array accesses.
    """
    i, p, c, accesses = num_slices - k, 0, 0, 0
    while i >= 0:
        hit = probe(i)
        accesses += hit is not None
        if hit:
            c, i = c + 1, i + 1
            if p + c == k:
                return True, accesses
        else:
            i, p, c = i - k, c, 0
    return False, accesses


# Validation helpers -------------------------------------------------------------------------------------------

def _check_int(name: str, value, low: int, high: int | None = None, low_text: str | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        allowed = f"from {low_text or low} to {high}" if high is not None else f">= {low_text or low}"
        raise ValueError(f"{name} must be {allowed}, not {value}")
    return value


def _check_real(name: str, value, low: float, allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, not {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > low):
        raise ValueError(f"{name} must be {allowed}, not {value}")
    return value


def _check_key(key) -> int:
    if isinstance(key, bool) or not isinstance(key, numbers.Integral):
        raise TypeError(f"key must be an integer, not {key!r}")
    key = int(key)
    if not 0 <= key <= _M64:
        raise ValueError(f"key must be from 0 to 2**64-1, not {key}")
    return key


def _key_array(keys) -> np.ndarray:
    if isinstance(keys, np.ndarray) and keys.dtype == np.uint64:
        return keys.reshape(-1)
    return np.array([_check_key(key) for key in keys], dtype=np.uint64)


class _Slice:
    """One slice: ``m`` bits, ``n`` insertions, timestamp ``t`` of the last update (None: never updated)."""

    __slots__ = ("id", "salt", "m", "n", "t", "bits")

    def __init__(self, slice_id: int, salt: int, m: int):
        self.id = slice_id
        self.salt = salt
        self.m = m
        self.n = 0
        self.t: float | None = None
        self.bits = np.zeros(m, dtype=bool)

    def budget(self, position: int, k: int) -> int:
        """u_i of eq. 4: insertions per remaining shift before this slice, at ``position``, passes 1/2."""
        return max(0, math.floor((self.m * LN2 - self.n) / (k - position)))


# The filter ---------------------------------------------------------------------------------------------------

class TimeLimitedAPBF:
    """Time-limited Age-Partitioned Bloom Filter (paper 001 §6).

    Every key inserted within the last ``span`` time units is reported present (no false negatives); older
    keys are forgotten once the slices holding them expire. The number of slices and the size of each new
    slice adapt to the insertion rate so the false-positive rate stays near :func:`design_fp` ``(k, l)``.

    Parameters
    ----------
    k : int
        Slices written per insertion and consecutive matches a query needs; ``1 <= k <= 64``.
    l : int
        Target number of generations per time span (one shift every ``span / l``); the filter has ``k + l``
        slices when the rate is steady and never fewer; ``1 <= l <= 4096``.
    span : float
        The time span T: keys inserted at ``t >= now - span`` are always reported present; ``> 0``, finite,
        in the clock's unit.
    capacity : int
        Initial estimate of the number of insertions per time span (the paper's "initial capacity"); it sizes
        the first ``k + l`` slices at ``m = ceil(k * capacity / (l * ln2))`` bits (generation
        ``capacity / l``, eq. 8). A wrong estimate is corrected by the adaptation; ``capacity >= l``.
    seed : int, optional
        Hash seed, ``0 <= seed < 2**64``; slice ``id`` uses ``slice_salt(seed, id)``.
    clock : callable, optional
        Returns the current time as a real number; default :func:`time.monotonic`. Every operation also takes
        an explicit ``now=``. Time must not go backwards.
    max_growth : float, optional
        Cap on the rate estimate: the target generation of eq. 6 is at most ``max_growth`` times the larger of
        the previous target and the generation just completed. It only matters when a generation completes in
        (almost) no time, e.g. a batch at one instant, where eq. 6 divides by ``t_s ~ 0``; ``> 1``, default 8.
    now : float, optional
        Creation time (default: the clock); the first generation's ``t_s`` is measured from it.

    Notes
    -----
    Where paper 001 leaves room, this model decides as follows.

    * **Shift moment.** The insertion counter of eq. 5 is decremented per insertion and the shift happens
      right after the insertion that brings it to 0 (§6.2), so ``t_s`` in eq. 6 is the time between the
      last insertions of two consecutive generations and a quiet gap counts against the generation it
      interrupts (the rate really was lower).
    * **Timestamps.** ``t_i`` is the time of the last insertion into slice i (Table 1). A slice created by a
      shift, or one of the initial slices beyond the first k, has never been updated and counts as expired.
    * **Retirement (eq. 3).** At a shift the new ``s_0`` is added first, then tail slices with
      ``t_i < now - span`` are retired while more than ``k + l`` slices remain (§6.1, §8).
    * **Eq. 6.** ``tg`` is rounded to the next whole number of insertions strictly above it (after rounding
      to 1e-6 against float noise), like the reference implementation's ``ceil(tg) + 1``: at a steady rate
      a generation then lasts a little more than ``span / l``, the tail slice has expired by the time the
      next shift comes and the filter settles at exactly ``k + l`` slices. With ``tg`` rounded down it keeps
      a dead ``k + l + 1``-th slice; with ``tg`` exact the outcome depends on float noise.
    * **Eq. 7.** j is the slice among 1..k-1 with the smallest budget ``u_j`` (eq. 4 at its position after the
      shift; on ties the lowest position, which stays in the insertion zone longest) and ``count`` is the
      number of updates ``s_j`` can still take until it leaves the insertion slices, ``m_j ln2 - n_j``, but
      at most ``(k - j) * tg``: the old slice limits the first ``k - j`` generations of the new slice, after
      which ``s_0`` itself is the limit for the remaining j (the number of shifts until ``s_0`` reaches
      position j). When ``s_j`` could take ``tg`` per generation the old slices never bind ("if ever") and
      the formula gives ``c_0 = k * tg``, so an over-dimensioned filter sizes the new slice down at the
      first shift (§7.1). For ``k = 1`` there is no old slice and ``c_0 = tg``. The capacity is at least k
      (one insertion per generation).
    * **Hashes.** The paper shares k hash functions between slices k apart; here every slice has its own salt
      (running slice id), which needs no bookkeeping when slices are added or retired.
    * **Accesses.** Algorithm 1 tests ``s_i[h_i(x)] = 1 and t_i >= now - span``; the model tests the
      timestamp first (a register) and counts a bit-array access only for slices that are not expired.
    """

    def __init__(self, k: int, l: int, span: float, capacity: int, *, seed: int = 0,
                 clock: Callable[[], float] = time.monotonic, max_growth: float = 8.0,
                 now: float | None = None):
        self._k = _check_int("k", k, 1, 64)
        self._l = _check_int("l", l, 1, 4096)
        self._span = _check_real("span", span, 0.0, "a finite number > 0")
        self._capacity = _check_int("capacity", capacity, self._l, low_text=f"l (= {self._l})")
        self._seed = _check_int("seed", seed, 0, _M64, )
        if not callable(clock):
            raise TypeError(f"clock must be a callable returning the current time, not {clock!r}")
        self._clock = clock
        self._max_growth = _check_real("max_growth", max_growth, 1.0, "a finite number > 1")

        self._last_now = -math.inf
        start = self._now(now)
        self._next_id = 0
        m = math.ceil(self._k * self._capacity / (self._l * LN2))           # eq. 8 with c = k * capacity / l
        # s_0 is the newest: give it the highest id of the initial slices so ids grow with creation order.
        self._slices = [self._new_slice(m) for _ in range(self._k + self._l)][::-1]
        self._target = self._capacity / self._l                              # tg, the rate estimate
        self._last_shift = start
        self._inserted_in_generation = 0
        self._shifts = 0
        self._inserts = 0
        self._queries = 0
        self._accesses = 0
        self._last_accesses = 0
        self._generation = self._plan_generation()
        self._until_shift = self._generation

    # Read-only state ------------------------------------------------------------------------------------

    @property
    def k(self) -> int:
        """Slices per insertion / consecutive matches per query."""
        return self._k

    @property
    def l(self) -> int:
        """Target generations per time span."""
        return self._l

    @property
    def span(self) -> float:
        """The time span T."""
        return self._span

    @property
    def capacity(self) -> int:
        """The initial capacity estimate (insertions per span)."""
        return self._capacity

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def min_slices(self) -> int:
        """``k + l``: the number of slices the filter never goes below."""
        return self._k + self._l

    @property
    def num_slices(self) -> int:
        """Current number of slices, expired ones not yet retired included."""
        return len(self._slices)

    @property
    def slice_sizes(self) -> tuple[int, ...]:
        """``m_i`` in bits, s_0 first."""
        return tuple(s.m for s in self._slices)

    @property
    def slice_counts(self) -> tuple[int, ...]:
        """``n_i``, the insertions each slice received, s_0 first."""
        return tuple(s.n for s in self._slices)

    @property
    def slice_ids(self) -> tuple[int, ...]:
        """Running id (hash salt index) of each slice, s_0 first."""
        return tuple(s.id for s in self._slices)

    @property
    def timestamps(self) -> tuple[float | None, ...]:
        """``t_i``, time of the last insertion into each slice (None: never updated), s_0 first."""
        return tuple(s.t for s in self._slices)

    @property
    def fill_ratios(self) -> tuple[float, ...]:
        """Actual fraction of set bits of each slice, s_0 first."""
        return tuple(np.count_nonzero(s.bits) / s.m for s in self._slices)

    @property
    def total_bits(self) -> int:
        """Memory of the bit arrays, ``sum(m_i)``."""
        return sum(s.m for s in self._slices)

    @property
    def generation(self) -> int:
        """g of eq. 5: insertions between the last shift and the next."""
        return self._generation

    @property
    def until_shift(self) -> int:
        """Insertions left before the next shift (the counter of §6.2)."""
        return self._until_shift

    @property
    def target_generation(self) -> float:
        """tg of eq. 6 at the last shift (``capacity / l`` before the first)."""
        return self._target

    @property
    def shifts(self) -> int:
        """Shifts so far."""
        return self._shifts

    @property
    def inserts(self) -> int:
        """Insertions so far."""
        return self._inserts

    @property
    def queries(self) -> int:
        """Queries answered by :meth:`query` and :meth:`test_and_insert` so far."""
        return self._queries

    @property
    def accesses(self) -> int:
        """Bit-array accesses of all those queries (Algorithm 1)."""
        return self._accesses

    @property
    def last_accesses(self) -> int:
        """Bit-array accesses of the last query."""
        return self._last_accesses

    @property
    def design_fp(self) -> float:
        """Worst-case false-positive rate of the steady ``k + l`` filter, realistic fill model (eq. 2)."""
        return design_fp(self._k, self._l)

    def live(self, now: float | None = None) -> tuple[bool, ...]:
        """Whether each slice is within the span at ``now`` (``t_i >= now - span``, eq. 3), s_0 first."""
        now = self._now(now)
        return tuple(self._is_live(s, now - self._span) for s in self._slices)

    def expected_fp(self, now: float | None = None) -> float:
        """False-positive probability from the expected fills ``1 - (1 - 1/m_i)**n_i`` (eq. 1) of live slices.

        The same as :meth:`current_fp` without the randomness of the hash collisions: a function of the
        slice sizes and counts only.
        """
        now = self._now(now)
        threshold = now - self._span
        fills = [1.0 - (1.0 - 1.0 / s.m) ** s.n if self._is_live(s, threshold) else 0.0 for s in self._slices]
        return fp_from_fills(fills, self._k)

    def current_fp(self, now: float | None = None) -> float:
        """False-positive probability of a random absent key right now, from the actual fill ratios.

        Expired slices count as empty (Algorithm 1 skips them); see :func:`fp_from_fills`.
        """
        now = self._now(now)
        threshold = now - self._span
        fills = [np.count_nonzero(s.bits) / s.m if self._is_live(s, threshold) else 0.0 for s in self._slices]
        return fp_from_fills(fills, self._k)

    # Operations -----------------------------------------------------------------------------------------

    def insert(self, key: int, now: float | None = None) -> None:
        """Insert a 64-bit integer key at time ``now`` (default: the clock).

        Raises
        ------
        TypeError, ValueError
            If the key is not an integer in 0..2**64-1, or ``now`` goes backwards.
        """
        key = _check_key(key)
        now = self._now(now)
        for s in self._slices[:self._k]:
            s.bits[slice_index(key, s.salt, s.m)] = True
            s.n += 1
            s.t = now
        self._count_insertions(1, now)

    def insert_many(self, keys: Iterable[int] | np.ndarray, now: float | None = None) -> None:
        """Insert many keys, all at time ``now``, in order; the same as :meth:`insert` one by one."""
        array = _key_array(keys)
        now = self._now(now)
        done = 0
        while done < len(array):
            chunk = array[done:done + self._until_shift]
            for s in self._slices[:self._k]:
                s.bits[slice_index_many(chunk, s.salt, s.m)] = True
                s.n += len(chunk)
                s.t = now
            done += len(chunk)
            self._count_insertions(len(chunk), now)

    def query(self, key: int, now: float | None = None) -> bool:
        """Whether ``key`` was inserted within the span (Algorithm 1 of paper 001).

        Looks for k consecutive slices, not expired, whose bit for the key is set, starting at slice
        ``numSlices - k`` and jumping k slices back on a mismatch. The bit-array accesses are counted in
        :attr:`last_accesses` and :attr:`accesses`.
        """
        key = _check_key(key)
        now = self._now(now)
        return self._query(key, now)

    def query_many(self, keys: Iterable[int] | np.ndarray, now: float | None = None) -> np.ndarray:
        """Vectorised :meth:`query` (same answers, no access counting), as a bool array."""
        array = _key_array(keys)
        now = self._now(now)
        threshold = now - self._span
        run = np.zeros(len(array), dtype=np.int64)
        found = np.zeros(len(array), dtype=bool)
        for s in self._slices:
            if self._is_live(s, threshold):
                match = s.bits[slice_index_many(array, s.salt, s.m)]
                run = np.where(match, run + 1, 0)
                found |= run >= self._k
            else:
                run[:] = 0
        return found

    def test_and_insert(self, key: int, now: float | None = None) -> bool:
        """Answer "was ``key`` seen within the span?" and then insert it, both at the same time ``now``."""
        key = _check_key(key)
        now = self._now(now)
        seen = self._query(key, now)
        self.insert(key, now)
        return seen

    # Internals ------------------------------------------------------------------------------------------

    def _read_clock(self) -> float:
        value = self._clock()
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise TypeError(f"clock must return a finite real number, returned {value!r}")
        return float(value)

    def _now(self, now: float | None) -> float:
        if now is None:
            now = self._read_clock()
        elif isinstance(now, bool) or not isinstance(now, numbers.Real) or not math.isfinite(now):
            raise TypeError(f"now must be a finite real number, not {now!r}")
        now = float(now)
        if now < self._last_now:
            raise ValueError(f"now must not go backwards: {now} < {self._last_now}")
        self._last_now = now
        return now

    @staticmethod
    def _is_live(s: _Slice, threshold: float) -> bool:
        return s.t is not None and s.t >= threshold            # eq. 3 / Algorithm 1 timestamp check

    def _new_slice(self, m: int) -> _Slice:
        s = _Slice(self._next_id, slice_salt(self._seed, self._next_id), m)
        self._next_id += 1
        return s

    def _query(self, key: int, now: float) -> bool:
        threshold = now - self._span
        slices = self._slices

        def probe(i: int) -> bool | None:
            s = slices[i]
            if not self._is_live(s, threshold):              # timestamp check first: no bit access
                return None
            return bool(s.bits[slice_index(key, s.salt, s.m)])

        result, accesses = algorithm1(len(slices), self._k, probe)
        self._queries += 1
        self._accesses += accesses
        self._last_accesses = accesses
        return result

    def _count_insertions(self, count: int, now: float) -> None:
        self._inserts += count
        self._inserted_in_generation += count
        self._until_shift -= count
        if self._until_shift == 0:                           # §6.2: shift when the counter reaches 0
            self._shift(now)

    def _plan_generation(self) -> int:
        # eq. 4-5: g = min over the insertion slices of u_i = floor((m_i ln2 - n_i) / (k - i)).
        g = min(s.budget(i, self._k) for i, s in enumerate(self._slices[:self._k]))
        return max(g, 1)

    def _shift(self, now: float) -> None:
        k, l = self._k, self._l
        g = self._inserted_in_generation
        t_s = now - self._last_shift
        # eq. 6: tg = g * T / (t_s * l), the insertions per target time T / l at the measured rate; capped
        # (max_growth) against t_s ~ 0.
        cap = self._max_growth * max(self._target, g)
        tg = min(g * self._span / (t_s * l), cap) if t_s > 0 else cap
        tg = math.floor(round(tg, 6)) + 1                   # whole insertions, strictly above (see Notes)
        # eq. 7: the old insertion slices 1..k-1 (positions after the shift) and their budgets u_i (eq. 4).
        old = self._slices[:k - 1]
        budgets = [s.budget(i + 1, k) for i, s in enumerate(old)]
        if budgets:
            u_j = min(budgets)
            j = budgets.index(u_j) + 1                      # lowest position on ties: it binds longest
            s_j = old[j - 1]
            count = min(s_j.m * LN2 - s_j.n, (k - j) * tg)  # s_j's updates left from position j to k
            c_0 = count + j * tg
        else:                                               # k = 1: s_0 alone takes every generation
            c_0 = tg
        m_0 = math.ceil(max(c_0, k) / LN2)                  # eq. 8
        self._slices.insert(0, self._new_slice(m_0))
        # eq. 3: retire expired tail slices, never below k + l (§6.1, §8).
        threshold = now - self._span
        while len(self._slices) > k + l and not self._is_live(self._slices[-1], threshold):
            self._slices.pop()
        self._target = tg
        self._last_shift = now
        self._inserted_in_generation = 0
        self._shifts += 1
        self._generation = self._plan_generation()          # eq. 4-5 for the next generation
        self._until_shift = self._generation
