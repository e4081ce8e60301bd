"""The window's span changed at run time (:meth:`apbbf.model.timewindow.TimedAPBBF.set_window`,
:meth:`apbbf.model.dedup.Dedup.set_window`): the per-command path, the batch path and the bulk engine agree across
each change, a longer window holds the keys inserted after it, a shorter one forgets the keys written after it
sooner, and a key inserted before a change keeps the expiry it was inserted with."""

import random

import numpy as np
import pytest

from apbbf.model import Config
from apbbf.model.dedup.bulk import TimedTestAndInsert
from apbbf.model.filters import Op
from apbbf.model.timeanalysis import window_capacity
from apbbf.model.timewindow import TimedAPBBF

SEED = 64064
CONFIG = Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7, extra_segments=2)


def _stream(rng, n, step=6, pool=60):
    keys = [rng.randrange(pool) for _ in range(n)]
    times, t = [], 100
    for _ in range(n):
        t += rng.randrange(step)
        times.append(t)
    return keys, times


def _schedule(rng, n, spans):
    return {rng.randrange(1, n): span for span in spans}


@pytest.mark.parametrize("spans", [(600,), (40,), (900, 20, 300), (1, 2000, 77)])
def test_paths_agree_across_changes(spans):
    """Per command, batch and bulk: the same hits around every change (seed printed)."""
    rng = random.Random(SEED + sum(spans))
    print("seed", SEED + sum(spans))
    n = 1500
    keys, times = _stream(rng, n)
    changes = _schedule(rng, n, spans)
    one, batch, bulk = TimedAPBBF(CONFIG), TimedAPBBF(CONFIG), TimedTestAndInsert(CONFIG)
    hits_one = []
    for i, (key, t) in enumerate(zip(keys, times)):
        if i in changes:
            one.set_window(changes[i])
        hits_one.append(one.test_and_insert(key, t & 0xFFFF))
    hits_batch, hits_bulk = [], []
    cuts = [0, *sorted(changes), n]
    for a, b in zip(cuts, cuts[1:]):
        if a in changes:
            batch.set_window(changes[a])
            bulk.set_window(changes[a])
        hits_batch += list(batch.run(np.full(b - a, Op.TEST_AND_INSERT), keys[a:b],
                                     np.array(times[a:b]) & 0xFFFF)[0])
        hits_bulk += list(bulk.run(np.array(keys[a:b], dtype=np.uint64), times[a:b]))
    assert hits_batch == hits_one
    assert hits_bulk == hits_one
    assert (batch.shifts, batch.expired, batch.restarts) == (one.shifts, one.expired, one.restarts)
    assert (bulk.shifts, bulk.expired, bulk.restarts) == (one.shifts, one.expired, one.restarts)
    assert 50 < sum(hits_one) < n


def test_longer_window_holds_keys_inserted_after_it():
    f = TimedAPBBF(CONFIG)
    f.set_window(800)
    f.insert(1, 1000)
    assert f.query(1, 1700)                         # 700 ticks on: the built 300 would have forgotten it
    g = TimedAPBBF(CONFIG)
    g.insert(1, 1000)
    g.set_window(800)                               # after the insert: the key keeps its own expiry
    assert not g.query(1, 1700)


def test_shorter_window_forgets_sooner():
    f = TimedAPBBF(CONFIG)
    f.insert(1, 1000)
    f.set_window(50)
    f.insert(2, 1010)                               # written with 50: key 1 shares its segments
    assert f.query(1, 1055) and f.query(2, 1060)
    assert not f.query(1, 1061) and not f.query(2, 1061)


def test_shorter_window_lowers_the_expiry_from_the_last_insert():
    """A key inserted before a shorter window is forgotten the new span after the last insert, not the old."""
    f = TimedAPBBF(CONFIG)
    f.insert(1, 1000)
    f.set_window(50)
    assert f.query(1, 1050) and not f.query(1, 1051)
    g = TimedAPBBF(CONFIG)
    g.insert(1, 1000)
    g.set_window(500)                               # longer: the key keeps the built 300
    assert g.query(1, 1300) and not g.query(1, 1301)


def test_window_refused_out_of_range():
    f = TimedAPBBF(CONFIG)
    for span in (0, 1 << 15, -1):
        with pytest.raises(ValueError, match="span must be"):
            f.set_window(span)
    with pytest.raises(TypeError):
        f.set_window(3.0)
    assert f.span == CONFIG.span


def test_capacity_is_at_least_the_span_and_grows_with_the_pool():
    plain = Config(2, 3, segment_blocks=16, span=300, time_width=16)
    assert window_capacity(plain) >= plain.span
    assert window_capacity(CONFIG) > window_capacity(plain)
    assert window_capacity(CONFIG) < 1 << 15
