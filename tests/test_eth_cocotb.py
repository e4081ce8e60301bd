# amaranth: UnusedElaboratable=no
"""The exported RGMII MAC on Icarus Verilog with cocotbext-eth's RGMII source and sink at 1000 Mb/s
(:mod:`apbbf.sim.cocotb.mac_tests`); each case is exported, compiled and run in ``build/cocotb-mac/<name>/``, which
keeps the results XML and the waveform."""

from pathlib import Path

import pytest

from apbbf.sim.cocotb import mac_runner, runner

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb-mac"
SEED = 20261125
EXPECTED_TESTS = frozenset(["receive", "transmit", "line_rate_across_clocks", "receive_overflow"])

CASES = {
    # make test: a dozen frames each way (and into the overflow), 50 minimum-size frames at line rate
    "w64": dict(data_width=64, frames=12, line_rate_frames=50, rx_depth=64, tx_depth=64),
    # make test-slow: longer runs; 8-bit beats too, with the user's clock at 166.7 MHz (one byte per clock must
    # keep up with 125 MB/s)
    "w64-long": dict(data_width=64, frames=400, line_rate_frames=3000, rx_depth=64, tx_depth=64),
    "w8": dict(data_width=8, frames=60, line_rate_frames=300, rx_depth=512, tx_depth=512,
               user_period_fs=6_000_000),
}
SLOW = {"w64-long", "w8"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
                                  for name in CASES])
def test_icarus(name):
    runner.check_simulator("icarus")
    build_dir = BUILD / name
    results = build_dir / "results.xml"
    try:
        mac_runner.run_mac(build_dir, sim="icarus", seed=SEED, waves=name not in SLOW, **CASES[name])
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb MAC on Icarus, case {name} (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed),
                    pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    assert set(ran) == EXPECTED_TESTS, sorted(ran)


def test_export_ports(tmp_path):
    """The exported MAC's ports carry AXI4-Stream and RGMII names."""
    source, wrapper = mac_runner.export_mac(tmp_path, data_width=64, rx_depth=16, tx_depth=16)
    text = source.read_text()
    header = text[text.index("module apbbf_rgmii_mac("):]
    header = header[:header.index(");")]
    ports = {p.strip() for p in header[header.index("(") + 1:].split(",")}
    assert {"aclk", "aresetn", "eth_tx_clk", "rgmii_rx_clk", "rgmii_rx_ctl", "rgmii_rxd", "rgmii_tx_clk",
            "rgmii_tx_ctl", "rgmii_txd", "m_axis_tdata", "s_axis_tdata", "rx_frames", "tx_underflows"} <= ports
    assert "assign #2 phy_tx_clk = rgmii_tx_clk;" in wrapper.read_text()
