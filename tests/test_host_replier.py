# amaranth: UnusedElaboratable=no
"""HostReplier alone: reply headers and payload bytes in, reply frames out, byte for byte as
:func:`apbbf.protocol.encode_reply` (CRC included); error replies while busy are dropped; backpressure."""

import random

import pytest
from amaranth.sim import Simulator

from apbbf.hdl.board.host_replier import HostReplier
from apbbf.protocol import Command, Status, encode_reply

from .streams import check_rules, get, put, rng_for, run_simulation


def run(replies, *, stall=0.0, seed=0, extra=None):
    """Send ``replies`` (``(command, status, payload)``) through a replier and return the bytes it sent.

    An error header is offered only while the replier is idle, as the executor does after its parser has
    rejected a frame (one offered during a reply is dropped, see below)."""
    dut = HostReplier()
    sent, broken = [], []

    async def headers(ctx):
        rng = rng_for(stall, seed)
        for command, status, payload in replies:
            while status != Status.OK and ctx.get(dut.busy):
                await ctx.tick()
            await put(ctx, dut.header, {"command": command, "status": status, "length": len(payload)},
                      rng=rng, stall=stall)

    async def payloads(ctx):
        rng = rng_for(stall, seed + 1)
        for _, _, payload in replies:
            for value in payload:
                await put(ctx, dut.payload, value, rng=rng, stall=stall)

    async def line(ctx):
        rng = rng_for(stall, seed + 2)
        while True:
            sent.append(await get(ctx, dut.tx, rng=rng, stall=stall))

    async def bench(ctx):
        expected = sum(len(encode_reply(*reply)) for reply in replies)
        for _ in range(20 * expected):
            if len(sent) >= expected:
                break
            await ctx.tick()
        await ctx.tick().repeat(50)       # nothing more comes
        assert not ctx.get(dut.busy)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(headers, background=True)
    sim.add_testbench(payloads, background=True)
    sim.add_testbench(line, background=True)
    sim.add_testbench(check_rules(dut.tx, "tx", broken), background=True)
    if extra is not None:
        sim.add_testbench(extra(dut), background=True)
    sim.add_testbench(bench)
    sim.run()
    assert broken == []
    return bytes(sent)


def replies():
    rng = random.Random(3)
    return [
        (Command.INFO, Status.OK, bytes(rng.randrange(256) for _ in range(35))),
        (Command.QUERY, Status.OK, b"\x5a"),                      # a payload byte equal to the sync byte
        (0x00, Status.BAD_SYNC, b""),
        (Command.INSERT, Status.OK, bytes(255)),                 # the longest payload
        (Command.TEST_AND_INSERT, Status.OK, bytes(rng.randrange(256) for _ in range(32))),
        (0x7E, Status.BAD_COMMAND, b""),
    ]


@pytest.mark.parametrize("stall", [0.0, 0.5])
def test_frames_match_the_protocol(stall):
    assert run(replies(), stall=stall) == b"".join(encode_reply(*reply) for reply in replies())


def test_error_header_while_busy_is_dropped():
    """An error header offered during a reply is taken at once and sends nothing; an OK header waits."""
    first = (Command.COUNTERS, Status.OK, bytes(range(20)))
    second = (Command.INFO, Status.OK, b"\x01\x02")
    events = []

    def intruder(dut):
        async def bench(ctx):
            await ctx.tick().repeat(10)
            assert ctx.get(dut.busy)
            # header() is idle now: drive the header stream directly between the first and second reply
            ctx.set(dut.header.payload, {"command": Command.INSERT, "status": Status.BAD_CRC, "length": 0})
            ctx.set(dut.header.valid, 1)
            _, _, ready, busy = await ctx.tick().sample(dut.header.ready, dut.busy)
            events.append((ready, busy))
            ctx.set(dut.header.valid, 0)
        return bench

    sent = run([first], stall=0.0, extra=intruder)
    assert sent == encode_reply(*first)
    assert events == [(1, 1)]
    sent = run([first, second], stall=0.3)
    assert sent == encode_reply(*first) + encode_reply(*second)


def test_busy_from_header_to_last_crc_byte():
    dut = HostReplier()

    async def bench(ctx):
        ctx.set(dut.tx.ready, 1)
        assert not ctx.get(dut.busy)
        await put(ctx, dut.header, {"command": Command.COUNTERS, "status": Status.TIMEOUT, "length": 0})
        busy = []
        for _ in range(1 + 3 + 2):   # sync, header, CRC
            busy.append(ctx.get(dut.busy))
            await ctx.tick()
        assert busy == [1] * 6 and not ctx.get(dut.busy)

    run_simulation(dut, bench, period=1e-6)
