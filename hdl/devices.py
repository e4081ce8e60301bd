"""Block RAM of the FPGA devices the project builds for, and the check that a filter fits it.

The table is keyed by the device string of an Amaranth platform (``platform.device``, e.g.
``ICEBreakerPlatform.device == "iCE40UP5K"``, ``ULX3S_85F_Platform.device == "LFE5U-85F"``), so that a flow that
knows its platform finds its memory without naming the device again. Only block RAM the filter's segments can
use is counted: a segment is ``segment_blocks`` words of ``block_bits`` bits, built from RAMs of 16 data bits
per word, so the ECP5's ninth bit per byte (DP16KD 1024 x 18) and the iCE40UP5K's single-port SPRAM (which
cannot read and write a segment in one cycle) do not count.

The check belongs where a device is known (board tops, Fmax and benchmark runs), not to the core: a Verilog
export for another vendor's FPGA may be as large as that FPGA allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.config import check_config, check_integer

__all__ = ["BlockRAM", "BLOCK_RAM", "block_ram", "check_memory"]


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
        Bits of one block RAM that hold filter data (16-bit words).
    source : str
        Where the numbers come from.
    """

    device: str
    cell: str
    count: int
    data_bits: int
    source: str

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


#: Block RAM per device, keyed by the Amaranth platform's ``device`` string.
BLOCK_RAM = {ram.device: ram for ram in (
    BlockRAM("iCE40UP5K", "SB_RAM40_4K", 30, 4096,
             "Lattice iCE40 UltraPlus Family Data Sheet (FPGA-DS-02008), Table 1.1: 30 sysMEM EBR of 4 kbit "
             "(120 kbit), 256 x 16 at most 16 bits wide"),
    BlockRAM("LFE5U-85F", "DP16KD", 208, 16 * 1024,
             "Lattice ECP5 and ECP5-5G Family Data Sheet (FPGA-DS-02012), Table 1.1: 208 sysMEM EBR of 18 kbit "
             "(3744 kbit); DP16KD 1024 x 18, of which the filter's 16-bit words use 16 x 1024"),
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


def check_memory(config, device: str, *, reserved_blocks: int = 0, reserved_for: str = "other logic") -> BlockRAM:
    """Check that ``config``'s segments (spare included) fit ``device``'s block RAM.

    Parameters
    ----------
    config : Config
    device : str
        An Amaranth platform's ``device`` string (a key of :data:`BLOCK_RAM`).
    reserved_blocks : int
        Block RAMs the rest of the design needs (e.g. a board top's key buffer), 0..count.
    reserved_for : str
        What they are for, for the error message.

    Returns
    -------
    BlockRAM
        The device's block RAM.

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``reserved_blocks`` not an integer.
    ValueError
        If the device is unknown, ``reserved_blocks`` is out of range, or the segments need more block RAM than
        the device has (the message names the device, its capacity and what to reduce).
    """
    check_config(config)
    ram = block_ram(device)
    check_integer("reserved_blocks", reserved_blocks, range(0, ram.count + 1))
    available = (ram.count - reserved_blocks) * ram.data_bits
    needed = config.hardware_memory_bits
    if needed > available:
        reserved = f", less {reserved_blocks} for {reserved_for}" if reserved_blocks else ""
        raise ValueError(
            f"config needs {needed} bits of block RAM ({config.physical_segments} segments, spare included, of "
            f"{config.segment_blocks} blocks x {config.block_bits} bits), more than the {ram.device} has for it: "
            f"{available} bits ({ram.count} {ram.cell} x {ram.data_bits} bits = {ram.capacity_bits}{reserved}); "
            f"reduce segment_blocks, block_bits, k or l")
    return ram
