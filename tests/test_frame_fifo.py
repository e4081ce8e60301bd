# amaranth: UnusedElaboratable=no
"""FrameFIFO: a frame leaves only once it is whole, frames keep their order and bytes; a frame longer than the
queue is let through when the queue fills; parameters checked."""

import random

import pytest
from amaranth.lib import data
from amaranth.sim import Simulator

from apbbf.hdl.eth.layouts import beat_layout
from apbbf.hdl.lib.frame_fifo import FrameFIFO

from .queue_contract import QueueContract, drive

SEED = 0xF1F0


def _run(frames, *, depth=16, gaps=3, out_busy=0.0, seed=SEED):
    dut = FrameFIFO(beat_layout(64), depth)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    rng = random.Random(seed)
    got, log = [], []

    async def source(ctx):
        for frame in frames:
            for index, beat in enumerate(frame):
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload.data, beat)
                ctx.set(dut.i.payload.keep, 0xFF)
                ctx.set(dut.i.payload.last, index == len(frame) - 1)
                await ctx.tick().until(dut.i.ready)
                ctx.set(dut.i.valid, 0)
                for _ in range(rng.randrange(gaps + 1)):
                    await ctx.tick()
                    log.append(("gap", index))

    async def sink(ctx):
        current, whole_when_started = [], None
        written = 0
        while len(got) < len(frames):
            ctx.set(dut.o.ready, rng.random() >= out_busy)
            *_, valid, ready, data, last = await ctx.tick().sample(dut.o.valid, dut.o.ready, dut.o.payload.data,
                                                                    dut.o.payload.last)
            if valid and ready:
                current.append(data)
                if last:
                    got.append(current)
                    current = []

    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run()
    return got


def test_frames_whole_and_in_order():
    print(f"seed {SEED:#x}")
    rng = random.Random(SEED)
    frames = [[rng.getrandbits(64) for _ in range(rng.randrange(1, 12))] for _ in range(40)]
    assert _run(frames, out_busy=0.3) == frames


def test_no_beat_before_the_last_is_in():
    """The output is held until the frame's last beat has been written, however slowly the beats come."""
    dut = FrameFIFO(beat_layout(64), 16)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    seen = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        for index in range(5):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload.data, index)
            ctx.set(dut.i.payload.last, index == 4)
            await ctx.tick()
            ctx.set(dut.i.valid, 0)
            for _ in range(10):
                *_, valid = await ctx.tick().sample(dut.o.valid)
                seen.append((index, valid))

    sim.add_testbench(bench)
    sim.run()
    assert not any(valid for index, valid in seen if index < 4)
    assert any(valid for index, valid in seen if index == 4)


def test_longer_than_the_queue_goes_through():
    rng = random.Random(SEED)
    frames = [[rng.getrandbits(64) for _ in range(40)], [1, 2, 3]]
    assert _run(frames, depth=16, gaps=0) == frames


@pytest.mark.parametrize("kwargs, error", [(dict(depth=8), ValueError), (dict(depth=24), ValueError),
                                           (dict(depth=16.0), TypeError),
                                           (dict(layout=data.StructLayout({"data": 8})), ValueError),
                                           (dict(layout=data.StructLayout({"last": 2})), ValueError)])
def test_bad_parameters(kwargs, error):
    with pytest.raises(error, match=next(iter(kwargs))):
        FrameFIFO(**{"layout": beat_layout(64), **kwargs})


def _frames(rng, longest):
    """Beats (as bits of ``beat_layout(64)``) of random frames of 1 to ``longest`` beats, endlessly."""
    layout = beat_layout(64)
    while True:
        length = rng.randrange(1, longest + 1)
        for index in range(length):
            yield layout.const({"data": rng.getrandbits(64), "keep": 0xFF, "last": index == length - 1,
                                "user": {"error": rng.getrandbits(1)}}).as_bits()


@pytest.mark.parametrize("write_rate, read_rate", [(0.9, 0.9), (0.95, 0.4), (0.4, 0.95)],
                         ids=["even", "fills", "drains"])
def test_contract(write_rate, read_rate):
    """The queue contract (tests/queue_contract.py) with frames shorter than the queue: beats in order and whole,
    a write refused only with ``depth`` beats held, a beat offered only once its frame's last beat is in, and then
    within two clocks."""
    print(f"seed {SEED}")
    dut = FrameFIFO(beat_layout(64), 16)
    last = beat_layout(64)["last"].offset
    contract = QueueContract(capacity=16, min_latency=1, max_latency=2,
                             releasable=lambda held: any(beat >> last & 1 for beat, _ in held))
    rng = random.Random(SEED)

    async def bench(ctx):
        await drive(ctx, contract, rng, w_valid=dut.i.valid, w_ready=dut.i.ready, w_data=dut.i.payload.as_value(),
                    r_valid=dut.o.valid, r_ready=dut.o.ready, r_data=dut.o.payload.as_value(),
                    width=beat_layout(64).size, cycles=1000, write_rate=write_rate, read_rate=read_rate,
                    entries=_frames(rng, 12))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert contract.reads > 300, contract.reads
    if write_rate > read_rate:
        assert contract.refusals > 10, contract.refusals
