"""LiteDRAM's SDR core for the Colorlight 5A-75B (:mod:`apbbf.flows.litedram`, generated into ``build/litedram/``)
on Icarus Verilog with the SDRAM chip model on its pins (:mod:`apbbf.sim.cocotb.dram_tests`).

The core as generated must pass random traffic through several refresh intervals without a data sheet
violation; cores generated with a timing broken on purpose must make the same bench fail with the chip model's
message naming the rule. Each case runs in ``build/cocotb-dram/<name>/`` (the results XML stays there).

Icarus Verilog must be installed (``make setup`` installs it as root); if it is missing the tests fail, they do
not skip.
"""

import re
from pathlib import Path

import pytest

from apbbf.flows import litedram
from apbbf.sim.cocotb import dram_runner, runner

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb-dram"
#: cocotb's regression seed; the bench derives its own from it and prints both.
SEED = 20261201
#: The power-up wait of the short cases, us (the reset held, the chip model checking the same): the data sheet's
#: 200 would be most of their simulated time; the long case waits the data sheet's.
POWER_UP_US = 20.0


def _run(core, name, testcase, params):
    runner.check_simulator("icarus")
    build_dir = BUILD / name
    results = build_dir / "results.xml"
    try:
        dram_runner.run(core, build_dir, testcase=testcase, seed=SEED, params=params)
    except SystemExit as exit_:
        if not results.exists():
            return [], [f"no results file (simulator exit {exit_.code})"]
    return read_results(results)


def test_generated_core():
    """The core's ports, settings and the fixes applied to LiteX's Verilog."""
    core = litedram.generate("colorlight-5a75b")
    text = core.verilog.read_text()
    for port in ("inout  wire   [31:0] sdram_dq", "output wire   [10:0] sdram_a", "output wire          sdram_ba",
                 "input  wire   [19:0] user_port_native_0_cmd_addr", "output wire   [31:0] user_port_native_0_rdata_data",
                 "input  wire          clk", "input  wire          rst"):
        assert port in text, port
    assert "// Date" not in text
    s = core.settings
    assert (s["module"], s["nbanks"], s["nrows"], s["ncols"], s["databits"]) == ("M12L16161A", 2, 2048, 256, 32)
    assert s["cl"] == 2 and s["read_latency"] == 3 and s["sys_clk_freq"] == 60e6
    # LiteDRAM rounds tREFI up to whole cycles: 938 cycles of 16.67 ns, 15.63 us
    assert s["timing_cycles"]["tREFI"] == 938 and s["timing_cycles"]["tRCD"] == 1 and s["timing_cycles"]["tRAS"] == 3
    assert [step["name"].split(" /")[0] for step in s["init_sequence"]] == [
        "Bring CKE high", "Precharge All", "Load Mode Register", "Precharge All", "Auto Refresh", "Auto Refresh",
        "Load Mode Register"]
    assert {"sdram_dfii_control", "sdram_dfii_pi0_command_issue", "ddrctrl_init_done"} <= set(core.csrs())
    # generating again with the same configuration reuses the core
    assert litedram.generate("colorlight-5a75b").verilog.stat().st_mtime_ns == core.verilog.stat().st_mtime_ns


def test_generated_versa_core():
    """The ECP5 Versa's DDR3 core (generated only): its DDR3 pins, the 128-bit native port, the module's timings."""
    core = litedram.generate("versa-ecp5")
    text = core.verilog.read_text()
    for port in ("inout  wire   [15:0] ddram_dq", "inout  wire    [1:0] ddram_dqs_p", "output wire    [2:0] ddram_ba",
                 "output wire   [12:0] ddram_a", "input  wire   [22:0] user_port_native_0_cmd_addr",
                 "output wire  [127:0] user_port_native_0_rdata_data", "output wire          pll_locked"):
        assert port in text, port
    s = core.settings
    assert (s["module"], s["nbanks"], s["nrows"], s["ncols"], s["phy"]) == ("MT41K64M16", 8, 8192, 1024, "ECP5DDRPHY")
    assert s["timing_cycles"]["tREFI"] == 391                  # 7.8 us at 50 MHz


def test_traffic():
    """Random reads and writes on the native port, checked against a dict, through five refresh intervals."""
    core = litedram.generate("colorlight-5a75b")
    ran, failed = _run(core, "colorlight-5a75b", "traffic", {"ops": 300, "run_us": 80, "power_up_us": POWER_UP_US})
    assert not failed, failed
    assert ran == ["traffic"]


@pytest.mark.slow
def test_traffic_long():
    """Ten times the traffic, through 40 refresh intervals (make test-slow)."""
    core = litedram.generate("colorlight-5a75b")
    ran, failed = _run(core, "colorlight-5a75b-long", "traffic", {"ops": 3000, "run_us": 640, "idle": 0.1})
    assert not failed, failed
    assert ran == ["traffic"]


#: Cores with a timing broken on purpose, and the chip model's message (a regular expression).
BROKEN = {
    # refreshes half as often as the data sheet asks
    "tREFI-x2": ({"tREFI": 2 * 15625}, r"SDRAM tREFI \(refresh deadline\) violated: \(no AUTO REFRESH\) at cycle \d+"),
    # a row's tRAS of 10 ns (one cycle; the data sheet's is 40 ns): LiteDRAM then also takes tRC as 25 ns (tRAS +
    # tRP), and closes rows with auto precharge, which the chip starts once tRAS is met, so the next ACTIVE to
    # the bank comes before the precharge's tRP has passed (or a PRECHARGE before tRAS, or an ACTIVE before tRC)
    "tRAS-10ns": ({"tRAS": 10}, r"SDRAM (tRAS min|tRP|tRC) violated: (ACTIVE|PRECHARGE) to bank [01] at cycle \d+ "
                                r"\([\d.]+ ns\): [\d.]+ ns after .* at cycle \d+ \([\d.]+ ns\), needs \d+ ns"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_broken_controller_is_caught(name):
    timing, message = BROKEN[name]
    core = litedram.generate("colorlight-5a75b", timing=timing)
    assert core.config["timing"] == timing
    ran, failed = _run(core, f"broken-{name}", "traffic", {"ops": 300, "run_us": 80, "power_up_us": POWER_UP_US})
    assert ran == ["traffic"]
    assert len(failed) == 1 and re.search(message, failed[0]), failed
