"""ECP5 synthesis of a small design for the tests that check what Yosys keeps (:func:`synthesize_ecp5`)."""

import json
import re
import subprocess
from pathlib import Path

from amaranth.back import rtlil

BUILD = Path(__file__).resolve().parents[1] / "build"      # YoWASP: paths in the repo


def synthesize_ecp5(design, name: str, synth: str = "synth_ecp5 -top top") -> dict:
    """Synthesize ``design`` (top ``top``) with Yosys in ``build/<name>`` (``synth``: the commands after reading the
    RTLIL, writing nothing); returns the cells of the netlist by name."""
    work = BUILD / name
    work.mkdir(parents=True, exist_ok=True)
    from apbbf.toolchain import find_yosys, tool_environ
    (work / "design.il").write_text(rtlil.convert(design, name="top"))
    subprocess.run([find_yosys(), "-q", "-p", f"read_rtlil design.il; {synth} -json design.json"], cwd=work,
                   check=True, timeout=300, env=tool_environ())
    return json.loads((work / "design.json").read_text())["modules"]["top"]["cells"]


def flip_flops_per_copy(cells: dict, stem: str) -> dict:
    """How many flip-flops each copy of a register kept (``<stem>_copy<n>`` or ``<stem><digits>_copy<n>``, as
    :func:`apbbf.hdl.core.copies.register_copies` names them): ``{"0": count, ...}``."""
    pattern = re.compile(rf"{re.escape(stem)}\d*_copy(\d+)")
    copies = {}
    for name, cell in cells.items():
        found = pattern.search(name)
        if cell["type"] == "TRELLIS_FF" and found:
            copies[found.group(1)] = copies.get(found.group(1), 0) + 1
    return copies
