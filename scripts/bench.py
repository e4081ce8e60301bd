#!/usr/bin/env python3
"""Line-rate benchmark (``make bench``): ops per cycle measured on Verilator, post-route Fmax from nextpnr and
Mops/s = Fmax x ops/cycle for both scans, against 10/40/100 GbE minimum-frame rates and the block RAM's own Fmax.

Writes ``build/reports/bench.json`` and ``build/reports/bench.png`` and prints a markdown table; works in
``build/bench/``. It measures; it asserts no speed. What is measured and how: :mod:`apbbf.flows.bench`. The full
run takes 20 minutes or more (each ECP5-85F place-and-route takes ~5-6 min); ``--quick`` takes about a minute
when the P&R results are already kept.
"""

import argparse
import sys
from pathlib import Path

from apbbf.flows.bench import BENCH, run, summary

ROOT = Path(__file__).resolve().parent.parent


def _families(text: str) -> list[str]:
    families = [f for f in text.split(",") if f]
    if not families or any(f not in BENCH for f in families):
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of {', '.join(BENCH)}, not {text!r}")
    return families


def _positive(text: str) -> int:
    value = int(text, 0)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="2·10^4 commands per mix, and reuse kept P&R results of the same designs")
    parser.add_argument("--commands", type=_positive, help="commands per op mix (default 10^5, --quick 2·10^4)")
    parser.add_argument("--seed", type=int, default=6, help="seed of the command streams (default 6)")
    parser.add_argument("--jobs", type=_positive, default=2, help="parallel place-and-route processes (default 2)")
    parser.add_argument("--families", type=_families, default=list(BENCH), metavar="FAMILY,...",
                        help=f"FPGA families to measure (default {','.join(BENCH)})")
    parser.add_argument("--no-pnr", action="store_true", help="only the simulations (no Fmax, no Mops/s)")
    args = parser.parse_args(argv)
    results = run(families=args.families, commands=args.commands or (20_000 if args.quick else 100_000),
                  seed=args.seed, jobs=args.jobs, reuse=args.quick, pnr=not args.no_pnr,
                  work_root=ROOT / "build" / "bench", out_dir=ROOT / "build" / "reports",
                  log=lambda line: print(line, flush=True))
    print(summary(results))
    out = ROOT / "build" / "reports"
    print(f"wrote {out / 'bench.json'}" + ("" if args.no_pnr else f" and {out / 'bench.png'}") +
          f" in {results['runtime_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
