"""The segments (hdl/segments.py): one memory per physical segment, cleared after reset and on a scrub."""

import random

import pytest
from amaranth.sim import Simulator

from apbbf.hdl.segments import Segments
from apbbf.model import Config

CONFIG = Config(2, 3, block_bits=16, block_hashes=2, segment_blocks=8)


async def _read(ctx, dut, addresses):
    for j, address in enumerate(addresses):
        ctx.set(dut.access.read_addr[j], address)
    ctx.set(dut.access.read_en, 1)
    await ctx.tick()
    ctx.set(dut.access.read_en, 0)
    return [ctx.get(dut.access.read_data[j]) for j in range(len(addresses))]


async def _write(ctx, dut, writes):
    """``writes``: {segment: (address, data)} in one cycle."""
    enable = 0
    for j, (address, value) in writes.items():
        ctx.set(dut.access.write_addr[j], address)
        ctx.set(dut.access.write_data[j], value)
        enable |= 1 << j
    ctx.set(dut.access.write_en, enable)
    await ctx.tick()
    ctx.set(dut.access.write_en, 0)


def test_reset_clear_write_read_scrub():
    """After reset ``ready`` is low for segment_blocks cycles; writes land in their own segment; a scrub clears
    the spare (and only it) one block per cycle, winning over a write to it, with ``scrubbing`` high meanwhile."""
    dut = Segments(CONFIG)
    P, S = CONFIG.physical_segments, CONFIG.segment_blocks
    rng = random.Random(1)

    async def bench(ctx):
        waited = 0
        while not ctx.get(dut.access.ready):
            await ctx.tick()
            waited += 1
        assert waited == S
        contents = {}
        for _ in range(20):
            writes = {j: (rng.randrange(S), rng.getrandbits(16)) for j in range(P) if rng.random() < 0.5}
            await _write(ctx, dut, writes)
            contents.update({(j, a): v for j, (a, v) in writes.items()})
        for address in range(S):
            got = await _read(ctx, dut, [address] * P)
            assert got == [contents.get((j, address), 0) for j in range(P)]
        spare = 2
        ctx.set(dut.spare, spare)
        ctx.set(dut.scrub, 1)
        await ctx.tick()
        ctx.set(dut.scrub, 0)
        cycles = 0
        while ctx.get(dut.access.scrubbing):
            await _write(ctx, dut, {spare: (0, 0xFFFF), 1: (0, 0x1234)})     # the spare's write loses
            cycles += 1
        assert cycles == S
        contents[(1, 0)] = 0x1234
        for address in range(S):
            got = await _read(ctx, dut, [address] * P)
            assert got == [0 if j == spare else contents.get((j, address), 0) for j in range(P)]

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_init_wrong_config():
    with pytest.raises(TypeError, match="config must be a Config"):
        Segments(None)
