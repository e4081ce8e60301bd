"""What the Versa's filter asks of its DDR3, measured at LiteDRAM's native port (``make ddr3-bench``): the memory
core on the native port adapter, served by :class:`apbbf.sim.native_port.DDR3NativePortModel` with the Versa
core's timings (LiteDRAM's, in 50 MHz sys cycles: a BL8 burst per tCCD, row changes, refresh stalls, read
latency), TEST_AND_INSERT commands back to back; every answer checked against the golden model. Written to
``build/reports/ddr3_native_bench.json``.

The filter is the Versa's row layout (B = 128, 2 KiB rows, k = 3, l = 2, 7 physical segments) with 8 blocks a
segment: one row where the 1 s window has 8,192 (the simulation's memory is cleared first). A warm-up of a
generation per physical segment at twice the planned rate makes every segment of the pool live, so that each
command reads all but the one being cleared (as :mod:`apbbf.flows.dram_bench` does on the SDR board); then the
measured commands. Consecutive frames share a row
far more often than on the board, so the report adds a row change to every measured frame that had none
(``cycles_per_frame_worst``). The 1 s window's clearing (its retired segment's blocks written over its shift
interval, :func:`apbbf.flows.appliance.memory_numbers`) comes on top, although the run's own shifts already clear
(counted twice: the figure errs low).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

__all__ = ["MEASURED_CONFIG", "run"]

#: The measured filter: the Versa's 1 s window's shape (:func:`apbbf.flows.appliance.appliance_config`) with 8
#: blocks a segment.
MEASURED_CONFIG = dict(k=3, l=2, block_bits=128, segment_blocks=8, row_bits=16384, span=1_000_000, time_width=32,
                       extra_segments=1)


def _row_changes(model, first: int, last: int) -> int:
    return sum(1 for cycle in model.row_change_cycles if first <= cycle < last)


def run(out_dir, *, frames: int = 100, seed: int = 1, refresh: bool = True, timing: dict | None = None,
        depth: int | None = None, one_row: bool | None = None, name: str = "ddr3_native_bench") -> dict:
    """Measure and write the report (``<out_dir>/<name>.json``); returns it. ``timing``: module timings to
    replace in the core (:func:`apbbf.flows.litedram.generate`); None: the appliance's
    (``DRAM["versa-ecp5"]["timing"]``, tRFC 110 ns), ``{}``: LiteDRAM's module's own. ``depth`` and ``one_row``
    are the memory core's (:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`); None: the appliance's
    (:data:`apbbf.hdl.appliance.core.MEMORY_ORDERS`).

    Raises
    ------
    apbbf.sim.harness.Mismatch, apbbf.sim.native_port.NativePortError
        If an answer is wrong or the port's rules are broken.
    """
    from ..model import Config, Op
    from ..sim import harness, native_port
    from .appliance import DRAM, LINE_RATE_PPS, appliance_config, memory_numbers
    from .litedram import generate
    from ..hdl.appliance.core import MEMORY_ORDERS
    one_row = MEMORY_ORDERS["DDR3"][0] if one_row is None else one_row
    depth = MEMORY_ORDERS["DDR3"][1] if depth is None else depth
    if timing is None:
        timing = DRAM["versa-ecp5"].get("timing", {})
    core = generate("versa-ecp5", timing=timing,
                    name=None if not timing else "versa-ecp5-" + "-".join(sorted(timing)) + "-override")
    s = core.settings
    config = Config(**MEASURED_CONFIG, seed=seed)
    warm = config.generation * config.physical_segments
    # twice the planned rate: generations fill before their interval ends, so the pool's extra segment is live
    # too and each command reads every segment but the one being cleared (the worst case)
    commands = harness.timed_commands(config, warm + frames, seed=seed, rate=2.0, duplicates=0.3,
                                      ops=(Op.TEST_AND_INSERT,))
    begin = time.monotonic()
    result, model = native_port.simulate(config, commands, s, seed=seed, refresh=refresh, depth=depth,
                                         one_row=one_row, name="ddr3-bench",
                                         max_cycles=200 * (warm + frames) + 20_000)
    seconds = time.monotonic() - begin
    first, last = result.accept[warm], result.accept[warm + frames - 1]
    cycles_per_frame = (last - first) / (frames - 1)
    during = [we for cycle, we in model.taken if first <= cycle < last]
    row_change = s["timing_cycles"]["tRP"] + s["timing_cycles"]["tRCD"]
    changes = _row_changes(model, first, last)
    worst = cycles_per_frame + max(0, frames - 1 - changes) * row_change / (frames - 1)
    clock = s["sys_clk_freq"]
    budget = clock / LINE_RATE_PPS
    window = memory_numbers("versa-ecp5", appliance_config("versa-ecp5", window_us=1_000_000, memory="dram", seed=1),
                            clock)
    clearing_per_frame = window["clearing_words_per_second"] / LINE_RATE_PPS
    clearing_cycles = clearing_per_frame * s["timing_cycles"]["tCCD"]
    report = {
        "what": "the memory core on LiteDRAM's native port (Versa DDR3 timings) with a model of latency, row "
                "changes and refresh stalls; TEST_AND_INSERT back to back; every answer the golden model's",
        "config": MEASURED_CONFIG | {"seed": seed}, "depth": depth, "one_row": one_row, "frames": frames,
        "refresh": refresh,
        "timing_overrides": timing or {},
        "sys_clk_hz": clock, "timing_cycles": s["timing_cycles"], "read_latency": s["read_latency"],
        "model_counts": model.counts, "cycles": result.cycles, "simulation_seconds": round(seconds, 1),
        "warm_up_commands": warm, "measured_cycles": last - first,
        "native_reads_per_frame": round(sum(not we for we in during) / (frames - 1), 2),
        "native_writes_per_frame": round(sum(during) / (frames - 1), 2),
        "row_changes_measured": changes,
        "cycles_per_frame": round(cycles_per_frame, 2),
        "cycles_per_frame_worst": round(worst, 2),
        "window_clearing_words_per_frame": round(clearing_per_frame, 3),
        "cycles_per_frame_with_clearing": round(worst + clearing_cycles, 2),
        "line_rate_cycles_per_frame": round(budget, 2),
        "frames_per_second": round(clock / (worst + clearing_cycles)),
        "headroom": round(budget / (worst + clearing_cycles), 3),
        "dram": DRAM["versa-ecp5"],
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    return report
