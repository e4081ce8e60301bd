"""The appliance's routed netlist, simulated: nextpnr's routed design of ``make bitstream`` (``WRITE_ROUTED=1``:
``build/appliance-<board>/seed<N>.routed.json``), read back by yosys as Verilog (:func:`apbbf.sim.routed.routed_verilog`),
on Icarus with the models of nextpnr's packed cells (:func:`apbbf.sim.routed.routed_models`), under the cocotb
benches of :mod:`apbbf.sim.cocotb.appliance_tests` with the filter the bitstream was built with.

The wrapper (``apbbf_board_tb``) is the board top's (:mod:`apbbf.sim.cocotb.board_runner`): the same pins under the
benches' names, the PHYs' transmit delay. What the benches read inside the design they find by its net names,
which survive synthesis and routing where a flip-flop drives them: ``core.clk``, ``pll.locked``, the MAC's and the
de-duplicator's counters (``core.port0.rx_frames``, ``core.dedup_frames``, ...), the time (``core.i__payload.user.time``).
``frame_start`` is not a net of the routed design (it is the de-duplicator's input handshake): the wrapper makes
it from ``dedup_frames``, one pulse per frame decided, so a frame's time is the one at its decision, a few cycles
after it starts (the benches' windows are milliseconds: the model decides the same). A counter the netlist does
not have under its name is left out, and the benches skip it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .appliance_runner import PARAMS_ENV, TEST_MODULE
from .board_runner import BOARDS, TB, wrapper_pins
from .mac_runner import _write_if_changed
from .runner import check_simulator
from ..routed import routed_models, routed_verilog

__all__ = ["ROUTED_BENCHES", "routed_wrapper", "swap_routed_read_halves", "run_routed_board"]

#: The benches a routed netlist runs by default: the short form (gate level runs some thousand cycles a second).
ROUTED_BENCHES = ("few_frames_port0_to_port1",)


def _wires(verilog: str) -> dict[str, int]:
    """The routed top's nets: name -> width."""
    wires = {}
    for width, name in re.findall(r"^\s*wire\s+(\[\d+:0\]\s+)?(\\\S+|\w+)\s*;", verilog, re.MULTILINE):
        wires[name.removeprefix("\\")] = int(width.strip()[1:].split(":")[0]) + 1 if width else 1
    return wires


def _reference(wires: dict[str, int], name: str, width: int) -> str | None:
    """A Verilog expression for the design's net ``name`` of ``width`` bits inside ``dut``, or None."""
    escaped = lambda net: f"dut.\\{net} " if not re.fullmatch(r"[A-Za-z_]\w*", net) else f"dut.{net}"
    if wires.get(name) == width:
        return escaped(name)
    if width == 1:
        return None
    bits = [f"{name}[{i}]" for i in range(width)]
    if all(wires.get(bit) == 1 for bit in bits):
        return "{" + ", ".join(escaped(bit) for bit in reversed(bits)) + "}"
    return None


def routed_wrapper(verilog: str, board: str, time_width: int) -> tuple[str, dict]:
    """The wrapper of the routed top ``verilog``, and what it found inside: bench name -> the net's name, or None
    where the netlist has none."""
    from ...hdl.appliance.core import APPLIANCE_COUNTERS
    lines = wrapper_pins(verilog, board, "routed ")
    wires = _wires(verilog)
    tx_clocks = sorted(name for name in wires if name.endswith(".eth_tx_clk") and wires[name] == 1)
    wanted = {"clk": ("core.clk", 1), "eth_tx_clk": (tx_clocks[0] if tx_clocks else "eth_tx_clk", 1),
              "pll_lock": ("pll.locked", 1), "now_us": ("core.i__payload.user.time", time_width)}
    for name in APPLIANCE_COUNTERS:
        port = re.fullmatch(r"port([01])_(\w+)", name)
        wanted[name] = (f"core.port{port.group(1)}.{port.group(2)}" if port else f"core.{name}", 32)
    found = {}
    for ours, (net, width) in wanted.items():
        reference = _reference(wires, net, width)
        found[ours] = net if reference else None
        if reference:
            lines.append(f"  wire {f'[{width - 1}:0] ' if width > 1 else ''}{ours} = {reference};")
        elif ours in ("clk", "eth_tx_clk", "pll_lock", "now_us", "dedup_frames"):
            raise ValueError(f"the routed {board} top has no net {net} ({width} bits) for the benches' {ours}")
    # one pulse per frame the de-duplicator decides (see the module's notes)
    lines += ["  reg [31:0] frames_before = 0;", "  always @(posedge clk) frames_before <= dedup_frames;",
              "  wire frame_start = dedup_frames != frames_before;", "endmodule"]
    return "\n".join(lines) + "\n", found


def swap_routed_read_halves(verilog: str, instance: str) -> str:
    """The routed ``verilog`` with the DP16KD ``instance`` (its net name, e.g.
    ``core.dedup.core.segments.segment0.ebr_r0_c0``) wired wrong on purpose: its DOA and DOB pins swapped."""
    match = re.search(rf"^  DP16KD #\((?:.|\n)*?\) \\{re.escape(instance)} +\((?:.|\n)*?\);", verilog, re.MULTILINE)
    if match is None:
        raise ValueError(f"no DP16KD instance {instance} in the routed netlist")
    swapped = re.sub(r"\.DO([AB])(\d+)\(", lambda m: f".DO{'B' if m.group(1) == 'A' else 'A'}{m.group(2)}(",
                     match.group(0))
    return verilog[:match.start()] + swapped + verilog[match.end():]


def run_routed_board(build_dir, board: str, routed_json, options: dict, *, testcase=None, seed: int = 1,
                     waves: bool = False, swap_dp16kd: str | None = None) -> Path:
    """Write ``routed_json`` (nextpnr's routed design of ``board``'s appliance, built with ``options``: the build
    folder's ``options.json``) as Verilog in ``build_dir``, build it with its wrapper and the models on Icarus and
    run ``testcase`` (default :data:`ROUTED_BENCHES`) on it; returns ``<build_dir>/results.xml``. What the wrapper
    found inside the netlist is in ``<build_dir>/nets.json``. With ``swap_dp16kd``, that DP16KD is wired wrong on
    purpose (:func:`swap_routed_read_halves`).

    Raises
    ------
    ValueError
        If the netlist lacks a net the benches cannot do without (the clocks, the PLL's lock, the time, the
        de-duplicator's frame counter).
    """
    from cocotb_tools.runner import get_runner

    from ...hdl.appliance.top import ApplianceTop
    from ...hdl.appliance.core import USER_HZ
    check_simulator("icarus")
    build_dir = Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    routed_json = Path(routed_json).resolve()
    top = build_dir / "routed_top.v"
    if not top.exists() or top.stat().st_mtime < routed_json.stat().st_mtime:
        routed_verilog(routed_json, top)
    if swap_dp16kd is not None:
        swapped = build_dir / "routed_top_swapped.v"
        _write_if_changed(swapped, swap_routed_read_halves(top.read_text(), swap_dp16kd))
        top = swapped
    config = options["config"]
    wrapper, found = routed_wrapper(top.read_text(), board, config["time_width"])
    _write_if_changed(build_dir / f"{TB}.v", wrapper)
    (build_dir / "nets.json").write_text(json.dumps(found, indent=2) + "\n")
    runner = get_runner("icarus")
    runner.build(sources=[top, build_dir / f"{TB}.v", *routed_models(build_dir)], hdl_toplevel=TB,
                 build_dir=build_dir, timescale=("1ns", "1fs"), build_args=["-g2005"], always=False)
    env = {PARAMS_ENV: json.dumps({"config": config, "action": options["action"], "key": options["key"],
                                   "tick_cycles": round(USER_HZ / 1e6),
                                   "divisor": round(USER_HZ) // ApplianceTop.baud, "dram": None, "board": board,
                                   "xtal_nominal_fs": BOARDS[board][1], "xtal_period_fs": BOARDS[board][2]})}
    results_xml = build_dir / "results.xml"
    results_xml.unlink(missing_ok=True)
    return runner.test(test_module=TEST_MODULE, hdl_toplevel=TB, build_dir=build_dir,
                       testcase=list(ROUTED_BENCHES) if testcase is None else testcase, seed=seed, extra_env=env,
                       waves=waves, results_xml=str(results_xml), timescale=("1ns", "1fs"))
