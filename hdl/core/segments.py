# amaranth: UnusedElaboratable=no
"""The filter's segments: one block RAM per physical segment, and their clearing.

Each segment's block RAM is chosen by the platform the design is elaborated for (:func:`block_ram_for`): on an
ECP5, DP16KD instances with their output register (:class:`~apbbf.hdl.lib.ecp5_ram.ECP5BlockRAM`); elsewhere (iCE40,
or no platform: simulation and the portable Verilog export) an inferred ``lib.memory`` followed by a register
(:class:`~apbbf.hdl.lib.block_ram.InferredBlockRAM`), which Yosys maps to SB_RAM40_4K on iCE40 and Vivado or Quartus fold into their block
RAMs' output registers. Either way a read takes :data:`READ_LATENCY` cycles, so the scans, the cycle model and the
simulations are the same on every platform.

With ``parity`` (:class:`Segments`), every block word carries one even-parity bit per 8 data bits
(:func:`~apbbf.hdl.lib.devices.parity_bits`), generated on every write and checked where the read data arrives; a word
whose parity fails reads as all ones (paper 003: a failed part reads as "present"), so a flipped bit can make the
filter answer a false positive, never a false negative. What it costs in memory: on ECP5 the parity rides in the
DP16KD's ninth bits (:class:`~apbbf.hdl.lib.ecp5_ram.ECP5BlockRAM`), no more DP16KD for B >= 8 (a segment deeper than
2048 blocks then has several DP16KD rows and a read multiplexer); on iCE40 and in the portable export the word is ``B + B/8`` bits wide, so a B = 64 segment of SB_RAM40_4K
(16 bits wide) takes 5 columns instead of 4 (:meth:`apbbf.hdl.lib.devices.BlockRAM.tile` counts it). The latency is
unchanged (:data:`READ_LATENCY`): the check is combinational between the block RAM's last register and the
scans, an XOR per byte (9 inputs) and an OR over the bytes in front of each block bit.

(The pragma above: the memories and the block RAMs are made in ``__init__`` (and :meth:`Segments.block_rams`)
and are used exactly when the component that made them is, which warns on its own when it is not.)
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config
from ..lib.block_ram import READ_LATENCY, block_ram_for
from ..lib.devices import check_parity, parity_bits
from ..lib.ecp5_ram import SimulatedECP5, is_ecp5
from .types import ConfigSignature

__all__ = ["READ_LATENCY", "SegmentAccessSignature", "segment_access_signature", "parity_of", "Segments"]



class SegmentAccessSignature(ConfigSignature):
    """What a scan sees of the segments, from the scan's side: a read and a write port per physical segment
    (block index, B-bit block); ``ready`` (not clearing every memory, as after reset); ``retire`` (segments to
    clear in the background), ``clear`` (clear every memory) and ``cleaned`` (segments whose clearing is
    done; ``cleaned_next``: what ``cleaned`` reads next cycle)."""

    @staticmethod
    def members_of(config: Config) -> dict:
        P, index = config.physical_segments, config.block_index_bits
        return {
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
            "cleaned_next": In(P),
        }


#: The former name of :class:`SegmentAccessSignature`.
segment_access_signature = SegmentAccessSignature


def parity_of(word):
    """The even-parity bits of ``word`` (an Amaranth value): one per 8 bits, the XOR of bits ``8i`` to
    ``8i + 7`` (the last group may be narrower); all zeros for a word of zeros."""
    return Cat(*(word[i:i + 8].xor() for i in range(0, len(word), 8)))


class Segments(wiring.Component):
    """``k + l + 1`` (+ ``extra_segments``) memories of ``segment_blocks`` × ``block_bits``, each with a read
    and a write port, and their clearing.

    Parameters
    ----------
    config : Config
    parity : bool
        Protect every block word with one even-parity bit per 8 data bits: generated on every write (the
        clearing's zeros included: the parity of zeros is zeros) and checked where the read data arrives; a word
        whose parity fails is handed to the scan as all ones, so a flipped bit can cause false positives (and a
        scan's read-modify-write writes the ones back, with good parity, until the segment is cleared), never a
        false negative. An even number of flips within one byte goes unnoticed. Memory cost: see the module
        docstring; latency: none, the check is combinational in front of the scans.

    Attributes
    ----------
    access : In(SegmentAccessSignature(config))
        The scan's ports. ``read_addr[j]``, ``read_en``: the read ports are synchronous, data is valid in
        ``read_data[j]`` :data:`READ_LATENCY` cycles after ``read_en`` (two: the block RAM's address and output
        registers) and held until the next read's data arrives. ``write_addr[j]``,
        ``write_data[j]``, ``write_en[j]``: one write per memory per cycle. ``ready``: low while every memory
        is cleared (after reset, and after ``clear``). ``retire[j]``: physical segment j is retired in this
        cycle; clear it in the background. ``clear``: clear every memory, as after reset: the clearing starts
        the cycle after (``segment_blocks`` cycles), and ``ready`` is low from that cycle to its end.
        ``cleaned[j]``: physical segment j is clear (its last block was written in the cycle before; a register,
        so that the circular buffer's decision takes it without the clearing's logic in front); ``cleaned_next``:
        what ``cleaned`` reads next cycle.
    parity_errors : Out(32)
        With ``parity`` only: words read whose parity failed, since reset (wraps). It counts per memory read
        port per read: a read (``read_en``) reads every memory, and each memory whose word fails counts one, in
        the cycle after its data arrives, whether or not the scan uses that segment's block (the parallel scan
        reads every cycle, so a failing word read again by later commands counts again).

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``parity`` not a bool.
    """

    def __init__(self, config: Config, *, parity: bool = False):
        check_config(config)
        check_parity(parity)
        self._config = config
        self._parity = parity
        self._block_rams = {}
        members = {"access": In(SegmentAccessSignature(config))}
        if parity:
            members["parity_errors"] = Out(32)
        super().__init__(members)

    @property
    def config(self) -> Config:
        return self._config

    @property
    def parity(self) -> bool:
        """Whether the block words carry parity."""
        return self._parity

    @property
    def read_latency(self) -> int:
        """Cycles from ``read_en`` to ``read_data``: :data:`READ_LATENCY`."""
        return READ_LATENCY

    def block_rams(self, platform=None) -> tuple:
        """The block RAM of every physical segment when elaborated for ``platform``
        (:func:`block_ram_for`): made on the first call for a kind of platform (inferred, ECP5, simulated ECP5)
        and the same objects on every later call and elaboration for that kind."""
        kind = ("ecp5", isinstance(platform, SimulatedECP5)) if is_ecp5(platform) else ("inferred",)
        if kind not in self._block_rams:
            c = self._config
            self._block_rams[kind] = tuple(block_ram_for(platform, c.segment_blocks, c.block_bits,
                                                         parity=self._parity)
                                           for _ in range(c.physical_segments))
        return self._block_rams[kind]

    def memories(self, platform=None) -> tuple:
        """For every physical segment, the ``lib.memory.Memory`` objects that hold its words when elaborated for
        ``platform`` (``None`` or a :class:`~apbbf.hdl.lib.ecp5_ram.SimulatedECP5`: one inferred memory, or one
        per DP16KD model; on a real ECP5 none, DP16KD instances hold them). A simulation, a fault injector for
        one, reads and writes the words with ``ctx.get``/``ctx.set`` on ``memory.data[address]`` and watches the
        reads on ``memory.read_ports[0]``. With parity a stored word is the data bits, then one even-parity bit
        per 8 of them."""
        return tuple(ram.memories for ram in self.block_rams(platform))

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
        # memory, so that each memory's write multiplexers hang on their own flip-flop, near them; and a second,
        # inverted copy (so that Yosys keeps it apart) for the high half of the write data, which a wide block
        # RAM tiling puts in other blocks than the low half (two DP16KD side by side on ECP5).
        zeroing = Signal(P, init=(1 << P) - 1)
        keeping = Signal(P)                                      # ~zeroing
        clear_all_next, clearing_next = Signal(), Signal(P)
        # A pass lasts S cycles (``count``, ``last``: the pass's final cycle, a register); each memory zeroes the
        # block its own counter names, and the counter advances while the memory is zeroed: any S cycles in a row
        # name every block once, wherever the counter starts.
        count = Signal(range(S))
        last = Signal(init=S == 1)
        restart_count = Signal()
        # ``clear`` is taken a cycle late, from a register: it is the scan's logic (the parallel scan's restart
        # with the pipeline empty), and behind it were ``zeroing``'s flip-flops by every memory, the critical path
        # of the time-bounded core. ``ready`` is a register too: low while clearing every memory or about to
        # (``blocked`` is clear_all | clear, a cycle ahead).
        clear = Signal()
        blocked = Signal(init=1)
        m.d.sync += clear.eq(access.clear)
        m.d.comb += access.ready.eq(~blocked)
        # Parity: a word whose parity fails becomes all ones before any scan logic (forwarding included) sees
        # it, because a failed part must read as "present": ones can only add false positives, a lost one would
        # be a false negative. The check sits after the block RAM's last register, where the data arrives, so
        # the read latency stays READ_LATENCY. ``arrived`` marks the cycle in which a read's data arrives, for
        # the counter.
        failing = Signal(P) if self._parity else None
        for j, ram in enumerate(self.block_rams(platform)):
            m.submodules[f"segment{j}"] = ram
            position = Signal(range(S), name=f"zero_addr{j}")
            with m.If(zeroing[j]):
                m.d.sync += position.eq(position + 1)
            m.d.comb += [ram.read_addr.eq(access.read_addr[j]), ram.read_en.eq(access.read_en)]
            if self._parity:
                m.d.comb += [failing[j].eq((parity_of(ram.read_data) != ram.read_parity).any()),
                             access.read_data[j].eq(ram.read_data | failing[j].replicate(c.block_bits))]
            else:
                m.d.comb += access.read_data[j].eq(ram.read_data)
            half = c.block_bits // 2
            data = access.write_data[j]
            low = [Mux(zeroing[j], 0, data[:half])] if half else []
            m.d.comb += ram.write_data.eq(Cat(*low, Mux(keeping[j], data[half:], 0)))
            with m.If(zeroing[j]):
                m.d.comb += [ram.write_addr.eq(position), ram.write_en.eq(1)]
                if self._parity:
                    m.d.comb += ram.write_parity.eq(0)
            with m.Else():
                m.d.comb += [ram.write_addr.eq(access.write_addr[j]), ram.write_en.eq(access.write_en[j])]
                if self._parity:
                    m.d.comb += ram.write_parity.eq(parity_of(access.write_data[j]))
        if self._parity:
            # Counted from registers, off the read path: the failures of the data that arrived last cycle.
            arrived = Signal(READ_LATENCY)
            counted = Signal(P)
            m.d.sync += [arrived.eq(Cat(access.read_en, arrived[:-1])), counted.eq(Mux(arrived[-1], failing, 0)),
                         self.parity_errors.eq(self.parity_errors + sum(counted[j] for j in range(P)))]

        # zeroing is Mux(clear_all, every memory, clearing) at all times; cleaned_next takes it from those two
        # registers, not from zeroing, whose flip-flops sit by the memories' write multiplexers.
        m.d.comb += access.cleaned_next.eq(Mux(last, Mux(clear_all, (1 << P) - 1, clearing), 0))
        m.d.sync += access.cleaned.eq(access.cleaned_next)
        with m.If(zeroing.any()):
            m.d.sync += count.eq(count + 1)
            if S > 1:
                m.d.sync += last.eq(count == S - 2)
        m.d.comb += [clear_all_next.eq(clear_all), clearing_next.eq(clearing)]
        with m.If(clear):
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
        m.d.sync += [clear_all.eq(clear_all_next), blocked.eq(clear_all_next | access.clear),
                     clearing.eq(clearing_next), idle.eq(clearing_next == 0),
                     zeroing.eq(Mux(clear_all_next, (1 << P) - 1, clearing_next)),
                     keeping.eq(~Mux(clear_all_next, (1 << P) - 1, clearing_next))]
        return m
