#!/usr/bin/env python3
"""The time-window report: measured fp and window of the time-bounded filter against the analysis at 0.1x, 1x,
4x and 10x the planned insert rate and with idle gaps longer than the span, on the golden model, and the gateware
(both scans, Amaranth's simulator) answering the same kind of stream. Writes build/reports/timewindow.json and
timewindow.png (``make timewindow``). See apbbf.flows.timewindow."""

import argparse
import sys

from apbbf.flows.timewindow import run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer probes and a shorter gateware stream")
    parser.add_argument("--no-gateware", action="store_true", help="the model only")
    parser.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    parser.add_argument("--out", default="build/reports", help="output directory (default build/reports)")
    args = parser.parse_args(argv)
    print(f"seed {args.seed}", flush=True)
    run(args.out, quick=args.quick, seed=args.seed, gateware=not args.no_gateware)
    print(f"wrote {args.out}/timewindow.json and timewindow.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
