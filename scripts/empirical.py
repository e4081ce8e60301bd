"""Measured false positives and accesses of the golden model against the analytic predictions.

For each configuration: insert distinct keys (random, or sequential integers) through the batch path; at the end
of every generation (just before a shift, the worst case) probe keys never inserted and record the fp rate;
check that the last w inserts are all present; measure accesses per query for window members and absent keys.
Writes build/reports/empirical.json and build/reports/empirical.png (fp over inserts, like paper 000 Figure 6).

Run: ``.venv/bin/python scripts/empirical.py [--probes N] [--out DIR]`` (``make empirical``).
"""

import argparse
import json
import pathlib

import numpy as np

from apbbf.model import APBBF, Config
from apbbf.model.analysis import analyze_config

SEED = 20240601
CONFIGS = [
    ("basic APBF k=4 l=3 (b=1)", Config(4, 3, block_bits=64, block_hashes=1, segment_blocks=32)),
    ("k=3 l=8 B=64 b=4", Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=256)),
    ("k=2 l=5 B=512 b=8", Config(2, 5, block_bits=512, block_hashes=8, segment_blocks=16)),
]


def run(name, config, keys_kind, probes, rng):
    g, w = config.generation, config.window
    generations = config.k + config.l + 6
    n = generations * g
    if keys_kind == "random":
        keys = rng.choice(2 ** 62, size=n, replace=False).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    else:
        keys = np.arange(1, n + 1, dtype=np.uint64)
    absent = (rng.choice(2 ** 62, size=probes, replace=False).astype(np.uint64) * np.uint64(2)
              if keys_kind == "random" else np.arange(n + 1, n + 1 + probes, dtype=np.uint64))
    filt = APBBF(config)
    curve, steady = [], []
    for gen in range(generations):
        filt.insert_many(keys[gen * g:(gen + 1) * g])
        rate = float(np.mean(filt.query_many(absent)))
        curve.append(((gen + 1) * g, rate))
        if gen >= config.k + config.l:
            steady.append(rate)
    misses = int(np.sum(~filt.query_many(keys[-w:])))
    _, acc_window = filt.probe_many(keys[-w:])
    hits, acc_absent = filt.probe_many(absent)
    predicted = analyze_config(config)
    return {"name": name, "keys": keys_kind, "config": config.__dict__, "probes": probes,
            "fp_before_shift_measured": float(np.mean(steady)), "fp_predicted": predicted["fp"],
            "fp_sigma": float((predicted["fp"] * (1 - predicted["fp"]) / (probes * len(steady))) ** 0.5),
            "false_negatives_last_w": misses,
            "accesses_window_measured": float(np.mean(acc_window)),
            "accesses_window_predicted": predicted["accesses"]["window"],
            "accesses_false_measured": float(np.mean(acc_absent[~hits])),
            "accesses_false_predicted": predicted["accesses"]["false"], "curve": curve}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", type=int, default=100_000,
                        help="absent keys probed at the end of every generation (default 100000)")
    parser.add_argument("--out", default="build/reports",
                        help="where empirical.json and empirical.png go (default build/reports)")
    args = parser.parse_args()
    print(f"seed {SEED}")
    rng = np.random.default_rng(SEED)
    results = []
    for name, config in CONFIGS:
        for kind in ("random", "sequential"):
            r = run(name, config, kind, args.probes, rng)
            results.append(r)
            print(f"{name:28} {kind:10} fp measured {r['fp_before_shift_measured']:.5f} predicted "
                  f"{r['fp_predicted']:.5f} (±{r['fp_sigma']:.1g}); FN {r['false_negatives_last_w']}; "
                  f"acc window {r['accesses_window_measured']:.2f}/{r['accesses_window_predicted']:.2f} "
                  f"false {r['accesses_false_measured']:.2f}/{r['accesses_false_predicted']:.2f}")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "empirical.json").write_text(json.dumps({"seed": SEED, "results": results}, indent=1))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 5))
    for r in results:
        x, y = zip(*r["curve"])
        line, = ax.plot(x, y, marker=".", linestyle="-" if r["keys"] == "random" else ":",
                        label=f"{r['name']} ({r['keys']} keys)")
        if r["keys"] == "random":
            ax.axhline(r["fp_predicted"], color=line.get_color(), linestyle="--", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("inserts")
    ax.set_ylabel("false-positive rate just before a shift")
    ax.set_title("Measured fp (lines) vs predicted worst case (dashed)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "empirical.png", dpi=110)
    print(f"wrote {out / 'empirical.json'} and {out / 'empirical.png'}")


if __name__ == "__main__":
    main()
