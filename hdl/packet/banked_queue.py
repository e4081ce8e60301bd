"""A first-in first-out queue of wide entries in block RAM, split by bit slice into banks with their own pointers,
and read through a small flip-flop queue per bank."""

from amaranth import Module, Mux, Shape, Signal, Value
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer

__all__ = ["STAGE_DEPTH", "BankedQueue"]

#: Entries of the small queue behind each bank: two block RAM reads in flight and one at the head keep one entry
#: per clock flowing.
STAGE_DEPTH = 4


class BankedQueue(wiring.Component):
    """A queue of ``depth`` + 1 entries of ``shape`` in block RAM (and :data:`STAGE_DEPTH` + 1 more, in its read
    stage), written and read as streams, one entry per clock each way.

    The entry's bits are split into banks of about ``bank_width`` bits. Each bank is its own
    :class:`amaranth.lib.fifo.SyncFIFOBuffered` in block RAM, with its own pointers, level and enables, followed by
    its own :class:`~amaranth.lib.fifo.SyncFIFOBuffered` of :data:`STAGE_DEPTH` entries in LUT RAM and flip-flops,
    and a skid register (one entry), so that ``r.ready`` reaches one flip-flop per bank. The banks see the same writes and reads, so they hold the same entries at every clock; ``w.ready`` and
    ``r.valid`` are bank 0's.

    Parameters
    ----------
    shape : ShapeLike
        One entry (a layout gives typed payloads).
    depth : int
        Entries in block RAM, 2..65536 (each bank has one more, so that ``w.ready`` can be a flip-flop).
    bank_width : int
        Bits per bank, about (1..4096; the entry's width divided into ``width // bank_width`` banks of equal width,
        or one bank when it is narrower). The default, 72, is eight 2048 x 9 block RAMs of ECP5.

    Attributes
    ----------
    w : In(stream.Signature(shape))
        Entries in; ``ready`` (a flip-flop) while the queue has room.
    r : Out(stream.Signature(shape))
        Entries out, in order; ``valid`` from two flip-flops, ``payload`` from a multiplexer of two registers.

    Raises
    ------
    TypeError
        If ``depth`` or ``bank_width`` is not an integer.
    ValueError
        If ``depth`` or ``bank_width`` is out of range.
    """

    def __init__(self, shape, depth: int, *, bank_width: int = 72):
        self._width = Shape.cast(shape).width
        self._depth = check_integer("depth", depth, range(2, 65537))
        self._bank_width = check_integer("bank_width", bank_width, range(1, 4097))
        super().__init__({"w": In(stream.Signature(shape)), "r": Out(stream.Signature(shape))})

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def bank_widths(self) -> tuple:
        """Each bank's width, bits, from the entry's least significant bit up."""
        banks = max(1, self._width // self._bank_width)
        base, extra = divmod(self._width, banks)
        return tuple(base + (bank < extra) for bank in range(banks))

    def elaborate(self, platform):
        # A queue as wide as a 512-bit beat spans 65 block RAMs, spread over the device. As one FIFO, its pointers
        # and enables are nets of that fan-out from one flip-flop or LUT, 13-16 ns of routing on ECP5-85F. Split by
        # bits, each bank's nets reach only its own few block RAMs (nextpnr may still spread those apart).
        #
        # The reader's ``r.ready`` is a decision made far from most banks. It reaches one flip-flop per bank
        # (``held_valid``, a skid register's), not the enables of the bank's data registers: the skid register
        # loads whenever it is empty, and the stage is read whenever the skid register is empty, so the head moves
        # on whether or not the reader takes it, into the skid register if it does not.
        m = Module()
        w_bits, r_bits = Value.cast(self.w.payload), Signal(self._width)
        low, banks = 0, []
        for index, width in enumerate(self.bank_widths):
            m.submodules[f"bank{index}"] = bank = fifo.SyncFIFOBuffered(width=width, depth=self._depth + 1)
            m.submodules[f"stage{index}"] = stage = fifo.SyncFIFOBuffered(width=width, depth=STAGE_DEPTH)
            # The block RAM's read enable follows the stage's registered level, not the reader's decision.
            m.d.comb += [bank.w_data.eq(w_bits[low:low + width]),
                         stage.w_data.eq(bank.r_data), stage.w_en.eq(bank.r_rdy), bank.r_en.eq(stage.w_rdy)]
            held = Signal(width, name=f"held{index}")
            held_valid = Signal(name=f"held{index}_valid")
            m.d.comb += stage.r_en.eq(~held_valid)
            with m.If(~held_valid):
                m.d.sync += [held.eq(stage.r_data), held_valid.eq(stage.r_rdy & ~self.r.ready)]
            with m.Elif(self.r.ready):
                m.d.sync += held_valid.eq(0)
            m.d.comb += r_bits[low:low + width].eq(Mux(held_valid, held, stage.r_data))
            low += width
            banks.append(bank)
            if index == 0:
                m.d.comb += self.r.valid.eq(held_valid | stage.r_rdy)
        # ``w.ready`` is a flip-flop too: set while bank 0 (of depth + 1 entries) held fewer than ``depth`` a clock
        # ago, so that a write in this cycle always fits (one write per clock).
        room = Signal(init=1)
        m.d.sync += room.eq(banks[0].level < self._depth)
        for bank in banks:
            m.d.comb += bank.w_en.eq(self.w.valid & room)
        m.d.comb += [self.w.ready.eq(room), self.r.payload.eq(r_bits)]
        return m
