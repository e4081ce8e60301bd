"""Test frames built with scapy: Ethernet with 0 to 2 VLAN tags, IPv4/IPv6, TCP/UDP, ARP; copies of them that
differ only in fields a key may mask (TTL/hop limit, DSCP, a VLAN tag); random traffic of originals and copies
with times in ticks. Shared by the Amaranth and cocotb benches of the packet de-duplicator."""

from __future__ import annotations

import random

# the layers by module: scapy.all loads every layer, a second of start-up in each cocotb process
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Raw

__all__ = ["COPY_KINDS", "pad", "packet", "copy_of", "traffic"]

#: The ways :func:`copy_of` changes a copy.
COPY_KINDS = ("exact", "ttl", "dscp", "vlan")


def pad(frame: bytes) -> bytes:
    """Padded to the Ethernet minimum (60 bytes without FCS), as a MAC sends it."""
    return frame + bytes(max(0, 60 - len(frame)))


def packet(rng: random.Random, *, tags: int = None, v6: bool = None, size: int = None):
    """A scapy packet: IPv4 or IPv6, TCP or UDP, with 0 to 2 VLAN tags (802.1Q, or 802.1ad outer), or ARP."""
    tags = rng.choice((0, 0, 1, 2)) if tags is None else tags
    ether = Ether(src=f"02:00:00:00:00:{rng.randrange(256):02x}", dst="02:00:00:00:00:aa")
    if tags == 2:
        ether = ether / Dot1AD(vlan=rng.randrange(4096)) / Dot1Q(vlan=rng.randrange(4096))
    elif tags == 1:
        ether = ether / Dot1Q(vlan=rng.randrange(4096))
    if rng.random() < 0.08:
        return ether / ARP(psrc=f"10.0.0.{rng.randrange(256)}", pdst="10.0.0.1")
    v6 = rng.random() < 0.3 if v6 is None else v6
    ip = (IPv6(src=f"fd00::{rng.randrange(1 << 16):x}", dst="fd00::1", hlim=64, tc=rng.randrange(256)) if v6 else
          IP(src=f"10.{rng.randrange(256)}.0.{rng.randrange(256)}", dst="10.0.0.1", ttl=64, tos=rng.randrange(256)))
    l4 = (TCP(sport=rng.randrange(1 << 16), dport=80, seq=rng.getrandbits(32)) if rng.random() < 0.6 else
          UDP(sport=rng.randrange(1 << 16), dport=53))
    size = rng.choice((0, 6, 40, 200, 600)) if size is None else size
    return ether / ip / l4 / Raw(rng.randbytes(size))


def copy_of(p, kind: str, rng: random.Random) -> bytes:
    """A copy of packet ``p``: ``exact``, ``ttl`` (one hop further, IPv4 checksum recomputed), ``dscp``
    (re-marked), ``vlan`` (a tag added, or the outer one removed)."""
    q = p.copy()
    if kind == "ttl":
        if IP in q:
            q[IP].ttl -= 1
            del q[IP].chksum
        elif IPv6 in q:
            q[IPv6].hlim -= 1
    elif kind == "dscp":
        if IP in q:
            q[IP].tos ^= 0xFC
            del q[IP].chksum
        elif IPv6 in q:
            q[IPv6].tc ^= 0xFC
    elif kind == "vlan":
        if Dot1Q in q and Dot1AD not in q:
            q = Ether(src=q.src, dst=q.dst) / q[Dot1Q].payload
        elif Dot1AD not in q:
            q = Ether(src=q.src, dst=q.dst) / Dot1Q(vlan=9) / q.payload
    return pad(bytes(q))


def traffic(count: int, seed: int, *, lengths=None, step=(0, 12)):
    """``count`` items ``(frame, time, errored)``: packets and copies of recent ones (every kind), some copies
    outside the window, times advancing by ``step`` ticks at random."""
    rng = random.Random(seed)
    sent, items, time = [], [], rng.randrange(1 << 16)
    for _ in range(count):
        time += rng.randrange(*step)
        if sent and rng.random() < 0.4:
            p = rng.choice(sent[-20:])
            frame = copy_of(p, rng.choice(("exact", "exact", "ttl", "dscp", "vlan")), rng)
        else:
            p = packet(rng)
            sent.append(p)
            frame = pad(bytes(p))
        items.append((frame, time, rng.random() < 0.03))
    return items
