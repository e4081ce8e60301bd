"""The time-window report (``make timewindow``, ``scripts/time_window.py``): measured false-positive rate and
window of the time-bounded filter against the analysis, at several insert rates and with idle gaps longer than
the span, on the golden model, and the gateware answering the same kind of stream.

For each scenario (a rate relative to the planned one, :func:`apbbf.model.timeanalysis.planned_rate`, and
whether idle gaps interrupt the stream):

- **fp**: inserts of fresh keys at the rate (times in ticks, evenly spaced; with gaps, an idle gap of 1.5 spans
  every two spans), and, every quarter generation in the
  second half of the stream, a batch of keys never inserted, queried at the current time: the fraction
  reported present, averaged, against :func:`~apbbf.model.timeanalysis.timed_analysis`'s ``fp_mean`` (and the
  worst batch against ``fp``);
- **window**: keys inserted during the stream queried again at ages spread over two spans (and, on overflow, at
  ages in inserts): the oldest age at which every such key is still present, in ticks and in keys, against the
  predicted ``window_time`` and ``window_keys``;
- **gateware**: a shorter stream of the same kind (TEST_AND_INSERT with duplicates, queries) on a Config with
  fewer blocks per segment, through both scans in Amaranth's simulator, every response compared with the model;
  the parallel scan's commands per cycle.

- **row layout**: the fp of Configs with ``row_bits`` (:data:`ROW_CONFIGS`) at 0.1x to 10x the planned rate,
  on the bulk filter, against the row layout's analysis (:func:`measure_rows`).

Writes ``timewindow.json`` and ``timewindow.png`` under the output directory.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

__all__ = ["CONFIG", "SCENARIOS", "ROW_CONFIGS", "ROW_RATIOS", "measure_model", "measure_gateware", "measure_rows",
           "run_rows", "run", "plot"]

#: The Config measured: k=3 l=8 B=64 b=4, 256 blocks per segment, a span of 20,000 ticks, a pool of 4 extra.
CONFIG = None          # set below (importing the model here keeps this module's import light)
#: (name, rate relative to the planned one, idle gaps longer than the span)
SCENARIOS = [("0.1x", 0.1, False), ("1x", 1.0, False), ("4x", 4.0, False), ("10x", 10.0, False),
             ("1x with idle gaps", 1.0, True)]


def _config():
    from ..model.config import Config
    return Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=256, span=20_000, time_width=32,
                  extra_segments=4)


CONFIG = _config()


def _times(config, rate: float, count: int, gaps: bool) -> tuple[np.ndarray, np.ndarray]:
    """Time of each of ``count`` inserts at ``rate`` per tick, unwrapped (float ticks) and as the command times
    (integer ticks modulo ``2**time_width``); with ``gaps``, every two spans an idle gap of 1.5 spans."""
    steps = np.full(count, 1.0 / rate)
    if gaps:
        every = max(1, int(2 * config.span * rate))
        steps[every::every] += 1.5 * config.span
    unwrapped = np.floor(np.cumsum(steps))
    return unwrapped, unwrapped.astype(np.uint64) % np.uint64(1 << config.time_width)


def measure_model(config, ratio: float, gaps: bool, *, seed: int, probes: int = 4000) -> dict:
    """fp and window of the model at ``ratio`` times the planned rate (see the module documentation)."""
    from ..model.timeanalysis import planned_rate, timed_analysis
    from ..model.timewindow import TimedAPBBF
    rng = np.random.default_rng(seed)
    rate = ratio * planned_rate(config)
    count = int(max(24 * config.generation, 24 * config.shift_interval * rate))
    unwrapped, times = _times(config, rate, count, gaps)
    keys = rng.integers(0, 2 ** 62, size=count, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    filt = TimedAPBBF(config)
    half = count // 2
    filt.run(np.ones(half, dtype=np.int64), keys[:half], times[:half])
    step = max(1, min(config.generation, int(np.ceil(rate * config.shift_interval))) // 4)
    fps, ages_time, present_time, ages_keys = [], [], [], []
    for start in range(half, count, step):
        stop = min(count, start + step)
        filt.run(np.ones(stop - start, dtype=np.int64), keys[start:stop], times[start:stop])
        now = times[stop - 1]
        absent = rng.integers(0, 2 ** 62, size=probes, dtype=np.uint64) * np.uint64(2)
        hits, _ = filt.run(np.zeros(probes, dtype=np.int64), absent, np.full(probes, now))
        fps.append(float(hits.mean()))
        # Window: inserted keys of every age up to two spans back (in ticks), queried now.
        back = rng.integers(0, stop, size=64)
        age = unwrapped[stop - 1] - unwrapped[back]
        keep = age <= 2 * config.span
        hits, _ = filt.run(np.zeros(int(keep.sum()), dtype=np.int64), keys[back[keep]],
                           np.full(int(keep.sum()), now))
        ages_time += list(age[keep])
        present_time += list(hits)
        ages_keys += list((stop - 1 - back[keep]))
    ages_time, present_time, ages_keys = map(np.asarray, (ages_time, present_time, ages_keys))
    missing = ~present_time.astype(bool)
    held_time = float(ages_time[missing].min()) if missing.any() else float(ages_time.max())
    held_keys = int(ages_keys[missing].min()) if missing.any() else int(ages_keys.max())
    predicted = timed_analysis(config, rate)
    sigma = float(np.std(fps) / np.sqrt(len(fps))) if len(fps) > 1 else 0.0
    return {
        "rate_ratio": ratio, "gaps": gaps, "inserts": count, "probes": probes * len(fps),
        "fp_mean": float(np.mean(fps)), "fp_mean_sigma": sigma, "fp_worst_batch": float(np.max(fps)),
        "predicted": predicted,
        # The analysis is the steady state; with idle gaps the filter restarts and refills, so it is a bound.
        "fp_within_10_percent": None if gaps else bool(
            abs(np.mean(fps) - predicted["fp_mean"]) <= max(0.1 * predicted["fp_mean"], 3 * sigma)),
        "fp_below_steady_state": bool(np.mean(fps) <= predicted["fp_mean"] + 3 * sigma),
        "held_ticks": held_time, "held_keys": held_keys,
        "missed_within_span": int(np.sum(missing & (ages_time <= config.span))),
        "shifts": filt.shifts, "overflows": filt.overflows, "expired": filt.expired, "restarts": filt.restarts,
        "presence_by_age": _presence(ages_time, present_time, config.span),
    }


#: The row layout's Configs measured (:func:`measure_rows`): the time window's shape in rows of 4 blocks (the
#: b = 4 shape; its fp at 0.1x, about 3e-10, is beyond any measurement), and with b = 1 (fp measurable from 0.1x
#: to 10x).
ROW_CONFIGS = None     # set below
#: Rates of the row layout's measurement, relative to the planned one.
ROW_RATIOS = (0.1, 0.5, 1.0, 4.0, 10.0)


def _row_configs():
    from ..model.config import Config
    shape = dict(block_bits=64, segment_blocks=1024, span=20_000, time_width=32, extra_segments=4, row_bits=4096)
    return (Config(3, 8, block_hashes=4, **shape), Config(3, 8, block_hashes=1, **shape))


ROW_CONFIGS = _row_configs()


def measure_rows(config, ratio: float, *, seed: int, hits: int = 4000, batches: int = 20,
                 most: int = 4_000_000) -> dict:
    """The fp of the model in the row layout at ``ratio`` times the planned rate, against
    :func:`~apbbf.model.timeanalysis.timed_analysis`'s ``fp_mean``.

    A stream of distinct random keys at the rate (times evenly spaced) goes through TEST_AND_INSERT on the bulk
    filter (:class:`~apbbf.model.dedup.TimedTestAndInsert`, bit-exact with the model): no key was inserted before
    its own command, so every hit is a false positive, and each key is tested at its own phase of a generation
    (the mean over phases is ``fp_mean``). The first ``2·span·rate + physical_segments·n`` keys fill the filter
    to its steady state; then as many keys as give about ``hits`` expected false positives (at most ``most``,
    at least 200,000) are counted: the Wilson 95 % interval of the hit fraction, and the standard error of
    ``batches`` consecutive batches' rates (the filter's state is shared by neighbouring keys).

    Returns
    -------
    dict
        ``rate_ratio``, ``keys`` (counted), ``hits``, ``measured``, ``predicted`` (``fp_mean``), ``ratio``,
        ``interval`` (Wilson 95 %), ``batch_sigma``, ``expected_hits``, ``ok`` (within ±10 % of the prediction,
        or the prediction inside the interval; None when fewer than 100 hits are expected: the ±10 % cannot be
        told), ``seed``.
    """
    from ..model.dedup import TimedTestAndInsert
    from ..model.timeanalysis import planned_rate, timed_analysis
    from ..structured_keys import wilson
    c = config
    rate = ratio * planned_rate(c)
    predicted = timed_analysis(c, rate)["fp_mean"]
    fill = min(c.generation, int(np.ceil(rate * c.shift_interval)))
    warm = int(2 * c.span * rate) + c.physical_segments * fill
    counted = int(min(most, max(200_000, hits / max(predicted, 1e-300))))
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2 ** 64, warm + counted, dtype=np.uint64, endpoint=False)
    times = np.floor(np.arange(warm + counted) / rate).astype(np.int64)
    answers = TimedTestAndInsert(c).run(keys, times)[warm:]
    found = int(answers.sum())
    measured = found / counted
    low, high = wilson(found, counted)
    per_batch = np.array([part.mean() for part in np.array_split(answers, batches)])
    expected = predicted * counted
    return {"rate_ratio": ratio, "keys": counted, "warmup_keys": warm, "hits": found, "measured": measured,
            "predicted": predicted, "ratio": measured / predicted if predicted else None,
            "interval": [low, high], "batch_sigma": float(per_batch.std(ddof=1) / np.sqrt(batches)),
            "expected_hits": expected, "seed": seed,
            "ok": None if expected < 100 else bool(abs(measured / predicted - 1) <= 0.1 or low <= predicted <= high)}


def _presence(ages, present, span, bins: int = 20) -> list:
    edges = np.linspace(0, 2 * span, bins + 1)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (ages >= lo) & (ages < hi)
        out.append([float((lo + hi) / 2), float(present[inside].mean()) if inside.any() else None])
    return out


def measure_gateware(config, ratio: float, gaps: bool, *, seed: int, count: int = 3000) -> dict:
    """Both scans on a stream of the scenario, every response against the model; parallel commands/cycle."""
    from ..sim.harness import simulate, timed_commands
    from ..model.timeanalysis import planned_rate
    small = replace(config, segment_blocks=16, span=max(config.l * 4, 2000))
    commands = timed_commands(small, count, seed=seed, rate=ratio, gaps=0.004 if gaps else 0.0)
    out = {"config": {"segment_blocks": small.segment_blocks, "span": small.span}, "commands": count}
    for scan in ("fsm", "parallel"):
        start = time.monotonic()
        run = simulate(small, commands, seed=seed, scan=scan, name=f"timewindow-{scan}")
        accepts = np.array([run.accept[i] for i in range(count)])
        out[scan] = {"mismatches": 0, "commands_per_cycle": round(count / float(accepts[-1] - accepts[0] + 1), 4),
                     "seconds": round(time.monotonic() - start, 1)}
    out["planned_rate"] = planned_rate(small)
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scenarios = results["scenarios"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    names = [s["name"] for s in scenarios]
    xs = np.arange(len(names))
    left.bar(xs - 0.2, [s["model"]["fp_mean"] for s in scenarios], 0.4, label="measured (model, mean)",
             yerr=[3 * s["model"]["fp_mean_sigma"] for s in scenarios])
    left.bar(xs + 0.2, [s["model"]["predicted"]["fp_mean"] for s in scenarios], 0.4, label="predicted (mean)")
    left.plot(xs, [s["model"]["predicted"]["fp"] for s in scenarios], "k_", markersize=20, label="predicted worst")
    left.set_xticks(xs, names, rotation=15)
    left.set_yscale("log")
    left.set_ylabel("false-positive rate")
    left.set_title("fp against the insert rate (relative to the planned rate)")
    left.legend(fontsize=8)
    span = results["config"]["span"]
    for s in scenarios:
        points = [(a, p) for a, p in s["model"]["presence_by_age"] if p is not None]
        right.plot([a / span for a, _ in points], [p for _, p in points], marker=".", label=s["name"])
    right.axvline(1.0, color="gray", linestyle="--", linewidth=1)
    right.set_xlabel("age of the key / span")
    right.set_ylabel("fraction of inserted keys reported present")
    right.set_title("the time window: every key is present up to the span")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_rows(*, seed: int = 2026, hits: int = 4000, configs=None, ratios=ROW_RATIOS) -> list:
    """:func:`measure_rows` for each of ``configs`` (default :data:`ROW_CONFIGS`) at each of ``ratios``,
    printed as it goes."""
    out = []
    for n, config in enumerate(configs or ROW_CONFIGS):
        fields = {name: getattr(config, name) for name in ("k", "l", "block_bits", "block_hashes", "segment_blocks",
                                                           "span", "extra_segments", "row_bits")}
        entry = {"config": fields, "rows": config.rows, "row_blocks": config.row_blocks, "scenarios": []}
        print(f"row layout: {config} ({config.rows} rows of {config.row_blocks} blocks per segment)", flush=True)
        for m, ratio in enumerate(ratios):
            start = time.monotonic()
            r = measure_rows(config, ratio, seed=seed + 100 * n + m, hits=hits)
            r["seconds"] = round(time.monotonic() - start, 1)
            entry["scenarios"].append(r)
            low, high = r["interval"]
            if r["ok"] is None:
                told = (f"expected {r['expected_hits']:.2g} hits: too few to tell ±10 %"
                        + (f" (ratio {r['ratio']:.3f} [{low / r['predicted']:.3f}, {high / r['predicted']:.3f}])"
                           if r["hits"] else ""))
            else:
                told = (f"ratio {r['ratio']:.3f} [{low / r['predicted']:.3f}, {high / r['predicted']:.3f}], batch "
                        f"sigma {r['batch_sigma'] / r['predicted']:.3f}, {'ok' if r['ok'] else 'MISSED'}")
            print(f"  {ratio:5g}x  fp {r['measured']:.4g} ({r['hits']} of {r['keys']}, seed {r['seed']}) predicted "
                  f"{r['predicted']:.4g}: {told} ({r['seconds']} s)", flush=True)
        out.append(entry)
    return out


def run(out_dir, *, quick: bool = False, seed: int = 2026, gateware: bool = True) -> dict:
    """Measure every scenario (``quick``: fewer probes, a shorter gateware stream) and write the report."""
    from ..model.timeanalysis import planned_rate
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = CONFIG
    results = {"config": {field: getattr(config, field) for field in
                          ("k", "l", "block_bits", "block_hashes", "segment_blocks", "span", "time_width",
                           "extra_segments")},
               "planned_rate": planned_rate(config), "shift_interval": config.shift_interval,
               "generation": config.generation, "seed": seed, "scenarios": []}
    for n, (name, ratio, gaps) in enumerate(SCENARIOS):
        start = time.monotonic()
        entry = {"name": name, "model": measure_model(config, ratio, gaps, seed=seed + n,
                                                      probes=1000 if quick else 4000)}
        if gateware:
            entry["gateware"] = measure_gateware(config, ratio, gaps, seed=seed + n,
                                                 count=600 if quick else 3000)
        entry["seconds"] = round(time.monotonic() - start, 1)
        results["scenarios"].append(entry)
        m = entry["model"]
        print(f"{name:18} fp {m['fp_mean']:.4g} (predicted {m['predicted']['fp_mean']:.4g}, worst "
              f"{m['predicted']['fp']:.4g}) held {m['held_ticks']:.0f} ticks / {m['held_keys']} keys (predicted "
              f"{m['predicted']['window_time']:.0f} / {m['predicted']['window_keys']:.0f}), missed within the "
              f"span {m['missed_within_span']}, overflows {m['overflows']}, restarts {m['restarts']}"
              + (f"; gateware fsm/parallel: 0 mismatches, parallel "
                 f"{entry['gateware']['parallel']['commands_per_cycle']} commands/cycle" if gateware else ""),
              flush=True)
    results["rows"] = run_rows(seed=seed, hits=1000 if quick else 4000)
    (out_dir / "timewindow.json").write_text(json.dumps(results, indent=2) + "\n")
    plot(results, out_dir / "timewindow.png")
    return results
