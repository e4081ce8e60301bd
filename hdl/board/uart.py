"""8N1 UART receiver and transmitter with :mod:`amaranth.lib.stream` ports.

Why this design
---------------
The boards' USB bridges (FT2232H on the iCEBreaker, FT231X on the ULX3S) run their UART from their own crystal, so
the FPGA side only has to divide its clock by an integer: no fractional baud generator, no oversampling filter.
The receiver synchronises the line with two flip-flops, waits for a falling edge, re-checks the line half a bit
later (a glitch shorter than half a bit is ignored) and then samples every bit in its middle, which tolerates the
±1 cycle uncertainty of the edge as long as the divisor is at least 4. It samples the stop bit and is ready for
the next start bit right after its middle, so back-to-back bytes from a slightly faster sender are still caught.
A low stop bit is reported with the byte (``framing_error``) and the receiver then waits for the line to go high
again, so a break condition gives one error and not a stream of zero bytes. The receiver has no buffer: if its
consumer does not take a byte before the next one is complete, the old one is replaced and the new one carries
``overrun``.
"""

from amaranth import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer

__all__ = ["rx_layout", "UARTReceiver", "UARTTransmitter", "DIVISORS"]

#: Clock cycles per bit the receiver and transmitter take: at least 4 (the receiver's mid-bit sampling needs a
#: quarter-bit margin for the asynchronous start edge), at most 2**24.
DIVISORS = range(4, (1 << 24) + 1)


def rx_layout() -> data.StructLayout:
    """Payload of the receiver's stream: ``{data: 8, framing_error: 1, overrun: 1}``."""
    return data.StructLayout({"data": unsigned(8), "framing_error": 1, "overrun": 1})


class _Divided(wiring.Component):
    """What the receiver and transmitter share: a checked ``divisor``."""

    def __init__(self, divisor: int):
        check_integer("divisor", divisor, DIVISORS)
        self._divisor = divisor
        super().__init__()

    @property
    def divisor(self) -> int:
        """Clock cycles per bit."""
        return self._divisor


class UARTReceiver(_Divided):
    """8N1 UART receiver.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (clock frequency / baud rate), 4..2**24 (:data:`DIVISORS`).

    Attributes
    ----------
    rx : In(1)
        The serial line (idle high); asynchronous, synchronised inside.
    o : Out(stream.Signature(rx_layout()))
        Received bytes with their error flags (:func:`rx_layout`). There is no buffer: a byte not taken before
        the next one is complete is replaced, and the next one carries ``overrun``.

    Raises
    ------
    TypeError
        If ``divisor`` is not an integer.
    ValueError
        If ``divisor`` is out of its range.
    """

    rx: In(1, init=1)
    o: Out(stream.Signature(rx_layout()))

    def elaborate(self, platform):
        # One down-counter times both the half bit to the start bit's middle and the whole bits after it, so
        # every bit is sampled in its middle; the FSM has a state per part of the character (see the module's
        # docstring for why the glitch check, the early stop and the break state).
        m = Module()
        div = self._divisor

        line = Signal(init=1)
        m.submodules.sync_rx = FFSynchronizer(self.rx, line, init=1)

        timer = Signal(range(div))
        bit = Signal(range(9))
        shreg = Signal(8)

        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)

        with m.If(timer != 0):
            m.d.sync += timer.eq(timer - 1)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    m.d.sync += timer.eq(div // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer == 0):
                    with m.If(line):
                        m.next = "IDLE"  # a glitch, not a start bit
                    with m.Else():
                        m.d.sync += [timer.eq(div - 1), bit.eq(0)]
                        m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer == 0):
                    m.d.sync += [shreg.eq(shreg.shift_right(1) | (line << 7)), timer.eq(div - 1),
                                 bit.eq(bit + 1)]
                    with m.If(bit == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer == 0):
                    m.d.sync += [
                        self.o.valid.eq(1),
                        self.o.payload.data.eq(shreg),
                        self.o.payload.framing_error.eq(~line),
                        # the previous byte is still unread (and not being read now): it is lost
                        self.o.payload.overrun.eq(self.o.valid & ~self.o.ready),
                    ]
                    with m.If(line):
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "BREAK"
            with m.State("BREAK"):
                with m.If(line):
                    m.next = "IDLE"
        return m


class UARTTransmitter(_Divided):
    """8N1 UART transmitter.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (clock frequency / baud rate), 4..2**24 (:data:`DIVISORS`).

    Attributes
    ----------
    i : In(stream.Signature(8))
        Bytes to send; a byte is taken when the previous one's stop bit is complete.
    tx : Out(1)
        The serial line (idle high), driven from a flip-flop.
    busy : Out(1)
        High while a byte is being sent.

    Raises
    ------
    TypeError
        If ``divisor`` is not an integer.
    ValueError
        If ``divisor`` is out of its range.
    """

    i: In(stream.Signature(8))
    tx: Out(1, init=1)
    busy: Out(1)

    def elaborate(self, platform):
        # No FSM: the whole character (start, data, stop) is one shift register shifted every bit time, and a
        # bit counter says when it is done; the line is driven from a flip-flop so it never glitches.
        m = Module()
        div = self._divisor

        timer = Signal(range(div))
        # start bit, 8 data bits, stop bit; shifted out LSB first
        shreg = Signal(10, init=0x3FF)
        bits = Signal(range(11))

        m.d.comb += self.busy.eq(bits != 0)
        m.d.comb += self.i.ready.eq(bits == 0)
        m.d.sync += self.tx.eq(shreg[0])

        with m.If(bits == 0):
            with m.If(self.i.valid):
                m.d.sync += [shreg.eq((1 << 9) | (self.i.payload << 1)), bits.eq(10), timer.eq(div - 1)]
        with m.Elif(timer == 0):
            m.d.sync += [shreg.eq((shreg >> 1) | (1 << 9)), bits.eq(bits - 1), timer.eq(div - 1)]
        with m.Else():
            m.d.sync += timer.eq(timer - 1)
        return m
