"""Lanes: N independent filters, a key's lane chosen by hash bits (paper 003's horizontal partitioning).

A lanes filter is N filters (N a power of two, :data:`LANES`) with the same :class:`~apbbf.model.config.Config`,
each with its own segments and circular buffer: :class:`apbbf.model.APBBF` for a window bounded by count,
:class:`apbbf.model.timewindow.TimedAPBBF` for one bounded by time. Every command goes to the lane of its key, in
command order, and is answered there; the answers come back in command order. A key always goes to the same
lane, so no insert in one lane ever needs to be visible in another: a hardware built of N cores, each taking
one command per clock, needs no forwarding between them, and the no-false-negative guarantee holds per lane by
construction.

The lane of a key
-----------------
The lane is ``log2(N)`` bits of an H3 hash of the *mixed* key (:meth:`apbbf.model.hashing.HashSpec.fold`, the
input of every segment hash): bit r of the lane is ``parity(mixed & lane_mask[r])``. The lane masks come from
the seed, by the seed derivation of :mod:`apbbf.model.hashing`: splitmix64 stream :data:`LANE_STREAM` (-2; the
fold uses 0, the mixer's round keys -1, physical segment j stream ``j + 1``), masks of W bits drawn as
:func:`apbbf.model.hashing` draws every mask, and a drawn mask is skipped (the next one drawn) unless the lane
masks are linearly independent over GF(2) of each other and of the span of the ``hash_bits`` masks of *every*
physical segment (the rank of a segment's masks plus the lane masks is the segment's rank plus ``log2(N)``).

Why: the lane and a segment hash are both linear maps of the mixed key. When the stacked masks have full rank,
the pair (segment hash, lane) of a uniformly distributed mixed key is uniform, so the lane tells nothing about
the segment hash: inside one lane (a coset of the lane map's kernel) every segment hash is still uniform, and
each lane's filter fills and answers as a single filter fed random keys does. The mixer (a keyed bijection) is
what makes the mixed keys of structured input keys look uniform; taking the lane from the raw key instead would
let keys that differ only in a few bits pile into one lane. ``hash_bits + log2(N)`` must not exceed W (the
mixer's width, 32 or 64): a Config too wide for that is refused.

The window
----------
- **Time** (a Config with a span): every key inserted at time t is present for every query up to ``t + span``
  (:mod:`apbbf.model.timewindow`'s guarantee, per lane; lanes change nothing). Each lane sees about 1/N of the
  inserts, so a Config sized for a rate r per tick can take N·r across N lanes.
- **Count**: each lane keeps the last ``l·g`` inserts *of its own keys*. A key is present as long as fewer than
  ``l·g`` inserts (itself included) were made in its lane since it was inserted. Over all lanes that is
  :func:`lanes_window`: on random distinct keys (each insert in a given lane with probability 1/N) a key is
  kept for ``N·l·g`` inserts on average, and for at least the ``w`` of :func:`lanes_window` with probability
  ``1 - p``; in the worst case (every insert in one lane: keys chosen against the lane hash, or one key
  inserted again and again) the window is ``l·g`` inserts, the same as one filter's.
"""

from __future__ import annotations

import math

import numpy as np

from .config import Config, check_config, check_integer
from .filters import APBBF, Op
from .hashing import HashSpec, splitmix64
from .timewindow import TimedAPBBF

__all__ = ["LANES", "LANE_STREAM", "check_lanes", "lane_masks", "LaneSpec", "Lanes", "lanes_window", "lane_window_for"]

#: Lane counts a lanes filter takes: powers of two.
LANES = (1, 2, 4, 8, 16)
#: The splitmix64 stream of the lane masks (:mod:`apbbf.model.hashing`'s derivation).
LANE_STREAM = -2

_M64 = (1 << 64) - 1
_STREAM_STRIDE = 0xD1B54A32D192ED03


def check_lanes(lanes) -> int:
    """``lanes`` if it is one of :data:`LANES`.

    Raises
    ------
    TypeError
        If ``lanes`` is not an integer.
    ValueError
        If it is not a power of two from 1 to 16.
    """
    check_integer("lanes", lanes)
    if lanes not in LANES:
        raise ValueError(f"lanes must be a power of two from 1 to {LANES[-1]} ({', '.join(map(str, LANES))}), "
                         f"not {lanes}")
    return lanes


def _rank(masks) -> int:
    """Rank over GF(2) of integers taken as bit vectors."""
    basis = {}                                      # leading bit -> reduced vector
    for vector in masks:
        while vector:
            top = vector.bit_length() - 1
            if top not in basis:
                basis[top] = vector
                break
            vector ^= basis[top]
    return len(basis)


def lane_masks(config: Config, lanes: int) -> tuple[int, ...]:
    """The ``log2(lanes)`` lane masks of ``config``'s seed (module documentation, "The lane of a key").

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``lanes`` not an integer.
    ValueError
        If ``lanes`` is not in :data:`LANES`, or ``hash_bits + log2(lanes)`` exceeds the mixer's width, or no
        independent masks are found in 4096 draws (only when ``hash_bits + log2(lanes)`` is close to W).
    """
    check_config(config)
    bits = check_lanes(lanes).bit_length() - 1
    spec = HashSpec(config)
    width = spec.mix_width
    if config.hash_bits + bits > width:
        raise ValueError(f"lanes must leave hash_bits + log2(lanes) <= {width} (the mixer's width) for this "
                         f"Config (hash_bits {config.hash_bits}), not {lanes}")
    words = splitmix64((config.seed + LANE_STREAM * _STREAM_STRIDE) & _M64)
    per_mask = (width + 63) // 64
    ranks = [_rank(segment) for segment in spec.segment_masks]
    masks = []
    for _ in range(1 << 12):
        if len(masks) == bits:
            return tuple(masks)
        mask = 0
        for i in range(per_mask):
            mask |= next(words) << (64 * i)
        mask &= (1 << width) - 1
        chosen = masks + [mask]
        if all(_rank(list(segment) + chosen) == rank + len(chosen)
               for segment, rank in zip(spec.segment_masks, ranks)):
            masks.append(mask)
    raise ValueError(f"lanes: no {bits} lane masks independent of every segment's hash masks in 4096 draws for "
                     f"this Config (hash_bits {config.hash_bits} of {width}): take fewer lanes, or keys wider than "
                     f"32 bits, not {lanes}")


class LaneSpec:
    """The lane of a key, for a Config and a lane count.

    Parameters
    ----------
    config : Config
    lanes : int
        One of :data:`LANES`.

    Attributes
    ----------
    masks : tuple of int
        Lane bit r is ``parity(mixed key & masks[r])`` (:func:`lane_masks`).

    Raises
    ------
    TypeError, ValueError
        As :func:`lane_masks`.
    """

    def __init__(self, config: Config, lanes: int):
        self.masks = lane_masks(config, lanes)
        self.config = config
        self.lanes = lanes
        self.hash = HashSpec(config)

    def lane(self, key) -> int:
        """The lane of one key."""
        mixed = self.hash.fold(self.hash.check_key(key))
        return sum(((mixed & mask).bit_count() & 1) << r for r, mask in enumerate(self.masks))

    def lane_many(self, keys) -> np.ndarray:
        """The lanes of many keys (as :meth:`apbbf.model.hashing.HashSpec.as_array` takes them), ``int64``."""
        mixed = self.hash.fold_many(self.hash.as_array(keys))
        lanes = np.zeros(len(mixed), dtype=np.int64)
        for r, mask in enumerate(self.masks):
            lanes |= (np.bitwise_count(mixed & np.uint64(mask)) & 1).astype(np.int64) << r
        return lanes


class Lanes:
    """N filters with one Config, each command answered by the lane of its key (module documentation).

    Parameters
    ----------
    config : Config
        With a span, each lane is a :class:`~apbbf.model.timewindow.TimedAPBBF` and every command carries a
        time; without, an :class:`~apbbf.model.filters.APBBF`.
    lanes : int
        One of :data:`LANES`. With 1, the filter answers exactly as the single filter does.

    Attributes
    ----------
    filters : list
        The lanes' filters, lane 0 first.
    spec : LaneSpec

    Raises
    ------
    TypeError, ValueError
        As :func:`lane_masks`.
    """

    def __init__(self, config: Config, lanes: int):
        self.spec = LaneSpec(config, lanes)
        self.config = config
        self.lanes = lanes
        self.filters = [TimedAPBBF(config) if config.timed else APBBF(config) for _ in range(lanes)]

    def lane(self, key) -> int:
        return self.spec.lane(key)

    def run(self, ops, keys, times=None) -> tuple[np.ndarray, np.ndarray]:
        """Execute a command sequence: each command in its key's lane, the lanes' sequences in command order.

        Parameters
        ----------
        ops : sequence of Op (or int)
        keys : sequence of keys
        times : sequence of int, optional
            Required with a span, refused without.

        Returns
        -------
        hits, accesses : numpy.ndarray
            In command order, as the lanes' filters answer them.

        Raises
        ------
        ValueError
            If ``times`` is given without a span or missing with one, or the lengths differ.
        """
        if self.config.timed and times is None:
            raise ValueError("times are required for a Config with a span")
        if not self.config.timed and times is not None:
            raise ValueError("times must be None for a Config without a span")
        keys = self.spec.hash.as_array(keys)
        ops = np.asarray(ops, dtype=np.int64)
        if ops.ndim == 0:
            ops = np.full(len(keys), ops)
        if len(ops) != len(keys) or (times is not None and len(times) != len(keys)):
            raise ValueError("ops, keys (and times) must have the same length")
        times = None if times is None else np.asarray(times, dtype=object)
        lanes = self.spec.lane_many(keys)
        hits = np.zeros(len(keys), dtype=bool)
        accesses = np.zeros(len(keys), dtype=np.int64)
        for lane, model in enumerate(self.filters):
            where = np.flatnonzero(lanes == lane)
            if not len(where):
                continue
            if times is None:
                hits[where], accesses[where] = model.run(ops[where], keys[where])
            else:
                hits[where], accesses[where] = model.run(ops[where], keys[where], [int(t) for t in times[where]])
        return hits, accesses

    def command(self, op, key, time=None) -> bool:
        """The answer to one command (``time`` with a span), updating its lane."""
        model = self.filters[self.lane(key)]
        if self.config.timed:
            if time is None:
                raise ValueError("a time is required for a Config with a span")
            return bool(model.command(op, key, time)[0])
        if time is not None:
            raise ValueError("time must be None for a Config without a span")
        return bool(model.run([int(Op(op))], [key])[0][0])

    def query(self, key, time=None) -> bool:
        return self.command(Op.QUERY, key, time)

    def insert(self, key, time=None) -> None:
        self.command(Op.INSERT, key, time)

    def test_and_insert(self, key, time=None) -> bool:
        return self.command(Op.TEST_AND_INSERT, key, time)

    @property
    def counters(self) -> list[dict]:
        """Per lane, the counters a core counts (``inserts``, ``shifts``; ``overflows``, ``expired`` with a
        span), modulo 2**32."""
        result = []
        for m in self.filters:
            counters = {"inserts": m.n, "shifts": m.shifts}
            if self.config.timed:
                counters.update(overflows=m.overflows, expired=m.expired)
            result.append({name: value & 0xFFFFFFFF for name, value in counters.items()})
        return result


def _binomial_upper_tail(trials: int, p: float, above: int) -> float:
    """P(Binomial(trials, p) > above), accurate far into the tail: 1.0 stands for "at least a half" when
    ``above`` is below the mean (the median is within 1 of it); else the pmf from ``above + 1`` on, the first
    term from log-gamma, the next ones by the pmf's recurrence, over the 16 standard deviations that matter."""
    if above >= trials:
        return 0.0
    if above < math.floor(trials * p):
        return 1.0
    start = above + 1
    terms = min(trials - start + 1, int(16 * math.sqrt(trials * p * (1 - p))) + 64)
    first = (math.lgamma(trials + 1) - math.lgamma(start + 1) - math.lgamma(trials - start + 1)
             + start * math.log(p) + (trials - start) * math.log1p(-p))
    i = np.arange(start + 1, start + terms, dtype=np.float64)
    steps = np.log((trials - i + 1) / i) + math.log(p) - math.log1p(-p)
    return float(np.exp(first + np.concatenate(([0.0], np.cumsum(steps)))).sum())


def lanes_window(window: int, lanes: int, p: float = 1e-9) -> dict:
    """The count window a user of a lanes filter gets, each lane keeping the last ``window`` (= l·g) inserts of
    its own keys.

    A key inserted now is kept while fewer than ``window`` inserts (itself included) land in its lane. On
    random distinct keys each later insert lands there with probability 1/N, so after the key and w - 1
    more inserts its lane holds ``1 + Binomial(w - 1, 1/N)`` of them.

    Parameters
    ----------
    window : int
        l·g, a lane's window (:attr:`apbbf.model.config.Config.window`), at least 1.
    lanes : int
        One of :data:`LANES`.
    p : float
        The accepted probability that a key is not kept for ``guaranteed`` inserts, 0 < p < 0.5.

    Returns
    -------
    dict
        ``per_lane``: ``window``; ``expected``: ``N·window``, the inserts a key is kept for on average;
        ``guaranteed``: the largest w such that, with probability at least ``1 - p``, the key is kept for the
        last w inserts (itself included); ``worst``: ``window`` (all inserts in one lane).

    Raises
    ------
    TypeError, ValueError
        If ``window`` is not a positive integer, ``lanes`` not in :data:`LANES`, or ``p`` not in (0, 0.5).
    """
    check_integer("window", window, range(1, 1 << 62))
    check_lanes(lanes)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 0.5:
        raise ValueError(f"p must be a probability between 0 and 0.5 (exclusive), not {p!r}")
    result = {"per_lane": window, "expected": lanes * window, "worst": window}
    if lanes == 1:
        result["guaranteed"] = window
        return result

    def kept(w):                  # the key and w - 1 later inserts: at most window - 1 of those in its lane
        return _binomial_upper_tail(w - 1, 1 / lanes, window - 1) <= p

    low, high = window, lanes * window              # kept(low) holds; kept(high) fails for p < 1/2
    while high - low > 1:
        middle = (low + high) // 2
        if kept(middle):
            low = middle
        else:
            high = middle
    result["guaranteed"] = low
    return result


def lane_window_for(window: int, lanes: int, p: float = 1e-9) -> int:
    """The smallest window per lane (l·g) whose :func:`lanes_window` keeps a key for the last ``window``
    inserts over all lanes with probability at least ``1 - p`` on random keys: what the solver sizes each
    lane's Config for (``apbbf params --lanes N``). For 1 lane, ``window`` itself.

    Raises
    ------
    TypeError, ValueError
        As :func:`lanes_window`.
    """
    check_integer("window", window, range(1, 1 << 62))
    if check_lanes(lanes) == 1:
        return window
    low, high = -(-window // lanes) - 1, window          # guaranteed(low) < window <= guaranteed(high)
    while high - low > 1:
        middle = (low + high) // 2
        if middle >= 1 and lanes_window(middle, lanes, p)["guaranteed"] >= window:
            high = middle
        else:
            low = middle
    return high
