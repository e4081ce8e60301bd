# amaranth: UnusedElaboratable=no
"""The appliance's board top as ``make bitstream`` elaborates it (PLL, DELAYG, ECP5 DDR I/O, DP16KD; the models of
``sim/ecp5/``) under the appliance's cocotb benches on Icarus (:mod:`apbbf.sim.cocotb.board_runner`): the crystal
in, RGMII at the pins, port 1's frames and the counters the model's. Each board's build is in
``build/netlist-sim/<board>/<case>/``."""

import time
from pathlib import Path

import pytest

from apbbf.model import Config
from apbbf.sim.cocotb import board_runner, runner

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "netlist-sim"
SEED = 20261125
#: As tests/test_appliance_cocotb.py: a 12 us window, small segments.
CONFIG = Config(k=2, l=3, segment_blocks=16, span=12, extra_segments=2, seed=0x5EED1E55)
CASES = {
    # a few frames through the 5A-75B's top (about 80 s unloaded, most of it the export and the compile)
    "colorlight-5a75b-short": ("colorlight-5a75b", dict(frames=6, uart=False, testcase="dedup_port0_to_port1")),
    # make test-slow: the traffic benches and a register read over the UART on both boards (the UART's 1 Mbaud is
    # 50 clocks a bit here, so the UART-heavy benches stay with the generic export's 4)
    "colorlight-5a75b": ("colorlight-5a75b", dict(frames=40, uart=False, reverse_frames=20, line_rate_frames=30,
                                                  testcase=list(board_runner.BENCHES))),
    "versa-ecp5": ("versa-ecp5", dict(frames=40, uart=False, reverse_frames=20, line_rate_frames=30,
                                      testcase=list(board_runner.BENCHES))),
}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow)
                                  for name in CASES])
def test_board_top(name):
    runner.check_simulator("icarus")
    board, case = CASES[name]
    case = dict(case)
    testcase = case.pop("testcase", None)
    build_dir = BUILD / board / ("short" if name.endswith("-short") else "all")
    results = build_dir / "results.xml"
    start = time.monotonic()
    try:
        board_runner.run_board(build_dir, board, CONFIG, seed=SEED, testcase=testcase, **case)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"{board} top on Icarus, case {name} (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed),
                    pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    assert set(ran) == ({testcase} if isinstance(testcase, str) else set(testcase)), sorted(ran)
    print(f"case {name}: {time.monotonic() - start:.1f} s")


def test_pin_names():
    """The board tops' pins the wrapper maps (both boards' spellings of the RGMII control pins)."""
    assert board_runner._pin_name("eth_rgmii_0__rx_ctl__io") == "port0_rgmii_rx_ctl"
    assert board_runner._pin_name("eth_rgmii_1__tx_ctrl__io") == "port1_rgmii_tx_ctl"
    assert board_runner._pin_name("eth_rgmii_data_1_0__rx_data__io") == "port1_rgmii_rxd"
    assert board_runner._pin_name("eth_rgmii_0__rst__io") == "port0_phy_rst_n"
    assert board_runner._pin_name("uart_0__tx__io") == "uart_tx"
    assert board_runner._pin_name("sdram_0__a__io") is None
    with pytest.raises(ValueError, match="board must be one of"):
        board_runner.board_platform("ulx3s-85f")


@pytest.mark.slow
def test_swapped_dp16kd_fails():
    """One filter segment's DP16KD with its read halves (DOA, DOB) swapped in the board top's Verilog: the bench
    must fail (the frames out of port 1 are no longer the model's)."""
    runner.check_simulator("icarus")
    build_dir = BUILD / "colorlight-5a75b" / "swapped"
    with pytest.raises(SystemExit):
        board_runner.run_board(build_dir, "colorlight-5a75b", CONFIG, seed=SEED, testcase="dedup_port0_to_port1",
                               frames=16, uart=False,
                               swap_dp16kd="top.core.dedup.core.segments.segment0:ebr_r0_c0")
    ran, failed = read_results(build_dir / "results.xml")
    assert ran == ["dedup_port0_to_port1"] and failed, (ran, failed)
