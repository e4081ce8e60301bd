# amaranth: UnusedElaboratable=no
"""The filter with its segments in the 5A-75B's SDR SDRAM, for the cocotb benches of
:mod:`apbbf.sim.cocotb.dram_filter_tests`: :class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF` on a generated
LiteDRAM core (:class:`~apbbf.hdl.dram.litedram.LiteDRAMMemory`, which starts it without a CPU), its commands and
answers as the AXI4-Stream ports of ``apbbf_axis``, and the SDRAM chip model
(:class:`~apbbf.sim.cocotb.sdram_chip.SdramChip`) on the pins.

The wrapper (``dram_filter_tb``) holds the top's inputs as its own signals and adds what the board adds, as
:mod:`apbbf.sim.cocotb.dram_runner`'s does: the data bus, driven by the core's ``TRELLIS_IO`` buffers and by the
chip model through one enable per byte lane, and the chip's clock, the sys clock inverted.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from amaranth import ClockDomain, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...hdl.core.memory_apbbf import MemoryAPBBF
from ...hdl.dram.litedram import LiteDRAMMemory
from ...hdl.export.axis import CommandFormat, connect_core, stream_members
from ...model.config import Config
from .dram_runner import _write_if_changed, ecp5_sim_library
from .runner import check_simulator

__all__ = ["DRAMFilter", "TB", "TOP", "TEST_MODULE", "PARAMS_ENV", "run"]

TB = "dram_filter_tb"
TOP = "apbbf_dram_filter"
TEST_MODULE = "apbbf.sim.cocotb.dram_filter_tests"
PARAMS_ENV = "APBBF_DRAM_FILTER_PARAMS"


class DRAMFilter(wiring.Component):
    """``apbbf_axis``'s ports (:func:`~apbbf.hdl.export.axis.stream_members`) around a :class:`MemoryAPBBF` whose
    memory is a LiteDRAM SDR core in the ``aclk`` domain; ``dram_ready`` once the core is initialised (commands
    wait until then, and while the filter clears its memory); the SDRAM pins as ``sdram_*`` ports. The core's
    requests are in ``one_row`` order, as the appliance's, unless ``one_row=False``."""

    def __init__(self, config: Config, settings: dict, csrs: dict, *, depth: int = 8, power_up_us: float = 200.0,
                 one_row: bool = True):
        self._config = config
        self._core = MemoryAPBBF(config, depth=depth, one_row=one_row)
        self._memory = LiteDRAMMemory(config, settings, csrs, power_up_us=power_up_us)
        super().__init__({**stream_members(config, CommandFormat(config)), "dram_ready": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync", local=True)
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]
        m.submodules.core = core = self._core
        m.submodules.memory = memory = self._memory
        connect_core(m, self, core, self._config)
        wiring.connect(m, core.memory, memory.memory)
        m.d.comb += self.dram_ready.eq(memory.ready)
        return m


def _wrapper(top: DRAMFilter) -> str:
    """The wrapper module around ``apbbf_dram_filter`` (see the module's documentation)."""
    lines = ["`timescale 1ns / 1ps", f"module {TB};"]
    names = []
    for name, member in top.signature.members.items():
        width = member.shape.width if hasattr(member.shape, "width") else len(getattr(top, name))
        vector = f"[{width - 1}:0] " if width > 1 else ""
        lines.append(f"  reg {vector}{name} = 0;" if member.flow == In else f"  wire {vector}{name};")
        names.append(name)
    for name, pin in top._memory.pins.items():
        vector = f"[{len(pin) - 1}:0] " if len(pin) > 1 else ""
        lines.append(f"  wire {vector}sdram_{name};")
        names.append(f"sdram_{name}")
    dq = len(top._memory.pins["dq"])
    lines += ["  wire sdram_clk = ~aclk;", f"  reg [{dq - 1}:0] dq_drive = 0;", f"  reg [{dq // 8 - 1}:0] dq_oe = 0;",
              # the 5A-75B ties CS# low, CKE high and DQM low: the chip model may see those instead of the core's
              "  wire chip_cs_n = 1'b0;", "  wire chip_cke = 1'b1;", f"  wire [{dq // 8 - 1}:0] chip_dm = 0;"]
    for lane in range(dq // 8):
        hi, lo = 8 * lane + 7, 8 * lane
        lines.append(f"  assign sdram_dq[{hi}:{lo}] = dq_oe[{lane}] ? dq_drive[{hi}:{lo}] : 8'bz;")
    lines.append(f"  {TOP} top (" + ", ".join(f".{n}({n})" for n in names) + ");")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def run(config: Config, core, build_dir, *, testcase=None, seed: int = 1, depth: int = 8,
        power_up_us: float = 200.0, one_row: bool = True, params: dict | None = None) -> Path:
    """Export :class:`DRAMFilter` (``depth``, ``one_row``) for ``config`` on the generated ``core``
    (:func:`apbbf.flows.litedram.generate`), build it with the core and yosys's ECP5 models for Icarus in
    ``build_dir`` and run the benches of
    :data:`TEST_MODULE`; returns the results file (a failed test raises ``SystemExit``, as cocotb's runner does).

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF` and :class:`~apbbf.hdl.dram.litedram.LiteDRAMMemory`.
    RuntimeError
        If Icarus or Yosys is missing.
    """
    from cocotb_tools.runner import get_runner

    from ...hdl.export.verilog import _convert

    check_simulator("icarus")
    build_dir = Path(build_dir).resolve()
    top = DRAMFilter(config, core.settings, core.csrs(), depth=depth, power_up_us=power_up_us, one_row=one_row)
    _write_if_changed(build_dir / f"{TOP}.v", _convert(top, TOP))
    _write_if_changed(build_dir / f"{TB}.v", "// icarus -g2005\n" + _wrapper(top))
    library = ecp5_sim_library(build_dir)
    runner = get_runner("icarus")
    # Verilog-2005, as the LiteDRAM bench (dram_runner.build says why)
    runner.build(sources=[core.verilog, build_dir / f"{TOP}.v", build_dir / f"{TB}.v", library], hdl_toplevel=TB,
                 build_args=["-g2005"], build_dir=build_dir, timescale=("1ns", "1ps"), waves=False)
    env = {PARAMS_ENV: json.dumps({**(params or {}), "config": dataclasses.asdict(config), "depth": depth,
                                   "one_row": one_row, "power_up_us": power_up_us, "settings": core.settings})}
    results = build_dir / "results.xml"
    results.unlink(missing_ok=True)
    return runner.test(test_module=TEST_MODULE, hdl_toplevel=TB, build_dir=build_dir, testcase=testcase, seed=seed,
                       extra_env=env, waves=False, results_xml=str(results), timescale=("1ns", "1ps"))
