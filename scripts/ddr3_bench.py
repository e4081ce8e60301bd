#!/usr/bin/env python3
"""The Versa's filter at LiteDRAM's DDR3 native port (``make ddr3-bench``): cycles per frame and headroom at
1.488 Mpps, written to ``build/reports/ddr3_native_bench.json`` (:mod:`apbbf.flows.ddr3_bench`)."""

import argparse


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="build/reports", help="report directory (default build/reports)")
    parser.add_argument("--frames", type=int, default=100, help="TEST_AND_INSERT commands measured (default 100)")
    parser.add_argument("--seed", type=int, default=1, help="the commands' and the model's seed (default 1)")
    parser.add_argument("--no-refresh", action="store_true", help="no refresh stalls (to see what they cost)")
    parser.add_argument("--litedram-timings", action="store_true",
                        help="LiteDRAM's module's own timings (tRFC 64 cycles), not the appliance's (tRFC 110 ns)")
    args = parser.parse_args(argv)
    from apbbf.flows.ddr3_bench import run
    print(f"seed {args.seed}")
    timing = {} if args.litedram_timings else None
    name = "ddr3_native_bench" + ("-litedram-timings" if args.litedram_timings else "")
    r = run(args.out, frames=args.frames, seed=args.seed, refresh=not args.no_refresh, timing=timing, name=name)
    print(f"{r['native_reads_per_frame']} reads and {r['native_writes_per_frame']} writes a frame, {r['cycles_per_frame']} cycles a frame "
          f"({r['cycles_per_frame_with_clearing']} with a row change each and the clearing) against "
          f"{r['line_rate_cycles_per_frame']} at 1.488 Mpps: headroom {r['headroom']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
