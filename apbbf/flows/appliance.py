# amaranth: UnusedElaboratable=no
# (a de-duplicator is built here only to read its sizing, never elaborated)
"""The de-duplication appliance's bitstream for a two-port board (``make bitstream BOARD=colorlight-5a75b`` or
``versa-ecp5``), and its report.

Why this way: the board's own amaranth-boards platform writes the yosys and nextpnr script (pins, I/O types, the
clock constraints); yosys runs once and nextpnr once per seed on the same netlist, because nextpnr's Fmax moves
about 12 % between seeds and a figure is the median of several. The bitstream is packed from the first seed that
meets every clock domain (receive 125 MHz on each port, transmit 125 MHz, the filter's ``sync``). The filter is
sized from the window asked for (:func:`appliance_config`, the model's :func:`~apbbf.model.timeanalysis.solve_timed`
at 1 GbE line rate for minimum-size frames) and checked against the board's block RAM before any tool runs.
"""

from __future__ import annotations

import json
import os
import secrets
import statistics
import resource
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields, replace
from pathlib import Path

from .. import toolchain
from .pnr import SEEDS

__all__ = ["LINE_RATE_PPS", "IMIX_PPS", "IMIX", "BOARD_DEFAULTS", "DRAM", "MEMORIES", "ACTIONS", "KEYS",
           "DP16KD_COUNT", "block_ram", "choose_memory", "memory_numbers",
           "check_block_ram", "appliance_config", "window_numbers", "critical_paths", "domain_name", "LINK",
           "build_appliance", "draw_seed", "markdown", "summary"]

#: Frames per second on 1 GbE at the minimum size: 64 bytes with the FCS, 8 of preamble and SFD, 12 of gap.
LINE_RATE_PPS = 1e9 / ((64 + 8 + 12) * 8)
#: The simple IMIX (7:4:1 frames of 64, 594 and 1518 bytes with the FCS) as (bytes, weight) pairs.
IMIX = ((64, 7), (594, 4), (1518, 1))
#: Frames per second on 1 GbE at the IMIX's average size (353.8 bytes).
IMIX_PPS = 1e9 / ((sum(size * weight for size, weight in IMIX) / sum(w for _, w in IMIX) + 20) * 8)

#: Per board: the window (microseconds), the worst-case false-positive target at line rate, the most physical
#: segments (each is block RAM and hash logic of its own), the burst the pool keeps the span at.
BOARD_DEFAULTS = {
    "colorlight-5a75b": dict(window_us=4000, fp=1e-3, max_segments=8, burst=1.25),
    "versa-ecp5": dict(window_us=5000, fp=1e-4, max_segments=8, burst=1.25),
}
#: Per board with DRAM the filter can use (``MEMORY=dram``): the LiteDRAM target, the memory's bytes, the row
#: layout (a row of the filter is one bank row of the SDRAM: 256 columns of 32 bits), the block, and the most
#: physical segments. The 5A-75B's SDRAM build takes at most 8: the memory scan's logic grows with the segments
#: and the 25F's LUTs, not the SDRAM's bytes, bound it (250 ms at fp 1e-3 is then 6 segments of 131,072 blocks).
DRAM = {
    "colorlight-5a75b": dict(target="colorlight-5a75b", bytes=4 << 20, row_bits=8192, block_bits=32, max_segments=8),
    # The Versa's DDR3: a row of the filter is one bank row of the x16 chip (1,024 columns: 128 native words of
    # one BL8 burst, 128 bits, each); a block is one native word; the port takes a burst per tCCD (2 cycles).
    # tRFC is the 1 Gbit DDR3's 110 ns (JEDEC JESD79-3, the MT41K64M16's data sheet): LiteDRAM's module gives
    # DDR3-1600's 128 clocks, which it counts at this clock, 64 sys cycles (1.28 us) where 6 do.
    "versa-ecp5": dict(target="versa-ecp5", bytes=128 << 20, row_bits=16384, block_bits=128, max_segments=12,
                       native_bits=128, cycles_per_word=2, timing={"tRFC": (None, 110)}),
}
#: The memories the appliance's filter can live in.
MEMORIES = ("bram", "dram")
#: The actions the appliance builds with (``mark`` has no place on the wire).
ACTIONS = ("drop", "count")
KEYS = ("l3l4", "frame")


def _platform(board: str):
    from .mac_pnr import _platform
    return _platform(board)


def draw_seed() -> int:
    """A fresh 64-bit hash seed from the operating system's random source (``secrets.randbits(64)``)."""
    return secrets.randbits(64)


def appliance_config(board: str, *, window_us: int | None = None, fp: float | None = None, seed: int | None = None,
                     config=None, memory: str = "bram", rate_pps: float | None = None):
    """The filter of ``board``'s appliance: ``config`` when given, else the smallest Config
    (:func:`~apbbf.model.timeanalysis.solve_timed`) that keeps every key for ``window_us`` microseconds at
    ``rate_pps`` (default :data:`LINE_RATE_PPS`; bursts of the board's ``burst`` times that rate included) with a
    worst-case fp of ``fp`` at that rate; the hash ``seed`` set (``None``: a fresh one, :func:`draw_seed`). One tick
    is one microsecond. With ``memory="dram"`` the Config has the row layout of the board's DRAM (:data:`DRAM`) and
    must fit its bytes. Planned for a rate below the line rate (``IMIX_PPS``: a 1 s window in the 5A-75B's 4 MiB),
    the filter keeps a shorter window at the line rate (its count floor: the report gives it).

    Raises
    ------
    ValueError
        If ``board`` is unknown, a value is out of range, no Config meets the targets, or the Config does not fit
        the board's DRAM (the message names its capacity).
    """
    from ..model.config import check_config
    from ..model.timeanalysis import solve_timed
    if board not in BOARD_DEFAULTS:
        raise ValueError(f"board must be one of {', '.join(BOARD_DEFAULTS)}, not {board!r}")
    defaults = BOARD_DEFAULTS[board]
    seed = draw_seed() if seed is None else seed
    if config is not None:
        return replace(check_config(config), seed=seed)
    if memory not in MEMORIES:
        raise ValueError(f"memory must be one of {', '.join(MEMORIES)}, not {memory!r}")
    window_us = defaults["window_us"] if window_us is None else window_us
    if isinstance(window_us, bool) or not isinstance(window_us, int) or not 1 <= window_us <= 1 << 30:
        raise ValueError(f"window_us must be an integer from 1 to 2**30 microseconds, not {window_us!r}")
    fp = defaults["fp"] if fp is None else fp
    rate_pps = LINE_RATE_PPS if rate_pps is None else rate_pps
    if isinstance(rate_pps, bool) or not isinstance(rate_pps, (int, float)) or not 1e3 <= rate_pps <= LINE_RATE_PPS:
        raise ValueError(f"rate_pps must be a rate from 1000 frames/s to the line rate's {LINE_RATE_PPS:.0f}, "
                         f"not {rate_pps!r}")
    if memory == "bram":
        return solve_timed(fp, window_us, rate_pps / 1e6, burst=defaults["burst"],
                           max_segments=defaults["max_segments"], seed=seed)
    if board not in DRAM:
        raise ValueError(f"the filter in DRAM is built for {', '.join(DRAM)}, not {board!r}")
    dram = DRAM[board]
    config = solve_timed(fp, window_us, rate_pps / 1e6, burst=defaults["burst"],
                         max_segments=dram["max_segments"], seed=seed, row_bits=dram["row_bits"],
                         block_bits=dram["block_bits"])
    need = config.memory_blocks * config.block_bits // 8
    if need > dram["bytes"]:
        raise ValueError(f"a window of {window_us} us at fp {fp:g} and {rate_pps:.0f} frames/s needs {need} bytes of DRAM ({config.rows} rows "
                         f"of {config.row_bits // 8} bytes), more than the {board}'s {dram['bytes']}: choose a "
                         "shorter window or a higher fp")
    return config


def choose_memory(board: str, window_us: int | None, fp: float | None, action: str,
                  rate_pps: float | None = None) -> str:
    """``"bram"`` if the filter for ``window_us`` and ``fp`` fits ``board``'s block RAM beside the rest of the
    appliance, else ``"dram"`` where the board has DRAM for it (:data:`DRAM`).

    Raises
    ------
    ValueError
        If it fits neither (the block RAM's message, or the DRAM's naming its capacity).
    """
    try:
        check_block_ram(board, appliance_config(board, window_us=window_us, fp=fp, rate_pps=rate_pps), action)
        return "bram"
    except ValueError:
        if board not in DRAM:
            raise
    appliance_config(board, window_us=window_us, fp=fp, memory="dram", rate_pps=rate_pps)  # fits, or says why not
    return "dram"


def memory_numbers(board: str, config, clock_hz: float) -> dict:
    """Where the filter is and, in DRAM, what it asks of the memory: native words per frame (a TEST_AND_INSERT
    with the pool full: a block read from each live segment, every physical one but the segment being cleared,
    and k written, :func:`apbbf.model.memory.command_accesses`; the retired segment's clearing spread over its
    shift interval), per second at :data:`LINE_RATE_PPS` and at :data:`IMIX_PPS`, and the port's words per
    second over that at each (``port_word_ratio``: a bound from the word count alone; the rate measured with row
    changes, turnarounds and refresh is ``make dram-bench``'s)."""
    from ..model.memory import command_accesses
    if not config.row_layout:
        return {"where": "block RAM", "bits": config.hardware_memory_bits}
    dram = DRAM[board]
    words = config.block_bits // dram.get("native_bits", 32)
    live = config.physical_segments - 1 if config.timed else config.segments
    per_frame = command_accesses(config, live=live)["accesses"] * words
    clearing = config.segment_blocks * words / config.shift_interval       # per tick, one tick per microsecond
    per_second = per_frame * LINE_RATE_PPS + clearing * 1e6
    per_second_imix = per_frame * IMIX_PPS + clearing * 1e6
    port = clock_hz / dram.get("cycles_per_word", 1)
    return {"where": "DRAM", "bytes": config.memory_blocks * config.block_bits // 8, "capacity_bytes": dram["bytes"],
            "row_bits": config.row_bits, "rows": config.rows, "row_blocks": config.row_blocks,
            "native_words_per_frame": per_frame,
            "clearing_words_per_second": round(clearing * 1e6), "words_per_second_at_line_rate": round(per_second),
            "words_per_second_at_imix": round(per_second_imix),
            "port_words_per_second": port, "port_word_ratio": round(port / per_second, 3),
            "port_word_ratio_imix": round(port / per_second_imix, 3)}


def window_numbers(config) -> dict:
    """The window in keys and in milliseconds, and the worst-case fp, at :data:`LINE_RATE_PPS` and
    :data:`IMIX_PPS` (:func:`~apbbf.model.timeanalysis.timed_analysis`; one tick is one microsecond)."""
    from ..model.timeanalysis import timed_analysis
    out = {"span_ms": config.span / 1000}
    for name, pps in (("line_rate_64B", LINE_RATE_PPS), ("imix", IMIX_PPS)):
        result = timed_analysis(config, pps / 1e6, points=4)
        out[name] = {"pps": round(pps), "window_keys": round(result["window_keys"]),
                     "window_ms": round(result["window_time"] / 1000, 4), "fp": result["fp"],
                     "overflow": bool(result["overflow"])}
    return out


#: DP16KD per device of the two boards (Lattice ECP5 and ECP5-5G Family Data Sheet, FPGA-DS-02012, Table 1.1).
DP16KD_COUNT = {"LFE5U-25F": 56, "LFE5UM-45F": 108}


def block_ram(board: str):
    """The :class:`~apbbf.hdl.lib.devices.BlockRAM` of ``board``'s device: the ECP5-85F's DP16KD, counted for
    the smaller device."""
    from ..hdl.lib.devices import BLOCK_RAM
    device = _platform(board).device
    return replace(BLOCK_RAM["LFE5U-85F"], device=device, count=DP16KD_COUNT[device],
                   source=f"Lattice ECP5 and ECP5-5G Family Data Sheet (FPGA-DS-02012), Table 1.1: "
                          f"{DP16KD_COUNT[device]} sysMEM EBR of 18 kbit")


def check_block_ram(board: str, config, action: str) -> dict:
    """The DP16KD the filter's segments and the rest of the appliance need on ``board``.

    Raises
    ------
    ValueError
        If they need more than the device has (the message names both).
    """
    ram = block_ram(board)
    segments = ram.blocks_for_config(config)
    other = _block_rams(board, config, action)
    if segments + other > ram.count:
        raise ValueError(f"the filter needs {segments} DP16KD ({config.physical_segments} segments of "
                         f"{config.segment_blocks} blocks x {config.block_bits} bits) and the rest of the appliance "
                         f"{other}, more than the {ram.device}'s {ram.count}: choose a shorter window or a higher fp")
    return {"filter": segments, "other": other, "available": ram.count}


def _block_rams(board: str, config, action: str) -> int:
    """Block RAMs the appliance needs besides the filter's segments (an estimate from the memories' shapes)."""
    from ..hdl.appliance.core import MAX_FRAME
    from ..hdl.eth.layouts import beat_layout
    from ..hdl.packet.dedup import PacketDedup
    from ..model.packet import KeySpec
    ram = block_ram(board)
    beat = beat_layout(64).size
    dedup = PacketDedup(config, KeySpec.l3l4(), data_width=64, action=action, timestamps="counter",
                        max_frame=MAX_FRAME)
    shapes = [(512, beat)] * 2 + [(64, beat)] * 2 + [(256, beat)] * (1 + (action != "drop"))
    if dedup.buffer_beats:
        shapes.append((dedup.buffer_beats, beat - 1))
    decisions = max(dedup.buffer_beats, 4 * dedup.key_queue, 16)
    if decisions >= 512:
        shapes += [(decisions, 2), (decisions, 1)]
    return sum(ram.tile(depth, width).blocks for depth, width in shapes)


def critical_paths(pnr_log: str) -> dict:
    """Per clock, nextpnr's last (post-route) critical path report: its source, sink, delay and routing share
    (:func:`apbbf.toolchain.critical_path` applied to each clock's block)."""
    out = {}
    for block in pnr_log.split("Critical path report for clock '")[1:]:
        clock = block.split("'", 1)[0]
        out[clock] = toolchain.critical_path("Critical path report for clock" + block, keep=2)
    return out


#: The Versa DDR3 core's own clocks, by a piece of their nextpnr net names (its user clock is ``sync``).
DDR3_CLOCKS = {"sys2x": "sys2x (100 MHz, the DDR3 PHY's, LiteDRAM's ECLKSYNCB)",
               "init_clk": "init (25 MHz, the DDR3 PHY's start-up, LiteDRAM's)",
               "crg_clkout1": "init (25 MHz, the DDR3 PHY's start-up, LiteDRAM's)",
               "clk100": "clk100 (100 MHz, the Versa's oscillator, into the DDR3 core's PLL)",
               "dram.clk_in": "clk100 (100 MHz, the Versa's oscillator, into the DDR3 core's PLL)"}


def domain_name(net: str) -> str:
    """A readable clock domain for a nextpnr clock net of the appliance."""
    for port in ("port0", "port1"):
        if f"{port}." in net and "rx_clk" in net:
            return f"rx of {port} (125 MHz, the PHY's)"
    if "eth_tx" in net:
        return "eth_tx (125 MHz, both transmit sides)"
    if "sdram_ps" in net:
        return "sdram_ps (50 MHz shifted by 180 degrees: the SDRAM's clock pin)"
    for name, meaning in DDR3_CLOCKS.items():
        if name in net:
            return meaning
    return "sync (50 MHz, the filter's)"


def _run(command, cwd, log=None):
    """Run ``command`` to its end; returns the processor seconds it used (its children's, waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log, "w") if log else open(os.devnull, "w") as out:
        subprocess.run(command, cwd=cwd, check=True, stdout=out, stderr=subprocess.STDOUT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


#: What :func:`build_appliance` runs: everything, only the synthesis, only nextpnr (on the netlist already in the
#: build folder), or only the report (from the runs already there).
STEPS = ("all", "synth", "pnr", "report")


def _synthesize(platform, top, build_dir: Path, memory: str) -> dict:
    """Yosys on the appliance, once; its wall-clock and processor seconds and the LUT mapping it took."""
    begin = time.monotonic()
    plan = platform.build(top, name="top", build_dir=str(build_dir), do_build=False)
    plan.extract(str(build_dir))
    script = build_dir / "top.ys"

    def classic():
        script.write_text(script.read_text().replace(
            "synth_ecp5  -top top", "synth_ecp5 -top top -run :map_luts; abc -dress -lut 4:7; "
            "synth_ecp5 -top top -run map_cells:"))
        return "abc"

    # Yosys 0.70's abc9 fails an assertion reintegrating the mapped netlist (ABC_OPS_REINTEGRATE) on the
    # appliance with its filter in the SDRAM, after most of the synthesis's time: that build takes the classic
    # abc LUT mapping in place of synth_ecp5's map_luts step from the start, the others when abc9 fails.
    mapping = classic() if memory == "dram" else "abc9"
    cpu = 0.0
    try:
        cpu += _run([os.environ["YOSYS"], "-q", "-l", "top.rpt", "top.ys"], build_dir)
    except subprocess.CalledProcessError:
        if mapping != "abc9" or "ABC_OPS_REINTEGRATE" not in (build_dir / "top.rpt").read_text()[-4000:]:
            raise
        mapping = classic()
        cpu += _run([os.environ["YOSYS"], "-q", "-l", "top.rpt", "top.ys"], build_dir)
    if toolchain.conflicting_drivers((build_dir / "top.rpt").read_text()):
        # Yosys's abc9 mapped a flip-flop twice onto one wire (toolchain.ABC9_XAIGER1): once more, without it.
        mapping += " (xaiger 1)"
        script.write_text(toolchain.with_abc9_xaiger1(script.read_text()))
        cpu += _run([os.environ["YOSYS"], "-q", "-l", "top.rpt", "top.ys"], build_dir)
        if toolchain.conflicting_drivers((build_dir / "top.rpt").read_text()):
            raise RuntimeError(f"Yosys left wires with more than one driver: {build_dir / 'top.rpt'}")
    return {"synth_seconds": round(time.monotonic() - begin, 1), "synth_cpu_seconds": round(cpu, 1),
            "lut_mapping": mapping}


class SeedBudget:
    """Which nextpnr runs of a build may be stopped at their processor-time budget: a run past it is stopped while
    another run has finished or is still running or to come; the last one left, with none finished, runs on to its
    end, so that a build on a busy machine ends with a placed and routed seed rather than none."""

    def __init__(self, seeds):
        self._lock = threading.Lock()
        self.waiting = set(seeds)         # not yet finished or stopped
        self.finished = set()

    def may_stop(self, seed) -> bool:
        with self._lock:
            return bool(self.finished) or len(self.waiting - {seed}) > 0

    def done(self, seed, finished: bool):
        with self._lock:
            self.waiting.discard(seed)
            if finished:
                self.finished.add(seed)


def _without_drawn(options: dict) -> dict:
    return {name: value for name, value in options.items() if name != "seed_drawn"}


def _recorded_seed(options_file: Path) -> tuple[int, bool]:
    """The hash seed that the synthesis in ``options_file``'s folder used, and whether it was drawn."""
    if not options_file.exists():
        raise ValueError(f"{options_file.parent} holds no synthesized build ({options_file}): build it first "
                         "(steps 'all' or 'synth')")
    options = json.loads(options_file.read_text())
    return int(options["config"]["seed"]), bool(options.get("seed_drawn", False))


def build_appliance(board: str, *, build_dir, config=None, window_us=None, fp=None, seed: int | None = None,
                    action: str = "drop", key: str = "l3l4", seeds=SEEDS, jobs: int = 1,
                    pnr_cpu_minutes: float = 30, placer: str = "static", router: str = "router2",
                    steps: str = "all", memory: str | None = None, write_routed: bool = False,
                    runtime_seed: bool = False, runtime_window: bool = False, rate_pps: float | None = None,
                    log=print) -> dict:
    """Synthesize ``board``'s appliance once, place and route it once per nextpnr seed, pack the bitstream
    (``<build_dir>/top.bit``) and write the report (``<build_dir>/report.json``).

    Parameters
    ----------
    board : str
        A key of :data:`BOARD_DEFAULTS`.
    build_dir : str or os.PathLike
    config : Config, optional
        The filter; by default sized by :func:`appliance_config` from ``window_us`` and ``fp``.
    seed : int or None
        The filter's hash seed, 0..2**64-1; ``None`` (the default): a fresh one from ``secrets``
        (:func:`draw_seed`), recorded in the report (``seed``, ``seed_drawn``) so that ``seed=`` (``SEED=``)
        repeats the build. It is baked into the bitstream: treat the report and the bitstream as secrets
        (docs/trust.md). With ``steps="pnr"`` or ``"report"``, ``None`` takes the seed that the synthesis in
        ``build_dir`` used (its ``options.json``).
    action, key : str
        One of :data:`ACTIONS`, one of :data:`KEYS`.
    memory : {"bram", "dram", None}
        Where the filter's segments are: block RAM, or the board's DRAM (:data:`DRAM`; a LiteDRAM core generated
        for the de-duplicator's clock, :func:`apbbf.flows.litedram.generate`, added to the build); None: block
        RAM if the window fits it, else the DRAM (:func:`choose_memory`).
    seeds : sequence of int
        nextpnr seeds (default :data:`apbbf.flows.pnr.SEEDS`).
    jobs : int
        nextpnr runs at a time.
    pnr_cpu_minutes : float
        A nextpnr run that has used this much processor time is stopped and its seed reported unfinished and left
        out of the medians (router1 can thrash on a congested placement), unless it is the last run left and
        none has finished (:class:`SeedBudget`): that one runs on to its end. Processor time, not the wall
        clock, so that a busy machine makes the build slower but never fails it.
    placer, router : str
        nextpnr's ``--placer`` (heap, static, sa) and ``--router`` (router1, router2). The default, the
        electrostatic placer and router2, routes every seed on both boards in about 12 minutes; the analytic
        placer with router1 gives faster seeds when it finishes, but stalled on two of three seeds of the 25F
        and on the Versa.
    steps : str
        One of :data:`STEPS`: ``"all"``; ``"synth"``, the netlist only (returns its cells and times);
        ``"pnr"``, nextpnr on the netlist already in ``build_dir`` (of the same options) for ``seeds``, keeping
        the other seeds' runs; ``"report"``, no tool but ecppack, the report from the runs already in
        ``build_dir`` (e.g. after a build was stopped, or its seeds were run one at a time).
    write_routed : bool
        nextpnr also writes each seed's routed design (``--write <build_dir>/seed<N>.routed.json``), for the
        post-route netlist simulation (:mod:`apbbf.flows.netlist`).
    runtime_seed : bool
        Build the hash's run-time seed (``apbbf host ... rekey``; :class:`~apbbf.hdl.appliance.top.ApplianceTop`'s
        ``runtime_seed``, ``RUNTIME_SEED=1``): off by default, as it costs logic (``docs/appliance.md``).
    rate_pps : float or None
        The rate the filter is planned for (:func:`appliance_config`; default the line rate, ``RATE_PPS=``).
    runtime_window : bool
        The window writable at run time over the UART (``set window``, up to the report's ``window_capacity_us``;
        :class:`~apbbf.hdl.appliance.top.ApplianceTop`).
    log : callable
        Where the build's notes go (a run past its budget that is let finish).

    Raises
    ------
    ValueError
        If a parameter is out of range or the filter does not fit the board's block RAM.
    RuntimeError
        If no nextpnr run of ``seeds`` is in ``build_dir`` at the end.
    """
    from ..hdl.appliance.top import ApplianceTop
    from ..hdl.appliance.core import USER_HZ
    from ..model.packet import KeySpec
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
    if key not in KEYS:
        raise ValueError(f"key must be one of {', '.join(KEYS)}, not {key!r}")
    if placer not in ("heap", "static", "sa"):
        raise ValueError(f"placer must be 'heap', 'static' or 'sa', not {placer!r}")
    if router not in ("router1", "router2"):
        raise ValueError(f"router must be 'router1' or 'router2', not {router!r}")
    if steps not in STEPS:
        raise ValueError(f"steps must be one of {', '.join(STEPS)}, not {steps!r}")
    if not isinstance(runtime_seed, bool):
        raise TypeError(f"runtime_seed must be a bool, not {runtime_seed!r}")
    if not isinstance(runtime_window, bool):
        raise TypeError(f"runtime_window must be a bool, not {runtime_window!r}")
    if isinstance(pnr_cpu_minutes, bool) or not isinstance(pnr_cpu_minutes, (int, float)) or not pnr_cpu_minutes > 0:
        raise ValueError(f"pnr_cpu_minutes must be a positive number of minutes, not {pnr_cpu_minutes!r}")
    seeds = [int(s) for s in seeds]
    if not seeds or any(s < 0 for s in seeds):
        raise ValueError(f"seeds must name at least one nextpnr seed, none negative, not {seeds!r}")
    if memory is None:
        memory = "dram" if config is not None and config.row_layout else choose_memory(board, window_us, fp, action,
                                                                                       rate_pps)
    if seed is None and steps in ("pnr", "report"):
        # nextpnr and the report work on the netlist in build_dir: its hash seed is the one its synthesis used
        seed, drawn = _recorded_seed(Path(build_dir).resolve() / "options.json")
    else:
        drawn = seed is None
    config = appliance_config(board, window_us=window_us, fp=fp, seed=draw_seed() if seed is None else seed,
                              config=config, memory=memory, rate_pps=rate_pps)
    platform = _platform(board)
    dram = None
    if config.row_layout:
        from .litedram import generate
        dram = generate(DRAM[board]["target"], sys_clk_freq=USER_HZ, timing=DRAM[board].get("timing"))
        platform.add_file("litedram_core.v", dram.verilog.read_text())
        block_rams = {"filter": 0, "other": _block_rams(board, config, action), "available": block_ram(board).count}
    else:
        block_rams = check_block_ram(board, config, action)
    toolchain.use_yowasp()
    build_dir = Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    options = {"board": board, "config": {f.name: getattr(config, f.name) for f in fields(config)},
               "action": action, "key": key, "placer": placer, "router": router,
               **({"runtime_seed": True} if runtime_seed else {}),
               **({"runtime_window": True} if runtime_window else {})}
    options_file = build_dir / "options.json"
    synth_file = build_dir / "synth.json"
    if steps in ("all", "synth"):
        for path in [*build_dir.glob("seed*.*"), options_file, synth_file]:
            path.unlink(missing_ok=True)
        top = ApplianceTop(board, config, getattr(KeySpec, key)(), action=action, dram=dram,
                           runtime_seed=runtime_seed, runtime_window=runtime_window)
        synth = _synthesize(platform, top, build_dir, memory)
        options_file.write_text(json.dumps({**options, "seed_drawn": drawn}, indent=2) + "\n")
        synth_file.write_text(json.dumps(synth, indent=2) + "\n")
    elif not options_file.exists() or _without_drawn(json.loads(options_file.read_text())) != options:
        raise ValueError(f"{build_dir} holds no build of these options ({options_file}): build it first "
                         "(steps 'all' or 'synth'), with the same seed")
    synth = json.loads(synth_file.read_text()) if synth_file.exists() else {}
    cells = toolchain.group_cells(toolchain.yosys_cells((build_dir / "top.rpt").read_text()), "ecp5")
    if steps == "synth":
        return {"board": board, "build_dir": str(build_dir), "cells": cells, **synth}
    device_args = toolchain.nextpnr_device_args(platform)
    budget = SeedBudget(seeds)

    def place_and_route(pnr_seed):
        run_file = build_dir / f"seed{pnr_seed}.run.json"
        if steps in ("all", "pnr"):
            for path in build_dir.glob(f"seed{pnr_seed}.*"):
                path.unlink()
            command = [os.environ["NEXTPNR_ECP5"], "--quiet", "--timing-allow-fail", "--seed", str(pnr_seed),
                       "--report", f"seed{pnr_seed}.json", "--log", f"seed{pnr_seed}.tim", *device_args,
                       "--placer", placer, "--router", router,
                       "--json", "top.json", "--lpf", "top.lpf", "--textcfg", f"seed{pnr_seed}.config",
                       *(["--write", f"seed{pnr_seed}.routed.json"] if write_routed else [])]
            try:
                run = toolchain.run_with_cpu_budget(
                    command, cwd=build_dir, cpu_budget_s=pnr_cpu_minutes * 60,
                    may_stop=lambda: budget.may_stop(pnr_seed),
                    on_overrun=lambda used: log(f"nextpnr seed {pnr_seed} is past its budget of {pnr_cpu_minutes:g} "
                                                f"processor minutes ({used / 60:.1f}) with no other seed routed or "
                                                "to come: it runs on to its end"))
            finally:
                budget.done(pnr_seed, (build_dir / f"seed{pnr_seed}.config").exists())
            run.pop("returncode")
            run_file.write_text(json.dumps(run) + "\n")
        if not (build_dir / f"seed{pnr_seed}.config").exists():
            return None
        report = json.loads((build_dir / f"seed{pnr_seed}.json").read_text())
        tim = (build_dir / f"seed{pnr_seed}.tim").read_text()
        run = json.loads(run_file.read_text()) if run_file.exists() else {}
        return {"fmax": toolchain.fmax_from_report(report),
                "seconds": run.get("wall_seconds"), "cpu_seconds": run.get("cpu_seconds"),
                "critical_paths": critical_paths(tim),
                "utilization": {name: {"used": v["used"], "available": v["available"]}
                                for name, v in report.get("utilization", {}).items() if v.get("used")}}

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        runs = {s: r for s, r in zip(seeds, pool.map(place_and_route, seeds)) if r is not None}
    unfinished = [s for s in seeds if s not in runs]
    if not runs:
        raise RuntimeError(f"no nextpnr run of seeds {seeds} is in {build_dir}" + (
            "" if steps == "report" else f" (each stopped after {pnr_cpu_minutes:g} processor minutes, or failed: "
                                         f"seed*.tim there)"))
    seeds = [s for s in seeds if s in runs]

    domains = {}
    for net in runs[seeds[0]]["fmax"]:
        values = [runs[s]["fmax"][net]["achieved_mhz"] for s in seeds if net in runs[s]["fmax"]]
        name = domain_name(net)
        if name in domains:                      # two nets read alike: neither hides the other
            name = f"{name}: {net}"
        domains[name] = {
            "net": net, "constraint_mhz": runs[seeds[0]]["fmax"][net]["constraint_mhz"],
            "fmax_mhz": round(statistics.median(values), 2), "fmax_min_mhz": min(values),
            "fmax_max_mhz": max(values),
            "met_every_seed": all(runs[s]["fmax"][net]["met"] for s in seeds if net in runs[s]["fmax"]),
        }
    met = [s for s in seeds if all(v["met"] for v in runs[s]["fmax"].values() if v["met"] is not None)]
    chosen = met[0] if met else seeds[0]
    _run([os.environ["ECPPACK"], "--compress", "--input", f"seed{chosen}.config", "--bit", "top.bit"], build_dir)
    speed = getattr(platform, "speed", None)
    report = {
        "board": board,
        "device": f"{platform.device}-{platform.package}" + (f" speed {speed}" if speed else ""),
        "bitstream": str(build_dir / "top.bit"), "bitstream_seed": chosen, "timing_met": bool(met),
        "seed": config.seed, "seed_drawn": drawn,
        "action": action, "key": key, "sync_mhz": USER_HZ / 1e6, "baud": ApplianceTop.baud,
        "link": LINK,
        "domains": domains,
        "seeds": {str(s): {"fmax": r["fmax"], "seconds": r["seconds"], "cpu_seconds": r["cpu_seconds"],
                           "critical_paths": r["critical_paths"]} for s, r in runs.items()},
        "seeds_unfinished": unfinished, "pnr_cpu_minutes": pnr_cpu_minutes,
        "cells": cells, "utilization": runs[chosen]["utilization"],
        "config": {f.name: getattr(config, f.name) for f in fields(config)},
        "physical_segments": config.physical_segments, "memory_bits": config.hardware_memory_bits,
        "block_rams_estimated": block_rams,
        "window": window_numbers(config),
        "runtime_window": runtime_window,
        "window_capacity_us": _window_capacity(config) if runtime_window else config.span,
        "memory": memory_numbers(board, config, USER_HZ),
        "lut_mapping": synth.get("lut_mapping"),
        "synth_seconds": synth.get("synth_seconds"), "synth_cpu_seconds": synth.get("synth_cpu_seconds"),
        "pnr_seconds": round(time.monotonic() - start, 1) if steps in ("all", "pnr") else None,
        "seed_build_cpu_seconds": _seed_build_cpu(synth, runs),
    }
    (build_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _seed_build_cpu(synth: dict, runs: dict) -> dict | None:
    """One seed's whole build in processor seconds: the synthesis and that seed's nextpnr run (median and range
    over the seeds whose times are known)."""
    cpu = [r["cpu_seconds"] for r in runs.values() if r.get("cpu_seconds") is not None]
    if not cpu or synth.get("synth_cpu_seconds") is None:
        return None
    base = synth["synth_cpu_seconds"]
    return {"median": round(base + statistics.median(cpu), 1), "min": round(base + min(cpu), 1),
            "max": round(base + max(cpu), 1)}


#: What the ports support, for the report: the MAC is Gigabit RGMII only, and the PHYs are not managed.
LINK = {"speeds_mbps": [1000], "mdio": False,
        "note": "1000 Mb/s full duplex only: RGMII at 100 and 10 Mb/s is not implemented, so the link partner must "
                "negotiate Gigabit; MDIO is not used (the PHYs come up as strapped, autonegotiating)"}


def markdown(report: dict) -> str:
    """The report as a markdown page."""
    seeds = ", ".join(report["seeds"])
    lines = [f"# Appliance bitstream: {report['board']} ({report['device']})", "",
             f"- bitstream `{report['bitstream']}` (nextpnr seed {report['bitstream_seed']}); timing "
             + ("met in every domain" if report["timing_met"] else "**NOT met** in every domain"),
             f"- action `{report['action']}`, key `{report['key']}`, filter clock {report['sync_mhz']:g} MHz, "
             f"UART {report['baud']} baud",
             f"- ports: {report.get('link', LINK)['note']}",
             f"- hash seed {report['config']['seed']:#018x}" + (" (drawn for this build" if report.get("seed_drawn")
                                                                else " (given") +
             f"; `SEED={report['config']['seed']:#x}` repeats it; a secret: docs/trust.md)", "",
             f"## Timing (post-route Fmax, median of nextpnr seeds {seeds}, with the range)", "",
             "| domain | constraint | Fmax median | range | met on every seed |", "|---|---:|---:|---|---|"]
    for name, d in report["domains"].items():
        lines.append(f"| {name} | {d['constraint_mhz']} MHz | {d['fmax_mhz']} MHz | {d['fmax_min_mhz']}–"
                     f"{d['fmax_max_mhz']} MHz | {'yes' if d['met_every_seed'] else 'NO'} |")
    c, u = report["cells"], report["utilization"]
    if report.get("seeds_unfinished"):
        lines += ["", f"nextpnr seeds {', '.join(map(str, report['seeds_unfinished']))} were stopped at their "
                      f"budget of {report['pnr_cpu_minutes']:g} processor minutes and are left out."]
    lines += ["", "## Resources", "",
              f"yosys: {c.get('luts', 0)} LUT4, {c.get('carry', 0)} CCU2C, {c.get('ffs', 0)} FF, "
              f"{c.get('brams', 0)} block RAM, {c.get('lutram', 0)} LUT RAM.", "",
              "| nextpnr cell | used | available |", "|---|---:|---:|"]
    lines += [f"| {name} | {v['used']} | {v['available']} |" for name, v in u.items()]
    cfg = report["config"]
    w = report["window"]
    lines += ["", "## The filter", "",
              "Config(" + ", ".join(f"{k}={v:#x}" if k == "seed" else f"{k}={v}" for k, v in cfg.items()) + ")"
              + f": {report['physical_segments']} segments, {report['memory_bits']} bits.", "",
              f"Time window (span) {w['span_ms']:g} ms; one tick is 1 µs.", "",
              "| traffic | frames/s | window, keys | window, ms | worst-case fp | overflow |",
              "|---|---:|---:|---:|---:|---|"]
    for name, label in (("line_rate_64B", "1 GbE, 64-byte frames"), ("imix", "1 GbE, simple IMIX")):
        v = w[name]
        lines.append(f"| {label} | {v['pps']} | {v['window_keys']} | {v['window_ms']:g} | {v['fp']:.3g} | "
                     f"{'yes' if v['overflow'] else 'no'} |")
    m = report.get("memory")
    if m and m["where"] == "DRAM":
        lines += ["", "## The memory", "",
                  f"The filter in the DRAM: {m['bytes']} of its {m['capacity_bytes']} bytes, {m['rows']} rows of "
                  f"{m['row_bits']} bits (row_bits), {m['row_blocks']} blocks of each segment in a row. A frame "
                  f"takes {m['native_words_per_frame']} native words (a block of every live segment read, k "
                  f"written), the clearing {m['clearing_words_per_second']} words/s: "
                  f"{m['words_per_second_at_line_rate'] / 1e6:.2f} M words/s at 1.488 Mpps and "
                  f"{m['words_per_second_at_imix'] / 1e6:.2f} M at the IMIX against the port's "
                  f"{m['port_words_per_second'] / 1e6:g} M: {m['port_word_ratio']:g} and {m['port_word_ratio_imix']:g} "
                  "times the words needed (the port's word rate alone: row changes, turnarounds and refresh take "
                  "much of it; `make dram-bench` measures the rate with them)."]
    if report.get("seed_build_cpu_seconds"):
        b = report["seed_build_cpu_seconds"]
        lines += ["", f"Synthesis {report['synth_cpu_seconds']:g} processor seconds ({report['lut_mapping']} LUT "
                      f"mapping); one seed's whole build (synthesis and nextpnr) {b['median']:g} processor seconds "
                      f"(median; {b['min']:g}–{b['max']:g})."]
    return "\n".join(lines) + "\n"


def summary(report: dict) -> str:
    """A few lines for the terminal."""
    lines = [f"{report['board']} ({report['device']}): {report['bitstream']} (seed {report['bitstream_seed']}), "
             f"timing {'met' if report['timing_met'] else 'NOT met'}"]
    for name, d in report["domains"].items():
        lines.append(f"  {name:>32}: {d['fmax_mhz']:7.2f} MHz ({d['fmax_min_mhz']}-{d['fmax_max_mhz']}) "
                     f"against {d['constraint_mhz']} MHz")
    lines.append(f"  hash seed {report['config']['seed']:#018x}" + (" (drawn)" if report.get("seed_drawn") else "")
                 + f": SEED={report['config']['seed']:#x} repeats this build")
    w = report["window"]
    lines.append(f"  window {w['span_ms']:g} ms: {w['line_rate_64B']['window_keys']} keys at 1.488 Mpps "
                 f"({w['line_rate_64B']['window_ms']:g} ms, fp {w['line_rate_64B']['fp']:.2g}), "
                 f"{w['imix']['window_keys']} at IMIX ({w['imix']['window_ms']:g} ms)")
    m = report.get("memory")
    if m and m["where"] == "DRAM":
        lines.append(f"  filter in DRAM: {m['rows']} rows of {m['row_bits']} bits, {m['native_words_per_frame']} "
                     f"words a frame, the port's word rate {m['port_word_ratio']:g} times the need at 1.488 Mpps, "
                     f"{m['port_word_ratio_imix']:g} at IMIX (not measured: make dram-bench)")
    return "\n".join(lines)


def _window_capacity(config) -> int:
    """The longest window (µs) a build with the run-time window takes over the UART (``WINDOW``)."""
    from ..model.timeanalysis import window_capacity
    return window_capacity(config)
