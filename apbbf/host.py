"""Host side of the board protocol (specified in :mod:`apbbf.model.protocol`, frames from :mod:`apbbf.protocol`):
:class:`Device` and the ``apbbf host`` command.

Why this design
---------------
:class:`Device` speaks to a *transport* (anything with ``write(bytes)``, ``read(n, timeout) -> bytes`` and
``flush_input()``), not to pyserial directly, so the same code drives a real board through :class:`SerialTransport`
and the simulated board top in the tests. The protocol is stop-and-wait: one request, one reply. An error reply
means the device executed nothing of the request, so :class:`Device` resynchronises (waits for a quiet gap,
drops stray bytes) and resends; a missing reply is not retried, because the request may have been executed and a
second INSERT would age the filter twice.
"""

from __future__ import annotations

import argparse
import secrets
import struct
import sys
import time
from typing import Iterable, Protocol

from . import protocol
from .model.registers import RegisterError
from .protocol import ApplianceStatus, Command, Counters, Info, ProtocolError, ReplyDecoder, Status
from .registers import Registers

__all__ = ["Transport", "SerialTransport", "Device", "DeviceError", "add_parser", "parse_key"]


class DeviceError(ProtocolError):
    """The device answered with an error status (after retries), or did not answer."""


class Transport(Protocol):
    """What :class:`Device` needs from a serial link."""

    def write(self, data: bytes) -> None: ...

    def read(self, size: int, timeout: float) -> bytes:
        """Up to ``size`` bytes; fewer (possibly none) if ``timeout`` seconds pass first."""

    def flush_input(self) -> None:
        """Drop bytes received and not yet read."""


class SerialTransport:
    """A :class:`Transport` over a pyserial port (8N1, no flow control)."""

    def __init__(self, port: str, baudrate: int):
        import serial  # imported here so the rest of apbbf does not need pyserial
        self._serial = serial.Serial(port, baudrate=baudrate, bytesize=8, parity="N", stopbits=1, timeout=0.1,
                                     rtscts=False, dsrdtr=False)

    def write(self, data: bytes) -> None:
        self._serial.write(data)
        self._serial.flush()

    def read(self, size: int, timeout: float) -> bytes:
        self._serial.timeout = timeout
        return self._serial.read(size)

    def flush_input(self) -> None:
        self._serial.reset_input_buffer()

    def close(self) -> None:
        self._serial.close()


class Device:
    """A filter on a board, reached over a :class:`Transport`.

    Parameters
    ----------
    transport : Transport
        The link (:class:`SerialTransport` for a board).
    timeout : float
        Seconds to wait for a reply (measured by the transport's clock).
    quiet : float
        Seconds of silence that resynchronise the device after an error (longer than its inter-byte timeout).
    retries : int
        Times a request answered with an error status is resent.
    """

    def __init__(self, transport: Transport, *, timeout: float = 1.0, quiet: float = 0.05, retries: int = 2):
        if retries < 0:
            raise ValueError(f"retries must be at least 0, not {retries}")
        self.transport = transport
        self.timeout = timeout
        self.quiet = quiet
        self.retries = retries
        self._info: Info | None = None

    @classmethod
    def open(cls, port: str, baudrate: int, **kwargs) -> "Device":
        return cls(SerialTransport(port, baudrate), **kwargs)

    # ---- low level -----------------------------------------------------------------------------------------

    def read_reply(self) -> protocol.Reply:
        """Read one reply frame (raises :class:`DeviceError` if none arrives within the timeout)."""
        decoder = ReplyDecoder()
        while True:
            reply = decoder.next()
            if reply is not None:
                return reply
            need = decoder.needed()
            data = self.transport.read(need, self.timeout)
            if not data:
                raise DeviceError("no reply from the device (timeout)")
            decoder.feed(data)

    def resync(self) -> None:
        """Wait until the line has been quiet for :attr:`quiet` seconds, dropping what arrives."""
        while self.transport.read(256, self.quiet):
            pass
        self.transport.flush_input()

    def request(self, command: Command, keys: Iterable[int] = (), key_width: int | None = None) -> bytes:
        """Send one request and return its payload, resending it after an error reply."""
        if key_width is None:
            key_width = self.info().key_width if command in protocol.KEY_COMMANDS else 64
        frame = protocol.encode_request(command, keys, key_width)
        for attempt in range(self.retries + 1):
            self.transport.write(frame)
            foreign_error = None
            while True:
                try:
                    reply = self.read_reply()
                except DeviceError:
                    if foreign_error is None:
                        raise
                    # an error about other bytes (e.g. a corrupted sync byte of ours), then silence: our frame
                    # was skipped, so it is safe to resend
                    reply = foreign_error
                    break
                except ProtocolError as error:  # a reply with a bad CRC: it may have been executed
                    raise DeviceError(f"{Command(command).name}: {error}") from error
                if reply.status != Status.OK and reply.command != command:
                    foreign_error = reply   # not about our frame (its CMD differs): ours may still be answered
                    continue
                break
            if reply.status == Status.OK and reply.command == command:
                return reply.payload
            if reply.status == Status.BAD_REGISTER and reply.command == command:
                # a refused register access: executed as far as it goes (nothing changed); resending cannot help
                raise DeviceError(f"{Command(command).name} refused: {Status.BAD_REGISTER!r}", Status.BAD_REGISTER)
            if reply.status == Status.OK:
                raise DeviceError(f"reply to {reply.command:#04x} while waiting for {Command(command).name}")
            status = Status(reply.status) if reply.status in Status._value2member_map_ else reply.status
            self.resync()
            if attempt == self.retries:
                raise DeviceError(f"{Command(command).name} rejected: {status!r}", status)
        raise AssertionError("unreachable")

    # ---- commands ------------------------------------------------------------------------------------------

    def info(self, refresh: bool = False) -> Info:
        """The device's Config, hash seed, protocol version and batch size (cached)."""
        if self._info is None or refresh:
            self._info = Info.unpack(self.request(Command.INFO))
            if self._info.version != protocol.PROTOCOL_VERSION:
                raise DeviceError(f"device speaks protocol version {self._info.version}, "
                                  f"this host {protocol.PROTOCOL_VERSION}")
        return self._info

    def counters(self) -> Counters:
        return Counters.unpack(self.request(Command.COUNTERS))

    def appliance(self) -> ApplianceStatus:
        """The de-duplication appliance's options, links and counters (APPLIANCE; a filter board refuses it)."""
        return ApplianceStatus.unpack(self.request(Command.APPLIANCE))

    def read_register(self, offset: int) -> int:
        """The control register at byte ``offset`` (REG_READ; the appliance's map, :mod:`apbbf.model.registers`).

        Raises
        ------
        RegisterError
            If the device refuses the read (BAD_REGISTER).
        DeviceError
            If the device answers otherwise than OK (a filter board: BAD_COMMAND).
        """
        return struct.unpack("<I", self._register(Command.REG_READ, offset, 0))[0]

    def write_register(self, offset: int, value: int) -> None:
        """Write the control register at byte ``offset`` (REG_WRITE).

        Raises
        ------
        RegisterError
            If the device refuses the write (BAD_REGISTER): nothing changed.
        DeviceError
            If the device answers otherwise than OK.
        """
        self._register(Command.REG_WRITE, offset, value)

    def _register(self, command, offset, value) -> bytes:
        for name, number in (("offset", offset), ("value", value)):
            if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < 1 << 32:
                raise ValueError(f"{name} must be an integer from 0 to 2**32-1, not {number!r}")
        try:
            payload = self.request(command, [offset | value << 32], key_width=64)
        except DeviceError as error:
            if error.status == Status.BAD_REGISTER:
                raise RegisterError(f"register access at {offset:#x} refused by the device", offset) from None
            raise
        if len(payload) != (4 if command == Command.REG_READ else 0):
            raise DeviceError(f"{command.name} reply of {len(payload)} bytes")
        return payload

    def registers(self) -> Registers:
        """The control registers' driver (:class:`apbbf.registers.Registers`, the appliance's map) over this
        device."""
        return Registers(self, "appliance")

    def read(self, offset: int) -> int:
        """:meth:`read_register`: the device is a bus for :class:`apbbf.registers.Registers`."""
        return self.read_register(offset)

    def write(self, offset: int, value: int) -> None:
        """:meth:`write_register`."""
        self.write_register(offset, value)

    def is_appliance(self) -> bool:
        """Whether the device is the de-duplication appliance: its INFO offers no key commands (max_batch 0)."""
        return self.info().max_batch == 0

    def _keys_command(self, command: Command, keys, progress=None) -> list[bool]:
        info = self.info()
        keys = list(keys)
        for key in keys:
            if not isinstance(key, int) or not 0 <= key < 1 << info.key_width:
                raise ValueError(f"key {key!r} is not an integer of {info.key_width} bits")
        hits: list[bool] = []
        for start in range(0, len(keys), info.max_batch):
            batch = keys[start:start + info.max_batch]
            payload = self.request(command, batch, info.key_width)
            hits += protocol.unpack_hits(payload, len(batch))
            if progress is not None:
                progress(len(hits), len(keys))
        return hits

    def insert(self, keys, progress=None) -> None:
        self._keys_command(Command.INSERT, keys, progress)

    def query(self, keys, progress=None) -> list[bool]:
        return self._keys_command(Command.QUERY, keys, progress)

    def test_and_insert(self, keys, progress=None) -> list[bool]:
        return self._keys_command(Command.TEST_AND_INSERT, keys, progress)


# ---- command line ------------------------------------------------------------------------------------------

def parse_key(text: str, *, as_string: bool, key_width: int) -> int:
    """A key from the command line: an integer (decimal, or hex with 0x) or, with ``as_string``, the bytes of the
    text through :func:`apbbf.model.hashing.key_from_bytes`."""
    if as_string:
        from apbbf.model.hashing import key_from_bytes
        return key_from_bytes(text.encode(), key_width)
    try:
        key = int(text, 0)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer key (use --string for text keys)") from None
    if not 0 <= key < 1 << key_width:
        raise ValueError(f"key {text} does not fit in {key_width} bits")
    return key


class _Progress:
    """A one-line progress bar on stderr (only when there is more than one batch)."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.start = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if total <= 0:
            return
        width = 30
        filled = width * done // total
        rate = done / max(time.monotonic() - self.start, 1e-9)
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} keys {rate:.0f}/s")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\n")


def _read_key_texts(args) -> list[str]:
    texts = list(args.keys)
    if getattr(args, "file", None):
        handle = sys.stdin if args.file == "-" else open(args.file)
        with handle if handle is not sys.stdin else _nullcontext(handle):
            texts += [line.strip() for line in handle if line.strip()]
    return texts


class _nullcontext:
    def __init__(self, value):
        self.value = value

    def __enter__(self):
        return self.value

    def __exit__(self, *exc):
        return False


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if value >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value:.3g} s"


def run(args, device: Device | None = None, out=None) -> int:
    """Execute a parsed ``apbbf host`` command line (``device`` stands in for the serial port in tests)."""
    out = sys.stdout if out is None else out
    if device is None:
        device = Device.open(args.port, args.baud, timeout=args.timeout)
    info = device.info()
    if args.action in CONTROL_ACTIONS:
        if info.max_batch != 0:
            print(f"apbbf host: error: {args.action} is a command of the de-duplication appliance; this is a "
                  "filter board", file=sys.stderr)
            return 1
        try:
            return _run_control(args, device.registers(), out)
        except RegisterError as error:
            print(f"apbbf host: error: {error} (see `apbbf host ... status` for what the build takes)",
                  file=sys.stderr)
            return 1
    if info.max_batch == 0 and args.action in ("info", "counters"):
        return _run_appliance(args, device, info, out)
    if args.action == "counters":
        counters = device.counters()
        for name, value in vars(counters).items():
            print(f"{name:<16} {value}", file=out)
        return 0
    if args.action == "info":
        config = info.config()
        print(f"protocol version {info.version}", file=out)
        print(f"config           k={info.k} l={info.l} block_bits={info.block_bits} "
              f"block_hashes={info.block_hashes} segment_blocks={info.segment_blocks} "
              f"key_width={info.key_width} seed={info.seed:#x}", file=out)
        print(f"max batch        {info.max_batch} keys per frame", file=out)
        _print_row_layout(config, out)
        if config.timed:
            tick = info.tick_ns * 1e-9
            print(f"time window      {config.span} ticks of {info.tick_ns} ns = {_seconds(config.span * tick)} "
                  f"(shift every {_seconds(config.shift_interval * tick)}; {info.time_width}-bit device clock; "
                  f"pool of {config.physical_segments} segments, {info.extra_segments} extra)", file=out)
            print(f"                 keys inserted within it are present; beyond {config.window} inserts "
                  f"(generation {config.generation}) only while the pool holds", file=out)
        else:
            print(f"window           {config.window} inserts (generation {config.generation})", file=out)
        counters = device.counters()
        print(f"counters         keys={counters.keys} inserts={counters.inserts} "
              f"generations={counters.generations} frames={counters.frames} errors={counters.errors}"
              + (f" overflows={counters.overflows} expired={counters.expired}" if config.timed else ""), file=out)
        return 0
    texts = _read_key_texts(args)
    keys = [parse_key(text, as_string=args.string, key_width=info.key_width) for text in texts]
    progress = _Progress() if len(keys) > info.max_batch and not args.quiet else None
    try:
        if args.action == "insert":
            device.insert(keys, progress)
            print(f"inserted {len(keys)} keys", file=out)
            return 0
        method = device.query if args.action == "query" else device.test_and_insert
        hits = method(keys, progress)
    finally:
        if progress is not None:
            progress.finish()
    for text, hit in zip(texts, hits):
        print(f"{text}\t{'present' if hit else 'absent'}", file=out)
    return 0


def _print_row_layout(config, out):
    if config.row_layout:
        print(f"row layout       {config.rows} rows of {config.row_bits} bits, {config.row_blocks} blocks of each "
              f"segment in a row (the filter in DRAM)", file=out)


def _run_appliance(args, device: Device, info: Info, out) -> int:
    """``info`` and ``counters`` on the de-duplication appliance (docs/appliance.md)."""
    status = device.appliance()
    if args.action == "info":
        config = info.config()
        print(f"protocol version {info.version}", file=out)
        print(f"appliance        action {status.action}, key {status.key}, frames up to {status.max_frame} bytes "
              f"checked; links: port 0 {'up' if status.link & 1 else 'down'}, port 1 "
              f"{'up' if status.link & 2 else 'down'}", file=out)
        print(f"config           k={info.k} l={info.l} block_bits={info.block_bits} "
              f"block_hashes={info.block_hashes} segment_blocks={info.segment_blocks} "
              f"key_width={info.key_width} seed={info.seed:#x} extra_segments={info.extra_segments}", file=out)
        print(f"time window      {config.span} ticks of {info.tick_ns} ns = "
              f"{_seconds(config.span * info.tick_ns * 1e-9)}", file=out)
        _print_row_layout(config, out)
    for name, value in status.counters.items():
        print(f"{name:<24} {value}", file=out)
    return 0


#: The commands on the appliance's control registers (docs/appliance.md).
CONTROL_ACTIONS = ("set", "rekey", "clear", "clear-counters", "status")


def _run_control(args, regs: Registers, out) -> int:
    """``set window|action|key VALUE``, ``rekey [SEED]``, ``clear``, ``clear-counters``, ``status``."""
    from .model.registers import ACTIONS, KEY_RECIPES, Capability
    if args.action == "set":
        if args.setting == "window":
            ticks = regs.set_window(int(args.value, 0) if args.value.isdigit() else args.value)
            print(f"window           {ticks} ticks", file=out)
        elif args.setting == "action":
            regs.set_action(args.value)
            print(f"action           {args.value} from frame {regs.change_frame}", file=out)
        else:
            regs.set_key(args.value)
            print(f"key              {args.value}", file=out)
    elif args.action == "rekey":
        seed = secrets.randbits(64) if args.seed is None else int(args.seed, 0)
        regs.rekey(seed)
        print(f"rekeyed          seed {seed:#018x} (keep it secret); filter cleared at frame {regs.change_frame}",
              file=out)
    elif args.action == "clear":
        regs.clear()
        print(f"cleared          at frame {regs.change_frame} (clear {regs.clears})", file=out)
    elif args.action == "clear-counters":
        counts = regs.snapshot(clear=True)
        for name, value in counts.items():
            print(f"{name:<24} {value}", file=out)
    else:
        facts = regs.facts()
        caps = Capability(facts["caps"])
        print(f"window           {facts['window']} ticks of {facts['tick_ns']} ns (up to {facts['capacity']}"
              + ("" if caps & Capability.WINDOW else ", fixed in this build") + ")", file=out)
        actions = [a for i, a in enumerate(ACTIONS) if facts["actions"] >> i & 1]
        print(f"action           {ACTIONS[facts['action']]} (takes {', '.join(actions)})", file=out)
        recipes = [n for i, n in enumerate(KEY_RECIPES) if facts["keys"] >> i & 1]
        key = KEY_RECIPES[facts["key"]] if facts["key"] < len(KEY_RECIPES) else f"recipe {facts['key']}"
        print(f"key              {key} (takes {', '.join(recipes) or 'the built one'})", file=out)
        print("hash seed        " + ("the build's, with a run-time seed (rekey takes a new one)"
                                     if caps & Capability.REKEY else "the build's, fixed in this build"), file=out)
        print(f"clears           {facts['clears']}, last change at frame {facts['change_frame']}", file=out)
        print(f"link             port 0 {'up' if facts['link'] & 1 else 'down'}, port 1 "
              f"{'up' if facts['link'] & 2 else 'down'}", file=out)
        for name, value in regs.snapshot().items():
            print(f"{name:<24} {value}", file=out)
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Define ``apbbf host --port PORT {info,insert,query,test-insert} KEY...`` on an argparse subparsers
    object; the parsed namespace's ``func`` runs it."""
    parser = subparsers.add_parser(
        "host", help="talk to a filter on a board over its USB serial port",
        description="Send commands to an APBBF board top (see docs/protocol.md). Keys are integers (decimal, or "
                    "hex with 0x) or, with --string, text hashed by key_from_bytes.")
    parser.add_argument("--port", required=True, help="serial port, e.g. /dev/ttyUSB1")
    parser.add_argument("--baud", type=int, default=3_000_000,
                        help="baud rate (iCEBreaker 3000000, ULX3S 1000000; default %(default)s)")
    parser.add_argument("--timeout", type=float, default=1.0, help="reply timeout in seconds")
    actions = parser.add_subparsers(dest="action", required=True,
                                    metavar="{info,counters,insert,query,test-insert,set,rekey,clear,"
                                            "clear-counters,status}")
    actions.add_parser("info", help="print the device's Config, seed, protocol version and counters")
    actions.add_parser("counters", help="print the device's counters (the appliance's: both ports and the "
                                        "de-duplicator's)")
    for name, text in (("insert", "insert keys"), ("query", "ask whether keys are present"),
                       ("test-insert", "ask whether keys are present, then insert them")):
        action = actions.add_parser(name, help=text)
        action.add_argument("keys", nargs="*", metavar="KEY", help="keys (integers, or text with --string)")
        action.add_argument("--string", action="store_true", help="keys are text, hashed with key_from_bytes")
        action.add_argument("--file", metavar="F", help="read more keys from F, one per line ('-' for stdin)")
        action.add_argument("--quiet", action="store_true", help="no progress bar")
    setting = actions.add_parser("set", help="the appliance: set the window (ticks, or a duration: 2ms), the "
                                             "action (drop, count) or the key (l3l4, frame) at run time")
    setting.add_argument("setting", choices=("window", "action", "key"))
    setting.add_argument("value")
    rekey = actions.add_parser("rekey", help="the appliance built with RUNTIME_SEED=1: a new run-time hash seed "
                                             "(default: drawn from secrets), which clears the filter")
    rekey.add_argument("seed", nargs="?", help="the seed, 0..2**64-1")
    actions.add_parser("clear", help="the appliance: empty the filter")
    actions.add_parser("clear-counters", help="the appliance: snapshot the counters, print them, and clear them")
    actions.add_parser("status", help="the appliance: its control registers and a snapshot of its counters")
    parser.set_defaults(func=run)
    return parser
