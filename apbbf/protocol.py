"""Host side of the board protocol: request and reply frames as bytes.

The protocol itself (framing, commands, statuses, payload formats, CRC, error handling) is specified in
:mod:`apbbf.model.protocol`, which the gateware imports too; its names are re-exported here so host code needs
one import. This module adds what only software does with frames: :func:`encode_request` and
:class:`ReplyDecoder` for :class:`apbbf.host.Device`, and the device side's encodings (:func:`decode_request`,
:func:`encode_reply`, :func:`pack_hits`) that tests and software stand-ins for a board use as the reference the
gateware must match.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model.protocol import (APPLIANCE_ACTIONS, APPLIANCE_COMMANDS, APPLIANCE_COUNTERS, APPLIANCE_FORMAT,
                             APPLIANCE_KEYS, APPLIANCE_SIZE, COUNTERS_FORMAT, COUNTERS_SIZE, CRC, CRC_SIZE,
                             FILTER_COMMANDS, INFO_FORMAT, INFO_SIZE, ApplianceStatus,
                             KEY_COMMAND_BASE, KEY_COMMANDS, MAX_BATCH_LIMIT, PROTOCOL_VERSION, REPLY_HEADER,
                             REPLY_SYNC, REQUEST_HEADER, REQUEST_SYNC, Command, Counters, Info, ProtocolError,
                             Status, crc16, key_bytes, REGISTER_COMMANDS, REGISTER_FORMAT, REGISTER_SIZE)

__all__ = [
    # the specification, from apbbf.model.protocol
    "PROTOCOL_VERSION", "REQUEST_SYNC", "REPLY_SYNC", "MAX_BATCH_LIMIT", "KEY_COMMAND_BASE", "REQUEST_HEADER",
    "REPLY_HEADER", "CRC_SIZE", "CRC", "crc16", "Command", "KEY_COMMANDS", "Status", "key_bytes",
    "INFO_FORMAT", "INFO_SIZE", "COUNTERS_FORMAT", "COUNTERS_SIZE", "ProtocolError", "Info", "Counters",
    "FILTER_COMMANDS", "APPLIANCE_COMMANDS", "APPLIANCE_ACTIONS", "APPLIANCE_KEYS", "APPLIANCE_COUNTERS",
    "APPLIANCE_FORMAT", "APPLIANCE_SIZE", "ApplianceStatus", "REGISTER_COMMANDS", "REGISTER_FORMAT", "REGISTER_SIZE",
    # frames as bytes
    "encode_request", "decode_request", "encode_reply", "Reply", "ReplyDecoder", "pack_hits", "unpack_hits",
]

#: Bytes of a request or reply frame besides its keys or payload: sync byte, header, CRC.
_REQUEST_OVERHEAD = 1 + len(REQUEST_HEADER) + CRC_SIZE
_REPLY_OVERHEAD = 1 + len(REPLY_HEADER) + CRC_SIZE


def _with_crc(sync: int, body: bytes) -> bytes:
    return bytes([sync]) + body + crc16(body).to_bytes(CRC_SIZE, "little")


def _crc_ok(frame: bytes) -> bool:
    return crc16(frame[1:-CRC_SIZE]) == int.from_bytes(frame[-CRC_SIZE:], "little")


def pack_hits(hits) -> bytes:
    """Bitmap of a key command's answers: bit ``i % 8`` of byte ``i // 8`` is ``hits[i]``."""
    hits = list(hits)
    out = bytearray((len(hits) + 7) // 8)
    for i, hit in enumerate(hits):
        if hit:
            out[i // 8] |= 1 << (i % 8)
    return bytes(out)


def unpack_hits(payload: bytes, count: int) -> list[bool]:
    """Inverse of :func:`pack_hits` for ``count`` keys.

    Raises
    ------
    ProtocolError
        If ``payload`` is not ``ceil(count / 8)`` bytes.
    """
    if len(payload) != (count + 7) // 8:
        raise ProtocolError(f"a reply for {count} keys needs {(count + 7) // 8} bitmap bytes, got {len(payload)}")
    return [bool(payload[i // 8] >> (i % 8) & 1) for i in range(count)]


def encode_request(command, keys=(), key_width: int = 64) -> bytes:
    """Bytes of one request frame.

    Raises
    ------
    ValueError
        If ``command`` is not a :class:`Command`, a key does not fit ``key_width`` bits, more than
        :data:`MAX_BATCH_LIMIT` keys are given, or keys are given to INFO/COUNTERS.
    """
    command = Command(command)
    keys = list(keys)
    if command not in KEY_COMMANDS + REGISTER_COMMANDS and keys:
        raise ValueError(f"{command.name} takes no keys")
    if command in REGISTER_COMMANDS and (len(keys) != 1 or key_width != 8 * REGISTER_SIZE):
        raise ValueError(f"{command.name} takes one word of {8 * REGISTER_SIZE} bits (offset, value)")
    if len(keys) > MAX_BATCH_LIMIT:
        raise ValueError(f"at most {MAX_BATCH_LIMIT} keys per frame, not {len(keys)}")
    kb = key_bytes(key_width)
    body = bytearray([command, len(keys)])
    for key in keys:
        if not 0 <= key < 1 << key_width:
            raise ValueError(f"key {key!r} does not fit in key_width={key_width} bits")
        body += int(key).to_bytes(kb, "little")
    return _with_crc(REQUEST_SYNC, bytes(body))


def decode_request(frame: bytes, key_width: int = 64) -> tuple[Command, list[int]]:
    """Inverse of :func:`encode_request`: what a device reads from one whole frame.

    Raises
    ------
    ProtocolError
        If ``frame`` does not start with :data:`REQUEST_SYNC`, its length does not match its COUNT, its CRC is
        wrong (``status`` :attr:`Status.BAD_CRC`) or its command is unknown (``status``
        :attr:`Status.BAD_COMMAND`).
    """
    kb = key_bytes(key_width)
    if len(frame) < _REQUEST_OVERHEAD or frame[0] != REQUEST_SYNC:
        raise ProtocolError("not a request frame")
    count = frame[2]
    if len(frame) != _REQUEST_OVERHEAD + count * kb:
        raise ProtocolError(f"frame of {len(frame)} bytes for {count} keys")
    if not _crc_ok(frame):
        raise ProtocolError("bad CRC", Status.BAD_CRC)
    if frame[1] not in Command._value2member_map_:
        raise ProtocolError(f"unknown command {frame[1]:#04x}", Status.BAD_COMMAND)
    keys = [int.from_bytes(frame[3 + i * kb:3 + (i + 1) * kb], "little") for i in range(count)]
    return Command(frame[1]), keys


def encode_reply(command: int, status: int, payload: bytes = b"") -> bytes:
    """Bytes of one reply frame (what the device sends)."""
    return _with_crc(REPLY_SYNC, bytes([command, status, len(payload)]) + bytes(payload))


@dataclass(frozen=True)
class Reply:
    """One decoded reply frame."""
    command: int
    status: int
    payload: bytes


class ReplyDecoder:
    """Incremental decoder of the device's byte stream into :class:`Reply` frames.

    Bytes before a sync byte are skipped; a frame with a bad CRC raises :class:`ProtocolError` after it has been
    consumed.
    """

    def __init__(self):
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def needed(self) -> int:
        """Bytes still missing before the next frame can be decoded (at least 1 while incomplete)."""
        start = self._buffer.find(REPLY_SYNC)
        if start < 0:
            return _REPLY_OVERHEAD
        have = len(self._buffer) - start
        if have <= len(REPLY_HEADER):
            return _REPLY_OVERHEAD - have
        return max(0, _REPLY_OVERHEAD + self._buffer[start + 3] - have)

    def next(self) -> Reply | None:
        """The next complete frame, or None if more bytes are needed.

        Raises
        ------
        ProtocolError
            If the frame's CRC is wrong (the frame is consumed).
        """
        start = self._buffer.find(REPLY_SYNC)
        if start < 0:
            self._buffer.clear()
            return None
        del self._buffer[:start]
        if len(self._buffer) <= len(REPLY_HEADER):
            return None
        size = _REPLY_OVERHEAD + self._buffer[3]
        if len(self._buffer) < size:
            return None
        frame = bytes(self._buffer[:size])
        del self._buffer[:size]
        if not _crc_ok(frame):
            raise ProtocolError(f"reply with a bad CRC: {frame.hex()}")
        return Reply(frame[1], frame[2], frame[4:-CRC_SIZE])
