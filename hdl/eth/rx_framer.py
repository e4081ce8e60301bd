"""Receive framing: GMII bytes to frame bytes, the preamble and SFD removed, the FCS checked and removed."""

from amaranth import Array, Module, Signal
from amaranth.lib import crc, stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import FCS_BYTES, MIN_FRAME, PREAMBLE, SFD, GMIIRxSignature, byte_layout

__all__ = ["RXFramer"]


class RXFramer(wiring.Component):
    """Frames out of GMII bytes, in the receive clock domain (``sync`` here: rename it).

    A frame starts with ``dv`` and any number of preamble bytes (0x55) followed by the SFD (0xD5); another byte
    before the SFD drops the frame (``bad_preamble``). Its bytes up to the FCS come out on ``o``, one per clock
    at most, and ``o.payload.error`` is set on the last one when the frame is bad:

    - its FCS (CRC-32, :data:`amaranth.lib.crc.catalog.CRC32_ETHERNET`) does not match (``bad_fcs``),
    - the PHY flagged an error (``er`` with ``dv``) anywhere in the frame (``phy_error``),
    - it is a runt: shorter than 64 bytes with its FCS (``runt``).

    A fragment with no byte besides its FCS (four bytes or fewer after the SFD) is dropped, and counted as a
    runt. ``o`` cannot be held back: the line does not wait.

    Attributes
    ----------
    gmii : In(GMIIRxSignature())
    o : Out(stream.Signature(byte_layout(), always_ready=True))
    frame, bad_fcs, phy_error, runt, bad_preamble : Out(1)
        One-clock pulses at the end of each frame (``frame``: every frame that came out on ``o``), for counters.
    """

    gmii: In(GMIIRxSignature())
    o: Out(stream.Signature(byte_layout(), always_ready=True))
    frame: Out(1)
    bad_fcs: Out(1)
    phy_error: Out(1)
    runt: Out(1)
    bad_preamble: Out(1)

    def elaborate(self, platform):
        m = Module()
        # The last byte before the FCS is known to be the last only when dv falls, four bytes later: the bytes
        # go through a five-byte delay line, and the one leaving it when dv falls is marked last. The CRC runs
        # over every byte, the FCS included, and a good frame leaves the residue (match_detected).
        m.submodules.crc = checker = crc.catalog.CRC32_ETHERNET(8).create()
        delay = Array(Signal(8, name=f"delay{i}") for i in range(FCS_BYTES + 1))
        length = Signal(range(MIN_FRAME + 1))        # bytes after the SFD, saturated at MIN_FRAME
        error = Signal()

        m.d.comb += [checker.data.eq(self.gmii.data), self.o.payload.data.eq(delay[FCS_BYTES])]

        def shift_in():
            m.d.sync += delay[0].eq(self.gmii.data)
            m.d.sync += [delay[i + 1].eq(delay[i]) for i in range(FCS_BYTES)]
            m.d.comb += checker.valid.eq(1)
            with m.If(length != MIN_FRAME):
                m.d.sync += length.eq(length + 1)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.gmii.dv):
                    with m.If(self.gmii.data == SFD):
                        m.d.comb += checker.start.eq(1)
                        m.d.sync += [length.eq(0), error.eq(self.gmii.er)]
                        m.next = "DATA"
                    with m.Elif(self.gmii.data == PREAMBLE):
                        m.d.sync += error.eq(self.gmii.er)
                        m.next = "PREAMBLE"
                    with m.Else():
                        m.next = "DROP"
            with m.State("PREAMBLE"):
                with m.If(~self.gmii.dv):
                    m.d.comb += self.bad_preamble.eq(1)
                    m.next = "IDLE"
                with m.Elif(self.gmii.data == SFD):
                    m.d.comb += checker.start.eq(1)
                    m.d.sync += [length.eq(0), error.eq(error | self.gmii.er)]
                    m.next = "DATA"
                with m.Elif(self.gmii.data == PREAMBLE):
                    m.d.sync += error.eq(error | self.gmii.er)
                with m.Else():
                    m.next = "DROP"
            with m.State("DATA"):
                with m.If(self.gmii.dv):
                    shift_in()
                    m.d.sync += error.eq(error | self.gmii.er)
                    # A byte with five after it is not the last before the FCS.
                    m.d.comb += self.o.valid.eq(length >= FCS_BYTES + 1)
                with m.Else():
                    bad_fcs = ~checker.match_detected
                    runt = length < MIN_FRAME
                    m.d.comb += [
                        self.o.valid.eq(length >= FCS_BYTES + 1),
                        self.o.payload.last.eq(1),
                        self.o.payload.error.eq(error | bad_fcs | runt),
                        self.frame.eq(length >= FCS_BYTES + 1),
                        self.bad_fcs.eq(bad_fcs & (length >= FCS_BYTES + 1)),
                        self.phy_error.eq(error),
                        self.runt.eq(runt),
                    ]
                    m.next = "IDLE"
            with m.State("DROP"):
                with m.If(~self.gmii.dv):
                    m.d.comb += self.bad_preamble.eq(1)
                    m.next = "IDLE"
        return m
