#!/usr/bin/env python3
"""Bounded model checking of the core (``make formal``): SymbiYosys and Boolector, from PyPI wheels, prove on small
configurations of each scan that every command gets exactly one response, in order; that the response stream obeys
its handshake rules; and that a key inserted is reported present by every later query within the window (count,
or time with a span), for every command sequence up to the depth. Covers show the properties are not vacuous.
Writes build/reports/formal.json. See apbbf.sim.formal."""

import argparse
import json
import sys
from pathlib import Path

from apbbf.model import Config
from apbbf.sim.formal import check

_TIMED = Config(2, 2, block_bits=8, block_hashes=2, segment_blocks=1, key_width=8, span=6, time_width=5,
                extra_segments=1)

#: The smallest memory core: k = l = 1, three physical segments of one 4-bit block in one 16-bit row, so that the
#: solver reaches an answer that must hit (the reset's clearing, an insert and a query through the hash, the reads
#: and the writes: step 36 at the earliest) with two commands in flight, the query's reads issued before the
#: insert's writes land, and the memory's every choice free.
MEMORY_HIT = Config(1, 1, block_bits=4, block_hashes=1, segment_blocks=1, key_width=8, row_bits=16)
#: The depth of its check: steps 0 to 36, the first answer that must hit in the last.
MEMORY_HIT_DEPTH = 37
#: The same with the requests in the order for one open row at a time (``one_row``: a command's writes wait for
#: all its reads to be requested): the first answer that must hit comes in step 38.
MEMORY_HIT_ONE_ROW_DEPTH = 39

#: (name, Config, scan, pace, depth, options of apbbf.sim.formal.check): small memories (one block per segment,
#: 8-bit keys) so the solver can go deep. At pace 3 the last covers (a hit on a query that must hit, also after an
#: overflow) are reached in step 24, so that check needs a depth of 25 at least: 26 (BMC 130 s, cover 30 s here).
CHECKS = [
    ("count-parallel", Config(2, 2, block_bits=8, block_hashes=2, segment_blocks=1, key_width=8), "parallel", 1,
     24, {}),
    ("count-fsm", Config(2, 2, block_bits=8, block_hashes=2, segment_blocks=1, key_width=8), "fsm", 1, 30, {}),
    ("time-parallel", _TIMED, "parallel", 1, 24, {}),
    ("time-parallel-pace2", _TIMED, "parallel", 2, 24, {}),
    ("time-parallel-pace3", _TIMED, "parallel", 3, 26, {}),
    ("count-memory", Config(2, 2, block_bits=8, block_hashes=2, segment_blocks=1, key_width=8, row_bits=64),
     "memory", 1, 32, {"memory_depth": 2}),
    ("count-memory-hit", MEMORY_HIT, "memory", 1, MEMORY_HIT_DEPTH, {"memory_depth": 2, "cover_hit": True}),
    ("count-memory-hit-one-row", MEMORY_HIT, "memory", 1, MEMORY_HIT_ONE_ROW_DEPTH,
     {"memory_depth": 2, "memory_one_row": True, "cover_hit": True}),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=[name for name, *_ in CHECKS], action="append",
                        help="run only this check (may be repeated)")
    parser.add_argument("--depth", type=int, help="override every check's depth (cycles)")
    parser.add_argument("--out", default="build", help="build directory (default build)")
    args = parser.parse_args(argv)
    results = {}
    for name, config, scan, pace, depth, options in CHECKS:
        if args.only and name not in args.only:
            continue
        depth = args.depth or depth
        result = check(config, scan, depth, Path(args.out) / "formal" / name, pace=pace, **options)
        results[name] = {"config": str(config), "scan": scan, "pace": pace, "depth": depth, **options,
                         **{k: result[k] for k in ("passed", "seconds", "status")}}
        print(f"{name:19} depth {depth:3}: {'PASS' if result['passed'] else 'FAIL'} ({result['seconds']} s; "
              f"bmc {result['status']['bmc']}, cover {result['status']['cover']})", flush=True)
    report = Path(args.out) / "reports" / "formal.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(r["passed"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
