# amaranth: UnusedElaboratable=no
"""The streaming key extractor (hdl/packet/key_extractor.py): every key, length and class equal to the model's
(:func:`apbbf.model.packet.frame_key`, :func:`~apbbf.model.packet.parse`), in order, one key per frame, within the
stated latency, at one beat per cycle.

Frames: scapy-built IPv4/IPv6 TCP/UDP with 0 to 2 VLAN tags (0x8100, 0x88A8), IPv4 options, IP lengths shorter
and longer than the frame, ARP, runts of 1..13 bytes, random bytes, 60-byte minimum frames back to back, a jumbo
frame, and lengths covering every residue mod W/8 (every keep pattern of the last beat). A frame is at least one
byte on the stream (no beat carries keep 0). Set ``APBBF_VCD=1`` to write a VCD of each run under
``build/vcd/``.
"""

import os
import random
import zlib

import pytest
from amaranth.sim import Simulator
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether

from apbbf.hdl.packet.key_extractor import KINDS, KeyExtractor
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


def _tagged(payload, tags, rng):
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
            frame = _tagged(IP(src="10.0.0.1", dst="10.0.0.2", ttl=rng.randrange(256), tos=rng.randrange(256)) / l4,
                            tags, rng)
        elif choice < 5:
            frame = _tagged(IPv6(src="2001:db8::1", dst="2001:db8::2", hlim=rng.randrange(256),
                                 tc=rng.randrange(256), fl=rng.randrange(1 << 20)) / l4, tags, rng)
        elif choice == 5:                                   # IPv4 with options
            frame = _tagged(IP(src="10.0.0.1", dst="10.0.0.2", options=b"\x01" * (4 * rng.randrange(1, 11))) / l4,
                            tags, rng)
        elif choice == 6:                                   # padding after the IP packet, or truncated
            frame = _tagged(IP(src="10.0.0.3", dst="10.0.0.4") / l4, tags, rng)
            frame = frame + bytes(rng.randrange(1, 30)) if rng.random() < 0.5 else \
                frame[:rng.randrange(14, len(frame))]
        elif choice == 7:
            frame = _tagged(IPv6(src="2001:db8::3", dst="2001:db8::4") / l4, tags, rng)
            frame = frame + bytes(rng.randrange(1, 30)) if rng.random() < 0.5 else \
                frame[:rng.randrange(14, len(frame))]
        elif choice == 8:
            frame = _tagged(ARP(pdst="10.0.0.9"), tags, rng)
        elif choice == 9:                                   # runts
            frame = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 14)))
        elif choice == 10:                                  # broken IP headers
            frame = bytearray(_tagged(IP(src="10.0.0.1", dst="10.0.0.2") / l4, tags, rng))
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
    dut = KeyExtractor(spec, width, fcs=fcs)
    step = width // 8
    rng = random.Random(seed)
    wire = [f + (zlib.crc32(f).to_bytes(4, "little") if fcs else b"") for f in frames]
    last_cycles = []
    got = []
    state = {"cycle": 0, "done": False}
    errors = []

    async def producer(ctx):
        cycle = 0
        for frame in wire:
            beats = [frame[a:a + step] for a in range(0, len(frame), step)]
            for k, beat in enumerate(beats):
                while gap and rng.random() < gap:
                    ctx.set(dut.i.valid, 0)
                    await ctx.tick()
                    cycle += 1
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload.data, int.from_bytes(beat, "little"))
                ctx.set(dut.i.payload.keep, (1 << len(beat)) - 1)
                ctx.set(dut.i.payload.last, k == len(beats) - 1)
                if k == len(beats) - 1:
                    last_cycles.append(cycle)
                await ctx.tick()
                cycle += 1
                if not (ctx.get(dut._beats.w_rdy) and ctx.get(dut._infos.w_rdy)):
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

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    if os.environ.get("APBBF_VCD"):
        os.makedirs("build/vcd", exist_ok=True)
        with sim.write_vcd(f"build/vcd/key_extractor_{name}.vcd"):
            sim.run()
    else:
        sim.run()
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


WIDTHS = (64, 512)


@pytest.mark.parametrize("gap", [0.0, 0.3], ids=["nogap", "gap30"])
@pytest.mark.parametrize("fcs", [False, True], ids=["nofcs", "fcs"])
@pytest.mark.parametrize("spec", ["frame", "l3l4", "user"])
@pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"W{w}")
def test_mixed(width, spec, fcs, gap):
    """Every kind of frame, random idle gaps (seeded) or back to back."""
    seed = 11 + width + 2 * fcs + int(10 * gap) + list(SPECS).index(spec)
    frames = frames_mixed(random.Random(seed), 40, width)
    run(frames, SPECS[spec], width, fcs=fcs, gap=gap, seed=seed, name=f"mixed_{width}_{spec}_{fcs}_{gap}")


USER3 = KeySpec((Range("l3", 40, 16, b"\xff\x00\xff"),), (Range("frame", 0, 30),), (Range("frame", 70, None),))


@pytest.mark.parametrize("spec", ["user2", "user3"])
@pytest.mark.parametrize("width", (64, 128, 256, 512), ids=lambda w: f"W{w}")
def test_widths(width, spec):
    """Every beat width, user ranges (offsets that shift the segment, masks, ranges past the header), FCS."""
    frames = frames_mixed(random.Random(width), 25, width)
    run(frames, SPECS.get(spec, USER3), width, fcs=True, gap=0.2, seed=width, name=f"widths_{width}_{spec}")


@pytest.mark.parametrize("fcs", [False, True], ids=["nofcs", "fcs"])
@pytest.mark.parametrize("spec", ["frame", "l3l4"])
def test_minimum_frames_one_key_per_clock(spec, fcs):
    """W=512, every beat a whole 60..64-byte frame (FCS included), back to back: one key per clock."""
    rng = random.Random(5)
    frames = []
    for _ in range(40):
        size = rng.randrange(60, 65) - 4 * fcs
        if rng.random() < 0.5:
            frame = _tagged(IP(src="10.1.0.1", dst="10.1.0.2") / UDP() / bytes(8), rng.choice([(), (0x8100,)]), rng)
            frame = (frame + bytes(size))[:size]
        else:
            frame = bytes(rng.getrandbits(8) for _ in range(size))
        frames.append(frame)
    _, cycles = run(frames, SPECS[spec], 512, fcs=fcs, name=f"minimum_{spec}_{fcs}")
    assert all(b - a == 1 for a, b in zip(cycles, cycles[1:])), f"keys not on consecutive cycles: {cycles}"


@pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"W{w}")
def test_every_length(width):
    """Every length 1..150 (runts, every keep pattern, the classification boundaries), IPv4 and IPv6 frames
    cut there, back to back; the l3l4 key."""
    rng = random.Random(width + 1)
    v4 = _tagged(IP(src="10.0.0.1", dst="10.0.0.2", options=b"\x01" * 8) / TCP() / bytes(range(120)), (0x8100,), rng)
    v6 = _tagged(IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP() / bytes(range(100)), (), rng)
    frames = [v4[:n] for n in range(1, 151)] + [v6[:n] for n in range(1, 151, 3)]
    run(frames, SPECS["l3l4"], width, name=f"every_length_{width}")


@pytest.mark.parametrize("width", WIDTHS, ids=lambda w: f"W{w}")
def test_jumbo(width):
    """A 9000-byte IPv4 frame and a 9003-byte raw one (FCS on), among short frames."""
    rng = random.Random(9)
    jumbo = _tagged(IP(src="10.0.0.1", dst="10.0.0.2") / UDP() / bytes(rng.getrandbits(8) for _ in range(8950)),
                    (0x88A8, 0x8100), rng)
    assert len(jumbo) == 9000
    frames = [b"\x01" * 20, jumbo, bytes(rng.getrandbits(8) for _ in range(9003)), b"\x02" * 60]
    run(frames, SPECS["l3l4"], width, fcs=True, gap=0.05, seed=3, name=f"jumbo_{width}")      # raw: keyed whole


@pytest.mark.parametrize("spec", ["frame", pytest.param("multi", marks=pytest.mark.slow)])
def test_worst_latency(spec):
    """Long frames each followed by short ones, back to back (the beats of a short frame wait behind a long
    frame's first 62 bytes): the bound is reached and not exceeded, for one range and for eight."""
    cases = [(64, False), (64, True), (512, False), (512, True)] if spec == "frame" else [(64, True), (512, False)]
    spec = SPECS[spec]
    for width, fcs in cases:
        rng = random.Random(width)
        frames = []
        for _ in range(6):
            frames += [bytes(rng.getrandbits(8) for _ in range(rng.randrange(64, 300)))]
            frames += [bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 70)))
                       for _ in range(rng.randrange(1, 4))]
        latencies, _ = run(frames, spec, width, fcs=fcs, name=f"worst_{width}_{fcs}")
        assert max(latencies) == KeyExtractor(spec, width, fcs=fcs).latency


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
        frames.append(_tagged(IP(src="10.0.0.1", dst="10.0.0.2") / TCP() / rng.randbytes(size), tags, rng))
        frames.append(_tagged(IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP() / rng.randbytes(size), tags, rng))
    if jumbo:
        frames.append(_tagged(IP(src="10.0.0.5", dst="10.0.0.6") / UDP() / rng.randbytes(rng.randrange(1400, 9000)),
                              rng.choice(((), (0x8100,))), rng))
    rng.shuffle(frames)
    return frames


@pytest.mark.parametrize("width", (64, 128, 256, 512), ids=lambda w: f"W{w}")
def test_random_recipes(width):
    """Random recipes (seeded) against frame_key, on every width, FCS on and off, with idle gaps (a jumbo frame
    at 256 and 512 bits; test_random_recipes_long has more)."""
    for trial in range(2 if width == 512 else 1):
        seed = 1000 * width + trial
        rng = random.Random(seed)
        spec = random_spec(rng)
        fcs = width in (128, 512) and trial == 0
        print(f"seed {seed}: {spec}")
        run(frames_edge(rng, width, jumbo=width >= 256, count=12), spec, width, fcs=fcs, gap=0.2 * (not fcs),
            seed=seed, name=f"random_{width}_{trial}")


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


@pytest.mark.parametrize("width, name", [
    pytest.param(width, name, id=f"W{width}-{name}",
                 # at 512 bits one recipe in make test, every one in make test-slow (each about 16 s)
                 marks=[pytest.mark.slow] if width == 512 and name != "napatech" else [])
    for width in (64, 512) for name in DIRECTED])
def test_directed_recipes(width, name):
    """Recipes users ask for and the edges of the grammar, on the edge frames, FCS straddling beats (at 512 bits
    also frames ending around the long recipe's boundaries and a jumbo frame)."""
    rng = random.Random(width + len(name))
    frames = frames_edge(rng, width, jumbo=width == 512, count=10 if width == 64 else 20)
    if width == 512:
        frames += [rng.randbytes(n) for n in (3070, 3100, 3101, 9000)]
    run(frames, KeySpec.parse(DIRECTED[name]), width, fcs=True, gap=0.1, seed=width, name=f"directed_{name}_{width}")


@pytest.mark.slow
@pytest.mark.parametrize("width", (64, 128, 256, 512), ids=lambda w: f"W{w}")
def test_random_recipes_long(width):
    """Many random recipes (seeded), each on its own random frames."""
    for trial in range(8):
        seed = 7000 * width + trial
        rng = random.Random(seed)
        spec = random_spec(rng)
        print(f"seed {seed}: {spec}")
        run(frames_edge(rng, width) + frames_mixed(rng, 20, width), spec, width, fcs=trial % 2 == 1,
            gap=rng.choice((0.0, 0.1, 0.5)), seed=seed, name=f"random_long_{width}_{trial}")


def test_properties():
    dut = KeyExtractor(SPECS["l3l4"], 256, fcs=True)
    assert (dut.spec, dut.data_width, dut.fcs) == (SPECS["l3l4"], 256, True)
    assert dut.latency >= 2
    assert dut.i.payload.shape().size == 256 + 32 + 1


def test_multi_range_properties():
    """One slot per range of the longest recipe; one Horner stage per bit of a later range's most blocks, each two
    pipeline stages long."""
    dut = KeyExtractor(KeySpec.parse("l3:12+8,l3:20+4"), 64)
    assert (dut.slots, dut.horner_stages) == (2, (1,))
    dut = KeyExtractor(KeySpec.parse("ipv4=frame:0+6,l3:0+20/ff00,l3:24+*;other=frame:0+1000,frame:2000+200"), 512)
    assert (dut.slots, dut.horner_stages) == (3, (3, 11))     # 200 bytes: 4 blocks; l3:24+*: 1024
    base = KeyExtractor(KeySpec.frame(), 512)
    assert dut.latency == base.latency + 2 * 14


def test_trailer_matrix_several_lengths():
    """trailer_matrix over several lengths equals the CRC register fed the trailer block the model builds."""
    from apbbf.hdl.crc_maps import crc_model, trailer_matrix
    model = crc_model()
    rng = random.Random(4)
    rows = trailer_matrix(18, 3)
    for _ in range(20):
        lengths = [rng.randrange(1 << 18) for _ in range(3)]
        value = sum(n << (18 * r) for r, n in enumerate(lengths))
        trailer = sum(n << (32 * r) for r, n in enumerate(lengths))
        got = sum((bin(value & row).count("1") & 1) << bit for bit, row in enumerate(rows))
        assert got == model.feed(0, trailer, 64)
    with pytest.raises(ValueError, match="bits"):
        trailer_matrix(33)


def test_matrix_estimate():
    """The XOR-tree estimate: a row of weight w costs ceil((w - 1) / 3) LUT4s; the extractor's matrices per
    stage, more slots costing more."""
    from apbbf.extractor_cost import RegisteredKeyExtractor, matrix_estimate
    from apbbf.hdl.crc_maps import xor_lut4
    assert xor_lut4([0, 1, 0b11, 0b1111, 0b11111, (1 << 10) - 1]) == 0 + 0 + 1 + 1 + 2 + 3
    one = matrix_estimate(KeyExtractor(SPECS["l3l4"], 64))
    assert set(one["stages"]) == {"step", "pad", "zeros", "trailer"} and one["total"] == sum(one["stages"].values())
    many = matrix_estimate(KeyExtractor(SPECS["multi"], 64))
    assert many["stages"]["horner"] > 0 and many["total"] > 4 * one["total"]
    with pytest.raises(TypeError, match="extractor"):
        matrix_estimate(SPECS["l3l4"])
    with pytest.raises(TypeError, match="extractor"):
        RegisteredKeyExtractor(SPECS["l3l4"])
