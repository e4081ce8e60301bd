"""The filter's segments: one block RAM per physical segment, and their clearing."""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..model.config import Config, check_config

__all__ = ["segment_access_signature", "Segments"]


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
        ``read_data[j]`` the cycle after ``read_en`` and held while it is low. ``write_addr[j]``,
        ``write_data[j]``, ``write_en[j]``: one write per memory per cycle. ``ready``: low while every memory
        is cleared (after reset, and after ``clear``). ``retire[j]``: physical segment j is retired in this
        cycle; clear it in the background. ``clear``: clear every memory (``segment_blocks`` cycles, ``ready``
        low), as after reset. ``cleaned[j]``: physical segment j has been cleared in this cycle (its last block
        was written).

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

    def elaborate(self, platform):
        # Each memory is addressed by its own hash (paper 000 §5.1), so every port is separate: a key's blocks
        # in all segments are read in the same cycle, and an insert writes its k blocks in the same cycle. One
        # read port plus one write port per memory is what a simple dual-port block RAM gives (SB_RAM40_4K on
        # iCE40, DP16KD / PDPW16KD on ECP5).
        #
        # Clearing writes zeros one block per cycle, to every memory being cleared at once: all of them after
        # reset or ``clear`` (``ready`` low meanwhile), or, in the background, the retired ones. Commands never
        # read or write a retired segment, so this needs no arbitration; clearing wins over ``write_en`` anyway.
        # Segments retired while a pass is running wait for the next pass.
        c = self._config
        P = c.physical_segments
        access = self.access
        m = Module()
        clear_addr = Signal(range(c.segment_blocks))
        clear_all = Signal(init=1)                               # reset clears every memory first
        clearing = Signal(P)                                     # the pass running now
        pending = Signal(P)                                      # retired during the pass: the next one
        zeroing = Mux(clear_all, (1 << P) - 1, clearing)
        last = clear_addr == c.segment_blocks - 1
        m.d.comb += access.ready.eq(~clear_all)
        for j in range(P):
            mem = memory.Memory(shape=c.block_bits, depth=c.segment_blocks, init=[])
            m.submodules[f"segment{j}"] = mem
            read = mem.read_port()
            write = mem.write_port()
            m.d.comb += [read.addr.eq(access.read_addr[j]), read.en.eq(access.read_en),
                         access.read_data[j].eq(read.data)]
            with m.If(zeroing[j]):
                m.d.comb += [write.addr.eq(clear_addr), write.data.eq(0), write.en.eq(1)]
            with m.Else():
                m.d.comb += [write.addr.eq(access.write_addr[j]), write.data.eq(access.write_data[j]),
                             write.en.eq(access.write_en[j])]

        with m.If(zeroing.any()):
            m.d.sync += clear_addr.eq(clear_addr + 1)
            with m.If(last):
                m.d.comb += access.cleaned.eq(zeroing)
        with m.If(access.clear):
            m.d.sync += [clear_all.eq(1), clear_addr.eq(0), clearing.eq(0), pending.eq(0)]
        with m.Elif(clear_all):
            with m.If(last):
                m.d.sync += clear_all.eq(0)
        with m.Elif((clearing == 0) | last):
            # Start a pass with everything retired so far (a segment retired in this cycle starts at once).
            m.d.sync += [clearing.eq(pending | access.retire), pending.eq(0)]
            with m.If((clearing == 0) & (pending == 0)):
                m.d.sync += clear_addr.eq(0)
        with m.Else():
            m.d.sync += pending.eq(pending | access.retire)
        return m
