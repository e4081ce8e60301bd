# amaranth: UnusedElaboratable=no
"""The protocol's specification (:mod:`apbbf.model.protocol`) and its host-side frames (:mod:`apbbf.protocol`):
the wire values, one definition of the ops, the CRC, key sizes, request and reply frames, payloads."""

import binascii
import random

import pytest

from apbbf import protocol
from apbbf.hdl.core.types import Op as HdlOp
from apbbf.model import protocol as spec
from apbbf.model.config import KEY_WIDTHS, Config
from apbbf.model.filters import Op
from apbbf.protocol import (COUNTERS_SIZE, INFO_SIZE, KEY_COMMAND_BASE, KEY_COMMANDS, REPLY_SYNC, REQUEST_SYNC,
                            Command, Counters, Info, ProtocolError, ReplyDecoder, Status, crc16, decode_request,
                            encode_reply, encode_request, key_bytes, pack_hits, unpack_hits)

CONFIG = Config(k=3, l=5, block_bits=64, block_hashes=4, segment_blocks=256, key_width=48, seed=0x0123456789ABCDEF)


# ---- the specification ------------------------------------------------------------------------------------

def test_host_module_reexports_the_specification():
    for name in spec.__all__:
        assert getattr(protocol, name) is getattr(spec, name)


def test_wire_values():
    """The bytes on the wire (docs/protocol.md): changing one breaks every deployed host or board."""
    assert (REQUEST_SYNC, REPLY_SYNC, spec.PROTOCOL_VERSION, spec.MAX_BATCH_LIMIT) == (0xA5, 0x5A, 3, 255)
    assert {command.name: command.value for command in Command} == {
        "INFO": 0x01, "COUNTERS": 0x02, "APPLIANCE": 0x03, "REG_READ": 0x04, "REG_WRITE": 0x05, "QUERY": 0x10,
        "INSERT": 0x11, "TEST_AND_INSERT": 0x12}
    assert {status.name: status.value for status in Status} == {
        "OK": 0, "BAD_SYNC": 1, "BAD_LENGTH": 2, "BAD_CRC": 3, "BAD_COMMAND": 4, "TIMEOUT": 5, "UART": 6,
        "BAD_REGISTER": 7}
    assert (INFO_SIZE, COUNTERS_SIZE, spec.APPLIANCE_SIZE) == (57, 28, 82)
    assert (spec.REQUEST_HEADER, spec.REPLY_HEADER, spec.CRC_SIZE) == (
        ("command", "count"), ("command", "status", "length"), 2)


def test_ops_and_key_commands_agree():
    """One definition of the ops: the gateware's Op and the protocol's key commands are the model's."""
    assert [(op.name, op.value) for op in HdlOp] == [(op.name, op.value) for op in Op]
    assert KEY_COMMANDS == tuple(Command[op.name] for op in Op)
    for op in Op:
        assert Command[op.name] == KEY_COMMAND_BASE | op
        # the gateware takes the op from the command's low bits
        assert Command[op.name] & (1 << HdlOp.as_shape().width) - 1 == op
    assert set(Command) - set(KEY_COMMANDS) == {Command.INFO, Command.COUNTERS, Command.APPLIANCE, Command.REG_READ,
                                                Command.REG_WRITE}
    assert spec.REGISTER_COMMANDS == (Command.REG_READ, Command.REG_WRITE) and spec.REGISTER_SIZE == 8


def test_crc():
    assert crc16(b"123456789") == 0x29B1
    assert crc16(b"") == 0xFFFF
    rng = random.Random(1)
    for size in (1, 2, 3, 35, 260):
        data = bytes(rng.randrange(256) for _ in range(size))
        # the standard library's CRC-CCITT with initial value 0xFFFF is CRC-16/CCITT-FALSE
        assert crc16(data) == binascii.crc_hqx(data, 0xFFFF)
    assert spec.CRC(data_width=8).compute(b"123456789") == 0x29B1


def test_key_bytes():
    assert [key_bytes(width) for width in (8, 9, 16, 17, 20, 32, 64, 512)] == [1, 2, 2, 3, 3, 4, 8, 64]


@pytest.mark.parametrize("width", [KEY_WIDTHS.start - 1, KEY_WIDTHS.stop, 0, 1])
def test_key_bytes_wrong_width(width):
    """The range is the model's (:data:`KEY_WIDTHS`), 8..512."""
    with pytest.raises(ValueError, match=rf"key_width must be from 8 to 512, not {width}"):
        key_bytes(width)


def test_key_bytes_wrong_type():
    with pytest.raises(TypeError, match="key_width must be an integer"):
        key_bytes(8.0)
    with pytest.raises(TypeError, match="key_width must be an integer"):
        key_bytes(True)


def test_info_round_trip():
    info = Info.from_config(CONFIG, 200)
    assert (info.version, info.max_batch) == (spec.PROTOCOL_VERSION, 200)
    payload = info.pack()
    assert len(payload) == INFO_SIZE
    assert payload[0] == spec.PROTOCOL_VERSION and payload[33:35] == (200).to_bytes(2, "little")
    assert payload[35:] == bytes(8) + bytes([32, 0]) + bytes(12)      # no span, 32-bit times unused, no tick, no rows
    assert Info.unpack(payload) == info
    assert info.config() == CONFIG
    timed = Config(2, 3, span=1234, time_width=24, extra_segments=5)
    info = Info.from_config(timed, 64, tick_ns=1000)
    payload = info.pack()
    assert payload[35:] == (1234).to_bytes(8, "little") + bytes([24, 5]) + (1000).to_bytes(4, "little") + bytes(8)
    assert Info.unpack(payload).config() == timed
    rows = Config(3, 4, block_bits=32, segment_blocks=65536, span=250000, extra_segments=3, row_bits=8192,
                  burst_bits=256)
    payload = Info.from_config(rows, 0, tick_ns=1000).pack()
    assert payload[49:] == (8192).to_bytes(4, "little") + (256).to_bytes(4, "little")
    assert Info.unpack(payload).config() == rows


def test_counters_round_trip():
    counters = Counters(keys=1, inserts=2, generations=3, frames=4, errors=0xFFFFFFFF, overflows=6, expired=7)
    payload = counters.pack()
    assert payload == bytes.fromhex("01000000" "02000000" "03000000" "04000000" "ffffffff" "06000000" "07000000")
    assert Counters.unpack(payload) == counters


@pytest.mark.parametrize("cls, size", [(Info, INFO_SIZE), (Counters, COUNTERS_SIZE)])
def test_payload_wrong_size(cls, size):
    for wrong in (size - 1, size + 1):
        with pytest.raises(ProtocolError, match=f"expected {size}"):
            cls.unpack(bytes(wrong))


# ---- host-side frames -------------------------------------------------------------------------------------

def test_request_frame_layout():
    frame = encode_request(Command.INSERT, [0x0102, 0xA5A5], key_width=16)
    body = bytes([Command.INSERT, 2, 0x02, 0x01, 0xA5, 0xA5])
    assert frame == bytes([REQUEST_SYNC]) + body + crc16(body).to_bytes(2, "little")
    assert encode_request(Command.INFO) == bytes([REQUEST_SYNC, 1, 0]) + crc16(b"\x01\x00").to_bytes(2, "little")


@pytest.mark.parametrize("key_width", [8, 20, 32, 64, 512])
def test_request_round_trip(key_width):
    rng = random.Random(key_width)
    for command in Command:
        if command in spec.REGISTER_COMMANDS and key_width != 64:
            continue
        count = rng.randrange(1, 256) if command in KEY_COMMANDS else int(command in spec.REGISTER_COMMANDS)
        keys = [rng.randrange(1 << key_width) for _ in range(count)]
        assert decode_request(encode_request(command, keys, key_width), key_width) == (command, keys)


def test_encode_request_wrong():
    with pytest.raises(ValueError, match="takes no keys"):
        encode_request(Command.COUNTERS, [1])
    with pytest.raises(ValueError, match="REG_WRITE takes one word of 64 bits"):
        encode_request(Command.REG_WRITE, [1, 2])
    with pytest.raises(ValueError, match="REG_READ takes one word of 64 bits"):
        encode_request(Command.REG_READ, [1], key_width=32)
    with pytest.raises(ValueError, match="at most 255 keys"):
        encode_request(Command.QUERY, [0] * 256)
    with pytest.raises(ValueError, match="does not fit"):
        encode_request(Command.QUERY, [256], key_width=8)
    with pytest.raises(ValueError, match="does not fit"):
        encode_request(Command.QUERY, [-1], key_width=8)
    with pytest.raises(ValueError):
        encode_request(0x7E)


def test_decode_request_wrong():
    frame = encode_request(Command.QUERY, [1, 2], key_width=32)
    with pytest.raises(ProtocolError, match="not a request frame"):
        decode_request(bytes([REPLY_SYNC]) + frame[1:], 32)
    with pytest.raises(ProtocolError, match="not a request frame"):
        decode_request(frame[:4], 32)
    with pytest.raises(ProtocolError, match="for 2 keys"):
        decode_request(frame[:-1], 32)
    with pytest.raises(ProtocolError, match="bad CRC") as error:
        decode_request(frame[:-1] + bytes([frame[-1] ^ 1]), 32)
    assert error.value.status == Status.BAD_CRC
    body = bytes([0x7E, 0])
    with pytest.raises(ProtocolError, match="unknown command") as error:
        decode_request(bytes([REQUEST_SYNC]) + body + crc16(body).to_bytes(2, "little"), 32)
    assert error.value.status == Status.BAD_COMMAND


def test_reply_frame_layout():
    assert encode_reply(Command.QUERY, Status.OK, b"\x05") == (
        bytes([REPLY_SYNC, 0x10, 0x00, 0x01, 0x05]) + crc16(b"\x10\x00\x01\x05").to_bytes(2, "little"))
    assert encode_reply(0, Status.BAD_SYNC) == bytes([REPLY_SYNC, 0, 1, 0]) + crc16(b"\x00\x01\x00").to_bytes(2, "little")


def test_hits():
    rng = random.Random(2)
    for count in (1, 7, 8, 9, 64, 255):
        hits = [rng.random() < 0.5 for _ in range(count)]
        payload = pack_hits(hits)
        assert len(payload) == (count + 7) // 8
        assert unpack_hits(payload, count) == hits
    assert pack_hits([True, False, False, False, False, False, False, False, False, True]) == b"\x01\x02"
    with pytest.raises(ProtocolError, match="needs 2 bitmap bytes"):
        unpack_hits(b"\x00", 9)


def test_reply_decoder_byte_by_byte():
    frames = [encode_reply(Command.INFO, Status.OK, bytes(range(35))), encode_reply(0, Status.BAD_SYNC),
              encode_reply(Command.QUERY, Status.OK, bytes([REPLY_SYNC, 0xFF]))]
    stream = b"\x00\x13" + frames[0] + b"\xff" + frames[1] + frames[2]   # noise before and between frames
    decoder = ReplyDecoder()
    replies = []
    for value in stream:
        assert decoder.needed() >= 1
        decoder.feed(bytes([value]))
        reply = decoder.next()
        if reply is not None:
            replies.append(reply)
            assert decoder.needed() == 6                       # nothing buffered: a whole empty frame
    assert replies == [protocol.Reply(Command.INFO, Status.OK, bytes(range(35))),
                       protocol.Reply(0, Status.BAD_SYNC, b""),
                       protocol.Reply(Command.QUERY, Status.OK, bytes([REPLY_SYNC, 0xFF]))]
    assert decoder.next() is None


@pytest.mark.parametrize("payload", [b"", b"\x01", bytes(20)])
@pytest.mark.parametrize("chunk", [1, 2, None])
def test_reply_decoder_needed_is_exact(payload, chunk):
    """Device.read_reply waits for needed() bytes and may get fewer at a time: needed() must never ask for bytes
    past the frame (the wait would last until the reply timeout)."""
    frame = encode_reply(Command.COUNTERS, Status.OK, payload)
    decoder = ReplyDecoder()
    have = 0
    while True:
        need = decoder.needed()
        assert 1 <= need <= len(frame) - have
        got = frame[have:have + (need if chunk is None else min(need, chunk))]
        decoder.feed(got)
        have += len(got)
        reply = decoder.next()
        if reply is not None:
            break
    assert have == len(frame) and reply.payload == payload


def test_reply_decoder_bad_crc():
    bad = bytearray(encode_reply(Command.QUERY, Status.OK, b"\x01"))
    bad[4] ^= 0x02
    good = encode_reply(Command.QUERY, Status.OK, b"\x03")
    decoder = ReplyDecoder()
    decoder.feed(bytes(bad) + good)
    with pytest.raises(ProtocolError, match="bad CRC"):
        decoder.next()
    # the bad frame was consumed: the next one decodes
    assert decoder.next() == protocol.Reply(Command.QUERY, Status.OK, b"\x03")
