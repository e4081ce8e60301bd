"""cocotb tests of the exported filter with its segments behind an AXI4 master (``apbbf export --memory axi``), with
cocotbext-axi's ``AxiRam`` as the memory (run them through :func:`apbbf.sim.cocotb.runner.run_memory`).

The command and response streams are driven and scored by the core's bench (:class:`~.testbench.Testbench`: every
response in order against the golden model, the counters at the end). The memory is an ``AxiRam`` bound with
``AxiBus.from_prefix(dut, "m_axi")`` and reset with the filter, larger than the filter's region and filled with
random bytes first; a pause generator on each of its five channels (AW, W and AR ready low; B and R valid low)
gives backpressure on every channel and random read and write latency: a B response held back also holds back
the writes behind it in the RAM (its write channel takes one burst at a time), so reads overtake writes that the
filter has not been told are landed. :class:`AxiChecker` watches the master's side of every channel: valid held
and payload stable until ready, addresses inside the region, the burst shape, ID 0, outstanding transactions
bounded. At the end every byte outside the region must be as it was.

Tests (as cocotb names them)::

    random_stream/pauses=None           random commands, repeats at short distance (the in-flight forwarding)
    random_stream/pauses=every          the same with every channel paused and the streams too
    slow_b                              B responses held back long, W late (writes land late), reads fast
    reset_under_traffic                 aresetn low with transactions outstanding, twice
    time_window                         (with a span) timed commands at 1x and 4x the planned rate, idle gaps

The design's parameters come in :data:`PARAMS_ENV` (JSON: the Config's fields and the export's options). Every
test's bench seed comes from ``cocotb.RANDOM_SEED`` and the test's name, and is printed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import warnings
from types import SimpleNamespace

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiRam

from ...model.config import Config
from ...model.filters import Op
from .testbench import Pause, Testbench, _quiet

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi(\.|$)")

__all__ = ["PARAMS_ENV", "params_to_env", "AxiChecker", "short_repeat_commands"]

#: Environment variable with the design's parameters (JSON).
PARAMS_ENV = "APBBF_MEMORY_PARAMS"
OPS = (Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT)
CHANNELS = ("aw", "w", "b", "ar", "r")


def params_to_env(config: Config, options: dict) -> str:
    """The JSON text of :data:`PARAMS_ENV`."""
    return json.dumps({"config": dataclasses.asdict(config), "options": options})


def _params() -> SimpleNamespace:
    text = os.environ.get(PARAMS_ENV)
    if not text:
        raise ValueError(f"{PARAMS_ENV} is not set: run the benches through apbbf.sim.cocotb.runner.run_memory")
    p = json.loads(text)
    config = Config(**p["config"])
    o = p["options"]
    from ...hdl.export.axi_memory import memory_bytes
    depth = o.get("depth", 8)
    return SimpleNamespace(config=config, depth=depth, data_width=o.get("axi_data_width", 64),
                           base=o.get("axi_base", 0),
                           max_outstanding=o.get("max_outstanding") or depth * config.physical_segments,
                           bytes=memory_bytes(config))


def short_repeat_commands(config: Config, count: int, rng: random.Random, *, near: int = 12,
                          near_share: float = 0.35, far_share: float = 0.15) -> list:
    """Random ``(op, key)`` commands: a share ``near_share`` of the keys repeats one of the last ``near`` (so that
    the command it repeats is still in flight, or its write not yet landed), ``far_share`` one from about a
    window back, the rest fresh."""
    keys = []
    for _ in range(count):
        draw = rng.random()
        if keys and draw < near_share:
            keys.append(keys[-rng.randint(1, min(len(keys), near))])
        elif keys and draw < near_share + far_share:
            keys.append(keys[-rng.randint(1, min(len(keys), int(1.5 * config.window) + 1))])
        else:
            keys.append(rng.getrandbits(config.key_width))
    return [(rng.choice(OPS), key) for key in keys]


class AxiChecker:
    """Checks the AXI4 master's side of every channel, each clock edge: a valid raised stays raised and its payload
    stable until ready; ID 0; INCR bursts of the block's beats; addresses inside the region, aligned as the
    adapter promises; ``WLAST`` on a burst's last beat only; at most ``max_outstanding`` reads and writes
    outstanding. Counts transactions (``reads``, ``writes``). Raises AssertionError at the first violation."""

    def __init__(self, dut, params):
        self.dut, self.p = dut, params
        c, W = params.config, params.data_width
        self.beats = max(1, c.block_bits // W)
        self.reads = self.writes = 0
        self.open_reads = self.open_writes = 0
        self.failure = None
        self._task = cocotb.start_soon(self._run())

    def _payload(self, channel):
        names = {"aw": ("awid", "awaddr", "awlen", "awsize", "awburst"), "ar": ("arid", "araddr", "arlen", "arsize",
                 "arburst"), "w": ("wdata", "wstrb", "wlast")}[channel]
        return tuple(int(getattr(self.dut, f"m_axi_{name}").value) for name in names)

    def _fail(self, message):
        message = f"AXI rule broken at {get_sim_time('ns'):.0f} ns: {message}"
        if self.failure is None:
            self.failure = message
        raise AssertionError(message)

    def _address(self, channel, payload):
        p, c = self.p, self.p.config
        ident, addr, length, size, burst = payload
        block_bytes = c.block_bits // 8
        if ident != 0 or burst != 1 or length != self.beats - 1 or 1 << size != p.data_width // 8:
            self._fail(f"{channel}: id {ident}, burst {burst}, len {length}, size {size}: expected id 0, INCR, len "
                       f"{self.beats - 1}, size {(p.data_width // 8).bit_length() - 1}")
        if not p.base <= addr < p.base + p.bytes or (addr - p.base) % block_bytes:
            self._fail(f"{channel}addr {addr:#x} is not a block of the region {p.base:#x} + {p.bytes} bytes")

    async def _run(self):
        dut = self.dut
        held = {}
        w_beat = 0
        while True:
            await RisingEdge(dut.aclk)
            if not int(dut.aresetn.value):
                held.clear()
                w_beat = 0
                self.open_reads = self.open_writes = 0
                continue
            for channel in ("aw", "w", "ar"):
                valid = int(getattr(dut, f"m_axi_{channel}valid").value)
                ready = int(getattr(dut, f"m_axi_{channel}ready").value)
                if channel in held:
                    if not valid:
                        self._fail(f"{channel}valid dropped before {channel}ready")
                    if self._payload(channel) != held[channel]:
                        self._fail(f"{channel} payload changed while valid and not ready")
                if valid:
                    payload = self._payload(channel)
                    if channel == "w":
                        if payload[2] != (w_beat == self.beats - 1):
                            self._fail(f"wlast {payload[2]} on beat {w_beat} of {self.beats}")
                    else:
                        self._address(channel, payload)
                    if ready:
                        held.pop(channel, None)
                        if channel == "w":
                            w_beat = (w_beat + 1) % self.beats
                        elif channel == "aw":
                            self.writes += 1
                            self.open_writes += 1
                        else:
                            self.reads += 1
                            self.open_reads += 1
                    else:
                        held[channel] = payload
            if int(dut.m_axi_bvalid.value) and int(dut.m_axi_bready.value):
                self.open_writes -= 1
            if int(dut.m_axi_rvalid.value) and int(dut.m_axi_rready.value) and int(dut.m_axi_rlast.value):
                self.open_reads -= 1
            if max(self.open_reads, self.open_writes) > self.p.max_outstanding:
                self._fail(f"{self.open_reads} reads and {self.open_writes} writes outstanding, more than "
                           f"max_outstanding={self.p.max_outstanding}")


class MemoryBench:
    """The ``AxiRam``, its pause generators, the AXI checker and the snapshot of the bytes outside the filter's
    region, made before the reset is released (the filter clears its region through AXI right after it); then
    the core's :class:`~.testbench.Testbench` (``tb``)."""

    def __init__(self, dut, params, seed: int):
        self.p, self.seed = params, seed
        self.tb = None
        rng = random.Random(seed + 1)
        self.size = 1 << (params.base + params.bytes + 4096 - 1).bit_length()
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.aclk, dut.aresetn, reset_active_level=False,
                          size=self.size)
        for interface in (self.ram.write_if, self.ram.read_if):
            _quiet(interface)
        self.initial = rng.randbytes(self.size)
        self.ram.write(0, self.initial)
        self.pauses = {name: Pause(random.Random(seed + 2 + n)) for n, name in enumerate(CHANNELS)}
        for name, pause in self.pauses.items():
            interface = self.ram.write_if if name in ("aw", "w", "b") else self.ram.read_if
            getattr(interface, f"{name}_channel").set_pause_generator(iter(pause))
        self.checker = AxiChecker(dut, params)

    def set_pauses(self, **settings) -> None:
        """``channel=(probability, burst)`` for each AXI channel named; the others unpaused."""
        for name in CHANNELS:
            self.pauses[name].set(*settings.get(name, (0.0, 1)))

    def check_outside(self) -> None:
        """Every byte outside ``[base, base + bytes)`` is as the RAM was filled."""
        p = self.p
        now = self.ram.read(0, self.size)
        for start, end in ((0, p.base), (p.base + p.bytes, self.size)):
            if now[start:end] != self.initial[start:end]:
                first = next(i for i in range(start, end) if now[i] != self.initial[i])
                raise AssertionError(f"{self.tb.where()}: byte {first:#x} outside the region {p.base:#x} + "
                                     f"{p.bytes} was written")

    def check(self) -> None:
        if self.checker.failure:
            raise AssertionError(self.checker.failure)
        self.check_outside()
        self.tb.check_counters()
        errors = (int(self.tb.dut.axi_read_errors.value), int(self.tb.dut.axi_write_errors.value))
        assert errors == (0, 0), f"{self.tb.where()}: AXI errors counted {errors} from a RAM that answers OKAY"


def _seed(offset: int) -> int:
    return (cocotb.RANDOM_SEED * 1009 + offset) % (1 << 32)


async def _bench(dut, offset: int) -> MemoryBench:
    p = _params()
    seed = _seed(offset)
    cocotb.log.info("config %s, axi data width %d, base %#x, depth %d, bench seed %d (from COCOTB_RANDOM_SEED=%s and "
                    "the test's name)", p.config, p.data_width, p.base, p.depth, seed,
                    os.environ.get("COCOTB_RANDOM_SEED", "?"))
    bench = MemoryBench(dut, p, seed)
    bench.tb = await Testbench.start(dut, p.config, seed)
    return bench


def _drain_cycles(bench: MemoryBench, commands: int, slow: float = 1.0) -> int:
    c = bench.p.config
    return int(4000 + c.memory_blocks * 40 * slow + commands * (c.physical_segments + c.k) * 60 * slow)


def _commands(bench, count):
    return short_repeat_commands(bench.p.config, count, random.Random(bench.tb.seed))


EVERY = dict(aw=(0.3, 2), w=(0.3, 2), b=(0.4, 3), ar=(0.3, 2), r=(0.4, 3))


@cocotb.test()
@cocotb.parametrize(pauses=[cocotb.Param(None, "None"), cocotb.Param(EVERY, "every")])
async def random_stream(dut, pauses=None):
    """Random commands with repeats at short distance, past the window, every answer the model's."""
    bench = await _bench(dut, 1)
    tb, c = bench.tb, bench.p.config
    if pauses:
        bench.set_pauses(**pauses)
        tb.set_pauses(cmd=0.3, rsp=0.3, burst=2)
    count = min(320, 3 * (c.segments + 2) * c.generation // 2)
    commands = _commands(bench, count)
    tb.send(commands)
    await tb.drain(_drain_cycles(bench, count, 3 if pauses else 1))
    bench.check()
    assert any(tb.scoreboard.results.values()), f"{tb.where()}: a stream with repeats never hit"
    cocotb.log.info("%d commands, %d AXI reads, %d AXI writes", count, bench.checker.reads, bench.checker.writes)


@cocotb.test()
async def slow_b(dut):
    """B responses held back long (80 % of the time, in runs of 20 cycles) and W taken late, behind a deep write
    queue (AW and W taken up to 64 ahead): the RAM's write channel takes a burst only after the previous one's
    response left, and writes a block only as its W beats come, so writes land long after their AW handshake
    while reads are answered at once. Half the keys repeat one
    of the last 40 (further back than the commands in flight, within reach of a write not landed yet): a filter
    that took a write for landed before its B response would read blocks without it and miss keys."""
    bench = await _bench(dut, 2)
    tb, c = bench.tb, bench.p.config
    # A controller's deep write queue: AW and W taken far ahead of the writes the RAM has done.
    for channel in (bench.ram.write_if.aw_channel, bench.ram.write_if.w_channel):
        channel.queue_occupancy_limit = 64
    bench.set_pauses(b=(0.8, 20), w=(0.5, 10))
    count = min(250, (c.segments + 2) * c.generation)
    tb.send(short_repeat_commands(c, count, random.Random(tb.seed), near=40, near_share=0.5))
    await tb.drain(_drain_cycles(bench, count, 6))
    bench.check()


@cocotb.test()
async def reset_under_traffic(dut):
    """``aresetn`` low twice while commands and AXI transactions are in flight (the RAM reset with the filter):
    the commands in flight get no answer, and afterwards the filter is empty and answers as the model does."""
    bench = await _bench(dut, 3)
    tb, c = bench.tb, bench.p.config
    bench.set_pauses(**EVERY)
    rng = random.Random(tb.seed + 7)
    for _ in range(2):
        tb.send(_commands(bench, 120))
        await ClockCycles(dut.aclk, c.memory_blocks * 4 + rng.randint(100, 400))
        await tb.reset()
    count = (c.segments + 1) * c.generation
    tb.send(_commands(bench, count))
    await tb.drain(_drain_cycles(bench, count, 3))
    bench.check()


@cocotb.test(skip=not _params().config.timed if os.environ.get(PARAMS_ENV) else False)
async def time_window(dut):
    """(With a span.) Timed commands with short repeats at 1x and 4x the planned rate, a few after an idle gap of
    more than the span (the filter restarts: every word cleared through AXI), every channel paused."""
    from ..harness import timed_commands
    bench = await _bench(dut, 4)
    tb, c = bench.tb, bench.p.config
    bench.set_pauses(**EVERY)
    rng = random.Random(tb.seed)
    start = rng.getrandbits(c.time_width)
    for rate in (1.0, 4.0):
        count = c.segments * c.generation
        keys = short_repeat_commands(c, count, rng)
        times = timed_commands(c, count, seed=tb.seed + int(rate), rate=rate, gaps=0.01, start=start)
        commands = [(op, key, time) for (op, key), (_, _, time) in zip(keys, times)]
        start = commands[-1][2]
        tb.send(commands)
        await tb.drain(_drain_cycles(bench, count, 4))
    bench.check()
    assert int(dut.expired.value) > 0, f"{tb.where()}: no segment expired"
