"""The three conventions of the specification that a re-implementation has to match (``apbbf.model.filters``,
"Three conventions a re-implementation must match"), each checked on the golden model as the documentation
states it:

1. after reset ``base = 0``; after s shifts logical segment i is at physical ``(i - s) mod (k + l + 1)``, and
   physical position j is hashed with H3 stream ``j + 1`` (behind the mixer): the first key goes to physical
   ``k + l, 0, ..., k - 2`` with streams ``k + l + 1, 1, ..., k - 1``;
2. the first insert (n = 0) is itself a shift: ``shifts == ceil(n / g)``;
3. TEST_AND_INSERT answers from the filter before the shift its insert triggers.

The key's bits are computed here from the hashing module's documentation alone (splitmix64 streams, the
fold, the mixer, H3 parities, fields), not with :class:`~apbbf.model.hashing.HashSpec`. The exported core is
checked for the same facts by the cocotb test ``first_insert_shifts`` (``shifts`` reads 1 after the first
insert; the first key's bits in physical segments k+l, 0..k-2) and ``shift_on_test_and_insert``.
"""

import copy
import functools

import numpy as np
import pytest

from apbbf.model import APBBF, Config, Op

CONFIGS = {
    "k2l3": Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=8),                # g = 42
    "k3l8": Config(3, 8, block_bits=32, block_hashes=4, segment_blocks=4),                # g = 6
    "b1": Config(2, 2, block_bits=64, block_hashes=1, segment_blocks=4),                  # the basic APBF, g = 88
    "key100": Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=4, key_width=100, seed=7),  # folded
    "k1l1-g1": Config(1, 1, block_bits=2, block_hashes=1, segment_blocks=1),              # g = 1
    "k4l2": Config(4, 2, block_bits=4, block_hashes=1, segment_blocks=8, seed=3),         # g = 4
}
#: Configs whose false-positive rate is low enough that a key of age l is lost by the next shift.
LOW_FP = ("k2l3", "k3l8", "b1", "key100")
SEED = 20261121

M64 = (1 << 64) - 1


# The hash, transcribed from the documentation of apbbf.model.hashing ---------------------------------------

def _splitmix64(state):
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


@functools.lru_cache(maxsize=None)
def _masks(seed, stream, count, width):
    """Stream s starts from (seed + s * 0xD1B54A32D192ED03) mod 2**64; a mask takes ceil(width/64) outputs,
    the first least significant, truncated to width bits; an all-zero mask is discarded."""
    words = _splitmix64((seed + stream * 0xD1B54A32D192ED03) & M64)
    masks = []
    while len(masks) < count:
        mask = 0
        for i in range((width + 63) // 64):
            mask |= next(words) << (64 * i)
        mask &= (1 << width) - 1
        if mask:
            masks.append(mask)
    return tuple(masks)


def _parity(value):
    return bin(value).count("1") & 1


_PRESENT_SBOX = [int(c, 16) for c in "C56B90AD3EF84712"]


def _mix(config: Config, x: int) -> int:
    """The mixer: W = 32 bits for keys of up to 32 bits, else 64; round keys K[0..R] from stream -1 truncated
    to W bits; R rounds of (XOR K[r], PRESENT S-box on every nibble, bit i -> i*W/4 mod (W-1), the top bit
    fixed); then XOR K[R]."""
    from apbbf.model.hashing import MIX_ROUNDS
    width = 32 if config.key_width <= 32 else 64
    words = _splitmix64((config.seed - 0xD1B54A32D192ED03) & M64)
    keys = [next(words) & ((1 << width) - 1) for _ in range(MIX_ROUNDS + 1)]
    for r in range(MIX_ROUNDS):
        x ^= keys[r]
        x = sum(_PRESENT_SBOX[x >> (4 * i) & 15] << (4 * i) for i in range(width // 4))
        x = sum((x >> i & 1) << (width - 1 if i == width - 1 else i * (width // 4) % (width - 1))
                for i in range(width))
    return x ^ keys[MIX_ROUNDS]


def locate(config: Config, stream: int, key: int) -> tuple[int, int]:
    """(block index, B-bit mask) of ``key`` hashed with H3 stream ``stream`` (>= 1), behind the fold and the
    mixer."""
    c = config
    if c.key_width > 64:                                        # the fold: stream 0, 64 masks of key_width bits
        key = sum(_parity(key & mask) << r for r, mask in enumerate(_masks(c.seed, 0, 64, c.key_width)))
    key = _mix(c, key)                                          # the keyed mixer, on W bits
    width = 32 if c.key_width <= 32 else 64
    value = sum(_parity(key & mask) << r
                for r, mask in enumerate(_masks(c.seed, stream, c.hash_bits, width)))
    block = value % c.segment_blocks
    value //= c.segment_blocks
    part = c.block_bits // c.block_hashes
    mask = 0
    for p in range(c.block_hashes):                             # b offsets, one bit in each part of B/b
        mask |= 1 << (p * part + value % part)
        value //= part
    return block, mask


def keys_for(config: Config, count: int, salt: int = 0) -> list[int]:
    rng = np.random.default_rng(SEED + salt)
    words = (config.key_width + 63) // 64
    raw = rng.integers(0, 1 << 64, size=(count, words), dtype=np.uint64)
    keys = [sum(int(w) << (64 * i) for i, w in enumerate(row)) & ((1 << config.key_width) - 1) for row in raw]
    assert len(set(keys)) == count
    return keys


def blocks(model: APBBF, position: int) -> list[int]:
    return [model.block(position, index) for index in range(model.config.segment_blocks)]


# 1. Which physical segment is logical segment 0 --------------------------------------------------------------

@pytest.mark.parametrize("name", list(CONFIGS))
def test_reset_state(name):
    """After reset base = 0 (logical i is physical i), nothing has shifted and every position is clear."""
    c = CONFIGS[name]
    model = APBBF(c)
    assert (model.n, model.base, model.shifts, model.positions) == (0, 0, 0, c.k + c.l + 1)
    assert [model.pos(i) for i in range(c.k + c.l + 1)] == list(range(c.k + c.l + 1))
    assert not any(any(blocks(model, j)) for j in range(model.positions))


@pytest.mark.parametrize("op", [Op.INSERT, Op.TEST_AND_INSERT], ids=["INSERT", "TEST_AND_INSERT"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_first_key_goes_to_physical_k_plus_l_then_0_to_k_minus_2(name, op):
    """The first inserting command sets the key's bits in physical positions k+l, 0, ..., k-2 (logical
    0..k-1, base = k+l), hashed with streams k+l+1, 1, ..., k-1, and nowhere else."""
    c = CONFIGS[name]
    k, P = c.k, c.physical_segments
    key = keys_for(c, 1)[0]
    model = APBBF(c)
    assert not model.query(key)
    if op == Op.TEST_AND_INSERT:
        assert not model.test_and_insert(key)
    else:
        model.insert(key)
    positions = [c.k + c.l] + list(range(k - 1))
    streams = [c.k + c.l + 1] + list(range(1, k))
    assert model.base == P - 1 == c.k + c.l
    assert [model.pos(i) for i in range(k)] == positions
    assert [j + 1 for j in positions] == streams
    for j in range(P):
        want = [0] * c.segment_blocks
        if j in positions:
            block, mask = locate(c, streams[positions.index(j)], key)
            want[block] = mask
        assert blocks(model, j) == want, f"{name}: physical segment {j} after the first insert"
    assert model.query(key)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_logical_to_physical_after_s_shifts(name):
    """After s shifts logical i is physical (i - s) mod P, hashed with stream ((i - s) mod P) + 1: every
    insert sets its key's bits there for i < k; the spare, physical (k + l - s) mod P, stays clear."""
    c = CONFIGS[name]
    k, l, P, g = c.k, c.l, c.physical_segments, c.generation
    model = APBBF(c)
    for n, key in enumerate(keys_for(c, (2 * P + 1) * g, salt=1), start=1):
        model.insert(key)
        s = model.shifts
        assert model.base == (-s) % P, f"{name}: n={n}"
        for i in range(k):
            j = (i - s) % P
            assert model.pos(i) == j
            block, mask = locate(c, j + 1, key)
            assert model.block(j, block) & mask == mask, f"{name}: n={n}: key not in logical {i} = physical {j}"
        assert not any(blocks(model, (k + l - s) % P)), f"{name}: n={n}: spare not clear"


# 2. The first insert is a shift -----------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["per-key", "batch"])
@pytest.mark.parametrize("op", [Op.INSERT, Op.TEST_AND_INSERT], ids=["INSERT", "TEST_AND_INSERT"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_first_insert_is_a_shift(name, op, path):
    """shifts reads 1 after the first insert, still 1 after g inserts, 2 after g + 1: ceil(n / g); queries
    never shift."""
    c = CONFIGS[name]
    g, P = c.generation, c.physical_segments
    keys = keys_for(c, 3 * g + 2, salt=2)
    model = APBBF(c)
    model.query(keys[0])
    assert (model.n, model.shifts, model.base) == (0, 0, 0)
    for n, key in enumerate(keys, start=1):
        if path == "per-key":
            (model.test_and_insert if op == Op.TEST_AND_INSERT else model.insert)(key)
            model.query(key)
        else:
            model.run([op, Op.QUERY], [key, key])
        want = -(-n // g)
        assert (model.n, model.shifts, model.base) == (n, want, (-want) % P), f"{name}: n={n}"
        if n == 1:
            assert model.shifts == 1
        if n == g:
            assert model.shifts == 1
        if n == g + 1:
            assert model.shifts == 2


# 3. TEST_AND_INSERT tests before the shift its insert triggers ----------------------------------------------

@pytest.mark.parametrize("path", ["per-key", "batch"])
@pytest.mark.parametrize("name", LOW_FP)
def test_test_and_insert_answers_from_the_pre_shift_filter(name, path):
    """With n = (k+l)·g the next insert shifts. A key of generation k is in logical l..l+k-1: found. After the
    shift it would be in l+1..l+k, with l+k retired: lost (bar false positives). A TEST_AND_INSERT of it
    answers hit (the filter before the shift), then shifts and inserts."""
    c = CONFIGS[name]
    k, l, g = c.k, c.l, c.generation
    keys = keys_for(c, (k + l) * g + 1, salt=3)
    fresh = keys.pop()
    model = APBBF(c)
    model.insert_many(keys)
    assert model.n % g == 0 and model.shifts == k + l
    edge = keys[(k - 1) * g:k * g]
    assert all(model.query(key) for key in edge), f"{name}: a key of age l is missing before the shift"
    shifted = copy.deepcopy(model)
    shifted.insert(fresh)                                       # an INSERT triggers the shift first
    assert shifted.shifts == k + l + 1
    lost = [key for key in edge if not shifted.query(key)]
    assert len(lost) >= len(edge) // 2, f"{name}: the shift should lose most of generation k"
    for key in lost[:4]:
        probe = copy.deepcopy(model)
        if path == "per-key":
            hit = probe.test_and_insert(key)
        else:
            hit = bool(probe.run([Op.TEST_AND_INSERT], [key])[0][0])
        assert hit, f"{name}: TEST_AND_INSERT at the boundary did not answer from the pre-shift filter"
        assert (probe.n, probe.shifts) == (model.n + 1, k + l + 1), "the TEST_AND_INSERT did not shift"
        assert probe.query(key), "the TEST_AND_INSERT did not insert"
