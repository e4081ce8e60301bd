#!/usr/bin/env python3
"""Benchmark of the packet de-duplicator (``make dedup-bench``): frames per clock, post-route Fmax on ECP5-85F for
data_width 64 and 512 (median of three nextpnr seeds), Mpps against 10/40/100 GbE, and each part's cost (extractor,
queue, core, buffer). Writes ``build/reports/dedup_bench.json`` and ``.png`` (:mod:`apbbf.flows.dedup_bench`) and
prints the README's tables."""

import argparse
import sys


def main(argv=None) -> int:
    from apbbf.flows.args import add_seeds
    from apbbf.flows.dedup_bench import JOBS, PLACER, PNR_TIMEOUT_S, ROUTERS, WIDTHS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="build/reports", help="report directory (default build/reports)")
    parser.add_argument("--work", default="build/dedup_bench", help="work directory (default build/dedup_bench)")
    parser.add_argument("--quick", action="store_true", help="reuse kept place-and-route results of the same design")
    add_seeds(parser)
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)),
                        help=f"data widths, comma-separated (default {','.join(map(str, WIDTHS))})")
    parser.add_argument("--placer", default=PLACER, choices=("heap", "static", "sa"),
                        help=f"nextpnr's placer (default {PLACER})")
    parser.add_argument("--router", default=None, choices=("router1", "router2"),
                        help="nextpnr's router for every width (default: " + ", ".join(
                            f"{router} at {width} bits" for width, router in ROUTERS.items()) + ")")
    parser.add_argument("--timeout", type=float, default=PNR_TIMEOUT_S,
                        help=f"seconds one nextpnr run may take (default {PNR_TIMEOUT_S})")
    parser.add_argument("--no-readme", action="store_true",
                        help="leave the README's de-duplicator block as it is (default: rewrite it from this report)")
    parser.add_argument("--jobs", type=int, default=JOBS,
                        help=f"nextpnr runs at once, over every width's seeds (default {JOBS})")
    args = parser.parse_args(argv)
    from apbbf.flows.dedup_bench import run
    results = run(args.out, args.work, quick=args.quick, seeds=tuple(args.seeds),
                  widths=tuple(int(w) for w in args.widths.split(",")), placer=args.placer, router=args.router,
                  timeout_s=args.timeout, jobs=args.jobs, log=lambda message: print(message, flush=True))
    print()
    print(results["markdown"])
    for width, entry in results["widths"].items():
        cp = entry["pnr"].get("critical_path") or {}
        if cp:
            print(f"data_width {width} critical path: {cp.get('delay_ns')} ns ({cp.get('logic_ns')} logic, "
                  f"{cp.get('routing_ns')} routing, {cp.get('nets')} nets): {cp.get('source')} -> {cp.get('sink')}")
    print(f"{results['seconds']} s")
    if not args.no_readme:
        from apbbf.docgen import machine_stamp, write_report_block
        from apbbf.flows.dedup_bench import readme_block
        if write_report_block("dedup-bench", readme_block(results, machine_stamp())):
            print("README.md: the dedup-bench block rewritten from this report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
