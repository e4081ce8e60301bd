#!/usr/bin/env python3
"""False-positive rate of the model on structured key families, H3 alone and behind the keyed mixer, against the
predicted worst case (``apbbf.model.analysis.analyze_config``).

Families: sequential counters, strided counters, the IPv4 addresses of one /16, TCP 5-tuples with one varying
port, one TCP flow's sequence numbers, keys that differ only in their top bits, random keys. Inserted keys and
probes both come from the family and are disjoint; the probes are made just before a shift (the worst case).
The hash with the mixer is the gateware's, bit for bit; H3 alone is the specification before the mixer
(``HashSpec(config, mixing=False)``). The library is :mod:`apbbf.structured_keys`.

Then (unless ``--no-pollution``) an adversary chooses every insert among random candidates to raise the fp,
knowing the hash seed or believing a wrong one (:func:`apbbf.structured_keys.pollute`): what a secret seed buys.

Then (unless ``--no-rows``) the same families, with the mixer, in the row layout (``ROW_SHAPE``: rows of 2048 bits,
4 blocks per segment in each of 64 rows) against the row layout's prediction.

Writes ``build/reports/structured_keys.json`` and ``build/reports/structured_keys.png``. The seeds are fixed and
printed; the full run takes a few minutes, ``--quick`` (2 seeds, fewer candidates) about one.
"""

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from apbbf.structured_keys import DEFAULT_SHAPE, FAMILIES, ROW_SEEDS, ROW_SHAPE, SEEDS, measure_all, plot, pollute
from apbbf.flows.args import REPORTS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"2 hash seeds instead of {len(SEEDS)}")
    parser.add_argument("--probes", type=int, default=8000, metavar="N",
                        help="absent keys probed before each measured shift (default 8000; fewer where the "
                             "family is small)")
    parser.add_argument("--families", default=",".join(FAMILIES), metavar="NAME,...",
                        help=f"families to run (default all: {','.join(FAMILIES)})")
    parser.add_argument("--no-pollution", action="store_true", help="skip the pollution adversary")
    parser.add_argument("--no-rows", action="store_true",
                        help="skip the row layout (the shape in rows of 2048 bits, the mixer's hash, "
                             f"{len(ROW_SEEDS)} seeds)")
    parser.add_argument("--out", type=Path, default=REPORTS,
                        help="where structured_keys.json and .png go (default build/reports)")
    args = parser.parse_args(argv)
    families = [name for name in args.families.split(",") if name]
    unknown = [name for name in families if name not in FAMILIES]
    if unknown or not families:
        parser.error(f"--families must name some of {', '.join(FAMILIES)}, not {args.families!r}")
    if args.probes < 1:
        parser.error(f"--probes must be at least 1, not {args.probes}")
    seeds = SEEDS[:2] if args.quick else SEEDS
    shape = DEFAULT_SHAPE
    print(f"hash seeds {', '.join(str(s) for s in seeds)}; k={shape.k} l={shape.l} B={shape.block_bits} "
          f"b={shape.block_hashes} {shape.segment_blocks} blocks (g = {shape.generation})")
    print(f"{'family':14} {'hash':8} {'measured':>9} {'predicted':>9} {'ratio':>6}  {'95 % interval':>17}  "
          f"{'probes':>7}  ok   per seed (ratio)")

    def show(r):
        low, high = (x / r["predicted"] for x in r["interval"])
        spread = " ".join(f"{x / r['predicted']:.2f}" for x in r["per_seed"])
        print(f"{r['family']:14} {'mixer' if r['mixing'] else 'H3 only':8} {r['measured']:9.5f} "
              f"{r['predicted']:9.5f} {r['ratio']:6.3f}  [{low:6.3f}, {high:6.3f}]  {r['probes']:7}  "
              f"{'yes' if r['ok'] else 'NO ':3}  {spread}",
              flush=True)

    results = measure_all(shape, families=families, seeds=seeds, probes=args.probes, progress=show)
    rows = []
    if not args.no_rows:
        row_seeds = ROW_SEEDS[:4] if args.quick else ROW_SEEDS
        print(f"row layout: row_bits={ROW_SHAPE.row_bits}, {ROW_SHAPE.rows} rows of {ROW_SHAPE.row_blocks} blocks "
              f"per segment; hash seeds {row_seeds[0]}..{row_seeds[-1]}; 20000 probes per generation where the "
              "family has them")
        rows = measure_all(ROW_SHAPE, families=families, seeds=row_seeds, probes=max(args.probes, 20000),
                           progress=show, mixings=(True,))
    pollution = []
    if not args.no_pollution:
        many = 256 if args.quick else 1024
        runs = [("spread", 64, None), ("concentrate", 64, None), ("concentrate", many, None),
                ("concentrate", many, 0)]
        print(f"pollution (hash seed {seeds[0]}): the adversary picks each insert among random candidates")
        for strategy, candidates, believed in runs:
            r = pollute(shape, strategy=strategy, seed=seeds[0], believed_seed=believed, candidates=candidates,
                        probes=50000)
            pollution.append(r)
            knows = "knows the seed" if r["seed_known"] else f"believes seed {believed}"
            print(f"  {strategy:11} {candidates:5} candidates, {knows:18}: fp {r['measured']:.5f} = "
                  f"{r['ratio']:.2f} x predicted [{r['interval'][0] / r['predicted']:.2f}, "
                  f"{r['interval'][1] / r['predicted']:.2f}]", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "structured_keys.json").write_text(json.dumps(
        {"shape": asdict(shape), "seeds": list(seeds), "goal": "within ±10 % of the prediction, or the "
         "prediction inside the measurement's 95 % interval", "results": results, "pollution": pollution,
         "row_shape": asdict(ROW_SHAPE), "rows": rows},
        indent=1) + "\n")
    plot(results, args.out / "structured_keys.png")
    mixed = [r for r in results if r["mixing"]]
    if rows:
        print(f"row layout: {sum(r['ok'] for r in rows)} of {len(rows)} families meet the goal")
    print(f"with the mixer {sum(r['ok'] for r in mixed)} of {len(mixed)} families meet the goal; "
          f"wrote {args.out / 'structured_keys.json'} and {args.out / 'structured_keys.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
