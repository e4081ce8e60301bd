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
from pathlib import Path

from apbbf.flows.fmax import CONFIGS, plot, sweep
from apbbf.flows.pnr import SEEDS, TARGETS

ROOT = Path(__file__).resolve().parent.parent


def _families(text: str) -> list[str]:
    families = [f for f in text.split(",") if f]
    unknown = [f for f in families if f not in TARGETS]
    if unknown or not families:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of {', '.join(TARGETS)}, not {text!r}")
    return families


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(item, 0) for item in text.split(",") if item]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of integers, not {text!r}") from None
    if not seeds or any(seed < 0 for seed in seeds):
        raise argparse.ArgumentTypeError(f"must name at least one seed, none negative, not {text!r}")
    return seeds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", type=_families, default=list(TARGETS), metavar="FAMILY,...",
                        help=f"FPGA families to run (default {','.join(TARGETS)})")
    parser.add_argument("--scan", choices=("fsm", "parallel"), default="fsm", help="the core's scan (default fsm)")
    parser.add_argument("--seeds", type=_seeds, default=list(SEEDS), metavar="SEED,...",
                        help=f"nextpnr seeds; each Fmax is their median (default {','.join(map(str, SEEDS))})")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "reports",
                        help="where fmax.json and fmax.png go (default build/reports)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = sweep(CONFIGS, args.families, ROOT / "build" / "fmax", scan=args.scan, seeds=args.seeds,
                    progress=lambda line: print(line, flush=True))
    (args.out / "fmax.json").write_text(json.dumps(results, indent=2) + "\n")
    plot(results, args.out / "fmax.png")
    print(f"wrote {args.out / 'fmax.json'} and {args.out / 'fmax.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
