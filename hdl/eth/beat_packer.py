"""Frame bytes into wide beats, on the receive side, before the clock domain crossing."""

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import beat_layout, byte_layout, check_data_width

__all__ = ["BeatPacker"]


class BeatPacker(wiring.Component):
    """Gathers a frame's bytes into beats of ``data_width`` bits for a buffer that cannot push back on the line.

    A beat goes out when it is full or holds the frame's last byte. The buffer behind says how many beats it has
    room for (``o_room``, saturated at 3). A beat that is not the last of its frame is written only when two
    fit, so one place is always left for the frame's end: when a beat does not fit, it is written as the frame's
    last with ``error`` set, the rest of the frame is discarded and ``overflow`` pulses. A frame whose first
    beat finds no room at all is dropped whole (``overflow`` pulses too). So every frame written ends with a
    last beat, and the user side sees a cut frame as a bad one.

    Parameters
    ----------
    data_width : int
        Bits per beat, one of :data:`~apbbf.hdl.eth.layouts.DATA_WIDTHS`.

    Attributes
    ----------
    i : In(stream.Signature(byte_layout(), always_ready=True))
    o : Out(stream.Signature(beat_layout(data_width), always_ready=True))
        Written, never held back: ``o_room`` says what fits.
    o_room : In(2)
        Beats the buffer can take now (not counting the beat on ``o``), 0..3, 3 meaning three or more.
    overflow : Out(1)
    """

    def __init__(self, data_width: int = 64):
        check_data_width(data_width)
        self._data_width = data_width
        super().__init__({
            "i": In(stream.Signature(byte_layout(), always_ready=True)),
            "o": Out(stream.Signature(beat_layout(data_width), always_ready=True)),
            "o_room": In(2),
            "overflow": Out(1),
        })

    @property
    def data_width(self) -> int:
        return self._data_width

    def elaborate(self, platform):
        m = Module()
        # The beat is built in place (byte lane `lane` of `o.payload`) and written from its register, so the
        # output is a register and the buffer's write port sees no logic.
        lanes = self._data_width // 8
        lane = Signal(range(lanes))
        discarding = Signal()
        beat = self.o.payload
        full = self.i.valid & (self.i.payload.last | (lane == lanes - 1))

        m.d.sync += self.o.valid.eq(0)
        with m.If(self.i.valid & ~discarding):
            m.d.sync += [
                beat.data.word_select(lane, 8).eq(self.i.payload.data),
                beat.keep.eq(beat.keep | (1 << lane)),
                lane.eq(lane + 1),
            ]
            with m.If(lane == 0):
                m.d.sync += beat.keep.eq(1)
            with m.If(full):
                m.d.sync += [lane.eq(0), self.o.valid.eq(1), beat.last.eq(self.i.payload.last),
                             beat.user.error.eq(self.i.payload.error)]
                # The beat is written next clock: the room left counts the beat written this clock, if any.
                no_room = (self.o_room == 0) | ((self.o_room == 1) & self.o.valid)
                one_room = ((self.o_room == 1) & ~self.o.valid) | ((self.o_room == 2) & self.o.valid)
                with m.If(no_room):
                    # Only a frame's first beat can find no room: the frame is dropped whole.
                    m.d.sync += [self.o.valid.eq(0), discarding.eq(~self.i.payload.last)]
                    m.d.comb += self.overflow.eq(1)
                with m.Elif(~self.i.payload.last & one_room):
                    m.d.sync += [beat.last.eq(1), beat.user.error.eq(1), discarding.eq(1)]
                    m.d.comb += self.overflow.eq(1)
        with m.If(self.i.valid & self.i.payload.last):
            m.d.sync += [discarding.eq(0), lane.eq(0)]
        return m
