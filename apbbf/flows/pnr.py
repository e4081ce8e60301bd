"""Synthesis and place-and-route of one design for a board's device, for its post-route Fmax.

A board top is built by its platform's own build script (:mod:`apbbf.flows.board`); the designs here have no
board pins (:mod:`apbbf.flows.designs`), so they go through ``synth_<family>`` and nextpnr directly, with the
board's device options (:func:`apbbf.toolchain.nextpnr_device_args`), a deliberately high target (``--freq``) and
``--timing-allow-fail``; the achieved post-route Fmax is read from ``--report``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .. import toolchain

__all__ = ["Target", "TARGETS", "target_platform", "run_pnr", "run_pnr_cached", "core_pnr", "bram_pnr"]


@dataclass(frozen=True)
class Target:
    """Where the Fmax runs of one FPGA family go.

    Attributes
    ----------
    board : str
        The board (a key of :data:`apbbf.hdl.boards.BOARDS`) whose platform names the device, package and speed.
    core_mhz : float
        nextpnr's ``--freq`` for the core: above what it reaches, so that the placer works for speed.
    bram_mhz : float
        nextpnr's ``--freq`` for one block RAM.
    """

    board: str
    core_mhz: float
    bram_mhz: float


#: FPGA family -> :class:`Target`
TARGETS = {
    "ecp5": Target("ulx3s-85f", core_mhz=200, bram_mhz=400),
    "ice40": Target("icebreaker", core_mhz=100, bram_mhz=250),
}


def target_platform(family: str):
    """A new instance of the platform whose device the Fmax runs of ``family`` target.

    Raises
    ------
    ValueError
        If ``family`` is not a key of :data:`TARGETS`.
    """
    from ..hdl.boards import BOARDS
    if family not in TARGETS:
        raise ValueError(f"family must be one of {', '.join(TARGETS)}, not {family!r}")
    return BOARDS[TARGETS[family].board].make_platform()


def _rtlil(design) -> str:
    from amaranth.back import rtlil
    return rtlil.convert(design, name="top")


def _pnr(rtlil_text: str, platform, work: Path, freq_mhz: float) -> dict:
    family = toolchain.family(platform)
    env = toolchain.tool_environ()
    work.mkdir(parents=True, exist_ok=True)
    (work / "core.il").write_text(rtlil_text)
    start = time.monotonic()
    # YoWASP cannot open absolute /tmp paths: run in the work directory with relative names
    subprocess.run([toolchain.find_yosys(), "-q", "-l", "synth.log", "-p",
                    f"read_rtlil core.il; synth_{family} -top top -json core.json; stat"],
                   cwd=work, check=True, env=env)
    nextpnr = env.get(f"NEXTPNR_{family.upper()}") or f"nextpnr-{family}"
    subprocess.run([nextpnr, *toolchain.nextpnr_device_args(platform), "--json", "core.json",
                    "--freq", str(freq_mhz), "--timing-allow-fail", "--report", "report.json", "--log", "pnr.log",
                    "--quiet"], cwd=work, check=True, env=env)
    report = json.loads((work / "report.json").read_text())
    raw = toolchain.yosys_cells((work / "synth.log").read_text())
    fmax = max((v["achieved"] for v in report.get("fmax", {}).values()), default=None)
    utilization = {k: v for k, v in report.get("utilization", {}).items() if v.get("used")}
    bram_util = utilization.get(toolchain.NEXTPNR_BRAM[family])
    return {"device": platform.device, "fmax_mhz": round(fmax, 2) if fmax else None,
            "cells": toolchain.group_cells(raw, family), "utilization": utilization,
            "bram_cells": {c: raw[c] for c in toolchain.CELLS[family]["brams"] if raw.get(c)},
            "bram_used": f"{bram_util['used']}/{bram_util['available']}" if bram_util else "0",
            "critical_path": toolchain.critical_path((work / "pnr.log").read_text()),
            "seconds": round(time.monotonic() - start, 1)}


def run_pnr(design, platform, work, *, freq_mhz: float) -> dict:
    """Synthesize ``design`` for ``platform``'s device and place and route it.

    Parameters
    ----------
    design : amaranth.hdl.Elaboratable
        A design whose ports become the top's pins (unconstrained: nextpnr places them).
    platform : amaranth.vendor.SiliconBluePlatform or amaranth.vendor.LatticePlatform (ECP5)
        The board platform that names the device (:func:`target_platform`).
    work : str or os.PathLike
        Work directory (inputs, logs, reports).
    freq_mhz : float
        nextpnr's ``--freq`` target.

    Returns
    -------
    dict
        ``device``, ``fmax_mhz`` (post-route), ``cells`` (:func:`apbbf.toolchain.group_cells`),
        ``utilization`` (nextpnr's, used resources only), ``bram_cells``, ``bram_used`` ("used/available"),
        ``critical_path`` (:func:`apbbf.toolchain.critical_path`), ``seconds``.

    Raises
    ------
    ValueError
        If the platform's family is not supported.
    subprocess.CalledProcessError
        If Yosys or nextpnr fails.
    """
    return _pnr(_rtlil(design), platform, Path(work), freq_mhz)


def run_pnr_cached(design, platform, work, *, freq_mhz: float, reuse: bool) -> dict:
    """:func:`run_pnr`, with the result kept in ``<work>/result.json`` under a hash of the design's RTLIL and the
    nextpnr arguments; with ``reuse``, a kept result of the same hash is returned (``"cached": True``) instead of
    running the tools again."""
    work = Path(work)
    text = _rtlil(design)
    args = [*toolchain.nextpnr_device_args(platform), str(freq_mhz)]
    digest = hashlib.sha256((text + json.dumps(args)).encode()).hexdigest()
    cache = work / "result.json"
    if reuse and cache.exists():
        cached = json.loads(cache.read_text())
        if cached.get("hash") == digest:
            return {**cached, "cached": True}
    result = {**_pnr(text, platform, work, freq_mhz), "hash": digest, "cached": False}
    cache.write_text(json.dumps(result, indent=2) + "\n")
    return result


def core_pnr(config, family: str, work, *, scan: str = "fsm", reuse: bool = False) -> dict:
    """Post-route Fmax of the bare core (:class:`~apbbf.flows.designs.RegisteredCore`) on ``family``'s target
    device (:data:`TARGETS`).

    Parameters
    ----------
    config : Config
    family : {"ecp5", "ice40"}
    work : str or os.PathLike
    scan : {"fsm", "parallel"}
    reuse : bool
        Return a kept result of the same design (:func:`run_pnr_cached`).

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If ``family`` or ``scan`` is unknown, or the filter does not fit the device's block RAM
        (:func:`apbbf.hdl.devices.check_memory`).
    subprocess.CalledProcessError
        If Yosys or nextpnr fails.
    """
    from ..hdl.devices import check_memory
    from .designs import RegisteredCore
    platform = target_platform(family)
    check_memory(config, platform.device)
    return run_pnr_cached(RegisteredCore(config, scan), platform, work, freq_mhz=TARGETS[family].core_mhz,
                          reuse=reuse)


def bram_pnr(family: str, work, *, reuse: bool = False) -> dict:
    """Post-route Fmax of one block RAM (:class:`~apbbf.flows.designs.BlockRAMProbe`) of ``family``'s target
    device; the result also gives the probed ``bram_shape``.

    Raises
    ------
    ValueError
        If ``family`` is unknown.
    subprocess.CalledProcessError
        If Yosys or nextpnr fails.
    """
    from ..hdl.devices import block_ram
    from .designs import BlockRAMProbe
    platform = target_platform(family)
    probe = BlockRAMProbe(block_ram(platform.device))
    result = run_pnr_cached(probe, platform, work, freq_mhz=TARGETS[family].bram_mhz, reuse=reuse)
    return {**result, "bram_shape": {"width": probe.WIDTH, "depth": probe.depth}}
