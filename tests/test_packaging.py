# amaranth: UnusedElaboratable=no
"""The distribution: ``python -m build`` makes an sdist and a wheel (from the sdist); the wheel installs only the
apbbf.* namespace (model/, hdl/, sim/ mapped under it), and installed into a fresh environment (not editable,
its dependencies from the package index or pip's cache) its commands work, so a module or data file missing from
the wheel fails here.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import apbbf
from apbbf.toolchain import find_yosys

ROOT = Path(__file__).resolve().parent.parent


#: Not part of a clean checkout: an old ``*.egg-info`` (the editable install's) would add the files it lists to the
#: sdist, and hide a package missing from pyproject.toml.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache")


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """``python -m build`` of a clean copy of the repository: (sdist, wheel). No build isolation: setuptools is
    pinned in requirements.txt and installed by ``make setup``."""
    source = tmp_path_factory.mktemp("source") / "apbbf"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                   check=True, capture_output=True, timeout=300)
    sdist, = out.glob("apbbf-*.tar.gz")
    wheel, = out.glob("apbbf-*.whl")
    return sdist, wheel


def test_wheel_contains_only_apbbf(dist):
    _, wheel = dist
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert top <= {"apbbf", f"apbbf-{apbbf.__version__}.dist-info"}, top
    for module in ("apbbf/model/filters.py", "apbbf/hdl/core/apbbf.py", "apbbf/hdl/lib/devices.py",
                   "apbbf/hdl/packet/dedup.py", "apbbf/hdl/export/verilog.py", "apbbf/hdl/board/boards.py", "apbbf/sim/harness.py",
                   "apbbf/sim/verilator.py", "apbbf/sim/cocotb/runner.py", "apbbf/cli.py", "apbbf/toolchain.py",
                   "apbbf/flows/bench.py", "apbbf/fusesoc/apbbf.core", "apbbf/fusesoc/apbbf_gen.py",
                   "apbbf/hdl/eth/mac.py", "apbbf/sim/cocotb/mac_runner.py"):
        assert module in names, f"{module} missing from the wheel"
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "apbbf = apbbf.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    metadata = zipfile.ZipFile(wheel).read(f"apbbf-{apbbf.__version__}.dist-info/METADATA").decode()
    assert "License-Expression: BSD-2-Clause" in metadata


def test_wheel_has_every_module(dist):
    """Every Python module of the source folders is in the wheel under ``apbbf.*`` (a package left out of
    pyproject.toml's list would still import from a checkout, and fail only once installed)."""
    _, wheel = dist
    names = set(zipfile.ZipFile(wheel).namelist())
    where = {"model": "apbbf/model", "hdl": "apbbf/hdl", "sim": "apbbf/sim", "apbbf": "apbbf"}
    missing = [str(path) for folder, target in where.items() for path in (ROOT / folder).rglob("*.py")
               if "__pycache__" not in path.parts
               and f"{target}/{path.relative_to(ROOT / folder).as_posix()}" not in names]
    assert missing == []


def test_sdist_has_the_sources(dist):
    sdist, _ = dist
    names = {name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name}
    for path in ("pyproject.toml", "README.md", "model/config.py", "hdl/core/apbbf.py", "sim/cycles.py",
                 "apbbf/fusesoc/apbbf.core"):
        assert path in names, f"{path} missing from the sdist"


@pytest.mark.slow
def test_installed_wheel_works(dist, tmp_path):
    """A fresh environment with the wheel (not editable): ``apbbf analyze``, ``params`` and ``export`` run, with
    Yosys from this environment (``YOSYS``), and the FuseSoC core is found."""
    _, wheel = dist
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(YOSYS=find_yosys(), PATH=os.pathsep.join([str(venv / "bin"), env.get("PATH", "")]))

    def run(*args):
        result = subprocess.run([*map(str, args)], cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, f"{args}: {result.stdout}{result.stderr}"
        return result.stdout

    where = run(python, "-c", "import apbbf; print(apbbf.__file__)")
    assert Path(where.strip()).is_relative_to(venv), f"apbbf imported from {where}, not the fresh environment"
    analysis = json.loads(run(venv / "bin" / "apbbf", "analyze", "--k", "3", "--l", "8", "--json"))
    assert 0 < analysis["fp"] < 1
    params = json.loads(run(venv / "bin" / "apbbf", "params", "--fp", "1e-3", "--window", "10000", "--json"))
    assert params["window"] >= 10000
    run(venv / "bin" / "apbbf", "export", "--k", "2", "--l", "3", "--segment-blocks", "4", "--scan", "parallel",
        "-o", tmp_path / "apbbf.v")
    text = (tmp_path / "apbbf.v").read_text()
    assert "module apbbf_axis(" in text and "scan=parallel" in text
    core_dir = Path(run(python, "-m", "apbbf.fusesoc", "--core-dir").strip())
    assert (core_dir / "apbbf.core").is_file() and (core_dir / "apbbf_gen.py").is_file()
    # every host-side module imports without the test tools (cocotb, matplotlib) installed
    run(python, "-c", "import apbbf.export, apbbf.host, apbbf.toolchain, apbbf.flows.board, apbbf.flows.fmax, "
                      "apbbf.flows.bench, apbbf.hdl.board.boards, apbbf.sim.verilator, apbbf.sim.cocotb.runner")
