#!/usr/bin/env python3
"""Build a board's bitstream with the YoWASP yosys/nextpnr and write ``build/<board>/report.json``.

Usage: ``python scripts/build.py [--board icebreaker|ulx3s-85f] [--config k=4,l=9,...] [--seed N]``
(``make bitstream``). The flow is :func:`apbbf.flows.board.build_board`; a config too large for the board's block
RAM is refused before any tool runs. Each build draws a fresh hash seed unless ``--seed`` (or ``seed=`` in
``--config``) gives one; the seed is printed and recorded in the report and the bitstream (INFO).
"""

import argparse
import sys
from pathlib import Path

from apbbf.flows.args import BUILD
from apbbf.flows.board import build_board, config_fields, parse_config, summary
from apbbf.hdl.board.boards import BOARDS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="icebreaker", choices=list(BOARDS),
                        help="the board (default icebreaker)")
    parser.add_argument("--config", metavar="NAME=VALUE,...",
                        help="Config fields that differ from the board's default config, e.g. "
                             "k=4,l=9,segment_blocks=256 (fields: k, l, block_bits, block_hashes, segment_blocks, "
                             "key_width, seed)")
    parser.add_argument("--seed", type=lambda text: int(text, 0), metavar="N",
                        help="hash seed, 0..2**64-1 (default: a fresh random one, printed and recorded)")
    parser.add_argument("--build-dir", type=Path, help="where the build goes (default build/<board>)")
    args = parser.parse_args(argv)
    try:
        config = parse_config(args.config, BOARDS[args.board].default_config)
        if "seed" in config_fields(args.config):
            if args.seed is not None and args.seed != config.seed:
                parser.exit(2, "build: error: --seed and seed= in --config differ\n")
            args.seed = config.seed
        report = build_board(args.board, config, build_dir=args.build_dir or BUILD / args.board,
                             seed=args.seed)
    except (TypeError, ValueError) as error:
        parser.exit(2, f"build: error: {error}\n")
    print(summary(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
