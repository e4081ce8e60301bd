#!/usr/bin/env python3
"""Build the de-duplication appliance's bitstream for a two-port board and write its report (``make bitstream
BOARD=colorlight-5a75b`` or ``BOARD=versa-ecp5``): build/appliance-<board>/top.bit, and
build/reports/appliance-<board>.json and .md (:func:`apbbf.flows.appliance.build_appliance`)."""

import argparse
import json
import sys

from apbbf.flows.appliance import ACTIONS, BOARD_DEFAULTS, KEYS, STEPS, build_appliance, markdown, summary
from apbbf.flows.args import BUILD, REPORTS, add_seeds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", required=True, choices=list(BOARD_DEFAULTS))
    parser.add_argument("--action", default="drop", choices=ACTIONS, help="what happens to a copy (default drop)")
    parser.add_argument("--key", default="l3l4", choices=KEYS, help="the de-duplication key (default l3l4)")
    parser.add_argument("--window-us", type=int, help="the time window, microseconds (default: the board's)")
    parser.add_argument("--rate-pps", type=float, default=None,
                        help="the frame rate the window is planned for (default: 1.488 Mpps, the line rate; 327368 "
                             "plans for the IMIX, whose window is longer in the same memory)")
    parser.add_argument("--fp", type=float, help="worst-case false-positive rate at 1.488 Mpps (default: the board's)")
    parser.add_argument("--memory", default=None, choices=("bram", "dram"),
                        help="where the filter is: block RAM, or the board's DRAM (default: block RAM if the window "
                             "fits it, else DRAM)")
    parser.add_argument("--seed", type=lambda text: int(text, 0), default=None,
                        help="the filter's hash seed, 0..2**64-1 (default: a fresh one from secrets, in the report)")
    add_seeds(parser)
    parser.add_argument("--jobs", type=int, default=1, help="nextpnr runs at a time (default 1)")
    parser.add_argument("--pnr-cpu-minutes", type=float, default=30,
                        help="stop a nextpnr run once it has used this much processor time and leave its seed out, "
                             "unless it is the last one left and none has finished (default 30)")
    parser.add_argument("--placer", default="static", choices=("heap", "static", "sa"),
                        help="nextpnr's placer (default static)")
    parser.add_argument("--router", default="router2", choices=("router1", "router2"),
                        help="nextpnr's router (default router2)")
    parser.add_argument("--steps", default="all", choices=STEPS,
                        help="all (default); synth: the netlist only; pnr: nextpnr for --seeds on the netlist already "
                             "in the build folder, keeping the other seeds' runs; report: no tool, the report (and "
                             "the bitstream) from the runs already in the build folder")
    parser.add_argument("--write-routed", action="store_true",
                        help="nextpnr also writes each seed's routed design, seed<N>.routed.json in the build folder "
                             "(for make netlist-sim STAGE=routed)")
    parser.add_argument("--runtime-seed", action="store_true",
                        help="build the hash's run-time seed (apbbf host ... rekey; costs logic: docs/appliance.md)")
    parser.add_argument("--runtime-window", action="store_true",
                        help="build the window writable at run time over the UART (apbbf host ... set window)")
    parser.add_argument("--no-build", dest="steps", action="store_const", const="report",
                        help="the same as --steps report")
    args = parser.parse_args(argv)
    try:
        report = build_appliance(args.board, build_dir=BUILD / f"appliance-{args.board}", window_us=args.window_us,
                                 fp=args.fp, seed=args.seed, action=args.action, key=args.key, seeds=args.seeds,
                                 jobs=args.jobs, pnr_cpu_minutes=args.pnr_cpu_minutes, placer=args.placer,
                                 router=args.router, steps=args.steps, memory=args.memory,
                                 write_routed=args.write_routed, runtime_seed=args.runtime_seed,
                                 runtime_window=args.runtime_window, rate_pps=args.rate_pps,
                                 log=lambda note: print(note, file=sys.stderr, flush=True))
    except (TypeError, ValueError, RuntimeError) as error:
        parser.exit(2, f"appliance: error: {error}\n")
    if args.steps == "synth":
        print(json.dumps(report, indent=2))
        return 0
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"appliance-{args.board}.json").write_text(json.dumps(report, indent=2) + "\n")
    (REPORTS / f"appliance-{args.board}.md").write_text(markdown(report))
    print(summary(report))
    return 0 if report["timing_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
