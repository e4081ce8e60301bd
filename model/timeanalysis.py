"""Analysis and sizing of the time-bounded window (:class:`apbbf.model.timewindow.TimedAPBBF`).

The count-based analysis (:mod:`apbbf.model.analysis`, paper 000 §5.3 and §6) gives the false-positive rate of
k + l full segments. A time-bounded window departs from it with the insert rate r (keys per tick), relative to
the *planned* rate ``r0 = g / I`` (one generation per shift interval I, :attr:`Config.shift_interval`):

- below r0, shifts are triggered by time: a generation holds ``n = ceil(r·I)`` inserts, fewer than g, so the
  segments are under-filled and the fp falls;
- above r0, by count: a generation lasts ``T = g/r < I``, segments stay alive for the span after their last
  insert, so about ``k + span/T`` segments are alive (more places to find k matches: the fp rises) until the pool
  of ``physical_segments - 1`` is full; then the oldest are retired early (overflows) and the window falls back
  from the span to the last ``(physical_segments - 1 - k)·g`` inserts.

With inserts at a steady rate every quantity follows from the schedule: shift m at time ``m·T`` (``T = n/r``),
the segment created by shift m receives inserts during generations m..m+k-1, its last insert at
``(m+k)·T - 1/r``; it is alive while its age is at most the span and it has not been retired for room. At a
phase f of a generation (f = 1: just before the next shift), logical segment i < k holds
``(i+f)·n`` keys and the older ones ``k·n``; each segment's match probability is the APBBF's
(:func:`~apbbf.model.analysis.block_match_probability` at its load per block), and the recursion F of paper 000
§5.3 over the alive segments gives the fp. In the row layout (``Config.row_bits``) the segments' loads in the
query's row vary and neighbouring segments share generations, so the fp is
:func:`~apbbf.model.analysis.row_false_positive_rate` over the same generations (the newest one f·n keys, the
others n). :func:`timed_analysis` evaluates this; ``scripts/time_window.py`` measures it on the model and the
gateware.
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

from . import analysis
from .config import Config, check_config, check_integer

__all__ = ["planned_rate", "window_capacity", "timed_analysis", "solve_timed", "tolerated_burst", "floor_headroom", "time_window_facts",
           "default_extra_segments"]


def _check_rate(name: str, rate) -> float:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise TypeError(f"{name} must be a number, not {rate!r}")
    if not (math.isfinite(rate) and rate > 0):
        raise ValueError(f"{name} must be a positive finite number, not {rate}")
    return float(rate)


def planned_rate(config: Config) -> float:
    """``g / shift_interval``: the insert rate (keys per tick) at which a generation fills in one interval.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no span.
    """
    check_config(config)
    return config.generation / config.shift_interval


def window_capacity(config: Config) -> int:
    """The longest window (ticks) the memory built for ``config`` holds at its planned rate: the largest span W,
    ``config.span`` at least, for which a filter of ``config``'s shape with span W keeps every key for W ticks at
    :func:`planned_rate` (``config``'s) without overflow (:func:`timed_analysis`). A longer window needs more
    segments: at that rate the generations fill by count, and a key must outlive ``W / I`` shifts. Bounded by
    ``2**(time_width-1) - 1``.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no span.
    """
    rate = planned_rate(config)
    limit = (1 << (config.time_width - 1)) - 1

    def holds(span):
        return not _overflows(dataclasses.replace(config, span=span), rate)

    low, high = config.span, limit
    if holds(high):
        return high
    while high - low > 1:                   # holds(low) or low is the span; not holds(high)
        middle = (low + high) // 2
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low


def _alive(config: Config, rate: float, period: float, f: float, cap: int) -> int:
    """Alive (not expired, not retired) segments at phase ``f`` of a generation of ``period`` ticks."""
    k, span = config.k, config.span
    alive = k                                            # the insert targets are never expired
    j = k
    while j < cap:
        age = (j - k + f) * period + 1.0 / rate         # since its last insert
        if age > span:
            break
        alive += 1
        j += 1
    return alive


def _schedule(config: Config, rate: float) -> tuple[int, float, bool, int]:
    """(keys per generation, ticks per generation, overflow, most alive segments) at ``rate``."""
    g, I, P = config.generation, config.shift_interval, config.physical_segments
    fill = min(g, math.ceil(rate * I - 1e-9))
    period = fill / rate
    # Alive just after a shift: the segments not expired at the shift, plus the new one; at most P - 1.
    needed = _alive(config, rate, period, 0.0, 10 ** 6) + 1
    return fill, period, needed > P - 1, min(needed, P - 1)


def _overflows(config: Config, rate: float) -> bool:
    """:func:`timed_analysis`'s ``overflow`` alone."""
    return _schedule(config, rate)[2]


def timed_analysis(config: Config, rate: float, *, points: int = 16, rows: bool = True) -> dict:
    """Predicted steady state of a time-bounded window with inserts at ``rate`` keys per tick.

    Parameters
    ----------
    config : Config
        With a span.
    rate : float
        Inserts per tick, > 0.
    points : int
        Phases of a generation averaged for ``fp_mean``, >= 1.
    rows : bool
        In the row layout, the row analysis (True, the default); False: the segments taken as independent
        (cheaper, and below the row layout's fp: the solvers prune with it).

    Returns
    -------
    dict
        ``rate_ratio`` (rate / :func:`planned_rate`), ``trigger`` ("time" or "count"), ``generation_fill``
        (keys per generation), ``shift_period`` (ticks between shifts), ``alive`` (segments a query looks at
        just before a shift), ``overflow`` (segments are retired early: the window is the count window),
        ``fp`` (worst case over a generation: just before a shift the segments are fullest, just after one an old
        segment may still be alive), ``fp_mean`` (averaged over a generation), ``window_time``
        (ticks a key is guaranteed to stay: the span, or the count window's duration on overflow) and
        ``window_keys`` (keys guaranteed: ``rate · span``, or the count window).

    Raises
    ------
    TypeError, ValueError
        If ``config`` has no span, or ``rate`` or ``points`` is not positive.
    """
    check_config(config)
    if not config.timed:
        raise ValueError("config has no span: use apbbf.model.analysis.analyze_config")
    rate = _check_rate("rate", rate)
    check_integer("points", points, range(1, 1 << 16))
    if not isinstance(rows, bool):
        raise TypeError(f"rows must be a bool, not {rows!r}")
    c = config
    k, g, P = c.k, c.generation, c.physical_segments
    fill, period, overflow, cap = _schedule(config, rate)
    load = 1.0 / c.segment_blocks

    def fp_at(f: float) -> float:
        alive = min(_alive(config, rate, period, f, cap), cap)
        if alive < k:
            return 0.0
        if c.row_layout and rows:          # generation 0 holds f·n keys, the older ones n; segment i the k newest
            return analysis.row_false_positive_rate(k, [f * fill] + [fill] * (alive - 1), c.rows, c.row_blocks,
                                                    c.block_bits, c.block_hashes)
        rho = tuple(analysis.block_match_probability(min(i + f, k) * fill * load, c.block_bits, c.block_hashes)
                    for i in range(alive))
        return analysis.false_positive_rate(k, alive - k, rho) if alive > k else math.prod(rho)

    phases = [fp_at((p + 0.5) / points) for p in range(points)]
    worst = max([fp_at(1.0), fp_at(1e-9), *phases])         # an old segment may still be alive early on
    mean = math.fsum(phases) / points
    count_window = (P - 1 - k) * g
    return {
        "rate": rate, "rate_ratio": rate / planned_rate(config), "trigger": "count" if fill == g else "time",
        "generation_fill": fill, "shift_period": period, "alive": min(_alive(config, rate, period, 1.0, cap), cap),
        "overflow": overflow, "fp": worst, "fp_mean": mean,
        "window_time": float(c.span) if not overflow else count_window / rate,
        "window_keys": rate * c.span if not overflow else float(count_window),
    }


def solve_timed(fp: float, span: int, rate: float, *, burst: float = 1.0, block_bits: int = 64,
                block_hashes: int = 4, key_width: int = 64, seed: int = 0, time_width: int = 32,
                max_k: int = 12, max_l: int = 32, max_segments: int = 32, floor: bool = True, row_bits: int = 0,
                burst_bits: int = 0) -> Config:
    """The smallest-memory time-bounded Config that keeps every key for ``span`` ticks at up to ``burst`` times
    ``rate`` keys per tick (no overflow), with a worst-case fp of at most ``fp`` at ``rate``.

    For each (k, l): the shift interval follows from the span; the segments hold at least the keys of one
    interval at ``rate`` (so ``rate`` is at most the planned rate and shifts come by time); the pool has the
    fewest extra segments that keep the window at the burst rate (and, with ``floor``, at least ``l - 1`` of
    them: the count floor by construction, :func:`floor_headroom`), or, when the pool would pass
    ``max_segments``, the segments are doubled. The least memory wins; ties go to fewer segments. A (k, l) that
    cannot beat the best so far is skipped unanalysed (the answer is the exhaustive search's, in milliseconds), and
    answers are remembered per process.

    Parameters
    ----------
    fp : float
        Target worst-case false-positive rate at ``rate``, in (0, 1).
    span : int
        The time window in ticks, 1 .. 2**(time_width-1)-1.
    rate : float
        Planned inserts per tick, > 0.
    burst : float
        Rates up to ``burst · rate`` keep the time window (>= 1).
    block_bits, block_hashes, key_width, seed, time_width : int
        Passed to :class:`Config`.
    row_bits, burst_bits : int
        The row layout (:attr:`Config.row_bits`, 0: on chip): every candidate has it, so its fp is the row
        layout's (:func:`~apbbf.model.analysis.row_false_positive_rate`), and a candidate whose physical segments
        do not fit a row is skipped.
    max_k, max_l : int
        The search's bounds.
    max_segments : int
        Most physical segments (each is a block RAM and a hash of its own in the gateware: the LUTs grow
        with their number), >= 3.
    floor : bool
        Keep the count floor by construction (``extra_segments >= l - 1``); False sizes the pool for the burst
        alone, and an overload after slow traffic may then retire keys among the last l·g inserts.

    Returns
    -------
    Config

    Raises
    ------
    TypeError, ValueError
        If an argument is out of range, or no configuration meets the targets.
    """
    rate = _check_rate("rate", rate)
    burst = _check_rate("burst", burst)
    if burst < 1:
        raise ValueError(f"burst must be at least 1, not {burst}")
    if isinstance(fp, bool) or not isinstance(fp, (int, float)) or not 0 < fp < 1:
        raise ValueError(f"fp must be in (0, 1), not {fp!r}")
    check_integer("span", span, range(1, 1 << 63))
    check_integer("max_segments", max_segments, range(3, 1 << 10))
    if not isinstance(floor, bool):
        raise TypeError(f"floor must be a bool, not {floor!r}")
    Config(1, 1, block_bits=block_bits, block_hashes=block_hashes, key_width=key_width, seed=seed,
           span=span, time_width=time_width, row_bits=row_bits, burst_bits=burst_bits)   # checks every field
    best = _solved(float(fp), span, rate, burst, block_bits, block_hashes, key_width, time_width, max_k, max_l,
                   max_segments, floor, row_bits, burst_bits)
    if best is None:
        raise ValueError(f"no configuration with k <= {max_k} and l <= {max_l} meets fp={fp} at {rate} keys per "
                         f"tick and keeps a span of {span} ticks at {burst}x that rate"
                         + (f" in rows of row_bits={row_bits}" if row_bits else ""))
    return dataclasses.replace(best, seed=seed)


@lru_cache(maxsize=256)
def _solved(fp, span, rate, burst, block_bits, block_hashes, key_width, time_width, max_k, max_l, max_segments,
            floor, row_bits, burst_bits) -> Config | None:
    """:func:`solve_timed`'s answers with seed 0, remembered per process (Configs are frozen; the seed takes
    no part in the search)."""
    return _search(fp, span, rate, burst, block_bits=block_bits, block_hashes=block_hashes, key_width=key_width,
                   seed=0, time_width=time_width, max_k=max_k, max_l=max_l, max_segments=max_segments,
                   floor=floor, prune=True, row_bits=row_bits, burst_bits=burst_bits)


def _search(fp: float, span: int, rate: float, burst: float, *, block_bits: int, block_hashes: int, key_width: int,
            seed: int, time_width: int, max_k: int, max_l: int, max_segments: int, floor: bool,
            prune: bool, row_bits: int = 0, burst_bits: int = 0) -> Config | None:
    """:func:`solve_timed`'s search (arguments checked): the best Config, or None.

    With ``prune``, a (k, l) whose least possible cost (memory, then segments) cannot beat the best so far is
    skipped before any analysis: its segments only grow from the first size that holds an interval's keys, and
    its pool from the fewest extra segments allowed, and both raise the memory and the segment count, while a
    tie keeps the Config found first. So the answer is the exhaustive search's (``prune=False``), which
    ``tests/test_timeanalysis.py`` checks on a grid of targets.
    """
    rows = {"row_bits": row_bits, "burst_bits": burst_bits}
    best, best_key = None, None
    full_load = analysis.block_full_load(block_bits, block_hashes)
    for k in range(1, max_k + 1):
        for l in range(1, max_l + 1):
            least_extra = l - 1 if floor else 0
            most_extra = min(64, max_segments - k - l - 1)
            if prune and least_extra > most_extra:
                continue                                    # no pool fits: no candidate at any segment size
            least_segments = k + l + 1 + least_extra
            interval = span // l + 1
            keys = math.ceil(rate * interval)              # one interval's keys at the planned rate
            blocks = 1 << max(0, math.ceil(math.log2(max(1.0, keys * k / full_load))))
            while blocks <= 1 << 24:
                try:
                    base = Config(k, l, block_bits=block_bits, block_hashes=block_hashes, segment_blocks=blocks,
                                  key_width=key_width, seed=seed, span=span, time_width=time_width, **rows)
                except ValueError:
                    break
                if base.generation < keys:
                    blocks <<= 1
                    continue
                if prune and best_key is not None and \
                        (least_segments * blocks * block_bits, least_segments) >= best_key:
                    break                                   # every candidate left here costs at least as much
                if timed_analysis(base, rate, points=1, rows=False)["fp"] > fp:
                    break                                   # bigger segments would not lower it much; next l
                config = None
                for extra in range(least_extra, most_extra + 1):
                    try:
                        candidate = Config(k, l, block_bits=block_bits, block_hashes=block_hashes,
                                           segment_blocks=blocks, key_width=key_width, seed=seed, span=span,
                                           time_width=time_width, extra_segments=extra, **rows)
                    except ValueError:
                        break                               # the pool no longer fits a row
                    if not _overflows(candidate, burst * rate):
                        config = candidate
                        break
                if config is not None:
                    key = (config.hardware_memory_bits, config.physical_segments)
                    if best_key is not None and key >= best_key:
                        break                               # no smaller than the best: its fp does not matter
                if config is not None and timed_analysis(config, rate, rows=False)["fp"] > fp:
                    break                  # the pool keeps more segments alive, or a phase is worse: next l
                if config is not None and config.row_layout and (k > analysis.ROW_MAX_K
                                                                 or timed_analysis(config, rate)["fp"] > fp):
                    break                  # the rows' loads vary: the row layout's fp is above it; next l
                if config is not None:
                    best, best_key = config, key
                    break
                blocks <<= 1                               # the pool cannot hold the burst: bigger segments
    return best


def tolerated_burst(config: Config, *, top: float = 64.0) -> float:
    """The largest factor β (to 1 %, at most ``top``) such that inserts at β times :func:`planned_rate` never
    overflow the pool in :func:`timed_analysis`'s steady state; 0.0 if even the planned rate overflows."""
    check_config(config)
    r0 = planned_rate(config)
    if _overflows(config, r0):
        return 0.0
    low, high = 1.0, top
    if not _overflows(config, high * r0):
        return high
    while high - low > 0.01 * low:
        mid = (low + high) / 2
        low, high = (mid, high) if not _overflows(config, mid * r0) else (low, mid)
    return round(low, 2)


def floor_headroom(config: Config) -> bool:
    """Whether the count floor holds by construction: ``extra_segments >= l - 1``
    (:mod:`apbbf.model.timewindow`, guarantee 2)."""
    check_config(config)
    return config.extra_segments >= config.l - 1


def time_window_facts(config: Config) -> list[str]:
    """What a time-bounded build promises, one paragraph per item, the numbers filled in: the one source of the
    Verilog header's time-window lines (:mod:`apbbf.hdl.export.verilog`) and of the README's and docs' statements.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no span.
    """
    check_config(config)
    if not config.timed:
        raise ValueError("config has no span: a count window has no time-window facts")
    c = config
    k, l, g, w, I, e = c.k, c.l, c.generation, c.window, c.shift_interval, c.extra_segments
    r0 = planned_rate(c)
    burst = tolerated_burst(c)
    facts = [
        f"Shift interval I = span // l + 1 = {c.span} // {l} + 1 = {I} ticks (the smallest I with l*I > span): "
        f"the newest segment is replaced when its generation holds g = {g} inserts or after I ticks, "
        "whichever comes first; a shift by time waits while the pool is full (every position but one holds a "
        "live segment younger than the span), and the newest generation then fills by count.",
        f"Planned rate g / I = {r0:.6g} inserts per tick; the pool holds the span without overflow up to "
        + (f"{burst:g}x that rate (steady state)." if burst else "- nothing: it overflows at the planned rate."),
        f"A key inserted at time t is reported present at every t' <= t + {c.span} while no segment has "
        "overflowed (the overflows counter is constant)"
        + (f"; and, overflow or not, while it is among the last w = l*g = {w} inserts (the count floor: "
           f"extra_segments = {e} >= l - 1 = {l - 1})." if floor_headroom(c) else
           f". NO HEADROOM FOR THE COUNT FLOOR: extra_segments = {e} < l - 1 = {l - 1}, so an overflow after "
           f"slow traffic can retire keys among the last w = {w} inserts; {l - 1} extra segments make the floor "
           "hold by construction."),
        f"Expiry: a key whose last insert is more than span + I = {c.span + I} ticks old is answered as a key "
        "never inserted is (false positives only), unless a shift by time waited for a full pool in between; "
        "the time bound holds both ways (a key older than the span is not kept for the count floor).",
        f"Times: each command's time is non-decreasing modulo 2**time_width, and consecutive commands differ by "
        f"less than 2**(time_width-1) = {1 << (c.time_width - 1)} ticks; the first command after reset may "
        "carry any time.",
        f"Restart: an insert more than span = {c.span} ticks after the last insert finds every segment expired; "
        f"the commands ahead of it finish, every memory is cleared ({c.segment_blocks} cycles, commands not "
        "accepted), then the insert is taken as the first after reset (its key is present afterwards).",
        "Counters (32 bits, wrapping, counted the cycle after the command is decided): overflows, segments "
        "retired early: the oldest live segment at a shift by count with the pool full; expired, segments "
        "retired because they expired: the stale ones at each shift, and every live segment at a restart.",
    ]
    return facts


def default_extra_segments(config: Config, *, burst: float = 2.0) -> int:
    """The headroom a build takes unless told otherwise: the fewest extra segments, at least ``l - 1`` (the
    count floor by construction), with which inserts at ``burst`` times :func:`planned_rate` keep the span
    without overflow (:func:`timed_analysis`, as :func:`solve_timed` sizes the pool); at most 64.

    Parameters
    ----------
    config : Config
        With a span; its ``extra_segments`` is ignored.
    burst : float
        The burst factor over the planned rate to hold, >= 1.

    Raises
    ------
    TypeError, ValueError
        If ``config`` has no span, or ``burst`` is below 1.
    """
    check_config(config)
    if not config.timed:
        raise ValueError("config has no span: extra segments only serve a time-bounded window")
    burst = _check_rate("burst", burst)
    if burst < 1:
        raise ValueError(f"burst must be at least 1, not {burst}")
    fields = {**config.__dict__}
    rate = planned_rate(config) * burst
    for extra in range(min(config.l - 1, 64), 65):
        fields["extra_segments"] = extra
        candidate = Config(**fields)
        if not _overflows(candidate, rate):
            return extra
    return 64
