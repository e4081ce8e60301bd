"""Amaranth-simulator harness of the lanes filter (:class:`apbbf.hdl.core.lanes.Lanes`): beats of command slots in,
every response beat checked, slot by slot and in order, against :class:`apbbf.model.lanes.Lanes`.

As :mod:`apbbf.sim.harness`: a producer with random idle gaps, a consumer with random backpressure, and
:data:`~apbbf.sim.harness.RESET` markers that pulse the reset while beats are in flight (their responses are
dropped and the model starts empty again). A beat is a list of ``slots`` entries, each ``None`` (an empty slot)
or a command ``(op, key)``, ``(op, key, time)`` with a span; op 3 (reserved) is answered with hit 0, as the core
answers it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..hdl.core.lanes import Lanes as LanesCore, slot_command_layout
from ..model.config import Config
from ..model.filters import Op
from ..model.lanes import Lanes as LanesModel
from .harness import RESET, Mismatch, drive
from .reference import RESERVED_OP, describe

__all__ = ["LanesRun", "lanes_expected", "simulate_lanes", "random_beats", "beats_of", "rates"]


@dataclass
class LanesRun:
    """What a simulation of the lanes filter observed."""
    seed: int
    accept: dict = field(default_factory=dict)      #: beat index -> cycle in which it was taken
    respond: dict = field(default_factory=dict)     #: beat index -> cycle in which its response was taken
    dropped: list = field(default_factory=list)     #: beats in flight at a reset
    cycles: int = 0
    counters: list = field(default_factory=list)    #: per lane, the cores' counters at the end

    def commands_per_cycle(self, beats, first: int = 0) -> float:
        """Commands taken per cycle (for a run without gaps): the commands of the beats taken, over the cycles
        from the first beat's accept to the last beat's, both counted. With ``first``, only beats ``first`` on
        count, e.g. to leave out empty beats offered while the cores clear their memories after reset."""
        taken = sorted(i for i in self.accept if i >= first)
        if len(taken) < 2:
            return 0.0
        commands = sum(sum(slot is not None for slot in beats[i]) for i in taken)
        return commands / (self.accept[taken[-1]] - self.accept[taken[0]] + 1)


def lanes_expected(config: Config, lanes: int, beats) -> list:
    """The model's answer to every command slot: per beat a list of ``None`` (empty slot) or a bool, and
    ``None`` for a :data:`RESET`."""
    answers = [None] * len(beats)
    model = LanesModel(config, lanes)
    for index, beat in enumerate(beats):
        if beat is RESET:
            model = LanesModel(config, lanes)
            continue
        commands = [slot for slot in beat if slot is not None]
        hits = []
        if commands:
            ops = [int(c[0]) for c in commands]
            model_ops = [int(Op.QUERY) if op == RESERVED_OP else op for op in ops]
            times = [c[2] for c in commands] if config.timed else None
            hits = [bool(h) and op != RESERVED_OP for h, op in zip(model.run(model_ops, [c[1] for c in commands],
                                                                             times)[0], ops)]
        hits = iter(hits)
        answers[index] = [None if slot is None else next(hits) for slot in beat]
    return answers, model


def _encode(config: Config, beat) -> int:
    layout = slot_command_layout(config)
    width = layout.size
    raw = 0
    for s, slot in enumerate(beat):
        if slot is None:
            continue
        op, key, *time = slot
        value = 1 << layout["valid"].offset | int(op) << layout["op"].offset | key << layout["key"].offset
        if time:
            value |= time[0] << layout["time"].offset
        raw |= value << (s * width)
    return raw


def _simulate_once(config, lanes, beats, answers, *, seed, cmd_gap, rsp_stall, vcd_path, max_cycles, **options):
    dut = LanesCore(config, lanes, **options)
    run = LanesRun(seed)
    names = list(LanesModel(config, 1).counters[0])

    def put(beat):
        if len(beat) != dut.slots:
            raise ValueError(f"beat has {len(beat)} slots, the core {dut.slots}")
        return _encode(config, beat)

    def counters(ctx):
        run.counters = [{name: ctx.get(getattr(dut, name)[lane]) for name in names} for lane in range(lanes)]

    def answer(index, raw):
        for s, slot in enumerate(beats[index]):
            bits = raw >> (4 * s) & 15
            got_valid, got_op, got_hit = bits & 1, bits >> 1 & 3, bits >> 3 & 1
            if slot is None:
                if got_valid:
                    raise Mismatch(f"beat {index} slot {s}: empty, but the response slot is valid")
                continue
            want = answers[index][s]
            if not got_valid or got_op != int(slot[0]) or bool(got_hit) != want:
                raise Mismatch(f"beat {index} slot {s}: {describe(slot)}: model says {'hit' if want else 'miss'}, "
                               f"core says valid={got_valid} op={got_op} hit={bool(got_hit)}")

    drive(dut, beats, run, seed=seed, cmd_gap=cmd_gap, rsp_stall=rsp_stall, max_cycles=max_cycles,
          vcd_path=vcd_path, put=put, answer=answer, counters=counters)
    return run


def simulate_lanes(config: Config, lanes: int, beats, *, seed: int = 0, cmd_gap: float = 0.0,
                   rsp_stall: float = 0.0, name: str = "lanes", max_cycles: int | None = None,
                   **options) -> LanesRun:
    """Run ``beats`` (and :data:`RESET` markers) through :class:`apbbf.hdl.core.lanes.Lanes` and check every
    response slot, in order, against :class:`apbbf.model.lanes.Lanes`; at the end the lanes' counters.

    Parameters
    ----------
    cmd_gap, rsp_stall : float
        Probability of an idle cycle before a beat; of ``rsp.ready`` low in a cycle.
    options
        ``slots``, ``scan``, ``fifo_depth``, ``reorder_depth`` of the core.

    Raises
    ------
    Mismatch
        On the first wrong, missing or extra response; the message names the beat, the slot, the command and
        both answers, the seed and the VCD left under ``build/vcd/<name>.vcd``.
    """
    answers, model = lanes_expected(config, lanes, beats)
    if max_cycles is None:
        commands = sum(len(b) for b in beats if b is not RESET)
        slowdown = 1.0 / max(1e-3, (1 - cmd_gap) * (1 - rsp_stall))
        clears = 2 + commands // config.generation if not config.timed else commands
        max_cycles = int((40 * len(beats) + 2 * commands + 4 * config.segment_blocks * clears) * slowdown) + 2000
    kwargs = dict(seed=seed, cmd_gap=cmd_gap, rsp_stall=rsp_stall, max_cycles=max_cycles, **options)
    try:
        run = _simulate_once(config, lanes, beats, answers, vcd_path=None, **kwargs)
        missing = [i for i, beat in enumerate(beats)
                   if beat is not RESET and i not in run.respond and i not in run.dropped]
        if missing:
            raise Mismatch(f"no response to beat {missing[0]} ({len(missing)} missing)")
        if run.counters != model.counters:
            raise Mismatch(f"at the end the lanes count {run.counters}, the model {model.counters}")
        return run
    except Mismatch as error:
        vcd_path = os.path.join("build", "vcd", f"{name}.vcd")
        try:
            _simulate_once(config, lanes, beats, answers, vcd_path=vcd_path, **kwargs)
        except Mismatch:
            pass
        raise Mismatch(f"{error} (seed {seed}; waveform in {vcd_path})") from None


def beats_of(commands, slots: int, *, seed: int, empty: float = 0.0) -> list:
    """Pack a command list into beats of ``slots``, in order; with probability ``empty`` a slot stays empty
    (a beat may be empty). :data:`RESET` markers are kept between beats."""
    rng = np.random.default_rng(seed)
    beats, beat = [], []
    for command in commands:
        if command is RESET:
            if beat:
                beats.append(beat + [None] * (slots - len(beat)))
                beat = []
            beats.append(RESET)
            continue
        while empty and rng.random() < empty:
            beat.append(None)
            if len(beat) == slots:
                beats.append(beat)
                beat = []
        beat.append(command)
        if len(beat) == slots:
            beats.append(beat)
            beat = []
    if beat:
        beats.append(beat + [None] * (slots - len(beat)))
    return beats


def random_beats(config: Config, count: int, slots: int, *, seed: int, empty: float = 0.0, **kwargs) -> list:
    """:func:`apbbf.sim.harness.random_commands` (or ``timed_commands`` with a span) packed by :func:`beats_of`."""
    from .harness import random_commands, timed_commands
    commands = (timed_commands(config, count, seed=seed, **kwargs) if config.timed
                else random_commands(config, count, seed=seed, **kwargs))
    return beats_of(commands, slots, seed=seed, empty=empty)


def rates(config: Config, lanes: int, commands: int, *, slots: int | None = None, seed: int = 1, **options) -> dict:
    """Commands per clock of the lanes filter on ``commands`` random distinct keys, all TEST_AND_INSERT
    (:func:`random_beats` with ``seed``), every slot filled, no gaps, no backpressure, every answer checked
    (:func:`simulate_lanes`; ``options`` are the core's).

    Returns
    -------
    dict
        ``from_reset``: the first beat offered in the first cycle, while each core clears its memories after
        reset (``segment_blocks`` cycles with its ``cmd.ready`` low); ``after_clear``: the same beats behind
        ``2 * segment_blocks`` empty beats, counted from the first beat with commands (the steady rate). Both
        by :meth:`LanesRun.commands_per_cycle`.
    """
    slots = lanes if slots is None else slots
    beats = random_beats(config, commands, slots, seed=seed, duplicates=0.0, ops=(Op.TEST_AND_INSERT,))
    result = {}
    for name, empty in (("from_reset", 0), ("after_clear", 2 * config.segment_blocks)):
        offered = [[None] * slots] * empty + beats
        run = simulate_lanes(config, lanes, offered, seed=seed, slots=slots, **options)
        result[name] = run.commands_per_cycle(offered, first=empty)
    return result
