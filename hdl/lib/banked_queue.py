"""A first-in first-out queue of wide entries in block RAM, split by bit slice into banks with their own pointers,
and read ahead through a small flip-flop queue per bank."""

from amaranth import Cat, Module, Mux, Shape, Signal, Value
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer
from .credits import credit_flag
from .devices import parity_bits
from .ecp5_ram import ECP5BlockRAM, SimulatedECP5, is_ecp5
from .block_ram import block_ram_for

__all__ = ["STAGE_DEPTH", "BankedQueue"]

#: Entries of the small queue behind each bank. A read of the block RAM takes a credit, one entry of it, given back
#: when the entry leaves the queue five clocks later at one per clock (the read, the register behind the block
#: RAM, the queue's write and its output register, the credit's count): five credits keep one entry per clock
#: flowing, and the queue has one entry more, as a ``SyncFIFOBuffered`` needs.
STAGE_DEPTH = 6


def _bank_ram(platform, depth: int, width: int):
    """One bank's block RAM for ``platform``, with the bits written and read: on ECP5 an
    :class:`~apbbf.hdl.lib.ecp5_ram.ECP5BlockRAM` whose ``width`` bits are its data and its parity bits (the
    DP16KD's ninth bits: 2048 x 9 per block, as Yosys maps an inferred memory, where the data alone would tile
    2048 x 8), elsewhere :func:`~apbbf.hdl.lib.block_ram.block_ram_for`'s."""
    if not is_ecp5(platform):
        ram = block_ram_for(platform, depth, width)
        return ram, ram.write_data, ram.read_data
    data = next(bits for bits in range(1, width + 1) if bits + parity_bits(bits) >= width)
    ram = ECP5BlockRAM(depth, data, model=isinstance(platform, SimulatedECP5), parity=True)
    return ram, Cat(ram.write_data, ram.write_parity), Cat(ram.read_data, ram.read_parity)[:width]


class BankedQueue(wiring.Component):
    """A queue of ``depth`` entries of ``shape`` in block RAM (and :data:`STAGE_DEPTH` more, in its read stage),
    written and read as streams, one entry per clock each way.

    The entry's bits are split into banks of about ``bank_width`` bits. Each bank is its own block RAM (on ECP5,
    DP16KD with their output register, as the segments'; elsewhere an inferred memory with a register behind it)
    with its own pointers and flags, read ahead into its own :class:`~amaranth.lib.fifo.SyncFIFOBuffered` of
    :data:`STAGE_DEPTH` entries (LUT RAM and flip-flops) and a skid register (one entry), so that ``r.ready``
    reaches one flip-flop per bank. The banks see the same writes and reads, so they hold the same entries at every
    clock; ``r.valid`` is bank 0's, and ``w.ready`` a copy of the banks' room flags.

    Parameters
    ----------
    shape : ShapeLike
        One entry (a layout gives typed payloads).
    depth : int
        Entries in block RAM, 2..65536 (a power of two fills whole block RAMs: the depth is the memory's).
    bank_width : int
        Bits per bank, about (1..4096; the entry's width divided into ``width // bank_width`` banks of equal width,
        or one bank when it is narrower). The default, 72, is eight 2048 x 9 block RAMs of ECP5.
    registered_write : bool
        Each bank takes the write into registers of its own (its slice of the entry and its write) and writes
        its block RAM from them a clock later (default ``False``): ``w``'s nets then reach one flip-flop per bit
        and a few per bank, not block RAMs spread over the device. An entry leaves a clock later; the capacity
        and the rate are the same.

    Attributes
    ----------
    w : In(stream.Signature(shape))
        Entries in; ``ready`` (a flip-flop) while the queue has room.
    r : Out(stream.Signature(shape))
        Entries out, in order; ``valid`` from two flip-flops, ``payload`` from a multiplexer of two registers.

    Raises
    ------
    TypeError
        If ``depth`` or ``bank_width`` is not an integer, or ``registered_write`` not a bool.
    ValueError
        If ``depth`` or ``bank_width`` is out of range.
    """

    def __init__(self, shape, depth: int, *, bank_width: int = 72, registered_write: bool = False):
        self._width = Shape.cast(shape).width
        self._depth = check_integer("depth", depth, range(2, 65537))
        self._bank_width = check_integer("bank_width", bank_width, range(1, 4097))
        if not isinstance(registered_write, bool):
            raise TypeError(f"registered_write must be a bool, not {registered_write!r}")
        self._registered_write = registered_write
        super().__init__({"w": In(stream.Signature(shape)), "r": Out(stream.Signature(shape))})

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def registered_write(self) -> bool:
        return self._registered_write

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
        # Each bank reads ahead, as ``RegisteredAsyncFIFO`` does: while its stage has a credit and its block RAM
        # an entry (two registered flags, kept by cases from counts), it reads the block RAM at a pointer held in
        # a register, the word goes through a register straight behind the block RAM's output, then into the
        # stage. So the block RAM's read port has no enable (``lib.fifo.SyncFIFOBuffered``'s was its level's
        # compare, fanned out to the bank's block RAMs and output register: the critical path at 512 bits).
        #
        # That register is the block RAM's own output register where it has one (``_bank_ram``): on ECP5 DP16KD
        # instances with OUTREG, as the segments', so the read is out of the block's register (the data sheet's 0.96 ns
        # clock-to-out), not its array (5.8 ns measured). An inferred memory would also carry Yosys's read-write
        # collision bypass (the registered write data, an address compare and a multiplexer) in front of that
        # register: the queue never reads an entry in the clock it is written (a read waits for the registered
        # count that the write raises), so nothing needs it.
        #
        # The reader's ``r.ready`` is a decision made far from most banks. It reaches one flip-flop per bank
        # (``held_valid``, a skid register's), not the enables of the bank's data registers: the skid register
        # loads whenever it is empty, and the stage is read whenever the skid register is empty, so the head moves
        # on whether or not the reader takes it, into the skid register if it does not.
        m = Module()
        w_bits, r_bits = Value.cast(self.w.payload), Signal(self._width)
        depth = self._depth                                   # entries in each bank's block RAM
        # ``w.ready`` is a flip-flop: set while the block RAMs hold fewer than ``depth`` entries, counting the write
        # and the read of this clock, so that a write in the next clock always fits. Every bank keeps that flag
        # itself (the banks hold the same entries, so their flags are equal) and writes with ``w.valid`` and its
        # own flag: one write from bank 0's flag reached all of a 512-bit beat's 65 DP16KD (a net of 8.3 ns) and
        # every bank's pointer and counts. ``w.ready`` is one more copy, with a count of its own, so that the
        # writer's logic (the de-duplicator's accept) is placed by that flip-flop and not by bank 0's block RAM
        # (a net of 3.86 ns in front of the de-duplicator's frame length at 64 bits).
        #
        # With ``registered_write``, a bank's write goes through registers placed by its block RAMs: the write (the
        # input's valid and the bank's room: the bank's own, so Yosys does not merge the banks' copies) and the
        # bank's slice of the entry. Placed alone at 512 bits, the buffer's path was the input's valid -> a bank's
        # write enable -> a net of 4.5-5.2 ns to a DP16KD across the die (114.8 MHz). The room flags count the
        # write as it is taken, the block RAM's entries (``nonempty``) as it is written, so the block RAM never
        # holds more than ``depth`` entries and is never read before it is written.
        room = Signal(init=1)
        m.d.comb += [self.w.ready.eq(room), self.r.payload.eq(r_bits)]
        low = 0
        for index, width in enumerate(self.bank_widths):
            storage, stored, loaded = _bank_ram(platform, depth, width)
            m.submodules[f"bank{index}"] = storage
            produce = Signal(range(depth), name=f"bank{index}_produce")
            consume = Signal(range(depth), name=f"bank{index}_consume")
            nonempty = Signal(name=f"bank{index}_nonempty")
            credit = Signal(init=1, name=f"bank{index}_credit")
            fetch = Signal(name=f"bank{index}_fetch")
            fetched, latched = Signal(name=f"bank{index}_fetched"), Signal(name=f"bank{index}_latched")
            m.submodules[f"stage{index}"] = stage = fifo.SyncFIFOBuffered(width=width, depth=STAGE_DEPTH)
            give = stage.r_en & stage.r_rdy
            # The block RAM reads ``consume`` on every clock; its data is two clocks later (read, output
            # register), when ``latched`` says whether it was a fetch.
            bank_room = Signal(init=1, name=f"bank{index}_room")
            bank_take = Signal(name=f"bank{index}_take")           # the bank takes ``w``'s entry
            m.d.comb += bank_take.eq(self.w.valid & bank_room)
            if self._registered_write:
                bank_write = Signal(name=f"bank{index}_write")
                # Starting from all ones (a don't-care: no write before the first take), so that Yosys does not
                # merge them with a writer's own register of the same entry loaded every clock (the de-duplicator's
                # register in front of its key extractor), which would then be placed between the two.
                bank_data = Signal(width, name=f"bank{index}_write_data", init=(1 << width) - 1, reset_less=True)
                m.d.sync += [bank_write.eq(bank_take), bank_data.eq(w_bits[low:low + width])]
            else:
                bank_write, bank_data = bank_take, w_bits[low:low + width]
            m.d.comb += [fetch.eq(nonempty & credit),
                         storage.write_addr.eq(produce), stored.eq(bank_data),
                         storage.write_en.eq(bank_write), storage.read_addr.eq(consume), storage.read_en.eq(1),
                         stage.w_data.eq(loaded), stage.w_en.eq(latched)]
            m.d.sync += [fetched.eq(fetch), latched.eq(fetched)]
            with m.If(bank_write):
                m.d.sync += produce.eq(Mux(produce == depth - 1, 0, produce + 1))
            with m.If(fetch):
                m.d.sync += consume.eq(Mux(consume == depth - 1, 0, consume + 1))
            # The flags from counts, by cases, so that no adder is behind them: the entries held in the block
            # RAM (not empty), the stage's credits, and (bank 0's) the entries free in the block RAM.
            m.d.sync += [nonempty.eq(credit_flag(m, f"bank{index}_held", fetch, bank_write, depth, init=0)),
                         credit.eq(credit_flag(m, f"bank{index}_stage", fetch, give, STAGE_DEPTH - 1)),
                         bank_room.eq(credit_flag(m, f"bank{index}_free", bank_take, fetch, depth))]
            held = Signal(width, name=f"held{index}")
            held_valid = Signal(name=f"held{index}_valid")
            m.d.comb += stage.r_en.eq(~held_valid)
            with m.If(~held_valid):
                m.d.sync += [held.eq(stage.r_data), held_valid.eq(stage.r_rdy & ~self.r.ready)]
            with m.Elif(self.r.ready):
                m.d.sync += held_valid.eq(0)
            m.d.comb += r_bits[low:low + width].eq(Mux(held_valid, held, stage.r_data))
            low += width
            if index == 0:
                m.d.comb += self.r.valid.eq(held_valid | stage.r_rdy)
                m.d.sync += room.eq(credit_flag(m, "room", self.w.valid & room, fetch, depth))
        return m
