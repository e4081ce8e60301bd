"""The filter's segments: one block RAM per physical segment, and their clearing.

Each segment's block RAM is chosen by the platform the design is elaborated for (:func:`block_ram_for`): on an
ECP5, DP16KD instances with their output register (:class:`~apbbf.hdl.ecp5_ram.ECP5BlockRAM`); elsewhere (iCE40,
or no platform: simulation and the portable Verilog export) an inferred ``lib.memory`` followed by a register
(:class:`InferredBlockRAM`), which Yosys maps to SB_RAM40_4K on iCE40 and Vivado or Quartus fold into their block
RAMs' output registers. Either way a read takes :data:`READ_LATENCY` cycles, so the scans, the cycle model and the
simulations are the same on every platform.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..model.config import Config, check_config, check_integer
from .ecp5_ram import ECP5BlockRAM, SimulatedECP5, block_ram_signature, is_ecp5

__all__ = ["READ_LATENCY", "segment_access_signature", "InferredBlockRAM", "block_ram_for", "Segments"]

#: Cycles from a read (``read_en`` high with the address) to its data: the block RAM's address register, then
#: its output register.
READ_LATENCY = 2


def segment_access_signature(config: Config) -> wiring.Signature:
    """What a scan sees of the segments, from the scan's side: a read and a write port per physical segment
    (block index, B-bit block); ``ready`` (not clearing every memory, as after reset); ``retire`` (segments to
    clear in the background), ``clear`` (clear every memory) and ``cleaned`` (segments whose clearing is
    done)."""
    P, index = config.physical_segments, config.block_index_bits
    return wiring.Signature({
        "read_addr": Out(data.ArrayLayout(index, P)),
        "read_en": Out(1),
        "read_data": In(data.ArrayLayout(config.block_bits, P)),
        "write_addr": Out(data.ArrayLayout(index, P)),
        "write_data": Out(data.ArrayLayout(config.block_bits, P)),
        "write_en": Out(P),
        "ready": In(1),
        "retire": Out(P),
        "clear": Out(1),
        "cleaned": In(P),
    })


class InferredBlockRAM(wiring.Component):
    """One memory of ``depth`` x ``width`` bits as ``lib.memory`` with a synchronous read port, its data
    registered once more: the same ports and timing as :class:`~apbbf.hdl.ecp5_ram.ECP5BlockRAM`.

    Parameters
    ----------
    depth, width : int
        Words and bits per word, 1 or more.

    Raises
    ------
    TypeError
        If ``depth`` or ``width`` is not an integer.
    ValueError
        If ``depth`` or ``width`` is below 1.
    """

    def __new__(cls, depth, width, *args, **kwargs):
        check_integer("depth", depth, range(1, 1 << 40))
        check_integer("width", width, range(1, 1 << 40))
        return super().__new__(cls)

    def __init__(self, depth: int, width: int):
        self._depth, self._width = depth, width
        super().__init__(block_ram_signature(depth, width))

    def elaborate(self, platform):
        # The register after the read port is the block RAM's output register where the RAM has one; it cuts
        # the RAM's clock-to-out (and, on iCE40, Yosys's read-during-write logic) from the scans' logic.
        m = Module()
        m.submodules.memory = mem = memory.Memory(shape=self._width, depth=self._depth, init=[])
        read, write = mem.read_port(), mem.write_port()
        out_en = Signal()
        m.d.sync += out_en.eq(self.read_en)
        m.d.comb += [read.addr.eq(self.read_addr), read.en.eq(self.read_en),
                     write.addr.eq(self.write_addr), write.data.eq(self.write_data), write.en.eq(self.write_en)]
        with m.If(out_en):
            m.d.sync += self.read_data.eq(read.data)
        return m


def block_ram_for(platform, depth: int, width: int) -> wiring.Component:
    """The block RAM of one segment for ``platform``: :class:`~apbbf.hdl.ecp5_ram.ECP5BlockRAM` for an ECP5
    (its DP16KD model for a :class:`~apbbf.hdl.ecp5_ram.SimulatedECP5`), :class:`InferredBlockRAM` otherwise.
    Both have the ports of :func:`~apbbf.hdl.ecp5_ram.block_ram_signature` and a read latency of
    :data:`READ_LATENCY`."""
    if is_ecp5(platform):
        return ECP5BlockRAM(depth, width, model=isinstance(platform, SimulatedECP5))
    return InferredBlockRAM(depth, width)


class Segments(wiring.Component):
    """``k + l + 1`` (+ ``extra_segments``) memories of ``segment_blocks`` × ``block_bits``, each with a read
    and a write port, and their clearing.

    Parameters
    ----------
    config : Config

    Attributes
    ----------
    access : In(segment_access_signature(config))
        The scan's ports. ``read_addr[j]``, ``read_en``: the read ports are synchronous, data is valid in
        ``read_data[j]`` :data:`READ_LATENCY` cycles after ``read_en`` (two: the block RAM's address and output
        registers) and held until the next read's data arrives. ``write_addr[j]``,
        ``write_data[j]``, ``write_en[j]``: one write per memory per cycle. ``ready``: low while every memory
        is cleared (after reset, and after ``clear``). ``retire[j]``: physical segment j is retired in this
        cycle; clear it in the background. ``clear``: clear every memory (``segment_blocks`` cycles, ``ready``
        low), as after reset. ``cleaned[j]``: physical segment j is clear (its last block was written in the
        cycle before; a register, so that the circular buffer's decision takes it without the clearing's logic
        in front).

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    """

    def __new__(cls, config, *args, **kwargs):
        check_config(config)
        return super().__new__(cls, src_loc_at=1)

    def __init__(self, config: Config):
        self._config = config
        super().__init__({"access": In(segment_access_signature(config))})

    @property
    def config(self) -> Config:
        return self._config

    @property
    def read_latency(self) -> int:
        """Cycles from ``read_en`` to ``read_data``: :data:`READ_LATENCY`."""
        return READ_LATENCY

    def elaborate(self, platform):
        # Each memory is addressed by its own hash (paper 000 §5.1), so every port is separate: a key's blocks
        # in all segments are read in the same cycle, and an insert writes its k blocks in the same cycle. One
        # read port plus one write port per memory is what a simple dual-port block RAM gives (SB_RAM40_4K on
        # iCE40, DP16KD / PDPW16KD on ECP5), chosen by the platform (block_ram_for).
        #
        # Clearing writes zeros one block per cycle, to every memory being cleared at once: all of them after
        # reset or ``clear`` (``ready`` low meanwhile), or, in the background, the retired ones. Commands never
        # read or write a retired segment, so this needs no arbitration; clearing wins over ``write_en`` anyway.
        # Segments retired while a pass is running wait for the next pass.
        c = self._config
        P = c.physical_segments
        access = self.access
        m = Module()
        S = c.segment_blocks
        clear_all = Signal(init=1)                               # reset clears every memory first
        clearing = Signal(P)                                     # the pass running now
        idle = Signal(init=1)                                    # clearing == 0
        pending = Signal(P)                                      # retired during the pass: the next one
        # Which memories are zeroed in this cycle: Mux(clear_all, every one, clearing), kept in one register per
        # memory, so that each memory's write multiplexers hang on their own flip-flop, near them.
        zeroing = Signal(P, init=(1 << P) - 1)
        clear_all_next, clearing_next = Signal(), Signal(P)
        # A pass lasts S cycles (``count``, ``last``: the pass's final cycle, a register); each memory zeroes the
        # block its own counter names, and the counter advances while the memory is zeroed: any S cycles in a row
        # name every block once, wherever the counter starts.
        count = Signal(range(S))
        last = Signal(init=S == 1)
        restart_count = Signal()
        m.d.comb += access.ready.eq(~clear_all)
        for j in range(P):
            m.submodules[f"segment{j}"] = ram = block_ram_for(platform, c.segment_blocks, c.block_bits)
            position = Signal(range(S), name=f"zero_addr{j}")
            with m.If(zeroing[j]):
                m.d.sync += position.eq(position + 1)
            m.d.comb += [ram.read_addr.eq(access.read_addr[j]), ram.read_en.eq(access.read_en),
                         access.read_data[j].eq(ram.read_data)]
            with m.If(zeroing[j]):
                m.d.comb += [ram.write_addr.eq(position), ram.write_data.eq(0), ram.write_en.eq(1)]
            with m.Else():
                m.d.comb += [ram.write_addr.eq(access.write_addr[j]), ram.write_data.eq(access.write_data[j]),
                             ram.write_en.eq(access.write_en[j])]

        m.d.sync += access.cleaned.eq(Mux(last, zeroing, 0))
        with m.If(zeroing.any()):
            m.d.sync += count.eq(count + 1)
            if S > 1:
                m.d.sync += last.eq(count == S - 2)
        m.d.comb += [clear_all_next.eq(clear_all), clearing_next.eq(clearing)]
        with m.If(access.clear):
            m.d.comb += [clear_all_next.eq(1), clearing_next.eq(0), restart_count.eq(1)]
            m.d.sync += pending.eq(0)
        with m.Elif(clear_all):
            with m.If(last):
                m.d.comb += clear_all_next.eq(0)
        with m.Elif(idle | last):
            # Start a pass with everything retired so far (a segment retired in this cycle starts at once).
            m.d.comb += clearing_next.eq(pending | access.retire)
            m.d.sync += pending.eq(0)
            with m.If(idle & (pending == 0)):
                m.d.comb += restart_count.eq(1)
        with m.Else():
            m.d.sync += pending.eq(pending | access.retire)
        with m.If(restart_count):
            m.d.sync += [count.eq(0), last.eq(S == 1)]
        m.d.sync += [clear_all.eq(clear_all_next), clearing.eq(clearing_next), idle.eq(clearing_next == 0),
                     zeroing.eq(Mux(clear_all_next, (1 << P) - 1, clearing_next))]
        return m
