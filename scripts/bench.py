#!/usr/bin/env python3
"""Line-rate benchmark (``make bench``): ops per cycle measured on Verilator, post-route Fmax from nextpnr and
Mops/s = Fmax x ops/cycle for both scans, against 10/40/100 GbE minimum-frame rates and the block RAM's own Fmax.

Writes ``build/reports/bench.json`` and ``build/reports/bench.png`` and prints markdown tables; works in
``build/bench/``. It measures; it asserts no speed. What is measured and how: :mod:`apbbf.flows.bench`. Every
Fmax is the median of three nextpnr seeds; the full run takes an hour or more (each ECP5-85F place-and-route
takes ~5-6 min per seed); ``--quick`` takes a few minutes when the P&R results are already kept.
"""

import argparse
import sys

from apbbf.flows.args import BUILD, REPORTS, add_seeds, positive
from apbbf.flows.bench import BENCH, run, summary


def _cases(text: str) -> list[str]:
    """Case names, or family names standing for all their cases."""
    cases = []
    for item in (i for i in text.split(",") if i):
        found = [item] if item in BENCH else [c for c, b in BENCH.items() if b.family == item]
        if not found:
            raise argparse.ArgumentTypeError(f"must be a comma-separated list of {', '.join(BENCH)} (or a family), "
                                             f"not {text!r}")
        cases += [c for c in found if c not in cases]
    if not cases:
        raise argparse.ArgumentTypeError("names no case")
    return cases


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="2·10^4 commands per mix, and reuse kept P&R results of the same designs")
    parser.add_argument("--commands", type=positive, help="commands per op mix (default 10^5, --quick 2·10^4)")
    parser.add_argument("--seed", type=int, default=6, help="seed of the command streams (default 6)")
    parser.add_argument("--jobs", type=positive, default=2,
                        help="parallel place-and-route processes, each running its seeds in turn (default 2)")
    parser.add_argument("--cases", type=_cases, default=list(BENCH), metavar="CASE,...",
                        help=f"cases to measure, or families (default {','.join(BENCH)})")
    add_seeds(parser)
    parser.add_argument("--no-pnr", action="store_true", help="only the simulations (no Fmax, no Mops/s)")
    parser.add_argument("--only", action="store_true",
                        help="write the report with this run's cases only (default: keep the other cases of an "
                             "earlier build/reports/bench.json, each with the commit it was measured on)")
    parser.add_argument("--no-readme", action="store_true",
                        help="leave the README's bench block as it is (default: rewrite it from this report)")
    args = parser.parse_args(argv)
    results = run(cases=args.cases, commands=args.commands or (20_000 if args.quick else 100_000),
                  seed=args.seed, jobs=args.jobs, reuse=args.quick, pnr=not args.no_pnr, seeds=args.seeds,
                  work_root=BUILD / "bench", out_dir=REPORTS,
                  log=lambda line: print(line, flush=True), keep_others=not args.only)
    print(summary(results))
    out = REPORTS
    print(f"wrote {out / 'bench.json'}" + ("" if args.no_pnr else f" and {out / 'bench.png'}") +
          f" in {results['runtime_seconds']} s")
    if not args.no_readme and not args.no_pnr:
        from apbbf.docgen import machine_stamp, write_report_block
        cases = ", ".join(args.cases)
        kept = [case for case in results["devices"] if case not in args.cases]
        others = f"; {', '.join(kept)} kept from the earlier report" if kept else ""
        if write_report_block("bench", f"{results['markdown']}\n\nWritten by `make bench` (cases {cases}{others}; "
                                       f"`build/reports/bench.json`), {machine_stamp()}."):
            print("README.md: the bench block rewritten from this report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
