"""The filter core behind the UART host protocol, without pins: what the board tops (:mod:`apbbf.hdl.board.boards`) and
the end-to-end tests share."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config, check_integer
from ..core.apbbf import APBBF
from .host_interface import MAX_BATCH_LIMIT, HostInterface
from .host_parser import TIMEOUT_CYCLES
from .uart import DIVISORS, UARTReceiver, UARTTransmitter

__all__ = ["FilterOverUART", "Stretch"]


class Stretch(wiring.Component):
    """Holds ``o`` high for ``cycles`` after each cycle ``i`` is high (so a short pulse is visible on an LED)."""

    i: In(1)
    o: Out(1)

    def __init__(self, cycles: int):
        check_integer("cycles", cycles, range(1, 1 << 32))
        self._cycles = cycles
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        count = Signal(range(self._cycles + 1))
        with m.If(self.i):
            m.d.sync += count.eq(self._cycles)
        with m.Elif(count != 0):
            m.d.sync += count.eq(count - 1)
        m.d.comb += self.o.eq(count != 0)
        return m


class FilterOverUART(wiring.Component):
    """The filter core behind the UART host protocol, without pins (what the board tops and the tests share).

    For a Config with a span the core needs a time with every command: a free-running counter of microseconds
    (``clock_hz / 10**6`` cycles each) stamps the host's commands as the core accepts them, and INFO reports the
    tick, so ``apbbf host`` shows the window in time.

    Parameters
    ----------
    config : Config
        The filter.
    divisor : int
        Clock cycles per UART bit, 4..2**24.
    max_batch : int
        Most keys per frame (see :class:`HostInterface`).
    timeout_cycles : int
        Inter-byte timeout inside a frame, in clock cycles.
    led_cycles : int
        How long an activity/error pulse lights its LED, in clock cycles, 1..2**32-1.
    clock_hz : int
        The clock, Hz: a whole number of MHz (the microsecond counter divides it), 10**6..10**9.

    Attributes
    ----------
    rx : Signal, in
        UART line from the host (idle high).
    tx : Signal, out
        UART line to the host (idle high).
    activity, error : Signal, out
        Stretched pulses for LEDs.
    generation : Signal(32), out
        The core's shift count.

    Raises
    ------
    TypeError, ValueError
        If a parameter is of the wrong type or out of its range.
    """

    rx: In(1, init=1)
    tx: Out(1, init=1)
    activity: Out(1)
    error: Out(1)
    generation: Out(32)

    def __init__(self, config: Config, *, divisor: int, max_batch: int = 64, timeout_cycles: int = 1 << 16,
                 led_cycles: int = 1 << 20, clock_hz: int = 1_000_000):
        check_config(config)
        check_integer("divisor", divisor, DIVISORS)
        check_integer("max_batch", max_batch, range(1, MAX_BATCH_LIMIT + 1))
        check_integer("timeout_cycles", timeout_cycles, TIMEOUT_CYCLES)
        check_integer("led_cycles", led_cycles, range(1, 1 << 32))
        check_integer("clock_hz", clock_hz, range(1_000_000, 1_000_000_001))
        if clock_hz % 1_000_000:
            raise ValueError(f"clock_hz must be a whole number of MHz (the time counter counts microseconds), "
                             f"not {clock_hz}")
        self._config = config
        self._divisor = divisor
        self._max_batch = max_batch
        self._timeout = timeout_cycles
        self._led_cycles = led_cycles
        self._clock_hz = clock_hz
        super().__init__()

    @property
    def config(self) -> Config:
        return self._config

    def elaborate(self, platform):
        c = self._config
        m = Module()
        m.submodules.receiver = receiver = UARTReceiver(self._divisor)
        m.submodules.transmitter = transmitter = UARTTransmitter(self._divisor)
        m.submodules.interface = interface = HostInterface(c, max_batch=self._max_batch,
                                                           timeout_cycles=self._timeout,
                                                           tick_ns=1000 if c.timed else 0)
        m.submodules.core = core = APBBF(c)
        m.submodules.activity = activity = Stretch(self._led_cycles)
        m.submodules.error = error = Stretch(self._led_cycles)

        wiring.connect(m, receiver.o, interface.rx)
        wiring.connect(m, interface.tx, transmitter.i)
        wiring.connect(m, core.rsp, interface.rsp)
        m.d.comb += [
            core.cmd.valid.eq(interface.cmd.valid),
            core.cmd.payload.op.eq(interface.cmd.payload.op),
            core.cmd.payload.key.eq(interface.cmd.payload.key),
            interface.cmd.ready.eq(core.cmd.ready),
            receiver.rx.eq(self.rx),
            self.tx.eq(transmitter.tx),
            interface.generations.eq(core.shifts),
            self.generation.eq(core.shifts),
            activity.i.eq(interface.busy),
            self.activity.eq(activity.o),
            error.i.eq(interface.error),
            self.error.eq(error.o),
        ]
        if c.timed:
            # The time of every command: microseconds since reset, from a prescaler of the clock.
            prescaler = Signal(range(self._clock_hz // 1_000_000))
            now = Signal(c.time_width)
            with m.If(prescaler == self._clock_hz // 1_000_000 - 1):
                m.d.sync += [prescaler.eq(0), now.eq(now + 1)]
            with m.Else():
                m.d.sync += prescaler.eq(prescaler + 1)
            m.d.comb += [core.cmd.payload.time.eq(now), interface.overflows.eq(core.overflows),
                         interface.expired.eq(core.expired)]
        return m
