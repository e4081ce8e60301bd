"""The exported lanes filter (``apbbf_lanes_axis``) on Icarus Verilog, driven by the cocotb benches of
:mod:`apbbf.sim.cocotb.lanes_tests` with cocotbext-axi beats and scored slot by slot against the model; and
``apbbf export --lanes``.

Each case is exported, compiled and run in ``build/cocotb-lanes/<name>/``, which keeps the results XML and the
waveform (``apbbf_lanes_axis.fst``). Every case must run exactly :data:`EXPECTED_TESTS` and pass them all.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from apbbf.model import Config
from apbbf.sim.cocotb import runner

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb-lanes"
SEED = 20261125

CASES = {
    # two lanes, two slots, a count window that shifts many times in each lane
    "l2-count": (Config(2, 3, segment_blocks=4, seed=3), 2, {}),
    # four lanes behind two slots (more banks than slots), a time window whose 12-bit times wrap
    "l4s2-timed": (Config(2, 3, segment_blocks=4, span=120, time_width=12, extra_segments=2, seed=9), 4,
                   {"slots": 2}),
}
#: Three of the benches of these cases (``<name>-quick``), a short check of the export and wrapper; every case whole.
#: All in ``make test-slow``: ``make test`` checks the lanes in Amaranth's simulator (``tests/test_lanes.py``) and
#: the export command below.
QUICK = {"l2-count": ("random_beats_test/idle_inserter=pause30x3/backpressure_inserter=pause40x3", "one_lane_beats",
                      "reset_under_traffic")}

EXPECTED_TESTS = frozenset([
    "random_beats_test/idle_inserter=None/backpressure_inserter=None",
    "random_beats_test/idle_inserter=None/backpressure_inserter=pause40x3",
    "random_beats_test/idle_inserter=pause30x3/backpressure_inserter=None",
    "random_beats_test/idle_inserter=pause30x3/backpressure_inserter=pause40x3",
    "one_lane_beats", "reset_under_traffic",
])


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) for name in CASES]
                         + [pytest.param(f"{name}-quick", marks=pytest.mark.slow) for name in QUICK])
def test_icarus(name):
    runner.check_simulator("icarus")
    case = name.removesuffix("-quick")
    quick = QUICK[case] if name.endswith("-quick") else None
    config, lanes, options = CASES[case]
    build_dir = BUILD / name
    results = build_dir / "results.xml"
    try:
        runner.run_lanes(config, lanes, build_dir, sim="icarus", seed=SEED, waves=True, testcase=quick, **options)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb lanes on Icarus, case {name} (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed)
                    + f"; waveform {build_dir / 'apbbf_lanes_axis.fst'}", pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    expected = set(quick) if quick else EXPECTED_TESTS
    assert set(ran) == expected and len(ran) == len(expected), sorted(ran)


def test_export_command(tmp_path):
    """``apbbf export --lanes 2`` writes the lanes filter with AXI4-Stream ports and a header that states the
    window a user gets; --lanes with --dedup is refused."""
    out = tmp_path / "lanes.v"
    base = [sys.executable, "-W", "error", "-m", "apbbf.export", "--k", "2", "--l", "3", "--segment-blocks", "4",
            "--seed", "5", "-o", str(out)]
    result = subprocess.run(base + ["--lanes", "2"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.startswith("// apbbf_lanes_axis: Age-Partitioned Blocked Bloom Filter (apbbf), 2 lanes, 2 commands")
    assert "each lane keeps the last l*g = 63 inserts of its own keys" in text
    header = text[text.index("module apbbf_lanes_axis("):]
    header = header[:header.index(");")]
    ports = {p.strip() for p in header[header.index("(") + 1:].split(",")}
    assert ports == {"aclk", "aresetn", *(f"s_axis_cmd_t{s}" for s in ("valid", "ready", "data", "keep")),
                     *(f"m_axis_rsp_t{s}" for s in ("valid", "ready", "data", "keep")), "inserts", "shifts"}
    assert "input [143:0] s_axis_cmd_tdata;" in text and "output [63:0] inserts;" in text
    refused = subprocess.run(base + ["--lanes", "2", "--dedup", "--span", "100"], capture_output=True, text=True,
                             timeout=300)
    assert refused.returncode == 1 and "not with --dedup" in refused.stderr
