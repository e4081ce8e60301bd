"""Export the appliance without a board (:class:`apbbf.hdl.appliance.top.ApplianceVerilogTop`) as Verilog with
plain DDR registers (:class:`~apbbf.hdl.eth.generic_io.GenericIOPlatform`), wrap it in a testbench module and run
the two-port cocotb benches of :mod:`apbbf.sim.cocotb.appliance_tests` on it with ``cocotb_tools.runner``.

The wrapper (``apbbf_appliance_tb``) holds the top's ports as its own signals and adds what PHYs strapped for
RGMII-ID do on transmit: ``port{0,1}_phy_tx_clk`` is the port's ``rgmii_tx_clk`` delayed by 2 ns, the clock at
which cocotbext-eth's ``RgmiiSink`` samples (the MAC sends clock and data edge-aligned).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict
from pathlib import Path

from .mac_runner import TX_CLOCK_DELAY_NS, _write_if_changed
from .runner import check_simulator

__all__ = ["TOPLEVEL", "TB", "TEST_MODULE", "PARAMS_ENV", "export_appliance", "run_appliance"]

TOPLEVEL = "apbbf_appliance"
TB = "apbbf_appliance_tb"
TEST_MODULE = "apbbf.sim.cocotb.appliance_tests"
#: The environment variable that passes the appliance's parameters and the benches' sizes to the tests.
PARAMS_ENV = "APBBF_APPLIANCE_PARAMS"


def _wrapper(verilog: str, dump: Path | None) -> str:
    header = verilog[verilog.index(f"module {TOPLEVEL}("):]
    header = header[:header.index("endmodule")]
    ports = re.findall(r"^\s*(input|output|inout)\s*(\[\d+:\d+\])?\s*(\w+);", header, re.MULTILINE)
    lines = ["`timescale 1ns / 1fs", f"module {TB};"]
    for direction, width, name in ports:
        kind = "reg" if direction == "input" else "wire"
        init = " = 1" if name == "uart_rx" else " = 0" if direction == "input" and "rgmii_" in name else ""
        lines.append(f"  {kind} {width + ' ' if width else ''}{name}{init};")
    if any(name == "sdram_dq" for *_, name in ports):
        # the 5A-75B's SDRAM: the data bus (the core's TRELLIS_IO and the chip model, one enable per byte lane),
        # the chip's clock (sync shifted by 180 degrees), CS# tied low, CKE high, DQM low on the board
        dq = int(next(width for _, width, name in ports if name == "sdram_dq")[1:].split(":")[0]) + 1
        lines += ["  wire sdram_clk = ~clk;", "  wire chip_cs_n = 1'b0;", "  wire chip_cke = 1'b1;",
                  f"  wire [{dq // 8 - 1}:0] chip_dm = 0;", f"  reg [{dq - 1}:0] dq_drive = 0;",
                  f"  reg [{dq // 8 - 1}:0] dq_oe = 0;"]
        for lane in range(dq // 8):
            hi, lo = 8 * lane + 7, 8 * lane
            lines.append(f"  assign sdram_dq[{hi}:{lo}] = dq_oe[{lane}] ? dq_drive[{hi}:{lo}] : 8'bz;")
    for port in (0, 1):
        lines.append(f"  wire port{port}_phy_tx_clk;")
        lines.append(f"  assign #{TX_CLOCK_DELAY_NS} port{port}_phy_tx_clk = port{port}_rgmii_tx_clk;")
    lines.append(f"  {TOPLEVEL} dut (" + ", ".join(f".{n}({n})" for _, _, n in ports) + ");")
    if dump is not None:
        lines.append(f'  initial begin $dumpfile("{dump}"); $dumpvars(0, {TB}); end')
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def _stamp(**arguments) -> str:
    """What an export depends on: its arguments and the gateware's and the model's sources."""
    import hashlib
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256(json.dumps(arguments, sort_keys=True, default=str).encode())
    for path in sorted((root / "hdl").rglob("*.py")) + sorted((root / "model").rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def export_appliance(build_dir, config, *, action: str = "drop", key: str = "l3l4", tick_cycles: int = 50,
                     divisor: int = 4, rx_depth: int = 512, waves: bool = False, dram=None,
                     runtime_window: bool = False, power_up_us: float = 200.0) -> list[Path]:
    """Write ``<build_dir>/apbbf_appliance.v`` and the wrapper ``apbbf_appliance_tb.v``; returns their paths.
    The export (tens of seconds: the key extractor's CRC matrices) is skipped when ``<build_dir>/export.stamp``
    says the arguments and the sources of ``hdl/`` and ``model/`` are those of the files there.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.appliance.top.ApplianceVerilogTop`.
    """
    from amaranth.back import verilog

    from ...hdl.appliance.top import ApplianceVerilogTop
    from ...hdl.eth import GenericIOPlatform
    from ...hdl.export.verilog import find_yosys
    from ...model.packet import KeySpec
    os.environ.setdefault("YOSYS", find_yosys())
    build_dir = Path(build_dir).resolve()
    sources = [build_dir / f"{TOPLEVEL}.v", build_dir / f"{TB}.v"]
    stamp = _stamp(config=asdict(config), action=action, key=key, tick_cycles=tick_cycles, divisor=divisor,
                   rx_depth=rx_depth, waves=waves, dram=None if dram is None else dram.settings,
                   runtime_window=runtime_window,
                   **({} if dram is None or power_up_us == 200.0 else {"power_up_us": power_up_us}))
    stamp_file = build_dir / "export.stamp"
    if all(path.exists() for path in sources) and stamp_file.exists() and stamp_file.read_text() == stamp:
        return sources
    top = ApplianceVerilogTop(config, getattr(KeySpec, key)(), action=action, tick_cycles=tick_cycles,
                              divisor=divisor, rx_depth=rx_depth, dram=dram, runtime_window=runtime_window,
                              **({} if dram is None else {"power_up_us": power_up_us}))
    text = verilog.convert(top, name=TOPLEVEL, platform=GenericIOPlatform(), emit_src=False)
    _write_if_changed(sources[0], text)
    _write_if_changed(sources[1], _wrapper(text, build_dir / f"{TB}.fst" if waves else None))
    stamp_file.write_text(stamp)
    return sources


def run_appliance(build_dir, config, *, sim: str = "icarus", testcase=None, seed: int = 1, waves: bool = False,
                  action: str = "drop", key: str = "l3l4", tick_cycles: int = 50, divisor: int = 4,
                  rx_depth: int = 512, dram=None, runtime_window: bool = False, power_up_us: float = 200.0,
                  **sizes) -> Path:
    """Export and build the appliance in ``build_dir`` and run the benches of :data:`TEST_MODULE`.

    Parameters
    ----------
    config : Config
        The filter (its span in microseconds: ``tick_cycles`` clocks of 20 ns).
    testcase : str or list of str, optional
        Tests to run (default: all).
    seed : int
        cocotb's ``RANDOM_SEED``; every bench derives its seed from it.
    dram : apbbf.flows.litedram.Core or None
        With a Config of a row layout: the SDR SDRAM's core (generated for 50 MHz), compiled with yosys's ECP5
        models; the benches start the SDRAM chip model on its pins.
    runtime_window : bool
        Build the window writable over the UART (:class:`~apbbf.hdl.appliance.top.ApplianceVerilogTop`).
    power_up_us : float
        With ``dram``: the SDRAM's power-up wait, the gateware's and the chip model's alike (the data sheet's 200
        by default; a shorter one shortens the simulation, and the chip model still fails a command before it).
    **sizes
        The benches' sizes (``frames``, ``line_rate_frames``, ``reverse_frames``), passed to them.

    Returns
    -------
    pathlib.Path
        ``<build_dir>/results.xml``. Under pytest a failed test raises ``SystemExit``.
    """
    from cocotb_tools.runner import get_runner

    from .. import verilator
    check_simulator(sim)
    build_dir = Path(build_dir).resolve()
    sources = export_appliance(build_dir, config, action=action, key=key, tick_cycles=tick_cycles,
                               divisor=divisor, rx_depth=rx_depth, waves=waves and sim == "icarus", dram=dram,
                               runtime_window=runtime_window, power_up_us=power_up_us)
    if dram is not None:
        from .dram_runner import ecp5_sim_library
        sources = [dram.verilog, *sources, ecp5_sim_library(build_dir)]
    runner = get_runner(sim)
    build_args = list(verilator.ARGS) if sim == "verilator" else ["-g2005"]
    runner.build(sources=sources, hdl_toplevel=TB, build_dir=build_dir, waves=waves and sim != "icarus",
                 timescale=("1ns", "1fs"), build_args=build_args, always=False)
    env = {PARAMS_ENV: json.dumps({"config": asdict(config), "action": action, "key": key,
                                   "tick_cycles": tick_cycles, "divisor": divisor,
                                   "dram": None if dram is None else dram.settings, "power_up_us": power_up_us,
                                   "runtime_window": runtime_window, **sizes})}
    results_xml = build_dir / "results.xml"
    results_xml.unlink(missing_ok=True)
    return runner.test(test_module=TEST_MODULE, hdl_toplevel=TB, build_dir=build_dir, testcase=testcase,
                       seed=seed, extra_env=env, waves=waves, results_xml=str(results_xml),
                       timescale=("1ns", "1fs"))
