"""Async testbench helpers for :mod:`amaranth.lib.stream` ports: a producer, a consumer and a rule checker.

With ``stall`` above 0 the producer and consumer idle a random number of cycles before each transfer (valid or
ready low), so the block under test sees gaps and backpressure.
"""

import random


async def _idle(ctx, rng, stall):
    while stall and rng.random() < stall:
        await ctx.tick()


async def put(ctx, stream, payload, *, rng=None, stall=0.0):
    """Offer ``payload`` on ``stream`` (an input of the block) until it is taken."""
    await _idle(ctx, rng, stall)
    ctx.set(stream.payload, payload)
    ctx.set(stream.valid, 1)
    # plain awaits, not ``until``: a background testbench left waiting at the end of a simulation is closed
    # cleanly only at a plain await
    while not (await ctx.tick().sample(stream.ready))[2]:
        pass
    ctx.set(stream.valid, 0)


async def get(ctx, stream, *, rng=None, stall=0.0):
    """Take one payload from ``stream`` (an output of the block)."""
    await _idle(ctx, rng, stall)
    ctx.set(stream.ready, 1)
    while True:
        _, _, valid, payload = await ctx.tick().sample(stream.valid, stream.payload)
        if valid:
            ctx.set(stream.ready, 0)
            return payload


def check_rules(stream, name, errors):
    """A background testbench that records in ``errors`` every break of the stream rules on an output: once
    ``valid`` is high it stays high, with the same payload, until the payload is taken."""

    async def checker(ctx):
        offered = None
        async for _, _, valid, ready, payload in ctx.tick().sample(stream.valid, stream.ready, stream.payload):
            value = payload.as_value().value if hasattr(payload, "as_value") else payload
            if offered is not None and not valid:
                errors.append(f"{name}: valid dropped before the payload was taken")
            elif offered is not None and value != offered:
                errors.append(f"{name}: payload changed while offered")
            offered = value if valid and not ready else None

    return checker


def rng_for(stall, seed=0):
    """A seeded generator (the stalls are random but repeatable)."""
    return random.Random(seed) if stall else None


def run_simulation(dut, *testbenches, background=(), period: float | None = 1e-8, vcd: str | None = None,
                   platform=None):
    """Simulate ``dut`` with a ``sync`` clock of ``period`` seconds (None: no clock, a combinational design), the
    ``testbenches`` and the ``background`` testbenches, to the end of the testbenches; with ``vcd`` (a name), the
    waveform is written to ``build/vcd/<vcd>.vcd`` (:func:`apbbf.sim.harness.run_with_vcd`). ``dut`` is
    elaborated for ``platform`` (a :class:`~apbbf.hdl.lib.ecp5_ram.SimulatedECP5` builds its block RAMs as on
    ECP5)."""
    from amaranth.hdl import Fragment
    from amaranth.sim import Simulator

    from apbbf.sim.harness import run_with_vcd
    sim = Simulator(dut if platform is None else Fragment.get(dut, platform))
    if period is not None:
        sim.add_clock(period)
    for bench in background:
        sim.add_testbench(bench, background=True)
    for bench in testbenches:
        sim.add_testbench(bench)
    run_with_vcd(sim, None if vcd is None else f"build/vcd/{vcd}.vcd")


def frame_collector(stream, lanes: int, frames: list):
    """A background testbench that takes every beat of a de-duplicator's output ``stream`` (``lanes`` bytes a
    beat, always ready) and appends each whole frame to ``frames`` as (bytes, (duplicate, unchecked, errored))."""
    async def collect(ctx):
        frame = bytearray()
        ctx.set(stream.ready, 1)
        async for _, _, valid, payload in ctx.tick().sample(stream.valid, stream.payload):
            if valid:
                frame += int(payload.data).to_bytes(lanes, "little")[:bin(int(payload.keep)).count("1")]
                if payload.last:
                    frames.append((bytes(frame), (int(payload.user.duplicate), int(payload.user.unchecked),
                                                  int(payload.user.errored))))
                    frame = bytearray()
    return collect
