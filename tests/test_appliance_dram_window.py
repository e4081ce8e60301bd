# amaranth: UnusedElaboratable=no
"""The two-port appliance with its filter in the 5A-75B's SDRAM (the LiteDRAM core at 50 MHz, the M12L16161A chip
model on its pins) under load: :func:`apbbf.sim.cocotb.appliance_tests.dram_window` (minimum-size bursts at line
rate, copies at 0.5 to 0.99 of the window and past it, the ports' clocks off by ppm, refresh), every frame out of
port 1 the model's. Long cases in ``make test-slow`` (one export and build, ``build/cocotb-appliance/dram-window/``; each case writes
its numbers to ``window-<case>.json`` there).

What is scaled: the window. The board's filter (:func:`apbbf.flows.appliance.appliance_config`, the build's own
sizing of 250 ms at 1.488 Mpps) keeps its k, l, extra segments, 32-bit blocks and 32 blocks of each segment in an
8,192-bit row, but its span is ``SPAN`` ticks of one 20 ns clock each (``tick_cycles=1``) instead of 250,000 ticks
of 1 us, and its segments hold blocks in the same proportion to the keys a window holds at line rate
(:func:`scaled_config`), so a copy at 0.99 of the window comes after about as many frames per block as on the
board. Not scaled: the line rate, the SDRAM's timing (tRCD, tRP, tRC, refresh every tREFI, checked by the chip
model in ns at 50 MHz), LiteDRAM's controller, the answer deadline (1,024 cycles) and the shift's clearing per
tick of the memory's cycles. The SDRAM's power-up wait is shortened (``POWER_UP_US``), the gateware's and the
chip model's alike.
"""

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from apbbf.sim.cocotb import appliance_runner, runner

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb-appliance"
SEED = 20261202
#: The window of the long cases: ticks of one sync cycle (20 ns): 500 us (Icarus runs this bench at about 3 us of
#: traffic per second).
SPAN = 25_000
TICK_CYCLES = 1
#: The board's window, us.
BOARD_WINDOW_US = 250_000
#: The SDRAM's power-up wait in these benches, us, the gateware's and the chip model's alike (the data sheet's 200
#: would be most of a short case's simulated time; every command after it is checked as on the board).
POWER_UP_US = 20.0


def scaled_config(span: int = SPAN, tick_cycles: int = TICK_CYCLES, *, seed: int = 0x5EED1E55):
    """The board build's SDRAM filter with a window of ``span`` ticks of ``tick_cycles`` 20 ns cycles: the
    segments' blocks scaled by the window's length against the board's 250 ms (a power of two, at least 4 rows)."""
    from apbbf.flows.appliance import appliance_config
    board = appliance_config("colorlight-5a75b", window_us=BOARD_WINDOW_US, memory="dram", seed=seed)
    scale = span * tick_cycles * 0.02 / BOARD_WINDOW_US
    blocks = max(4 * board.row_blocks, 1 << round(board.segment_blocks * scale).bit_length() - 1)
    return replace(board, span=span, segment_blocks=blocks)


COPY_AGES = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.05, 1.2]
CASES = {
    # make test-slow: 1.3 windows of bursts up to 64 minimum-size frames, both ports busy, the clocks off
    "window": dict(windows=1.3, burst=64, pause_us=2, copy_every=5, rx_ppm=[100, -100], tx_ppm=-100,
                   bands={"0.5-0.75": 2, "0.75-0.9": 2, "0.9-0.99": 2, "past": 1}),
    # longer bursts at line rate, no pauses: the de-duplicator's load the whole time
    "line-rate": dict(windows=1.2, burst=400, pause_us=0, copy_every=4, rx_ppm=[200, 0], tx_ppm=-200,
                      bands={"0.5-0.75": 2, "0.9-0.99": 1}),
}


def run_case(name: str, config=None, **overrides):
    from apbbf.flows.litedram import generate
    from apbbf.hdl.appliance.core import USER_HZ
    runner.check_simulator("icarus")
    case = {**CASES[name], **overrides, "copy_ages": COPY_AGES, "window_copies": True, "frames": 0}
    build_dir = BUILD / "dram-window"
    results = build_dir / "results.xml"
    report = build_dir / f"window-{name}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)
    core = generate("colorlight-5a75b", sys_clk_freq=USER_HZ)
    start = time.monotonic()
    try:
        appliance_runner.run_appliance(build_dir, config or scaled_config(), sim="icarus", seed=SEED,
                                       testcase="dram_window", dram=core, tick_cycles=TICK_CYCLES,
                                       power_up_us=POWER_UP_US, report=str(report), **case)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"DRAM appliance bench {name} (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed), pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    assert ran == ["dram_window"], ran
    numbers = json.loads(report.read_text())
    numbers["wall_seconds"] = round(time.monotonic() - start, 1)
    report.write_text(json.dumps(numbers, indent=2) + "\n")
    print(f"case {name}: {numbers}")
    return numbers


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_dram_window(name):
    """Each long case: every frame out of port 1 the model's, copies within the window found, none lost."""
    run_case(name)


def test_scaled_config():
    """The scaled Config keeps the board's shape: only the span and the segments' blocks differ."""
    from apbbf.flows.appliance import appliance_config
    board = appliance_config("colorlight-5a75b", window_us=BOARD_WINDOW_US, memory="dram", seed=0x5EED1E55)
    scaled = scaled_config()
    assert replace(scaled, span=board.span, segment_blocks=board.segment_blocks) == board
    assert (scaled.row_blocks, scaled.physical_segments) == (board.row_blocks, board.physical_segments) == (32, 6)
    assert scaled.rows >= 4
