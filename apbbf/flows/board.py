"""A board's bitstream with the YoWASP yosys/nextpnr, and its report (``make bitstream``).

Why this way: amaranth-boards' platforms know the real pins; ``platform.build(do_build=False)`` writes the
yosys/nextpnr script with those constraints and ``execute_local`` runs it with the tools named by the YOSYS,
NEXTPNR_*, ICEPACK, ECPPACK environment variables, which :func:`apbbf.toolchain.use_yowasp` points at the YoWASP
wheels (the ULX3S platform would otherwise insist on openFPGALoader, which only programs). The numbers an FPGA
engineer reads come from two places: the cell counts from Yosys' ``stat`` (the tech-mapped netlist: LUT4s,
flip-flops, carries, block RAMs, DSPs) and the post-route Fmax and packed utilization from nextpnr's ``--report``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import fields, replace
from pathlib import Path

from .. import toolchain
from ..export import draw_seed

__all__ = ["parse_config", "config_fields", "board_config", "filter_numbers", "build_board", "summary"]


def parse_config(text: str | None, default):
    """``default`` (a Config) with the fields of ``text`` (``"k=4,l=9,segment_blocks=256"``) replaced.

    Raises
    ------
    ValueError
        If an item is not ``name=integer``, the name is not a Config field, or the Config is invalid.
    TypeError
        See :class:`~apbbf.model.config.Config`.
    """
    if not text:
        return default
    names = {f.name for f in fields(default)}
    values = {}
    for item in text.split(","):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or name not in names:
            raise ValueError(f"config items must be name=integer with name one of {', '.join(sorted(names))}, "
                             f"not {item.strip()!r}")
        try:
            values[name] = int(value, 0)
        except ValueError:
            raise ValueError(f"config item {name} must be an integer, not {value!r}") from None
    return replace(default, **values)


def config_fields(text: str | None) -> set[str]:
    """The Config fields that ``text`` (as :func:`parse_config` takes it) names, e.g. to know whether it gives
    a seed."""
    if not text:
        return set()
    return {item.partition("=")[0].strip() for item in text.split(",")}


def board_config(board: str, config=None, seed=None) -> tuple:
    """The Config a build of ``board`` uses: ``config`` (default: the board's ``default_config``) with the hash
    seed ``seed``, or a fresh one (:func:`apbbf.export.draw_seed`) when ``seed`` is None.

    Returns
    -------
    (Config, bool)
        The Config, and whether its seed was drawn.

    Raises
    ------
    ValueError
        If ``board`` is unknown or ``seed`` is not 0..2**64-1.
    TypeError
        If ``config`` is not a Config or ``seed`` not an integer.
    """
    from ..hdl.board.boards import BOARDS
    from ..model.config import SEEDS, check_config, check_integer
    if board not in BOARDS:
        raise ValueError(f"board must be one of {', '.join(BOARDS)}, not {board!r}")
    config = BOARDS[board].default_config if config is None else check_config(config)
    drawn = seed is None
    seed = draw_seed() if drawn else check_integer("seed", seed, SEEDS)
    return replace(config, seed=seed), drawn


def filter_numbers(config) -> dict:
    """The Config's fields and derived numbers for a report, with the predicted worst-case false-positive rate
    (:func:`apbbf.model.analysis.analyze_config`; ``None`` and ``predicted_fp_error`` where it has none)."""
    from ..model.analysis import analyze_config
    numbers = {
        "config": {f.name: getattr(config, f.name) for f in fields(config)},
        "physical_segments": config.physical_segments,
        "memory_bits": config.memory_bits,
        "hardware_memory_bits": config.hardware_memory_bits,
        "generation": config.generation,
        "window": config.window,
        "bits_per_element": round(config.bits_per_element, 3),
        "predicted_fp": None,
    }
    try:
        numbers["predicted_fp"] = analyze_config(config)["fp"]
    except (TypeError, ValueError) as error:
        numbers["predicted_fp_error"] = f"{type(error).__name__}: {error}"
    return numbers


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:                      # another drive (Windows)
        return str(path)


def build_board(board: str, config=None, *, build_dir, seed=None) -> dict:
    """Build ``board``'s bitstream for ``config`` and write ``<build_dir>/report.json``.

    The hash seed keys the filter's hash (:mod:`apbbf.model.hashing`): a board gets a fresh one unless ``seed``
    is given, so that its hash is not the published default (``docs/trust.md``). The seed is recorded in the
    report (``seed``, and in the filter's config) and in the bitstream, whose INFO reply carries it.

    Parameters
    ----------
    board : str
        A key of :data:`apbbf.hdl.board.boards.BOARDS`.
    config : Config, optional
        The filter (default: the board top's ``default_config``); its ``seed`` is replaced by ``seed``.
    build_dir : str or os.PathLike
        Where Amaranth's build files, the bitstream and the report go.
    seed : int, optional
        The hash seed, 0..2**64-1; None (the default) draws a fresh one
        (:func:`apbbf.export.draw_seed`).

    Returns
    -------
    dict
        The report: board, device, bitstream, clock, baud, Fmax per clock, cell counts, utilization, the filter's
        numbers (:func:`filter_numbers`), the seed and whether it was drawn, build time.

    Raises
    ------
    ValueError
        If ``board`` is unknown, ``seed`` is out of range, or the filter does not fit the board's device (the
        board top checks).
    TypeError
        If ``config`` is not a Config or ``seed`` not an integer.
    amaranth.build.run.BuildError or subprocess.CalledProcessError
        If a tool fails.
    """
    from ..hdl.board.boards import board_info
    config, drawn = board_config(board, config, seed)
    toolchain.use_yowasp()
    top_class, platform = board_info(board)
    family = toolchain.family(platform)
    top = top_class(config)
    config = top.config
    build_dir = Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    nextpnr_opts = "--timing-allow-fail --report nextpnr_report.json"
    if family == "ice40":
        nextpnr_opts += " --opt-timing"
    start = time.monotonic()
    plan = platform.build(top, name="top", build_dir=str(build_dir), do_build=False, nextpnr_opts=nextpnr_opts)
    toolchain.execute_plan(plan, build_dir)
    seconds = time.monotonic() - start

    pnr = json.loads((build_dir / "nextpnr_report.json").read_text())
    cells = toolchain.yosys_cells((build_dir / "top.rpt").read_text())
    bitstream = build_dir / ("top.bin" if family == "ice40" else "top.bit")
    speed = getattr(platform, "speed", None)
    report = {
        "board": board,
        "device": f"{platform.device}-{platform.package}" + (f" speed {speed}" if speed else ""),
        "bitstream": _display(bitstream) if bitstream.exists() else None,
        "clock_hz": top.clock_hz,
        "baud": top.baud,
        "fmax": toolchain.fmax_from_report(pnr),
        "cells": toolchain.group_cells(cells, family),
        "utilization": {name: {"used": v["used"], "available": v["available"]}
                        for name, v in pnr.get("utilization", {}).items() if v.get("used")},
        "filter": filter_numbers(config),
        "seed": config.seed,
        "seed_drawn": drawn,
        "build_seconds": round(seconds, 1),
    }
    (build_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def summary(report: dict) -> str:
    """A few lines for the terminal from a :func:`build_board` report."""
    f = report["filter"]
    c = report["cells"]
    lines = [f"{report['board']} ({report['device']}), {report['clock_hz'] / 1e6:g} MHz, {report['baud']} baud, "
             f"bitstream {report['bitstream']}"]
    for name, clock in report["fmax"].items():
        status = "met" if clock["met"] else "NOT met"
        lines.append(f"  Fmax {name:>12}: {clock['achieved_mhz']:8.2f} MHz (constraint "
                     f"{clock['constraint_mhz']} MHz, {status})")
    util = report["utilization"]
    brams = next((v for k, v in util.items() if k in toolchain.NEXTPNR_BRAM.values()), None)
    lut_cap = next((v["available"] for k, v in util.items() if k in ("ICESTORM_LC", "TRELLIS_COMB")), None)
    lines.append(f"  LUT4 {c.get('luts', 0):>8}" + (f" / {lut_cap}" if lut_cap else "") +
                 f"   FF {c.get('ffs', 0):>7}   carry {c.get('carry', 0):>6}   DSP {c.get('dsps', 0)}")
    lines.append(f"  BRAM {c.get('brams', 0):>8}" + (f" / {brams['available']}" if brams else "") +
                 f"   SPRAM {c.get('sprams', 0)}" +
                 (f"   LUTRAM {c['lutram']}" if c.get("lutram") else ""))
    cfg = f["config"]
    fp = f"{f['predicted_fp']:.3g}" if f.get("predicted_fp") is not None else "n/a"
    lines.append(f"  filter k={cfg['k']} l={cfg['l']} B={cfg['block_bits']} b={cfg['block_hashes']} "
                 f"blocks={cfg['segment_blocks']} key={cfg['key_width']}: {f['hardware_memory_bits']} bits, "
                 f"window {f['window']}, fp {fp}, {f['bits_per_element']:.1f} bits/element")
    seed = report.get("seed", cfg["seed"])
    how = " (drawn for this build; rebuild with --seed to repeat it)" if report.get("seed_drawn") else ""
    lines.append(f"  hash seed {seed:#018x}{how}")
    return "\n".join(lines)
