"""Request executor of the host protocol (:mod:`apbbf.model.protocol`): checked requests in, filter commands and
reply headers and payloads out."""

from dataclasses import fields

from amaranth import Cat, Const, Module, Shape, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config, check_integer
from ...model.protocol import COUNTERS_SIZE, INFO_SIZE, MAX_BATCH_LIMIT, Command, Counters, Info, Status, key_bytes
from .host_parser import request_layout
from .host_replier import reply_header_layout
from ..core.types import Op, command_layout, response_layout

__all__ = ["HostExecutor", "counters_layout"]


def counters_layout() -> data.StructLayout:
    """The COUNTERS payload as a layout: :class:`~apbbf.model.protocol.Counters`' fields, 32 bits each, in wire
    order (field i is bytes 4i..4i+3, little-endian)."""
    return data.StructLayout({field.name: unsigned(32) for field in fields(Counters)})


class HostExecutor(wiring.Component):
    """Executes checked requests: answers INFO and COUNTERS, and sends a key command's keys to the core.

    For each request taken from :attr:`request` it offers one reply header on :attr:`header`, then the reply's
    payload on :attr:`payload`, byte by byte:

    - INFO: the :class:`~apbbf.model.protocol.Info` of ``config`` and ``max_batch``, from a constant.
    - COUNTERS: the live counters (:func:`counters_layout`).
    - a key command: its keys are assembled from :attr:`keys` (little-endian), sent to the core on :attr:`cmd`
      with the command's op, and the core's answers from :attr:`rsp` are packed into bitmap bytes, each
      offered as soon as it is complete.
    - a rejected request (status not OK): an error header with no payload; only counted.

    An OK request is taken when its last payload byte has been taken (the parser holds its keys until then); a
    rejected one as soon as its header is.

    Parameters
    ----------
    config : Config
        The filter's configuration: the key width, and what INFO reports.
    max_batch : int
        Most keys per request, 1..255 (:data:`~apbbf.model.protocol.MAX_BATCH_LIMIT`), as INFO reports it.
    tick_ns : int
        The tick of the times the device stamps commands with, in nanoseconds, 0..2**32-1, as INFO reports it
        (0 for a window bounded by count).

    Attributes
    ----------
    request : In(stream.Signature(request_layout()))
        Checked requests (:func:`apbbf.hdl.board.host_parser.request_layout`): a valid command, and a COUNT in range
        for it, when the status is OK.
    keys : In(stream.Signature(8))
        The key bytes of the current OK key request, ``ceil(key_width / 8)`` per key, in wire order.
    cmd : Out(stream.Signature(command_layout(key_width)))
        Commands to the core.
    rsp : In(stream.Signature(response_layout()))
        The core's responses, one per command, in order.
    header : Out(stream.Signature(reply_header_layout()))
        One reply header per request (:func:`apbbf.hdl.board.host_replier.reply_header_layout`).
    payload : Out(stream.Signature(8))
        The replies' payload bytes: ``length`` after each header.
    generations, overflows, expired : In(32)
        The core's counts of shifts, of segments retired early and of segments retired expired, reported by
        COUNTERS.

    Raises
    ------
    TypeError
        If ``config`` is not a Config, or ``max_batch`` not an integer.
    ValueError
        If ``max_batch`` is out of its range.
    """

    def __init__(self, config: Config, *, max_batch: int = 64, tick_ns: int = 0):
        check_config(config)
        check_integer("max_batch", max_batch, range(1, MAX_BATCH_LIMIT + 1))
        check_integer("tick_ns", tick_ns, range(1 << 32))
        self._config = config
        self._max_batch = max_batch
        self._tick_ns = tick_ns
        super().__init__({
            "request": In(stream.Signature(request_layout())),
            "keys": In(stream.Signature(8)),
            "cmd": Out(stream.Signature(command_layout(config.key_width))),
            "rsp": In(stream.Signature(response_layout())),
            "header": Out(stream.Signature(reply_header_layout())),
            "payload": Out(stream.Signature(8)),
            "generations": In(32),
            "overflows": In(32),
            "expired": In(32),
        })

    @property
    def config(self) -> Config:
        return self._config

    @property
    def max_batch(self) -> int:
        return self._max_batch

    def elaborate(self, platform):
        # One request at a time (the protocol is stop-and-wait), byte-wide: INFO and COUNTERS bytes are selected
        # from a constant and from the live counters by one byte index, with no buffer; a key command issues
        # keys and collects answers concurrently, so the core's pipeline stays busy and the bitmap leaves as it
        # fills. The payloads are layouts in wire order, so a byte is a word_select.
        m = Module()
        kb = key_bytes(self._config.key_width)
        request = self.request.payload
        ok = Signal()
        m.d.comb += ok.eq(request.status == Status.OK)

        counters = Signal(counters_layout())
        m.d.comb += [counters.generations.eq(self.generations), counters.overflows.eq(self.overflows),
                     counters.expired.eq(self.expired)]
        info = Const(int.from_bytes(Info.from_config(self._config, self._max_batch, self._tick_ns).pack(), "little"),
                     8 * INFO_SIZE)
        index = Signal(range(max(INFO_SIZE, COUNTERS_SIZE)))

        m.d.comb += [self.header.payload.command.eq(request.command), self.header.payload.status.eq(request.status)]
        with m.If(~ok):
            m.d.comb += self.header.payload.length.eq(0)
        with m.Elif(request.command == Command.INFO):
            m.d.comb += self.header.payload.length.eq(INFO_SIZE)
        with m.Elif(request.command == Command.COUNTERS):
            m.d.comb += self.header.payload.length.eq(COUNTERS_SIZE)
        with m.Else():
            m.d.comb += self.header.payload.length.eq((request.count + 7) >> 3)

        issued = Signal(range(self._max_batch + 1))
        answered = Signal(range(self._max_batch + 1))
        key = Signal(8 * kb)           # little-endian bytes shift in from the top
        key_fill = Signal(range(kb + 1))
        bitmap = Signal(8)
        bit = Signal(3)
        bitmap_full = Signal()

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.header.valid.eq(self.request.valid)
                with m.If(self.header.valid & self.header.ready):
                    with m.If(~ok):
                        m.d.comb += self.request.ready.eq(1)
                        m.d.sync += counters.errors.eq(counters.errors + 1)
                    with m.Else():
                        m.d.sync += [counters.frames.eq(counters.frames + 1), index.eq(0), issued.eq(0),
                                     answered.eq(0), key_fill.eq(0), bitmap.eq(0), bit.eq(0), bitmap_full.eq(0)]
                        with m.Switch(request.command):
                            with m.Case(Command.INFO):
                                m.next = "INFO"
                            with m.Case(Command.COUNTERS):
                                m.next = "COUNTERS"
                            with m.Default():
                                m.next = "KEYS"

            for state, table, size in (("INFO", info, INFO_SIZE), ("COUNTERS", counters.as_value(), COUNTERS_SIZE)):
                with m.State(state):
                    m.d.comb += [self.payload.valid.eq(1), self.payload.payload.eq(table.word_select(index, 8))]
                    with m.If(self.payload.ready):
                        m.d.sync += index.eq(index + 1)
                        with m.If(index == size - 1):
                            m.d.comb += self.request.ready.eq(1)
                            m.next = "IDLE"

            with m.State("KEYS"):
                # issue: assemble each key from its bytes, then offer it to the core
                m.d.comb += self.keys.ready.eq((key_fill != kb) & (issued != request.count))
                with m.If(self.keys.valid & self.keys.ready):
                    m.d.sync += [key.eq(Cat(key[8:], self.keys.payload)), key_fill.eq(key_fill + 1)]
                m.d.comb += [
                    self.cmd.valid.eq(key_fill == kb),
                    # a key command is KEY_COMMAND_BASE | op, and the base's low bits are clear
                    self.cmd.payload.op.as_value().eq(request.command[:Shape.cast(Op).width]),
                    self.cmd.payload.key.eq(key[:self._config.key_width]),
                ]
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.sync += [key_fill.eq(0), issued.eq(issued + 1), counters.keys.eq(counters.keys + 1)]
                    with m.If(self.cmd.payload.op != Op.QUERY):
                        m.d.sync += counters.inserts.eq(counters.inserts + 1)
                # collect: pack the answers into bitmap bytes, offered as payload
                m.d.comb += self.rsp.ready.eq(~bitmap_full & (answered != request.count))
                with m.If(self.rsp.valid & self.rsp.ready):
                    m.d.sync += [bitmap.eq(bitmap | (self.rsp.payload.hit << bit)), bit.eq(bit + 1),
                                 answered.eq(answered + 1)]
                    with m.If((bit == 7) | (answered == request.count - 1)):
                        m.d.sync += bitmap_full.eq(1)
                m.d.comb += [self.payload.valid.eq(bitmap_full), self.payload.payload.eq(bitmap)]
                with m.If(self.payload.valid & self.payload.ready):
                    m.d.sync += [bitmap_full.eq(0), bitmap.eq(0)]
                    with m.If(answered == request.count):
                        m.d.comb += self.request.ready.eq(1)
                        m.next = "IDLE"
        return m
