#!/usr/bin/env python3
"""Place and route of the lanes filter on ECP5-85F speed 6, ports registered (:mod:`apbbf.flows.lanes`), for its
post-route Fmax; Mops/s is that Fmax times the commands per clock measured in simulation on random keys
(``docs/lanes.md``). Writes ``build/lanes_pnr/<lanes>/result.json``.

Run one at a time, in the background, under ``nice``: an ECP5-85F seed of a multi-lane design takes minutes.
"""

import argparse
import json
import sys

from apbbf.flows.args import BUILD, add_seeds
from apbbf.flows.lanes import PLACER, ROUTER, ROUTERS, lanes_pnr
from apbbf.model import Config


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=2, help="lanes (default 2)")
    add_seeds(parser)
    parser.add_argument("--segment-blocks", type=int, default=512, help="of Config(3, 8, 64, 4, ...) (default 512)")
    parser.add_argument("--placer", default=PLACER, choices=("heap", "static", "sa"),
                        help=f"nextpnr's placer (default {PLACER})")
    parser.add_argument("--router", default=None, choices=("router1", "router2"),
                        help="nextpnr's router (default " + ", ".join(f"{router} for {lanes} lanes"
                                                                      for lanes, router in ROUTERS.items())
                             + f", else {ROUTER})")
    parser.add_argument("--jobs", type=int, default=1, help="nextpnr runs at once (default 1)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds one nextpnr run may take (default none)")
    args = parser.parse_args(argv)
    config = Config(3, 8, 64, 4, args.segment_blocks)
    result = lanes_pnr(config, args.lanes, "ecp5", BUILD / "lanes_pnr" / str(args.lanes), reuse=True,
                       seeds=args.seeds, placer=args.placer, router=args.router, jobs=args.jobs, timeout_s=args.timeout)
    print(json.dumps({k: result[k] for k in ("fmax_mhz", "seeds", "bram_used", "critical_path", "seconds")
                      if k in result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
