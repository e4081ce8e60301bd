"""The run-time seed's cost: the packet de-duplicator of ``make dedup-bench`` (64 bits, drop, l3l4) with its control
plane (clearable, the run-time window and the AXI4-Lite register file,
:class:`~apbbf.sim.designs.RegisteredControlledDedup`) synthesized for ECP5 without and with ``runtime_seed`` (the
hash's tweak, the seed's registers and the re-key):
LUT4, flip-flops and their difference, in build/reports/rekey_cost.json. Yosys only (no place and route); a
measurement, not a test. Run it under ``flock /tmp/heavy.lock``."""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    from apbbf import toolchain
    from apbbf.flows.dedup_bench import CONFIG
    from apbbf.flows.pnr import rtlil_text, synthesize, target_platform
    from apbbf.hdl.packet.dedup import PacketDedup
    from apbbf.model.packet import KeySpec
    from apbbf.sim.designs import RegisteredControlledDedup

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="build/reports", help="report directory (default build/reports)")
    parser.add_argument("--work", default="build/rekey_cost", help="work directory (default build/rekey_cost)")
    args = parser.parse_args(argv)
    platform = target_platform("ecp5")
    options = dict(data_width=64, action="drop", max_frame=1518, clearable=True, runtime_window=True)
    results = {}
    for name, seeded in (("without", False), ("with", True)):
        design = RegisteredControlledDedup(PacketDedup(CONFIG, KeySpec.l3l4(), runtime_seed=seeded, **options))
        start = time.monotonic()
        print(f"{name} the run-time seed: synthesis", flush=True)
        work = Path(args.work) / name
        synth = synthesize(rtlil_text(design, platform), "ecp5", work)
        cells = toolchain.group_cells(toolchain.yosys_cells((work / "synth.log").read_text()), "ecp5")
        results[name] = {"cells": cells, "synth": synth, "seconds": round(time.monotonic() - start, 1)}
        print(f"  cells {cells} ({results[name]['seconds']} s)", flush=True)
    a, b = results["without"]["cells"], results["with"]["cells"]
    delta = {column: b[column] - a[column] for column in a if column in b}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    report = {"design": f"PacketDedup 64 bits, drop, l3l4, with its control plane, {CONFIG}", "device": "ECP5",
              "commit": commit, "date": time.strftime("%Y-%m-%d"), "results": results, "delta": delta}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rekey_cost.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"delta: cells {delta} -> {out / 'rekey_cost.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
