"""Block RAM of the FPGA devices the project builds for, and the check that a filter fits it.

The table is keyed by the device string of an Amaranth platform (``platform.device``, e.g.
``ICEBreakerPlatform.device == "iCE40UP5K"``, ``ULX3S_85F_Platform.device == "LFE5U-85F"``), so that a flow that
knows its platform finds its memory without naming the device again. Only block RAM the filter's segments can
use is counted: a segment is ``segment_blocks`` words of ``block_bits`` bits (a power of two), so the ECP5's
ninth bit per byte (DP16KD 1024 x 18) and the iCE40UP5K's single-port SPRAM (which cannot read and write a
segment in one cycle) do not count.

Every segment is its own memory (its own addresses), so it takes whole block RAMs: a segment is tiled with the
primitive's data widths and depths (:meth:`BlockRAM.tile`), and the device must hold ``k + l + 1`` such tilings.
A segment smaller than one block RAM still takes one.

With parity (:class:`~apbbf.hdl.core.segments.Segments` ``parity=True``: one even-parity bit per 8 data bits of a block,
:func:`parity_bits`), a device whose block RAM has a ninth bit per byte keeps the parity there (the DP16KD in its
36-, 18- and 9-bit modes, :data:`DP16KD_PARITY_SHAPES`): no more DP16KD than without parity for a block of 8
bits or more and a power-of-two depth (a segment deeper than 2048 words is then tiled in the 9-bit mode with
several rows, and a read multiplexer, where it would have used fewer-bit columns in one row). Elsewhere
(the iCE40's SB_RAM40_4K, 16 bits wide) the parity bits widen the word: ``B + B/8`` bits, tiled as any word.

The check belongs where a device is known (board tops, Fmax and benchmark runs), not to the core: a Verilog
export for another vendor's FPGA may be as large as that FPGA allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...model.config import check_config, check_integer

__all__ = ["Tiling", "tile", "parity_bits", "check_parity", "BlockRAM", "DP16KD_SHAPES", "DP16KD_PARITY_SHAPES",
           "SB_RAM40_4K_SHAPES", "BLOCK_RAM", "block_ram", "check_memory"]

#: The DP16KD's configurations as a segment uses them: (data bits per word, words). The 36-bit pseudo dual
#: port mode (PDPW16KD) and the 18- and 9-bit modes hold 32, 16 and 8 power-of-two data bits per word; every
#: mode holds 16 Kbit of data (Lattice TN1264, ECP5 and ECP5-5G Memory Usage Guide).
DP16KD_SHAPES = ((32, 512), (16, 1024), (8, 2048), (4, 4096), (2, 8192), (1, 16384))
#: The DP16KD's configurations with a ninth bit per byte (36-, 18- and 9-bit modes): (data bits per word, words);
#: a parity bit per byte of data rides in the ninth bits.
DP16KD_PARITY_SHAPES = ((32, 512), (16, 1024), (8, 2048))
#: The SB_RAM40_4K's configurations (READ_MODE/WRITE_MODE 0..3): 256 x 16, 512 x 8, 1024 x 4, 2048 x 2
#: (Lattice iCE40 UltraPlus Family Data Sheet, FPGA-DS-02008, sysMEM Embedded Block RAM).
SB_RAM40_4K_SHAPES = ((16, 256), (8, 512), (4, 1024), (2, 2048))


@dataclass(frozen=True)
class Tiling:
    """How one memory of ``depth`` x ``width`` is built from block RAMs of one configuration.

    Attributes
    ----------
    word_bits, words : int
        The configuration of each block RAM: data bits per word, words.
    columns : int
        Block RAMs side by side (``width / word_bits``, rounded up).
    rows : int
        Block RAMs stacked in depth (``depth / words``, rounded up), selected by the high address bits.
    """

    word_bits: int
    words: int
    columns: int
    rows: int

    @property
    def blocks(self) -> int:
        """Block RAMs of the tiling, ``columns * rows``."""
        return self.columns * self.rows


def tile(shapes, depth: int, width: int) -> Tiling:
    """The :class:`Tiling` of a memory of ``depth`` words of ``width`` bits with block RAMs of the given
    ``shapes`` ((data bits per word, words) pairs) that takes the fewest block RAMs; of those, the one with the
    fewest rows (no read multiplexer when one row will do), then the fewest unused bits per row, then the widest
    words.

    Raises
    ------
    TypeError
        If ``depth`` or ``width`` is not an integer.
    ValueError
        If either is below 1, or ``shapes`` is empty.
    """
    check_integer("depth", depth, range(1, 1 << 40))
    check_integer("width", width, range(1, 1 << 40))
    if not shapes:
        raise ValueError("shapes must name at least one block RAM configuration")
    tilings = [Tiling(bits, words, -(-width // bits), -(-depth // words)) for bits, words in shapes]
    return min(tilings, key=lambda t: (t.blocks, t.rows, t.columns * t.word_bits - width, -t.word_bits))


def parity_bits(width: int) -> int:
    """Parity bits of a ``width``-bit word with one even-parity bit per 8 data bits (the last group may be
    narrower): ``ceil(width / 8)``.

    Raises
    ------
    TypeError
        If ``width`` is not an integer.
    ValueError
        If ``width`` is below 1.
    """
    check_integer("width", width, range(1, 1 << 40))
    return -(-width // 8)


@dataclass(frozen=True)
class BlockRAM:
    """The block RAM of one device, as the filter can use it.

    Parameters
    ----------
    device : str
        The Amaranth platform's ``device`` string.
    cell : str
        The Yosys/nextpnr cell of one block RAM.
    count : int
        Block RAMs on the device.
    data_bits : int
        Bits of one block RAM that hold filter data.
    source : str
        Where the numbers come from.
    shapes : tuple of (int, int)
        The configurations a segment can use, (data bits per word, words), each ``data_bits`` in all.
    probe_configuration : str
        How the benchmark's block RAM probe configures one block RAM (:class:`apbbf.sim.designs.BlockRAMProbe`).
    rated : str
        The vendor's rated maximum clock of the block RAM in that configuration at the device's speed grade, with
        its source; empty where it is not recorded here.
    parity_shapes : tuple of (int, int)
        The configurations with a ninth bit per byte that holds a parity bit (empty: parity widens the word).
    """

    device: str
    cell: str
    count: int
    data_bits: int
    source: str
    shapes: tuple = ()
    probe_configuration: str = ""
    rated: str = ""
    parity_shapes: tuple = ()

    @property
    def capacity_bits(self) -> int:
        """Filter bits the device's block RAM holds, ``count * data_bits``."""
        return self.count * self.data_bits

    def blocks_for(self, bits: int) -> int:
        """Block RAMs that ``bits`` bits of data occupy (rounded up to whole blocks).

        Raises
        ------
        TypeError
            If ``bits`` is not an integer.
        ValueError
            If ``bits`` is negative.
        """
        check_integer("bits", bits, range(0, 1 << 63))
        return -(-bits // self.data_bits)

    def tile(self, depth: int, width: int, *, parity: bool = False) -> Tiling:
        """The :class:`Tiling` of a memory of ``depth`` x ``width`` with this device's block RAMs (:func:`tile`);
        with ``parity``, of ``width`` data bits and their :func:`parity_bits`: in the ninth bits where the block
        RAM has them (``parity_shapes``), else as a wider word (``word_bits`` then counts the parity bits too).

        Raises
        ------
        TypeError, ValueError
            As :func:`tile`; TypeError also if ``parity`` is not a bool.
        """
        check_parity(parity)
        if parity and self.parity_shapes:
            return tile(self.parity_shapes, depth, width)
        if parity:
            width += parity_bits(width)
        return tile(self.shapes, depth, width)

    def blocks_for_config(self, config, *, parity: bool = False) -> int:
        """Block RAMs the segments of ``config`` take: ``physical_segments`` tilings of
        ``segment_blocks`` x ``block_bits`` (:meth:`tile`), with parity or without.

        Raises
        ------
        TypeError
            If ``config`` is not a Config or ``parity`` not a bool.
        """
        check_config(config)
        return config.physical_segments * self.tile(config.segment_blocks, config.block_bits, parity=parity).blocks


#: Block RAM per device, keyed by the Amaranth platform's ``device`` string.
BLOCK_RAM = {ram.device: ram for ram in (
    BlockRAM("iCE40UP5K", "SB_RAM40_4K", 30, 4096,
             "Lattice iCE40 UltraPlus Family Data Sheet (FPGA-DS-02008), Table 1.1: 30 sysMEM EBR of 4 kbit "
             "(120 kbit), 256 x 16 at most 16 bits wide", SB_RAM40_4K_SHAPES,
             probe_configuration="SB_RAM40_4K instance, READ_MODE/WRITE_MODE 0, read data registered in the fabric"),
    BlockRAM("LFE5U-85F", "DP16KD", 208, 16 * 1024,
             "Lattice ECP5 and ECP5-5G Family Data Sheet (FPGA-DS-02012), Table 1.1: 208 sysMEM EBR of 18 kbit "
             "(3744 kbit); DP16KD 1024 x 18 or 512 x 36, of which the filter's power-of-two words use 16 kbit",
             DP16KD_SHAPES, probe_configuration="DP16KD instance, 18-bit ports, REGMODE OUTREG",
             parity_shapes=DP16KD_PARITY_SHAPES),
)}


def block_ram(device: str) -> BlockRAM:
    """The :class:`BlockRAM` of ``device`` (an Amaranth platform's ``device`` string).

    Raises
    ------
    TypeError
        If ``device`` is not a string.
    ValueError
        If the device is not in :data:`BLOCK_RAM`.
    """
    if not isinstance(device, str):
        raise TypeError(f"device must be a string, not {device!r}")
    if device not in BLOCK_RAM:
        raise ValueError(f"device must be one of {', '.join(BLOCK_RAM)}, not {device!r}")
    return BLOCK_RAM[device]


def check_parity(parity) -> bool:
    """Check the ``parity`` option (a bool) and return it.

    Raises
    ------
    TypeError
        If ``parity`` is not a bool.
    """
    if not isinstance(parity, bool):
        raise TypeError(f"parity must be a bool, not {parity!r}")
    return parity


def check_memory(config, device: str, *, reserved_blocks: int = 0, reserved_for: str = "other logic",
                 parity: bool = False, lanes: int = 1) -> BlockRAM:
    """Check that ``config``'s segments (spare included) fit ``device``'s block RAM, each segment in whole block
    RAMs (:meth:`BlockRAM.blocks_for_config`), ``lanes`` times (a lanes filter: each lane its own segments).

    Parameters
    ----------
    config : Config
    device : str
        An Amaranth platform's ``device`` string (a key of :data:`BLOCK_RAM`).
    reserved_blocks : int
        Block RAMs the rest of the design needs (e.g. a board top's key buffer), 0..count.
    reserved_for : str
        What they are for, for the error message.
    parity : bool
        The segments store parity bits (:meth:`BlockRAM.tile`).
    lanes : int
        Filters of this Config side by side (:class:`~apbbf.hdl.core.lanes.Lanes`), 1 to 16.

    Returns
    -------
    BlockRAM
        The device's block RAM.

    Raises
    ------
    TypeError
        If ``config`` is not a Config, ``reserved_blocks`` or ``lanes`` not an integer or ``parity`` not a bool.
    ValueError
        If the device is unknown, ``reserved_blocks`` is out of range, or the segments need more block RAM than
        the device has (the message names the device, its capacity and what to reduce).
    """
    check_config(config)
    ram = block_ram(device)
    check_integer("reserved_blocks", reserved_blocks, range(0, ram.count + 1))
    check_integer("lanes", lanes, range(1, 17))
    available = ram.count - reserved_blocks
    needed = lanes * ram.blocks_for_config(config, parity=parity)
    if needed > available:
        reserved = f", less {reserved_blocks} for {reserved_for}" if reserved_blocks else ""
        tiling = ram.tile(config.segment_blocks, config.block_bits, parity=parity)
        with_parity = f" and {parity_bits(config.block_bits)} parity bits" if parity else ""
        raise ValueError(
            f"config needs {needed} {ram.cell} ({f'{lanes} lanes of ' if lanes > 1 else ''}"
            f"{config.physical_segments} segments, spare included, of "
            f"{config.segment_blocks} blocks x {config.block_bits} bits{with_parity}, {tiling.blocks} {ram.cell} of "
            f"{tiling.words} x {tiling.word_bits} each), more than the {ram.device} has for it: {available} "
            f"({ram.count} {ram.cell} x {ram.data_bits} bits = {ram.capacity_bits}{reserved}); "
            f"reduce segment_blocks, block_bits, k or l")
    return ram
