"""Export the RGMII MAC (:class:`apbbf.hdl.eth.axis_mac.AXIStreamRGMIIMAC`) as Verilog with plain DDR registers
(:class:`~apbbf.hdl.eth.generic_io.GenericIOPlatform`), wrap it in a testbench module and run the cocotb benches
of :mod:`apbbf.sim.cocotb.mac_tests` on it with ``cocotb_tools.runner`` (Icarus or Verilator).

The wrapper (``apbbf_rgmii_mac_tb``) holds the MAC's ports as its own signals and adds what a PHY strapped for
RGMII-ID does: ``phy_tx_clk`` is ``rgmii_tx_clk`` delayed by 2 ns, the clock at which cocotbext-eth's
``RgmiiSink`` samples the transmitted data (the MAC sends clock and data edge-aligned).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .runner import check_simulator

__all__ = ["MAC_TOPLEVEL", "MAC_TB", "MAC_TEST_MODULE", "PARAMS_ENV", "export_mac", "run_mac"]

MAC_TOPLEVEL = "apbbf_rgmii_mac"
MAC_TB = "apbbf_rgmii_mac_tb"
MAC_TEST_MODULE = "apbbf.sim.cocotb.mac_tests"
#: The environment variable that passes the MAC's parameters and the bench's sizes to the tests.
PARAMS_ENV = "APBBF_MAC_PARAMS"
#: The PHY's internal transmit clock delay the wrapper models, ns.
TX_CLOCK_DELAY_NS = 2


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _wrapper(verilog: str, dump: Path | None) -> str:
    header = verilog[verilog.index(f"module {MAC_TOPLEVEL}("):]
    header = header[:header.index("endmodule")]
    ports = re.findall(r"^\s*(input|output)\s*(\[\d+:\d+\])?\s*(\w+);", header, re.MULTILINE)
    lines = ["`timescale 1ns / 1fs", f"module {MAC_TB};"]
    for direction, width, name in ports:
        kind = "reg" if direction == "input" else "wire"
        # no X from the PHY's pins before cocotb drives them
        init = " = 0" if direction == "input" and name.startswith("rgmii_") else ""
        lines.append(f"  {kind} {width + ' ' if width else ''}{name}{init};")
    lines.append("  wire phy_tx_clk;")
    lines.append(f"  assign #{TX_CLOCK_DELAY_NS} phy_tx_clk = rgmii_tx_clk;")
    lines.append(f"  {MAC_TOPLEVEL} dut (" + ", ".join(f".{n}({n})" for _, _, n in ports) + ");")
    if dump is not None:                # cocotb's own dump module is SystemVerilog, and Icarus runs -g2005 here
        lines.append(f'  initial begin $dumpfile("{dump}"); $dumpvars(0, {MAC_TB}); end')
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def export_mac(build_dir, *, data_width: int = 64, waves: bool = False, **options) -> list[Path]:
    """Write ``<build_dir>/apbbf_rgmii_mac.v`` (the MAC) and ``apbbf_rgmii_mac_tb.v`` (the wrapper); returns their
    paths (files with the same text are left untouched, so the simulators' up-to-date checks skip the rebuild).
    With ``waves`` the wrapper dumps every signal to ``apbbf_rgmii_mac_tb.fst`` (Icarus run with ``-fst``).

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.eth.mac.RGMIIMAC`.
    """
    from amaranth.back import verilog

    from ...hdl.eth import GenericIOPlatform
    from ...hdl.eth.axis_mac import AXIStreamRGMIIMAC
    from ...hdl.export.verilog import find_yosys
    os.environ.setdefault("YOSYS", find_yosys())       # Amaranth's convert looks there (as `make` sets it)
    build_dir = Path(build_dir).resolve()
    top = AXIStreamRGMIIMAC(data_width, **options)
    text = verilog.convert(top, name=MAC_TOPLEVEL, platform=GenericIOPlatform(), emit_src=False)
    sources = [build_dir / f"{MAC_TOPLEVEL}.v", build_dir / f"{MAC_TB}.v"]
    _write_if_changed(sources[0], text)
    _write_if_changed(sources[1], _wrapper(text, build_dir / f"{MAC_TB}.fst" if waves else None))
    return sources


def run_mac(build_dir, *, sim: str = "icarus", testcase=None, seed: int = 1, waves: bool = True,
            frames: int = 40, line_rate_frames: int = 200, data_width: int = 64, user_period_fs: int = 10_000_000,
            **options) -> Path:
    """Export and build the MAC in ``build_dir`` and run the cocotb benches of :data:`MAC_TEST_MODULE`.

    Parameters
    ----------
    testcase : str or list of str, optional
        Tests to run (default: all).
    seed : int
        cocotb's ``RANDOM_SEED``; every bench derives its seed from it.
    frames : int
        Frames per direction in the receive and transmit benches.
    line_rate_frames : int
        Minimum-size frames back to back in the line-rate bench.
    user_period_fs : int
        The user's clock period, fs (even); at least 125 MHz * 8 / ``data_width`` for line rate.

    Returns
    -------
    pathlib.Path
        The results file ``<build_dir>/results.xml``. Under pytest a failed test raises ``SystemExit``
        (cocotb's runner does).
    """
    from cocotb_tools.runner import get_runner

    from .. import verilator
    check_simulator(sim)
    build_dir = Path(build_dir).resolve()
    sources = export_mac(build_dir, data_width=data_width, waves=waves and sim == "icarus", **options)
    runner = get_runner(sim)
    # Icarus in Verilog-2005 mode: its -g2012 (cocotb's default) applies declaration initializers without an
    # event at time 0, so yosys's always @* blocks whose inputs never change stay X (the FIFOs' empty flags).
    build_args = list(verilator.ARGS) if sim == "verilator" else ["-g2005"]
    runner.build(sources=sources, hdl_toplevel=MAC_TB, build_dir=build_dir, waves=waves and sim != "icarus",
                 timescale=("1ns", "1fs"), build_args=build_args, always=False)
    env = {PARAMS_ENV: json.dumps({"data_width": data_width, "frames": frames, "line_rate_frames": line_rate_frames,
                                   "user_period_fs": user_period_fs, **options})}
    results_xml = build_dir / "results.xml"
    results_xml.unlink(missing_ok=True)
    return runner.test(test_module=MAC_TEST_MODULE, hdl_toplevel=MAC_TB, build_dir=build_dir, testcase=testcase,
                       seed=seed, extra_env=env, waves=waves, results_xml=str(results_xml),
                       timescale=("1ns", "1fs"))
