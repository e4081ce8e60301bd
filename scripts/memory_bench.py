#!/usr/bin/env python3
"""The memory core's access budget (``make memory-bench``): per Config, the memory accesses and bytes per command,
the commands per cycle sustained against a memory of a fixed latency, at each in-flight depth, and the depth the
latency needs. Every run is scored against the golden model (apbbf.sim.memory). Writes
build/reports/memory_bench.json.

A run offers distinct keys as TEST_AND_INSERT (the costliest command: a read of every live segment and k writes)
with no gaps and no backpressure; the memory takes a request every cycle and answers each read, and lands each
write, exactly ``latency`` cycles after taking it. The rate is the commands accepted per cycle over the middle half
of the run (after the reset's clearing). Commands per second at a clock f are ``rate · f``.
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path

from apbbf.model import Config, Op
from apbbf.sim.memory import simulate

#: (name, Config): the filter of the boards' SDR SDRAM rows (256 columns x 32 bits), small enough to simulate.
CONFIGS = [
    ("k3l8-row8192", Config(3, 8, segment_blocks=64, row_bits=8192, seed=1)),
]
LATENCIES = (4, 32, 64)
DEPTHS = (1, 4, 8, 16)


def measure(config: Config, latency: int, depth: int, commands: int, seed: int) -> dict:
    rng = random.Random(seed)
    stream = [(Op.TEST_AND_INSERT, rng.getrandbits(config.key_width)) for _ in range(commands)]
    run = simulate(config, stream, seed=seed, depth=depth, latency=(latency, latency),
                   write_delay=(latency, latency), req_stall=0.0, refresh=None)
    first, last = commands // 4, 3 * commands // 4
    cycles = run.accept[last] - run.accept[first]
    taken = run.memory.taken
    return {"latency": latency, "depth": depth, "commands_per_cycle": round((last - first) / cycles, 4),
            "reads_per_command": round(taken["reads"] / commands, 3),
            # the reset's clearing of every word is not the commands'; the clearing of retired segments is
            "writes_per_command": round((taken["writes"] - config.memory_blocks) / commands, 3)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=int, default=120, help="commands per run (default 120)")
    parser.add_argument("--clock", type=float, default=100e6, help="clock for commands/s (default 100e6 Hz)")
    parser.add_argument("--out", default="build/reports/memory_bench.json")
    args = parser.parse_args(argv)
    seed = 1
    report = {"seed": seed, "commands": args.commands, "clock_hz": args.clock, "configs": {}}
    for name, config in CONFIGS:
        B = config.block_bits
        rows = []
        for latency in LATENCIES:
            for depth in DEPTHS:
                start = time.monotonic()
                row = measure(config, latency, depth, args.commands, seed)
                row["commands_per_second"] = round(row["commands_per_cycle"] * args.clock)
                rows.append(row)
                print(f"{name} latency {latency:3} depth {depth:2}: {row['commands_per_cycle']:.3f} commands/cycle, "
                      f"{row['reads_per_command']} reads + {row['writes_per_command']} writes per command "
                      f"({time.monotonic() - start:.0f} s)", flush=True)
        best = {}
        for latency in LATENCIES:
            at = [r for r in rows if r["latency"] == latency]
            top = max(r["commands_per_cycle"] for r in at)
            best[latency] = min(r["depth"] for r in at if r["commands_per_cycle"] >= 0.95 * top)
        accesses = rows[0]["reads_per_command"] + rows[0]["writes_per_command"]
        report["configs"][name] = {
            "config": repr(config), "row_blocks": config.row_blocks, "rows": config.rows,
            "memory_bytes": config.memory_blocks * B // 8,
            "accesses_per_command": accesses, "bytes_per_command": accesses * B / 8,
            "bursts_per_command": accesses * config.bursts_per_block,
            "clear_writes_per_shift": config.segment_blocks,
            "runs": rows, "depth_needed": {str(k): v for k, v in best.items()},
        }
        print(f"{name}: depth for 95 % of the best rate at each latency: {best}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
