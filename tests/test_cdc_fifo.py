# amaranth: UnusedElaboratable=no
"""RegisteredAsyncFIFO: every word out once, in order, across two unrelated clocks, at full rate when both sides
are free, and its parameters checked."""

import random

import pytest
from amaranth import ClockDomain, Module
from amaranth.sim import Simulator

from apbbf.hdl.lib.cdc_fifo import STAGE_DEPTH, RegisteredAsyncFIFO

from .queue_contract import QueueContract

SEED = 0x19F1F0


def _run(depth, w_period, r_period, words, w_busy, r_busy, seed):
    m = Module()
    m.domains.wr = ClockDomain()
    m.domains.rd = ClockDomain()
    m.submodules.fifo = dut = RegisteredAsyncFIFO(width=16, depth=depth, w_domain="wr", r_domain="rd")
    sim = Simulator(m)
    sim.add_clock(w_period, domain="wr")
    sim.add_clock(r_period, domain="rd")
    rng = random.Random(seed)
    sent = [rng.randrange(1 << 16) for _ in range(words)]
    got, max_level = [], [0]
    first_read = []

    async def writer(ctx):
        index = 0
        while index < len(sent):
            ctx.set(dut.i.valid, 0)
            if rng.random() >= w_busy:
                ctx.set(dut.i.payload, sent[index])
                ctx.set(dut.i.valid, 1)
            *_, w_en, w_rdy, level = await ctx.tick("wr").sample(dut.i.valid, dut.i.ready, dut.w_level)
            max_level[0] = max(max_level[0], level)
            if w_en and w_rdy:
                index += 1
        ctx.set(dut.i.valid, 0)

    async def reader(ctx):
        cycles = 0
        while len(got) < len(sent):
            ctx.set(dut.o.ready, rng.random() >= r_busy)
            *_, r_en, r_rdy, r_data = await ctx.tick("rd").sample(dut.o.ready, dut.o.valid, dut.o.payload)
            cycles += 1
            if r_en and r_rdy:
                if not first_read:
                    first_read.append(cycles)
                got.append(r_data)
        first_read.append(cycles)

    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.run()
    return sent, got, max_level[0], first_read


@pytest.mark.parametrize("w_period, r_period", [(8e-9, 20e-9), (20e-9, 8e-9), (8e-9, 8.0008e-9)])
@pytest.mark.parametrize("w_busy, r_busy", [(0.0, 0.0), (0.5, 0.0), (0.0, 0.7), (0.3, 0.3)])
def test_order_and_data(w_period, r_period, w_busy, r_busy):
    print(f"seed {SEED:#x}")
    sent, got, max_level, _ = _run(8, w_period, r_period, 300, w_busy, r_busy, SEED)
    assert got == sent
    assert max_level <= 8


def test_full_rate():
    """Both sides free and the reader's clock faster: one word per writer's clock, a queue that never fills."""
    sent, got, max_level, (first, last) = _run(16, 10e-9, 8e-9, 400, 0.0, 0.0, SEED)
    assert got == sent
    reads = last - first + 1
    assert reads <= 400 * 10 / 8 + 10          # the reader's clocks while 400 words came at one per writer's clock
    assert max_level < 16


def test_reader_takes_one_word_per_clock():
    """The writer's clock faster and both sides free: once the first word is out, the reader takes one word on
    every one of its clocks (the stage covers the five clocks from a read to the next word at the head), as a
    byte-wide transmit side needs at the line's rate."""
    sent, got, _, (first, last) = _run(16, 6e-9, 8e-9, 400, 0.0, 0.0, SEED)
    assert got == sent
    assert last - first + 1 == 400, f"{last - first + 1} reader clocks for 400 words"


def test_holds_depth_plus_stage():
    """A reader that never reads: the writer fills the block RAM, and the stage takes STAGE_DEPTH more."""
    m = Module()
    m.domains.wr = ClockDomain()
    m.domains.rd = ClockDomain()
    m.submodules.fifo = dut = RegisteredAsyncFIFO(width=8, depth=4, w_domain="wr", r_domain="rd")
    sim = Simulator(m)
    sim.add_clock(10e-9, domain="wr")
    sim.add_clock(7e-9, domain="rd")
    taken = []

    async def writer(ctx):
        for _ in range(40):
            ctx.set(dut.i.payload, len(taken))
            ctx.set(dut.i.valid, 1)
            *_, rdy = await ctx.tick("wr").sample(dut.i.ready)
            if rdy:
                taken.append(len(taken))

    sim.add_testbench(writer)
    sim.run()
    assert taken == list(range(4 + STAGE_DEPTH))


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(width=0, depth=8), TypeError, "width"),
    (dict(width=8, depth=6), ValueError, "depth"),
    (dict(width=8, depth=2), ValueError, "depth"),
    (dict(width=8, depth=8.0), TypeError, "depth"),
])
def test_bad_parameters(kwargs, error, name):
    with pytest.raises(error, match=name):
        RegisteredAsyncFIFO(w_domain="a", r_domain="b", **kwargs)


@pytest.mark.parametrize("w_period, r_period", [(8e-9, 20e-9), (20e-9, 8e-9), (8e-9, 8.0008e-9)])
@pytest.mark.parametrize("w_busy, r_busy", [(0.1, 0.1), (0.0, 0.7)], ids=["even", "fills"])
def test_contract(w_period, r_period, w_busy, r_busy):
    """The queue contract (tests/queue_contract.py) across two clocks, each side checked at its own edges with the
    time of the edge: words in order and whole, never let in with ``depth`` + :data:`STAGE_DEPTH` held, none
    offered before a clock of the reader has passed since its write, and the oldest offered within three of the
    writer's clocks and ten of the reader's. (The room is not checked: the writer sees the reads late, through
    the synchronizer.)"""
    print(f"seed {SEED:#x}")
    depth, femto = 8, 1e15
    m = Module()
    m.domains.wr = ClockDomain()
    m.domains.rd = ClockDomain()
    m.submodules.fifo = dut = RegisteredAsyncFIFO(width=16, depth=depth, w_domain="wr", r_domain="rd")
    sim = Simulator(m)
    sim.add_clock(w_period, domain="wr", phase=w_period / 2)
    sim.add_clock(r_period, domain="rd", phase=r_period / 2)
    contract = QueueContract(capacity=0, limit=depth + STAGE_DEPTH, min_latency=round(r_period * femto),
                             max_latency=round((3 * w_period + 10 * r_period) * femto))
    rng = random.Random(SEED)

    def edge(period, index):
        return round((index + 0.5) * period * femto)

    async def writer(ctx):
        pending = None
        for index in range(1200):
            if pending is None and rng.random() >= w_busy:
                pending = rng.getrandbits(16)
            ctx.set(dut.i.valid, pending is not None)
            ctx.set(dut.i.payload, pending or 0)
            *_, w_en, w_rdy, w_data = await ctx.tick("wr").sample(dut.i.valid, dut.i.ready, dut.i.payload)
            contract.write(ready=bool(w_rdy), valid=bool(w_en), data=w_data, now=edge(w_period, index))
            if w_en and w_rdy:
                pending = None
        ctx.set(dut.i.valid, 0)

    async def reader(ctx):
        index = 0
        async for *_, r_rdy, r_en, r_data in ctx.tick("rd").sample(dut.o.valid, dut.o.ready, dut.o.payload):
            contract.read(valid=bool(r_rdy), ready=bool(r_en), data=r_data, now=edge(r_period, index))
            index += 1
            ctx.set(dut.o.ready, rng.random() >= r_busy)

    sim.add_testbench(writer)
    sim.add_testbench(reader, background=True)
    sim.run()
    assert contract.reads > 100, contract.reads
