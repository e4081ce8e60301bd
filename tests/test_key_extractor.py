# amaranth: UnusedElaboratable=no
"""The streaming key extractor (hdl/packet/key_extractor.py): every key, length and class equal to the model's
(:func:`apbbf.model.packet.frame_key`, :func:`~apbbf.model.packet.parse`), in order, one key per frame, within the
stated latency, at one beat per cycle.

Frames: scapy-built IPv4/IPv6 TCP/UDP with 0 to 2 VLAN tags (0x8100, 0x88A8), IPv4 options, IP lengths shorter
and longer than the frame, ARP, runts of 1..13 bytes, random bytes, 60-byte minimum frames back to back, a jumbo
frame, and lengths covering every residue mod W/8 (every keep pattern of the last beat). A frame is at least one
byte on the stream (no beat carries keep 0). Recipes of several ranges, random and directed, are in
``tests/test_key_extractor_recipes.py``; the frames and the bench in ``tests/extractor_frames.py`` (set
``APBBF_VCD=1`` to write a VCD of each run under ``build/vcd/``).
"""
import itertools
import random

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6

from apbbf.hdl.packet.key_extractor import KeyExtractor
from apbbf.model.packet import KeySpec, Range

from .extractor_frames import SPECS, frames_mixed, run, tagged

WIDTHS = (64, 512)


#: The (spec, fcs, gap) cases of test_mixed in ``make test``, at each width: every value of each paired with every
#: value of each other (each spec with and without FCS and gaps, FCS and gaps in all four pairings); the other six
#: of the full product run in ``make test-slow``.
MIXED_QUICK = {("frame", False, 0.0), ("frame", True, 0.3), ("l3l4", False, 0.3), ("l3l4", True, 0.0),
               ("user", False, 0.0), ("user", True, 0.3)}
#: At 512 bits ``make test`` runs one of them (the bench's recipe, with the FCS); the 512-bit extractor's other
#: specs, gaps and lengths run in ``make test-slow``, and beside the de-duplicator in ``make test``.
MIXED_QUICK_512 = {("l3l4", True, 0.0)}


@pytest.mark.parametrize("width,spec,fcs,gap", [
    pytest.param(width, spec, fcs, gap, id=f"W{width}-{spec}-{'fcs' if fcs else 'nofcs'}-{'gap30' if gap else 'nogap'}",
                 marks=[] if (spec, fcs, gap) in (MIXED_QUICK_512 if width == 512 else MIXED_QUICK)
                 else [pytest.mark.slow])
    for width, spec, fcs, gap in itertools.product(WIDTHS, ("frame", "l3l4", "user"), (False, True), (0.0, 0.3))])
def test_mixed(width, spec, fcs, gap):
    """Every kind of frame, random idle gaps (seeded) or back to back. ``make test`` runs the pairwise cases of
    :data:`MIXED_QUICK` (:data:`MIXED_QUICK_512` at 512 bits): the frames, the bench and the checks are the same
    in every case, so what another pairing could add is an interaction of three parameters."""
    seed = 11 + width + 2 * fcs + int(10 * gap) + list(SPECS).index(spec)
    frames = frames_mixed(random.Random(seed), 40, width)
    run(frames, SPECS[spec], width, fcs=fcs, gap=gap, seed=seed, name=f"mixed_{width}_{spec}_{fcs}_{gap}")


USER3 = KeySpec((Range("l3", 40, 16, b"\xff\x00\xff"),), (Range("frame", 0, 30),), (Range("frame", 70, None),))


@pytest.mark.parametrize("width,spec", [
    pytest.param(width, spec, id=f"W{width}-{spec}",
                 # make test: user3 at 64, 128 and 256 bits, user2 at 64 (512 bits in test_mixed)
                 marks=[pytest.mark.slow] if width == 512 or (width > 64 and spec == "user2") else [])
    for width in (64, 128, 256, 512) for spec in ("user2", "user3")])
def test_widths(width, spec):
    """Every beat width, user ranges (offsets that shift the segment, masks, ranges past the header), FCS."""
    frames = frames_mixed(random.Random(width), 25, width)
    run(frames, SPECS.get(spec, USER3), width, fcs=True, gap=0.2, seed=width, name=f"widths_{width}_{spec}")


@pytest.mark.parametrize("spec,fcs", [pytest.param("frame", False, id="frame-nofcs", marks=pytest.mark.slow),
                                      pytest.param("frame", True, id="frame-fcs"),
                                      pytest.param("l3l4", False, id="l3l4-nofcs"),
                                      pytest.param("l3l4", True, id="l3l4-fcs")])
def test_minimum_frames_one_key_per_clock(spec, fcs):
    """W=512, every beat a whole 60..64-byte frame (FCS included), back to back: one key per clock."""
    rng = random.Random(5)
    frames = []
    for _ in range(40):
        size = rng.randrange(60, 65) - 4 * fcs
        if rng.random() < 0.5:
            frame = tagged(IP(src="10.1.0.1", dst="10.1.0.2") / UDP() / bytes(8), rng.choice([(), (0x8100,)]), rng)
            frame = (frame + bytes(size))[:size]
        else:
            frame = bytes(rng.getrandbits(8) for _ in range(size))
        frames.append(frame)
    _, cycles = run(frames, SPECS[spec], 512, fcs=fcs, name=f"minimum_{spec}_{fcs}")
    assert all(b - a == 1 for a, b in zip(cycles, cycles[1:])), f"keys not on consecutive cycles: {cycles}"


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)], ids=lambda w: f"W{w}")
def test_every_length(width):
    """Every length 1..150 (runts, every keep pattern, the classification boundaries), IPv4 and IPv6 frames
    cut there, back to back; the l3l4 key."""
    rng = random.Random(width + 1)
    v4 = tagged(IP(src="10.0.0.1", dst="10.0.0.2", options=b"\x01" * 8) / TCP() / bytes(range(120)), (0x8100,), rng)
    v6 = tagged(IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP() / bytes(range(100)), (), rng)
    frames = [v4[:n] for n in range(1, 151)] + [v6[:n] for n in range(1, 151, 3)]
    run(frames, SPECS["l3l4"], width, name=f"every_length_{width}")


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)], ids=lambda w: f"W{w}")
def test_jumbo(width):
    """A 9000-byte IPv4 frame and a 9003-byte raw one (FCS on), among short frames."""
    rng = random.Random(9)
    jumbo = tagged(IP(src="10.0.0.1", dst="10.0.0.2") / UDP() / bytes(rng.getrandbits(8) for _ in range(8950)),
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
    from apbbf.hdl.packet.crc_maps import crc_model, trailer_matrix
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


@pytest.mark.parametrize("nbytes", [0, 1, 2, 3, 7, 64, 257, 9017])
def test_zeros_matrix_is_the_register_fed_zeros(nbytes):
    """zeros_matrix (powers by squaring) equals the bit-serial register fed ``nbytes`` zero bytes, on random
    states."""
    from apbbf.hdl.packet.crc_maps import crc_model, zeros_matrix
    model, rng = crc_model(), random.Random(nbytes)
    rows = zeros_matrix(nbytes)
    for _ in range(4):
        state = rng.getrandbits(64)
        got = sum((bin(state & row).count("1") & 1) << bit for bit, row in enumerate(rows))
        assert got == model.feed(state, 0, nbytes)
    with pytest.raises(ValueError, match="nbytes"):
        zeros_matrix(-1)


@pytest.mark.parametrize("step", (8, 16, 32, 64))
def test_state_basis(step):
    """The state's basis for beats of ``step`` bytes: T and K are inverses, a state moved over a beat through the
    basis (T, the loop, K) equals the register fed ``step`` zero bytes, and the loop has at most two ones a row
    (what keeps the per-beat loop one LUT level)."""
    from apbbf.hdl.packet.crc_maps import compose, crc_model, inverse, state_basis, transform
    model, rng, basis = crc_model(), random.Random(step), state_basis(step)
    assert compose(basis.to_basis, basis.from_basis) == tuple(1 << i for i in range(64))
    assert max(bin(row).count("1") for row in basis.loop) <= 2
    for _ in range(8):
        state = rng.getrandbits(64)
        moved = transform(basis.from_basis, transform(basis.loop, transform(basis.to_basis, state)))
        assert moved == model.feed(state, 0, step)
    with pytest.raises(ValueError, match="singular"):
        inverse((0,) * 64)


def test_matrix_estimate():
    """The XOR-tree estimate: a row of weight w costs ceil((w - 1) / 3) LUT4s; the extractor's matrices per
    stage, more slots costing more."""
    from apbbf.extractor_cost import matrix_estimate
    from apbbf.sim.designs import RegisteredKeyExtractor
    from apbbf.hdl.packet.crc_maps import xor_lut4
    assert xor_lut4([0, 1, 0b11, 0b1111, 0b11111, (1 << 10) - 1]) == 0 + 0 + 1 + 1 + 2 + 3
    one = matrix_estimate(KeyExtractor(SPECS["l3l4"], 64))
    assert set(one["stages"]) == {"step", "pad", "zeros", "trailer"} and one["total"] == sum(one["stages"].values())
    many = matrix_estimate(KeyExtractor(SPECS["multi"], 64))
    assert many["stages"]["horner"] > 0 and many["total"] > 4 * one["total"]
    with pytest.raises(TypeError, match="extractor"):
        matrix_estimate(SPECS["l3l4"])
    with pytest.raises(TypeError, match="extractor"):
        RegisteredKeyExtractor(SPECS["l3l4"])


@pytest.mark.parametrize("width", (64, 128, 256, 512), ids=lambda w: f"W{w}")
def test_the_padding_copies_have_distinct_flips(width):
    """Each copy of a slot's state for its padding holds it XORed with a constant of its own (equal inputs, Yosys
    would merge two copies). A recipe whose every variant (IPv4 and IPv6 at 0, 1 and 2 tags, other) starts its
    range at a shift of its own gives a slot the most copies there can be: one constant each, all distinct."""
    from apbbf.hdl.packet.key_extractor import _COPY_FLIPS
    assert len(set(_COPY_FLIPS)) == len(_COPY_FLIPS)
    spec = KeySpec(ipv4=(Range("l3", 0, 20),), ipv6=(Range("l3", 1, 20),), other=(Range("frame", 5, 20),))
    dut = KeyExtractor(spec, width)
    shifts = set(dut._shifts[0]) | {0}
    assert len(shifts) == (6 if width == 64 else 8) <= len(_COPY_FLIPS), sorted(shifts)
    # for any recipe: a slot's shifts are 0 and at most one per variant (class and tag count), and there are seven
    assert len(dut._variants) == 7 and len(dut._variants) + 1 <= len(_COPY_FLIPS)
    for spec in (KeySpec.frame(), KeySpec.l3l4(), spec):
        other = KeyExtractor(spec, width)
        assert all(len(set(slot) | {0}) <= len(other._variants) + 1 for slot in other._shifts)


@pytest.mark.slow                                   # Yosys on the whole extractor: a minute or two
def test_the_padding_copies_survive_optimization():
    """The copies of slot 0's state that the padding matrices read (one per shift its segment can start at) are
    still distinct registers after Yosys's ``opt_merge`` (which merges registers of the same input, as synthesis
    does): merged, they would be the one net of high fan-out the copies are there to split."""
    import json
    import subprocess
    from pathlib import Path

    from amaranth.back import rtlil

    from apbbf.toolchain import find_yosys, tool_environ
    dut = KeyExtractor(KeySpec.l3l4(), 64)
    shifts = sorted(set(dut._shifts[0]) | {0})
    assert len(shifts) >= 3, shifts                 # l3l4 at 64 bits: 0 and the IP header's 14, 18, 22 mod 8
    work = Path(__file__).resolve().parent.parent / "build" / "test_extractor_copies"  # YoWASP: a path in the repo
    work.mkdir(parents=True, exist_ok=True)
    ports = [dut.i.valid, dut.i.payload.as_value(), dut.o.valid, dut.o.payload.as_value()]   # ready is a constant
    (work / "extractor.il").write_text(rtlil.convert(dut, name="top", ports=ports))
    script = ("read_rtlil extractor.il; hierarchy -top top; proc; flatten; opt_clean; opt_merge; opt_clean; "
              "write_json out.json")
    subprocess.run([find_yosys(), "-q", "-p", script], cwd=work, check=True, timeout=300, env=tool_environ())
    cells = json.loads((work / "out.json").read_text())["modules"]["top"]["cells"]
    netnames = json.loads((work / "out.json").read_text())["modules"]["top"]["netnames"]
    q_nets = {tuple(cell["connections"]["Q"]) for cell in cells.values() if "Q" in cell["connections"]}
    q_bits = {bit for q in q_nets for bit in q}
    for shift in shifts:
        bits = netnames[f"f0s_state_0_{shift}"]["bits"]
        assert len(bits) == 64 and all(bit in q_bits for bit in bits), shift
    assert len({tuple(netnames[f"f0s_state_0_{shift}"]["bits"]) for shift in shifts}) == len(shifts)
