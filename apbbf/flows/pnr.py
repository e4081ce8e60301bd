"""Synthesis and place-and-route of one design for a board's device, for its post-route Fmax.

A board top is built by its platform's own build script (:mod:`apbbf.flows.board`); the designs here have no
board pins (:mod:`apbbf.sim.designs`), so they go through ``synth_<family>`` and nextpnr directly, with the
board's device options (:func:`apbbf.toolchain.nextpnr_device_args`), a deliberately high target (``--freq``) and
``--timing-allow-fail``; the achieved post-route Fmax is read from ``--report``.

The design is elaborated for the board's platform (so that the segments are built from that family's block RAM
primitives, as in a board build), synthesized once and placed and routed with each of :data:`SEEDS`: placement
is randomized, and one seed's Fmax can be 10 % off another's. The figure reported is the median of the seeds,
with their spread.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .. import toolchain

__all__ = ["Target", "TARGETS", "SEEDS", "JOBS", "PNR_TIMEOUT_S", "target_platform", "rtlil_text", "synthesize",
           "run_pnr", "run_pnr_cached", "core_pnr", "bram_pnr"]

#: nextpnr placer seeds of every Fmax figure (``--seed``): the figure is their median.
SEEDS = (1, 2, 3)
#: Seconds one nextpnr run of a benchmark may take before it counts as not routed (its seed then has no Fmax).
PNR_TIMEOUT_S = 15 * 60
#: nextpnr runs at once by default (the seeds of one design are independent runs; this machine has 2 cores).
JOBS = 2


@dataclass(frozen=True)
class Target:
    """Where the Fmax runs of one FPGA family go.

    Attributes
    ----------
    board : str
        The board (a key of :data:`apbbf.hdl.board.boards.BOARDS`) whose platform names the device, package and speed.
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
    from ..hdl.board.boards import BOARDS
    if family not in TARGETS:
        raise ValueError(f"family must be one of {', '.join(TARGETS)}, not {family!r}")
    return BOARDS[TARGETS[family].board].make_platform()


def rtlil_text(design, platform) -> str:
    """``design`` elaborated for ``platform`` as RTLIL text, its top named ``top`` (what :func:`run_pnr_cached`
    takes in place of a design, so that the elaboration can stay in the caller's thread)."""
    from amaranth.back import rtlil
    return rtlil.convert(design, name="top", platform=platform)


_rtlil = rtlil_text


def _check_seeds(seeds) -> tuple:
    from ..model.config import check_integer
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("seeds must name at least one nextpnr seed")
    for seed in seeds:
        check_integer("seed", seed, range(0, 1 << 31))
    return seeds


def _check_jobs(jobs) -> int:
    from ..model.config import check_integer
    check_integer("jobs", jobs, range(1, 65))
    return jobs


def _nextpnr(platform, work: Path, env: dict, freq_mhz: float, seed: int, nextpnr_args, timeout_s) -> dict:
    """One nextpnr run of ``work/core.json`` with ``seed``: its Fmax, utilization, critical path, seconds."""
    family = toolchain.family(platform)
    nextpnr = env.get(f"NEXTPNR_{family.upper()}") or f"nextpnr-{family}"
    t = time.monotonic()
    report_name, log_name = f"report-seed{seed}.json", f"pnr-seed{seed}.log"
    (work / report_name).unlink(missing_ok=True)
    try:
        subprocess.run([nextpnr, *toolchain.nextpnr_device_args(platform), "--json", "core.json",
                        "--freq", str(freq_mhz), "--seed", str(seed), "--timing-allow-fail", *nextpnr_args,
                        "--report", report_name, "--log", log_name, "--quiet"], cwd=work, check=True, env=env,
                       timeout=timeout_s)
    except subprocess.TimeoutExpired:
        # Not routed within the budget: no Fmax for this seed (the log says how far the router got).
        return {"fmax_mhz": None, "utilization": {}, "critical_path": {}, "timed_out": True,
                "seconds": round(time.monotonic() - t, 1)}
    report = json.loads((work / report_name).read_text())
    fmax = max((v["achieved"] for v in report.get("fmax", {}).values()), default=None)
    return {"fmax_mhz": round(fmax, 2) if fmax else None,
            "utilization": {k: v for k, v in report.get("utilization", {}).items() if v.get("used")},
            "critical_path": toolchain.critical_path((work / log_name).read_text()),
            "seconds": round(time.monotonic() - t, 1)}


#: ``synth_ecp5`` with the classic ``abc`` LUT mapping in place of its ``map_luts`` step (abc9).
CLASSIC_ECP5 = ("synth_ecp5 -top top -run :map_luts; abc -dress -lut 4:7; "
                "synth_ecp5 -top top -run map_cells: -json core.json")


def synthesize(rtlil_text: str, family: str, work) -> str:
    """Yosys's ``synth_<family>`` of ``rtlil_text`` (top ``top``) in ``work``: the netlist in ``core.json``, the
    log in ``synth.log`` (with ``stat``).

    Two failures of Yosys 0.70's ``abc9`` are taken around: on an ECP5 netlist whose reintegration fails an
    assertion (``ABC_OPS_REINTEGRATE``), the classic ``abc`` LUT mapping in place of ``synth_ecp5``'s
    ``map_luts`` step (:data:`CLASSIC_ECP5`); on a netlist left with a wire driven twice
    (:func:`apbbf.toolchain.conflicting_drivers`), the same synthesis with :data:`apbbf.toolchain.ABC9_XAIGER1`
    first, and the classic mapping if that fails the reintegration.

    Returns
    -------
    str
        The commands run after ``read_rtlil``.

    Raises
    ------
    subprocess.CalledProcessError
        If Yosys fails otherwise.
    RuntimeError
        If the netlist still has a wire with more than one driver (the message names the first five): one in the
        design itself.
    """
    work = Path(work)
    env = toolchain.tool_environ()
    work.mkdir(parents=True, exist_ok=True)
    (work / "core.il").write_text(rtlil_text)

    def run(synth):
        # YoWASP cannot open absolute /tmp paths: run in the work directory with relative names
        subprocess.run([toolchain.find_yosys(), "-q", "-l", "synth.log", "-p", f"read_rtlil core.il; {synth}; stat"],
                       cwd=work, check=True, env=env)
        return toolchain.conflicting_drivers((work / "synth.log").read_text())

    def reintegration_failed():
        # Yosys stopped in abc9's reintegration: the last pass the log names is ABC_OPS_REINTEGRATE.
        log = (work / "synth.log").read_text()
        return family == "ecp5" and log.startswith("Executing ABC_OPS_REINTEGRATE", log.rfind("Executing "))

    def run_mapped(synth):
        # The reintegration's assertion, on some large ECP5 netlists: the classic mapping instead.
        try:
            return synth, run(synth)
        except subprocess.CalledProcessError:
            if not reintegration_failed():
                raise
            return CLASSIC_ECP5, run(CLASSIC_ECP5)

    synth, conflicts = run_mapped(f"synth_{family} -top top -json core.json")
    if conflicts:
        # A flip-flop mapped twice onto one wire: nextpnr would stop there ("is multiply driven"). abc9 on the
        # first format can fail the reintegration where the second format mapped (four lanes of the bench's
        # Config); the classic mapping gives one driver too.
        synth, conflicts = run_mapped(toolchain.with_abc9_xaiger1(synth, "; "))
        if conflicts:
            raise RuntimeError(f"Yosys left wires with more than one driver ({work / 'synth.log'}): "
                               f"{', '.join(conflicts[:5])}")
    return synth


def _pnr(rtlil_text: str, platform, work: Path, freq_mhz: float, seeds, nextpnr_args=(),
         timeout_s: float | None = None, jobs: int = 1, pool=None) -> dict:
    family = toolchain.family(platform)
    env = toolchain.tool_environ()
    start = time.monotonic()
    synth = synthesize(rtlil_text, family, work)
    synth_seconds = time.monotonic() - start
    raw = toolchain.yosys_cells((work / "synth.log").read_text())
    # The seeds are independent runs: up to `jobs` at once (threads that each wait on a nextpnr process), or on
    # the caller's `pool`, which several designs may share.
    if pool is None:
        with ThreadPoolExecutor(max_workers=jobs) as own:
            futures = {seed: own.submit(_nextpnr, platform, work, env, freq_mhz, seed, nextpnr_args, timeout_s)
                       for seed in seeds}
            runs = {seed: future.result() for seed, future in futures.items()}
    else:
        futures = {seed: pool.submit(_nextpnr, platform, work, env, freq_mhz, seed, nextpnr_args, timeout_s)
                   for seed in seeds}
        runs = {seed: future.result() for seed, future in futures.items()}
    reached = sorted((run["fmax_mhz"], seed) for seed, run in runs.items() if run["fmax_mhz"] is not None)
    median = statistics.median_low(reached)[1] if reached else seeds[0]     # a seed that was run: its path
    utilization = runs[median]["utilization"]
    bram_util = utilization.get(toolchain.NEXTPNR_BRAM[family])
    fmaxes = [f for f, _ in reached]
    return {"device": platform.device,
            "fmax_mhz": round(statistics.median(fmaxes), 2) if fmaxes else None,
            "fmax_min_mhz": min(fmaxes, default=None), "fmax_max_mhz": max(fmaxes, default=None),
            "spread_mhz": round(max(fmaxes) - min(fmaxes), 2) if fmaxes else None,
            "seeds": {str(seed): run["fmax_mhz"] for seed, run in runs.items()},
            "seed_seconds": {str(seed): run["seconds"] for seed, run in runs.items()},
            "seed_utilization": {str(seed): run["utilization"] for seed, run in runs.items()},
            "timed_out": [seed for seed, run in runs.items() if run.get("timed_out")],
            "nextpnr_args": list(nextpnr_args),
            "cells": toolchain.group_cells(raw, family), "utilization": utilization,
            "bram_cells": {c: raw[c] for c in toolchain.CELLS[family]["brams"] if raw.get(c)},
            "bram_used": f"{bram_util['used']}/{bram_util['available']}" if bram_util else "0",
            "critical_path": runs[median]["critical_path"], "critical_path_seed": median,
            "critical_paths": {str(seed): run["critical_path"] for seed, run in runs.items()},
            "synth": synth, "synth_seconds": round(synth_seconds, 1),
            "seconds": round(time.monotonic() - start, 1)}


def run_pnr(design, platform, work, *, freq_mhz: float, seeds=SEEDS, nextpnr_args=(),
            timeout_s: float | None = None, jobs: int = 1, pool=None) -> dict:
    """Synthesize ``design`` for ``platform``'s device and place and route it once per seed.

    Parameters
    ----------
    design : amaranth.hdl.Elaboratable
        A design whose ports become the top's pins (unconstrained: nextpnr places them); it is elaborated for
        ``platform``.
    platform : amaranth.vendor.SiliconBluePlatform or amaranth.vendor.LatticePlatform (ECP5)
        The board platform that names the device (:func:`target_platform`).
    work : str or os.PathLike
        Work directory (inputs, logs, reports).
    freq_mhz : float
        nextpnr's ``--freq`` target.
    seeds : iterable of int
        nextpnr's ``--seed`` values, one run each (default :data:`SEEDS`).
    nextpnr_args : sequence of str
        More nextpnr options (e.g. ``("--router", "router2")``).
    timeout_s : float, optional
        Seconds one nextpnr run may take; a run stopped at the limit has no Fmax (its seed is listed in
        ``timed_out``).
    jobs : int
        nextpnr runs at once, 1..64 (each seed is a run of its own).
    pool : concurrent.futures.Executor, optional
        Where the runs go instead (``jobs`` is then unused): a pool several designs share.

    Returns
    -------
    dict
        ``device``; ``fmax_mhz``, the median post-route Fmax of the seeds, with ``fmax_min_mhz``,
        ``fmax_max_mhz``, ``spread_mhz`` and ``seeds`` (seed -> Fmax); ``cells``
        (:func:`apbbf.toolchain.group_cells`); ``utilization`` (nextpnr's, used resources only), ``bram_cells``,
        ``bram_used`` ("used/available") and ``critical_path`` (:func:`apbbf.toolchain.critical_path`) of the
        median seed (``critical_path_seed``), ``critical_paths`` of every seed; ``seed_seconds`` (seed -> seconds
        of its nextpnr run), ``seed_utilization`` (seed -> its ``utilization``), ``timed_out`` (the seeds stopped at ``timeout_s``), ``nextpnr_args``; ``synth``
        (Yosys's commands after ``read_rtlil``: with :data:`~apbbf.toolchain.ABC9_XAIGER1` first where the
        first synthesis left a wire with two drivers), ``synth_seconds``, ``seconds``.

    Raises
    ------
    TypeError, ValueError
        If the platform's family is not supported, a seed is not an integer from 0 to 2**31-1, or ``jobs`` is
        not an integer from 1 to 64.
    subprocess.CalledProcessError
        If Yosys or nextpnr fails.
    RuntimeError
        If the synthesis leaves a wire with more than one driver, with :data:`~apbbf.toolchain.ABC9_XAIGER1` too
        (the message names the first five).
    """
    seeds, jobs = _check_seeds(seeds), _check_jobs(jobs)
    return _pnr(_rtlil(design, platform), platform, Path(work), freq_mhz, seeds, tuple(nextpnr_args), timeout_s,
                jobs, pool)


def run_pnr_cached(design, platform, work, *, freq_mhz: float, reuse: bool, seeds=SEEDS, nextpnr_args=(),
                   timeout_s: float | None = None, jobs: int = 1, pool=None) -> dict:
    """:func:`run_pnr`, with the result kept in ``<work>/result.json`` under a hash of the design's RTLIL and the
    nextpnr arguments (seeds and ``nextpnr_args`` included); with ``reuse``, a kept result of the same hash is
    returned (``"cached": True``) instead of running the tools again. ``design`` may also be its
    :func:`rtlil_text`."""
    work = Path(work)
    seeds, jobs = _check_seeds(seeds), _check_jobs(jobs)
    nextpnr_args = tuple(nextpnr_args)
    text = design if isinstance(design, str) else _rtlil(design, platform)
    args = [*toolchain.nextpnr_device_args(platform), str(freq_mhz), *map(str, seeds), *nextpnr_args]
    digest = hashlib.sha256((text + json.dumps(args)).encode()).hexdigest()
    cache = work / "result.json"
    if reuse and cache.exists():
        cached = json.loads(cache.read_text())
        if cached.get("hash") == digest:
            return {**cached, "cached": True}
    result = {**_pnr(text, platform, work, freq_mhz, seeds, nextpnr_args, timeout_s, jobs, pool), "hash": digest,
              "cached": False}
    cache.write_text(json.dumps(result, indent=2) + "\n")
    return result


def core_pnr(config, family: str, work, *, scan: str = "fsm", reuse: bool = False, seeds=SEEDS,
             timeout_s: float | None = None, nextpnr_args=()) -> dict:
    """Post-route Fmax of the bare core (:class:`~apbbf.sim.designs.RegisteredCore`) on ``family``'s target
    device (:data:`TARGETS`).

    Parameters
    ----------
    config : Config
    family : {"ecp5", "ice40"}
    work : str or os.PathLike
    scan : {"fsm", "parallel"}
    reuse : bool
        Return a kept result of the same design (:func:`run_pnr_cached`).
    seeds : iterable of int
        nextpnr seeds (:func:`run_pnr`).
    timeout_s : float, optional
        Seconds one nextpnr run may take (:func:`run_pnr`); a seed stopped there has no Fmax.
    nextpnr_args : iterable of str
        More nextpnr arguments (a placer, a router).

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If ``family`` or ``scan`` is unknown, or the filter does not fit the device's block RAM
        (:func:`apbbf.hdl.lib.devices.check_memory`).
    subprocess.CalledProcessError
        If Yosys or nextpnr fails.
    """
    from ..hdl.lib.devices import check_memory
    from ..sim.designs import RegisteredCore
    platform = target_platform(family)
    check_memory(config, platform.device)
    return run_pnr_cached(RegisteredCore(config, scan), platform, work, freq_mhz=TARGETS[family].core_mhz,
                          reuse=reuse, seeds=seeds, timeout_s=timeout_s, nextpnr_args=nextpnr_args)


def bram_pnr(family: str, work, *, reuse: bool = False, seeds=SEEDS) -> dict:
    """Post-route Fmax of one block RAM (:class:`~apbbf.sim.designs.BlockRAMProbe`) of ``family``'s target
    device; the result also gives the probed ``bram_shape``.

    Raises
    ------
    ValueError
        If ``family`` is unknown.
    subprocess.CalledProcessError
        If Yosys or nextpnr fails.
    """
    from ..hdl.lib.devices import block_ram
    from ..sim.designs import BlockRAMProbe
    platform = target_platform(family)
    probe = BlockRAMProbe(block_ram(platform.device))
    result = run_pnr_cached(probe, platform, work, freq_mhz=TARGETS[family].bram_mhz, reuse=reuse, seeds=seeds)
    return {**result, "bram_shape": {"width": probe.WIDTH, "depth": probe.depth}}
