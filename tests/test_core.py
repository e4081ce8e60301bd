# amaranth: UnusedElaboratable=no
"""The APBBF core against the golden model in Amaranth's simulator, both scans.

Every test scores every response against :class:`apbbf.model.APBBF` through :mod:`apbbf.sim.harness`, which
leaves a VCD under build/vcd/ on a failure. Configs use few blocks per segment so that a stream crosses
2(k+l) generations in a few thousand cycles.
"""

import itertools
import random

import numpy as np
import pytest

from apbbf.model import Config, Op
from apbbf.model import APBBF as Model
from apbbf.sim.cycles import accept_schedule, command_cycles
from apbbf.sim.harness import RESET, expected, false_positive_bound, random_commands, simulate

CONFIGS = {
    "apbf-b1": Config(2, 3, block_bits=16, block_hashes=1, segment_blocks=4),    # the basic APBF
    "k2l3": Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=4),
    "k3l8": Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=2),
    "wide-B256": Config(2, 3, block_bits=256, block_hashes=4, segment_blocks=1),
    "key128": Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=2, key_width=128, seed=7),
}
# g·(cycles per insert) < segment_blocks: the spare cannot be cleared within a generation, so the core stalls.
TINY = Config(12, 2, block_bits=8, block_hashes=4, segment_blocks=64)

OPS = (Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT)


@pytest.fixture(params=["fsm", "parallel"])
def scan(request):
    """Both scans share the hash unit, segments and insert path; every proof runs on both."""
    return request.param


def scan_cases(names, quick):
    """``(name, scan)`` for both scans, each named ``scan-name``: those in ``quick`` run in ``make test``, the
    others in ``make test-slow`` only."""
    return [pytest.param(name, scan, id=f"{scan}-{name}", marks=[] if (name, scan) in quick else [pytest.mark.slow])
            for scan in ("fsm", "parallel") for name in names]


def stream_length(config):
    """Commands for 2(k+l) generations plus one, with two ops in three inserting."""
    return (2 * config.segments + 1) * config.generation * 3 // 2


def key_of(index, width=64, salt=0):
    return random.Random(index * 7919 + salt).getrandbits(width)


def assert_no_false_negatives(config, commands, hits):
    """Independent of the model: a key inserted within the last w inserts is reported present."""
    last_insert = {}
    inserts = 0
    for index, item in enumerate(commands):
        if item is RESET:
            last_insert.clear()
            inserts = 0
            continue
        op, key = item
        if op != Op.INSERT and index in hits and key in last_insert:
            if inserts - last_insert[key] < config.window:
                assert hits[index], (f"command {index} ({Op(op).name} {key:#x}): inserted "
                                     f"{inserts - last_insert[key]} inserts ago (< w={config.window}) "
                                     f"but reported absent")
        if op != Op.QUERY:
            last_insert[key] = inserts
            inserts += 1


#: ``make test``: every config on the parallel scan but the widest two (each config's hash and block layout is the
#: same on both scans), and the longest config on the FSM scan, whose commands take several cycles.
STREAM_QUICK = {("apbf-b1", "parallel"), ("k2l3", "parallel"), ("k3l8", "parallel"), ("k3l8", "fsm")}


@pytest.mark.parametrize("name,scan", scan_cases(CONFIGS, STREAM_QUICK))
def test_random_stream_cycles(name, scan):
    """All three ops over 2(k+l) generations, no stalls: answers equal the model and every command takes
    exactly the cycles the cycle model predicts."""
    config = CONFIGS[name]
    seed = 1000 + list(CONFIGS).index(name)
    commands = random_commands(config, stream_length(config), seed=seed)
    run = simulate(config, commands, seed=seed, scan=scan, name=f"random-{name}-{scan}")
    assert run.seed == seed
    _, accesses = expected(config, commands)
    predicted = accept_schedule(config, [op for op, _ in commands], accesses, scan=scan)
    measured = np.array([run.accept[i] for i in range(len(commands))])
    wrong = np.flatnonzero(measured != predicted)
    assert not len(wrong), (f"seed {seed}: command {wrong[0]} ({Op(commands[wrong[0]][0]).name}) accepted in "
                            f"cycle {measured[wrong[0]]}, cycle model says {predicted[wrong[0]]}")
    assert_no_false_negatives(config, commands, run.hits)
    assert sum(run.hits.values()) > 0, f"seed {seed}: a stream with duplicates never hit"


#: ``make test``: backpressure on both scans, and the widest configs on the parallel scan.
STALLS_QUICK = {("k2l3", "fsm"), ("apbf-b1", "fsm"), ("k2l3", "parallel"), ("k3l8", "parallel"),
                ("wide-B256", "parallel"), ("key128", "parallel"), ("apbf-b1", "parallel")}


@pytest.mark.parametrize("name,scan", scan_cases(CONFIGS, STALLS_QUICK))
def test_random_stream_backpressure(name, scan):
    """The same kind of stream with idle gaps on cmd and backpressure on rsp."""
    config = CONFIGS[name]
    seed = 2000 + list(CONFIGS).index(name)
    commands = random_commands(config, stream_length(config) // 2, seed=seed)
    run = simulate(config, commands, seed=seed, cmd_gap=0.4, rsp_stall=0.5, scan=scan, name=f"stalls-{name}-{scan}")
    assert_no_false_negatives(config, commands, run.hits)


@pytest.mark.parametrize("scan", ["parallel", pytest.param("fsm", marks=pytest.mark.slow)])
def test_tiny_config_stalls_only_at_the_boundary(scan):
    """A generation shorter than the clearing: the core waits at the boundary, as the cycle model says."""
    config = TINY
    commands = random_commands(config, 6 * config.generation * config.segments // 4, seed=5)
    run = simulate(config, commands, seed=5, scan=scan, name=f"tiny-{scan}")
    _, accesses = expected(config, commands)
    predicted = accept_schedule(config, [op for op, _ in commands], accesses, scan=scan)
    measured = np.array([run.accept[i] for i in range(len(commands))])
    assert (measured == predicted).all(), f"first difference at command {np.argmax(measured != predicted)}"
    if scan == "fsm":
        costs = [command_cycles(config, op, a) for (op, _), a in zip(commands, accesses)]
    else:
        costs = [1] * len(commands)
    gaps = np.diff(measured) - costs[:-1]
    assert gaps.max() > 0, "the tiny config was expected to stall for the clearing"


@pytest.mark.parametrize("name,scan", scan_cases(["k2l3", "k3l8"], {("k2l3", "fsm"), ("k2l3", "parallel"),
                                                                     ("k3l8", "parallel")}))
def test_window_edges(name, scan):
    """Distinct inserts, then queries of: the key of the insert that triggered a shift, the oldest key still
    in the window, and keys that have just expired (all l+k generations old)."""
    config = CONFIGS[name]
    g, w = config.generation, config.window
    count = (config.segments + 2) * g
    keys = [key_of(i, salt=1) for i in range(count)]
    commands = [(Op.INSERT, key) for key in keys]
    shift_trigger = keys[count - g]                       # the first insert of the newest generation
    oldest_in_window = keys[count - w]
    expired = keys[:g]                                    # inserted more than (k+l) generations ago
    commands += [(Op.QUERY, shift_trigger), (Op.QUERY, oldest_in_window)] + [(Op.QUERY, k) for k in expired]
    run = simulate(config, commands, seed=3, scan=scan, name=f"edges-{name}-{scan}")
    assert run.hits[count] and run.hits[count + 1]
    still = sum(run.hits[count + 2 + i] for i in range(len(expired)))
    bound = false_positive_bound(config, len(expired))
    assert still <= bound, f"{still} of {len(expired)} expired keys still reported (absent keys: at most {bound})"
    # Just before a shift exactly w + (g - 1) inserts are guaranteed; one more insert shifts, and the key
    # that was then w inserts old must still be present.
    commands2 = [(Op.INSERT, key) for key in keys[:2 * g]] + [(Op.QUERY, keys[0])]
    simulate(config, commands2, seed=4, scan=scan, name=f"edges2-{name}-{scan}")


def test_back_to_back_same_key(scan):
    """The same key twice in a row with every pairing of ops, after a prefix that fills the filter, with
    and without backpressure; an inserting first command makes the second a hit. One stream holds every pairing,
    each on a key of its own (the prefix simulated once, not once per pairing), every response the model's."""
    config = CONFIGS["k2l3"]
    prefix = random_commands(config, config.generation * 2, seed=11)
    pairs = list(itertools.product(OPS, OPS))
    commands = list(prefix)
    for index, (first, second) in enumerate(pairs):
        key = key_of(99 + index, salt=2)
        commands += [(first, key), (second, key)]
    for stall in (0.0, 0.6):
        run = simulate(config, commands, seed=12, cmd_gap=stall, rsp_stall=stall, scan=scan,
                       name=f"b2b-{scan}-{stall}")
        for index, (first, second) in enumerate(pairs):
            if first != Op.QUERY and second != Op.INSERT:
                assert run.hits[len(prefix) + 2 * index + 1], f"{first.name} then {second.name}: second missed"


@pytest.mark.parametrize("stall", [0.0, 0.8])
def test_bursts(stall, scan):
    """Bursts of TEST_AND_INSERT over a few keys (duplicate detection), then bursts of queries."""
    config = CONFIGS["k2l3"]
    rng = random.Random(21)
    pool = [key_of(i, salt=3) for i in range(8)]
    commands = [(Op.TEST_AND_INSERT, rng.choice(pool)) for _ in range(120)]
    commands += [(Op.QUERY, key) for key in pool]
    run = simulate(config, commands, seed=22, rsp_stall=stall, scan=scan, name=f"burst-{stall}-{scan}")
    assert all(run.hits[len(commands) - 1 - i] for i in range(len(pool)))


def test_shift_on_test_and_insert(scan):
    """A TEST_AND_INSERT that triggers a shift answers from the filter before the shift: a key whose
    generation sits in segments l..l+k-1 is still found, though the shift is about to drop its last one."""
    config = CONFIGS["k3l8"]
    k, g = config.k, config.generation
    count = config.segments * g                       # the next insert shifts
    keys = [key_of(i, salt=4) for i in range(count)]
    # Generation j was inserted after shift j + 1; after k + l shifts it starts at segment k + l - 1 - j,
    # so generation k - 1 starts at segment l: the last start Algorithm 1 tries.
    edge = keys[(k - 1) * g:k * g]
    commands = [(Op.INSERT, key) for key in keys] + [(Op.TEST_AND_INSERT, edge[0])]
    commands += [(Op.QUERY, key) for key in edge[1:]]
    run = simulate(config, commands, seed=31, scan=scan, name=f"tai-shift-{scan}")
    assert run.hits[count], "the test-and-insert at the shift did not see the pre-shift filter"
    model = Model(config)
    model.insert_many(keys)
    assert model.query(edge[0])
    model.insert(edge[0])                             # after the shift the rest of that generation is out
    assert sum(model.query(key) for key in edge[1:]) < len(edge) - 1


def test_reset_mid_stream(scan):
    """Reset pulses while commands are in flight: in-flight responses are dropped, the filter restarts
    empty (a key inserted before the reset is absent after it)."""
    config = CONFIGS["k2l3"]
    before = random_commands(config, 3 * config.generation, seed=41, ops=(Op.INSERT, Op.TEST_AND_INSERT))
    key = before[-1][1]
    after = random_commands(config, 2 * config.generation, seed=42)
    commands = before + [RESET, (Op.QUERY, key)] + after + [RESET] + random_commands(config, 50, seed=43)
    run = simulate(config, commands, seed=44, cmd_gap=0.2, rsp_stall=0.3, scan=scan, name=f"reset-{scan}")
    assert not run.hits[len(before) + 1], "a key inserted before the reset was reported after it"
    assert_no_false_negatives(config, commands, run.hits)


@pytest.mark.parametrize("scan,name,distance", [
    pytest.param(scan, name, distance, id=f"{scan}-{name}-{distance}",
                 marks=[pytest.mark.slow] if scan == "fsm" and distance > 1 else [])
    for scan in ("fsm", "parallel") for name in ("k2l3", "wide-B256") for distance in (1, 2, 3, 4, 5)])
def test_forwarding_distances(scan, name, distance):
    """TEST_AND_INSERT streams where each key repeats ``distance`` commands later, issued every clock: the
    parallel core's reads miss up to three earlier writes, which forwarding must supply (with
    segment_blocks = 1 every key shares every block, so forwarding is exercised on each command). The FSM scan
    has no forwarding (one command at a time): it runs distance 1 in ``make test``, 2-5 in ``make test-slow``."""
    config = CONFIGS[name]
    keys = [key_of(i, salt=5 + distance) for i in range(40)]
    commands, repeats = [], []
    for i in range(0, len(keys), distance):
        group = [(Op.TEST_AND_INSERT, key) for key in keys[i:i + distance]]
        commands += group
        repeats += range(len(commands), len(commands) + len(group))
        commands += group
    run = simulate(config, commands, seed=60 + distance, scan=scan, name=f"forward-{name}-{distance}-{scan}")
    for index in repeats:
        assert run.hits[index], f"command {index}: a key test-and-inserted {distance} commands earlier missed"
    if scan == "parallel":
        accepts = [run.accept[i] for i in range(len(commands))]
        assert max(np.diff(accepts)) == 1, "the parallel core did not take a command every clock"
