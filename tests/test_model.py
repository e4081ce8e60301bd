"""The golden model (model/filters.py): APBBF (paper 000 §6) and the basic APBF (§5).

Ages: after n inserts the filter has shifted S(n) = ceil(n/g) times (a shift before every insert with n mod g = 0,
including n = 0). An element inserted as insert number i (1-based) sits in logical segments d..d+k-1 with
d = S(n) - S(i), so the query must find it whenever d <= l (this contains the last w = l·g inserts), and it has
lost its last segment once d > l.
"""

import itertools

import numpy as np
import pytest

from apbbf.model import APBBF, APBF, Config, Op, scan
from apbbf.model import filters as filters_module

CONFIGS = {
    "k2l3": dict(k=2, l=3, block_bits=64, block_hashes=4, segment_blocks=8),                  # g = 42
    "b1": dict(k=2, l=2, block_bits=64, block_hashes=1, segment_blocks=4),                    # g = 88
    "k3l8": dict(k=3, l=8, block_bits=32, block_hashes=4, segment_blocks=4),                  # g = 6
    "wide128": dict(k=2, l=3, block_bits=64, block_hashes=4, segment_blocks=8, key_width=128),  # g = 42
    "g1": dict(k=1, l=1, block_bits=2, block_hashes=1, segment_blocks=1),                     # g = 1
    "k4l2g2": dict(k=4, l=2, block_bits=4, block_hashes=1, segment_blocks=8),                 # g = ⌊8·2.41/4⌋ = 4
}


def shifts_after(n, g):
    return -(-n // g)


def make(name, seed):
    return Config(seed=seed, **CONFIGS[name])


def key_pool(rng, width, n):
    words = (width + 63) // 64
    raw = rng.integers(0, 1 << 64, size=(n, words), dtype=np.uint64)
    return [sum(int(w) << (64 * i) for i, w in enumerate(row)) & ((1 << width) - 1) for row in raw]


def state(f):
    return f._bits.copy(), f.n, f.base, f.shifts


def assert_same_state(a, b, msg):
    bits_a, *rest_a = state(a)
    bits_b, *rest_b = state(b)
    assert rest_a == rest_b, f"{msg}: (n, base, shifts) {rest_a} != {rest_b}"
    assert np.array_equal(bits_a, bits_b), f"{msg}: bit arrays differ at {np.argwhere(bits_a != bits_b)[:5]}"


def key_bits(f: APBBF, position, key):
    """Flat bit indices of ``key`` in physical segment ``position``, from HashSpec.locate."""
    B = f.config.block_bits
    block, mask = f.hash.locate(position, key)
    return [block * B + bit for bit in range(B) if mask >> bit & 1]


# (1) No false negatives ---------------------------------------------------------------------------------------

def guaranteed(last_insert, n, g, l):
    """Keys whose latest insert i has S(n) - S(i) <= l."""
    s = shifts_after(n, g)
    return [key for key, i in last_insert.items() if s - shifts_after(i, g) <= l]


@pytest.mark.parametrize("name", ["k2l3", "b1", "k3l8", "wide128", "g1", "k4l2g2"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_false_negatives(name, seed):
    c = make(name, seed)
    g, l, k = c.generation, c.l, c.k
    rng = np.random.default_rng(seed)
    n_inserts = max(150, (k + l + 2) * g)
    pool = key_pool(rng, c.key_width, max(4, int(1.5 * c.window)))         # duplicates in the stream
    stream = [pool[int(j)] for j in rng.integers(0, len(pool), n_inserts)]

    batch = APBBF(c)
    per_key = APBBF(c)
    ops, keys, meta = [], [], []
    last_insert, history = {}, []
    for t, key in enumerate(stream, 1):
        ops.append(Op.INSERT)
        keys.append(key)
        last_insert[key] = t
        history.append(key)
        expected = guaranteed(last_insert, t, g, l)
        window = set(history[-c.window:])
        assert window <= set(expected)                                     # the guarantee contains the last w
        ops += [Op.QUERY] * len(expected)
        keys += expected
        meta += [(t, key) for key in expected]
        per_key.insert(key)
        if t % g in (0, 1, g // 2):                                        # shift boundary and mid-generation
            for q in (expected if c.key_width <= 64 else expected[::8]):
                assert per_key.query(q), f"seed={seed} {name}: per-key miss of {q:#x} after insert {t}"
    hits, _ = batch.run(ops, keys)
    answers = hits[np.array(ops) == Op.QUERY]
    missed = [meta[q] for q in np.flatnonzero(~answers)]
    assert not missed, f"seed={seed} {name}: false negatives (after insert t, key) {missed[:5]}"
    assert batch.n == per_key.n == n_inserts


# (2) Expiry -------------------------------------------------------------------------------------------------

EXPIRY = {
    "k2l3": dict(k=2, l=3, block_bits=64, block_hashes=4, segment_blocks=16),    # g = 85
    "k3l4": dict(k=3, l=4, block_bits=32, block_hashes=2, segment_blocks=16),    # g = 57
    "b1": dict(k=2, l=3, block_bits=16, block_hashes=1, segment_blocks=16),      # g = 85
    "k4l2": dict(k=4, l=2, block_bits=4, block_hashes=1, segment_blocks=8),      # g = 4
}


def avoiding_fillers(f: APBBF, target, rng, count):
    """Keys that never touch the block of ``target`` in any physical segment (so it is seen exactly)."""
    c = f.config
    blocks = [f.hash.locate(j, target)[0] for j in range(c.physical_segments)]
    out = []
    while len(out) < count:
        cand = np.array(key_pool(rng, c.key_width, 4 * count), dtype=np.uint64)
        folded = f.hash.fold_many(cand)
        ok = np.ones(len(cand), dtype=bool)
        for j, block in enumerate(blocks):
            ok &= f.hash.split_many(f.hash.segment_hash_many(j, folded))[0] != block
        out += [int(x) for x in cand[ok]]
    return out[:count]


@pytest.mark.parametrize("name", list(EXPIRY))
@pytest.mark.parametrize("offset", ["first", "second", "last"])
def test_expiry_exact(name, offset):
    """Lost exactly when it has aged past l generations; gone from every segment after k + l."""
    seed = 500 + list(EXPIRY).index(name)
    c = Config(seed=seed, **EXPIRY[name])
    g, k, l = c.generation, c.k, c.l
    rng = np.random.default_rng(seed)
    f = APBBF(c)
    target = key_pool(rng, c.key_width, 1)[0]
    prefix = {"first": 0, "second": 1, "last": g - 1}[offset] + 2 * g   # target lands at this place in its generation
    fillers = avoiding_fillers(f, target, rng, prefix + (k + l + 2) * g)
    for key in fillers[:prefix]:
        f.insert(key)
    f.insert(target)
    i = f.n
    last_present = None
    for key in fillers[prefix:]:
        d = shifts_after(f.n, g) - shifts_after(i, g)
        present = f.query(target)
        assert present == (d <= l), f"seed={seed} n={f.n} i={i} age d={d}: query {present}"
        holding = [s for s in range(k + l) if f.segment(s)[key_bits(f, f.pos(s), target)].all()]
        assert holding == list(range(d, min(d + k, k + l))), f"seed={seed} n={f.n} d={d}: segments {holding}"
        if present:
            last_present = f.n
        f.insert(key)
    assert last_present == (shifts_after(i, g) + l) * g, (seed, i, last_present)
    # It was present while among the last w inserts, and for at most (l + 1)·g inserts.
    assert c.window <= last_present - i + 1 <= (l + 1) * g, (seed, i, last_present)


def test_expiry_statistical():
    """Many keys of one generation, then distinct fillers: after k + l generations only false positives remain."""
    seed = 99
    c = Config(k=3, l=4, block_bits=64, block_hashes=4, segment_blocks=64, seed=seed)   # g = 229
    g, k, l = c.generation, c.k, c.l
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, 1 << 64, size=(k + l + 2) * g + 4000, dtype=np.uint64))
    rng.shuffle(keys)
    old, fresh, rest = keys[:g], keys[g:g + 4000], keys[g + 4000:]
    f = APBBF(c)
    f.insert_many(old)
    for gen in range(1, k + l + 2):
        assert f.query_many(old).all() == (gen <= l + 1), (seed, gen)   # after gen-1 more generations
        f.insert_many(rest[(gen - 1) * g:gen * g])
        fp = f.query_many(fresh).mean()
        gone = f.query_many(old).mean()
        if gen >= k + l:
            assert gone <= 3 * fp + 0.01, f"seed={seed} gen={gen}: {gone:.3f} of expired keys reported, fp {fp:.3f}"


# (3) Batch == per-key -----------------------------------------------------------------------------------------

def random_ops(rng, g, n, boundary_tai=True):
    ops = list(rng.choice([Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT], size=n, p=[0.4, 0.3, 0.3]))
    if boundary_tai:
        inserted = 0
        for t, op in enumerate(ops):
            if op != Op.QUERY:
                if inserted % g == 0 and rng.random() < 0.7:
                    ops[t] = Op.TEST_AND_INSERT
                inserted += 1
    return [Op(int(op)) for op in ops]


def run_per_key(f, ops, keys):
    hits, accesses = [], []
    for op, key in zip(ops, keys):
        if op == Op.QUERY:
            hit, acc = f.probe(key)
        elif op == Op.INSERT:
            f.insert(key)
            hit, acc = False, 0
        else:
            _, acc = f.probe(key)
            hit = f.test_and_insert(key)
        hits.append(hit)
        accesses.append(acc)
    return np.array(hits), np.array(accesses)


@pytest.mark.parametrize("name", ["k2l3", "b1", "k3l8", "wide128", "g1", "k4l2g2"])
@pytest.mark.parametrize("seed, chunk", [(11, None), (12, None), (13, 1), (14, 7)])
def test_batch_equals_per_key(name, seed, chunk, monkeypatch):
    if chunk is not None:
        monkeypatch.setattr(filters_module, "_CHUNK", chunk)
    c = make(name, seed)
    rng = np.random.default_rng(seed)
    n = 250 if c.key_width > 64 else 900 if c.generation > 10 else 400
    pool = key_pool(rng, c.key_width, max(8, c.window))
    keys = [pool[int(j)] for j in rng.integers(0, len(pool), n)]
    ops = random_ops(rng, c.generation, n)
    per_key, batch = APBBF(c), APBBF(c)
    want_hits, want_acc = run_per_key(per_key, ops, keys)
    # The batch in random pieces, so runs start at every kind of state.
    cuts = sorted(set(int(x) for x in rng.integers(0, n, 6))) + [n]
    got_hits, got_acc, t0 = [], [], 0
    for t1 in cuts:
        h, a = batch.run(ops[t0:t1], keys[t0:t1])
        got_hits.append(h)
        got_acc.append(a)
        t0 = t1
    got_hits, got_acc = np.concatenate(got_hits), np.concatenate(got_acc)
    bad = np.flatnonzero((got_hits != want_hits) | (got_acc != want_acc))
    assert not len(bad), (f"seed={seed} {name} chunk={chunk}: first mismatch at command {bad[0]} "
                          f"{ops[bad[0]].name} key={keys[bad[0]]:#x}: batch ({got_hits[bad[0]]}, "
                          f"{got_acc[bad[0]]}) per-key ({want_hits[bad[0]]}, {want_acc[bad[0]]})")
    assert_same_state(batch, per_key, f"seed={seed} {name} chunk={chunk}")
    assert (np.array(ops) == Op.INSERT).sum() and want_hits[np.array(ops) != Op.INSERT].any()


@pytest.mark.parametrize("name", list(EXPIRY))
@pytest.mark.parametrize("batched", [False, True])
def test_test_and_insert_on_shift_boundary_sees_pre_shift_filter(name, batched):
    """A key of age exactly l at the end of a generation is present before the shift and lost after it."""
    seed = 700 + list(EXPIRY).index(name)
    c = Config(seed=seed, **EXPIRY[name])
    g, l = c.generation, c.l
    rng = np.random.default_rng(seed)
    f = APBBF(c)
    target = key_pool(rng, c.key_width, 1)[0]
    fillers = avoiding_fillers(f, target, rng, (l + 2) * g)
    # target is the first insert of generation 1; then l·g + g - 1 fillers: n = (l + 1)·g, n mod g = 0, age l.
    stream = [target] + fillers[:(l + 1) * g - 1]
    ops = [Op.INSERT] * len(stream) + [Op.QUERY, Op.TEST_AND_INSERT, Op.QUERY]
    keys = stream + [target] * 3
    if batched:
        hits, _ = f.run(ops, keys)
        hits = list(hits[-3:])
    else:
        for key in stream:
            f.insert(key)
        assert f.n % g == 0
        hits = [f.query(target), f.test_and_insert(target), f.query(target)]
    assert hits == [True, True, True], f"seed={seed} {name} batched={batched}: {hits}"
    # And without the test-and-insert the key is really lost after that shift (so the answer above is pre-shift).
    f2 = APBBF(c)
    f2.insert_many(stream + [fillers[(l + 1) * g - 1]])
    assert not f2.query(target), f"seed={seed} {name}: key not lost after the shift"


# (4) Shift mechanics ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["k2l3", "k3l8", "g1", "k4l2g2", "wide128"])
def test_shift_mechanics(name):
    seed = 21
    c = make(name, seed)
    g, k, l, P = c.generation, c.k, c.l, c.physical_segments
    rng = np.random.default_rng(seed)
    f = APBBF(c)
    assert (f.n, f.base, f.shifts, f.positions) == (0, 0, 0, P)
    assert not f._bits.any()
    keys = key_pool(rng, c.key_width, (k + l + 2) * g + 5)
    for t, key in enumerate(keys):
        before = [f.segment(i).copy() for i in range(P)]
        base = f.base
        if t % 3 == 0:
            f.query(key)                                      # queries never shift nor write
            assert f.base == base and all(np.array_equal(f.segment(i), before[i]) for i in range(P))
        f.insert(key)
        shifted = t % g == 0
        assert f.shifts == shifts_after(t + 1, g), (seed, t)
        assert f.base == (-f.shifts) % P == ((base - 1) % P if shifted else base), (seed, t)
        own = [key_bits(f, f.pos(i), key) for i in range(k)]
        for i in range(P):
            want = (np.zeros_like(before[0]) if i == 0 else before[i - 1].copy()) if shifted else before[i].copy()
            if i == l + k:
                assert not f.segment(i).any(), f"seed={seed} insert {t}: spare (segment k+l) not clear"
                continue
            if i < k:
                want[own[i]] = True
            assert np.array_equal(f.segment(i), want), f"seed={seed} insert {t} shifted={shifted}: segment {i}"
        assert f.segment(0).sum() <= c.block_hashes * ((t % g) + 1)
    assert f.n == len(keys)


def test_first_insert_shifts():
    c = make("k2l3", 0)
    f = APBBF(c)
    f.query(5)
    assert (f.n, f.base, f.shifts) == (0, 0, 0)
    f.insert(5)
    assert (f.n, f.base, f.shifts) == (1, c.physical_segments - 1, 1)
    g = APBBF(c)
    g.test_and_insert_many([5])
    assert (g.n, g.base, g.shifts) == (1, c.physical_segments - 1, 1)


@pytest.mark.parametrize("name", ["k2l3", "g1", "k4l2g2"])
def test_batch_shift_counters(name):
    c = make(name, 3)
    f = APBBF(c)
    rng = np.random.default_rng(3)
    for size in [1, 0, 5, c.generation, 3 * c.generation + 1, 7]:
        f.insert_many(key_pool(rng, c.key_width, size))
        assert f.shifts == shifts_after(f.n, c.generation) and f.base == (-f.shifts) % c.physical_segments
        assert not f.segment(c.k + c.l).any(), "spare written"


# (5) Algorithm 1 ----------------------------------------------------------------------------------------------

def brute_hits(row, k, l):
    return any(all(row[j:j + k]) for j in range(l + 1))


def algorithm1(row, k, l):
    """Paper 000 Algorithm 1, line by line; returns (hit, accesses)."""
    i, p, c, a = l, 0, 0, 0
    while i >= 0:
        a += 1
        if row[i]:
            c, i = c + 1, i + 1
            if p + c == k:
                return True, a
        else:
            i, p, c = i - k, c, 0
    return False, a


@pytest.mark.parametrize("k, l", [(1, 1), (1, 4), (2, 1), (2, 3), (3, 2), (3, 5), (2, 8), (4, 4), (5, 1), (1, 10)])
def test_scan_exhaustive(k, l):
    match = np.array(list(itertools.product([False, True], repeat=k + l)), dtype=bool)
    hits, accesses = scan(match, k, l)
    for row, hit, acc in zip(match, hits, accesses):
        row = list(row)
        assert hit == brute_hits(row, k, l), (k, l, row)
        assert (hit, acc) == algorithm1(row, k, l), (k, l, row, acc)
        assert 1 <= acc <= k + l
        if hit and all(row[l:l + k]):
            assert acc == k


@pytest.mark.parametrize("k, l", [(6, 14), (10, 15), (3, 8), (14, 40)])
@pytest.mark.parametrize("density", [0.3, 0.5, 0.8, 0.95])
def test_scan_random(k, l, density):
    seed = 1000 * k + l + int(100 * density)
    rng = np.random.default_rng(seed)
    match = rng.random((3000, k + l)) < density
    hits, accesses = scan(match, k, l)
    for q, row in enumerate(match):
        row = list(row)
        assert hits[q] == brute_hits(row, k, l), f"seed={seed} row {q}: {row}"
        assert (hits[q], accesses[q]) == algorithm1(row, k, l), f"seed={seed} row {q}: {row}"


@pytest.mark.parametrize("k, l, row, hit, accesses", [
    (2, 3, "11111", True, 2),      # slices 3, 4
    (2, 3, "00000", False, 2),     # 3 miss -> 1 miss -> -1
    (2, 3, "11000", True, 4),      # 3 miss, 1 hit, 2 miss (p = 1), 0 hit: p + c = 2
    (2, 3, "00011", True, 2),
    (2, 3, "00110", True, 3),      # 3 hit, 4 miss (p = 1), 2 hit
    (2, 3, "10101", False, 2),     # 3 miss, 1 miss
    (2, 3, "01100", True, 3),      # 3 miss, 1 hit, 2 hit
    (3, 2, "01110", True, 4),      # 2 hit, 3 hit, 4 miss (p = 2), 1 hit
    (3, 2, "11011", False, 1),     # 2 miss -> i = -1
    (1, 3, "0000", False, 4),      # k = 1 jumps back 1: 3, 2, 1, 0 all miss
    (1, 3, "1000", True, 4),       # 3, 2, 1 miss, 0 hit
    (3, 5, "11100000", True, 5),   # 5 miss; 2 hit, 3 miss (p = 1); 0 hit, 1 hit: p + c = 3
])
def test_scan_hand(k, l, row, hit, accesses):
    match = np.array([[ch == "1" for ch in row]])
    got = scan(match, k, l)
    assert (bool(got[0][0]), int(got[1][0])) == (hit, accesses), (k, l, row, got)


# (6) The basic APBF --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k, l, m", [(2, 3, 64), (3, 8, 30), (1, 1, 2), (4, 3, 100)])
def test_apbf_basic(k, l, m):
    seed = k * 100 + l * 10 + m
    f = APBF(k, l, m, seed=seed)
    g = int(m * np.log(2) // k)
    assert f.generation == g and f.window == l * g and f.positions == k + l and f.m == m
    rng = np.random.default_rng(seed)
    pool = [int(x) for x in rng.integers(0, 1 << 64, size=max(4, 2 * f.window), dtype=np.uint64)]
    stream = [pool[int(j)] for j in rng.integers(0, len(pool), (k + l + 3) * g + 50)]
    last = {}
    for t, key in enumerate(stream, 1):
        f.insert(key)
        last[key] = t
        assert f.base == (-shifts_after(t, g)) % (k + l)
        for q in guaranteed(last, t, g, l):
            assert f.query(q), f"seed={seed} APBF false negative {q:#x} after insert {t}"
    # batch == per-key on a random mix
    ops = random_ops(rng, g, 800)
    keys = [pool[int(j)] for j in rng.integers(0, len(pool), 800)]
    a, b = APBF(k, l, m, seed=seed), APBF(k, l, m, seed=seed)
    want = run_per_key(a, ops, keys)
    got = b.run(ops, keys)
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1]), f"seed={seed}"
    assert_same_state(a, b, f"APBF seed={seed}")


def test_apbf_insert_query_empty():
    f = APBF(3, 4, 200, seed=1)
    assert not f.query(12345)
    f.insert(12345)
    assert f.query(12345)
    fresh = APBF(3, 4, 200, seed=1)
    assert [fresh.test_and_insert(7), fresh.test_and_insert(7)] == [False, True]
    assert list(APBF(3, 4, 200, seed=1).test_and_insert_many([7, 8, 7])) == [False, False, True]


@pytest.mark.parametrize("args, exc", [((0, 1, 64), ValueError), ((1, 0, 64), ValueError), ((2, 2, 2), ValueError),
                                       ((2.0, 2, 64), TypeError), ((2, 2, "64"), TypeError),
                                       ((2, 2, 64, -1), ValueError), ((2, 2, 64, 1 << 64), ValueError)])
def test_apbf_wrong_parameters(args, exc):
    with pytest.raises(exc):
        APBF(*args)


# (7) test_and_insert ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["k2l3", "g1", "k3l8", "wide128"])
def test_test_and_insert_pre_insert_answer(name):
    seed = 31
    c = make(name, seed)
    rng = np.random.default_rng(seed)
    f = APBBF(c)
    key = key_pool(rng, c.key_width, 1)[0]
    f = APBBF(c)
    assert [bool(f.test_and_insert(key)), bool(f.test_and_insert(key))] == [False, True]   # back-to-back duplicate
    b = APBBF(c)
    assert list(b.test_and_insert_many([key, key, key])) == [False, True, True]
    pool = key_pool(rng, c.key_width, max(4, c.window))
    for t in range(4 * c.generation + 20):
        x = pool[int(rng.integers(len(pool)))]
        before = f.query(x)
        assert bool(f.test_and_insert(x)) == before, f"seed={seed} {name} step {t}"
        assert f.query(x), f"seed={seed} {name} step {t}: just inserted key missing"


# (8) Invalid keys ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [8, 64, 128])
@pytest.mark.parametrize("bad, exc", [(-1, ValueError), ("too wide", ValueError), (1.0, TypeError),
                                      ("3", TypeError), (None, TypeError), (True, TypeError)])
def test_invalid_keys_raise(width, bad, exc):
    c = Config(k=2, l=3, block_bits=64, block_hashes=4, segment_blocks=8, key_width=width)
    if bad == "too wide":
        bad = 1 << width
    f = APBBF(c)
    f.insert_many([1, 2, 3])
    snapshot = state(f)
    for method in (f.insert, f.query, f.probe, f.test_and_insert):
        with pytest.raises(exc):
            method(bad)
    for method in (f.insert_many, f.query_many, f.probe_many, f.test_and_insert_many):
        with pytest.raises(exc):
            method([4, 5, bad, 6])
    with pytest.raises(exc):
        f.run([Op.INSERT, Op.TEST_AND_INSERT], [7, bad])
    after = state(f)
    assert np.array_equal(snapshot[0], after[0]) and snapshot[1:] == after[1:], "a failed call changed the filter"


@pytest.mark.parametrize("bad,exc", [(-1, ValueError), (1 << 64, ValueError), (1.5, TypeError),
                                     ("x", TypeError), (None, TypeError)])
def test_apbf_invalid_keys_raise(bad, exc):
    f = APBF(2, 3, 64)
    for method in (f.insert, f.query, f.test_and_insert):
        with pytest.raises(exc):
            method(bad)
    with pytest.raises(exc):
        f.insert_many([1, bad])
    assert f.n == 0 and not f._bits.any()


def test_run_rejects_bad_ops():
    f = APBBF(make("k2l3", 0))
    with pytest.raises(ValueError):
        f.run([Op.INSERT], [1, 2])
    with pytest.raises(ValueError):
        f.run([Op.INSERT, 3], [1, 2])
    with pytest.raises(ValueError):
        f.run([-1], [1])
    assert f.n == 0 and not f._bits.any()
    with pytest.raises(TypeError):
        APBBF(CONFIGS["k2l3"])
