"""The appliance's board top, before synthesis, as ``make bitstream`` elaborates it
(:class:`apbbf.hdl.appliance.top.ApplianceTop` on the board's amaranth-boards platform: the EHXPLLL, the DELAYG,
the IDDRX1F/ODDRX1F, the directly instantiated DP16KD, the I/O buffers), simulated on Icarus with yosys's ECP5
models and this project's (``sim/ecp5/``: what yosys leaves a black box), under the two-port cocotb benches of
:mod:`apbbf.sim.cocotb.appliance_tests`.

The Verilog is Amaranth's own conversion of the RTLIL the bitstream build synthesizes (the platform's
``top.debug.v``). The wrapper (``apbbf_board_tb``) holds the board's pins as its own signals under the names the
benches use (``port{0,1}_rgmii_*``, ``uart_rx``, ``uart_tx``), drives the reference clock pin from ``xtal`` and
adds what the boards' PHYs do on transmit (``port{0,1}_phy_tx_clk``: ``tx_clk`` 2 ns later, their internal delay);
the clocks and counters the benches read inside (``clk``, the PLL's ``pll_lock``, the counters, ``now_us``,
``frame_start``) are hierarchical references into the top.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path

from .appliance_runner import PARAMS_ENV, TEST_MODULE, _stamp
from .dram_runner import ecp5_sim_library
from .mac_runner import TX_CLOCK_DELAY_NS, _write_if_changed
from .runner import check_simulator

__all__ = ["BOARDS", "BENCHES", "TB", "MODELS", "board_platform", "swap_read_halves", "export_board", "run_board"]

TB = "apbbf_board_tb"
#: Board -> (the reference clock's pin in the top, its nominal period and the one simulated, in femtoseconds: 100
#: ppm slow, as a crystal may be).
BOARDS = {
    "colorlight-5a75b": ("clk25_0__io", 40_000_000, 40_004_000),
    "versa-ecp5": ("eth_clk125_0__io", 8_000_000, 8_000_800),
}
#: The benches of :data:`~apbbf.sim.cocotb.appliance_runner.TEST_MODULE` a board top runs by default (the others
#: talk over the UART at length: at the board's 1 Mbaud, a millisecond of simulated time per exchange).
BENCHES = ("dedup_port0_to_port1", "reverse_port1_to_port0", "line_rate_both_ways", "uart_read_action")
#: This project's models of the ECP5 primitives yosys leaves black boxes (``sim/ecp5/``).
MODELS = tuple(sorted((Path(__file__).resolve().parents[1] / "ecp5").glob("*.v")))
#: Yosys's ECP5 models the board top needs: the I/O buffers and the flip-flops Amaranth's platform instantiates.
YOSYS_PRIMITIVES = ("TRELLIS_IO", "TRELLIS_FF", "IB", "OB", "OBZ", "BB", "FD1S3AX", "OFS1P3DX")


def board_platform(board: str):
    """The amaranth-boards platform ``make bitstream`` builds ``board``'s appliance on."""
    import amaranth_boards.colorlight_5a75b_r7_0 as colorlight
    import amaranth_boards.versa_ecp5 as versa

    from ...hdl.eth.loopback import BOARD_PHYS
    if board not in BOARDS:
        raise ValueError(f"board must be one of {', '.join(BOARDS)}, not {board!r}")
    return getattr(colorlight if board.startswith("colorlight") else versa, BOARD_PHYS[board][0])()


def _pin_name(name: str) -> str | None:
    """The benches' name for a top-level pin of the board top (``None``: one the benches do not use)."""
    match = re.fullmatch(r"eth_rgmii_(?:data_)?([01])(?:_0)?__(\w+)__io", name)
    if match:
        port, pin = match.groups()
        pin = {"rx_data": "rxd", "tx_data": "txd", "rx_ctrl": "rx_ctl", "tx_ctrl": "tx_ctl"}.get(pin, pin)
        return f"port{port}_rgmii_{pin}" if pin != "rst" else f"port{port}_phy_rst_n"
    match = re.fullmatch(r"uart_0__(rx|tx)__io", name)
    if match:
        return f"uart_{match.group(1)}"
    match = re.fullmatch(r"led_(\d)__io", name)
    return f"led_{match.group(1)}" if match else None


def wrapper_pins(verilog: str, board: str, what: str = "") -> list[str]:
    """The wrapper's first lines, up to the instance of the board top in ``verilog``: a reg (an input pin, reaching
    the top through a wire: yosys's input buffers make their pad an inout, which a reg may not drive) or a wire
    (an output) under the benches' name of each pin, each PHY's transmit clock as the PHY sees it, and ``top
    dut``.

    Raises
    ------
    ValueError
        If the top has a pin the bench does not know (``what`` names the top in the message).
    """
    header = verilog[verilog.index("module top("):]
    header = header[:header.index("endmodule")]
    ports = re.findall(r"^\s*(input|output|inout)\s*(\[\d+:\d+\])?\s*(\w+);", header, re.MULTILINE)
    xtal = BOARDS[board][0]
    lines = ["`timescale 1ns / 1fs", f"module {TB};"]
    connections = []
    for direction, width, name in ports:
        ours = "xtal" if name == xtal else _pin_name(name)
        if ours is None:
            raise ValueError(f"the {what}{board} top has a pin the bench does not know: {name}")
        vector = width + " " if width else ""
        if direction == "input":
            lines += [f"  reg {vector}{ours} = {1 if ours == 'uart_rx' else 0};", f"  wire {vector}{ours}_pin = {ours};"]
            connections.append(f".{name}({ours}_pin)")
        else:
            lines.append(f"  wire {vector}{ours};")
            connections.append(f".{name}({ours})")
    for port in (0, 1):
        lines += [f"  wire port{port}_phy_tx_clk;",
                  f"  assign #{TX_CLOCK_DELAY_NS} port{port}_phy_tx_clk = port{port}_rgmii_tx_clk;"]
    lines.append("  top dut (" + ", ".join(connections) + ");")
    return lines


def _wrapper(verilog: str, board: str, time_width: int) -> str:
    lines = wrapper_pins(verilog, board)
    # inside the top: sync's clock, the PLL's lock, the counters, each frame's time
    from ...hdl.appliance.core import APPLIANCE_COUNTERS
    lines += ["  wire clk = dut.clk;", "  wire eth_tx_clk = dut.eth_tx_clk;", "  wire pll_lock = dut.pll.locked;",
              *[f"  wire [31:0] {name} = dut.{name};" for name in APPLIANCE_COUNTERS],
              "  wire [1:0] link_up = dut.link_up;",
              f"  wire [{time_width - 1}:0] now_us = dut.core.\\time ;", "  wire frame_start = dut.core.frame_start;",
              "endmodule"]
    return "\n".join(lines) + "\n"


def swap_read_halves(verilog: str, instance: str) -> str:
    """``verilog`` with the DP16KD ``instance`` (``<module>:<instance name>``, e.g.
    ``top.core.dedup.core.segments.segment0:ebr_r0_c0``) wired wrong on purpose: its DOA and DOB pins swapped (the
    36-bit mode's low and high read halves)."""
    module, name = instance.split(":")
    begin = verilog.find(f"module \\{module} (")
    match = None if begin < 0 else re.compile(
        rf"DP16KD #\((?:.|\n)*?\) {re.escape(name)} \((?:.|\n)*?\);").search(verilog, begin)
    if match is None or verilog.find("endmodule", begin) < match.start():
        raise ValueError(f"no DP16KD instance {instance} in the Verilog")
    swapped = re.sub(r"\.DO([AB])(\d+)\(", lambda m: f".DO{'B' if m.group(1) == 'A' else 'A'}{m.group(2)}(",
                     match.group(0))
    return verilog[:match.start()] + swapped + verilog[match.end():]


def export_board(build_dir, board: str, config, *, action: str = "drop", key: str = "l3l4",
                 swap_dp16kd: str | None = None) -> list[Path]:
    """Write ``<build_dir>/board_top.v`` (``board``'s appliance top as the bitstream build elaborates it) and the
    wrapper ``apbbf_board_tb.v``; returns their paths. Skipped when ``<build_dir>/export.stamp`` says the arguments
    and the sources of ``hdl/``, ``model/`` and this module are those of the files there. With ``swap_dp16kd``, that
    DP16KD instance is wired wrong on purpose (:func:`swap_read_halves`).

    Raises
    ------
    ValueError
        If ``board`` is unknown, or as :class:`~apbbf.hdl.appliance.top.ApplianceTop`.
    """
    import os

    from ...hdl.appliance.top import ApplianceTop
    from ...hdl.export.verilog import find_yosys
    from ...model.packet import KeySpec
    platform = board_platform(board)
    os.environ.setdefault("YOSYS", find_yosys())
    build_dir = Path(build_dir).resolve()
    sources = [build_dir / "board_top.v", build_dir / f"{TB}.v"]
    stamp = _stamp(board=board, config=asdict(config), action=action, key=key, swap=swap_dp16kd,
                   wrapper=Path(__file__).read_text())
    stamp_file = build_dir / "export.stamp"
    if all(path.exists() for path in sources) and stamp_file.exists() and stamp_file.read_text() == stamp:
        return sources
    top = ApplianceTop(board, config, getattr(KeySpec, key)(), action=action)
    plan = platform.build(top, name="top", do_build=False, debug_verilog=True)
    text = plan.files["top.debug.v"]
    if swap_dp16kd is not None:
        text = swap_read_halves(text, swap_dp16kd)
    _write_if_changed(sources[0], text)
    _write_if_changed(sources[1], _wrapper(text, board, config.time_width))
    stamp_file.write_text(stamp)
    return sources


def run_board(build_dir, board: str, config, *, testcase=None, seed: int = 1, action: str = "drop",
              key: str = "l3l4", waves: bool = False, swap_dp16kd: str | None = None, **sizes) -> Path:
    """Export and build ``board``'s appliance top in ``build_dir`` and run the benches of
    :data:`~apbbf.sim.cocotb.appliance_runner.TEST_MODULE` on it (Icarus).

    Parameters
    ----------
    board : str
        ``"colorlight-5a75b"`` or ``"versa-ecp5"``.
    config : Config
        The filter (its span in microseconds).
    testcase : str or list of str, optional
        Tests to run (default: :data:`BENCHES`).
    seed : int
        cocotb's ``RANDOM_SEED``.
    swap_dp16kd : str or None
        A DP16KD instance to wire wrong on purpose (:func:`export_board`).
    **sizes
        The benches' sizes (``frames``, ``line_rate_frames``, ``reverse_frames``, ``uart``), passed to them.

    Returns
    -------
    pathlib.Path
        ``<build_dir>/results.xml``. Under pytest a failed test raises ``SystemExit``.
    """
    from cocotb_tools.runner import get_runner

    from ...hdl.appliance.top import ApplianceTop
    from ...hdl.appliance.core import USER_HZ
    check_simulator("icarus")
    build_dir = Path(build_dir).resolve()
    sources = export_board(build_dir, board, config, action=action, key=key, swap_dp16kd=swap_dp16kd)
    sources = [*sources, ecp5_sim_library(build_dir, YOSYS_PRIMITIVES, "ecp5_yosys.v"), *MODELS]
    runner = get_runner("icarus")
    runner.build(sources=sources, hdl_toplevel=TB, build_dir=build_dir, timescale=("1ns", "1fs"),
                 build_args=["-g2005"], always=False)
    divisor = round(USER_HZ) // ApplianceTop.baud
    env = {PARAMS_ENV: json.dumps({"config": asdict(config), "action": action, "key": key,
                                   "tick_cycles": round(USER_HZ / 1e6), "divisor": divisor, "dram": None,
                                   "board": board, "xtal_nominal_fs": BOARDS[board][1],
                                   "xtal_period_fs": BOARDS[board][2], **sizes})}
    results_xml = build_dir / "results.xml"
    results_xml.unlink(missing_ok=True)
    return runner.test(test_module=TEST_MODULE, hdl_toplevel=TB, build_dir=build_dir,
                       testcase=list(BENCHES) if testcase is None else testcase,
                       seed=seed, extra_env=env, waves=waves, results_xml=str(results_xml),
                       timescale=("1ns", "1fs"))
