"""An asynchronous FIFO whose every path into and out of its block RAM starts at a register: the MAC's clock
domain crossing in a full device."""

from amaranth import Cat, DomainRenamer, Module, ResetInserter, ResetSignal, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["RegisteredAsyncFIFO"]

#: Entries of the small queue at the read side (flip-flops and LUT RAM), counting the reads in flight: a word
#: taken frees an entry that is filled again five clocks later (the level, the fetch, the block RAM, the register
#: behind it, the queue's output), so five entries keep one word per clock flowing.
STAGE_DEPTH = 5


def _gray_encode(value):
    return value ^ value[1:]


def _gray_decode(value):
    bits = [value[-1]]
    for bit in reversed(value[:-1]):
        bits.insert(0, bits[0] ^ bit)
    return Cat(*bits)


class RegisteredAsyncFIFO(wiring.Component):
    """A first-in first-out queue from ``w_domain`` to ``r_domain``: ``amaranth.lib.fifo.AsyncFIFO``'s Gray-code
    pointers and reset scheme, with a read side that never lets the reader's decision reach the block RAM.

    The read side fetches ahead: while the small queue at its output (:data:`STAGE_DEPTH` entries, counting the
    reads in flight) has room, it reads the block RAM at a pointer held in a register, passes the word through a
    register straight behind the block RAM's output, and writes it into the small queue, which the reader sees.
    So the block RAM's address, its 5.8 ns clock-to-out on ECP5 and the pointer comparisons each end at a register,
    and the reader's ``o.ready`` only moves the small queue. The write side increments its pointers under an enable.
    It costs three clocks of latency and :data:`STAGE_DEPTH` more entries of room.

    Parameters
    ----------
    width : int
        Bits per entry.
    depth : int
        Entries in the block RAM, a power of 2 from 4 to 65536 (the queue holds up to ``depth`` +
        :data:`STAGE_DEPTH`).
    w_domain, r_domain : str
        The write and read clock domains. The write domain's reset empties the queue (as ``lib.fifo``'s).

    Attributes
    ----------
    i : In(stream.Signature(width))
        Entries in, in ``w_domain``; ``ready`` while the block RAM has room.
    w_level : Out(range(depth + 1))
        Entries in the block RAM as the write side sees them: a register, a clock late and lagging the reads by
        the synchronizer's clocks (never more than the truth).
    o : Out(stream.Signature(width))
        Entries out, in order, in ``r_domain``.
    """

    def __init__(self, *, width: int, depth: int, w_domain: str, r_domain: str):
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise TypeError(f"width must be a positive integer, not {width!r}")
        if isinstance(depth, bool) or not isinstance(depth, int):
            raise TypeError(f"depth must be an integer, not {depth!r}")
        if depth < 4 or depth > 1 << 16 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of 2 from 4 to 65536, not {depth}")
        self._width, self._depth = width, depth
        self._w_domain, self._r_domain = w_domain, r_domain
        super().__init__({"i": In(stream.Signature(width)), "w_level": Out(range(depth + 1)),
                          "o": Out(stream.Signature(width))})

    @property
    def width(self) -> int:
        return self._width

    @property
    def depth(self) -> int:
        return self._depth

    def elaborate(self, platform):
        m = Module()
        # The crossing of lib.fifo.AsyncFIFO, retimed: in a design that fills an ECP5-25F its comparator, adder
        # and block RAM address in one path took 9 ns of an 8 ns clock, most of it routing. Here the block RAM
        # sees only registers, and each pointer moves under an enable computed from registers.
        w, r = self._w_domain, self._r_domain
        bits = self._depth.bit_length()                       # one more than the address: full vs. empty

        storage = m.submodules.storage = Memory(shape=self._width, depth=self._depth, init=[])
        w_port = storage.write_port(domain=w)
        r_port = storage.read_port(domain=r)

        # Write side.
        produce_bin = Signal(bits)
        produce_gry = Signal(bits)
        consume_gry = Signal(bits, reset_less=True)          # the read side's, below
        consume_w_gry = Signal(bits)
        consume_w_bin = Signal(bits)
        m.submodules.consume_cdc = FFSynchronizer(consume_gry, consume_w_gry, o_domain=w)
        full = ((produce_gry[-1] != consume_w_gry[-1]) & (produce_gry[-2] != consume_w_gry[-2]) &
                (produce_gry[:-2] == consume_w_gry[:-2]))
        do_write = Signal()
        m.d.comb += [self.i.ready.eq(~full), do_write.eq(self.i.valid & ~full),
                     w_port.addr.eq(produce_bin[:-1]), w_port.data.eq(self.i.payload), w_port.en.eq(do_write)]
        produce_next = Signal(bits)
        m.d.comb += produce_next.eq(produce_bin + 1)
        with m.If(do_write):
            m.d[w] += [produce_bin.eq(produce_next), produce_gry.eq(_gray_encode(produce_next))]
        m.d[w] += [consume_w_bin.eq(_gray_decode(consume_w_gry)), self.w_level.eq(produce_bin - consume_w_bin)]

        # Read side: its pointers are reset from the write side's (lib.fifo's scheme), hence reset_less.
        produce_r_gry = Signal(bits)
        m.submodules.produce_cdc = FFSynchronizer(produce_gry, produce_r_gry, o_domain=r)
        consume_bin = Signal(bits, reset_less=True)
        r_rst = Signal()
        m.submodules.rst_cdc = AsyncFFSynchronizer(ResetSignal(w, allow_reset_less=True), r_rst, o_domain=r)

        stage = fifo.SyncFIFOBuffered(width=self._width, depth=STAGE_DEPTH)
        m.submodules.stage = stage = ResetInserter({r: r_rst})(DomainRenamer(r)(stage))
        fetched = Signal()                                   # a read of the block RAM: its word is out next clock
        latched = Signal()                                   # the word is in the register behind it
        word = Signal(self._width)
        in_flight = Signal(range(STAGE_DEPTH + 3))
        m.d.comb += in_flight.eq(stage.r_level + fetched + latched)
        fetch = Signal()
        m.d.comb += fetch.eq((consume_gry != produce_r_gry) & (in_flight < STAGE_DEPTH) & ~r_rst)
        consume_next = Signal(bits)
        m.d.comb += [consume_next.eq(consume_bin + 1), r_port.addr.eq(consume_bin[:-1])]
        with m.If(fetch):
            m.d[r] += [consume_bin.eq(consume_next), consume_gry.eq(_gray_encode(consume_next))]
        m.d[r] += [fetched.eq(fetch), latched.eq(fetched & ~r_rst), word.eq(r_port.data)]
        with m.If(r_rst):
            m.d[r] += [consume_gry.eq(produce_r_gry), consume_bin.eq(_gray_decode(produce_r_gry)),
                       fetched.eq(0)]
        m.d.comb += [stage.w_data.eq(word), stage.w_en.eq(latched),
                     self.o.payload.eq(stage.r_data), self.o.valid.eq(stage.r_rdy), stage.r_en.eq(self.o.ready)]
        return m
