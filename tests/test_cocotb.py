"""The exported Verilog core on Icarus Verilog, driven by the cocotb benches of :mod:`apbbf.sim.cocotb`.

Each (config, scan) case is exported (:func:`apbbf.export.generate_verilog`), compiled and run in
``build/cocotb/<name>-<scan>/``, which keeps the results XML and, after a failure, the waveform
(``apbbf_axis.fst``: a failed case runs again with waves on; the simulator's log is in pytest's captured
output). Generations are short (few blocks per segment) so that every stream crosses 2(k+l) generations in a few thousand cycles. Every case must run exactly the cocotb tests
of :data:`EXPECTED_TESTS` (each idle/backpressure combination its own test) and pass them all.

Icarus Verilog must be installed (``make setup`` installs it as root); if it is missing the tests fail, they
do not skip.
"""

from pathlib import Path

import pytest

from apbbf.model import Config
from apbbf.sim.cocotb import runner

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb"

CONFIGS = {
    "k2l3": Config(2, 3, segment_blocks=4),
    "k3l8": Config(3, 8, segment_blocks=2),
    "B256-S1": Config(2, 3, block_bits=256, block_hashes=4, segment_blocks=1),
    # The basic APBF (b = 1), a key that is not a whole number of bytes (tdata padding) and a 2-stage hash.
    "apbf-key100": Config(2, 3, block_bits=16, block_hashes=1, segment_blocks=4, key_width=100, seed=7),
    # A time-bounded window with a pool of two extra segments and 12-bit times (its streams wrap).
    "timed-k2l3": Config(2, 3, segment_blocks=4, span=120, time_width=12, extra_segments=2),
}

#: cocotb's regression seed; every bench derives its own from it and the test's name.
SEED = 20261121


def _combinations(test: str, idle: list[str], backpressure: list[str]) -> list[str]:
    return [f"{test}/idle_inserter={i}/backpressure_inserter={b}" for i in idle for b in backpressure]


#: Every cocotb test that must run (``soak`` is skipped outside ``apbbf.sim.cocotb.runner.soak``), as cocotb names them:
#: each idle/backpressure combination of a test is its own test (``cocotb.parametrize``). If a parametrization
#: silently generated fewer tests, the names would not match.
EXPECTED_TESTS = frozenset([
    "random_stream/idle_inserter=None/backpressure_inserter=None",
    "random_stream/idle_inserter=pause30x3/backpressure_inserter=pause40x3",
    "window_edges",
    "shift_on_test_and_insert",
    "first_insert_shifts",
    *_combinations("back_to_back_same_key", ["None", "pause60"], ["None", "pause60"]),
    *_combinations("bursts", ["None", "pause70x8"], ["None", "pause80x8"]),
    "reset_under_traffic/idle_inserter=None/backpressure_inserter=None",
    "reset_under_traffic/idle_inserter=pause30x2/backpressure_inserter=pause50x2",
    "reserved_op",
])
#: The tests that run only for a Config with a span.
TIMED_TESTS = frozenset([
    *_combinations("time_window", ["None", "pause30x3"], ["None", "pause40x3"]),
    "time_edges",
    "count_floor_trickle",
])


# (config, scan): every config on the FSM scan, and the parallel scan on three of them.
CASES = [(name, "fsm") for name in CONFIGS] + [(name, "parallel") for name in ("k3l8", "B256-S1", "apbf-key100",
                                                                           "timed-k2l3")]


#: Cases outside ``make test`` (``make test-slow`` runs them): the others cover each scan, a count and a time
#: window, a folded key and the basic APBF between them (the FSM's benches on the time-bounded config, which runs
#: every count-window bench too; the time-bounded parallel core in test_icarus_pace_two at pace 2).
SLOW = {("k2l3", "fsm"), ("k3l8", "fsm"), ("B256-S1", "fsm"), ("apbf-key100", "fsm"), ("k3l8", "parallel"),
        ("B256-S1", "parallel"), ("timed-k2l3", "parallel")}

#: The idle/backpressure pairings with one inserter and not the other. On the cases of ``make test`` they run in
#: ``make test-slow`` only (test_icarus_mixed_pauses); ``make test`` still runs every test without either inserter
#: and with both, which reaches the stalls of each side and their overlap.
MIXED = frozenset(name for name in EXPECTED_TESTS | TIMED_TESTS
                  if ("idle_inserter=None" in name) != ("backpressure_inserter=None" in name))

#: What ``make test`` runs of a case outside :data:`SLOW`: every test but the :data:`MIXED` pairings, except on the
#: time-bounded FSM case, which runs the time window's tests only, its random stream with both inserters (it takes
#: every op, with idle gaps and backpressure; the count-window benches run on the exported parallel scan in
#: ``make test``, and on this case in ``make test-slow``, test_icarus_mixed_pauses).
QUICK_TESTS = {("timed-k2l3", "fsm"): TIMED_TESTS - MIXED
               - {"time_window/idle_inserter=None/backpressure_inserter=None"}}


def _quick(name, scan, every):
    return QUICK_TESTS.get((name, scan), every - MIXED)


def _run(name, scan, testcase, results, pace=1):
    """Run ``testcase`` (cocotb test names) of case ``name``/``scan`` into ``results``; a failed test fails."""
    build_dir = BUILD / (f"{name}-{scan}" + (f"-pace{pace}" if pace != 1 else ""))
    try:
        runner.run(CONFIGS[name], build_dir, sim="icarus", seed=SEED, waves="on-failure", results_xml=results,
                   scan=scan, testcase=testcase, pace=pace)
    except SystemExit as exit_:                    # cocotb's runner exits on a failed test under pytest
        failed = read_results(results)[1] if results.exists() else [
            f"no results file (simulator exit {exit_.code}; did {runner.TEST_MODULE} fail to import? see the "
            "captured output)"]
        pytest.fail(f"cocotb on Icarus, config {name}, scan {scan} (COCOTB_RANDOM_SEED={SEED}): "
                    f"{len(failed)} failed: " + "; ".join(failed or [f"simulator exit {exit_.code}"])
                    + f"; waveform {runner.waves_file('icarus', build_dir)}", pytrace=False)
    failed = read_results(results)[1]
    assert not failed, failed
    return read_results(results)[0]


@pytest.mark.parametrize("name,scan", [pytest.param(name, scan, marks=pytest.mark.slow) if (name, scan) in SLOW
                                       else (name, scan) for name, scan in CASES],
                         ids=[f"{name}-{scan}" for name, scan in CASES])
def test_icarus(name, scan):
    """Random streams, directed edges and reset under traffic (the cocotb tests of
    :mod:`apbbf.sim.cocotb.tests`, each idle/backpressure combination its own test), every response scored in
    order against the golden model; every one of :data:`EXPECTED_TESTS` ran and passed (on the cases of
    ``make test`` those of :func:`_quick`)."""
    runner.check_simulator("icarus")               # a missing simulator fails here, with how to install it
    every = EXPECTED_TESTS | (TIMED_TESTS if CONFIGS[name].timed else frozenset())
    assert len(every) == (22 if CONFIGS[name].timed else 16), sorted(every)
    expected = every if (name, scan) in SLOW else _quick(name, scan, every)
    ran = _run(name, scan, None if expected == every else sorted(expected),
               BUILD / f"{name}-{scan}" / "results.xml")
    assert set(ran) == expected, (f"missing {sorted(expected - set(ran))}, "
                                  f"unexpected {sorted(set(ran) - expected)}")
    assert len(ran) == len(expected), sorted(ran)


#: The tests of the pace-2 case in ``make test`` (every test in ``make test-slow``).
PACE_TWO_QUICK = frozenset(["random_stream/idle_inserter=pause30x3/backpressure_inserter=pause40x3", "time_edges",
                            "reset_under_traffic/idle_inserter=pause30x2/backpressure_inserter=pause50x2"])


@pytest.mark.parametrize("quick", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["quick", "all"])
def test_icarus_pace_two(quick):
    """The exported time-bounded parallel core at ``pace=2`` (``apbbf export --scan parallel --pace 2``): the same
    benches, every answer the model's (they are cycle-independent); its header says the pace and the latency."""
    runner.check_simulator("icarus")
    every = EXPECTED_TESTS | TIMED_TESTS
    expected = PACE_TWO_QUICK if quick else every
    assert expected <= every
    ran = _run("timed-k2l3", "parallel", sorted(expected) if quick else None,
               BUILD / "timed-k2l3-parallel-pace2" / ("results-quick.xml" if quick else "results.xml"), pace=2)
    assert set(ran) == expected and len(ran) == len(expected), sorted(ran)
    text = (BUILD / "timed-k2l3-parallel-pace2" / f"{runner.TOPLEVEL}.v").read_text()
    from apbbf.hdl.core.scan_parallel import response_latency
    assert "--scan parallel --pace 2)" in text
    assert (f"each response comes {response_latency(CONFIGS['timed-k2l3'], 2)}\n//   cycles after its command is "
            "accepted") in text


@pytest.mark.parametrize("options", [[], ["--scan", "fsm"], ["--scan", "parallel", "--dedup"],
                                     ["--scan", "parallel", "--lanes", "2"]], ids=["default", "fsm", "dedup", "lanes"])
def test_export_pace_two_refused(options, tmp_path, capsys):
    """``apbbf export --pace 2`` is refused, with a message, but for the bare filter's parallel scan."""
    from apbbf.export import main
    out = tmp_path / "refused.v"
    assert main(["--k", "2", "--l", "3", "--span", "100", "--seed", "1", "--pace", "2", *options, "-o", str(out)]) == 1
    assert "--pace 2 is an option of the bare filter's parallel scan" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(SystemExit):
        main(["--k", "2", "--l", "3", "--scan", "parallel", "--pace", "4", "-o", str(out)])


@pytest.mark.slow
@pytest.mark.parametrize("name,scan", [case for case in CASES if case not in SLOW],
                         ids=[f"{name}-{scan}" for name, scan in CASES if (name, scan) not in SLOW])
def test_icarus_mixed_pauses(name, scan):
    """The tests of the cases that ``make test`` runs in part (:func:`_quick`): the rest of them."""
    runner.check_simulator("icarus")
    every = EXPECTED_TESTS | (TIMED_TESTS if CONFIGS[name].timed else frozenset())
    expected = every - _quick(name, scan, every)
    ran = _run(name, scan, sorted(expected), BUILD / f"{name}-{scan}" / "results-mixed.xml")
    assert set(ran) == expected and len(ran) == len(expected), sorted(ran)


def test_export_ports(tmp_path):
    """The exported top's ports carry exactly the AXI4-Stream names, with byte-aligned tdata."""
    from apbbf.export import export_verilog
    path = export_verilog(CONFIGS["apbf-key100"], tmp_path / "apbbf.v")
    text = path.read_text()
    assert text.startswith("// apbbf_axis:")
    assert "window w = l*g" in text and "s_axis_cmd_tdata[107:8]  key" in text
    header = text[text.index("module apbbf_axis("):]
    header = header[:header.index(");")]
    ports = {p.strip() for p in header[header.index("(") + 1:].split(",")}
    assert ports == {"aclk", "aresetn", "s_axis_cmd_tvalid", "s_axis_cmd_tready", "s_axis_cmd_tdata",
                     "m_axis_rsp_tvalid", "m_axis_rsp_tready", "m_axis_rsp_tdata", "inserts", "shifts"}
    assert "input [111:0] s_axis_cmd_tdata;" in text and "output [7:0] m_axis_rsp_tdata;" in text
    assert "always @*" not in text             # no time-zero X under SystemVerilog semantics


def test_failure_leaves_a_waveform():
    """A failing bench (the testbench's model built with another hash seed than the exported design) fails the
    run, and the failure's waveform is left behind by the second run with waves on."""
    from apbbf.sim.cocotb.testbench import CONFIG_ENV, config_to_env
    runner.check_simulator("icarus")
    build_dir = BUILD / "failure-waves"
    wrong = {CONFIG_ENV: config_to_env(Config(2, 3, segment_blocks=4, seed=99))}
    runner.waves_file("icarus", build_dir).unlink(missing_ok=True)
    with pytest.raises(SystemExit):
        runner.run(Config(2, 3, segment_blocks=4, seed=1), build_dir, sim="icarus", seed=SEED,
                   testcase="first_insert_shifts", waves="on-failure", extra_env=wrong)
    assert read_results(build_dir / "results.xml")[1]
    assert runner.waves_file("icarus", build_dir).stat().st_size > 0


@pytest.mark.slow
@pytest.mark.parametrize("scan", ["fsm", "parallel"])
def test_icarus_count_floor(scan):
    """The overload reproducer's pattern (16·g keys at one time, then one key per shift interval) on the exported
    Verilog, k=2 l=8 with 2 extra segments: after each of the 7 trickles the last l·g inserts are all found. In
    ``make test-slow`` only: ``make test`` runs the same bench on the exported FSM scan in test_icarus's timed case
    (k=2 l=3), and the pattern on both scans in Amaranth's simulator (tests/test_core_timed.py)."""
    runner.check_simulator("icarus")
    config = Config(2, 8, segment_blocks=2, span=400, time_width=12, extra_segments=2)
    build_dir = BUILD / f"trickle-{scan}"
    results = build_dir / "results.xml"
    try:
        runner.run(config, build_dir, sim="icarus", seed=SEED, waves="on-failure", results_xml=results, scan=scan,
                   testcase="count_floor_trickle")
    except SystemExit as exit_:
        pytest.fail(f"cocotb on Icarus, trickle, scan {scan}: "
                    + "; ".join(read_results(results)[1] if results.exists() else [f"simulator exit {exit_.code}"]),
                    pytrace=False)
    assert not read_results(results)[1]
    assert read_results(results)[0] == ["count_floor_trickle"]
