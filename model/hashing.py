"""The hash specification: written once here, used by the golden model and, bit for bit, by the gateware.

Why a keyed mixer in front of H3
--------------------------------
Each physical segment j (paper 000 §5.1: the hash belongs to the buffer position, not to the age) needs its own
hash of the key giving a block index and b bit offsets. The cheapest good family on an FPGA is H3 (Carter and
Wegman): every output bit is the parity of the key ANDed with a constant mask, an XOR tree of LUTs. H3 is
universal over random masks, but it is linear over GF(2): keys with arithmetic structure (counters, addresses of
one subnet, keys that differ only in a few bits) are hashed with linear dependencies, so a filter fed such keys
strays from its predicted false-positive rate, and anyone who knows the masks can solve for colliding keys.

So the key first goes through a keyed nonlinear bijection, the **mixer**: rounds of a substitution-permutation
network (SPN) whose round function is PRESENT's (Bogdanov et al., CHES 2007; ISO/IEC 29192-2): XOR a round key,
replace every 4-bit nibble by PRESENT's S-box, move the bits by PRESENT's bit permutation. Hua et al. (ANCS 2011)
build hardware hashes from SPN rounds and Sateesan et al. (2022) a Bloom-filter hash from reduced rounds of a
permutation; a PRESENT round suits 4-input LUTs exactly: the round key is a constant of the build (the seed's),
so XOR, S-box and the final key XOR fold into one 4-input function per output bit (one LUT4, one LUT level per
round, no carry chain) and the permutation is wiring. An ARX round (Speck's, on 32-bit words) needs a 32-bit
carry chain instead: eight rounds, two per register stage, placed and routed at 118 MHz on ECP5-85F and 33 MHz
on iCE40UP5K, against 246 and 95 MHz for eight PRESENT rounds in the same harness. The S-box is complete
(every output bit depends on all four input bits), has differential uniformity 4 and linearity 8 (the optimum
for 4 bits), and the permutation sends the four outputs of an S-box to four different S-boxes, so three rounds
already make every output bit depend on every input bit; :data:`MIX_ROUNDS` rounds are used, for the
statistics on structured keys (``scripts/structured_keys.py``) with a margin, and so that linear and
differential biases are small (see ``docs/trust.md``: a reduced-round SPN is not a pseudorandom function).
H3 stays behind the mixer: it gives each physical segment its own hash (its masks) from the one mixed key, at
one XOR tree per output bit.

Definition
----------
``splitmix64`` (Steele, Lea, Flood 2014) is the generator of every constant. Stream ``s`` (an integer, possibly
negative) starts from state ``(seed + s * 0xD1B54A32D192ED03) mod 2**64``. A mask of width w takes ceil(w/64)
consecutive outputs, the first as the least significant word, truncated to w bits; an all-zero mask is
discarded and the next one is drawn.

1. **Fold** (only when ``key_width > 64``): stream 0 gives 64 masks of ``key_width`` bits; bit r of the 64-bit
   folded key is ``parity(key & fold_mask[r])``. For ``key_width <= 64`` the folded key is the key itself.
2. **Mix**: the mixer works on W = 32 bits when ``key_width <= 32`` and on W = 64 bits otherwise; the folded key,
   zero-extended to W bits, is its input x. Stream -1 (state ``(seed - 0xD1B54A32D192ED03) mod 2**64``) gives
   the round keys ``K[0] .. K[R]``: R + 1 consecutive outputs, each truncated to its W least significant bits
   (a zero round key is kept), R = :data:`MIX_ROUNDS` (a run-time seed XORs its tweak into them: "The run-time
   seed" below). For r = 0 .. R-1:

   a. ``x ^= K[r]``;
   b. S-box layer: nibble i of x (bits 4i .. 4i+3, bit 4i least significant) becomes ``SBOX[nibble]``
      (:data:`SBOX`, PRESENT's: ``C 5 6 B 9 0 A D 3 E F 8 4 7 1 2``);
   c. bit permutation: bit i of x moves to bit ``P(i) = i * W/4 mod (W - 1)`` for ``i < W - 1``, and bit W-1
      stays (PRESENT's pLayer for W = 64; the same rule for W = 32).

   The mixed key is ``x ^ K[R]``. Every step is a bijection of W-bit words, so the mixer is one: distinct keys
   of up to 64 bits stay distinct.
3. **Segment hash**: stream ``j + 1`` gives ``hash_bits`` masks of W bits for physical segment j,
   ``0 <= j < k + l + 1`` (:attr:`Config.physical_segments`); bit r of the segment hash is
   ``parity(mixed & segment_mask[j][r])``. j is the buffer position, not the segment's age: logical segment i
   is at physical ``(i - s) mod (k + l + 1)`` after s shifts, and the first insert is a shift, so the first key
   is written to physical ``k + l`` (stream ``k + l + 1``) as logical segment 0, then physical 0..k-2 (streams
   1..k-1) as logical 1..k-1 (see :mod:`apbbf.model.filters`, "Three conventions a re-implementation must
   match").
4. **Fields** of the segment hash, least significant first: the block index (``log2(segment_blocks)`` bits),
   then b offsets of ``log2(B/b)`` bits each. Offset p selects bit ``p * (B/b) + offset_p`` of the B-bit block
   word (bit 0 is the least significant): one bit in each of the b parts.
5. **Row layout** (``Config.row_bits > 0``): the segment's block index field of step 4 is
   ``log2(row_blocks)`` bits (:attr:`Config.segment_index_bits`), the block within the key's row, and stream
   :data:`ROW_STREAM` (-3) gives ``log2(rows)`` masks of W bits (:attr:`Config.row_index_bits`) for the **row
   hash**, shared by every segment: bit r is ``parity(mixed & row_mask[r])``. The block index in physical
   segment j is then ``row * row_blocks + within_j``: every segment's block of a key is in the same row, and
   which block of the row stays each segment's own (:meth:`Config.memory_block` places it in the memory).

Stream -2 gives the lane masks of a lanes filter (:mod:`apbbf.model.lanes`: N filters, a key's lane an H3 hash
of the mixed key, its masks independent of every segment's).

The seed keys all of it: the fold, the round keys and the segment masks. It is a Config field (tests use fixed
seeds); the board builds and ``apbbf export`` draw a fresh one (``secrets.randbits(64)``) unless one is given,
and record it (``docs/trust.md`` says what keeping it secret buys).

**The run-time seed.** A second 64-bit seed, ``run_seed`` (0 unless a build that takes one is re-keyed at run
time: ``CONTROL.REKEY``, :meth:`apbbf.model.dedup.Dedup.rekey`), tweaks the mixer alone: the round keys of step 2
are ``K[r] ^ T[r]`` with :func:`tweak_words`' ``T[r] = rotl64(run_seed, 13 r) mod 2**W`` for r = 0 .. R-1 and
``T[R] = 0`` (the final key XOR is followed by the linear segment hashes, so a tweak there would move every hash of
every key alike and tell no keys apart). The fold and the masks stay the build seed's: the gateware keeps them as
constants (its XOR trees do not grow) and XORs the tweak into each round's input, wiring and one XOR per bit and
round. With ``run_seed = 0`` the hash is the one above, bit for bit.

Why W = 32 for narrow keys: the segment hashes' XOR trees grow with W, and the small devices that take 32-bit
keys (the iCE40UP5K board) have the least logic; a 32-bit key zero-extended to 64 bits would double them for no
gain in what the key can tell apart (the iCEBreaker's default filter: 1,107 LUT4 for the whole hash unit at
W = 32, 2,185 at W = 64).

``HashSpec(config, mixing=False)`` is the H3-only specification this design had before the mixer (steps 1, 3
and 4 on the folded key, masks of ``min(key_width, 64)`` bits): kept to measure what the mixer changes
(``scripts/structured_keys.py``); no gateware builds it. Byte strings go through :func:`key_from_bytes`
(BLAKE2b) on the host.
"""

from __future__ import annotations

import hashlib
from functools import cached_property, lru_cache

import numpy as np

from .config import Config, check_config, check_key_width

__all__ = ["HashSpec", "key_from_bytes", "splitmix64", "SBOX", "MIX_ROUNDS", "mix_width", "mix_permutation",
           "round_keys", "tweak_words", "TWEAK_ROTATION", "slice_salt", "slice_index", "slice_index_many", "ROW_STREAM"]

_M64 = (1 << 64) - 1
_STREAM_STRIDE = 0xD1B54A32D192ED03
FOLD_WIDTH = 64
#: PRESENT's 4-bit S-box (Bogdanov et al., CHES 2007): nibble v becomes ``SBOX[v]``.
SBOX = (0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2)
#: Rounds of the mixer (step 2 of the definition).
MIX_ROUNDS = 8
#: The splitmix64 stream of the round keys.
ROUND_KEY_STREAM = -1
#: The splitmix64 stream of the row hash's masks (the row layout, step 5).
ROW_STREAM = -3
#: The run-time seed's rotation per round (:func:`tweak_words`): odd, so each round sees the seed's bits in other
#: places.
TWEAK_ROTATION = 13


def splitmix64(state: int):
    """Yield the splitmix64 sequence from ``state`` (an unbounded generator of 64-bit integers)."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        yield z ^ (z >> 31)


def _stream(seed: int, stream: int):
    return splitmix64((seed + stream * _STREAM_STRIDE) & _M64)


def _masks(seed: int, stream: int, count: int, width: int) -> tuple[int, ...]:
    words = _stream(seed, stream)
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


def mix_width(key_width: int) -> int:
    """W, the width of the mixer for keys of ``key_width`` bits: 32 up to 32-bit keys, else 64.

    Raises
    ------
    TypeError, ValueError
        If ``key_width`` is not an integer from 8 to 512.
    """
    return 32 if check_key_width(key_width) <= 32 else 64


def mix_permutation(width: int) -> tuple[int, ...]:
    """The bit permutation of a mixer round: bit i moves to ``result[i]`` (``i * width/4 mod (width - 1)``, the
    top bit fixed; PRESENT's pLayer for 64 bits).

    Raises
    ------
    ValueError
        If ``width`` is not 32 or 64.
    """
    if width not in (32, 64):
        raise ValueError(f"width must be 32 or 64, not {width!r}")
    return tuple(i * (width // 4) % (width - 1) for i in range(width - 1)) + (width - 1,)


def round_keys(seed: int, width: int, rounds: int = MIX_ROUNDS) -> tuple[int, ...]:
    """``K[0] .. K[rounds]``: consecutive outputs of stream -1, truncated to ``width`` bits.

    Raises
    ------
    TypeError, ValueError
        If ``seed`` is not 0..2**64-1, ``width`` not 32 or 64, or ``rounds`` not 1..64.
    """
    from .config import SEEDS, check_integer
    check_integer("seed", seed, SEEDS)
    check_integer("rounds", rounds, range(1, 65))
    if width not in (32, 64):
        raise ValueError(f"width must be 32 or 64, not {width!r}")
    words = _stream(seed, ROUND_KEY_STREAM)
    return tuple(next(words) & ((1 << width) - 1) for _ in range(rounds + 1))


def tweak_words(run_seed: int, width: int, rounds: int = MIX_ROUNDS) -> tuple[int, ...]:
    """``T[0] .. T[rounds]``, what the run-time seed XORs into the round keys (module documentation, "The run-time
    seed"): ``T[r]`` is ``run_seed`` rotated left by ``TWEAK_ROTATION * r`` bits (mod 64) as a 64-bit word, its
    ``width`` least significant bits; ``T[rounds]`` is 0.

    Raises
    ------
    TypeError, ValueError
        If ``run_seed`` is not 0..2**64-1, ``width`` not 32 or 64, or ``rounds`` not 1..64.
    """
    from .config import SEEDS, check_integer
    check_integer("run_seed", run_seed, SEEDS)
    check_integer("rounds", rounds, range(1, 65))
    if width not in (32, 64):
        raise ValueError(f"width must be 32 or 64, not {width!r}")
    words = []
    for r in range(rounds):
        turn = TWEAK_ROTATION * r % 64
        words.append(((run_seed << turn | run_seed >> (64 - turn)) & _M64) & ((1 << width) - 1))
    return (*words, 0)


def key_from_bytes(data: bytes, key_width: int = 64) -> int:
    """Turn a byte string (a packet, a flow 5-tuple, a name) into a ``key_width``-bit key.

    The bytes are hashed with BLAKE2b (digest of ``ceil(key_width/8)`` bytes, personalisation ``b"apbbf-key"``),
    read little-endian and truncated to ``key_width`` bits. Equal byte strings give equal keys; different ones
    collide with probability ``2**-key_width``.

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


@lru_cache(maxsize=4)
def _moved_bytes(width: int) -> tuple[tuple[int, ...], ...]:
    """``moved[p][s]``: the bit permutation of the byte ``s`` at byte position ``p`` (the others zero)."""
    permutation = mix_permutation(width)
    moved = []
    for p in range(width // 8):
        row = []
        for s in range(256):
            out = 0
            for i in range(8):
                out |= (s >> i & 1) << permutation[8 * p + i]
            row.append(out)
        moved.append(tuple(row))
    return tuple(moved)


#: The S-box layer on one byte (its two nibbles).
_SBOX_BYTES = tuple(SBOX[v & 15] | SBOX[v >> 4] << 4 for v in range(256))


def _round_tables(keys: tuple[int, ...], width: int) -> list[list[list[int]]]:
    """``tables[r][p][v]``: round r's output for byte v at byte position p of its input (the others zero), the
    final key XOR in the last round's position 0. A round maps x to the XOR over p of ``tables[r][p][byte p
    of x]``: the S-box layer works on nibbles and the permutation moves bits."""
    moved = _moved_bytes(width)
    rounds = len(keys) - 1
    tables = []
    for r in range(rounds):
        per_position = []
        for p in range(width // 8):
            key, row = (keys[r] >> (8 * p)) & 0xFF, moved[p]
            per_position.append([row[_SBOX_BYTES[v ^ key]] for v in range(256)])
        tables.append(per_position)
    last = tables[-1][0] if tables else None
    if last is not None:
        tables[-1][0] = [out ^ keys[rounds] for out in last]
    return tables


class HashSpec:
    """The per-segment hashes of one :class:`Config` (see the module documentation for the definition).

    Parameters
    ----------
    config : Config
    mixing : bool
        True (the default): the specification the gateware builds. False: the H3-only specification (no mixer,
        segment masks of ``min(key_width, 64)`` bits), kept to measure what the mixer changes.
    run_seed : int
        The run-time seed, 0..2**64-1 (module documentation, "The run-time seed"; 0, the default, leaves the hash
        the build seed's alone). Only with ``mixing``.

    Attributes
    ----------
    fold_masks : tuple of int
        The 64 masks of the fold stage (empty when ``key_width <= 64``).
    mix_width : int
        W, the width of the mixer and of the segment masks (``min(key_width, 64)`` without mixing).
    rounds : int
        Rounds of the mixer (:data:`MIX_ROUNDS`; 0 without mixing).
    round_keys : tuple of int
        ``K[0] .. K[rounds]`` (empty without mixing), the run-time seed's tweak XORed in.
    base_round_keys : tuple of int
        The round keys of the build seed alone (the constants of the gateware, which XORs the tweak in).
    run_seed : int
    segment_masks : tuple of tuple of int
        ``segment_masks[j][r]``: mask of output bit r of physical segment j.
    row_masks : tuple of int
        ``row_masks[r]``: mask of bit r of the row hash (step 5; empty in the on-chip layout).

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``mixing`` not a bool.
    ValueError
        If ``run_seed`` is not 0..2**64-1, or not 0 without mixing.
    """

    def __init__(self, config: Config, *, mixing: bool = True, run_seed: int = 0):
        self._config = check_config(config)
        if not isinstance(mixing, bool):
            raise TypeError(f"mixing must be a bool, not {mixing!r}")
        from .config import SEEDS, check_integer
        check_integer("run_seed", run_seed, SEEDS)
        if run_seed and not mixing:
            raise ValueError(f"run_seed must be 0 without mixing (it tweaks the mixer), not {run_seed:#x}")
        self.run_seed = run_seed
        width = config.key_width
        self.mixing = mixing
        self.fold_masks = _masks(config.seed, 0, FOLD_WIDTH, width) if width > FOLD_WIDTH else ()
        if mixing:
            self.mix_width = mix_width(width)
            self.rounds = MIX_ROUNDS
            self.base_round_keys = round_keys(config.seed, self.mix_width, self.rounds)
            tweak = tweak_words(run_seed, self.mix_width, self.rounds)
            self.round_keys = tuple(k ^ t for k, t in zip(self.base_round_keys, tweak))
        else:
            self.mix_width, self.rounds, self.round_keys = min(width, FOLD_WIDTH), 0, ()
            self.base_round_keys = ()
        self.segment_masks = tuple(_masks(config.seed, j + 1, config.hash_bits, self.mix_width)
                                   for j in range(config.physical_segments))
        self.row_masks = _masks(config.seed, ROW_STREAM, config.row_index_bits, self.mix_width)

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

    def linear_fold(self, key: int) -> int:
        """Step 1: the key itself, or its 64-bit fold when it is wider than 64 bits."""
        if not self.fold_masks:
            return key
        return sum(_parity(key & mask) << r for r, mask in enumerate(self.fold_masks))

    @cached_property
    def _tables(self) -> list[list[list[int]]]:
        return _round_tables(self.round_keys, self.mix_width) if self.rounds else []

    def mix(self, value: int) -> int:
        """Step 2: the mixed key of a folded key (the identity without mixing)."""
        for per_position in self._tables:
            out = 0
            for p, table in enumerate(per_position):
                out ^= table[value >> (8 * p) & 0xFF]
            value = out
        return value

    def fold(self, key: int) -> int:
        """The key as the segment hashes see it: folded (step 1) and mixed (step 2)."""
        return self.mix(self.linear_fold(key))

    def segment_hash(self, segment: int, key: int) -> int:
        """The ``hash_bits``-bit hash of ``key`` for physical segment ``segment``."""
        mixed = self.fold(key)
        return sum(_parity(mixed & mask) << r for r, mask in enumerate(self.segment_masks[segment]))

    def row_hash(self, key: int) -> int:
        """The row of ``key`` (step 5; 0 in the on-chip layout)."""
        mixed = self.fold(key)
        return sum(_parity(mixed & mask) << r for r, mask in enumerate(self.row_masks))

    def split(self, value: int, row: int = 0) -> tuple[int, int]:
        """Split a segment hash into (block index, B-bit mask of the b bits it sets); in the row layout the
        block index is ``row * row_blocks`` plus the hash's block field."""
        c = self._config
        block = row * c.row_blocks + (value & (c.row_blocks - 1))
        value >>= c.segment_index_bits
        bits = 0
        for part in range(c.block_hashes):
            bits |= 1 << (part * c.part_bits + (value & (c.part_bits - 1)))
            value >>= c.offset_bits
        return block, bits

    def locate(self, segment: int, key: int) -> tuple[int, int]:
        """(block index, B-bit block mask) of ``key`` in physical segment ``segment``."""
        return self.split(self.segment_hash(segment, key), self.row_hash(key))

    # Batch path (numpy) ----------------------------------------------------------------------------------

    @cached_property
    def _np_segment_masks(self) -> np.ndarray:
        return np.array(self.segment_masks, dtype=np.uint64)            # (segments, hash_bits)

    @cached_property
    def _np_fold_masks(self) -> np.ndarray:
        words = (self._config.key_width + 63) // 64
        return np.array([[(mask >> (64 * w)) & _M64 for w in range(words)] for mask in self.fold_masks],
                        dtype=np.uint64)                                  # (64, words)

    @cached_property
    def _np_tables(self) -> np.ndarray:
        return np.array(self._tables, dtype=np.uint64).reshape(self.rounds, self.mix_width // 8, 256)

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

    def linear_fold_many(self, keys: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`linear_fold` of an :meth:`as_array` result, as ``uint64`` of shape (n,)."""
        if not self.fold_masks:
            return keys
        ones = np.zeros(len(keys), dtype=np.uint64)
        for r, mask in enumerate(self._np_fold_masks):
            parity = np.bitwise_count(keys & mask[None, :]).sum(axis=1) & 1
            ones |= parity.astype(np.uint64) << np.uint64(r)
        return ones

    def mix_many(self, values: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`mix` of folded keys (``uint64``, shape (n,)), as a new ``uint64`` array."""
        if not self.rounds:
            return values
        if len(values) <= 4:                  # a command at a time: numpy's per-call cost dominates
            return np.array([self.mix(int(value)) for value in values], dtype=np.uint64)
        tables = self._np_tables
        x = np.ascontiguousarray(values, dtype="<u8")
        for per_position in tables:
            octets = x.view(np.uint8).reshape(-1, 8)
            x = per_position[0][octets[:, 0]]
            for p in range(1, len(per_position)):
                x ^= per_position[p][octets[:, p]]
        return x

    def fold_many(self, keys: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`fold` of an :meth:`as_array` result, as ``uint64`` of shape (n,): the input of
        :meth:`segment_hash_many`."""
        return self.mix_many(self.linear_fold_many(keys))

    def segment_hash_many(self, segment: int, folded: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`segment_hash` of folded keys (:meth:`fold_many`), as ``uint64`` of shape (n,)."""
        masks = self._np_segment_masks[segment]
        bits = (np.bitwise_count(folded[:, None] & masks[None, :]) & 1).astype(np.uint64)
        return (bits << np.arange(len(masks), dtype=np.uint64)[None, :]).sum(axis=1, dtype=np.uint64)

    @cached_property
    def _np_row_masks(self) -> np.ndarray:
        return np.array(self.row_masks, dtype=np.uint64)                  # (row_index_bits,)

    def row_hash_many(self, folded: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`row_hash` of folded keys (:meth:`fold_many`), as ``int64`` of shape (n,)."""
        masks = self._np_row_masks
        if not len(masks):
            return np.zeros(len(folded), dtype=np.int64)
        bits = (np.bitwise_count(folded[:, None] & masks[None, :]) & 1).astype(np.int64)
        return (bits << np.arange(len(masks), dtype=np.int64)[None, :]).sum(axis=1)

    def locate_many(self, segment: int, folded: np.ndarray, rows: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`locate` of folded keys in physical segment ``segment``: block indices (n,) and bit
        positions (n, b). ``rows``: the keys' :meth:`row_hash_many`, if already computed."""
        if rows is None and self._config.row_layout:
            rows = self.row_hash_many(folded)
        return self.split_many(self.segment_hash_many(segment, folded), rows)

    def split_many(self, values: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised :meth:`split`: block indices (n,) and bit positions (n, b) within the block; ``rows``
        (n,), the keys' rows in the row layout (all 0 when omitted)."""
        c = self._config
        blocks = (values & np.uint64(c.row_blocks - 1)).astype(np.int64)
        if rows is not None:
            blocks += np.asarray(rows, dtype=np.int64) * c.row_blocks
        parts = np.arange(c.block_hashes, dtype=np.uint64)
        shifts = np.uint64(c.segment_index_bits) + parts * np.uint64(c.offset_bits)
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
