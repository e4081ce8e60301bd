"""Benchmark of the packet de-duplicator (``make dedup-bench``): frames per clock, post-route Fmax on ECP5-85F for
``data_width`` 64 and 512, Mpps against 10/40/100 GbE minimum-frame rates, and what the key extractor and the
packet buffer cost. A measurement, not a test: it asserts no speed.

1. **Frames per clock**: :class:`~apbbf.hdl.packet.dedup.PacketDedup` in the Amaranth simulator
   (:func:`apbbf.sim.dedup.simulate_dedup`, every frame scored against the model), back-to-back minimum-size
   frames (60 bytes, no FCS) with ``o.ready`` high: frames out per cycle in the steady state, and frames in per
   cycle (``i.ready`` never low means the link is never stalled).
2. **Post-route Fmax**: the design behind registers (:class:`~apbbf.flows.designs.RegisteredDedup`), synthesized
   for the ULX3S's ECP5-85F and placed and routed with nextpnr seeds :data:`apbbf.flows.pnr.SEEDS`: the median,
   its spread, LUTs, flip-flops and block RAMs.
3. **Cost of the parts**: the key extractor and the packet buffer (a ``SyncFIFOBuffered`` of ``buffer_beats``
   beats) synthesized alone (Yosys ``synth_ecp5``): LUT4s, flip-flops, DP16KD.

Mpps = Fmax x frames per clock.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from pathlib import Path

from ..model.config import Config
from ..model.packet import KeySpec
from .bench import LINE_RATES
from .pnr import SEEDS, run_pnr_cached, target_platform

__all__ = ["WIDTHS", "CONFIG", "frames_per_clock", "synth_cost", "run", "plot"]

#: The ``data_width`` values measured.
WIDTHS = (64, 512)
#: The filter of the benchmark: the ULX3S board's default Config with a span of 1 ms in 1 µs ticks.
CONFIG = Config(k=3, l=8, block_bits=64, block_hashes=4, segment_blocks=1024, key_width=64, seed=0, span=1000,
                time_width=32)
#: nextpnr's ``--freq`` target (above what the design reaches, so that the placer works for speed).
TARGET_MHZ = 200


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


def synth_cost(design, platform, work: Path, ports=None) -> dict:
    """LUT4s, flip-flops and block RAMs of ``design`` synthesized alone for ``platform`` (Yosys ``synth_ecp5``);
    ``ports`` the top's ports where the design's own cannot be (streams without backpressure have constant
    ``ready`` members)."""
    import subprocess

    from amaranth.back import rtlil

    from .. import toolchain
    work.mkdir(parents=True, exist_ok=True)
    (work / "part.il").write_text(rtlil.convert(design, platform=platform, name="top", ports=ports,
                                                emit_src=False))
    fam = toolchain.family(platform)
    subprocess.run([toolchain.find_yosys(), "-q", "-l", "synth.log", "-p",
                    f"read_rtlil part.il; synth_{fam} -top top; stat"], cwd=work, check=True,
                   env=toolchain.tool_environ())
    return toolchain.group_cells(toolchain.yosys_cells((work / "synth.log").read_text()), fam)


def run(out_dir, work_dir, *, quick: bool = False, seeds=SEEDS) -> dict:
    """Measure every width; write ``dedup_bench.json`` and ``dedup_bench.png`` in ``out_dir``.

    Parameters
    ----------
    out_dir, work_dir : str or os.PathLike
    quick : bool
        Reuse place-and-route results kept under ``work_dir`` for the same design.
    seeds : iterable of int
        nextpnr seeds.
    """
    from amaranth import Value
    from amaranth.lib import fifo

    from ..hdl.packet.key_extractor import KeyExtractor
    from .designs import RegisteredDedup
    out_dir, work_dir = Path(out_dir), Path(work_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    results = {"config": dataclasses.asdict(CONFIG), "key": "l3l4", "action": "drop",
               "max_frame": 1518, "line_rates_mpps": LINE_RATES, "widths": {}}
    for width in WIDTHS:
        platform = target_platform("ecp5")
        entry = {"sim": frames_per_clock(width)}
        dedup = _dedup(width)
        lanes = width // 8
        entry["buffer_beats"] = dedup.buffer_beats
        entry["extractor_latency"] = dedup.extractor_latency
        extractor = KeyExtractor(KeySpec.l3l4(), width)
        ports = [extractor.i.valid, Value.cast(extractor.i.payload), extractor.o.valid,
                 Value.cast(extractor.o.payload)]
        entry["extractor_cells"] = synth_cost(extractor, platform, work_dir / f"extractor-{width}", ports)
        buffer = fifo.SyncFIFOBuffered(width=width + lanes + 1, depth=dedup.buffer_beats)
        ports = [buffer.w_data, buffer.w_en, buffer.w_rdy, buffer.r_data, buffer.r_en, buffer.r_rdy]
        entry["buffer_cells"] = synth_cost(buffer, target_platform("ecp5"), work_dir / f"buffer-{width}", ports)
        pnr = run_pnr_cached(RegisteredDedup(dedup), platform, work_dir / f"pnr-{width}", freq_mhz=TARGET_MHZ,
                             reuse=quick, seeds=seeds)
        entry["pnr"] = {k: pnr[k] for k in ("device", "fmax_mhz", "fmax_min_mhz", "fmax_max_mhz", "spread_mhz",
                                            "seeds", "cells", "bram_used", "critical_path")}
        if pnr["fmax_mhz"]:
            entry["mpps"] = round(pnr["fmax_mhz"] * entry["sim"]["frames_per_clock_out"], 1)
            entry["line_rate"] = {name: entry["mpps"] >= rate for name, rate in LINE_RATES.items()}
        results["widths"][str(width)] = entry
        (out_dir / "dedup_bench.json").write_text(json.dumps(results, indent=2) + "\n")
    results["seconds"] = round(time.monotonic() - start, 1)
    (out_dir / "dedup_bench.json").write_text(json.dumps(results, indent=2) + "\n")
    plot(results, out_dir / "dedup_bench.png")
    return results


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
