"""Measure the APBBF core (``make measure``): cycles per op, throughput, accesses per query and false positives.

This is a measurement, not a test: it asserts nothing about speed. It writes
``build/reports/core.json`` and ``build/reports/core.png`` and prints a Markdown table for the README.

What is measured, and how
-------------------------
Configurations (``CONFIGS``): a basic APBF (``block_hashes = 1``), k=2 l=3 B=64 b=4, k=3 l=8 B=64 b=4 and a
wide block B=256 b=4. Each has two sizes:

* a **simulated** size with a tiny ``segment_blocks`` (2 to 8, see ``CONFIGS``), so that a stream crossing
  ``k + l + 1`` generations runs in the Amaranth simulator in seconds;
* a **realistic** size with ``segment_blocks = 512`` (the ``Config`` default) for the statistics, run on the
  golden model's batch path (``APBBF.run``), which the core equals answer for answer.

1. **Cycles per op, measured in the Amaranth simulator** (``apbbf.sim.harness.simulate``, no stalls:
   ``cmd.valid`` and ``rsp.ready`` always high), for both scans (``"fsm"``, ``"parallel"``). The stream is a
   warm-up of ``(k + l + 1)·g`` inserts (the filter is then full and in steady state, just before a shift),
   followed by one block of ``--per-mix`` commands per op mix (``MIXES``: queries only, inserts only,
   test-and-inserts only, the three mixed evenly). QUERY and TEST_AND_INSERT keys are window members (one of
   the last w inserts) with probability 1/2 and fresh random keys otherwise; INSERT keys are fresh. A
   command's *occupancy* is the difference between its accept cycle and the next command's; occupancies are
   grouped by op and by the core's answer (hit / miss). Next to them: the cycle model's cost
   (``apbbf.sim.cycles.command_cycles`` from the model's access count; 1 for the parallel scan) and the cycle
   model's full schedule (``accept_schedule``, which adds the rare waits for the spare segment at a generation
   boundary). The harness checks every response against the model, so a completed run also proves the
   answers equal.
2. **Throughput**: ops/cycle of each mix block = commands / (cycles from the block's first accept to the next
   block's first accept), and Mops/s at ``--clock-mhz``. The same is predicted by the cycle model for the
   realistic size (the simulation checks the cycle model cycle-exact on the small sizes).
3. **Accesses per query** (segments Algorithm 1 reads, as the paper counts them) on the realistic size, model
   batch path: after ``k + l + 1`` warm-up generations, over ``--generations`` steady generations, probe the
   last w inserts (window members) and fresh absent keys (a) just before each shift and (b) at the midpoints of
   ``--points`` equal slices of each generation (time average). Predicted: ``analysis.analyze_config``'s
   ``accesses["window"]`` and ``accesses["false"]`` (just before a shift) and, for the time average, the same
   recursions (``analysis.query_statistics``) with each segment's load at fraction f of the generation,
   ``min(i + f, k)/k`` of a full segment, and the window made of the current partial generation (weight f),
   l − 1 complete ones and the older part (weight 1 − f) of the generation after them, averaged over the same f.
4. **False-positive rate** on the realistic size, same probes: fraction of absent keys reported present, just
   before a shift (the worst case, ``analyze_config["fp"]``) and time-averaged (predicted as in 3). On the core,
   one simulated config (``FP_CORE``, parallel scan) answers ``--core-fp-queries`` absent queries just before
   shifts: its fp is compared with the model's answers on the identical keys (and with the prediction).

Run: ``make measure``, or ``python scripts/measure_core.py [--quick] [--clock-mhz 100] [--jobs 2]``
(a command line over :func:`run`).
Seeds are fixed (``SEED`` plus a per-task offset) and printed.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from apbbf.model import APBBF, Config, Op
from apbbf.model.analysis import (analyze_config, block_match_probability, false_positive_rate,
                                  query_statistics)
from apbbf.sim.cycles import accept_schedule, command_cycles

__all__ = ["SEED", "CONFIGS", "MIXES", "FULL", "QUICK", "run", "markdown", "figure"]

SEED = 20240917
SCANS = ("fsm", "parallel")

#: name -> (k, l, block_bits, block_hashes, segment_blocks of the simulated size)
CONFIGS = {
    "APBF k=4 l=3 B=64 b=1": (4, 3, 64, 1, 4),
    "k=2 l=3 B=64 b=4": (2, 3, 64, 4, 8),
    "k=3 l=8 B=64 b=4": (3, 8, 64, 4, 4),
    "k=2 l=3 B=256 b=4": (2, 3, 256, 4, 2),
}
REALISTIC_BLOCKS = 512
#: The simulated config whose core fp is compared with the model's on identical keys.
FP_CORE = "APBF k=4 l=3 B=64 b=1"

MIXES = {
    "query": (Op.QUERY,),
    "insert": (Op.INSERT,),
    "test_and_insert": (Op.TEST_AND_INSERT,),
    "mixed": (Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT),
}
CATEGORIES = ("QUERY hit", "QUERY miss", "INSERT", "T&I hit", "T&I miss")
WINDOW_FRACTION = 0.5


def sim_config(name: str) -> Config:
    k, l, B, b, S = CONFIGS[name]
    return Config(k, l, block_bits=B, block_hashes=b, segment_blocks=S)


def real_config(name: str) -> Config:
    k, l, B, b, _ = CONFIGS[name]
    return Config(k, l, block_bits=B, block_hashes=b, segment_blocks=REALISTIC_BLOCKS)


def config_dict(config: Config) -> dict:
    return {**config.__dict__, "generation": config.generation, "window": config.window}


# Command streams ------------------------------------------------------------------------------------------------

def build_stream(config: Config, per_mix: int, seed: int):
    """Warm-up inserts, then one block per mix (see the module docstring).

    Returns
    -------
    commands : list of (Op, int)
    blocks : list of (mix, start, stop)
    absent : numpy.ndarray of bool
        Command uses a fresh key (never inserted before it).
    """
    rng = np.random.default_rng(seed)
    g, w = config.generation, config.window
    warm = (config.segments + 1) * g
    total = warm + per_mix * len(MIXES) + 4
    fresh = rng.integers(0, 2 ** 64, size=total, dtype=np.uint64)
    member = rng.random(total) < WINDOW_FRACTION
    back = rng.integers(1, w + 1, size=total)
    inserted = [int(x) for x in fresh[:warm]]
    commands = [(Op.INSERT, key) for key in inserted]
    absent = [True] * warm
    blocks = []
    index = warm
    for mix, ops in MIXES.items():
        choice = rng.integers(0, len(ops), size=per_mix)
        start = len(commands)
        for c in choice:
            op = ops[c]
            if op != Op.INSERT and member[index]:
                key, is_absent = inserted[-int(back[index])], False
            else:
                key, is_absent = int(fresh[index]), True
            commands.append((op, key))
            absent.append(is_absent)
            if op != Op.QUERY:
                inserted.append(key)
            index += 1
        blocks.append((mix, start, len(commands)))
    for _ in range(4):                     # a tail, so the last block's commands have a next accept
        commands.append((Op.QUERY, int(fresh[index])))
        absent.append(True)
        index += 1
    return commands, blocks, np.array(absent)


def model_answers(config: Config, commands):
    ops = np.array([int(op) for op, _ in commands])
    keys = np.array([key for _, key in commands], dtype=np.uint64)
    hits, accesses = APBBF(config).run(ops, keys)
    return ops, hits, accesses


def occupancy_summary(config, scan, ops, hits, accesses, occupancy, schedule_occupancy, blocks):
    """Per category: count, mean occupancy (measured or scheduled), cycle-model cost, accesses."""
    in_blocks = np.zeros(len(ops), dtype=bool)
    for _, start, stop in blocks:
        in_blocks[start:stop] = True
    cost = np.array([command_cycles(config, op, a) if scan == "fsm" else 1 for op, a in zip(ops, accesses)])
    selectors = {
        "QUERY hit": (ops == Op.QUERY) & hits, "QUERY miss": (ops == Op.QUERY) & ~hits,
        "INSERT": ops == Op.INSERT,
        "T&I hit": (ops == Op.TEST_AND_INSERT) & hits, "T&I miss": (ops == Op.TEST_AND_INSERT) & ~hits,
    }
    out = {}
    for category, sel in selectors.items():
        sel = sel & in_blocks
        sel[-1] = False
        n = int(sel.sum())
        if n == 0:
            out[category] = {"n": 0}
            continue
        row = {"n": n, "model_cycles": float(cost[sel].mean()), "accesses": float(accesses[sel].mean()),
               "schedule_cycles": float(schedule_occupancy[sel].mean())}
        if occupancy is not None:
            row["measured_cycles"] = float(occupancy[sel].mean())
            row["measured_min"], row["measured_max"] = int(occupancy[sel].min()), int(occupancy[sel].max())
        out[category] = row
    return out


def mix_throughput(accept, blocks, next_start):
    out = {}
    for mix, start, stop in blocks:
        cycles = int(accept[next_start[mix]] - accept[start])
        out[mix] = {"commands": stop - start, "cycles": cycles, "ops_per_cycle": (stop - start) / cycles}
    return out


def _next_starts(blocks):
    return {mix: stop for mix, _, stop in blocks}


# Tasks (run in worker processes) -----------------------------------------------------------------------------

def task_core(name: str, scan: str, per_mix: int, seed: int) -> dict:
    """Simulate the core (no stalls) on the mix stream; measured vs cycle model."""
    from apbbf.sim.harness import simulate
    config = sim_config(name)
    commands, blocks, absent = build_stream(config, per_mix, seed)
    started = time.perf_counter()
    run = simulate(config, commands, seed=seed, scan=scan, name=f"measure-{name}-{scan}".replace(" ", "_"))
    seconds = time.perf_counter() - started
    ops, model_hits, accesses = model_answers(config, commands)
    accept = np.array([run.accept[i] for i in range(len(commands))])
    core_hits = np.array([run.hits[i] for i in range(len(commands))])
    schedule = accept_schedule(config, ops, accesses, scan=scan)
    occupancy = np.append(np.diff(accept), 0)
    schedule_occupancy = np.append(np.diff(schedule), 0)
    _, qstart, qstop = blocks[0]                      # the query block sits just before a shift
    q_absent = np.zeros(len(ops), dtype=bool)
    q_absent[qstart:qstop] = absent[qstart:qstop]
    return {
        "name": name, "scan": scan, "seed": seed, "config": config_dict(config), "commands": len(commands),
        "sim_seconds": seconds, "cycles_simulated": run.cycles,
        "accept_equals_cycle_model": bool((accept == schedule).all()),
        "accept_mismatches": int((accept != schedule).sum()),
        "answers_equal_model": bool((core_hits == model_hits).all()),
        "per_op": occupancy_summary(config, scan, ops, core_hits, accesses, occupancy, schedule_occupancy,
                                    blocks),
        "mixes": mix_throughput(accept, blocks, _next_starts(blocks)),
        "mixes_cycle_model": mix_throughput(schedule, blocks, _next_starts(blocks)),
        "query_block_absent": {"n": int(q_absent.sum()), "core_fp": float(core_hits[q_absent].mean()),
                               "model_fp": float(model_hits[q_absent].mean())},
    }


def task_core_fp(name: str, queries: int, rounds: int, seed: int) -> dict:
    """Absent-key queries on the core (parallel scan) just before shifts; core fp vs model fp, same keys."""
    from apbbf.sim.harness import simulate
    config = sim_config(name)
    rng = np.random.default_rng(seed)
    g = config.generation
    per_round = queries // rounds
    commands, is_query = [], []

    def add(op, count):
        for key in rng.integers(0, 2 ** 64, size=count, dtype=np.uint64):
            commands.append((op, int(key)))
            is_query.append(op == Op.QUERY)

    add(Op.INSERT, (config.segments + 1) * g)
    for _ in range(rounds):
        add(Op.QUERY, per_round)          # n is a multiple of g: the next insert shifts (worst case)
        add(Op.INSERT, g)
    started = time.perf_counter()
    run = simulate(config, commands, seed=seed, scan="parallel", name="measure-core-fp")
    seconds = time.perf_counter() - started
    _, model_hits, _ = model_answers(config, commands)
    is_query = np.array(is_query)
    core = np.array([run.hits[i] for i in range(len(commands))])[is_query]
    model = model_hits[is_query]
    predicted = analyze_config(config)["fp"]
    n = int(is_query.sum())
    return {"name": name, "scan": "parallel", "seed": seed, "config": config_dict(config), "queries": n,
            "core_fp": float(core.mean()), "model_fp": float(model.mean()),
            "disagreements": int((core != model).sum()), "predicted_fp": predicted,
            "sigma": math.sqrt(predicted * (1 - predicted) / n), "sim_seconds": seconds}


def rho_at(config: Config, f: float) -> tuple:
    """Per-segment match probabilities of a foreign key at fraction f of a generation (f = 1: before a shift)."""
    k, l = config.k, config.l
    full = k * config.generation / config.segment_blocks
    return tuple(block_match_probability(full * min(i + f, k) / k, config.block_bits, config.block_hashes)
                 for i in range(k + l))


def predict_at(config: Config, f: float) -> dict:
    """fp, accesses of absent keys (all, and false answers only) and of window members at fraction f."""
    k, l = config.k, config.l
    rho = rho_at(config, f)
    p_true, acc_true, acc_false = query_statistics(k, l, rho)
    window = 0.0
    for j, weight in [(0, f)] + [(j, 1.0) for j in range(1, l)] + [(l, 1.0 - f)]:
        if weight == 0:
            continue
        forced = list(rho)
        for i in range(j, j + k):
            forced[i] = 1.0
        t, at, af = query_statistics(k, l, forced)
        window += weight * (at + af)
    return {"fp": false_positive_rate(k, l, rho), "accesses_absent": acc_true + acc_false,
            "accesses_false": acc_false / (1 - p_true), "accesses_window": window / l}


def task_model_stats(name: str, generations: int, points: int, probes: int, seed: int) -> dict:
    """fp and accesses of the realistic-size model, just before shifts and time-averaged."""
    config = real_config(name)
    rng = np.random.default_rng(seed)
    g, w = config.generation, config.window
    filt = APBBF(config)
    inserted = rng.integers(0, 2 ** 64, size=(config.segments + 1 + generations) * g, dtype=np.uint64)
    n = (config.segments + 1) * g
    filt.insert_many(inserted[:n])
    before, midpoints = [], []
    false_negatives = 0

    def probe(count, fraction):
        nonlocal false_negatives
        absent = rng.integers(0, 2 ** 64, size=count, dtype=np.uint64)
        hits, acc = filt.probe_many(absent)
        whits, wacc = filt.probe_many(inserted[n - w:n])
        false_negatives += int((~whits).sum())
        return {"f": fraction, "n": count, "fp_hits": int(hits.sum()), "accesses_absent": float(acc.mean()),
                "accesses_false": float(acc[~hits].mean()), "accesses_window": float(wacc.mean())}

    started = time.perf_counter()
    for _ in range(generations):
        start = n
        for j in range(points):
            target = start + round((j + 0.5) * g / points)
            filt.insert_many(inserted[n:target])
            n = target
            midpoints.append(probe(probes // (generations * points), (n - start) / g))
        filt.insert_many(inserted[n:start + g])
        n = start + g
        before.append(probe(probes // generations, 1.0))

    def combine(samples):
        total = sum(s["n"] for s in samples)
        fp = sum(s["fp_hits"] for s in samples) / total
        return {"probes": total, "fp": fp, "fp_sigma": math.sqrt(max(fp, 1e-12) * (1 - fp) / total),
                **{key: float(np.mean([s[key] for s in samples]))
                   for key in ("accesses_absent", "accesses_false", "accesses_window")}}

    analytic = analyze_config(config)
    fractions = sorted({s["f"] for s in midpoints})
    at = [predict_at(config, f) for f in fractions]
    weights = np.array([sum(1 for s in midpoints if s["f"] == f) for f in fractions], dtype=float)
    time_predicted = {key: float(np.average([p[key] for p in at], weights=weights)) for key in at[0]}
    fine = [predict_at(config, (j + 0.5) / 256) for j in range(256)]
    return {
        "name": name, "seed": seed, "config": config_dict(config), "generations": generations,
        "points": points, "seconds": time.perf_counter() - started,
        "false_negatives_last_w": false_negatives,
        "before_shift": {"measured": combine(before), "predicted": predict_at(config, 1.0),
                         "analysis": {"fp": analytic["fp"], "accesses_window": analytic["accesses"]["window"],
                                      "accesses_false": analytic["accesses"]["false"]}},
        "time_average": {"measured": combine(midpoints), "predicted": time_predicted,
                         "predicted_continuous": {key: float(np.mean([p[key] for p in fine]))
                                                  for key in fine[0]}},
    }


def task_cycle_model(name: str, per_mix: int, seed: int) -> dict:
    """Cycle-model prediction (both scans) for the realistic size, on the model's access counts."""
    config = real_config(name)
    per_mix = max(per_mix, 3 * config.generation)
    commands, blocks, _ = build_stream(config, per_mix, seed)
    ops, hits, accesses = model_answers(config, commands)
    out = {"name": name, "seed": seed, "config": config_dict(config), "per_mix": per_mix}
    for scan in SCANS:
        schedule = accept_schedule(config, ops, accesses, scan=scan)
        occ = np.append(np.diff(schedule), 0)
        out[scan] = {"per_op": occupancy_summary(config, scan, ops, hits, accesses, None, occ, blocks),
                     "mixes": mix_throughput(schedule, blocks, _next_starts(blocks))}
    return out


# Report ----------------------------------------------------------------------------------------------------------

def markdown(result: dict, clock: float) -> str:
    lines = [f"Cycles per command (Amaranth simulation, no stalls; simulated sizes) — measured / cycle model; "
             f"throughput at {clock:g} MHz", "",
             "| config (sim size) | scan | " + " | ".join(CATEGORIES) + " | "
             + " | ".join(f"{m} ops/cyc (Mops/s)" for m in MIXES) + " |",
             "|" + "---|" * (2 + len(CATEGORIES) + len(MIXES))]
    for r in result["core"]:
        c = r["config"]
        cells = []
        for cat in CATEGORIES:
            row = r["per_op"][cat]
            cells.append("—" if row["n"] == 0 else f"{row['measured_cycles']:.2f} / {row['model_cycles']:.2f}")
        for mix in MIXES:
            opc = r["mixes"][mix]["ops_per_cycle"]
            cells.append(f"{opc:.3f} ({opc * clock:.1f})")
        lines.append(f"| {r['name']} S={c['segment_blocks']} | {r['scan']} | " + " | ".join(cells) + " |")
    lines += ["", f"Cycle-model prediction at segment_blocks={REALISTIC_BLOCKS} (ops/cycle, Mops/s at {clock:g} MHz)",
              "", "| config | scan | " + " | ".join(MIXES) + " |", "|" + "---|" * (2 + len(MIXES))]
    for r in result["cycle_model"]:
        for scan in SCANS:
            cells = [f"{r[scan]['mixes'][m]['ops_per_cycle']:.3f} ({r[scan]['mixes'][m]['ops_per_cycle'] * clock:.1f})"
                     for m in MIXES]
            lines.append(f"| {r['name']} | {scan} | " + " | ".join(cells) + " |")
    lines += ["", f"Accesses per query and fp, golden model at segment_blocks={REALISTIC_BLOCKS} — measured / "
              "predicted", "",
              "| config | g | w | acc window (shift) | acc false (shift) | fp before shift | "
              "acc window (avg) | acc absent (avg) | fp time-avg |", "|" + "---|" * 9]
    for r in result["model"]:
        b, t = r["before_shift"], r["time_average"]
        bm, bp, tm, tp = b["measured"], b["predicted"], t["measured"], t["predicted"]
        lines.append(
            f"| {r['name']} | {r['config']['generation']} | {r['config']['window']} | "
            f"{bm['accesses_window']:.3f} / {bp['accesses_window']:.3f} | "
            f"{bm['accesses_false']:.3f} / {bp['accesses_false']:.3f} | "
            f"{bm['fp']:.5f} ± {bm['fp_sigma']:.5f} / {bp['fp']:.5f} | "
            f"{tm['accesses_window']:.3f} / {tp['accesses_window']:.3f} | "
            f"{tm['accesses_absent']:.3f} / {tp['accesses_absent']:.3f} | "
            f"{tm['fp']:.5f} ± {tm['fp_sigma']:.5f} / {tp['fp']:.5f} |")
    f = result["core_fp"]
    lines += ["", f"fp on the core ({f['name']} S={f['config']['segment_blocks']}, parallel scan, "
              f"{f['queries']} absent queries just before shifts): core {f['core_fp']:.4f}, model on the same "
              f"keys {f['model_fp']:.4f} ({f['disagreements']} disagreements), predicted {f['predicted_fp']:.4f} "
              f"± {f['sigma']:.4f}"]
    return "\n".join(lines)


def figure(result: dict, path: pathlib.Path, clock: float):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    names = list(CONFIGS)
    colors = dict(zip(names, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    fig, axes = plt.subplots(2, 2, figsize=(15, 10))

    # (a) cycles per op, by category, config and scan.
    ax = axes[0, 0]
    core = {(r["name"], r["scan"]): r for r in result["core"]}
    width = 0.8 / (len(names) * 2)
    for ci, cat in enumerate(CATEGORIES):
        for ni, name in enumerate(names):
            for si, scan in enumerate(SCANS):
                row = core[(name, scan)]["per_op"][cat]
                if row["n"] == 0:
                    continue
                x = ci - 0.4 + (ni * 2 + si + 0.5) * width
                ax.bar(x, row["measured_cycles"], width, color=colors[name], hatch="//" if si else None,
                       edgecolor="white" if si else colors[name],
                       label=(f"{name} ({scan})" if ci == 0 else None))
                ax.plot([x - width / 2, x + width / 2], [row["model_cycles"]] * 2, color="black", lw=1.5)
    ax.plot([], [], color="black", lw=1.5, label="cycle model")
    ax.set_xticks(range(len(CATEGORIES)), CATEGORIES)
    ax.set_ylabel("cycles per command (occupancy)")
    ax.set_title("(a) Cycles per op, Amaranth simulation (bars) vs cycle model (black)\n"
                 "plain = FSM scan, hatched = parallel scan; simulated sizes, no stalls")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.35)
    ax.legend(fontsize=7, ncol=3, loc="upper center")
    ax.grid(axis="y", alpha=0.3)

    # (b) throughput per mix.
    ax = axes[0, 1]
    cm = {r["name"]: r for r in result["cycle_model"]}
    width = 0.8 / len(names)
    for mi, mix in enumerate(MIXES):
        for ni, name in enumerate(names):
            x = mi - 0.4 + (ni + 0.5) * width
            for si, scan in enumerate(SCANS):
                opc = core[(name, scan)]["mixes"][mix]["ops_per_cycle"]
                ax.bar(x, opc, width * 0.9, color=colors[name], alpha=1.0 if si == 0 else 0.35,
                       label=(f"{name}" if mi == 0 and si == 0 else None), zorder=2 - si)
                ax.plot(x, cm[name][scan]["mixes"][mix]["ops_per_cycle"], marker="_", color="black",
                        markersize=10, zorder=3)
    ax.plot([], [], marker="_", color="black", ls="", markersize=10, label=f"cycle model, S={REALISTIC_BLOCKS}")
    ax.set_yscale("log")
    ax.set_xticks(range(len(MIXES)), list(MIXES))
    ax.set_ylabel("ops per cycle (log)")
    secondary = ax.secondary_yaxis("right", functions=(lambda v: v * clock, lambda v: v / clock))
    secondary.set_ylabel(f"Mops/s at {clock:g} MHz")
    ax.set_title("(b) Throughput per op mix, simulated: FSM (solid) and parallel (light, ≈1)")
    ax.legend(fontsize=7, loc="center left")
    ax.grid(axis="y", alpha=0.3, which="both")

    # (c) accesses measured vs predicted.
    ax = axes[1, 0]
    model = {r["name"]: r for r in result["model"]}
    series = [("window, before shift", "before_shift", "accesses_window"),
              ("false, before shift", "before_shift", "accesses_false"),
              ("window, time-avg", "time_average", "accesses_window"),
              ("absent, time-avg", "time_average", "accesses_absent")]
    width = 0.8 / len(names)
    for si, (label, when, key) in enumerate(series):
        for ni, name in enumerate(names):
            x = si - 0.4 + (ni + 0.5) * width
            r = model[name][when]
            ax.bar(x, r["measured"][key], width * 0.9, color=colors[name], label=name if si == 0 else None)
            ax.plot([x - width * 0.45, x + width * 0.45], [r["predicted"][key]] * 2, color="black", lw=2)
    ax.plot([], [], color="black", lw=2, label="analytic")
    ax.set_xticks(range(len(series)), [s[0] for s in series])
    ax.set_ylabel("segments accessed per query")
    ax.set_title(f"(c) Accesses per query: golden model (bars) vs analytic (black), S={REALISTIC_BLOCKS}")
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(axis="y", alpha=0.3)

    # (d) fp measured vs predicted.
    ax = axes[1, 1]
    width = 0.8 / 2
    for ni, name in enumerate(names):
        r = model[name]
        for wi, (label, when) in enumerate((("before shift", "before_shift"), ("time-avg", "time_average"))):
            x = ni - 0.4 + (wi + 0.5) * width
            m = r[when]["measured"]
            ax.bar(x, m["fp"], width * 0.9, color=colors[name], alpha=1.0 if wi == 0 else 0.45,
                   yerr=2 * m["fp_sigma"], capsize=3)
            ax.plot([x - width * 0.45, x + width * 0.45], [r[when]["predicted"]["fp"]] * 2, color="black", lw=2)
    # The core's fp on the simulated size, next to the model's on the same keys and the prediction.
    f = result["core_fp"]
    x = len(names)
    ax.bar(x, f["core_fp"], width * 1.8, color=colors[f["name"]], hatch="//", edgecolor="white",
           yerr=2 * f["sigma"], capsize=3)
    ax.plot(x, f["model_fp"], marker="x", color="black", ls="", markersize=9, mew=2)
    ax.plot([x - width * 0.9, x + width * 0.9], [f["predicted_fp"]] * 2, color="black", lw=2)
    handles = [Line2D([], [], color="black", lw=2, label="analytic prediction"),
               Patch(color="grey", label="model, before shift"),
               Patch(color="grey", alpha=0.45, label="model, time-averaged"),
               Patch(facecolor="grey", hatch="//", edgecolor="white",
                     label="core in simulation (±2σ of prediction)"),
               Line2D([], [], marker="x", color="black", ls="", mew=2, label="model on the core's keys")]
    ax.legend(handles=handles, fontsize=7, loc="upper center", ncol=3)
    labels = names + [f"{f['name']}\non the core, S={f['config']['segment_blocks']}\n{f['queries']} queries"]
    ax.set_yscale("log")
    ax.set_ylim(top=ax.get_ylim()[1] * 8)
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylabel("false-positive rate (log), ±2σ")
    ax.set_title(f"(d) fp: golden model with {result['args']['probes']} absent keys (bars) vs analytic, "
                 f"S={REALISTIC_BLOCKS}")
    ax.grid(axis="y", alpha=0.3, which="both")

    fig.tight_layout()
    fig.savefig(path, dpi=100)


#: Sample sizes of a full run and of ``--quick``.
FULL = dict(per_mix=400, probes=400_000, generations=6, points=8, core_fp_queries=3000)
QUICK = dict(per_mix=80, probes=40_000, generations=2, points=4, core_fp_queries=400)


def run(*, quick: bool = False, clock_mhz: float = 100.0, jobs: int = 2, out=None, log=print,
        **sizes) -> dict:
    """Run every measurement above, write ``core.json`` and ``core.png`` in ``out`` (default
    ``build/reports``), and return the result.

    Parameters
    ----------
    quick : bool
        The :data:`QUICK` sample sizes instead of :data:`FULL`; a size given in ``sizes`` still wins.
    clock_mhz : float
        Clock for the Mops/s column.
    jobs : int
        Worker processes.
    **sizes
        ``per_mix``, ``probes``, ``generations``, ``points``, ``core_fp_queries`` (None: the default).
    """
    from .args import REPORTS

    args = argparse.Namespace(quick=quick, clock_mhz=clock_mhz, jobs=jobs, out=str(out or REPORTS))
    for key, value in (QUICK if quick else FULL).items():
        setattr(args, key, value if sizes.get(key) is None else sizes[key])
    unknown = set(sizes) - set(FULL)
    if unknown:
        raise TypeError(f"unknown sample sizes {sorted(unknown)}")
    log(f"seed {SEED} (tasks use SEED + offset); clock {args.clock_mhz:g} MHz; jobs {args.jobs}; "
        f"{'quick' if args.quick else 'full'} run")

    started = time.perf_counter()
    names = list(CONFIGS)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        core_futures, model_futures, cycle_futures = [], [], []
        # Longest first: the FSM simulations of the configs with many segments.
        for ni, name in sorted(enumerate(names), key=lambda t: -sum(CONFIGS[t[1]][:2])):
            for si, scan in enumerate(SCANS):
                seed = SEED + 10 * ni + si
                core_futures.append(pool.submit(task_core, name, scan, args.per_mix, seed))
        fp_future = pool.submit(task_core_fp, FP_CORE, args.core_fp_queries, 3 if not args.quick else 1,
                                SEED + 100)
        for ni, name in enumerate(names):
            model_futures.append(pool.submit(task_model_stats, name, args.generations, args.points, args.probes,
                                             SEED + 200 + ni))
            cycle_futures.append(pool.submit(task_cycle_model, name, args.per_mix, SEED + 300 + ni))
        order = {(n, s): i for i, (n, s) in enumerate((n, s) for n in names for s in SCANS)}
        core = sorted((f.result() for f in core_futures), key=lambda r: order[(r["name"], r["scan"])])
        for r in core:
            log(f"  sim {r['name']:24} {r['scan']:8} seed {r['seed']}: {r['commands']} commands, "
                f"{r['cycles_simulated']} cycles in {r['sim_seconds']:.1f} s; accepts == cycle model: "
                f"{r['accept_equals_cycle_model']}; answers == model: {r['answers_equal_model']}")
        core_fp = fp_future.result()
        log(f"  core fp {core_fp['name']} seed {core_fp['seed']}: core {core_fp['core_fp']:.4f} model "
            f"{core_fp['model_fp']:.4f} ({core_fp['disagreements']} disagreements) in "
            f"{core_fp['sim_seconds']:.1f} s")
        model = [f.result() for f in model_futures]
        for r in model:
            log(f"  model {r['name']:24} seed {r['seed']}: {r['seconds']:.1f} s, "
                f"false negatives in last w: {r['false_negatives_last_w']}")
        cycle_model = [f.result() for f in cycle_futures]
    elapsed = time.perf_counter() - started

    result = {"seed": SEED, "args": vars(args), "runtime_seconds": elapsed, "realistic_blocks": REALISTIC_BLOCKS,
              "window_fraction_of_query_keys": WINDOW_FRACTION, "mixes": {m: [o.name for o in ops]
                                                                           for m, ops in MIXES.items()},
              "core": core, "core_fp": core_fp, "model": model, "cycle_model": cycle_model}
    table = markdown(result, args.clock_mhz)
    result["table_markdown"] = table
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "core.json").write_text(json.dumps(result, indent=1))
    figure(result, out / "core.png", args.clock_mhz)
    log("\n" + table)
    log(f"\nwrote {out / 'core.json'} and {out / 'core.png'} in {time.perf_counter() - started:.0f} s")
    return result


