#!/usr/bin/env python3
"""Benchmark of the packet de-duplicator (``make dedup-bench``): frames per clock, post-route Fmax on ECP5-85F for
data_width 64 and 512 (median of three nextpnr seeds), Mpps against 10/40/100 GbE, and the key extractor's and
packet buffer's cost. Writes ``build/reports/dedup_bench.json`` and ``.png`` (:mod:`apbbf.flows.dedup_bench`)."""

import argparse
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="build/reports", help="report directory (default build/reports)")
    parser.add_argument("--work", default="build/dedup_bench", help="work directory (default build/dedup_bench)")
    parser.add_argument("--quick", action="store_true", help="reuse kept place-and-route results of the same design")
    parser.add_argument("--seeds", default="1,2,3", help="nextpnr seeds, comma-separated (default 1,2,3)")
    args = parser.parse_args(argv)
    from apbbf.flows.dedup_bench import run
    results = run(args.out, args.work, quick=args.quick, seeds=tuple(int(s) for s in args.seeds.split(",")))
    for width, entry in results["widths"].items():
        p = entry["pnr"]
        print(f"data_width {width}: {entry['sim']['frames_per_clock_out']} frames/clock, Fmax {p['fmax_mhz']} MHz "
              f"({p['fmax_min_mhz']}-{p['fmax_max_mhz']}), {entry.get('mpps')} Mpps; cells {json.dumps(p['cells'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
