#!/usr/bin/env python3
"""Simulate a two-port board's appliance top as ``make bitstream`` elaborates it (PLL, DELAYG, ECP5 DDR I/O, the
DP16KD; ``make netlist-sim BOARD=colorlight-5a75b`` or ``versa-ecp5``) under the appliance's cocotb benches on
Icarus (:func:`apbbf.sim.cocotb.board_runner.run_board`, its ``BENCHES``), and write build/reports/netlist_sim-<board>.json: each
bench's result, its simulated and wall-clock time. With ``--stage routed`` (``make netlist-sim STAGE=routed``), the
routed netlist of the bitstream build instead (``make bitstream WRITE_ROUTED=1`` first:
:func:`apbbf.sim.cocotb.routed_runner.run_routed_board`, its short bench), into
build/reports/netlist_sim-<board>-routed.json, with the simulated cycles of ``sync`` per second."""

import argparse
import json
import sys
import time
from dataclasses import asdict
from xml.etree import ElementTree

from apbbf.flows.args import BUILD, REPORTS
from apbbf.model import Config
from apbbf.sim.cocotb.board_runner import BOARDS, run_board

#: The filter of the benches: a 12 us window, small segments (as tests/test_appliance_cocotb.py).
CONFIG = Config(k=2, l=3, segment_blocks=16, span=12, extra_segments=2, seed=0x5EED1E55)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", required=True, choices=list(BOARDS))
    parser.add_argument("--seed", type=int, default=20261125, help="cocotb's RANDOM_SEED (default 20261125)")
    parser.add_argument("--frames", type=int, default=40, help="frames into port 0 (default 40)")
    parser.add_argument("--reverse-frames", type=int, default=20, help="frames into port 1 (default 20)")
    parser.add_argument("--line-rate-frames", type=int, default=30, help="minimum-size frames each way (default 30)")
    parser.add_argument("--stage", default="rtl", choices=("rtl", "routed"),
                        help="rtl: the board top before synthesis (default); routed: the bitstream build's routed "
                             "netlist (make bitstream WRITE_ROUTED=1 first)")
    parser.add_argument("--pnr-seed", type=int, default=None,
                        help="with --stage routed: the nextpnr seed whose routed design to simulate (default: the "
                             "bitstream's)")
    parser.add_argument("--report-only", action="store_true",
                        help="write the report from the last run's results, without running it again")
    args = parser.parse_args(argv)
    if args.stage == "routed":
        return routed(args)
    build_dir = BUILD / "netlist-sim" / args.board / "all"
    start = time.monotonic()
    failed_run = None
    if not args.report_only:
        try:
            run_board(build_dir, args.board, CONFIG, seed=args.seed, frames=args.frames, uart=False,
                      reverse_frames=args.reverse_frames, line_rate_frames=args.line_rate_frames)
        except SystemExit as exit_:
            failed_run = exit_.code
    benches = _benches(build_dir / "results.xml")
    report = {"board": args.board, "seed": args.seed, "config": asdict(CONFIG),
              "frames": args.frames, "reverse_frames": args.reverse_frames, "line_rate_frames": args.line_rate_frames,
              "benches": benches, "seconds": round(time.monotonic() - start, 1) if not args.report_only else
              round(sum(bench["seconds"] for bench in benches.values()), 1),
              "passed": failed_run is None and bool(benches) and all(b["passed"] for b in benches.values())}
    REPORTS.mkdir(parents=True, exist_ok=True)
    path = REPORTS / f"netlist_sim-{args.board}.json"
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    for name, bench in benches.items():
        print(f"{name}: {'pass' if bench['passed'] else 'FAIL'} ({bench['sim_time_ns'] / 1e3:.1f} us simulated, "
              f"{bench['seconds']:.0f} s)")
    print(f"{path}: {'pass' if report['passed'] else 'FAIL'} in {report['seconds']} s")
    return 0 if report["passed"] else 1


def _benches(results) -> dict:
    """Each bench of a cocotb results file: passed, failures, simulated nanoseconds, wall-clock seconds."""
    benches = {}
    if results.exists():
        for case in ElementTree.parse(results).getroot().iter("testcase"):
            failures = [f.get("message") or "" for f in [*case.iter("failure"), *case.iter("error")]]
            properties = {p.get("name"): p.get("value") for p in case.iter("property")}
            benches[case.get("name")] = {"passed": not failures, "failures": failures,
                                         "sim_time_ns": float(properties.get("sim_time_duration", 0)),
                                         "seconds": float(case.get("time", 0))}
    return benches


def routed(args) -> int:
    """The routed netlist of ``make bitstream``'s build under the short bench."""
    from apbbf.sim.cocotb.routed_runner import run_routed_board
    build = BUILD / f"appliance-{args.board}"
    options = json.loads((build / "options.json").read_text()) if (build / "options.json").exists() else None
    pnr_seed = args.pnr_seed
    if pnr_seed is None:
        report = build / "report.json"
        pnr_seed = json.loads(report.read_text())["bitstream_seed"] if report.exists() else 1
    routed_json = build / f"seed{pnr_seed}.routed.json"
    if options is None or not routed_json.exists():
        print(f"netlist_sim: no routed design {routed_json}: run make bitstream BOARD={args.board} SEEDS={pnr_seed} "
              "WRITE_ROUTED=1 first", file=sys.stderr)
        return 2
    build_dir = BUILD / "netlist-sim" / args.board / "routed"
    start = time.monotonic()
    failed_run = None
    if not args.report_only:
        try:
            run_routed_board(build_dir, args.board, routed_json, options, seed=args.seed)
        except SystemExit as exit_:
            failed_run = exit_.code
    benches = _benches(build_dir / "results.xml")
    for bench in benches.values():
        # sync runs at 50 MHz: 20 ns a cycle
        bench["sync_cycles_per_second"] = round(bench["sim_time_ns"] / 20 / bench["seconds"], 1) \
            if bench["seconds"] else None
    nets = build_dir / "nets.json"
    report = {"board": args.board, "stage": "routed", "routed_json": str(routed_json), "pnr_seed": pnr_seed,
              "seed": args.seed, "config": options["config"], "benches": benches,
              "nets": json.loads(nets.read_text()) if nets.exists() else None,
              "seconds": round(time.monotonic() - start, 1),
              "passed": failed_run is None and bool(benches) and all(b["passed"] for b in benches.values())}
    REPORTS.mkdir(parents=True, exist_ok=True)
    path = REPORTS / f"netlist_sim-{args.board}-routed.json"
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    for name, bench in benches.items():
        print(f"{name}: {'pass' if bench['passed'] else 'FAIL'} ({bench['sim_time_ns'] / 1e3:.1f} us simulated, "
              f"{bench['seconds']:.0f} s, {bench['sync_cycles_per_second']} sync cycles/s)")
    print(f"{path}: {'pass' if report['passed'] else 'FAIL'} in {report['seconds']} s")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
