"""Tests of the time-limited APBF (paper 001) golden model, :mod:`apbbf.model.timelimited`.

Time is simulated: the filters get a clock that is never read (every call passes ``now=``) or a settable one.
Inserted keys are drawn below 2**63 and absent keys at or above it, so absent keys are certainly absent.
Statistical checks use z = 4 standard deviations of the quantity measured (two-sided p ~ 6e-5 per check).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np
import pytest

from apbbf.model.hashing import slice_index, slice_salt
from apbbf.model.timelimited import (TimeLimitedAPBF, algorithm1, design_fp, fp_from_fills,
                                     realistic_fills)

Z = 4.0
SPAN = 100.0
RATE = 20                                     # keys per time unit: 2000 keys per span


def _no_clock():
    raise AssertionError("the tests pass now= explicitly")


def make(k=4, l=3, capacity=2000, seed=1, **kwargs):
    return TimeLimitedAPBF(k, l, SPAN, capacity, seed=seed, clock=_no_clock, now=0.0, **kwargs)


def present_keys(rng, n):
    return rng.integers(0, 1 << 63, n, dtype=np.uint64)


def absent_keys(rng, n):
    return rng.integers(1 << 63, (1 << 64) - 1, n, dtype=np.uint64, endpoint=True)


# Rate profiles: (ticks, keys per tick), one tick = 1 time unit.
PROFILES = {
    "steady": [(700, RATE)],
    "bursty": [(250, RATE), (40, 10 * RATE), (200, RATE), (15, 30 * RATE), (200, RATE)],
    "quiet": [(250, RATE), (250, 0), (150, RATE), (130, 0), (20, 3 * RATE), (150, RATE)],
    "trickle": [(200, RATE), (300, 1), (200, RATE)],
}


def run(f, profile, rng, t=0.0, every=None):
    """Drive ``f`` through ``profile``; yield (t, [(time, keys) ...]) every ``every`` ticks."""
    history = []
    tick = 0
    for ticks, per_tick in profile:
        for _ in range(ticks):
            t += 1.0
            tick += 1
            keys = present_keys(rng, per_tick)
            f.insert_many(keys, now=t)
            history.append((t, keys))
            if every and tick % every == 0:
                yield t, history


# No false negatives -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("k, l, capacity", [(4, 3, 2000), (1, 2, 2000), (5, 7, 300), (3, 2, 20000)])
def test_no_false_negatives(profile, k, l, capacity):
    seed = 1000 + k * 10 + l
    rng = np.random.default_rng(seed)
    f = make(k, l, capacity, seed=seed)
    checked = 0
    for t, history in run(f, PROFILES[profile], rng, every=10):
        recent = [keys for when, keys in history if when >= t - SPAN]   # the boundary t - SPAN included
        recent = np.concatenate(recent) if recent else np.zeros(0, dtype=np.uint64)
        missing = recent[~f.query_many(recent, now=t)]
        assert len(missing) == 0, (f"seed={seed} profile={profile} k={k} l={l} t={t}: {len(missing)} of "
                                   f"{len(recent)} keys of the last span missing, e.g. {missing[:3]}")
        for key in recent[:: max(1, len(recent) // 10)]:                 # Algorithm 1 itself, on a sample
            assert f.query(int(key), now=t), f"seed={seed} profile={profile} t={t}: query({key}) false"
        checked += len(recent)
    assert checked > 0


def test_no_false_negatives_per_key_insertion_at_span_boundary():
    seed = 7
    rng = np.random.default_rng(seed)
    f = make(seed=seed)
    keys = present_keys(rng, 6000)
    times = np.cumsum(rng.exponential(1.0 / RATE, len(keys)))          # Poisson arrivals
    for key, t in zip(keys, times):
        f.insert(int(key), now=float(t))
    now = float(times[-1])
    inside = times >= now - SPAN
    assert f.query_many(keys[inside], now=now).all(), f"seed={seed}"
    boundary = int(np.argmax(inside))                                    # oldest key still in the span
    assert f.query(int(keys[boundary]), now=float(times[boundary]) + SPAN), f"seed={seed}"


# Algorithm 1 ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_algorithm1_finds_any_run_of_k(k):
    for n in range(k, 8):
        for pattern in itertools.product((True, False, None), repeat=n):
            probed = []

            def probe(i):
                probed.append(i)
                return pattern[i]

            found, accesses = algorithm1(n, k, probe)
            expected = any(all(pattern[j + i] for i in range(k)) for j in range(n - k + 1))
            assert found == expected, f"k={k} pattern={pattern}"
            assert accesses == sum(pattern[i] is not None for i in probed), f"k={k} pattern={pattern}"
            assert len(probed) == len(set(probed)), f"k={k} pattern={pattern}: a slice probed twice"


@pytest.mark.parametrize("profile", ["bursty", "quiet"])
def test_query_equals_query_many(profile):
    seed = 21
    rng = np.random.default_rng(seed)
    f = make(seed=seed)
    for t, history in run(f, PROFILES[profile], rng, every=50):
        keys = np.concatenate([history[-1][1], present_keys(rng, 50), history[len(history) // 2][1],
                               absent_keys(rng, 200)])
        batch = f.query_many(keys, now=t)
        single = np.array([f.query(int(key), now=t) for key in keys])
        assert (batch == single).all(), f"seed={seed} profile={profile} t={t}"


# Slices: growth, retirement, adaptive size ----------------------------------------------------------------------

def _per_key(f, rng, t, duration, rate):
    """Insert ``rate`` keys per time unit, one at a time, evenly spaced, for ``duration``; return the end time."""
    n = int(round(duration * rate))
    for i in range(n):
        f.insert(int(present_keys(rng, 1)[0]), now=t + (i + 1) / rate)
    return t + n / rate


def _until_shift(f, rng, t, rate):
    """Insert at ``rate`` until the next shift has happened; return the time."""
    shifts = f.shifts
    while f.shifts == shifts:
        t += 1.0 / rate
        f.insert(int(present_keys(rng, 1)[0]), now=t)
    return t


@pytest.mark.parametrize("k, l", [(4, 3), (2, 5)])
def test_steady_rate_settles_at_k_plus_l(k, l):
    seed = 31
    rng = np.random.default_rng(seed)
    f = make(k, l, capacity=2000, seed=seed)
    t = _per_key(f, rng, 0.0, 2 * SPAN, RATE)
    tg = math.floor(RATE * SPAN / l) + 1                            # eq. 6, strictly above span / l
    for _ in range(k + l + 2):
        t = _until_shift(f, rng, t, RATE)
        assert f.num_slices == k + l, f"seed={seed} t={t}: {f.num_slices} slices"
        assert f.target_generation == tg, f"seed={seed} t={t}: tg={f.target_generation}, want {tg} (eq. 6)"
        assert f.slice_sizes[0] == math.ceil(k * tg / math.log(2)), f"seed={seed}: m_0={f.slice_sizes[0]}"
        assert f.generation == tg, f"seed={seed}: g={f.generation}"                     # eq. 4-5
        assert all(f.live(t)[1:]), f"seed={seed}: an expired slice survived a shift at {t}"


def test_bursts_add_slices_and_quiet_retires_them():
    seed = 41
    rng = np.random.default_rng(seed)
    k, l = 4, 3
    f = make(k, l, seed=seed)
    t = _per_key(f, rng, 0.0, 2 * SPAN, RATE)
    assert f.num_slices == k + l, f"seed={seed}"
    for _ in range(int(SPAN / 2 / 0.1)):                                      # burst: 10x the rate
        t += 0.1
        f.insert_many(present_keys(rng, RATE), now=t)
    grown = f.num_slices
    assert grown > k + l + 1, f"seed={seed}: a burst left {grown} slices"
    assert all(f.live(t)), f"seed={seed}: all slices hold the last span during the burst"
    t += 2 * SPAN                                                               # quiet
    assert not any(f.live(t)), f"seed={seed}: nothing is live after a quiet span"
    assert f.num_slices == grown, f"seed={seed}: slices are retired only at shifts (§6.1)"
    t = _until_shift(f, rng, t, RATE)
    assert f.num_slices == k + l, f"seed={seed}: {f.num_slices} slices after the quiet period"
    t = _per_key(f, rng, t, 3 * SPAN, RATE)                                     # settles again
    assert f.num_slices == k + l, f"seed={seed}: {f.num_slices} slices back at the steady rate"


def test_over_dimensioned_sizes_down_at_first_shift():
    seed = 51
    rng = np.random.default_rng(seed)
    k, l = 4, 3
    f = make(k, l, capacity=10 * RATE * int(SPAN), seed=seed)       # 10x the real rate
    m_initial = f.slice_sizes[0]
    t = _until_shift(f, rng, 0.0, RATE)
    tg = math.floor(RATE * SPAN / l) + 1
    assert f.target_generation == tg, f"seed={seed}"
    assert f.slice_sizes[0] == math.ceil(k * tg / math.log(2)) < m_initial / 5, f"seed={seed}: {f.slice_sizes}"
    assert f.num_slices == k + l, f"seed={seed}"
    for _ in range(k + l + 2):
        t = _until_shift(f, rng, t, RATE)
        assert f.num_slices == k + l, f"seed={seed}: an over-dimensioned filter never grows (§7.1)"


def test_under_dimensioned_grows_then_settles():
    seed = 61
    rng = np.random.default_rng(seed)
    k, l = 4, 3
    f = make(k, l, capacity=RATE * int(SPAN) // 5, seed=seed)       # a fifth of the real rate
    m_initial = f.slice_sizes[0]
    counts = []
    t = 0.0
    for _ in range(8):
        t = _per_key(f, rng, t, SPAN / 2, RATE)
        counts.append(f.num_slices)
    assert max(counts) > k + l, f"seed={seed}: {counts}"
    assert counts[-1] == k + l, f"seed={seed}: {counts}"
    assert f.slice_sizes[0] > 4 * m_initial, f"seed={seed}: {f.slice_sizes}"


def test_slice_ids_and_hashes():
    seed = 71
    rng = np.random.default_rng(seed)
    f = make(seed=seed)
    assert f.slice_ids == tuple(range(f.num_slices - 1, -1, -1))
    key = int(present_keys(rng, 1)[0])
    f.insert(key, now=0.0)
    for s in f._slices[:f.k]:
        assert np.flatnonzero(s.bits).tolist() == [slice_index(key, slice_salt(seed, s.id), s.m)]
    _per_key(f, rng, 0.0, 2 * SPAN, RATE)
    ids = f.slice_ids
    assert list(ids) == sorted(ids, reverse=True) and ids[0] == f.shifts + f.k + f.l - 1, f"seed={seed}: {ids}"


# False positives --------------------------------------------------------------------------------------------------

def _binomial_check(hits, trials, p_sum, var_sum, what, bias=0.0):
    """|hits - sum p| <= Z * sqrt(variance) + bias (a known model band), with the numbers in the message."""
    sigma = math.sqrt(var_sum)
    assert abs(hits - p_sum) <= Z * sigma + bias + 1, (f"{what}: {hits} hits in {trials} trials, expected "
                                                      f"{p_sum:.1f} +- {Z} x {sigma:.1f} + {bias:.1f}")


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_false_positives_match_fill_model(profile):
    seed = 81
    rng = np.random.default_rng(seed)
    f = make(seed=seed)
    hits = trials = 0
    p_sum = var_sum = 0.0
    for t, _ in run(f, PROFILES[profile], rng, every=10):
        n = 2000
        p = f.current_fp(now=t)                                    # exact for independent slice hashes
        hits += int(f.query_many(absent_keys(rng, n), now=t).sum())
        trials += n
        p_sum += n * p
        var_sum += n * p * (1 - p)
    _binomial_check(hits, trials, p_sum, var_sum, f"seed={seed} profile={profile}")


def _fill_variance(m, n):
    # Variance of the number of empty bins after n balls into m bins, over m**2.
    q1, q2 = (1 - 1 / m) ** n, (1 - 2 / m) ** n
    return (m * q1 + m * (m - 1) * q2 - (m * q1) ** 2) / m ** 2


def _model_sigma(f, now):
    """Standard deviation of the fp of ``f`` due to the hash randomness of the fills (delta method)."""
    live = f.live(now)
    fills = [1 - (1 - 1 / m) ** n if ok else 0.0 for m, n, ok in zip(f.slice_sizes, f.slice_counts, live)]
    var = 0.0
    for i, (m, n, ok) in enumerate(zip(f.slice_sizes, f.slice_counts, live)):
        if ok and n:
            h = 1e-6
            up = fills[:i] + [fills[i] + h] + fills[i + 1:]
            grad = (fp_from_fills(up, f.k) - fp_from_fills(fills, f.k)) / h
            var += grad ** 2 * _fill_variance(m, n)
    return math.sqrt(var)


@pytest.mark.parametrize("k, l", [(4, 3), (5, 7), (7, 5)])
def test_false_positives_near_design_target(k, l):
    # Steady rate, one key at a time. Over a generation the fp rises as the insertion slices fill and drops when
    # the tail slice expires (just before the shift: a generation lasts a little more than span / l); at its
    # peak the fills follow eq. 2 and the fp is the design worst case F(k, l) of the realistic model.
    # The span is chosen so that rate * span / l is just below a whole number g: eq. 6 then asks for exactly g
    # per generation and the rounding of tg costs nothing.
    seed = 91 + k
    rng = np.random.default_rng(seed)
    rate, g = 10, 150
    span = l * (g - 1e-3) / rate
    f = TimeLimitedAPBF(k, l, span, g * l, seed=seed, clock=_no_clock, now=0.0)
    t = _per_key(f, rng, 0.0, 2 * span, rate)
    t = _until_shift(f, rng, t, rate)
    target = design_fp(k, l)
    n = 200
    hits = near_hits = trials = near_trials = 0
    p_sum = var_sum = near_var = 0.0
    for _ in range(4):
        peak, shifts = 0.0, f.shifts
        while f.shifts == shifts:
            t += 1 / rate
            f.insert(int(present_keys(rng, 1)[0]), now=t)
            expected, p = f.expected_fp(now=t), f.current_fp(now=t)
            assert expected <= target * 1.03, f"seed={seed} k={k} l={l} t={t}: fp {expected:.5f} > {target:.5f}"
            peak = max(peak, expected)
            hit = int(f.query_many(absent_keys(rng, n), now=t).sum())
            hits, trials, p_sum, var_sum = hits + hit, trials + n, p_sum + n * p, var_sum + n * p * (1 - p)
            if expected >= target * 0.97:                           # near the peak: compare with the target
                near_hits, near_trials = near_hits + hit, near_trials + n
                near_var += n * target * (1 - target) + (n * _model_sigma(f, t)) ** 2
        assert peak == pytest.approx(target, rel=0.03), f"seed={seed} k={k} l={l}: peak {peak:.5f} vs {target:.5f}"
    _binomial_check(hits, trials, p_sum, var_sum, f"seed={seed} k={k} l={l}: fp vs fill model")
    assert near_trials > 0
    # Near-peak states share slices: their fill noise adds up as if fully correlated (an upper bound) and the
    # 3% band of the model around the target is added to the expectation's tolerance.
    _binomial_check(near_hits, near_trials, near_trials * target, near_var,
                    f"seed={seed} k={k} l={l}: near-peak fp vs target {target:.5f}", bias=0.03 * target * near_trials)


def test_realistic_fills_and_design_fp():
    k, l = 4, 3
    fills = realistic_fills(k, l)
    assert fills[:k] == pytest.approx([1 - 2 ** (-(i + 1) / k) for i in range(k)])
    assert fills[k:] == [0.5] * l
    assert design_fp(4, 3) == pytest.approx(0.1074, abs=1e-4)      # seeds/README.md: 0.1074, not 0.1006
    linear = [(i + 1) / (2 * k) for i in range(k)] + [0.5] * l
    assert fp_from_fills(linear, k) == pytest.approx(0.100586, abs=1e-6)   # paper 000 Table 2
    assert fp_from_fills([1.0] * 5, 5) == 1.0 and fp_from_fills([0.0] * 5, 2) == 0.0


# Expiry -----------------------------------------------------------------------------------------------------------

def test_quiet_after_insertions_expires_exactly_after_span():
    seed = 101
    rng = np.random.default_rng(seed)
    f = make(seed=seed)
    keys = present_keys(rng, 3000)
    f.insert_many(keys[:1500], now=10.0)
    f.insert_many(keys[1500:], now=20.0)
    assert f.query_many(keys[1500:], now=20.0 + SPAN).all(), f"seed={seed}"
    assert not f.query_many(keys, now=20.0 + SPAN + 1e-9).any(), f"seed={seed}"
    assert f.current_fp(now=20.0 + SPAN + 1e-9) == 0.0


@pytest.mark.parametrize("profile", ["steady", "bursty"])
def test_old_elements_expire_under_traffic(profile):
    seed = 111
    rng = np.random.default_rng(seed)
    k, l = 4, 3
    f = make(k, l, seed=seed)
    t = _per_key(f, rng, 0.0, SPAN, RATE)
    old = present_keys(rng, 4000)
    f.insert_many(old, now=t)
    holders = set(f.slice_ids[:k])
    # Slack: the slices holding ``old`` take k more generations (span / l each at the steady rate) to leave the
    # insertion slices; expiry then follows one span after their last update. Run twice that.
    slack = 2 * k * SPAN / l
    for t, _ in run(f, PROFILES[profile], rng, t=t, every=1):
        if t > 500 + SPAN + slack:
            break
    live = {i for i, ok in zip(f.slice_ids, f.live(t)) if ok}
    assert not holders & live, f"seed={seed} profile={profile}: slices {holders & live} still live at {t}"
    p = f.current_fp(now=t)
    hits = int(f.query_many(old, now=t).sum())
    _binomial_check(hits, len(old), len(old) * p, len(old) * p * (1 - p), f"seed={seed} profile={profile}")


# test_and_insert, accesses -----------------------------------------------------------------------------------------

def test_test_and_insert():
    seed = 121
    rng = np.random.default_rng(seed)
    f = make(seed=seed)
    key = int(present_keys(rng, 1)[0])
    assert f.test_and_insert(key, now=1.0) is False                  # empty filter: nothing to match
    assert (f.inserts, f.queries) == (1, 1)
    assert f.test_and_insert(key, now=2.0) is True
    assert f.test_and_insert(key, now=2.0 + SPAN) is True           # re-inserted at 2.0, still within the span
    t = _per_key(f, rng, 2.0 + SPAN, 0.5 * SPAN, RATE)
    assert f.query(key, now=t) is True
    t += 2 * SPAN
    assert f.test_and_insert(key, now=t) is False                   # forgotten after a quiet span
    assert f.query(key, now=t) is True
    dup = present_keys(rng, 500)
    answers = [f.test_and_insert(int(x), now=t + 1) for x in np.concatenate([dup, dup])]
    assert all(answers[500:]), f"seed={seed}: a duplicate within the span was not detected"


def test_accesses_match_recursion():
    seed = 131
    rng = np.random.default_rng(seed)
    f = make(5, 7, seed=seed)
    assert f.query(int(absent_keys(rng, 1)[0]), now=0.0) is False and f.last_accesses == 0
    t = _per_key(f, rng, 0.0, 1.5 * SPAN, RATE)
    live = f.live(t)
    fills = [r if ok else 0.0 for r, ok in zip(f.fill_ratios, live)]
    k, n_slices = f.k, f.num_slices

    @lru_cache(maxsize=None)
    def expected(i, p, c):            # paper 000 A(k, l, p, c, a, i), as an expectation over all absent keys
        if i < 0:
            return 0.0
        r = fills[i]
        hit = 0.0 if p + c + 1 == k else expected(i + 1, p, c + 1)
        return live[i] + r * hit + (1 - r) * expected(i - k, c, 0)

    n = 3000
    before = f.accesses
    counts = []
    for key in absent_keys(rng, n):
        f.query(int(key), now=t)
        counts.append(f.last_accesses)
    assert f.accesses - before == sum(counts)
    mean, std = float(np.mean(counts)), float(np.std(counts))
    want = expected(n_slices - k, 0, 0)
    assert abs(mean - want) <= Z * std / math.sqrt(n), f"seed={seed}: {mean:.3f} accesses, expected {want:.3f}"


# Validation -------------------------------------------------------------------------------------------------------

GOOD = dict(k=4, l=3, span=SPAN, capacity=2000)


def _init(**changes):
    kwargs = dict(GOOD, clock=_no_clock, now=0.0) | changes
    return TimeLimitedAPBF(**kwargs)


@pytest.mark.parametrize("value, error", [(0, ValueError), (65, ValueError), (-1, ValueError),
                                          (2.0, TypeError), (True, TypeError), ("4", TypeError)])
def test_init_wrong_k(value, error):
    with pytest.raises(error, match="k must"):
        _init(k=value)


@pytest.mark.parametrize("value, error", [(0, ValueError), (4097, ValueError), (3.0, TypeError),
                                          (None, TypeError)])
def test_init_wrong_l(value, error):
    with pytest.raises(error, match="l must"):
        _init(l=value)


@pytest.mark.parametrize("value, error", [(0, ValueError), (-1.5, ValueError), (math.inf, ValueError),
                                          (math.nan, ValueError), ("60", TypeError), (False, TypeError)])
def test_init_wrong_span(value, error):
    with pytest.raises(error, match="span must"):
        _init(span=value)


@pytest.mark.parametrize("value, error", [(2, ValueError), (0, ValueError), (100.0, TypeError),
                                          (True, TypeError)])
def test_init_wrong_capacity(value, error):
    with pytest.raises(error, match=r"capacity must"):
        _init(capacity=value)


@pytest.mark.parametrize("value, error", [(-1, ValueError), (1 << 64, ValueError), (1.0, TypeError),
                                          (b"x", TypeError)])
def test_init_wrong_seed(value, error):
    with pytest.raises(error, match="seed must"):
        _init(seed=value)


@pytest.mark.parametrize("value", [None, 0.0, "monotonic", lambda: "now", lambda: math.nan])
def test_init_wrong_clock(value):
    with pytest.raises(TypeError, match="clock must"):
        _init(clock=value, now=None)


@pytest.mark.parametrize("value, error", [(1.0, ValueError), (0.5, ValueError), (math.inf, ValueError),
                                          ("8", TypeError)])
def test_init_wrong_max_growth(value, error):
    with pytest.raises(error, match="max_growth must"):
        _init(max_growth=value)


@pytest.mark.parametrize("key, error", [(-1, ValueError), (1 << 64, ValueError), (1.0, TypeError),
                                        (True, TypeError), ("k", TypeError)])
def test_wrong_key(key, error):
    f = make()
    with pytest.raises(error, match="key must"):
        f.insert(key, now=0.0)
    with pytest.raises(error, match="key must"):
        f.query(key, now=0.0)
    with pytest.raises(error, match="key must"):
        f.insert_many([1, key], now=0.0)


def test_time_must_not_go_backwards():
    f = make()
    f.insert(1, now=5.0)
    with pytest.raises(ValueError, match="now must not go backwards"):
        f.query(1, now=4.0)
    with pytest.raises(TypeError, match="now must"):
        f.query(1, now=math.nan)


def test_default_clock_is_used():
    now = [0.0]
    f = TimeLimitedAPBF(2, 2, 10.0, 100, clock=lambda: now[0])
    f.insert(5)
    now[0] = 10.0
    assert f.query(5)
    now[0] = 10.5
    assert not f.query(5)
    assert TimeLimitedAPBF(2, 2, 10.0, 100).query(5) is False        # time.monotonic by default
