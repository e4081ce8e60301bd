#!/usr/bin/env python3
"""Measure the APBBF core (``make measure``): cycles per op simulated against the cycle model, accesses per
query and false positives against the analysis. Writes ``build/reports/core.json`` and ``core.png``.

A command line over :func:`apbbf.flows.measure.run`, whose docstring says what is measured and how.
"""

import argparse
import os
import sys

from apbbf.flows.args import add_out, positive
from apbbf.flows.measure import FULL, QUICK, run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])

    def sizes(name):
        return f" (default {FULL[name]:,}; --quick {QUICK[name]:,})"

    parser.add_argument("--quick", action="store_true",
                        help="smaller samples (about 30 s with two jobs); an option given explicitly still wins")
    parser.add_argument("--clock-mhz", type=float, default=100.0, help="clock for the Mops/s column (default 100)")
    parser.add_argument("--jobs", type=positive, default=min(2, os.cpu_count() or 1),
                        help="worker processes (default min(2, CPUs))")
    parser.add_argument("--per-mix", type=positive, help="commands per op-mix block in each simulation"
                        + sizes("per_mix"))
    parser.add_argument("--probes", type=positive, help="absent keys probed just before shifts (and again, "
                        "spread over the generation, for the time average)" + sizes("probes"))
    parser.add_argument("--generations", type=positive,
                        help="steady-state generations measured on the model" + sizes("generations"))
    parser.add_argument("--points", type=positive,
                        help="probe points per generation for the time average" + sizes("points"))
    parser.add_argument("--core-fp-queries", type=positive,
                        help="absent queries simulated on the core" + sizes("core_fp_queries"))
    add_out(parser, "core.json and core.png")
    args = parser.parse_args(argv)
    run(quick=args.quick, clock_mhz=args.clock_mhz, jobs=args.jobs, out=args.out,
        **{name: getattr(args, name) for name in FULL}, log=lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
