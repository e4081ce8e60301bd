"""The binary protocol between a host and the filter on a board: the specification that both sides import.

The host side (encoding requests, decoding replies: :mod:`apbbf.protocol`, :class:`apbbf.host.Device`) and the
gateware (:mod:`apbbf.hdl.board.host_interface` and its parser, executor and replier) take every constant, enum, payload
format and frame layout from here, so the two cannot disagree.

Why this framing
----------------
The link is a plain 8N1 UART with no flow control and no out-of-band framing, so the frames must carry their own
start marker, length and check. A sync byte plus an explicit length lets the device know where a frame ends
before it has seen it; a CRC over everything after the sync byte lets it reject a frame with a flipped or
dropped byte *before* any key reaches the filter (the keys are buffered until the CRC has been checked), so a
corrupted frame never inserts anything and a rejected frame can always be resent. Host and device use different
sync bytes so a loop-back or an echo is never mistaken for a reply. The exchange is stop-and-wait: the host sends
one request and waits for its reply, so the device needs no receive buffer beyond one frame.

All multi-byte integers are little-endian. CRC is CRC-16/CCITT-FALSE (polynomial 0x1021, initial value 0xFFFF,
no reflection, no final XOR; ``crc16(b"123456789") == 0x29B1``), Amaranth's
``amaranth.lib.crc.catalog.CRC16_CCITT_FALSE`` (:data:`CRC`): the host computes it with the catalog entry's
``compute`` and the gateware with its ``Processor``.

Request (host to device)
------------------------
====== ============ ==============================================================================
offset size         field
====== ============ ==============================================================================
0      1            ``SYNC`` = 0xA5
1      1            ``CMD``: 0x01 INFO, 0x02 COUNTERS, 0x03 APPLIANCE, 0x04 REG_READ, 0x05 REG_WRITE,
                    0x10 QUERY, 0x11 INSERT, 0x12 TEST_AND_INSERT (a key command is ``0x10 | Op``,
                    :class:`apbbf.model.filters.Op`)
2      1            ``COUNT``: number of keys; 0 for INFO, COUNTERS and APPLIANCE, 1..``max_batch`` for key
                    commands, 1 for REG_READ and REG_WRITE
3      COUNT·KB     the keys, each ``KB = ceil(key_width / 8)`` bytes, little-endian, in order; for REG_READ
                    and REG_WRITE one 8-byte word: the register's byte offset u32, the value u32 (0 to read)
3+n    2            ``CRC``: CRC-16 of bytes 1 .. 2+n (CMD, COUNT, keys), little-endian
====== ============ ==============================================================================

Reply (device to host)
----------------------
====== ============ ==============================================================================
offset size         field
====== ============ ==============================================================================
0      1            ``SYNC`` = 0x5A
1      1            ``CMD``: the request's command byte (0x00 if the error came before one was read)
2      1            ``STATUS``: 0x00 OK, else an error code (:class:`Status`); an error reply has LEN 0
3      1            ``LEN``: number of payload bytes
4      LEN          payload (below)
4+LEN  2            ``CRC``: CRC-16 of bytes 1 .. 3+LEN (CMD, STATUS, LEN, payload), little-endian
====== ============ ==============================================================================

The one-byte fields between the sync byte and the keys or payload are named, in wire order, by
:data:`REQUEST_HEADER` and :data:`REPLY_HEADER`.

Payloads
~~~~~~~~
- QUERY / INSERT / TEST_AND_INSERT: ``ceil(COUNT / 8)`` bytes of hit bits; key i's answer is bit ``i % 8`` of
  byte ``i // 8`` (unused bits are 0). INSERT always answers 0.
- INFO (57 bytes): version u8, k u32, l u32, block_bits u32, block_hashes u32, segment_blocks u32,
  key_width u32, seed u64, max_batch u16, span u64, time_width u8, extra_segments u8, tick_ns u32, row_bits u32,
  burst_bits u32 (:data:`INFO_FORMAT`, :class:`Info`). span is 0 for a window bounded by count; otherwise the
  device stamps every command with its own clock, in ticks of tick_ns nanoseconds (the board tops count
  microseconds). row_bits and burst_bits are 0 for the on-chip layout, else the row layout of a filter in DRAM
  (they change which blocks a key sets). A host compares these with the :class:`~apbbf.model.config.Config` it
  expects before trusting the answers.
- COUNTERS (28 bytes): keys u32 (commands the core executed), inserts u32 (INSERT and TEST_AND_INSERT keys),
  generations u32 (shifts of the filter), frames u32 (requests executed), errors u32 (requests rejected),
  overflows u32 (segments retired early because the pool was full), expired u32 (segments retired expired; both
  0 for a window bounded by count), each wrapping modulo 2**32 (:data:`COUNTERS_FORMAT`, :class:`Counters`).
- APPLIANCE (82 bytes; only the de-duplication appliance answers it, the filter boards answer BAD_COMMAND):
  version u8, action u8 (:data:`APPLIANCE_ACTIONS`), key u8 (:data:`APPLIANCE_KEYS`), link u8 (bit i: port i's
  PHY reports a link), max_frame u16, then the counters of :data:`APPLIANCE_COUNTERS` in that order, u32 each,
  wrapping, all taken in the same clock cycle (:data:`APPLIANCE_FORMAT`, :class:`ApplianceStatus`). The
  appliance answers INFO with its filter's Config, ``max_batch`` 0 (it takes no key commands) and ``tick_ns``
  1000; it answers COUNTERS and the key commands with BAD_COMMAND (its filter's keys come from the frames).
- REG_READ (4 bytes) and REG_WRITE (none; only the appliance answers them): the value u32 of the control
  register at the offset (:mod:`apbbf.model.registers`, the appliance's map), or nothing for a write. A refused
  access (a write out of range, to a read-only register or to none, a read of a write-only register or of none:
  it changes nothing) is answered BAD_REGISTER with LEN 0, and is not resent by a host.

Errors and resynchronisation
----------------------------
The device answers a request it cannot execute with an error reply and executes nothing of it:

- ``BAD_SYNC``: a byte other than 0xA5 where a frame should start. One reply per run of such bytes; the device
  then hunts silently for the next 0xA5.
- ``BAD_COMMAND`` / ``BAD_LENGTH``: unknown CMD, or COUNT out of range for the command. The device hunts for
  the next 0xA5 (the rest of the bad frame is skipped silently).
- ``BAD_CRC``: the CRC does not match; the buffered keys are dropped.
- ``TIMEOUT``: a frame stopped for longer than the device's inter-byte timeout (a truncated frame).
- ``UART``: a UART framing error (stop bit low) or overrun inside a frame.

An error found while the device is still sending a reply gets no reply of its own (it is still counted): a reply
is never interrupted, and error replies never hold up the receiver.

A key byte may equal 0xA5, so after an error the device can lock onto a false start inside the remains of the
bad frame and send further error replies. A host therefore recovers by waiting for a quiet gap longer than the
device's timeout, discarding whatever arrived, and resending (:class:`apbbf.host.Device` does this). An error
reply whose CMD is the request's own means that request was not executed, so resending it is safe; an error
reply with another CMD (e.g. BAD_SYNC, CMD 0x00, for noise before the request) is about other bytes, and the
host keeps waiting for its own reply (resending only if none comes). A reply that never arrives is not resent
automatically: the request may have been executed, and a second INSERT would age the filter twice. The filter's
contents are never reset by an error: nothing inserted before is lost.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import astuple, dataclass

from amaranth.lib.crc import catalog as _crc_catalog

from .config import Config, check_key_width
from .filters import Op

__all__ = [
    "PROTOCOL_VERSION", "REQUEST_SYNC", "REPLY_SYNC", "MAX_BATCH_LIMIT", "KEY_COMMAND_BASE", "REQUEST_HEADER",
    "REPLY_HEADER", "CRC_SIZE", "CRC", "crc16", "Command", "KEY_COMMANDS", "Status", "key_bytes",
    "INFO_FORMAT", "INFO_SIZE", "COUNTERS_FORMAT", "COUNTERS_SIZE", "ProtocolError", "Info", "Counters",
    "FILTER_COMMANDS", "APPLIANCE_COMMANDS", "APPLIANCE_ACTIONS", "APPLIANCE_KEYS", "APPLIANCE_COUNTERS",
    "APPLIANCE_FORMAT", "APPLIANCE_SIZE", "ApplianceStatus", "REGISTER_COMMANDS", "REGISTER_FORMAT", "REGISTER_SIZE",
]

PROTOCOL_VERSION = 3
REQUEST_SYNC = 0xA5
REPLY_SYNC = 0x5A
MAX_BATCH_LIMIT = 255  #: COUNT is one byte
#: A key command's byte is ``KEY_COMMAND_BASE | op``; the op is the command's low bits.
KEY_COMMAND_BASE = 0x10

#: The one-byte fields of a request after its sync byte and before its keys, in wire order.
REQUEST_HEADER = ("command", "count")
#: The one-byte fields of a reply after its sync byte and before its payload, in wire order.
REPLY_HEADER = ("command", "status", "length")
#: Bytes of the CRC that ends every frame (little-endian).
CRC_SIZE = 2

#: The frames' CRC, CRC-16/CCITT-FALSE, as an :class:`amaranth.lib.crc.Algorithm`: ``CRC(data_width=8)`` gives
#: the parameters whose ``compute`` the host uses and whose ``create()`` is the gateware's ``Processor``.
CRC = _crc_catalog.CRC16_CCITT_FALSE
_CRC_BYTES = CRC(data_width=8)


def crc16(data) -> int:
    """CRC-16/CCITT-FALSE (:data:`CRC`) of ``data`` (bytes, or an iterable of byte values)."""
    return _CRC_BYTES.compute(bytes(data))


Command = enum.IntEnum("Command", [("INFO", 0x01), ("COUNTERS", 0x02), ("APPLIANCE", 0x03), ("REG_READ", 0x04),
                                   ("REG_WRITE", 0x05)] +
                       [(op.name, KEY_COMMAND_BASE | op) for op in Op], module=__name__, qualname="Command")
Command.__doc__ = ("Request command byte: INFO, COUNTERS, APPLIANCE, REG_READ, REG_WRITE, and one key command "
                   "``KEY_COMMAND_BASE | op`` "
                   "per :class:`~apbbf.model.filters.Op` (built from it, with the op's name).")

#: The commands that carry keys, in :class:`~apbbf.model.filters.Op` order.
KEY_COMMANDS = tuple(Command[op.name] for op in Op)
#: The commands a filter board executes (the others it answers with BAD_COMMAND).
FILTER_COMMANDS = (Command.INFO, Command.COUNTERS) + KEY_COMMANDS
#: The commands on the control registers: each carries one 8-byte word (:data:`REGISTER_FORMAT`) as a key.
REGISTER_COMMANDS = (Command.REG_READ, Command.REG_WRITE)
#: The commands the de-duplication appliance executes.
APPLIANCE_COMMANDS = (Command.INFO, Command.APPLIANCE) + REGISTER_COMMANDS
#: A register command's word: the byte offset and the value (0 for REG_READ), u32 each; the reply of REG_READ
#: is the value, u32.
REGISTER_FORMAT = "<II"
REGISTER_SIZE = struct.calcsize(REGISTER_FORMAT)


class Status(enum.IntEnum):
    """Reply status byte."""
    OK = 0x00
    BAD_SYNC = 0x01
    BAD_LENGTH = 0x02
    BAD_CRC = 0x03
    BAD_COMMAND = 0x04
    TIMEOUT = 0x05
    UART = 0x06
    BAD_REGISTER = 0x07     #: a refused register access (nothing changed)


def key_bytes(key_width: int) -> int:
    """Bytes per key on the wire, ``ceil(key_width / 8)``.

    Raises
    ------
    TypeError, ValueError
        If ``key_width`` is not an integer in :data:`apbbf.model.config.KEY_WIDTHS`.
    """
    return (check_key_width(key_width) + 7) // 8


INFO_FORMAT = "<BIIIIIIQHQBBIII"
INFO_SIZE = struct.calcsize(INFO_FORMAT)
COUNTERS_FORMAT = "<IIIIIII"
COUNTERS_SIZE = struct.calcsize(COUNTERS_FORMAT)


#: The appliance's action byte: index in this tuple.
APPLIANCE_ACTIONS = ("drop", "mark", "count")
#: The appliance's key byte: index in this tuple.
APPLIANCE_KEYS = ("l3l4", "frame")
#: The appliance's counters in wire order: each port's MAC counters (frames received with at least one byte,
#: bad FCS, PHY errors, runts, frames cut or dropped for want of room, frames sent whole, frames cut short on
#: transmit), then the de-duplicator's (frames out of its decision, duplicates, dropped, unchecked, errored).
APPLIANCE_COUNTERS = tuple(f"port{port}_{name}" for port in (0, 1) for name in (
    "rx_frames", "rx_bad_fcs", "rx_phy_errors", "rx_runts", "rx_overflows", "tx_frames", "tx_underflows")) + (
    "dedup_frames", "dedup_duplicates", "dedup_dropped", "dedup_unchecked", "dedup_errored")
APPLIANCE_FORMAT = "<BBBBH" + "I" * len(APPLIANCE_COUNTERS)
APPLIANCE_SIZE = struct.calcsize(APPLIANCE_FORMAT)


class ProtocolError(Exception):
    """A frame or payload that cannot be decoded (bad sync, CRC or length), or an error status from the device.

    Attributes
    ----------
    status : Status or None
        The device's error status, if there is one.
    """

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Info:
    """The INFO payload (:data:`INFO_FORMAT`, fields in wire order)."""
    version: int
    k: int
    l: int
    block_bits: int
    block_hashes: int
    segment_blocks: int
    key_width: int
    seed: int
    max_batch: int
    span: int
    time_width: int
    extra_segments: int
    tick_ns: int
    row_bits: int = 0
    burst_bits: int = 0

    @classmethod
    def unpack(cls, payload: bytes) -> "Info":
        """Raises :class:`ProtocolError` if ``payload`` is not :data:`INFO_SIZE` bytes."""
        if len(payload) != INFO_SIZE:
            raise ProtocolError(f"INFO payload of {len(payload)} bytes, expected {INFO_SIZE}")
        return cls(*struct.unpack(INFO_FORMAT, payload))

    def pack(self) -> bytes:
        return struct.pack(INFO_FORMAT, *astuple(self))

    @classmethod
    def from_config(cls, config: Config, max_batch: int, tick_ns: int = 0) -> "Info":
        """What a device with ``config`` and ``max_batch`` reports (``tick_ns``: its clock's tick, with a span)."""
        return cls(PROTOCOL_VERSION, config.k, config.l, config.block_bits, config.block_hashes,
                   config.segment_blocks, config.key_width, config.seed, max_batch, config.span,
                   config.time_width, config.extra_segments, tick_ns if config.timed else 0, config.row_bits,
                   config.burst_bits)

    def config(self) -> Config:
        """The :class:`~apbbf.model.config.Config` the device reports."""
        return Config(k=self.k, l=self.l, block_bits=self.block_bits, block_hashes=self.block_hashes,
                      segment_blocks=self.segment_blocks, key_width=self.key_width, seed=self.seed,
                      span=self.span, time_width=self.time_width, extra_segments=self.extra_segments,
                      row_bits=self.row_bits, burst_bits=self.burst_bits)


@dataclass(frozen=True)
class Counters:
    """The COUNTERS payload (:data:`COUNTERS_FORMAT`, fields in wire order, each a u32)."""
    keys: int
    inserts: int
    generations: int
    frames: int
    errors: int
    overflows: int = 0
    expired: int = 0

    @classmethod
    def unpack(cls, payload: bytes) -> "Counters":
        """Raises :class:`ProtocolError` if ``payload`` is not :data:`COUNTERS_SIZE` bytes."""
        if len(payload) != COUNTERS_SIZE:
            raise ProtocolError(f"COUNTERS payload of {len(payload)} bytes, expected {COUNTERS_SIZE}")
        return cls(*struct.unpack(COUNTERS_FORMAT, payload))

    def pack(self) -> bytes:
        return struct.pack(COUNTERS_FORMAT, *astuple(self))



@dataclass(frozen=True)
class ApplianceStatus:
    """The APPLIANCE payload (:data:`APPLIANCE_FORMAT`): the build's options, the links and the counters."""
    version: int
    action: str
    key: str
    link: int
    max_frame: int
    counters: dict

    @classmethod
    def unpack(cls, payload: bytes) -> "ApplianceStatus":
        """Raises :class:`ProtocolError` if ``payload`` is not :data:`APPLIANCE_SIZE` bytes or names an unknown
        action or key."""
        if len(payload) != APPLIANCE_SIZE:
            raise ProtocolError(f"APPLIANCE payload of {len(payload)} bytes, expected {APPLIANCE_SIZE}")
        version, action, key, link, max_frame, *counters = struct.unpack(APPLIANCE_FORMAT, payload)
        if action >= len(APPLIANCE_ACTIONS) or key >= len(APPLIANCE_KEYS):
            raise ProtocolError(f"APPLIANCE payload with action {action} and key {key}")
        return cls(version, APPLIANCE_ACTIONS[action], APPLIANCE_KEYS[key], link, max_frame,
                   dict(zip(APPLIANCE_COUNTERS, counters)))

    def pack(self) -> bytes:
        return struct.pack(APPLIANCE_FORMAT, self.version, APPLIANCE_ACTIONS.index(self.action),
                           APPLIANCE_KEYS.index(self.key), self.link, self.max_frame,
                           *(self.counters[name] for name in APPLIANCE_COUNTERS))
