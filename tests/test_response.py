# amaranth: UnusedElaboratable=no
"""The response queue (hdl/core/response.py): order, and credits that never let a response be lost."""

import random

import pytest

from apbbf.hdl.core.response import ResponseQueue
from .streams import run_simulation


@pytest.mark.parametrize("stall", [0.0, 0.7])
def test_order_and_credits(stall):
    """A producer that reserves a credit per command and delivers its response ``latency`` cycles later never
    overflows the queue; responses come out in order; with ``o.ready`` low, ``available`` falls after exactly
    ``depth`` reservations."""
    depth, latency, count = 5, 3, 200
    dut = ResponseQueue(depth)
    rng = random.Random(int(stall * 10))
    sent = []

    async def producer(ctx):
        in_flight = [None] * latency                      # a fixed-latency pipeline
        index = 0
        while index < count or any(x is not None for x in in_flight):
            want = index < count and rng.random() < 0.8
            take = want and ctx.get(dut.available)
            ctx.set(dut.reserve, take)
            out = in_flight.pop(0)
            ctx.set(dut.i.valid, out is not None)
            if out is not None:
                assert ctx.get(dut.i.ready), "a response found the queue full"
                ctx.set(dut.i.payload.op, out % 3)
                ctx.set(dut.i.payload.hit, out >> 2 & 1)
            in_flight.append(index if take else None)
            if take:
                sent.append(index)
                index += 1
            await ctx.tick()
        ctx.set(dut.reserve, 0)
        ctx.set(dut.i.valid, 0)

    async def consumer(ctx):
        received = 0
        while received < count:
            ready = rng.random() >= stall
            ctx.set(dut.o.ready, ready)
            _, _, valid, op, hit = await ctx.tick().sample(dut.o.valid, dut.o.payload.op, dut.o.payload.hit)
            if valid and ready:
                assert (op.value, hit) == (received % 3, received >> 2 & 1), f"response {received} out of order"
                received += 1

    run_simulation(dut, producer, consumer)
    assert len(sent) == count


def test_available_counts_credits():
    dut = ResponseQueue(4)

    async def bench(ctx):
        ctx.set(dut.o.ready, 0)
        for n in range(4):
            assert ctx.get(dut.available), f"no credit after {n} reservations"
            ctx.set(dut.reserve, 1)
            await ctx.tick()
        ctx.set(dut.reserve, 0)
        assert not ctx.get(dut.available)
        ctx.set(dut.i.valid, 1)
        await ctx.tick()                                 # one response arrives
        ctx.set(dut.i.valid, 0)
        await ctx.tick()
        assert not ctx.get(dut.available)                # still taken until it leaves
        ctx.set(dut.o.ready, 1)
        await ctx.tick()
        assert ctx.get(dut.available)

    run_simulation(dut, bench)
