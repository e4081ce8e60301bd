#!/usr/bin/env python3
"""Benchmark of ``apbbf dedup`` on a capture (``make capture-bench``): frames per second on 10^6 frames of generated
traffic (``tests/dedup_traffic.py``, seed 1), against ``editcap -w`` where installed. Writes
``build/reports/capture_bench.json`` (:mod:`apbbf.flows.capture_bench`)."""

import argparse
import subprocess
import sys
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="build/reports", help="report directory (default build/reports)")
    parser.add_argument("--capture", default=None,
                        help="the capture (default: build/capture_bench/traffic.pcap, generated if missing)")
    parser.add_argument("--frames", type=int, default=1_000_000, help="frames generated (default 10^6)")
    parser.add_argument("--window", default="1ms", help="the window (default 1ms)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per tool, median reported (default 1)")
    args = parser.parse_args(argv)
    capture = Path(args.capture or "build/capture_bench/traffic.pcap")
    if args.capture is None and not capture.exists():
        capture.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "tests.dedup_traffic", str(capture), "--frames", str(args.frames),
                        "--seed", "1"], check=True)
    from apbbf.flows.capture_bench import run
    report = run(capture, Path(args.out), window=args.window, repeats=args.repeats)
    for r in report["runs"]:
        print(f"{r['tool']:12} {r['key']:12} {r['seconds']:8.2f} s  {r['frames_per_second']:>9} frames/s  removed "
              f"{r['removed']}, exact duplicates {r['exact_duplicates']}, recall {r['recall']:.4f}")
    if "speedup_vs_editcap" in report:
        print(f"speed-up over editcap: {report['speedup_vs_editcap']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
