"""Amaranth-simulator harness: drive any command list through the core and score it against the golden model.

Two concurrent testbenches, as Glasgow's gateware tests do: a producer that offers commands with random idle
gaps (``cmd.valid`` low) and holds each payload until it is taken, and a consumer that applies random
backpressure (``rsp.ready`` low) and checks every response, in order, against :class:`apbbf.model.APBBF`.
A :data:`RESET` in the command list pulses the reset a few cycles after the previous command was accepted,
while it is still in flight: responses of commands in flight are dropped and the model starts empty again.

A mismatch raises :class:`Mismatch` naming the command index, the op, the key and both answers, after the same
run (it is deterministic for its seed) has been repeated with a VCD written under ``build/vcd/``.
"""

from __future__ import annotations

import collections
import os
import random
from dataclasses import dataclass, field

import numpy as np
from amaranth import Cat, ClockDomain, Module, Signal
from amaranth.sim import Simulator

from ..hdl.core.apbbf import APBBF as CoreAPBBF
from ..hdl.core.types import response_layout
from ..model.config import Config
from ..model.filters import Op
from .reference import Reference, describe

__all__ = ["RESET", "Mismatch", "Run", "Bench", "bench", "expected", "drive", "run_with_vcd", "simulate",
           "random_commands", "timed_commands", "false_positive_bound"]

#: Marker in a command list: pulse the reset here (mid-stream).
RESET = None


class Mismatch(AssertionError):
    """The core answered differently from the model (or not at all)."""


@dataclass
class Run:
    """What a simulation observed."""
    config: Config
    seed: int
    hits: dict = field(default_factory=dict)          #: command index -> hit, for every response received
    accept: dict = field(default_factory=dict)        #: command index -> cycle in which cmd was taken
    respond: dict = field(default_factory=dict)       #: command index -> cycle in which rsp was taken
    dropped: list = field(default_factory=list)       #: command indices in flight at a reset
    cycles: int = 0                                   #: cycles simulated
    counters: dict = field(default_factory=dict)      #: the core's counters at the end
    parity_errors: int | None = None                  #: the core's parity_errors at the end (with parity)


def expected(config: Config, commands) -> tuple[list, list]:
    """The model's answer and access count for every command (``None`` for :data:`RESET` entries)."""
    hits, accesses = [None] * len(commands), [None] * len(commands)
    segments, start = [], 0
    for index, item in enumerate(list(commands) + [RESET]):
        if item is RESET:
            segments.append((start, index))
            start = index + 1
    for start, stop in segments:
        if stop > start:
            h, a = Reference(config).run(commands[start:stop])
            hits[start:stop] = [bool(x) for x in h]
            accesses[start:stop] = [int(x) for x in a]
    return hits, accesses


def _describe(commands, index, model_hit, core_hit):
    return (f"command {index}: {describe(commands[index])}: model says {'hit' if model_hit else 'miss'}, "
            f"core says {core_hit}")


class Bench:
    """One compiled simulation of ``dut`` in a top with a ``sync`` domain and a cycle counter, kept for more runs.
    Its input stream is ``dut.<stream>`` (``cmd`` for the core), offered by :attr:`offer`.

    Building a :class:`~amaranth.sim.Simulator` elaborates the design and compiles it to Python, which costs as
    much as a short run; a bench pays that once and each later run starts from :meth:`Simulator.reset
    <amaranth.sim.Simulator.reset>`, which puts every signal and memory back to its initial value and restarts
    the clock and the testbenches: the run sees the same design, from the same state, as on a new simulator.
    The two testbenches are added once; each run gives them its own producer and consumer.
    """

    def __init__(self, dut, *, stream: str = "cmd"):
        self.dut = dut
        top = Module()
        top.domains.sync = self.domain = ClockDomain("sync")
        top.submodules.dut = dut
        self.cycle = Signal(64)
        top.d.sync += self.cycle.eq(self.cycle + 1)
        #: ``valid`` above ``payload`` of the input stream: one ``ctx.set`` offers an item (one settle of the
        #: design, not one per field; at 512 bits a settle costs as much as a clock cycle)
        offered = getattr(dut, stream)
        self.offer = Cat(offered.payload.as_value(), offered.valid)
        self.valid_bit = 1 << len(offered.payload.as_value())
        self._job = None
        self._fresh = True
        self.sim = Simulator(top)
        self.sim.add_clock(1e-8, domain="sync")

        async def producer(ctx):
            await self._job[0](ctx)

        async def consumer(ctx):
            await self._job[1](ctx)

        async def server(ctx):
            if self._job[2] is not None:
                await self._job[2](ctx)

        self.sim.add_testbench(producer)
        self.sim.add_testbench(consumer)
        self.sim.add_testbench(server, background=True)

    def run(self, producer, consumer, vcd_path, server=None) -> None:
        """Run the testbenches ``producer`` and ``consumer`` to the end from the initial state (a VCD to
        ``vcd_path`` unless it is ``None``), and ``server`` (a testbench that answers another port of the design,
        a memory's) beside them for as long as they run."""
        if not self._fresh:
            self.sim.reset()
        self._fresh = False
        self._job = (producer, consumer, server)
        run_with_vcd(self.sim, vcd_path)


#: Benches kept for reuse, by the key their caller gives (:func:`bench`); the oldest go first beyond a few.
_BENCHES = collections.OrderedDict()
_KEPT = 12


def bench(key, make, *, stream: str = "cmd") -> Bench:
    """The :class:`Bench` kept under ``key`` (a hashable description of the design, e.g. its Config and
    options), or a new one of ``make()`` with its input ``stream``; ``key=None`` always builds a new one. A
    bench whose run raised is not kept (:func:`drive`)."""
    if key is None:
        return Bench(make(), stream=stream)
    if key in _BENCHES:
        _BENCHES.move_to_end(key)
        return _BENCHES[key]
    made = _BENCHES[key] = Bench(make(), stream=stream)
    while len(_BENCHES) > _KEPT:
        _BENCHES.popitem(last=False)
    return made


def drive(dut, items, run, *, seed: int, cmd_gap: float, rsp_stall: float, max_cycles: int, vcd_path, put,
          answer, counters=None, server=None) -> None:
    """The producer and consumer every core bench shares: offer ``items`` on ``dut.cmd`` in order (a
    :data:`RESET` item pulses the reset; the items in flight then are recorded in ``run.dropped``), take
    ``dut.rsp``, and match each response to the oldest item outstanding.

    Parameters
    ----------
    dut
        The design (``cmd`` and ``rsp`` streams), or a :class:`Bench` of it (:func:`bench`) to run again.
    run
        Records ``accept`` and ``respond`` (item index -> cycle), ``dropped`` and ``cycles``.
    cmd_gap, rsp_stall : float
        Probability of an idle cycle before an item; of ``rsp.ready`` low in a cycle.
    put : callable
        ``put(item)``: the raw ``dut.cmd.payload`` (an int) for ``item``; it is offered with ``cmd.valid`` in
        one ``ctx.set``.
    answer : callable
        ``answer(index, raw)``: checks the response payload ``raw`` (an int) of item ``index``; raises
        :class:`Mismatch`.
    counters : callable or None
        ``counters(ctx)``, called every cycle: reads the counters into ``run``.
    server : async callable or None
        A background testbench run beside the two (:meth:`Bench.run`): a model of a memory the design uses.

    Raises
    ------
    Mismatch
        After ``max_cycles`` cycles, on a response with nothing outstanding, or from ``answer``.
    """
    rng = random.Random(seed)
    test = dut if isinstance(dut, Bench) else Bench(dut)
    dut, domain, cycle = test.dut, test.domain, test.cycle
    pending = collections.deque()
    state = {"producing": True}

    def check_deadline(now):
        if now > max_cycles:
            raise Mismatch(f"timeout after {max_cycles} cycles: {len(run.respond)} responses received, "
                           f"{len(pending)} pending, seed {seed}")

    async def producer(ctx):
        for index, item in enumerate(items):
            if item is RESET:
                for _ in range(rng.randrange(0, 4)):
                    await ctx.tick()
                ctx.set(domain.rst, 1)
                await ctx.tick()
                ctx.set(domain.rst, 0)
                run.dropped.extend(pending)
                pending.clear()
                continue
            while rng.random() < cmd_gap:
                await ctx.tick()
            ctx.set(test.offer, test.valid_bit | put(item))
            while True:
                _, _, ready, now = await ctx.tick().sample(dut.cmd.ready, cycle)
                check_deadline(now)
                if ready:
                    break
            run.accept[index] = now
            pending.append(index)
            ctx.set(dut.cmd.valid, 0)
        state["producing"] = False

    async def consumer(ctx):
        idle_after = 0
        while state["producing"] or pending or idle_after < 8:
            if counters is not None:
                counters(ctx)
            ready = rng.random() >= rsp_stall
            ctx.set(dut.rsp.ready, ready)
            _, in_reset, valid, raw, now = await ctx.tick().sample(dut.rsp.valid, dut.rsp.payload.as_value(), cycle)
            check_deadline(now)
            run.cycles = now
            if not state["producing"] and not pending:
                idle_after += 1
            if in_reset or not (valid and ready):
                continue
            if not pending:
                raise Mismatch(f"response {raw:#x} in cycle {now} with no command outstanding")
            index = pending.popleft()
            run.respond[index] = now
            answer(index, raw)

    try:
        test.run(producer, consumer, vcd_path, server)
    except BaseException:
        for key, kept in list(_BENCHES.items()):     # not run again from a state an exception left behind
            if kept is test:
                del _BENCHES[key]
        raise


def _simulate_once(config, commands, model_hits, *, seed, cmd_gap, rsp_stall, vcd_path, max_cycles, scan,
                   parity=False, pace=1, design=None, server=None):
    # a simulation of this design is built once and run again from its initial state (Bench); the run that
    # writes a VCD after a mismatch gets a new one. ``design``: (key, make) of another core than APBBF's;
    # ``server(dut)``: the testbench of a memory it needs.
    key, make = design or (("core", config, scan, parity, pace),
                           lambda: CoreAPBBF(config, scan=scan, parity=parity, pace=pace))
    test = bench(None if vcd_path else key, make)
    dut = test.dut
    run = Run(config, seed)
    names = list(Reference(config).counters)
    layout = response_layout()
    op_field, hit_field = layout["op"], layout["hit"]
    fields = [(name, field.offset, (1 << field.width) - 1)
              for name, field in dut.cmd.payload.shape() if name in ("op", "key", "time")]

    offered = [0]

    def put(item):
        # the fields as a ctx.set on each would write them: each value cut to its field's width, a field the item
        # does not give (a time) left as it was
        values = dict(zip(("op", "key", "time"), (int(item[0]), *item[1:])))
        raw = offered[0]
        for name, offset, mask in fields:
            if name in values:
                raw = raw & ~(mask << offset) | (values[name] & mask) << offset
        offered[0] = raw
        return raw

    def counters(ctx):
        run.counters = {name: ctx.get(getattr(dut, name)) for name in names}
        if parity:
            run.parity_errors = ctx.get(dut.parity_errors)

    def answer(index, raw):
        op = raw >> op_field.offset & ((1 << op_field.width) - 1)
        hit = bool(raw >> hit_field.offset & 1)
        run.hits[index] = hit
        if op != int(commands[index][0]) or hit != model_hits[index]:
            raise Mismatch(_describe(commands, index, model_hits[index], f"op={op} hit={hit}"))

    drive(test, commands, run, seed=seed, cmd_gap=cmd_gap, rsp_stall=rsp_stall, max_cycles=max_cycles,
          vcd_path=vcd_path, put=put, answer=answer, counters=counters,
          server=None if server is None else server(dut))
    return run


def run_with_vcd(sim: Simulator, vcd_path) -> None:
    """Run ``sim`` to the end, writing a VCD to ``vcd_path`` (its directory created) unless it is ``None``."""
    if vcd_path:
        os.makedirs(os.path.dirname(vcd_path), exist_ok=True)
        with sim.write_vcd(vcd_path):
            sim.run()
    else:
        sim.run()


def simulate(config: Config, commands, *, seed: int = 0, cmd_gap: float = 0.0, rsp_stall: float = 0.0,
             name: str = "apbbf", max_cycles: int | None = None, scan: str = "fsm", parity: bool = False,
             pace: int = 1, design=None, server=None) -> Run:
    """Run ``commands`` (``(op, key)`` pairs, ``(op, key, time)`` triples for a Config with a span, and
    :data:`RESET` markers) through the core; check every response, in order, against
    :class:`~apbbf.sim.reference.Reference` (the reserved op 3 included), and, at the end, the core's counters.

    Parameters
    ----------
    cmd_gap : float
        Probability of an idle cycle (``cmd.valid`` low) before each command.
    rsp_stall : float
        Probability that ``rsp.ready`` is low in a cycle.
    scan : str
        The core's scan, ``"fsm"`` or ``"parallel"``.
    parity : bool
        The core's parity option (:class:`~apbbf.hdl.core.APBBF`); the run records ``parity_errors``.
    pace : int
        The parallel scan's cycles per command at most (:class:`~apbbf.hdl.core.APBBF`).
    name : str
        Name of the VCD (``build/vcd/<name>.vcd``) left behind on a failure.
    design : (key, callable) or None
        Another core than :class:`~apbbf.hdl.core.APBBF` with the same ``cmd``, ``rsp`` and counters: a key for
        keeping its simulation (:func:`bench`) and a function that makes it (:func:`apbbf.sim.memory.simulate`).
    server : callable or None
        ``server(dut)``: a background testbench for a port of ``dut`` other than its streams (a memory's).

    Raises
    ------
    Mismatch
        On the first wrong, missing or extra response; the message names the command, both answers, the seed
        and the VCD.
    """
    model_hits, model_accesses = expected(config, commands)
    if max_cycles is None:
        budget = sum(12 + config.k + config.l + (a or 0) for a in model_accesses)
        slowdown = 1.0 / max(1e-3, (1 - cmd_gap) * (1 - rsp_stall))
        shifts = 1 + len(commands) // config.generation
        if config.timed:                                 # time-triggered shifts and restarts clear too
            shifts = len(commands)
        max_cycles = int((budget + 4 * config.segment_blocks * shifts) * slowdown * 2) + 2000
    kwargs = dict(seed=seed, cmd_gap=cmd_gap, rsp_stall=rsp_stall, max_cycles=max_cycles, scan=scan, parity=parity,
                  pace=pace, design=design, server=server)
    try:
        run = _simulate_once(config, commands, model_hits, vcd_path=None, **kwargs)
        received = set(run.hits)
        missing = [i for i, item in enumerate(commands)
                   if item is not RESET and i not in received and i not in run.dropped]
        if missing:
            raise Mismatch(f"no response to command {missing[0]} ({len(missing)} missing)")
        last = max((i for i, item in enumerate(commands) if item is RESET), default=-1)
        reference = Reference(config)
        if last + 1 < len(commands):
            reference.run(commands[last + 1:])
        if run.counters != reference.counters:
            raise Mismatch(f"at the end the core counts {run.counters}, the model {reference.counters}")
        return run
    except Mismatch as error:
        vcd_path = os.path.join("build", "vcd", f"{name}.vcd")
        try:
            _simulate_once(config, commands, model_hits, vcd_path=vcd_path, **kwargs)
        except Mismatch:
            pass
        raise Mismatch(f"{error} (seed {seed}; waveform in {vcd_path})") from None


def random_commands(config: Config, count: int, *, seed: int, duplicates: float = 0.3,
                    ops=(Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT)) -> list:
    """A random command list: ops drawn from ``ops``; a fraction ``duplicates`` of the keys repeat a recent
    key (within about a window and a half), so hits, window edges and expiries all occur."""
    rng = np.random.default_rng(seed)
    width = config.key_width
    keys = []
    for index in range(count):
        if keys and rng.random() < duplicates:
            back = int(rng.integers(1, min(len(keys), int(1.5 * config.window) + 1) + 1))
            keys.append(keys[-back])
        else:
            keys.append(int.from_bytes(rng.bytes((width + 7) // 8), "little") & ((1 << width) - 1))
    choice = rng.integers(0, len(ops), count)
    return [(ops[c], key) for c, key in zip(choice, keys)]


def timed_commands(config: Config, count: int, *, seed: int, rate: float = 1.0, gaps: float = 0.0,
                   duplicates: float = 0.3, ops=(Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT), start=None) -> list:
    """A random ``(op, key, time)`` list for a Config with a span: :func:`random_commands`' ops and keys, and
    times that advance so that inserts come at ``rate`` times the planned rate (one generation per shift
    interval), from a random start (or ``start``) modulo ``2**time_width``; a fraction ``gaps`` of the
    commands comes after an idle gap of one to three spans (the filter restarts)."""
    if not config.timed:
        raise ValueError("timed_commands needs a Config with a span")
    rng = np.random.default_rng(seed + 1)
    commands = random_commands(config, count, seed=seed, duplicates=duplicates, ops=ops)
    inserting = sum(op != Op.QUERY for op, _ in commands) / max(1, count)
    per_command = config.shift_interval / (config.generation * rate) * inserting
    mask = (1 << config.time_width) - 1
    now = float(rng.integers(0, mask + 1) if start is None else start)
    timed = []
    for op, key in commands:
        if gaps and rng.random() < gaps:
            now += float(rng.integers(config.span + 1, 3 * config.span + 1))
        else:
            now += rng.exponential(per_command)
        timed.append((op, key, int(now) & mask))
    return timed


def false_positive_bound(config: Config, count: int) -> int:
    """The most of ``count`` keys absent from the filter (never inserted, or expired) that a correct filter may
    report present just before a shift: the predicted worst-case false-positive rate p
    (:func:`apbbf.model.analysis.analyze_config`) as a binomial bound, ``count·p + 6σ + 1``. (Six, not four,
    standard deviations: the analysis is asymptotic, and the tiny configurations of the tests, a few blocks per
    segment, run above it; on the golden model no seed of 3,000 exceeded the bound in any test config.)"""
    from ..model.analysis import analyze_config
    p = analyze_config(config)["fp"]
    return int(count * p + 6 * (count * p * (1 - p)) ** 0.5) + 1
