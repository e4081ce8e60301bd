#!/usr/bin/env python3
"""Simulate a two-port board's appliance top as ``make bitstream`` elaborates it (PLL, DELAYG, ECP5 DDR I/O, the
DP16KD; ``make netlist-sim BOARD=colorlight-5a75b`` or ``versa-ecp5``) under the appliance's cocotb benches on
Icarus (:func:`apbbf.sim.cocotb.board_runner.run_board`, its ``BENCHES``), and write build/reports/netlist_sim-<board>.json: each
bench's result, its simulated and wall-clock time."""

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
    parser.add_argument("--report-only", action="store_true",
                        help="write the report from the last run's results, without running it again")
    args = parser.parse_args(argv)
    build_dir = BUILD / "netlist-sim" / args.board / "all"
    start = time.monotonic()
    failed_run = None
    if not args.report_only:
        try:
            run_board(build_dir, args.board, CONFIG, seed=args.seed, frames=args.frames, uart=False,
                      reverse_frames=args.reverse_frames, line_rate_frames=args.line_rate_frames)
        except SystemExit as exit_:
            failed_run = exit_.code
    benches = {}
    results = build_dir / "results.xml"
    if results.exists():
        for case in ElementTree.parse(results).getroot().iter("testcase"):
            failures = [f.get("message") or "" for f in [*case.iter("failure"), *case.iter("error")]]
            properties = {p.get("name"): p.get("value") for p in case.iter("property")}
            benches[case.get("name")] = {"passed": not failures, "failures": failures,
                                         "sim_time_ns": float(properties.get("sim_time_duration", 0)),
                                         "seconds": float(case.get("time", 0))}
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


if __name__ == "__main__":
    sys.exit(main())
