"""The key specification's grammar and constants: :class:`KeySpec`, :class:`Range`, the frame classes
(:mod:`apbbf.model.packet`'s documentation, "Key specification", "Classification").
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import NamedTuple

from ..config import check_integer

__all__ = ["CRC", "CRC64_XZ_PARAMETERS", "BLOCK_BYTES", "MAX_RANGES", "MAX_MASK_BYTES", "MAX_FIELD", "TPIDS", "ETHERTYPE_IPV4",
           "ETHERTYPE_IPV6", "FrameClass", "FrameInfo", "Range", "KeySpec"]


#: CRC-64/XZ's parameters (Amaranth's ``catalog.CRC64_XZ``, :data:`CRC`; ``tests/test_packet.py`` checks they
#: agree): the numpy key path builds its tables from these, so that keying a capture does not import Amaranth.
CRC64_XZ_PARAMETERS = dict(crc_width=64, polynomial=0x42F0E1EBA9EA3693, initial_crc=0xFFFFFFFFFFFFFFFF,
                           reflect_input=True, reflect_output=True, xor_output=0xFFFFFFFFFFFFFFFF)


def __getattr__(name: str):
    # CRC, the key's CRC: CRC-64/XZ from Amaranth's catalog (reflected, so little-endian beats of any width feed
    # it), imported when first asked for
    if name == "CRC":
        from amaranth.lib.crc import catalog
        return catalog.CRC64_XZ
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
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


def _check_spec(spec) -> KeySpec:
    if not isinstance(spec, KeySpec):
        raise TypeError(f"spec must be a KeySpec, not {spec!r}")
    return spec
