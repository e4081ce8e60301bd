"""The filter's segments: one block RAM per physical segment, and their clearing."""

from amaranth import Module, Signal
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..model.config import Config, check_config

__all__ = ["Segments"]


class Segments(wiring.Component):
    """``k + l + 1`` memories of ``segment_blocks`` × ``block_bits``, each with a read and a write port.

    Each memory is addressed by its own hash (paper 000 §5.1), so every port is separate: a key's blocks in
    all segments are read in the same cycle, and an insert writes its k blocks in the same cycle. One read
    port plus one write port per memory is what a simple dual-port block RAM gives (SB_RAM40_4K on iCE40,
    DP16KD / PDPW16KD on ECP5).

    Clearing writes zeros one block per cycle: every memory after reset (``ready`` low meanwhile), and the
    spare segment after a shift (``scrub`` starts it, ``scrubbing`` is high until it is done). Commands never
    read or write the spare, so clearing it needs no arbitration; clearing wins over ``write_en`` anyway.

    Parameters
    ----------
    config : Config

    Attributes
    ----------
    read_addr : In(ArrayLayout(log2(segment_blocks), k+l+1))
    read_en : In(1)
        The read ports are synchronous: data is valid the cycle after ``read_en``, and held while it is low.
    read_data : Out(ArrayLayout(block_bits, k+l+1))
    write_addr, write_data, write_en : In
        One write per memory per cycle; ``write_en`` has one bit per memory.
    spare : In(range(k+l+1))
        Physical position of the spare segment.
    scrub : In(1)
        Start clearing the spare (the cycle after a shift made it the spare).
    ready : Out(1)
        Low while every memory is cleared after reset.
    scrubbing : Out(1)
        The spare is being cleared.
    """

    def __new__(cls, config, *args, **kwargs):
        check_config(config)
        return super().__new__(cls, config, *args, **kwargs)

    def __init__(self, config: Config):
        self._config = config
        P, index = config.physical_segments, config.block_index_bits
        super().__init__({
            "read_addr": In(data.ArrayLayout(index, P)),
            "read_en": In(1),
            "read_data": Out(data.ArrayLayout(config.block_bits, P)),
            "write_addr": In(data.ArrayLayout(index, P)),
            "write_data": In(data.ArrayLayout(config.block_bits, P)),
            "write_en": In(P),
            "spare": In(range(P)),
            "scrub": In(1),
            "ready": Out(1),
            "scrubbing": Out(1),
        })

    @property
    def config(self) -> Config:
        return self._config

    def elaborate(self, platform):
        c = self._config
        m = Module()
        clear_addr = Signal(range(c.segment_blocks))
        clear_all = Signal(init=1)                               # reset clears every memory first
        m.d.comb += self.ready.eq(~clear_all)
        for j in range(c.physical_segments):
            mem = memory.Memory(shape=c.block_bits, depth=c.segment_blocks, init=[])
            m.submodules[f"segment{j}"] = mem
            read = mem.read_port()
            write = mem.write_port()
            m.d.comb += [read.addr.eq(self.read_addr[j]), read.en.eq(self.read_en),
                         self.read_data[j].eq(read.data)]
            with m.If(clear_all | (self.scrubbing & (self.spare == j))):
                m.d.comb += [write.addr.eq(clear_addr), write.data.eq(0), write.en.eq(1)]
            with m.Else():
                m.d.comb += [write.addr.eq(self.write_addr[j]), write.data.eq(self.write_data[j]),
                             write.en.eq(self.write_en[j])]
        with m.If(clear_all | self.scrubbing):
            m.d.sync += clear_addr.eq(clear_addr + 1)
            with m.If(clear_addr == c.segment_blocks - 1):
                m.d.sync += [clear_all.eq(0), self.scrubbing.eq(0)]
        with m.If(self.scrub):
            m.d.sync += [self.scrubbing.eq(1), clear_addr.eq(0)]
        return m
