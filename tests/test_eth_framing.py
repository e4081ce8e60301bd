# amaranth: UnusedElaboratable=no
"""The Ethernet MAC's framing blocks in Amaranth's simulator, byte by byte against frames built in Python (FCS from
zlib's CRC-32): receive (preamble and SFD, FCS check and removal, PHY errors, runts, back-to-back frames), transmit
(preamble, SFD, padding, FCS, the inter-frame gap, errors, underflow) and the beat packing each way."""

import random
import struct
import zlib

import pytest
from amaranth import Module

from apbbf.hdl.eth import BeatPacker, BeatUnpacker, RXFramer, TXFramer
from apbbf.hdl.eth.layouts import MIN_IFG
from .streams import run_simulation

SEED = 20261125


def fcs(frame: bytes) -> bytes:
    return struct.pack("<I", zlib.crc32(frame))


def wire(frame: bytes, *, preamble=7, good_fcs=True) -> list[int]:
    body = frame + fcs(frame)
    if not good_fcs:
        body = body[:-1] + bytes([body[-1] ^ 0x01])
    return [0x55] * preamble + [0xD5] + list(body)


def random_frame(rng, length):
    return bytes(rng.getrandbits(8) for _ in range(length))


# --- receive ---------------------------------------------------------------------------------------------------

def run_rx(symbols):
    """Drive ``symbols`` (``(data, dv, er)`` per clock) into an RXFramer; returns the frames out as
    ``(bytes, error)`` and the event pulse counts."""
    dut = RXFramer()
    frames, current, counts = [], [], {"frame": 0, "bad_fcs": 0, "phy_error": 0, "runt": 0, "bad_preamble": 0}

    async def bench(ctx):
        for data, dv, er in list(symbols) + [(0, 0, 0)] * 4:
            ctx.set(dut.gmii.data, data)
            ctx.set(dut.gmii.dv, dv)
            ctx.set(dut.gmii.er, er)
            await ctx.delay(0)
            if ctx.get(dut.o.valid):
                current.append(ctx.get(dut.o.payload.data))
                if ctx.get(dut.o.payload.last):
                    frames.append((bytes(current), ctx.get(dut.o.payload.error)))
                    current.clear()
            for name in counts:
                counts[name] += ctx.get(getattr(dut, name))
            await ctx.tick()

    run_simulation(dut, bench, period=8e-9)
    assert not current, "bytes out without a last one"
    return frames, counts


def gap(n=MIN_IFG):
    return [(0, 0, 0)] * n


def symbols_of(byte_list, er_at=()):
    return [(b, 1, int(i in er_at)) for i, b in enumerate(byte_list)]


def test_rx_good_frames_back_to_back():
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    lengths = [60, 61, 63, 64, 65, 127, 128, 1514, 9000] + [rng.randrange(60, 1515) for _ in range(8)]
    frames = [random_frame(rng, n) for n in lengths]
    symbols = []
    for frame in frames:
        symbols += symbols_of(wire(frame)) + gap()
    got, counts = run_rx(symbols)
    assert got == [(frame, 0) for frame in frames]
    assert counts["frame"] == len(frames) and counts["bad_fcs"] == counts["runt"] == counts["phy_error"] == 0


def test_rx_one_idle_cycle_between_frames_and_short_preambles():
    rng = random.Random(SEED + 1)
    frames = [random_frame(rng, 60 + i) for i in range(4)]
    symbols = []
    for i, frame in enumerate(frames):
        symbols += symbols_of(wire(frame, preamble=i)) + gap(1)       # 0..3 preamble bytes, then the SFD
    assert run_rx(symbols)[0] == [(frame, 0) for frame in frames]


def test_rx_bad_fcs():
    rng = random.Random(SEED + 2)
    good, bad = random_frame(rng, 100), random_frame(rng, 100)
    got, counts = run_rx(symbols_of(wire(good)) + gap() + symbols_of(wire(bad, good_fcs=False)) + gap()
                         + symbols_of(wire(good)) + gap())
    assert got == [(good, 0), (bad, 1), (good, 0)]
    assert counts["bad_fcs"] == 1 and counts["frame"] == 3


@pytest.mark.parametrize("where", ["preamble", "first", "middle", "fcs"])
def test_rx_phy_error(where):
    rng = random.Random(SEED + 3)
    frame = random_frame(rng, 80)
    symbols = wire(frame)
    index = {"preamble": 2, "first": 8, "middle": 50, "fcs": len(symbols) - 1}[where]
    got, counts = run_rx(symbols_of(symbols, er_at={index}) + gap() + symbols_of(wire(frame)) + gap())
    assert got == [(frame, 1), (frame, 0)]
    assert counts["phy_error"] == 1


def test_rx_runts_and_fragments():
    rng = random.Random(SEED + 4)
    runt = random_frame(rng, 59)                          # 63 bytes with the FCS
    good = random_frame(rng, 60)
    symbols = (symbols_of(wire(runt)) + gap() + symbols_of(wire(good)) + gap()
               + symbols_of([0x55] * 7 + [0xD5, 1, 2, 3, 4]) + gap()             # FCS-sized fragment: dropped
               + symbols_of([0x55] * 3) + gap()                                  # preamble only: dropped
               + symbols_of(wire(random_frame(rng, 1))) + gap()                  # one byte: a runt
               + symbols_of([0x55, 0x55, 0x12, 0x34] + wire(good)[3:]) + gap()   # not a preamble: dropped
               + symbols_of(wire(good)) + gap())
    got, counts = run_rx(symbols)
    assert [error for _, error in got] == [1, 0, 1, 0]
    assert got[0][0] == runt and got[1][0] == good and len(got[2][0]) == 1 and got[3][0] == good
    assert counts["runt"] == 3 and counts["frame"] == 4 and counts["bad_preamble"] == 2


# --- transmit --------------------------------------------------------------------------------------------------

def run_tx(frames, *, errors=(), gaps=None, starve=None, cycles=None, ifg=MIN_IFG):
    """Offer ``frames`` to a TXFramer back to back (``gaps[i]`` idle clocks before frame i; ``starve=(i, n)``:
    no byte offered at byte n of frame i); returns the GMII symbols ``(data, en, er)`` of every clock and the
    event counts."""
    dut = TXFramer(ifg=ifg)
    symbols, counts = [], {"frame": 0, "underflow": 0}
    total = cycles or sum(len(f) + 100 for f in frames) + 100

    async def producer(ctx):
        for index, frame in enumerate(frames):
            for _ in range((gaps or {}).get(index, 0)):
                await ctx.tick()
            for n, byte in enumerate(frame):
                if starve == (index, n):
                    ctx.set(dut.i.valid, 0)
                    await ctx.tick().repeat(3)
                ctx.set(dut.i.payload.data, byte)
                ctx.set(dut.i.payload.last, n == len(frame) - 1)
                ctx.set(dut.i.payload.error, index in errors and n == len(frame) - 1)
                ctx.set(dut.i.valid, 1)
                while not (await ctx.tick().sample(dut.i.ready))[2]:
                    pass
            ctx.set(dut.i.valid, 0)

    async def monitor(ctx):
        for _ in range(total):
            await ctx.delay(0)
            symbols.append((ctx.get(dut.gmii.data), ctx.get(dut.gmii.en), ctx.get(dut.gmii.er)))
            for name in counts:
                counts[name] += ctx.get(getattr(dut, name))
            await ctx.tick()

    run_simulation(dut, monitor, background=(producer,), period=8e-9)
    return symbols, counts


def split(symbols):
    """The frames on the wire as ``(bytes, any er)`` and the idle gaps between them, clocks."""
    frames, gaps, current, errs, idle, seen = [], [], [], False, 0, False
    for data, en, er in symbols:
        if en:
            if not current and seen:
                gaps.append(idle)
            current.append(data)
            errs |= bool(er)
            idle = 0
        else:
            if current:
                frames.append((bytes(current), errs))
                current, errs, seen = [], False, True
            idle += 1
    assert not current
    return frames, gaps


def padded(frame):
    return frame + bytes(max(0, 60 - len(frame)))


def test_tx_frames_padding_fcs_and_minimum_gap():
    rng = random.Random(SEED + 5)
    print(f"seed {SEED + 5}")
    frames = [random_frame(rng, n) for n in (1, 14, 59, 60, 61, 64, 1514, 100, 60, 60)]
    symbols, counts = run_tx(frames)
    sent, gaps = split(symbols)
    assert [data for data, _ in sent] == [bytes(wire(padded(f))) for f in frames]
    assert not any(err for _, err in sent)
    assert gaps == [MIN_IFG] * (len(frames) - 1)            # offered back to back: exactly the minimum gap
    assert counts == {"frame": len(frames), "underflow": 0}


def test_tx_longer_gap_and_idle_source():
    rng = random.Random(SEED + 6)
    frames = [random_frame(rng, 70) for _ in range(3)]
    symbols, _ = run_tx(frames, ifg=20, gaps={2: 200})
    sent, gaps = split(symbols)
    assert [data for data, _ in sent] == [bytes(wire(f)) for f in frames]
    assert gaps[0] == 20 and gaps[1] > 100


def test_tx_error_marks_frame():
    rng = random.Random(SEED + 7)
    frames = [random_frame(rng, 80) for _ in range(3)]
    symbols, counts = run_tx(frames, errors={1})
    sent, _ = split(symbols)
    assert sent[0] == (bytes(wire(frames[0])), False) and sent[2] == (bytes(wire(frames[2])), False)
    data, err = sent[1]
    assert err and data[:-4] == bytes(wire(frames[1]))[:-4]
    assert data[-4:] == bytes(b ^ 0xFF for b in fcs(frames[1]))
    # er is over the FCS bytes only
    ers = [er for _, en, er in symbols if en]
    assert sum(ers) == 4


def test_tx_underflow_cuts_frame():
    rng = random.Random(SEED + 8)
    frames = [random_frame(rng, 80) for _ in range(3)]
    symbols, counts = run_tx(frames, starve=(1, 30))
    sent, gaps = split(symbols)
    assert sent[0] == (bytes(wire(frames[0])), False) and sent[2] == (bytes(wire(frames[2])), False)
    assert sent[1][1] and len(sent[1][0]) == 8 + 30 + 1          # cut where the bytes stopped, with er
    assert all(g >= MIN_IFG for g in gaps)
    assert counts == {"frame": 2, "underflow": 1}


def test_tx_ifg_range():
    with pytest.raises(ValueError, match="ifg"):
        TXFramer(ifg=11)
    with pytest.raises(TypeError, match="ifg"):
        TXFramer(ifg=12.0)


# --- beats -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("data_width", [8, 32, 64])
def test_pack_unpack_round_trip(data_width):
    """Bytes to beats (BeatPacker) and back (BeatUnpacker) with a FIFO between them that has room: the same
    frames, the same errors, and the unpacker sends without a gap."""
    from amaranth.lib import fifo
    rng = random.Random(SEED + data_width)
    frames = [(random_frame(rng, rng.choice([1, 2, 7, 8, 9, 60, 61, 200])), rng.random() < 0.3)
              for _ in range(30)]
    m = Module()
    m.submodules.packer = packer = BeatPacker(data_width)
    m.submodules.fifo = buffer = fifo.SyncFIFO(width=packer.o.payload.shape().size, depth=64)
    m.submodules.unpacker = unpacker = BeatUnpacker(data_width)
    m.d.comb += [buffer.w_data.eq(packer.o.payload), buffer.w_en.eq(packer.o.valid), packer.o_room.eq(3),
                 unpacker.i.payload.eq(buffer.r_data), unpacker.i.valid.eq(buffer.r_rdy),
                 buffer.r_en.eq(unpacker.i.ready), unpacker.o.ready.eq(1)]
    got, current, first_valid, valid_cycles = [], [], [], [0]

    async def producer(ctx):
        for frame, error in frames:
            for n, byte in enumerate(frame):
                ctx.set(packer.i.payload.data, byte)
                ctx.set(packer.i.payload.last, n == len(frame) - 1)
                ctx.set(packer.i.payload.error, error and n == len(frame) - 1)
                ctx.set(packer.i.valid, 1)
                await ctx.tick()
            ctx.set(packer.i.valid, 0)
            await ctx.tick().repeat(rng.randrange(1, 3))

    async def consumer(ctx):
        for _ in range(sum(len(f) + 4 for f, _ in frames) + 200):
            await ctx.delay(0)
            if ctx.get(unpacker.o.valid):
                current.append(ctx.get(unpacker.o.payload.data))
                if ctx.get(unpacker.o.payload.last):
                    got.append((bytes(current), bool(ctx.get(unpacker.o.payload.error))))
                    current.clear()
            await ctx.tick()

    run_simulation(m, consumer, background=(producer,), period=8e-9)
    assert got == frames


def test_packer_overflow_cuts_and_drops():
    """With room for only a few beats, a frame that does not fit is cut with error, a frame that finds no room
    is dropped whole, and every frame written still ends with a last beat."""
    m = Module()
    m.submodules.packer = packer = BeatPacker(8)
    beats, overflow = [], [0]
    room = [3]

    async def producer(ctx):
        # frame A: 5 bytes with room 3 then nothing freed: two beats fit normally (room 3, 2 >= 2), the third
        # is written as a cut last beat (room 1), the rest discarded.
        for n in range(5):
            ctx.set(packer.i.payload.data, n)
            ctx.set(packer.i.payload.last, n == 4)
            ctx.set(packer.i.valid, 1)
            await ctx.tick()
        # frame B: one byte, no room at all: dropped whole
        ctx.set(packer.i.payload.data, 9)
        ctx.set(packer.i.payload.last, 1)
        await ctx.tick()
        ctx.set(packer.i.valid, 0)

    async def sink(ctx):
        written = 0
        for _ in range(12):
            ctx.set(packer.o_room, max(0, 3 - written))
            await ctx.delay(0)
            overflow[0] += ctx.get(packer.overflow)
            if ctx.get(packer.o.valid):
                written += 1
                beats.append((ctx.get(packer.o.payload.data), ctx.get(packer.o.payload.last),
                              ctx.get(packer.o.payload.user.error)))
            await ctx.tick()

    run_simulation(m, sink, background=(producer,), period=8e-9)
    assert beats == [(0, 0, 0), (1, 0, 0), (2, 1, 1)]
    assert overflow[0] == 2
