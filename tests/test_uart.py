# amaranth: UnusedElaboratable=no
"""UART receiver and transmitter: loop-back, bit timing, framing errors, glitches, overrun, parameter checks."""

import random

import pytest
from amaranth import Module

from apbbf.hdl.board.uart import UARTReceiver, UARTTransmitter
from .streams import run_simulation

PERIOD = 1e-6  # 1 MHz simulated clock: 1 cycle = 1 us


async def drive_byte(ctx, line, byte, divisor, stop=1):
    """Drive one 8N1 character on ``line`` at ``divisor`` cycles per bit."""
    for level in [0] + [(byte >> i) & 1 for i in range(8)] + [stop]:
        ctx.set(line, level)
        await ctx.tick().repeat(divisor)


async def drive_byte_timed(ctx, line, byte, bit_time):
    """Drive one character with a bit time in seconds (for a sender whose rate differs from the receiver's)."""
    for level in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
        ctx.set(line, level)
        await ctx.delay(bit_time)


def run(dut, bench):
    run_simulation(dut, bench, period=PERIOD)


@pytest.mark.parametrize("divisor", [4, 7, 16])
def test_loopback(divisor):
    m = Module()
    m.submodules.tx = tx = UARTTransmitter(divisor)
    m.submodules.rx = rx = UARTReceiver(divisor)
    m.d.comb += rx.rx.eq(tx.tx)
    sent = [random.Random(divisor).randrange(256) for _ in range(24)] + [0x00, 0xFF, 0xA5, 0x5A]
    got = []

    async def bench(ctx):
        index = 0
        ctx.set(rx.o.ready, 1)
        cycles = 0
        while len(got) < len(sent) and cycles < 12 * divisor * (len(sent) + 2):
            if index < len(sent):
                ctx.set(tx.i.valid, 1)
                ctx.set(tx.i.payload, sent[index])
            else:
                ctx.set(tx.i.valid, 0)
            _, _, _, _, accepted, o_valid, o_payload = await ctx.tick().sample(
                tx.i.valid, tx.i.payload, tx.i.ready, rx.o.valid, rx.o.payload)
            if accepted and index < len(sent):
                index += 1
            if o_valid:
                assert not o_payload.framing_error and not o_payload.overrun
                got.append(o_payload.data)
            cycles += 1

    run(m, bench)
    assert got == sent


def test_tx_bit_timing():
    divisor = 5
    dut = UARTTransmitter(divisor)

    async def bench(ctx):
        assert ctx.get(dut.tx) == 1
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.i.payload, 0b10110010)
        await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick()  # the line follows the shift register one cycle later
        levels = []
        for _ in range(10 * divisor):
            levels.append(ctx.get(dut.tx))
            await ctx.tick()
        expect = [0] + [(0b10110010 >> i) & 1 for i in range(8)] + [1]
        assert levels == [b for b in expect for _ in range(divisor)]
        assert ctx.get(dut.i.ready)

    run(dut, bench)


def test_rx_framing_error_break_and_glitch():
    divisor = 8
    dut = UARTReceiver(divisor)
    results = []

    async def collector(ctx):
        ctx.set(dut.o.ready, 1)
        async for _, _, valid, payload in ctx.tick().sample(dut.o.valid, dut.o.payload):
            if valid:
                results.append((payload.data, payload.framing_error, payload.overrun))

    async def bench(ctx):
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(10)
        # a glitch of 2 cycles is not a start bit
        ctx.set(dut.rx, 0)
        await ctx.tick().repeat(2)
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(3 * divisor)
        assert results == []
        # a character with a low stop bit, then the line held low (a break) for a while
        await drive_byte(ctx, dut.rx, 0x00, divisor, stop=0)
        await ctx.tick().repeat(20 * divisor)
        assert results == [(0x00, 1, 0)]  # one error, not a stream of zero bytes
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(2 * divisor)
        for byte in (0x3C, 0xA5):
            await drive_byte(ctx, dut.rx, byte, divisor)
        await ctx.tick().repeat(3 * divisor)
        assert results == [(0x00, 1, 0), (0x3C, 0, 0), (0xA5, 0, 0)]

    run_simulation(dut, bench, background=(collector,), period=PERIOD)


def test_rx_overrun_flag():
    divisor = 4
    dut = UARTReceiver(divisor)

    async def bench(ctx):
        ctx.set(dut.rx, 1)
        ctx.set(dut.o.ready, 0)
        await ctx.tick().repeat(4)
        await drive_byte(ctx, dut.rx, 0x11, divisor)
        await drive_byte(ctx, dut.rx, 0x22, divisor)
        await ctx.tick().repeat(2 * divisor)
        assert ctx.get(dut.o.valid)
        payload = ctx.get(dut.o.payload)
        assert (payload.data, payload.overrun) == (0x22, 1)
        ctx.set(dut.o.ready, 1)
        await ctx.tick()
        assert not ctx.get(dut.o.valid)

    run(dut, bench)


@pytest.mark.parametrize("mismatch", [-0.03, 0.03])
def test_rx_tolerates_rate_mismatch(mismatch):
    """A sender 3 % faster or slower than the receiver still gets through (bytes sent back to back)."""
    divisor = 16
    dut = UARTReceiver(divisor)
    sent = list(range(0, 256, 37)) + [0xFF, 0x00]

    async def sender(ctx):
        ctx.set(dut.rx, 1)
        await ctx.delay(5 * PERIOD)
        for byte in sent:
            await drive_byte_timed(ctx, dut.rx, byte, divisor * PERIOD * (1 + mismatch))

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        got = []
        for _ in range(11 * divisor * (len(sent) + 1)):
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid:
                assert not payload.framing_error
                got.append(payload.data)
        assert got == sent

    run_simulation(dut, bench, background=(sender,), period=PERIOD)
