"""The hash specification (model/hashing.py) against an independent transcription of its documentation."""

import functools
import hashlib
import math

import numpy as np
import pytest

from apbbf.model import Config, HashSpec, key_from_bytes
from apbbf.model.hashing import splitmix64

M64 = (1 << 64) - 1
STRIDE = 0xD1B54A32D192ED03


# Independent reference of the documented specification -----------------------------------------------------

def ref_splitmix64(state, count):
    out = []
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        out.append(z ^ (z >> 31))
    return out


@functools.lru_cache(maxsize=None)
def ref_masks(seed, stream, count, width):
    """Stream s from state seed + s·stride; ceil(w/64) words per mask, LS word first, truncated; zero discarded.

    Returns (masks, number of zero masks discarded)."""
    per = (width + 63) // 64
    state = (seed + stream * STRIDE) & M64
    masks, zeros = [], 0
    while len(masks) < count:
        words = ref_splitmix64(state, per)
        state = (state + per * 0x9E3779B97F4A7C15) & M64
        value = sum(w << (64 * i) for i, w in enumerate(words)) & ((1 << width) - 1)
        if value:
            masks.append(value)
        else:
            zeros += 1
    return tuple(masks), zeros


def parity(x):
    return bin(x).count("1") & 1


def ref_hash(c: Config, segment, key):
    """(block, B-bit mask) of ``key`` in physical segment ``segment`` straight from the module documentation."""
    if c.key_width > 64:
        fold, _ = ref_masks(c.seed, 0, 64, c.key_width)
        key = sum(parity(key & m) << r for r, m in enumerate(fold))
    masks, _ = ref_masks(c.seed, segment + 1, c.hash_bits, min(c.key_width, 64))
    h = sum(parity(key & m) << r for r, m in enumerate(masks))
    block = h % c.segment_blocks
    h >>= int(math.log2(c.segment_blocks))
    part = c.block_bits // c.block_hashes
    bits = 0
    for p in range(c.block_hashes):
        bits |= 1 << (p * part + h % part)
        h >>= int(math.log2(part))
    return block, bits


def random_keys(rng, width, n):
    words = (width + 63) // 64
    raw = rng.integers(0, 1 << 64, size=(n, words), dtype=np.uint64)
    keys = [sum(int(w) << (64 * i) for i, w in enumerate(row)) & ((1 << width) - 1) for row in raw]
    return [0, (1 << width) - 1, 1, 1 << (width - 1)] + keys


WIDTHS = [8, 32, 64, 65, 128, 512]
SHAPES = [dict(block_bits=64, block_hashes=4, segment_blocks=512),
          dict(block_bits=512, block_hashes=8, segment_blocks=16),
          dict(block_bits=64, block_hashes=1, segment_blocks=1),
          dict(block_bits=2, block_hashes=1, segment_blocks=1)]


# splitmix64 ---------------------------------------------------------------------------------------------------

def test_splitmix64_known_outputs_seed0():
    # The standard splitmix64 outputs from state 0 (e.g. the reference in Vigna's xoshiro page / Java SplittableRandom).
    expected = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    gen = splitmix64(0)
    got = [next(gen) for _ in range(3)]
    assert got == expected, [hex(x) for x in got]
    assert ref_splitmix64(0, 3) == expected


@pytest.mark.parametrize("state", [1, 0xD1B54A32D192ED03, M64, 1234567890123456789])
def test_splitmix64_matches_reference(state):
    gen = splitmix64(state)
    assert [next(gen) for _ in range(50)] == ref_splitmix64(state, 50), f"state={state:#x}"


# Masks --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("seed", [0, 1, 0xDEADBEEF, M64])
def test_masks_follow_spec(width, seed):
    c = Config(k=2, l=3, key_width=width, seed=seed)
    spec = HashSpec(c)
    assert len(spec.segment_masks) == c.physical_segments == c.k + c.l + 1
    folded_width = min(width, 64)
    for j, masks in enumerate(spec.segment_masks):
        assert len(masks) == c.hash_bits, (seed, width, j)
        assert all(0 < m < 1 << folded_width for m in masks), (seed, width, j)
        assert list(masks) == list(ref_masks(seed, j + 1, c.hash_bits, folded_width)[0]), (seed, width, j)
    if width > 64:
        assert len(spec.fold_masks) == 64
        assert all(0 < m < 1 << width for m in spec.fold_masks)
        assert any(m >> 64 for m in spec.fold_masks), "the upper word of wide masks is never used"
        assert list(spec.fold_masks) == list(ref_masks(seed, 0, 64, width)[0]), (seed, width)
    else:
        assert spec.fold_masks == ()


def test_zero_mask_is_discarded():
    """With key_width 8 a truncated draw is zero 1 time in 256: find a seed where it happens and check the skip."""
    c = None
    for seed in range(200):
        cand = Config(k=2, l=3, key_width=8, seed=seed)
        if any(ref_masks(seed, j + 1, cand.hash_bits, 8)[1] for j in range(cand.physical_segments)):
            c = cand
            break
    assert c is not None, "no seed in 0..199 draws a zero 8-bit mask (probability ~1e-50)"
    spec = HashSpec(c)
    for j in range(c.physical_segments):
        masks, zeros = ref_masks(c.seed, j + 1, c.hash_bits, 8)
        assert spec.segment_masks[j] == masks, (c.seed, j, zeros)
        assert 0 not in spec.segment_masks[j]


def test_seeds_and_segments_give_different_masks():
    specs = {seed: HashSpec(Config(k=3, l=5, seed=seed)) for seed in (0, 1, 2, M64)}
    all_masks = [spec.segment_masks for spec in specs.values()]
    assert len(set(all_masks)) == len(all_masks), "two seeds give the same masks"
    for seed, spec in specs.items():
        assert len(set(spec.segment_masks)) == len(spec.segment_masks), f"seed={seed}: two segments share masks"
    wide = [HashSpec(Config(k=1, l=1, key_width=128, seed=seed)).fold_masks for seed in (0, 1)]
    assert wide[0] != wide[1]


def test_hashspec_rejects_non_config():
    with pytest.raises(TypeError):
        HashSpec(dict(k=2, l=3))


# Per-key == reference == vectorised ----------------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("shape", range(len(SHAPES)))
def test_per_key_reference_and_vectorised_agree(width, shape):
    seed = 1000 * width + shape
    rng = np.random.default_rng(seed)
    c = Config(k=1, l=2, key_width=width, seed=seed, **SHAPES[shape])
    spec = HashSpec(c)
    keys = random_keys(rng, width, 60)
    folded = spec.fold_many(spec.as_array(keys))
    assert folded.dtype == np.uint64 and folded.shape == (len(keys),)
    assert [int(x) for x in folded] == [spec.fold(key) for key in keys], f"seed={seed}"
    for j in range(c.physical_segments):
        many = spec.segment_hash_many(j, folded)
        per_key = [spec.segment_hash(j, key) for key in keys]
        assert [int(x) for x in many] == per_key, f"seed={seed} segment={j}"
        assert all(0 <= h < 1 << c.hash_bits for h in per_key)
        blocks, positions = spec.split_many(many)
        for q, key in enumerate(keys[:20]):
            block, bits = spec.locate(j, key)
            assert (block, bits) == ref_hash(c, j, key), f"seed={seed} segment={j} key={key:#x}"
            assert blocks[q] == block and sum(1 << int(p) for p in positions[q]) == bits, \
                f"seed={seed} segment={j} key={key:#x}"


@pytest.mark.parametrize("width", WIDTHS)
def test_fold_only_when_wider_than_64(width):
    rng = np.random.default_rng(width)
    spec = HashSpec(Config(k=1, l=1, key_width=width, seed=width))
    keys = random_keys(rng, width, 50)
    if width <= 64:
        assert all(spec.fold(key) == key for key in keys)
    else:
        folded = [spec.fold(key) for key in keys]
        assert all(0 <= f < 1 << 64 for f in folded)
        assert folded != keys[:len(folded)]
        # The fold sees the bits above 64: flipping only bit width-1 changes the fold (unless a mask misses it).
        top = 1 << (width - 1)
        if any(m & top for m in spec.fold_masks):
            assert spec.fold(top) != 0


# Split --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", range(len(SHAPES)))
def test_split_one_bit_per_part_and_block_range(shape):
    seed = 77 + shape
    c = Config(k=1, l=1, seed=seed, **SHAPES[shape])
    spec = HashSpec(c)
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 1 << c.hash_bits, size=500, dtype=np.uint64)
    values[:2] = [0, (1 << c.hash_bits) - 1]
    blocks, positions = spec.split_many(values)
    assert positions.shape == (500, c.block_hashes)
    part = c.part_bits
    for value, block, pos in zip(values, blocks, positions):
        block_s, bits = spec.split(int(value))
        assert block_s == block and 0 <= block < c.segment_blocks, (seed, int(value))
        assert block == int(value) % c.segment_blocks
        for p in range(c.block_hashes):
            field = (bits >> (p * part)) & ((1 << part) - 1)
            assert bin(field).count("1") == 1, f"seed={seed} value={int(value):#x} part {p}: {field:#x}"
            assert p * part <= pos[p] < (p + 1) * part
            # offset p is bits block_index_bits + p·offset_bits of the hash
            offset = (int(value) >> (c.block_index_bits + p * c.offset_bits)) % part
            assert pos[p] == p * part + offset
        assert bits < 1 << c.block_bits


# Linearity (H3) ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_h3_is_linear(width):
    seed = 4242 + width
    rng = np.random.default_rng(seed)
    spec = HashSpec(Config(k=2, l=3, key_width=width, seed=seed))
    a = random_keys(rng, width, 40)
    b = random_keys(rng, width, 40)[4:]
    for j in range(spec.config.physical_segments):
        assert spec.segment_hash(j, 0) == 0
        for x, y in zip(a, b):
            assert spec.segment_hash(j, x ^ y) == spec.segment_hash(j, x) ^ spec.segment_hash(j, y), \
                f"seed={seed} segment={j} a={x:#x} b={y:#x}"


# Distribution -------------------------------------------------------------------------------------------------

def chi2_upper(df, p):
    """Upper p-quantile of chi-square(df) by Wilson–Hilferty (accurate to <1% for df >= 10)."""
    # z for the normal upper tail, by bisection on erfc.
    lo, hi = 0.0, 40.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(mid / math.sqrt(2)) > p:
            lo = mid
        else:
            hi = mid
    z = lo
    h = 2 / (9 * df)
    return df * (1 - h + z * math.sqrt(h)) ** 3


def chi2(counts):
    counts = np.asarray(counts, dtype=float)
    expected = counts.sum() / len(counts)
    return float(((counts - expected) ** 2 / expected).sum())


P_REJECT = 1e-6


def test_chi2_threshold_is_sane():
    # Tabulated: chi2(63) upper 0.001 quantile is 103.44; chi2(15) upper 0.001 is 37.70.
    assert chi2_upper(63, 1e-3) == pytest.approx(103.44, rel=0.01)
    assert chi2_upper(15, 1e-3) == pytest.approx(37.70, rel=0.02)
    # The statistic rejects a visibly biased sample: half of the bins never used.
    biased = np.bincount(np.arange(20000) % 32 * 2, minlength=64)
    assert chi2(biased) > chi2_upper(63, P_REJECT)


@pytest.mark.parametrize("source", ["random", "counter_bytes"])
@pytest.mark.parametrize("width", [32, 64, 128])
def test_block_index_and_offsets_uniform(source, width):
    seed = 31337 + width
    c = Config(k=2, l=3, block_bits=64, block_hashes=4, segment_blocks=64, key_width=width, seed=seed)
    spec = HashSpec(c)
    n = 20000
    if source == "random":
        keys = random_keys(np.random.default_rng(seed), width, n)[4:]
    else:
        keys = [key_from_bytes(i.to_bytes(4, "little"), width) for i in range(n)]
    folded = spec.fold_many(spec.as_array(keys))
    block_limit = chi2_upper(c.segment_blocks - 1, P_REJECT)
    offset_limit = chi2_upper(c.part_bits - 1, P_REJECT)
    for j in range(c.physical_segments):
        blocks, positions = spec.split_many(spec.segment_hash_many(j, folded))
        stat = chi2(np.bincount(blocks, minlength=c.segment_blocks))
        assert stat < block_limit, f"seed={seed} segment={j}: block chi2 {stat:.1f} >= {block_limit:.1f}"
        for p in range(c.block_hashes):
            counts = np.bincount(positions[:, p] - p * c.part_bits, minlength=c.part_bits)
            stat = chi2(counts)
            assert stat < offset_limit, f"seed={seed} segment={j} part={p}: chi2 {stat:.1f} >= {offset_limit:.1f}"


# key_from_bytes -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [8, 13, 64, 65, 128, 511, 512])
def test_key_from_bytes_spec(width):
    for data in [b"", b"\x00", b"hello", bytes(range(256)), b"10.0.0.1:80->10.0.0.2:443/tcp"]:
        key = key_from_bytes(data, width)
        digest = hashlib.blake2b(data, digest_size=(width + 7) // 8, person=b"apbbf-key").digest()
        assert key == int.from_bytes(digest, "little") % (1 << width), (width, data)
        assert 0 <= key < 1 << width
        assert key_from_bytes(data, width) == key
        assert key_from_bytes(bytearray(data), width) == key == key_from_bytes(memoryview(data), width)
    keys = {key_from_bytes(i.to_bytes(2, "little"), width) for i in range(300)}
    if width >= 32:
        assert len(keys) == 300, width


def test_key_from_bytes_default_width():
    assert key_from_bytes(b"abc") == key_from_bytes(b"abc", 64)
    assert key_from_bytes(b"abc") != key_from_bytes(b"abd")


@pytest.mark.parametrize("data", ["text", 12, None, [1, 2]])
def test_key_from_bytes_wrong_type(data):
    with pytest.raises(TypeError):
        key_from_bytes(data)


@pytest.mark.parametrize("width", [-1, 0, 7, 513, 4096])
def test_key_from_bytes_wrong_width(width):
    with pytest.raises(ValueError, match="key_width"):
        key_from_bytes(b"x", width)


# check_key / as_array -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [8, 64, 128])
def test_check_key(width):
    spec = HashSpec(Config(k=1, l=1, key_width=width))
    assert spec.check_key(0) == 0 and spec.check_key((1 << width) - 1) == (1 << width) - 1
    assert spec.check_key(np.uint64(5)) == 5
    for bad in (-1, 1 << width):
        with pytest.raises(ValueError):
            spec.check_key(bad)
    for bad in (1.0, "1", None, True):
        with pytest.raises(TypeError):
            spec.check_key(bad)
    if width < 64:
        with pytest.raises(ValueError):
            spec.as_array(np.array([1 << width], dtype=np.uint64))
