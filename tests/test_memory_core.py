# amaranth: UnusedElaboratable=no
"""The core with its segments behind a memory port of variable latency (MemoryAPBBF, MemoryScan), in the Amaranth
simulator against the golden model: every answer in order and the counters at the end, with random latency,
writes that land late, refresh stalls and backpressure on both sides; a key repeated at every distance up to the
in-flight depth; reset mid-stream; restarts and overflows of a time-bounded window; and the port's rules
(sim/memory.py checks them)."""

import collections
import random

import pytest

from apbbf.hdl.core import APBBF, MemoryAPBBF
from apbbf.hdl.core.memory_port import MemoryPortSignature, address_width, request_layout
from apbbf.hdl.core.scan_memory import MemoryScan
from apbbf.model import Config, Op
from apbbf.sim.harness import RESET, random_commands, timed_commands
from apbbf.sim.memory import simulate

# P = 6 physical segments of 64-bit blocks in 1024-bit rows: 2 blocks of each segment per row, 8 rows. So keys
# share blocks often, and the merge of the inserts in flight decides most answers.
SMALL = Config(2, 3, segment_blocks=16, row_bits=1024, seed=0x51)
# A time-bounded window with a burst pool: shifts by time, overflows, restarts after gaps.
TIMED = Config(2, 3, segment_blocks=16, row_bits=1024, span=60, time_width=10, extra_segments=2, seed=0x77)
# k = 3, b = 8, wider blocks, one segment's blocks over several rows.
WIDE = Config(3, 4, block_bits=128, block_hashes=8, segment_blocks=32, row_bits=4096, seed=0x99)

# Writes land late (so a read often misses the writes ahead of it), reads answer after 1-6 cycles.
LATE_WRITES = dict(write_delay=(10, 40), latency=(1, 6), req_stall=0.1)
# Writes held back to the last moment the port allows (sim/memory.py): every read misses the writes of all the
# commands in flight ahead of it.
LAZY_WRITES = dict(write_delay=(0, 0), latency=(1, 6), req_stall=0.1, lazy_writes=True)


def distance_commands(config, depth, seed):
    """For every distance d from 1 to depth + 1: an insert of x, d - 1 inserts of other keys, then a query of x and
    two test-and-inserts of it back to back."""
    rng = random.Random(seed)
    commands = []
    for d in range(1, depth + 2):
        x = rng.getrandbits(config.key_width)
        commands.append((Op.INSERT, x))
        commands += [(Op.INSERT, rng.getrandbits(config.key_width)) for _ in range(d - 1)]
        commands += [(Op.QUERY, x), (Op.TEST_AND_INSERT, x), (Op.TEST_AND_INSERT, x)]
    return commands


@pytest.mark.parametrize("depth", [1, 2, 5, 8])
def test_key_at_every_distance(depth):
    """A key repeated at every distance from 1 to the in-flight depth (and one more) is found, with writes held
    back until the scan waits for nothing else: so the insert ``depth - 1`` commands ahead is in flight still, and
    only the table's oldest entry holds its bits (a table one entry short is caught at every depth)."""
    seed = 10 + depth
    print(f"seed {seed}")
    run = simulate(SMALL, distance_commands(SMALL, depth, seed), seed=seed, depth=depth, **LAZY_WRITES)
    assert run.memory.taken["writes"] > 0 and run.memory.writes_held > 0


@pytest.mark.parametrize("config, depth, seed", [(SMALL, 4, 1), (SMALL, 8, 2), (WIDE, 6, 3)],
                         ids=["small-d4", "small-d8", "wide-d6"])
def test_random_against_model(config, depth, seed):
    print(f"seed {seed}")
    commands = random_commands(config, 200 if config is SMALL else 120, seed=seed, duplicates=0.5)
    simulate(config, commands, seed=seed, depth=depth, cmd_gap=0.1, rsp_stall=0.2, **LATE_WRITES)


def test_slow_memory_and_refresh():
    """Reads of 20-60 cycles, the memory taking a request one cycle in two, long refreshes: the in-flight window
    is full most of the time."""
    seed = 7
    print(f"seed {seed}")
    commands = random_commands(SMALL, 120, seed=seed, duplicates=0.5)
    run = simulate(SMALL, commands, seed=seed, depth=8, latency=(20, 60), write_delay=(0, 60), req_stall=0.5,
                   refresh=(200, 40))
    assert run.memory.taken["reads"] >= 120


def test_time_window_against_model():
    """Shifts by time, segments expired and retired while the commands that wrote them are still in flight, the
    pool overflowing under a burst, restarts after idle gaps (every word cleared)."""
    seed = 5
    print(f"seed {seed}")
    commands = timed_commands(TIMED, 300, seed=seed, rate=3.0, gaps=0.01)
    run = simulate(TIMED, commands, seed=seed, depth=6, **LATE_WRITES)
    assert run.counters["shifts"] > 2 and run.counters["expired"] > 0, run.counters


def test_reset_mid_stream():
    seed = 9
    print(f"seed {seed}")
    commands = random_commands(SMALL, 120, seed=seed)
    commands = commands[:50] + [RESET] + commands[50:]
    run = simulate(SMALL, commands, seed=seed, depth=4, **LATE_WRITES)
    assert run.dropped or run.hits


def test_every_command_kind_in_flight():
    """QUERY, INSERT, TEST_AND_INSERT and the reserved op 3 interleaved at depth 8."""
    seed = 12
    print(f"seed {seed}")
    commands = random_commands(SMALL, 150, seed=seed, duplicates=0.6,
                               ops=(Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT, 3))
    simulate(SMALL, commands, seed=seed, depth=8, **LATE_WRITES)


# Requests ordered for one open row (one_row) ---------------------------------------------------------------------

@pytest.mark.parametrize("depth", [pytest.param(1, marks=pytest.mark.slow), 4, pytest.param(8, marks=pytest.mark.slow)])
def test_one_row_key_at_every_distance(depth):
    """With the requests ordered for one open row, a key at every distance is found, writes landing late."""
    seed = 30 + depth
    print(f"seed {seed}")
    simulate(SMALL, distance_commands(SMALL, depth, seed), seed=seed, depth=depth, one_row=True, **LATE_WRITES)


def test_one_row_time_window_against_model():
    """one_row with shifts by time, retired segments cleared in row runs, overflows and restarts."""
    seed = 6
    print(f"seed {seed}")
    commands = timed_commands(TIMED, 300, seed=seed, rate=3.0, gaps=0.01)
    run = simulate(TIMED, commands, seed=seed, depth=6, one_row=True, **LATE_WRITES)
    assert run.counters["shifts"] > 2 and run.counters["expired"] > 0, run.counters


def _turns(config, requests):
    """The request stream's turns between reads and writes, and its changes of row."""
    turns = sum(a[0] != b[0] for a, b in zip(requests, requests[1:]))
    rows = [address // config.row_stride_blocks for _, address, _ in requests]
    return turns, sum(a != b for a, b in zip(rows, rows[1:]))


def test_one_row_orders_requests_by_row():
    """With one_row each test-and-insert turns from reads to writes and back once, in the row it opened, and the
    clearing writes a row's words together: at most 2 turns and 1 change of row per command and per row of
    clearing, against many more as the answers come (the same commands without one_row); and every pass of the
    clearing writes each word of its segment once."""
    c = TIMED
    seed = 8
    print(f"seed {seed}")
    rng = random.Random(seed)
    commands = [(Op.TEST_AND_INSERT, rng.getrandbits(c.key_width), n) for n in range(120)]
    measured = {}
    for one_row in (True, False):
        run = simulate(c, commands, seed=seed, depth=8, one_row=one_row, latency=(4, 8), write_delay=(0, 4),
                       req_stall=0.0, refresh=None)
        requests = run.memory.requests
        cleared_rows = -(-sum(1 for write, _, data in requests if write and data == 0) // c.row_blocks)
        zeros = collections.Counter(address for write, address, data in requests if write and data == 0)
        for segment in range(c.physical_segments):     # every pass of the clearing writes every word once
            counts = {zeros[c.memory_block(segment, index)] for index in range(c.segment_blocks)}
            assert len(counts) == 1, (one_row, segment, sorted(counts))
        assert max(zeros.values()) > 1, "no segment retired and cleared"
        measured[one_row] = _turns(c, requests), len(commands) + cleared_rows
        print(f"one_row={one_row}: {len(requests)} requests, (turns, row changes) {measured[one_row][0]}, "
              f"bound {measured[one_row][1]}")
    (turns, row_changes), bound = measured[True]
    assert turns <= 2 * bound and row_changes <= bound, measured
    (turns, row_changes), bound = measured[False]
    assert turns > bound and row_changes > 1.5 * bound, measured


# Shapes and bad input --------------------------------------------------------------------------------------------

def test_port_shapes():
    c = SMALL
    assert c.memory_blocks == 8 * 16 and address_width(c) == 7
    assert set(request_layout(c).members) == {"write", "addr", "data"}
    signature = MemoryPortSignature(c)
    assert set(signature.members) == {"req", "rsp", "written"}


@pytest.mark.parametrize("make", [lambda c: MemoryAPBBF(c), lambda c: MemoryScan(c), lambda c: MemoryPortSignature(c)],
                         ids=["core", "scan", "port"])
def test_init_wrong_layout(make):
    with pytest.raises(ValueError, match="row layout"):
        make(Config(2, 3))


def test_init_wrong_one_row():
    with pytest.raises(TypeError, match="one_row must be a bool"):
        MemoryAPBBF(SMALL, one_row=1)
    with pytest.raises(TypeError, match="one_row must be a bool"):
        MemoryScan(SMALL, one_row="yes")


@pytest.mark.parametrize("depth, error", [(0, ValueError), (65, ValueError), (2.0, TypeError), (True, TypeError)])
def test_init_wrong_depth(depth, error):
    with pytest.raises(error, match="depth"):
        MemoryAPBBF(SMALL, depth=depth)


def test_on_chip_core_refuses_a_row_layout():
    with pytest.raises(ValueError, match="row_bits"):
        APBBF(SMALL)


def test_restart_forgets_the_inserts_in_flight():
    """An insert, then one that restarts the window after an idle gap, then a test-and-insert of the first key: the
    model misses (the restart forgot it), so the core must not merge the first insert's bits, still in its table of
    inserts in flight, into the cleared memory."""
    c = Config(2, 3, segment_blocks=2, row_bits=1024, span=40, time_width=10, extra_segments=2, seed=3)
    x, z, t = 0x1234, 0x9999, 100
    later = t + 3 * c.span
    commands = [(Op.INSERT, x, t), (Op.INSERT, z, later), (Op.TEST_AND_INSERT, x, later), (Op.QUERY, x, later)]
    simulate(c, commands, seed=1, depth=4, write_delay=(0, 3), latency=(1, 3))


def test_reads_follow_the_row_layout():
    """A query's reads are at the words the specification places its blocks (Config.memory_block of each live
    segment's block, HashSpec.locate): one row for all of them."""
    from apbbf.model import HashSpec
    config = WIDE
    spec = HashSpec(config)
    key = 0x0123456789ABCDEF
    run = simulate(config, [(Op.QUERY, key)], seed=2, depth=2, latency=(1, 3), write_delay=(0, 3))
    live = range(config.k + config.l)              # after reset: positions 0..k+l-1
    expected = [config.memory_block(j, spec.locate(j, key)[0]) for j in live]
    assert run.memory.read_addresses == expected
    assert len({address // config.row_stride_blocks for address in expected}) == 1
