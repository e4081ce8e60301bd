"""The ``apbbf`` command line: ``analyze``, ``params``, ``demo``, ``export``, ``host`` and ``dedup``.

Subcommands are listed in :data:`COMMANDS` as ``(name, add_parser)`` pairs: ``add_parser(subparsers)`` adds a
parser and sets ``func`` (called with the parsed arguments; returns the exit status). ``analyze``, ``params``
and ``demo`` are defined here; ``export``, ``host`` and ``dedup`` are registered here too, but their parsers come
from :func:`apbbf.export.add_parser`, :func:`apbbf.host.add_parser` and :func:`apbbf.dedup.add_parser`, imported
only when the parser is built (they pull in Amaranth, pyserial, dpkt). Another subcommand is added with
:func:`register`.
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

from .units import duration  # noqa: E402  (apbbf.cli.duration, as before)


def _duration(text: str) -> float:
    try:
        return duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _fit(config, board: str | None) -> dict | None:
    """Whether ``config`` fits the named board's or device's block RAM (None when neither is named)."""
    if board is None:
        return None
    from .hdl.board.boards import BOARDS
    from .hdl.lib.devices import BLOCK_RAM, block_ram
    if board in BOARDS:
        from .hdl.board.boards import board_info
        _, platform = board_info(board)
        device = platform.device
    elif board in BLOCK_RAM:
        device = board
    else:
        raise ValueError(f"board must be a board ({', '.join(BOARDS)}) or a device ({', '.join(BLOCK_RAM)}), "
                         f"not {board!r}")
    ram = block_ram(device)
    used = ram.blocks_for(config.hardware_memory_bits)
    return {"device": device, "block_rams": used, "available": ram.count, "fits": used <= ram.count}


def _params(args) -> int:
    from .model.solver import describe, solve
    if args.span is None:
        if args.window is None:
            raise ValueError("give --window (a window bounded by count) or --span and --rate (a time window)")
        if args.rate is not None or args.burst != 1.0 or args.no_floor:
            raise ValueError("--rate, --burst and --no-floor size a time window: give --span too")
        from .model.lanes import lane_window_for, lanes_window
        per_lane = lane_window_for(args.window, args.lanes)
        config = solve(args.fp, per_lane, max_npws=args.max_npws, block_bits=args.block_bits,
                       block_hashes=args.block_hashes, row_bits=args.row_bits, burst_bits=args.burst_bits)
        result = describe(config)
        title = f"smallest filter with fp <= {args.fp} and window >= {args.window}"
        if args.lanes > 1:
            window = lanes_window(config.window, args.lanes)
            result.update(lanes=args.lanes, lane_window=config.window, window_expected=window["expected"],
                          window_kept_1e_9=window["guaranteed"], window_worst=window["worst"],
                          lanes_memory_bits=args.lanes * config.hardware_memory_bits)
            title += (f" over {args.lanes} lanes (each lane sized as below; a key kept for the last "
                      f"{args.window} inserts with probability 1 - 1e-9 on random keys, for {config.window} "
                      f"in the worst case)")
    else:
        from .model.timeanalysis import floor_headroom, planned_rate, solve_timed, timed_analysis
        if args.rate is None:
            raise ValueError("--span needs --rate (keys per second)")
        if args.window is not None or args.max_npws is not None:
            raise ValueError("--window and --max-npws size a window bounded by count: not with --span")
        ticks = round(args.span / args.tick)
        rate = args.rate * args.tick
        time_width = args.time_width or next(w for w in (32, 48, 64) if ticks < 1 << (w - 2))
        rate /= args.lanes                                 # each lane takes its share of the keys
        config = solve_timed(args.fp, ticks, rate, burst=args.burst, block_bits=args.block_bits,
                             block_hashes=args.block_hashes, time_width=time_width, floor=not args.no_floor,
                             row_bits=args.row_bits, burst_bits=args.burst_bits)
        steady, burst = timed_analysis(config, rate), timed_analysis(config, rate * args.burst)
        c = config
        result = {"k": c.k, "l": c.l, "block_bits": c.block_bits, "block_hashes": c.block_hashes,
                  "segment_blocks": c.segment_blocks, "key_width": c.key_width, "span": c.span,
                  "time_width": c.time_width, "extra_segments": c.extra_segments, "tick_seconds": args.tick,
                  "physical_segments": c.physical_segments, "generation": c.generation,
                  "shift_interval": c.shift_interval, "planned_rate_per_second": planned_rate(c) / args.tick,
                  "memory_bits": c.hardware_memory_bits, "fp": steady["fp"], "fp_mean": steady["fp_mean"],
                  "alive_segments": steady["alive"], "window_keys": steady["window_keys"],
                  "burst_rate_per_second": args.rate * args.burst, "burst_fp": burst["fp"],
                  "burst_alive_segments": burst["alive"], "burst_keeps_span": not burst["overflow"],
                  "count_floor": floor_headroom(c)}
        if c.row_layout:
            from .model.memory import memory_facts
            facts = memory_facts(c, args.rate / args.lanes, tick=args.tick)
            result.update(row_bits=c.row_bits, burst_bits=c.burst_bits, rows=c.rows, row_blocks=c.row_blocks,
                          **{f"memory_{name}": value for name, value in facts.items()
                             if name not in ("rows", "row_bits", "row_blocks")})
        title = (f"smallest time window with fp <= {args.fp} at {args.rate:g} keys/s over {args.span:g} s "
                 f"(tick {args.tick:g} s), span kept up to {args.burst:g}x that rate")
        if args.lanes > 1:
            result.update(lanes=args.lanes, lanes_memory_bits=args.lanes * c.hardware_memory_bits)
            result["planned_rate_per_second"] *= args.lanes
            title += f" over {args.lanes} lanes (each lane sized for 1/{args.lanes} of the rate, as below)"
    fit = _fit(config, args.board)
    if fit is not None:
        result["fit"] = fit
    _print(result, args.json, title)
    return 0 if fit is None or fit["fits"] else 1


def _add_params(subparsers) -> None:
    parser = subparsers.add_parser(
        "params", help="size a filter for a false-positive rate and a window (count or time)",
        description="The smallest-memory Config with worst-case fp <= E and a window of W inserts (--window), or "
                    "one that keeps every key for a time span at an insert rate (--span, --rate, --burst, "
                    "--tick: the time-bounded window of paper 001 on fixed-size segments), and its metrics. With "
                    "--board or --device, whether it fits that block RAM (exit status 1 if not).")
    parser.add_argument("--fp", type=float, required=True, metavar="E", help="target false-positive rate")
    parser.add_argument("--window", type=int, default=None, metavar="W",
                        help="inserts always reported present (w = l*g), for a window bounded by count")
    parser.add_argument("--max-npws", type=float, default=None, metavar="P", help="maximum peak NPWS (optional)")
    parser.add_argument("--span", type=_duration, default=None, metavar="T",
                        help="time window, e.g. 1ms, 600ms, 1s: every key stays present this long")
    parser.add_argument("--rate", type=float, default=None, metavar="R", help="planned inserts per second")
    parser.add_argument("--burst", type=float, default=1.0, metavar="X",
                        help="rates up to X times --rate keep the span (more segments in the pool; default 1)")
    parser.add_argument("--no-floor", action="store_true",
                        help="with --span: size the pool for --burst alone, without the count floor's l - 1 extra "
                             "segments (less memory; an overload after slow traffic may then retire keys among "
                             "the last l*g inserts)")
    parser.add_argument("--tick", type=_duration, default=1e-6, metavar="T",
                        help="the unit of the command times, e.g. 1ns, 1us, or a clock period (default 1us)")
    parser.add_argument("--time-width", type=int, default=None, metavar="BITS",
                        help="bits of the command times (default: 32, or 48/64 for long spans)")
    parser.add_argument("--board", "--device", dest="board", default=None, metavar="NAME",
                        help="check that the filter fits this board (icebreaker, ulx3s-85f) or device's block RAM")
    parser.add_argument("--lanes", type=int, default=1, choices=(1, 2, 4, 8, 16), metavar="N",
                        help="size each of N lanes (apbbf.model.lanes): a count window over all lanes kept with "
                             "probability 1-1e-9 on random keys; a time window at 1/N of the rate per lane")
    _block_args(parser, 64, 4)
    _row_args(parser)
    parser.set_defaults(func=_params)


def _row_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--row-bits", type=int, default=0, metavar="BITS",
                        help="the row layout for a memory of slow random rows (DRAM): bits per memory row, a power "
                             "of two holding a block of every physical segment (default 0: on-chip segments)")
    parser.add_argument("--burst-bits", type=int, default=0, metavar="BITS",
                        help="with --row-bits: bits per memory burst (default 0: one block per burst)")


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


def _add_dedup(subparsers):
    from .dedup import add_parser        # dpkt and tqdm, only when used
    add_parser(subparsers)


register("export", _add_export)
register("host", _add_host)
register("dedup", _add_dedup)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand, or with subcommand ``only`` alone (so that a command
    imports only what it needs: ``export`` pulls in Amaranth, ``dedup`` numpy and dpkt)."""
    parser = argparse.ArgumentParser(prog="apbbf", description="Age-Partitioned Blocked Bloom Filter tools")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name, add_parser in COMMANDS:
        if only is None or name == only:
            add_parser(subparsers)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``apbbf`` console script; returns the exit status."""
    words = sys.argv[1:] if argv is None else list(argv)
    named = words[0] if words and words[0] in {name for name, _ in COMMANDS} else None
    parser = build_parser(named)
    args = parser.parse_args(words)
    try:
        return args.func(args)
    except (TypeError, ValueError) as error:
        parser.exit(2, f"apbbf {args.command}: error: {error}\n")


if __name__ == "__main__":
    sys.exit(main())
