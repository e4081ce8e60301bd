"""The parts of the cocotb bench, one small class each (cocotb's matrix_multiplier example's structure).

::

    CommandDriver ──s_axis_cmd──▶ DUT ──m_axis_rsp──▶ ResponseMonitor ──▶ Scoreboard.check
          │                        ▲                                          ▲
          └── pending ──▶ CommandMonitor (accepted transfers) ──▶ ReferenceModel ┘ (Scoreboard.expect)

The driver queues commands on a cocotbext-axi ``AxiStreamSource`` (a pause generator makes idle gaps); the
command monitor (an ``AxiStreamMonitor`` on the same bus) sees each transfer the DUT accepts, checks it is the
next command the driver queued, and has the model predict its response; the response monitor (an
``AxiStreamSink`` with a pause generator: backpressure) hands each response to the scoreboard, which compares
it with the oldest prediction. A reset (``aresetn`` low) drops the driver's queue and the predictions of the
commands in flight (they get no response) and restarts the model empty.

A mismatch raises :class:`Mismatch` naming the seed, the command index, op and key, both answers, the
simulation time and the waveform file.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import random
from dataclasses import dataclass

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamMonitor, AxiStreamSink, AxiStreamSource

from ...hdl.export.axis import CommandFormat, ResponseFormat
from ...model.config import Config, check_config
from ...model.filters import Op
from ..reference import RESERVED_OP, Reference, describe

__all__ = ["CONFIG_ENV", "WAVES_ENV", "Mismatch", "config_from_env", "config_to_env", "PauseInserter",
           "Pause", "CommandDriver", "CommandMonitor", "ResponseMonitor", "ReferenceModel", "Scoreboard", "Testbench"]

#: Environment variable that carries the Config (JSON of its fields) into the simulator process.
CONFIG_ENV = "APBBF_CONFIG"
#: Environment variable that names the waveform file (for failure messages).
WAVES_ENV = "APBBF_WAVES"

CLOCK_PERIOD_NS = 10


class Mismatch(AssertionError):
    """The DUT answered differently from the model, answered too often, or not at all."""


def config_to_env(config: Config) -> str:
    """``config`` as the JSON text :func:`config_from_env` reads."""
    check_config(config)
    return json.dumps(dataclasses.asdict(config), sort_keys=True)


def config_from_env() -> Config:
    """The Config named by :data:`CONFIG_ENV`.

    Raises
    ------
    ValueError
        If the variable is missing or does not hold a Config's fields.
    """
    text = os.environ.get(CONFIG_ENV)
    if not text:
        raise ValueError(f"{CONFIG_ENV} is not set: run the benches through apbbf.sim.cocotb.runner")
    try:
        return Config(**json.loads(text))
    except (TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"{CONFIG_ENV}={text!r} is not a Config: {error}") from None


@dataclass(frozen=True)
class PauseInserter:
    """Random pauses on one stream, as a test parameter: idle gaps on ``s_axis_cmd`` (``tvalid`` low) or
    backpressure on ``m_axis_rsp`` (``tready`` low); ``None`` in a test's parameters means no pauses.

    A fraction ``probability`` of the cycles is paused, in runs of ``burst`` cycles (see :meth:`Pause.set`).
    """

    probability: float
    burst: int = 1

    def __post_init__(self):
        Pause(random.Random(0)).set(self.probability, self.burst)        # the same checks as Pause.set

    @property
    def name(self) -> str:
        """The name in a parametrized test's name, e.g. ``pause30x3``: 30 % of the cycles, in runs of 3."""
        return f"pause{round(100 * self.probability)}" + (f"x{self.burst}" if self.burst > 1 else "")


class Pause:
    """An endless pause generator for cocotbext-axi whose rate can be changed while it runs.

    cocotbext-axi advances the generator once per clock cycle; a True pauses the source (idle gap, ``tvalid``
    low) or the sink (backpressure, ``tready`` low). One generator is installed per stream for the whole test:
    replacing it would leave the last pause value standing.

    Parameters
    ----------
    rng : random.Random
    """

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.probability = 0.0
        self.burst = 1

    def set(self, probability: float = 0.0, burst: int = 1) -> None:
        """Pause a fraction ``probability`` of the cycles, in runs of ``burst`` cycles (paused or not).

        Raises
        ------
        TypeError
            If ``burst`` is not an integer.
        ValueError
            If ``probability`` is not in [0, 1) or ``burst`` < 1.
        """
        if isinstance(burst, bool) or not isinstance(burst, int):
            raise TypeError(f"burst must be an integer, not {burst!r}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, not {burst}")
        if not 0 <= probability < 1:
            raise ValueError(f"probability must be in [0, 1), not {probability}")
        self.probability, self.burst = float(probability), burst

    def __iter__(self):
        while True:
            if not self.probability:
                yield False
                continue
            paused = self.rng.random() < self.probability
            for _ in range(self.burst):
                yield paused


def _quiet(endpoint) -> None:
    """cocotbext-axi logs every frame at INFO: one line per command and response. Keep its warnings only
    (set ``APBBF_AXI_LOG=1`` to see the frames)."""
    if not os.environ.get("APBBF_AXI_LOG"):
        endpoint.log.setLevel(logging.WARNING)


def _describe(command) -> str:
    return describe(command)


class CommandDriver:
    """Drives ``s_axis_cmd`` from a queue of commands (``(op, key)``, or ``(op, key, time)`` with a span)
    through an ``AxiStreamSource``.

    Parameters
    ----------
    dut
        The cocotb handle of the exported top.
    config : Config
    """

    def __init__(self, dut, config: Config):
        bus = AxiStreamBus.from_prefix(dut, "s_axis_cmd")
        self.source = AxiStreamSource(bus, dut.aclk, dut.aresetn, reset_active_level=False, byte_lanes=1)
        _quiet(self.source)
        self.format = CommandFormat(config)
        self.pending = collections.deque()     #: queued, not yet accepted: (index, command, tdata)

    def send(self, index: int, command) -> None:
        """Queue one command (returns at once)."""
        tdata = self.format.pack(*command)
        self.pending.append((index, tuple(command), tdata))
        self.source.send_nowait(AxiStreamFrame([tdata]))

    def set_pause(self, pause: Pause) -> None:
        """Idle gaps (``tvalid`` low) from ``pause``, installed once."""
        self.source.set_pause_generator(iter(pause))

    def queued(self) -> int:
        """Commands queued but not yet accepted."""
        return len(self.pending)

    def flush(self) -> None:
        """Forget every command not yet accepted (at a reset)."""
        self.source.clear()
        self.pending.clear()


class CommandMonitor:
    """Watches the transfers accepted on ``s_axis_cmd`` and calls ``callback(index, command)`` for each.

    Each accepted ``tdata`` must be the next command the driver queued (checks the driver and the handshake).
    """

    def __init__(self, dut, driver: CommandDriver, callback):
        self.monitor = AxiStreamMonitor(AxiStreamBus.from_prefix(dut, "s_axis_cmd"), dut.aclk, dut.aresetn,
                                        reset_active_level=False, byte_lanes=1)
        _quiet(self.monitor)
        self.driver = driver
        self.callback = callback
        self.accepted = 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self):
        while True:
            frame = await self.monitor.recv()
            for tdata in frame.tdata:
                if not self.driver.pending:
                    raise Mismatch(f"the DUT accepted command tdata {tdata:#x} that was never sent")
                index, command, sent = self.driver.pending.popleft()
                if tdata != sent:
                    raise Mismatch(f"command {index}: sent tdata {sent:#x}, the DUT accepted {tdata:#x}")
                self.accepted += 1
                self.callback(index, command)

    def drain(self) -> None:
        """Hand over every transfer already seen (call with the bus quiet, e.g. in reset)."""
        while not self.monitor.empty():
            for tdata in self.monitor.recv_nowait().tdata:
                index, command, sent = self.driver.pending.popleft()
                if tdata != sent:
                    raise Mismatch(f"command {index}: sent tdata {sent:#x}, the DUT accepted {tdata:#x}")
                self.accepted += 1
                self.callback(index, command)


class ResponseMonitor:
    """Takes responses from ``m_axis_rsp`` through an ``AxiStreamSink`` and calls ``callback(op, hit,
    reserved)``."""

    def __init__(self, dut, callback):
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_rsp"), dut.aclk, dut.aresetn,
                                  reset_active_level=False, byte_lanes=1)
        _quiet(self.sink)
        self.callback = callback
        self._task = cocotb.start_soon(self._run())

    def set_pause(self, pause: Pause) -> None:
        """Backpressure (``tready`` low) from ``pause``, installed once."""
        self.sink.set_pause_generator(iter(pause))

    async def _run(self):
        while True:
            frame = await self.sink.recv()
            for tdata in frame.tdata:
                self.callback(*ResponseFormat.unpack(int(tdata)))

    def drain(self) -> None:
        """Hand over every response already taken."""
        while not self.sink.empty():
            for tdata in self.sink.recv_nowait().tdata:
                self.callback(*ResponseFormat.unpack(int(tdata)))


class ReferenceModel:
    """Transaction-level model: the golden model (:class:`apbbf.sim.reference.Reference`), one command at a time.

    For long runs without resets, :meth:`plan` answers whole chunks of the stream with the model's batch path
    in advance; :meth:`predict` then checks each command against the plan and returns the planned answer.
    """

    def __init__(self, config: Config):
        self.config = config
        self.reset()

    def reset(self) -> None:
        """Start again empty (the DUT was reset)."""
        self.reference = Reference(self.config)
        self.planned = collections.deque()
        self._planning = False
        self._predicted = 0

    def plan(self, commands) -> None:
        """Answer ``commands`` (to follow those already planned) with the batch model.

        Raises
        ------
        RuntimeError
            If commands were already predicted one at a time since the last reset.
        """
        if self._predicted and not self._planning:
            raise RuntimeError("plan() must start on a fresh model (after reset)")
        self._planning = True
        commands = [tuple(command) for command in commands]
        if not commands:
            return
        hits, _ = self.reference.run(commands)
        self.planned.extend(zip(commands, (bool(hit) for hit in hits)))

    def predict(self, command) -> bool:
        """The response's hit for ``command``, updating the filter as the DUT does."""
        command = tuple(command)
        self._predicted += 1
        if self._planning:
            if not self.planned:
                raise RuntimeError(f"{_describe(command)} was not planned")
            want, hit = self.planned.popleft()
            if want != command:
                raise Mismatch(f"the DUT accepted {_describe(command)} where the plan has {_describe(want)}")
            return hit
        return self.reference.command(*command)

    @property
    def counters(self) -> dict:
        """The core's counters as the model counts them (planned commands included)."""
        return self.reference.counters


class Scoreboard:
    """In-order checker: every response must equal the oldest outstanding prediction.

    Parameters
    ----------
    seed : int
        Printed in failure messages.
    waves : str or None
        Waveform file, printed in failure messages.
    """

    def __init__(self, seed: int, waves: str | None = None):
        self.seed = seed
        self.waves = waves
        self.outstanding = collections.deque()   #: (index, command, hit) predicted, not yet answered
        self.results = {}                        #: index -> hit, for every response checked
        self.checked = 0
        self.dropped = []                        #: indices in flight at a reset
        self.failure = None

    def _fail(self, message: str):
        where = f" (at {get_sim_time('ns'):.0f} ns)"
        run_seed = os.environ.get("COCOTB_RANDOM_SEED", "?")
        message = (f"seed {self.seed} (COCOTB_RANDOM_SEED={run_seed}): {message}{where}"
                   + (f"; waveform in {self.waves}" if self.waves else ""))
        if self.failure is None:
            self.failure = message
        cocotb.log.error("%s", message)
        raise Mismatch(message)

    def expect(self, index: int, command, hit: bool) -> None:
        """The model's answer to command ``index``, accepted by the DUT."""
        self.outstanding.append((index, tuple(command), bool(hit)))

    def check(self, op: int, hit: bool, reserved: bool) -> None:
        """A response from the DUT: op, hit and the reserved-op flag."""
        if not self.outstanding:
            self._fail(f"response (op={op}, hit={int(hit)}) with no command outstanding")
        index, command, want_hit = self.outstanding.popleft()
        want_op = int(command[0])
        if op != want_op or hit != want_hit or reserved != (want_op == RESERVED_OP):
            self._fail(f"command {index}: {_describe(command)}: model says op={want_op} "
                       f"{'hit' if want_hit else 'miss'}, DUT says op={op} {'hit' if hit else 'miss'}"
                       + (" (reserved flag)" if reserved else ""))
        self.results[index] = hit
        self.checked += 1

    def reset(self) -> list:
        """Drop the predictions of the commands in flight (a reset); returns their indices."""
        dropped = [index for index, *_ in self.outstanding]
        self.dropped.extend(dropped)
        self.outstanding.clear()
        return dropped


class Testbench:
    """Clock, reset, driver, monitors, model and scoreboard around the exported top: the bench's one ``TB``
    class (as in alexforencich's verilog-axis benches). A test builds it with :meth:`start`, sets its idle and
    backpressure inserters once (:meth:`set_idle_inserter`, :meth:`set_backpressure_inserter`), then sends
    commands and drains.

    Parameters
    ----------
    dut
        The cocotb handle of the exported top (``apbbf_axis``).
    config : Config
    seed : int
        Seed of this bench's random choices (pauses, reset timing); printed on a failure.
    """

    def __init__(self, dut, config: Config, seed: int):
        self.dut = dut
        self.config = config
        self.seed = seed
        self.rng = random.Random(seed)
        self.model = ReferenceModel(config)
        self.scoreboard = Scoreboard(seed, os.environ.get(WAVES_ENV))
        self.driver = CommandDriver(dut, config)
        self.commands = CommandMonitor(dut, self.driver, self._accepted)
        self.responses = ResponseMonitor(dut, self.scoreboard.check)
        self.cmd_pause, self.rsp_pause = Pause(self.rng), Pause(self.rng)
        self.driver.set_pause(self.cmd_pause)
        self.responses.set_pause(self.rsp_pause)
        self.next_index = 0
        # The bench's clock for a Config with a span: commands sent without a time get its reading, and it
        # advances by ``tick_step`` per command (0 by default: time stands still and the window behaves as
        # one bounded by count until a test moves the clock).
        self.clock = self.rng.getrandbits(config.time_width) if config.timed else 0
        self.tick_step = 0

    def stamp(self, commands) -> list:
        """``commands`` with a time each (the bench clock's) where the Config has a span and they have none."""
        if not self.config.timed:
            return [tuple(command) for command in commands]
        mask = (1 << self.config.time_width) - 1
        stamped = []
        for command in commands:
            if len(command) == 2:
                command = (*command, self.clock)
                self.clock = (self.clock + self.tick_step) & mask
            else:
                self.clock = command[2]
            stamped.append(tuple(command))
        return stamped

    @classmethod
    async def start(cls, dut, config: Config, seed: int) -> "Testbench":
        """Start the clock, build the bench and hold the DUT in reset for a few cycles."""
        dut.aresetn.value = 0
        dut.s_axis_cmd_tvalid.value = 0
        dut.m_axis_rsp_tready.value = 0
        Clock(dut.aclk, CLOCK_PERIOD_NS, unit="ns").start()
        bench = cls(dut, config, seed)
        await ClockCycles(dut.aclk, 3)
        dut.aresetn.value = 1
        await RisingEdge(dut.aclk)
        return bench

    def where(self) -> str:
        """The seeds and the waveform, for a failure message."""
        waves = self.scoreboard.waves
        return (f"seed {self.seed} (COCOTB_RANDOM_SEED={os.environ.get('COCOTB_RANDOM_SEED', '?')}), "
                f"{get_sim_time('ns'):.0f} ns" + (f", waveform {waves}" if waves else ""))

    def _accepted(self, index, command):
        self.scoreboard.expect(index, command, self.model.predict(command))

    def set_pauses(self, cmd: float = 0.0, rsp: float = 0.0, burst: int = 1) -> None:
        """Idle gaps on the command stream and backpressure on the response stream (fractions of cycles)."""
        self.cmd_pause.set(cmd, burst)
        self.rsp_pause.set(rsp, burst)

    def set_idle_inserter(self, inserter: PauseInserter | None = None) -> None:
        """Idle gaps on ``s_axis_cmd`` as ``inserter`` says (``None``: a command on every cycle it can)."""
        self.cmd_pause.set(*((inserter.probability, inserter.burst) if inserter else ()))

    def set_backpressure_inserter(self, inserter: PauseInserter | None = None) -> None:
        """Backpressure on ``m_axis_rsp`` as ``inserter`` says (``None``: ``tready`` always high)."""
        self.rsp_pause.set(*((inserter.probability, inserter.burst) if inserter else ()))

    def send(self, commands) -> range:
        """Queue commands (``(op, key)``, or ``(op, key, time)`` with a span: :meth:`stamp` times the others);
        returns their indices."""
        first = self.next_index
        for command in self.stamp(commands):
            self.driver.send(self.next_index, command)
            self.next_index += 1
        return range(first, self.next_index)

    def busy(self) -> bool:
        """Commands queued or awaiting a response."""
        return bool(self.driver.queued() or self.scoreboard.outstanding)

    def _raise_failure(self):
        if self.scoreboard.failure:
            raise Mismatch(self.scoreboard.failure)

    async def drain(self, max_cycles: int | None = None) -> None:
        """Wait until every queued command has been answered and checked.

        Raises
        ------
        Mismatch
            On a mismatch, or if ``max_cycles`` pass first (a response is missing).
        """
        if max_cycles is None:
            c = self.config
            per_command = 16 + 2 * (c.k + c.l) + c.segment_blocks
            max_cycles = 2000 + 50 * per_command * (self.driver.queued() + len(self.scoreboard.outstanding))
        waited = 0
        while self.busy():
            self._raise_failure()
            if waited >= max_cycles:
                head = self.scoreboard.outstanding[0] if self.scoreboard.outstanding else None
                raise Mismatch(f"{self.where()}: timeout after {max_cycles} cycles: {self.driver.queued()} "
                               f"commands not accepted, {len(self.scoreboard.outstanding)} without response"
                               + (f" (oldest: command {head[0]}, {_describe(head[1])})" if head else ""))
            await ClockCycles(self.dut.aclk, 8)
            waited += 8
        await ClockCycles(self.dut.aclk, 2)
        self._raise_failure()

    async def reset(self, cycles: int = 2) -> list:
        """Pulse ``aresetn`` low for ``cycles`` cycles now, whatever is in flight.

        Commands not yet accepted are forgotten, those accepted but not answered are dropped (returned), and
        the model starts again empty.
        """
        self.dut.aresetn.value = 0
        # No flush yet: a command may have been taken at the edge just passed (a core that is ready every
        # cycle, like the parallel scan, often is); the command monitor must still find it queued. From the
        # next edge on, tready is held low.
        await ClockCycles(self.dut.aclk, max(2, cycles))
        self.commands.drain()                  # transfers accepted just before the reset
        self.responses.drain()
        self._raise_failure()
        dropped = self.scoreboard.reset()
        self.driver.flush()
        self.model.reset()
        self.dut.aresetn.value = 1
        await RisingEdge(self.dut.aclk)
        return dropped

    def check_counters(self) -> None:
        """With the DUT idle: its counters (``inserts``, ``shifts``; ``overflows``, ``expired`` with a span)
        equal the model's."""
        want = self.model.counters
        got = {name: int(getattr(self.dut, name).value) for name in want}
        if got != want:
            raise Mismatch(f"{self.where()}: DUT counts {got}, model {want}")
