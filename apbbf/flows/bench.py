"""Line-rate benchmark (``make bench``): ops per cycle measured on Verilator, post-route Fmax from nextpnr,
Mops/s = Fmax x ops/cycle for both scans, against 10/40/100 GbE minimum-frame rates and the block RAM's own Fmax.

:func:`run` measures; it asserts no speed (a missed target is reported with nextpnr's critical path).

Each case of :data:`BENCH` is one Config on one FPGA family's target device (:data:`apbbf.flows.pnr.TARGETS`):
the window bounded by count on ECP5-85F and iCE40UP5K, the time-bounded window on ECP5-85F, and two and four lanes
of the ECP5 Config (:class:`~apbbf.hdl.core.lanes.Lanes`, a slot per lane) on ECP5-85F.

1. **Ops per cycle.** The bare core (``APBBF(config, scan=...)``, Verilog from ``amaranth.back.verilog``,
   elaborated as for the case's family: on ECP5 with the DP16KD model in place of each block RAM instance,
   :class:`~apbbf.hdl.lib.ecp5_ram.SimulatedECP5`, so that the netlist simulated is the one placed and routed) is
   driven by the generated C++ Verilator testbench of :mod:`apbbf.sim.corebench` (file mode) with ``cmd.valid``
   and ``rsp.ready`` always high. The command stream is generated here (fixed seed) and written to a file the
   testbench reads: a prefill of ``window`` INSERTs, then ``commands`` commands of one op mix (QUERY, INSERT,
   TEST_AND_INSERT, or 1/3 each); for the mixes that ask, half the keys replay a key inserted within the last
   ``window`` inserts, so hits and misses both occur. A time-bounded window's commands carry times at the
   planned rate (one generation per shift interval). Ops/cycle = commands / cycles from the first accept to the
   last response of the measured part. The testbench's answers are scored against the golden model
   (:class:`apbbf.sim.reference.Reference`; mismatches must be 0) and, for a window bounded by count, its accept
   cycles against the cycle model ``apbbf.sim.cycles.accept_schedule``. A lanes case runs the lanes filter on
   the testbench of :mod:`apbbf.sim.lanesbench` instead (every slot of every beat filled, the commands of the same
   stream in order), scored against :class:`apbbf.model.lanes.Lanes`; its commands per cycle are measured, not
   modelled.
2. **Post-route Fmax** of the core with registered ports (:func:`apbbf.flows.pnr.core_pnr`; a lanes case:
   :func:`apbbf.flows.lanes.lanes_pnr`, its placer and router): the median of the nextpnr seeds
   :data:`apbbf.flows.pnr.SEEDS`, with their spread. Each run may take :data:`apbbf.flows.pnr.PNR_TIMEOUT_S`; a
   seed not routed by then is named in the table, and the median is of the others.
3. **Block RAM Fmax**: one block RAM primitive of the device, configured as the segments use it
   (:class:`~apbbf.sim.designs.BlockRAMProbe`), with the device table's data-sheet rating beside it.

The place-and-route runs go to a pool of ``jobs`` processes (ECP5-85F takes ~5-6 min per seed) while the
simulations run. With ``quick``, P&R results kept under ``<work_root>/pnr`` for the same design (hash of the
RTLIL and the nextpnr arguments) are reused.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..model.config import Config
from ..sim.corebench import TESTBENCH, build_sim, run_file
from ..sim.lanesbench import build_lanes_sim
from .pnr import PNR_TIMEOUT_S, SEEDS, TARGETS, bram_pnr, core_pnr, target_platform

__all__ = ["LINE_RATES", "Bench", "BENCH", "SCANS", "MIXES", "sim_platform", "make_stream", "TESTBENCH",
           "build_sim", "run_mix", "pnr_job", "plot", "markdown", "fmax_text", "merge", "measured_on", "summary", "run",
           "device_label"]

#: Line rates for minimum-size Ethernet frames, Mpps
LINE_RATES = {"100 GbE": 148.8, "40 GbE": 59.52, "10 GbE": 14.88}


SCANS = ("fsm", "parallel")
MIXES = ("QUERY", "INSERT", "TEST_AND_INSERT", "MIX")


@dataclass(frozen=True)
class Bench:
    """One case of the benchmark: a Config on one FPGA family.

    Attributes
    ----------
    family : str
        A key of :data:`apbbf.flows.pnr.TARGETS`: the device the case is measured on.
    config : Config
        The filter measured there (it must fit the target device's block RAM, ``lanes`` times).
    target_mhz : float or None
        The clock the parallel scan should reach at one command per cycle (``None`` for lanes).
    goal_mhz : float or None
        A further clock worth reaching (reported, not a target).
    scans : tuple of str
        The scans measured.
    lanes : int
        1: the bare core (``APBBF``); more: the lanes filter (``Lanes(config, lanes)``, a slot per lane).
    target_mops : float or None
        For lanes: the commands per second (Fmax × the lowest measured commands per cycle) to reach, Mops/s.
    placer : str
        nextpnr's placer for the bare core (``heap``, its default, or ``static``); lanes use
        :func:`apbbf.flows.lanes.lanes_pnr`'s.
    """

    family: str
    config: Config
    target_mhz: float | None
    goal_mhz: float | None = None
    scans: tuple = SCANS
    lanes: int = 1
    target_mops: float | None = None
    placer: str = "heap"


#: Case name -> :class:`Bench`
BENCH = {
    # The electrostatic placer: with the analytic one (2026-11-30) router1 did not route seed 1 of the parallel scan
    # within 15 minutes and the others closed at 138.8 and 156.9 MHz; with it, 178.8-192.0, each seed in about 2.
    "ecp5": Bench("ecp5", Config(k=3, l=8, block_bits=64, block_hashes=4, segment_blocks=512), target_mhz=160.0,
                  goal_mhz=200.0, placer="static"),
    # A time window of 10^6 ticks (1 s of microsecond ticks), with a pool of two extra segments. The
    # electrostatic placer: with the analytic one router1 did not route seeds 1 and 2 within 30 minutes (the
    # deadlines' ring); with it, each seed routes in about 5.
    "ecp5-timed": Bench("ecp5", Config(k=3, l=8, block_bits=64, block_hashes=4, segment_blocks=512, span=1_000_000,
                                       time_width=32, extra_segments=2), target_mhz=150.0, scans=("parallel",),
                        placer="static"),
    "ice40": Bench("ice40", Config(k=2, l=3, block_bits=16, block_hashes=2, segment_blocks=256, key_width=32),
                   target_mhz=75.0),
    # The ECP5 Config in 2 and 4 lanes (24 block RAMs a lane), random keys.
    "ecp5-lanes2": Bench("ecp5", Config(k=3, l=8, block_bits=64, block_hashes=4, segment_blocks=512), target_mhz=None,
                         scans=("parallel",), lanes=2, target_mops=300.0),
    "ecp5-lanes4": Bench("ecp5", Config(k=3, l=8, block_bits=64, block_hashes=4, segment_blocks=512), target_mhz=None,
                         scans=("parallel",), lanes=4, target_mops=500.0),
}


def sim_platform(family: str):
    """What the simulated core is elaborated for, so that it is the netlist placed and routed for ``family``:
    :class:`~apbbf.hdl.lib.ecp5_ram.SimulatedECP5` for ``"ecp5"`` (the DP16KD model in place of each instance),
    ``None`` for ``"ice40"`` (the inferred memory Yosys maps to SB_RAM40_4K).

    Raises
    ------
    ValueError
        If ``family`` is not a key of :data:`apbbf.flows.pnr.TARGETS`.
    """
    from ..hdl.lib.ecp5_ram import SimulatedECP5
    if family not in TARGETS:
        raise ValueError(f"family must be one of {', '.join(TARGETS)}, not {family!r}")
    return SimulatedECP5() if family == "ecp5" else None


def device_label(family: str) -> str:
    """``family``'s target device as the tables print it, from its platform (e.g. ``LFE5U-85F-BG381 speed 6``)."""
    platform = target_platform(family)
    speed = getattr(platform, "speed", None)
    return f"{platform.device}-{platform.package}" + (f" speed {speed}" if speed else "")


# ---------------------------------------------------------------------------------------------------------
# 1. ops per cycle on Verilator

def make_stream(config, mix: str, commands: int, seed: int):
    """The command stream of one measurement: a prefill of ``window`` INSERTs, then ``commands`` commands of
    ``mix`` (one of :data:`MIXES`); for a Config with a span, times at the planned rate (an insert every
    ``shift_interval / generation`` ticks on average, exponential gaps; the QUERY mix as if it inserted).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, int, numpy.ndarray or None)
        Ops (uint8), keys (uint64), the index where the measured part starts, and the times (uint64, modulo
        ``2**time_width``) or ``None`` without a span.
    """
    rng = np.random.default_rng(seed)
    prefill = config.window
    n = prefill + commands
    mask = np.uint64((1 << config.key_width) - 1) if config.key_width < 64 else np.uint64(2**64 - 1)
    fresh = rng.integers(0, 2**64, size=n, dtype=np.uint64) & mask
    if mix == "MIX":
        measured_ops = rng.integers(0, 3, size=commands)
    else:
        measured_ops = np.full(commands, {"QUERY": 0, "INSERT": 1, "TEST_AND_INSERT": 2}[mix])
    ops = np.concatenate([np.ones(prefill, dtype=np.int64), measured_ops]).astype(np.uint8)
    keys = fresh.copy()
    replay = rng.random(n) < 0.5
    picks = rng.random(n)
    inserted = np.empty(n, dtype=np.uint64)      # keys in insert order
    count = 0
    for i in range(n):
        if i >= prefill and ops[i] != 1 and replay[i] and count:
            # a window member: one of the last `window` inserted keys
            span = min(count, config.window)
            keys[i] = inserted[count - 1 - int(picks[i] * span)]
        if ops[i] != 0:
            inserted[count] = keys[i]
            count += 1
    times = None
    if config.timed:
        per_insert = config.shift_interval / config.generation
        inserting = np.where(np.arange(n) < prefill, 1.0, 2 / 3 if mix == "MIX" else 1.0)
        gaps = rng.exponential(per_insert * inserting)
        times = (np.floor(np.cumsum(gaps)).astype(np.uint64) + np.uint64(rng.integers(0, 1 << 20))) & \
            np.uint64((1 << config.time_width) - 1)
    return ops, keys, prefill, times


def run_mix(config, scan: str, binary: Path, mix: str, commands: int, seed: int, *, lanes: int = 1) -> dict:
    """Run one op mix (:func:`make_stream`) on the testbench ``binary`` (of the lanes filter with ``lanes`` > 1)
    and score it against the model and the cycle model.

    Returns
    -------
    dict
        ``ops_per_cycle``, ``accept_rate`` (and the cycle model's), ``latency_cycles``, ``mismatches`` (answers;
        must be 0), ``schedule_mismatches`` (accept cycles against the cycle model; ``None`` for a time-bounded
        window or lanes, whose cycles are measured, not modelled), hits, accesses, times.
    """
    from ..model.lanes import Lanes
    from ..sim.cycles import accept_schedule
    from ..sim.reference import Reference
    ops, keys, start, times = make_stream(config, mix, commands, seed)
    n = len(ops)
    out = run_file(binary, ops, keys, times, name=mix)
    answered, accept, respond, hit, rop, seconds = (out[name] for name in ("answered", "accept", "respond", "hit",
                                                                           "op", "seconds"))
    model = Reference(config).batch if lanes == 1 else Lanes(config, lanes).run
    model_hits, accesses = model(ops, keys, times)
    measured_part = slice(start, n)
    cycles = int(respond[n - 1] - accept[start] + 1)
    meas_span = int(accept[n - 1] - accept[start])
    if config.timed or lanes > 1:
        predicted, offset, pred_span = None, None, 0
    else:
        predicted = accept_schedule(config, ops.astype(np.int64), accesses, scan=scan)
        offset = int(accept[0] - predicted[0])
        pred_span = int(predicted[n - 1] - predicted[start])
    asks = ops[measured_part] != 1
    result = {
        "commands": n - start, "prefill": start, "cycles": cycles,
        "ops_per_cycle": round((n - start) / cycles, 4),
        # steady state: commands per cycle between the first and the last accept of the measured part
        "accept_rate": round((n - start - 1) / meas_span, 4) if meas_span else None,
        "model_accept_rate": round((n - start - 1) / pred_span, 4) if pred_span else None,
        "latency_cycles": int(np.median(respond[measured_part] - accept[measured_part])),
        "mismatches": int(np.sum(hit != model_hits)) + int(np.sum(rop != ops)) + (n - answered),
        "schedule_mismatches": None if predicted is None else int(np.sum(accept - predicted != offset)),
        "schedule_offset": offset,
        "hits": int(hit[measured_part][asks].sum()), "asks": int(asks.sum()),
        "mean_accesses": round(float(accesses[measured_part][asks].mean()), 3) if asks.any() else None,
        "sim_seconds": round(seconds, 2),
    }
    return result


# ---------------------------------------------------------------------------------------------------------
# 2., 3. place and route (runs in worker processes)

def pnr_job(kind: str, case: str, scan: str | None, config, work_root, reuse: bool, seeds=SEEDS) -> dict:
    """One place-and-route job of :func:`run`: the core of a case (``kind="core"``, :func:`apbbf.flows.pnr.core_pnr`,
    in ``<work_root>/pnr/<case>-<scan>``) or one block RAM of a family (``kind="bram"``, ``case`` a family,
    :func:`apbbf.flows.pnr.bram_pnr`, in ``<work_root>/pnr/<family>-bram``), each placed with every seed."""
    if kind == "core" and BENCH[case].lanes > 1:
        from .lanes import lanes_pnr
        return lanes_pnr(config, BENCH[case].lanes, BENCH[case].family, Path(work_root) / "pnr" / f"{case}-{scan}",
                         reuse=reuse, seeds=seeds, timeout_s=PNR_TIMEOUT_S)
    if kind == "core":
        placer = BENCH[case].placer
        return core_pnr(config, BENCH[case].family, Path(work_root) / "pnr" / f"{case}-{scan}", scan=scan,
                        reuse=reuse, seeds=seeds, timeout_s=PNR_TIMEOUT_S,
                        nextpnr_args=() if placer == "heap" else ("--placer", placer))
    return bram_pnr(case, Path(work_root) / "pnr" / f"{case}-bram", reuse=reuse, seeds=seeds)


# ---------------------------------------------------------------------------------------------------------
# report

def fmax_text(result: dict) -> str:
    """``median (min–max)`` of a P&R result, or ``?``; the seeds stopped at :data:`PNR_TIMEOUT_S` named after it
    (the median is then of the others)."""
    f = result.get("fmax_mhz")
    stopped = result.get("timed_out") or []
    late = (f"; seed{'s' if len(stopped) > 1 else ''} {', '.join(map(str, stopped))} not routed in "
            f"{PNR_TIMEOUT_S // 60} min" if stopped else "")
    if f is None:
        return "?" + late
    low, high = result.get("fmax_min_mhz"), result.get("fmax_max_mhz")
    text = f"{f:.1f} ({low:.1f}–{high:.1f})" if low is not None and high is not None and high > low else f"{f:.1f}"
    return text + late


def plot(results: dict, path) -> None:
    """Mops/s per case, scan and op mix against the line rates and the block RAM Fmax (matplotlib)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(12, 6))
    cases = list(results["devices"])
    groups = [(case, scan) for case in cases for scan in results["devices"][case]["scans"]]
    width = 0.2
    colors = ["#4c72b0", "#dd8452", "#55a868", "#8172b3"]
    for j, mix in enumerate(MIXES):
        xs, ys = [], []
        for i, (case, scan) in enumerate(groups):
            mops = results["mops"].get(case, {}).get(scan, {}).get(mix)
            xs.append(i + (j - 1.5) * width)
            ys.append(mops or 0)
        ax.bar(xs, ys, width, label=mix, color=colors[j])
        for x, y in zip(xs, ys):
            if y:
                ax.text(x, y * 1.04, f"{y:.0f}" if y >= 10 else f"{y:.1f}", ha="center", fontsize=7)
    from matplotlib.transforms import blended_transform_factory
    side = blended_transform_factory(ax.transAxes, ax.transData)   # x in axes units, y in data units
    marks = []
    for name, rate in LINE_RATES.items():
        ax.axhline(rate, color="gray", linestyle="--", linewidth=1)
        marks.append([rate, f"{name} min frames {rate} Mpps", "dimgray"])
    for family, style in zip(results["bram"], ("-", ":")):
        bram = results["bram"].get(family, {}).get("fmax_mhz")
        if bram:
            ax.axhline(bram, color="crimson", linestyle=style, linewidth=1.2)
            marks.append([bram, f"{family} block RAM Fmax {bram:.0f} MHz", "crimson"])
    marks.sort()
    for i in range(1, len(marks)):             # keep the labels apart (log axis)
        marks[i][0] = max(marks[i][0], marks[i - 1][0] * 1.09)
    for y, text, color in marks:
        ax.text(1.01, y, text, transform=side, va="center", fontsize=8, color=color)
    labels = []
    for case, scan in groups:
        f = results["fmax"].get(case, {}).get(scan, {}).get("fmax_mhz")
        labels.append(f"{case} {scan}\nFmax {f if f else '?'} MHz")
    ax.set_xticks(range(len(groups)), labels, fontsize=9)
    ax.set_yscale("log")
    ax.set_ylabel("Mops/s = post-route Fmax (median of seeds) × measured ops/cycle")
    ax.set_title("APBBF core throughput by scan, device and op mix")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=len(MIXES), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(results: dict) -> str:
    """The results as markdown tables (for the README): per case and scan the Fmax (median of the seeds, with
    their range), ops/cycle and Mops/s per mix; then the block RAMs alone beside their data-sheet ratings."""
    seeds = ", ".join(map(str, results.get("seeds", SEEDS)))
    lines = [f"| case | device | config | scan | Fmax MHz, median (range) of seeds {seeds} | " + " | ".join(
                 f"{m} ops/cycle → Mops/s" for m in ("QUERY", "INSERT", "T&I", "1/3 each")) +
             " | BRAM | vs 148.8 Mpps |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for case, dev in results["devices"].items():
        c = dev["config"]
        label = (f"k={c['k']} l={c['l']} B={c['block_bits']} b={c['block_hashes']} S={c['segment_blocks']}"
                 + f" key={c['key_width']}")
        if c.get("span"):
            label += f" span={c['span']} time={c['time_width']} extra={c['extra_segments']}"
        if dev.get("lanes", 1) > 1:
            label += f", {dev['lanes']} lanes"
        for scan in dev["scans"]:
            f = results["fmax"].get(case, {}).get(scan, {})
            cells = []
            worst = None
            for mix in MIXES:
                opc = results["ops_per_cycle"].get(case, {}).get(scan, {}).get(mix, {}).get("ops_per_cycle")
                mops = results["mops"].get(case, {}).get(scan, {}).get(mix)
                cells.append(f"{opc:.3f} → {mops:.1f}" if opc and mops else (f"{opc:.3f} → ?" if opc else "?"))
                if mops is not None:
                    worst = mops if worst is None else min(worst, mops)
            verdict = "?" if worst is None else (f"meets (min {worst:.0f})" if worst >= 148.8
                                                 else f"{worst / 148.8:.0%} (min {worst:.1f})")
            lines.append(f"| {case} | {dev['device']} | {label} | {scan} | {fmax_text(f)} | " + " | ".join(cells)
                         + f" | {f.get('bram_used', '?')} | {verdict} |")
    lines += ["", "| block RAM alone | configuration | nextpnr Fmax MHz, median (range) | data sheet |",
              "|---|---|---:|---|"]
    for family, b in results["bram"].items():
        shape = b.get("bram_shape", {})
        rated = b.get("rated")
        lines.append(f"| {family} {'/'.join(b.get('bram_cells', {})) or '?'} | {shape.get('depth', '?')} x "
                     f"{shape.get('width', '?')}, {b.get('configuration', '')} | {fmax_text(b)} | "
                     f"{rated or 'not recorded'} |")
    runs = {}
    for case, dev in results["devices"].items():
        measured = dev.get("measured") or {}
        run_key = (measured.get("commit") or "an unrecorded commit", measured.get("date") or "an unrecorded date")
        runs.setdefault(run_key, []).append(case)
    text = "\n".join(lines) + "\n\nLine rates: 100 GbE 148.8, 40 GbE 59.52, 10 GbE 14.88 Mpps."
    if len(runs) > 1:
        text += " Rows measured on: " + "; ".join(f"{', '.join(cases)} on {commit} ({date})"
                                                 for (commit, date), cases in runs.items()) + "."
    return text


def summary(results: dict) -> str:
    """The markdown tables, the targets (with the critical path of a missed one), the critical paths and the answer
    mismatches of a :func:`run`, as text for the terminal."""
    lines = ["", results["markdown"], ""]
    for case, t in results["targets"].items():
        state = "met" if t["met"] else "MISSED"
        if t.get("target_mops"):
            lines.append(f"target {case}: >= {t['target_mops']} Mops/s on random keys: Fmax {t['fmax_mhz']} MHz "
                         f"(seeds {t.get('seeds')}) x min {t['min_ops_per_cycle']} commands/cycle = "
                         f"{t.get('mops')} Mops/s: {state}")
        else:
            goal = (f" (goal {t['goal_mhz']} MHz: {'met' if t.get('goal_met') else 'not met'})"
                    if t.get("goal_mhz") else "")
            lines.append(f"target {case}: >= {t['target_mhz']} MHz at 1.0 ops/cycle (parallel): Fmax "
                         f"{t['fmax_mhz']} MHz (seeds {t.get('seeds')}), min ops/cycle {t['min_ops_per_cycle']} "
                         f"(accept rate {t['min_accept_rate']}): {state}{goal}")
        if not t["met"] and t.get("critical_path"):
            cp = t["critical_path"]
            lines.append(f"  critical path {cp.get('delay_ns')} ns ({cp.get('logic_ns')} logic, "
                         f"{cp.get('routing_ns')} routing, {cp.get('nets')} nets): {cp.get('source')} -> "
                         f"{cp.get('sink')}")
            lines.append(f"  first nets: {', '.join(cp.get('first_nets', []))}")
            lines.append(f"  last nets:  {', '.join(cp.get('last_nets', []))}")
    for case, dev in results["devices"].items():
        for scan in dev["scans"]:
            r = results["fmax"].get(case, {}).get(scan, {})
            for seed, cp in (r.get("critical_paths") or {}).items():
                if cp:
                    lines.append(f"critical path {case}/{scan} seed {seed}: {cp.get('delay_ns')} ns, "
                                 f"{cp.get('source')} -> {cp.get('sink')}")
    mismatches = sum(r["mismatches"] for case in results["ops_per_cycle"].values() for s in case.values()
                     for r in s.values())
    lines.append(f"answer mismatches against the model: {mismatches}")
    return "\n".join(lines)


def merge(results: dict, earlier: dict) -> dict:
    """``results`` with the cases and block RAM families of an ``earlier`` report that it did not measure, kept as
    they were (each case's ``measured`` says when), in :data:`BENCH`'s order; its tables rewritten."""
    merged = {**results}
    # A case measured now takes nothing from the earlier report, not even a part this run left out (the Mops/s
    # of a case whose place and route failed).
    measured = set(results["devices"])
    for part in ("ops_per_cycle", "fmax", "mops", "targets"):
        merged[part] = {**{case: value for case, value in earlier.get(part, {}).items() if case not in measured},
                        **results.get(part, {})}
    merged["bram"] = {**earlier.get("bram", {}), **results.get("bram", {})}
    devices = {**earlier.get("devices", {}), **results["devices"]}
    order = list(BENCH)
    merged["devices"] = {case: devices[case]
                         for case in sorted(devices, key=lambda c: order.index(c) if c in order else len(order))}
    merged["markdown"] = markdown(merged)
    return merged


def measured_on() -> dict:
    """What a case's figures were measured on: the date and the git commit of the working tree (with ``+`` when it
    has changes), or None outside a git checkout."""
    import datetime
    commit = None
    try:
        root = Path(__file__).resolve().parents[2]
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
        commit = head + ("+" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    return {"date": datetime.date.today().isoformat(), "commit": commit}


def run(*, cases=tuple(BENCH), commands: int = 100_000, seed: int = 6, jobs: int = 2, reuse: bool = False,
        pnr: bool = True, seeds=SEEDS, work_root, out_dir, log=print, keep_others: bool = True) -> dict:
    """Run the benchmark and write ``<out_dir>/bench.json`` (and ``bench.png`` with ``pnr``).

    Parameters
    ----------
    cases : iterable of str
        Keys of :data:`BENCH`.
    commands : int
        Commands per op mix, at least 1.
    seed : int
        Seed of the command streams.
    jobs : int
        Parallel place-and-route processes, at least 1 (each runs its seeds one after another).
    reuse : bool
        Reuse kept P&R results of the same designs.
    pnr : bool
        Run place and route (else only the simulations).
    seeds : iterable of int
        nextpnr seeds of every Fmax (:data:`apbbf.flows.pnr.SEEDS`); the figure is their median.
    work_root : str or os.PathLike
        Work directory (Verilator models under ``verilator/``, P&R under ``pnr/``).
    out_dir : str or os.PathLike
        Where ``bench.json`` and ``bench.png`` go.
    log : callable
        Called with progress lines.
    keep_others : bool
        Keep the cases of an earlier ``bench.json`` in ``out_dir`` that this run does not measure
        (:func:`merge`), so that a run of a few cases updates their rows only.

    Returns
    -------
    dict
        Everything written to ``bench.json``: ops per cycle per case, scan and mix; Fmax (median, range, per
        seed); block RAM Fmax beside its data-sheet rating; Mops/s; the targets and whether they are met; markdown
        tables.

    Raises
    ------
    ValueError
        If a case is unknown, ``commands`` or ``jobs`` is out of range, or a benchmark config does not fit its
        device's block RAM (checked before anything runs).
    """
    from ..hdl.lib.devices import block_ram, check_memory
    from ..model.config import check_integer
    t0 = time.monotonic()

    def note(message: str) -> None:
        log(f"[{time.monotonic() - t0:6.0f} s] {message}")

    cases = list(cases)
    for case in cases:
        if case not in BENCH:
            raise ValueError(f"cases must be among {', '.join(BENCH)}, not {case!r}")
        check_memory(BENCH[case].config, target_platform(BENCH[case].family).device, lanes=BENCH[case].lanes)
    check_integer("commands", commands, range(1, 1 << 40))
    check_integer("jobs", jobs, range(1, 65))
    seeds = tuple(seeds)
    families = list(dict.fromkeys(BENCH[case].family for case in cases))
    work_root, out_dir = Path(work_root), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    work_root.mkdir(parents=True, exist_ok=True)

    measured = measured_on()
    # place and route in worker processes, started first: they take longest
    futures = {}
    pool = None
    if pnr:
        pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))
        # small runs first, so their results show while the ECP5-85F core runs go on
        order = [("bram", f, None) for f in families] + \
            sorted([("core", case, scan) for case in cases for scan in reversed(BENCH[case].scans)],
                   key=lambda j: BENCH[j[1]].family == "ecp5")
        for kind, case, scan in order:
            config = BENCH[case].config if kind == "core" else None
            futures[pool.submit(pnr_job, kind, case, scan, config, work_root, reuse, seeds)] = (kind, case, scan)
        note(f"submitted {len(futures)} place-and-route jobs of {len(seeds)} seeds each to {jobs} processes "
             f"(ECP5-85F core runs take ~5-6 min per seed)")

    from .. import hdl as hdl_package
    hdl = Path(hdl_package.__file__).resolve().parent
    results = {"commands_per_mix": commands, "seed": seed, "seeds": list(seeds), "line_rates_mpps": LINE_RATES,
               "devices": {case: {"device": device_label(BENCH[case].family), "family": BENCH[case].family,
                                  "config": asdict(BENCH[case].config), "target_mhz": BENCH[case].target_mhz,
                                  "goal_mhz": BENCH[case].goal_mhz, "scans": list(BENCH[case].scans),
                                  "lanes": BENCH[case].lanes, "target_mops": BENCH[case].target_mops,
                                  "measured": measured}
                           for case in cases},
               "ops_per_cycle": {}, "fmax": {}, "bram": {}, "mops": {},
               # which core was measured (hdl/ may change between runs; the P&R cache key is the design's RTLIL)
               "hdl_sha256": hashlib.sha256(b"".join(p.read_bytes() for p in sorted(hdl.glob("*.py"))))
               .hexdigest()[:16]}

    for case in cases:
        bench = BENCH[case]
        for scan in bench.scans:
            t = time.monotonic()
            work = work_root / "verilator" / f"{case}-{scan}"
            if bench.lanes > 1:
                binary = build_lanes_sim(bench.config, bench.lanes, work, scan=scan,
                                         platform=sim_platform(bench.family))
            else:
                binary = build_sim(bench.config, scan, work, platform=sim_platform(bench.family))
            note(f"verilator {case}/{scan}: built in {time.monotonic() - t:.0f} s")
            for index, mix in enumerate(MIXES):
                r = run_mix(bench.config, scan, binary, mix, commands, seed * 100 + index, lanes=bench.lanes)
                results["ops_per_cycle"].setdefault(case, {}).setdefault(scan, {})[mix] = r
                note(f"  {case}/{scan} {mix:15} {r['ops_per_cycle']:.4f} ops/cycle (accept rate "
                     f"{r['accept_rate']}, cycle model {r['model_accept_rate']}, schedule mismatches "
                     f"{r['schedule_mismatches']}), latency {r['latency_cycles']}, hits {r['hits']}/{r['asks']}, "
                     f"mismatches {r['mismatches']}, {r['sim_seconds']} s")

    if pool is not None:
        pending = set(futures)
        while pending:
            done, pending = cf.wait(pending, timeout=60, return_when=cf.FIRST_COMPLETED)
            for future in done:
                kind, case, scan = futures[future]
                try:
                    r = future.result()
                except (ValueError, OSError, subprocess.CalledProcessError) as error:
                    r = {"error": f"{type(error).__name__}: {error}", "fmax_mhz": None}   # the others still count
                if kind == "core":
                    results["fmax"].setdefault(case, {})[scan] = r
                else:
                    ram = block_ram(target_platform(case).device)
                    results["bram"][case] = {**r, "rated": ram.rated, "configuration": ram.probe_configuration}
                cp = r.get("critical_path") or {}
                note(f"P&R {case}/{scan or 'bram'}: Fmax {r.get('fmax_mhz')} MHz (seeds {r.get('seeds')}), BRAM "
                     f"{r.get('bram_used')} {r.get('bram_cells', '')}, "
                     f"{'cached' if r.get('cached') else str(r.get('seconds')) + ' s'}; "
                     f"critical path {cp.get('delay_ns')} ns {cp.get('source')} -> {cp.get('sink')}"
                     + (f" ERROR {r['error']}" if "error" in r else ""))
            if pending:
                note("waiting for " + ", ".join(f"{futures[f][1]}/{futures[f][2] or 'bram'}" for f in pending))
        pool.shutdown()

    # Mops/s and the targets
    for case in cases:
        for scan in BENCH[case].scans:
            f = results["fmax"].get(case, {}).get(scan, {}).get("fmax_mhz")
            for mix in MIXES:
                opc = results["ops_per_cycle"][case][scan][mix]["ops_per_cycle"]
                if f:
                    results["mops"].setdefault(case, {}).setdefault(scan, {})[mix] = round(f * opc, 2)
    targets = {}
    for case in cases:
        bench = BENCH[case]
        if "parallel" not in bench.scans:
            continue
        f = results["fmax"].get(case, {}).get("parallel", {})
        measured = results["ops_per_cycle"][case]["parallel"].values()
        opc = min(r["ops_per_cycle"] for r in measured)
        rate = min(r["accept_rate"] for r in measured)
        if bench.lanes > 1:
            mops = round(f["fmax_mhz"] * opc, 1) if f.get("fmax_mhz") else None
            targets[case] = {"target_mops": bench.target_mops, "lanes": bench.lanes, "fmax_mhz": f.get("fmax_mhz"),
                             "seeds": f.get("seeds"), "min_ops_per_cycle": opc, "min_accept_rate": rate,
                             "mops": mops, "met": mops is not None and mops >= bench.target_mops}
            if not targets[case]["met"]:
                targets[case]["critical_path"] = f.get("critical_path")
            continue
        met = f.get("fmax_mhz") is not None and f["fmax_mhz"] >= bench.target_mhz and rate >= 0.999
        targets[case] = {"target_mhz": bench.target_mhz, "goal_mhz": bench.goal_mhz, "fmax_mhz": f.get("fmax_mhz"),
                         "seeds": f.get("seeds"), "min_ops_per_cycle": opc, "min_accept_rate": rate, "met": met,
                         "goal_met": bool(bench.goal_mhz and f.get("fmax_mhz") and f["fmax_mhz"] >= bench.goal_mhz
                                          and rate >= 0.999)}
        if not met or (bench.goal_mhz and not targets[case]["goal_met"]):
            targets[case]["critical_path"] = f.get("critical_path")
    results["targets"] = targets
    results["markdown"] = markdown(results)
    earlier = out_dir / "bench.json"
    if keep_others and pnr and earlier.exists():
        try:
            results = merge(results, json.loads(earlier.read_text()))
        except (ValueError, KeyError, TypeError) as error:
            note(f"{earlier}: not merged ({type(error).__name__}: {error}); written with this run's cases only")
    results["runtime_seconds"] = round(time.monotonic() - t0, 1)
    (out_dir / "bench.json").write_text(json.dumps(results, indent=2) + "\n")
    if pnr:
        plot(results, out_dir / "bench.png")
    return results
