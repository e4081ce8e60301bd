#!/usr/bin/env python3
"""The memory core placed and routed alone (``make memory-pnr``): :class:`~apbbf.sim.designs.RegisteredMemoryCore`
on ECP5-25F (the Colorlight 5A-75B's LFE5U-25F, speed 6) and ECP5-85F, nextpnr seeds 1-3; the median Fmax and the
utilisation in build/reports/memory_pnr.json. The Config is the 5A-75B's 250 ms window laid out in its SDR SDRAM's
8192-bit rows (a time window, 20 physical segments)."""

import argparse
import json
import sys
from pathlib import Path

from apbbf.flows.args import add_seeds
from apbbf.flows.pnr import run_pnr_cached
from apbbf.model import Config
from apbbf.sim.designs import RegisteredMemoryCore

CONFIG = Config(3, 8, segment_blocks=4096, span=250_000, time_width=32, extra_segments=8, row_bits=8192)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, default=8)
    add_seeds(parser)
    parser.add_argument("--device", default="25k", choices=["25k", "85k"])
    parser.add_argument("--freq", type=float, default=125.0, help="nextpnr's goal in MHz (default 125)")
    parser.add_argument("--out", default="build")
    args = parser.parse_args(argv)
    from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform
    from amaranth_boards.ulx3s import ULX3S_85F_Platform
    platform = Colorlight_5A75B_R70Platform() if args.device == "25k" else ULX3S_85F_Platform()
    design = RegisteredMemoryCore(CONFIG, depth=args.depth)
    work = Path(args.out) / "memory_pnr" / f"{args.device}-d{args.depth}"
    result = run_pnr_cached(design, platform, work, freq_mhz=args.freq, reuse=True, seeds=args.seeds)
    report = {"config": repr(CONFIG), "depth": args.depth, "device": args.device, "result": result}
    out = Path(args.out) / "reports" / f"memory_pnr-{args.device}-d{args.depth}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("log",)}, indent=2, default=str)[:3000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
