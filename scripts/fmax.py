#!/usr/bin/env python3
"""Core Fmax sweep (``make fmax``): the bare APBBF core, ports registered, on ECP5-85F (speed 6) and iCE40UP5K,
several Configs.

Writes ``build/reports/fmax.json`` and ``build/reports/fmax.png`` (Fmax and block RAM use per Config); the runs
work in ``build/fmax/``. The flow is :mod:`apbbf.flows.fmax`: the devices are those of the ULX3S-85F and
iCEBreaker platforms, and a Config larger than a device's block RAM is reported, not run. Each Fmax is the
median of three nextpnr seeds; each ECP5-85F seed takes minutes.
"""

import argparse
import json
import sys

from apbbf.flows.args import BUILD, add_families, add_out, add_seeds
from apbbf.flows.fmax import CONFIGS, plot, sweep


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_families(parser)
    parser.add_argument("--scan", choices=("fsm", "parallel"), default="fsm", help="the core's scan (default fsm)")
    add_seeds(parser)
    add_out(parser, "fmax.json and fmax.png")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = sweep(CONFIGS, args.families, BUILD / "fmax", scan=args.scan, seeds=args.seeds,
                    progress=lambda line: print(line, flush=True))
    (args.out / "fmax.json").write_text(json.dumps(results, indent=2) + "\n")
    plot(results, args.out / "fmax.png")
    print(f"wrote {args.out / 'fmax.json'} and {args.out / 'fmax.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
