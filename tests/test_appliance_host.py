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
from apbbf.hdl.board.appliance_host import ApplianceExecutor, ApplianceHost, key_name
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

    def __init__(self, action="drop", key="l3l4"):
        self.host = ApplianceHost(CONFIG, action=action, key=key, max_frame=1522, divisor=DIVISOR,
                                  timeout_cycles=TIMEOUT)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.host = host = self.host
        base = Signal(27)                                    # base * 32 + i: 33 bits, the low 32 kept
        m.d.sync += base.eq(base + 1)
        m.d.comb += [host.counters.eq(Cat((base * 32 + i)[:32] for i in range(len(APPLIANCE_COUNTERS)))),
                     host.link.eq(0b10), host.rx.eq(self.rx), self.tx.eq(host.tx)]
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
