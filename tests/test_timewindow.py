"""The time-bounded window's model (model/timewindow.py): the batch path against the per-command path, and the
guarantees checked independently of the model's own bookkeeping."""

import random

import numpy as np
import pytest

from apbbf.model import Config, Op
from apbbf.model.timewindow import TimedAPBBF
from apbbf.sim.harness import false_positive_bound

CONFIGS = {
    "k2l3": Config(2, 3, segment_blocks=4, span=100, time_width=12, extra_segments=1),
    "k3l4-w8": Config(3, 4, segment_blocks=2, span=50, time_width=8),
    "apbf-k1": Config(1, 2, block_bits=16, block_hashes=1, segment_blocks=4, span=30, time_width=7, extra_segments=3),
    "key100": Config(2, 5, segment_blocks=8, span=1000, time_width=16, extra_segments=2, key_width=100, seed=9),
}


def stream(config, count, seed, *, gaps=0.02, step=4, duplicates=0.4):
    """Random commands with non-decreasing times (modulo 2**time_width): mostly small steps, a fraction
    ``gaps`` of gaps from half a span to three spans (some restart the filter)."""
    rng = random.Random(seed)
    mask = (1 << config.time_width) - 1
    now = rng.randrange(mask + 1)
    ops, keys, times, recent = [], [], [], []
    for _ in range(count):
        roll = rng.random()
        if roll < gaps:
            now += rng.randrange(config.span // 2, 3 * config.span)
        elif roll < 0.5:
            now += rng.randrange(step)
        now &= mask
        key = rng.choice(recent) if recent and rng.random() < duplicates else rng.getrandbits(config.key_width)
        recent = (recent + [key])[-50:]
        ops.append(rng.choice((Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT)))
        keys.append(key)
        times.append(now)
    return ops, keys, times


def state(filt):
    return (filt.base, filt.n, filt.shifts, filt.overflows, filt.expired, filt.restarts, filt.live, filt.fresh,
            filt.started, filt._bits.tobytes(), filt._stamps.tobytes(), filt._stale.tobytes())


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("gaps", [0.0, 0.02, 0.2])
def test_batch_equals_commands(name, gaps):
    """run() gives the per-command answers, access counts and state, whatever the chunking."""
    config = CONFIGS[name]
    seed = 17 + int(gaps * 100) + list(CONFIGS).index(name)
    ops, keys, times = stream(config, 2500, seed, gaps=gaps)
    one = TimedAPBBF(config)
    answers = [one.command(op, key, now) for op, key, now in zip(ops, keys, times)]
    batch = TimedAPBBF(config)
    splits = sorted(random.Random(seed).sample(range(1, len(ops)), 3))
    hits, accesses = [], []
    for lo, hi in zip([0] + splits, splits + [len(ops)]):
        h, a = batch.run(ops[lo:hi], keys[lo:hi], times[lo:hi])
        hits += list(h)
        accesses += list(a)
    assert hits == [hit for hit, _ in answers], f"seed {seed}: answers differ"
    assert accesses == [steps for _, steps in answers], f"seed {seed}: access counts differ"
    assert state(batch) == state(one), f"seed {seed}: state differs"
    if gaps:
        assert one.restarts > 0 and one.expired > 0, "the stream was meant to restart the filter"


@pytest.mark.parametrize("name", CONFIGS)
def test_no_false_negatives_within_the_span(name):
    """Independent of the model: with no overflow, a key inserted at t is present for every query up to
    t + span; keys last inserted more than span + shift_interval ago are answered as absent keys are."""
    config = CONFIGS[name].__class__(**{**CONFIGS[name].__dict__, "extra_segments": 64})   # no overflow
    rng = random.Random(3)
    filt = TimedAPBBF(config)
    mask = (1 << config.time_width) - 1
    now = rng.randrange(mask + 1)
    inserted = {}                                       # key -> time of its last insert (unwrapped)
    clock = 0
    old_hits = old_total = 0
    for _ in range(4000):
        step = rng.choice((0, 0, 1, 1, 2, 5, config.span // 3))
        clock += step
        now = (now + step) & mask
        if rng.random() < 0.5 or not inserted:
            key = rng.getrandbits(config.key_width)
            filt.insert(key, now)
            inserted[key] = clock
        else:
            key = rng.choice(list(inserted))
            age = clock - inserted[key]
            hit = filt.query(key, now)
            if age <= config.span:
                assert hit, f"a key inserted {age} ticks ago (span {config.span}) is absent"
            elif age > config.span + config.shift_interval:
                old_hits += hit
                old_total += 1
    assert filt.overflows == 0
    assert old_total > 100
    assert old_hits <= false_positive_bound(config, old_total)


def test_exactly_at_the_span():
    """A key queried exactly at t + span is present, one tick later absent (every segment holding it expired);
    with traffic after it, the segments it shares with later inserts live on, but not past t + span +
    shift_interval for the oldest of them."""
    config = Config(2, 3, segment_blocks=4, span=100, time_width=12)
    alone = TimedAPBBF(config)
    alone.insert(0x1234, 10)
    assert alone.query(0x1234, 110)                    # age = span
    assert not alone.query(0x1234, 111)                # age > span: everything expired
    assert alone.fresh == 0
    busy = TimedAPBBF(config)
    busy.insert(0x1234, 10)
    holding = [busy.pos(i) for i in range(config.k)]
    for step in range(1, 100, 7):
        busy.insert(step * 977, 10 + step)
    assert busy.query(0x1234, 110)
    assert busy.shifts > 1
    assert all(busy._live[p] and not busy._stale[p] for p in holding)
    busy.query(0x1234, 10 + config.span + config.shift_interval + 1)
    assert any(busy._stale[p] or not busy._live[p] for p in holding), "a segment of the key outlived span + I"


def test_restart_after_a_gap():
    """An insert after a gap longer than the span finds everything expired: the filter restarts empty (its
    live segments count as expired), and no key from before the gap comes back."""
    config = Config(2, 3, segment_blocks=4, span=100, time_width=12)
    filt = TimedAPBBF(config)
    old = list(range(1, 60))
    for i, key in enumerate(old):
        filt.insert(key, i)
    live = filt.live
    filt.insert(999, 59 + 101)
    assert (filt.restarts, filt.expired, filt.n) == (1, live, len(old) + 1)
    assert filt.query(999, 59 + 101)
    assert not any(filt.query(key, 59 + 101) for key in old)
    assert int(filt._bits.sum()) == config.k * config.block_hashes      # only the new key's bits


def test_time_wraps():
    """Ages are modular: a stream that crosses 2**time_width answers as one that does not."""
    config = Config(2, 3, segment_blocks=4, span=40, time_width=8)
    shifted = Config(2, 3, segment_blocks=4, span=40, time_width=16)
    ops, keys, times = stream(config, 1500, 5, gaps=0.01)
    unwrapped = np.cumsum(np.diff(np.array(times), prepend=times[0]) % 256) + 1000
    a, _ = TimedAPBBF(config).run(ops, keys, times)
    b, _ = TimedAPBBF(shifted).run(ops, keys, unwrapped % (1 << 16))
    assert (a == b).all()


def test_overflow_keeps_the_count_window():
    """Inserts far faster than planned: segments are retired early (overflows) and every key among the last
    (physical_segments - 1 - k)·g >= l·g inserts is still present."""
    config = Config(2, 3, segment_blocks=4, span=10_000, time_width=16, extra_segments=1)
    filt = TimedAPBBF(config)
    keys = list(range(1, 20 * config.generation))
    filt.run([Op.INSERT] * len(keys), keys, [5] * len(keys))
    assert filt.overflows > 0
    window = (config.physical_segments - 1 - config.k) * config.generation
    assert window >= config.window
    hits, _ = filt.run([Op.QUERY] * window, keys[-window:], [5] * window)
    assert hits.all()


def test_time_triggered_shifts():
    """Slow traffic: a shift every shift_interval ticks, whatever the fill."""
    config = Config(2, 3, segment_blocks=64, span=100, time_width=16)
    filt = TimedAPBBF(config)
    interval = config.shift_interval
    for i in range(10):
        filt.insert(i, i * interval)
    assert filt.shifts == 10                            # the first insert shifts, then one per interval
    assert filt.n < config.generation


def test_init_wrong_config():
    with pytest.raises(ValueError, match="no span"):
        TimedAPBBF(Config(2, 3))
    with pytest.raises(TypeError, match="config must be a Config"):
        TimedAPBBF("k=2")


def test_wrong_times():
    filt = TimedAPBBF(Config(2, 3, span=10, time_width=8))
    with pytest.raises(ValueError, match="time must be from 0 to 2\\*\\*8-1"):
        filt.insert(1, 256)
    with pytest.raises(TypeError, match="time must be an integer"):
        filt.insert(1, 1.5)
    with pytest.raises(ValueError, match="times must be integers"):
        filt.run([Op.INSERT], [1], [-1])


TRICKLE = Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=64, span=2000, time_width=16,
                 extra_segments=2)


def trickle(config, *, start=5000, trickles=7, every=1):
    """The overload reproducer: after an idle gap, 16·g keys at one time T, then one fresh key at each of
    T + I, ..., T + trickles·I; after each trickle a query of every ``every``-th of the last l·g inserts (all
    younger than the span). Returns the commands and, per trickle, the indices of its queries."""
    g, interval, w = config.generation, config.shift_interval, config.window
    mask = (1 << config.time_width) - 1
    keys = [0x5A000000 + i for i in range(16 * g)]
    commands = [(Op.INSERT, key, start & mask) for key in keys]
    queries = []
    for j in range(1, trickles + 1):
        now = (start + j * interval) & mask
        keys.append(0x7B000000 + j)
        commands.append((Op.INSERT, keys[-1], now))
        asked = keys[-w:][::-1][::every]
        queries.append(range(len(commands), len(commands) + len(asked)))
        commands += [(Op.QUERY, key, now) for key in asked]
    return commands, queries


def test_trickle_keeps_the_count_floor():
    """The reproducer: a burst fills the pool, then one key per shift interval. A shift by time would retire a
    generation of the burst early for a generation of one key; it waits, and every one of the last l·g
    inserts stays present after each trickle."""
    config = TRICKLE
    assert config.generation == 229 and config.shift_interval == 251
    commands, queries = trickle(config)
    filt = TimedAPBBF(config)
    hits, _ = filt.run(*zip(*commands))
    for j, asked in enumerate(queries, 1):
        found = int(hits[asked.start:asked.stop].sum())
        assert found == config.window, f"trickle {j}: {found} of the last {config.window} inserts found"
    assert filt.overflows == 16 - (config.physical_segments - 1 - config.k) + 1    # the burst's, and trickle 1's


def floor_stream(config, seed, inserts):
    """Adversarial timing for the count floor (unwrapped times): trickles of one key per shift interval, bursts
    at one time, medium rates, gaps of half a span to two spans."""
    rng = random.Random(seed)
    g, interval, span = config.generation, config.shift_interval, config.span
    clock, times = rng.randrange(1 << config.time_width), []
    while len(times) < inserts:
        phase = rng.random()
        if phase < 0.3:
            steps = [interval + rng.randrange(-1, 2) for _ in range(rng.randrange(1, 3 * config.l))]
        elif phase < 0.55:
            steps = [0] * rng.randrange(1, 3 * g)
        elif phase < 0.8:
            top = max(1, 2 * interval * rng.choice((1, 2, 3)) // g) + 1
            steps = [rng.randrange(top) for _ in range(rng.randrange(1, 4 * g))]
        elif phase < 0.9:
            steps = [rng.randrange(span // 2, 2 * span)]
        else:
            steps = [rng.choice((0, 1, interval - 1, interval)) for _ in range(rng.randrange(1, g))]
        for step in steps:
            clock += step
            times.append(clock)
    return times[:inserts]


@pytest.mark.parametrize("k, l", [(2, 3), (3, 4), (2, 5)])
def test_count_floor(k, l):
    """Independent of the model's bookkeeping: with extra_segments >= l - 1, every key inserted at t that is
    among the last l·g inserts at t' <= t + span is present, whatever the timing (bursts, trickles, gaps)."""
    config = Config(k, l, segment_blocks=4, span=60 * l, time_width=16, extra_segments=l - 1)
    mask = (1 << config.time_width) - 1
    overflows = 0
    for seed in range(2):
        print(f"count floor k={k} l={l}: seed {seed}")
        rng = random.Random(1000 + seed)
        filt = TimedAPBBF(config)
        history = []
        for key, clock in enumerate(floor_stream(config, seed, 1500)):
            filt.insert(key, clock & mask)
            history.append(clock)
            if rng.random() < 0.15 or filt.fresh >= config.physical_segments - 2:
                w = config.window
                asked = [i for i in range(max(0, len(history) - w), len(history)) if clock - history[i] <= config.span]
                hits, _ = filt.run([Op.QUERY] * len(asked), asked, [clock & mask] * len(asked))
                assert hits.all(), (f"seed {seed}: {int((~hits).sum())} of the last {w} inserts within the span "
                                    f"absent at insert {key}")
        overflows += filt.overflows
    assert overflows > 0, "the streams never filled the pool"


def test_the_floor_needs_headroom():
    """With fewer extra segments a burst after a trickle can still retire one of the last l·g inserts (so the
    test above can fail): k=2 l=3 with extra_segments = l - 2."""
    config = Config(2, 3, segment_blocks=4, span=180, time_width=16, extra_segments=1)
    mask = (1 << config.time_width) - 1
    seed = 3                                            # the first of seeds 0.. that loses a key
    print(f"the floor needs headroom: seed {seed}")
    filt = TimedAPBBF(config)
    history, lost = [], 0
    for key, clock in enumerate(floor_stream(config, seed, 400)):
        filt.insert(key, clock & mask)
        history.append(clock)
        asked = [i for i in range(max(0, len(history) - config.window), len(history))
                 if clock - history[i] <= config.span]
        hits, _ = filt.run([Op.QUERY] * len(asked), asked, [clock & mask] * len(asked))
        lost = max(lost, int((~hits).sum()))
    assert lost > 0


def test_a_shift_by_time_waits_while_the_pool_is_full():
    """The pool is full of segments younger than the span: a due shift by time waits (the newest generation
    fills by count), and happens once the oldest segment has expired."""
    config = Config(2, 3, segment_blocks=4, span=300, time_width=16)
    g, interval = config.generation, config.shift_interval
    filt = TimedAPBBF(config)
    filt.run([Op.INSERT] * (6 * g), list(range(6 * g)), [10] * (6 * g))
    assert filt.pool_full
    shifts = filt.shifts
    filt.insert(-1 & ((1 << 64) - 1), 10 + interval)    # the generation is full: shifts by count
    filt.insert(10**6, 10 + 2 * interval)
    assert filt.shifts == shifts + 1                    # due by time, but the pool is full: waits
    filt.insert(10**6 + 1, 10 + config.span + 1)        # the burst's segments expired: the shift goes
    assert filt.shifts == shifts + 2


def test_time_window_facts():
    """The facts the README, docs/verilog.md and the Verilog header state, from one function: the shift
    interval's formula and value, the planned rate, the floor's headroom (or its absence, with the numbers),
    the time step limit, the restart and the counters."""
    from apbbf.hdl.export.verilog import header
    from apbbf.model.timeanalysis import floor_headroom, time_window_facts, tolerated_burst
    facts = " ".join(time_window_facts(TRICKLE))
    assert "span // l + 1 = 2000 // 8 + 1 = 251 ticks" in facts
    assert "g / I = 0.912351 inserts per tick" in facts
    assert "NO HEADROOM" in facts and "extra_segments = 2 < l - 1 = 7" in facts
    assert "2**(time_width-1) = 32768 ticks" in facts and "any time" in facts
    assert "(64 cycles, commands not accepted)" in facts and "overflows" in facts and "expired" in facts
    roomy = Config(3, 8, segment_blocks=64, span=2000, time_width=16, extra_segments=7)
    assert floor_headroom(roomy) and not floor_headroom(TRICKLE)
    assert "NO HEADROOM" not in " ".join(time_window_facts(roomy))
    assert tolerated_burst(roomy) > tolerated_burst(TRICKLE) >= 1.0
    text = " ".join(line.lstrip("/ -") for line in header(TRICKLE).splitlines())
    assert "span // l + 1 = 2000 // 8 + 1 = 251 ticks" in text and "NO HEADROOM" in text
    with pytest.raises(ValueError, match="no span"):
        time_window_facts(Config(2, 3))


@pytest.mark.parametrize("rate", [1.0, 2.0])
def test_default_headroom_never_overflows(rate):
    """With the default headroom (default_extra_segments: the count floor's l - 1, and room for 2x the planned
    rate), a random stream with re-inserts at 1.0x and 2.0x the planned rate never overflows; with none it
    does at 1.0x (so the test can fail)."""
    from apbbf.model.timeanalysis import default_extra_segments
    from apbbf.sim.harness import timed_commands
    bare = Config(3, 8, segment_blocks=64, span=2000, time_width=16)
    config = Config(**{**bare.__dict__, "extra_segments": default_extra_segments(bare)})
    assert config.extra_segments >= config.l - 1
    for seed in (5,):
        print(f"default headroom at {rate}x: seed {seed}")
        commands = timed_commands(config, 120 * config.generation, seed=seed, rate=rate, duplicates=0.5)
        filt = TimedAPBBF(config)
        filt.run(*zip(*commands))
        assert filt.overflows == 0 and filt.shifts > 3 * config.physical_segments, f"seed {seed}"
    if rate == 1.0:
        filt = TimedAPBBF(bare)
        filt.run(*zip(*timed_commands(bare, 40 * bare.generation, seed=5, rate=rate, duplicates=0.5)))
        assert filt.overflows > 0


def test_readme_and_docs_state_the_facts():
    """docs/core.md (the core's page, where the README sends readers) holds time_window_facts' own words, generated
    (apbbf.docgen; tests/test_docgen.py checks every block is fresh), and docs/verilog.md points to them."""
    from pathlib import Path
    from apbbf.docgen import time_window_facts_block
    root = Path(__file__).resolve().parents[1]
    core, verilog = (root / "docs" / "core.md").read_text(), (root / "docs" / "verilog.md").read_text()
    assert "<!-- generated: time-window-facts -->\n" + time_window_facts_block() + "\n<!-- end" in core
    assert "<!-- generated: restart-cycles -->" in core
    for text in (core, verilog):
        assert "span // l + 1" in text and "time_window_facts" in text
    assert "`extra_segments ≥ l − 1`" not in verilog and "`span / l`" not in core


def test_docs_state_the_generated_latency():
    """docs/core.md, docs/verilog.md and the header give one response latency: L + 9 on the parallel scan, with L
    the hash latency (6 for keys up to 64 bits, 9 wider), and L + 11 with a span, as response_latency computes
    it."""
    from pathlib import Path

    from apbbf.hdl.core.hash import hash_latency
    from apbbf.hdl.core.scan_parallel import response_latency
    from apbbf.hdl.export.verilog import header
    root = Path(__file__).resolve().parents[1]
    readme, docs = (root / "docs" / "core.md").read_text(), (root / "docs" / "verilog.md").read_text()
    narrow, wide = Config(3, 8), Config(3, 8, key_width=128)
    assert {response_latency(c) - hash_latency(c) for c in (narrow, wide)} == {9}
    assert (hash_latency(narrow), hash_latency(wide)) == (6, 9)
    assert "| L+9 (L+11 with a span) |" in readme and "L + 9 edges later" in docs
    assert f"({response_latency(narrow)} cycles for keys" in docs and f"{response_latency(wide)} for wider" in docs
    assert f"each response comes {response_latency(narrow)} cycles after" in header(narrow, scan="parallel")
    timed = Config(3, 8, span=1000, time_width=16)
    assert response_latency(timed) == response_latency(narrow) + 2
    assert "L + 11 with a span" in docs
    assert f"each response comes {response_latency(timed)} cycles after" in header(timed, scan="parallel")
