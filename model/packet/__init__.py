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

from .spec import (CRC64_XZ_PARAMETERS, BLOCK_BYTES, MAX_RANGES, MAX_MASK_BYTES, MAX_FIELD, TPIDS, ETHERTYPE_IPV4, ETHERTYPE_IPV6,
                   FrameClass, FrameInfo, Range, KeySpec)
from .reference import parse, select, message, frame_key, key_of_message
from .batch import FrameBatch, MessageRows, frame_keys
from .links import (LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_PPP, LINKTYPE_PPP_HDLC, LINKTYPE_RAW, LINKTYPE_LOOP,
                    LINKTYPE_LINUX_SLL, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL2, IP_LINKTYPES, NO_ETHERTYPE, linktype_name, check_link, network_layer, record_key)



def __getattr__(name: str):
    # CRC (Amaranth's CRC-64/XZ) is imported when first asked for: keying a capture does not need Amaranth
    if name == "CRC":
        from . import spec
        return spec.CRC
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
           "CRC", "CRC64_XZ_PARAMETERS", "BLOCK_BYTES", "MAX_RANGES", "MAX_MASK_BYTES", "MAX_FIELD", "TPIDS", "ETHERTYPE_IPV4", "ETHERTYPE_IPV6",
           "FrameClass", "FrameInfo", "Range", "KeySpec", "FrameBatch", "MessageRows",
           "parse", "select", "message", "frame_key", "key_of_message", "frame_keys",
           "LINKTYPE_NULL", "LINKTYPE_ETHERNET", "LINKTYPE_PPP", "LINKTYPE_PPP_HDLC", "LINKTYPE_RAW", "LINKTYPE_LOOP",
    "LINKTYPE_LINUX_SLL", "LINKTYPE_IPV4", "LINKTYPE_IPV6", "LINKTYPE_LINUX_SLL2",
    "IP_LINKTYPES", "NO_ETHERTYPE", "linktype_name", "check_link", "network_layer", "record_key",
]
