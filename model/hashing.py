"""The hash specification: written once here, used by the golden model and, bit for bit, by the gateware.

Why H3
------
Each physical segment j (paper 000 §5.1: the hash belongs to the buffer position, not to the age) needs its own
hash of the key giving a block index and b bit offsets. On an FPGA the cheapest good family is H3 (Carter and
Wegman): every output bit is the parity of the key ANDed with a constant mask, i.e. an XOR tree of the key bits
the mask selects. It is universal, needs no multipliers, and pipelines to any depth in LUTs.

Definition
----------
``splitmix64`` (Steele, Lea, Flood 2014) is the mask generator. Stream ``s`` starts from state
``(seed + s * 0xD1B54A32D192ED03) mod 2**64``; a mask of width w takes ceil(w/64) consecutive outputs, the first
as the least significant word, truncated to w bits; an all-zero mask is discarded and the next one is drawn.

1. **Fold** (only when ``key_width > 64``): stream 0 gives 64 masks of ``key_width`` bits; bit r of the 64-bit
   folded key is ``parity(key & fold_mask[r])``. For ``key_width <= 64`` the folded key is the key itself.
2. **Segment hash**: stream ``j + 1`` gives ``hash_bits`` masks of ``min(key_width, 64)`` bits for physical
   segment j, ``0 <= j < k + l + 1`` (:attr:`Config.physical_segments`); bit r of the segment hash is ``parity(folded & segment_mask[j][r])``.
   j is the buffer position, not the segment's age: logical segment i is at physical ``(i - s) mod (k + l + 1)``
   after s shifts, and the first insert is a shift, so the first key is written to physical ``k + l`` (stream
   ``k + l + 1``) as logical segment 0, then physical 0..k-2 (streams 1..k-1) as logical 1..k-1 (see
   :mod:`apbbf.model.filters`, "Three conventions a re-implementation must match").
3. **Fields** of the segment hash, least significant first: the block index (``log2(segment_blocks)`` bits),
   then b offsets of ``log2(B/b)`` bits each. Offset p selects bit ``p * (B/b) + offset_p`` of the B-bit block
   word (bit 0 is the least significant): one bit in each of the b parts.

The composition is still H3 (linear over GF(2)): the fold only shares one XOR stage between all segments, so a
wide key does not cost a wide XOR tree per segment. Keys made from byte strings go through
:func:`key_from_bytes`, which hashes them (BLAKE2b) so structured inputs do not meet the linear hash directly.
"""

from __future__ import annotations

import hashlib
from functools import cached_property

import numpy as np

from .config import Config, check_config, check_key_width

__all__ = ["HashSpec", "key_from_bytes", "splitmix64", "slice_salt", "slice_index", "slice_index_many"]

_M64 = (1 << 64) - 1
_STREAM_STRIDE = 0xD1B54A32D192ED03
FOLD_WIDTH = 64


def splitmix64(state: int):
    """Yield the splitmix64 sequence from ``state`` (an unbounded generator of 64-bit integers)."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        yield z ^ (z >> 31)


def _masks(seed: int, stream: int, count: int, width: int) -> tuple[int, ...]:
    words = splitmix64((seed + stream * _STREAM_STRIDE) & _M64)
    per_mask = (width + 63) // 64
    masks = []
    while len(masks) < count:
        mask = 0
        for i in range(per_mask):
            mask |= next(words) << (64 * i)
        mask &= (1 << width) - 1
        if mask:
            masks.append(mask)
    return tuple(masks)


def key_from_bytes(data: bytes, key_width: int = 64) -> int:
    """Turn a byte string (a packet, a flow 5-tuple, a name) into a ``key_width``-bit key.

    The bytes are hashed with BLAKE2b (digest of ``ceil(key_width/8)`` bytes, personalisation ``b"apbbf-key"``),
    read little-endian and truncated to ``key_width`` bits. Equal byte strings give equal keys; different ones
    collide with probability ``2**-key_width``. Hashing first means structured inputs (counters, addresses) do
    not meet the linear H3 hash directly.

    Raises
    ------
    TypeError
        If ``data`` is not bytes-like.
    ValueError
        If ``key_width`` is not 8..512.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, not {type(data).__name__}")
    check_key_width(key_width)
    digest = hashlib.blake2b(bytes(data), digest_size=(key_width + 7) // 8, person=b"apbbf-key").digest()
    return int.from_bytes(digest, "little") & ((1 << key_width) - 1)


def _parity(value: int) -> int:
    return value.bit_count() & 1


class HashSpec:
    """The per-segment hashes of one :class:`Config` (see the module documentation for the definition).

    Attributes
    ----------
    fold_masks : tuple of int
        The 64 masks of the fold stage (empty when ``key_width <= 64``).
    segment_masks : tuple of tuple of int
        ``segment_masks[j][r]``: mask of output bit r of physical segment j.
    """

    def __init__(self, config: Config):
        self._config = check_config(config)
        width = config.key_width
        self.fold_masks = _masks(config.seed, 0, FOLD_WIDTH, width) if width > FOLD_WIDTH else ()
        folded = min(width, FOLD_WIDTH)
        self.segment_masks = tuple(_masks(config.seed, j + 1, config.hash_bits, folded)
                                   for j in range(config.physical_segments))

    @property
    def config(self) -> Config:
        return self._config

    # Per-key path ----------------------------------------------------------------------------------------

    def check_key(self, key) -> int:
        width = self._config.key_width
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
            raise TypeError(f"key must be an integer, not {key!r}")
        key = int(key)
        if not 0 <= key < 1 << width:
            raise ValueError(f"key must be from 0 to 2**{width}-1, not {key}")
        return key

    def fold(self, key: int) -> int:
        """The key as the segment hashes see it (itself, or its 64-bit fold when wider than 64 bits)."""
        if not self.fold_masks:
            return key
        return sum(_parity(key & mask) << r for r, mask in enumerate(self.fold_masks))

    def segment_hash(self, segment: int, key: int) -> int:
        """The ``hash_bits``-bit hash of ``key`` for physical segment ``segment``."""
        folded = self.fold(key)
        return sum(_parity(folded & mask) << r for r, mask in enumerate(self.segment_masks[segment]))

    def split(self, value: int) -> tuple[int, int]:
        """Split a segment hash into (block index, B-bit mask of the b bits it sets)."""
        c = self._config
        block = value & (c.segment_blocks - 1)
        value >>= c.block_index_bits
        bits = 0
        for part in range(c.block_hashes):
            bits |= 1 << (part * c.part_bits + (value & (c.part_bits - 1)))
            value >>= c.offset_bits
        return block, bits

    def locate(self, segment: int, key: int) -> tuple[int, int]:
        """(block index, B-bit block mask) of ``key`` in physical segment ``segment``."""
        return self.split(self.segment_hash(segment, key))

    # Batch path (numpy) ----------------------------------------------------------------------------------

    @cached_property
    def _np_segment_masks(self) -> np.ndarray:
        return np.array(self.segment_masks, dtype=np.uint64)            # (segments, hash_bits)

    @cached_property
    def _np_fold_masks(self) -> np.ndarray:
        words = (self._config.key_width + 63) // 64
        return np.array([[(mask >> (64 * w)) & _M64 for w in range(words)] for mask in self.fold_masks],
                        dtype=np.uint64)                                  # (64, words)

    def as_array(self, keys) -> np.ndarray:
        """Keys as a numpy array: ``uint64`` of shape (n,) for ``key_width <= 64``, else (n, words)."""
        width = self._config.key_width
        if isinstance(keys, np.ndarray) and keys.dtype == np.uint64:
            array = keys
        else:
            keys = [self.check_key(key) for key in keys]
            words = (width + 63) // 64
            if words == 1:
                array = np.array(keys, dtype=np.uint64)
            else:
                array = np.array([[(key >> (64 * w)) & _M64 for w in range(words)] for key in keys],
                                 dtype=np.uint64).reshape(len(keys), words)
        if width < 64 and array.ndim == 1 and np.any(array >> np.uint64(width)):
            raise ValueError(f"keys must be from 0 to 2**{width}-1")
        return array

    def fold_many(self, keys: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`fold` of an :meth:`as_array` result, as ``uint64`` of shape (n,)."""
        if not self.fold_masks:
            return keys
        ones = np.zeros(len(keys), dtype=np.uint64)
        for r, mask in enumerate(self._np_fold_masks):
            parity = np.bitwise_count(keys & mask[None, :]).sum(axis=1) & 1
            ones |= parity.astype(np.uint64) << np.uint64(r)
        return ones

    def segment_hash_many(self, segment: int, folded: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`segment_hash` of folded keys, as ``uint64`` of shape (n,)."""
        masks = self._np_segment_masks[segment]
        bits = (np.bitwise_count(folded[:, None] & masks[None, :]) & 1).astype(np.uint64)
        return (bits << np.arange(len(masks), dtype=np.uint64)[None, :]).sum(axis=1, dtype=np.uint64)

    def split_many(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`split`: block indices (n,) and bit positions (n, b) within the block."""
        c = self._config
        blocks = (values & np.uint64(c.segment_blocks - 1)).astype(np.int64)
        parts = np.arange(c.block_hashes, dtype=np.uint64)
        shifts = np.uint64(c.block_index_bits) + parts * np.uint64(c.offset_bits)
        offsets = (values[:, None] >> shifts[None, :]) & np.uint64(c.part_bits - 1)
        positions = (parts * np.uint64(c.part_bits))[None, :] + offsets
        return blocks, positions.astype(np.int64)


# Basic APBF slices (paper 000 §5) ------------------------------------------------------------------------------
# The basic filter (and the time-limited one of paper 001) takes slices of any size m, not a power of two, so
# they use a 64-bit mixing hash per slice reduced modulo m instead of H3. The hardware never implements these:
# with block_hashes = 1 the blocked filter, and its H3 hash, is the basic filter the hardware builds.

def _fmix64(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def slice_salt(seed: int, slice_id: int) -> int:
    """The 64-bit salt of basic slice ``slice_id``: first output of splitmix64 stream ``slice_id + 1``."""
    return next(splitmix64((seed + (slice_id + 1) * _STREAM_STRIDE) & _M64))


def slice_index_many(keys, salt: int, m: int) -> np.ndarray:
    """Bit index in a slice of ``m`` bits for each 64-bit key: ``fmix64(key ^ salt) mod m``."""
    keys = np.asarray(keys, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return (_fmix64(keys ^ np.uint64(salt)) % np.uint64(m)).astype(np.int64)


def slice_index(key: int, salt: int, m: int) -> int:
    """Per-key :func:`slice_index_many`."""
    if not 0 <= key < 1 << 64:
        raise ValueError(f"basic-filter keys must be from 0 to 2**64-1, not {key}")
    return int(slice_index_many(np.array([key], dtype=np.uint64), salt, m)[0])
