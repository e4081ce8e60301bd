# amaranth: UnusedElaboratable=no
"""End to end: apbbf.host.Device's bytes go, bit by bit, through the UART receiver, the host interface, the real
core and the UART transmitter of the simulated board top (FilterOverUART), and back; answers are checked against
the golden model. Malformed and truncated frames, resynchronisation, and that nothing inserted is lost."""

import argparse
import io
import random
from collections import deque

import pytest
from amaranth.sim import Simulator

from apbbf import protocol
from apbbf.hdl.board.boards import FilterOverUART
from apbbf.host import Device, DeviceError, add_parser, run as run_cli
from apbbf.model import APBBF as ModelAPBBF, Config
from apbbf.protocol import Command, Status

PERIOD = 1e-7          # simulated clock period (10 MHz); only ratios matter
DIVISOR = 4            # clock cycles per UART bit (the iCEBreaker's divisor)
TIMEOUT = 400          # inter-byte timeout of the device, cycles (> 1 character = 40 cycles)
MAX_BATCH = 16
# small filter: short generations so a few hundred inserts age it; short memories so reset clears quickly
CONFIG = Config(k=2, l=3, block_bits=16, block_hashes=2, segment_blocks=16, key_width=32, seed=0x1234)


class SimulatedSerial:
    """A :class:`apbbf.host.Transport` whose far end is the simulated board: written bytes are driven on the
    top's ``rx`` line at the UART bit rate; the top's ``tx`` line is decoded into received bytes. Reading runs
    the simulation (time in :meth:`read` is simulated time)."""

    def __init__(self, top, divisor=DIVISOR):
        self.top = top
        self.divisor = divisor
        self.to_device = deque()
        self.from_device = deque()
        self.sim = Simulator(top)
        self.sim.add_clock(PERIOD)
        self.sim.add_testbench(self._drive, background=True)
        self.sim.add_testbench(self._monitor, background=True)
        self.now = 0.0
        self.idle_line = True

    async def _drive(self, ctx):
        ctx.set(self.top.rx, 1)
        while True:
            if not self.to_device:
                await ctx.tick()
                continue
            byte = self.to_device.popleft()
            for level in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
                ctx.set(self.top.rx, level)
                await ctx.tick().repeat(self.divisor)

    async def _monitor(self, ctx):
        while True:
            await ctx.negedge(self.top.tx)
            await ctx.tick().repeat(self.divisor // 2)
            assert ctx.get(self.top.tx) == 0, "start bit glitch"
            byte = 0
            for i in range(8):
                await ctx.tick().repeat(self.divisor)
                byte |= ctx.get(self.top.tx) << i
            await ctx.tick().repeat(self.divisor)
            assert ctx.get(self.top.tx) == 1, "framing error on the device's tx"
            self.from_device.append(byte)

    def advance(self, seconds):
        self.now += seconds
        self.sim.run_until(self.now)

    def write(self, data):
        self.to_device.extend(bytes(data))

    def read(self, size, timeout):
        deadline = self.now + timeout
        step = 10 * self.divisor * PERIOD * 4
        while len(self.from_device) < size and self.now < deadline:
            self.advance(step)
        out = bytes(self.from_device.popleft() for _ in range(min(size, len(self.from_device))))
        return out

    def flush_input(self):
        self.from_device.clear()

    def wait_sent(self):
        """Run until every written byte is on the line (for tests that send raw bytes)."""
        while self.to_device:
            self.advance(10 * self.divisor * PERIOD)
        self.advance(10 * self.divisor * PERIOD)


def make(config=CONFIG):
    top = FilterOverUART(config, divisor=DIVISOR, max_batch=MAX_BATCH, timeout_cycles=TIMEOUT, led_cycles=8)
    link = SimulatedSerial(top)
    # reply timeout: a full reply plus the core's work, in simulated seconds; quiet gap > device timeout
    device = Device(link, timeout=4000 * PERIOD * DIVISOR, quiet=3 * TIMEOUT * PERIOD, retries=2)
    return top, link, device


def raw_exchange(link, data, count=1):
    """Send raw bytes and collect ``count`` reply frames (ends early on silence)."""
    link.write(data)
    decoder = protocol.ReplyDecoder()
    replies = []
    while len(replies) < count:
        chunk = link.read(1, 2 * TIMEOUT * PERIOD + 200 * DIVISOR * PERIOD)
        if not chunk:
            break
        decoder.feed(chunk)
        reply = decoder.next()
        if reply is not None:
            replies.append(reply)
    return replies


def test_info_and_counters():
    _, link, device = make()
    info = device.info()
    assert info == protocol.Info.from_config(CONFIG, MAX_BATCH)
    assert info.config() == CONFIG
    counters = device.counters()
    assert counters == protocol.Counters(keys=0, inserts=0, generations=0, frames=2, errors=0)


def test_commands_match_golden_model():
    _, link, device = make()
    model = ModelAPBBF(CONFIG)
    rng = random.Random(5)
    universe = [rng.randrange(1 << CONFIG.key_width) for _ in range(60)]
    # enough inserts to shift several generations (generation = CONFIG.generation inserts)
    inserts = [rng.choice(universe) for _ in range(3 * CONFIG.generation + 7)]
    device.insert(inserts)
    for key in inserts:
        model.insert(key)
    queries = universe[:40]
    assert device.query(queries) == [bool(model.query(key)) for key in queries]
    tests = [rng.choice(universe) for _ in range(21)]
    assert device.test_and_insert(tests) == [bool(model.test_and_insert(key)) for key in tests]
    counters = device.counters()
    assert counters.inserts == len(inserts) + len(tests)
    assert counters.keys == len(inserts) + len(tests) + len(queries)
    assert counters.generations == -(-(len(inserts) + len(tests)) // CONFIG.generation)
    assert counters.errors == 0


def test_malformed_frames_get_error_replies_and_lose_nothing():
    _, link, device = make()
    inserted = list(range(100, 100 + 12))
    device.insert(inserted)
    assert device.query(inserted) == [True] * len(inserted)
    before = device.counters()
    kw = CONFIG.key_width

    good = protocol.encode_request(Command.INSERT, [7, 8, 9], kw)
    # bad CRC: nothing of the frame is inserted
    bad_crc = good[:-1] + bytes([good[-1] ^ 0x01])
    replies = raw_exchange(link, bad_crc)
    assert [(r.command, r.status) for r in replies] == [(Command.INSERT, Status.BAD_CRC)]
    # a corrupted key byte (CRC catches it)
    corrupted = bytearray(good)
    corrupted[4] ^= 0x40
    replies = raw_exchange(link, bytes(corrupted))
    assert [(r.command, r.status) for r in replies] == [(Command.INSERT, Status.BAD_CRC)]
    # unknown command
    replies = raw_exchange(link, bytes([protocol.REQUEST_SYNC, 0x7E, 0]) + b"\x00\x00")
    assert [(r.command, r.status) for r in replies] == [(0x7E, Status.BAD_COMMAND)]
    device.resync()
    # bad length: too many keys, zero keys, keys on INFO
    for command, count in ((Command.QUERY, MAX_BATCH + 1), (Command.INSERT, 0), (Command.INFO, 1)):
        replies = raw_exchange(link, bytes([protocol.REQUEST_SYNC, command, count]))
        assert [(r.command, r.status) for r in replies] == [(command, Status.BAD_LENGTH)]
        device.resync()
    # garbage before a frame: one BAD_SYNC reply for the run of bad bytes
    replies = raw_exchange(link, b"\x00\x13\x37\xff")
    assert [(r.command, r.status) for r in replies] == [(0, Status.BAD_SYNC)]
    device.resync()
    # truncated frame: the device times out and says so
    replies = raw_exchange(link, good[:6])
    assert [(r.command, r.status) for r in replies] == [(Command.INSERT, Status.TIMEOUT)]
    device.resync()

    # the device resynchronised: normal traffic works, and nothing inserted before was lost
    assert device.query(inserted) == [True] * len(inserted)
    after = device.counters()
    assert after.inserts == before.inserts          # no rejected frame inserted anything
    assert after.keys == before.keys + len(inserted)
    assert after.errors == before.errors + 8
    # keys 7, 8 and 9 of the rejected frames were never inserted: the device answers as a filter that holds
    # exactly the accepted inserts (a false positive, if any, would be the model's too)
    model = ModelAPBBF(CONFIG)
    for key in inserted:
        model.insert(key)
    expected = [bool(model.query(key)) for key in (7, 8, 9)]
    assert expected != [True, True, True], "the test needs a filter that tells the keys apart"
    assert device.query([7, 8, 9]) == expected


@pytest.mark.slow
def test_time_window_on_the_board():
    """A Config with a span: the board top stamps each command with its microsecond counter (here one tick per
    cycle: clock_hz = 1 MHz), INFO reports the span and the tick, keys are present within the span and gone
    after it, and COUNTERS reports the expired segments once an insert after the gap restarts the filter."""
    config = Config(k=2, l=3, block_bits=16, block_hashes=2, segment_blocks=16, key_width=32, span=20_000,
                    time_width=24, extra_segments=1)
    _, link, device = make(config)
    info = device.info()
    assert (info.span, info.time_width, info.extra_segments, info.tick_ns) == (20_000, 24, 1, 1000)
    assert info.config() == config
    keys = [0x100 + i for i in range(10)]
    device.insert(keys)
    assert device.query(keys) == [True] * len(keys)
    link.advance((config.span + 1000) * PERIOD)            # one tick per cycle: past the span
    assert device.query(keys) == [False] * len(keys)
    assert device.counters().expired == 0                   # nothing retired yet: a query only skips them
    device.insert([0x999])                                  # the filter restarts: every live segment expired
    counters = device.counters()
    assert counters.expired >= config.k and counters.overflows == 0 and counters.inserts == len(keys) + 1
    assert device.query([0x999] + keys) == [True] + [False] * len(keys)
    out = io.StringIO()
    run_cli(argparse.Namespace(action="info", port="sim"), device, out)
    assert "time window      20000 ticks of 1000 ns = 20 ms" in out.getvalue()
    assert "expired=" in out.getvalue()


def test_garbage_mid_frame_then_retry_by_device():
    """Noise right before a request: Device sees an error reply, resyncs and resends on its own."""
    _, link, device = make()
    device.info()
    link.write(b"\x11\x22")          # stray bytes on the line (e.g. a glitch when a cable is plugged)
    device.insert([1, 2, 3])         # the first attempt may get BAD_SYNC; the retry goes through
    assert device.query([1, 2, 3]) == [True, True, True]
    assert device.counters().inserts == 3


def test_false_sync_inside_skipped_payload_then_recovery():
    """A bad-length frame whose skipped payload contains the sync byte: extra error replies, then recovery."""
    _, link, device = make()
    device.insert([0xA5A5A5A5])
    frame = bytes([protocol.REQUEST_SYNC, Command.INSERT, MAX_BATCH + 3]) + bytes([0xA5, 0x11, 0x05]) * 4
    link.write(frame)
    device.resync()
    assert device.query([0xA5A5A5A5]) == [True]
    assert device.counters().inserts == 1


def test_cli_against_simulated_board(capsys):
    import argparse
    _, link, device = make()
    parser = argparse.ArgumentParser(prog="apbbf")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["host", "--port", "sim", "insert", "1", "0x10", "--quiet"])
    assert run_cli(args, device) == 0
    args = parser.parse_args(["host", "--port", "sim", "query", "1", "16", "3", "--quiet"])
    run_cli(args, device)
    out = capsys.readouterr().out
    assert "1\tpresent" in out and "16\tpresent" in out and "3\tabsent" in out
    args = parser.parse_args(["host", "--port", "sim", "test-insert", "--string", "hello", "hello", "--quiet"])
    run_cli(args, device)
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == ["hello\tabsent", "hello\tpresent"]
    args = parser.parse_args(["host", "--port", "sim", "info"])
    run_cli(args, device)
    assert "k=2 l=3" in capsys.readouterr().out


class _Silent:
    """A transport whose far end never answers."""

    def __init__(self):
        self.written = []

    def write(self, data):
        self.written.append(bytes(data))

    def read(self, size, timeout):
        return b""

    def flush_input(self):
        pass


def test_missing_reply_is_not_resent():
    """A request may have been executed when its reply is lost: Device raises, and does not send it again."""
    transport = _Silent()
    device = Device(transport, timeout=0.0, retries=2)
    with pytest.raises(DeviceError, match="no reply"):
        device.request(Command.INSERT, [1, 2, 3], key_width=CONFIG.key_width)
    assert transport.written == [protocol.encode_request(Command.INSERT, [1, 2, 3], CONFIG.key_width)]
