"""The documentation's generated blocks: text the docs state that a function already computes, written between
``<!-- generated: NAME -->`` and ``<!-- end: NAME -->`` markers so that it cannot drift from that function.

``python -m apbbf.docgen`` (``make docs``) rewrites every block in place; ``python -m apbbf.docgen --check`` exits
with status 1 and names the stale blocks (``tests/test_docgen.py`` runs the check). A block's text is a function
of the code alone (never of a measurement, which would make the check depend on a report's presence).

Measurements have blocks of their own, ``<!-- report: NAME -->`` … ``<!-- end: NAME -->``: the flow that
measures rewrites its block from its report when it finishes (:func:`write_report_block`), stamped with the date
and the machine, so that a figure in the README is the last report's and says when and where it was made.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

__all__ = ["EXAMPLE_TIMED", "BLOCKS", "time_window_facts_block", "restart_block", "register_map_block", "render", "stale",
           "machine_stamp", "write_report_block", "main"]

ROOT = Path(__file__).resolve().parents[1]

#: The time-bounded Config the docs give numbers for: the overload reproducer's shape (k=3 l=8 B=64 b=4,
#: 64 blocks, span 2000, 16-bit times) with the count floor's headroom (l - 1 = 7 extra segments).
EXAMPLE_TIMED = dict(k=3, l=8, block_bits=64, block_hashes=4, segment_blocks=64, span=2000, time_width=16,
                     extra_segments=7)


def _example():
    from .model.config import Config
    return Config(**EXAMPLE_TIMED)


def time_window_facts_block() -> str:
    """The list :func:`apbbf.model.timeanalysis.time_window_facts` writes into the Verilog header, for
    :data:`EXAMPLE_TIMED`."""
    from .model.timeanalysis import time_window_facts
    config = _example()
    lines = [f"For `Config({', '.join(f'{n}={v}' for n, v in EXAMPLE_TIMED.items())})`, as "
             "`apbbf export` writes them into the Verilog header with its own Config's numbers:", ""]
    lines += [f"- {fact}" for fact in time_window_facts(config)]
    return "\n".join(lines)


def restart_block() -> str:
    """What a restart costs on each scan (``restart_cycles`` of :mod:`apbbf.hdl.core.scan_fsm` and
    :mod:`apbbf.hdl.core.scan_parallel`), in general and for :data:`EXAMPLE_TIMED`."""
    from .hdl.core.hash import hash_latency
    from .hdl.core.scan_fsm import restart_cycles as fsm
    from .hdl.core.scan_parallel import restart_cycles as parallel
    config = _example()
    S, L = config.segment_blocks, hash_latency(config)
    (pf, pm), (ff, _) = parallel(config), fsm(config)
    return "\n".join([
        "| scan | a restarting insert delays the commands behind it, against an ordinary insert, by (L: the hash "
        f"latency, 6 for keys up to 64 bits, 9 wider) | for the example (`segment_blocks` = {S}) |",
        "|---|---|---|",
        f"| parallel | `segment_blocks + {pf - S}` cycles when nothing was in flight, up to `segment_blocks + L + "
        f"{pm - S - L}` behind a command every clock | {pf} to {pm} |",
        f"| fsm | `segment_blocks + {ff - S}` cycles, whatever was in flight | {ff} |",
    ])


def register_map_block() -> str:
    """The exported de-duplicator's register map (:func:`apbbf.registers.markdown_table`), and the appliance's
    additions."""
    from .model.registers import register_map
    from .registers import markdown_table
    added = [r for name, r in register_map("appliance").items() if name not in register_map("dedup")]
    return (markdown_table("dedup") + "\n\nThe two-port appliance's map adds its MAC counters, at the last snapshot, "
            f"from `{added[0].offset:#04x}` (`{added[0].name}`) to `{added[-1].offset:#04x}` (`{added[-1].name}`), "
            "in the order of the APPLIANCE reply (docs/protocol.md).")


#: Block name -> the function that writes it.
BLOCKS = {"time-window-facts": time_window_facts_block, "restart-cycles": restart_block,
          "register-map": register_map_block}



def _marked(kind: str) -> re.Pattern:
    """A block between ``<!-- <kind>: name -->`` and ``<!-- end: name -->``: group 1 the opening line, ``name``,
    ``body``, group 4 the closing marker."""
    return re.compile(rf"(<!-- {kind}: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)", re.S)


#: A generated block (rewritten from the code by :func:`render`).
_BLOCK = _marked("generated")


def render(text: str) -> tuple[str, list[str]]:
    """``text`` with every generated block rewritten, and the names of the blocks that changed.

    Raises
    ------
    ValueError
        If a block names no function of :data:`BLOCKS`.
    """
    changed = []

    def replace(match):
        name = match["name"]
        if name not in BLOCKS:
            raise ValueError(f"unknown generated block {name!r}; known: {', '.join(BLOCKS)}")
        body = BLOCKS[name]() + "\n"
        if body != match["body"]:
            changed.append(name)
        return match[1] + body + match[4]

    return _BLOCK.sub(replace, text), changed


def documents(root: Path = ROOT) -> list[Path]:
    """The Markdown files that may hold generated blocks: the README and ``docs/``."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def stale(root: Path = ROOT) -> dict[str, list[str]]:
    """File (relative to ``root``) -> the names of its blocks that differ from what their functions write."""
    out = {}
    for path in documents(root):
        _, changed = render(path.read_text())
        if changed:
            out[str(path.relative_to(root))] = changed
    return out


#: A report block (rewritten from a measurement's report by :func:`write_report_block`).
_REPORT = _marked("report")


def machine_stamp() -> str:
    """Today's date and this machine: its CPU count and load average (a shared machine slows place and route)."""
    import datetime
    import os
    import platform
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{datetime.date.today().isoformat()}, {platform.machine()} with {os.cpu_count()} CPUs, load average "
            f"{load} at the end")


def write_report_block(name: str, body: str, path=None) -> bool:
    """Rewrite the report block ``name`` of ``path`` (default: the README) with ``body``; whether the file had
    that block (a file without it is left as it is).

    Raises
    ------
    ValueError
        If ``name`` is not a block name (letters, digits, ``_`` and ``-``).
    """
    if not re.fullmatch(r"[\w-]+", name):
        raise ValueError(f"name must be letters, digits, '_' and '-', not {name!r}")
    path = Path(path) if path is not None else ROOT / "README.md"
    text = path.read_text()
    found = False

    def replace(match):
        nonlocal found
        if match["name"] != name:
            return match[0]
        found = True
        return match[1] + body.rstrip("\n") + "\n" + match[4]

    text = _REPORT.sub(replace, text)
    if found:
        path.write_text(text)
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite (or check) the docs' generated blocks.")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block is stale")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this checkout)")
    args = parser.parse_args(argv)
    if args.check:
        out = stale(args.root)
        for name, blocks in out.items():
            print(f"{name}: stale generated block(s) {', '.join(blocks)}; run `make docs`", file=sys.stderr)
        return 1 if out else 0
    for path in documents(args.root):
        text, changed = render(path.read_text())
        if changed:
            path.write_text(text)
            print(f"{path.relative_to(args.root)}: {', '.join(changed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
