#!/usr/bin/env python3
"""The memory core placed and routed alone (``make memory-pnr``): :class:`~apbbf.sim.designs.RegisteredMemoryCore`
on ECP5-25F (the Colorlight 5A-75B's LFE5U-25F, speed 6) or ECP5-85F, nextpnr seeds 1-3 one after another, each
within :data:`apbbf.flows.pnr.PNR_TIMEOUT_S`. Writes build/reports/memory_pnr.json: each seed's Fmax, LUT4, FF,
router and nextpnr seconds and critical path, and the median Fmax. The Config is the 5A-75B's 250 ms window laid
out in its SDR SDRAM's 8192-bit rows (a time window, 20 physical segments)."""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

from apbbf.flows.args import add_seeds
from apbbf.flows.pnr import PNR_TIMEOUT_S, run_pnr_cached
from apbbf.model import Config
from apbbf.sim.designs import RegisteredMemoryCore

#: nextpnr's router: router1 left a few hundred congested arcs of about 76,000 after 15 minutes on seed 1 (each
#: batch of 1,000 taking longer, 160 s at the end) where another build of the same scan had finished in 6.
ROUTER = "router2"

CONFIG = Config(3, 8, segment_blocks=4096, span=250_000, time_width=32, extra_segments=8, row_bits=8192)


def router_seconds(log: Path):
    """The routers' seconds in a nextpnr log, None if it has none: router2 is followed by a short router1 pass
    that routes what it left ("Router2 time", then "Router1 time"), so every one is added."""
    found = re.findall(r"Router\d? time ([\d.]+)s", log.read_text()) if log.exists() else []
    return round(sum(map(float, found)), 1) if found else None


def seed_report(result: dict, work: Path) -> dict:
    """One entry per seed: Fmax, the placed LUT4 and FF (nextpnr's TRELLIS_COMB and TRELLIS_FF), seconds, path."""
    seeds = {}
    for seed, fmax in result["seeds"].items():
        used = result.get("seed_utilization", {}).get(seed, {})
        seeds[seed] = {"fmax_mhz": fmax,
                       "lut4": used.get("TRELLIS_COMB", {}).get("used"), "ff": used.get("TRELLIS_FF", {}).get("used"),
                       "route_seconds": router_seconds(work / f"pnr-seed{seed}.log"),
                       "nextpnr_seconds": result["seed_seconds"][seed],
                       "timed_out": int(seed) in result["timed_out"],
                       "critical_path": result["critical_paths"][seed]}
    return seeds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, default=8)
    add_seeds(parser)
    parser.add_argument("--device", default="25k", choices=["25k", "85k"])
    parser.add_argument("--freq", type=float, default=125.0, help="nextpnr's goal in MHz (default 125)")
    parser.add_argument("--placer", default=None, choices=("heap", "static", "sa"), help="nextpnr's placer")
    parser.add_argument("--router", default=ROUTER, choices=("router1", "router2"),
                        help=f"nextpnr's router (default {ROUTER})")
    parser.add_argument("--out", default="build")
    args = parser.parse_args(argv)
    from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform
    from amaranth_boards.ulx3s import ULX3S_85F_Platform
    platform = Colorlight_5A75B_R70Platform() if args.device == "25k" else ULX3S_85F_Platform()
    design = RegisteredMemoryCore(CONFIG, depth=args.depth)
    work = Path(args.out) / "memory_pnr" / f"{args.device}-d{args.depth}"
    nextpnr_args = (*(("--placer", args.placer) if args.placer else ()), "--router", args.router)
    result = run_pnr_cached(design, platform, work, freq_mhz=args.freq, reuse=True, seeds=args.seeds,
                            timeout_s=PNR_TIMEOUT_S, nextpnr_args=nextpnr_args)
    per_seed = seed_report(result, work)
    reached = [s["fmax_mhz"] for s in per_seed.values() if s["fmax_mhz"] is not None]
    report = {"config": repr(CONFIG), "depth": args.depth, "device": result["device"], "freq_mhz": args.freq,
              "nextpnr_args": list(nextpnr_args),
              "median_fmax_mhz": round(statistics.median(reached), 2) if reached else None,
              "synth_lut4": result["cells"]["luts"], "synth_ff": result["cells"]["ffs"],
              "synth_seconds": result["synth_seconds"], "seeds": per_seed, "cached": result["cached"]}
    out = Path(args.out) / "reports" / "memory_pnr.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps({key: value for key, value in report.items() if key != "seeds"}, indent=2))
    for seed, entry in per_seed.items():
        path = entry["critical_path"]
        print(f"seed {seed}: {entry['fmax_mhz']} MHz, {entry['lut4']} LUT4, {entry['ff']} FF, router "
              f"{entry['route_seconds']} s of {entry['nextpnr_seconds']} s; path {path.get('source')} -> "
              f"{path.get('sink')}, {path.get('delay_ns')} ns ({path.get('routing_ns')} routing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
