"""Link types: captures whose records are not Ethernet frames are keyed as the Ethernet frame that
carries the same packet would be (:func:`network_layer`, :func:`record_key`).
"""

from __future__ import annotations


import numpy as np

from ..config import check_integer
from .batch import FrameBatch
from .reference import _frame_bytes, frame_key
from .spec import _check_spec, ETHERTYPE_IPV4, ETHERTYPE_IPV6, KeySpec, Range

__all__ = ["LINKTYPE_NULL", "LINKTYPE_ETHERNET", "LINKTYPE_PPP", "LINKTYPE_PPP_HDLC", "LINKTYPE_RAW", "LINKTYPE_LOOP",
           "LINKTYPE_LINUX_SLL", "LINKTYPE_IPV4", "LINKTYPE_IPV6", "LINKTYPE_LINUX_SLL2", "IP_LINKTYPES", "NO_ETHERTYPE",
           "linktype_name", "check_link", "network_layer", "record_key"]


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
