"""Analytic model of APBF and APBBF: false positives, memory accesses, slack, space, lower bound.

Everything here is a formula from the papers in ``shared/seeds`` (cited by file number), evaluated exactly:

- Bloom filter baseline, paper 000 §4 (Table 1).
- APBF (paper 000 §5): slice fills just before a shift (§5.3), the false-positive recursion F (§5.3), the
  access-count recursion A of Algorithm 1 (§5.4) and its variants for true answers, peak NPWS (§5.2), space
  efficiency against a Bloom filter (§5.5) (Table 2).
- APBBF (paper 000 §6): each segment a blocked Bloom filter; per-block loads are Poisson, so each segment's
  match probability follows from the load, and the same recursions apply (Table 3, Table 4).
- The Naor–Yogev space lower bound for sliding Bloom filters (paper 002, Theorem 1.2).

Two fill models are offered for the basic filter (``fill=``):

``"paper"``
    The linear worst case of paper 000 §5.3, ``r_i = (i+1)/(2k)`` for ``i < k`` and ``1/2`` after. This is what
    Table 2 prints; it *under*-estimates a real filter, because a slice fills as ``1 − e^{−n/m}``, a concave
    function of the inserts, not linearly.
``"realistic"``
    ``r_i = 1 − 2^{−(i+1)/k}`` for ``i < k`` and ``1/2`` after (paper 001, eq. 2): slice i has received
    ``(i+1)·g`` inserts with ``g = m ln 2 / k``. Real filters are sized with this one.

The block model of Table 3 is already realistic (per-block loads grow linearly with inserts; the fill of a
block part is ``1 − (1 − b/B)^J``); with ``b = 1`` and large B it tends to the realistic basic fill.

All recursions take the per-segment match probabilities as a tuple (``rho``), are memoised with
:func:`functools.lru_cache`, and visit each (state, segment) once: ``k, l`` up to a few hundred evaluate in
milliseconds.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = [
    "FILLS", "paper_fill", "realistic_fill", "slice_fill",
    "false_positive_rate", "query_statistics", "accesses_false", "accesses_false_positive",
    "accesses_window", "peak_npws", "bloom_bits_per_element", "bloom_table_row", "bloom_false_accesses",
    "space_efficiency", "apbf_efficiency", "block_capacity_factor", "block_full_load",
    "block_match_probability", "block_segment_probabilities", "apbbf_bits_per_element",
    "naor_yogev_bits_per_element", "analyze", "analyze_config", "config_false_positive_rate", "ROW_NODES",
    "ROW_BUDGET", "ROW_MAX_K", "row_match_probability", "row_nodes", "row_false_positive_rate",
]

FILLS = ("paper", "realistic")


# Argument checks ------------------------------------------------------------------------------------------------

def _check_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value}")
    return value


def _check_kl(k, l) -> None:
    _check_int("k", k)
    _check_int("l", l)


def _check_probability(name: str, value, *, open_low=True, open_high=True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {value!r}")
    value = float(value)
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (low_ok and high_ok and math.isfinite(value)):
        lo, hi = ("(" if open_low else "["), (")" if open_high else "]")
        raise ValueError(f"{name} must be in {lo}0, 1{hi}, not {value}")
    return value


def _check_rho(k: int, l: int, rho) -> tuple[float, ...]:
    rho = tuple(float(r) for r in rho)
    if len(rho) != k + l:
        raise ValueError(f"rho must have k + l = {k + l} entries, not {len(rho)}")
    if not all(0.0 <= r <= 1.0 for r in rho):
        raise ValueError("rho entries must be probabilities in [0, 1]")
    return rho


def _check_block(block_bits, block_hashes) -> tuple[int, int]:
    _check_int("block_bits", block_bits)
    _check_int("block_hashes", block_hashes)
    if block_hashes >= block_bits:
        raise ValueError(f"block_hashes must be smaller than block_bits ({block_bits}), not {block_hashes}: "
                         f"a block with b = B is full after one element")
    if block_bits % block_hashes:
        raise ValueError(f"block_hashes ({block_hashes}) must divide block_bits ({block_bits})")
    return block_bits, block_hashes


# Fill models (paper 000 §5.3; paper 001 eq. 2) ---------------------------------------------------------------

def paper_fill(k: int, l: int) -> tuple[float, ...]:
    """Slice fills just before a shift, linear worst case of paper 000 §5.3.

    Parameters
    ----------
    k, l : int
        APBF parameters, ``>= 1``.

    Returns
    -------
    tuple of float
        ``r_i = (i+1)/(2k)`` for ``i < k``, ``1/2`` for ``k <= i < k + l``.
    """
    _check_kl(k, l)
    return tuple((i + 1) / (2 * k) if i < k else 0.5 for i in range(k + l))


def realistic_fill(k: int, l: int) -> tuple[float, ...]:
    """Slice fills just before a shift with the exponential fill law (paper 001, eq. 2).

    Slice i has received ``(i+1)·g`` inserts, ``g = m ln 2 / k`` (paper 000 §5.2), so its fill is
    ``1 − e^{−(i+1) g / m} = 1 − 2^{−(i+1)/k}`` for ``i < k`` and ``1/2`` after.

    Parameters
    ----------
    k, l : int
        APBF parameters, ``>= 1``.

    Returns
    -------
    tuple of float
    """
    _check_kl(k, l)
    return tuple(-math.expm1(-math.log(2) * (i + 1) / k) if i < k else 0.5 for i in range(k + l))


def slice_fill(k: int, l: int, model: str = "realistic") -> tuple[float, ...]:
    """Slice fills of the basic APBF under ``model`` (one of :data:`FILLS`)."""
    if model == "paper":
        return paper_fill(k, l)
    if model == "realistic":
        return realistic_fill(k, l)
    raise ValueError(f"fill must be one of {FILLS}, not {model!r}")


# Recursions (paper 000 §5.3, §5.4) ---------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def _false_positive(k: int, l: int, rho: tuple[float, ...]) -> float:
    @lru_cache(maxsize=None)
    def F(a: int, i: int) -> float:                     # §5.3: F(k, l, a, i)
        if a == k:
            return 1.0
        if i > l + a:
            return 0.0
        return rho[i] * F(a + 1, i + 1) + (1.0 - rho[i]) * F(0, i + 1)
    # Evaluate bottom-up along i so deep (k + l ~ 100s) recursions stay shallow on the call stack.
    for i in range(k + l, -1, -1):
        for a in range(k, -1, -1):
            F(a, i)
    return F(0, 0)


def false_positive_rate(k: int, l: int, rho=None, *, fill: str = "realistic") -> float:
    """Worst-case false-positive rate of an APBF just before a shift, ``F(k, l, 0, 0)`` (paper 000 §5.3).

    Parameters
    ----------
    k, l : int
        APBF parameters, ``>= 1``.
    rho : sequence of float, optional
        Match probability of each of the ``k + l`` segments (slice fills for the basic APBF, segment false
        positive rates for the APBBF, §6). Defaults to the fills of ``fill``.
    fill : {"realistic", "paper"}
        Fill model used when ``rho`` is not given.

    Returns
    -------
    float
        Probability that a key never inserted finds ``k`` consecutive matching segments.
    """
    _check_kl(k, l)
    rho = slice_fill(k, l, fill) if rho is None else _check_rho(k, l, rho)
    return _false_positive(k, l, rho)


def _statistics_batch(k: int, l: int, rho: np.ndarray) -> np.ndarray:
    """Algorithm 1 statistics for each row of ``rho`` (shape (R, k + l)); returns shape (3, R).

    ``S(p, c, i) = (P[true], E[accesses · 1{true}], E[accesses · 1{false}])`` from the state of Algorithm 1 at
    slice i with p matches before the last jump and c after it. The third component is the paper's
    ``A(k, l, p, c, a, i)`` (§5.4) with the accumulated ``a`` factored out; the second is its analogue for true
    answers. Algorithm 1 never revisits a slice (after a miss at ``l + c`` it restarts at ``l + c − k`` and stops
    by slice ``l − 1``), so the slices are independent along every path and the recursion is exact.

    Evaluation order: with ``d = i − c`` (start of the current run), a match keeps d and raises c, a miss goes
    to ``d' = i − k < d``. So d ascending, c descending, and the p dimension (which only decides termination,
    ``p + c = k``) is a numpy axis, as are the R rows.
    """
    rows = rho.shape[0]
    padded = np.zeros((rows, 2 * k + l + 1))
    padded[:, :k + l] = rho
    p = np.arange(k)[None, :]
    done = np.zeros((3, rows, k))
    done[0] = 1.0                                            # p + c = k: true, no further accesses
    start = {}                                               # d -> S(·, 0, d) for every p, shape (3, R, k)
    for d in range(-k, l + 1):
        above = done                                         # S(·, c + 1, d + c + 1); c = k is terminated
        for c in range(k - 1, -1, -1):
            i = d + c
            if i < 0:
                value = np.zeros((3, rows, k))
            else:
                t1, a1, b1 = above
                if i - k >= 0:
                    t0, a0, b0 = (start[i - k][:, :, c])[:, :, None]
                else:
                    t0 = a0 = b0 = 0.0
                r = padded[:, i][:, None]
                value = np.stack((r * t1 + (1 - r) * t0,
                                  r * (a1 + t1) + (1 - r) * (a0 + t0),
                                  r * (b1 + 1 - t1) + (1 - r) * (b0 + 1 - t0)))
            value = np.where(p + c >= k, done, value)
            above = value
        start[d] = above
    return start[l][:, :, 0]


@lru_cache(maxsize=4096)
def _statistics(k: int, l: int, rho: tuple[float, ...]) -> tuple[float, float, float]:
    return tuple(float(x) for x in _statistics_batch(k, l, np.array([rho]))[:, 0])


def query_statistics(k: int, l: int, rho) -> tuple[float, float, float]:
    """Probability and access sums of Algorithm 1 for a key with per-segment match probabilities ``rho``.

    Parameters
    ----------
    k, l : int
        APBF parameters, ``>= 1``.
    rho : sequence of float
        Probability that segment i (``0 <= i < k + l``) matches the key; 1 for segments the key was inserted in.

    Returns
    -------
    p_true : float
        Probability that the query returns true.
    accesses_true : float
        ``E[accesses · 1{true}]``.
    accesses_false : float
        ``E[accesses · 1{false}]``: the paper's ``A(k, l, 0, 0, 0, l)`` (§5.4).
    """
    _check_kl(k, l)
    return _statistics(k, l, _check_rho(k, l, rho))


def accesses_false(k: int, l: int, rho=None, *, fill: str = "realistic") -> float:
    """Expected accesses of a query returning false, ``A(k,l,0,0,0,l) / (1 − F(k,l,0,0))`` (paper 000 §5.4)."""
    _check_kl(k, l)
    rho = slice_fill(k, l, fill) if rho is None else _check_rho(k, l, rho)
    p_true, _, acc_false = _statistics(k, l, rho)
    return acc_false / (1.0 - p_true)


def accesses_false_positive(k: int, l: int, rho=None, *, fill: str = "realistic") -> float:
    """Expected accesses of a false positive: accesses of true-returning paths over ``F(k,l,0,0)`` (§5.4)."""
    _check_kl(k, l)
    rho = slice_fill(k, l, fill) if rho is None else _check_rho(k, l, rho)
    p_true, acc_true, _ = _statistics(k, l, rho)
    return acc_true / p_true


def accesses_window(k: int, l: int, rho=None, *, fill: str = "realistic") -> float:
    """Expected accesses of a query for a window member, just before a shift.

    Derivation: the window is the last ``w = l·g`` inserts, i.e. the ``l`` newest generations; just before a
    shift each is complete, and generation ``j`` (``0 <= j < l``, 0 the newest) was inserted into the slices
    that are now ``j .. j+k−1``. Those ``k`` segments match surely (``rho = 1``); the others match with their
    fill. The answer is always true; the expected accesses are averaged over the ``l`` generations with equal
    weight (each holds ``g`` elements). This reproduces the "window" column of paper 000 Table 2 and Table 3.

    Parameters
    ----------
    k, l : int
        APBF parameters, ``>= 1``.
    rho : sequence of float, optional
        Per-segment match probabilities of keys not inserted in a segment; defaults to the fills of ``fill``.
    fill : {"realistic", "paper"}
        Fill model when ``rho`` is not given.

    Returns
    -------
    float
    """
    _check_kl(k, l)
    rho = slice_fill(k, l, fill) if rho is None else _check_rho(k, l, rho)
    forced = np.tile(np.array(rho), (l, 1))
    for j in range(l):
        forced[j, j:j + k] = 1.0
    _, acc_true, acc_false = _statistics_batch(k, l, forced)
    return float(np.mean(acc_true + acc_false))


def peak_npws(k: int, l: int, rho_full: float = 0.5) -> float:
    """Peak normalized probability-weighted slack (paper 000 §5.2).

    Just before a shift the ``k`` generations after the window are reported with probabilities
    ``1, ρ, ρ², …`` (generation ``i`` misses ``i`` segments, which must match by chance), so
    ``NPWS = Σ_{i<k} ρ^i / l``, with ``ρ = 1/2`` for the basic APBF (≲ 2/l) and ``ρ`` the match probability
    of a full segment for the APBBF. This is the formula the paper states; it treats the missing segments as
    full, which is exact for ``l >= k − 1``.

    Parameters
    ----------
    k, l : int
        APBF parameters, ``>= 1``.
    rho_full : float
        Match probability of a full segment, in (0, 1).

    Returns
    -------
    float
    """
    _check_kl(k, l)
    rho_full = _check_probability("rho_full", rho_full)
    return sum(rho_full ** i for i in range(k)) / l


# Bloom filter baseline (paper 000 §4, Table 1) ---------------------------------------------------------------

def bloom_bits_per_element(fp: float, *, integer_k: bool = False) -> float:
    """Bits per element of a (partitioned) Bloom filter filled to ``r = 1/2`` with false-positive rate ``fp``.

    ``k = log2(1/fp)`` slices of ``m = n / ln 2`` bits (paper 000 §4.1); with ``integer_k`` the number of
    slices is rounded up, ``k = ⌈log2(1/fp)⌉``, as in Table 1.
    """
    fp = _check_probability("fp", fp)
    k = math.log2(1.0 / fp)
    if integer_k:
        k = math.ceil(k - 1e-12)
    return k / math.log(2)


def bloom_false_accesses(k: int) -> float:
    """Expected accesses of a Bloom filter query returning false at ``r = 1/2`` (paper 000 §4.2):
    ``2^k / (2^k − 1) · Σ_{i=1}^{k} i / 2^i``."""
    _check_int("k", k)
    return 2 ** k / (2 ** k - 1) * sum(i / 2 ** i for i in range(1, k + 1))


def bloom_table_row(fp: float) -> dict:
    """One row of paper 000 Table 1 for the aimed false-positive rate ``fp``.

    Returns
    -------
    dict
        ``k = ⌈log2(1/fp)⌉``, ``bits_per_item = k / ln 2``, ``actual_fp = 2^−k``, ``accesses_true = k``,
        ``accesses_false`` (:func:`bloom_false_accesses`).
    """
    fp = _check_probability("fp", fp)
    k = math.ceil(math.log2(1.0 / fp) - 1e-12)
    return {"k": k, "bits_per_item": k / math.log(2), "actual_fp": 2.0 ** -k,
            "accesses_true": float(k), "accesses_false": bloom_false_accesses(k)}


# Space efficiency (paper 000 §5.5) ---------------------------------------------------------------------------

def space_efficiency(fp: float, bits_per_element: float) -> float:
    """Memory of a Bloom filter with the same false-positive rate and capacity, over the filter's memory.

    The Bloom filter uses ``k_b = log2(1/fp)`` slices (real-valued, not rounded: that is how Table 2's "eff"
    column is computed) of ``w / ln 2`` bits each.
    """
    if isinstance(bits_per_element, bool) or not isinstance(bits_per_element, (int, float)) \
            or not bits_per_element > 0:
        raise ValueError(f"bits_per_element must be a positive number, not {bits_per_element!r}")
    return bloom_bits_per_element(fp) / bits_per_element


def apbf_efficiency(k: int, l: int, fp: float) -> float:
    """``eff = k_b/k_a · l/(k_a + l)`` with ``k_b = log2(1/fp)`` (paper 000 §5.5)."""
    _check_kl(k, l)
    fp = _check_probability("fp", fp)
    return math.log2(1.0 / fp) / k * l / (k + l)


# Block model (paper 000 §6, Table 3) -------------------------------------------------------------------------

def block_capacity_factor(block_bits: int, block_hashes: int) -> float:
    """``cap = (b/B) / (−ln(1 − b/B))``: an APBBF generation relative to an APBF ``(k·b, l·b)`` of equal memory.

    The APBF's slices of ``M/b`` bits are half full after ``(M/b) ln 2`` elements; a block part of ``B/b`` bits
    is half full after ``λ_full = −ln 2 / ln(1 − b/B)`` elements per block (Config.block_capacity), i.e.
    ``(M/B) λ_full`` per segment. The ratio is ``cap``; it tends to 1 for ``B ≫ b``.
    """
    B, b = _check_block(block_bits, block_hashes)
    return (b / B) / -math.log1p(-b / B)


def block_full_load(block_bits: int, block_hashes: int) -> float:
    """``λ_full = −ln 2 / ln(1 − b/B)``: mean elements per block of a full segment (a part half full)."""
    B, b = _check_block(block_bits, block_hashes)
    return -math.log(2) / math.log1p(-b / B)


def block_match_probability(load: float, block_bits: int, block_hashes: int) -> float:
    """Probability that a key not inserted matches a blocked segment with mean load ``load`` per block.

    A block holding ``J`` elements has each of its ``b`` parts ``1 − q^J`` full, ``q = 1 − b/B``, and a
    foreign key matches when its bit is set in all ``b`` parts. With ``J ~ Poisson(load)`` (paper 000 §6),
    ``ρ = E[(1 − q^J)^b] = Σ_{t=0}^{b} C(b,t) (−1)^t E[q^{tJ}] = Σ_t C(b,t) (−1)^t e^{−load (1 − q^t)}``
    by the Poisson generating function.

    Parameters
    ----------
    load : float
        Mean elements per block, ``>= 0``.
    block_bits, block_hashes : int
        B and b, ``1 <= b < B`` and b dividing B.

    Returns
    -------
    float
    """
    B, b = _check_block(block_bits, block_hashes)
    if isinstance(load, bool) or not isinstance(load, (int, float)) or not load >= 0:
        raise ValueError(f"load must be a non-negative number, not {load!r}")
    q = 1.0 - b / B
    total = math.fsum(math.comb(b, t) * (-1) ** t * math.exp(-load * (1.0 - q ** t)) for t in range(b + 1))
    return min(max(total, 0.0), 1.0)


def block_segment_probabilities(k: int, l: int, block_bits: int, block_hashes: int,
                                full_load: float | None = None) -> tuple[float, ...]:
    """Per-segment match probabilities of an APBBF just before a shift (paper 000 §6).

    Segment ``i < k`` has received ``i + 1`` of the ``k`` generations that fill a segment, so its mean block load
    is ``(i+1)/k · full_load``; older segments are full.

    Parameters
    ----------
    k, l : int
        APBBF parameters, ``>= 1``.
    block_bits, block_hashes : int
        B and b.
    full_load : float, optional
        Mean elements per block of a full segment; default :func:`block_full_load` (the design point).
        For a concrete :class:`Config`, ``k · generation / segment_blocks``.

    Returns
    -------
    tuple of float
    """
    _check_kl(k, l)
    if full_load is None:
        full_load = block_full_load(block_bits, block_hashes)
    return tuple(block_match_probability(full_load * min(i + 1, k) / k, block_bits, block_hashes)
                 for i in range(k + l))


def apbbf_bits_per_element(k: int, l: int, block_bits: int, block_hashes: int) -> float:
    """Memory bits per window element of an APBBF at the design load: ``(k + l) · k · B / (l · λ_full)``.

    With ``b = 1`` and ``B → ∞`` this is the basic APBF's ``(k + l) · k / (l ln 2)``.
    """
    _check_kl(k, l)
    return (k + l) * k * block_bits / (l * block_full_load(block_bits, block_hashes))


# Naor–Yogev lower bound (paper 002, Theorem 1.2) -------------------------------------------------------------

def naor_yogev_bits_per_element(n: int, m, epsilon: float) -> float:
    """Leading terms of the Naor–Yogev space lower bound, in bits per window element.

    Paper 002, Theorem 1.2: any ``(n, m, ε)``-Sliding Bloom Filter (window n, slack m, false-positive rate ε,
    ``n < ε u``) uses at least ``n log(1/ε) + n · max(log(n/m), log log(1/ε)) − O(n)`` bits, and
    ``n log(1/ε) + n log log(1/ε) − O(n)`` for ``m = ∞``. The bound is asymptotic: this function returns the
    two stated leading terms divided by n, with the unspecified ``O(n)`` term dropped, so it is a yardstick, not
    a rigorous bound for finite n.

    Parameters
    ----------
    n : int
        Window size, ``>= 1``.
    m : int or float or None
        Slack, ``> 0``; ``None`` or ``math.inf`` for unlimited slack.
    epsilon : float
        False-positive rate in (0, 1/2) (so that ``log log(1/ε) > 0``).

    Returns
    -------
    float
    """
    _check_int("n", n)
    epsilon = _check_probability("epsilon", epsilon)
    if epsilon >= 0.5:
        raise ValueError(f"epsilon must be below 1/2 for the bound to apply, not {epsilon}")
    log_inv = math.log2(1.0 / epsilon)
    second = math.log2(log_inv)
    if m is not None and m != math.inf:
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not m > 0:
            raise ValueError(f"m must be a positive number, None or math.inf, not {m!r}")
        second = max(second, math.log2(n / m))
    return log_inv + second


# Summary -----------------------------------------------------------------------------------------------------

def _summary(k, l, rho_real, rho_paper, rho_full, cap, bits_per_element) -> dict:
    fp = false_positive_rate(k, l, rho_real)
    fp_paper = false_positive_rate(k, l, rho_paper)

    def access(rho):
        return {"window": accesses_window(k, l, rho), "fp": accesses_false_positive(k, l, rho),
                "false": accesses_false(k, l, rho)}

    return {"k": k, "l": l, "fp": fp, "fp_paper": fp_paper, "accesses": access(rho_real),
            "accesses_paper": access(rho_paper), "npws": peak_npws(k, l, rho_full),
            "efficiency": space_efficiency(fp, bits_per_element),
            "efficiency_paper": space_efficiency(fp_paper, bits_per_element),
            "bits_per_element": bits_per_element, "capacity_factor": cap}


def analyze(k: int, l: int, block_bits: int | None = None, block_hashes: int | None = None) -> dict:
    """All the analytic metrics of an APBF (no block arguments) or an APBBF (both block arguments).

    Parameters
    ----------
    k, l : int
        Parameters, ``>= 1``.
    block_bits, block_hashes : int, optional
        B and b of an APBBF (paper 000 §6); give both or neither.

    Returns
    -------
    dict
        ``fp``: realistic worst-case false-positive rate (just before a shift); ``fp_paper``: with the paper's
        model (linear fill for the APBF, Table 2; the Poisson block model for the APBBF, Table 3, which is already
        realistic so equals ``fp``); ``accesses``: ``{"window", "fp", "false"}`` expected segment (block)
        accesses per query under the realistic model, ``accesses_paper`` the same under the paper's; ``npws``:
        peak NPWS; ``efficiency`` (and ``efficiency_paper``): Bloom filter memory over this filter's memory for
        the same fp and window; ``bits_per_element``: memory per window element at the design load;
        ``capacity_factor``: 1 for the APBF, ``cap`` for the APBBF (window relative to an APBF ``(k·b, l·b)``
        of the same memory).

    Raises
    ------
    TypeError, ValueError
        For non-integer or out-of-range arguments, or only one of the block arguments.
    """
    _check_kl(k, l)
    if block_bits is None and block_hashes is None:
        return _summary(k, l, realistic_fill(k, l), paper_fill(k, l), 0.5, 1.0,
                        (k + l) * k / (l * math.log(2)))
    if block_bits is None or block_hashes is None:
        raise ValueError("block_bits and block_hashes must be given together (both or neither)")
    rho = block_segment_probabilities(k, l, block_bits, block_hashes)
    return _summary(k, l, rho, rho, rho[-1], block_capacity_factor(block_bits, block_hashes),
                    apbbf_bits_per_element(k, l, block_bits, block_hashes))


def analyze_config(config) -> dict:
    """:func:`analyze` for a concrete :class:`~apbbf.model.config.Config`, at its actual generation size.

    The design point assumes ``λ_full`` elements per block; a configuration rounds the generation down, so its
    full segments hold ``k · generation / segment_blocks`` per block and its fp is slightly lower. Returns the
    :func:`analyze` keys evaluated at that load (``fp_design`` keeps the design-point fp), plus the
    configuration's ``window``, ``generation`` and ``bits_per_element``. In the row layout ``fp`` is
    :func:`row_false_positive_rate`'s (``fp_independent`` keeps the segments-independent value; ``rows`` and
    ``row_blocks`` are added); the access counts and NPWS stay the segments-independent ones.
    """
    from .config import check_config
    check_config(config)
    c = config
    if c.block_hashes >= c.block_bits:
        raise ValueError("block_hashes must be smaller than block_bits")
    load = c.k * c.generation / c.segment_blocks
    rho = block_segment_probabilities(c.k, c.l, c.block_bits, c.block_hashes, full_load=load)
    result = _summary(c.k, c.l, rho, rho, rho[-1], block_capacity_factor(c.block_bits, c.block_hashes),
                      c.bits_per_element)
    result["fp_design"] = analyze(c.k, c.l, c.block_bits, c.block_hashes)["fp"]
    result.update(window=c.window, generation=c.generation)
    if c.row_layout:
        result["fp_independent"] = result["fp"]
        result["fp"] = config_false_positive_rate(c)
        result.update(rows=c.rows, row_blocks=c.row_blocks)
    return result


def config_false_positive_rate(config) -> float:
    """The worst-case fp (just before a shift) of a count window :class:`~apbbf.model.config.Config`: k + l
    segments of full generations of ``g`` keys. In the row layout :func:`row_false_positive_rate` (the rows' loads
    and their correlation across segments); otherwise :func:`false_positive_rate` over
    :func:`block_segment_probabilities` (paper 000 §6), which the row analysis equals for one row.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If ``block_hashes == block_bits``.
    """
    from .config import check_config
    c = check_config(config)
    if c.block_hashes >= c.block_bits:
        raise ValueError("block_hashes must be smaller than block_bits")
    if c.row_layout:
        return row_false_positive_rate(c.k, [c.generation] * c.segments, c.rows, c.row_blocks, c.block_bits,
                                       c.block_hashes)
    load = c.k * c.generation / c.segment_blocks
    return false_positive_rate(c.k, c.l, block_segment_probabilities(c.k, c.l, c.block_bits, c.block_hashes,
                                                                     full_load=load))


# The row layout (Config.row_bits) ------------------------------------------------------------------------------
#
# A key's blocks in every segment sit in one row (a row hash shared by all segments, model/hashing.py step 5), so
# the query's block in segment i is one of the row_blocks blocks of the query's row, and that row holds, in
# segment i, the row's keys of every generation written into segment i. Let X_j be the keys of generation j that
# fall in the query's row: X_j ~ Binomial(g_j, 1/rows), independent across generations (each key's row is its own
# hash, uniform). Segment i holds generations max(0, i-k+1) .. i (a key is written into the k newest segments), so
# its row holds N_i = X_{i-k+1} + ... + X_i keys, and N_i, N_{i+1}, ... share terms: the segments' loads are
# positively correlated. Given the X_j, each segment's block within the row and its b bits are that segment's own
# hash, so the segments match independently with rho(N_i) (row_match_probability), and the fp is
#
#     fp = E_X[ P(k consecutive matches among the K segments | rho(N_0), ..., rho(N_{K-1})) ],
#
# the inner probability being paper 000 §5.3's F over the conditional rho. The expectation is a sum over the X_j
# evaluated as a forward recursion over the segments whose state is the run length a (F's a) and the row loads of
# the k-1 newest generations seen (those still to be written into the next segment): each X_j's law is replaced
# by its Gauss quadrature (ROW_NODES nodes, exact when the law has fewer support points).

#: Gauss nodes per generation's row load (fewer when k is large: the recursion's state holds k - 1 of them).
ROW_NODES = 5
#: Most entries (k · nodes**k) of one step of the row recursion: the nodes per generation are lowered to stay
#: under it, down to 3 (k = 1..7: 5 nodes, 8: 4, 9..12: 3). Against one node more the fp moves by less than
#: 1e-6 at k = 5, 1e-4 at k = 8, 0.3 % at k = 10..12 (2 nodes would be 6-9 % low there).
ROW_BUDGET = 1_000_000
#: The largest k the row recursion takes: at k = 12 its 3 nodes make 6.4·10⁶ entries a step (about 2 s).
ROW_MAX_K = 12
_ROW_TAIL = 1e-17


def _check_count(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a non-negative finite number, not {value!r}")
    return float(value)


def _binomial_pmf(n: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Support and pmf of Binomial(n, p), truncated where the mass is below ``_ROW_TAIL`` of the mode's."""
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    lo, hi = max(0, math.floor(mean - 40 * sd - 10)), min(n, math.ceil(mean + 40 * sd + 10))
    xs = np.arange(lo, hi + 1, dtype=np.float64)
    log_pmf = np.array([math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) for x in range(lo, hi + 1)])
    log_pmf += xs * math.log(p) + (n - xs) * math.log1p(-p)
    pmf = np.exp(log_pmf - log_pmf.max())
    keep = pmf > _ROW_TAIL
    return xs[keep], pmf[keep]


@lru_cache(maxsize=4096)
def _row_law(keys: float, rows: int) -> tuple[np.ndarray, np.ndarray]:
    if rows == 1:
        return np.array([keys]), np.array([1.0])
    p = 1.0 / rows
    low = math.floor(keys)
    frac = keys - low
    xs, pmf = _binomial_pmf(low, p) if low else (np.array([0.0]), np.array([1.0]))
    pmf = pmf / pmf.sum()
    if frac > 0:                                # a part-filled generation: the mixture of its two neighbours
        xs_hi, pmf_hi = _binomial_pmf(low + 1, p)
        support = np.union1d(xs, xs_hi)
        mixed = np.zeros(len(support))
        mixed[np.searchsorted(support, xs)] += (1 - frac) * pmf
        mixed[np.searchsorted(support, xs_hi)] += frac * pmf_hi / pmf_hi.sum()
        xs, pmf = support, mixed
    return xs, pmf / pmf.sum()


def _gauss(xs: np.ndarray, weights: np.ndarray, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``nodes``-point Gauss quadrature of the discrete law (xs, weights): Lanczos on diag(xs) from
    sqrt(weights), fully reorthogonalised, then Golub–Welsch. Integrates polynomials of degree ``2·nodes - 1``
    exactly; the law itself when it has at most ``nodes`` points."""
    if len(xs) <= nodes:
        return xs, weights
    centre = float(weights @ xs)
    x = xs - centre
    basis = np.zeros((nodes, len(xs)))
    alpha, beta = np.zeros(nodes), np.zeros(nodes)
    basis[0] = np.sqrt(weights)
    for j in range(nodes):
        v = x * basis[j]
        alpha[j] = basis[j] @ v
        v -= basis[:j + 1].T @ (basis[:j + 1] @ v)
        v -= basis[:j + 1].T @ (basis[:j + 1] @ v)
        if j + 1 < nodes:
            beta[j] = np.linalg.norm(v)
            basis[j + 1] = v / beta[j]
    jacobi = np.diag(alpha) + np.diag(beta[:-1], 1) + np.diag(beta[:-1], -1)
    values, vectors = np.linalg.eigh(jacobi)
    return values + centre, vectors[0] ** 2


@lru_cache(maxsize=4096)
def _row_quadrature(keys: float, rows: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    return _gauss(*_row_law(keys, rows), nodes)


@lru_cache(maxsize=1024)
def _row_matches(held: tuple[float, ...], rows: int, nodes: int, rho) -> np.ndarray:
    """ρ of a segment holding the generations ``held`` (their key counts), at every node of their row loads."""
    load = np.zeros((1,) * len(held))
    for axis, keys in enumerate(held):
        values = _row_quadrature(keys, rows, nodes)[0]
        shape = [1] * len(held)
        shape[axis] = len(values)
        load = load + values.reshape(shape)
    return rho(load)


def row_match_probability(keys, row_blocks: int, block_bits: int, block_hashes: int, *, law: str = "binomial"):
    """Probability that a key not inserted matches a segment whose row (the key's) holds ``keys`` keys.

    The key's block is one of the segment's ``row_blocks`` blocks of the row, the segment's own hash choosing it
    as it chose each of the ``keys`` keys' blocks: the block holds ``J ~ Binomial(keys, 1/row_blocks)`` of them,
    and, as in :func:`block_match_probability`, ``ρ = E[(1 − q^J)^b] = Σ_{t=0}^{b} C(b,t) (−1)^t E[q^{tJ}]``,
    ``q = 1 − b/B``, with ``E[q^{tJ}] = (1 − (1 − q^t)/row_blocks)^keys`` (the binomial generating function).
    With ``law="poisson"`` J is Poisson(keys / row_blocks) instead: ``E[q^{tJ}] = e^{−keys (1 − q^t)/row_blocks}``,
    :func:`block_match_probability` at load ``keys / row_blocks`` (paper 000 §6), which the on-chip layout (one row
    of ``segment_blocks`` blocks) keeps; within a row of few blocks it over-states the spread of J (at 4 blocks
    per row and a full segment, ρ by 3 %).

    Parameters
    ----------
    keys : float or numpy.ndarray
        Keys in the row (real values allowed: quadrature nodes), ``>= 0``.
    row_blocks : int
        Blocks of the segment in one row, ``>= 1``.
    block_bits, block_hashes : int
        B and b, ``1 <= b < B``, b dividing B.
    law : {"binomial", "poisson"}
        The law of the block's load given the row's.

    Returns
    -------
    float or numpy.ndarray
        Shaped as ``keys``.

    Raises
    ------
    TypeError, ValueError
        If ``row_blocks`` or the block shape is out of range, ``keys`` is negative, or ``law`` unknown.
    """
    B, b = _check_block(block_bits, block_hashes)
    _check_int("row_blocks", row_blocks)
    if law not in ("binomial", "poisson"):
        raise ValueError(f"law must be 'binomial' or 'poisson', not {law!r}")
    array = np.asarray(keys, dtype=np.float64)
    if not np.all(array >= 0):
        raise ValueError(f"keys must be non-negative, not {keys!r}")
    return _row_rho(B, b, row_blocks, law)(array) if array.ndim else float(_row_rho(B, b, row_blocks, law)(array))


@lru_cache(maxsize=256)
def _row_rho(B: int, b: int, row_blocks: int, law: str):
    q = 1.0 - b / B
    t = np.arange(b + 1)
    coefficients = np.array([math.comb(b, int(s)) * (-1) ** int(s) for s in t], dtype=np.float64)
    drop = -np.expm1(t * math.log(q))                               # 1 - q^t
    rates = -drop / row_blocks if law == "poisson" else np.log1p(-drop / row_blocks)

    def rho(keys: np.ndarray) -> np.ndarray:
        return np.clip(np.exp(keys[..., None] * rates) @ coefficients, 0.0, 1.0)
    return rho


def row_nodes(k: int) -> int:
    """Gauss nodes per generation's row load that :func:`row_false_positive_rate` takes for a given k: the most,
    up to :data:`ROW_NODES`, with ``k · nodes**k <= ROW_BUDGET`` (at least 3)."""
    _check_int("k", k)
    nodes = ROW_NODES
    while nodes > 3 and k * nodes ** k > ROW_BUDGET:
        nodes -= 1
    return nodes


def row_false_positive_rate(k: int, generations, rows: int, row_blocks: int, block_bits: int, block_hashes: int,
                            *, nodes: int | None = None, law: str | None = None) -> float:
    """False-positive rate of Algorithm 1 (k consecutive matches) in the row layout, the row loads' variation and
    their correlation across neighbouring segments included.

    Segment i (0 the newest) of the ``K = len(generations)`` segments queried holds the generations
    ``max(0, i−k+1) .. i``: a key is written into the k newest segments, all in the same row. With ``X_j ~
    Binomial(g_j, 1/rows)`` the keys of generation j in the query's row (independent across j) and ``N_i =
    Σ_{j=max(0,i−k+1)}^{i} X_j`` segment i's keys in that row, the segments match independently given the ``X``
    with ``ρ(N_i)`` (:func:`row_match_probability`), so

        ``fp = E_X[F(k, K − k, 0, 0; ρ(N_0), …, ρ(N_{K−1}))]``

    with F the recursion of paper 000 §5.3 (the probability of k consecutive matches). The expectation is a
    forward recursion over the segments, its state the run length and the row loads of the k − 1 newest
    generations seen; each ``X_j`` is replaced by the Gauss quadrature of its law with ``nodes`` points (exact
    when the law has no more support points than that). With ``rows = 1`` every ``X_j = g_j`` and the result is
    :func:`false_positive_rate` with :func:`block_match_probability`'s Poisson block law (the on-chip analysis).

    Parameters
    ----------
    k : int
        Consecutive matches needed, ``>= 1``.
    generations : sequence of float
        g_j, keys of generation j (0 the newest, possibly part-filled: a non-integer count is the mixture of
        the two binomials beside it with the same mean), ``>= 0``; one per segment queried.
    rows : int
        Rows of the filter, ``>= 1``.
    row_blocks : int
        Blocks of each segment in one row, ``>= 1``.
    block_bits, block_hashes : int
        B and b.
    nodes : int, optional
        Gauss nodes per generation, ``>= 1``; default :func:`row_nodes` (k).
    law : {"binomial", "poisson"}, optional
        The block's load given the row's (:func:`row_match_probability`); default binomial, and Poisson when
        ``rows = 1`` (the on-chip analysis).

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        If an argument is out of range (the message names it; k at most :data:`ROW_MAX_K`).
    """
    _check_int("k", k)
    if k > ROW_MAX_K:
        raise ValueError(f"k must be from 1 to ROW_MAX_K = {ROW_MAX_K} for the row analysis, not {k}")
    _check_int("rows", rows)
    _check_int("row_blocks", row_blocks)
    B, b = _check_block(block_bits, block_hashes)
    counts = [_check_count(f"generations[{j}]", g) for j, g in enumerate(generations)]
    nodes = row_nodes(k) if nodes is None else _check_int("nodes", nodes)
    if law is None:
        law = "poisson" if rows == 1 else "binomial"
    if law not in ("binomial", "poisson"):
        raise ValueError(f"law must be 'binomial' or 'poisson', not {law!r}")
    if len(counts) < k:
        return 0.0
    rho = _row_rho(B, b, row_blocks, law)
    # state[a, x_1, ..., x_d]: probability of run length a and the held generations' row loads at those nodes
    state = np.zeros(k)
    state[0] = 1.0
    held: list[float] = []
    found = 0.0
    for count in counts:
        weights = _row_quadrature(count, rows, nodes)[1]
        state = state[..., None] * weights
        held.append(count)
        match = _row_matches(tuple(held), rows, nodes, rho)
        hit = state * match
        found += float(hit[k - 1].sum())
        miss = (state - hit).sum(axis=0)
        state = np.concatenate([miss[None], hit[:k - 1]])
        if len(held) == k or k == 1:
            state = state.sum(axis=1)                      # the oldest held generation is in no later segment
            held.pop(0)
    return found
