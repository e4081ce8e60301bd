"""Analysis and sizing of the time-bounded window (model/timeanalysis.py) against the model it predicts."""

import dataclasses

import numpy as np
import pytest

from apbbf import cli
from apbbf.model import Config
from apbbf.model.timeanalysis import floor_headroom, planned_rate, solve_timed, timed_analysis
from apbbf.model.timewindow import TimedAPBBF

CONFIG = Config(3, 8, segment_blocks=256, span=20_000, time_width=32, extra_segments=4)


def measure(config, rate, seed, probes=2000):
    """The model's fp over the second half of a steady stream of inserts at ``rate`` per tick, probed at
    quarter-generation steps; its live segments and overflows."""
    rng = np.random.default_rng(seed)
    filt = TimedAPBBF(config)
    count = int(max(30 * config.generation, 30 * config.shift_interval * rate))
    times = (np.arange(count) / rate).astype(np.uint64)
    keys = rng.integers(0, 2 ** 62, size=count, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    half = count // 2
    filt.run(np.ones(half, dtype=np.int64), keys[:half], times[:half])
    overflows = filt.overflows
    step = max(1, min(config.generation, int(rate * config.shift_interval)) // 4)
    rates = []
    for start in range(half, count, step):
        stop = min(count, start + step)
        filt.run(np.ones(stop - start, dtype=np.int64), keys[start:stop], times[start:stop])
        absent = rng.integers(0, 2 ** 62, size=probes, dtype=np.uint64) * np.uint64(2)
        hits, _ = filt.run(np.zeros(probes, dtype=np.int64), absent, np.full(probes, times[stop - 1]))
        rates.append(hits.mean())
    return float(np.mean(rates)), len(rates) * probes, filt.overflows - overflows


@pytest.mark.parametrize("ratio", [0.5, 1.0, 4.0])
def test_prediction_matches_the_model(ratio):
    """fp averaged over generations: predicted within ±10 % or 3 standard errors of the model's; overflow
    predicted exactly when the model overflows in steady state."""
    rate = ratio * planned_rate(CONFIG)
    predicted = timed_analysis(CONFIG, rate)
    measured, probes, overflows = measure(CONFIG, rate, seed=int(ratio * 10))
    error = 3 * (predicted["fp_mean"] * (1 - predicted["fp_mean"]) / probes) ** 0.5
    assert abs(measured - predicted["fp_mean"]) <= max(0.1 * predicted["fp_mean"], error), (measured, predicted)
    assert predicted["overflow"] == (overflows > 0)
    assert predicted["trigger"] == ("time" if ratio < 1 else "count")


def test_rates_move_the_fp_as_expected():
    """Slow traffic under-fills segments (lower fp); fast traffic keeps more of them alive (higher fp), up to
    the pool; then the window is the count window."""
    r0 = planned_rate(CONFIG)
    slow, planned, fast, flood = (timed_analysis(CONFIG, x * r0) for x in (0.1, 1.0, 2.0, 10.0))
    assert slow["fp"] < planned["fp"] < fast["fp"] <= flood["fp"]
    assert slow["alive"] <= planned["alive"] < fast["alive"] <= CONFIG.physical_segments - 1
    assert not planned["overflow"] and flood["overflow"]
    assert planned["window_time"] == CONFIG.span
    assert flood["window_keys"] == (CONFIG.physical_segments - 1 - CONFIG.k) * CONFIG.generation


def test_solver_meets_its_targets():
    """The solved Config keeps the span at the burst rate (the model sees no overflow after its start) and its
    predicted fp at the planned rate is within the target."""
    span, rate, burst = 5_000, 0.05, 3.0
    config = solve_timed(1e-2, span, rate, burst=burst)
    assert config.span == span and timed_analysis(config, rate)["fp"] <= 1e-2
    assert not timed_analysis(config, burst * rate)["overflow"]
    assert floor_headroom(config), "the solver's Config must keep the count floor by construction"
    _, _, overflows = measure(config, burst * rate, seed=4, probes=10)
    assert overflows == 0


@pytest.mark.slow
def test_solver_floor_costs_memory():
    """Without ``floor`` the solver sizes the pool for the burst alone: here (the README's capture sizing) fewer
    than l - 1 extra segments and less memory; with it, at least l - 1, at a higher memory."""
    floored = solve_timed(1e-4, 1000, 5.24, burst=2.0)
    bare = solve_timed(1e-4, 1000, 5.24, burst=2.0, floor=False)
    assert floored.extra_segments >= floored.l - 1 and bare.extra_segments < bare.l - 1
    assert bare.hardware_memory_bits < floored.hardware_memory_bits
    with pytest.raises(TypeError, match="floor must be a bool"):
        solve_timed(1e-4, 1000, 5.24, floor=1)


@pytest.mark.parametrize("kwargs,error", [
    (dict(rate=0), "rate must be a positive"), (dict(burst=0.5), "burst must be at least 1"),
    (dict(fp=1.5), "fp must be in"), (dict(span=0), "span must be from 1"),
    (dict(max_segments=2), "max_segments must be from 3"),
])
def test_solver_wrong_arguments(kwargs, error):
    arguments = dict(fp=1e-3, span=1000, rate=1.0)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=error):
        solve_timed(arguments.pop("fp"), arguments.pop("span"), arguments.pop("rate"), **arguments)


def test_analysis_wrong_arguments():
    with pytest.raises(ValueError, match="no span"):
        timed_analysis(Config(2, 3), 1.0)
    with pytest.raises(ValueError, match="rate must be a positive"):
        timed_analysis(CONFIG, -1.0)


def test_cli_time_window(capsys):
    """``apbbf params --span --rate --tick --burst --board``: the Config, its pool and whether it fits."""
    assert cli.main(["params", "--fp", "1e-3", "--span", "1ms", "--rate", "15e6", "--tick", "1ns", "--burst", "2",
                     "--board", "ulx3s-85f", "--json"]) == 0
    import json
    data = json.loads(capsys.readouterr().out)
    assert data["span"] == 1_000_000 and data["fp"] <= 1e-3 and data["burst_keeps_span"] and data["count_floor"]
    assert data["extra_segments"] >= data["l"] - 1
    assert data["fit"]["device"] == "LFE5U-85F" and data["fit"]["fits"]
    assert cli.main(["params", "--fp", "1e-3", "--span", "1s", "--rate", "1e6", "--board", "icebreaker"]) == 1
    with pytest.raises(SystemExit):
        cli.main(["params", "--fp", "1e-3", "--span", "1ms"])            # no rate
    assert "needs --rate" in capsys.readouterr().err
    assert cli.main(["params", "--fp", "1e-4", "--span", "1ms", "--rate", "5.24e9", "--tick", "1ns", "--burst", "2",
                     "--no-floor", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not data["count_floor"] and data["extra_segments"] < data["l"] - 1
    with pytest.raises(SystemExit):
        cli.main(["params", "--fp", "1e-3", "--window", "1000", "--no-floor"])
    assert "--no-floor size a time window" in capsys.readouterr().err


def test_export_headroom(capsys):
    """``apbbf export --span`` without --extra-segments takes the default headroom (the count floor's l - 1 and
    2x the planned rate) and says so; a build given fewer is warned about, with the numbers."""
    import argparse

    from apbbf.export import _headroom
    from apbbf.model import Config
    from apbbf.model.timeanalysis import default_extra_segments
    bare = Config(3, 8, segment_blocks=64, span=2000, time_width=16)
    chosen = _headroom(bare, argparse.Namespace(extra_segments=None, burst=2.0))
    assert chosen.extra_segments == default_extra_segments(bare) >= bare.l - 1
    assert "headroom: 9 extra segments" in capsys.readouterr().err
    given = Config(**{**bare.__dict__, "extra_segments": 2})
    assert _headroom(given, argparse.Namespace(extra_segments=2, burst=2.0)) == given
    err = capsys.readouterr().err
    assert "warning: extra_segments=2 < l-1=7" in err and "last 1832 inserts" in err
    assert _headroom(Config(2, 3), argparse.Namespace(extra_segments=None, burst=2.0)) == Config(2, 3)


@pytest.mark.parametrize("fp,span,rate,burst,floor", [
    (1e-4, 1000, 6.405, 2.0, True),            # the README capture's sizing
    pytest.param(1e-2, 1000, 6.4, 4.0, True, marks=pytest.mark.slow),
    pytest.param(1e-6, 100, 50.0, 4.0, True, marks=pytest.mark.slow),
    (1e-4, 20000, 0.001, 4.0, True),
    (1e-4, 1000, 5.24, 2.0, False),
])
def test_solver_pruned_search_is_the_exhaustive_one(fp, span, rate, burst, floor):
    """The search skips a (k, l) that cannot beat the best so far: the Config chosen is exactly the one the
    exhaustive search over every (k, l) chooses, seed aside."""
    from apbbf.model.timeanalysis import _search
    exhaustive = _search(fp, span, rate, burst, block_bits=64, block_hashes=4, key_width=64, seed=7, time_width=32,
                         max_k=12, max_l=32, max_segments=32, floor=floor, prune=False)
    assert solve_timed(fp, span, rate, burst=burst, seed=7, floor=floor) == exhaustive


def test_solver_is_fast_and_remembers():
    """Sizing takes milliseconds, not seconds; a repeated question is answered from the memo (the same Config,
    with the seed asked for)."""
    import time
    start = time.perf_counter()
    first = solve_timed(1e-5, 3000, 12.5, burst=3.0, seed=1)
    assert time.perf_counter() - start < 0.5
    again = solve_timed(1e-5, 3000, 12.5, burst=3.0, seed=2)
    assert again.seed == 2 and again == dataclasses.replace(first, seed=2)
