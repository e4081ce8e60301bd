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
from amaranth import ClockDomain, Module, Signal
from amaranth.sim import Simulator

from ..hdl.core import APBBF as CoreAPBBF
from ..model.config import Config
from ..model.filters import APBBF as ModelAPBBF, Op

__all__ = ["RESET", "Mismatch", "Run", "expected", "simulate", "random_commands", "false_positive_bound"]

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
            ops = [op for op, _ in commands[start:stop]]
            keys = [key for _, key in commands[start:stop]]
            h, a = ModelAPBBF(config).run(ops, keys)
            hits[start:stop] = [bool(x) for x in h]
            accesses[start:stop] = [int(x) for x in a]
    return hits, accesses


def _describe(commands, index, model_hit, core_hit):
    op, key = commands[index]
    return (f"command {index}: {Op(op).name} key={key:#x}: model says {'hit' if model_hit else 'miss'}, "
            f"core says {core_hit}")


def _simulate_once(config, commands, model_hits, *, seed, cmd_gap, rsp_stall, vcd_path, max_cycles, scan):
    rng = random.Random(seed)
    dut = CoreAPBBF(config, scan=scan)
    top = Module()
    top.domains.sync = domain = ClockDomain("sync")
    top.submodules.dut = dut
    cycle = Signal(64)
    top.d.sync += cycle.eq(cycle + 1)

    run = Run(config, seed)
    pending = collections.deque()
    state = {"producing": True}
    errors = []

    def check_deadline(now):
        if now > max_cycles:
            raise Mismatch(f"timeout after {max_cycles} cycles: {len(run.hits)} responses received, "
                           f"{len(pending)} pending, seed {seed}")

    async def producer(ctx):
        for index, item in enumerate(commands):
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
            op, key = item
            ctx.set(dut.cmd.valid, 1)
            ctx.set(dut.cmd.payload.op, Op(op))
            ctx.set(dut.cmd.payload.key, key)
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
            ready = rng.random() >= rsp_stall
            ctx.set(dut.rsp.ready, ready)
            _, in_reset, valid, op, hit, now = await ctx.tick().sample(
                dut.rsp.valid, dut.rsp.payload.op, dut.rsp.payload.hit, cycle)
            check_deadline(now)
            run.cycles = now
            if not state["producing"] and not pending:
                idle_after += 1
            if in_reset or not (valid and ready):
                continue
            if not pending:
                errors.append(f"response (op={op}, hit={hit}) in cycle {now} with no command outstanding")
                raise Mismatch(errors[-1])
            op = Op(getattr(op, "value", op))            # the gateware's enum member, as the model's Op
            index = pending.popleft()
            run.hits[index], run.respond[index] = bool(hit), now
            want_op = commands[index][0]
            if op != Op(want_op) or bool(hit) != model_hits[index]:
                errors.append(_describe(commands, index, model_hits[index],
                                        f"op={op.name} hit={bool(hit)}"))
                raise Mismatch(errors[-1])

    sim = Simulator(top)
    sim.add_clock(1e-8, domain="sync")
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    if vcd_path:
        os.makedirs(os.path.dirname(vcd_path), exist_ok=True)
        with sim.write_vcd(vcd_path):
            sim.run()
    else:
        sim.run()
    return run


def simulate(config: Config, commands, *, seed: int = 0, cmd_gap: float = 0.0, rsp_stall: float = 0.0,
             name: str = "apbbf", max_cycles: int | None = None, scan: str = "fsm") -> Run:
    """Run ``commands`` (``(op, key)`` pairs and :data:`RESET` markers) through the core; check every response.

    Parameters
    ----------
    cmd_gap : float
        Probability of an idle cycle (``cmd.valid`` low) before each command.
    rsp_stall : float
        Probability that ``rsp.ready`` is low in a cycle.
    scan : str
        The core's scan, ``"fsm"`` or ``"parallel"``.
    name : str
        Name of the VCD (``build/vcd/<name>.vcd``) left behind on a failure.

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
        max_cycles = int((budget + 4 * config.segment_blocks * (1 + len(commands) // config.generation))
                         * slowdown * 2) + 2000
    kwargs = dict(seed=seed, cmd_gap=cmd_gap, rsp_stall=rsp_stall, max_cycles=max_cycles, scan=scan)
    try:
        run = _simulate_once(config, commands, model_hits, vcd_path=None, **kwargs)
        received = set(run.hits)
        missing = [i for i, item in enumerate(commands)
                   if item is not RESET and i not in received and i not in run.dropped]
        if missing:
            raise Mismatch(f"no response to command {missing[0]} ({len(missing)} missing)")
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


def false_positive_bound(config: Config, count: int) -> int:
    """The most of ``count`` keys absent from the filter (never inserted, or expired) that a correct filter may
    report present just before a shift: the predicted worst-case false-positive rate p
    (:func:`apbbf.model.analysis.analyze_config`) as a binomial bound, ``count·p + 6σ + 1``. (Six, not four,
    standard deviations: the analysis is asymptotic, and the tiny configurations of the tests, a few blocks per
    segment, run above it; on the golden model no seed of 3,000 exceeded the bound in any test config.)"""
    from ..model.analysis import analyze_config
    p = analyze_config(config)["fp"]
    return int(count * p + 6 * (count * p * (1 - p)) ** 0.5) + 1
