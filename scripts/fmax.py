#!/usr/bin/env python3
"""Core Fmax sweep: the bare APBBF core, ports registered, on ECP5-85F (speed 6) and iCE40UP5K, several Configs.

Writes ``build/reports/fmax.json`` and ``build/reports/fmax.png`` (Fmax and block RAM use per config).

Why this way: a board top measures the core *and* its pins and UART; here the core's wide ports are fed from a
serial-in shift register and its response is registered, so only the core's own paths limit the clock and the
design fits the 39 I/O pins of an sg48 package. Each run is synth_<family> + nextpnr with a deliberately high
target (``--freq``) and ``--timing-allow-fail``, reading the achieved post-route Fmax from ``--report``.
"""


import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import ROOT, group_cells, set_tool_env, yosys_cells  # noqa: E402

CONFIGS = [
    dict(k=2, l=3, block_bits=16, block_hashes=2, segment_blocks=256, key_width=32),
    dict(k=3, l=5, block_bits=32, block_hashes=4, segment_blocks=256, key_width=32),
    dict(k=4, l=4, block_bits=16, block_hashes=2, segment_blocks=512, key_width=64),
    dict(k=6, l=7, block_bits=16, block_hashes=2, segment_blocks=512, key_width=32),
]

FAMILIES = {
    "ecp5": {"synth": "synth_ecp5", "nextpnr": "NEXTPNR_ECP5",
             "args": ["--85k", "--package", "CABGA381", "--speed", "6"], "freq": 200},
    "ice40": {"synth": "synth_ice40", "nextpnr": "NEXTPNR_ICE40",
              "args": ["--up5k", "--package", "sg48"], "freq": 100},
}


def wrapped_core(config, scan="fsm"):
    """The core with registered ports: key shifted in serially, response hit registered."""
    from amaranth import Module, Signal, Cat
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from apbbf.hdl.core import APBBF

    class RegisteredCore(wiring.Component):
        """Bare core for timing: every core port is a flip-flop, the pins are 4 bits wide."""
        serial_in: In(1)
        valid_in: In(1)
        op_in: In(2)
        hit_out: Out(1)
        ready_out: Out(1)

        def elaborate(self, platform):
            m = Module()
            m.submodules.core = core = APBBF(config, scan=scan)
            key = Signal(config.key_width)
            valid = Signal()
            op = Signal(2)
            m.d.sync += [key.eq(Cat(self.serial_in, key[:-1])), valid.eq(self.valid_in), op.eq(self.op_in),
                         self.hit_out.eq(core.rsp.valid & core.rsp.payload.hit), self.ready_out.eq(core.cmd.ready)]
            m.d.comb += [core.cmd.valid.eq(valid), core.cmd.payload.key.eq(key),
                         core.cmd.payload.op.as_value().eq(op), core.rsp.ready.eq(1)]
            return m

    return RegisteredCore()


def run_one(config, family: str, work: Path, scan: str = "fsm") -> dict:
    from amaranth.back import rtlil
    work.mkdir(parents=True, exist_ok=True)
    (work / "core.il").write_text(rtlil.convert(wrapped_core(config, scan), name="top"))
    fam = FAMILIES[family]
    start = time.monotonic()
    # YoWASP cannot open absolute /tmp paths: run in the work directory with relative names
    subprocess.run([os.environ["YOSYS"], "-q", "-l", "synth.log", "-p",
                    f"read_rtlil core.il; {fam['synth']} -top top -json core.json; stat"],
                   cwd=work, check=True)
    subprocess.run([os.environ[fam["nextpnr"]], *fam["args"], "--json", "core.json", "--freq", str(fam["freq"]),
                    "--timing-allow-fail", "--report", "report.json", "--log", "pnr.log", "--quiet"],
                   cwd=work, check=True)
    report = json.loads((work / "report.json").read_text())
    fmax = max((v["achieved"] for v in report.get("fmax", {}).values()), default=None)
    cells = group_cells(yosys_cells((work / "synth.log").read_text()), family)
    return {"fmax_mhz": round(fmax, 2) if fmax else None, "cells": cells,
            "utilization": {k: v for k, v in report.get("utilization", {}).items() if v.get("used")},
            "seconds": round(time.monotonic() - start, 1)}


def plot(results, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [r["label"] for r in results]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.38
    for i, family in enumerate(FAMILIES):
        xs = [j + (i - 0.5) * width for j in range(len(results))]
        ax1.bar(xs, [r[family]["fmax_mhz"] or 0 if family in r else 0 for r in results], width, label=family)
        ax2.bar(xs, [r[family]["cells"]["brams"] if family in r else 0 for r in results], width, label=family)
    for ax, title in ((ax1, "post-route Fmax (MHz)"), (ax2, "block RAMs (SB_RAM40_4K / DP16KD)")):
        ax.set_xticks(range(len(results)), labels, rotation=20, ha="right", fontsize=7)
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="ecp5,ice40")
    args = parser.parse_args(argv)
    set_tool_env()
    from apbbf.model.config import Config
    out = ROOT / "build" / "reports"
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for fields in CONFIGS:
        config = Config(**fields)
        label = (f"k{config.k} l{config.l} B{config.block_bits} b{config.block_hashes} "
                 f"S{config.segment_blocks} key{config.key_width}")
        entry = {"label": label, "config": fields, "hardware_memory_bits": config.hardware_memory_bits,
                 "window": config.window}
        for family in args.families.split(","):
            work = ROOT / "build" / "fmax" / f"{family}-{label.replace(' ', '_')}"
            try:
                entry[family] = run_one(config, family, work)
            except subprocess.CalledProcessError as error:
                entry[family] = {"error": str(error), "fmax_mhz": None, "cells": {"brams": 0}}
            r = entry[family]
            print(f"{family:5} {label:40} Fmax {r['fmax_mhz']} MHz  LUT {r['cells'].get('luts')}  "
                  f"BRAM {r['cells'].get('brams')}", flush=True)
        results.append(entry)
        (out / "fmax.json").write_text(json.dumps(results, indent=2) + "\n")
    plot(results, out / "fmax.png")
    print(f"wrote {out / 'fmax.json'} and {out / 'fmax.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
