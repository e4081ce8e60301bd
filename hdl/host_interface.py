"""Gateware side of the host protocol (:mod:`apbbf.protocol`): UART bytes in, filter commands out, replies back.

Why this design
---------------
The UART is three orders of magnitude slower than the core, so this block is built for size, not speed: it
handles one request at a time (the protocol is stop-and-wait) with a byte-wide datapath and two small FSMs.

- The *parser* checks each request frame byte by byte and writes the keys into a byte-wide FIFO (one block RAM:
  ``max_batch * ceil(key_width/8)`` bytes). Nothing reaches the core until the frame's CRC has been checked, so a
  corrupted or truncated frame never inserts anything; on any error the FIFO is cleared (its pointers are reset)
  and the parser hunts for the next sync byte. The filter itself is never touched by an error.
- After a good frame the *executor* assembles keys from the FIFO (little-endian, one byte per cycle), feeds them
  to the core, and packs the core's in-order responses into bitmap bytes.
- The *replier* streams the reply frame (sync, header, payload, CRC) to the UART transmitter while the responses
  are still arriving, so no reply buffer is needed. INFO and COUNTERS payloads are read byte by byte from
  constants and from the live counters.
- An error found while a reply is still being sent gets no reply of its own (it is still counted): the host
  recovers by its timeout, as the protocol describes.
"""

from amaranth import Array, C, Cat, Const, Module, Mux, ResetInserter, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..protocol import (COUNTERS_SIZE, INFO_SIZE, MAX_BATCH_LIMIT, REPLY_SYNC, REQUEST_SYNC, Command, Info,
                        Status, key_bytes)
from ..model.config import Config, check_config
from .types import command_layout, response_layout
from .uart import rx_layout

__all__ = ["HostInterface", "crc16_next"]


def _crc16_step(crc: int, byte: int) -> int:
    crc ^= byte << 8
    for _ in range(8):
        crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


# The byte update is linear over GF(2) in (crc, byte): output bit i is the parity of the 24 input bits selected by
# _CRC16_MASKS[i]. Written this way it is one small XOR tree per bit, not 8 chained multiplexers.
_CRC16_MASKS = [sum(1 << j for j in range(24) if _crc16_step((1 << j) & 0xFFFF, (1 << j) >> 16) >> i & 1)
                for i in range(16)]


def crc16_next(crc, byte):
    """CRC-16/CCITT-FALSE register after one more byte, as a combinational expression."""
    both = Cat(crc, byte)
    return Cat(*((both & mask).xor() for mask in _CRC16_MASKS))


class HostInterface(wiring.Component):
    """Protocol engine between a UART byte stream and the filter core's command/response streams.

    Parameters
    ----------
    config : Config
        The filter's configuration (reported by INFO; sets the key width).
    max_batch : int
        Most keys per request frame, 1..255; sets the key FIFO to ``max_batch * ceil(key_width / 8)`` bytes.
    timeout_cycles : int
        Inter-byte timeout inside a frame, in clock cycles, 16..2**32; a frame that stops for longer is dropped
        with a TIMEOUT error reply.

    Attributes
    ----------
    rx : stream, in
        Bytes from the UART receiver (:func:`apbbf.hdl.uart.rx_layout`).
    tx : stream, out
        Bytes to the UART transmitter.
    cmd : stream, out
        Commands to the core.
    rsp : stream, in
        The core's responses, one per command, in order.
    generations : Signal(32), in
        The core's shift count, reported by COUNTERS.
    busy : Signal, out
        High while a frame is being received, executed or answered (for an activity LED).
    error : Signal, out
        One-cycle pulse when a frame is rejected.
    """

    def __init__(self, config: Config, *, max_batch: int = 64, timeout_cycles: int = 1 << 16):
        check_config(config)
        if isinstance(max_batch, bool) or not isinstance(max_batch, int):
            raise TypeError(f"max_batch must be an integer, not {max_batch!r}")
        if not 1 <= max_batch <= MAX_BATCH_LIMIT:
            raise ValueError(f"max_batch must be from 1 to {MAX_BATCH_LIMIT}, not {max_batch}")
        if isinstance(timeout_cycles, bool) or not isinstance(timeout_cycles, int):
            raise TypeError(f"timeout_cycles must be an integer, not {timeout_cycles!r}")
        if not 16 <= timeout_cycles <= 1 << 32:
            raise ValueError(f"timeout_cycles must be from 16 to 2**32, not {timeout_cycles}")
        self._config = config
        self._max_batch = max_batch
        self._timeout = timeout_cycles
        super().__init__({
            "rx": In(stream.Signature(rx_layout())),
            "tx": Out(stream.Signature(8)),
            "cmd": Out(stream.Signature(command_layout(config.key_width))),
            "rsp": In(stream.Signature(response_layout())),
            "generations": In(32),
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
        m = Module()
        cfg = self._config
        kb = key_bytes(cfg.key_width)
        fifo_bytes = self._max_batch * kb

        # Key buffer: cleared (pointers reset, one cycle) when a frame is rejected.
        fifo_clear = Signal()
        keys = fifo.SyncFIFOBuffered(width=8, depth=fifo_bytes)
        m.submodules.keys = ResetInserter(fifo_clear)(keys)

        # Counters (COUNTERS payload order).
        n_keys = Signal(32)
        n_inserts = Signal(32)
        n_frames = Signal(32)
        n_errors = Signal(32)

        # ---- replier -------------------------------------------------------------------------------------
        SRC_INFO, SRC_COUNTERS, SRC_BITMAP = 0, 1, 2
        r_start = Signal()
        r_start_cmd = Signal(8)
        r_start_status = Signal(8)
        r_start_len = Signal(8)
        r_start_src = Signal(2)
        r_cmd = Signal(8)
        r_status = Signal(8)
        r_len = Signal(8)
        r_src = Signal(2)
        r_idx = Signal(8)
        r_crc = Signal(16, init=0xFFFF)
        r_busy = Signal()
        # bitmap bytes from the executor
        bm_valid = Signal()
        bm_data = Signal(8)
        bm_ready = Signal()

        info_rom = Array(Const(b, 8) for b in Info.from_config(cfg, self._max_batch).pack())
        assert len(info_rom) == INFO_SIZE
        counters_flat = Cat(n_keys, n_inserts, self.generations, n_frames, n_errors)
        assert len(counters_flat) == 8 * COUNTERS_SIZE

        data_byte = Signal(8)
        data_valid = Signal()
        with m.Switch(r_src):
            with m.Case(SRC_INFO):
                m.d.comb += [data_byte.eq(info_rom[r_idx]), data_valid.eq(1)]
            with m.Case(SRC_COUNTERS):
                m.d.comb += [data_byte.eq(counters_flat.word_select(r_idx[:5], 8)), data_valid.eq(1)]
            with m.Default():
                m.d.comb += [data_byte.eq(bm_data), data_valid.eq(bm_valid)]

        def send(byte, valid=1):
            m.d.comb += [self.tx.payload.eq(byte), self.tx.valid.eq(valid)]

        with m.FSM(name="replier") as replier:
            with m.State("IDLE"):
                with m.If(r_start):
                    m.d.sync += [r_cmd.eq(r_start_cmd), r_status.eq(r_start_status), r_len.eq(r_start_len),
                                 r_src.eq(r_start_src), r_idx.eq(0), r_crc.eq(0xFFFF)]
                    m.next = "SYNC"
            with m.State("SYNC"):
                send(REPLY_SYNC)
                with m.If(self.tx.ready):
                    m.next = "CMD"
            for state, value, following in (("CMD", r_cmd, "STATUS"), ("STATUS", r_status, "LEN")):
                with m.State(state):
                    send(value)
                    with m.If(self.tx.ready):
                        m.d.sync += r_crc.eq(crc16_next(r_crc, value))
                        m.next = following
            with m.State("LEN"):
                send(r_len)
                with m.If(self.tx.ready):
                    m.d.sync += r_crc.eq(crc16_next(r_crc, r_len))
                    m.next = "DATA"
                    with m.If(r_len == 0):
                        m.next = "CRC0"
            with m.State("DATA"):
                send(data_byte, data_valid)
                m.d.comb += bm_ready.eq(self.tx.ready & (r_src == SRC_BITMAP))
                with m.If(self.tx.ready & data_valid):
                    m.d.sync += [r_crc.eq(crc16_next(r_crc, data_byte)), r_idx.eq(r_idx + 1)]
                    with m.If(r_idx == r_len - 1):
                        m.next = "CRC0"
            with m.State("CRC0"):
                send(r_crc[:8])
                with m.If(self.tx.ready):
                    m.next = "CRC1"
            with m.State("CRC1"):
                send(r_crc[8:])
                with m.If(self.tx.ready):
                    m.next = "IDLE"
        m.d.comb += r_busy.eq(~replier.ongoing("IDLE"))

        # ---- parser and executor ---------------------------------------------------------------------------
        rx_byte = self.rx.payload.data
        rx_bad = self.rx.payload.framing_error | self.rx.payload.overrun
        rx_take = Signal()  # a byte is accepted this cycle
        m.d.comb += rx_take.eq(self.rx.valid & self.rx.ready)

        cmd_reg = Signal(8)
        count = Signal(8)
        left = Signal(range(fifo_bytes + 1))  # payload bytes still to receive
        crc = Signal(16, init=0xFFFF)
        crc_lo = Signal(8)
        timer = Signal(range(self._timeout + 1))
        timed_out = Signal()

        is_key_cmd = Signal()
        m.d.comb += is_key_cmd.eq((cmd_reg == Command.QUERY) | (cmd_reg == Command.INSERT) |
                                  (cmd_reg == Command.TEST_AND_INSERT))

        # Error reply request (dropped if the replier is busy; counted either way).
        err = Signal()
        err_status = Signal(8)
        err_cmd = Signal(8)

        def fail(status, command, following):
            m.d.comb += [err.eq(1), err_status.eq(status), err_cmd.eq(command), fifo_clear.eq(1)]
            m.next = following

        # executor state
        issued = Signal(range(MAX_BATCH_LIMIT + 1))
        answered = Signal(range(MAX_BATCH_LIMIT + 1))
        key_sr = Signal(8 * kb)
        key_fill = Signal(range(kb + 1))
        bm = Signal(8)
        bm_bit = Signal(3)
        bm_full = Signal()
        exec_start = Signal()
        exec_src = Signal(2)
        exec_len = Signal(8)

        with m.If(rx_take):
            m.d.sync += timer.eq(0)
        with m.Elif(timer != self._timeout):
            m.d.sync += timer.eq(timer + 1)
        m.d.comb += timed_out.eq(timer == self._timeout)

        with m.FSM(name="parser") as parser:
            with m.State("IDLE"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(rx_take & ~rx_bad):
                    with m.If(rx_byte == REQUEST_SYNC):
                        m.d.sync += crc.eq(0xFFFF)
                        m.next = "CMD"
                    with m.Else():
                        fail(Status.BAD_SYNC, 0, "HUNT")
            with m.State("HUNT"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(rx_take & ~rx_bad & (rx_byte == REQUEST_SYNC)):
                    m.d.sync += crc.eq(0xFFFF)
                    m.next = "CMD"
                with m.Elif(timed_out):
                    m.next = "IDLE"
            with m.State("CMD"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(rx_take):
                    m.d.sync += [cmd_reg.eq(rx_byte), crc.eq(crc16_next(crc, rx_byte))]
                    with m.If(rx_bad):
                        fail(Status.UART, rx_byte, "HUNT")
                    with m.Elif((rx_byte != Command.INFO) & (rx_byte != Command.COUNTERS) &
                                (rx_byte != Command.QUERY) & (rx_byte != Command.INSERT) &
                                (rx_byte != Command.TEST_AND_INSERT)):
                        fail(Status.BAD_COMMAND, rx_byte, "HUNT")
                    with m.Else():
                        m.next = "COUNT"
                with m.Elif(timed_out):
                    fail(Status.TIMEOUT, 0, "IDLE")
            with m.State("COUNT"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(rx_take):
                    m.d.sync += [count.eq(rx_byte), crc.eq(crc16_next(crc, rx_byte)),
                                 left.eq(rx_byte * kb)]
                    with m.If(rx_bad):
                        fail(Status.UART, cmd_reg, "HUNT")
                    with m.Elif(is_key_cmd & ((rx_byte == 0) | (rx_byte > self._max_batch))):
                        fail(Status.BAD_LENGTH, cmd_reg, "HUNT")
                    with m.Elif(~is_key_cmd & (rx_byte != 0)):
                        fail(Status.BAD_LENGTH, cmd_reg, "HUNT")
                    with m.Elif(is_key_cmd):
                        m.next = "PAYLOAD"
                    with m.Else():
                        m.next = "CRC0"
                with m.Elif(timed_out):
                    fail(Status.TIMEOUT, cmd_reg, "IDLE")
            with m.State("PAYLOAD"):
                m.d.comb += [self.rx.ready.eq(keys.w_rdy), keys.w_data.eq(rx_byte)]
                with m.If(rx_take):
                    m.d.sync += [crc.eq(crc16_next(crc, rx_byte)), left.eq(left - 1)]
                    m.d.comb += keys.w_en.eq(1)
                    with m.If(rx_bad):
                        fail(Status.UART, cmd_reg, "HUNT")
                    with m.Elif(left == 1):
                        m.next = "CRC0"
                with m.Elif(timed_out):
                    fail(Status.TIMEOUT, cmd_reg, "IDLE")
            with m.State("CRC0"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(rx_take):
                    m.d.sync += crc_lo.eq(rx_byte)
                    with m.If(rx_bad):
                        fail(Status.UART, cmd_reg, "HUNT")
                    with m.Else():
                        m.next = "CRC1"
                with m.Elif(timed_out):
                    fail(Status.TIMEOUT, cmd_reg, "IDLE")
            with m.State("CRC1"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(rx_take):
                    with m.If(rx_bad):
                        fail(Status.UART, cmd_reg, "HUNT")
                    with m.Elif(Cat(crc_lo, rx_byte) != crc):
                        fail(Status.BAD_CRC, cmd_reg, "IDLE")
                    with m.Else():
                        m.d.sync += [n_frames.eq(n_frames + 1), issued.eq(0), answered.eq(0),
                                     key_fill.eq(0), bm.eq(0), bm_bit.eq(0), bm_full.eq(0)]
                        m.next = "REPLY"
                with m.Elif(timed_out):
                    fail(Status.TIMEOUT, cmd_reg, "IDLE")
            with m.State("REPLY"):
                # wait for the replier (it may still be finishing an error reply) and start it
                m.d.comb += exec_start.eq(~r_busy)
                with m.If(cmd_reg == Command.INFO):
                    m.d.comb += [exec_src.eq(SRC_INFO), exec_len.eq(INFO_SIZE)]
                with m.Elif(cmd_reg == Command.COUNTERS):
                    m.d.comb += [exec_src.eq(SRC_COUNTERS), exec_len.eq(COUNTERS_SIZE)]
                with m.Else():
                    m.d.comb += [exec_src.eq(SRC_BITMAP), exec_len.eq((count + 7) >> 3)]
                with m.If(~r_busy):
                    m.next = "IDLE"
                    with m.If(is_key_cmd):
                        m.next = "EXECUTE"
            with m.State("EXECUTE"):
                # issue: assemble little-endian keys from the FIFO
                m.d.comb += keys.r_en.eq((key_fill != kb) & (issued != count))
                with m.If(keys.r_en & keys.r_rdy):
                    m.d.sync += [key_sr.eq(Cat(key_sr[8:], keys.r_data)), key_fill.eq(key_fill + 1)]
                m.d.comb += [
                    self.cmd.valid.eq(key_fill == kb),
                    self.cmd.payload.op.as_value().eq(cmd_reg[:2]),
                    self.cmd.payload.key.eq(key_sr[:cfg.key_width]),
                ]
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.sync += [key_fill.eq(0), issued.eq(issued + 1), n_keys.eq(n_keys + 1)]
                    with m.If(cmd_reg != Command.QUERY):
                        m.d.sync += n_inserts.eq(n_inserts + 1)
                # collect: pack hits into bitmap bytes for the replier
                m.d.comb += self.rsp.ready.eq(~bm_full & (answered != count))
                with m.If(self.rsp.valid & self.rsp.ready):
                    m.d.sync += [bm.eq(bm | (self.rsp.payload.hit << bm_bit)), bm_bit.eq(bm_bit + 1),
                                 answered.eq(answered + 1)]
                    with m.If((bm_bit == 7) | (answered == count - 1)):
                        m.d.sync += bm_full.eq(1)
                m.d.comb += [bm_valid.eq(bm_full), bm_data.eq(bm)]
                with m.If(bm_full & bm_ready):
                    m.d.sync += [bm_full.eq(0), bm.eq(0)]
                    with m.If(answered == count):
                        m.next = "IDLE"

        # replier start: a command reply has priority (the parser waits for it); else an error reply
        with m.If(exec_start):
            m.d.comb += [r_start.eq(1), r_start_cmd.eq(cmd_reg), r_start_status.eq(Status.OK),
                         r_start_len.eq(exec_len), r_start_src.eq(exec_src)]
        with m.Elif(err & ~r_busy):
            m.d.comb += [r_start.eq(1), r_start_cmd.eq(err_cmd), r_start_status.eq(err_status),
                         r_start_len.eq(0), r_start_src.eq(SRC_INFO)]
        with m.If(err):
            m.d.sync += n_errors.eq(n_errors + 1)

        m.d.comb += [
            self.busy.eq(~parser.ongoing("IDLE") & ~parser.ongoing("HUNT") | r_busy),
            self.error.eq(err),
        ]
        return m
