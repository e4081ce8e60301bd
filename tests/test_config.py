"""Config: validation of every field, derived shape and capacity (paper 000 §5.2, §6), immutability."""

import dataclasses
import math

import pytest

from apbbf.model import Config


def _raises(exc, field, **fields):
    """Config(**fields) raises ``exc`` whose message names ``field``."""
    kwargs = dict(k=2, l=3)
    kwargs.update(fields)
    with pytest.raises(exc) as info:
        Config(**kwargs)
    assert field in str(info.value), f"{exc.__name__} for {fields} does not name {field!r}: {info.value}"


# One test per invalid field ---------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [0, -1, -100])
def test_init_wrong_k(k):
    _raises(ValueError, "k", k=k)


@pytest.mark.parametrize("l", [0, -1, -7])
def test_init_wrong_l(l):
    _raises(ValueError, "l", l=l)


@pytest.mark.parametrize("block_bits", [0, -64, 3, 48, 100, 1 << 17, 65537])
def test_init_wrong_block_bits(block_bits):
    _raises(ValueError, "block_bits", block_bits=block_bits, block_hashes=1)


@pytest.mark.parametrize("block_bits, block_hashes", [(64, 0), (64, -4), (64, 3), (64, 6), (64, 128), (8, 16),
                                                      (1, 2)])
def test_init_wrong_block_hashes(block_bits, block_hashes):
    _raises(ValueError, "block_hashes", block_bits=block_bits, block_hashes=block_hashes)


@pytest.mark.parametrize("segment_blocks", [0, -512, 3, 500, (1 << 24) + 1, 1 << 25])
def test_init_wrong_segment_blocks(segment_blocks):
    _raises(ValueError, "segment_blocks", segment_blocks=segment_blocks)


@pytest.mark.parametrize("key_width", [-8, 0, 7, 513, 1024])
def test_init_wrong_key_width(key_width):
    _raises(ValueError, "key_width", key_width=key_width)


@pytest.mark.parametrize("seed", [-1, 1 << 64, (1 << 64) + 5])
def test_init_wrong_seed(seed):
    _raises(ValueError, "seed", seed=seed)


@pytest.mark.parametrize("field", ["k", "l", "block_bits", "block_hashes", "segment_blocks", "key_width", "seed"])
@pytest.mark.parametrize("value", [2.0, "4", None, True, False])
def test_init_wrong_type(field, value):
    _raises(TypeError, field, **{field: value})


@pytest.mark.parametrize("block_bits, block_hashes, segment_blocks, hash_bits", [
    (65536, 16, 1, 16 * 12),          # 16 offsets of 12 bits
    (512, 8, 1 << 24, 24 + 8 * 6),    # 72 bits
    (256, 16, 1 << 4, 4 + 16 * 4),    # 68 bits
])
def test_init_wrong_hash_bits(block_bits, block_hashes, segment_blocks, hash_bits):
    assert math.log2(segment_blocks) + block_hashes * math.log2(block_bits // block_hashes) == hash_bits > 64
    with pytest.raises(ValueError) as info:
        Config(k=1, l=1, block_bits=block_bits, block_hashes=block_hashes, segment_blocks=segment_blocks)
    assert "hash bits" in str(info.value) and str(hash_bits) in str(info.value), info.value


def test_hash_bits_boundary_64_accepted():
    # One block (0 index bits) and 16 offsets of log2(256/16) = 4 bits: exactly 64.
    c = Config(k=1, l=1, block_bits=256, block_hashes=16, segment_blocks=1)
    assert c.hash_bits == 64


@pytest.mark.parametrize("kwargs", [
    dict(k=1, l=1, block_bits=64, block_hashes=64, segment_blocks=1024),   # b = B: λ_full = 0
    dict(k=5, l=1, block_bits=2, block_hashes=1, segment_blocks=4),        # ⌊4 · 1 / 5⌋ = 0
    dict(k=100, l=1, block_bits=64, block_hashes=4, segment_blocks=8),     # ⌊8 · 10.74 / 100⌋ = 0
])
def test_init_wrong_generation(kwargs):
    with pytest.raises(ValueError) as info:
        Config(**kwargs)
    assert "generation" in str(info.value), info.value


def test_generation_boundary_one_accepted():
    # λ_full = 1 exactly for b/B = 1/2, so ⌊4 · 1 / 4⌋ = 1 (a float error would make it 0 and raise).
    c = Config(k=4, l=1, block_bits=2, block_hashes=1, segment_blocks=4)
    assert c.block_capacity == 1.0 and c.generation == 1


# Derived shape against hand-computed values --------------------------------------------------------------------

HAND = [
    # λ_full = ln 2 / ln(16/15) = 0.693147 / 0.0645385 = 10.74005; g = ⌊512 · 10.74005 / 2⌋ = ⌊2749.45⌋ = 2749.
    dict(cfg=dict(k=2, l=3), lam=10.74005, g=2749, part_bits=16, block_index_bits=9, offset_bits=4,
         hash_bits=9 + 4 * 4, segments=5, physical=6, segment_bits=32768, memory=163840, hw_memory=196608),
    # λ_full = ln 2 / ln(64/63) = 0.693147 / 0.0157484 = 44.01394; g = ⌊1024 · 44.01394 / 3⌋ = ⌊15023.4⌋ = 15023.
    dict(cfg=dict(k=3, l=8, block_bits=512, block_hashes=8, segment_blocks=1024), lam=44.01394, g=15023,
         part_bits=64, block_index_bits=10, offset_bits=6, hash_bits=10 + 8 * 6, segments=11, physical=12,
         segment_bits=524288, memory=11 * 524288, hw_memory=12 * 524288),
    # b = 1, B = 64: λ_full = ln 2 / ln(64/63) as above; g = ⌊4 · 44.01394 / 2⌋ = 88 (the basic APBF, m = 256).
    dict(cfg=dict(k=2, l=2, block_bits=64, block_hashes=1, segment_blocks=4), lam=44.01394, g=88,
         part_bits=64, block_index_bits=2, offset_bits=6, hash_bits=8, segments=4, physical=5,
         segment_bits=256, memory=1024, hw_memory=1280),
    # b/B = 1/2: λ_full = 1; g = ⌊1 · 1 / 1⌋ = 1.
    dict(cfg=dict(k=1, l=1, block_bits=2, block_hashes=1, segment_blocks=1), lam=1.0, g=1,
         part_bits=2, block_index_bits=0, offset_bits=1, hash_bits=1, segments=2, physical=3,
         segment_bits=2, memory=4, hw_memory=6),
]


@pytest.mark.parametrize("case", HAND, ids=lambda case: ",".join(f"{k}={v}" for k, v in case["cfg"].items()))
def test_derived_hand_computed(case):
    c = Config(**case["cfg"])
    k, l = case["cfg"]["k"], case["cfg"]["l"]
    assert c.block_capacity == pytest.approx(case["lam"], abs=1e-5), (case, c.block_capacity)
    # λ_full is defined as −ln 2 / ln(1 − b/B): check against a second formula, not only the literal.
    assert c.block_capacity == pytest.approx(math.log(2) / math.log(c.block_bits / (c.block_bits - c.block_hashes)),
                                             rel=1e-12)
    assert c.generation == case["g"], (case, c.generation)
    assert c.window == l * case["g"]
    assert c.slack == k * case["g"]
    assert c.segments == case["segments"] == k + l
    assert c.physical_segments == case["physical"] == k + l + 1
    assert c.part_bits == case["part_bits"]
    assert c.block_index_bits == case["block_index_bits"]
    assert c.offset_bits == case["offset_bits"]
    assert c.hash_bits == case["hash_bits"]
    assert c.segment_bits == case["segment_bits"]
    assert c.memory_bits == case["memory"]
    assert c.hardware_memory_bits == case["hw_memory"]
    assert c.bits_per_element == pytest.approx(case["memory"] / (l * case["g"]), rel=1e-12)


def test_defaults():
    c = Config(k=2, l=3)
    assert (c.block_bits, c.block_hashes, c.segment_blocks, c.key_width, c.seed) == (64, 4, 512, 64, 0)


@pytest.mark.parametrize("B, b", [(2, 1), (64, 1), (64, 4), (64, 32), (512, 8), (65536, 4)])
@pytest.mark.parametrize("segment_blocks", [1, 16, 1 << 20])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_generation_matches_definition(B, b, segment_blocks, k):
    """g = ⌊segment_blocks · λ_full / k⌋ with λ_full = −ln 2 / ln(1 − b/B), and the block is half full at λ_full."""
    hash_bits = int(math.log2(segment_blocks)) + b * int(math.log2(B // b))
    if hash_bits > 64:
        with pytest.raises(ValueError, match="hash bits"):
            Config(k=k, l=2, block_bits=B, block_hashes=b, segment_blocks=segment_blocks)
        return
    lam = -math.log(2) / math.log(1 - b / B)
    if math.floor(segment_blocks * lam / k + 1e-9) < 1:
        with pytest.raises(ValueError, match="generation"):
            Config(k=k, l=2, block_bits=B, block_hashes=b, segment_blocks=segment_blocks)
        return
    c = Config(k=k, l=2, block_bits=B, block_hashes=b, segment_blocks=segment_blocks)
    assert c.generation == math.floor(segment_blocks * lam / k + 1e-9), (B, b, segment_blocks, k)
    # Fill of one part after λ_full elements is 1/2.
    assert 1 - (1 - b / B) ** c.block_capacity == pytest.approx(0.5, rel=1e-12)


def test_frozen():
    c = Config(k=2, l=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.k = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.seed = 1
    assert c == Config(k=2, l=3) and hash(c) == hash(Config(k=2, l=3))
    assert c != Config(k=2, l=3, seed=1)
    assert dataclasses.replace(c, k=3).generation == math.floor(512 * c.block_capacity / 3)


# The row layout --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("row_bits", [-1, 3, 100, 1000, (1 << 24) + 1, 1 << 25])
def test_init_wrong_row_bits(row_bits):
    _raises(ValueError, "row_bits", row_bits=row_bits)


@pytest.mark.parametrize("burst_bits, row_bits", [(4, 4096), (24, 4096), (8192, 4096), (-8, 4096), (64, 0)])
def test_init_wrong_burst_bits(burst_bits, row_bits):
    _raises(ValueError, "burst_bits", burst_bits=burst_bits, row_bits=row_bits)


def test_row_too_small_names_both_sizes():
    # k + l + 1 = 6 physical segments of 64-bit blocks: 384 bits, more than a 256-bit row.
    with pytest.raises(ValueError) as info:
        Config(2, 3, row_bits=256)
    message = str(info.value)
    assert "row_bits=256" in message and "384" in message and "6 physical segments" in message, message
    Config(2, 3, row_bits=512)                     # the smallest power of two that holds them


ROWS = [
    # P = 6, B = 64: 4096 // 384 = 10 → 8 blocks of each segment per row; 512 / 8 = 64 rows.
    dict(cfg=dict(k=2, l=3, row_bits=4096), row_blocks=8, rows=64, row_index_bits=6, segment_index_bits=3,
         hash_bits=3 + 4 * 4, stride=64, memory_blocks=64 * 64),
    # P = 3 + 8 + 1 + 8 = 20, B = 64, 8192-bit rows (the 5A-75B's 256 columns x 32 bits): 8192 // 1280 = 6 → 4.
    dict(cfg=dict(k=3, l=8, segment_blocks=4096, span=1000, extra_segments=8, row_bits=8192), row_blocks=4,
         rows=1024, row_index_bits=10, segment_index_bits=2, hash_bits=2 + 4 * 4, stride=128,
         memory_blocks=1024 * 128),
    # A row larger than a segment: one row, every block of every segment in it.
    dict(cfg=dict(k=1, l=1, segment_blocks=4, row_bits=1 << 16), row_blocks=4, rows=1, row_index_bits=0,
         segment_index_bits=2, hash_bits=2 + 4 * 4, stride=1024, memory_blocks=1024),
]


@pytest.mark.parametrize("case", ROWS, ids=lambda case: ",".join(f"{k}={v}" for k, v in case["cfg"].items()))
def test_row_layout_hand_computed(case):
    c = Config(**case["cfg"])
    assert c.row_layout
    assert (c.row_blocks, c.rows, c.row_index_bits, c.segment_index_bits) == (
        case["row_blocks"], case["rows"], case["row_index_bits"], case["segment_index_bits"])
    assert c.row_index_bits + c.segment_index_bits == c.block_index_bits
    assert c.hash_bits == case["hash_bits"]
    assert c.row_stride_blocks == case["stride"] and c.memory_blocks == case["memory_blocks"]
    assert c.physical_segments * c.row_blocks * c.block_bits <= c.row_bits


def test_memory_block_places_a_row_per_memory_row():
    c = Config(2, 3, row_bits=4096)                # 8 blocks per segment per row, 64-word stride
    assert c.memory_block(0, 0) == 0
    assert c.memory_block(0, 7) == 7
    assert c.memory_block(1, 0) == 8               # segment 1's blocks follow segment 0's in the row
    assert c.memory_block(5, 7) == 47              # the last segment's last block: 5 * 8 + 7
    assert c.memory_block(0, 8) == 64              # the next row starts a stride later
    assert c.memory_block(3, 8 * 63 + 2) == 63 * 64 + 3 * 8 + 2
    words = {c.memory_block(s, i) for s in range(c.physical_segments) for i in range(c.segment_blocks)}
    assert len(words) == c.physical_segments * c.segment_blocks and max(words) < c.memory_blocks
    with pytest.raises(ValueError, match="index"):
        c.memory_block(0, c.segment_blocks)
    with pytest.raises(ValueError, match="row layout"):
        Config(2, 3).memory_block(0, 0)


def test_bursts_per_block():
    assert Config(2, 3, row_bits=4096).bursts_per_block == 1                     # one block per burst
    assert Config(2, 3, row_bits=4096, burst_bits=32).bursts_per_block == 2
    assert Config(2, 3, row_bits=4096, burst_bits=256).bursts_per_block == 1     # a burst holds the block
    with pytest.raises(ValueError, match="row layout"):
        Config(2, 3).bursts_per_block


def test_on_chip_layout_unchanged():
    c = Config(2, 3)
    assert not c.row_layout and c.rows == 1 and c.row_blocks == c.segment_blocks
    assert c.segment_index_bits == c.block_index_bits and c.row_index_bits == 0
