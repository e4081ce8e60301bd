# amaranth: UnusedElaboratable=no
"""The segments (hdl/core/segments.py): one memory per physical segment, cleared after reset and on a scrub."""

import random


from apbbf.hdl.core.segments import READ_LATENCY, Segments
from apbbf.model import Config
from .streams import run_simulation

CONFIG = Config(2, 3, block_bits=16, block_hashes=2, segment_blocks=8)


async def _read(ctx, dut, addresses):
    for j, address in enumerate(addresses):
        ctx.set(dut.access.read_addr[j], address)
    ctx.set(dut.access.read_en, 1)
    await ctx.tick()
    ctx.set(dut.access.read_en, 0)
    await ctx.tick().repeat(READ_LATENCY - 1)
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


async def _fill(ctx, dut, rng, contents, writes=20):
    P, S = CONFIG.physical_segments, CONFIG.segment_blocks
    for _ in range(writes):
        batch = {j: (rng.randrange(S), rng.getrandbits(16)) for j in range(P) if rng.random() < 0.5}
        await _write(ctx, dut, batch)
        contents.update({(j, a): v for j, (a, v) in batch.items()})


async def _check(ctx, dut, contents, zero=()):
    P, S = CONFIG.physical_segments, CONFIG.segment_blocks
    for address in range(S):
        got = await _read(ctx, dut, [address] * P)
        assert got == [0 if j in zero else contents.get((j, address), 0) for j in range(P)], f"block {address}"


def test_reset_clear_write_read():
    """After reset ``ready`` is low for segment_blocks cycles; writes land in their own segment."""
    dut = Segments(CONFIG)
    rng = random.Random(1)

    async def bench(ctx):
        waited = 0
        while not ctx.get(dut.access.ready):
            await ctx.tick()
            waited += 1
        assert waited == CONFIG.segment_blocks
        contents = {}
        await _fill(ctx, dut, rng, contents)
        await _check(ctx, dut, contents)

    run_simulation(dut, bench)


def test_retired_segments_are_cleared_in_passes():
    """Retired segments are cleared in the background, all those of a pass at once, in segment_blocks cycles,
    winning over writes to them; one retired during a pass waits for the next; ``cleaned`` names each the cycle
    after its last block is written; the others keep their contents."""
    dut = Segments(CONFIG)
    rng = random.Random(2)
    S = CONFIG.segment_blocks

    async def bench(ctx):
        while not ctx.get(dut.access.ready):
            await ctx.tick()
        contents = {}
        await _fill(ctx, dut, rng, contents)
        ctx.set(dut.access.retire, 0b000110)            # segments 1 and 2, in the same cycle
        await ctx.tick()
        ctx.set(dut.access.retire, 0)
        cleaned = {}
        for cycle in range(1, 3 * S + 2):
            if cycle == 3:
                ctx.set(dut.access.retire, 0b010000)    # segment 4 during the pass
            writes = {0: (2, 0x1234)}
            if cycle < S:                                  # while 1 and 2 are being cleared: clearing wins
                writes.update({1: (0, 0xFFFF), 2: (1, 0xFFFF)})
            await _write(ctx, dut, writes)
            ctx.set(dut.access.retire, 0)
            for j in range(CONFIG.physical_segments):
                if ctx.get(dut.access.cleaned) >> j & 1:
                    cleaned[j] = cycle
            contents[(0, 2)] = 0x1234
        assert ctx.get(dut.access.ready)
        # (sampled after each tick: the pass's S-th cycle, which writes its last block, is seen after S - 1, and
        # ``cleaned`` is registered: one tick later)
        assert cleaned == {1: S, 2: S, 4: 2 * S}, cleaned
        await _check(ctx, dut, contents, zero=(1, 2, 4))

    run_simulation(dut, bench)


def test_clear_every_memory():
    """``clear`` clears every memory, from the cycle after it (``ready`` low from then for segment_blocks + 1
    cycles: the cycle it is taken in and the pass), cancels a pass under way and names every segment in
    ``cleaned`` at the end."""
    dut = Segments(CONFIG)
    rng = random.Random(3)
    P, S = CONFIG.physical_segments, CONFIG.segment_blocks

    async def bench(ctx):
        while not ctx.get(dut.access.ready):
            await ctx.tick()
        contents = {}
        await _fill(ctx, dut, rng, contents)
        ctx.set(dut.access.retire, 0b1)
        await ctx.tick()
        ctx.set(dut.access.retire, 0)
        await ctx.tick()
        ctx.set(dut.access.clear, 1)
        await ctx.tick()
        ctx.set(dut.access.clear, 0)
        low = 0
        while not ctx.get(dut.access.ready):
            await ctx.tick()
            low += 1
        assert low == S + 1 and ctx.get(dut.access.cleaned) == (1 << P) - 1
        await _check(ctx, dut, contents, zero=range(P))

    run_simulation(dut, bench)
