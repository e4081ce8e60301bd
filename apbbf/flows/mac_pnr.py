"""Place and route of the RGMII MAC alone (:class:`apbbf.hdl.eth.loopback.RGMIILoopback`) on a board with
Ethernet, once per nextpnr seed, for the post-route Fmax of each clock domain: the PHY's receive clock, the
125 MHz transmit clock and the user's domain.

The board's own platform builds it (pins, I/O types, the oscillator's constraint; the PLL's outputs are derived by
nextpnr, the receive clock is constrained at 125 MHz on its pin). The figure per domain is the median of the
seeds, with the spread.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from .. import toolchain
from .pnr import SEEDS, _check_seeds

__all__ = ["mac_pnr"]


def _platform(board: str):
    import amaranth_boards.colorlight_5a75b_r7_0 as colorlight
    import amaranth_boards.versa_ecp5 as versa

    from ..hdl.eth.loopback import BOARD_PHYS
    name = BOARD_PHYS[board][0]
    return getattr(colorlight if board.startswith("colorlight") else versa, name)()


def _domain(net: str) -> str:
    """A readable clock name for a nextpnr clock net."""
    if "rx_clk" in net:
        port = net.removeprefix("$glbnet$").split(".")[0]
        return f"rx ({port}, PHY receive clock)" if port.startswith("port") else "rx (PHY receive clock)"
    if "eth_tx" in net:
        return "eth_tx (125 MHz transmit)"
    if "sync" in net or net.endswith(".clk"):
        return "sync (user)"
    return net


#: The filter of the appliance's trial build (``top="appliance"``): small enough for the 5A-75B's 56 DP16KD.
APPLIANCE_CONFIG = dict(k=2, l=4, segment_blocks=128, span=1000, time_width=32, extra_segments=1)


def mac_pnr(board: str, work, *, seeds=SEEDS, data_width: int = 64, top: str = "loopback") -> dict:
    """Build the MAC's loopback top (or, with ``top="appliance"``, the appliance top with the filter of
    :data:`APPLIANCE_CONFIG`) for ``board`` once per seed in ``<work>/seed<N>``.

    Returns
    -------
    dict
        ``board``, ``device``, ``data_width``; ``domains``: per clock, the constraint, the median post-route
        Fmax of the seeds, its range and whether every seed met the constraint; ``seeds``: per seed, nextpnr's
        per-clock figures and the seconds it took; ``utilization`` (nextpnr's, used only) and ``cells`` of the
        first seed.

    Raises
    ------
    ValueError
        If ``board`` is not one of :data:`apbbf.hdl.eth.loopback.BOARD_PHYS`.
    """
    from ..hdl.appliance.core import DedupAppliance
    from ..hdl.eth.loopback import RGMIILoopback
    from ..model import Config
    if top not in ("loopback", "appliance"):
        raise ValueError(f"top must be 'loopback' or 'appliance', not {top!r}")
    seeds = _check_seeds(seeds)
    toolchain.use_yowasp()
    work = Path(work).resolve()
    runs = {}
    platform = None
    for seed in seeds:
        platform = _platform(board)
        build_dir = work / f"seed{seed}"
        build_dir.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        design = (RGMIILoopback(board, data_width=data_width) if top == "loopback"
                  else DedupAppliance(board, Config(**APPLIANCE_CONFIG), data_width=data_width))
        plan = platform.build(design, name="top", build_dir=str(build_dir),
                              do_build=False,
                              nextpnr_opts=f"--timing-allow-fail --report nextpnr_report.json --seed {seed}")
        toolchain.execute_plan(plan, build_dir)
        report = json.loads((build_dir / "nextpnr_report.json").read_text())
        runs[seed] = {"fmax": toolchain.fmax_from_report(report), "seconds": round(time.monotonic() - start, 1),
                      "utilization": {k: v for k, v in report.get("utilization", {}).items() if v.get("used")}}
    domains = {}
    for net in runs[seeds[0]]["fmax"]:
        values = [runs[s]["fmax"][net]["achieved_mhz"] for s in seeds if net in runs[s]["fmax"]]
        constraint = runs[seeds[0]]["fmax"][net]["constraint_mhz"]
        domains[_domain(net)] = {
            "net": net, "constraint_mhz": constraint, "fmax_mhz": round(statistics.median(values), 2),
            "fmax_min_mhz": min(values), "fmax_max_mhz": max(values),
            "met_every_seed": all(runs[s]["fmax"][net]["met"] for s in seeds if net in runs[s]["fmax"]),
        }
    cells = toolchain.group_cells(toolchain.yosys_cells((work / f"seed{seeds[0]}" / "top.rpt").read_text()), "ecp5")
    speed = getattr(platform, "speed", None)
    return {"board": board, "top": top, "device": f"{platform.device}-{platform.package}" + (f" speed {speed}" if speed else ""),
            "data_width": data_width, "domains": domains,
            "seeds": {str(s): {"fmax": r["fmax"], "seconds": r["seconds"]} for s, r in runs.items()},
            "utilization": runs[seeds[0]]["utilization"], "cells": cells}
