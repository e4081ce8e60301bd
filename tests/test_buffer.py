"""The circular buffer (hdl/buffer.py) against the golden model's base index, generation fill and roles."""

import random

import pytest
from amaranth.sim import Simulator

from apbbf.hdl.buffer import CircularBuffer
from apbbf.model import APBBF as Model, Config


def _bits(positions):
    return sum(1 << p for p in set(positions))


@pytest.mark.parametrize("config", [Config(2, 3, segment_blocks=4), Config(3, 8, segment_blocks=2),
                                    Config(1, 1, block_bits=8, block_hashes=4, segment_blocks=1)],
                         ids=["k2l3", "k3l8", "g1"])
def test_roles_follow_the_model(config):
    """After every insert (in random cycles) the buffer's base, spare, targets, starts, fill and counters are
    the model's: targets are the positions the next insert writes (logical 0..k-1 after its shift), starts the
    logical starts 0..l of Algorithm 1 now, the spare logical k+l."""
    dut = CircularBuffer(config)
    model = Model(config)
    k, l, P, g = config.k, config.l, config.physical_segments, config.generation
    rng = random.Random(3)

    def expect(ctx):
        shifting = model.n % g == 0
        base_after = (model.base - 1) % P if shifting else model.base
        assert ctx.get(dut.base) == model.base
        assert ctx.get(dut.spare) == (model.base - 1) % P == model.pos(k + l)
        assert ctx.get(dut.fill_zero) == shifting
        assert ctx.get(dut.targets) == _bits((base_after + i) % P for i in range(k))
        assert ctx.get(dut.starts) == _bits(model.pos(i) for i in range(l + 1))
        assert ctx.get(dut.inserts) == model.n
        assert ctx.get(dut.shifts) == model.shifts

    async def bench(ctx):
        for _ in range(3 * P * g + 5):
            expect(ctx)
            insert = rng.random() < 0.7
            ctx.set(dut.insert, insert)
            assert ctx.get(dut.shift) == (insert and model.n % g == 0)
            await ctx.tick()
            ctx.set(dut.insert, 0)
            if insert:
                model.insert(rng.getrandbits(config.key_width))
        assert model.shifts > P

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_after_reset_the_first_insert_shifts():
    """After reset base is 0 and the first insert shifts: its key lands in physical position k+l."""
    config = Config(2, 3, segment_blocks=4)
    dut = CircularBuffer(config)

    async def bench(ctx):
        assert ctx.get(dut.base) == 0 and ctx.get(dut.fill_zero) == 1
        assert ctx.get(dut.targets) == _bits([config.physical_segments - 1, 0])
        ctx.set(dut.insert, 1)
        await ctx.tick()
        ctx.set(dut.insert, 0)
        assert ctx.get(dut.shifts) == 1 and ctx.get(dut.base) == config.physical_segments - 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_init_wrong_config():
    with pytest.raises(TypeError, match="config must be a Config"):
        CircularBuffer("k=2 l=3")
