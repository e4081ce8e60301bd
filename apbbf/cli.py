"""The ``apbbf`` command line: ``analyze``, ``params``, ``demo``, ``export`` and ``host``.

Subcommands are listed in :data:`COMMANDS` as ``(name, add_parser)`` pairs: ``add_parser(subparsers)`` adds a
parser and sets ``func`` (called with the parsed arguments; returns the exit status). ``analyze``, ``params``
and ``demo`` are defined here; ``export`` and ``host`` are registered here too, but their parsers come from
:func:`apbbf.export.add_parser` and :func:`apbbf.host.add_parser`, imported only when the parser is built (they
pull in Amaranth and pyserial). Another subcommand is added with :func:`register`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

__all__ = ["COMMANDS", "register", "build_parser", "main"]

COMMANDS: list[tuple[str, Callable]] = []


def register(name: str, add_parser: Callable) -> None:
    """Add a subcommand: ``add_parser(subparsers)`` must create parser ``name`` and set its ``func``."""
    if any(existing == name for existing, _ in COMMANDS):
        raise ValueError(f"subcommand {name!r} is already registered")
    COMMANDS.append((name, add_parser))


def _print(data: dict, as_json: bool, title: str) -> None:
    if as_json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return
    print(title)
    for key, value in data.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
        print(f"  {key:30} {_fmt(value)}")


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _block_args(parser: argparse.ArgumentParser, default_bits=None, default_hashes=None) -> None:
    if default_bits is None:
        bits_help = "bits per block (B); give --block-bits and --block-hashes for an APBBF, neither for the APBF"
        hashes_help = "bits set per block (b), one in each of its b parts"
    else:
        bits_help = f"bits per block (B, default {default_bits})"
        hashes_help = f"bits set per block (b, default {default_hashes}; 1: the basic APBF)"
    parser.add_argument("--block-bits", type=int, default=default_bits, metavar="B", help=bits_help)
    parser.add_argument("--block-hashes", type=int, default=default_hashes, metavar="b", help=hashes_help)
    parser.add_argument("--json", action="store_true", help="print JSON")


# analyze ---------------------------------------------------------------------------------------------------------

def _analyze(args) -> int:
    from .model.analysis import analyze
    result = analyze(args.k, args.l, args.block_bits, args.block_hashes)
    kind = "APBF" if args.block_bits is None else f"APBBF B={args.block_bits} b={args.block_hashes}"
    _print(result, args.json, f"{kind} k={args.k} l={args.l} (worst case, just before a shift)")
    return 0


def _add_analyze(subparsers) -> None:
    parser = subparsers.add_parser("analyze", help="analytic fp, accesses, NPWS of (k, l[, B, b])",
                                   description="Analytic metrics of an APBF (k, l) or an APBBF (k, l, B, b) at the "
                                   "design load, worst case (just before a shift).")
    parser.add_argument("--k", type=int, required=True, help="segments written per insert")
    parser.add_argument("--l", type=int, required=True, help="extra segments: the window is l generations")
    _block_args(parser)
    parser.set_defaults(func=_analyze)


# params ----------------------------------------------------------------------------------------------------------

def _params(args) -> int:
    from .model.solver import describe, solve
    config = solve(args.fp, args.window, max_npws=args.max_npws, block_bits=args.block_bits,
                   block_hashes=args.block_hashes)
    _print(describe(config), args.json, f"smallest filter with fp <= {args.fp} and window >= {args.window}")
    return 0


def _add_params(subparsers) -> None:
    parser = subparsers.add_parser("params", help="size a filter for a false-positive rate and a window",
                                   description="The smallest-memory Config with worst-case fp <= E and window "
                                   ">= W, and its metrics.")
    parser.add_argument("--fp", type=float, required=True, metavar="E", help="target false-positive rate")
    parser.add_argument("--window", type=int, required=True, metavar="W",
                        help="inserts always reported present (w = l*g)")
    parser.add_argument("--max-npws", type=float, default=None, metavar="P", help="maximum peak NPWS (optional)")
    _block_args(parser, 64, 4)
    parser.set_defaults(func=_params)


# demo ------------------------------------------------------------------------------------------------------------

def _demo(args) -> int:
    import numpy as np

    from .model import APBBF
    from .model.analysis import analyze_config
    from .model.solver import solve

    config = solve(args.fp, args.window, block_bits=args.block_bits, block_hashes=args.block_hashes,
                   seed=args.seed)
    predicted = analyze_config(config)["fp"]
    g, w = config.generation, config.window
    print(f"config: k={config.k} l={config.l} B={config.block_bits} b={config.block_hashes} "
          f"segment_blocks={config.segment_blocks} generation={g} window={w} "
          f"memory={config.memory_bits} bits ({config.bits_per_element:.2f} bits/element)")
    rng = np.random.default_rng(args.seed)
    filt = APBBF(config)
    # Steady state: (k + l + 2) generations; stop just before a shift (the worst case).
    inserts = (config.k + config.l + 2) * g
    keys = rng.integers(0, 2 ** 63, size=inserts, dtype=np.uint64) | np.uint64(1)   # odd: inserted keys
    filt.insert_many(keys)
    probes = rng.integers(0, 2 ** 63, size=args.probes, dtype=np.uint64) << np.uint64(1)  # even: never inserted
    measured = float(np.mean(filt.query_many(probes)))
    misses = int(np.sum(~filt.query_many(keys[-w:])))
    sigma = (predicted * (1 - predicted) / args.probes) ** 0.5
    print(f"inserted {inserts} random keys (seed {args.seed}), probed {args.probes} absent keys just before a shift")
    print(f"false-positive rate: measured {measured:.3g}, predicted {predicted:.3g} (±{sigma:.2g} 1σ), "
          f"target {args.fp}")
    print(f"false negatives among the last w={w} inserts: {misses}")
    return 0 if misses == 0 else 1


def _add_demo(subparsers) -> None:
    parser = subparsers.add_parser("demo", help="size a filter and check it against the golden model",
                                   description="Size a filter (as params), fill the golden model with random keys "
                                   "to its steady state, then measure its fp just before a shift and count false "
                                   "negatives among the last w inserts (exit status 1 if any).")
    parser.add_argument("--fp", type=float, default=1e-3, metavar="E", help="target false-positive rate (default 1e-3)")
    parser.add_argument("--window", type=int, default=10000, metavar="W", help="window (default 10000)")
    parser.add_argument("--probes", type=int, default=200_000, metavar="N",
                        help="absent keys probed (default 200000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the keys and of the hash (default 1)")
    parser.add_argument("--block-bits", type=int, default=64, metavar="B", help="bits per block (default 64)")
    parser.add_argument("--block-hashes", type=int, default=4, metavar="b", help="bits set per block (default 4)")
    parser.set_defaults(func=_demo)


register("analyze", _add_analyze)
register("params", _add_params)
register("demo", _add_demo)


def _add_export(subparsers):
    from .export import add_parser       # imported when the parser is built: it pulls in Amaranth
    add_parser(subparsers)


def _add_host(subparsers):
    from .host import add_parser         # pyserial, only when used
    add_parser(subparsers)


register("export", _add_export)
register("host", _add_host)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(prog="apbbf", description="Age-Partitioned Blocked Bloom Filter tools")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for _, add_parser in COMMANDS:
        add_parser(subparsers)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``apbbf`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (TypeError, ValueError) as error:
        parser.exit(2, f"apbbf {args.command}: error: {error}\n")


if __name__ == "__main__":
    sys.exit(main())
