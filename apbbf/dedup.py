"""``apbbf dedup``: run the de-duplication model (:mod:`apbbf.model.dedup`) on a pcap or pcapng capture.

The capture is read with dpkt's file and block headers (:mod:`dpkt.pcap`, :mod:`dpkt.pcapng`) and a struct loop
over the packet records, keeping every timestamp as an integer at the capture's resolution (converted to
nanoseconds exactly, or rounded down for binary resolutions finer than 1 ns) and every record's place in the file,
so the output is the input's own records: same format, byte order, timestamp resolution, options and order, with
the dropped frames' records left out (``--action drop``), a comment option added to the marked frames' enhanced
packet blocks (``--action mark``, pcapng only), or every record (``--action count``).

Frames are Ethernet (link type 1). The FCS is taken off when the capture says it is there (pcap's link-type FCS
bits, pcapng's ``if_fcslen`` or ``epb_flags``; ``--fcs`` overrides), so the key depends on the frame, not on how
it was captured. A frame cut by the capture's snap length is keyed on the bytes captured (counted as
``truncated``). pcapng ``epb_flags`` link-layer errors make a frame *errored*.

The filter is sized from the capture: ``rate`` is the most checked frames within any ``span`` ticks, divided by
``span``, and :func:`apbbf.model.timeanalysis.solve_timed` gives the smallest Config with the worst-case fp at that
rate and the span kept up to ``burst`` times it (``--burst``, default 2: frames arriving in bursts inside a span
shift the filter by count as well as by time, about twice as often as a steady stream of the same peak; see
:mod:`apbbf.model.timeanalysis`). The report compares the filter with an exact de-duplication over the same keys
and ticks (:class:`apbbf.model.dedup.ExactWindow`).
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import struct
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Capture", "read_capture", "write_capture", "parse_window", "size_filter", "dedup_capture",
           "add_parser", "main"]

LINKTYPE_ETHERNET = 1
_MARK_COMMENT = b"apbbf dedup: duplicate"


# Reading ----------------------------------------------------------------------------------------------------------

@dataclass
class Capture:
    """A capture file's packets, indexed into its bytes.

    Attributes
    ----------
    path : pathlib.Path
    format : {"pcap", "pcapng"}
    data : numpy.ndarray of uint8
        The file's bytes (memory-mapped).
    offsets, caplens, wirelens : numpy.ndarray of int64
        Each packet's data offset in the file, captured and original lengths.
    times : numpy.ndarray of int64
        Timestamps in nanoseconds.
    fcs : numpy.ndarray of int64
        FCS bytes at the end of each packet (0 or 4), as the capture declares them (or ``--fcs``).
    errored : numpy.ndarray of bool
        pcapng ``epb_flags`` with a link-layer error bit set.
    resolution : str
        The timestamp resolution, e.g. ``"1 us"``, ``"1 ns"``, ``"2^-20 s"`` (pcapng: of the first interface).
    blocks : numpy.ndarray of int64, shape (n, 3)
        Every block (pcap: file header and records) as ``(start, end, packet)`` in file order; packet -1 for
        blocks that are not packets.
    big_endian : numpy.ndarray of bool
        Per block, the byte order of its section (pcapng; pcap: the file's).
    """
    path: Path
    format: str
    data: np.ndarray
    offsets: np.ndarray
    caplens: np.ndarray
    wirelens: np.ndarray
    times: np.ndarray
    fcs: np.ndarray
    errored: np.ndarray
    resolution: str
    blocks: np.ndarray
    big_endian: np.ndarray
    warnings: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def frame_lengths(self) -> np.ndarray:
        """Bytes of each frame without its FCS: the captured bytes, less the FCS if it was captured."""
        return np.minimum(self.caplens, np.maximum(self.wirelens - self.fcs, 0))


def _map(path: Path) -> np.ndarray:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return np.zeros(0, dtype=np.uint8)
        return np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.uint8)


def _check_link(linktype: int, where: str) -> None:
    if linktype != LINKTYPE_ETHERNET:
        raise ValueError(f"{where} has link type {linktype}; apbbf dedup keys Ethernet frames (link type "
                         f"{LINKTYPE_ETHERNET})")


def _fcs_option(value: int) -> int:
    # if_fcslen is given in bits by the specification's text and in bytes by its example and by writers: an
    # Ethernet FCS is 4 bytes (32 bits) either way
    if value in (0, 4, 32):
        return 4 if value else 0
    raise ValueError(f"if_fcslen {value} is not an Ethernet FCS (0 or 4 bytes)")


def _read_pcap(path: Path, data: np.ndarray, progress) -> Capture:
    import dpkt
    if len(data) < 24:
        raise ValueError(f"{path}: too short for a pcap file ({len(data)} bytes)")
    raw = bytes(data[:24])
    header = dpkt.pcap.FileHdr(raw)
    magic = header.magic
    if magic not in dpkt.pcap.MAGIC_TO_PKT_HDR:
        raise ValueError(f"{path}: not a pcap file (magic 0x{magic:08x})")
    little = magic in (dpkt.pcap.PMUDPCT_MAGIC, dpkt.pcap.PMUDPCT_MAGIC_NANO, dpkt.pcap.PACPDOM_MAGIC)
    if little:
        header = dpkt.pcap.LEFileHdr(raw)
    nano = magic in (dpkt.pcap.TCPDUMP_MAGIC_NANO, dpkt.pcap.PMUDPCT_MAGIC_NANO)
    record = dpkt.pcap.MAGIC_TO_PKT_HDR[magic]
    _check_link(header.linktype & 0xFFFF, str(path))
    fcs = 2 * (header.linktype >> 28) if header.linktype & 0x04000000 else 0
    unpack = struct.Struct(record.__hdr_fmt__).unpack_from
    size = record.__hdr_len__
    buffer = data.data if len(data) else b""
    end = len(data)
    pos = 24
    starts, secs, fracs, caplens, wirelens = [], [], [], [], []
    warnings = []
    step = 1 << 24
    mark = step
    while pos + size <= end:
        sec, frac, caplen, wirelen = unpack(buffer, pos)[:4]
        if pos + size + caplen > end:
            warnings.append(f"the last record is cut short at byte {end} (of {pos + size + caplen}): ignored")
            break
        starts.append(pos)
        secs.append(sec)
        fracs.append(frac)
        caplens.append(caplen)
        wirelens.append(wirelen)
        pos += size + caplen
        if pos >= mark and progress:
            progress(pos)
            mark = pos + step
    if pos < end and not warnings:
        warnings.append(f"{end - pos} bytes after the last record ignored")
    starts = np.array(starts, dtype=np.int64)
    caplens = np.array(caplens, dtype=np.int64)
    times = np.array(secs, dtype=np.int64) * 1_000_000_000 + np.array(fracs, dtype=np.int64) * (1 if nano else 1000)
    n = len(starts)
    blocks = np.concatenate([[[0, 24, -1]], np.stack([starts, starts + size + caplens, np.arange(n)], axis=1)]) \
        if n else np.array([[0, 24, -1]], dtype=np.int64)
    return Capture(path, "pcap", data, starts + size, caplens, np.array(wirelens, dtype=np.int64), times,
                   np.full(n, fcs, dtype=np.int64), np.zeros(n, dtype=bool), "1 ns" if nano else "1 us",
                   blocks.astype(np.int64), np.full(len(blocks), not little), warnings)


@dataclass
class _Interface:
    linktype: int
    resolution: tuple           # ("10", exponent) or ("2", exponent)
    offset: int                 # seconds
    fcs: int


def _interface(block: bytes, little: bool, where: str) -> _Interface:
    import dpkt
    idb = (dpkt.pcapng.InterfaceDescriptionBlockLE if little else dpkt.pcapng.InterfaceDescriptionBlock)(block)
    base, exponent, offset, fcs = 10, 6, 0, 0
    for opt in idb.opts:
        if opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL:
            base, exponent = (2 if opt.data[0] & 0x80 else 10), opt.data[0] & 0x7F
        elif opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSOFFSET:
            offset = struct.unpack(("<" if little else ">") + "q", opt.data[:8])[0]
        elif opt.code == dpkt.pcapng.PCAPNG_OPT_IF_FCSLEN:
            fcs = _fcs_option(opt.data[0])
    if base == 2 and exponent > 32:
        raise ValueError(f"{where}: if_tsresol 2^-{exponent} s is finer than this reader handles (2^-32 s)")
    if base == 10 and exponent > 18:
        raise ValueError(f"{where}: if_tsresol 10^-{exponent} s is finer than this reader handles (10^-18 s)")
    return _Interface(idb.linktype, (base, exponent), offset, fcs)


def _resolution_text(resolution) -> str:
    base, exponent = resolution
    if base == 2:
        return f"2^-{exponent} s"
    return {0: "1 s", 3: "1 ms", 6: "1 us", 9: "1 ns"}.get(exponent, f"10^-{exponent} s")


def _options(buffer, start: int, stop: int, little: bool):
    """(code, value start, value length) of each option in ``buffer[start:stop]``."""
    e = "<" if little else ">"
    pos = start
    while pos + 4 <= stop:
        code, length = struct.unpack_from(e + "HH", buffer, pos)
        if code == 0:
            break
        yield code, pos + 4, length
        pos += 4 + length + (-length % 4)


def _read_pcapng(path: Path, data: np.ndarray, progress) -> Capture:
    import dpkt
    P = dpkt.pcapng
    buffer = data.data
    end = len(data)
    pos = 0
    little = True
    interfaces: list[_Interface] = []
    section: list[int] = []                      # the current section's interfaces (global indices)
    starts, stops, packet_of, big = [], [], [], []
    offsets, caplens, wirelens, which, units, flag_list = [], [], [], [], [], []
    warnings = []
    step, mark = 1 << 24, 1 << 24
    epb, pb, shb, idb = P.PCAPNG_BT_EPB, P.PCAPNG_BT_PB, P.PCAPNG_BT_SHB, P.PCAPNG_BT_IDB
    header = struct.Struct("<II").unpack_from
    fields = struct.Struct("<IIIIII").unpack_from               # length, then the EPB's five fields
    while pos + 12 <= end:
        kind, length = header(buffer, pos)
        if kind == shb:
            bom = struct.unpack_from(">I", buffer, pos + 8)[0]        # dpkt's constants read big-endian
            if bom == P.BYTE_ORDER_MAGIC_LE:
                little = True
            elif bom == P.BYTE_ORDER_MAGIC:
                little = False
            else:
                raise ValueError(f"{path}: section at byte {pos} has no byte-order magic")
            e = "<" if little else ">"
            header = struct.Struct(e + "II").unpack_from
            fields = struct.Struct(e + "IIIIII").unpack_from
            kind, length = header(buffer, pos)
            section = []
        if length < 12 or length % 4 or pos + length > end:
            warnings.append(f"block at byte {pos} (length {length}) is cut short or malformed: the rest of the "
                            f"file ({end - pos} bytes) is ignored")
            break
        packet = -1
        if kind == epb or kind == pb:
            _, iface, high, low, caplen, wirelen = fields(buffer, pos + 4)
            if kind == pb:
                iface = iface & 0xFFFF if little else iface >> 16
            if iface >= len(section):
                raise ValueError(f"{path}: packet at byte {pos} names interface {iface}, which its section does not "
                                 f"describe")
            flags = 0
            options = pos + 28 + caplen + (-caplen % 4)
            if options < pos + length - 4:
                for code, at, size in _options(buffer, options, pos + length - 4, little):
                    if code == 2 and size == 4:                           # epb_flags
                        flags = struct.unpack_from(("<" if little else ">") + "I", buffer, at)[0]
            packet = len(offsets)
            offsets.append(pos + 28)
            caplens.append(caplen)
            wirelens.append(wirelen)
            which.append(section[iface])
            units.append((high << 32) | low)
            flag_list.append(flags)
        elif kind == shb:
            block = (P.SectionHeaderBlockLE if little else P.SectionHeaderBlock)(bytes(data[pos:pos + length]))
            if block.v_major != P.PCAPNG_VERSION_MAJOR:
                raise ValueError(f"{path}: pcapng version {block.v_major}.{block.v_minor} is not supported")
        elif kind == idb:
            interface = _interface(bytes(data[pos:pos + length]), little, f"{path}: interface {len(section)}")
            section.append(len(interfaces))
            interfaces.append(interface)
        elif kind == P.PCAPNG_BT_SPB:
            raise ValueError(f"{path}: simple packet blocks (byte {pos}) carry no timestamp; apbbf dedup needs one "
                             f"per frame")
        starts.append(pos)
        stops.append(pos + length)
        packet_of.append(packet)
        big.append(not little)
        pos += length
        if pos >= mark and progress:
            progress(pos)
            mark = pos + step
    n = len(offsets)
    # timestamps in units of the interface's resolution (below 2**63 until 2262 at 1 ns, 2038 at 2^-32 s)
    units = np.array(units, dtype=np.uint64).astype(np.int64)
    which = np.array(which, dtype=np.int64)
    times = np.zeros(n, dtype=np.int64)
    fcs = np.zeros(n, dtype=np.int64)
    for index in np.unique(which):
        interface = interfaces[index]
        _check_link(interface.linktype, f"{path}: interface {index}")
        sel = which == index
        base, exponent = interface.resolution
        u = units[sel]
        if base == 10:
            ns = u * 10 ** (9 - exponent) if exponent <= 9 else u // 10 ** (exponent - 9)
        else:
            ns = (u >> exponent) * 1_000_000_000 + (((u & ((1 << exponent) - 1)) * 1_000_000_000) >> exponent)
        times[sel] = ns + interface.offset * 1_000_000_000
        fcs[sel] = interface.fcs
    flags = np.array(flag_list, dtype=np.int64)
    override = (flags >> 5) & 0xF
    fcs = np.where(override > 0, override, fcs)
    resolution = _resolution_text(interfaces[0].resolution) if interfaces else "1 us"
    if len({i.resolution for i in interfaces}) > 1:
        resolution += " (interfaces differ)"
    blocks = np.stack([np.array(starts, dtype=np.int64), np.array(stops, dtype=np.int64),
                       np.array(packet_of, dtype=np.int64)], axis=1) if starts else np.zeros((0, 3), dtype=np.int64)
    return Capture(path, "pcapng", data, np.array(offsets, dtype=np.int64), np.array(caplens, dtype=np.int64),
                   np.array(wirelens, dtype=np.int64), times, fcs, (flags >> 16) & 0xFFFF != 0, resolution,
                   blocks, np.array(big, dtype=bool), warnings)


def read_capture(path, *, fcs: int | None = None, progress=None) -> Capture:
    """Read a pcap or pcapng capture of Ethernet frames.

    Parameters
    ----------
    path : str or os.PathLike
    fcs : int or None
        FCS bytes at the end of every frame (0 or 4), overriding what the capture declares; None: as declared.
    progress : callable or None
        Called with the bytes read so far, now and then.

    Returns
    -------
    Capture

    Raises
    ------
    TypeError
        If ``path`` is not a path.
    ValueError
        If the file is not a pcap or pcapng capture of Ethernet frames, or ``fcs`` is not 0 or 4.
    OSError
        If it cannot be read.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, not {path!r}")
    if fcs not in (None, 0, 4):
        raise ValueError(f"fcs must be 0 or 4 bytes (or None: as the capture declares), not {fcs!r}")
    path = Path(path)
    data = _map(path)
    if len(data) < 12:
        raise ValueError(f"{path}: too short for a pcap or pcapng file ({len(data)} bytes)")
    import dpkt
    try:
        if struct.unpack_from("<I", data.data, 0)[0] == 0x0A0D0D0A:
            capture = _read_pcapng(path, data, progress)
        else:
            capture = _read_pcap(path, data, progress)
    except (dpkt.Error, struct.error) as error:
        raise ValueError(f"{path}: malformed capture ({type(error).__name__}: {error})") from None
    if fcs is not None:
        capture.fcs[:] = fcs
    return capture


# Writing ----------------------------------------------------------------------------------------------------------

def _with_comment(block: bytes, little: bool, comment: bytes) -> bytes:
    """A pcapng (enhanced) packet block with an opt_comment added to its options."""
    e = "<" if little else ">"
    kind, length = struct.unpack_from(e + "II", block, 0)
    caplen = struct.unpack_from(e + "I", block, 20)[0]
    options = 28 + caplen + (-caplen % 4)
    kept = b"".join(block[at - 4:at + size + (-size % 4)]
                    for _, at, size in _options(block, options, length - 4, little))
    body = block[8:options] + kept + struct.pack(e + "HH", 1, len(comment)) + comment + bytes(-len(comment) % 4) \
        + struct.pack(e + "HH", 0, 0)
    total = len(body) + 12
    return struct.pack(e + "II", kind, total) + body + struct.pack(e + "I", total)


def write_capture(capture: Capture, path, keep: np.ndarray, mark: np.ndarray | None = None) -> int:
    """Write the capture's own records for the kept packets, in order (marked ones with a comment, pcapng).

    Parameters
    ----------
    capture : Capture
    path : str or os.PathLike
    keep : numpy.ndarray of bool
        One per packet.
    mark : numpy.ndarray of bool or None
        Packets to mark (pcapng only: an ``opt_comment`` "apbbf dedup: duplicate" on their packet block).

    Returns
    -------
    int
        Packets written.

    Raises
    ------
    ValueError
        If the flags do not have one entry per packet, or marks are asked for on a pcap file.
    """
    keep = np.asarray(keep, dtype=bool)
    if keep.shape != (len(capture),):
        raise ValueError(f"keep must have one flag per packet ({len(capture)}), not shape {keep.shape}")
    marking = mark is not None and bool(np.any(mark))
    if marking and capture.format != "pcapng":
        raise ValueError("pcap records have no room for a mark: use a pcapng capture, or --action drop or count")
    blocks = capture.blocks
    packet = blocks[:, 2]
    wanted = np.append(keep, True)[packet]                   # packet -1 (not a packet): kept
    buffer = capture.data
    with open(path, "wb") as out:
        if not marking:
            # runs of consecutive kept blocks, one write each
            chosen = blocks[wanted]
            if len(chosen):
                breaks = np.flatnonzero(chosen[1:, 0] != chosen[:-1, 1]) + 1
                firsts = np.concatenate([[0], breaks])
                lasts = np.concatenate([breaks - 1, [len(chosen) - 1]])
                for a, b in zip(chosen[firsts, 0].tolist(), chosen[lasts, 1].tolist()):
                    out.write(buffer[a:b].data)
        else:
            marked = np.append(np.asarray(mark, dtype=bool), False)[packet]
            for (start, stop, _), take, tagged, big in zip(blocks.tolist(), wanted.tolist(), marked.tolist(),
                                                            capture.big_endian.tolist()):
                if take:
                    block = buffer[start:stop].tobytes()
                    out.write(_with_comment(block, not big, _MARK_COMMENT) if tagged else block)
    return int(np.count_nonzero(keep))


# Sizing -----------------------------------------------------------------------------------------------------------

def parse_window(text: str) -> int:
    """Nanoseconds in a duration such as ``1ms``, ``600us``, ``10ns`` or ``0.5s``.

    Raises
    ------
    ValueError
        If ``text`` is not a positive duration of at least 1 ns.
    """
    from .cli import duration
    seconds = duration(text)
    ns = round(seconds * 1e9)
    if ns < 1:
        raise ValueError(f"a duration must be at least 1 ns, not {text!r}")
    return ns


def peak_count(ticks: np.ndarray, span: int) -> int:
    """The most ticks values within any ``span + 1`` consecutive ticks (keys a window must hold at once)."""
    if not len(ticks):
        return 0
    first = np.searchsorted(ticks, ticks - span, side="left")
    return int((np.arange(len(ticks)) - first + 1).max())


def size_filter(ticks: np.ndarray, span: int, fp: float, *, burst: float = 2.0, time_width: int | None = None):
    """The filter for a capture (module documentation): ``(config, sizing)``.

    Parameters
    ----------
    ticks : numpy.ndarray of int64
        The checked frames' ticks, non-decreasing.
    span : int
        Ticks.
    fp : float
        Target worst-case false-positive rate at the capture's peak rate.
    burst : float
        Rates up to ``burst`` times the peak keep the span (>= 1).
    time_width : int or None
        Bits of the filter's times; default the smallest of 32, 48, 64 above the span and the longest gap.

    Returns
    -------
    config : Config
    sizing : dict
        ``peak_frames_per_span``, ``rate_per_tick`` (the planned rate: the peak divided by the span),
        ``predicted_fp`` (worst case at that rate), ``burst``, ``longest_gap_ticks``.

    Raises
    ------
    ValueError
        If no configuration meets the targets.
    """
    from .model.timeanalysis import solve_timed, timed_analysis
    peak = max(1, peak_count(ticks, span))
    rate = peak / span
    gap = int(np.diff(ticks).max()) if len(ticks) > 1 else 0
    if time_width is None:
        time_width = next((w for w in (32, 48, 64) if span + gap < 1 << (w - 1)), 64)
    config = solve_timed(fp, span, rate, burst=burst, time_width=time_width)
    return config, {"peak_frames_per_span": peak, "rate_per_tick": rate,
                    "predicted_fp": timed_analysis(config, rate)["fp"], "burst": burst, "longest_gap_ticks": gap}


# The run ----------------------------------------------------------------------------------------------------------

class _Bar:
    """A tqdm bar on stderr when wanted (a terminal, not --quiet), else nothing."""

    def __init__(self, enabled: bool, total: int, desc: str, unit: str):
        self._bar = None
        if enabled:
            from tqdm import tqdm
            self._bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, leave=False,
                             delay=0.5)
        self._done = 0

    def to(self, done: int) -> None:
        if self._bar is not None:
            self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def dedup_capture(path, *, window: int = 1_000_000, key: str = "l3l4", fp: float = 1e-4, action: str = "drop",
                  tick: int = 1000, burst: float = 2.0, output=None, fcs: int | None = None,
                  time_width: int | None = None, engine: str = "bulk", progress: bool = False) -> dict:
    """Run the de-duplication model on a capture and compare it with the exact answer.

    Parameters
    ----------
    path : str or os.PathLike
        A pcap or pcapng capture.
    window : int
        The window in nanoseconds.
    key : str
        A key specification (:meth:`apbbf.model.packet.KeySpec.parse`).
    fp : float
        Target false-positive rate of the filter.
    action : {"drop", "mark", "count"}
    tick : int
        Nanoseconds per tick.
    burst : float
        See :func:`size_filter`.
    output : str or os.PathLike or None
        Where to write the frames the datapath forwards.
    fcs : int or None
        FCS bytes, overriding the capture's declaration.
    time_width : int or None
        See :func:`size_filter`.
    engine : {"bulk", "model"}
        The filter's evaluation (:class:`apbbf.model.dedup.Dedup`).
    progress : bool
        Show progress bars on stderr.

    Returns
    -------
    dict
        The report (``capture``, ``key``, ``window``, ``filter``, ``counters``, ``exact``, ``comparison``,
        ``seconds``).

    Raises
    ------
    TypeError, ValueError, OSError
        On bad arguments or captures.
    """
    from .model.config import check_integer
    from .model.dedup import Dedup, ExactWindow, span_ticks, to_ticks
    from .model.packet import FrameBatch, KeySpec, frame_keys

    spec = KeySpec.parse(key)
    check_integer("window", window, range(1, 1 << 63))
    check_integer("tick", tick, range(1, 1 << 63))
    if action not in ("drop", "mark", "count"):
        raise ValueError(f"action must be drop, mark or count, not {action!r}")
    seconds = {}
    clock = time.perf_counter()
    size = os.path.getsize(path)
    bar = _Bar(progress, size, "read", "B")
    capture = read_capture(path, fcs=fcs, progress=bar.to)
    bar.close()
    if output is not None and action == "mark" and capture.format != "pcapng":
        raise ValueError("pcap records have no room for a mark: use a pcapng capture, or --action drop or count")
    n = len(capture)
    ticks, reordered = to_ticks(capture.times, tick)
    span = span_ticks(window, tick)
    errored = capture.errored
    checked = ~errored
    seconds["read"] = time.perf_counter() - clock

    clock = time.perf_counter()
    config, sizing = size_filter(ticks[checked], span, fp, burst=burst, time_width=time_width)
    seconds["size"] = time.perf_counter() - clock

    pipeline = Dedup(config, spec, action, engine=engine)
    retain = span + (config.k + 1) * config.shift_interval
    exact = ExactWindow(span, retain)
    batch = FrameBatch(capture.data, capture.offsets, capture.frame_lengths)
    keys = np.zeros(n, dtype=np.uint64)
    exact_dup = np.zeros(n, dtype=bool)
    exact_age = np.full(n, -1, dtype=np.int64)
    for stage in ("keys", "exact", "filter"):
        seconds[stage] = 0.0
    bar = _Bar(progress, n, "dedup", "frame")
    chunk = 1 << 16
    duplicate = np.zeros(n, dtype=bool)
    forward = np.ones(n, dtype=bool)
    mark = np.zeros(n, dtype=bool)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        clock = time.perf_counter()
        part = batch[lo:hi]
        keys[lo:hi], texts = frame_keys(part, spec, messages=True)
        seconds["keys"] += time.perf_counter() - clock
        clock = time.perf_counter()
        ok = np.flatnonzero(checked[lo:hi])
        dup, age = exact.run([texts[i] for i in ok.tolist()], ticks[lo:hi][ok])
        exact_dup[lo + ok], exact_age[lo + ok] = dup, age
        del texts
        seconds["exact"] += time.perf_counter() - clock
        clock = time.perf_counter()
        result = pipeline.run(part, ticks[lo:hi], errored=errored[lo:hi], keys=keys[lo:hi])
        duplicate[lo:hi], forward[lo:hi], mark[lo:hi] = result.duplicate, result.forward, result.mark
        seconds["filter"] += time.perf_counter() - clock
        bar.to(hi)
    bar.close()

    written = None
    if output is not None:
        clock = time.perf_counter()
        written = write_capture(capture, output, forward, mark if action == "mark" else None)
        seconds["write"] = time.perf_counter() - clock

    found = duplicate & exact_dup
    false_positive = duplicate & ~exact_dup
    late = false_positive & (exact_age > span)
    missed = exact_dup & ~duplicate
    fresh = checked & (exact_age < 0)             # no copy within the filter's longest memory
    measured_fp = float(np.count_nonzero(duplicate & fresh) / max(1, np.count_nonzero(fresh)))
    filt = pipeline.filter
    c = config
    times = capture.times
    report = {
        "capture": {
            "path": str(capture.path), "format": capture.format, "resolution": capture.resolution,
            "frames": n, "bytes": int(capture.caplens.sum()), "errored": int(errored.sum()),
            "truncated": int(np.count_nonzero(capture.caplens < capture.wirelens)),
            "fcs_removed": int(np.count_nonzero(capture.frame_lengths < capture.caplens)),
            "reordered_timestamps": reordered,
            "duration_seconds": float((times.max() - times.min()) / 1e9) if n else 0.0,
            "warnings": capture.warnings,
        },
        "key": str(spec),
        "window": {"nanoseconds": window, "tick_nanoseconds": tick, "span_ticks": span},
        "filter": {
            "k": c.k, "l": c.l, "block_bits": c.block_bits, "block_hashes": c.block_hashes,
            "segment_blocks": c.segment_blocks, "key_width": c.key_width, "seed": c.seed, "span": c.span,
            "time_width": c.time_width, "extra_segments": c.extra_segments,
            "physical_segments": c.physical_segments, "generation": c.generation,
            "shift_interval": c.shift_interval, "memory_bits": c.hardware_memory_bits, "fp_target": fp, **sizing,
            "shifts": filt.shifts, "overflows": filt.overflows, "restarts": filt.restarts, "engine": engine,
        },
        "action": action,
        "counters": pipeline.counters.as_dict(),
        "exact": {"duplicates": int(exact_dup.sum()), "checked": int(checked.sum())},
        "comparison": {
            "duplicates_found": int(found.sum()),
            "false_positives": int(false_positive.sum()),
            "false_positives_late_copies": int(late.sum()),
            "frames_without_recent_copy": int(fresh.sum()),
            "false_positive_rate": measured_fp,
            "duplicates_missed": int(missed.sum()),
        },
        "output": None if output is None else {"path": str(output), "frames": written},
        "seconds": {name: round(value, 3) for name, value in seconds.items()},
    }
    report["seconds"]["total"] = round(sum(seconds.values()), 3)
    return report


# Command line -----------------------------------------------------------------------------------------------------

_KEY_HELP = """\
key specification (default l3l4):
  l3l4     the IPv4/IPv6 packet as its length field gives it (no VLAN tags, padding or FCS), with DSCP/ECN,
           TTL and header checksum (IPv4) or traffic class and hop limit (IPv6) masked; other frames as frame
  frame    every byte of the frame, FCS excluded (the length is part of the key)
  RANGES   ranges separated by commas, each BASE:OFFSET+LENGTH[/MASK]:
             BASE   frame (byte 0 of the frame) or l3 (the IP header, after up to two VLAN tags)
             LENGTH bytes, or * for "to the end" (of the frame, or of the IP packet for l3)
             MASK   hex, two digits per byte, ANDed with the range's first bytes (at most 64)
           e.g. frame:0+12,l3:0+* (the MAC addresses and the IP packet, nothing masked)
           Ranges of one base increase and do not overlap; frame ranges come first and, with l3 ranges, end by
           byte 14. Frames that are not IPv4/IPv6 use them if all are frame ranges, else frame.
  CLASS=RANGES;...  a recipe per class (ipv4, ipv6, other; RANGES may be frame or l3l4), the rest frame,
           e.g. "ipv4=l3:0+20/ff00ffffffffffff00ff0000,l3:20+*;ipv6=l3l4"
The key is CRC-64/XZ of the selected bytes (docs/dedup.md, apbbf.model.packet)."""


def _ns(text: str) -> int:
    try:
        return parse_window(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _print_report(report: dict) -> None:
    cap, f, cnt, cmp = report["capture"], report["filter"], report["counters"], report["comparison"]
    print(f"capture  {cap['path']}: {cap['format']}, {cap['resolution']} timestamps, {cap['frames']} frames, "
          f"{cap['bytes']} bytes, {cap['duration_seconds']:.6g} s")
    extra = [f"{cap[name]} {name.replace('_', ' ')}" for name in ("errored", "truncated", "fcs_removed",
                                                                   "reordered_timestamps") if cap[name]]
    if extra:
        print(f"         {', '.join(extra)}")
    for warning in cap["warnings"]:
        print(f"         warning: {warning}")
    w = report["window"]
    print(f"key      {report['key']}")
    print(f"window   {w['nanoseconds'] / 1e6:g} ms = {w['span_ticks']} ticks of {w['tick_nanoseconds']} ns")
    print(f"sizing   peak {f['peak_frames_per_span']} frames per span ({f['rate_per_tick']:.4g} per tick), burst "
          f"{f['burst']:g}x, fp target {f['fp_target']:g} (predicted {f['predicted_fp']:.3g} at the peak)")
    print(f"config   Config(k={f['k']}, l={f['l']}, block_bits={f['block_bits']}, block_hashes={f['block_hashes']}, "
          f"segment_blocks={f['segment_blocks']}, span={f['span']}, time_width={f['time_width']}, "
          f"extra_segments={f['extra_segments']}): {f['physical_segments']} segments, generation {f['generation']}, "
          f"shift interval {f['shift_interval']} ticks, {f['memory_bits']} bits")
    print(f"filter   {f['shifts']} shifts, {f['overflows']} overflows, {f['restarts']} restarts ({f['engine']})")
    print(f"counters frames {cnt['frames']}, duplicates {cnt['duplicates']}, dropped {cnt['dropped']}, "
          f"unchecked {cnt['unchecked']}, errored {cnt['errored']} (action {report['action']})")
    ex = report["exact"]
    print(f"exact    {ex['duplicates']} duplicates among {ex['checked']} checked frames (full keys, same window)")
    print(f"result   duplicates found {cmp['duplicates_found']} of {ex['duplicates']}, missed "
          f"{cmp['duplicates_missed']}; false positives {cmp['false_positives']}: "
          f"{cmp['false_positives_late_copies']} copies just older than the window, "
          f"{cmp['false_positives'] - cmp['false_positives_late_copies']} of "
          f"{cmp['frames_without_recent_copy']} frames without a recent copy ({cmp['false_positive_rate']:.3g})")
    if report["output"]:
        print(f"output   {report['output']['frames']} frames to {report['output']['path']}")
    print("seconds  " + ", ".join(f"{name} {value:.2f}" for name, value in report["seconds"].items()))
    if cmp["duplicates_missed"]:
        print(f"MISSED   {cmp['duplicates_missed']} duplicates within the window were not found"
              + (f": the filter overflowed {f['overflows']} times (give a larger --burst)" if f["overflows"] else ""))


def _dedup(args) -> int:
    try:
        report = dedup_capture(args.capture, window=args.window, key=args.key, fp=args.fp, action=args.action,
                               tick=args.tick, burst=args.burst, output=args.output, fcs=args.fcs,
                               time_width=args.time_width, engine=args.engine,
                               progress=not args.quiet and sys.stderr.isatty())
    except OSError as error:
        raise ValueError(str(error)) from None
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_report(report)
    return 1 if report["comparison"]["duplicates_missed"] else 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``dedup`` subcommand to ``subparsers`` (see :func:`apbbf.cli.register`)."""
    parser = subparsers.add_parser(
        "dedup", help="de-duplicate a pcap/pcapng capture with the model and compare with the exact answer",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Run the packet de-duplication model (key extraction, the time-windowed filter sized from the capture's "
            "own peak rate, the action) on a pcap or pcapng capture of Ethernet frames, write the frames it "
            "forwards (-o: same format, timestamp resolution and order), and compare with an exact de-duplication "
            "over the same window. Exit status 1 if a duplicate within the window was missed.", 100),
        epilog=_KEY_HELP)
    parser.add_argument("capture", help="pcap or pcapng file")
    parser.add_argument("--window", type=_ns, default=1_000_000, metavar="T",
                        help="time window, e.g. 1ms, 600us, 10ms (default 1ms)")
    parser.add_argument("--key", default="l3l4", metavar="SPEC", help="l3l4 (default), frame, or RANGES (below)")
    parser.add_argument("--fp", type=float, default=1e-4, metavar="E",
                        help="target false-positive rate at the capture's peak rate (default 1e-4)")
    parser.add_argument("--action", choices=("drop", "mark", "count"), default="drop",
                        help="drop duplicates, mark them (pcapng comment), or count only (default drop)")
    parser.add_argument("-o", "--output", default=None, metavar="OUT", help="write the forwarded frames here")
    parser.add_argument("--tick", type=_ns, default=1000, metavar="T",
                        help="the filter's time unit, e.g. 1us (default), 100ns, 1ns")
    parser.add_argument("--burst", type=float, default=2.0, metavar="X",
                        help="rates up to X times the peak keep the window (default 2)")
    parser.add_argument("--fcs", type=int, choices=(0, 4), default=None,
                        help="FCS bytes at the end of each frame (default: as the capture declares)")
    parser.add_argument("--time-width", type=int, default=None, metavar="BITS",
                        help="bits of the filter's times (default 32, or 48/64 for long gaps)")
    parser.add_argument("--engine", choices=("bulk", "model"), default="bulk",
                        help="bulk: the filter evaluated in bulk (default); model: TimedAPBBF.run (slow, the "
                             "reference)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=_dedup)
    return parser


def main(argv=None) -> int:
    """``python -m apbbf.dedup CAPTURE ...``: the ``apbbf dedup`` subcommand on its own."""
    parser = argparse.ArgumentParser(prog="python -m apbbf.dedup")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["dedup"] + list(sys.argv[1:] if argv is None else argv))
    try:
        return args.func(args)
    except (TypeError, ValueError) as error:
        parser.exit(2, f"apbbf dedup: error: {error}\n")


if __name__ == "__main__":
    sys.exit(main())
