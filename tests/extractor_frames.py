"""Frames and the bench for the key extractor's tests (``tests/test_key_extractor.py``,
``tests/test_key_extractor_recipes.py``): the key specifications they use, scapy-built frames of every kind the
extractor's documentation names, random and directed recipes from the model's grammar, and :func:`run`, which
sends frames through a :class:`~apbbf.hdl.packet.key_extractor.KeyExtractor` in Amaranth's simulator and checks
every key, length and class against the model, in order, within the stated latency. Set ``APBBF_VCD=1`` to write a
VCD of each run under ``build/vcd/``.
"""

import os
import random
import zlib

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether

from apbbf.hdl.packet.key_extractor import KINDS, KeyExtractor
from apbbf.sim import harness
from apbbf.model.packet import KeySpec, Range, frame_key, parse

SPECS = {
    "frame": KeySpec.frame(),
    "l3l4": KeySpec.l3l4(),
    "user": KeySpec.parse("l3:12+8/ffff00"),    # IPv4: the addresses, byte 14 masked out; IPv6: 8 bytes of the source
    "user2": KeySpec((Range("frame", 6, 8, b"\xf0\x0f"),), (Range("l3", 3, None, b"\x0f"),),
                     (Range("frame", 6, 8),)),
    # eight ranges in every class, a long one before a `*` one (Horner stages with many blocks)
    "multi": KeySpec.parse("ipv4=frame:0+6,frame:12+2,l3:0+1/f0,l3:2+6,l3:9+1,l3:12+8,l3:20+100,l3:200+*;"
                           "ipv6=l3:0+1,l3:1+1,l3:2+1,l3:3+1,l3:4+1,l3:5+1,l3:8+200/ffff,l3:300+*;"
                           "other=frame:0+1,frame:2+1,frame:4+1,frame:6+1,frame:8+1,frame:10+1,frame:12+500,"
                           "frame:600+*"),
}


def tagged(payload, tags, rng):
    """``payload`` (an IP/IPv6/ARP layer) behind an Ethernet header with the given TPIDs, as bytes."""
    raw = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / payload)
    head, rest = raw[:12], raw[12:]
    for tpid in reversed(tags):
        rest = tpid.to_bytes(2, "big") + rng.randrange(4096).to_bytes(2, "big") + rest
    return head + rest


def frames_mixed(rng, count, width):
    """A mix of every kind of frame the module documentation names."""
    out = []
    for _ in range(count):
        tags = rng.choice([(), (), (0x8100,), (0x88A8,), (0x88A8, 0x8100), (0x8100, 0x8100),
                           (0x8100, 0x8100, 0x8100)])
        body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 120)))
        choice = rng.randrange(12)
        l4 = (TCP(sport=rng.randrange(65536), dport=80) if rng.random() < 0.5
              else UDP(sport=rng.randrange(65536), dport=53)) / body
        if choice < 3:
            frame = tagged(IP(src="10.0.0.1", dst="10.0.0.2", ttl=rng.randrange(256), tos=rng.randrange(256)) / l4,
                            tags, rng)
        elif choice < 5:
            frame = tagged(IPv6(src="2001:db8::1", dst="2001:db8::2", hlim=rng.randrange(256),
                                 tc=rng.randrange(256), fl=rng.randrange(1 << 20)) / l4, tags, rng)
        elif choice == 5:                                   # IPv4 with options
            frame = tagged(IP(src="10.0.0.1", dst="10.0.0.2", options=b"\x01" * (4 * rng.randrange(1, 11))) / l4,
                            tags, rng)
        elif choice == 6:                                   # padding after the IP packet, or truncated
            frame = tagged(IP(src="10.0.0.3", dst="10.0.0.4") / l4, tags, rng)
            frame = frame + bytes(rng.randrange(1, 30)) if rng.random() < 0.5 else \
                frame[:rng.randrange(14, len(frame))]
        elif choice == 7:
            frame = tagged(IPv6(src="2001:db8::3", dst="2001:db8::4") / l4, tags, rng)
            frame = frame + bytes(rng.randrange(1, 30)) if rng.random() < 0.5 else \
                frame[:rng.randrange(14, len(frame))]
        elif choice == 8:
            frame = tagged(ARP(pdst="10.0.0.9"), tags, rng)
        elif choice == 9:                                   # runts
            frame = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 14)))
        elif choice == 10:                                  # broken IP headers
            frame = bytearray(tagged(IP(src="10.0.0.1", dst="10.0.0.2") / l4, tags, rng))
            p = 14 + 4 * min(len(tags), 2)
            field = rng.randrange(3)
            if p + 4 <= len(frame):
                if field == 0:
                    frame[p] = rng.getrandbits(8)
                elif field == 1:
                    frame[p + 2:p + 4] = rng.randrange(0, 40).to_bytes(2, "big")
                else:
                    frame[p] = 0x60 | (frame[p] & 15)
            frame = bytes(frame)
        else:
            frame = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 200)))
        out.append(frame)
    # lengths covering every residue mod W/8, and 1-byte frames
    step = width // 8
    for residue in range(step):
        out.append(bytes(rng.getrandbits(8) for _ in range(64 + residue)))
    out += [b"\x42", bytes([rng.getrandbits(8)])]
    rng.shuffle(out)
    return out


def run(frames, spec, width, *, fcs=False, gap=0.0, seed=0, name="run"):
    """Send ``frames`` (without FCS; with ``fcs``, 4 random bytes are appended), idle with probability ``gap``
    before each beat; check every output against the model. Returns (latencies, key cycles)."""
    # one compiled simulation per (spec, width, fcs), started again from its initial state for each run
    bench = harness.bench(("key extractor", spec, width, fcs), lambda: KeyExtractor(spec, width, fcs=fcs),
                          stream="i")
    dut = bench.dut
    step = width // 8
    rng = random.Random(seed)
    wire = [f + (zlib.crc32(f).to_bytes(4, "little") if fcs else b"") for f in frames]
    last_cycles = []
    got = []
    state = {"cycle": 0, "done": False}
    errors = []

    # a beat is offered in one ctx.set of valid and the payload's fields: the design sees the same inputs at
    # every clock edge
    layout = dut.i.payload.shape()
    offer, valid_bit = bench.offer, bench.valid_bit
    at = {name: layout[name].offset for name in ("data", "keep", "last")}

    async def producer(ctx):
        cycle = 0
        for frame in wire:
            beats = [frame[a:a + step] for a in range(0, len(frame), step)]
            for k, beat in enumerate(beats):
                while gap and rng.random() < gap:
                    ctx.set(dut.i.valid, 0)
                    await ctx.tick()
                    cycle += 1
                ctx.set(offer, valid_bit | int.from_bytes(beat, "little") << at["data"]
                        | ((1 << len(beat)) - 1) << at["keep"] | int(k == len(beats) - 1) << at["last"])
                if k == len(beats) - 1:
                    last_cycles.append(cycle)
                await ctx.tick()
                cycle += 1
                if not all(ctx.get(fifo.w_rdy) for fifo in (dut._beats, dut._beat_data, dut._infos)):
                    errors.append(f"a FIFO is full at cycle {cycle}")
        ctx.set(dut.i.valid, 0)
        state["done"] = True

    async def consumer(ctx):
        cycle = 0
        idle = 0
        while idle < dut.latency + 10 or not state["done"]:
            if ctx.get(dut.o.valid):
                payload = ctx.get(dut.o.payload)
                got.append((cycle, payload.key, payload.length, payload.kind))
            await ctx.tick()
            cycle += 1
            idle = idle + 1 if state["done"] else 0

    bench.run(producer, consumer, f"build/vcd/key_extractor_{name}.vcd" if os.environ.get("APBBF_VCD") else None)
    assert not errors, errors[0]
    assert len(got) == len(frames), f"{len(got)} keys for {len(frames)} frames"
    for index, (frame, (_, key, length, kind)) in enumerate(zip(frames, got)):
        want = (frame_key(frame, spec), min(len(frame), 65535), parse(frame).kind)
        assert (key, length, KINDS[kind]) == want, \
            f"frame {index} ({len(frame)} bytes, {frame[:64].hex()}): got {(hex(key), length, KINDS[kind])}, " \
            f"want {(hex(want[0]),) + want[1:]}"
    latencies = [c - last for (c, *_), last in zip(got, last_cycles)]
    print(f"{name}: W={width} fcs={fcs} gap={gap} seed={seed}: {len(frames)} frames, latency "
          f"{min(latencies)}..{max(latencies)} (bound {dut.latency})")
    assert max(latencies) <= dut.latency, f"latency {max(latencies)} above the bound {dut.latency}"
    assert min(latencies) >= 2, f"latency {min(latencies)} below 2"
    return latencies, [c for c, *_ in got]


# Random recipes from the model's grammar --------------------------------------------------------------------------

def _random_ranges(rng, base, count, *, offset=0, limit=None, star=True):
    """Up to ``count`` ranges of ``base`` from ``offset`` on, increasing and not overlapping: short fields packed
    in a beat, gaps, long ranges, masks up to 64 bytes, a `*` range last (if ``star``); all ending by ``limit``."""
    ranges = []
    for index in range(count):
        offset += rng.choice((0, 0, 1, 2, rng.randrange(0, 40), rng.randrange(0, 300)))
        if limit is not None:
            if offset >= limit:
                break
            length = rng.randrange(1, limit - offset + 1)
        elif star and index == count - 1 and rng.random() < 0.5:
            length = None
        else:
            length = rng.choice((1, 2, 4, rng.randrange(1, 20), rng.randrange(1, 80), rng.randrange(50, 1000)))
        most = min(64, length or 64)
        mask = rng.randbytes(rng.choice((0, 1, rng.randrange(1, most + 1), most))) if rng.random() < 0.6 else b""
        ranges.append(Range(base, offset, length, mask))
        if length is None:
            break
        offset += length
    return ranges


def random_spec(rng):
    """A KeySpec drawn from the model's grammar: 1 to 8 ranges per class, frame and l3 bases (both in one recipe
    with the frame ranges in the Ethernet header), masks, `*` ranges."""
    recipes = []
    for name in ("ipv4", "ipv6", "other"):
        count = rng.choice((1, 2, 3, rng.randrange(1, 9), 8))
        mode = "frame" if name == "other" else rng.choice(("frame", "l3", "l3", "both"))
        if mode == "frame":
            ranges = _random_ranges(rng, "frame", count, offset=rng.randrange(0, 20))
        elif mode == "l3":
            ranges = _random_ranges(rng, "l3", count, offset=rng.randrange(0, 30))
        else:
            ranges = _random_ranges(rng, "frame", rng.randrange(1, count + 1), offset=rng.randrange(0, 13), limit=14)
            ranges += _random_ranges(rng, "l3", max(1, count - len(ranges)), offset=rng.randrange(0, 30))
        recipes.append(tuple(ranges[:8]) or (Range("frame", 0),))
    return KeySpec(*recipes)


def frames_edge(rng, width, *, jumbo=True, count=20):
    """Frames for multi-range recipes: the mix, VLAN and QinQ IP frames of many lengths, a jumbo frame."""
    frames = frames_mixed(rng, count, width)
    for tags in ((), (0x8100,), (0x88A8, 0x8100)):
        size = rng.choice((0, 30, 200, 700))
        frames.append(tagged(IP(src="10.0.0.1", dst="10.0.0.2") / TCP() / rng.randbytes(size), tags, rng))
        frames.append(tagged(IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP() / rng.randbytes(size), tags, rng))
    if jumbo:
        frames.append(tagged(IP(src="10.0.0.5", dst="10.0.0.6") / UDP() / rng.randbytes(rng.randrange(1400, 9000)),
                              rng.choice(((), (0x8100,))), rng))
    rng.shuffle(frames)
    return frames


DIRECTED = {
    # eight one-byte ranges in one 64-bit beat, adjacent and at its last lane
    "packed": "frame:0+1,frame:1+1,frame:2+1,frame:3+1,frame:4+1,frame:5+1,frame:6+1,frame:7+1",
    # Gigamon's "ignore VLAN" on a frame key: the MAC addresses, then the IP packet with TTL and checksum masked
    "ignore_vlan": "ipv4=frame:0+12,l3:0+*/ff00ffffffffffff00ff0000;"
                   "ipv6=frame:0+12,l3:0+*/f00fffffffffff00;other=frame",
    # Gigamon's "ignore TCP sequence number" (IPv4, IHL 5): the header, the ports, then past sequence number
    "ignore_seq": "ipv4=l3:0+20/ff00ffffffffffff00ff0000,l3:20+4,l3:28+*;ipv6=l3:0+44,l3:48+*;other=frame",
    # Napatech-like: addresses and ports at several offsets with masks; ranges past the frame's end
    "napatech": "l3:9+1,l3:12+8/ffffff00ffffff00,l3:20+4,l3:4000+10,l3:5000+*",
    # a 64-byte mask, a long range spanning many beats, then a `*` frame range
    "long": "frame:0+64/" + "5a" * 64 + ",frame:64+3000,frame:3100+*",
}
