"""Bare-core Fmax sweep (``make fmax``): post-route Fmax and block RAM use of the core, ports registered, for
several Configs on each family's target device (:data:`apbbf.flows.pnr.TARGETS`: the ULX3S-85F's ECP5-85F speed
6 and the iCEBreaker's iCE40UP5K).

Why this way: a board top measures the core *and* its pins and UART; here the core's wide ports are fed from a
serial-in shift register and its response is registered (:class:`~apbbf.sim.designs.RegisteredCore`), so only
the core's own paths limit the clock and the design fits the 39 I/O pins of an sg48 package. Each run is
``synth_<family>`` and nextpnr with a deliberately high target (``--freq``) and ``--timing-allow-fail``
(:func:`apbbf.flows.pnr.core_pnr`), placed with each of the seeds :data:`apbbf.flows.pnr.SEEDS`: the Fmax is their
median, with their range. A Config larger than a device's block RAM is reported, not run.
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict
from pathlib import Path

from ..model.config import Config
from .pnr import SEEDS, TARGETS, core_pnr

__all__ = ["CONFIGS", "label", "sweep", "plot"]

#: The swept Configs
CONFIGS = [
    Config(k=2, l=3, block_bits=16, block_hashes=2, segment_blocks=256, key_width=32),
    Config(k=3, l=5, block_bits=32, block_hashes=4, segment_blocks=256, key_width=32),
    Config(k=4, l=4, block_bits=16, block_hashes=2, segment_blocks=512, key_width=64),
    Config(k=6, l=7, block_bits=16, block_hashes=2, segment_blocks=512, key_width=32),
]


def label(config) -> str:
    """A short label of ``config`` for tables and plots."""
    return (f"k{config.k} l{config.l} B{config.block_bits} b{config.block_hashes} S{config.segment_blocks} "
            f"key{config.key_width}")


def sweep(configs, families, work_root, *, scan: str = "fsm", seeds=SEEDS, progress=print) -> list[dict]:
    """Place and route the core for every Config on every family's target device.

    Parameters
    ----------
    configs : iterable of Config
    families : iterable of str
        Keys of :data:`apbbf.flows.pnr.TARGETS`.
    work_root : str or os.PathLike
        Each run works in ``<work_root>/<family>-<label>``.
    scan : {"fsm", "parallel"}
    seeds : iterable of int
        nextpnr seeds of each run (the Fmax is their median).
    progress : callable
        Called with one line per finished run.

    Returns
    -------
    list of dict
        Per Config: ``label``, ``config``, ``hardware_memory_bits``, ``window`` and per family the result of
        :func:`~apbbf.flows.pnr.core_pnr`, or ``{"error": ..., "fmax_mhz": None}`` if the Config does not fit
        the device or a tool failed.

    Raises
    ------
    ValueError
        If a family is unknown.
    """
    families = list(families)
    for family in families:
        if family not in TARGETS:
            raise ValueError(f"families must be among {', '.join(TARGETS)}, not {family!r}")
    results = []
    for config in configs:
        name = label(config)
        entry = {"label": name, "config": asdict(config), "hardware_memory_bits": config.hardware_memory_bits,
                 "window": config.window}
        for family in families:
            work = Path(work_root) / f"{family}-{name.replace(' ', '_')}"
            try:
                entry[family] = core_pnr(config, family, work, scan=scan, seeds=seeds)
            except (ValueError, subprocess.CalledProcessError) as error:
                entry[family] = {"error": str(error), "fmax_mhz": None, "cells": {}}
            r = entry[family]
            progress(f"{family:5} {name:40} Fmax {r['fmax_mhz']} MHz (seeds {r.get('seeds')})  "
                     f"LUT {r['cells'].get('luts')}  BRAM {r['cells'].get('brams')}"
                     + (f"  ({r['error']})" if "error" in r else ""))
        results.append(entry)
    return results


def plot(results, path) -> None:
    """Bar charts of Fmax and block RAMs per Config and family (matplotlib, written to ``path``)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    families = [f for f in TARGETS if any(f in r for r in results)]
    labels = [r["label"] for r in results]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.38
    for i, family in enumerate(families):
        xs = [j + (i - 0.5) * width for j in range(len(results))]
        runs = [r.get(family, {}) for r in results]
        medians = [run.get("fmax_mhz") or 0 for run in runs]
        low = [m - (run.get("fmax_min_mhz") or m) for m, run in zip(medians, runs)]
        high = [(run.get("fmax_max_mhz") or m) - m for m, run in zip(medians, runs)]
        ax1.bar(xs, medians, width, yerr=[low, high], capsize=3, label=family)
        ax2.bar(xs, [r.get(family, {}).get("cells", {}).get("brams", 0) for r in results], width, label=family)
    for ax, title in ((ax1, "post-route Fmax (MHz), median and range of seeds"),
                      (ax2, "block RAMs (SB_RAM40_4K / DP16KD)")):
        ax.set_xticks(range(len(results)), labels, rotation=20, ha="right", fontsize=7)
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
