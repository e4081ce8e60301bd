# amaranth: UnusedElaboratable=no
"""What is particular to each scan (hdl/core/scan_fsm.py, hdl/core/scan_parallel.py), through the core; the answers of
both against the model are in test_core.py."""

import pytest
from amaranth.sim import Simulator

from apbbf.hdl import APBBF
from apbbf.hdl.core.hash import hash_latency
from apbbf.hdl.core.scan_fsm import FSMScan
from apbbf.hdl.core.scan_parallel import ParallelScan, queue_depth, response_latency
from apbbf.model import APBBF as Model, Config, Op
from apbbf.sim.harness import random_commands, simulate

CONFIG = Config(2, 3, segment_blocks=4)


async def _wait_ready(ctx, dut):
    while not ctx.get(dut.cmd.ready):
        await ctx.tick()


def test_parallel_fills_its_response_queue_and_loses_nothing():
    """With ``rsp.ready`` low the parallel scan accepts exactly as many commands as its response queue holds
    (:func:`~apbbf.hdl.core.scan_parallel.queue_depth`) plus the one its A stage holds without a credit and the one
    in its skid register, then holds ``cmd.ready`` low; released, it answers all of them, in order, as the model."""
    dut = APBBF(CONFIG, scan="parallel")
    depth = queue_depth(CONFIG) + 2
    commands = [(Op.TEST_AND_INSERT, key % 5) for key in range(3 * depth)]
    want, _ = Model(CONFIG).run([op for op, _ in commands], [key for _, key in commands])

    async def bench(ctx):
        await _wait_ready(ctx, dut)
        accepted = 0
        ctx.set(dut.rsp.ready, 0)
        for cycle in range(4 * depth):
            op, key = commands[accepted]
            ctx.set(dut.cmd.valid, 1)
            ctx.set(dut.cmd.payload.op, op)
            ctx.set(dut.cmd.payload.key, key)
            _, _, ready = await ctx.tick().sample(dut.cmd.ready)
            accepted += ready
        assert accepted == depth
        ctx.set(dut.cmd.valid, 0)
        ctx.set(dut.rsp.ready, 1)
        for index in range(depth):
            _, _, valid, hit = await ctx.tick().sample(dut.rsp.valid, dut.rsp.payload.hit)
            assert valid and hit == want[index], f"response {index}"
        _, _, valid = await ctx.tick().sample(dut.rsp.valid)
        assert not valid

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("config", [CONFIG, Config(2, 3, segment_blocks=4, key_width=100)], ids=["key64", "key100"])
def test_parallel_response_latency(config):
    """With ``cmd.valid`` and ``rsp.ready`` high, every response comes exactly
    :func:`~apbbf.hdl.core.scan_parallel.response_latency` cycles after its command was accepted (commands that do not
    wait in A), and the queue's depth lets a command in every clock."""
    commands = random_commands(config, 300, seed=8)
    run = simulate(config, commands, seed=8, scan="parallel", name="latency")
    latencies = {run.respond[i] - run.accept[i] for i in range(len(commands))}
    assert latencies == {response_latency(config)}, latencies
    assert response_latency(config) == hash_latency(config) + 9   # A, hash (reads), read, M, W, D, E, F, queue 2
    assert max(run.accept[i + 1] - run.accept[i] for i in range(len(commands) - 1)) == 1


def test_fsm_takes_one_command_at_a_time():
    """The FSM scan holds ``cmd.ready`` low from acceptance until its response has been taken."""
    dut = APBBF(CONFIG, scan="fsm")

    async def bench(ctx):
        await _wait_ready(ctx, dut)
        ctx.set(dut.rsp.ready, 0)
        ctx.set(dut.cmd.valid, 1)
        ctx.set(dut.cmd.payload.op, Op.INSERT)
        ctx.set(dut.cmd.payload.key, 5)
        await ctx.tick()
        for _ in range(20):
            _, _, ready, valid = await ctx.tick().sample(dut.cmd.ready, dut.rsp.valid)
            assert not ready, "a second command accepted while one is in progress"
        assert valid
        ctx.set(dut.rsp.ready, 1)
        await ctx.tick()
        assert ctx.get(dut.cmd.ready)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("scan", [FSMScan, ParallelScan])
def test_init_wrong_config(scan):
    with pytest.raises(TypeError, match="config must be a Config"):
        scan({"k": 2})
