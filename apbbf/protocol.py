"""The binary protocol between a host and the filter on a board: one spec for :mod:`apbbf.host` and the gateware
(:mod:`apbbf.hdl.host_interface`).

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
no reflection, no final XOR; ``crc16(b"123456789") == 0x29B1``).

Request (host to device)
------------------------
====== ============ ==============================================================================
offset size         field
====== ============ ==============================================================================
0      1            ``SYNC`` = 0xA5
1      1            ``CMD``: 0x01 INFO, 0x02 COUNTERS, 0x10 QUERY, 0x11 INSERT, 0x12 TEST_AND_INSERT
                    (a key command is ``0x10 | Op``, :class:`apbbf.hdl.types.Op`)
2      1            ``COUNT``: number of keys; 0 for INFO and COUNTERS, 1..``max_batch`` for key commands
3      COUNT·KB     the keys, each ``KB = ceil(key_width / 8)`` bytes, little-endian, in order
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

Payloads
~~~~~~~~
- QUERY / INSERT / TEST_AND_INSERT: ``ceil(COUNT / 8)`` bytes of hit bits; key i's answer is bit ``i % 8`` of
  byte ``i // 8`` (unused bits are 0). INSERT always answers 0.
- INFO (35 bytes): version u8, k u32, l u32, block_bits u32, block_hashes u32, segment_blocks u32,
  key_width u32, seed u64, max_batch u16 (:data:`INFO_FORMAT`). A host compares these with the
  :class:`~apbbf.model.config.Config` it expects before trusting the answers.
- COUNTERS (20 bytes): keys u32 (commands the core executed), inserts u32 (INSERT and TEST_AND_INSERT keys),
  generations u32 (shifts of the filter), frames u32 (requests executed), errors u32 (requests rejected),
  each wrapping modulo 2**32 (:data:`COUNTERS_FORMAT`).

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

A key byte may equal 0xA5, so after an error the device can lock onto a false start inside the remains of the
bad frame and send further error replies. A host therefore recovers by waiting for a quiet gap longer than the
device's timeout, discarding whatever arrived, and resending (:meth:`apbbf.host.Device` does this). An error
reply whose CMD is the request's own means that request was not executed, so resending it is safe; an error
reply with another CMD (e.g. BAD_SYNC, CMD 0x00, for noise before the request) is about other bytes, and the
host keeps waiting for its own reply (resending only if none comes). A reply that never arrives is not resent
automatically: the request may have been executed, and a second INSERT would age the filter twice. The filter's contents are never reset
by an error: nothing inserted before is lost.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

__all__ = [
    "PROTOCOL_VERSION", "REQUEST_SYNC", "REPLY_SYNC", "Command", "Status", "KEY_COMMANDS", "INFO_FORMAT",
    "INFO_SIZE", "COUNTERS_FORMAT", "COUNTERS_SIZE", "MAX_BATCH_LIMIT", "crc16", "key_bytes", "encode_request",
    "encode_reply", "decode_request", "ReplyDecoder", "Reply", "Info", "Counters", "ProtocolError",
    "pack_hits", "unpack_hits",
]

PROTOCOL_VERSION = 1
REQUEST_SYNC = 0xA5
REPLY_SYNC = 0x5A
MAX_BATCH_LIMIT = 255  #: COUNT is one byte


class Command(enum.IntEnum):
    """Request command byte."""
    INFO = 0x01
    COUNTERS = 0x02
    QUERY = 0x10
    INSERT = 0x11
    TEST_AND_INSERT = 0x12


KEY_COMMANDS = (Command.QUERY, Command.INSERT, Command.TEST_AND_INSERT)


class Status(enum.IntEnum):
    """Reply status byte."""
    OK = 0x00
    BAD_SYNC = 0x01
    BAD_LENGTH = 0x02
    BAD_CRC = 0x03
    BAD_COMMAND = 0x04
    TIMEOUT = 0x05
    UART = 0x06


INFO_FORMAT = "<BIIIIIIQH"
INFO_SIZE = struct.calcsize(INFO_FORMAT)
COUNTERS_FORMAT = "<IIIII"
COUNTERS_SIZE = struct.calcsize(COUNTERS_FORMAT)


class ProtocolError(Exception):
    """A reply that cannot be decoded (bad sync, CRC or length), or an error status from the device."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def crc16(data, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE of ``data`` (bytes), continuing from ``crc``."""
    for byte in bytes(data):
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def key_bytes(key_width: int) -> int:
    """Bytes per key on the wire, ``ceil(key_width / 8)``."""
    if not 1 <= key_width <= 512:
        raise ValueError(f"key_width must be from 1 to 512, not {key_width}")
    return (key_width + 7) // 8


def pack_hits(hits) -> bytes:
    """Bitmap of a key command's answers: bit ``i % 8`` of byte ``i // 8`` is ``hits[i]``."""
    hits = list(hits)
    out = bytearray((len(hits) + 7) // 8)
    for i, hit in enumerate(hits):
        if hit:
            out[i // 8] |= 1 << (i % 8)
    return bytes(out)


def unpack_hits(payload: bytes, count: int) -> list[bool]:
    """Inverse of :func:`pack_hits` for ``count`` keys."""
    if len(payload) != (count + 7) // 8:
        raise ProtocolError(f"a reply for {count} keys needs {(count + 7) // 8} bitmap bytes, got {len(payload)}")
    return [bool(payload[i // 8] >> (i % 8) & 1) for i in range(count)]


def encode_request(command, keys=(), key_width: int = 64) -> bytes:
    """Bytes of one request frame.

    Raises
    ------
    ValueError
        If a key does not fit ``key_width`` bits, more than :data:`MAX_BATCH_LIMIT` keys are given, or keys are
        given to INFO/COUNTERS.
    """
    command = Command(command)
    keys = list(keys)
    if command not in KEY_COMMANDS and keys:
        raise ValueError(f"{command.name} takes no keys")
    if len(keys) > MAX_BATCH_LIMIT:
        raise ValueError(f"at most {MAX_BATCH_LIMIT} keys per frame, not {len(keys)}")
    kb = key_bytes(key_width)
    body = bytearray([command, len(keys)])
    for key in keys:
        if not 0 <= key < 1 << key_width:
            raise ValueError(f"key {key!r} does not fit in key_width={key_width} bits")
        body += int(key).to_bytes(kb, "little")
    return bytes([REQUEST_SYNC]) + bytes(body) + crc16(body).to_bytes(2, "little")


def decode_request(frame: bytes, key_width: int = 64) -> tuple[Command, list[int]]:
    """Inverse of :func:`encode_request` (used by tests and by software stand-ins for the device)."""
    kb = key_bytes(key_width)
    if len(frame) < 5 or frame[0] != REQUEST_SYNC:
        raise ProtocolError("not a request frame")
    count = frame[2]
    if len(frame) != 5 + count * kb:
        raise ProtocolError(f"frame of {len(frame)} bytes for {count} keys")
    if crc16(frame[1:-2]) != int.from_bytes(frame[-2:], "little"):
        raise ProtocolError("bad CRC", Status.BAD_CRC)
    keys = [int.from_bytes(frame[3 + i * kb:3 + (i + 1) * kb], "little") for i in range(count)]
    return Command(frame[1]), keys


def encode_reply(command: int, status: int, payload: bytes = b"") -> bytes:
    """Bytes of one reply frame."""
    body = bytes([command, status, len(payload)]) + bytes(payload)
    return bytes([REPLY_SYNC]) + body + crc16(body).to_bytes(2, "little")


@dataclass(frozen=True)
class Reply:
    """One decoded reply frame."""
    command: int
    status: int
    payload: bytes


class ReplyDecoder:
    """Incremental decoder of the device's byte stream into :class:`Reply` frames.

    Bytes before a sync byte are skipped (and counted in :attr:`skipped`); a frame with a bad CRC raises
    :class:`ProtocolError` after it has been consumed.
    """

    def __init__(self):
        self._buffer = bytearray()
        self.skipped = 0

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def needed(self) -> int:
        """Bytes still missing before the next frame can be decoded (at least 1 while incomplete)."""
        start = self._buffer.find(REPLY_SYNC)
        if start < 0:
            return 6
        have = len(self._buffer) - start
        if have < 4:
            return 6 - have
        return max(0, 6 + self._buffer[start + 3] - have)

    def next(self) -> Reply | None:
        """The next complete frame, or None if more bytes are needed."""
        start = self._buffer.find(REPLY_SYNC)
        if start < 0:
            self.skipped += len(self._buffer)
            self._buffer.clear()
            return None
        if start:
            self.skipped += start
            del self._buffer[:start]
        if len(self._buffer) < 4:
            return None
        length = self._buffer[3]
        if len(self._buffer) < 6 + length:
            return None
        frame = bytes(self._buffer[:6 + length])
        del self._buffer[:6 + length]
        if crc16(frame[1:-2]) != int.from_bytes(frame[-2:], "little"):
            raise ProtocolError(f"reply with a bad CRC: {frame.hex()}")
        return Reply(frame[1], frame[2], frame[4:-2])


@dataclass(frozen=True)
class Info:
    """The INFO payload."""
    version: int
    k: int
    l: int
    block_bits: int
    block_hashes: int
    segment_blocks: int
    key_width: int
    seed: int
    max_batch: int

    @classmethod
    def unpack(cls, payload: bytes) -> "Info":
        if len(payload) != INFO_SIZE:
            raise ProtocolError(f"INFO payload of {len(payload)} bytes, expected {INFO_SIZE}")
        return cls(*struct.unpack(INFO_FORMAT, payload))

    def pack(self) -> bytes:
        return struct.pack(INFO_FORMAT, self.version, self.k, self.l, self.block_bits, self.block_hashes,
                           self.segment_blocks, self.key_width, self.seed, self.max_batch)

    @classmethod
    def from_config(cls, config, max_batch: int) -> "Info":
        return cls(PROTOCOL_VERSION, config.k, config.l, config.block_bits, config.block_hashes,
                   config.segment_blocks, config.key_width, config.seed, max_batch)

    def config(self):
        """The :class:`~apbbf.model.config.Config` the device reports."""
        from apbbf.model.config import Config
        return Config(k=self.k, l=self.l, block_bits=self.block_bits, block_hashes=self.block_hashes,
                      segment_blocks=self.segment_blocks, key_width=self.key_width, seed=self.seed)


@dataclass(frozen=True)
class Counters:
    """The COUNTERS payload."""
    keys: int
    inserts: int
    generations: int
    frames: int
    errors: int

    @classmethod
    def unpack(cls, payload: bytes) -> "Counters":
        if len(payload) != COUNTERS_SIZE:
            raise ProtocolError(f"COUNTERS payload of {len(payload)} bytes, expected {COUNTERS_SIZE}")
        return cls(*struct.unpack(COUNTERS_FORMAT, payload))
