"""Random-row read rates of the boards' DRAM through LiteDRAM (``make dram-bench``, a measurement, not a test).

The Colorlight 5A-75B's LiteDRAM core (:func:`apbbf.flows.litedram.generate`) runs on Icarus with the chip model
on its pins (:mod:`apbbf.sim.cocotb.dram_tests`, test ``measure``): native-port reads back to back, one per
random row (both banks, then one bank), and all in one row. Every read's data is checked and every command is
checked against the data sheet. The report (``build/reports/dram_bench.json``) gives, per pattern, the reads per
cycle and per second at the core's sys clock, the latency from the command's handshake (and from the moment it
was offered) to its data, in cycles (min, median, max), and the refreshes seen with the reads they delayed.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..sim.cocotb import dram_runner
from . import litedram

__all__ = ["run", "bounds", "BOARD_WINDOW_US", "board_config", "FILTER_CONFIG", "filter_rate"]

ROOT = Path(__file__).resolve().parents[2]


def bounds(sys_clk_hz: float, banks: int) -> dict:
    """What the data sheet allows for reads to random rows (an ACTIVE each): one bank at most one ACTIVE per tRC,
    the banks together at most ``banks`` per tRC and one per tRRD; in ns, and in whole cycles of the sys clock."""
    import math

    from ..sim.cocotb.sdram_chip import M12L16161A_5T as t
    tck = 1e9 / sys_clk_hz
    rc, rrd = math.ceil(t.tRC / tck - 1e-9), math.ceil(t.tRRD / tck - 1e-9)
    return {
        "part": t.part, "tRC_ns": t.tRC, "tRRD_ns": t.tRRD, "tRC_cycles": rc, "tRRD_cycles": rrd,
        "one_bank_per_second": round(1e9 / t.tRC), "one_bank_per_second_at_clock": round(sys_clk_hz / rc),
        "all_banks_per_second": round(min(banks * 1e9 / t.tRC, 1e9 / t.tRRD)),
        "all_banks_per_second_at_clock": round(min(banks * sys_clk_hz / rc, sys_clk_hz / rrd)),
    }


def run(out_dir=ROOT / "build" / "reports", *, reads: int = 4000, seed: int = 1,
        target: str = "colorlight-5a75b") -> dict:
    """Measure and write ``<out_dir>/dram_bench.json``; returns the report.

    Parameters
    ----------
    out_dir : str or os.PathLike
    reads : int
        Reads per pattern.
    seed : int
        cocotb's seed (the bench's own, derived from it, is in the report).
    target : str
        A key of :data:`apbbf.flows.litedram.TARGETS`.

    Raises
    ------
    RuntimeError
        If the bench fails (a wrong read or a data sheet violation: the message is in the simulator's log).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    core = litedram.generate(target)
    build_dir = ROOT / "build" / "dram_bench" / core.name
    report_path = build_dir / "measure.json"
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.unlink(missing_ok=True)
    try:
        dram_runner.run(core, build_dir, testcase="measure", seed=seed,
                        params={"reads": reads, "report": str(report_path)})
    except SystemExit as exit_:
        raise RuntimeError(f"the DRAM bench failed (exit {exit_.code}): see {build_dir}/results.xml") from None
    report = json.loads(report_path.read_text())
    report = {"target": target, "core": core.name, "versions": litedram.versions(), "reads_per_pattern": reads,
              "cocotb_seed": seed, **report, "bounds": bounds(report["sys_clk_hz"], core.settings["nbanks"])}
    if target == "colorlight-5a75b":
        report["filter"] = filter_rate(seed=seed)
    (out_dir / "dram_bench.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


#: The board build's window on the SDRAM (``make bitstream BOARD=colorlight-5a75b WINDOW_US=250000``).
BOARD_WINDOW_US = 250_000
#: Rows of the bench's filter: enough that a key's row is rarely one left open in its bank (two banks), few enough
#: that the gateware clears the region quickly.
BENCH_ROWS = 8


def board_config(window_us: int = BOARD_WINDOW_US, *, rows: int = BENCH_ROWS, seed: int = 0x5A):
    """The 5A-75B's SDRAM filter as the appliance's build sizes it (:func:`apbbf.flows.appliance.appliance_config`
    with ``memory="dram"``, so the two cannot drift: k, l, the extra segments, the block, the row layout and the
    blocks of each segment in a row are the build's), with ``rows`` rows instead of the build's thousands, so that
    the simulation clears the region quickly. A command's accesses and their order in a row do not depend on the
    number of rows; the keys' rows follow one another as among the build's
    (:func:`apbbf.sim.cocotb.dram_filter_tests.appliance_row_keys`)."""
    from dataclasses import replace

    from .appliance import appliance_config
    board = appliance_config("colorlight-5a75b", window_us=window_us, memory="dram", seed=seed)
    return replace(board, segment_blocks=board.row_blocks * rows)


#: The filter :func:`filter_rate` measures.
FILTER_CONFIG = board_config()


def filter_rate(*, commands: int = 400, seed: int = 1, sys_clk_freq: float | None = None,
                one_row: bool = True) -> dict:
    """The memory core on the 5A-75B's SDRAM at the appliance's 50 MHz (:mod:`apbbf.sim.cocotb.dram_filter`,
    test ``measure``; its requests in ``one_row`` order, as the appliance's): TEST_AND_INSERT of new keys back to
    back, their rows following one another as in the appliance's memory, every answer checked against the model
    and every SDRAM command against the data sheet; commands per cycle and per second, and that against 1 GbE's
    1.488 Mpps of minimum-size frames; the SDRAM's cycles by what they did (``chip_cycles``: each command, and
    the cycles between commands named by the commands around them).

    ``sys_clk_freq`` runs the core and the filter at another clock (Hz) than the appliance's; ``one_row=False``
    in the scan's other order (for comparison).

    Raises
    ------
    RuntimeError
        If the bench fails.
    """
    from ..hdl.appliance.core import MEMORY_ORDERS, USER_HZ
    from ..sim.cocotb import dram_filter
    from .appliance import LINE_RATE_PPS, appliance_config, memory_numbers
    core = litedram.generate("colorlight-5a75b", sys_clk_freq=sys_clk_freq or USER_HZ)
    build_dir = ROOT / "build" / "dram_bench" / f"filter-{core.name}{'' if one_row else '-any-order'}"
    path = build_dir / "filter.json"
    build_dir.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    try:
        dram_filter.run(FILTER_CONFIG, core, build_dir, testcase="measure", seed=seed, one_row=one_row,
                        depth=MEMORY_ORDERS["SDR"][1],
                        params={"commands": commands, "report": str(path)})
    except SystemExit as exit_:
        raise RuntimeError(f"the filter's DRAM bench failed (exit {exit_.code}): see {build_dir}/results.xml") \
            from None
    report = json.loads(path.read_text())
    report["line_rate_pps"] = round(LINE_RATE_PPS)
    report["headroom_at_line_rate"] = round(report["commands_per_second"] / LINE_RATE_PPS, 3)
    board = appliance_config("colorlight-5a75b", window_us=BOARD_WINDOW_US, memory="dram", seed=FILTER_CONFIG.seed)
    sizing = memory_numbers("colorlight-5a75b", board, USER_HZ)
    chip = report["chip_commands_measured"]
    per_frame = {name: round(chip.get(name, 0) / report["commands"], 3) for name in ("READ", "WRITE", "ACTIVE",
                                                                                   "PRECHARGE", "AUTO REFRESH")}
    accesses = per_frame["READ"] + per_frame["WRITE"]
    report["line_rate"] = {
        # what the board's filter asks of the SDRAM at 1.488 Mpps, from the accesses measured per frame
        "accesses_per_frame": round(accesses, 3), "accesses_per_frame_sized": sizing["native_words_per_frame"],
        "sdram_commands_per_frame": per_frame,
        "sdram_commands_per_second": {name: round(n * LINE_RATE_PPS) for name, n in per_frame.items()},
        "accesses_per_second": round(accesses * LINE_RATE_PPS),
        "sdram_cycles_per_frame": report["chip_cycles_per_command"]["cycles"],
        "sdram_cycles_per_frame_available": round(report["sys_clk_hz"] / LINE_RATE_PPS, 2),
        "headroom": report["headroom_at_line_rate"]}
    return {"config": repr(FILTER_CONFIG), "board_config": repr(board), "one_row": one_row, **report}
