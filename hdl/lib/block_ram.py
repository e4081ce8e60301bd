# amaranth: UnusedElaboratable=no
"""One block RAM for the platform a design is elaborated for (:func:`block_ram_for`): on an ECP5, DP16KD instances
with their output register (:class:`~apbbf.hdl.lib.ecp5_ram.ECP5BlockRAM`); elsewhere (iCE40, or no platform:
simulation and the portable Verilog export) an inferred ``lib.memory`` followed by a register
(:class:`InferredBlockRAM`), which Yosys maps to SB_RAM40_4K on iCE40 and Vivado or Quartus fold into their block
RAMs' output registers. Either way a read takes :data:`READ_LATENCY` cycles.

(The pragma above: the memory is made in ``__init__`` and is used exactly when the component that made it is,
which warns on its own when it is not.)
"""

from amaranth import Cat, Module
from amaranth.lib import memory, wiring

from ...model.config import check_integer
from .devices import check_parity, parity_bits
from .ecp5_ram import BlockRAMSignature, ECP5BlockRAM, SimulatedECP5, is_ecp5

__all__ = ["READ_LATENCY", "InferredBlockRAM", "block_ram_for"]

#: Cycles from a read (``read_en`` high with the address) to its data: the block RAM's address register, then
#: its output register.
READ_LATENCY = 2


class InferredBlockRAM(wiring.Component):
    """One memory of ``depth`` x ``width`` bits as ``lib.memory`` with a synchronous read port, its data
    registered once more: the same ports and timing as :class:`~apbbf.hdl.core.ecp5_ram.ECP5BlockRAM`.

    Parameters
    ----------
    depth, width : int
        Words and bits per word, 1 or more.
    parity : bool
        Also store ``write_parity`` with each word and read it back on ``read_parity``
        (:func:`~apbbf.hdl.core.devices.parity_bits` bits): the memory is ``width + ceil(width / 8)`` bits wide.

    Raises
    ------
    TypeError
        If ``depth`` or ``width`` is not an integer, or ``parity`` not a bool.
    ValueError
        If ``depth`` or ``width`` is below 1.
    """

    def __init__(self, depth: int, width: int, *, parity: bool = False):
        check_integer("depth", depth, range(1, 1 << 40))
        check_integer("width", width, range(1, 1 << 40))
        check_parity(parity)
        self._depth, self._width, self._parity = depth, width, parity
        super().__init__(BlockRAMSignature(depth, width, parity))
        # The memory is made here, not in elaborate, so that a simulation reaches its words (``memories``)
        # through Amaranth's public API.
        checks = parity_bits(width) if parity else 0
        self._memory = memory.Memory(shape=width + checks, depth=depth, init=[])
        self._read, self._write = self._memory.read_port(), self._memory.write_port()

    @property
    def memories(self) -> tuple:
        """The one ``lib.memory.Memory`` holding the words (with ``parity``, the parity bits above the data
        bits), whose words a simulation reads and writes with ``ctx.get``/``ctx.set`` on ``data[address]``."""
        return (self._memory,)

    def elaborate(self, platform):
        # The register after the read port is the block RAM's output register where the RAM has one; it cuts
        # the RAM's clock-to-out (and, on iCE40, Yosys's read-during-write logic) from the scans' logic. The
        # parity bits are the word's top bits.
        m = Module()
        checks = parity_bits(self._width) if self._parity else 0
        m.submodules.memory = self._memory
        read, write = self._read, self._write
        stored = Cat(self.write_data, self.write_parity) if checks else self.write_data
        loaded = Cat(self.read_data, self.read_parity) if checks else self.read_data
        m.d.comb += [read.addr.eq(self.read_addr), read.en.eq(self.read_en),
                     write.addr.eq(self.write_addr), write.data.eq(stored), write.en.eq(self.write_en)]
        # Loaded on every clock: without a read the port's data holds (as a block RAM's with its enable low).
        m.d.sync += loaded.eq(read.data)
        return m


def block_ram_for(platform, depth: int, width: int, *, parity: bool = False) -> wiring.Component:
    """The block RAM of one segment for ``platform``: :class:`~apbbf.hdl.core.ecp5_ram.ECP5BlockRAM` for an ECP5
    (its DP16KD model for a :class:`~apbbf.hdl.core.ecp5_ram.SimulatedECP5`), :class:`InferredBlockRAM` otherwise.
    Both have the ports of :class:`~apbbf.hdl.core.ecp5_ram.BlockRAMSignature` (with ``parity``, the parity ports
    too) and a read latency of :data:`READ_LATENCY`."""
    if is_ecp5(platform):
        return ECP5BlockRAM(depth, width, model=isinstance(platform, SimulatedECP5), parity=parity)
    return InferredBlockRAM(depth, width, parity=parity)
