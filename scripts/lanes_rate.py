#!/usr/bin/env python3
"""Commands per clock of the lanes filter in Amaranth's simulator (docs/lanes.md's table): random distinct keys,
TEST_AND_INSERT, every slot filled, no gaps, no backpressure, every answer checked against the model.

Each row is :func:`apbbf.sim.lanes.rates` on Config(3, 8, 64, 4, S), ``random_beats`` seed 1: the rate from reset
(the first beat offered while the cores clear their memories) and after that clear (the steady rate). A row takes
from 20 s (two lanes) to a minute and a half (eight).
"""

import argparse
import sys

from apbbf.model import Config
from apbbf.sim.lanes import rates

#: (lanes, slots, FIFO depth) of the table
ROWS = ((2, 2, 8), (2, 2, 16), (4, 4, 8), (4, 4, 16), (8, 4, 16), (8, 8, 16))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=int, default=3000, help="commands per run (default 3000)")
    parser.add_argument("--segment-blocks", type=int, default=64, help="S of the Config (default 64)")
    parser.add_argument("--rows", default=None, help="lanes:slots:depth,... (default: the table's six)")
    args = parser.parse_args(argv)
    config = Config(3, 8, 64, 4, args.segment_blocks)
    rows = ROWS if args.rows is None else [tuple(map(int, row.split(":"))) for row in args.rows.split(",")]
    print(f"{config}, {args.commands} commands, seed 1")
    print("| lanes | slots | FIFO depth | from reset | after the reset clear |")
    print("|---|---|---|---|---|")
    for lanes, slots, depth in rows:
        r = rates(config, lanes, args.commands, slots=slots, fifo_depth=depth)
        print(f"| {lanes} | {slots} | {depth} | {r['from_reset']:.3f} | {r['after_clear']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
