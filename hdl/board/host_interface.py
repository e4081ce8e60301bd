"""Gateware side of the host protocol (:mod:`apbbf.model.protocol`): UART bytes in, filter commands out, replies
back. A parser, an executor and a replier (:mod:`.host_parser`, :mod:`.host_executor`, :mod:`.host_replier`)
joined by streams."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config, check_integer
from ...model.protocol import MAX_BATCH_LIMIT
from .host_executor import HostExecutor
from .host_parser import TIMEOUT_CYCLES, HostParser
from .host_replier import HostReplier
from ..core.types import command_layout, response_layout
from .uart import rx_layout

__all__ = ["HostInterface"]


class HostInterface(wiring.Component):
    """Protocol engine between a UART byte stream and the filter core's command/response streams.

    Parameters
    ----------
    config : Config
        The filter's configuration (reported by INFO; sets the key width).
    max_batch : int
        Most keys per request frame, 1..255; sets the key buffer to ``max_batch * ceil(key_width / 8)`` bytes.
    timeout_cycles : int
        Inter-byte timeout inside a frame, in clock cycles, 16..2**32; a frame that stops for longer is dropped
        with a TIMEOUT error reply.
    tick_ns : int
        The tick of the times the device stamps commands with, in nanoseconds (reported by INFO; 0 for a window
        bounded by count), 0..2**32-1.

    Attributes
    ----------
    rx : In(stream.Signature(rx_layout()))
        Bytes from the UART receiver (:func:`apbbf.hdl.board.uart.rx_layout`).
    tx : Out(stream.Signature(8))
        Bytes to the UART transmitter.
    cmd : Out(stream.Signature(command_layout(key_width)))
        Commands to the core.
    rsp : In(stream.Signature(response_layout()))
        The core's responses, one per command, in order.
    generations, overflows, expired : In(32)
        The core's counters, reported by COUNTERS.
    busy : Out(1)
        High while a frame is being received, executed or answered (for an activity LED).
    error : Out(1)
        One-cycle pulse when a frame is rejected.

    Raises
    ------
    TypeError
        If ``config`` is not a Config, or a number not an integer.
    ValueError
        If ``max_batch`` or ``timeout_cycles`` is out of its range.
    """

    def __init__(self, config: Config, *, max_batch: int = 64, timeout_cycles: int = 1 << 16, tick_ns: int = 0):
        check_config(config)
        check_integer("max_batch", max_batch, range(1, MAX_BATCH_LIMIT + 1))
        check_integer("timeout_cycles", timeout_cycles, TIMEOUT_CYCLES)
        check_integer("tick_ns", tick_ns, range(1 << 32))
        self._config = config
        self._max_batch = max_batch
        self._timeout = timeout_cycles
        self._tick_ns = tick_ns
        super().__init__({
            "rx": In(stream.Signature(rx_layout())),
            "tx": Out(stream.Signature(8)),
            "cmd": Out(stream.Signature(command_layout(config.key_width))),
            "rsp": In(stream.Signature(response_layout())),
            "generations": In(32),
            "overflows": In(32),
            "expired": In(32),
            "busy": Out(1),
            "error": Out(1),
        })

    @property
    def config(self) -> Config:
        return self._config

    @property
    def max_batch(self) -> int:
        return self._max_batch

    @property
    def timeout_cycles(self) -> int:
        return self._timeout

    def elaborate(self, platform):
        # The UART is three orders of magnitude slower than the core, so every block is byte-wide and built for
        # size; the protocol is stop-and-wait, so one request is in flight at a time. The parser holds a
        # frame's keys until its CRC is checked (a corrupted frame never reaches the core), the executor turns
        # requests into core commands and reply payloads, and the replier frames replies while the payload
        # is still being produced (no reply buffer).
        m = Module()
        m.submodules.parser = parser = HostParser(self._config.key_width, max_batch=self._max_batch,
                                                  timeout_cycles=self._timeout)
        m.submodules.executor = executor = HostExecutor(self._config, max_batch=self._max_batch,
                                                        tick_ns=self._tick_ns)
        m.submodules.replier = replier = HostReplier()

        wiring.connect(m, wiring.flipped(self.rx), parser.rx)
        wiring.connect(m, parser.request, executor.request)
        wiring.connect(m, parser.keys, executor.keys)
        wiring.connect(m, executor.cmd, wiring.flipped(self.cmd))
        wiring.connect(m, wiring.flipped(self.rsp), executor.rsp)
        wiring.connect(m, executor.header, replier.header)
        wiring.connect(m, executor.payload, replier.payload)
        wiring.connect(m, replier.tx, wiring.flipped(self.tx))
        m.d.comb += [
            executor.generations.eq(self.generations),
            executor.overflows.eq(self.overflows),
            executor.expired.eq(self.expired),
            self.busy.eq(parser.busy | replier.busy),
            self.error.eq(parser.error),
        ]
        return m
