# amaranth: UnusedElaboratable=no
"""HostExecutor alone: checked requests and key bytes in, commands to a stand-in core, reply headers and payloads
out; INFO, COUNTERS, every key command, rejected requests, and the same results under backpressure."""

from collections import deque

import pytest
from amaranth.sim import Simulator

from apbbf.hdl.board.host_executor import HostExecutor
from apbbf.hdl.core.types import Op
from apbbf.model.config import Config
from apbbf.model.filters import Op as ModelOp
from apbbf.protocol import (COUNTERS_SIZE, INFO_SIZE, KEY_COMMANDS, Command, Counters, Info, Status, key_bytes,
                            pack_hits)

from .streams import check_rules, get, put, rng_for

# 20-bit keys: three bytes each on the wire, the top four bits of the last byte are padding
CONFIG = Config(k=2, l=3, block_bits=16, block_hashes=2, segment_blocks=16, key_width=20, seed=0xC0FFEE)
KB = key_bytes(CONFIG.key_width)
MAX_BATCH = 20
GENERATIONS = 0x12345678


def request(command, count=0, status=Status.OK):
    return {"command": command, "count": count, "status": status}


class Expected:
    """What the executor must do: a set stands in for the filter, so every op's answer is exact and the ops
    cannot be mixed up."""

    def __init__(self):
        self.present = set()
        self.counters = dict(keys=0, inserts=0, generations=GENERATIONS, frames=0, errors=0)

    def run(self, command, keys=(), status=Status.OK):
        """The reply ``(header, payload)`` and the core commands ``[(op, key)]`` of one request."""
        if status != Status.OK:
            self.counters["errors"] += 1
            return (command, status, 0), b"", []
        self.counters["frames"] += 1
        if command == Command.INFO:
            payload = Info.from_config(CONFIG, MAX_BATCH).pack()
            return (command, Status.OK, INFO_SIZE), payload, []
        if command == Command.COUNTERS:
            return (command, Status.OK, COUNTERS_SIZE), Counters(**self.counters).pack(), []
        op = ModelOp[Command(command).name]
        hits = []
        for key in keys:
            hits.append(op != ModelOp.INSERT and key in self.present)
            if op != ModelOp.QUERY:
                self.present.add(key)
                self.counters["inserts"] += 1
            self.counters["keys"] += 1
        payload = pack_hits(hits)
        return (command, Status.OK, len(payload)), payload, [(op, key) for key in keys]


def execute(script, *, stall=0.0, seed=0):
    """Run ``script`` (``(command, keys, status)`` per request) through the executor, with a stand-in core that
    answers from a set; check every reply header, payload and core command against :class:`Expected`."""
    dut = HostExecutor(CONFIG, max_batch=MAX_BATCH)
    expected = Expected()
    replies = [expected.run(*item) for item in script]
    commands = [command for _, _, issued in replies for command in issued]
    got_replies, got_commands, taken, broken = [], [], [], []
    answers = deque()

    async def requests(ctx):
        rng = rng_for(stall, seed)
        ctx.set(dut.generations, GENERATIONS)
        for command, keys, status in script:
            await put(ctx, dut.request, request(command, len(keys), status), rng=rng, stall=stall)

    async def order(ctx):
        # an OK request is taken with its last payload byte (the parser holds its keys until then), a rejected
        # one with its header
        headers = sent = 0
        async for _, _, header, byte, request in ctx.tick().sample(
                dut.header.valid & dut.header.ready, dut.payload.valid & dut.payload.ready,
                dut.request.valid & dut.request.ready):
            headers, sent = headers + header, sent + byte
            if request:
                taken.append(headers)
                done = replies[:len(taken)]
                if headers != len(taken) or sent != sum(len(payload) for _, payload, _ in done):
                    broken.append(f"request {len(taken)} taken before its reply was")
                elif done[-1][1] and not byte:
                    broken.append(f"request {len(taken)} taken after its last payload byte")

    async def keys(ctx):
        rng = rng_for(stall, seed + 1)
        for command, keys, status in script:
            if status == Status.OK:
                for key in keys:
                    # the padding bits above the key width must be ignored
                    wire = key | 0xF << CONFIG.key_width
                    for value in wire.to_bytes(KB, "little"):
                        await put(ctx, dut.keys, value, rng=rng, stall=stall)

    async def core(ctx):
        rng = rng_for(stall, seed + 2)
        while True:
            command = await get(ctx, dut.cmd, rng=rng, stall=stall)
            got_commands.append((ModelOp(command.op.value), command.key))
            answers.append(command)

    async def responder(ctx):
        rng = rng_for(stall, seed + 3)
        present = set()
        while True:
            if not answers:
                await ctx.tick()
                continue
            command = answers.popleft()
            op, key = ModelOp(command.op.value), command.key
            hit = op != ModelOp.INSERT and key in present
            if op != ModelOp.QUERY:
                present.add(key)
            await put(ctx, dut.rsp, {"op": Op(op.value), "hit": hit}, rng=rng, stall=stall)

    async def replier(ctx):
        rng = rng_for(stall, seed + 4)
        for _ in script:
            header = await get(ctx, dut.header, rng=rng, stall=stall)
            payload = bytes([await get(ctx, dut.payload, rng=rng, stall=stall) for _ in range(header.length)])
            got_replies.append(((header.command, Status(header.status), header.length), payload))

    async def bench(ctx):
        # bounded: a broken executor fails the test instead of hanging it
        for _ in range(10_000):
            if len(got_replies) == len(script):
                break
            await ctx.tick()
        await ctx.tick().repeat(20)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for background in (requests, keys, core, responder, replier, order):
        sim.add_testbench(background, background=True)
    for stream, name in ((dut.cmd, "cmd"), (dut.header, "header"), (dut.payload, "payload")):
        sim.add_testbench(check_rules(stream, name, broken), background=True)
    sim.add_testbench(bench)
    sim.run()
    assert broken == []
    assert got_commands == commands
    assert got_replies == [(header, payload) for header, payload, _ in replies]
    assert len(taken) == len(script)


def script():
    keys = [0x00001, 0xFFFFF, 0x12345, 0x00001, 0xA5A5A, 0x12345, 0x54321, 0x00002, 0x00003, 0x00004]
    return [
        (Command.INFO, (), Status.OK),
        (Command.COUNTERS, (), Status.OK),
        (Command.QUERY, keys[:3], Status.OK),                    # nothing present yet
        (Command.INSERT, keys[:9], Status.OK),                   # 9 keys: two bitmap bytes
        (Command.QUERY, keys + [0x77777], Status.OK),
        (Command.TEST_AND_INSERT, [0x77777, 0x77777, 0x00004], Status.OK),
        (Command.QUERY, list(range(MAX_BATCH)), Status.OK),     # a full batch
        (0x00, (), Status.BAD_SYNC),
        (Command.INSERT, (), Status.BAD_CRC),
        (0x7E, (), Status.BAD_COMMAND),
        (Command.COUNTERS, (), Status.OK),
    ]


@pytest.mark.parametrize("stall", [0.0, 0.5])
def test_requests_replies_and_core_commands(stall):
    execute(script(), stall=stall)


@pytest.mark.parametrize("command", KEY_COMMANDS)
def test_each_key_command_sends_its_op(command):
    """The op sent to the core is the command's: the protocol's key commands and the core's ops agree."""
    execute([(command, [5, 6, 5], Status.OK), (Command.QUERY, [5, 6, 7], Status.OK)])
