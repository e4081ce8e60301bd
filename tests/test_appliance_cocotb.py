# amaranth: UnusedElaboratable=no
"""The exported appliance on Icarus Verilog with cocotbext-eth's RGMII sources and sinks on both ports at
1000 Mb/s (:mod:`apbbf.sim.cocotb.appliance_tests`): port 1's frames scored against apbbf.model.dedup, the reverse
direction, line rate both ways across unlocked clocks, the UART read during traffic. Each case is exported,
compiled and run in ``build/cocotb-appliance/<name>/``."""

import time
from pathlib import Path

import pytest

from apbbf.model import Config
from apbbf.sim.cocotb import appliance_runner, runner

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb-appliance"
SEED = 20261125
EXPECTED_TESTS = frozenset(["dedup_port0_to_port1", "reverse_port1_to_port0", "line_rate_both_ways",
                            "run_time_changes", "uart_read_action"])
#: A window of 12 us (a pause of 18 us puts a copy outside it and past its expiry bound), small segments: short
#: simulations.
CONFIG = Config(k=2, l=3, segment_blocks=16, span=12, extra_segments=2, seed=0x5EED1E55)

CASES = {
    # each bench alone, short (Icarus runs the de-duplicator at about 1 us of traffic per second); make test runs
    # the first, make test-slow all
    "drop-dedup": dict(action="drop", frames=16, uart=False, testcase="dedup_port0_to_port1"),
    "drop-reverse": dict(action="drop", reverse_frames=10, testcase="reverse_port1_to_port0"),
    "drop-line-rate": dict(action="drop", line_rate_frames=12, testcase="line_rate_both_ways"),
    # the action changed, the filter cleared and the window changed over the UART during traffic
    "drop-changes": dict(action="drop", change_frames=40, runtime_window=True, testcase="run_time_changes"),
    # make test-slow: long runs with the UART read during traffic, and the count action
    "drop-long": dict(action="drop", frames=200, reverse_frames=60, line_rate_frames=200),
    "count": dict(action="count", frames=60, reverse_frames=10, line_rate_frames=30),
}
SLOW = {"drop-long", "count", "drop-reverse", "drop-line-rate", "drop-changes"}
#: The filter in the SDR SDRAM (a LiteDRAM core at 50 MHz, the chip model on its pins): 32-bit blocks in rows of
#: 1,024 bits, a region of 512 words (a retired segment's clearing takes a quarter of the memory's cycles at this
#: 12 us window; at 250 ms, 2 %).
DRAM_CONFIG = Config(k=2, l=3, block_bits=32, segment_blocks=64, span=12, extra_segments=2, row_bits=1024,
                     seed=0x5EED1E55)
DRAM_CASES = {
    # make test: the SDRAM's power-up wait shortened to 20 us (the gateware's and the chip model's alike; the data
    # sheet's 200 us were most of the case's simulated time); the dedup bench, then the window bench of
    # tests/test_appliance_dram_window.py short: 1.3 windows of minimum-size bursts at line rate, copies at 0.5 to
    # 0.99 of the window and past it, the ports' clocks off
    "dram-dedup": dict(action="drop", frames=16, uart=False, testcase=["dedup_port0_to_port1", "dram_window"],
                       power_up_us=20.0, window_copies=True, windows=1.3, burst=24, pause_us=1, copy_every=4,
                       copy_ages=[0.5, 0.7, 0.9, 0.99, 1.2], rx_ppm=[100, -100], tx_ppm=-100, reverse=True),
    # make test-slow: the data sheet's power-up wait
    "dram-long": dict(action="drop", frames=120, reverse_frames=20, line_rate_frames=60),
}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
                                  for name in CASES])
def test_icarus(name):
    runner.check_simulator("icarus")
    case = dict(CASES[name])
    testcase = case.pop("testcase", None)
    # the short cases share a build (one per action, and one with the run-time window)
    build_dir = BUILD / (name if testcase is None else case["action"] + ("-window" if case.get("runtime_window")
                                                                          else ""))
    results = build_dir / "results.xml"
    start = time.monotonic()
    try:
        appliance_runner.run_appliance(build_dir, CONFIG, sim="icarus", seed=SEED, testcase=testcase, **case)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb appliance on Icarus, case {name} (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed),
                    pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    assert set(ran) == ({testcase} if testcase else EXPECTED_TESTS), sorted(ran)
    print(f"case {name}: {time.monotonic() - start:.1f} s")


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name == "dram-long" else name
                                  for name in DRAM_CASES])
def test_icarus_dram(name):
    """The appliance with its filter in the SDRAM: port 1's frames and every counter the model's, the chip model
    checking every command the controller sends after the gateware started it."""
    from apbbf.flows.litedram import generate
    from apbbf.hdl.appliance.core import USER_HZ
    runner.check_simulator("icarus")
    case = dict(DRAM_CASES[name])
    testcase = case.pop("testcase", None)
    build_dir = BUILD / name
    results = build_dir / "results.xml"
    core = generate("colorlight-5a75b", sys_clk_freq=USER_HZ)
    try:
        appliance_runner.run_appliance(build_dir, DRAM_CONFIG, sim="icarus", seed=SEED, testcase=testcase,
                                       dram=core, **case)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb appliance with DRAM on Icarus, case {name} (COCOTB_RANDOM_SEED={SEED}): "
                    + "; ".join(failed), pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    assert set(ran) == ({testcase} if isinstance(testcase, str) else set(testcase) if testcase else
                        EXPECTED_TESTS), sorted(ran)
