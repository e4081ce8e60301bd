#!/usr/bin/env python3
"""Post-route Fmax of the hash unit alone (fold, keyed mixer, H3 segment hashes), ports registered, on ECP5-85F
(speed 6) and iCE40UP5K: the median of three nextpnr seeds with their spread, and the unit's LUTs and flip-flops.

Writes ``build/reports/hash_timing.json`` and ``build/reports/hash_timing.png``; the runs work in
``build/hash_timing/``. The flow is :mod:`apbbf.flows.hash_timing` (the devices are those of the ULX3S-85F and
iCEBreaker platforms). Targets: 200 MHz on ECP5 (the hash must not limit a 150-200 MHz core), 75 MHz on iCE40.
Each ECP5 Config takes a few minutes.
"""

import argparse
import json
import sys

from apbbf.flows.args import BUILD, add_families, add_out, add_seeds
from apbbf.flows.hash_timing import TARGET_MHZ, plot, sweep


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_families(parser)
    add_seeds(parser)
    add_out(parser, "hash_timing.json and hash_timing.png")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = sweep(args.families, BUILD / "hash_timing", seeds=args.seeds,
                    progress=lambda line: print(line, flush=True))
    (args.out / "hash_timing.json").write_text(json.dumps({"targets_mhz": TARGET_MHZ, "results": results},
                                                          indent=2) + "\n")
    plot(results, args.out / "hash_timing.png")
    met = [r for r in results if r.get("meets_target")]
    print(f"{len(met)} of {len(results)} runs meet their target; "
          f"wrote {args.out / 'hash_timing.json'} and {args.out / 'hash_timing.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
