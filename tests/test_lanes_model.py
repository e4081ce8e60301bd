"""The lanes model (model/lanes.py): lanes=1 is the plain filter, no false negative per lane (count) and within
the span (time), the lane independent of the segment hashes, the window a user gets, the parameter checks."""

import random

import numpy as np
import pytest

from apbbf.model import APBBF, Config, Lanes, LaneSpec, Op, lanes_window
from apbbf.model.hashing import HashSpec
from apbbf.model.lanes import _rank, lane_masks
from apbbf.model.timewindow import TimedAPBBF
from apbbf.sim.harness import random_commands, timed_commands

COUNT = Config(2, 3, segment_blocks=4, seed=3)
TIMED = Config(2, 3, segment_blocks=4, span=100, time_width=24, extra_segments=2, seed=4)
WIDE = Config(3, 4, segment_blocks=8, key_width=100, seed=11)


def _arrays(commands):
    ops = [int(c[0]) for c in commands]
    keys = [c[1] for c in commands]
    times = [c[2] for c in commands] if len(commands[0]) == 3 else None
    return ops, keys, times


@pytest.mark.parametrize("config", [COUNT, TIMED, WIDE], ids=["count", "time", "key100"])
def test_one_lane_is_the_plain_filter(config):
    seed = 101
    print("seed", seed)
    commands = (timed_commands(config, 3000, seed=seed, gaps=0.01) if config.timed
                else random_commands(config, 3000, seed=seed))
    ops, keys, times = _arrays(commands)
    lanes = Lanes(config, 1)
    plain = TimedAPBBF(config) if config.timed else APBBF(config)
    got = lanes.run(ops, keys, times)
    want = plain.run(ops, keys, times) if times else plain.run(ops, keys)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert set(LaneSpec(config, 1).lane_many(keys)) == {0}


@pytest.mark.parametrize("lanes", [2, 4, 8])
def test_batch_equals_commands(lanes):
    """run() gives the per-command answers, and each lane answers as its own filter fed its own commands."""
    seed = 200 + lanes
    print("seed", seed)
    commands = random_commands(COUNT, 2000, seed=seed)
    ops, keys, _ = _arrays(commands)
    batch = Lanes(COUNT, lanes)
    hits, _ = batch.run(ops[:700], keys[:700])
    hits2, _ = batch.run(ops[700:], keys[700:])
    one = Lanes(COUNT, lanes)
    answers = [one.command(op, key) for op, key in zip(ops, keys)]
    assert list(np.concatenate([hits, hits2])) == answers
    spec = LaneSpec(COUNT, lanes)
    where = spec.lane_many(keys)
    for lane in range(lanes):
        alone = APBBF(COUNT)
        index = np.flatnonzero(where == lane)
        assert list(alone.run(np.array(ops)[index], [keys[i] for i in index])[0]) == [answers[i] for i in index]
    assert [c["inserts"] for c in batch.counters] == [c["inserts"] for c in one.counters]
    assert sum(c["inserts"] for c in batch.counters) == sum(op != Op.QUERY for op in ops)


@pytest.mark.parametrize("lanes", [2, 4, 8])
def test_no_false_negative_count(lanes):
    """Every key among the last l·g inserts of its own lane (itself included) is present."""
    seed = 300 + lanes
    print("seed", seed)
    config = COUNT
    commands = random_commands(config, 6000, seed=seed, duplicates=0.5)
    ops, keys, _ = _arrays(commands)
    filt = Lanes(config, lanes)
    hits, _ = filt.run(ops, keys)
    where = filt.spec.lane_many(keys)
    inserted = [0] * lanes              # inserts per lane so far
    last = {}                           # key -> lane insert index of its last insert
    checked = 0
    for op, key, lane, hit in zip(ops, keys, where, hits):
        if op != Op.INSERT and key in last and last[key] >= inserted[lane] - config.window:
            assert hit, f"key {key:#x} inserted {inserted[lane] - last[key]} lane inserts ago: a false negative"
            checked += 1
        if op != Op.QUERY:
            last[key] = inserted[lane]
            inserted[lane] += 1
    assert checked > 500


@pytest.mark.parametrize("lanes", [2, 4])
def test_no_false_negative_time(lanes):
    """Every key inserted at t is present for every query up to t + span (no overflow in this stream)."""
    seed = 400 + lanes
    print("seed", seed)
    config = TIMED
    commands = timed_commands(config, 6000, seed=seed, gaps=0.01, start=0, rate=lanes * 0.8)
    ops, keys, times = _arrays(commands)
    assert all(a <= b for a, b in zip(times, times[1:])), "the stream must not wrap"
    filt = Lanes(config, lanes)
    hits, _ = filt.run(ops, keys, times)
    assert sum(c["overflows"] for c in filt.counters) == 0
    last = {}
    checked = 0
    for op, key, now, hit in zip(ops, keys, times, hits):
        if op != Op.INSERT and key in last and now - last[key] <= config.span:
            assert hit, f"key {key:#x} inserted at {last[key]}, asked at {now}: a false negative"
            checked += 1
        if op != Op.QUERY:
            last[key] = now
    assert checked > 500


@pytest.mark.parametrize("lanes", [4, 8])
def test_lane_independent_of_segment_hashes(lanes):
    """On random keys the lane is uniform and independent of every segment's block index: a chi-squared test
    of the (lane, block index) table of each physical segment, with a fixed seed, against a bound of 6 standard
    deviations above the degrees of freedom."""
    seed = 500 + lanes
    print("seed", seed)
    config = Config(3, 8, segment_blocks=16, seed=seed)
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 1 << 63, 200_000, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 200_000,
                                                                                               dtype=np.uint64)
    # Structured keys too: a counter, where a lane taken from raw key bits would be badly skewed.
    for sample in (keys, np.arange(200_000, dtype=np.uint64)):
        spec = LaneSpec(config, lanes)
        lane = spec.lane_many(sample)
        counts = np.bincount(lane, minlength=lanes)
        expected = len(sample) / lanes
        chi = ((counts - expected) ** 2 / expected).sum()
        assert chi < (lanes - 1) + 6 * (2 * (lanes - 1)) ** 0.5, counts
        hash_spec = HashSpec(config)
        folded = hash_spec.fold_many(sample)
        for segment in range(config.physical_segments):
            blocks = (hash_spec.segment_hash_many(segment, folded) & np.uint64(config.segment_blocks - 1))
            table = np.zeros((lanes, config.segment_blocks))
            np.add.at(table, (lane, blocks.astype(np.int64)), 1)
            want = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
            chi = ((table - want) ** 2 / want).sum()
            df = (lanes - 1) * (config.segment_blocks - 1)
            assert chi < df + 6 * (2 * df) ** 0.5, (segment, chi, df)


def test_lane_masks_independent_of_segment_masks():
    for seed in range(20):
        config = Config(3, 8, segment_blocks=1 << 4, key_width=32, seed=seed)
        assert config.hash_bits + 4 == 24
        masks = lane_masks(config, 16)
        assert len(masks) == 4
        for segment in HashSpec(config).segment_masks:
            assert _rank(list(segment) + list(masks)) == _rank(segment) + 4


def test_lane_from_the_mixed_key():
    """The lane is the parity of the mixed key under each mask (the definition, per key)."""
    spec = LaneSpec(WIDE, 4)
    rng = random.Random(7)
    for _ in range(200):
        key = rng.getrandbits(100)
        mixed = spec.hash.fold(key)
        want = sum((bin(mixed & mask).count("1") & 1) << r for r, mask in enumerate(spec.masks))
        assert spec.lane(key) == want == spec.lane_many([key])[0]


def test_window():
    assert lanes_window(100, 1) == {"per_lane": 100, "expected": 100, "worst": 100, "guaranteed": 100}
    w = lanes_window(1000, 4, p=1e-6)
    assert w["per_lane"] == w["worst"] == 1000 and w["expected"] == 4000
    assert 3000 < w["guaranteed"] < 4000
    assert lanes_window(1000, 4, p=1e-3)["guaranteed"] > w["guaranteed"]
    assert lanes_window(1000, 8)["guaranteed"] > w["guaranteed"]


def test_window_by_simulation():
    """On random keys, how long a key is kept across 4 lanes agrees with lanes_window's binomial: the key is
    dropped from its lane's window once ``window`` inserts landed there."""
    rng = np.random.default_rng(9)
    window, lanes = 50, 4
    w = lanes_window(window, lanes, p=0.01)
    trials = 20000
    later = rng.integers(0, lanes, (trials, w["guaranteed"] - 1)) == 0     # later inserts in the key's lane
    kept = (later.sum(axis=1) <= window - 1).mean()
    assert kept >= 0.985


def test_worst_case_one_lane():
    """Keys all in one lane: the window is l·g, as one filter's, and a key l·g + slack inserts old is gone."""
    config = COUNT
    filt = Lanes(config, 4)
    rng = random.Random(12)
    keys = []
    while len(keys) < 3 * config.window:
        key = rng.getrandbits(64)
        if filt.lane(key) == 2:
            keys.append(key)
    plain = APBBF(config)
    ops = [Op.TEST_AND_INSERT] * len(keys)
    assert list(filt.run(ops, keys)[0]) == list(plain.run(ops, keys)[0])
    assert filt.counters[2]["inserts"] == len(keys) and filt.counters[0]["inserts"] == 0


@pytest.mark.parametrize("lanes, error", [(3, ValueError), (0, ValueError), (32, ValueError), (2.0, TypeError),
                                          (True, TypeError)])
def test_bad_lanes(lanes, error):
    with pytest.raises(error, match="lanes"):
        Lanes(COUNT, lanes)


def test_too_wide_for_lanes():
    config = Config(3, 8, segment_blocks=1 << 14, key_width=32)
    assert config.hash_bits > 28
    with pytest.raises(ValueError, match="lanes"):
        Lanes(config, 16)


def test_times_required():
    with pytest.raises(ValueError, match="times"):
        Lanes(TIMED, 2).run([0], [1])
    with pytest.raises(ValueError, match="times"):
        Lanes(COUNT, 2).run([0], [1], [0])
