"""The de-duplication key (model/packet/): classification, the key specification, the message and its CRC, on
frames built with scapy; the batch path against the reference path on thousands of random frames; the key's
independence of the beat width, down to Amaranth's CRC Processor; the link-type layer (SLL, SLL2, NULL, LOOP, RAW,
IPV4, IPV6, PPP records built by scapy's own link layers key as the Ethernet frame carrying their packet)."""

import random

import numpy as np
import pytest
from amaranth.lib.crc import catalog
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_RR, fragment
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Raw

from apbbf.model.packet import (BLOCK_BYTES, CRC, MAX_RANGES, FrameBatch, FrameClass, KeySpec, Range, check_link,
                                frame_key, frame_keys, key_of_message, linktype_name, message, network_layer, parse,
                                record_key, select)
from .streams import run_simulation

L3L4, FRAME = KeySpec.l3l4(), KeySpec.frame()
MACS = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def eth(*layers, tags=()):
    """An Ethernet frame (no FCS) with VLAN tags (``("q", vid)`` for 802.1Q, ``("ad", vid)`` for 802.1ad)."""
    packet = Ether(**MACS)
    for kind, vid in tags:
        packet = packet / (Dot1AD(vlan=vid) if kind == "ad" else Dot1Q(vlan=vid))
    for layer in layers:
        packet = packet / layer
    return bytes(packet)


def v4(ttl=64, tos=0, ident=7, **kw):
    return IP(src="10.1.2.3", dst="192.168.7.9", ttl=ttl, tos=tos, id=ident, **kw)


def v6(hlim=64, tc=0, fl=0x12345):
    return IPv6(src="2001:db8::1", dst="2001:db8::2", hlim=hlim, tc=tc, fl=fl)


TCP_PAYLOAD = (TCP(sport=40000, dport=443, seq=1000, flags="PA"), Raw(b"GET / HTTP/1.1\r\n" * 3))


# Classification ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("frame, kind, tags, l3", [
    (eth(v4(), *TCP_PAYLOAD), FrameClass.IPV4, 0, 14),
    (eth(v4(), *TCP_PAYLOAD, tags=[("q", 10)]), FrameClass.IPV4, 1, 18),
    (eth(v4(), *TCP_PAYLOAD, tags=[("ad", 100), ("q", 10)]), FrameClass.IPV4, 2, 22),
    (eth(v4(), *TCP_PAYLOAD, tags=[("q", 100), ("q", 10)]), FrameClass.IPV4, 2, 22),
    (eth(v6(), UDP(sport=5, dport=53), Raw(b"q" * 30)), FrameClass.IPV6, 0, 14),
    (eth(v6(), UDP(), tags=[("ad", 1), ("q", 2)]), FrameClass.IPV6, 2, 22),
    (eth(ARP(pdst="10.0.0.1")), FrameClass.OTHER, 0, -1),
    (eth(v4(), UDP(), tags=[("ad", 1), ("q", 2), ("q", 3)]), FrameClass.OTHER, 2, -1),    # a third tag
], ids=["ipv4", "ipv4-vlan", "ipv4-qinq", "ipv4-q-q", "ipv6", "ipv6-qinq", "arp", "three-tags"])
def test_classification(frame, kind, tags, l3):
    info = parse(frame)
    assert (info.kind, info.tags, info.l3) == (kind, tags, l3)
    if kind == FrameClass.IPV4:
        assert info.ip_length == int.from_bytes(frame[l3 + 2:l3 + 4], "big")
    elif kind == FrameClass.IPV6:
        assert info.ip_length == 40 + int.from_bytes(frame[l3 + 4:l3 + 6], "big")


def test_runts_are_other_and_keyed_whole():
    frame = eth(v4(), *TCP_PAYLOAD)
    keys = set()
    for n in range(0, 14):
        runt = frame[:n]
        assert parse(runt).kind == FrameClass.OTHER
        assert frame_key(runt, L3L4) == frame_key(runt, FRAME)
        keys.add(frame_key(runt, L3L4))
    assert len(keys) == 14                       # the length is in the key: b"" and b"\x02" ... all differ
    assert frame_key(b"", FRAME) != frame_key(b"\x00", FRAME)


def test_tag_cut_short_is_other():
    tagged = eth(v4(), UDP(), tags=[("q", 5)])
    for n in range(14, 18):
        assert parse(tagged[:n]) == (FrameClass.OTHER, 0, -1, 0)
    qinq = eth(v4(), UDP(), tags=[("ad", 5), ("q", 6)])
    assert parse(qinq[:21]) == (FrameClass.OTHER, 1, -1, 0)


def test_truncated_ip_headers():
    frame = eth(v4(), *TCP_PAYLOAD)
    assert parse(frame[:14 + 19]).kind == FrameClass.OTHER        # less than a minimal header: other
    info = parse(frame[:14 + 20])                                 # a minimal header: IPv4, cut at the frame
    assert info.kind == FrameClass.IPV4 and info.ip_length == 20
    with_options = eth(v4(options=[IPOption_RR()]), UDP(), Raw(b"z" * 20))
    assert with_options[14] & 15 > 5
    info = parse(with_options[:14 + 24])                          # options cut short: keyed as far as they go
    assert info.kind == FrameClass.IPV4 and info.ip_length == 24
    frame6 = eth(v6(), UDP())
    assert parse(frame6[:14 + 39]).kind == FrameClass.OTHER
    assert parse(frame6[:14 + 40]) == (FrameClass.IPV6, 0, 14, 40)


def test_ip_length_beyond_the_frame_is_cut():
    frame = bytearray(eth(v4(), UDP(), Raw(b"a" * 40)))
    frame[16:18] = (1000).to_bytes(2, "big")
    info = parse(bytes(frame))
    assert info.kind == FrameClass.IPV4 and info.ip_length == len(frame) - 14
    _, (segment,) = select(bytes(frame), L3L4)
    assert len(segment) == len(frame) - 14


def test_bad_ip_headers_are_other():
    frame = eth(v4(), UDP(), Raw(b"a" * 40))
    for index, value in ((14, 0x44), (14, 0x65), (16, 0), (17, 19)):   # IHL 4, version 6, total length < 20
        bad = bytearray(frame)
        if index == 16:
            bad[16:18] = (19).to_bytes(2, "big")
        else:
            bad[index] = value
        assert parse(bytes(bad)).kind == FrameClass.OTHER, (index, value)
    swapped = bytearray(frame)
    swapped[12:14] = (0x86DD).to_bytes(2, "big")                  # IPv4 bytes under the IPv6 EtherType
    assert parse(bytes(swapped)).kind == FrameClass.OTHER


def test_ipv6_payload_length_zero_is_the_header():
    frame = eth(v6(), UDP(), Raw(b"b" * 30))
    bad = bytearray(frame)
    bad[18:20] = b"\x00\x00"
    assert parse(bytes(bad)) == (FrameClass.IPV6, 0, 14, 40)


# Masked fields, VLAN tags, padding ----------------------------------------------------------------------------------

def _variants_ipv4():
    base = eth(v4(), *TCP_PAYLOAD)
    return base, {
        "ttl": eth(v4(ttl=63), *TCP_PAYLOAD),                      # scapy recomputes the checksum
        "dscp-ecn": eth(v4(tos=0xB9), *TCP_PAYLOAD),
        "vlan-added": eth(v4(), *TCP_PAYLOAD, tags=[("q", 42)]),
        "qinq-added": eth(v4(), *TCP_PAYLOAD, tags=[("ad", 7), ("q", 42)]),
        "ttl+vlan": eth(v4(ttl=17), *TCP_PAYLOAD, tags=[("q", 3)]),
        "other-macs": bytes(Ether(src="02:aa:00:00:00:01", dst="02:bb:00:00:00:02") / v4() / TCP_PAYLOAD[0]
                            / TCP_PAYLOAD[1]),
    }


def _variants_ipv6():
    base = eth(v6(), UDP(sport=9, dport=99), Raw(b"c" * 50))
    return base, {
        "hop-limit": eth(v6(hlim=1), UDP(sport=9, dport=99), Raw(b"c" * 50)),
        "traffic-class": eth(v6(tc=0xFF), UDP(sport=9, dport=99), Raw(b"c" * 50)),
        "vlan-added": eth(v6(), UDP(sport=9, dport=99), Raw(b"c" * 50), tags=[("q", 8)]),
    }


@pytest.mark.parametrize("variants", [_variants_ipv4, _variants_ipv6], ids=["ipv4", "ipv6"])
def test_copies_differing_in_masked_fields(variants):
    """Duplicates under l3l4, not under frame."""
    base, copies = variants()
    for name, copy in copies.items():
        assert copy != base
        assert frame_key(copy, L3L4) == frame_key(base, L3L4), name
        assert frame_key(copy, FRAME) != frame_key(base, FRAME), name


@pytest.mark.parametrize("change", ["payload", "ident", "ports", "flow-label", "options", "dst"])
def test_copies_differing_in_kept_fields(change):
    """Not duplicates under either preset."""
    if change == "flow-label":
        base, other = eth(v6(), UDP()), eth(v6(fl=0x54321), UDP())
    else:
        base = eth(v4(), *TCP_PAYLOAD)
        other = {"payload": lambda: eth(v4(), TCP_PAYLOAD[0], Raw(b"GET / HTTP/1.0\r\n" * 3)),
                 "ident": lambda: eth(v4(ident=8), *TCP_PAYLOAD),
                 "ports": lambda: eth(v4(), TCP(sport=40001, dport=443, seq=1000, flags="PA"), TCP_PAYLOAD[1]),
                 "options": lambda: eth(v4(options=[IPOption_RR()]), *TCP_PAYLOAD),
                 "dst": lambda: eth(IP(src="10.1.2.3", dst="192.168.7.8", ttl=64, id=7), *TCP_PAYLOAD)}[change]()
    assert frame_key(base, L3L4) != frame_key(other, L3L4)
    assert frame_key(base, FRAME) != frame_key(other, FRAME)


def test_ethernet_padding_is_not_in_the_l3l4_key():
    ack = eth(v4(), TCP(flags="A"))                                # 54 bytes: padded to 60 on the wire
    assert len(ack) == 54
    zeros, junk = ack + bytes(6), ack + b"\xde\xad\xbe\xef\x01\x02"
    tagged = eth(v4(), TCP(flags="A"), tags=[("q", 9)]) + bytes(2)  # 58 + 2 bytes of padding
    assert frame_key(zeros, L3L4) == frame_key(junk, L3L4) == frame_key(tagged, L3L4) == frame_key(ack, L3L4)
    assert len({frame_key(f, FRAME) for f in (ack, zeros, junk, tagged)}) == 4
    _, (segment,) = select(junk, L3L4)
    assert len(segment) == 40


def test_l3l4_masks_exactly_the_documented_bits():
    base = eth(v4(), *TCP_PAYLOAD)
    _, (segment,) = select(base, L3L4)
    header = base[14:34]
    assert segment[1] == 0 and segment[8] == 0 and segment[10:12] == b"\x00\x00"
    assert segment[:1] + segment[2:8] + segment[9:10] + segment[12:] == header[:1] + header[2:8] + header[9:10] \
        + base[26:]
    frame6 = eth(v6(tc=0xA5, hlim=33), UDP())
    _, (segment6,) = select(frame6, L3L4)
    assert segment6[0] == frame6[14] & 0xF0 and segment6[1] == frame6[15] & 0x0F and segment6[7] == 0
    assert segment6[2:7] == frame6[16:21] and segment6[8:] == frame6[22:]


def test_fragments():
    datagram = eth(v4(), UDP(sport=1, dport=2), Raw(bytes(range(256)) * 12))
    pieces = [bytes(f) for f in fragment(Ether(datagram), fragsize=1000)]
    assert len(pieces) == 4
    keys = [frame_key(p, L3L4) for p in pieces]
    assert len(set(keys)) == 4                                     # each fragment is its own packet
    for p in pieces:
        assert parse(p).kind == FrameClass.IPV4
    copy = bytearray(pieces[2])
    copy[22] -= 1                                                  # a copy one hop later
    assert frame_key(bytes(copy), L3L4) == keys[2]


def test_jumbo_frames():
    jumbo = eth(v4(), UDP(sport=7, dport=7), Raw(bytes(range(256)) * 35))
    assert len(jumbo) > 9000
    tagged = eth(v4(ttl=3), UDP(sport=7, dport=7), Raw(bytes(range(256)) * 35), tags=[("q", 1)])
    assert frame_key(jumbo, L3L4) == frame_key(tagged, L3L4)
    batch = FrameBatch.from_frames([jumbo, tagged])
    assert list(frame_keys(batch, L3L4)) == [frame_key(jumbo, L3L4), frame_key(tagged, L3L4)]
    assert list(frame_keys(batch, FRAME)) == [frame_key(jumbo, FRAME), frame_key(tagged, FRAME)]


def test_non_ip_falls_back_to_frame():
    arp = eth(ARP(pdst="10.0.0.1"))
    assert frame_key(arp, L3L4) == frame_key(arp, FRAME)
    spec = KeySpec.parse("l3:12+8")
    assert spec.other == FRAME.other
    assert frame_key(arp, spec) == frame_key(arp, FRAME)


# The message and the CRC ------------------------------------------------------------------------------------------

def test_message_layout():
    frame = eth(v4(), *TCP_PAYLOAD, tags=[("q", 5)])
    spec = KeySpec.parse("frame:0+6/ff00,frame:12+2,l3:12+8,l3:20+*")
    text = message(frame, spec)
    assert len(text) % BLOCK_BYTES == 0
    segments = [frame[0:1] + b"\x00" + frame[2:6], frame[12:14], frame[30:38], frame[38:]]
    expected = b"".join(s + bytes(-len(s) % BLOCK_BYTES) for s in segments)
    trailer = b"".join(len(s).to_bytes(4, "little") for s in segments)
    assert text == expected + trailer + bytes(BLOCK_BYTES - len(trailer))
    assert frame_key(frame, spec) == CRC(8).compute(text)


def _crc64_xz(data: bytes) -> int:
    """CRC-64/XZ bit by bit (reflected polynomial 0xC96C5795D7870F42), independent of Amaranth."""
    crc = (1 << 64) - 1
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xC96C5795D7870F42 if crc & 1 else crc >> 1
    return crc ^ ((1 << 64) - 1)


#: A TCP/IPv4 frame (scapy's ``eth(v4(), *TCP_PAYLOAD)``), as the gateware's test vector.
VECTOR = bytes.fromhex(
    "020000000002020000000001080045000058000700004006a6e40a010203c0a807099c4001bb000003e80000000050182000a53f"
    "0000474554202f20485454502f312e310d0a474554202f20485454502f312e310d0a474554202f20485454502f312e310d0a")


def test_known_keys():
    """Fixed points of the specification (the gateware's first test vectors), checked by an independent CRC."""
    assert eth(v4(), *TCP_PAYLOAD) == VECTOR
    assert message(b"", FRAME) == bytes(64)
    for frame, spec, key in ((b"", FRAME, 0xDE547AA516302402), (bytes(range(60)), FRAME, 0x1CB241C358514955),
                             (VECTOR, L3L4, 0x86123BCB250EBBC4), (VECTOR, FRAME, None)):
        assert frame_key(frame, spec) == _crc64_xz(message(frame, spec))
        if key is not None:
            assert frame_key(frame, spec) == key


def test_crc_is_catalog_crc64_xz():
    assert CRC(8).compute(b"123456789") == 0x995DC9BBDF1939FA      # the catalogue's check value
    assert CRC is catalog.CRC64_XZ
    from apbbf.model.packet import CRC64_XZ_PARAMETERS
    algorithm = CRC(8).algorithm
    assert {name: getattr(algorithm, name) for name in CRC64_XZ_PARAMETERS} == CRC64_XZ_PARAMETERS


def test_keying_does_not_import_amaranth():
    """The numpy key path (and ``apbbf.capture``) builds its CRC tables from CRC64_XZ_PARAMETERS: a fresh
    interpreter that keys a frame has not imported Amaranth."""
    import subprocess
    import sys
    code = ("import sys\nfrom apbbf.model.packet import FrameBatch, KeySpec, frame_keys\nimport apbbf.capture\n"
            "frame_keys(FrameBatch.from_frames([bytes(range(60))]), KeySpec.l3l4())\n"
            "print(any(name.startswith('amaranth') for name in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


@pytest.mark.parametrize("width", [8, 16, 32, 64, 128, 256, 512])
def test_key_does_not_depend_on_the_beat_width(width):
    rng = random.Random(width)
    for _ in range(20):
        frame = rng.randbytes(rng.randrange(0, 300))
        text = message(frame, FRAME)
        assert key_of_message(text, width) == frame_key(frame, FRAME)


def test_a_non_reflected_crc_would_depend_on_the_width():
    """Why CRC-64/XZ: ECMA-182 (not reflected) over little-endian 64-bit beats is not its byte-wise CRC."""
    text = message(bytes(range(100)), FRAME)
    words = [int.from_bytes(text[i:i + 8], "little") for i in range(0, len(text), 8)]
    ecma = catalog.CRC64_ECMA_182
    assert ecma(64).compute(words) != ecma(8).compute(text)


@pytest.mark.parametrize("width", [64])
def test_amaranth_processor_computes_the_key(width):
    """``amaranth.lib.crc.Processor`` with ``data_width`` = the beat width, fed the message one beat per cycle
    (byte i of a beat in bits 8i..8i+7, as AXI4-Stream ``tdata``), ends with the key.

    64 bits only: the Processor's XOR matrices come from ``Parameters.compute`` (checked at every width above),
    and at 256 and 512 bits its chains of XORs are too deep for Python's default recursion limit in the
    simulator (and take minutes to elaborate)."""
    frames = [eth(v4(), *TCP_PAYLOAD, tags=[("q", 5)]), eth(v6(), UDP(), Raw(b"d" * 200)), bytes(range(7))]
    processor = CRC(width).create()
    step = width // 8
    results = []

    async def bench(ctx):
        for frame in frames:
            text = message(frame, L3L4)
            for i in range(0, len(text), step):
                ctx.set(processor.start, i == 0)
                ctx.set(processor.valid, 1)
                ctx.set(processor.data, int.from_bytes(text[i:i + step], "little"))
                await ctx.tick()
            ctx.set(processor.valid, 0)
            ctx.set(processor.start, 0)
            results.append(ctx.get(processor.crc))

    run_simulation(processor, bench)
    assert results == [frame_key(f, L3L4) for f in frames]


# Batch path = reference path ----------------------------------------------------------------------------------------

def _random_frame(rng: random.Random) -> bytes:
    """A frame built by scapy (IPv4/IPv6, TCP/UDP/ICMP, 0-2 tags, options, fragments, padding) or random bytes,
    then perhaps damaged: cut short, a length field or a byte changed."""
    roll = rng.random()
    if roll < 0.1:
        return rng.randbytes(rng.choice([rng.randrange(0, 70), rng.randrange(0, 1600)]))
    tags = [(rng.choice(("q", "ad")), rng.randrange(1, 4095)) for _ in range(rng.choice((0, 0, 1, 2, 3)))]
    payload = Raw(rng.randbytes(rng.choice((0, 1, 6, 30, 200, 700, rng.randrange(0, 1500)))))
    l4 = rng.choice((TCP(sport=rng.randrange(65536), dport=80, seq=rng.getrandbits(32)),
                     UDP(sport=rng.randrange(65536), dport=53), ICMP()))
    if roll < 0.7:
        ip = IP(src="10.0.0.%d" % rng.randrange(256), dst="10.9.9.9", ttl=rng.randrange(256), tos=rng.randrange(256),
                id=rng.randrange(65536), options=[IPOption_RR()] if rng.random() < 0.1 else [],
                flags=rng.choice((0, 1, 2)), frag=rng.choice((0, 0, 0, 185)))
    elif roll < 0.95:
        ip = IPv6(src="2001:db8::%x" % rng.randrange(65536), dst="2001:db8::1", hlim=rng.randrange(256),
                  tc=rng.randrange(256), fl=rng.randrange(1 << 20))
    else:
        ip = ARP(pdst="10.0.0.%d" % rng.randrange(256))
    frame = bytearray(eth(*(ip, l4, payload) if not isinstance(ip, ARP) else (ip,), tags=tags))
    if len(frame) < 60 and rng.random() < 0.8:
        frame += rng.randbytes(60 - len(frame))                    # padding, zeros or not
    damage = rng.random()
    if damage < 0.15:
        frame = frame[:rng.randrange(len(frame) + 1)]
    elif damage < 0.25 and len(frame) > 26:
        at = rng.choice((16, 17, 18, 19, 20, 21, 22, 23, 24, 25))   # length fields, wherever the tags put them
        frame[at] = rng.randrange(256)
    elif damage < 0.3 and frame:
        frame[rng.randrange(len(frame))] = rng.randrange(256)
    return bytes(frame)


def _random_range(rng, base, offset):
    length = None if rng.random() < 0.3 else rng.randrange(1, 200)
    limit = min(64, length or 64)
    mask = rng.randbytes(rng.randrange(0, limit + 1)) if rng.random() < 0.6 else b""
    return Range(base, offset, length, mask)


def _random_recipe(rng, *, l3: bool):
    ranges = []
    if not l3 or rng.random() < 0.5:
        offset = 0
        for _ in range(rng.randrange(1, 3)):
            if l3:
                if offset >= 14:
                    break
                length = rng.randrange(1, 15 - offset)
                ranges.append(Range("frame", offset, length, rng.randbytes(rng.randrange(0, length + 1))))
                offset += length + rng.randrange(0, 3)
            else:
                r = _random_range(rng, "frame", offset)
                ranges.append(r)
                if r.end is None:
                    break
                offset = r.end + rng.randrange(0, 40)
    if l3:
        offset = rng.randrange(0, 30)
        while len(ranges) < rng.randrange(1, MAX_RANGES + 1):
            r = _random_range(rng, "l3", offset)
            ranges.append(r)
            if r.end is None:
                break
            offset = r.end + rng.randrange(0, 40)
    return tuple(ranges)


def _random_spec(rng):
    return KeySpec(_random_recipe(rng, l3=True), _random_recipe(rng, l3=rng.random() < 0.8),
                   _random_recipe(rng, l3=False))


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_batch_path_equals_reference_path(seed):
    """frame_keys (numpy) gives frame_key's key, message and class for every frame."""
    rng = random.Random(seed)
    frames = [_random_frame(rng) for _ in range(1200)]
    specs = [L3L4, FRAME, _random_spec(rng), _random_spec(rng)]
    kinds = {parse(f).kind for f in frames}
    assert kinds == set(FrameClass), f"seed {seed}: the frames should cover every class"
    for spec in specs:
        keys, texts, classes = frame_keys(FrameBatch.from_frames(frames), spec, messages=True, classes=True)
        for i, frame in enumerate(frames):
            assert classes[i] == parse(frame).kind, f"seed {seed}, frame {i}: {frame.hex()}"
            assert texts[i] == message(frame, spec), f"seed {seed}, spec {spec}, frame {i}: {frame.hex()}"
            assert int(keys[i]) == frame_key(frame, spec), f"seed {seed}, spec {spec}, frame {i}: {frame.hex()}"


def test_batch_over_a_shared_buffer():
    """Frames anywhere in a buffer (a capture's records), in any order, sharing bytes, in chunks."""
    rng = random.Random(7)
    frames = [_random_frame(rng) for _ in range(300)]
    buffer = bytearray(rng.randbytes(100))
    offsets = []
    for f in frames:
        buffer += rng.randbytes(rng.randrange(0, 20))
        offsets.append(len(buffer))
        buffer += f
    order = list(range(len(frames)))
    rng.shuffle(order)
    batch = FrameBatch(bytes(buffer), [offsets[i] for i in order], [len(frames[i]) for i in order])
    expected = [frame_key(frames[i], L3L4) for i in order]
    assert list(frame_keys(batch, L3L4)) == expected
    import apbbf.model.packet as packet
    old = packet.batch._CHUNK_BYTES
    try:
        packet.batch._CHUNK_BYTES = 2000                                 # many internal chunks
        assert list(frame_keys(batch, L3L4)) == expected
    finally:
        packet.batch._CHUNK_BYTES = old
    assert frame_keys(FrameBatch.from_frames([]), L3L4).shape == (0,)


# The key specification object ---------------------------------------------------------------------------------------

def test_presets_and_text_round_trip():
    assert str(L3L4) == "l3l4" and str(FRAME) == "frame"
    assert KeySpec.parse("l3l4") == L3L4 and KeySpec.parse(" frame ") == FRAME
    assert L3L4.ipv4 == (Range("l3", 0, None, bytes.fromhex("ff00ffffffffffff00ff0000")),)
    assert L3L4.ipv6 == (Range("l3", 0, None, bytes.fromhex("f00fffffffffff00")),)
    rng = random.Random(11)
    for _ in range(200):
        spec = _random_spec(rng)
        assert KeySpec.parse(str(spec)) == spec
    spec = KeySpec.parse("ipv4=l3:0+20/ff00ffffffffffff00ff0000,l3:20+*;ipv6=l3l4")
    assert spec.ipv6 == L3L4.ipv6 and spec.other == FRAME.other
    assert spec.ipv4[1] == Range("l3", 20)
    plain = KeySpec.parse("frame:0+12,frame:14+*")
    assert plain.ipv4 == plain.ipv6 == plain.other                 # frame ranges: every class


@pytest.mark.parametrize("args, error, words", [
    (("x", 0), ValueError, "base"),
    ((3, 0), TypeError, "base"),
    (("frame", -1), ValueError, "offset"),
    (("frame", 1.5), TypeError, "offset"),
    (("frame", 0, 0), ValueError, "length"),
    (("frame", 0, 65536), ValueError, "length"),
    (("frame", 0, 4, "ff"), TypeError, "mask"),
    (("frame", 0, 2, b"\xff" * 3), ValueError, "mask"),
    (("l3", 0, None, b"\xff" * 65), ValueError, "mask"),
])
def test_range_checks(args, error, words):
    with pytest.raises(error, match=words):
        Range(*args)


@pytest.mark.parametrize("recipe, words", [
    ((), "1 to 8"),
    (tuple(Range("l3", 10 * i, 5) for i in range(MAX_RANGES + 1)), "1 to 8"),
    ((Range("l3", 0, 10), Range("l3", 5, 10)), "overlap"),
    ((Range("l3", 20, 10), Range("l3", 0, 10)), "overlap or are out of order"),
    ((Range("l3", 0), Range("l3", 50, 10)), "last l3 range"),
    ((Range("l3", 0, 10), Range("frame", 0, 6)), "before l3"),
    ((Range("frame", 0, 15), Range("l3", 0, 10)), "end by byte 14"),
    ((Range("frame", 0), Range("l3", 0, 10)), "end by byte 14"),
])
def test_recipe_checks(recipe, words):
    with pytest.raises(ValueError, match=f"ipv4: .*{words}|{words}"):
        KeySpec(ipv4=recipe)


def test_spec_checks():
    with pytest.raises(ValueError, match="other"):
        KeySpec(other=(Range("l3", 0),))
    with pytest.raises(TypeError, match="ipv6"):
        KeySpec(ipv6=["frame:0+*"])
    with pytest.raises(TypeError, match="spec"):
        frame_key(b"", "l3l4")
    with pytest.raises(TypeError, match="frame"):
        frame_key("abc", L3L4)
    for text, words in (("l3:0+", "base:offset"), ("ipv4=l3:0+*;ipv4=frame", "twice"), ("ip=frame", "CLASS"),
                        ("l3:0+4/fff", "two hex digits"), ("other=l3:0+*", "other")):
        with pytest.raises(ValueError, match=words):
            KeySpec.parse(text)
    with pytest.raises(TypeError, match="key"):
        KeySpec.parse(None)
    with pytest.raises(ValueError, match="data_width"):
        key_of_message(bytes(64), 24)
    with pytest.raises(ValueError, match="whole number"):
        key_of_message(bytes(60), 64)


def test_batch_checks():
    with pytest.raises(TypeError, match="data"):
        FrameBatch([1, 2], [0], [1])
    with pytest.raises(ValueError, match="inside data"):
        FrameBatch(b"abc", [1], [3])
    with pytest.raises(ValueError, match="same length"):
        FrameBatch(b"abc", [0, 1], [1])
    with pytest.raises(TypeError, match="offsets"):
        FrameBatch(b"abc", [0.5], [1])
    with pytest.raises(TypeError, match="batch"):
        frame_keys([b"abc"], L3L4)
    assert np.array_equal(frame_keys(FrameBatch(b"abcd", [0, 2], [2, 2]), FRAME),
                          [frame_key(b"ab", FRAME), frame_key(b"cd", FRAME)])


# Link types -------------------------------------------------------------------------------------------------------

def _link_record(linktype: int, packet, rng: random.Random | None = None) -> bytes:
    """``packet`` (a scapy IP/IPv6 packet, or another layer) as a record of ``linktype``, built by scapy's own
    link layers (LINKTYPE_ numbers as scapy's ``conf.l2types`` has them)."""
    from scapy.layers.l2 import CookedLinux, CookedLinuxV2, Loopback, LoopbackOpenBSD
    from scapy.layers.ppp import HDLC, PPP
    rng = rng or random.Random(0)
    ip = packet.haslayer(IP) or packet.haslayer(IPv6)
    ethertype = 0x0800 if packet.haslayer(IP) else 0x86DD if packet.haslayer(IPv6) else 0x0806
    family = 2 if packet.haslayer(IP) else 30 if packet.haslayer(IPv6) else 99
    if linktype == 1:
        return bytes(Ether(**MACS) / packet)
    if linktype == 113:
        return bytes(CookedLinux(pkttype=rng.choice((0, 4)), lladdrtype=1, lladdrlen=6, src=rng.randbytes(6),
                                 proto=ethertype) / packet)
    if linktype == 276:
        return bytes(CookedLinuxV2(proto=ethertype, ifindex=rng.randrange(1, 9), pkttype=rng.choice((0, 4)),
                                   lladdrtype=1, lladdrlen=6, src=rng.randbytes(6)) / packet)
    if linktype == 0:
        return bytes(Loopback(type=family) / packet)
    if linktype == 108:
        return bytes(LoopbackOpenBSD(type=family) / packet)
    if linktype in (101, 228, 229):
        assert ip
        return bytes(packet)
    if linktype == 9:
        return bytes(PPP(proto=0x0021 if packet.haslayer(IP) else 0x0057 if packet.haslayer(IPv6) else 0xC021)
                     / packet)
    if linktype == 50:
        return bytes(HDLC() / PPP(proto=0x0021 if packet.haslayer(IP) else 0x0057) / packet)
    raise ValueError(linktype)


LINKTYPES = (1, 113, 276, 0, 108, 101, 9, 50)


def _ip_packets(rng: random.Random, count: int):
    packets = []
    for _ in range(count):
        payload = Raw(rng.randbytes(rng.choice((0, 10, 300, 1400))))
        l4 = rng.choice((TCP(sport=rng.randrange(65536), dport=443, seq=rng.getrandbits(32)), UDP(dport=53)))
        if rng.random() < 0.6:
            ip = v4(ttl=rng.randrange(1, 256), tos=rng.randrange(256), ident=rng.randrange(65536))
        else:
            ip = v6(hlim=rng.randrange(1, 256), tc=rng.randrange(256), fl=rng.randrange(1 << 20))
        packets.append(ip / l4 / payload)
    return packets


def test_every_link_type_gives_the_ethernet_l3l4_key():
    """The same IP packets as records of every link type: record_key (per record) and network_layer with
    frame_keys (batch) give the key of the Ethernet frame that carries them, for l3l4 and for l3 ranges."""
    seed = 21
    print(f"seed {seed}")
    rng = random.Random(seed)
    packets = _ip_packets(rng, 60)
    specs = [L3L4, KeySpec.parse("l3:12+8,l3:20+4"), KeySpec.parse("ipv4=l3:0+20/ff00ffff;ipv6=l3:8+32")]
    for spec in specs:
        expected = [frame_key(eth(p), spec) for p in packets]
        for linktype in LINKTYPES:
            records = [_link_record(linktype, p, rng) for p in packets]
            assert [record_key(r, spec, linktype) for r in records] == expected, f"{spec} on {linktype}"
            view, ethertypes = network_layer(FrameBatch.from_frames(records), linktype)
            assert frame_keys(view, spec, ethertypes=ethertypes).tolist() == expected, f"{spec} on {linktype}"
    for linktype, version in ((228, 4), (229, 6)):
        chosen = [p for p in packets if p.version == version]
        assert [record_key(bytes(p), L3L4, linktype) for p in chosen] == [frame_key(eth(p), L3L4) for p in chosen]


def test_frame_key_skips_the_link_header():
    """frame on a cooked or loopback capture keys the packet after the link header: the same packet seen on two
    interfaces (different index, packet type, address) has one key, and that key is the raw packet's."""
    rng = random.Random(4)
    for packet in _ip_packets(rng, 10) + [ARP(pdst="10.0.0.1")]:
        raw = frame_key(bytes(packet), FRAME, 0x0800)
        for linktype in (113, 276, 0, 108):
            if linktype in (0, 108) and not (packet.haslayer(IP) or packet.haslayer(IPv6)):
                continue
            one, two = _link_record(linktype, packet, rng), _link_record(linktype, packet, rng)
            assert record_key(one, FRAME, linktype) == record_key(two, FRAME, linktype)
            assert record_key(one, FRAME, linktype) == raw
            assert record_key(one, L3L4, linktype) == record_key(two, L3L4, linktype)


def test_cooked_vlan_tags_are_skipped():
    """An SLL record of a VLAN interface (protocol 0x8100, then TCI and the inner type) keys as the tagged
    Ethernet frame under l3l4."""
    from scapy.layers.l2 import CookedLinux
    packet = v4() / UDP() / Raw(b"x" * 50)
    record = bytes(CookedLinux(proto=0x8100) / Dot1Q(vlan=12) / packet)
    assert record_key(record, L3L4, 113) == frame_key(eth(packet, tags=[("q", 12)]), L3L4) == frame_key(eth(packet),
                                                                                                          L3L4)


@pytest.mark.slow
def test_link_layers_in_bulk_equal_per_record():
    """Random and damaged records of every link type, short ones included (header cut, NULL in either byte
    order, PPP with and without address/control and protocol compression): the batch path equals record_key."""
    seed = 22
    print(f"seed {seed}")
    rng = random.Random(seed)
    for linktype in LINKTYPES + (228, 229, 127):
        records = []
        for _ in range(300):
            roll = rng.random()
            if roll < 0.3:
                record = rng.randbytes(rng.randrange(0, 80))
            else:
                packet = rng.choice(_ip_packets(rng, 1) + [ARP()])
                if linktype in (101, 228, 229, 127) and isinstance(packet, ARP):
                    packet = v4() / UDP()
                record = _link_record(1 if linktype == 127 else 101 if linktype in (228, 229) else linktype,
                                      packet, rng)
                if linktype == 0 and rng.random() < 0.5:                   # written on a big-endian host
                    record = record[3::-1] + record[4:]
                if linktype == 9 and rng.random() < 0.5:
                    record = (b"\xff\x03" if rng.random() < 0.5 else b"") + (
                        record[1:] if record[0] == 0 and rng.random() < 0.5 else record)
                if rng.random() < 0.2:
                    record = record[:rng.randrange(len(record) + 1)]
            records.append(record)
        specs = [FRAME] if linktype == 127 else [L3L4, FRAME, KeySpec.parse("l3:0+16/ffff,l3:20+*")]
        for spec in specs:
            view, ethertypes = network_layer(FrameBatch.from_frames(records), linktype)
            keys, texts = frame_keys(view, spec, messages=True, ethertypes=ethertypes)
            for i, record in enumerate(records):
                assert int(keys[i]) == record_key(record, spec, linktype), \
                    f"seed {seed}, link type {linktype}, {spec}, record {i}: {record.hex()}"


@pytest.mark.parametrize("linktype, key, words", [
    (127, "l3l4", ["key l3l4", "127 (IEEE802_11_RADIOTAP)", "--key frame"]),
    (105, "l3:0+20", ["needs the network layer", "105 (IEEE802_11)", "--key frame"]),
    (113, "frame:0+12,l3:0+*", ["frame:0+12", "113 (LINUX_SLL)", "l3 ranges"]),
    (101, "frame:14+*", ["frame:14+*", "101 (RAW)", "l3l4"]),
    (276, "other=frame:0+*/ff", ["frame:0+*/ff", "276 (LINUX_SLL2)"]),
])
def test_keys_a_link_type_cannot_give_are_refused(linktype, key, words):
    with pytest.raises(ValueError) as error:
        check_link(KeySpec.parse(key), linktype)
    for word in words:
        assert word in str(error.value)
    with pytest.raises(ValueError):
        record_key(b"\x45" + bytes(40), KeySpec.parse(key), linktype)


def test_keys_every_link_type_can_give():
    for linktype in LINKTYPES + (228, 229):
        for key in ("l3l4", "frame", "l3:12+8", "ipv4=l3l4;ipv6=l3:0+40;other=frame"):
            check_link(KeySpec.parse(key), linktype)
    check_link(FRAME, 127)
    check_link(KeySpec.parse("frame:0+12,l3:0+*"), 1)
    assert linktype_name(113) == "113 (LINUX_SLL)" and linktype_name(4242) == "4242"
