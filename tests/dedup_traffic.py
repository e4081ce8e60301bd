"""Realistic traffic with duplicates, for ``apbbf dedup``'s tests and its benchmark.

Flows of IPv4 and IPv6 TCP/UDP (IMIX sizes, some jumbo frames, pure ACKs padded to the Ethernet minimum), a
share of VLAN-tagged and QinQ frames, some ARP and LLDP, Poisson arrivals with bursts. A fraction of the frames
get a copy, of one of these kinds:

- ``exact``: the same bytes a little later (a SPAN port seeing both directions);
- ``ttl``: TTL / hop limit one lower, IPv4 checksum recomputed (the packet seen one router further);
- ``vlan``: a VLAN tag added, or the outer one removed (seen from another tap point);
- ``dscp``: DSCP changed (re-marked);
- ``late_in``: the same bytes between half the window and just under it;
- ``late_out``: the same bytes 1.5 to 5 windows later (not a duplicate within the window).

``python -m tests.dedup_traffic OUT.pcap --frames 1000000`` writes a nanosecond pcap.
"""

from __future__ import annotations

import argparse
import heapq
import random
import struct
import sys

__all__ = ["COPY_KINDS", "traffic", "write_pcap", "ipv4_checksum"]

COPY_KINDS = ("exact", "ttl", "vlan", "dscp", "late_in", "late_out")
_COPY_WEIGHTS = (30, 25, 20, 5, 10, 10)
_SIZES = (60, 590, 1514)
_SIZE_WEIGHTS = (7, 4, 1)


def ipv4_checksum(header: bytes) -> int:
    """The IPv4 header checksum of ``header`` (its checksum field taken as zero)."""
    words = struct.unpack(f"!{len(header) // 2}H", header)
    total = sum(words) - words[5]
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _mac(rng) -> bytes:
    return bytes([rng.randrange(256) & 0xFE | 0x02] + [rng.randrange(256) for _ in range(5)])


class _Flow:
    def __init__(self, rng, index):
        self.v6 = rng.random() < 0.2
        self.tcp = rng.random() < 0.8
        self.src, self.dst = _mac(rng), _mac(rng)
        if self.v6:
            self.a = bytes([0x20, 0x01, 0x0D, 0xB8]) + rng.getrandbits(96).to_bytes(12, "big")
            self.b = bytes([0x20, 0x01, 0x0D, 0xB8]) + rng.getrandbits(96).to_bytes(12, "big")
        else:
            self.a = bytes([10, rng.randrange(256), rng.randrange(256), rng.randrange(1, 255)])
            self.b = bytes([192, 168, rng.randrange(256), rng.randrange(1, 255)])
        self.ports = (rng.randrange(1024, 65536), rng.choice((80, 443, 53, 8080, 5201, rng.randrange(1, 65536))))
        self.tags = rng.choices(((), ((0x8100, rng.randrange(1, 4095)),),
                                 ((0x88A8, rng.randrange(1, 4095)), (0x8100, rng.randrange(1, 4095)))),
                                weights=(65, 30, 5))[0]
        self.ttl = rng.choice((64, 128, 255, 63, 127))
        self.seq = rng.getrandbits(32)
        self.ident = rng.getrandbits(16)
        self.index = index

    def frame(self, rng, size: int) -> bytes:
        l4 = 20 if self.tcp else 8
        l3 = 40 if self.v6 else 20
        eth = 14 + 4 * len(self.tags)
        payload = max(0, size - eth - l3 - l4)
        if self.tcp and rng.random() < 0.15:
            payload = 0                                   # a pure ACK, padded below
        # every packet of a flow differs: its sequence number / a counter in the payload
        body = (self.seq.to_bytes(4, "big") * (payload // 4 + 1))[:payload]
        if self.tcp:
            l4h = struct.pack("!HHIIBBHHH", *self.ports, self.seq, 0x5EED, 0x50, 0x18, 0xFFFF, 0, 0)
            self.seq = (self.seq + max(payload, 1)) & 0xFFFFFFFF
        else:
            l4h = struct.pack("!HHHH", *self.ports, 8 + payload, 0)
            body = self.seq.to_bytes(4, "big")[:payload] + body[4:]
            self.seq = (self.seq + 1) & 0xFFFFFFFF
        proto = 6 if self.tcp else 17
        if self.v6:
            ip = struct.pack("!IHBB", 0x60000000 | (self.index & 0xFFFFF), l4 + payload, proto, self.ttl) \
                + self.a + self.b
            ethertype = 0x86DD
        else:
            self.ident = (self.ident + 1) & 0xFFFF
            header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, l3 + l4 + payload, self.ident, 0x4000, self.ttl, proto,
                                 0, self.a, self.b)
            ip = header[:10] + ipv4_checksum(header).to_bytes(2, "big") + header[12:]
            ethertype = 0x0800
        frame = self.dst + self.src + b"".join(struct.pack("!HH", tpid, vid) for tpid, vid in self.tags) \
            + struct.pack("!H", ethertype) + ip + l4h + body
        return frame + bytes(max(0, 60 - len(frame)))


def _other(rng) -> bytes:
    if rng.random() < 0.7:
        arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, _mac(rng), rng.getrandbits(32).to_bytes(4, "big"),
                          bytes(6), rng.getrandbits(32).to_bytes(4, "big"))
        frame = b"\xff" * 6 + _mac(rng) + b"\x08\x06" + arp
    else:
        frame = bytes.fromhex("0180c200000e") + _mac(rng) + b"\x88\xcc" + rng.randbytes(rng.randrange(20, 200))
    return frame + bytes(max(0, 60 - len(frame)))


def _copy(kind: str, frame: bytes, rng) -> bytes:
    """A copy of ``frame`` changed as ``kind`` says (unchanged if it does not apply)."""
    p, tags = 14, 0
    ethertype = int.from_bytes(frame[12:14], "big")
    while ethertype in (0x8100, 0x88A8) and tags < 2:
        ethertype = int.from_bytes(frame[p + 2:p + 4], "big")
        p, tags = p + 4, tags + 1
    ip = ethertype in (0x0800, 0x86DD)
    out = bytearray(frame)
    if kind == "ttl" and ip:
        if ethertype == 0x0800:
            out[p + 8] = (out[p + 8] - 1) & 0xFF
            ihl = (out[p] & 15) * 4
            out[p + 10:p + 12] = ipv4_checksum(bytes(out[p:p + ihl])).to_bytes(2, "big")
        else:
            out[p + 7] = (out[p + 7] - 1) & 0xFF
    elif kind == "dscp" and ip:
        if ethertype == 0x0800:
            out[p + 1] = (out[p + 1] + 0x20) & 0xFF
            ihl = (out[p] & 15) * 4
            out[p + 10:p + 12] = ipv4_checksum(bytes(out[p:p + ihl])).to_bytes(2, "big")
        else:
            out[p] ^= 0x08
    elif kind == "vlan":
        if tags:
            del out[12:16]                                # the outer tag removed
        else:
            out[12:12] = struct.pack("!HH", 0x8100, rng.randrange(1, 4095))
        if len(out) < 60:
            out += bytes(60 - len(out))
    return bytes(out)


def traffic(count: int, seed: int, *, rate: float = 1e6, duplicates: float = 0.1, window: int = 1_000_000,
            start: int = 1_700_000_000_000_000_000, flows: int = 2000, jumbo: float = 0.001,
            jumbo_sizes: tuple = (9014,), sizes: tuple = tuple(zip(_SIZES, _SIZE_WEIGHTS))):
    """``count`` frames ``(time_ns, frame, copy_kind or None)`` in time order.

    Parameters
    ----------
    count : int
    seed : int
    rate : float
        Mean frames per second of the originals (Poisson, with bursts at 8x for a tenth of the time).
    duplicates : float
        Fraction of originals that get a copy.
    window : int
        Nanoseconds: the late copies' delays are relative to it.
    start : int
        The first frame's time, ns.
    flows : int
        Concurrent flows.
    jumbo : float
        Fraction of jumbo frames.
    jumbo_sizes : tuple of int
        Their sizes in bytes, drawn uniformly (a pure ACK among them is padded to 60 bytes, as any).
    sizes : tuple of (int, int)
        The other frames' sizes in bytes and their weights (default IMIX: 60, 590 and 1514 bytes, 7:4:1).
    """
    sizes, weights = zip(*sizes)
    rng = random.Random(seed)
    pool = [_Flow(rng, i) for i in range(flows)]
    pending: list = []                                    # copies: (time, order, frame, kind)
    now = float(start)
    made = order = 0
    burst_left = 0
    while made < count:
        if burst_left <= 0 and rng.random() < 0.001:
            burst_left = rng.randrange(50, 2000)
        gap = rng.expovariate(rate * (8 if burst_left > 0 else 1)) * 1e9
        burst_left -= 1
        now += gap
        t = int(now)
        while pending and pending[0][0] <= t and made < count:
            when, _, frame, kind = heapq.heappop(pending)
            yield when, frame, kind
            made += 1
        if made >= count:
            break
        if rng.random() < 0.015:
            frame = _other(rng)
        else:
            flow = rng.choice(pool)
            if rng.random() < jumbo:            # one size draws nothing more: the captures of one seed stay the same
                size = jumbo_sizes[0] if len(jumbo_sizes) == 1 else rng.choice(jumbo_sizes)
            else:
                size = rng.choices(sizes, weights=weights)[0]
            frame = flow.frame(rng, size)
        yield t, frame, None
        made += 1
        if rng.random() < duplicates:
            kind = rng.choices(COPY_KINDS, weights=_COPY_WEIGHTS)[0]
            delay = {"exact": rng.uniform(1e3, 1e5), "ttl": rng.uniform(5e3, 3e5), "vlan": rng.uniform(1e3, 2e5),
                     "dscp": rng.uniform(1e3, 2e5), "late_in": rng.uniform(0.5, 0.95) * window,
                     "late_out": rng.uniform(1.5, 5) * window}[kind]
            order += 1
            heapq.heappush(pending, (t + int(delay), order, _copy(kind, frame, rng), kind))


def write_pcap(path, frames, *, nano: bool = True, snaplen: int = 65535) -> int:
    """Write ``(time_ns, frame, ...)`` records as a little-endian pcap (nanosecond magic if ``nano``)."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    count = 0
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, 1))
        pack = struct.Struct("<IIII").pack
        chunk = []
        for t, frame, *_ in frames:
            sec, ns = divmod(t, 1_000_000_000)
            chunk.append(pack(sec, ns if nano else ns // 1000, len(frame), len(frame)))
            chunk.append(frame)
            count += 1
            if len(chunk) >= 1 << 14:
                f.write(b"".join(chunk))
                chunk = []
        f.write(b"".join(chunk))
    return count


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.dedup_traffic", description=__doc__.split("\n\n")[0])
    parser.add_argument("output")
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=1e6, help="originals per second (default 1e6)")
    parser.add_argument("--duplicates", type=float, default=0.1)
    parser.add_argument("--window", type=float, default=1e-3, help="seconds (default 1e-3)")
    parser.add_argument("--micro", action="store_true", help="microsecond timestamps (default nanosecond)")
    args = parser.parse_args(argv)
    count = write_pcap(args.output, traffic(args.frames, args.seed, rate=args.rate, duplicates=args.duplicates,
                                            window=round(args.window * 1e9)), nano=not args.micro)
    print(f"wrote {count} frames to {args.output} (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
