"""Capture files in and out for ``apbbf dedup``: pcap and pcapng, every link type, compressed, from a pipe.

Reading
-------
A pcap file is read with struct (its header, then a loop over the record headers: :mod:`apbbf.records`), a pcapng
file with dpkt's block headers (:mod:`dpkt.pcapng`) and a struct loop over its blocks, keeping every timestamp as
an integer at the capture's resolution (converted to nanoseconds exactly, or rounded down for binary resolutions
finer than 1 ns), every record's link type and every record's place in the file. A plain file is memory-mapped (:func:`read_capture`); standard input is read as it
arrives, in chunks of whole records (:func:`iter_capture`); a file or pipe whose bytes start with the gzip,
Zstandard or LZ4 frame magic is decompressed (whatever its name, as Wireshark does; Zstandard and LZ4 need the
``zstandard`` and ``lz4`` packages, the ``captures`` extra).

The FCS is taken off when the capture says it is there (pcap's link-type FCS bits, pcapng's ``if_fcslen`` or
``epb_flags``; ``fcs`` overrides), so the key depends on the frame, not on how it was captured. A frame cut by the
capture's snap length is keyed on the bytes captured. pcapng ``epb_flags`` link-layer errors make a frame
*errored*.

Writing
-------
The output is the input's own records: same format, byte order, timestamp resolution, options and order, with the
dropped frames' records left out, or a comment option added to marked frames' enhanced packet blocks (pcapng
only). Several inputs (a ring of files, in the order given) go to one output: pcap files must then share their
header's format (magic, version, link type), whose first copy heads the output; pcapng files are written one
section after another. An output named ``-`` is standard output; one ending ``.gz``, ``.zst`` or ``.lz4`` is
compressed.
"""

from __future__ import annotations

import gzip
import io
import mmap
import os
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .model.packet import linktype_name
from .model.compiled import kernels
from .records import check_walk, walk_pcap

__all__ = ["Capture", "CorruptCapture", "read_capture", "read_captures", "iter_capture", "iter_captures",
           "write_capture", "write_captures", "write_chunk", "open_output", "STDIO", "COMPRESSED_SUFFIXES",
           "LONGEST_SNAP"]

#: The file name of standard input and output.
STDIO = "-"
#: Output suffixes that are written compressed.
COMPRESSED_SUFFIXES = (".gz", ".zst", ".lz4")
_MARK_COMMENT = b"apbbf dedup: duplicate"
_GZIP_MAGIC, _ZSTD_MAGIC, _LZ4_MAGIC = b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"\x04\x22\x4d\x18"



#: pcap magic numbers (read big-endian): (little-endian, nanosecond timestamps, modified format: 24-byte record
#: headers)
_PCAP_MAGICS = {0xA1B2C3D4: (False, False, False), 0xA1B23C4D: (False, True, False), 0xA1B2CD34: (False, False, True),
                0xD4C3B2A1: (True, False, False), 0x4D3CB2A1: (True, True, False), 0x34CDB2A1: (True, False, True)}

#: The longest captured length a pcap record may have beyond its file's snap length (tcpdump's and Wireshark's
#: largest, 256 KiB): a record claiming more is corrupt.
LONGEST_SNAP = 1 << 18


# Reading ----------------------------------------------------------------------------------------------------------

class CorruptCapture(ValueError):
    """A record that cannot be a record (a pcap captured length beyond any snap length, a pcapng block length
    that is not one) in the middle of a capture: the records before it are good.

    Attributes
    ----------
    offset : int
        The corrupt record's byte offset in the (decompressed) capture.
    report : dict or None
        Set by :func:`apbbf.dedup.dedup_capture`: the report of the frames before it (which were written).
    """

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset
        self.report = None


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
    epb_flags : numpy.ndarray of int64
        pcapng: each packet's flags option (``epb_flags``; an obsolete packet block's ``pack_flags``, the same
        bits), 0 where it has none: direction (bits 0-1), reception type (2-4), FCS length (5-8), link-layer errors
        (16-31). pcap: 0. The output keeps them (its records are the input's own bytes, options included).
    resolution : str
        The timestamp resolution, e.g. ``"1 us"``, ``"1 ns"``, ``"2^-20 s"`` (pcapng: of the first interface).
    blocks : numpy.ndarray of int64, shape (n, 3)
        Every block (pcap: file header and records) as ``(start, end, packet)`` in file order; packet -1 for
        blocks that are not packets.
    big_endian : numpy.ndarray of bool
        Per block, the byte order of its section (pcapng; pcap: the file's).
    linktypes : numpy.ndarray of int64
        Each packet's link type (pcap: the file's; pcapng: its interface's).
    header_linktype : int
        pcap: the file's link type; pcapng: the first interface's (1 if none).
    source : str
        Where the bytes came from: ``"file"``, ``"stdin"``, and ``"gzip"``, ``"zstd"`` or ``"lz4"`` if
        decompressed.
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
    linktypes: np.ndarray
    header_linktype: int = 1
    warnings: list = field(default_factory=list)
    source: str = "file"
    #: a :class:`CorruptCapture` at the end of these records, if the parse stopped at one
    corrupt: object = None
    epb_flags: np.ndarray = None

    def __post_init__(self):
        if self.epb_flags is None:
            self.epb_flags = np.zeros(len(self.offsets), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def linktype(self) -> int:
        """The link type of every packet (pcap: the file's; pcapng: its interfaces', which must agree).

        Raises
        ------
        ValueError
            If a pcapng capture's interfaces have different link types.
        """
        if len(self.linktypes) and self.linktypes.min() == self.linktypes.max():
            return int(self.linktypes[0])
        kinds = np.unique(self.linktypes).tolist()
        if len(kinds) > 1:
            raise ValueError(f"{self.path}: interfaces with different link types ("
                             f"{', '.join(map(linktype_name, kinds))}) in one capture: apbbf dedup keys one link "
                             f"type at a time (split the capture by interface first, e.g. with tshark -Y "
                             f"frame.interface_id==N)")
        return kinds[0] if kinds else self.header_linktype

    @property
    def header(self) -> bytes:
        """pcap: the file header (24 bytes); pcapng: b"" (every section carries its own)."""
        if self.format != "pcap":
            return b""
        start, stop, _ = self.blocks[0].tolist()
        return self.data[start:stop].tobytes()

    @property
    def frame_lengths(self) -> np.ndarray:
        """Bytes of each frame without its FCS: the captured bytes, less the FCS if it was captured."""
        return np.minimum(self.caplens, np.maximum(self.wirelens - self.fcs, 0))


def _malformed() -> tuple:
    """What a malformed capture raises as it is parsed: struct's error, and dpkt's once dpkt is in use (pcapng
    blocks; pcap files are read without it)."""
    dpkt = sys.modules.get("dpkt")
    return (struct.error,) if dpkt is None else (struct.error, dpkt.Error)


def _decompress(data, path) -> tuple[np.ndarray, str | None]:
    """The bytes of a gzip, Zstandard or LZ4 frame stream, decompressed (else as they are)."""
    head = bytes(data[:4])
    try:
        if head[:2] == _GZIP_MAGIC:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                return np.frombuffer(f.read(), dtype=np.uint8), "gzip"
        if head == _ZSTD_MAGIC:
            try:
                import zstandard
            except ImportError:
                raise ValueError(f"{path} is Zstandard-compressed: pip install zstandard (the captures extra), or "
                                 f"decompress it with zstd -d") from None
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as f:
                return np.frombuffer(f.read(), dtype=np.uint8), "zstd"
        if head == _LZ4_MAGIC:
            try:
                import lz4.frame
            except ImportError:
                raise ValueError(f"{path} is LZ4-compressed: pip install lz4 (the captures extra), or decompress "
                                 f"it with lz4 -d") from None
            return np.frombuffer(lz4.frame.decompress(bytes(data)), dtype=np.uint8), "lz4"
    except (OSError, EOFError, RuntimeError) as error:
        raise ValueError(f"{path}: the compressed stream is damaged ({type(error).__name__}: {error})") from None
    return data, None


def _load(path) -> tuple[np.ndarray, str]:
    """A capture's bytes (a plain file memory-mapped, standard input read to its end, compressed ones
    decompressed) and where they came from."""
    if str(path) == STDIO:
        data, source = np.frombuffer(sys.stdin.buffer.read(), dtype=np.uint8), "stdin"
    else:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return np.zeros(0, dtype=np.uint8), "file"
            data, source = np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.uint8), "file"
    data, compression = _decompress(data, path)
    return data, compression or source


def _fcs_option(value: int) -> int:
    # if_fcslen is given in bits by the specification's text and in bytes by its example and by writers: an
    # Ethernet FCS is 4 bytes (32 bits) either way
    if value in (0, 4, 32):
        return 4 if value else 0
    raise ValueError(f"if_fcslen {value} is not an Ethernet FCS (0 or 4 bytes)")


def _read_pcap(path: Path, data: np.ndarray, progress, origin: int = 0, log=None) -> Capture:
    if len(data) < 24:
        raise ValueError(f"{path}: too short for a pcap file ({len(data)} bytes)")
    raw = bytes(data[:24])
    magic = struct.unpack_from(">I", raw)[0]
    if magic not in _PCAP_MAGICS:
        raise ValueError(f"{path}: not a pcap file (magic 0x{magic:08x})")
    little, nano, modified = _PCAP_MAGICS[magic]
    order = "<" if little else ">"
    # the file header: magic, version (2 x 16 bits), zone, sigfigs, snap length, link type
    snaplen, linktype_field = struct.unpack_from(order + "II", raw, 16)
    linktype = linktype_field & 0xFFFF
    fcs = 2 * (linktype_field >> 28) if linktype_field & 0x04000000 else 0
    caplen_at = struct.Struct(order + "I").unpack_from
    size = 24 if modified else 16                           # record header bytes
    snap = max(int(snaplen), LONGEST_SNAP)
    buffer = data.data if len(data) else b""
    end = len(data)
    big = order != "<"
    warnings = []
    corrupt = None
    starts = None
    if log is not None and log.replaying:
        # the second pass over a capture: the first pass's starts, checked
        proposed = log.take((str(path), origin))
        if proposed is not None:
            stop = check_walk(data, proposed, 24, end, snap, big, size)
            if stop is not None:
                starts, pos = proposed, stop
    if starts is None:
        starts, pos = walk_pcap(data, 24, end, snap, big, progress, size)
        starts = np.array(starts, dtype=np.int64)
        if log is not None and not log.replaying:
            log.add((str(path), origin), starts)
    if pos + size <= end:
        caplen = caplen_at(buffer, pos + 8)[0]
        if caplen > snap:
            corrupt = CorruptCapture(f"{path}: the record at byte {origin + pos} is corrupt (captured length "
                                     f"{caplen} beyond the snap length {snaplen}): the {len(starts)} records "
                                     f"before it were read", origin + pos)
        else:
            warnings.append(f"the last record is cut short at byte {origin + end} (of {origin + pos + size + caplen}): "
                            f"ignored")
    elif pos < end:
        warnings.append(f"{end - pos} bytes after the last record ignored")
    starts = np.array(starts, dtype=np.int64)
    n = len(starts)
    # each record header's first four 32-bit fields: seconds, fraction, captured and original lengths
    fields = data[starts[:, None] + np.arange(16)].view(("<" if order == "<" else ">") + "u4").astype(np.int64) \
        if n else np.zeros((0, 4), dtype=np.int64)
    secs, fracs, caplens, wirelens = fields.T
    times = secs * 1_000_000_000 + fracs * (1 if nano else 1000)
    blocks = np.concatenate([[[0, 24, -1]], np.stack([starts, starts + size + caplens, np.arange(n)], axis=1)]) \
        if n else np.array([[0, 24, -1]], dtype=np.int64)
    capture = Capture(path, "pcap", data, starts + size, caplens, wirelens, times,
                      np.full(n, fcs, dtype=np.int64), np.zeros(n, dtype=bool), "1 ns" if nano else "1 us",
                      blocks.astype(np.int64), np.full(len(blocks), not little), np.full(n, linktype, dtype=np.int64),
                      linktype, warnings)
    capture.corrupt = corrupt
    return capture


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


def _u32(data: np.ndarray, at: np.ndarray, big: np.ndarray) -> np.ndarray:
    """The 32-bit words at byte offsets ``at`` of ``data``, each big-endian where ``big`` is set, as int64."""
    octets = data[np.asarray(at, dtype=np.int64)[:, None] + np.arange(4)].astype(np.int64)
    little = octets[:, 0] | octets[:, 1] << 8 | octets[:, 2] << 16 | octets[:, 3] << 24
    swapped = octets[:, 3] | octets[:, 2] << 8 | octets[:, 1] << 16 | octets[:, 0] << 24
    return np.where(big, swapped, little)


def _u16(data: np.ndarray, at: np.ndarray, big: np.ndarray) -> np.ndarray:
    """The 16-bit words at byte offsets ``at`` of ``data``, each big-endian where ``big`` is set, as int64."""
    octets = data[np.asarray(at, dtype=np.int64)[:, None] + np.arange(2)].astype(np.int64)
    return np.where(big, octets[:, 0] << 8 | octets[:, 1], octets[:, 0] | octets[:, 1] << 8)


def _packet_flags(data: np.ndarray, where: np.ndarray, stops: np.ndarray, caplens: np.ndarray,
                  big: np.ndarray) -> np.ndarray:
    """Each packet block's flags option (code 2: ``epb_flags``, or the obsolete packet block's ``pack_flags``,
    which has the same bits), 0 where it has none: the options after the packet data (padded to 32 bits) walked
    over arrays, one option of every packet block at a time. The options end at ``opt_endofopt`` or at the
    block's trailing length; an option running past that ends them too. Of two flags options the last counts.

    Parameters
    ----------
    data : numpy.ndarray of uint8
    where, stops : numpy.ndarray of int64
        Each packet block's start and end (after its trailing length).
    caplens : numpy.ndarray of int64
        Each packet's captured length.
    big : numpy.ndarray of bool
        Each packet block's byte order.
    """
    flags = np.zeros(len(where), dtype=np.int64)
    pos = where + 28 + caplens + (-caplens % 4)
    end = stops - 4
    alive = np.flatnonzero(pos + 4 <= end)
    pos, end = pos[alive], end[alive]
    while len(alive):
        b = big[alive]
        code, size = _u16(data, pos, b), _u16(data, pos + 2, b)
        following = pos + 4 + size + (-size % 4)
        whole = (code != 0) & (pos + 4 + size <= end)
        mine = np.flatnonzero(whole & (code == 2) & (size == 4))
        if len(mine):
            flags[alive[mine]] = _u32(data, pos[mine] + 4, b[mine])
        more = np.flatnonzero(whole & (following + 4 <= end))
        alive, pos, end = alive[more], following[more], end[more]
    return flags


def _read_pcapng(path: Path, data: np.ndarray, progress, origin: int = 0) -> Capture:
    import dpkt
    P = dpkt.pcapng
    buffer = data.data
    end = len(data)
    pos = 0
    little = True
    interfaces: list[_Interface] = []
    section: list[int] = []                      # the current section's interfaces (global indices)
    # sections: where each starts (the one before any header first), its byte order, its interfaces
    section_starts, section_big, sections = [-1], [False], [section]
    blocks, packets = [], []
    append_block, append_packet = blocks.append, packets.append
    warnings = []
    corrupt = None
    step, mark = 1 << 24, 1 << 24
    epb, pb, shb, idb = P.PCAPNG_BT_EPB, P.PCAPNG_BT_PB, P.PCAPNG_BT_SHB, P.PCAPNG_BT_IDB
    header = struct.Struct("<II").unpack_from
    word = struct.Struct("<I").unpack_from
    # the walk from block to block is sequential: the blocks' starts here, their fields (and the packets'
    # options) below. The packet blocks between others are walked by the compiled loop when there is one
    # (:mod:`apbbf.model.compiled`); every other block, and any block it stops at, here
    fast = kernels(end)
    parts = []                                   # the packet blocks' starts the compiled walk found, in runs

    def flush():
        if blocks:
            parts.append((np.array(blocks, dtype=np.int64), np.array(packets, dtype=np.int64)))
            blocks.clear()
            packets.clear()

    while pos + 12 <= end:
        if fast is not None:
            out = np.empty(min(step, end - pos) // 12 + 2, dtype=np.int64)
            count, pos = fast.walk_pcapng(data, pos, end, pos + step, not little, out)
            if count:
                flush()
                parts.append((out[:count], out[:count]))
            if pos >= mark and progress:
                progress(pos)
                mark = pos + step
            if pos + 12 > end:
                break
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
            word = struct.Struct(e + "I").unpack_from
            kind, length = header(buffer, pos)
            section = []
            section_starts.append(pos)
            section_big.append(not little)
            sections.append(section)
        if length < 12 or length % 4 or (pos + length <= end and word(buffer, pos + length - 4)[0] != length):
            corrupt = CorruptCapture(f"{path}: the block at byte {origin + pos} is corrupt (its length {length} is not "
                                     f"a block's): the {len(packets) + sum(len(p) for _, p in parts)} packets before it were read", origin + pos)
            break
        if pos + length > end:
            warnings.append(f"block at byte {origin + pos} (length {length}) is cut short: the rest of the file "
                            f"({end - pos} bytes) is ignored")
            break
        if kind == epb or kind == pb:
            append_packet(pos)
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
        append_block(pos)
        pos += length
        if pos >= mark and progress:
            progress(pos)
            mark = pos + step
    flush()
    starts = np.concatenate([b for b, _ in parts]) if parts else np.zeros(0, dtype=np.int64)
    where = np.concatenate([p for _, p in parts]) if parts else np.zeros(0, dtype=np.int64)
    n = len(where)
    big = np.array(section_big, dtype=bool)[np.searchsorted(section_starts, starts, side="right") - 1]
    stops = starts + _u32(data, starts + 4, big)
    of_packet = np.searchsorted(section_starts, where, side="right") - 1
    packet_big = np.array(section_big, dtype=bool)[of_packet]
    kinds = _u32(data, where, packet_big)
    iface = _u32(data, where + 8, packet_big)
    iface = np.where(kinds == pb, np.where(packet_big, iface >> 16, iface & 0xFFFF), iface)
    counts = np.array([len(members) for members in sections], dtype=np.int64)
    bases = np.array([members[0] if members else 0 for members in sections], dtype=np.int64)
    wrong = np.flatnonzero(iface >= counts[of_packet])
    if len(wrong):
        at = int(wrong[0])
        raise ValueError(f"{path}: packet at byte {int(where[at])} names interface {int(iface[at])}, which its "
                         f"section does not describe")
    which = bases[of_packet] + iface
    high, low = _u32(data, where + 12, packet_big), _u32(data, where + 16, packet_big)
    caplens, wirelens = _u32(data, where + 20, packet_big), _u32(data, where + 24, packet_big)
    offsets = where + 28
    packet_of = np.full(len(starts), -1, dtype=np.int64)
    packet_of[np.searchsorted(starts, where)] = np.arange(n)
    flags = _packet_flags(data, where, stops[np.searchsorted(starts, where)], caplens, packet_big)
    # timestamps in units of the interface's resolution (below 2**63 until 2262 at 1 ns, 2038 at 2^-32 s)
    units = ((high.astype(np.uint64) << np.uint64(32)) | low.astype(np.uint64)).astype(np.int64)
    times = np.zeros(n, dtype=np.int64)
    fcs = np.zeros(n, dtype=np.int64)
    linktypes = np.zeros(n, dtype=np.int64)
    for index in np.unique(which):
        interface = interfaces[index]
        sel = which == index
        base, exponent = interface.resolution
        u = units[sel]
        if base == 10:
            ns = u * 10 ** (9 - exponent) if exponent <= 9 else u // 10 ** (exponent - 9)
        else:
            ns = (u >> exponent) * 1_000_000_000 + (((u & ((1 << exponent) - 1)) * 1_000_000_000) >> exponent)
        times[sel] = ns + interface.offset * 1_000_000_000
        fcs[sel] = interface.fcs
        linktypes[sel] = interface.linktype
    override = (flags >> 5) & 0xF
    fcs = np.where(override > 0, override, fcs)
    resolution = _resolution_text(interfaces[0].resolution) if interfaces else "1 us"
    if len({i.resolution for i in interfaces}) > 1:
        resolution += " (interfaces differ)"
    blocks = np.stack([starts, stops, packet_of], axis=1) if len(starts) else np.zeros((0, 3), dtype=np.int64)
    capture = Capture(path, "pcapng", data, offsets, caplens, wirelens, times, fcs, (flags >> 16) & 0xFFFF != 0,
                      resolution, blocks, big, linktypes, interfaces[0].linktype if interfaces else 1, warnings,
                      epb_flags=flags)
    capture.corrupt = corrupt
    return capture


def read_capture(path, *, fcs: int | None = None, progress=None) -> Capture:
    """Read a pcap or pcapng capture (module documentation, "Reading").

    Parameters
    ----------
    path : str or os.PathLike
        A file, or ``-``: standard input. Compressed with gzip, Zstandard or LZ4, it is decompressed.
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
        If the file is not a pcap or pcapng capture, or ``fcs`` is not 0 or 4.
    OSError
        If it cannot be read.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, not {path!r}")
    if fcs not in (None, 0, 4):
        raise ValueError(f"fcs must be 0 or 4 bytes (or None: as the capture declares), not {fcs!r}")
    path = Path(path)
    data, source = _load(path)
    name = "standard input" if str(path) == STDIO else path
    if len(data) < 12:
        raise ValueError(f"{name}: too short for a pcap or pcapng file ({len(data)} bytes)")
    try:
        if struct.unpack_from("<I", data.data, 0)[0] == 0x0A0D0D0A:
            capture = _read_pcapng(name, data, progress)
        else:
            capture = _read_pcap(name, data, progress)
    except _malformed() as error:
        raise ValueError(f"{name}: malformed capture ({type(error).__name__}: {error})") from None
    capture.path, capture.source = path, source
    if capture.corrupt is not None:
        raise capture.corrupt
    if fcs is not None:
        capture.fcs[:] = fcs
    return capture


def _format_of(capture: Capture) -> str:
    if capture.format == "pcapng":
        return "pcapng"
    return f"pcap ({capture.resolution} timestamps, {'big' if capture.big_endian[0] else 'little'}-endian)"


def read_captures(paths, *, fcs: int | None = None, progress=None) -> list[Capture]:
    """Read several captures that make one stream (a ring written by ``tcpdump -C/-G/-W``, in the order given).

    Raises
    ------
    ValueError
        As :func:`read_capture`; also if the captures differ in link type, or in format (pcap or pcapng, and a
        pcap file's magic: resolution and byte order), so that one output cannot hold their records; or if
        standard input is named more than once.
    """
    paths = list(paths)
    if not paths:
        raise ValueError("give at least one capture")
    if sum(str(p) == STDIO for p in paths) > 1:
        raise ValueError("standard input (-) can be read once")
    captures = [read_capture(p, fcs=fcs, progress=progress) for p in paths]
    first = captures[0]
    for other in captures[1:]:
        if other.linktype != first.linktype:
            raise ValueError(f"{first.path} has link type {linktype_name(first.linktype)} and {other.path} "
                             f"{linktype_name(other.linktype)}: captures of different link types are not one "
                             f"stream (de-duplicate them one at a time)")
        _same_stream(first, other)
    return captures


# Writing ----------------------------------------------------------------------------------------------------------

class _Unclosed:
    """Standard output as a context manager that flushes it on exit and leaves it open."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, data) -> int:
        return self._stream.write(data)

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self._stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._stream.flush()


def open_output(path, *, into=None):
    """A binary file to write a capture to: ``-`` is standard output; a name ending ``.gz``, ``.zst`` or ``.lz4``
    is compressed (gzip, Zstandard, LZ4 frames). With ``into``, the bytes go to that file instead, compressed as
    ``path`` says (a temporary file renamed to ``path`` when complete).

    Raises
    ------
    ValueError
        If ``.zst`` or ``.lz4`` is asked for and its package is not installed.
    OSError
        If the file cannot be created.
    """
    if str(path) == STDIO:
        return _Unclosed(sys.stdout.buffer)
    name = str(path)
    target = str(into if into is not None else path)
    if name.endswith(".gz"):
        return gzip.open(target, "wb", compresslevel=6)
    if name.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise ValueError(f"{name}: writing Zstandard needs the zstandard package (the captures extra)") from None
        return zstandard.ZstdCompressor().stream_writer(open(target, "wb"), closefd=True)
    if name.endswith(".lz4"):
        try:
            import lz4.frame
        except ImportError:
            raise ValueError(f"{name}: writing LZ4 needs the lz4 package (the captures extra)") from None
        return lz4.frame.open(target, "wb")
    return open(target, "wb")


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


def _write_runs(out, runs: list) -> None:
    """The byte runs written in order: to a plain file straight from the buffer (``os.writev``, no copy joining
    them), else joined into one write."""
    if len(runs) == 1 or type(out) is not io.BufferedWriter or not hasattr(os, "writev"):
        out.write(runs[0] if len(runs) == 1 else b"".join(runs))
        return
    out.flush()
    fd, at = out.fileno(), 0
    while at < len(runs):
        written = os.writev(fd, runs[at:at + 1024])         # IOV_MAX runs at most; a short write resumes
        while at < len(runs) and written >= len(runs[at]):
            written -= len(runs[at])
            at += 1
        if written:
            runs[at] = runs[at][written:]


def _write_records(out, capture: Capture, keep: np.ndarray, mark: np.ndarray | None, skip: int = 0) -> None:
    """The kept records of ``capture``, and its other blocks but those that start before byte ``skip``."""
    blocks = capture.blocks
    packet = blocks[:, 2]
    wanted = np.append(keep, True)[packet]                   # packet -1 (not a packet): kept
    wanted &= blocks[:, 0] >= skip
    # runs of consecutive kept blocks, each joined into one write; a marked block is a run of its own, written
    # with its comment
    chosen = blocks[wanted]
    if not len(chosen):
        return
    view = capture.data.data
    tagged = None if mark is None or not np.any(mark) else np.append(np.asarray(mark, dtype=bool), False)[chosen[:, 2]]
    breaks = chosen[1:, 0] != chosen[:-1, 1]
    if tagged is not None:
        breaks |= tagged[1:] | tagged[:-1]
    breaks = np.flatnonzero(breaks) + 1
    firsts = np.concatenate([[0], breaks])
    lasts = np.concatenate([breaks - 1, [len(chosen) - 1]])
    runs = [view[a:b] for a, b in zip(chosen[firsts, 0].tolist(), chosen[lasts, 1].tolist())]
    if tagged is not None:
        big = capture.big_endian[wanted]
        for run in np.flatnonzero(tagged[firsts]).tolist():
            first = int(firsts[run])
            runs[run] = _with_comment(bytes(runs[run]), not big[first], _MARK_COMMENT)
    _write_runs(out, runs)


def write_captures(captures, path, keep: np.ndarray, mark: np.ndarray | None = None) -> int:
    """Write the captures' own records for the kept packets, in order, to one output (module documentation,
    "Writing"); marked ones with a comment (pcapng).

    Parameters
    ----------
    captures : list of Capture
        As :func:`read_captures` returns them (one format).
    path : str or os.PathLike
        ``-`` for standard output; ``.gz``, ``.zst``, ``.lz4`` compress.
    keep : numpy.ndarray of bool
        One per packet of all the captures, in order.
    mark : numpy.ndarray of bool or None
        Packets to mark (pcapng only: an ``opt_comment`` "apbbf dedup: duplicate" on their packet block).

    Returns
    -------
    int
        Packets written.

    Raises
    ------
    ValueError
        If the flags do not have one entry per packet, or marks are asked for on pcap.
    """
    captures = list(captures)
    total = sum(len(c) for c in captures)
    keep = np.asarray(keep, dtype=bool)
    if keep.shape != (total,):
        raise ValueError(f"keep must have one flag per packet ({total}), not shape {keep.shape}")
    if mark is not None:
        mark = np.asarray(mark, dtype=bool)
        if mark.shape != (total,):
            raise ValueError(f"mark must have one flag per packet ({total}), not shape {mark.shape}")
        if mark.any() and any(c.format != "pcapng" for c in captures):
            raise ValueError("pcap records have no room for a mark: use a pcapng capture, or --action drop or "
                             "count")
    with open_output(path) as out:
        lo = 0
        for index, capture in enumerate(captures):
            hi = lo + len(capture)
            # one file header heads a pcap output
            skip = len(capture.header) if index else 0
            _write_records(out, capture, keep[lo:hi], None if mark is None else mark[lo:hi], skip)
            lo = hi
    return int(np.count_nonzero(keep))


def write_capture(capture: Capture, path, keep: np.ndarray, mark: np.ndarray | None = None) -> int:
    """:func:`write_captures` of one capture."""
    return write_captures([capture], path, keep, mark)


# Streams ----------------------------------------------------------------------------------------------------------

def _open_stream(path):
    """Standard input (or a file) as a binary stream, decompressed if its first bytes are a compression magic:
    ``(stream, source, underlying)``; closing ``underlying`` closes the file (never standard input)."""
    raw = sys.stdin.buffer if str(path) == STDIO else open(path, "rb", buffering=0)
    head = raw.read(4)
    if str(path) != STDIO and head[:2] != _GZIP_MAGIC and head not in (_ZSTD_MAGIC, _LZ4_MAGIC):
        raw.seek(0)                 # a plain file: read straight from it, one copy a chunk
        return raw, "file", raw
    raw = io.BufferedReader(_Prefixed(head, raw, owned=str(path) != STDIO), buffer_size=1 << 20)
    if head[:2] == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=raw), "gzip", raw
    if head == _ZSTD_MAGIC:
        import zstandard
        return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True), "zstd", raw
    if head == _LZ4_MAGIC:
        import lz4.frame
        return lz4.frame.LZ4FrameFile(raw, "rb"), "lz4", raw
    return raw, "stdin" if str(path) == STDIO else "file", raw


class _Prefixed(io.RawIOBase):
    """A stream with bytes already read from it put back in front."""

    def __init__(self, head: bytes, stream, owned: bool = False):
        super().__init__()
        self._head, self._stream, self._owned = head, stream, owned

    def close(self) -> None:
        if self._owned and not self.closed:
            self._stream.close()
        super().close()

    def readable(self):
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n], self._head = self._head[:n], self._head[n:]
            return n
        data = self._stream.read1(len(buffer)) if hasattr(self._stream, "read1") else \
            self._stream.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


#: Most bytes :func:`iter_capture` reads at a time.
STREAM_CHUNK = 1 << 22
#: Bytes a stream may hold without a complete record (a pcapng block or pcap record; snap lengths are at most
#: 256 KiB) before it is taken for corrupt: the bound of the buffer.
_LONGEST_RECORD = 1 << 26


def iter_capture(path, *, fcs: int | None = None, chunk_bytes: int | None = None, log=None):
    """Read a capture in chunks as it arrives (a pipe, or a file of any size, in bounded memory): successive
    :class:`Capture` chunks of the records complete so far.

    Each chunk is the capture's header (pcap: the file header; pcapng: the current section's header and interface
    blocks) followed by whole records, so it parses as a capture of its own; its attribute ``skip`` is the length
    of that repeated prefix (0 in the first chunk): :func:`write_chunk` leaves it out. A chunk is read with
    ``read1``: whatever the pipe holds, up to ``chunk_bytes``, so a slow live capture is processed as it comes.
    A record cut short at the end (a pipe closed early) is left out, with a warning.

    With ``log`` (an :class:`apbbf.records.WalkLog`), a pcap capture's record starts are logged in it, chunk by
    chunk (a first pass), or, once it replays, taken from it and checked over arrays instead of walked again (a
    second pass over the same capture: the same chunks, the same answers).

    Raises
    ------
    CorruptCapture
        After the chunk of the records before it, at a corrupt record (:class:`CorruptCapture`: its byte offset).
    ValueError, OSError
        As :func:`read_capture`.
    """
    name = "standard input" if str(path) == STDIO else Path(path)
    stream, source, underlying = _open_stream(path)
    try:
        yield from _chunks_of(stream, source, name, path, fcs, STREAM_CHUNK if chunk_bytes is None else chunk_bytes,
                              log)
    finally:
        if str(path) != STDIO:
            stream.close()
            underlying.close()


def _chunks_of(stream, source, name, path, fcs, chunk_bytes, log=None):
    read = getattr(stream, "read1", stream.read)
    pending, prefix, first, eof = b"", b"", True, False
    at = 0                                                  # file offset of pending's first byte
    while not eof:
        try:
            data = read(chunk_bytes)
        except (OSError, EOFError) as error:
            raise ValueError(f"{name}: the compressed stream is damaged ({type(error).__name__}: {error})") from None
        eof = not data
        if not eof and len(pending) + len(data) < 64:
            pending += data
            continue
        buffer = b"".join((prefix, pending, data))              # one copy
        if len(buffer) < 12:
            if first:
                raise ValueError(f"{name}: too short for a pcap or pcapng file ({len(buffer)} bytes)")
            break
        array = np.frombuffer(buffer, dtype=np.uint8)
        origin = at - len(prefix)
        try:
            if struct.unpack_from("<I", buffer, 0)[0] == 0x0A0D0D0A:
                capture = _read_pcapng(name, array, None, origin)
            else:
                capture = _read_pcap(name, array, None, origin, log)
        except _malformed() as error:
            raise ValueError(f"{name}: malformed capture ({type(error).__name__}: {error})") from None
        consumed = int(capture.blocks[-1, 1]) if len(capture.blocks) else 0
        if not eof:
            capture.warnings = []                       # a record cut short is the next chunk's first
        # the first chunk yielded (one with a packet, or the last) carries the headers: later ones skip them
        capture.path, capture.source, capture.skip = Path(str(path)), source, 0 if first else len(prefix)
        if fcs is not None:
            capture.fcs[:] = fcs
        # (a later chunk with new blocks but no packet, a new section's header, is yielded too: it is written)
        if len(capture) or eof or capture.corrupt is not None or (not first and consumed > len(prefix)):
            yield capture
            first = False
        if capture.corrupt is not None:
            raise capture.corrupt
        # the next chunk repeats the header: pcap's file header, or the current section's header and interfaces
        if capture.format == "pcap":
            prefix = buffer[:24]
        else:
            others = np.flatnonzero(capture.blocks[:, 2] < 0)       # the blocks that are not packets
            kinds = _u32(array, capture.blocks[others, 0], capture.big_endian[others])
            shbs = np.flatnonzero(kinds == 0x0A0D0D0A)
            if len(shbs):
                chosen = others[shbs[-1]:][(np.arange(len(others) - shbs[-1]) == 0) | (kinds[shbs[-1]:] == 1)]
                prefix = b"".join(buffer[int(capture.blocks[i, 0]):int(capture.blocks[i, 1])] for i in chosen)
        at = origin + consumed
        pending = buffer[consumed:]
        if len(pending) > _LONGEST_RECORD:
            raise CorruptCapture(f"{name}: no complete record in the {len(pending)} bytes from byte {at}: not a "
                                 f"capture, or a corrupt one", at)


def iter_captures(paths, *, fcs: int | None = None, chunk_bytes: int | None = None, log=None):
    """:func:`iter_capture` of several captures that make one stream (module documentation, "Writing"), in
    order: a later pcap file's first chunk skips its file header (one heads the output).

    Raises
    ------
    ValueError
        As :func:`read_captures` (checked as each file starts); as :func:`iter_capture`.
    """
    paths = list(paths)
    if not paths:
        raise ValueError("give at least one capture")
    if sum(str(p) == STDIO for p in paths) > 1:
        raise ValueError("standard input (-) can be read once")
    first = None
    for index, path in enumerate(paths):
        started = False
        for capture in iter_capture(path, fcs=fcs, chunk_bytes=chunk_bytes, log=log):
            if not started:
                started = True
                if first is None:
                    first = capture
                else:
                    _same_stream(first, capture)
                    if capture.format == "pcap":
                        capture.skip = len(capture.header)
            yield capture


def _same_stream(first: Capture, other: Capture) -> None:
    if len(other) and len(first) and other.linktype != first.linktype:
        raise ValueError(f"{first.path} has link type {linktype_name(first.linktype)} and {other.path} "
                         f"{linktype_name(other.linktype)}: captures of different link types are not one "
                         f"stream (de-duplicate them one at a time)")
    if _format_of(other) != _format_of(first) or (first.format == "pcap" and other.header[:8] != first.header[:8]):
        raise ValueError(f"{first.path} is {_format_of(first)} and {other.path} {_format_of(other)}: one output "
                         f"holds one format (convert them first, e.g. with editcap -F pcapng)")


def write_chunk(out, capture: Capture, keep: np.ndarray, mark: np.ndarray | None = None) -> int:
    """Write one chunk of :func:`iter_capture` (or a whole capture) to an open output (:func:`open_output`):
    its kept records, and its headers unless they repeat the ones written before (``capture.skip``).

    Returns
    -------
    int
        Packets written.
    """
    keep = np.asarray(keep, dtype=bool)
    if mark is not None and np.any(mark) and capture.format != "pcapng":
        raise ValueError("pcap records have no room for a mark: use a pcapng capture, or --action drop or count")
    _write_records(out, capture, keep, mark, getattr(capture, "skip", 0))
    if isinstance(out, _Unclosed):
        out.flush()             # frames flow on down a pipe (a compressed file's flush would end its frame)
    return int(np.count_nonzero(keep))
