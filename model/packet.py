"""The de-duplication key: which bytes of a frame identify it, and how they become a 64-bit key.

Written once here, followed bit for bit by the gateware (a streaming key extractor in front of the time-window
core) and by ``apbbf dedup``. A *key specification* (:class:`KeySpec`) chooses byte ranges of the frame and per-byte
masks; the selected bytes, masked, are laid out in a *message* and hashed with CRC-64/XZ. Equal messages are
duplicates; the message itself is the exact ("full") key an ideal de-duplicator would compare.

Frames
------
A frame is an Ethernet frame from the first byte of the destination address to the last byte of the MAC client
data (payload and any padding), **without its FCS**: a datapath whose MAC passes the FCS on, or a capture that
kept it, drops the last 4 bytes first. Its length ``n`` is any integer >= 0 (runts and jumbo frames included).

Classification
--------------
Every frame falls in one class, decided by its first ``min(n, 62)`` bytes only (so a streaming datapath decides
before the bytes it keys have passed a short delay line):

1. ``n < 14``: class *other* (no EtherType).
2. The EtherType is bytes 12-13 (big-endian), the *L3 offset* ``p = 14``. Up to two VLAN tags are skipped: while
   the EtherType is a TPID (0x8100 or 0x88A8, in either position and any order) and fewer than two tags have been
   skipped, the tag is 4 bytes (TPID at ``p - 2``, TCI at ``p``): if ``n < p + 4`` the frame is *other*, else the
   EtherType becomes bytes ``p + 2 .. p + 3`` and ``p += 4``. A third TPID leaves a TPID as the EtherType: *other*.
3. *IPv4* if the EtherType is 0x0800, ``n >= p + 20``, the version nibble (high nibble of byte ``p``) is 4, IHL
   (its low nibble) is >= 5 and the total length (bytes ``p + 2 .. p + 3``) is >= ``4 * IHL``. The *IP length*
   is ``min(total length, n - p)``.
4. *IPv6* if the EtherType is 0x86DD, ``n >= p + 40`` and the version nibble is 6. The IP length is
   ``min(40 + payload length, n - p)`` (payload length: bytes ``p + 4 .. p + 5``; 0 gives the 40-byte header:
   jumbograms, which need a link MTU above 64 KiB, are not parsed).
5. Anything else is *other*: non-IP EtherTypes, an IP EtherType with a wrong version, IHL < 5 or a total length
   shorter than the header, and IP frames too short for a minimal header (20 or 40 bytes after the L3 offset).

So: an IP length field that exceeds the frame is cut at the frame's end (a truncated packet is keyed as far as it
goes); a header cut short by the frame's end (IHL > 5 with the options missing) is keyed likewise; IPv4 options
are part of the header and keyed like any byte; fragments are keyed like any packet (identification, flags and
fragment offset are in the key, so two fragments of one datagram differ and a copy of a fragment is a duplicate).
No L4 parsing is done: L4 headers and payload are bytes after the IP header.

Link types
----------
Everything above is about Ethernet frames, what the gateware sees. Captures also come with other link layers
(pcap's link type): Linux cooked captures (``tcpdump -i any``: LINUX_SLL 113, LINUX_SLL2 276), BSD and macOS
loopback (NULL 0, LOOP 108), raw IP from tunnels and VPN interfaces (RAW 101, IPV4 228, IPV6 229) and PPP (9,
and 50 in HDLC-like framing). :func:`network_layer` (and, per record, :func:`record_key`) puts a layer in front of
the classification: a record's link header is removed and its protocol field read as an EtherType (SLL, SLL2: the
protocol type; NULL, LOOP: the address family, 2 IPv4 and 24, 28, 30 IPv6, NULL in either byte order; RAW: the
version nibble; PPP: protocols 0x0021 and 0x0057, address/control and protocol-field compression as RFC 1662
allows); every other protocol gives :data:`NO_ETHERTYPE`. The packet after the header is then classified as an
Ethernet frame's bytes after the EtherType are (:func:`parse` with ``ethertype``): up to two VLAN tags skipped
(an SLL capture of a VLAN interface carries them after the protocol type 0x8100), the same IPv4/IPv6 checks, the
L3 offset 0, 4 or 8. So an ``l3`` range, and the ``l3l4`` key, select the same bytes of the same IP packet as on
the Ethernet frame that carried it: the same key. A ``frame`` range's byte 0 is the packet's (after the link
header): the ``frame`` key of a cooked or loopback capture does not see the interface, so a packet captured on
two interfaces of a ``-i any`` capture is one packet. Ranges anchored at the Ethernet frame's start (any
``frame`` range other than a lone ``frame:0+*``) have no meaning without an Ethernet header and are refused
(:func:`check_link`); so is every key but ``frame`` (the record's bytes, as ``editcap`` compares them) on any
other link type.

Key specification
-----------------
A :class:`KeySpec` has one *recipe* per class (``ipv4``, ``ipv6``, ``other``): a tuple of 1 to
:data:`MAX_RANGES` :class:`Range` objects. A range is ``base:offset+length/mask``:

- ``base`` is ``"frame"`` (byte 0 of the frame) or ``"l3"`` (the L3 offset ``p``; IP classes only);
- ``offset`` (0..65535) and ``length`` (1..65535, or ``None``, written ``*``: to the end) count bytes from the
  base; the range is cut at its *bound*: the frame's end ``n`` for ``frame``, the IP packet's end ``p + IP length``
  for ``l3`` (never Ethernet padding). Range r selects bytes ``[min(s, bound), min(e, bound))`` with
  ``s = base + offset`` and ``e = s + length`` (``e = bound`` for ``*``): its *segment*, of ``len_r`` bytes
  (0 if the frame ends before the range starts);
- ``mask`` (0 to :data:`MAX_MASK_BYTES` bytes, no longer than ``length``) is ANDed with the segment's first
  ``len(mask)`` bytes; later bytes are kept whole.

Within a recipe, ranges of one base are in increasing order and do not overlap, a ``*`` range is the last of its
base, and ``frame`` ranges come first; when a recipe has both bases its ``frame`` ranges end by byte 14 (the
smallest L3 offset). Every selected byte therefore arrives in the order the message needs it, once.

Presets: ``frame`` keys every class with ``frame:0+*`` (every byte; the frame's length is ``len_0``).
``l3l4`` keys IPv4 with ``l3:0+*/ff00ffffffffffff00ff0000`` (the IP packet with DSCP/ECN, TTL and the header
checksum masked), IPv6 with ``l3:0+*/f00fffffffffff00`` (traffic class and hop limit masked; the flow label
kept), and *other* frames as ``frame``: a copy that gained or lost VLAN tags on its way to the tap, or was routed
one hop further, has the same key.

Message and hash
----------------
The message of a frame is, for each range r of its class's recipe in order, segment r zero-padded to a multiple
of :data:`BLOCK_BYTES` = 64 bytes (an empty segment adds nothing), followed by one 64-byte *trailer* whose bytes
``4r .. 4r + 3`` hold ``len_r`` as an unsigned 32-bit little-endian integer (the rest are zero). The key is
CRC-64/XZ of the message (``amaranth.lib.crc.catalog.CRC64_XZ``: polynomial 0x42F0E1EBA9EA3693, initial value and
output XOR all ones, reflected input and output), an unsigned 64-bit integer.

Why this shape, for a datapath with a ``tdata`` of W = 64, 128, 256 or 512 bits (byte i of a beat in bits
``8i .. 8i + 7``, as AXI4-Stream has it):

- The message is a whole number of 64-byte blocks, so it is a whole number of W-bit words for every W, and
  ``CRC64_XZ(W).compute(words)`` over its bytes packed little-endian into W-bit words equals the byte-wise
  ``CRC64_XZ(8).compute(message)``: a reflected CRC processes each word least significant bit first, i.e.
  byte 0 first, each byte LSB first, exactly as ``amaranth.lib.crc.Processor`` with that ``data_width`` does
  one beat per cycle. (A non-reflected CRC, CRC-64/ECMA-182 for one, would need every beat byte-swapped
  before the Processor.) The key does not depend on W.
- Each segment starts on a block boundary, so the shift that aligns a range's first byte to lane 0 is
  ``(base + offset) mod (W / 8)``, one per range and frame, whatever the other ranges' lengths.
- Zero padding and the trailer need not cost beats: CRC is affine, so z zero bytes multiply the CRC state by a
  constant matrix (``x^(8z)`` mod the polynomial), and the trailer block maps (state, lengths) to the key by a
  constant matrix over 64 + 32·R bits; the datapath may apply both after the segment's last beat.
- The lengths in the trailer tell apart frames whose selected bytes differ only by trailing zeros, and make the
  frame's length part of the ``frame`` key.

Two paths compute the key: :func:`frame_key` (per frame, plain Python: :func:`select`, :func:`message`, then
``amaranth.lib.crc``'s ``compute``; the reference) and :func:`frame_keys` (a :class:`FrameBatch` at once, numpy:
the classification vectorised, the message as rows of 64-byte blocks, CRC-64/XZ from per-byte-position tables of
the CRC's linear map). ``tests/test_packet.py`` proves them equal on thousands of random frames.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, NamedTuple

import numpy as np
from amaranth.lib.crc import catalog

from .config import check_integer

__all__ = [
    "CRC", "BLOCK_BYTES", "MAX_RANGES", "MAX_MASK_BYTES", "MAX_FIELD", "TPIDS", "ETHERTYPE_IPV4", "ETHERTYPE_IPV6",
    "FrameClass", "FrameInfo", "Range", "KeySpec", "FrameBatch",
    "parse", "select", "message", "frame_key", "key_of_message", "frame_keys",
    "IP_LINKTYPES", "NO_ETHERTYPE", "linktype_name", "check_link", "network_layer", "record_key",
]

#: The key's CRC: CRC-64/XZ from Amaranth's catalog (reflected, so little-endian beats of any width feed it).
CRC = catalog.CRC64_XZ
#: Segments are zero-padded to a multiple of this, and the trailer is one such block: the widest beat, 512 bits.
BLOCK_BYTES = 64
#: Most ranges in a recipe (the trailer holds one 32-bit length per range).
MAX_RANGES = 8
#: Longest per-range mask, in bytes (an IPv4 header with all its options is 60).
MAX_MASK_BYTES = 64
#: Largest offset and length of a range.
MAX_FIELD = 65535
#: VLAN tag protocol identifiers skipped before the EtherType (IEEE 802.1Q, 802.1ad).
TPIDS = (0x8100, 0x88A8)
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
_ETH_HEADER = 14
_MAX_TAGS = 2
#: Bytes of the frame that decide its class: L3 offset after two tags (22) plus an IPv6 header (40).
_PREFIX = 62


class FrameClass(enum.IntEnum):
    """A frame's class (module documentation, "Classification"); the value is the IP version (0: other)."""
    OTHER = 0
    IPV4 = 4
    IPV6 = 6


class FrameInfo(NamedTuple):
    """What classification found.

    Attributes
    ----------
    kind : FrameClass
    tags : int
        VLAN tags skipped (0..2; for *other* frames, as far as parsing went).
    l3 : int
        L3 offset of an IP frame (14, 18 or 22); -1 for *other*.
    ip_length : int
        The IP length (the length field's, cut at the frame's end); 0 for *other*.
    """
    kind: FrameClass
    tags: int
    l3: int
    ip_length: int


_BASES = ("frame", "l3")


def _check_bytes(name: str, value) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes, not {type(value).__name__}")
    return bytes(value)


@dataclass(frozen=True)
class Range:
    """One byte range of a recipe: ``base:offset+length/mask`` (module documentation, "Key specification").

    Parameters
    ----------
    base : {"frame", "l3"}
        Byte 0 of the frame, or the L3 offset (start of the IPv4/IPv6 header).
    offset : int
        First byte, counted from the base, 0..65535.
    length : int or None
        Bytes, 1..65535; None for "to the end" (of the frame for ``frame``, of the IP packet for ``l3``).
    mask : bytes
        ANDed with the range's first ``len(mask)`` bytes; 0..64 bytes, at most ``length``.

    Raises
    ------
    TypeError
        If ``base`` is not a str, ``offset`` or ``length`` not an integer, or ``mask`` not bytes.
    ValueError
        If a field is out of its range.
    """

    base: str
    offset: int
    length: int | None = None
    mask: bytes = b""

    def __post_init__(self):
        if not isinstance(self.base, str):
            raise TypeError(f"base must be a str, not {self.base!r}")
        if self.base not in _BASES:
            raise ValueError(f"base must be 'frame' or 'l3', not {self.base!r}")
        check_integer("offset", self.offset, range(0, MAX_FIELD + 1))
        if self.length is not None:
            check_integer("length", self.length, range(1, MAX_FIELD + 1))
        object.__setattr__(self, "mask", _check_bytes("mask", self.mask))
        if len(self.mask) > MAX_MASK_BYTES:
            raise ValueError(f"mask must be at most {MAX_MASK_BYTES} bytes, not {len(self.mask)}")
        if self.length is not None and len(self.mask) > self.length:
            raise ValueError(f"mask ({len(self.mask)} bytes) must not be longer than length ({self.length})")

    @property
    def end(self) -> int | None:
        """``offset + length`` (None for a range to the end)."""
        return None if self.length is None else self.offset + self.length

    def __str__(self) -> str:
        text = f"{self.base}:{self.offset}+{'*' if self.length is None else self.length}"
        return f"{text}/{self.mask.hex()}" if self.mask else text

    @classmethod
    def parse(cls, text: str) -> "Range":
        """A range from its text form ``base:offset+length[/mask]`` (length ``*``: to the end; mask in hex,
        two digits a byte), e.g. ``l3:0+20/ff00ffffffffffff00ff0000`` or ``frame:0+*``.

        Raises
        ------
        TypeError
            If ``text`` is not a str.
        ValueError
            If it is not a range, or a field is out of its range.
        """
        if not isinstance(text, str):
            raise TypeError(f"range must be a str, not {text!r}")
        match = re.fullmatch(r"\s*(frame|l3)\s*:\s*(\d+)\s*\+\s*(\d+|\*)\s*(?:/\s*([0-9a-fA-F]*))?\s*", text)
        if not match:
            raise ValueError(f"range {text!r} is not base:offset+length[/mask] (base frame or l3, length a number "
                             f"or *, mask in hex), e.g. l3:0+20/ff00ffffffffffff00ff0000 or frame:0+*")
        base, offset, length, mask = match.groups()
        if mask is not None and len(mask) % 2:
            raise ValueError(f"mask {mask!r} of range {text!r} must have two hex digits per byte")
        return cls(base, int(offset), None if length == "*" else int(length), bytes.fromhex(mask or ""))


def _check_recipe(name: str, recipe) -> tuple[Range, ...]:
    if isinstance(recipe, Range):
        recipe = (recipe,)
    if not isinstance(recipe, (tuple, list)) or not all(isinstance(r, Range) for r in recipe):
        raise TypeError(f"{name} must be a tuple of Range, not {recipe!r}")
    recipe = tuple(recipe)
    if not 1 <= len(recipe) <= MAX_RANGES:
        raise ValueError(f"{name} must have 1 to {MAX_RANGES} ranges, not {len(recipe)}")
    bases = [r.base for r in recipe]
    if bases != sorted(bases, key=_BASES.index):
        raise ValueError(f"{name}: frame ranges must come before l3 ranges")
    for base in _BASES:
        ranges = [r for r in recipe if r.base == base]
        for before, after in zip(ranges, ranges[1:]):
            if before.end is None:
                raise ValueError(f"{name}: {before} runs to the end, so it must be the last {base} range")
            if after.offset < before.end:
                raise ValueError(f"{name}: {before} and {after} overlap or are out of order ({base} ranges must "
                                 f"increase and not overlap)")
    if "l3" in bases:
        for r in recipe:
            if r.base == "frame" and (r.end is None or r.end > _ETH_HEADER):
                raise ValueError(f"{name}: with l3 ranges, frame ranges must end by byte {_ETH_HEADER} (the "
                                 f"smallest L3 offset), not {r}")
    return recipe


_FRAME = (Range("frame", 0),)
_L3L4_V4 = (Range("l3", 0, None, bytes.fromhex("ff00ffffffffffff00ff0000")),)
_L3L4_V6 = (Range("l3", 0, None, bytes.fromhex("f00fffffffffff00")),)


@dataclass(frozen=True)
class KeySpec:
    """Which bytes key a frame: one recipe (a tuple of :class:`Range`) per :class:`FrameClass`.

    Parameters
    ----------
    ipv4, ipv6, other : tuple of Range
        The recipes (module documentation, "Key specification"); ``other`` may not use ``l3``.

    Raises
    ------
    TypeError
        If a recipe is not a tuple of Range.
    ValueError
        If a recipe breaks a rule (count, order, overlap, ``l3`` in ``other``).
    """

    ipv4: tuple[Range, ...] = _FRAME
    ipv6: tuple[Range, ...] = _FRAME
    other: tuple[Range, ...] = _FRAME

    def __post_init__(self):
        for name in ("ipv4", "ipv6", "other"):
            object.__setattr__(self, name, _check_recipe(name, getattr(self, name)))
        if any(r.base == "l3" for r in self.other):
            raise ValueError("other: frames that are not IPv4 or IPv6 have no L3 offset, so their recipe can only "
                             "use frame ranges")

    @classmethod
    def frame(cls) -> "KeySpec":
        """Preset ``frame``: every byte of every frame (``frame:0+*``)."""
        return cls(_FRAME, _FRAME, _FRAME)

    @classmethod
    def l3l4(cls) -> "KeySpec":
        """Preset ``l3l4``: the IP packet with DSCP/ECN, TTL and checksum (IPv4) or traffic class and hop limit
        (IPv6) masked; other frames as ``frame``."""
        return cls(_L3L4_V4, _L3L4_V6, _FRAME)

    def recipe(self, kind: FrameClass) -> tuple[Range, ...]:
        """The recipe of class ``kind``."""
        return {FrameClass.IPV4: self.ipv4, FrameClass.IPV6: self.ipv6, FrameClass.OTHER: self.other}[
            FrameClass(kind)]

    @property
    def uses_l3(self) -> bool:
        """Some recipe has an ``l3`` range (the datapath needs the parser)."""
        return any(r.base == "l3" for r in self.ipv4 + self.ipv6)

    def __str__(self) -> str:
        if self == KeySpec.frame():
            return "frame"
        if self == KeySpec.l3l4():
            return "l3l4"
        return ";".join(f"{name}={','.join(map(str, getattr(self, name)))}" for name in ("ipv4", "ipv6", "other"))

    @classmethod
    def parse(cls, text: str) -> "KeySpec":
        """A key specification from its text form (``apbbf dedup --key``).

        ``frame`` and ``l3l4`` are the presets. ``RANGES`` (ranges separated by commas, each as
        :meth:`Range.parse`, e.g. ``l3:12+8,l3:20+4``) keys IPv4 and IPv6 frames with those ranges, and other
        frames with them too if they are all ``frame`` ranges, else as ``frame``. ``CLASS=RANGES;...`` (CLASS one
        of ``ipv4``, ``ipv6``, ``other``; RANGES may also be ``frame`` or ``l3l4``, that preset's recipe for the
        class) gives each class its own recipe; a class not named is keyed as ``frame``.

        Raises
        ------
        TypeError
            If ``text`` is not a str.
        ValueError
            If it is not a key specification (the message says which part).
        """
        if not isinstance(text, str):
            raise TypeError(f"key must be a str, not {text!r}")
        text = text.strip()
        if text in ("frame", "l3l4"):
            return getattr(cls, text)()
        if "=" not in text:
            ranges = tuple(Range.parse(part) for part in text.split(","))
            other = ranges if all(r.base == "frame" for r in ranges) else _FRAME
            return cls(ranges, ranges, other)
        recipes = {}
        for part in text.split(";"):
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or name not in ("ipv4", "ipv6", "other"):
                raise ValueError(f"{part!r} is not CLASS=RANGES (CLASS ipv4, ipv6 or other)")
            if name in recipes:
                raise ValueError(f"class {name} is given twice")
            value = value.strip()
            if value in ("frame", "l3l4"):
                recipes[name] = getattr(getattr(cls, value)(), name)
            else:
                recipes[name] = tuple(Range.parse(r) for r in value.split(","))
        return cls(**recipes)


# Per-frame path (the reference) -----------------------------------------------------------------------------------

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


def _check_spec(spec) -> KeySpec:
    if not isinstance(spec, KeySpec):
        raise TypeError(f"spec must be a KeySpec, not {spec!r}")
    return spec


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


# Batch path (numpy) -----------------------------------------------------------------------------------------------

class FrameBatch:
    """Frames as one byte buffer: frame i is ``data[offsets[i]:offsets[i] + lengths[i]]`` (without FCS).

    Parameters
    ----------
    data : numpy.ndarray of uint8, or bytes-like
        The buffer (a capture file's bytes, say); not copied.
    offsets, lengths : array-like of int
        One per frame, ``0 <= offsets``, ``0 <= lengths``, ``offsets + lengths <= len(data)``.

    Raises
    ------
    TypeError
        If ``data`` is not a uint8 array or bytes-like, or offsets/lengths are not integer arrays.
    ValueError
        If offsets and lengths differ in length or a frame lies outside the buffer.
    """

    def __init__(self, data, offsets, lengths):
        if isinstance(data, np.ndarray):
            if data.dtype != np.uint8 or data.ndim != 1:
                raise TypeError(f"data must be a 1-D uint8 array, not {data.dtype} of shape {data.shape}")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            data = np.frombuffer(data, dtype=np.uint8)
        else:
            raise TypeError(f"data must be a uint8 array or bytes, not {type(data).__name__}")
        offsets, lengths = np.asarray(offsets), np.asarray(lengths)
        for name, value in (("offsets", offsets), ("lengths", lengths)):
            if value.ndim != 1 or (value.size and value.dtype.kind not in "iu"):
                raise TypeError(f"{name} must be a 1-D integer array, not {value.dtype} of shape {value.shape}")
        if len(offsets) != len(lengths):
            raise ValueError(f"offsets and lengths must have the same length, not {len(offsets)} and {len(lengths)}")
        offsets, lengths = offsets.astype(np.int64), lengths.astype(np.int64)
        if len(offsets) and (offsets.min() < 0 or lengths.min() < 0 or int((offsets + lengths).max()) > len(data)):
            raise ValueError("every frame must lie inside data (0 <= offset, 0 <= length, offset + length <= "
                             f"len(data) = {len(data)})")
        self.data, self.offsets, self.lengths = data, offsets, lengths

    @classmethod
    def from_frames(cls, frames: Iterable) -> "FrameBatch":
        """A batch of the given frames (bytes each), copied into one buffer.

        Raises
        ------
        TypeError
            If a frame is not bytes.
        """
        frames = [_frame_bytes(f) for f in frames]
        lengths = np.array([len(f) for f in frames], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if frames else lengths
        return cls(np.frombuffer(b"".join(frames), dtype=np.uint8), offsets, lengths)

    def __len__(self) -> int:
        return len(self.offsets)

    def frame(self, i: int) -> bytes:
        """Frame ``i`` as bytes."""
        return self.data[self.offsets[i]:self.offsets[i] + self.lengths[i]].tobytes()

    def __getitem__(self, index: slice) -> "FrameBatch":
        """The frames ``index`` selects (a slice or an index array), sharing the buffer."""
        return FrameBatch(self.data, self.offsets[index], self.lengths[index])


_M64 = (1 << 64) - 1


def _reflect(value: int, width: int) -> int:
    return int(f"{value:0{width}b}"[::-1], 2)


class _Tables:
    """CRC-64/XZ as a linear map on numpy arrays (the reflected, table-driven register).

    One byte ``v`` moves the register ``S`` to ``Z(S) ^ T[v]`` with ``Z(S) = (S >> 8) ^ T[S & 0xFF]`` (T is
    linear, T[0] = 0). So a 64-byte block contributes ``C = XOR_j D[j][byte_j]`` with ``D[j] = Z^(63-j)(T)``, and a
    message of B blocks ends at ``Z^(64B)(init) ^ XOR_i Z^(64(B-1-i))(C_i)``; ``Z^(64a)`` of a 64-bit value is
    ``XOR_p E[a][p][byte_p]``.
    """

    def __init__(self):
        algorithm = CRC(8).algorithm
        assert algorithm.crc_width == 64 and algorithm.reflect_input and algorithm.reflect_output
        poly = _reflect(algorithm.polynomial, 64)
        table = []
        for v in range(256):
            c = v
            for _ in range(8):
                c = (c >> 1) ^ poly if c & 1 else c >> 1
            table.append(c)
        self.T = np.array(table, dtype=np.uint64)
        self.init = _reflect(algorithm.initial_crc, 64)
        self.xor_output = algorithm.xor_output
        self.D = np.zeros((BLOCK_BYTES, 256), dtype=np.uint64)
        row = self.T.copy()
        for distance in range(BLOCK_BYTES):
            self.D[BLOCK_BYTES - 1 - distance] = row
            row = self._zero(row)
        identity = (np.arange(256, dtype=np.uint64)[None, :] << (8 * np.arange(8, dtype=np.uint64))[:, None])
        block = identity.copy()
        for _ in range(BLOCK_BYTES):
            block = self._zero(block)
        self._E = [identity, block]                         # E[a]: (8, 256), Z^(64a) of v << 8p
        self._init = [self.init, self._advance_int(self.init, 1)]

    def _zero(self, x: np.ndarray) -> np.ndarray:
        return self.T[(x & np.uint64(0xFF)).astype(np.intp)] ^ (x >> np.uint64(8))

    def _advance_int(self, value: int, a: int) -> int:
        E = self._E[a]
        out = 0
        for p in range(8):
            out ^= int(E[p, (value >> (8 * p)) & 0xFF])
        return out

    def E(self, blocks: int) -> np.ndarray:
        """Tables of ``Z^(64a)`` for a = 0..blocks, shape (blocks + 1, 8, 256)."""
        while len(self._E) <= blocks:
            last = self._E[-1]
            one = self._E[1]
            nxt = np.zeros_like(last)
            for p in range(8):
                nxt ^= one[p][((last >> np.uint64(8 * p)) & np.uint64(0xFF)).astype(np.intp)]
            self._E.append(nxt)
            self._init.append(self._advance_int(self._init[-1], 1))
        return np.stack(self._E[:blocks + 1])

    def init_after(self, blocks: int) -> np.ndarray:
        """``Z^(64B)(init)`` for B = 0..blocks."""
        self.E(blocks)
        return np.array(self._init[:blocks + 1], dtype=np.uint64)

    def contributions(self, rows: np.ndarray) -> np.ndarray:
        """``C`` of each 64-byte row (uint8, shape (n, 64)), as uint64 (n,)."""
        columns = np.ascontiguousarray(rows.T)
        out = self.D[0][columns[0]]
        for j in range(1, BLOCK_BYTES):
            out ^= self.D[j][columns[j]]
        return out


@lru_cache(maxsize=1)
def _tables() -> _Tables:
    return _Tables()


_TAIL = np.array([[0xFF] * v + [0] * (BLOCK_BYTES - v) for v in range(BLOCK_BYTES + 1)], dtype=np.uint8)
_CLASS_CODES = np.array([FrameClass.OTHER, FrameClass.IPV4, FrameClass.IPV6], dtype=np.uint8)


def _classify(head: np.ndarray, n: np.ndarray, ethertypes: np.ndarray | None = None):
    """Vectorised :func:`parse` over the frames' first 64 bytes (zero beyond each frame's end); ``ethertypes``
    (one per frame, -1 for an Ethernet frame) as :func:`parse`'s ``ethertype``."""
    rows = np.arange(len(n))

    def be16(pos):
        pos = np.minimum(pos, BLOCK_BYTES - 2)
        return (head[rows, pos].astype(np.int64) << 8) | head[rows, pos + 1]

    if ethertypes is None:
        ethertypes = np.full(len(n), -1, dtype=np.int64)
    ethernet = ethertypes < 0
    valid = ~ethernet | (n >= _ETH_HEADER)
    ethertype = np.where(ethernet, be16(np.full(len(n), 12)), ethertypes)
    p = np.where(ethernet, _ETH_HEADER, 0).astype(np.int64)
    tags = np.zeros(len(n), dtype=np.int64)
    for _ in range(_MAX_TAGS):
        tagged = valid & np.isin(ethertype, TPIDS)
        valid &= ~tagged | (n >= p + 4)
        tagged &= valid
        ethertype = np.where(tagged, be16(p + 2), ethertype)
        p = np.where(tagged, p + 4, p)
        tags += tagged
    first = head[rows, np.minimum(p, BLOCK_BYTES - 1)]
    ihl = (first & 15).astype(np.int64)
    ipv4 = (valid & (ethertype == ETHERTYPE_IPV4) & (n >= p + 20) & (first >> 4 == 4) & (ihl >= 5)
            & (be16(p + 2) >= 4 * ihl))
    ipv6 = valid & (ethertype == ETHERTYPE_IPV6) & (n >= p + 40) & (first >> 4 == 6)
    kind = np.where(ipv4, 1, np.where(ipv6, 2, 0))             # index into _CLASS_CODES
    ip_length = np.where(ipv4, np.minimum(be16(p + 2), n - p),
                         np.where(ipv6, np.minimum(40 + be16(p + 4), n - p), 0))
    return kind, np.where(kind > 0, p, -1), ip_length, tags


def _ragged(counts: np.ndarray):
    """(owner, index) for ``counts[i]`` items per owner i: owner repeated, index 0..counts[i]-1."""
    owner = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    return owner, np.arange(len(owner)) - starts[owner]


#: Bytes of frame data per internal chunk of :func:`frame_keys` (bounds its working memory).
_CHUNK_BYTES = 1 << 24


def frame_keys(batch: FrameBatch, spec: KeySpec, *, messages: bool = False, classes: bool = False,
               progress=None, ethertypes=None):
    """The keys of a batch of frames at once (numpy); equal to :func:`frame_key` frame by frame.

    Parameters
    ----------
    batch : FrameBatch
    spec : KeySpec
    ethertypes : array-like of int or None
        One per frame: -1 for an Ethernet frame, else :func:`parse`'s ``ethertype`` (the frame is a network-layer
        packet: :func:`network_layer` gives both); None: every frame is Ethernet.
    messages : bool
        Also return each frame's message (:func:`message`, its full key) as bytes.
    classes : bool
        Also return each frame's :class:`FrameClass` value (uint8: 0, 4 or 6).
    progress : callable or None
        Called with the number of frames done after each internal chunk.

    Returns
    -------
    keys : numpy.ndarray of uint64
        Or a tuple ``(keys, messages, classes)`` with the parts asked for (messages a list of bytes).

    Raises
    ------
    TypeError
        If ``batch`` is not a FrameBatch or ``spec`` not a KeySpec.
    """
    if not isinstance(batch, FrameBatch):
        raise TypeError(f"batch must be a FrameBatch, not {batch!r}")
    spec = _check_spec(spec)
    if ethertypes is not None:
        ethertypes = np.asarray(ethertypes)
        if ethertypes.shape != (len(batch),) or (ethertypes.size and ethertypes.dtype.kind not in "iu"):
            raise ValueError(f"ethertypes must be {len(batch)} integers (one per frame), not {ethertypes.dtype} of "
                             f"shape {ethertypes.shape}")
        ethertypes = ethertypes.astype(np.int64)
    keys = np.zeros(len(batch), dtype=np.uint64)
    kinds = np.zeros(len(batch), dtype=np.uint8)
    texts: list[bytes] = []
    ends = np.cumsum(batch.lengths + 2 * BLOCK_BYTES)
    lo = 0
    while lo < len(batch):
        hi = max(int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + _CHUNK_BYTES, side="right")), lo + 1)
        chunk_keys, chunk_texts, chunk_kinds = _keys_chunk(batch[lo:hi], spec, messages,
                                                           None if ethertypes is None else ethertypes[lo:hi])
        keys[lo:hi] = chunk_keys
        kinds[lo:hi] = chunk_kinds
        texts += chunk_texts
        lo = hi
        if progress is not None:
            progress(hi)
    if not (messages or classes):
        return keys
    return (keys,) + ((texts,) if messages else ()) + ((kinds,) if classes else ())


def _keys_chunk(batch: FrameBatch, spec: KeySpec, messages: bool, ethertypes: np.ndarray | None):
    tables = _tables()
    nf = len(batch)
    n = batch.lengths
    lo = int(batch.offsets.min())
    hi = int((batch.offsets + n).max())
    total = int(n.sum())
    # The chunk's bytes with a block of zeros after them, so that every 64-byte row read below lies inside: the
    # buffer's span if the frames fill most of it, else the frames packed.
    if hi - lo <= 2 * total + 4096:
        data = np.zeros(hi - lo + 2 * BLOCK_BYTES, dtype=np.uint8)
        data[:hi - lo] = batch.data[lo:hi]
        off = batch.offsets - lo
    else:
        data = np.zeros(total + 2 * BLOCK_BYTES, dtype=np.uint8)
        data[:total] = np.concatenate([batch.data[a:a + b] for a, b in zip(batch.offsets.tolist(), n.tolist())])
        off = np.cumsum(n) - n
    windows = np.lib.stride_tricks.sliding_window_view(data, BLOCK_BYTES)
    head = windows[off].copy()
    head &= _TAIL[np.minimum(n, BLOCK_BYTES)]
    kind, l3, ip_length, _ = _classify(head, n, ethertypes)

    recipes = [spec.other, spec.ipv4, spec.ipv6]
    slots = max(len(r) for r in recipes)
    masks = [np.full(BLOCK_BYTES, 0xFF, dtype=np.uint8)]
    starts = np.zeros((slots, nf), dtype=np.int64)
    counts = np.zeros((slots, nf), dtype=np.int64)
    mask_ids = np.zeros((slots, nf), dtype=np.int64)
    for code, recipe in enumerate(recipes):
        members = kind == code
        if not members.any():
            continue
        for slot, r in enumerate(recipe):
            if r.base == "frame":
                base, bound = np.zeros(nf, dtype=np.int64), n
            else:
                base, bound = l3, l3 + ip_length
            start = base + r.offset
            end = bound if r.length is None else start + r.length
            start, end = np.minimum(start, bound), np.minimum(end, bound)
            starts[slot][members] = start[members]
            counts[slot][members] = (end - start)[members]
            if r.mask:
                row = np.full(BLOCK_BYTES, 0xFF, dtype=np.uint8)
                row[:len(r.mask)] = np.frombuffer(r.mask, dtype=np.uint8)
                masks.append(row)
                mask_ids[slot][members] = len(masks) - 1

    # Rows: frame-major, each frame's segments' blocks, then its trailer.
    blocks = -(-counts // BLOCK_BYTES)                          # (slots, nf)
    per_frame = blocks.sum(axis=0) + 1
    first_row = np.cumsum(per_frame) - per_frame
    trailer_row = first_row + per_frame - 1
    rows = np.zeros((int(per_frame.sum()), BLOCK_BYTES), dtype=np.uint8)
    before = np.zeros(nf, dtype=np.int64)
    for slot in range(slots):
        frame, k = _ragged(blocks[slot])
        target = first_row[frame] + before[frame] + k
        rows[target] = windows[off[frame] + starts[slot][frame] + BLOCK_BYTES * k]
        valid = np.minimum(counts[slot][frame] - BLOCK_BYTES * k, BLOCK_BYTES)
        partial = valid < BLOCK_BYTES
        rows[target[partial]] &= _TAIL[valid[partial]]
        masked = (k == 0) & (mask_ids[slot][frame] > 0)
        if masked.any():
            rows[target[masked]] &= np.stack(masks)[mask_ids[slot][frame][masked]]
        before += blocks[slot]
    lengths = rows[trailer_row].view("<u4")                    # (nf, 16)
    lengths[:, :slots] = counts.T.astype("<u4")
    rows[trailer_row] = lengths.view(np.uint8)

    contributions = tables.contributions(rows)
    most = int(per_frame.max())
    E = tables.E(most).reshape(-1)
    after = np.repeat(trailer_row, per_frame) - np.arange(len(rows))        # blocks after each row
    advanced = np.zeros(len(rows), dtype=np.uint64)
    for p in range(8):
        byte = ((contributions >> np.uint64(8 * p)) & np.uint64(0xFF)).astype(np.int64)
        advanced ^= E[(after * 8 + p) * 256 + byte]
    keys = np.bitwise_xor.reduceat(advanced, first_row) ^ tables.init_after(most)[per_frame]
    keys ^= np.uint64(tables.xor_output)
    texts = [rows[a:b].tobytes() for a, b in zip(first_row.tolist(), (first_row + per_frame).tolist())] \
        if messages else []
    return keys, texts, _CLASS_CODES[kind]


# Link types -------------------------------------------------------------------------------------------------------

#: Link types (pcap's LINKTYPE_ values) whose records carry a network-layer packet after a header that
#: :func:`network_layer` removes, with the name tcpdump and Wireshark give them.
LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_PPP, LINKTYPE_PPP_HDLC = 0, 1, 9, 50
LINKTYPE_RAW, LINKTYPE_LOOP, LINKTYPE_LINUX_SLL = 101, 108, 113
LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL2 = 228, 229, 276
IP_LINKTYPES = {
    LINKTYPE_ETHERNET: "ETHERNET", LINKTYPE_LINUX_SLL: "LINUX_SLL", LINKTYPE_LINUX_SLL2: "LINUX_SLL2",
    LINKTYPE_NULL: "NULL", LINKTYPE_LOOP: "LOOP", LINKTYPE_RAW: "RAW", LINKTYPE_IPV4: "IPV4",
    LINKTYPE_IPV6: "IPV6", LINKTYPE_PPP: "PPP", LINKTYPE_PPP_HDLC: "PPP_HDLC",
}
_OTHER_LINKTYPE_NAMES = {6: "IEEE802_5", 10: "FDDI", 104: "C_HDLC", 105: "IEEE802_11", 119: "PRISM_HEADER",
                         127: "IEEE802_11_RADIOTAP", 143: "DOCSIS", 147: "USER0", 187: "BLUETOOTH_HCI_H4",
                         189: "USB_LINUX", 192: "PPI", 195: "IEEE802_15_4", 220: "USB_LINUX_MMAPPED",
                         249: "NETLINK"}
#: Address families of NULL and LOOP headers (libpcap's list: BSD's AF_INET6 differs between systems).
_AF_ETHERTYPES = {2: ETHERTYPE_IPV4, 24: ETHERTYPE_IPV6, 28: ETHERTYPE_IPV6, 30: ETHERTYPE_IPV6}
#: PPP protocol numbers of IPv4 and IPv6.
_PPP_ETHERTYPES = {0x0021: ETHERTYPE_IPV4, 0x0057: ETHERTYPE_IPV6}
#: The EtherType :func:`network_layer` gives a packet of no known network protocol (not an IP EtherType, not a
#: TPID, so the packet is *other*).
NO_ETHERTYPE = 0


def linktype_name(linktype: int) -> str:
    """``"113 (LINUX_SLL)"``: a link type's number and, if known, its name."""
    name = IP_LINKTYPES.get(linktype) or _OTHER_LINKTYPE_NAMES.get(linktype)
    return f"{linktype} ({name})" if name else str(linktype)


def _frame_anchored(spec: KeySpec) -> list[Range]:
    """The ranges of ``spec`` that depend on the link header: ``frame`` ranges other than a lone, unmasked
    ``frame:0+*``."""
    whole = Range("frame", 0)
    return [r for recipe in (spec.ipv4, spec.ipv6, spec.other) if recipe != (whole,)
            for r in recipe if r.base == "frame"]


def check_link(spec: KeySpec, linktype: int) -> None:
    """Refuse a key that a link type cannot give (module documentation, "Link types").

    Raises
    ------
    TypeError
        If ``spec`` is not a KeySpec or ``linktype`` not an integer.
    ValueError
        If the key needs a layer the link type lacks; the message names the key, the link type and what works.
    """
    spec = _check_spec(spec)
    check_integer("linktype", linktype, range(0, 1 << 32))
    if linktype == LINKTYPE_ETHERNET:
        return
    if linktype not in IP_LINKTYPES:
        if spec != KeySpec.frame():
            raise ValueError(f"key {spec} needs the network layer, which link type {linktype_name(linktype)} does "
                             f"not give: use --key frame (every byte of each record), or a capture with link type "
                             f"Ethernet, LINUX_SLL, LINUX_SLL2, NULL, LOOP, RAW, IPV4, IPV6 or PPP")
        return
    anchored = _frame_anchored(spec)
    if anchored:
        raise ValueError(f"key {spec} has ranges anchored at the Ethernet frame's start "
                         f"({', '.join(map(str, anchored))}), which link type {linktype_name(linktype)} does not "
                         f"have: use l3 ranges (anchored at the IP header, e.g. l3:12+8), l3l4, or frame (the "
                         f"packet after the link header)")


def network_layer(batch: FrameBatch, linktypes) -> tuple[FrameBatch, np.ndarray]:
    """Each record's network layer and protocol, for :func:`frame_keys` (module documentation, "Link types").

    Parameters
    ----------
    batch : FrameBatch
        Records (without FCS) as the capture holds them.
    linktypes : int or array-like of int
        The link type of every record, or of each.

    Returns
    -------
    view : FrameBatch
        Ethernet records as they are; records of the other link types in :data:`IP_LINKTYPES` without their
        link header; records of any other link type as they are.
    ethertypes : numpy.ndarray of int64
        -1 for an Ethernet record, else the protocol of the view as an EtherType (:data:`NO_ETHERTYPE` if it is
        not one the link header names).

    Raises
    ------
    TypeError
        If ``batch`` is not a FrameBatch.
    ValueError
        If ``linktypes`` is not one integer or one per record.
    """
    if not isinstance(batch, FrameBatch):
        raise TypeError(f"batch must be a FrameBatch, not {batch!r}")
    nf = len(batch)
    if np.ndim(linktypes) == 0 and linktypes == LINKTYPE_ETHERNET:
        return batch, np.full(nf, -1, dtype=np.int64)
    linktypes = np.broadcast_to(np.asarray(linktypes), (nf,)) if np.ndim(linktypes) == 0 else \
        np.asarray(linktypes)
    if linktypes.shape != (nf,) or (nf and linktypes.dtype.kind not in "iu"):
        raise ValueError(f"linktypes must be an integer or {nf} integers (one per record), not {linktypes!r}")
    linktypes = linktypes.astype(np.int64)
    offsets, lengths = batch.offsets, batch.lengths
    data = batch.data

    def byte(pos):
        pos = np.asarray(pos, dtype=np.int64)
        inside = pos < lengths
        return np.where(inside, data[np.where(inside, offsets + pos, 0)] if len(data) else 0, 0).astype(np.int64)

    def be16(pos):
        return (byte(pos) << 8) | byte(np.asarray(pos) + 1)

    header = np.zeros(nf, dtype=np.int64)
    ethertypes = np.full(nf, NO_ETHERTYPE, dtype=np.int64)
    ethertypes[linktypes == LINKTYPE_ETHERNET] = -1
    zero = np.zeros(nf, dtype=np.int64)

    def put(which, size, ethertype):
        header[which] = np.broadcast_to(size, (nf,))[which]
        ethertypes[which] = np.broadcast_to(ethertype, (nf,))[which]

    def by_family(af):
        et = np.full(nf, NO_ETHERTYPE, dtype=np.int64)
        for family, value in _AF_ETHERTYPES.items():
            et[af == family] = value
        return et

    put(linktypes == LINKTYPE_LINUX_SLL, 16, be16(zero + 14))
    put(linktypes == LINKTYPE_LINUX_SLL2, 20, be16(zero))
    le = byte(zero) | byte(zero + 1) << 8 | byte(zero + 2) << 16 | byte(zero + 3) << 24
    be = byte(zero + 3) | byte(zero + 2) << 8 | byte(zero + 1) << 16 | byte(zero) << 24
    # NULL: the family in the capturing host's byte order (a value above 0xFFFF was written the other way)
    put(linktypes == LINKTYPE_NULL, 4, by_family(np.where(le > 0xFFFF, be, le)))
    put(linktypes == LINKTYPE_LOOP, 4, by_family(be))
    version = byte(zero) >> 4
    put(linktypes == LINKTYPE_RAW, 0, np.where(version == 4, ETHERTYPE_IPV4,
                                               np.where(version == 6, ETHERTYPE_IPV6, NO_ETHERTYPE)))
    put(linktypes == LINKTYPE_IPV4, 0, ETHERTYPE_IPV4)
    put(linktypes == LINKTYPE_IPV6, 0, ETHERTYPE_IPV6)
    # PPP (RFC 1661), in HDLC-like framing (address 0xFF, control 0x03) or not; a protocol with an odd first
    # byte is one byte long (protocol-field compression)
    ppp = (linktypes == LINKTYPE_PPP) | (linktypes == LINKTYPE_PPP_HDLC)
    framing = np.where((byte(zero) == 0xFF) & (byte(zero + 1) == 0x03), 2, 0)
    short = (byte(framing) & 1) == 1
    protocol = np.where(short, byte(framing), be16(framing))
    et = np.full(nf, NO_ETHERTYPE, dtype=np.int64)
    for number, value in _PPP_ETHERTYPES.items():
        et[protocol == number] = value
    put(ppp, framing + np.where(short, 1, 2), et)
    header = np.minimum(header, lengths)
    return FrameBatch(data, offsets + header, lengths - header), ethertypes


def _link_header(record: bytes, linktype: int) -> tuple[int, int | None]:
    """Per record, plainly: (link header bytes, EtherType of what follows; None for Ethernet)."""
    n = len(record)

    def be16(pos):
        return int.from_bytes(record[pos:pos + 2].ljust(2, b"\0"), "big") if pos < n else 0

    if linktype == LINKTYPE_ETHERNET:
        return 0, None
    if linktype == LINKTYPE_LINUX_SLL:
        return min(16, n), be16(14)
    if linktype == LINKTYPE_LINUX_SLL2:
        return min(20, n), be16(0)
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        head = record[:4].ljust(4, b"\0")
        family = int.from_bytes(head, "big" if linktype == LINKTYPE_LOOP else "little")
        if linktype == LINKTYPE_NULL and family > 0xFFFF:
            family = int.from_bytes(head, "big")
        return min(4, n), _AF_ETHERTYPES.get(family, NO_ETHERTYPE)
    if linktype == LINKTYPE_RAW:
        version = record[0] >> 4 if n else 0
        return 0, {4: ETHERTYPE_IPV4, 6: ETHERTYPE_IPV6}.get(version, NO_ETHERTYPE)
    if linktype in (LINKTYPE_IPV4, LINKTYPE_IPV6):
        return 0, ETHERTYPE_IPV4 if linktype == LINKTYPE_IPV4 else ETHERTYPE_IPV6
    if linktype in (LINKTYPE_PPP, LINKTYPE_PPP_HDLC):
        at = 2 if record[:2] == b"\xff\x03" else 0
        first = record[at] if at < n else 0
        size, protocol = (1, first) if first & 1 else (2, be16(at))
        return min(at + size, n), _PPP_ETHERTYPES.get(protocol, NO_ETHERTYPE)
    return 0, NO_ETHERTYPE


def record_key(record, spec: KeySpec, linktype: int = LINKTYPE_ETHERNET) -> int:
    """The key of one record (without FCS) of a capture with link type ``linktype``: :func:`frame_key` of its
    network layer, the link header decoded per record in plain Python (the reference of :func:`network_layer`
    with :func:`frame_keys`).

    Raises
    ------
    TypeError
        If ``record`` is not bytes or ``spec`` not a KeySpec.
    ValueError
        If the key needs a layer the link type lacks (:func:`check_link`).
    """
    record = _frame_bytes(record)
    check_link(spec, linktype)
    header, ethertype = _link_header(record, linktype)
    return frame_key(record[header:], spec, ethertype)
