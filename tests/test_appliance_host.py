# amaranth: UnusedElaboratable=no
"""The appliance's host side (ApplianceHost) simulated bit by bit behind its UART: apbbf.host.Device reads INFO
and APPLIANCE while the counters move every clock (traffic), each reply's counters are those of one clock, and the
commands the appliance does not execute are refused; the CLI's info and counters."""

import argparse
import io

import pytest
from amaranth import Cat, Module, Signal
from amaranth.lib import wiring

from apbbf import protocol
from apbbf.hdl.appliance.host import ApplianceExecutor, ApplianceHost, key_name
from apbbf.host import Device, DeviceError, add_parser, run as run_cli
from apbbf.model import Config
from apbbf.model.packet import KeySpec
from apbbf.protocol import APPLIANCE_COUNTERS, Command, Status

from .test_host_interface import DIVISOR, PERIOD, TIMEOUT, SimulatedSerial, raw_exchange

CONFIG = Config(k=2, l=4, segment_blocks=512, span=4000, extra_segments=1, seed=0x5EED)


class _Traffic(wiring.Component):
    """ApplianceHost with counters that move on every clock while frames flow: counter i is ``32 * base + i``
    for a base that counts clocks, so a reply mixing two clocks shows."""

    rx: wiring.In(1, init=1)
    tx: wiring.Out(1, init=1)

    def __init__(self, action="drop", key="l3l4", config=CONFIG, runtime_seed=False, runtime_window=False):
        self.host = ApplianceHost(config, action=action, key=key, max_frame=1522, divisor=DIVISOR,
                                  timeout_cycles=TIMEOUT, runtime_seed=runtime_seed, runtime_window=runtime_window)
        self.runtime_seed = runtime_seed
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.host = host = self.host
        base = Signal(27)                                    # base * 32 + i: 33 bits, the low 32 kept
        m.d.sync += base.eq(base + 1)
        m.d.comb += [host.counters.eq(Cat((base * 32 + i)[:32] for i in range(len(APPLIANCE_COUNTERS)))),
                     host.link.eq(0b10), host.rx.eq(self.rx), self.tx.eq(host.tx)]
        # a de-duplicator's clear (a re-key is such a clear; or a new window), three cycles after it is asked for;
        # its frame the cycle after: 1000 + the changes
        delay, window_delay = Signal(3), Signal(3)
        rekey = host.control_rekey if self.runtime_seed else 0
        m.d.sync += delay.eq(Cat(host.control_clear | rekey, delay[:2]))
        frames = Signal(32, init=1000)
        done = delay[2]
        if hasattr(host, "control_window_set"):
            m.d.sync += window_delay.eq(Cat(host.control_window_set, window_delay[:2]))
            m.d.comb += host.control_window_done.eq(window_delay[2])
            done = done | window_delay[2]
        with m.If(done):
            m.d.sync += frames.eq(frames + 1)
        m.d.comb += [host.control_cleared.eq(delay[2]), host.control_frames.eq(frames)]
        self.action = host.control_action
        return m


def make(**kwargs):
    top = _Traffic(**kwargs)
    link = SimulatedSerial(top)
    device = Device(link, timeout=4000 * PERIOD * DIVISOR, quiet=3 * TIMEOUT * PERIOD, retries=2)
    return link, device


def test_info_and_appliance_during_traffic():
    link, device = make()
    info = device.info()
    assert info == protocol.Info.from_config(CONFIG, 0, 1000)
    assert info.config() == CONFIG and device.is_appliance()
    previous = None
    for _ in range(3):
        status = device.appliance()
        assert (status.version, status.action, status.key, status.link, status.max_frame) == (
            protocol.PROTOCOL_VERSION, "drop", "l3l4", 0b10, 1522)
        values = list(status.counters.values())
        base = values[0] // 32
        assert values == [(base * 32 + i) % (1 << 32) for i in range(len(values))], "counters of one clock"
        if previous is not None:
            assert base > previous                          # taken anew for each reply
        previous = base


@pytest.mark.parametrize("command", [Command.COUNTERS, Command.QUERY])
def test_filter_commands_refused(command):
    link, _ = make()
    keys = [1] if command == Command.QUERY else []
    replies = raw_exchange(link, protocol.encode_request(command, keys))
    link.wait_sent()                                        # the refusal comes before the frame's end
    assert [(r.command, r.status, r.payload) for r in replies] == [(command, Status.BAD_COMMAND, b"")]


def test_filter_board_refuses_appliance():
    """A filter board (FilterOverUART) answers APPLIANCE with BAD_COMMAND, and its host sees it is no appliance."""
    from .test_host_interface import make as make_filter_board
    _, link, device = make_filter_board()
    assert not device.is_appliance()
    replies = raw_exchange(link, protocol.encode_request(Command.APPLIANCE))
    link.wait_sent()
    assert [(r.command, r.status) for r in replies] == [(Command.APPLIANCE, Status.BAD_COMMAND)]


def test_options_in_payload():
    _, device = make(action="count", key="frame")
    status = device.appliance()
    assert (status.action, status.key) == ("count", "frame")


def test_cli(capsys):
    _, device = make()
    parser = argparse.ArgumentParser(prog="apbbf")
    add_parser(parser.add_subparsers(dest="command"))
    out = io.StringIO()
    assert run_cli(parser.parse_args(["host", "--port", "sim", "info"]), device, out) == 0
    text = out.getvalue()
    assert "action drop, key l3l4" in text and "port 0 down, port 1 up" in text and "4 ms" in text
    out = io.StringIO()
    assert run_cli(parser.parse_args(["host", "--port", "sim", "counters"]), device, out) == 0
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == list(APPLIANCE_COUNTERS)
    assert "row layout" not in text


def test_info_of_the_filter_in_dram():
    """The appliance with its filter in DRAM reports the row layout in INFO: the Config a host rebuilds from it
    is the built one (the row layout changes which blocks a key sets), and `apbbf host info` prints it."""
    rows = Config(k=3, l=4, block_bits=32, segment_blocks=65536, span=250000, extra_segments=3, row_bits=8192,
                  seed=0x5EED)
    _, device = make(config=rows)
    info = device.info()
    assert (info.row_bits, info.burst_bits) == (8192, 0) and info.config() == rows
    parser = argparse.ArgumentParser(prog="apbbf")
    add_parser(parser.add_subparsers(dest="command"))
    out = io.StringIO()
    assert run_cli(parser.parse_args(["host", "--port", "sim", "info"]), device, out) == 0
    assert "row layout       4096 rows of 8192 bits, 16 blocks of each segment in a row" in out.getvalue()


def test_payload_round_trip():
    status = protocol.ApplianceStatus(2, "mark", "frame", 3, 1522, {n: i for i, n in enumerate(APPLIANCE_COUNTERS)})
    assert protocol.ApplianceStatus.unpack(status.pack()) == status
    with pytest.raises(protocol.ProtocolError, match="82"):
        protocol.ApplianceStatus.unpack(b"\0" * 81)


def test_parameters_checked():
    assert key_name(KeySpec.l3l4()) == "l3l4" and key_name(KeySpec.frame()) == "frame"
    with pytest.raises(ValueError, match="action"):
        ApplianceExecutor(CONFIG, action="pass", key="l3l4", max_frame=1522)
    with pytest.raises(ValueError, match="key"):
        ApplianceExecutor(CONFIG, action="drop", key="ip", max_frame=1522)
    with pytest.raises(ValueError, match="max_frame"):
        ApplianceExecutor(CONFIG, action="drop", key="l3l4", max_frame=10)
    from apbbf.hdl.board.host_parser import HostParser
    with pytest.raises(ValueError, match="key_width must be 64 to take the register commands"):
        HostParser(32, max_batch=1, commands=protocol.APPLIANCE_COMMANDS)
    with pytest.raises(ValueError, match="action must be 'drop' or 'count' on the appliance"):
        appliance_facts(CONFIG, action="mark", key="l3l4", max_frame=1522)
    assert appliance_facts(CONFIG, action="count", key="frame", max_frame=1522).actions == ("count",)


@pytest.fixture(autouse=True)
def _collect_simulators():
    """Each test's simulator (its background testbenches never end) is collected before the next test runs its
    own, not in the middle of it."""
    yield
    import gc
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.collect()


# ---- the control registers over the UART ------------------------------------------------------------------------

from apbbf.hdl.appliance.host import appliance_facts                         # noqa: E402
from apbbf.model.registers import (Control, RegisterError, RegisterFile, register_map)  # noqa: E402

OFF = {name: r.offset for name, r in register_map("appliance").items()}


def _answer(call):
    try:
        return True, call()
    except RegisterError:
        return False, None


def test_registers_over_the_uart():
    """REG_READ and REG_WRITE through Device, every access answered as the model of the register file answers
    it (BAD_REGISTER for a refused one, which changes nothing and is not resent)."""
    link, device = make()
    model = RegisterFile(appliance_facts(CONFIG, action="drop", key="l3l4", max_frame=1522), link=lambda: 0b10)
    for name, register in register_map("appliance").items():
        if name.startswith("PORT") or name in ("FRAMES", "DUPLICATES", "DROPPED", "UNCHECKED", "ERRORED"):
            continue                                         # live traffic counters: checked below
        assert _answer(lambda: device.read_register(register.offset)) == _answer(
            lambda: model.read(register.offset)), name
    writes = [("ACTION", 2), ("ACTION", 1), ("ACTION", 0), ("ACTION", 2), ("WINDOW", 4000), ("WINDOW", 4001),
              ("KEY", 1), ("KEY", 0), ("SEED_LO", 3), ("CONTROL", int(Control.REKEY)), ("CONTROL", 1 << 7),
              ("CONTROL", int(Control.CLEAR)), ("ID", 1), ("CONTROL", int(Control.CLEAR))]
    for name, value in writes:
        expected = _answer(lambda: model.write(OFF[name], value))[0]
        assert _answer(lambda: device.write_register(OFF[name], value))[0] == expected, (name, value)
        for watched in ("ACTION", "WINDOW", "KEY", "CLEARS"):
            assert device.read_register(OFF[watched]) == model.read(OFF[watched]), (name, value, watched)
    assert device.read_register(OFF["CLEARS"]) == 2
    assert device.read_register(OFF["CHANGE_FRAME"]) == 1002          # the frame after the second clear
    for offset in (0x4C, 0x100, 0xFFFF_FFFC):
        with pytest.raises(RegisterError):
            device.read_register(offset)
        with pytest.raises(RegisterError):
            device.write_register(offset, 0)
    # the snapshot: every counter of one clock (counter i is 32 * base + i, in the APPLIANCE order)
    counts = device.registers().snapshot()
    values = [counts[n[len("dedup_"):] if n.startswith("dedup_") else n] for n in APPLIANCE_COUNTERS]
    base = values[0] // 32
    assert values == [(base * 32 + i) % (1 << 32) for i in range(len(values))], "a snapshot of one clock"


def test_window_over_the_uart():
    """Built with the run-time window: WINDOW takes any value from 1 to its capacity (more than the built span),
    each write answered once the de-duplicator took it (CHANGE_FRAME its frame), and refuses 0 and capacity + 1,
    changing nothing."""
    link, device = make(runtime_window=True)
    facts = appliance_facts(CONFIG, action="drop", key="l3l4", max_frame=1522, runtime_window=True)
    model = RegisterFile(facts, link=lambda: 0b10)
    assert facts.capacity > CONFIG.span
    assert device.read_register(OFF["CAPS"]) == model.read(OFF["CAPS"])
    for value in (facts.capacity + 1, 1, 0, facts.capacity, 2000):
        expected = _answer(lambda: model.write(OFF["WINDOW"], value))[0]
        assert _answer(lambda: device.write_register(OFF["WINDOW"], value))[0] == expected, value
        assert device.read_register(OFF["WINDOW"]) == model.read(OFF["WINDOW"]), value
    assert device.read_register(OFF["CHANGE_FRAME"]) == 1003          # the frame after the third new window


def test_register_frames_refused():
    """A register command with COUNT other than 1 is BAD_LENGTH."""
    link, _ = make()
    frame = bytearray(protocol.encode_request(Command.REG_READ, [0], 64))
    frame[2] = 2
    body = bytes(frame[1:3]) + bytes(16)
    replies = raw_exchange(link, bytes([frame[0]]) + body + protocol.crc16(body).to_bytes(2, "little"))
    link.wait_sent()
    assert [(r.command, r.status) for r in replies][:1] == [(Command.REG_READ, Status.BAD_LENGTH)]


def test_filter_board_refuses_registers():
    from .test_host_interface import make as make_filter_board
    _, board, _ = make_filter_board()
    replies = raw_exchange(board, protocol.encode_request(Command.REG_READ, [0], 64))
    board.wait_sent()
    assert [(r.command, r.status) for r in replies] == [(Command.REG_READ, Status.BAD_COMMAND)]


def test_control_cli():
    _, device = make()
    parser = argparse.ArgumentParser(prog="apbbf")
    add_parser(parser.add_subparsers(dest="command"))

    def cli(*words):
        out = io.StringIO()
        return run_cli(parser.parse_args(["host", "--port", "sim", *words]), device, out), out.getvalue()

    status, text = cli("set", "action", "count")
    assert status == 0 and "action           count" in text
    assert device.read_register(OFF["ACTION"]) == 2
    status, text = cli("set", "window", "4ms")
    assert status == 0 and "4000 ticks" in text
    assert cli("set", "window", "2ms")[0] == 1                         # this build's window is fixed
    assert cli("set", "key", "frame")[0] == 1
    assert cli("rekey")[0] == 1                                        # the gateware's seed is fixed
    status, text = cli("clear")
    assert status == 0 and "cleared          at frame 1001 (clear 1)" in text
    status, text = cli("status")
    assert status == 0 and "action           count (takes drop, count)" in text and "fixed in this build" in text
    assert "port 0 down, port 1 up" in text and "port1_tx_underflows" in text
    status, text = cli("clear-counters")
    assert status == 0 and text.splitlines()[0].split()[0] == "frames"
    with pytest.raises(SystemExit):
        parser.parse_args(["host", "--port", "sim", "set", "speed", "1"])


def test_rekey_cli_with_the_runtime_seed(monkeypatch):
    """A build with the run-time seed: ``apbbf host ... rekey`` sends a fresh seed (secrets.randbits(64), here
    fixed and printed) and the de-duplicator's side takes exactly it, as a clear counted in CLEARS."""
    import secrets
    seed = 0x9E37_79B9_7F4A_7C15
    print(f"seed {seed:#x}")
    monkeypatch.setattr(secrets, "randbits", lambda bits: seed if bits == 64 else 0)
    link, device = make(runtime_seed=True)
    host, taken = link.top.host, []

    async def watch(ctx):                                # the seed at each re-key pulse to the de-duplicator
        while True:
            await ctx.tick()
            if ctx.get(host.control_rekey):
                taken.append(ctx.get(host.control_seed))

    link.sim.add_testbench(watch, background=True)
    parser = argparse.ArgumentParser(prog="apbbf")
    add_parser(parser.add_subparsers(dest="command"))
    out = io.StringIO()
    status = run_cli(parser.parse_args(["host", "--port", "sim", "rekey"]), device, out)
    assert status == 0 and f"rekeyed          seed {seed:#018x}" in out.getvalue(), out.getvalue()
    assert taken == [seed], [hex(t) for t in taken]
    assert device.read_register(OFF["CLEARS"]) == 1
    with pytest.raises(RegisterError):
        device.read_register(OFF["SEED_LO"])                          # never read back


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_register_frames_fuzzed(seed):
    """REG_WRITE frames of the action (in range and not), half of them with bytes flipped or cut short, junk in
    between: the device keeps answering, and the action and the clears at the end are those of the intact
    frames, in order (as the model of the register file takes them)."""
    import random
    rng = random.Random(seed)
    link, device = make()
    model = RegisterFile(appliance_facts(CONFIG, action="drop", key="l3l4", max_frame=1522))
    for _ in range(24):
        name, value = rng.choice([("ACTION", 0), ("ACTION", 2), ("ACTION", rng.randrange(1 << 32)),
                                  ("CONTROL", int(Control.CLEAR)), ("CONTROL", rng.randrange(16, 1 << 32))])
        original = protocol.encode_request(Command.REG_WRITE, [OFF[name] | value << 32], 64)
        frame = bytearray(original)
        if rng.random() < 0.5:
            if rng.random() < 0.3:
                frame = frame[:rng.randrange(1, len(frame))]
            else:
                for _ in range(rng.randint(1, 3)):
                    frame[rng.randrange(len(frame))] ^= 1 << rng.randrange(8)
        if bytes(frame) == original:
            _answer(lambda: model.write(OFF[name], value))
        junk = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 0, 1, 5])))
        raw_exchange(link, bytes(frame) + junk, count=3)
        link.wait_sent()
        device.resync()
    assert device.read_register(OFF["ACTION"]) == model.read(OFF["ACTION"])
    assert device.read_register(OFF["CLEARS"]) == model.read(OFF["CLEARS"])
    assert device.appliance().version == protocol.PROTOCOL_VERSION
