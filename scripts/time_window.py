#!/usr/bin/env python3
"""The time-window report: measured fp and window of the time-bounded filter against the analysis at 0.1x, 1x,
4x and 10x the planned insert rate and with idle gaps longer than the span, on the golden model, and the gateware
(both scans, Amaranth's simulator) answering the same kind of stream, and the fp of the row layout (Config.row_bits)
at 0.1x to 10x against its analysis. Writes build/reports/timewindow.json and
timewindow.png (``make timewindow``). See apbbf.flows.timewindow."""

import argparse
import sys

from apbbf.flows.timewindow import run, run_rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer probes and a shorter gateware stream")
    parser.add_argument("--no-gateware", action="store_true", help="the model only")
    parser.add_argument("--rows-only", action="store_true",
                        help="only the row layout's fp against its analysis (build/reports/timewindow_rows.json)")
    parser.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    parser.add_argument("--out", default="build/reports", help="output directory (default build/reports)")
    args = parser.parse_args(argv)
    print(f"seed {args.seed}", flush=True)
    if args.rows_only:
        import json
        from pathlib import Path
        rows = run_rows(seed=args.seed, hits=1000 if args.quick else 4000)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "timewindow_rows.json").write_text(json.dumps({"seed": args.seed, "rows": rows},
                                                                        indent=2) + "\n")
        print(f"wrote {args.out}/timewindow_rows.json")
        return 0
    run(args.out, quick=args.quick, seed=args.seed, gateware=not args.no_gateware)
    print(f"wrote {args.out}/timewindow.json and timewindow.png (the row layout under 'rows')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
