"""Reply framer of the host protocol (:mod:`apbbf.model.protocol`): a header and payload bytes in, a reply frame
out."""

from amaranth import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.protocol import CRC, CRC_SIZE, REPLY_HEADER, REPLY_SYNC, Status

__all__ = ["HostReplier", "reply_header_layout"]


def reply_header_layout() -> data.StructLayout:
    """Payload of the replier's header stream: the reply's header fields (:data:`REPLY_HEADER`: ``command``,
    ``status``, ``length``), one byte each, laid out in wire order (field i is byte i)."""
    return data.StructLayout({name: unsigned(8) for name in REPLY_HEADER})


class HostReplier(wiring.Component):
    """Frames one reply: sync byte, header, ``length`` payload bytes passed through as they come, CRC.

    The payload is streamed, not buffered, so the replier needs no memory and a key command's reply goes out
    while the core is still answering. A header whose status is not OK (an error reply, which has no payload)
    is taken even while a reply is being sent, and then dropped: a reply is never interrupted, and error
    replies never hold up their producer (the protocol's receiver cannot wait, the UART has no flow control).

    Attributes
    ----------
    header : In(stream.Signature(reply_header_layout()))
        One header per reply (:func:`reply_header_layout`); an OK header waits until the previous reply is sent.
    payload : In(stream.Signature(8))
        The reply's payload bytes: exactly ``length`` per header.
    tx : Out(stream.Signature(8))
        The frame's bytes, to the UART transmitter.
    busy : Out(1)
        High while a reply is being sent.
    """

    header: In(stream.Signature(reply_header_layout()))
    payload: In(stream.Signature(8))
    tx: Out(stream.Signature(8))
    busy: Out(1)

    def elaborate(self, platform):
        # One byte-wide FSM with a state per frame part and one byte counter for all of them. The header is
        # registered and sent straight from its layout (field order is wire order); the CRC is Amaranth's
        # catalog CRC-16/CCITT-FALSE processor, fed every byte after the sync byte as it is sent.
        m = Module()
        m.submodules.crc = crc = CRC(data_width=8).create()

        current = Signal(reply_header_layout())
        index = Signal(8)
        sent = Signal()
        m.d.comb += [
            sent.eq(self.tx.valid & self.tx.ready),
            crc.data.eq(self.tx.payload),
        ]
        with m.If(sent):
            m.d.sync += index.eq(index + 1)

        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(self.header.valid):
                    m.d.sync += current.eq(self.header.payload)
                    m.d.comb += crc.start.eq(1)
                    m.next = "SYNC"
            with m.State("SYNC"):
                m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(REPLY_SYNC)]
                with m.If(sent):
                    m.d.sync += index.eq(0)
                    m.next = "HEADER"
            with m.State("HEADER"):
                m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(current.as_value().word_select(index, 8)),
                             crc.valid.eq(sent)]
                with m.If(sent & (index == len(REPLY_HEADER) - 1)):
                    m.d.sync += index.eq(0)
                    with m.If(current.length == 0):
                        m.next = "CRC"
                    with m.Else():
                        m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                m.d.comb += [self.tx.valid.eq(self.payload.valid), self.tx.payload.eq(self.payload.payload),
                             self.payload.ready.eq(self.tx.ready), crc.valid.eq(sent)]
                with m.If(sent & (index == current.length - 1)):
                    m.d.sync += index.eq(0)
                    m.next = "CRC"
            with m.State("CRC"):
                m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(crc.crc.word_select(index, 8))]
                with m.If(sent & (index == CRC_SIZE - 1)):
                    m.next = "IDLE"

        m.d.comb += [
            self.busy.eq(~fsm.ongoing("IDLE")),
            self.header.ready.eq(fsm.ongoing("IDLE") | (self.header.payload.status != Status.OK)),
        ]
        return m
