#!/usr/bin/env python3
"""Benchmark of ``apbbf dedup`` on a capture (``make capture-bench``): frames per second on 10^6 frames of generated
traffic (``tests/dedup_traffic.py``, seed 1) against ``editcap -D`` and ``editcap -w`` where installed and the raw
read of the file, a small capture's wall time, the peak memory (``--memory-frames``: also on a capture that long).
Writes ``build/reports/capture_bench.json`` (:mod:`apbbf.flows.capture_bench`) and docs/dedup.md's speed table.
``--profile`` (``make capture-profile``) instead writes ``build/reports/capture_profile.json``: where each frame's
time goes (:func:`apbbf.flows.capture_bench.profile`)."""

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
    parser.add_argument("--repeats", type=int, default=3, help="runs per tool, the median and the spread reported "
                                                                   "(default 3)")
    parser.add_argument("--memory-frames", type=int, default=None, metavar="N",
                        help="also run apbbf dedup on the capture repeated to N frames (e.g. 10000000), for its "
                             "peak memory (minutes, and N/10^6 x 343 MB of disk)")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/dedup.md's speed table")
    parser.add_argument("--profile", action="store_true",
                        help="instead, profile apbbf dedup on the capture: where each frame's time goes "
                             "(build/reports/capture_profile.json; about a minute)")
    args = parser.parse_args(argv)
    capture = Path(args.capture or "build/capture_bench/traffic.pcap")
    if args.capture is None and not capture.exists():
        capture.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "tests.dedup_traffic", str(capture), "--frames", str(args.frames),
                        "--seed", "1"], check=True)
    from apbbf.docgen import ROOT, machine_stamp, write_report_block
    from apbbf.flows.capture_bench import profile, run, speed_table
    if args.profile:
        report = profile(capture, Path(args.out), window=args.window)
        run_ = report["profiled_run"]
        print(f"{report['frames']} frames: warm run {report['warm_run']['seconds']} s "
              f"({report['warm_run']['us_per_frame']} us a frame), profiled {run_['seconds']} s; the 30 % target "
              f"leaves {report['target']['us_per_frame']} us a frame")
        for part in run_["parts"]:
            print(f"  {part['stage']:6} {part['us_per_frame']:7.3f} us  {part['part']}")
        cold = report["cold_run"]
        print(f"fixed: start-up {report['small_capture_seconds']} s (27 frames), numba's import "
              f"{cold['numba_import_seconds']} s, its kernels loaded {cold['kernels_loaded_seconds']} s")
        if "pcapng_with_epb_flags" in report:
            ng = report["pcapng_with_epb_flags"]
            print(f"pcapng with epb_flags: {ng['seconds']} s; the flags over arrays "
                  f"{ng['flags_over_arrays_us_per_frame']} us a frame, one option at a time "
                  f"{ng['flags_one_option_at_a_time_us_per_frame']} us")
        return 0
    report = run(capture, Path(args.out), window=args.window, repeats=args.repeats,
                 memory_frames=args.memory_frames)
    for r in report["runs"]:
        print(f"{r['tool']:12} {r['key'][:12]:12} {r['seconds']:8.2f} s  {r['frames_per_second']:>9} frames/s  "
              f"removed {r['removed']}")
    raw = report["raw_read"]
    print(f"raw read: records {raw['records_frames_per_second']} frames/s, bytes {raw['bytes_per_second'] / 1e6:.0f} "
          f"MB/s; small capture {report['small_capture']['seconds']} s")
    print(f"ratios: {report['ratios']}")
    if not args.no_docs:
        body = speed_table(report) + f"\n\nWritten by `make capture-bench` (`build/reports/capture_bench.json`), " \
                                     f"{machine_stamp()}."
        write_report_block("capture-bench", body, ROOT / "docs" / "dedup.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
