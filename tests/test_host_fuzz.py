# amaranth: UnusedElaboratable=no
"""Fuzzing the host interface in simulation: random byte streams, and valid frames with random bytes flipped, fed
to HostInterface in front of the real core. The device must keep answering, count what it rejects, and insert
nothing from a rejected frame: the core's insert count equals the keys of the insert frames it answered OK."""

import random

import pytest
from amaranth import Module
from amaranth.lib import wiring

from apbbf.hdl.core.apbbf import APBBF
from apbbf.hdl.board.host_interface import HostInterface
from apbbf.model import Config
from apbbf.model.protocol import Command, Status
from apbbf.protocol import Counters, Info, ReplyDecoder, encode_request
from .streams import run_simulation

CONFIG = Config(k=2, l=3, block_bits=16, block_hashes=2, segment_blocks=16, key_width=32, seed=0x5EED)
MAX_BATCH = 8
TIMEOUT = 200


def _top():
    m = Module()
    m.submodules.interface = interface = HostInterface(CONFIG, max_batch=MAX_BATCH, timeout_cycles=TIMEOUT)
    m.submodules.core = core = APBBF(CONFIG)
    wiring.connect(m, interface.cmd, core.cmd)
    wiring.connect(m, core.rsp, interface.rsp)
    m.d.comb += interface.generations.eq(core.shifts)
    return m, interface, core


def _frames(rng, count):
    """Valid request frames (INFO, COUNTERS, key commands) and, for half of them, the same with 1..3 bytes
    flipped or the frame cut short; random junk in between. Yields ``(bytes, command, keys, intact)``."""
    for _ in range(count):
        command = rng.choice([Command.INFO, Command.COUNTERS, Command.QUERY, Command.INSERT, Command.TEST_AND_INSERT])
        keys = [] if command in (Command.INFO, Command.COUNTERS) else \
            [rng.getrandbits(CONFIG.key_width) for _ in range(rng.randint(1, MAX_BATCH))]
        original = encode_request(command, keys, CONFIG.key_width)
        frame = bytearray(original)
        if rng.random() < 0.5:
            if rng.random() < 0.3:
                frame = frame[:rng.randrange(1, len(frame))]
            else:
                for _ in range(rng.randint(1, 3)):
                    frame[rng.randrange(len(frame))] ^= 1 << rng.randrange(8)
        intact = bytes(frame) == original                 # two flips of one bit give the frame back
        junk = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 0, 0, 1, 5])))
        yield bytes(frame), command, keys, intact, junk


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_fuzzed_frames(seed):
    rng = random.Random(seed)
    m, interface, core = _top()
    plan = list(_frames(rng, 60))
    replies = []
    state = {"done": False}

    async def feeder(ctx):
        for frame, _, _, intact, junk in plan:
            for byte in frame + junk:
                ctx.set(interface.rx.payload.data, byte)
                ctx.set(interface.rx.valid, 1)
                while not (await ctx.tick().sample(interface.rx.ready))[2]:
                    pass
                ctx.set(interface.rx.valid, 0)
            # quiet long enough for the device's timeout: a cut frame ends there, and the next frame starts clean
            await ctx.tick().repeat(3 * TIMEOUT)
        # After the storm: an INFO and a COUNTERS, intact, must be answered.
        for command in (Command.INFO, Command.COUNTERS):
            for byte in encode_request(command, (), CONFIG.key_width):
                ctx.set(interface.rx.payload.data, byte)
                ctx.set(interface.rx.valid, 1)
                while not (await ctx.tick().sample(interface.rx.ready))[2]:
                    pass
                ctx.set(interface.rx.valid, 0)
            await ctx.tick().repeat(3 * TIMEOUT)
        state["done"] = True

    async def collector(ctx):
        decoder = ReplyDecoder()
        ctx.set(interface.tx.ready, 1)
        while not state["done"]:
            _, _, valid, byte = await ctx.tick().sample(interface.tx.valid, interface.tx.payload)
            if valid:
                decoder.feed(bytes([byte]))
                reply = decoder.next()
                if reply is not None:
                    replies.append(reply)

    run_simulation(m, feeder, background=(collector,))

    # The device kept answering: the last two replies are the INFO and COUNTERS asked for after the storm.
    info, counters = replies[-2], replies[-1]
    assert (info.command, info.status) == (Command.INFO, Status.OK)
    assert Info.unpack(info.payload) == Info.from_config(CONFIG, MAX_BATCH)
    assert (counters.command, counters.status) == (Command.COUNTERS, Status.OK)
    counts = Counters.unpack(counters.payload)
    # Every intact frame was executed; the others rejected (counted), or, if a flipped bit left a valid frame
    # behind (a flipped key byte is caught by the CRC; a flipped CRC byte too), executed as what it became.
    ok_keys = sum(len(keys) for _, command, keys, intact, _ in plan
                  if intact and command in (Command.INSERT, Command.TEST_AND_INSERT))
    rejected = [r for r in replies if r.status != Status.OK]
    assert counts.errors >= len([p for p in plan if not p[3]]) // 2 and rejected, "malformed frames not counted"
    ok_inserts = [r for r in replies if r.status == Status.OK and r.command in (Command.INSERT,
                                                                               Command.TEST_AND_INSERT)]
    assert counts.inserts == ok_keys, (f"seed {seed}: {counts.inserts} keys inserted, but the intact insert "
                                       f"frames hold {ok_keys} ({len(ok_inserts)} OK insert replies)")
    assert counts.frames == sum(1 for p in plan if p[3]) + 2      # + the INFO and this COUNTERS
