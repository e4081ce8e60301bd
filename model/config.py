"""The filter configuration shared by the golden model, the analytics and the gateware."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Config", "KEY_WIDTHS", "SEEDS", "TIME_WIDTHS", "EXTRA_SEGMENTS", "ROW_BITS", "check_integer", "check_key_width",
           "check_config"]

#: Key widths the filter takes, in bits: the one definition every other check (protocol, AXI4-Stream layout,
#: ``key_from_bytes``) uses.
KEY_WIDTHS = range(8, 513)
#: Hash seeds: 64-bit unsigned.
SEEDS = range(0, 1 << 64)
#: Widths of the command timestamps of a time-bounded window, in bits.
TIME_WIDTHS = range(2, 65)
#: Segments a time-bounded window may hold beyond ``k + l + 1`` (its burst pool).
EXTRA_SEGMENTS = range(0, 65)
#: Bits in one memory row of the row layout (a power of two): 0 for the on-chip layout, else 2**3 .. 2**24.
ROW_BITS = range(0, (1 << 24) + 1)


def _is_power_of_two(value: int) -> bool:
    return value >= 1 and value & (value - 1) == 0


def check_integer(name: str, value, allowed: range | None = None) -> int:
    """``value`` if it is an integer (not a bool) in ``allowed``; else an error that names ``name``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer.
    ValueError
        If ``value`` is not in ``allowed`` (the message gives the range).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if allowed is not None and value not in allowed:
        high = allowed.stop - 1
        high = f"2**{high.bit_length()}-1" if high >= 1 << 32 and high & (high + 1) == 0 else str(high)
        raise ValueError(f"{name} must be from {allowed.start} to {high}, not {value}")
    return value


def check_key_width(key_width) -> int:
    """``key_width`` if it is an integer in :data:`KEY_WIDTHS` (8..512).

    Raises
    ------
    TypeError, ValueError
        As :func:`check_integer`.
    """
    return check_integer("key_width", key_width, KEY_WIDTHS)


def check_config(config, name: str = "config"):
    """``config`` if it is a :class:`Config`.

    Raises
    ------
    TypeError
        If it is not (the message names ``name``).
    """
    if not isinstance(config, Config):
        raise TypeError(f"{name} must be a Config, not {config!r}")
    return config


@dataclass(frozen=True)
class Config:
    """Shape of an Age-Partitioned Blocked Bloom Filter (paper 000 §6).

    The filter has ``k + l`` segments; each segment is a blocked Bloom filter of ``segment_blocks`` blocks of
    ``block_bits`` bits (B), and each block is a partitioned Bloom filter: ``block_hashes`` (b) parts of B/b bits,
    one bit set per part. Inserts set the key's bits in the k newest segments; queries look for k consecutive
    matching segments among segments 0..k+l-1 (Algorithm 1).

    With ``block_hashes = 1`` the filter is exactly the basic APBF of paper 000 §5 with slices of
    ``m = block_bits * segment_blocks`` bits: the block index and the bit offset together pick one of m bits.

    Parameters
    ----------
    k : int
        Segments written per insert and consecutive matches needed by a query; ``k >= 1``.
    l : int
        Extra segments; the window is ``l`` generations; ``l >= 1``.
    block_bits : int
        B, bits per block; a power of two, 1..65536.
    block_hashes : int
        b, bits set per block (one per part of B/b bits); a power of two with ``1 <= b <= B``.
    segment_blocks : int
        Blocks per segment; a power of two, 1..2**24.
    key_width : int
        Width of a key in bits, 8..512.
    seed : int
        Seed of the hash specification (:mod:`apbbf.model.hashing`), 0..2**64-1.
    span : int
        The time window in ticks (paper 001's time span), 1..2**(time_width-1)-1; 0 (the default) for a window
        bounded by count alone. With a span every command carries a timestamp and the filter is the
        hardware variant of paper 001 (:class:`apbbf.model.timewindow.TimedAPBBF`): every key inserted at time
        t is reported present by every query at a time up to ``t + span`` while no segment overflows, and,
        with ``extra_segments >= l - 1``, while it is among the last ``l·g`` inserts, overflow or not.
    time_width : int
        Bits of the command timestamps, 2..64 (ages are computed modulo ``2**time_width``); used with a span.
    extra_segments : int
        Segments beyond ``k + l + 1`` in the pool of a time-bounded window, 0..64: room for the segments that
        stay alive when inserts come faster than planned; ``l - 1`` or more make the count floor hold by
        construction (:func:`apbbf.model.timeanalysis.default_extra_segments` sizes it). Must be 0 without a span.
    row_bits : int
        0 (the default): the on-chip layout, every physical segment its own memory and every block index its own
        hash. Otherwise the **row layout** for a memory whose random rows are slow (DRAM): bits in one memory
        row, a power of two from ``physical_segments * block_bits`` to 2**24. A key's blocks then all sit in one
        row: a row hash shared by every segment picks one of :attr:`rows` rows, and each segment's own hash
        picks one of the :attr:`row_blocks` blocks that segment has in the row (:mod:`apbbf.model.hashing`,
        step 5). Row r holds, from bit 0, segment 0's ``row_blocks`` blocks, then segment 1's, and so on
        (:meth:`memory_block`), so one activation serves a key's whole scan and its insert's writes.
    burst_bits : int
        (Row layout.) Bits the memory moves in one burst, a power of two from 8 to ``row_bits``; 0 (the default)
        for one block per burst. It sets what a block access costs (:attr:`bursts_per_block`); the answers do
        not depend on it.

    Raises
    ------
    TypeError
        If a field is not an integer.
    ValueError
        If a field is out of its range, the shape leaves a generation of fewer than one element, or a row of
        ``row_bits`` cannot hold a key's blocks (one block of every physical segment; the message names both
        sizes).
    """

    k: int
    l: int
    block_bits: int = 64
    block_hashes: int = 4
    segment_blocks: int = 512
    key_width: int = 64
    seed: int = 0
    span: int = 0
    time_width: int = 32
    extra_segments: int = 0
    row_bits: int = 0
    burst_bits: int = 0

    def __post_init__(self):
        for name in ("k", "l", "block_bits", "block_hashes", "segment_blocks", "key_width", "seed", "span",
                     "time_width", "extra_segments", "row_bits", "burst_bits"):
            check_integer(name, getattr(self, name))
        if self.k < 1:
            raise ValueError(f"k must be at least 1, not {self.k}")
        if self.l < 1:
            raise ValueError(f"l must be at least 1, not {self.l}")
        if not _is_power_of_two(self.block_bits) or self.block_bits > 65536:
            raise ValueError(f"block_bits must be a power of two from 1 to 65536, not {self.block_bits}")
        if not _is_power_of_two(self.block_hashes) or self.block_hashes > self.block_bits:
            raise ValueError(f"block_hashes must be a power of two from 1 to block_bits ({self.block_bits}), "
                             f"not {self.block_hashes}")
        if not _is_power_of_two(self.segment_blocks) or self.segment_blocks > 1 << 24:
            raise ValueError(f"segment_blocks must be a power of two from 1 to 2**24, not {self.segment_blocks}")
        check_key_width(self.key_width)
        check_integer("seed", self.seed, SEEDS)
        check_integer("time_width", self.time_width, TIME_WIDTHS)
        if not 0 <= self.span < 1 << (self.time_width - 1):
            raise ValueError(f"span must be 0 (a window bounded by count alone) or from 1 to "
                             f"2**(time_width-1)-1 = {(1 << (self.time_width - 1)) - 1} ticks, not {self.span}")
        check_integer("extra_segments", self.extra_segments, EXTRA_SEGMENTS)
        if self.extra_segments and not self.span:
            raise ValueError(f"extra_segments must be 0 without a span (the pool only serves a time-bounded "
                             f"window), not {self.extra_segments}")
        check_integer("row_bits", self.row_bits, ROW_BITS)
        if self.row_bits:
            key_bits = self.physical_segments * self.block_bits
            if not _is_power_of_two(self.row_bits) or self.row_bits < 8:
                raise ValueError(f"row_bits must be 0 (the on-chip layout) or a power of two from 8 to 2**24, not "
                                 f"{self.row_bits}")
            if self.row_bits < key_bits:
                raise ValueError(f"row_bits={self.row_bits} cannot hold a key's blocks: one block of "
                                 f"block_bits={self.block_bits} in each of the {self.physical_segments} physical "
                                 f"segments needs {key_bits} bits per row (raise row_bits, or take fewer segments "
                                 f"or smaller blocks)")
            if self.burst_bits and (not _is_power_of_two(self.burst_bits) or not 8 <= self.burst_bits
                                    <= self.row_bits):
                raise ValueError(f"burst_bits must be 0 (one block per burst) or a power of two from 8 to "
                                 f"row_bits ({self.row_bits}), not {self.burst_bits}")
        elif self.burst_bits:
            raise ValueError(f"burst_bits must be 0 without a row layout (row_bits=0), not {self.burst_bits}")
        if self.hash_bits > 64:
            raise ValueError(f"block_hashes={self.block_hashes} with block_bits={self.block_bits} and "
                             f"segment_blocks={self.segment_blocks} needs {self.hash_bits} hash bits per "
                             f"segment; at most 64 are supported (log2(segment_blocks) + b*log2(B/b) <= 64)")
        if self.generation < 1:
            raise ValueError(f"block_bits={self.block_bits}, block_hashes={self.block_hashes}, "
                             f"segment_blocks={self.segment_blocks} and k={self.k} give a generation of "
                             f"{self.generation} elements; the generation must hold at least 1 "
                             f"(use fewer block_hashes per block, more blocks, or a smaller k)")

    # Derived shape -------------------------------------------------------------------------------------------

    @property
    def segments(self) -> int:
        """Number of segments, k + l."""
        return self.k + self.l

    @property
    def physical_segments(self) -> int:
        """Positions in the circular buffer, k + l + 1 (+ ``extra_segments``): the k + l segments of the paper
        plus one spare (and the burst pool of a time-bounded window).

        The spare is never read or written by commands. On a shift the oldest segment is retired to become the
        spare (the hardware clears it in the background) and the previous, already clear, spare becomes the new
        segment 0. Answers are exactly the paper's; only which physical position (and so which hash, paper 000
        §5.1) a segment occupies differs, and the model follows the hardware there.
        """
        return self.k + self.l + 1 + self.extra_segments

    @property
    def timed(self) -> bool:
        """The window is bounded by time (``span > 0``), not by count alone."""
        return self.span > 0

    @property
    def shift_interval(self) -> int:
        """Ticks after which the newest segment is replaced even if its generation is not full: the smallest
        integer I with ``l·I > span`` (paper 001's target time between shifts, ``span / l``, rounded so that
        at the planned rate the oldest of k + l segments has expired by the time the next one is needed).

        Raises
        ------
        ValueError
            Without a span.
        """
        if not self.span:
            raise ValueError("a Config without a span has no shift interval")
        return self.span // self.l + 1

    @property
    def part_bits(self) -> int:
        """Bits in each of the b parts of a block, B/b."""
        return self.block_bits // self.block_hashes

    @property
    def block_index_bits(self) -> int:
        """Hash bits that select the block, log2(segment_blocks)."""
        return self.segment_blocks.bit_length() - 1

    @property
    def offset_bits(self) -> int:
        """Hash bits that select the bit in one part, log2(B/b)."""
        return self.part_bits.bit_length() - 1

    @property
    def hash_bits(self) -> int:
        """Hash output bits per segment: the segment's block index (within the row, in the row layout), then b
        offsets."""
        return self.segment_index_bits + self.block_hashes * self.offset_bits

    # The row layout ------------------------------------------------------------------------------------------

    @property
    def row_layout(self) -> bool:
        """A key's blocks share one memory row (``row_bits > 0``)."""
        return self.row_bits > 0

    @property
    def row_blocks(self) -> int:
        """Blocks of each segment in one row: the largest power of two with ``physical_segments · row_blocks · B
        <= row_bits``, at most ``segment_blocks`` (``segment_blocks`` in the on-chip layout: one row)."""
        if not self.row_bits:
            return self.segment_blocks
        fit = self.row_bits // (self.physical_segments * self.block_bits)
        return min(self.segment_blocks, 1 << (fit.bit_length() - 1))

    @property
    def rows(self) -> int:
        """Rows, ``segment_blocks / row_blocks`` (1 in the on-chip layout)."""
        return self.segment_blocks // self.row_blocks

    @property
    def row_index_bits(self) -> int:
        """Bits of the row hash shared by every segment, log2(rows) (0 in the on-chip layout)."""
        return self.rows.bit_length() - 1

    @property
    def segment_index_bits(self) -> int:
        """Bits of each segment's own hash that pick its block: log2(row_blocks); log2(segment_blocks) in the
        on-chip layout, where :attr:`block_index_bits` = :attr:`row_index_bits` + this."""
        return self.row_blocks.bit_length() - 1

    @property
    def row_stride_blocks(self) -> int:
        """Block words from one row's start to the next's in the memory: ``row_bits / B`` (one row of the
        filter is one row of the memory, its unused tail included)."""
        if not self.row_bits:
            raise ValueError("a Config without a row layout (row_bits=0) has no memory rows")
        return self.row_bits // self.block_bits

    @property
    def bursts_per_block(self) -> int:
        """(Row layout.) Bursts a block access costs: ``B / burst_bits`` rounded up, at least 1."""
        if not self.row_bits:
            raise ValueError("a Config without a row layout (row_bits=0) has no memory bursts")
        burst = self.burst_bits or self.block_bits
        return max(1, -(-self.block_bits // burst))

    @property
    def memory_blocks(self) -> int:
        """(Row layout.) Block words the memory must hold: ``rows · row_stride_blocks``."""
        return self.rows * self.row_stride_blocks

    def memory_block(self, segment: int, index: int) -> int:
        """(Row layout.) The memory word of block ``index`` of physical segment ``segment``: row
        ``index // row_blocks`` at ``row · row_stride_blocks``, then ``segment · row_blocks + index mod
        row_blocks`` within it.

        Raises
        ------
        ValueError
            Without a row layout, or if ``segment`` or ``index`` is out of range.
        """
        check_integer("segment", segment, range(self.physical_segments))
        check_integer("index", index, range(self.segment_blocks))
        row, within = divmod(index, self.row_blocks)
        return row * self.row_stride_blocks + segment * self.row_blocks + within

    # Capacity (paper 000 §5.2 and §6) ------------------------------------------------------------------------

    @property
    def block_capacity(self) -> float:
        """λ_full: elements per block at which the block is half full, −ln 2 / ln(1 − b/B).

        A block is b parts of B/b bits with one bit set per part, so after J elements each part is
        ``1 − (1 − b/B)^J`` full; half full at ``J = −ln 2 / ln(1 − b/B)``. With b = B one element fills the
        block (capacity 0).
        """
        b, B = self.block_hashes, self.block_bits
        if b == B:
            return 0.0
        return -math.log(2) / math.log1p(-b / B)

    @property
    def generation(self) -> int:
        """g: inserts per generation; the segment capacity ``segment_blocks · λ_full`` split over k generations
        (paper 000 §5.2: ``g = ⌊m ln 2 / k⌋`` for the basic filter)."""
        return math.floor(self.segment_blocks * self.block_capacity / self.k)

    @property
    def window(self) -> int:
        """w = l·g: the last w inserts are always reported present (paper 000 §5.2)."""
        return self.l * self.generation

    @property
    def slack(self) -> int:
        """s = k·g: inserts after the window that may still be reported (paper 000 §5.2)."""
        return self.k * self.generation

    @property
    def segment_bits(self) -> int:
        """Bits in one segment, segment_blocks · B."""
        return self.segment_blocks * self.block_bits

    @property
    def memory_bits(self) -> int:
        """Bits in the k + l segments (the paper's memory; :attr:`hardware_memory_bits` adds the spare)."""
        return self.segments * self.segment_bits

    @property
    def hardware_memory_bits(self) -> int:
        """Bits in all k + l + 1 physical segments, spare included."""
        return self.physical_segments * self.segment_bits

    @property
    def bits_per_element(self) -> float:
        """Memory bits per window element, memory_bits / w."""
        return self.memory_bits / self.window
