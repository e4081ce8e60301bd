"""Transmit framing: frame bytes to GMII bytes, with the preamble and SFD, padding, the FCS and the inter-frame
gap."""

from amaranth import Module, Mux, Signal
from amaranth.lib import crc, stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import FCS_BYTES, MIN_IFG, MIN_PAYLOAD, PREAMBLE, SFD, GMIITxSignature, byte_layout

__all__ = ["TXFramer", "check_ifg"]


def check_ifg(ifg) -> None:
    """Raise ``TypeError``/``ValueError`` unless ``ifg`` is a gap of 12..255 byte times."""
    if isinstance(ifg, bool) or not isinstance(ifg, int):
        raise TypeError(f"ifg must be an integer, not {ifg!r}")
    if not MIN_IFG <= ifg <= 255:
        raise ValueError(f"ifg must be from {MIN_IFG} to 255 byte times, not {ifg}")


class TXFramer(wiring.Component):
    """GMII bytes out of frames, in the transmit clock domain (``sync`` here: rename it).

    Each frame on ``i`` goes out as seven preamble bytes, the SFD, its bytes, zeros up to 60 bytes when it is
    shorter, and its FCS (CRC-32 of the bytes after the SFD, padding included, least significant byte first);
    then ``en`` stays low for the inter-frame gap, at least 12 byte times (``ifg``, 12..255), before the next
    preamble. A frame whose last byte carries ``error`` goes out with ``er`` over its FCS and the FCS inverted,
    so that the link partner drops it.

    The line cannot wait: once a frame has started, ``i`` must give a byte every clock until its last one. If it
    does not (an underflow: the user side was too slow), the frame is cut short with ``er`` set, ``underflow``
    pulses, and the rest of the frame on ``i`` is discarded.

    Attributes
    ----------
    i : In(stream.Signature(byte_layout()))
    gmii : Out(GMIITxSignature())
        Registered.
    frame, underflow : Out(1)
        One-clock pulses at the end of each frame sent (``frame``) or cut short (``underflow``).
    """

    i: In(stream.Signature(byte_layout()))
    gmii: Out(GMIITxSignature())
    frame: Out(1)
    underflow: Out(1)

    def __init__(self, *, ifg: int = MIN_IFG):
        check_ifg(ifg)
        self._ifg = ifg
        super().__init__()

    @property
    def ifg(self) -> int:
        return self._ifg

    def elaborate(self, platform):
        m = Module()
        # One FSM state per part of the frame on the wire, its byte registered in `byte`; a second register
        # stage drives gmii. The CRC runs on the registered byte, a clock behind, so that the FSM's choice of
        # byte and the CRC's XOR network are not one path (together six LUTs, the transmit clock's critical path
        # in a full 25F); the FSM marks the FCS's four slots in `byte`, and the output stage puts the CRC's bytes
        # there, by then over the frame's last byte.
        m.submodules.crc = generator = crc.catalog.CRC32_ETHERNET(8).create()
        count = Signal(range(max(MIN_PAYLOAD, self._ifg) + 1))
        # In a frame's data, count counts its bytes (wrapping on long frames); long_enough is set when the 60th
        # byte goes out and stays set, so the decision to pad is one flip-flop, not a compare of count.
        long_enough = Signal()
        error = Signal()
        gmii = self.gmii
        byte = Signal(8)                     # the byte chosen a clock ago, with what it is:
        byte_en, byte_er = Signal(), Signal()
        byte_crc = Signal()                  # a byte of the frame (data or padding): into the CRC
        byte_start = Signal()                # the SFD: the CRC starts again
        byte_fcs = Signal()                  # an FCS slot: the output stage puts the CRC's byte `fcs_lane` here
        fcs_lane = Signal(2)

        def send(value, *, crc=True):
            m.d.sync += [byte.eq(value), byte_en.eq(1), byte_er.eq(0), byte_crc.eq(crc)]

        m.d.sync += [byte_en.eq(0), byte_er.eq(0), byte.eq(0), byte_crc.eq(0), byte_start.eq(0),
                     byte_fcs.eq(0)]
        m.d.comb += [generator.data.eq(byte), generator.valid.eq(byte_crc), generator.start.eq(byte_start)]
        # The FCS goes out inverted on a frame marked bad (its slots carry er).
        fcs_byte = generator.crc.word_select(fcs_lane, 8) ^ byte_er.replicate(8)
        m.d.sync += [gmii.data.eq(Mux(byte_fcs, fcs_byte, byte)), gmii.en.eq(byte_en), gmii.er.eq(byte_er)]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.i.valid):
                    m.d.sync += count.eq(1)
                    send(PREAMBLE, crc=False)
                    m.next = "PREAMBLE"
            with m.State("PREAMBLE"):
                with m.If(count == 7):
                    send(SFD, crc=False)
                    m.d.sync += [byte_start.eq(1), count.eq(0), long_enough.eq(0), error.eq(0)]
                    m.next = "DATA"
                with m.Else():
                    send(PREAMBLE, crc=False)
                    m.d.sync += count.eq(count + 1)
            with m.State("DATA"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid):
                    send(self.i.payload.data)
                    m.d.sync += count.eq(count + 1)
                    with m.If(count == MIN_PAYLOAD - 2):
                        m.d.sync += long_enough.eq(1)
                    with m.If(self.i.payload.last):
                        m.d.sync += error.eq(self.i.payload.error)
                        with m.If(~long_enough):              # count < 59: under 60 bytes with this one
                            m.next = "PAD"
                        with m.Else():
                            m.d.sync += count.eq(0)
                            m.next = "FCS"
                with m.Else():
                    # Underflow: end the frame now, marked bad, and discard the rest of it.
                    m.d.sync += [byte_en.eq(1), byte_er.eq(1), count.eq(1)]
                    m.d.comb += self.underflow.eq(1)
                    m.next = "DISCARD"
            with m.State("PAD"):
                send(0)
                m.d.sync += count.eq(count + 1)
                with m.If(count == MIN_PAYLOAD - 1):
                    m.d.sync += count.eq(0)
                    m.next = "FCS"
            with m.State("FCS"):
                send(0, crc=False)
                m.d.sync += [byte_er.eq(error), byte_fcs.eq(1), fcs_lane.eq(count[:2]), count.eq(count + 1)]
                with m.If(count == FCS_BYTES - 1):
                    m.d.comb += self.frame.eq(1)
                    m.d.sync += count.eq(1)
                    m.next = "IFG"
            with m.State("DISCARD"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid & self.i.payload.last):
                    m.next = "IFG_AFTER_DISCARD"
                with m.If(count != self._ifg):
                    m.d.sync += count.eq(count + 1)
            with m.State("IFG_AFTER_DISCARD"):
                with m.If(count != self._ifg):
                    m.d.sync += count.eq(count + 1)
                with m.Else():
                    m.next = "IDLE"
            with m.State("IFG"):
                with m.If(count == self._ifg):
                    m.next = "IDLE"
                with m.Else():
                    m.d.sync += count.eq(count + 1)
        return m
