"""Sizing: the smallest APBBF meeting a false-positive target and a window (paper 000 §5.5, §6).

For a given (k, l, B, b) the worst-case false-positive rate and the NPWS do not depend on the segment size (the
per-block load of a full segment is fixed at ``λ_full``), so the search is: every (k, l) whose realistic fp and
NPWS meet the targets, each with the fewest ``segment_blocks`` (a power of two) giving ``window >= w``; keep the
least memory. fp grows with l (more places to find k matches) and falls with k, and memory is at least
``w · B · k / λ_full`` whatever l is, which bounds the search.
"""

from __future__ import annotations

import math

from . import analysis
from .config import Config, check_config

__all__ = ["solve", "describe"]

_MAX_L = 512            # l beyond this gains nothing (NPWS ~ 2/l is already tiny)
_MAX_SEGMENT_BLOCKS = 1 << 24


def _check_number(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {value!r}")


def _fp(k: int, l: int, block_bits: int, block_hashes: int) -> float:
    return analysis.false_positive_rate(k, l, analysis.block_segment_probabilities(k, l, block_bits, block_hashes))


def _segment_blocks(k: int, l: int, window: int, full_load: float) -> int | None:
    # smallest power of two N with l * floor(N * full_load / k) >= window
    generation = math.ceil(window / l)
    blocks = 1 << max(0, math.ceil(math.log2(max(generation * k / full_load, 1.0))) - 1)
    while blocks <= _MAX_SEGMENT_BLOCKS:
        if l * math.floor(blocks * full_load / k) >= window:
            return blocks
        blocks <<= 1
    return None


def solve(fp: float, window: int, max_npws: float | None = None, block_bits: int = 64, block_hashes: int = 4,
          key_width: int = 64, seed: int = 0, row_bits: int = 0, burst_bits: int = 0) -> Config:
    """The smallest-memory :class:`Config` with realistic worst-case fp ``<= fp`` and window ``>= window``.

    Parameters
    ----------
    fp : float
        Target false-positive rate, in (0, 1).
    window : int
        Minimum window w (inserts always reported), ``>= 1``.
    max_npws : float, optional
        Maximum peak NPWS (paper 000 §5.2), ``> 0``.
    block_bits, block_hashes : int
        B and b of each block (``block_hashes = 1``: the basic APBF).
    key_width, seed : int
        Passed to :class:`Config`.
    row_bits, burst_bits : int
        The row layout (:attr:`Config.row_bits`; 0: on chip). Every candidate has it, and its fp is then the
        row layout's (:func:`~apbbf.model.analysis.config_false_positive_rate`: it depends on the blocks per row,
        so on k + l + 1 and the segment size); a (k, l) whose physical segments do not fit a row is skipped.

    Returns
    -------
    Config
        Least ``memory_bits``; ties go to the larger window, then fewer segments.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument is out of range, or no configuration meets the targets (the message names which).
    """
    _check_number("fp", fp)
    if not 0 < fp < 1:
        raise ValueError(f"fp must be in (0, 1), not {fp}")
    if isinstance(window, bool) or not isinstance(window, int):
        raise TypeError(f"window must be an integer, not {window!r}")
    if window < 1:
        raise ValueError(f"window must be at least 1, not {window}")
    if max_npws is not None:
        _check_number("max_npws", max_npws)
        if not max_npws > 0:
            raise ValueError(f"max_npws must be positive, not {max_npws}")
    # Validate the block shape (and key_width, seed) through Config itself.
    Config(1, 1, block_bits=block_bits, block_hashes=block_hashes, segment_blocks=1 << 10, key_width=key_width,
           seed=seed, row_bits=row_bits, burst_bits=burst_bits)
    rows = {"row_bits": row_bits, "burst_bits": burst_bits}
    if block_hashes >= block_bits:
        raise ValueError(f"block_hashes must be smaller than block_bits ({block_bits}), not {block_hashes}")
    full_load = analysis.block_full_load(block_bits, block_hashes)
    rho_full = analysis.block_match_probability(full_load, block_bits, block_hashes)
    if max_npws is not None and max_npws * _MAX_L < 1:
        raise ValueError(f"max_npws={max_npws} is unreachable: the peak NPWS is at least 1/l and l is at most "
                         f"{_MAX_L}")

    fp_floor = _fp(64, 1, block_bits, block_hashes)
    if fp_floor > fp:
        raise ValueError(f"fp={fp} is unreachable with block_bits={block_bits} and block_hashes={block_hashes} "
                         f"(the best, k=64 l=1, gives {fp_floor:.3g})")
    best = None
    best_key = None
    k = 1
    while True:
        if best is not None and window * block_bits * k / full_load > best.memory_bits:
            break                                        # every l needs more memory than the best
        if k > 64:
            break
        for l in range(1, _MAX_L + 1):
            if max_npws is not None and analysis.peak_npws(k, l, rho_full) > max_npws:
                continue
            if _fp(k, l, block_bits, block_hashes) > fp:
                break                                    # fp only grows with l
            blocks = _segment_blocks(k, l, window, full_load)
            if blocks is None:
                continue
            try:
                config = Config(k, l, block_bits=block_bits, block_hashes=block_hashes, segment_blocks=blocks,
                                key_width=key_width, seed=seed, **rows)
            except ValueError:
                continue                                 # e.g. more than 64 hash bits per segment
            key = (config.memory_bits, -config.window, k + l)
            if best_key is not None and key >= best_key:
                continue
            if row_bits and (k > analysis.ROW_MAX_K or analysis.config_false_positive_rate(config) > fp):
                continue                                 # the rows' loads vary: above the independent fp
            best, best_key = config, key
        k += 1
    if best is None:
        raise ValueError(f"no configuration meets fp={fp}, window={window}, max_npws={max_npws} with "
                         f"block_bits={block_bits}, block_hashes={block_hashes}"
                         + (f", row_bits={row_bits}" if row_bits else "") +
                         ": window needs more than 2**24 blocks per segment, max_npws is too small for the fp "
                         "target" + (", or no k + l + 1 segments that meet it fit a row" if row_bits else ""))
    return best


def describe(config: Config) -> dict:
    """The :class:`Config` fields and its derived and analytic metrics, as a JSON-ready dict.

    Returns
    -------
    dict
        The fields ``k, l, block_bits, block_hashes, segment_blocks, key_width, seed``, plus ``generation``,
        ``window``, ``slack``, ``fp`` (realistic worst case at the configuration's actual load), ``npws``,
        ``accesses``, ``memory_bits``, ``bits_per_element`` and ``lower_bound_bits_per_element`` (Naor–Yogev
        leading terms for ``n = window``, ``m = slack``, ``ε = fp``; paper 002). In the row layout also
        ``row_bits``, ``burst_bits``, ``rows``, ``row_blocks``, ``fp_independent`` (the fp were the segments
        independent) and ``memory_*`` (the items of :func:`apbbf.model.memory.memory_facts`).
    """
    check_config(config)
    metrics = analysis.analyze_config(config)
    c = config
    fp = metrics["fp"]
    result = {"k": c.k, "l": c.l, "block_bits": c.block_bits, "block_hashes": c.block_hashes,
              "segment_blocks": c.segment_blocks, "key_width": c.key_width, "seed": c.seed,
              "generation": c.generation, "window": c.window, "slack": c.slack, "fp": fp,
              "npws": metrics["npws"], "accesses": metrics["accesses"], "memory_bits": c.memory_bits,
              "bits_per_element": c.bits_per_element,
              "lower_bound_bits_per_element": (analysis.naor_yogev_bits_per_element(c.window, c.slack, fp)
                                               if fp < 0.5 else None)}
    if c.row_layout:
        from .memory import memory_facts
        result.update(row_bits=c.row_bits, burst_bits=c.burst_bits, rows=c.rows, row_blocks=c.row_blocks,
                      fp_independent=metrics["fp_independent"],
                      **{f"memory_{name}": value for name, value in memory_facts(c).items()
                         if name not in ("rows", "row_bits", "row_blocks")})
    return result
