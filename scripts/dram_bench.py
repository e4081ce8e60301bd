#!/usr/bin/env python3
"""Random-row read rates of the Colorlight 5A-75B's SDRAM through LiteDRAM (``make dram-bench``): native-port reads
on Icarus with the chip model, written to ``build/reports/dram_bench.json`` (:mod:`apbbf.flows.dram_bench`)."""

import argparse


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="build/reports", help="report directory (default build/reports)")
    parser.add_argument("--reads", type=int, default=4000, help="reads per pattern (default 4000)")
    parser.add_argument("--seed", type=int, default=1, help="cocotb's seed (default 1)")
    args = parser.parse_args(argv)
    from apbbf.flows.dram_bench import run
    report = run(args.out, reads=args.reads, seed=args.seed)
    mhz = report["sys_clk_hz"] / 1e6
    for name, r in report["patterns"].items():
        lat = r["latency_handshake_to_data_cycles"]
        print(f"{name:20} {r['reads_per_second'] / 1e6:7.2f} M reads/s at {mhz:g} MHz ({r['reads_per_cycle']:.3f} per "
              f"cycle); latency min/median/max {lat['min']}/{lat['median']}/{lat['max']} cycles; "
              f"{r['refreshes']} refreshes, {r['reads_spanning_a_refresh']} reads across one")
    f = report.get("filter")
    if f:
        print(f"filter (TEST_AND_INSERT) {f['commands_per_second'] / 1e6:7.3f} M/s at {f['sys_clk_hz'] / 1e6:g} MHz, "
              f"{f['headroom_at_line_rate']} of {f['line_rate_pps'] / 1e6:.3f} Mpps; "
              f"{f['chip_cycles_per_command']['cycles']} SDRAM cycles per command (chip_cycles in the report)")
        r = f["line_rate"]
        print(f"  {f['board_config']}: {r['accesses_per_frame']} native words per frame "
              f"({r['accesses_per_frame_sized']} sized), {r['accesses_per_second'] / 1e6:.2f} M/s at "
              f"{f['line_rate_pps'] / 1e6:.3f} Mpps; SDRAM commands per second there "
              + ", ".join(f"{name} {n / 1e6:.2f} M" for name, n in r["sdram_commands_per_second"].items())
              + f"; {r['sdram_cycles_per_frame']} of {r['sdram_cycles_per_frame_available']} cycles a frame, "
              f"headroom {r['headroom']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
