"""The control plane's cost: the packet de-duplicator of ``make dedup-bench`` (64 bits, drop, l3l4) placed and routed
on ECP5-85F without and with its control plane (clearable, the run-time window and the AXI4-Lite register file,
:class:`~apbbf.sim.designs.RegisteredControlledDedup`), one nextpnr seed each, the bench's placer and router:
LUT4, flip-flops and Fmax of each and their difference, in build/reports/control_cost.json. A measurement, not a
test. Run it under ``flock /tmp/pnr.lock`` (one place and route at a time on the machine)."""

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    from apbbf.flows.dedup_bench import CONFIG, PLACER, ROUTERS, TARGET_MHZ
    from apbbf.flows.pnr import PNR_TIMEOUT_S, rtlil_text, run_pnr_cached, target_platform
    from apbbf.hdl.packet.dedup import PacketDedup
    from apbbf.model.packet import KeySpec
    from apbbf.sim.designs import RegisteredControlledDedup, RegisteredDedup

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="build/reports", help="report directory (default build/reports)")
    parser.add_argument("--work", default="build/control_cost", help="work directory (default build/control_cost)")
    parser.add_argument("--seed", type=int, default=1, help="the nextpnr seed of both runs (default 1)")
    parser.add_argument("--timeout", type=float, default=PNR_TIMEOUT_S, help="seconds per run")
    parser.add_argument("--quick", action="store_true", help="reuse kept place-and-route results of the same design")
    parser.add_argument("--not-after", metavar="HH:MM", default=None,
                        help="start no place and route after this UTC time (the report says which were not run)")
    args = parser.parse_args(argv)
    platform = target_platform("ecp5")
    width = 64
    options = dict(data_width=width, action="drop", max_frame=1518)
    designs = {
        "without": RegisteredDedup(PacketDedup(CONFIG, KeySpec.l3l4(), **options)),
        "with": RegisteredControlledDedup(PacketDedup(CONFIG, KeySpec.l3l4(), clearable=True, runtime_window=True,
                                                      **options)),
    }
    results = {}
    for name, design in designs.items():
        if args.not_after is not None and time.strftime("%H:%M", time.gmtime()) >= args.not_after:
            print(f"{name} the control plane: not run (past {args.not_after} UTC)", flush=True)
            results[name] = None
            continue
        print(f"{name} the control plane: synthesis, place and route (seed {args.seed})", flush=True)
        result = run_pnr_cached(rtlil_text(design, platform), platform, Path(args.work) / name,
                                freq_mhz=TARGET_MHZ, reuse=args.quick, seeds=(args.seed,),
                                nextpnr_args=("--placer", PLACER, "--router", ROUTERS[width]),
                                timeout_s=args.timeout)
        results[name] = {key: result.get(key) for key in ("device", "fmax_mhz", "cells", "utilization",
                                                          "critical_path", "seconds", "timed_out", "nextpnr_args")}
        print(f"  {result.get('fmax_mhz')} MHz, cells {result.get('cells')}", flush=True)
    a, b = results["without"], results["with"]
    delta, fmax = None, None
    if a is not None and b is not None:
        delta = {column: b["cells"][column] - a["cells"][column] for column in a["cells"] if column in b["cells"]}
        fmax = (round(b["fmax_mhz"] - a["fmax_mhz"], 2) if a["fmax_mhz"] is not None and b["fmax_mhz"] is not None
                else None)
    report = {"design": f"PacketDedup {width} bits, drop, l3l4, {CONFIG}", "seed": args.seed,
              "placer": PLACER, "router": ROUTERS[width], "results": results,
              "delta": {"cells": delta, "fmax_mhz": fmax}}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "control_cost.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"delta: cells {delta}, Fmax {fmax} MHz -> {out / 'control_cost.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
