"""The row layout's analysis (model/analysis.py, model/timeanalysis.py), its sizing, its memory facts
(model/memory.py), and its Config through the command line."""

import itertools
import math
import shlex
from dataclasses import replace

import numpy as np
import pytest

from apbbf import cli
from apbbf.dedup import _config_text, export_command, parse_config
from apbbf.flows.board import parse_config as board_parse_config
from apbbf.model import analysis, memory
from apbbf.model.config import Config
from apbbf.model.filters import APBBF
from apbbf.model.solver import describe, solve
from apbbf.model.timeanalysis import planned_rate, solve_timed, timed_analysis


# The prediction -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k, l, blocks", [(1, 3, 64), (3, 8, 64), (4, 6, 32), (6, 5, 16)])
def test_one_row_is_the_on_chip_prediction(k, l, blocks):
    """A row layout with one row (a row holds the whole segment) predicts what the on-chip analysis does, to
    floating-point precision, by the row recursion (its row loads are then the generations themselves)."""
    on_chip = Config(k, l, segment_blocks=blocks)
    one_row = replace(on_chip, row_bits=1 << (on_chip.physical_segments * 64 * blocks - 1).bit_length())
    assert one_row.rows == 1 and one_row.row_blocks == blocks
    assert analysis.analyze_config(one_row)["fp"] == pytest.approx(analysis.analyze_config(on_chip)["fp"],
                                                                   rel=1e-12, abs=0)
    timed = replace(on_chip, span=20_000, extra_segments=l)
    timed_row = replace(timed, row_bits=1 << (timed.physical_segments * 64 * blocks - 1).bit_length())
    assert timed_row.rows == 1
    for ratio in (0.3, 1.0, 5.0):
        rate = ratio * planned_rate(timed)
        expected, got = timed_analysis(timed, rate), timed_analysis(timed_row, rate)
        for key in ("fp", "fp_mean"):          # abs: the alternating sums of ρ, terms of order 1, cancel
            assert got[key] == pytest.approx(expected[key], rel=1e-12, abs=1e-24), (ratio, key)


def test_one_row_by_hand():
    """rows = 1: the recursion over the generations' fixed counts is F over the Poisson block model."""
    B, b, blocks = 64, 4, 256
    generations = [100.0, 300.0, 300.0, 300.0, 300.0, 300.0]
    rho = [analysis.block_match_probability(min(i + 1, 3) * 300.0 / blocks - (200.0 / blocks if i < 3 else 0),
                                            B, b) for i in range(6)]
    expected = analysis.false_positive_rate(3, 3, rho)
    got = analysis.row_false_positive_rate(3, generations, 1, blocks, B, b)
    assert got == pytest.approx(expected, rel=1e-12)


def test_conditional_sum_by_hand():
    """k = 2, two segments, one key in each of two generations, 2 rows of one block, B = 4, b = 2: each key is
    in the query's row with probability 1/2; segment 0 holds generation 0, segment 1 generations 0 and 1. A block
    of N keys matches with (1 - (1/2)^N)^2: ρ(0) = 0, ρ(1) = 1/4, ρ(2) = 9/16, so
    fp = 1/4·ρ(1)ρ(1) + 1/4·ρ(1)ρ(2) = 13/256 (the segments taken as independent: 1/8 · 17/64 = 17/512)."""
    got = analysis.row_false_positive_rate(2, [1, 1], 2, 1, 4, 2)
    assert got == pytest.approx(13 / 256, rel=1e-12)
    # three keys per generation, one segment: E[ρ(X)] with X ~ Binomial(3, 1/2)
    expected = sum(math.comb(3, x) / 8 * (1 - 0.5 ** x) ** 2 for x in range(4))
    assert analysis.row_false_positive_rate(1, [3], 2, 1, 4, 2) == pytest.approx(expected, rel=1e-12)


def _brute_force(k, generations, rows, row_blocks, B, b):
    """Every combination of the generations' row loads, F of paper 000 §5.3 on each."""
    K = len(generations)
    laws = [[(x, math.comb(g, x) * (1 / rows) ** x * (1 - 1 / rows) ** (g - x)) for x in range(g + 1)]
            for g in generations]
    total = 0.0
    for combo in itertools.product(*laws):
        loads = [sum(x for x, _ in combo[max(0, i - k + 1):i + 1]) for i in range(K)]
        rho = [analysis.row_match_probability(n, row_blocks, B, b) for n in loads]
        fp = analysis.false_positive_rate(k, K - k, rho) if K > k else math.prod(rho)
        total += math.prod(w for _, w in combo) * fp
    return total


@pytest.mark.parametrize("k, generations", [(2, [3, 4, 4, 4, 4]), (3, [2, 4, 4, 4, 4])])
def test_recursion_equals_the_sum_over_every_row_load(k, generations):
    """The forward recursion equals the sum over every combination of row loads: exactly with as many nodes as
    support points, and to 1e-6 with the default Gauss nodes."""
    exact = _brute_force(k, generations, 3, 2, 16, 2)
    assert analysis.row_false_positive_rate(k, generations, 3, 2, 16, 2, nodes=8) == pytest.approx(exact,
                                                                                                  rel=1e-12)
    assert analysis.row_false_positive_rate(k, generations, 3, 2, 16, 2) == pytest.approx(exact, rel=1e-6)


def test_rows_raise_the_fp():
    """Few blocks per row: the loads of a query's row vary and neighbouring segments share them, so the fp is
    above the segments-independent one (by about 24 % at 4 blocks per row, k = 3, l = 4), and falls back towards
    it as rows widen."""
    base = Config(3, 4, segment_blocks=256)
    fps = [analysis.analyze_config(replace(base, row_bits=bits)) for bits in (2048, 4096, 16384)]
    independent = analysis.analyze_config(base)["fp"]
    assert all(f["fp_independent"] == independent for f in fps)
    assert fps[0]["fp"] / independent == pytest.approx(1.237, abs=0.01)
    assert fps[0]["fp"] > fps[1]["fp"] > fps[2]["fp"] > independent


def test_gauss_nodes_converge():
    """The default nodes against more: the fp of a row Config to 1e-6 (k = 5; k = 8 to 1e-4 with 4 nodes)."""
    for k, l in ((5, 6), (8, 8)):
        c = Config(k, l, segment_blocks=1024, row_bits=8192)
        generations = [c.generation] * c.segments
        default = analysis.row_false_positive_rate(k, generations, c.rows, c.row_blocks, 64, 4)
        finer = analysis.row_false_positive_rate(k, generations, c.rows, c.row_blocks, 64, 4,
                                                 nodes=analysis.row_nodes(k) + 1)
        assert default == pytest.approx(finer, rel=1e-6 if k == 5 else 1e-4)


def test_row_arguments_are_checked():
    with pytest.raises(ValueError, match="rows"):
        analysis.row_false_positive_rate(2, [1, 1], 0, 1, 4, 2)
    with pytest.raises(ValueError, match=r"generations\[1\]"):
        analysis.row_false_positive_rate(2, [1, -1], 2, 1, 4, 2)
    with pytest.raises(ValueError, match="law"):
        analysis.row_match_probability(3.0, 4, 64, 4, law="normal")
    with pytest.raises(ValueError, match="keys"):
        analysis.row_match_probability(-1.0, 4, 64, 4)
    with pytest.raises(TypeError, match="rows"):
        timed_analysis(Config(3, 8, span=1000), 0.1, rows=1)


# Sizing ---------------------------------------------------------------------------------------------------------

SEED = 20261201


def test_count_solver_row_config_meets_its_target():
    """The count window's solver with a row layout: the fp by the row analysis is within the target, and a
    short model measurement (seed printed) agrees with it."""
    target = 1e-2
    c = solve(target, 4000, row_bits=2048)
    assert c.row_bits == 2048 and c.rows > 1 and c.window >= 4000
    predicted = analysis.config_false_positive_rate(c)
    assert analysis.analyze_config(c)["fp_independent"] < predicted <= target
    assert describe(c)["fp"] == predicted
    print(f"seed {SEED}: {c}")
    config = replace(c, seed=SEED)
    rng = np.random.default_rng(SEED)
    filt = APBBF(config)
    hits = probes = 0
    g = config.generation
    filt.insert_many(rng.integers(0, 2 ** 62, (config.segments - 1) * g + g - 1, dtype=np.uint64) * 2 + 1)
    for _ in range(24):
        absent = rng.integers(0, 2 ** 62, 5000, dtype=np.uint64) * 2
        hits += int(np.sum(filt.query_many(absent)))
        probes += len(absent)
        filt.insert_many(rng.integers(0, 2 ** 62, g, dtype=np.uint64) * 2 + 1)
    measured = hits / probes
    sigma = math.sqrt(predicted / probes)
    print(f"measured {measured:.5f} ({hits} of {probes}), predicted {predicted:.5f}, target {target}")
    assert abs(measured - predicted) <= max(0.1 * predicted, 3 * sigma)


def test_time_solver_row_config_meets_its_target():
    """solve_timed with a row layout: the row analysis's fp at the rate is within the target, and the same
    search without the rows' variation would have taken less (the rows cost something)."""
    span, rate, target = 20_000, 0.5, 1e-3
    c = solve_timed(target, span, rate, row_bits=4096, max_k=4, max_l=12)
    assert c.row_bits == 4096 and c.rows > 1
    assert timed_analysis(c, rate)["fp"] <= target
    assert timed_analysis(c, rate, rows=False)["fp"] < timed_analysis(c, rate)["fp"]
    on_chip = solve_timed(target, span, rate, max_k=4, max_l=12)
    assert on_chip.hardware_memory_bits <= c.hardware_memory_bits


def test_params_row_bits_json(capsys):
    assert cli.main(["params", "--fp", "1e-3", "--span", "20ms", "--rate", "5e5", "--tick", "1us",
                     "--row-bits", "4096", "--burst-bits", "32", "--json"]) == 0
    import json
    out = json.loads(capsys.readouterr().out)
    c = Config(out["k"], out["l"], segment_blocks=out["segment_blocks"], span=out["span"],
               extra_segments=out["extra_segments"], row_bits=4096, burst_bits=32)
    assert (out["row_bits"], out["burst_bits"], out["rows"], out["row_blocks"]) == (4096, 32, c.rows,
                                                                                      c.row_blocks)
    assert out["fp"] == timed_analysis(c, 0.5)["fp"] <= 1e-3
    assert out["memory_bytes"] == c.rows * 4096 // 8 and out["memory_bursts_per_block"] == 2


def test_params_rejects_bad_row_bits():
    with pytest.raises(ValueError, match="row_bits"):
        solve_timed(1e-3, 20_000, 0.5, row_bits=100)
    with pytest.raises(ValueError, match="burst_bits"):
        solve(1e-3, 1000, burst_bits=64)


# The command line -----------------------------------------------------------------------------------------------

ROW_CONFIG = Config(3, 8, segment_blocks=4096, seed=0x5EED, span=250_000, extra_segments=8, row_bits=8192,
                    burst_bits=32)


def test_config_text_round_trips():
    c = ROW_CONFIG
    fields = {name: getattr(c, name) for name in ("k", "l", "block_bits", "block_hashes", "segment_blocks",
                                                  "seed", "span", "time_width", "extra_segments", "row_bits",
                                                  "burst_bits")}
    text = _config_text(fields)
    assert "row_bits=8192, burst_bits=32" in text
    assert parse_config(text) == c
    on_chip = replace(c, row_bits=0, burst_bits=0)
    fields.update(row_bits=0, burst_bits=0)
    assert "row_bits" not in _config_text(fields) and parse_config(_config_text(fields)) == on_chip


def test_export_command_round_trips():
    words = shlex.split(export_command(ROW_CONFIG, "l3l4", "drop"))
    assert words[words.index("--row-bits") + 1] == "8192" and words[words.index("--burst-bits") + 1] == "32"
    args = cli.build_parser().parse_args(words[1:])
    assert (args.row_bits, args.burst_bits) == (8192, 32)
    assert "--row-bits" not in export_command(replace(ROW_CONFIG, row_bits=0, burst_bits=0), "l3l4", "drop")


def test_board_config_items_take_row_bits():
    assert board_parse_config("row_bits=8192,burst_bits=32", replace(ROW_CONFIG, row_bits=0, burst_bits=0)) \
        == ROW_CONFIG


# Memory facts ---------------------------------------------------------------------------------------------------

def test_memory_facts_by_hand():
    """Config(3, 8, 4096 blocks, span, 8 extra, 8192-bit rows, 32-bit bursts): 20 physical segments of 64-bit
    blocks, 128 blocks a row, so 4 blocks per segment per row and 1024 rows: 1024 · 8192 / 8 = 1 MiB. A
    test-and-insert reads 11 blocks and writes 3: 14 accesses, 2 bursts each; an insert reads its 3 and writes
    them back. A shift clears 4096 blocks in 1024
    activations. At 1e6 commands per second and 1 us ticks: g = 14663, I = 31251, so shifts by count (1e6/14663
    = 68.20 per second) beat those by time (32.0): 14e6 + 68.20 · 4096 accesses per second."""
    c = ROW_CONFIG
    assert (c.physical_segments, c.row_blocks, c.rows, c.generation, c.shift_interval) == (20, 4, 1024, 14663,
                                                                                           31251)
    assert memory.memory_bytes(c) == 1 << 20
    assert memory.command_accesses(c, "query") == {"reads": 11, "writes": 0, "accesses": 11, "bursts": 22,
                                                   "activations": 1}
    assert memory.command_accesses(c, "insert") == {"reads": 3, "writes": 3, "accesses": 6, "bursts": 12,
                                                    "activations": 1}          # read, merge, write back
    assert memory.command_accesses(c, "test_and_insert", live=19)["accesses"] == 22
    assert memory.clearing_accesses(c) == {"writes": 4096, "bursts": 8192, "activations": 1024}
    shifts = 1e6 / 14663
    assert memory.shifts_per_second(c, 1e6, 1e-6) == pytest.approx(shifts)
    assert memory.shifts_per_second(c, 1e5, 1e-6) == pytest.approx(1 / 31251e-6)     # by time
    rate = memory.access_rate(c, 1e6, tick=1e-6)
    assert rate["accesses"] == pytest.approx(14e6 + shifts * 4096)
    assert rate["bursts"] == pytest.approx(28e6 + shifts * 8192)
    assert rate["activations"] == pytest.approx(1e6 + shifts * 1024)
    assert memory.access_rate(c, 1e6, op="insert", tick=1e-6)["accesses"] == pytest.approx(6e6 + shifts * 4096)
    facts = memory.memory_facts(c, tick=1e-6)                 # the planned rate, g per shift interval
    assert facts["clearing_at_reset"] == 1024 * 128           # every word of the 1024 rows of 128 words
    assert facts["rate"] == pytest.approx(14663 / 31251e-6)
    assert facts["per_second"]["shifts"] == pytest.approx(1 / 31251e-6)


def test_memory_arguments_are_checked():
    with pytest.raises(ValueError, match="row layout"):
        memory.memory_bytes(Config(3, 8))
    with pytest.raises(ValueError, match="op"):
        memory.command_accesses(ROW_CONFIG, "delete")
    with pytest.raises(ValueError, match="live"):
        memory.command_accesses(ROW_CONFIG, live=20)
    with pytest.raises(ValueError, match="tick"):
        memory.shifts_per_second(ROW_CONFIG, 1e6)
    with pytest.raises(ValueError, match="rate"):
        memory.access_rate(ROW_CONFIG, 0.0, tick=1e-6)


def test_time_window_row_measurement_meets_its_prediction():
    """The bulk filter in the row layout (rows of 4 blocks) at the planned rate against the row analysis, to
    ±10 % with about 1,500 false positives (the segments-independent prediction is 19 % lower); seed printed."""
    from apbbf.flows.timewindow import ROW_CONFIGS, measure_rows
    r = measure_rows(ROW_CONFIGS[0], 1.0, seed=SEED, hits=1500)
    print(f"seed {SEED}: {r['hits']} of {r['keys']} keys, measured {r['measured']:.5f}, predicted "
          f"{r['predicted']:.5f}, Wilson {r['interval']}")
    assert r["expected_hits"] > 1000 and abs(r["ratio"] - 1) <= 0.1 and r["ok"]
