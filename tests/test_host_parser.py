# amaranth: UnusedElaboratable=no
"""HostParser alone: request frames in on its rx stream, one checked request per frame out, and the keys of good
frames only; every error of the protocol, the timeout, and the same results under backpressure."""

import pytest
from amaranth.sim import Simulator

from apbbf.hdl.board.host_parser import HostParser
from apbbf.protocol import REQUEST_SYNC, Command, Status, encode_request, key_bytes

from .streams import check_rules, get, put, rng_for, run_simulation

KEY_WIDTH = 20          # three bytes per key on the wire
KB = key_bytes(KEY_WIDTH)
MAX_BATCH = 4
TIMEOUT = 64


def byte(value, framing_error=0, overrun=0):
    return {"data": value, "framing_error": framing_error, "overrun": overrun}


class Pause:
    """Silence on the line for ``cycles``."""

    def __init__(self, cycles):
        self.cycles = cycles


def ok(frame):
    """The request and key bytes a good frame must give."""
    return (frame[1], frame[2], Status.OK, list(frame[3:-2]))


def rejected(command, status):
    return (command, None, status, [])


def parse(items, *, stall=0.0, seed=0):
    """Run the parser on ``items`` (bytes, ``byte()`` dicts with error flags, or Pauses) and return what came out:
    ``(command, count, status, key bytes)`` per request (count None for errors, where it does not matter), and
    the number of error pulses."""
    dut = HostParser(KEY_WIDTH, max_batch=MAX_BATCH, timeout_cycles=TIMEOUT)
    flat = []
    for item in items:
        flat += [byte(b) for b in item] if isinstance(item, (bytes, bytearray)) else [item]
    requests, errors, broken = [], [0], []
    done = [False]

    async def producer(ctx):
        rng = rng_for(stall, seed)
        for item in flat:
            if isinstance(item, Pause):
                await ctx.tick().repeat(item.cycles)
            else:
                await put(ctx, dut.rx, item, rng=rng, stall=stall)
        await ctx.tick().repeat(2 * TIMEOUT)
        done[0] = True

    async def consumer(ctx):
        rng = rng_for(stall, seed + 1)
        while True:
            # look at the offered request without taking it: an OK request's keys come first
            _, _, valid, payload = await ctx.tick().sample(dut.request.valid, dut.request.payload)
            if not valid:
                continue
            keys = []
            if payload.status == Status.OK:
                keys = [await get(ctx, dut.keys, rng=rng, stall=stall)
                        for _ in range(payload.count * KB)]
            await get(ctx, dut.request, rng=rng, stall=stall)
            # an error request's count is whatever was received: not part of the result
            count = payload.count if payload.status == Status.OK else None
            requests.append((payload.command, count, Status(payload.status), keys))

    async def monitor(ctx):
        async for _, _, error, keys_valid, request_valid, status in ctx.tick().sample(
                dut.error, dut.keys.valid, dut.request.valid, dut.request.payload.status):
            errors[0] += error
            if keys_valid and not (request_valid and status == Status.OK):
                broken.append("a key byte offered without its frame's OK request")

    async def bench(ctx):
        while not done[0]:
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(producer, background=True)
    sim.add_testbench(consumer, background=True)
    sim.add_testbench(monitor, background=True)
    sim.add_testbench(check_rules(dut.request, "request", broken), background=True)
    sim.add_testbench(check_rules(dut.keys, "keys", broken), background=True)
    sim.add_testbench(bench)
    sim.run()
    assert broken == []
    return requests, errors[0]


GOOD = [
    encode_request(Command.INFO),
    encode_request(Command.COUNTERS),
    encode_request(Command.QUERY, [0xA5A5A, 1, 0xFFFFF, 0x5A5A5], KEY_WIDTH),   # key bytes equal to the sync
    encode_request(Command.INSERT, [7], KEY_WIDTH),
    encode_request(Command.TEST_AND_INSERT, [3, 2, 1], KEY_WIDTH),
]


@pytest.mark.parametrize("stall", [0.0, 0.5])
def test_good_frames_give_their_requests_and_keys(stall):
    requests, errors = parse(GOOD, stall=stall)
    assert requests == [ok(frame) for frame in GOOD]
    assert errors == 0


def test_keys_of_a_frame_wait_for_its_crc():
    """With the last CRC byte missing, nothing of the frame comes out until the timeout rejects it."""
    frame = encode_request(Command.INSERT, [1, 2], KEY_WIDTH)
    requests, _ = parse([frame[:-1], Pause(TIMEOUT + 8), frame])
    assert requests == [(Command.INSERT, None, Status.TIMEOUT, []), ok(frame)]


def malformed():
    """(items, expected requests) per kind of error, each followed by a good frame that must parse."""
    good = encode_request(Command.INSERT, [9, 8, 7], KEY_WIDTH)
    bad_crc_low = good[:-2] + bytes([good[-2] ^ 0x01, good[-1]])
    bad_crc_high = good[:-1] + bytes([good[-1] ^ 0x80])
    corrupted = bytearray(good)
    corrupted[4] ^= 0x40
    follow = encode_request(Command.QUERY, [0x12345], KEY_WIDTH)
    cases = {
        "bad CRC, low byte": ([bad_crc_low], [rejected(Command.INSERT, Status.BAD_CRC)]),
        "bad CRC, high byte": ([bad_crc_high], [rejected(Command.INSERT, Status.BAD_CRC)]),
        "corrupted key": ([bytes(corrupted)], [rejected(Command.INSERT, Status.BAD_CRC)]),
        # the rest of a bad frame is skipped up to the next sync byte
        "unknown command": ([bytes([REQUEST_SYNC, 0x7E, 0, 0x11, 0x22])], [rejected(0x7E, Status.BAD_COMMAND)]),
        "too many keys": ([bytes([REQUEST_SYNC, Command.QUERY, MAX_BATCH + 1, 1, 2])],
                          [rejected(Command.QUERY, Status.BAD_LENGTH)]),
        "no keys": ([bytes([REQUEST_SYNC, Command.INSERT, 0, 0, 0])], [rejected(Command.INSERT, Status.BAD_LENGTH)]),
        "keys on INFO": ([bytes([REQUEST_SYNC, Command.INFO, 1])], [rejected(Command.INFO, Status.BAD_LENGTH)]),
        # one BAD_SYNC for a run of garbage; a byte with a UART error outside a frame is ignored
        "garbage": ([b"\x00\x13\x37", byte(0x55, framing_error=1), b"\xff"], [rejected(0, Status.BAD_SYNC)]),
        "UART error outside a frame": ([byte(0x00, framing_error=1)], []),
        # a truncated frame: the command known so far, or 0 before the command byte
        "truncated in keys": ([good[:6], Pause(TIMEOUT + 8)], [rejected(Command.INSERT, Status.TIMEOUT)]),
        "truncated after sync": ([good, good[:1], Pause(TIMEOUT + 8)], [ok(good), rejected(0, Status.TIMEOUT)]),
        "truncated in CRC": ([good[:-1], Pause(TIMEOUT + 8)], [rejected(Command.INSERT, Status.TIMEOUT)]),
        # a UART error in any byte of a frame; in the command byte, the reply names that byte
        "framing error in command": ([good[:1], byte(good[1], framing_error=1), good[2:]],
                                     [rejected(Command.INSERT, Status.UART)]),
        "overrun in count": ([good[:2], byte(good[2], overrun=1), good[3:]], [rejected(Command.INSERT, Status.UART)]),
        "framing error in a key": ([good[:5], byte(good[5], framing_error=1), good[6:]],
                                   [rejected(Command.INSERT, Status.UART)]),
        "overrun in CRC": ([good[:-1], byte(good[-1], overrun=1)], [rejected(Command.INSERT, Status.UART)]),
    }
    return [(name, items + [follow], expected + [ok(follow)]) for name, (items, expected) in cases.items()]


@pytest.mark.parametrize("stall", [0.0, 0.4])
@pytest.mark.parametrize("name, items, expected", malformed(), ids=[case[0] for case in malformed()])
def test_malformed_frames_are_rejected_and_the_next_one_parses(name, items, expected, stall):
    requests, errors = parse(items, stall=stall, seed=len(name))
    assert requests == expected
    assert errors == sum(status != Status.OK for _, _, status, _ in expected)


def test_hunt_ends_after_silence():
    """Garbage runs separated by more than the timeout are two errors; without the gap they are one."""
    requests, _ = parse([b"\x01\x02", Pause(TIMEOUT + 8), b"\x03"])
    assert requests == [rejected(0, Status.BAD_SYNC)] * 2
    requests, _ = parse([b"\x01\x02", Pause(TIMEOUT // 2), b"\x03"])
    assert requests == [rejected(0, Status.BAD_SYNC)]


def test_keys_of_a_rejected_frame_are_dropped():
    """A frame rejected in its CRC leaves none of its keys behind for the next frame."""
    first = encode_request(Command.INSERT, [1, 2, 3, 4], KEY_WIDTH)
    second = encode_request(Command.INSERT, [5], KEY_WIDTH)
    requests, _ = parse([first[:-1] + bytes([first[-1] ^ 1]), second])
    assert requests == [rejected(Command.INSERT, Status.BAD_CRC), ok(second)]


def test_busy():
    dut = HostParser(KEY_WIDTH, max_batch=MAX_BATCH, timeout_cycles=TIMEOUT)
    frame = encode_request(Command.INFO)

    async def bench(ctx):
        assert not ctx.get(dut.busy)
        for value in frame:
            await put(ctx, dut.rx, byte(value))
            assert ctx.get(dut.busy)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.busy) and ctx.get(dut.request.valid)   # until the request is taken
        await get(ctx, dut.request)
        assert not ctx.get(dut.busy)

    run_simulation(dut, bench, period=1e-6)
