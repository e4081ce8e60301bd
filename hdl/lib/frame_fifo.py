"""Store and forward: a frame (beats up to one with ``last`` set) leaves only once it is whole, as in front of a
MAC's transmit side."""

from amaranth import Module, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out


__all__ = ["FrameFIFO"]


class FrameFIFO(wiring.Component):
    """Beats in, beats out, in ``sync``; a frame goes out once its last beat is in, so that the transmit side of
    :class:`~apbbf.hdl.eth.mac.RGMIIMAC` never waits for a beat in the middle of a frame, whatever the source's
    pace (another port's receive side through two clock crossings, a de-duplicator holding a frame's last beat
    for its answer).

    A frame longer than the queue cannot be held whole: when the queue is full and holds no whole frame, its
    beats go on as they come (the MAC may then cut it short and count it in ``tx_underflows``).

    Parameters
    ----------
    layout : data.Layout
        A beat: any layout with a 1-bit ``last`` field (the frame's last beat), such as
        :func:`~apbbf.hdl.eth.layouts.beat_layout`.
    depth : int
        Beats held, a power of 2 from 16 to 65536 (256 beats of 64 bits: 2048 bytes, one 1522-byte frame and a
        few short ones).

    Attributes
    ----------
    i : In(stream.Signature(layout))
    o : Out(stream.Signature(layout))

    Raises
    ------
    TypeError
        If ``layout`` is not a data layout or ``depth`` not an integer.
    ValueError
        If ``layout`` has no 1-bit ``last`` field, or ``depth`` is out of range.
    """

    def __init__(self, layout, depth: int = 256):
        layout = data.Layout.cast(layout)
        if not hasattr(layout, "members") or "last" not in layout.members or layout["last"].width != 1:
            raise ValueError(f"layout must have a 1-bit field last, not {layout!r}")
        if isinstance(depth, bool) or not isinstance(depth, int):
            raise TypeError(f"depth must be an integer, not {depth!r}")
        if depth < 16 or depth > 1 << 16 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of 2 from 16 to 65536 beats, not {depth}")
        self._layout, self._depth = layout, depth
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    @property
    def depth(self) -> int:
        return self._depth

    def elaborate(self, platform):
        m = Module()
        # A count of the whole frames inside gates the output; the count and the queue's level are registers,
        # so the transmit FIFO behind sees a flag, not arithmetic.
        m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=self._layout.size, depth=self._depth)
        head = self.o.payload
        frames = Signal(range(self._depth + 2))
        stuck = Signal()                                     # full without a whole frame: let it go
        writing_last = self.i.valid & self.i.ready & self.i.payload.last
        reading_last = self.o.valid & self.o.ready & head.last
        with m.If(reading_last):
            m.d.sync += stuck.eq(0)
        with m.Elif((queue.w_level >= self._depth - 1) & (frames == 0)):
            m.d.sync += stuck.eq(1)
        with m.If(writing_last & ~reading_last):
            m.d.sync += frames.eq(frames + 1)
        with m.Elif(reading_last & ~writing_last & (frames != 0)):
            m.d.sync += frames.eq(frames - 1)
        m.d.comb += [
            queue.w_data.eq(self.i.payload), queue.w_en.eq(self.i.valid), self.i.ready.eq(queue.w_rdy),
            head.eq(queue.r_data), self.o.valid.eq(queue.r_rdy & ((frames != 0) | stuck)),
            queue.r_en.eq(self.o.ready & ((frames != 0) | stuck)),
        ]
        return m
