"""Wide beats into frame bytes, on the transmit side, after the clock domain crossing."""

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import beat_layout, byte_layout, check_data_width

__all__ = ["BeatUnpacker"]


class BeatUnpacker(wiring.Component):
    """Sends a frame's beats of ``data_width`` bits on as bytes, one per clock without a gap between beats.

    ``keep`` must be packed from lane 0 and hold at least one byte (a beat with ``keep`` 0 is sent as one byte,
    lane 0).

    Parameters
    ----------
    data_width : int
        Bits per beat, one of :data:`~apbbf.hdl.eth.layouts.DATA_WIDTHS`.

    Attributes
    ----------
    i : In(stream.Signature(beat_layout(data_width)))
    o : Out(stream.Signature(byte_layout()))
    """

    def __init__(self, data_width: int = 64):
        check_data_width(data_width)
        self._data_width = data_width
        super().__init__({
            "i": In(stream.Signature(beat_layout(data_width))),
            "o": Out(stream.Signature(byte_layout())),
        })

    @property
    def data_width(self) -> int:
        return self._data_width

    def elaborate(self, platform):
        m = Module()
        # The beat is held in a register that shifts down a byte for each byte sent, so the byte out is always
        # bits 7..0 of a register (no lane multiplexer in front of the framer's CRC); the next beat is taken on
        # the clock that sends the current one's last byte, so bytes flow without a gap when the source keeps up.
        lanes = self._data_width // 8
        held = Signal(beat_layout(self._data_width))
        held_valid = Signal()
        lane = Signal(range(lanes))
        final_lane = Signal(range(lanes))         # the held beat's last byte present
        last_lane = Signal()                      # lane == final_lane, kept in a register: i.ready hangs on it

        m.d.comb += [
            self.o.valid.eq(held_valid),
            self.o.payload.data.eq(held.data[:8]),
            self.o.payload.last.eq(held.last & last_lane),
            self.o.payload.error.eq(held.user.error & last_lane),
        ]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += [lane.eq(lane + 1), last_lane.eq(lane + 1 == final_lane), held.data.eq(held.data >> 8)]
            with m.If(last_lane):
                m.d.sync += [lane.eq(0), held_valid.eq(0)]
        m.d.comb += self.i.ready.eq(~held_valid | (self.o.ready & last_lane))
        with m.If(self.i.valid & self.i.ready):
            keep = self.i.payload.keep
            m.d.sync += [held.eq(self.i.payload), held_valid.eq(1), lane.eq(0), final_lane.eq(0),
                         last_lane.eq(1)]
            for n in range(1, lanes):                 # the highest lane kept (the last assignment wins)
                with m.If(keep[n]):
                    m.d.sync += [final_lane.eq(n), last_lane.eq(0)]
        return m
