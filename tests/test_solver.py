"""The sizing solver: meets its targets, is minimal, and rejects impossible or invalid requests."""

import dataclasses

import pytest

from apbbf.model import analysis
from apbbf.model.config import Config
from apbbf.model.solver import describe, solve


def _fp(c):
    return analysis.analyze(c.k, c.l, c.block_bits, c.block_hashes)["fp"]


@pytest.mark.parametrize("fp, window, kwargs", [
    (1e-2, 1000, {}), (1e-3, 10000, {}), (1e-3, 10000, {"max_npws": 0.1}),
    (1e-4, 4096, {"block_bits": 512, "block_hashes": 8}), (1e-2, 2000, {"block_hashes": 1}),
])
def test_meets_targets_and_minimal(fp, window, kwargs):
    c = solve(fp, window, **kwargs)
    B, b = c.block_bits, c.block_hashes
    assert _fp(c) <= fp and c.window >= window
    if "max_npws" in kwargs:
        assert analysis.analyze(c.k, c.l, B, b)["npws"] <= kwargs["max_npws"]
    if c.segment_blocks > 1:   # half the segment would not hold the window
        assert dataclasses.replace(c, segment_blocks=c.segment_blocks // 2).window < window
    # no neighbouring (k, l) meets the targets with less memory
    full = analysis.block_full_load(B, b)
    rho_full = analysis.block_match_probability(full, B, b)
    for k in range(max(1, c.k - 2), c.k + 3):
        for l in range(1, 2 * c.l + 2):
            blocks = 1
            while l * int(blocks * full / k) < window:
                blocks *= 2
            if (k + l) * blocks * B >= c.memory_bits:
                continue
            if "max_npws" in kwargs and analysis.peak_npws(k, l, rho_full) > kwargs["max_npws"]:
                continue
            rho = analysis.block_segment_probabilities(k, l, B, b)
            assert analysis.false_positive_rate(k, l, rho) > fp, (k, l)


def test_describe():
    c = solve(1e-3, 10000)
    d = describe(c)
    for key in ("k", "l", "block_bits", "block_hashes", "segment_blocks", "key_width", "seed", "generation",
                "window", "fp", "memory_bits", "bits_per_element", "lower_bound_bits_per_element"):
        assert key in d
    assert d["fp"] <= 1e-3 and d["window"] >= 10000
    assert d["lower_bound_bits_per_element"] < d["bits_per_element"]


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((0.0, 100), {}, ValueError, "fp must be in"),
    ((1.0, 100), {}, ValueError, "fp must be in"),
    (("0.1", 100), {}, TypeError, "fp must be a number"),
    ((0.1, 0), {}, ValueError, "window must be at least 1"),
    ((0.1, 10.5), {}, TypeError, "window must be an integer"),
    ((0.1, 100), {"max_npws": 0}, ValueError, "max_npws must be positive"),
    ((0.1, 100), {"max_npws": 1e-4}, ValueError, "max_npws"),
    ((0.1, 100), {"block_bits": 48}, ValueError, "block_bits"),
    ((1e-300, 100), {}, ValueError, "fp=1e-300 is unreachable"),
])
def test_invalid(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        solve(*args, **kwargs)
