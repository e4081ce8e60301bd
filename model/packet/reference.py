"""The per-frame path, the reference: classify (:func:`parse`), select (:func:`select`), lay out
(:func:`message`) and hash (:func:`frame_key`) one frame, plain Python and ``amaranth.lib.crc``.
"""

from __future__ import annotations



from ..config import check_integer
from .spec import (BLOCK_BYTES, _check_bytes, _check_spec, _ETH_HEADER, ETHERTYPE_IPV4, ETHERTYPE_IPV6,
                   FrameClass, FrameInfo, KeySpec, _MAX_TAGS, TPIDS)

__all__ = ["parse", "select", "message", "frame_key", "key_of_message"]


def _frame_bytes(frame) -> bytes:
    return _check_bytes("frame", frame)


def _check_ethertype(ethertype) -> int | None:
    if ethertype is None:
        return None
    return check_integer("ethertype", ethertype, range(0, 1 << 16))


def parse(frame, ethertype: int | None = None) -> FrameInfo:
    """Classify one frame (without FCS): module documentation, "Classification".

    Parameters
    ----------
    frame : bytes
    ethertype : int or None
        None: ``frame`` is an Ethernet frame. An EtherType (0..65535): ``frame`` is a network-layer packet
        of that protocol, as a link type other than Ethernet gives it (module documentation, "Link types"):
        classification starts at its byte 0 with that EtherType.

    Raises
    ------
    TypeError
        If ``frame`` is not bytes or ``ethertype`` not an integer.
    ValueError
        If ``ethertype`` is out of range.
    """
    b = _frame_bytes(frame)
    n = len(b)
    ethertype = _check_ethertype(ethertype)
    if ethertype is None:
        if n < _ETH_HEADER:
            return FrameInfo(FrameClass.OTHER, 0, -1, 0)
        ethertype, p = int.from_bytes(b[12:14], "big"), _ETH_HEADER
    else:
        p = 0
    tags = 0
    while ethertype in TPIDS and tags < _MAX_TAGS:
        if n < p + 4:
            return FrameInfo(FrameClass.OTHER, tags, -1, 0)
        ethertype = int.from_bytes(b[p + 2:p + 4], "big")
        p += 4
        tags += 1
    if ethertype == ETHERTYPE_IPV4 and n >= p + 20 and b[p] >> 4 == 4:
        ihl = b[p] & 15
        total = int.from_bytes(b[p + 2:p + 4], "big")
        if ihl >= 5 and total >= 4 * ihl:
            return FrameInfo(FrameClass.IPV4, tags, p, min(total, n - p))
    if ethertype == ETHERTYPE_IPV6 and n >= p + 40 and b[p] >> 4 == 6:
        return FrameInfo(FrameClass.IPV6, tags, p, min(40 + int.from_bytes(b[p + 4:p + 6], "big"), n - p))
    return FrameInfo(FrameClass.OTHER, tags, -1, 0)


def select(frame, spec: KeySpec, ethertype: int | None = None) -> tuple[FrameInfo, tuple[bytes, ...]]:
    """The frame's class and its masked segments, one per range of its class's recipe (``ethertype`` as
    :func:`parse`; a ``frame`` range then starts at the packet's byte 0).

    Raises
    ------
    TypeError
        If ``frame`` is not bytes or ``spec`` not a KeySpec.
    """
    spec = _check_spec(spec)
    b = _frame_bytes(frame)
    info = parse(b, ethertype)
    segments = []
    for r in spec.recipe(info.kind):
        base, bound = (0, len(b)) if r.base == "frame" else (info.l3, info.l3 + info.ip_length)
        start = base + r.offset
        end = bound if r.length is None else start + r.length
        segment = bytearray(b[min(start, bound):min(end, bound)])
        for i, m in enumerate(r.mask[:len(segment)]):
            segment[i] &= m
        segments.append(bytes(segment))
    return info, tuple(segments)


def _pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % BLOCK_BYTES)


def message(frame, spec: KeySpec, ethertype: int | None = None) -> bytes:
    """The message of a frame (module documentation, "Message and hash"): its full key (``ethertype`` as
    :func:`parse`).

    Raises
    ------
    TypeError
        If ``frame`` is not bytes or ``spec`` not a KeySpec.
    """
    _, segments = select(frame, spec, ethertype)
    trailer = b"".join(len(s).to_bytes(4, "little") for s in segments)
    return b"".join(_pad(s) for s in segments) + trailer + bytes(BLOCK_BYTES - len(trailer))


def key_of_message(data, data_width: int = 8) -> int:
    """CRC-64/XZ of ``data`` computed ``data_width`` bits at a time, as ``amaranth.lib.crc`` does it
    (``CRC(data_width).compute`` over the bytes packed little-endian into words).

    Parameters
    ----------
    data : bytes
        A whole number of ``data_width``-bit words.
    data_width : int
        8, 16, 32, 64, 128, 256 or 512.

    Raises
    ------
    TypeError
        If ``data`` is not bytes or ``data_width`` not an integer.
    ValueError
        If ``data_width`` is not one of those, or ``data`` is not whole words.
    """
    data = _check_bytes("data", data)
    check_integer("data_width", data_width)
    if data_width not in (8, 16, 32, 64, 128, 256, 512):
        raise ValueError(f"data_width must be 8, 16, 32, 64, 128, 256 or 512, not {data_width}")
    step = data_width // 8
    if len(data) % step:
        raise ValueError(f"data must be a whole number of {data_width}-bit words, not {len(data)} bytes")
    words = [int.from_bytes(data[i:i + step], "little") for i in range(0, len(data), step)]
    from .spec import CRC
    return CRC(data_width).compute(words)


def frame_key(frame, spec: KeySpec, ethertype: int | None = None) -> int:
    """The 64-bit key of one frame (without FCS): CRC-64/XZ of :func:`message` (the reference path;
    ``ethertype`` as :func:`parse`).

    Raises
    ------
    TypeError
        If ``frame`` is not bytes or ``spec`` not a KeySpec.
    """
    return key_of_message(message(frame, spec, ethertype))
