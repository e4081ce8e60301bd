# amaranth: UnusedElaboratable=no
"""The filter with its segments behind an AXI4 master (``apbbf export --memory axi``), exported and run on Icarus
Verilog against cocotbext-axi's ``AxiRam`` with every AXI channel paused at random (the benches of
:mod:`apbbf.sim.cocotb.memory_tests`), every answer scored against the golden model; and the adapter's and the
export's parameter checks.

Each case runs in ``build/cocotb/memory-<name>/`` (results XML; after a failure, the waveform). Icarus must be
installed: without it the tests fail, they do not skip.
"""

import re
from pathlib import Path

import pytest

from apbbf.hdl.export.axi_memory import AXI4MemoryAdapter, check_axi_options, memory_bytes
from apbbf.hdl.export.axis_memory import AXIStreamMemoryAPBBF
from apbbf.model import Config
from apbbf.sim.cocotb import runner

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb"

#: cocotb's regression seed; every bench derives its own from it and the test's name (and prints it).
SEED = 20261201

COUNT = Config(2, 3, block_bits=64, segment_blocks=8, row_bits=512)
TIMED = Config(2, 3, block_bits=64, segment_blocks=8, row_bits=512, span=150, time_width=12, extra_segments=2)

EVERY_TEST = ["random_stream/pauses=None", "random_stream/pauses=every", "slow_b", "reset_under_traffic"]

#: name: (config, export options, the tests ``make test`` runs, those ``make test-slow`` runs too).
CASES = {
    # a block as wide as the bus: one beat per block
    "B64-W64": (COUNT, dict(axi_data_width=64, axi_base=0x2000),
                ["random_stream/pauses=every", "slow_b"], ["random_stream/pauses=None", "reset_under_traffic"]),
    # a bus four blocks wide: WSTRB and the read lane select; with a span (restarts clear every word)
    "B64-W256-timed": (TIMED, dict(axi_data_width=256, axi_base=0x3000), ["time_window"], EVERY_TEST),
    # a block of four beats: INCR bursts
    "B256-W64": (Config(2, 3, block_bits=256, block_hashes=4, segment_blocks=4, row_bits=2048),
                 dict(axi_data_width=64, axi_base=0x1000, depth=4), [], EVERY_TEST),
    # eight commands in flight behind the least AXI bound, the 2P reads the scan leaves unanswered
    "B64-W64-least": (COUNT, dict(axi_data_width=64, depth=8, max_outstanding=2 * COUNT.physical_segments), [],
                      ["random_stream/pauses=every", "slow_b"]),
}


def _run(name, testcase, results):
    config, options, *_ = CASES[name]
    build_dir = BUILD / f"memory-{name}"
    try:
        runner.run_memory(config, build_dir, sim="icarus", seed=SEED, waves="on-failure", testcase=testcase,
                          **options)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb on Icarus, memory case {name} (COCOTB_RANDOM_SEED={SEED}): {len(failed)} failed: "
                    + "; ".join(failed) + f"; waveform {build_dir / 'apbbf_memory_axis.fst'}", pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    return ran


PARTS = [pytest.param(name, part, marks=[pytest.mark.slow] if part == "slow" else [], id=f"{name}-{part}")
         for name, (_, _, quick, slow) in CASES.items() for part, tests in (("quick", quick), ("slow", slow)) if tests]


@pytest.mark.parametrize("name,part", PARTS)
def test_icarus_axi_ram(name, part):
    """Every test of the case's part ran and passed: answers equal the model's command for command, the counters
    too, the AXI rules held on every channel, and no byte outside the filter's region changed. ``make test`` runs
    the quick parts: every channel paused with short repeats, the slow B responses that catch a write taken for
    landed too early, and the time window with restarts on the wide bus; the rest in ``make test-slow``."""
    runner.check_simulator("icarus")
    expected = CASES[name][2 if part == "quick" else 3]
    results = BUILD / f"memory-{name}" / "results.xml"
    results.unlink(missing_ok=True)
    ran = _run(name, expected, results)
    assert sorted(ran) == sorted(expected), ran


def test_export_ports_and_header(tmp_path, capsys):
    """``apbbf export --memory axi`` writes the top with the AXI4-Stream ports and every ``m_axi_*`` signal
    cocotbext-axi binds, and a header that states the memory it needs."""
    from apbbf.export import main
    out = tmp_path / "mem.v"
    assert main(["--memory", "axi", "--k", "1", "--l", "1", "--segment-blocks", "8", "--seed", "1", "--row-bits",
                 "512", "--burst-bits", "512", "--axi-data-width", "128", "--axi-base", "0x10000", "-o", str(out)]) == 0
    assert "segments behind an AXI4 master" in capsys.readouterr().out
    text = out.read_text()
    module = text[text.index("module apbbf_memory_axis("):]
    ports = {p.strip() for p in module[module.index("(") + 1:module.index(");")].split(",")}
    axi = {f"m_axi_{channel}{name}" for channel in ("aw", "ar") for name in
           ("id", "addr", "len", "size", "burst", "lock", "cache", "prot", "qos", "valid", "ready")}
    axi |= {f"m_axi_{name}" for name in ("wdata", "wstrb", "wlast", "wvalid", "wready", "bid", "bresp", "bvalid",
                                         "bready", "rid", "rdata", "rresp", "rlast", "rvalid", "rready")}
    assert ports == axi | {"aclk", "aresetn", "s_axis_cmd_tvalid", "s_axis_cmd_tready", "s_axis_cmd_tdata",
                           "m_axis_rsp_tvalid", "m_axis_rsp_tready", "m_axis_rsp_tdata", "inserts", "shifts",
                           "axi_read_errors", "axi_write_errors"}
    assert "input [127:0] m_axi_rdata;" in text and "output [15:0] m_axi_wstrb;" in text
    config = Config(1, 1, segment_blocks=8, seed=1, row_bits=512, burst_bits=512)
    P = config.physical_segments
    text = re.sub(r"\n//\s+", " ", text[:text.index("module ")])         # the header's lines unwrapped
    assert f"bytes: {memory_bytes(config)} = {config.memory_blocks} blocks x 8" in text
    assert f"TEST_AND_INSERT {P} reads + 1 writes (worst case {P + 1}" in text
    assert f"at AXI byte addresses 0x10000 .. {0x10000 + memory_bytes(config) - 1:#x}" in text
    assert f"{config.segment_blocks} block writes of zeros per shift" in text


def test_header_rate_with_a_span():
    """With a span the header gives the block accesses per tick at the planned rate, clearing included."""
    from apbbf.hdl.export.verilog import memory_facts, memory_header
    from apbbf.model.timeanalysis import planned_rate
    facts = memory_facts(TIMED, 64)
    P, k = TIMED.physical_segments, TIMED.k
    want = planned_rate(TIMED) * (P + k) + TIMED.segment_blocks / TIMED.shift_interval
    assert facts["accesses_per_tick"] == pytest.approx(want)
    assert f"{want:.6g} block accesses per tick" in re.sub(r"\n//\s+", " ", memory_header(AXIStreamMemoryAPBBF(TIMED)))


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(data_width=48), ValueError, "data_width must be a power of two from 32 to 1024"),
    (dict(data_width=2048), ValueError, "data_width must be a power of two from 32 to 1024"),
    (dict(data_width=64.0), TypeError, "data_width must be an integer"),
    (dict(base=0x1004), ValueError, "base must be a multiple of 8 bytes"),
    (dict(base=-8), ValueError, "base must be from 0"),
    (dict(addr_width=8), ValueError, "addr_width must be from 12 to 64"),
    (dict(addr_width=12, base=0xF00), ValueError, "past addr_width=12"),
    (dict(max_outstanding=0), ValueError, "max_outstanding must be from 1 to 4096"),
])
def test_adapter_checks(kwargs, error, match):
    with pytest.raises(error, match=match):
        AXI4MemoryAdapter(COUNT, **kwargs)


def test_adapter_refuses_configs():
    with pytest.raises(ValueError, match="row layout"):
        AXI4MemoryAdapter(Config(2, 3))
    with pytest.raises(ValueError, match="block_bits must be at least 8"):
        AXI4MemoryAdapter(Config(2, 3, block_bits=4, block_hashes=2, segment_blocks=64, row_bits=64))
    big = Config(1, 1, block_bits=65536, block_hashes=4, segment_blocks=1, row_bits=1 << 18)
    with pytest.raises(ValueError, match="needs 2048 beats per burst; AXI4 allows 256"):
        check_axi_options(big, 32, 0, None)
    with pytest.raises(ValueError, match="at most 4096 bytes"):
        check_axi_options(big, 1024, 0, None)
    with pytest.raises(ValueError, match="max_outstanding must be at least the reads the memory scan leaves"):
        AXIStreamMemoryAPBBF(COUNT, depth=4, max_outstanding=2 * COUNT.physical_segments - 1)
    # the scan's true bound, not depth * P: depth 8 behind 2P
    AXIStreamMemoryAPBBF(COUNT, depth=8, max_outstanding=2 * COUNT.physical_segments)


@pytest.mark.parametrize("options,message", [
    (["--memory", "axi", "--axi-data-width", "48"], "data_width must be a power of two"),
    (["--memory", "axi", "--row-bits", "100"], "row_bits must be 0"),
    (["--memory", "axi", "--depth", "0"], "depth must be from 1 to 64"),
    (["--memory", "axi", "--axi-base", "0x3"], "base must be a multiple of 8 bytes"),
    (["--memory", "axi", "--lanes", "2"], "--lanes not with --memory axi"),
    (["--memory", "axi", "--dedup"], "config must have a span"),
    (["--axi-data-width", "64"], "are options of --memory axi"),
])
def test_export_memory_refused(options, message, tmp_path, capsys):
    from apbbf.export import main
    out = tmp_path / "refused.v"
    assert main(["--k", "2", "--l", "3", "--segment-blocks", "8", "--seed", "1", *options, "-o", str(out)]) == 1
    assert message in capsys.readouterr().err
    assert not out.exists()
