"""Post-route Fmax and size of the hash unit alone (``scripts/hash_timing.py``).

Why this way: the hash must never be the critical path of a 150-200 MHz core, so it is measured on its own, as
the core uses it: the key comes from a register (here the last stage of a serial-in shift register, so the
design fits the 39 I/O pins of an iCE40UP5K's sg48), ``en`` from a register, and the segment hashes, already
registered by the unit, are folded to one pin by a pipelined XOR tree (4 inputs per LUT, a register after each
level), so that no path outside the unit is deeper than one LUT. The design is synthesized once with
``synth_<family>`` (the flow of :mod:`apbbf.flows.pnr`) and placed and routed with several nextpnr seeds on
each family's target device (:data:`apbbf.flows.pnr.TARGETS`, the device options from the amaranth-boards
platform); the median, minimum and maximum post-route Fmax are reported. The unit's own LUTs and flip-flops come
from a second synthesis of :class:`~apbbf.hdl.core.hash.HashUnit` alone.
"""

import json
import statistics
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from .. import toolchain
from ..hdl.core.hash import hash_latency, hash_stages
from ..model.config import Config, check_config, check_integer
from ..sim.designs import BareHash, RegisteredHash
from .pnr import SEEDS, TARGETS, target_platform

__all__ = ["CONFIGS", "TARGET_MHZ", "hash_pnr", "sweep", "plot"]

#: What each family's hash must reach on its own (MHz): above the core's 150-200 MHz on ECP5, 75 on iCE40.
TARGET_MHZ = {"ecp5": 200.0, "ice40": 75.0}
#: family -> the Configs measured there: the board defaults (ULX3S-85F, iCEBreaker), the benchmark's config,
#: and a folded 104-bit key (a 5-tuple) on ECP5.
CONFIGS = {
    "ecp5": [Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=4096, key_width=64),
             Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=512, key_width=64),
             Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=512, key_width=104)],
    "ice40": [Config(6, 7, block_bits=16, block_hashes=2, segment_blocks=512, key_width=32),
              Config(2, 3, block_bits=16, block_hashes=2, segment_blocks=256, key_width=32)],
}


def _yosys(rtlil_text: str, family: str, work: Path, name: str) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    (work / f"{name}.il").write_text(rtlil_text)
    # YoWASP cannot open absolute /tmp paths: run in the work directory with relative names
    subprocess.run([toolchain.find_yosys(), "-q", "-l", f"{name}.log", "-p",
                    f"read_rtlil {name}.il; synth_{family} -top top -json {name}.json; stat"],
                   cwd=work, check=True, env=toolchain.tool_environ())
    return toolchain.group_cells(toolchain.yosys_cells((work / f"{name}.log").read_text()), family)


def hash_pnr(config, family: str, work, *, seeds=SEEDS, freq_mhz=None) -> dict:
    """Synthesize :class:`RegisteredHash` for ``family``'s target device and place and route it with each seed.

    Parameters
    ----------
    config : Config
    family : {"ecp5", "ice40"}
    work : str or os.PathLike
        Work directory (RTLIL, netlists, logs, nextpnr reports per seed).
    seeds : iterable of int
        nextpnr ``--seed`` values.
    freq_mhz : float, optional
        nextpnr's ``--freq`` (default: the family's core target in :data:`~apbbf.flows.pnr.TARGETS`).

    Returns
    -------
    dict
        ``config``, ``family``, ``device``, ``latency``, ``stages``, ``fmax_mhz`` (per seed), ``median_mhz``,
        ``min_mhz``, ``max_mhz``, ``target_mhz``, ``meets_target`` (the median), ``unit_cells`` (the hash
        unit alone), ``wrapped_cells`` (with the registers around it), ``utilization`` (nextpnr's, first seed),
        ``critical_paths`` (per seed, :func:`apbbf.toolchain.critical_path`), ``seconds``.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If ``family`` is unknown or ``seeds`` is empty.
    subprocess.CalledProcessError
        If Yosys or nextpnr fails.
    """
    from amaranth.back import rtlil
    check_config(config)
    platform = target_platform(family)
    seeds = [check_integer("seed", seed, range(1, 1 << 31)) for seed in seeds]
    if not seeds:
        raise ValueError("seeds must hold at least one nextpnr seed")
    freq = TARGETS[family].core_mhz if freq_mhz is None else freq_mhz
    work = Path(work)
    start = time.monotonic()
    unit_cells = _yosys(rtlil.convert(BareHash(config), name="top"), family, work, "unit")
    wrapped_cells = _yosys(rtlil.convert(RegisteredHash(config), name="top"), family, work, "wrapped")
    env = toolchain.tool_environ()
    nextpnr = env.get(f"NEXTPNR_{family.upper()}") or f"nextpnr-{family}"
    fmax, paths, utilization = [], [], {}
    for seed in seeds:
        subprocess.run([nextpnr, *toolchain.nextpnr_device_args(platform), "--json", "wrapped.json",
                        "--freq", str(freq), "--timing-allow-fail", "--seed", str(seed),
                        "--report", f"report{seed}.json", "--log", f"pnr{seed}.log", "--quiet"],
                       cwd=work, check=True, env=env, capture_output=True)     # the log has it all
        report = json.loads((work / f"report{seed}.json").read_text())
        fmax.append(round(max(v["achieved"] for v in report["fmax"].values()), 2))
        paths.append(toolchain.critical_path((work / f"pnr{seed}.log").read_text()))
        if not utilization:
            utilization = {k: v for k, v in report.get("utilization", {}).items() if v.get("used")}
    median = statistics.median(fmax)
    return {"config": asdict(config), "family": family, "device": platform.device,
            "latency": hash_latency(config), "stages": hash_stages(config), "seeds": seeds, "fmax_mhz": fmax,
            "median_mhz": median, "min_mhz": min(fmax), "max_mhz": max(fmax), "target_mhz": TARGET_MHZ[family],
            "meets_target": median >= TARGET_MHZ[family], "unit_cells": unit_cells,
            "wrapped_cells": wrapped_cells, "utilization": utilization, "critical_paths": paths,
            "seconds": round(time.monotonic() - start, 1)}


def label(config) -> str:
    """A short label of ``config`` for tables and plots."""
    return (f"k{config.k} l{config.l} B{config.block_bits} b{config.block_hashes} S{config.segment_blocks} "
            f"key{config.key_width}")


def sweep(families, work_root, *, configs=None, seeds=SEEDS, progress=print) -> list[dict]:
    """:func:`hash_pnr` for every Config of every family (default :data:`CONFIGS`); each run works in
    ``<work_root>/<family>-<label>``. A failed run is reported with its ``error``.

    Raises
    ------
    ValueError
        If a family is unknown.
    """
    results = []
    for family in families:
        if family not in TARGETS:
            raise ValueError(f"families must be among {', '.join(TARGETS)}, not {family!r}")
        for config in (configs or CONFIGS)[family]:
            name = label(config)
            work = Path(work_root) / f"{family}-{name.replace(' ', '_')}"
            try:
                result = hash_pnr(config, family, work, seeds=seeds)
            except subprocess.CalledProcessError as error:
                result = {"config": asdict(config), "family": family, "error": str(error), "median_mhz": None}
            result["label"] = name
            results.append(result)
            if progress:
                if "error" in result:
                    progress(f"{family:5} {name:36} failed: {result['error']}")
                else:
                    progress(f"{family:5} {name:36} Fmax median {result['median_mhz']:7.2f} MHz "
                             f"(seeds {result['fmax_mhz']}), target {result['target_mhz']:g}; "
                             f"unit {result['unit_cells']['luts']} LUT4 {result['unit_cells']['ffs']} FF; "
                             f"latency {result['latency']}")
    return results


def plot(results, path) -> None:
    """Median post-route Fmax per Config and family, the seeds' spread as error bars and each family's
    target as a line (matplotlib, written to ``path``)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in results if r.get("median_mhz")]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    colours = {"ecp5": "tab:blue", "ice40": "tab:orange"}
    for i, r in enumerate(rows):
        ax.bar(i, r["median_mhz"], color=colours[r["family"]],
               yerr=[[r["median_mhz"] - r["min_mhz"]], [r["max_mhz"] - r["median_mhz"]]], capsize=4)
        ax.text(i, r["max_mhz"] + 3, f"{r['median_mhz']:.0f}\n{r['unit_cells']['luts']} LUT4", ha="center",
                fontsize=7)
        ax.hlines(r["target_mhz"], i - 0.4, i + 0.4, colors="red", linestyles="--")
    ax.set_ylim(0, 1.18 * max([r["max_mhz"] for r in rows] + [1]))
    ax.set_xticks(range(len(rows)), [f"{r['family']}\n{r['label']}" for r in rows], fontsize=7)
    ax.set_ylabel("post-route Fmax (MHz), median of nextpnr seeds")
    ax.set_title("Hash unit alone (fold, keyed mixer, H3), registered ports; red: target")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
