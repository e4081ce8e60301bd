"""The core with a time-bounded window against its golden model (apbbf.model.timewindow.TimedAPBBF) in Amaranth's
simulator, both scans: every response in order, the counters (inserts, shifts, overflows, expired) at the end,
and the time guarantee checked independently of the model."""

import collections
import random

import numpy as np
import pytest
from amaranth.hdl import Assert

from apbbf.hdl.core import apbbf as core_apbbf
from apbbf.hdl.core.buffer import CircularBuffer
from apbbf.model import Config, Op
from apbbf.model.timewindow import TimedAPBBF
from apbbf.sim import harness
from apbbf.sim.harness import RESET, expected, false_positive_bound, simulate, timed_commands

CONFIGS = {
    # A pool of two extra segments; 12-bit times (the streams wrap several times).
    "k2l3-pool2": Config(2, 3, segment_blocks=4, span=120, time_width=12, extra_segments=2),
    # No extra segment; 8-bit times; a wide block.
    "k3l4-B256": Config(3, 4, block_bits=256, block_hashes=4, segment_blocks=1, span=50, time_width=8),
    # The basic APBF (b = 1), 100-bit keys (two-stage hash).
    "apbf-key100": Config(2, 3, block_bits=16, block_hashes=1, segment_blocks=4, key_width=100, seed=5,
                          span=200, time_width=16, extra_segments=1),
}


@pytest.fixture(params=["fsm", "parallel"])
def scan(request):
    return request.param


def assert_time_guarantee(config, commands, hits):
    """Independent of the model: with no overflow, a key inserted at t is present at every query up to t + span
    (times unwrapped from their modular steps)."""
    mask = (1 << config.time_width) - 1
    clock, last_time, inserted = 0, None, {}
    for index, item in enumerate(commands):
        if item is RESET:
            inserted.clear()
            last_time = None
            continue
        op, key, time = item
        clock += 0 if last_time is None else (time - last_time) & mask
        last_time = time
        if op in (Op.QUERY, Op.TEST_AND_INSERT) and index in hits and key in inserted:
            age = clock - inserted[key]
            assert age > config.span or hits[index], (
                f"command {index} ({Op(op).name} {key:#x} t={time}): inserted {age} ticks ago (span "
                f"{config.span}) but reported absent")
        if op in (Op.INSERT, Op.TEST_AND_INSERT):
            inserted[key] = clock


def overflows(config, commands):
    model = TimedAPBBF(config)
    model.run(*zip(*[(op, key, t) for op, key, t in commands]))
    return model


#: The (config, rate, scan) cases of test_random_streams in ``make test``: each config and each rate on the
#: parallel scan (the FSM scan runs the time window in test_idle_gaps_restart and the directed tests here; it takes
#: several cycles a command, so its cases cost the most); the other fifteen of the full product run in
#: ``make test-slow``.
RANDOM_QUICK = {("k2l3-pool2", 4.0, "parallel"), ("k3l4-B256", 1.0, "parallel"), ("apbf-key100", 0.1, "parallel")}


@pytest.mark.parametrize("name,rate,scan", [
    pytest.param(name, rate, scan, id=f"{scan}-{name}-{rate}",
                 marks=[] if (name, rate, scan) in RANDOM_QUICK else [pytest.mark.slow])
    for scan in ("fsm", "parallel") for name in CONFIGS for rate in (0.1, 1.0, 4.0)])
def test_random_streams(name, rate, scan):
    """All three ops with duplicates at 0.1x, 1x and 4x the planned rate: slow traffic shifts by time, fast
    traffic by count, with bursts beyond the pool (overflows); answers and counters equal the model's.
    ``make test`` runs the cases of :data:`RANDOM_QUICK`; what the other cases could add is an interaction of a
    config with a rate, or of all three."""
    config = CONFIGS[name]
    seed = 100 + list(CONFIGS).index(name) * 10 + int(rate * 10)
    commands = timed_commands(config, 30 * config.generation, seed=seed, rate=rate)
    run = simulate(config, commands, seed=seed, scan=scan, name=f"timed-{name}-{rate}-{scan}")
    model = overflows(config, commands)
    if not model.overflows:
        assert_time_guarantee(config, commands, run.hits)
    assert model.shifts > 2 * config.physical_segments
    if rate < 1:
        assert model.shifts > model.n / config.generation + 5, "slow traffic shifted by count"
    if rate > 2 and config.extra_segments < 2:
        assert model.overflows > 0, "fast traffic never filled the pool"
    assert sum(run.hits.values()) > 0


#: The (config, scan) cases of test_idle_gaps_restart in ``make test``: both scans, one config each; the other four
#: run in ``make test-slow``.
GAPS_QUICK = {("k2l3-pool2", "fsm"), ("k3l4-B256", "parallel")}


@pytest.mark.parametrize("name,scan", [
    pytest.param(name, scan, id=f"{scan}-{name}", marks=[] if (name, scan) in GAPS_QUICK else [pytest.mark.slow])
    for scan in ("fsm", "parallel") for name in CONFIGS])
def test_idle_gaps_restart(name, scan):
    """Idle gaps longer than the span with idle cycles on cmd and backpressure on rsp: every insert after one
    restarts the filter (every memory cleared), nothing from before the gap comes back."""
    config = CONFIGS[name]
    seed = 200 + list(CONFIGS).index(name)
    commands = timed_commands(config, 20 * config.generation, seed=seed, gaps=0.02)
    run = simulate(config, commands, seed=seed, cmd_gap=0.3, rsp_stall=0.4, scan=scan,
                   name=f"timed-gaps-{name}-{scan}")
    model = overflows(config, commands)
    assert model.restarts >= 2
    if not model.overflows:
        assert_time_guarantee(config, commands, run.hits)


def test_span_edge(scan):
    """A key queried exactly at t + span is present; one tick later, with nothing else inserted, absent."""
    config = CONFIGS["k2l3-pool2"]
    t = 3000
    commands = [(Op.INSERT, 0x1234, t), (Op.QUERY, 0x1234, t + config.span),
                (Op.QUERY, 0x1234, t + config.span + 1), (Op.TEST_AND_INSERT, 0x1234, t + config.span + 1),
                (Op.QUERY, 0x1234, t + config.span + 1)]
    run = simulate(config, commands, seed=7, scan=scan, name=f"timed-edge-{scan}")
    assert [run.hits[i] for i in range(1, 5)] == [True, False, False, True]


def test_wrap_edge(scan):
    """The same across the wrap of the time counter."""
    config = CONFIGS["k3l4-B256"]
    t = (1 << config.time_width) - 10
    mask = (1 << config.time_width) - 1
    commands = [(Op.INSERT, 0xAB, t), (Op.QUERY, 0xAB, (t + config.span) & mask),
                (Op.QUERY, 0xAB, (t + config.span + 1) & mask)]
    run = simulate(config, commands, seed=8, scan=scan, name=f"timed-wrap-{scan}")
    assert (run.hits[1], run.hits[2]) == (True, False)


def test_test_and_insert_back_to_back_equal_times(scan):
    """TEST_AND_INSERT of the same key on consecutive clocks with equal timestamps: the second is a hit."""
    config = CONFIGS["k2l3-pool2"]
    rng = random.Random(9)
    prefix = timed_commands(config, 3 * config.generation, seed=9)
    t = prefix[-1][2]
    commands = list(prefix)
    for _ in range(20):
        key = rng.getrandbits(64)
        commands += [(Op.TEST_AND_INSERT, key, t), (Op.TEST_AND_INSERT, key, t)]
    run = simulate(config, commands, seed=10, scan=scan, name=f"timed-tai-{scan}")
    for i in range(len(prefix) + 1, len(commands), 2):
        assert run.hits[i], f"command {i}: the second TEST_AND_INSERT missed"


def test_reset_mid_stream(scan):
    """Reset pulses while commands are in flight: the filter restarts empty and not started."""
    config = CONFIGS["k2l3-pool2"]
    before = timed_commands(config, 3 * config.generation, seed=11, ops=(Op.INSERT, Op.TEST_AND_INSERT))
    key, t = before[-1][1], before[-1][2]
    after = timed_commands(config, 2 * config.generation, seed=12, start=t)
    commands = before + [RESET, (Op.QUERY, key, t)] + after
    run = simulate(config, commands, seed=13, cmd_gap=0.2, rsp_stall=0.3, scan=scan, name=f"timed-reset-{scan}")
    assert not run.hits[len(before) + 1]


def test_reserved_op(scan):
    """The reserved op 3 is answered in order with op 3 and hit 0 and changes nothing, in a window bounded by
    count and by time."""
    for config in (Config(2, 3, segment_blocks=4), CONFIGS["k2l3-pool2"]):
        stamp = (lambda op, key, t: (op, key, t)) if config.timed else (lambda op, key, t: (op, key))
        commands = [stamp(Op.INSERT, 5, 10), stamp(3, 5, 11), stamp(3, 6, 12), stamp(Op.QUERY, 6, 13),
                    stamp(Op.QUERY, 5, 14)]
        run = simulate(config, commands, seed=14, scan=scan, name=f"reserved-{scan}")
        assert [run.hits[i] for i in range(5)] == [False, False, False, False, True]


def test_no_false_positive_surge_after_expiry(scan):
    """Keys older than span + shift_interval are answered as absent keys are (false positives only)."""
    config = CONFIGS["k2l3-pool2"]
    first = timed_commands(config, 4 * config.generation, seed=15, ops=(Op.INSERT,), duplicates=0)
    t = first[-1][2]
    later = (t + config.span + config.shift_interval + 1) & ((1 << config.time_width) - 1)
    # keep the filter alive (no restart) with fresh inserts, then query the old keys
    keep = [(Op.INSERT, 0xF00000 + i, (t + i * config.span // 8) & ((1 << config.time_width) - 1))
            for i in range(1, 9)]
    probes = [(Op.QUERY, key, later) for _, key, _ in first]
    run = simulate(config, first + keep + probes, seed=16, scan=scan, name=f"timed-old-{scan}")
    still = sum(run.hits[len(first) + len(keep) + i] for i in range(len(probes)))
    assert still <= false_positive_bound(config, len(probes))


def test_parallel_takes_a_command_every_clock():
    """At the planned rate, with a pool, the parallel scan accepts a command in every cycle (no restart)."""
    config = CONFIGS["k2l3-pool2"]
    commands = timed_commands(config, 20 * config.generation, seed=17, rate=1.0)
    run = simulate(config, commands, seed=17, scan="parallel", name="timed-rate")
    accepts = np.array([run.accept[i] for i in range(len(commands))])
    _, _ = expected(config, commands)
    assert np.diff(accepts).max() == 1, f"the parallel scan waited {np.diff(accepts).max() - 1} cycles"


def test_expiry_is_sticky_across_the_wrap(scan):
    """Queries only, long after a key expired, while the time counter wraps again and again: the key stays
    absent (a segment seen expired never comes back), and the next insert restarts the filter."""
    config = CONFIGS["k3l4-B256"]
    mask = (1 << config.time_width) - 1
    commands = [(Op.INSERT, 0x77, 0), (Op.QUERY, 0x77, config.span), (Op.QUERY, 0x77, config.span + 1)]
    commands += [(Op.QUERY, 0x77, (config.span + 1 + 40 * i) & mask) for i in range(1, 30)]
    commands += [(Op.TEST_AND_INSERT, 0x77, (config.span + 1 + 40 * 30) & mask), (Op.QUERY, 0x77, 0)]
    run = simulate(config, commands, seed=18, scan=scan, name=f"timed-sticky-{scan}")
    assert run.hits[1] and not any(run.hits[i] for i in range(2, len(commands) - 1))
    assert overflows(config, commands).restarts == 1



#: One block per segment and a generation of 5 keys: the pool fills within a few dozen inserts.
POOL_SMALL = Config(2, 3, segment_blocks=1, span=120, time_width=12, extra_segments=2)


@pytest.mark.parametrize("filled", range(2, POOL_SMALL.physical_segments + 1))
def test_shift_due_right_after_a_shift(scan, filled):
    """Inserts at one time until the shift by count that makes ``filled`` segments live (the pool is full at
    ``physical_segments - 1``), then, back to back, inserts a shift interval later: a shift by time is due, and it
    waits if that shift has just filled the pool. The command after a shift must see the state that shift leaves:
    every answer and the counters (shifts, overflows) equal to the model's."""
    config = POOL_SMALL
    g, t0 = config.generation, 1000
    burst = (filled - config.k - 1) * g + 1          # the first insert shifts: k + 1 live; each g more, one more
    keys = iter(range(1, 1000))
    commands = [(Op.INSERT, next(keys), t0) for _ in range(burst)]
    commands += [(Op.INSERT, next(keys), t0 + config.shift_interval) for _ in range(3)]
    commands += [(Op.QUERY, key, t0 + config.shift_interval) for key in range(1, burst + 4)]
    model = overflows(config, commands)
    assert model.shifts == filled - config.k + (filled < config.physical_segments - 1)
    simulate(config, commands, seed=21, scan=scan, name=f"timed-pool-{filled}-{scan}")


@pytest.mark.parametrize("inserts", [8, 12])
@pytest.mark.parametrize("pool", [1, 0], ids=["pool1", "pool0"])
def test_shift_after_a_shift_waits_for_what_it_retired(scan, inserts, pool):
    """A generation of one key (every insert shifts) and inserts back to back at one time: once the pool is full,
    each shift retires the oldest segment, two below base, and the next insert shifts into it. That insert must
    wait until the segment is cleared (one cycle here, behind the insert ahead), or the clearing erases its blocks
    and a query of its key misses. On the parallel scan it enters while the shift ahead is decided, and its wait
    is the buffer's next-state flag: every answer equal to the model's. With a pool of one segment the buffer keeps
    the flags below base in registers (P = k + 4); without, it picks them from every segment (P < k + 4)."""
    config = Config(2, 2, block_bits=8, block_hashes=2, segment_blocks=1, key_width=8, span=6, time_width=5,
                    extra_segments=pool)
    assert config.generation == 1 and (config.physical_segments >= config.k + 4) == (pool == 1)
    keys = range(0x11, 0x11 + inserts)
    commands = [(Op.INSERT, key, 0) for key in keys] + [(Op.QUERY, key, 1) for key in keys]
    simulate(config, commands, seed=22, scan=scan, name=f"timed-shift-after-shift-{inserts}-{scan}")


def test_shift_fills_the_pool_again_after_an_expiry(scan):
    """A shift (A) that fills the pool without an overflow, the free position two below its base holding a
    deadline already passed, and, back to back, an insert (B) whose shift by time is due: B must wait on the count
    floor. Inserts at t0 fill the pool (every deadline t0 + span + 1); one at t0 + 100 keeps the newest segments
    alive; one at t0 + span + 2 shifts by time and retires the five that expired, leaving three live and five free,
    clean positions with that deadline; 4·g inserts at t0 + 130 fill the pool again by count, the last (A) shifting
    into the seventh live segment. Then two below A's base is free with its old deadline, three below is the oldest
    live segment, fresh until t0 + 100 + span. B, at A's time + shift_interval, enters on the parallel scan in the
    cycle A is decided, so its shift comes from the buffer's lookahead, whose pool-full pick must read B's
    ``expired`` three below A's base: read at the free position it says the pool is not full, and B shifts, retiring
    a fresh segment early. (After an overflow the position two below is retired, B's shift would wait for it to be
    cleared, and the wait computes B's flags again from the state as it is: a wrong pick there never reaches a
    decision. The FSM scan never takes a command in a decision's cycle; it runs the same stream.) Every answer and
    the counters equal to the model's, which overflows nowhere."""
    config = POOL_SMALL
    g, k, P, span = config.generation, config.k, config.physical_segments, config.span
    t0, t_a = 1000, 1130
    keys = iter(range(1, 1000))
    commands = [(Op.INSERT, next(keys), t0) for _ in range((P - k - 2) * g + 1)]
    commands += [(Op.INSERT, next(keys), t0 + 100), (Op.INSERT, next(keys), t0 + span + 2)]
    commands += [(Op.INSERT, next(keys), t_a) for _ in range((P - k - 2) * g)]
    before_a = overflows(config, commands[:-1])
    assert (before_a.live, before_a.expired, before_a.overflows) == (P - 2, P - k - 1, 0)
    commands += [(Op.INSERT, next(keys), t_a + config.shift_interval)]
    model = overflows(config, commands)
    assert (model.live, model.shifts, model.overflows) == (P - 1, before_a.shifts + 1, 0), "B shifted"
    commands += [(Op.QUERY, key, t_a + config.shift_interval) for key in range(1, len(commands) + 1)]
    simulate(config, commands, seed=22, scan=scan, name=f"timed-refill-{scan}")


# The reproducer's pattern on a small Config (k=2 l=8, 2 blocks, 12-bit times that wrap, 2 extra segments):
# without the deferral the model too loses keys from the 4th trickle on (76, 66, 57, 49 of 80).
TRICKLE_SMALL = Config(2, 8, segment_blocks=2, span=400, time_width=12, extra_segments=2)


def check_trickle(config, scan, every):
    from tests.test_timewindow import trickle
    commands, queries = trickle(config, every=every)
    run = simulate(config, commands, seed=18, scan=scan, name=f"timed-trickle-{scan}")
    for j, asked in enumerate(queries, 1):
        found = sum(run.hits[i] for i in asked)
        assert found == len(asked), f"trickle {j}: {found} of {len(asked)} queried inserts found"


@pytest.mark.parametrize("scan", ["parallel", pytest.param("fsm", marks=pytest.mark.slow)])
def test_trickle_keeps_the_count_floor(scan):
    """The overload reproducer's pattern: 16·g keys at one time, then one key per shift interval; after each of
    the 7 trickles every one of the last l·g inserts is found, every answer equal to the model's. ``make test``
    runs the parallel scan here; the FSM scan's floor is in ``make test`` through the exported core on Icarus
    (test_cocotb.py, the timed FSM case), and here in ``make test-slow``."""
    check_trickle(TRICKLE_SMALL, scan, 1)


@pytest.mark.slow
@pytest.mark.parametrize("scan, every", [("parallel", 1), ("fsm", 16)])
def test_trickle_reproducer(scan, every):
    """The reproducer itself (k=3 l=8 B=64 b=4, 64 blocks, span 2000, 16-bit times, 2 extra segments): the
    last l·g inserts queried after each trickle (every one on the parallel scan, every 16th on the FSM)."""
    from tests.test_timewindow import TRICKLE
    check_trickle(TRICKLE, scan, every)


def accepted_cycles(config, scan, commands, *, idle: tuple[int, int] | None = None, pace: int = 1):
    """Cycle numbers at which each of ``commands`` is accepted, offered back to back (``rsp.ready`` high);
    ``idle = (index, cycles)`` leaves ``cycles`` idle cycles before command ``index``."""
    from amaranth.sim import Simulator
    from apbbf.hdl.core.apbbf import APBBF
    dut = APBBF(config, scan=scan, pace=pace)
    accepted = []

    limit = 50 * (len(commands) + config.segment_blocks + 100)      # cycles before the producer gives up

    async def producer(ctx):
        cycle = 0
        for index, (op, key, time) in enumerate(commands):
            if idle is not None and index == idle[0]:
                ctx.set(dut.cmd.valid, 0)
                await ctx.tick().repeat(idle[1])
                cycle += idle[1]
            ctx.set(dut.cmd.payload, {"op": op, "key": key, "time": time})
            ctx.set(dut.cmd.valid, 1)
            while True:
                cycle += 1
                if (await ctx.tick().sample(dut.cmd.ready))[2]:
                    break
                if cycle > limit:
                    return
            accepted.append(cycle)
        ctx.set(dut.cmd.valid, 0)

    async def consumer(ctx):
        ctx.set(dut.rsp.ready, 1)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()                                     # until the producer is done (or gives up)
    assert len(accepted) == len(commands), "the core stopped taking commands"
    return accepted


@pytest.mark.parametrize("config", [
    pytest.param(Config(2, 3, segment_blocks=16, span=100, time_width=12, extra_segments=2), id="S16"),
    pytest.param(Config(3, 4, block_bits=128, block_hashes=8, segment_blocks=64, span=500, time_width=16,
                        extra_segments=3), id="S64-B128", marks=pytest.mark.slow)])
@pytest.mark.parametrize("scan, idle", [
    pytest.param("parallel", False, id="parallel-back-to-back"),
    pytest.param("parallel", True, id="parallel-after-idle", marks=pytest.mark.slow),
    pytest.param("fsm", False, id="fsm-back-to-back", marks=pytest.mark.slow),
    pytest.param("fsm", True, id="fsm-after-idle")])
def test_restart_clearing_time(config, idle, scan):
    """The restart's cost as the header and docs state it (``restart_cycles`` of the scan): how much later the
    commands behind an insert that finds everything expired are accepted than behind an ordinary insert (the same
    stream without the time jump), behind commands every clock and after idle cycles."""
    from apbbf.hdl.core import scan_fsm, scan_parallel
    fewest, most = {"fsm": scan_fsm, "parallel": scan_parallel}[scan].restart_cycles(config)
    before = [(Op.INSERT, 0x100 + i, i) for i in range(12)]
    after = [(Op.INSERT, 0x999 + j) for j in range(6)]       # fixed cycles per insert on both scans
    index = len(before)
    # The parallel scan takes the commands right behind it into U, T (the time compares) and the skid register
    # while it waits in A: the delay shows on the one after them.
    behind = 2 + (scan_parallel.staging(config) if scan == "parallel" else 0)
    delays = []
    for time in (11 + config.span + 1, 12):                 # the restart, then the same stream without it
        commands = before + [(op, key, time) for op, key in after]
        accepted = accepted_cycles(config, scan, commands, idle=(index, 40) if idle else None)
        delays.append(accepted[index + behind] - accepted[index])
    expected = fewest if idle else most
    assert delays[0] - delays[1] == expected, (
        f"{scan}: the restart delayed the commands behind it by {delays[0] - delays[1]} cycles, restart_cycles "
        f"says {expected}")


def test_fsm_query_cycles_with_and_without_a_scan():
    """The FSM's cycles per query (``apbbf.sim.cycles.command_cycles``, the export header): ``latency + R + 3 +
    A + 1`` when Algorithm 1 reads A > 0 segments, and a cycle fewer than that with A = 0 (no match cycle), which
    only a time window reaches: queries once every segment has expired find fewer than k fresh ones and read none.
    Each back-to-back query's cycles are measured against the model's access count."""
    from apbbf.sim.cycles import command_cycles
    config = Config(2, 3, segment_blocks=16, span=100, time_width=12, extra_segments=2)
    inserts = [(Op.INSERT, 0x100 + i, i) for i in range(12)]
    fresh = [(Op.QUERY, 0x100 + i, 20) for i in range(6)] + [(Op.QUERY, 0x5000 + i, 20) for i in range(6)]
    late = 20 + 3 * config.span                              # every segment expired: fewer than k fresh
    expired = [(Op.QUERY, 0x100 + i, late) for i in range(8)]
    commands = inserts + fresh + expired + [(Op.QUERY, 0x7000, late)]
    model = TimedAPBBF(config)
    accesses = [model.command(op, key, time)[1] for op, key, time in commands]
    accepted = accepted_cycles(config, "fsm", commands)
    measured, predicted = [], []
    # From the second fresh query on (the first follows an insert), and from the second late one (the first may
    # pay the restart's clearing); each gap is the cycles of the query before it.
    for index in [*range(len(inserts) + 1, len(inserts) + len(fresh)),
                  *range(len(inserts) + len(fresh) + 1, len(commands))]:
        measured.append(accepted[index] - accepted[index - 1])
        predicted.append(command_cycles(config, Op.QUERY, accesses[index - 1]))
    scanned = {accesses[index - 1] for index in range(len(inserts) + 1, len(inserts) + len(fresh))}
    assert 0 not in scanned and accesses[-2] == 0, f"the queries' accesses were {accesses}"
    assert measured == predicted, f"cycles per query {measured}, the cycle model says {predicted} ({accesses=})"


@pytest.mark.parametrize("pace", [2, 3])
@pytest.mark.parametrize("name,rate", [("k2l3-pool2", 4.0), pytest.param("k3l4-B256", 1.0, marks=pytest.mark.slow),
                                       pytest.param("apbf-key100", 0.1, marks=pytest.mark.slow)])
def test_pace_two(name, rate, pace):
    """The parallel scan at ``pace=2`` and ``pace=3`` (a command every other or every third clock at most,
    decided from the buffer's flags as they are, or as registered): the same answers and counters as the model
    under idle gaps and backpressure, the time guarantee, and, with commands and ``rsp.ready`` never pausing,
    exactly one command every ``pace`` cycles (every cycle at ``pace=1``)."""
    config = CONFIGS[name]
    seed = 300 + list(CONFIGS).index(name)
    commands = timed_commands(config, 20 * config.generation, seed=seed, rate=rate)
    run = simulate(config, commands, seed=seed, cmd_gap=0.2, rsp_stall=0.2, scan="parallel", pace=pace,
                   name=f"timed-pace{pace}-{name}-{rate}")
    if not overflows(config, commands).overflows:
        assert_time_guarantee(config, commands, run.hits)
    queries = [(Op.QUERY, 0x40 + i, 5) for i in range(24)]
    accepted = accepted_cycles(config, "parallel", queries, pace=pace)
    assert {b - a for a, b in zip(accepted[4:], accepted[5:])} == {pace}, accepted
    one = accepted_cycles(config, "parallel", queries)
    assert {b - a for a, b in zip(one[4:], one[5:])} == {1}, one


class CheckedBuffer(CircularBuffer):
    """The circular buffer with its invariants asserted in every cycle: each register kept at a position below
    base (the parallel scan's lookahead) equals the pick of that position from the per-segment vectors."""

    def _invariant(self, m, name, value, exact):
        m.d.sync += Assert(value == exact(), name)


@pytest.mark.parametrize("name,rate", [("k2l3-pool2", 0.1), pytest.param("k3l4-B256", 4.0, marks=pytest.mark.slow),
                                       pytest.param("apbf-key100", 1.0, marks=pytest.mark.slow)])
def test_position_registers_equal_their_picks(monkeypatch, name, rate):
    """The registers the parallel scan's buffer keeps by position below base (the deadline at every position, a
    ring that turns with base; live, stale, expired and staged flags one and two below; dirty and cleaned one
    below), each updated from its neighbours on a shift, equal in every cycle the picks by the one-hot base of
    the per-segment values they stand for. The answers alone can miss such an error: with the deadline four
    below base taken from before a shift, every other test of this file passed."""
    monkeypatch.setattr(core_apbbf, "CircularBuffer", CheckedBuffer)
    monkeypatch.setattr(harness, "_BENCHES", collections.OrderedDict())     # not a design built without checks
    config = CONFIGS[name]
    seed = 400 + list(CONFIGS).index(name)
    commands = timed_commands(config, 30 * config.generation, seed=seed, rate=rate)
    simulate(config, commands, seed=seed, cmd_gap=0.1, rsp_stall=0.1, scan="parallel",
             name=f"timed-positions-{name}-{rate}")
