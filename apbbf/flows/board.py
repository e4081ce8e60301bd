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

__all__ = ["parse_config", "filter_numbers", "build_board", "summary"]


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


def build_board(board: str, config=None, *, build_dir) -> dict:
    """Build ``board``'s bitstream for ``config`` and write ``<build_dir>/report.json``.

    Parameters
    ----------
    board : str
        A key of :data:`apbbf.hdl.boards.BOARDS`.
    config : Config, optional
        The filter (default: the board top's ``default_config``).
    build_dir : str or os.PathLike
        Where Amaranth's build files, the bitstream and the report go.

    Returns
    -------
    dict
        The report: board, device, bitstream, clock, baud, Fmax per clock, cell counts, utilization, the filter's
        numbers (:func:`filter_numbers`), build time.

    Raises
    ------
    ValueError
        If ``board`` is unknown or the filter does not fit the board's device (the board top checks).
    TypeError
        If ``config`` is not a Config.
    amaranth.build.run.BuildError or subprocess.CalledProcessError
        If a tool fails.
    """
    from ..hdl.boards import board_info
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
    cwd = os.getcwd()
    try:
        plan.execute_local(str(build_dir))
    finally:
        os.chdir(cwd)
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
    return "\n".join(lines)
