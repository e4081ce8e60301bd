"""A first-in first-out queue in LUT RAM whose write is not gated by its level: for a writer that never fills it."""

from amaranth import Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer
from .credits import stepped

__all__ = ["UngatedFIFO"]


class UngatedFIFO(wiring.Component):
    """A queue of ``depth`` entries of ``width`` bits with the ports of :class:`amaranth.lib.fifo.SyncFIFO` (the
    head read straight from the memory), for a writer that never writes it full: ``w_en`` is the memory's write
    enable as it is, not ANDed with ``w_rdy``.

    ``lib.fifo.SyncFIFO`` gates every write with its room (its level's compare), and that gate is the write enable
    of every LUT RAM cell of the queue: a 530-bit beat takes 133 of them, spread over the device. Where the writer
    is sized so that the queue never fills (the key extractor's queues: depths that cover the classifier's
    latency, and tests that check ``w_rdy`` on every write), the write enable is the writer's own flip-flop.

    With ``taken``, the entry the last read took stays readable at ``r_taken`` until the next read, from the
    memory (one more entry, so that no write reaches it), not from a register: a reader that holds the head in a
    register of ``width`` flip-flops would hang their enable on the read. ``r_taken`` is the memory's read at a
    register of a few bits (the taken entry's address), loaded with the read.

    With ``slices``, the entry's bits are kept in that many memories side by side, each written and read at
    pointers of its own: a 512-bit entry is 128 LUT RAM cells (16 x 4 bits each), and one register's net to all of
    their addresses spans the device.

    Parameters
    ----------
    width : int
        Bits per entry, 1..4096.
    depth : int
        Entries, 2..65536.
    taken : bool
        Add the port ``r_taken`` (default ``False``).
    slices : int
        Memories the entry's bits are split into, 1..64 and at most ``width`` (default 1), each with its own
        pointers.

    Attributes
    ----------
    w_data, w_en : In
        The entry to write, and the write: it must find ``w_rdy`` high (a write into a full queue overwrites the
        oldest entry).
    w_rdy : Out(1)
        The queue has room (``level != depth``).
    r_data : Out(width)
        The oldest entry, while ``r_rdy``.
    r_en : In(1)
        Take the oldest entry (ignored while ``r_rdy`` is low).
    r_rdy : Out(1)
        The queue holds an entry.
    level : Out(range(depth + 1))
        Entries held (the taken entry is not one of them).
    r_taken : Out(width)
        With ``taken``: the entry the last read took, until the next read (undefined before the first).

    Raises
    ------
    TypeError
        If ``width``, ``depth`` or ``slices`` is not an integer, or ``taken`` not a bool.
    ValueError
        If ``width``, ``depth`` or ``slices`` is out of range.
    """

    def __init__(self, *, width: int, depth: int, taken: bool = False, slices: int = 1):
        self._width = check_integer("width", width, range(1, 4097))
        self._depth = check_integer("depth", depth, range(2, 65537))
        if not isinstance(taken, bool):
            raise TypeError(f"taken must be a bool, not {taken!r}")
        self._taken = taken
        self._slices = check_integer("slices", slices, range(1, min(64, width) + 1))
        members = {"w_data": In(width), "w_en": In(1), "w_rdy": Out(1), "r_data": Out(width),
                   "r_en": In(1), "r_rdy": Out(1), "level": Out(range(depth + 1))}
        if taken:
            members["r_taken"] = Out(width)
        super().__init__(members)

    @property
    def width(self) -> int:
        return self._width

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def taken(self) -> bool:
        return self._taken

    @property
    def slice_widths(self) -> tuple:
        """Each memory's width, bits, from the entry's least significant bit up."""
        base, extra = divmod(self._width, self._slices)
        return tuple(base + (index < extra) for index in range(self._slices))

    def elaborate(self, platform):
        m = Module()
        depth = self._depth
        # The taken entry keeps its place in the memory until the next read: at most `depth` entries held and it,
        # so a memory of depth + 1 entries is never written where it lies.
        entries = depth + self._taken
        read = Signal()
        m.d.comb += [read.eq(self.r_en & self.r_rdy),
                     self.w_rdy.eq(self.level != depth), self.r_rdy.eq(self.level != 0)]
        # The read does not run into the level's carry chain (at 64 bits, the reader's flags -> read -> the
        # adder's carry was the extractor's path, 7.0 ns).
        m.d.sync += self.level.eq(stepped(m, self.level, up=self.w_en, down=read, name="level"))
        # Each slice has pointers of its own (they hold the same values): a slice's address registers reach only
        # its own cells. Yosys does not merge them, as each counts from its own state; copies of one register
        # (the same input and enable) would be merged bit by bit.
        low = 0
        for index, width in enumerate(self.slice_widths):
            def named(stem):
                return stem if self._slices == 1 else f"{stem}{index}"
            storage = memory.Memory(shape=width, depth=entries, init=[])
            m.submodules[named("storage")] = storage
            produce, consume = Signal(range(entries), name=named("produce")), Signal(range(entries),
                                                                                     name=named("consume"))
            with m.If(self.w_en):
                m.d.sync += produce.eq(Mux(produce == entries - 1, 0, produce + 1))
            with m.If(read):
                m.d.sync += consume.eq(Mux(consume == entries - 1, 0, consume + 1))
            write, read_port = storage.write_port(), storage.read_port(domain="comb")
            m.d.comb += [write.addr.eq(produce), write.data.eq(self.w_data[low:low + width]),
                         write.en.eq(self.w_en), read_port.addr.eq(consume),
                         self.r_data[low:low + width].eq(read_port.data)]
            if self._taken:
                taken_port = storage.read_port(domain="comb")
                taken_at = Signal(range(entries), init=entries - 1, name=named("taken_at"))
                m.d.comb += [taken_port.addr.eq(taken_at), self.r_taken[low:low + width].eq(taken_port.data)]
                with m.If(read):
                    m.d.sync += taken_at.eq(consume)
            low += width
        return m
