"""Request parser of the host protocol (:mod:`apbbf.model.protocol`): UART bytes in, checked requests out."""

from contextlib import contextmanager

from amaranth import Cat, Module, ResetInserter, Signal, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer, check_key_width
from ...model.protocol import (CRC, FILTER_COMMANDS, KEY_COMMANDS, MAX_BATCH_LIMIT, REGISTER_COMMANDS,
                               REGISTER_SIZE, REQUEST_HEADER, REQUEST_SYNC, Command, Status, key_bytes)
from .uart import rx_layout

__all__ = ["HostParser", "request_layout", "TIMEOUT_CYCLES"]

#: Inter-byte timeouts the parser takes, in clock cycles.
TIMEOUT_CYCLES = range(16, (1 << 32) + 1)


def request_layout() -> data.StructLayout:
    """Payload of the parser's request stream: the frame's header fields (:data:`REQUEST_HEADER`: ``command``,
    ``count``) and ``status``, :attr:`Status.OK` for a frame to execute, else why it was rejected."""
    return data.StructLayout({**{name: unsigned(8) for name in REQUEST_HEADER}, "status": unsigned(8)})


class HostParser(wiring.Component):
    """Checks request frames byte by byte and buffers their keys until the frame's CRC has been checked.

    One request leaves on :attr:`request` per frame: a checked frame with status OK, or a rejected one (garbage
    where a frame should start, unknown command, bad COUNT, bad CRC, a UART error or a timeout inside the frame)
    with its error status; the protocol's rules for each are in :mod:`apbbf.model.protocol`. The keys of a
    frame wait in a byte FIFO (one block RAM, ``max_batch * ceil(key_width / 8)`` bytes), and :attr:`keys`
    releases them only while their frame's OK request is offered, so a consumer never sees a byte of a
    corrupted or truncated frame. A rejected frame's keys are dropped at once.

    A request is offered until it is taken; meanwhile no byte is received. The consumer is expected to take an
    error request at once and an OK request when it has executed it: the protocol is stop-and-wait, so the host
    sends nothing while its request is executed.

    Parameters
    ----------
    key_width : int
        Bits per key, 8..512 (:data:`apbbf.model.config.KEY_WIDTHS`); a key is ``ceil(key_width / 8)`` bytes.
    max_batch : int
        Most keys per frame, 1..255 (:data:`~apbbf.model.protocol.MAX_BATCH_LIMIT`); a key frame with more, or
        none, is rejected with BAD_LENGTH.
    timeout_cycles : int
        Inter-byte timeout inside a frame, in clock cycles, 16..2**32 (:data:`TIMEOUT_CYCLES`).
    commands : tuple of Command
        The commands the device executes (default :data:`~apbbf.model.protocol.FILTER_COMMANDS`); a frame with
        another is rejected with BAD_COMMAND. A register command (REG_READ, REG_WRITE) among them needs a
        ``key_width`` of 64: its word is taken as one key, with COUNT 1..``max_batch``.

    Attributes
    ----------
    rx : In(stream.Signature(rx_layout()))
        Bytes from the UART receiver, with their error flags (:func:`apbbf.hdl.board.uart.rx_layout`).
    request : Out(stream.Signature(request_layout()))
        One request per frame (:func:`request_layout`).
    keys : Out(stream.Signature(8))
        The key bytes of the offered OK request, in wire order.
    busy : Out(1)
        High from a frame's sync byte until its request is taken.
    error : Out(1)
        One-cycle pulse when a frame is rejected.

    Raises
    ------
    TypeError
        If a parameter is not an integer.
    ValueError
        If a parameter is out of its range.
    """

    def __init__(self, key_width: int, *, max_batch: int = 64, timeout_cycles: int = 1 << 16,
                 commands=FILTER_COMMANDS):
        check_key_width(key_width)
        if not isinstance(commands, tuple) or not commands or not all(isinstance(c, Command) for c in commands):
            raise TypeError(f"commands must be a non-empty tuple of Command, not {commands!r}")
        self._commands = commands
        self._words = tuple(c for c in REGISTER_COMMANDS if c in commands)
        if self._words and key_bytes(key_width) != REGISTER_SIZE:
            raise ValueError(f"key_width must be {8 * REGISTER_SIZE} to take the register commands (one word of "
                             f"{REGISTER_SIZE} bytes), not {key_width}")
        check_integer("max_batch", max_batch, range(1, MAX_BATCH_LIMIT + 1))
        check_integer("timeout_cycles", timeout_cycles, TIMEOUT_CYCLES)
        self._key_width = key_width
        self._max_batch = max_batch
        self._timeout = timeout_cycles
        super().__init__({
            "rx": In(stream.Signature(rx_layout())),
            "request": Out(stream.Signature(request_layout())),
            "keys": Out(stream.Signature(8)),
            "busy": Out(1),
            "error": Out(1),
        })

    @property
    def key_width(self) -> int:
        return self._key_width

    @property
    def max_batch(self) -> int:
        return self._max_batch

    @property
    def timeout_cycles(self) -> int:
        return self._timeout

    def elaborate(self, platform):
        # Built for size, not speed (the UART is far slower than the clock): one byte-wide FSM with a state per
        # frame field. The request's fields are registers filled as the frame arrives, so an error needs only a
        # status. What every in-frame state shares (UART error and timeout checks) is written once, in
        # frame_state(); the CRC is Amaranth's catalog CRC-16/CCITT-FALSE processor.
        m = Module()
        kb = key_bytes(self._key_width)
        fifo_bytes = self._max_batch * kb

        # Key buffer, emptied (pointers reset, one cycle) when a frame is rejected.
        clear = Signal()
        m.submodules.buffer = buffer = ResetInserter(clear)(fifo.SyncFIFOBuffered(width=8, depth=fifo_bytes))
        m.submodules.crc = crc = CRC(data_width=8).create()

        byte = self.rx.payload.data
        take = Signal()
        m.d.comb += take.eq(self.rx.valid & self.rx.ready)

        request = self.request.payload
        left = Signal(range(fifo_bytes + 1))     # key bytes still to receive
        crc_low_ok = Signal()                    # the first CRC byte matched
        resume_hunt = Signal()                   # after a rejected frame: skip to the next sync byte

        timer = Signal(range(self._timeout + 1))  # cycles since the last byte, saturating
        timed_out = Signal()
        with m.If(take):
            m.d.sync += timer.eq(0)
        with m.Elif(~timed_out):
            m.d.sync += timer.eq(timer + 1)
        m.d.comb += timed_out.eq(timer == self._timeout)

        is_key_command = Signal()
        is_command = Signal()
        m.d.comb += [
            # a register command's word is one "key" of 8 bytes
            is_key_command.eq(Cat(request.command == command for command in KEY_COMMANDS + self._words).any()),
            is_command.eq(Cat(byte == command for command in self._commands).any()),
            crc.data.eq(byte),
            buffer.w_data.eq(byte),
        ]

        def start_frame():
            m.d.sync += [request.command.eq(0), request.count.eq(0)]
            m.d.comb += crc.start.eq(1)
            m.next = "COMMAND"

        def reject(status, then):
            m.d.comb += [self.error.eq(1), clear.eq(1)]
            m.d.sync += [request.status.eq(status), resume_hunt.eq(then == "HUNT")]
            m.next = "REQUEST"

        @contextmanager
        def frame_state(name):
            # A state inside a frame: its body says what a received byte means; a byte with a UART error is
            # rejected whatever the body made of it (the later assignments win), and silence times out.
            with m.State(name):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(take):
                    yield
                    with m.If(self.rx.payload.framing_error | self.rx.payload.overrun):
                        reject(Status.UART, "HUNT")
                with m.Elif(timed_out):
                    reject(Status.TIMEOUT, "IDLE")

        good = ~self.rx.payload.framing_error & ~self.rx.payload.overrun
        with m.FSM() as fsm:
            with m.State("IDLE"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(take & good):
                    with m.If(byte == REQUEST_SYNC):
                        start_frame()
                    with m.Else():
                        m.d.sync += request.command.eq(0)
                        reject(Status.BAD_SYNC, "HUNT")
            with m.State("HUNT"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(take & good & (byte == REQUEST_SYNC)):
                    start_frame()
                with m.Elif(timed_out):
                    m.next = "IDLE"
            with frame_state("COMMAND"):
                m.d.comb += crc.valid.eq(1)
                m.d.sync += request.command.eq(byte)
                with m.If(is_command):
                    m.next = "COUNT"
                with m.Else():
                    reject(Status.BAD_COMMAND, "HUNT")
            with frame_state("COUNT"):
                m.d.comb += crc.valid.eq(1)
                m.d.sync += [request.count.eq(byte), left.eq(byte * kb)]
                with m.If(is_key_command & ((byte == 0) | (byte > self._max_batch)) |
                          ~is_key_command & (byte != 0)):
                    reject(Status.BAD_LENGTH, "HUNT")
                with m.Elif(is_key_command):
                    m.next = "KEYS"
                with m.Else():
                    m.next = "CRC_LOW"
            with frame_state("KEYS"):
                # the buffer holds a whole frame and is empty when one starts, so it always has room
                m.d.comb += [crc.valid.eq(1), buffer.w_en.eq(1)]
                m.d.sync += left.eq(left - 1)
                with m.If(left == 1):
                    m.next = "CRC_LOW"
            with frame_state("CRC_LOW"):
                m.d.sync += crc_low_ok.eq(byte == crc.crc[:8])
                m.next = "CRC_HIGH"
            with frame_state("CRC_HIGH"):
                with m.If(crc_low_ok & (byte == crc.crc[8:])):
                    m.d.sync += [request.status.eq(Status.OK), resume_hunt.eq(0)]
                    m.next = "REQUEST"
                with m.Else():
                    reject(Status.BAD_CRC, "IDLE")
            with m.State("REQUEST"):
                # the buffer holds keys only now, and only an OK frame's: a rejected frame emptied it
                m.d.comb += [self.request.valid.eq(1), self.keys.valid.eq(buffer.r_rdy),
                             buffer.r_en.eq(self.keys.ready)]
                with m.If(self.request.ready):
                    with m.If(resume_hunt):
                        m.next = "HUNT"
                    with m.Else():
                        m.next = "IDLE"

        m.d.comb += [
            self.keys.payload.eq(buffer.r_data),
            self.busy.eq(~fsm.ongoing("IDLE") & ~fsm.ongoing("HUNT")),
        ]
        return m
