"""The de-duplication pipeline (model/dedup/) and ``apbbf dedup`` (apbbf/dedup.py).

- :class:`TimedTestAndInsert` (the bulk filter) against :class:`TimedAPBBF` (the specification): answers and
  counters, with bursts that overflow, gaps that restart, times that wrap, calls cut anywhere, small work blocks.
- :class:`ExactWindow`, :func:`to_ticks`, the pipeline's per-frame and batch paths, actions and counters.
- ``apbbf dedup`` on small captures written by scapy and dpkt (pcap and pcapng, microsecond and nanosecond, both
  byte orders, FCS, errored frames): the counts against an exact answer computed here frame by frame, and the
  output capture record for record against the frames the per-frame model keeps.
"""

import json
import os
import random
import struct
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import dpkt
import numpy as np
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw
from scapy.utils import PcapNgReader, PcapNgWriter, PcapReader, PcapWriter

import apbbf.model.dedup.bulk as bulk_module
from apbbf import cli
from apbbf.capture import read_capture
from apbbf.model import Config, Op
from apbbf.model.dedup import (Action, BulkExactWindow, Counters, Dedup, ExactWindow, Status, TimedTestAndInsert,
                               oversize, span_ticks, to_ticks)
from apbbf.model.packet import FrameBatch, KeySpec, MessageRows, frame_key, frame_keys, message
from apbbf.model.timewindow import TimedAPBBF

from .dedup_traffic import traffic

L3L4 = KeySpec.l3l4()

# The bulk filter against the specification ------------------------------------------------------------------------

CONFIGS = {
    "k2l3": Config(2, 3, segment_blocks=4, span=100, time_width=12, extra_segments=1),
    "k3l4-w10": Config(3, 4, segment_blocks=2, span=50, time_width=10),
    "apbf-k1": Config(1, 2, block_bits=16, block_hashes=1, segment_blocks=4, span=30, time_width=9, extra_segments=3),
    "k3l15": Config(3, 15, segment_blocks=32, span=1000, extra_segments=4),
    "k4l2-b8": Config(4, 2, block_bits=64, block_hashes=8, segment_blocks=8, span=200, time_width=16),
    "rows-k3l4": Config(3, 4, segment_blocks=32, span=200, extra_segments=2, row_bits=2048),
    "rows-apbf": Config(2, 3, block_bits=16, block_hashes=1, segment_blocks=64, span=60, time_width=12,
                        extra_segments=1, row_bits=512),
    # blocks wider than a machine word, and narrower than a byte: the bits evaluated one by one
    "b128": Config(2, 3, block_bits=128, block_hashes=4, segment_blocks=4, span=100, time_width=12, extra_segments=1),
    "b4": Config(3, 3, block_bits=4, block_hashes=2, segment_blocks=16, span=80, time_width=12),
}


def stream(config, count, seed, *, gaps=0.02, step=4, repeats=0.4, burst=0.0):
    """Keys and plain non-decreasing ticks: small steps, a fraction ``gaps`` of gaps of half a span to three spans
    (some restart the filter), runs of equal times (``burst``: bursts overflow small pools), repeated keys; the
    first time anywhere in the time modulus, so times wrap."""
    rng = random.Random(seed)
    limit = (1 << (config.time_width - 1)) - config.span - 1
    now = rng.randrange(1 << config.time_width)
    keys, times, recent = [], [], []
    for _ in range(count):
        roll = rng.random()
        if roll < gaps:
            now += min(limit, rng.randrange(config.span // 2, 3 * config.span))
        elif roll < 0.5 and rng.random() >= burst:
            now += rng.randrange(step)
        key = rng.choice(recent) if recent and rng.random() < repeats else rng.getrandbits(64)
        recent = (recent + [key])[-50:]
        keys.append(key)
        times.append(now)
    return np.array(keys, dtype=np.uint64), np.array(times, dtype=np.int64)


def _counters(f):
    return f.n, f.shifts, f.overflows, f.expired, f.restarts, f.base


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("gaps, burst", [(0.0, 0.0), (0.02, 0.0), (0.2, 0.0), (0.01, 0.9), (0.0, 0.99)],
                         ids=["steady", "gaps", "many-gaps", "bursts", "one-burst"])
def test_bulk_filter_equals_timed_apbbf(name, gaps, burst):
    config = CONFIGS[name]
    seed = 100 * list(CONFIGS).index(name) + int(gaps * 100) + int(burst * 10)
    keys, times = stream(config, 2500, seed, gaps=gaps, burst=burst)
    model = TimedAPBBF(config)
    expected = model.run(np.full(len(keys), Op.TEST_AND_INSERT), keys, times & ((1 << config.time_width) - 1))[0]
    bulk = TimedTestAndInsert(config)
    cuts = sorted(random.Random(seed).sample(range(1, len(keys)), 4))
    got = np.concatenate([bulk.run(keys[a:b], times[a:b]) for a, b in zip([0] + cuts, cuts + [len(keys)])])
    assert np.array_equal(got, expected), f"seed {seed}: answers differ at {np.flatnonzero(got != expected)[:5]}"
    assert _counters(bulk) == _counters(model), f"seed {seed}: counters differ"
    if gaps >= 0.02:
        assert model.restarts > 0, f"seed {seed}: the stream was meant to restart the filter"


@pytest.mark.parametrize("name", ["k2l3", "k3l15", "k4l2-b8"])
def test_bulk_filter_in_small_blocks(name, monkeypatch):
    """Work blocks of a few commands and a few segment incarnations: the carried state is exact."""
    monkeypatch.setattr(bulk_module, "BULK_COMMANDS", 37)
    monkeypatch.setattr(bulk_module, "BULK_ENTRIES", 1000)
    config = CONFIGS[name]
    seed = 77 + list(CONFIGS).index(name)
    keys, times = stream(config, 2000, seed, gaps=0.01, burst=0.5)
    model = TimedAPBBF(config)
    expected = model.run(np.full(len(keys), Op.TEST_AND_INSERT), keys, times & ((1 << config.time_width) - 1))[0]
    bulk = TimedTestAndInsert(config)
    got = np.concatenate([bulk.run(keys[a:a + 700], times[a:a + 700]) for a in range(0, len(keys), 700)])
    assert np.array_equal(got, expected), f"seed {seed}"
    assert _counters(bulk) == _counters(model), f"seed {seed}"


def test_bulk_filter_one_command_at_a_time():
    config = CONFIGS["k2l3"]
    keys, times = stream(config, 400, 5, gaps=0.05)
    model, bulk = TimedAPBBF(config), TimedTestAndInsert(config)
    mask = (1 << config.time_width) - 1
    for key, t in zip(keys.tolist(), times.tolist()):
        assert bool(bulk.run([key], [t])[0]) == model.test_and_insert(key, t & mask)
    assert _counters(bulk) == _counters(model)


@pytest.mark.parametrize("name", ["k2l3", "k4l2-b8", "apbf-k1", "b128"])
@pytest.mark.parametrize("run", [1, 2, 3])
def test_bulk_filter_at_generation_boundaries(name, run):
    """Runs of one key, back to back at one time, so that the filter shifts by count inside them: a copy whose
    first is the last insert of a generation and whose query shifts the filter, and the other way round; with the
    time moving, too, so that shifts by time fall inside runs."""
    config = CONFIGS[name]
    rng = random.Random(run)
    keys, times, now = [], [], 0
    for index in range(6 * config.generation):
        key = rng.getrandbits(64)
        for _ in range(run if index % 2 else run + 1):
            keys.append(key)
            times.append(now)
        if rng.random() < 0.1:
            now += rng.randrange(1, config.shift_interval + 2)
    keys, times = np.array(keys, dtype=np.uint64), np.array(times, dtype=np.int64)
    model = TimedAPBBF(config)
    expected = model.run(np.full(len(keys), Op.TEST_AND_INSERT), keys, times & ((1 << config.time_width) - 1))[0]
    got = TimedTestAndInsert(config).run(keys, times)
    assert model.shifts > 5
    assert np.array_equal(got, expected), f"answers differ at {np.flatnonzero(got != expected)[:5]}"


def test_bulk_filter_checks():
    bulk = TimedTestAndInsert(CONFIGS["k2l3"])
    with pytest.raises(ValueError, match="non-decreasing"):
        bulk.run([1, 2], [5, 4])
    bulk.run([1], [10])
    with pytest.raises(ValueError, match="non-decreasing"):
        bulk.run([1], [9])                                         # before the previous call's last time
    with pytest.raises(ValueError, match="alias"):
        bulk.run([1], [10 + (1 << 11)])                            # a gap of half the time modulus
    with pytest.raises(ValueError, match="same length"):
        bulk.run([1, 2], [11])
    with pytest.raises(ValueError, match="span"):
        TimedTestAndInsert(Config(2, 3))
    with pytest.raises(ValueError, match="key_width"):
        TimedTestAndInsert(Config(2, 3, span=10, key_width=32))
    with pytest.raises(TypeError, match="config"):
        TimedTestAndInsert("k2l3")
    assert bulk.run([], []).shape == (0,)


# The exact window, ticks ------------------------------------------------------------------------------------------

def test_exact_window():
    exact = ExactWindow(10, retain=25)
    dup, age = exact.run([b"a", b"b", b"a", b"a", b"b", b"a"], [0, 1, 10, 21, 27, 50])
    assert dup.tolist() == [False, False, True, False, False, False]
    assert age.tolist() == [-1, -1, 10, 11, -1, -1]               # b: 26 ticks > retain; a: 29 ticks
    with pytest.raises(ValueError, match="non-decreasing"):
        exact.run([b"a"], [49])
    with pytest.raises(ValueError, match="same length"):
        exact.run([b"a"], [60, 61])
    with pytest.raises(ValueError, match="retain"):
        ExactWindow(10, retain=5)


def test_exact_window_in_calls_equals_one_call():
    """Forgetting old keys between calls loses nothing within ``retain``."""
    rng = random.Random(4)
    keys = [bytes([rng.randrange(300) % 256, rng.randrange(40)]) for _ in range(30000)]
    ticks = np.cumsum([rng.randrange(3) for _ in keys])
    whole = ExactWindow(50, retain=80).run(keys, ticks)
    parts = ExactWindow(50, retain=80)
    pieces = [parts.run(keys[a:a + 997], ticks[a:a + 997]) for a in range(0, len(keys), 997)]
    assert np.array_equal(np.concatenate([p[0] for p in pieces]), whole[0])
    assert np.array_equal(np.concatenate([p[1] for p in pieces]), whole[1])
    assert len(parts) < 10000                                     # old keys were forgotten


@pytest.mark.parametrize("coarse", [False, True])
def test_bulk_exact_window_equals_the_dictionary(coarse):
    """BulkExactWindow (arrays: messages grouped by a key, compared whole) answers exactly as ExactWindow (a
    dictionary of bytes), in one call or in calls of a few messages; with ``coarse``, the grouping key is one
    byte of the message, so most groups hold different messages (the collision path)."""
    seed = 11
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    n = 6000
    counts = rng.integers(1, 4, n)
    rows = np.zeros((int(counts.sum()), 64), dtype=np.uint8)      # mostly zeros: many equal messages
    first = np.cumsum(counts) - counts
    rows[first, 0] = rng.integers(0, 40, n)
    rows[first + counts - 1, 1] = rng.integers(0, 3, n)
    messages = MessageRows(rows, first, counts)
    texts = [messages.message(i) for i in range(n)]
    keys = np.array([t[0] if coarse else hash(t) & 0xFFFFFFFFFFFF for t in texts], dtype=np.uint64)
    ticks = np.cumsum(rng.integers(0, 3, n))
    want = ExactWindow(50, retain=80).run(texts, ticks)
    whole = BulkExactWindow(50, retain=80).run(keys, messages, ticks)
    assert np.array_equal(whole[0], want[0]) and np.array_equal(whole[1], want[1])
    assert want[0].sum() > 500 and (want[1] > 50).sum() > 100
    parts = BulkExactWindow(50, retain=80)
    pieces = [parts.run(keys[a:a + 7], messages[a:a + 7], ticks[a:a + 7]) for a in range(0, n, 7)]
    assert np.array_equal(np.concatenate([p[1] for p in pieces]), want[1])
    assert len(parts) < 1000                                      # old messages were forgotten
    with pytest.raises(ValueError, match="non-decreasing"):
        parts.run(keys[:1], messages[:1], [0])
    with pytest.raises(ValueError, match="same length"):
        parts.run(keys[:2], messages[:1], ticks[-1:])


def test_ticks():
    ticks, reordered = to_ticks([5_999, 6_000, 5_000, 12_345, 12_000], 1000)
    assert ticks.tolist() == [5, 6, 6, 12, 12] and reordered == 2
    assert span_ticks(1_000_000, 1000) == 1000 and span_ticks(1_000_001, 1000) == 1001
    with pytest.raises(ValueError, match="tick"):
        to_ticks([1], 0)
    with pytest.raises(TypeError, match="times"):
        to_ticks([1.5], 1)
    with pytest.raises(ValueError, match="window"):
        span_ticks(0, 1)


# The pipeline -----------------------------------------------------------------------------------------------------

def _eth(*layers, vlan=None):
    packet = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if vlan is not None:
        packet = packet / Dot1Q(vlan=vlan)
    for layer in layers:
        packet = packet / layer
    return bytes(packet)


def test_pipeline_counters_and_actions():
    """Copies in masked fields are duplicates; errored and unchecked frames pass and are not inserted; a copy
    beyond the window and its slack is new."""
    config = Config(3, 4, segment_blocks=64, span=1000, extra_segments=2)
    a = _eth(IP(dst="10.0.0.1", ttl=9), UDP(), Raw(b"a" * 20))
    a_routed = _eth(IP(dst="10.0.0.1", ttl=8), UDP(), Raw(b"a" * 20), vlan=4)
    b = _eth(IP(dst="10.0.0.2"), UDP(), Raw(b"b" * 20))
    c = _eth(IP(dst="10.0.0.3"), UDP(), Raw(b"c" * 20))
    d = _eth(IP(dst="10.0.0.4"), UDP(), Raw(b"d" * 20))
    frames = [a, a_routed, b, c, c, c, d, d, a]
    times = [0, 10, 20, 30, 40, 50, 60, 70, 3000]
    errored = [False, False, False, True, False, False, False, False, False]
    unchecked = [False, False, False, False, False, False, True, False, False]
    duplicates = [False, True, False, False, False, True, False, False, False]
    for action in Action:
        for engine in ("model", "bulk"):
            frame_path = Dedup(config, L3L4, action, engine=engine)
            outputs = [frame_path.frame(f, t, errored=e, unchecked=u)
                       for f, t, e, u in zip(frames, times, errored, unchecked)]
            batch_path = Dedup(config, L3L4, action.value, engine=engine)
            result = batch_path.run(FrameBatch.from_frames(frames), times, errored=np.array(errored),
                                    unchecked=np.array(unchecked))
            assert [o[0] for o in outputs] == result.duplicate.tolist() == duplicates, (action, engine)
            assert [o[1] for o in outputs] == result.forward.tolist()
            assert [o[2] for o in outputs] == result.mark.tolist()
            dropped = 2 if action == Action.DROP else 0
            assert frame_path.counters == batch_path.counters == Counters(9, 2, dropped, 1, 1)
            assert result.forward.tolist() == ([not x for x in duplicates] if action == Action.DROP else [True] * 9)
            assert result.mark.tolist() == (duplicates if action == Action.MARK else [False] * 9)
            assert result.status.tolist() == [Status.ERRORED if e else Status.UNCHECKED if u else Status.CHECKED
                                              for e, u in zip(errored, unchecked)]


@pytest.mark.parametrize("action", ["drop", "mark"])
def test_frame_path_equals_batch_path(action):
    """Generated traffic: the per-frame path (reference key, TimedAPBBF per command) and the batch paths (numpy
    keys; TimedAPBBF.run or the bulk filter, in calls cut anywhere) agree frame by frame, and find every exact
    duplicate."""
    seed = 21
    records = list(traffic(1500, seed, rate=2e5, duplicates=0.3, window=300_000))
    frames = [f for _, f, _ in records]
    ticks, _ = to_ticks([t for t, _, _ in records], 1000)
    config = Config(3, 5, segment_blocks=64, span=300, extra_segments=3)
    rng = random.Random(seed)
    errored = np.array([rng.random() < 0.03 for _ in frames])
    one = Dedup(config, L3L4, action)
    per_frame = [one.frame(f, int(t), errored=bool(e)) for f, t, e in zip(frames, ticks, errored)]
    batch = FrameBatch.from_frames(frames)
    for engine in ("model", "bulk"):
        pipeline = Dedup(config, L3L4, action, engine=engine)
        parts = [pipeline.run(batch[a:a + 400], ticks[a:a + 400], errored=errored[a:a + 400])
                 for a in range(0, len(frames), 400)]
        assert [o[0] for o in per_frame] == np.concatenate([p.duplicate for p in parts]).tolist(), \
            f"seed {seed}, {engine}"
        assert [o[1] for o in per_frame] == np.concatenate([p.forward for p in parts]).tolist()
        assert pipeline.counters == one.counters
    exact = ExactWindow(config.span)
    checked = ~errored
    dup, _ = exact.run([message(f, L3L4) for f, e in zip(frames, checked) if e], ticks[checked])
    found = np.array([o[0] for o in per_frame])[checked]
    assert dup.sum() > 100, f"seed {seed}: the traffic should have duplicates"
    assert not (dup & ~found).any(), f"seed {seed}: a duplicate within the window was missed"


def test_oversize_counts_beats_as_the_gateware_does():
    """limit = ceil((max_frame + 4 fcs) / lanes) beats; a frame of more than limit + 1 beats is released."""
    # 64 bits, max_frame 1000: limit 125 beats, released from 127 beats: more than 1008 bytes
    assert oversize([1000, 1001, 1008, 1009, 9000], 1000, 64).tolist() == [False, False, False, True, True]
    # with the FCS on the stream: limit ceil(1004 / 8) = 126, released from 128 beats of n + 4 bytes: n > 1012
    assert oversize([1012, 1013], 1000, 64, True).tolist() == [False, True]
    # 512 bits, max_frame 9600: limit 150, released above 151 * 64 = 9664 bytes
    assert oversize([9600, 9664, 9665, 0], 9600, 512).tolist() == [False, False, True, False]
    for args, error in (((1000, 63), ValueError), ((70000,), ValueError), ((1000, 32), ValueError),
                        ((1000, 64, 1), TypeError)):
        with pytest.raises(error):
            oversize([1], *args)


def test_max_frame_in_the_pipeline():
    """With drop, an oversize frame passes unchecked (errored or not) and is not inserted, so its copy is no
    duplicate; with mark the limit does not apply. Frame path and batch path agree."""
    config = Config(3, 4, segment_blocks=64, span=1000, extra_segments=2)
    small = _eth(IP(dst="10.0.0.1"), UDP(), Raw(b"a" * 20))
    big = _eth(IP(dst="10.0.0.2"), UDP(), Raw(b"b" * 1200))
    frames = [small, big, big, small, big]
    errored = [False, False, False, False, True]
    for action, duplicates, status in (
            ("drop", [False, False, False, True, False], [0, 2, 2, 0, 2]),
            ("mark", [False, False, True, True, False], [0, 0, 0, 0, 1])):
        for engine in ("model", "bulk"):
            one = Dedup(config, L3L4, action, engine=engine, max_frame=1000, data_width=64)
            outputs = [one.frame(f, t, errored=e) for t, (f, e) in enumerate(zip(frames, errored))]
            many = Dedup(config, L3L4, action, engine=engine, max_frame=1000, data_width=64)
            result = many.run(FrameBatch.from_frames(frames), list(range(5)), errored=np.array(errored))
            assert [o[0] for o in outputs] == result.duplicate.tolist() == duplicates, (action, engine)
            assert result.status.tolist() == status
            assert one.counters == many.counters
            assert many.counters.unchecked == status.count(2) and many.counters.errored == status.count(1)
    with pytest.raises(ValueError, match="max_frame"):
        Dedup(config, L3L4, max_frame=10)
    with pytest.raises(ValueError, match="data_width"):
        Dedup(config, L3L4, max_frame=1000, data_width=48)


def test_max_frame_equals_the_gateware_at_the_edge():
    """The gateware (PacketDedup in Amaranth's simulator, 64 bits, max_frame 1000, with and without FCS) flags
    exactly the frames :func:`oversize` names unchecked, at the byte where the rule changes."""
    from apbbf.hdl.packet.dedup import PacketDedup
    from apbbf.sim.dedup import simulate_dedup
    config = Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7)
    for fcs in (False, True):
        edge = 1012 if fcs else 1008
        lengths = [edge - 8, edge - 1, edge, edge + 1, edge + 8, 60]
        frames = [_eth(IP(dst=f"10.0.0.{i}"), UDP(), Raw(bytes(n - 42))) + (b"\xaa" * 4 if fcs else b"")
                  for i, n in enumerate(lengths)]
        assert [len(f) - 4 * fcs for f in frames] == lengths
        run = simulate_dedup(lambda: PacketDedup(config, L3L4, data_width=64, action="drop", fcs=fcs,
                                                 max_frame=1000), [(f, i, False) for i, f in enumerate(frames)],
                             name=f"dedup-max-frame-{int(fcs)}")
        assert [flags[1] for _, flags in run.out] == oversize(lengths, 1000, 64, fcs).astype(int).tolist() \
            == [0, 0, 0, 1, 1, 0], f"fcs {fcs}"


def test_pipeline_checks():
    config = Config(2, 3, span=100)
    with pytest.raises(ValueError, match="action"):
        Dedup(config, L3L4, "keep")
    with pytest.raises(ValueError, match="engine"):
        Dedup(config, L3L4, engine="fast")
    with pytest.raises(TypeError, match="spec"):
        Dedup(config, "l3l4")
    with pytest.raises(ValueError, match="key_width"):
        Dedup(Config(2, 3, span=100, key_width=48), L3L4)
    with pytest.raises(ValueError, match="span"):
        Dedup(Config(2, 3), L3L4)
    pipeline = Dedup(config, L3L4)
    batch = FrameBatch.from_frames([b"abc", b"def"])
    with pytest.raises(ValueError, match="times"):
        pipeline.run(batch, [1])
    with pytest.raises(ValueError, match="errored"):
        pipeline.run(batch, [1, 2], errored=[1, 0])
    with pytest.raises(ValueError, match="unchecked"):
        pipeline.run(batch, [1, 2], unchecked=[True])
    assert pipeline.run(batch, [1, 2], errored=[True, False]).status.tolist() == [Status.ERRORED, Status.CHECKED]
    with pytest.raises(TypeError, match="time"):
        pipeline.frame(b"abc", 1.0)
    with pytest.raises(TypeError, match="batch"):
        pipeline.run([b"abc"], [1])


# apbbf dedup ------------------------------------------------------------------------------------------------------

SEED = 8
WINDOW_NS = 200_000                       # 200 us; the traffic spans about 15 windows


@pytest.fixture(scope="module")
def records():
    """(time_ns, frame, copy kind) of a small generated capture, with a few frames marked errored."""
    items = list(traffic(1500, SEED, rate=5e5, duplicates=0.25, window=WINDOW_NS))
    times = [t for t, _, _ in items]
    assert times == sorted(times)
    rng = random.Random(SEED)
    return [(t, f, kind, rng.random() < 0.02) for t, f, kind in items]


_EXPECTED = {}


def _expected(records, config, action, spec=L3L4, errored=True):
    """The per-frame model (reference keys, TimedAPBBF command by command) and the exact answer, computed here
    (once per configuration, action, key and errored flags)."""
    key = (config, action, spec, errored, len(records))
    if key not in _EXPECTED:
        _EXPECTED[key] = _compute_expected(records, config, action, spec, errored)
    outputs, counters, exact = _EXPECTED[key]
    return outputs, Counters(**counters.as_dict()), exact


def _compute_expected(records, config, action, spec, errored):
    pipeline = Dedup(config, spec, action)
    ticks, _ = to_ticks([t for t, *_ in records], 1000)
    outputs = [pipeline.frame(f, int(t), errored=bad and errored) for (_, f, _, bad), t in zip(records, ticks)]
    last, exact = {}, 0
    for (_, f, _, bad), t in zip(records, ticks.tolist()):
        if bad and errored:
            continue
        text = message(f, spec)
        exact += text in last and t - last[text] <= config.span
        last[text] = t
    return outputs, pipeline.counters, exact


def _config(report):
    f = report["filter"]
    return Config(f["k"], f["l"], block_bits=f["block_bits"], block_hashes=f["block_hashes"],
                  segment_blocks=f["segment_blocks"], span=f["span"], time_width=f["time_width"],
                  extra_segments=f["extra_segments"], seed=f["seed"])


def _run(capsys, *args):
    """``apbbf dedup ARGS --json --quiet`` (with the hash seed fixed, unless given): (exit status, report)."""
    args = list(map(str, args))
    if "--seed" not in args and "--config" not in args:
        args += ["--seed", str(SEED)]
    status = cli.main(["dedup", *args, "--json", "--quiet"])
    out = capsys.readouterr().out
    return status, json.loads(out)


def _scapy_packets(records, fcs=False):
    packets = []
    for t, frame, *_ in records:
        packet = Ether(frame + (b"\x00\x11\x22\x33" if fcs else b""))
        packet.time = Decimal(t) / Decimal(10 ** 9)
        packets.append(packet)
    return packets


def write_scapy(path, records, *, fmt, nano):
    if fmt == "pcap":
        with PcapWriter(str(path), nano=nano, linktype=1, sync=False) as writer:
            writer.write(_scapy_packets(records))
    else:
        assert not nano                                            # scapy's pcapng writer is microsecond
        with PcapNgWriter(str(path)) as writer:
            writer.write(_scapy_packets(records))


def write_dpkt_pcapng(path, records, *, little=True, fcs=False, flags=True):
    """A nanosecond pcapng (if_tsresol 9) written by dpkt: errored frames carry epb_flags with the CRC-error bit;
    with ``fcs``, if_fcslen 4 and a 4-byte FCS (different in every frame) after each frame."""
    P = dpkt.pcapng
    Option = P.PcapngOptionLE if little else P.PcapngOption
    options = [Option(code=P.PCAPNG_OPT_IF_TSRESOL, data=b"\x09")]
    if fcs:
        options.append(Option(code=P.PCAPNG_OPT_IF_FCSLEN, data=b"\x04"))
    options.append(Option(code=P.PCAPNG_OPT_ENDOFOPT))
    idb = (P.InterfaceDescriptionBlockLE if little else P.InterfaceDescriptionBlock)(snaplen=65535, opts=options)
    shb = P.SectionHeaderBlockLE() if little else P.SectionHeaderBlock()
    EPB = P.EnhancedPacketBlockLE if little else P.EnhancedPacketBlock
    with open(path, "wb") as f:
        # dpkt's Writer takes blocks of the machine's byte order only; the blocks serialise themselves
        f.write(bytes(shb) + bytes(idb))
        for i, (t, frame, _, bad) in enumerate(records):
            data = frame + (struct.pack(">I", i * 2654435761 & 0xFFFFFFFF) if fcs else b"")
            opts = []
            if bad and flags:
                opts = [Option(code=2, data=struct.pack("<I" if little else ">I", 1 << 24)),
                        Option(code=P.PCAPNG_OPT_ENDOFOPT)]
            f.write(bytes(EPB(pkt_data=data, ts_high=t >> 32, ts_low=t & 0xFFFFFFFF, opts=opts)))


def _read_back(path):
    """(time in ns, bytes, comments) of every packet, read by scapy (a reader independent of apbbf's)."""
    with open(path, "rb") as f:
        ng = f.read(4) == b"\x0a\x0d\x0d\x0a"
    reader = PcapNgReader(str(path)) if ng else PcapReader(str(path))
    with reader:
        return [(int(Decimal(p.time) * 10 ** 9), bytes(p), list(getattr(p, "comments", None) or []))
                for p in reader]


def _records_of(path):
    """The raw records of a capture, as apbbf's reader indexes them: [(start, stop)] per packet, and the
    header blocks."""
    capture = read_capture(path)
    blocks = capture.blocks
    data = capture.data
    packets = {int(p): data[a:b].tobytes() for a, b, p in blocks.tolist() if p >= 0}
    headers = [data[a:b].tobytes() for a, b, p in blocks.tolist() if p < 0]
    return [packets[i] for i in range(len(packets))], headers


CASES = {
    "pcap-us": dict(writer="scapy", fmt="pcap", nano=False, engine="model"),
    "pcap-ns": dict(writer="scapy", fmt="pcap", nano=True),
    "pcapng-us": dict(writer="scapy", fmt="pcapng", nano=False),
    "pcapng-ns": dict(writer="dpkt", little=True),
    "pcapng-ns-big-endian": dict(writer="dpkt", little=False),
}


def _write(case, path, records):
    spec = CASES[case]
    if spec["writer"] == "scapy":
        # microsecond captures hold the times rounded down to the microsecond: the same ticks of 1 us
        write_scapy(path, records if spec["nano"] else [(t // 1000 * 1000, *rest) for t, *rest in records],
                    fmt=spec["fmt"], nano=spec["nano"])
        return False                                               # no errored flags in these files
    write_dpkt_pcapng(path, records, little=spec["little"])
    return True


#: ``make test`` reads a pcap in microseconds (scapy's) and a big-endian pcapng in nanoseconds (dpkt's); the other
#: writers and formats run in ``make test-slow``.
CLI_QUICK = {"pcap-us", "pcapng-ns-big-endian"}


@pytest.mark.parametrize("case", [case if case in CLI_QUICK else pytest.param(case, marks=pytest.mark.slow)
                                  for case in CASES])
def test_cli_drop(case, records, tmp_path, capsys):
    """The counts against the exact answer; the output has exactly the kept frames' records, timestamps and
    precision (headers byte for byte)."""
    source, out = tmp_path / f"in.{CASES[case].get('fmt', 'pcapng')}", tmp_path / "out"
    flagged = _write(case, source, records)
    engine = CASES[case].get("engine", "bulk")
    status, report = _run(capsys, source, "--window", "200us", "-o", out, "--engine", engine)
    assert status == 0, f"seed {SEED}: {report['comparison']}"
    assert report["filter"]["engine"] == engine
    config = _config(report)
    outputs, counters, exact = _expected(records, config, "drop", errored=flagged)
    assert report["counters"] == counters.as_dict(), f"seed {SEED}"
    assert report["counters"]["errored"] == (sum(r[3] for r in records) if flagged else 0)
    assert report["exact"]["duplicates"] == exact > 200, f"seed {SEED}"
    cmp = report["comparison"]
    assert cmp["duplicates_missed"] == 0 and cmp["duplicates_found"] == exact
    assert cmp["false_positives"] == counters.duplicates - exact
    assert report["capture"]["frames"] == len(records)
    nano = case.endswith("ns") or "ns-" in case
    assert report["capture"]["resolution"] == ("1 ns" if nano else "1 us")
    assert read_capture(source).times.tolist() == [t if nano else t // 1000 * 1000 for t, *_ in records]
    # the output: the input's own records for the kept frames, in order, and its headers
    kept = [i for i, o in enumerate(outputs) if o[1]]
    assert report["output"]["frames"] == len(kept) == len(records) - counters.dropped
    in_records, in_headers = _records_of(source)
    out_records, out_headers = _records_of(out)
    assert out_headers == in_headers
    assert out_records == [in_records[i] for i in kept]
    # and an independent reader sees the same frames and exact timestamps
    back, original = _read_back(out), _read_back(source)
    assert [(t, b) for t, b, _ in back] == [(original[i][0], original[i][1]) for i in kept]
    if "ns" in case:
        assert [t for t, *_ in back] == [records[i][0] for i in kept]


@pytest.mark.slow
def test_cli_mark_and_count(records, tmp_path, capsys):
    """mark: every frame out, the duplicates with a comment (pcapng, both byte orders); count: the input as is."""
    for little in (True, False):
        source, out = tmp_path / f"in{little}.pcapng", tmp_path / f"marked{little}.pcapng"
        write_dpkt_pcapng(source, records, little=little)
        status, report = _run(capsys, source, "--window", "200us", "--action", "mark", "-o", out)
        assert status == 0
        outputs, counters, _ = _expected(records, _config(report), "mark")
        assert report["counters"] == counters.as_dict() and counters.dropped == 0
        back = _read_back(out)
        assert [b for _, b, _ in back] == [f for _, f, *_ in records]
        marked = [bool(c) for _, _, c in back]
        assert marked == [o[2] for o in outputs] and sum(marked) == counters.duplicates > 0
        assert all(c == [b"apbbf dedup: duplicate"] for _, _, c in back if c)
        for epb_in, epb_out, m in zip(_records_of(source)[0], _records_of(out)[0], marked):
            assert (epb_in == epb_out) != m                        # unmarked records are copied as they are
        errors = [bool(dpkt.pcapng.EnhancedPacketBlockLE(r) if little else dpkt.pcapng.EnhancedPacketBlock(r))
                  for r in _records_of(out)[0]]                    # dpkt parses every block
        assert all(errors)
    status, report = _run(capsys, source, "--window", "200us", "--action", "count", "-o", tmp_path / "all")
    assert status == 0 and report["counters"]["dropped"] == 0 and report["counters"]["duplicates"] > 0
    assert (tmp_path / "all").read_bytes() == source.read_bytes()


@pytest.mark.slow
def test_cli_fcs(records, tmp_path, capsys):
    """A 4-byte FCS declared by the capture (pcapng if_fcslen, pcap link-type FCS bits) is not keyed: under the
    frame key, copies whose FCS bytes differ are still duplicates; --fcs 0 keys it, and finds fewer."""
    with_fcs = tmp_path / "fcs.pcapng"
    write_dpkt_pcapng(with_fcs, records, fcs=True, flags=False)
    _, report = _run(capsys, with_fcs, "--window", "200us", "--key", "frame", "--seed", "1")
    _, counters, exact = _expected(records, _config(report), "drop", spec=KeySpec.frame(), errored=False)
    assert report["counters"] == counters.as_dict() and report["exact"]["duplicates"] == exact
    assert report["capture"]["fcs_removed"] == len(records)
    pcap = tmp_path / "fcs.pcap"
    with open(pcap, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535, linktype=1 | 0x04000000 | (2 << 28), nano=True)
        for i, (t, frame, *_) in enumerate(records):
            writer.writepkt_time(frame + struct.pack(">I", i), Decimal(t) / Decimal(10 ** 9))
    _, report = _run(capsys, pcap, "--window", "200us", "--key", "frame", "--seed", "1")
    assert report["counters"] == counters.as_dict()
    _, unstripped = _run(capsys, pcap, "--window", "200us", "--key", "frame", "--seed", "1", "--fcs", "0")
    assert unstripped["exact"]["duplicates"] < exact


def test_cli_capture_quirks(tmp_path, capsys):
    """Snapped frames, timestamps out of order; errors for marks in pcap, other link types, bad keys, files."""
    frames = [_eth(IP(dst="10.0.0.9"), UDP(), Raw(bytes(range(200)))) for _ in range(3)]
    path = tmp_path / "quirks.pcap"
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 100, 1))
        for sec, usec, frame in ((10, 5, frames[0]), (10, 3, frames[1]), (10, 9, frames[2])):
            f.write(struct.pack("<IIII", sec, usec, 100, len(frame)) + frame[:100])
    status, report = _run(capsys, path)
    assert status == 0
    assert report["capture"]["truncated"] == 3 and report["capture"]["reordered_timestamps"] == 1
    assert report["counters"]["duplicates"] == report["exact"]["duplicates"] == 2
    for args, words in (([path, "--action", "mark", "-o", tmp_path / "x"], "no room for a mark"),
                        ([path, "--key", "l3:0+"], "base:offset"),
                        ([tmp_path / "missing.pcap"], "No such file"),
                        ([path, "--window", "0ms"], "positive")):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["dedup", *map(str, args), "--quiet"])
        assert exit_info.value.code == 2
        assert words in capsys.readouterr().err
    radiotap = tmp_path / "radiotap.pcap"
    radiotap.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 100, 127))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["dedup", str(radiotap), "--quiet", "-o", str(tmp_path / "no.pcap")])
    assert exit_info.value.code == 2 and not (tmp_path / "no.pcap").exists()
    assert "link type 127 (IEEE802_11_RADIOTAP)" in capsys.readouterr().err


def test_cli_text_output_and_help(records, tmp_path, capsys):
    path = tmp_path / "t.pcap"
    write_scapy(path, records, fmt="pcap", nano=True)
    assert cli.main(["dedup", str(path), "--window", "200us", "--seed", str(SEED), "--quiet"]) == 0
    text = capsys.readouterr().out
    for words in ("config   Config(k=", "missed 0", "exact    ", "seconds  read"):
        assert words in text
    with pytest.raises(SystemExit):
        cli.main(["dedup", "--help"])
    text = capsys.readouterr().out
    assert "BASE:OFFSET+LENGTH[/MASK]" in text and "CLASS=RANGES" in text and "l3l4" in text


def test_cli_console_script(records, tmp_path):
    """As a user runs it: the installed console script, in a subprocess."""
    path = tmp_path / "t.pcapng"
    write_dpkt_pcapng(path, records)
    script = Path(sys.executable).parent / "apbbf"
    result = subprocess.run([str(script), "dedup", str(path), "--window", "200us", "--seed", str(SEED), "--json", "-o",
                             str(tmp_path / "out.pcapng")], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONWARNINGS": "error"})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["comparison"]["duplicates_missed"] == 0
    assert report["output"]["frames"] == len(_read_back(tmp_path / "out.pcapng"))


def test_keys_of_read_capture_equal_reference(records, tmp_path):
    """Frames read back from a capture (the file's bytes, in place) key as the frames themselves."""
    path = tmp_path / "t.pcapng"
    write_dpkt_pcapng(path, records[:300], fcs=True)
    capture = read_capture(path)
    keys = frame_keys(FrameBatch(capture.data, capture.offsets, capture.frame_lengths), L3L4)
    assert keys.tolist() == [frame_key(f, L3L4) for _, f, *_ in records[:300]]
    assert capture.times.tolist() == [t for t, *_ in records[:300]]


def test_read_pcapng_interfaces_and_resolutions(tmp_path):
    """Per-interface if_tsresol (microseconds, nanoseconds, 2^-20 s) and if_tsoffset, in two sections."""
    P = dpkt.pcapng
    O = P.PcapngOptionLE

    def idb(*options):
        return bytes(P.InterfaceDescriptionBlockLE(snaplen=65535, opts=[*options, O(code=P.PCAPNG_OPT_ENDOFOPT)]))

    def epb(iface, units, data):
        return bytes(P.EnhancedPacketBlockLE(iface_id=iface, ts_high=units >> 32, ts_low=units & 0xFFFFFFFF,
                                             pkt_data=data))

    frames = [bytes([i]) * 60 for i in range(5)]
    path = tmp_path / "multi.pcapng"
    path.write_bytes(
        bytes(P.SectionHeaderBlockLE()) + idb() + idb(O(code=P.PCAPNG_OPT_IF_TSRESOL, data=b"\x09"))
        + epb(0, 1_700_000_000_000_001, frames[0]) + epb(1, 1_700_000_000_000_001_234, frames[1])
        + bytes(P.PacketBlockLE(iface_id=1, drops_count=7, ts_high=0, ts_low=5, pkt_data=frames[3]))   # obsolete
        + bytes(P.SectionHeaderBlockLE())
        + idb(O(code=P.PCAPNG_OPT_IF_TSRESOL, data=bytes([0x80 | 20])),
              O(code=P.PCAPNG_OPT_IF_TSOFFSET, data=struct.pack("<q", 100)))
        + epb(0, (5 << 20) + (1 << 19), frames[2]))
    capture = read_capture(path)
    assert capture.times.tolist() == [1_700_000_000_000_001_000, 1_700_000_000_000_001_234, 5, 105_500_000_000]
    assert capture.resolution == "1 us (interfaces differ)"
    assert [capture.data[o:o + n].tobytes() for o, n in zip(capture.offsets, capture.caplens)] == \
        frames[:2] + [frames[3], frames[2]]


def test_empty_captures(tmp_path, capsys):
    for name, header in (("e.pcap", struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)),
                         ("e.pcapng", bytes(dpkt.pcapng.SectionHeaderBlockLE())
                          + bytes(dpkt.pcapng.InterfaceDescriptionBlockLE(snaplen=65535)))):
        (tmp_path / name).write_bytes(header)
        status, report = _run(capsys, tmp_path / name, "-o", tmp_path / ("out" + name))
        assert status == 0 and report["counters"]["frames"] == 0
        assert (tmp_path / ("out" + name)).read_bytes() == header


@pytest.mark.slow                                   # about 2 minutes; make test has the edge case alone (above)
def test_apbbf_dedup_and_the_design_it_prints_agree(tmp_path, capsys):
    """The README's two commands: ``apbbf dedup`` on a capture with frames above ``max_frame`` prints a Config
    (seed included) and an ``apbbf export --dedup`` command; the PacketDedup that command builds, simulated in
    Amaranth on the same frames with the same ticks, forwards exactly the frames apbbf dedup wrote, flags the
    oversize ones unchecked, and counts as it does."""
    import argparse

    from apbbf.export import add_parser as export_parser
    from apbbf.hdl.packet.dedup import PacketDedup
    from apbbf.sim.dedup import simulate_dedup

    seed = 23
    print(f"seed {seed}")
    items = list(traffic(160, seed, rate=4e5, duplicates=0.3, window=100_000, start=5_000_000, jumbo=0.04))
    assert sum(len(f) > 1518 for _, f, _ in items) >= 3, f"seed {seed}: the capture should have jumbo frames"
    path = tmp_path / "in.pcap"
    write_scapy(path, [(t, f) for t, f, _ in items], fmt="pcap", nano=True)
    assert cli.main(["dedup", str(path), "--window", "100us", "--max-frame", "1518", "--data-width", "64",
                     "--seed", "0xc0ffee", "-q", "-o", str(tmp_path / "out.pcap")]) == 0
    text = capsys.readouterr().out
    command = next(line for line in text.splitlines() if line.startswith("export"))[9:]
    parser = argparse.ArgumentParser()
    export_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(command.split()[1:])
    config = Config(args.k, args.l, block_bits=args.block_bits, block_hashes=args.block_hashes,
                    segment_blocks=args.segment_blocks, key_width=args.key_width, seed=args.seed, span=args.span,
                    time_width=args.time_width, extra_segments=args.extra_segments)
    assert config.seed == 0xC0FFEE and args.max_frame == 1518 and args.data_width == 64
    ticks, _ = to_ticks([t for t, _, _ in items], 1000)
    run = simulate_dedup(lambda: PacketDedup(config, KeySpec.parse(args.key), data_width=args.data_width,
                                             action=args.action, fcs=args.fcs, max_frame=args.max_frame),
                         [(f, int(t), False) for (_, f, _), t in zip(items, ticks)], seed=seed,
                         name="dedup-readme-commands")
    kept = [r for r in _records_of(tmp_path / "out.pcap")[0]]
    assert [frame for frame, _ in run.out] == [r[16:] for r in kept], f"seed {seed}"
    assert [flags[1] for _, flags in run.out] == [int(len(r) - 16 > 1528) for r in kept]
    printed = next(line for line in text.splitlines() if line.startswith("config"))[9:].split(":")[0]
    _, report = _run(capsys, path, "--config", printed, "--max-frame", "1518", "--data-width", "64")
    # The design has no memory scan, so no counter of late answers: the model must count none.
    assert report["counters"]["late"] == 0, f"seed {seed}"
    assert run.counters == {name: n for name, n in report["counters"].items() if name != "late"}, f"seed {seed}"
    assert report["counters"]["unchecked"] >= 3 and report["counters"]["dropped"] > 10


def test_report_terms_as_the_docs_define_them(tmp_path, capsys):
    """The report's terms, counted here from the frames as docs/dedup.md defines them (``--key frame``: a copy is
    the same bytes): an exact duplicate's last copy is at most ``span`` ticks older; the report looks back
    ``recent_copy_ticks = span + (k + 1)·shift_interval`` ticks for a recent copy; a false positive is a frame
    dropped that is no exact duplicate, either a copy just older than the window (its last copy within that look
    back) or a frame without a recent copy (its share is the measured fp rate)."""
    from collections import Counter
    seed = 31                                          # named in the assertions (stdout is the report)
    # copies "outside the window" at 1.5 to 5 times 70 us: some just older than the 100 us window
    items = list(traffic(3000, seed, rate=3e5, duplicates=0.4, window=70_000, start=5_000_000))
    path = tmp_path / "in.pcap"
    write_scapy(path, [(t, f) for t, f, _ in items], fmt="pcap", nano=True)
    status, report = _run(capsys, path, "--window", "100us", "--key", "frame", "--fp", "0.05", "-o",
                          tmp_path / "out.pcap")
    assert status == 0
    f = report["filter"]
    span, look_back = report["window"]["span_ticks"], report["window"]["recent_copy_ticks"]
    assert look_back == span + (f["k"] + 1) * f["shift_interval"]
    ticks, _ = to_ticks([t for t, _, _ in items], report["window"]["tick_nanoseconds"])
    kept = Counter((t, r[16:]) for t, r in zip(read_capture(tmp_path / "out.pcap").times.tolist(),
                                                 _records_of(tmp_path / "out.pcap")[0]))
    last, exact, late, fresh, fresh_hit = {}, 0, 0, 0, 0
    for (t, frame, _), tick in zip(items, ticks.tolist()):
        age = tick - last[frame] if frame in last else None
        last[frame] = tick
        dropped = kept[(t, frame)] == 0
        kept[(t, frame)] -= not dropped
        if age is not None and age <= span:
            exact += 1
        elif age is not None and age <= look_back:
            late += dropped
        else:
            fresh += 1
            fresh_hit += dropped
    cmp = report["comparison"]
    assert report["exact"]["duplicates"] == exact > 100, f"seed {seed}"
    assert (cmp["false_positives_late_copies"], cmp["frames_without_recent_copy"]) == (late, fresh), f"seed {seed}"
    assert cmp["false_positives"] == late + fresh_hit and late > 0 and fresh_hit > 0, (seed, cmp)
    assert cmp["false_positive_rate"] == pytest.approx(fresh_hit / fresh)
    assert cmp["duplicates_missed"] == 0 and cmp["duplicates_found"] == exact
