"""Benchmark of the packet de-duplicator (``make dedup-bench``): frames per clock, post-route Fmax on ECP5-85F for
``data_width`` 64 and 512, Mpps against 10/40/100 GbE minimum-frame rates, and what each part costs. A
measurement, not a test: it asserts no speed.

1. **Frames per clock**: :class:`~apbbf.hdl.packet.dedup.PacketDedup` in the Amaranth simulator
   (:func:`apbbf.sim.dedup.simulate_dedup`, every frame scored against the model), back-to-back minimum-size
   frames (60 bytes, no FCS) with ``o.ready`` high: frames out per cycle in the steady state, and frames in per
   cycle (``i.ready`` never low means the link is never stalled).
2. **Post-route Fmax**: the design behind registers (:class:`~apbbf.sim.designs.RegisteredDedup`), synthesized
   for the ULX3S's ECP5-85F and placed and routed with nextpnr seeds :data:`apbbf.flows.pnr.SEEDS` and
   :data:`PLACER` and :data:`ROUTER`, each run limited to :data:`PNR_TIMEOUT_S`: the median, its spread, LUTs, flip-flops, block
   RAMs and the median seed's critical path.
3. **Cost of the parts** (:data:`PARTS`: extractor, queue, core, buffer, and the glue): one hierarchical
   synthesis of the same design, each part's LUT4s, flip-flops, carry cells, LUT RAMs and DP16KD.
4. **The packet buffer alone**: the de-duplicator's packet buffer
   (:meth:`~apbbf.hdl.packet.dedup.PacketDedup.packet_buffer`) between registers
   (:class:`~apbbf.sim.designs.RegisteredQueue`), placed and routed with the same seeds, placer and router as the
   whole: the bound that the buffer's 65 block RAMs at 512 bits, spread over the device, set by themselves.

Mpps = Fmax x frames per clock. :func:`markdown` gives the README's tables.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..model.config import Config
from ..model.packet import KeySpec
from .. import toolchain
from .bench import LINE_RATES, fmax_text, measured_on
from .pnr import JOBS, PNR_TIMEOUT_S, SEEDS, rtlil_text, run_pnr_cached, target_platform

__all__ = ["WIDTHS", "CONFIG", "PLACER", "ROUTERS", "ROUTER", "PARTS", "frames_per_clock", "module_cells", "part_cells",
           "synth_parts", "synth_cost", "run", "markdown", "readme_block", "plot"]

#: The ``data_width`` values measured.
WIDTHS = (64, 512)
#: The filter of the benchmark: the ULX3S board's default Config with a span of 1 ms in 1 µs ticks.
CONFIG = Config(k=3, l=8, block_bits=64, block_hashes=4, segment_blocks=1024, key_width=64, seed=0, span=1000,
                time_width=32)
#: nextpnr's ``--freq`` target (above what the design reaches, so that the placer works for speed).
TARGET_MHZ = 200
#: nextpnr's placer for the de-duplicator. With the default analytic placer (``heap``) the design is packed at full
#: density into one corner of the device, and the key extractor's CRC matrices (dense 64 x 64 GF(2) maps, every
#: output bit an XOR of about half the inputs) are a hot spot neither router1 nor router2 clears; the
#: electrostatic placer spreads cells by density, and both routers then converge.
PLACER = "static"
#: nextpnr's router per ``data_width``. router1 weighs timing more: on the electrostatic placement, seed 1, it gave
#: 136.4 MHz at 64 bits (router2 119.6) in 8 minutes. At 512 bits it first routed for 12 of its 19 minutes (109.4,
#: router2 103.6), beyond the bench's limit per run; since the extractor's and the buffer's congestion went down it
#: routes the 512-bit design in 2 minutes (6 to 7 with placing) at 137.8 MHz, where router2 gives 103.7 (seed 1).
ROUTERS = {64: "router1", 512: "router1"}
#: The router of a width not in :data:`ROUTERS`.
ROUTER = "router2"


def _dedup(width: int):
    from ..hdl.packet.dedup import PacketDedup
    return PacketDedup(CONFIG, KeySpec.l3l4(), data_width=width, action="drop", max_frame=1518)


def frames_per_clock(width: int, frames: int = 200) -> dict:
    """Back-to-back 60-byte frames through the de-duplicator (scored against the model): frames per clock in and
    out, and whether ``i.ready`` ever dropped."""
    from ..sim.dedup import simulate_dedup
    from ..sim.frames import pad, packet
    rng = random.Random(1)
    originals = [pad(bytes(packet(rng, tags=0, v6=False, size=0))) for _ in range(frames // 2)]
    items = [(rng.choice(originals[:n + 1]), n, False) for n in range(frames)]
    run = simulate_dedup(lambda: _dedup(width), items, name=f"dedup-bench-{width}")
    span_in = run.first_beat[-1] - run.first_beat[0]
    span_out = run.taken[-1] - run.taken[0]
    return {"frames": frames, "frames_per_clock_in": round((frames - 1) / span_in, 4),
            "frames_per_clock_out": round((frames - 1) / span_out, 4), "unchecked": run.counters["unchecked"],
            "duplicates": run.counters["duplicates"]}


#: The parts of the de-duplicator whose cost the benchmark reports: part -> its submodules in
#: :class:`~apbbf.hdl.packet.dedup.PacketDedup` (the rest of ``PacketDedup`` is its glue: the output stage, the
#: frame's time and length, the counters).
PARTS = {"extractor": ("extractor",),
         "queue": ("info", "keys", "decisions", "answers"), "core": ("core",),
         "buffer": ("buffer",)}


def module_cells(log_text: str) -> dict:
    """Per module of a hierarchical (``-noflatten``) Yosys ``stat``, its own cells (submodules excluded), from the
    last ``Printing statistics`` section of ``log_text``: module name -> cell type -> count."""
    last = re.split(r"Printing statistics\.", log_text)[-1].split("=== design hierarchy ===")[0]
    modules = {}
    for name, body in re.findall(r"^=== (\S+) ===$(.*?)(?=^=== |\Z)", last, re.M | re.S):
        modules[name] = toolchain.yosys_cells(body)
    return modules


def part_cells(modules: dict, top: str, family: str) -> dict:
    """The cells of each of :data:`PARTS` (and ``glue``, the rest of ``top``), summed over its modules and their
    submodules (``module_cells`` names them by their path from ``top``), as :func:`apbbf.toolchain.group_cells`
    columns."""
    parts = {part: {} for part in (*PARTS, "glue")}
    for name, cells in modules.items():
        if name != top and not name.startswith(top + "."):
            continue
        child = name[len(top) + 1:].split(".")[0] if name != top else ""
        part = next((p for p, children in PARTS.items() if child in children), "glue")
        for cell, count in cells.items():
            parts[part][cell] = parts[part].get(cell, 0) + count
    return {part: toolchain.group_cells(cells, family) for part, cells in parts.items()}


def synth_parts(dedup, platform, work: Path) -> dict:
    """LUT4s, flip-flops, carry cells, LUT RAMs and block RAMs of each part of ``dedup`` (:data:`PARTS`), from
    one hierarchical synthesis of the de-duplicator behind its registers for ``platform`` (Yosys ``synth_ecp5
    -noflatten``, classic ``abc`` LUT mapping: abc9 fails on the hierarchical netlist). Logic is not optimized
    across the parts' boundaries, so the sum is a little above the flat netlist's."""
    import subprocess

    from amaranth.back import rtlil

    from ..sim.designs import RegisteredDedup
    work.mkdir(parents=True, exist_ok=True)
    (work / "parts.il").write_text(rtlil.convert(RegisteredDedup(dedup), platform=platform, name="top",
                                                 emit_src=False))
    fam = toolchain.family(platform)
    synth = (f"synth_{fam} -top top -noflatten -run :map_luts; abc -dress -lut 4:7; clean; "
             f"synth_{fam} -top top -noflatten -run map_cells:")
    subprocess.run([toolchain.find_yosys(), "-q", "-l", "parts.log", "-p", f"read_rtlil parts.il; {synth}; stat"],
                   cwd=work, check=True, env=toolchain.tool_environ())
    return part_cells(module_cells((work / "parts.log").read_text()), "top.dedup", fam)


def synth_cost(design, platform, work: Path, ports) -> dict:
    """LUT4s, flip-flops, carry cells, LUT RAMs and block RAMs of ``design`` alone (its ``ports`` the top's),
    synthesized flat for ``platform`` (classic ``abc`` LUT mapping, as :func:`synth_parts`), as
    :func:`apbbf.toolchain.group_cells` gives them."""
    import subprocess

    from amaranth.back import rtlil
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    (work / "alone.il").write_text(rtlil.convert(design, platform=platform, ports=ports, name="top", emit_src=False))
    fam = toolchain.family(platform)
    synth = f"synth_{fam} -top top -run :map_luts; abc -dress -lut 4:7; clean; synth_{fam} -top top -run map_cells:"
    subprocess.run([toolchain.find_yosys(), "-q", "-l", "alone.log", "-p", f"read_rtlil alone.il; {synth}; stat"],
                   cwd=work, check=True, env=toolchain.tool_environ())
    return toolchain.group_cells(toolchain.yosys_cells((work / "alone.log").read_text()), fam)


#: What the report keeps of a place and route (:func:`~apbbf.flows.pnr.run_pnr_cached`), of the whole design (with
#: more) and of the packet buffer alone.
_PNR_KEYS = ("fmax_mhz", "fmax_min_mhz", "fmax_max_mhz", "spread_mhz", "seeds", "seed_seconds", "timed_out", "cells",
             "bram_used", "critical_path")


def run(out_dir, work_dir, *, quick: bool = False, seeds=SEEDS, widths=WIDTHS, placer: str = PLACER,
        router: str | None = None, timeout_s: float = PNR_TIMEOUT_S, jobs: int = JOBS, log=print) -> dict:
    """Measure every width; write ``dedup_bench.json`` and ``dedup_bench.png`` in ``out_dir``.

    Parameters
    ----------
    out_dir, work_dir : str or os.PathLike
    quick : bool
        Reuse place-and-route results kept under ``work_dir`` for the same design.
    seeds : iterable of int
        nextpnr seeds.
    widths : iterable of int
        ``data_width`` values (default :data:`WIDTHS`).
    placer : {"heap", "static", "sa"}
        nextpnr's placer.
    router : {"router1", "router2"}, optional
        nextpnr's router for every width (default: :data:`ROUTERS`, else :data:`ROUTER`).
    timeout_s : float
        Seconds one nextpnr run may take (a run stopped there has no Fmax).
    jobs : int
        nextpnr runs at once, over every width's seeds (1..64).
    log : callable
        Progress messages.
    """
    from ..model.config import check_integer
    from ..sim.designs import RegisteredDedup, RegisteredQueue
    check_integer("jobs", jobs, range(1, 65))
    out_dir, work_dir = Path(out_dir), Path(work_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    seeds = tuple(seeds)
    routers = {width: router or ROUTERS.get(width, ROUTER) for width in widths}
    results = {"config": dataclasses.asdict(CONFIG), "key": "l3l4", "action": "drop", "max_frame": 1518,
               "seeds": list(seeds), "placer": placer,
               "routers": {str(width): name for width, name in routers.items()}, "jobs": jobs,
               "line_rates_mpps": LINE_RATES, "widths": {}, "measured": measured_on()}
    # The simulations, the parts' synthesis and the elaboration run here, one width after the other; each
    # width's synthesis and place and route then run in the background, its nextpnr seeds sharing one pool of
    # `jobs` runs with the other widths' (the runs are independent processes).
    with ThreadPoolExecutor(max_workers=jobs) as pool, ThreadPoolExecutor(max_workers=len(widths)) as designs:
        pending = {}
        for width in widths:
            platform = target_platform("ecp5")
            log(f"data_width {width}: frames per clock (simulated, scored against the model)")
            entry = {"sim": frames_per_clock(width)}
            dedup = _dedup(width)
            entry["buffer_beats"] = dedup.buffer_beats
            entry["extractor_latency"] = dedup.extractor_latency
            log(f"data_width {width}: the parts' cost (hierarchical synthesis)")
            entry["parts"] = synth_parts(_dedup(width), platform, work_dir / f"parts-{width}")
            log(f"data_width {width}: place and route, seeds {', '.join(map(str, seeds))}, {placer} placer, "
                f"{routers[width]}, {jobs} runs at once")
            text = rtlil_text(RegisteredDedup(dedup), platform)
            buffer_text = rtlil_text(RegisteredQueue(dedup.packet_buffer()), platform)
            pending[width] = (entry, designs.submit(
                run_pnr_cached, text, platform, work_dir / f"pnr-{width}", freq_mhz=TARGET_MHZ, reuse=quick,
                seeds=seeds, nextpnr_args=("--placer", placer, "--router", routers[width]), timeout_s=timeout_s,
                pool=pool), designs.submit(
                run_pnr_cached, buffer_text, platform, work_dir / f"buffer-{width}", freq_mhz=TARGET_MHZ,
                reuse=quick, seeds=seeds, nextpnr_args=("--placer", placer, "--router", routers[width]),
                timeout_s=timeout_s, pool=pool))
        for width, (entry, future, buffer_future) in pending.items():
            buffer = buffer_future.result()
            entry["buffer_alone"] = {k: buffer.get(k) for k in _PNR_KEYS}
            pnr = future.result()
            log(f"data_width {width}: placed and routed, Fmax {pnr['seeds']} MHz by seed")
            entry["pnr"] = {k: pnr.get(k) for k in ("device",) + _PNR_KEYS + (
                "critical_path_seed", "critical_paths", "synth", "cached")}
            if pnr["fmax_mhz"]:
                entry["mpps"] = round(pnr["fmax_mhz"] * entry["sim"]["frames_per_clock_out"], 1)
                entry["line_rate"] = {name: entry["mpps"] >= rate for name, rate in LINE_RATES.items()}
            results["widths"][str(width)] = entry
            (out_dir / "dedup_bench.json").write_text(json.dumps(results, indent=2) + "\n")
    results["seconds"] = round(time.monotonic() - start, 1)
    results["markdown"] = markdown(results)
    (out_dir / "dedup_bench.json").write_text(json.dumps(results, indent=2) + "\n")
    plot(results, out_dir / "dedup_bench.png")
    return results


def _range(p: dict) -> str:
    """The median and range of the seeds, with the seeds stopped at the time limit named (as ``make bench``)."""
    if not p.get("fmax_mhz") and not p.get("timed_out"):
        return "did not route"
    return fmax_text(p)


def _path(p: dict) -> str:
    """The median seed's critical path of a place-and-route result, in a table cell."""
    cp = p.get("critical_path") or {}
    if not cp:
        return ""
    return f"{cp.get('delay_ns')} ns ({cp.get('routing_ns')} routing): {cp.get('source')} → {cp.get('sink')}"


def markdown(results: dict) -> str:
    """The results as markdown tables (the README's de-duplicator tables are this text): per width the frames per
    clock, the post-route Fmax (median and range of the seeds), Mpps against the line rates and the whole
    design's cells; then each part's cells; then the packet buffer placed alone (in reports that have it)."""
    seeds = ", ".join(map(str, results.get("seeds", SEEDS)))
    lines = [f"| data_width | frames/clock in, out (simulated, scored) | Fmax MHz, median (range) of seeds {seeds} "
             f"| Mpps | {' / '.join(LINE_RATES)} min frames | LUT4 | FF | DP16KD | critical path (median seed) |",
             "|---:|---|---:|---:|---|---:|---:|---|---|"]
    widths = sorted(results["widths"].items(), key=lambda item: int(item[0]))
    for width, e in widths:
        p, sim = e["pnr"], e["sim"]
        rates = " / ".join(("yes" if e.get("line_rate", {}).get(n) else "no") for n in LINE_RATES)
        lines.append(f"| {width} | {sim['frames_per_clock_in']:.3f}, {sim['frames_per_clock_out']:.3f} | "
                     f"{_range(p)} | {e.get('mpps', '–')} | {rates} | {p['cells']['luts']:,} | "
                     f"{p['cells']['ffs']:,} | {p['bram_used']} | {_path(p)} |")
    lines += ["", "| data_width | part | LUT4 | FF | carry (CCU2C) | LUT RAM (DPR16X4) | DP16KD |",
              "|---:|---|---:|---:|---:|---:|---:|"]
    for width, e in widths:
        for part, c in e["parts"].items():
            lines.append(f"| {width} | {part} | {c['luts']:,} | {c['ffs']:,} | {c['carry']:,} | "
                         f"{c.get('lutram', 0):,} | {c['brams']} |")
    alone = [(width, e["buffer_alone"]) for width, e in widths if e.get("buffer_alone")]
    if alone:
        lines += ["", f"| data_width | the packet buffer alone: Fmax MHz, median (range) of seeds {seeds} | LUT4 | FF "
                      "| DP16KD | critical path (median seed) |", "|---:|---:|---:|---:|---|---|"]
        for width, b in alone:
            lines.append(f"| {width} | {_range(b)} | {b['cells']['luts']:,} | {b['cells']['ffs']:,} | "
                         f"{b['bram_used']} | {_path(b)} |")
    rates = ", ".join(f"{name} {rate}" for name, rate in LINE_RATES.items())
    return "\n".join(lines) + f"\n\nLine rates (minimum-size frames, Mpps): {rates}."


def readme_block(results: dict, stamp: str) -> str:
    """The README's de-duplicator block: per width the frames per clock, the Fmax (median and range of the
    seeds), Mpps against the line rates and what limits the clock, the packet buffer placed alone (in reports that
    have it), stamped with ``stamp`` (the date and machine, :func:`apbbf.docgen.machine_stamp`)."""
    seeds = ", ".join(map(str, results.get("seeds", SEEDS)))
    config = results["config"]
    lines = [f"| packet de-duplicator (`l3l4`, drop, k={config['k']} l={config['l']} "
             f"{config['segment_blocks']} blocks, span {config['span']}), ECP5-85F speed 6 | frames per clock "
             f"(simulated, scored) | Fmax MHz, median (range) of seeds {seeds} | Mpps | LUT4 / FF / DP16KD | "
             "critical path (median seed) |", "|---|---:|---:|---:|---|---|"]
    for width, e in sorted(results["widths"].items(), key=lambda item: int(item[0])):
        p, sim = e["pnr"], e["sim"]
        cp = p.get("critical_path") or {}
        path = f"{cp.get('source')} → {cp.get('sink')} ({cp.get('delay_ns')} ns)" if cp else "–"
        lines.append(f"| data_width {width} | {sim['frames_per_clock_out']:.3f} | {_range(p)} | "
                     f"{e.get('mpps', '–')} | {p['cells']['luts']:,} / {p['cells']['ffs']:,} / {p['bram_used']} | "
                     f"{path} |")
    rates = ", ".join(f"{name} {rate}" for name, rate in LINE_RATES.items())
    alone = ", ".join(f"{width} bits {_range(e['buffer_alone'])}" for width, e in
                      sorted(results["widths"].items(), key=lambda item: int(item[0])) if e.get("buffer_alone"))
    if alone:
        rates += f". The packet buffer placed alone, MHz: {alone}"
    commit = (results.get("measured") or {}).get("commit")
    lines += ["", f"Line rates (minimum-size frames, Mpps): {rates}. Written by `make dedup-bench` "
              f"(`build/reports/dedup_bench.json`){f' on {commit}' if commit else ''}, {stamp}; every part's cost "
              "is in `docs/measurements.md`."]
    return "\n".join(lines)


def plot(results: dict, path) -> None:
    """Mpps per width against the line rates (matplotlib)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    widths = list(results["widths"])
    values = [results["widths"][w].get("mpps") or 0 for w in widths]
    labels = []
    for w in widths:
        e = results["widths"][w]
        p = e["pnr"]
        labels.append(f"data_width {w}\n{e['sim']['frames_per_clock_out']:.3g} frames/clock\n"
                      f"Fmax {p['fmax_mhz']} MHz ({p['fmax_min_mhz']}-{p['fmax_max_mhz']})")
    ax.bar(range(len(widths)), values, 0.5, color="#4c72b0")
    for x, y in enumerate(values):
        ax.text(x, y * 1.03, f"{y:.1f} Mpps", ha="center", fontsize=9)
    for name, rate in LINE_RATES.items():
        ax.axhline(rate, color="gray", linestyle="--", linewidth=1)
        ax.text(len(widths) - 0.5, rate * 1.02, f"{name} min frames {rate} Mpps", ha="right", fontsize=8)
    ax.set_xticks(range(len(widths)), labels, fontsize=9)
    ax.set_ylabel("minimum-size frames, Mpps")
    ax.set_title("PacketDedup on ECP5-85F (l3l4 key, drop): median of nextpnr seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
