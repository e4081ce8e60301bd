"""cocotb tests of the exported core (run them through :mod:`apbbf.sim.cocotb.runner`).

The Config comes from ``APBBF_CONFIG``; every test derives its seed from cocotb's ``RANDOM_SEED`` and prints
it. Every response is scored in order against the golden model (:class:`~.testbench.Scoreboard`); the tests
add assertions of their own where the expected answer is known independently of the model.

``soak`` runs only when ``APBBF_SOAK_COMMANDS`` is set (``scripts/soak.py``).
"""

from __future__ import annotations

import itertools
import os
import random
import time
import warnings

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from ...model.filters import Op
from ..harness import random_commands
from .testbench import Testbench, config_from_env

# cocotbext-axi 0.1.28 still calls cocotb 1.x APIs that cocotb 2 deprecates (Task.kill, setimmediatevalue,
# Edge); the warnings are its own, so they are silenced for that package only.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi(\.|$)")

OPS = (Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT)
SOAK_ENV = "APBBF_SOAK_COMMANDS"


def _seed(offset: int) -> int:
    return (cocotb.RANDOM_SEED * 1009 + offset) % (1 << 32)


async def _bench(dut, offset: int) -> Testbench:
    config = config_from_env()
    seed = _seed(offset)
    cocotb.log.info("config %s, bench seed %d (from COCOTB_RANDOM_SEED=%s and the test's name)", config, seed,
                    os.environ.get("COCOTB_RANDOM_SEED", "?"))
    return await Testbench.start(dut, config, seed)


def _key(rng: random.Random, width: int) -> int:
    return rng.getrandbits(width)


def _stream_length(config) -> int:
    """Commands covering 2(k+l)+1 generations when two ops in three insert."""
    return (2 * config.segments + 1) * config.generation * 3 // 2


@cocotb.test()
async def random_stream(dut):
    """All three ops with duplicates over more than 2(k+l) generations: first at full rate, then with idle
    gaps on the command stream and backpressure on the response stream."""
    tb = await _bench(dut, 1)
    config = tb.config
    commands = random_commands(config, _stream_length(config), seed=tb.seed)
    half = len(commands) // 2
    tb.send(commands[:half])
    await tb.drain()
    tb.set_pauses(cmd=0.3, rsp=0.4, burst=3)
    tb.send(commands[half:])
    await tb.drain()
    tb.check_counters()
    inserts = sum(op != Op.QUERY for op, _ in commands)
    assert inserts >= 2 * config.segments * config.generation, "stream too short"
    assert any(tb.scoreboard.results.values()), f"{tb.where()}: a stream with duplicates never hit"


@cocotb.test()
async def window_edges(dut):
    """Distinct inserts, then: the key of the insert that triggered the last shift and the oldest key still in
    the window (both present), and keys that have just expired (mostly absent); then, after a reset, the key
    w inserts old right after one more shift."""
    tb = await _bench(dut, 2)
    config = tb.config
    g, w = config.generation, config.window
    rng = random.Random(tb.seed)
    count = (config.segments + 2) * g
    keys = [_key(rng, config.key_width) for _ in range(count)]
    tb.send((Op.INSERT, key) for key in keys)
    shift_trigger, oldest = keys[count - g], keys[count - w]
    expired = keys[:g]
    probes = tb.send([(Op.QUERY, shift_trigger), (Op.QUERY, oldest)] + [(Op.QUERY, key) for key in expired])
    await tb.drain()
    results = tb.scoreboard.results
    assert results[probes[0]], f"{tb.where()}: the insert that triggered the shift is absent"
    assert results[probes[1]], f"{tb.where()}: the oldest key in the window is absent"
    still = sum(results[i] for i in probes[2:])
    assert still <= len(expired) // 2, f"{tb.where()}: {still} of {len(expired)} expired keys reported"
    tb.check_counters()

    await tb.reset()
    # 2g inserts: the last one shifted; the first key is then w - g + ... inserts old and still in the window.
    keys = [_key(rng, config.key_width) for _ in range(2 * g)]
    tb.send((Op.INSERT, key) for key in keys)
    probe = tb.send([(Op.QUERY, keys[0]), (Op.TEST_AND_INSERT, keys[-1])])
    await tb.drain()
    assert tb.scoreboard.results[probe[0]] and tb.scoreboard.results[probe[1]]
    tb.check_counters()


@cocotb.test()
async def shift_on_test_and_insert(dut):
    """A TEST_AND_INSERT that triggers a shift answers from the filter before the shift: a key of the
    generation in segments l..l+k-1 is still found, though the shift drops that generation's last segment."""
    tb = await _bench(dut, 3)
    config = tb.config
    k, g = config.k, config.generation
    rng = random.Random(tb.seed)
    count = config.segments * g                         # the next insert shifts
    keys = [_key(rng, config.key_width) for _ in range(count)]
    edge = keys[(k - 1) * g:k * g]
    tb.send((Op.INSERT, key) for key in keys)
    probe = tb.send([(Op.TEST_AND_INSERT, edge[0])] + [(Op.QUERY, key) for key in edge[1:]])
    await tb.drain()
    assert tb.scoreboard.results[probe[0]], f"{tb.where()}: the test-and-insert at the shift missed"
    tb.check_counters()


@cocotb.test()
async def back_to_back_same_key(dut):
    """The same key twice in a row with every pairing of ops, after a prefix that fills the filter; without
    and then with idle gaps and backpressure. An inserting first command makes a querying second one hit."""
    tb = await _bench(dut, 4)
    config = tb.config
    rng = random.Random(tb.seed)
    tb.send(random_commands(config, 2 * config.generation, seed=tb.seed))
    for stall in (0.0, 0.6):
        if stall:
            await tb.drain()
            tb.set_pauses(cmd=stall, rsp=stall)
        pairs = []
        for first, second in itertools.product(OPS, OPS):
            key = _key(rng, config.key_width)
            pairs.append((first, second, tb.send([(first, key), (second, key)])))
        await tb.drain()
        for first, second, indices in pairs:
            if first != Op.QUERY and second != Op.INSERT:
                assert tb.scoreboard.results[indices[1]], \
                    f"{tb.where()}: {first.name} then {second.name} (stall {stall}): the second missed"
    tb.check_counters()


@cocotb.test()
async def bursts(dut):
    """Bursts of TEST_AND_INSERT over a few keys (duplicate detection), then queries of them: at full rate,
    then with bursty backpressure, then with bursty idle gaps."""
    tb = await _bench(dut, 5)
    config = tb.config
    rng = random.Random(tb.seed)
    for cmd, rsp in ((0.0, 0.0), (0.0, 0.8), (0.7, 0.0)):
        tb.set_pauses(cmd=cmd, rsp=rsp, burst=8)
        pool = [_key(rng, config.key_width) for _ in range(8)]
        tb.send((Op.TEST_AND_INSERT, rng.choice(pool)) for _ in range(60))
        probes = tb.send((Op.QUERY, key) for key in pool)
        await tb.drain()
        used = {key for key in pool}
        assert sum(tb.scoreboard.results[i] for i in probes) >= len(used) - 1
    tb.check_counters()


@cocotb.test()
async def reset_under_traffic(dut):
    """aresetn low while commands are in flight, several times: in-flight commands get no response, the
    counters read 0, the filter is empty afterwards (keys inserted before are absent) and the model restarts."""
    tb = await _bench(dut, 6)
    config = tb.config
    rng = random.Random(tb.seed)
    dropped_total = 0
    for round_ in range(4):
        if round_ % 2:
            tb.set_pauses(cmd=0.3, rsp=0.5, burst=2)
        else:
            tb.set_pauses()
        before = random_commands(config, 3 * config.generation, seed=tb.seed + round_,
                                 ops=(Op.INSERT, Op.TEST_AND_INSERT))
        first = tb.commands.accepted
        tb.send(before)
        # Let some of them through, then reset at a cycle with a command in flight (accepted, not answered).
        target = first + rng.randrange(1, len(before) - 1)
        for _ in range(200 * len(before)):
            if tb.commands.accepted >= target and tb.scoreboard.outstanding:
                break
            await RisingEdge(dut.aclk)
        assert tb.scoreboard.outstanding, f"{tb.where()}: no command in flight to reset"
        dropped = await tb.reset(cycles=rng.randrange(1, 5))
        dropped_total += len(dropped)
        assert int(dut.inserts.value) == 0 and int(dut.shifts.value) == 0, \
            f"{tb.where()}: counters not cleared by reset"
        # The filter is empty: every key sent before the reset is absent now.
        probes = tb.send((Op.QUERY, key) for _, key in before[:64])
        tb.send(random_commands(config, config.generation, seed=tb.seed + 100 + round_))
        await tb.drain()
        present = [i for i in probes if tb.scoreboard.results[i]]
        assert not present, f"{tb.where()}: command {present[0]}: a key inserted before the reset is present"
        tb.check_counters()
    assert dropped_total >= 4


@cocotb.test(skip=not os.environ.get(SOAK_ENV))
async def soak(dut):
    """Long random stream (``APBBF_SOAK_COMMANDS`` commands) with light idle gaps and backpressure; the model
    answers ahead in batches. Prints commands per second of wall-clock simulation."""
    tb = await _bench(dut, 7)
    config = tb.config
    total = int(os.environ[SOAK_ENV])
    chunk = 20_000
    pause = float(os.environ.get("APBBF_SOAK_PAUSE", "0.1"))
    tb.set_pauses(cmd=pause, rsp=pause)
    start_wall, start_cycles = time.perf_counter(), _cycle(dut)
    sent = 0
    while sent < total:
        commands = random_commands(config, min(chunk, total - sent), seed=tb.seed * 7919 + sent)
        tb.model.plan(commands)
        for offset in range(0, len(commands), 1000):
            while tb.driver.queued() > 2000:
                await ClockCycles(dut.aclk, 256)
                tb._raise_failure()
            tb.send(commands[offset:offset + 1000])
        sent += len(commands)
        elapsed = time.perf_counter() - start_wall
        cocotb.log.info("soak: %d commands queued, %d checked, %.0f commands/s", sent,
                        tb.scoreboard.checked, tb.scoreboard.checked / max(elapsed, 1e-9))
    await tb.drain(max_cycles=100 * total + 10_000)
    tb.check_counters()
    elapsed = time.perf_counter() - start_wall
    cycles = _cycle(dut) - start_cycles
    rate = tb.scoreboard.checked / elapsed
    message = (f"SOAK RESULT: {tb.scoreboard.checked} commands checked in {elapsed:.1f} s of simulation: "
               f"{rate:.0f} commands/s, {cycles / elapsed:.0f} cycles/s, {cycles / tb.scoreboard.checked:.2f} "
               f"cycles/command; {sum(tb.scoreboard.results.values())} hits; seed {tb.seed}")
    cocotb.log.info("%s", message)
    result_file = os.environ.get("APBBF_SOAK_RESULT")
    if result_file:
        with open(result_file, "w") as f:
            f.write(f"{tb.scoreboard.checked} {elapsed} {cycles}\n")


def _cycle(dut) -> int:
    from cocotb.simtime import get_sim_time
    from .testbench import CLOCK_PERIOD_NS
    return int(get_sim_time("ns") // CLOCK_PERIOD_NS)
