# amaranth: UnusedElaboratable=no
"""The packet de-duplicator's window changed at run time (``runtime_window``, ``control_window``): in Amaranth
simulation, frames go through while the window grows and shrinks, and every frame out equals the model's
(:class:`apbbf.model.dedup.Dedup`) with each change before the frame ``control_frames`` named."""

import random

import pytest
from amaranth import ClockDomain, Module
from amaranth.sim import Simulator

from apbbf.hdl.packet.dedup import PacketDedup
from apbbf.model import Config
from apbbf.model.packet import KeySpec
from apbbf.sim.dedup import Mismatch, beats, score_frames

from .streams import frame_collector

SEED = 6402
CONFIG = Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7, extra_segments=2)


def _traffic(rng, n):
    pool, items, time = [], [], 100
    for _ in range(n):
        time += rng.randrange(0, 12)
        if pool and rng.random() < 0.5:
            frame = rng.choice(pool[-20:])
        else:
            frame = rng.randbytes(rng.choice((60, 64, 90)))
            pool.append(frame)
        items.append((frame, time, False))
    return items


def _simulate(dut, items, windows, rng):
    """Send ``items``; at each frame index in ``windows`` (before sending it) ask for that window. Returns the
    frames out and the changes by the frame index the DUT named."""
    lanes = dut.data_width // 8
    out, changes, done = [], {}, [False]

    async def producer(ctx):
        await ctx.tick().repeat(40)
        for index, (frame, time, errored) in enumerate(items):
            if index in windows:
                ctx.set(dut.control_window, windows[index])
                ctx.set(dut.control_window_set, 1)
                await ctx.tick()
                ctx.set(dut.control_window_set, 0)
                while not ctx.get(dut.control_window_done):
                    await ctx.tick()
                await ctx.tick()
                changes.setdefault(ctx.get(dut.control_frames), []).append(("window", windows[index]))
            for n, (value, keep, last) in enumerate(beats(frame, lanes)):
                ctx.set(dut.i.payload.data, value)
                ctx.set(dut.i.payload.keep, keep)
                ctx.set(dut.i.payload.last, last)
                ctx.set(dut.i.payload.user.time, time)
                ctx.set(dut.i.valid, 1)
                await ctx.tick().until(dut.i.ready)
            ctx.set(dut.i.valid, 0)
            for _ in range(rng.randrange(0, 3)):
                await ctx.tick()
        await ctx.tick().repeat(400)
        done[0] = True

    consumer = frame_collector(dut.o, lanes, out)

    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.submodules.dut = dut
    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer, background=True)
    sim.run()
    return out, changes


@pytest.mark.slow                                   # about 10 s of CPU; make test has the export's cocotb bench
@pytest.mark.parametrize("action", ["mark"])
def test_window_changes_under_traffic(action):
    """Grown, shrunk below the gaps between copies, and back: the frames out are the model's."""
    rng = random.Random(SEED)
    print("seed", SEED)
    items = _traffic(rng, 150)
    windows = {30: 900, 60: 8, 95: 120, 125: CONFIG.span}
    dut = PacketDedup(CONFIG, KeySpec.frame(), data_width=64, action=action, max_frame=288, runtime_window=True)
    out, changes = _simulate(dut, items, windows, rng)
    assert sorted(c[1] for made in changes.values() for c in made) == sorted(windows.values()), changes
    model = score_frames(dut, list(enumerate(items)), out, changes=changes)
    assert model.counters.duplicates > 20 and model.counters.unchecked < 12, model.counters
    # the window mattered: without the changes the model would mark differently
    with pytest.raises(Mismatch):
        score_frames(dut, list(enumerate(items)), out)


def test_runtime_window_checked():
    from apbbf.hdl.core.memory_apbbf import MemoryAPBBF
    with pytest.raises(TypeError, match="runtime_window must be a bool"):
        PacketDedup(CONFIG, KeySpec.frame(), data_width=64, max_frame=288, runtime_window=1)
    rows = Config(2, 3, segment_blocks=64, span=300, time_width=16, row_bits=512)
    assert PacketDedup(rows, KeySpec.frame(), data_width=64, max_frame=288, runtime_window=True).runtime_window
    with pytest.raises(TypeError, match="runtime_window must be a bool"):
        MemoryAPBBF(rows, runtime_window=1)
    with pytest.raises(ValueError, match="runtime_window needs a Config with a span"):
        MemoryAPBBF(Config(2, 3, segment_blocks=64, row_bits=512), runtime_window=True)


def test_control_cost_design_needs_the_control_plane():
    from apbbf.sim.designs import RegisteredControlledDedup
    with pytest.raises(ValueError, match="clearable=True and runtime_window=True"):
        RegisteredControlledDedup(PacketDedup(CONFIG, KeySpec.frame(), data_width=64, max_frame=288, clearable=True))
