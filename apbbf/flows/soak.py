"""Long random soak of the bare core, or of the lanes filter, on Verilator (``make soak``): every answer scored
against the golden model.

The core runs in the soak mode of the C++ testbench of :mod:`apbbf.sim.corebench` (one core across all chunks,
idle gaps on ``cmd.valid`` and backpressure on ``rsp.ready`` from the testbench's PRNG); with ``lanes`` > 1 the
lanes filter (:class:`~apbbf.hdl.core.lanes.Lanes`) runs in that of :mod:`apbbf.sim.lanesbench`, the commands
packed into beats with empty slots as well, and is scored against :class:`apbbf.model.lanes.Lanes`. :class:`Stream`
generates the commands in chunks (bounded memory): random QUERY / INSERT / TEST_AND_INSERT, a share of the keys
that ask replaying an earlier inserted key, half of those near the window's edge; with a span, times at the
planned rate with rare gaps longer than the span. Each chunk's packed hit bits are scored against one
:class:`~apbbf.sim.reference.Reference` carried across the chunks (its batch path, the model's exact numpy
runner), while the testbench runs the next chunk. The core's counters are compared with the model's after
the last chunk.

:func:`soak` stops at the first chunk with a mismatch and names its first command (index, op, key, time, both
answers).
"""

from __future__ import annotations

import json
import resource
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..model.config import Config, check_config, check_integer

__all__ = ["Stream", "Mismatch", "SoakResult", "soak"]


class Stream:
    """Random commands in chunks, reproducible from ``seed`` (the same chunk sizes give the same commands).

    Ops are QUERY, INSERT and TEST_AND_INSERT with equal probability. A QUERY or TEST_AND_INSERT replays an
    earlier inserted key with probability ``replay``: half of those a key among the last ``window`` inserts, the
    other half one whose age (in inserts) is within a generation of the window's edge. With a span, times
    advance by exponential gaps at the planned rate (a generation per shift interval), with a gap of twice the
    span once in about 100 000 commands.

    Parameters
    ----------
    config : Config
    seed : int
        Seed of the stream, ``>= 0``.
    replay : float
        Probability that a QUERY or TEST_AND_INSERT replays an inserted key, in ``[0, 1]``.

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``seed`` not an integer.
    ValueError
        If ``seed`` or ``replay`` is out of range.
    """

    def __init__(self, config: Config, seed: int, *, replay: float = 0.5):
        self.config = check_config(config)
        check_integer("seed", seed, range(0, 1 << 64))
        if not 0 <= replay <= 1:
            raise ValueError(f"replay must be in [0, 1], not {replay}")
        self.replay = replay
        self._rng = np.random.default_rng(seed)
        self._keep = config.window + 2 * config.generation
        self._history = np.zeros(0, dtype=np.uint64)        # the last `_keep` inserted keys, oldest first
        self._mask = np.uint64((1 << config.key_width) - 1) if config.key_width < 64 else np.uint64(2**64 - 1)
        self._now = float(self._rng.integers(0, 1 << 20)) if config.timed else 0.0

    def chunk(self, n: int):
        """The next ``n`` commands.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray, numpy.ndarray or None)
            Ops (uint8), keys (uint64) and times (uint64 modulo ``2**time_width``; ``None`` without a span).
        """
        check_integer("n", n, range(1, 1 << 40))
        c, rng = self.config, self._rng
        ops = rng.integers(0, 3, size=n).astype(np.uint8)
        fresh = rng.integers(0, 2**64, size=n, dtype=np.uint64) & self._mask
        inserting = ops != 0                                   # INSERT and TEST_AND_INSERT
        before = np.cumsum(inserting) - inserting              # inserts of this chunk before each command
        held = len(self._history)
        available = held + before                              # inserted keys a command may replay
        replays = (rng.random(n) < self.replay) & (ops != 1) & (available > 0)
        window, generation = c.window, c.generation
        near_edge = rng.random(n) < 0.5
        u = rng.random(n)
        age = np.where(near_edge, window - generation + 1 + np.floor(u * 2 * generation),
                       1 + np.floor(u * window)).astype(np.int64)
        age = np.clip(age, 1, np.maximum(available, 1))
        source = available - age                               # index into history ++ this chunk's inserts
        # Inserted keys of this chunk: fresh, or (a replaying TEST_AND_INSERT) an earlier inserted key, which
        # may itself be a replay: resolve the pointers by doubling.
        at = np.flatnonzero(inserting)
        keys_all = np.concatenate([self._history, fresh[at]])
        pointer = np.arange(len(keys_all))
        pointer[held + np.flatnonzero(replays[at])] = source[at[replays[at]]]
        while True:
            jumped = pointer[pointer]
            if np.array_equal(jumped, pointer):
                break
            pointer = jumped
        keys_all = keys_all[pointer]
        keys = fresh.copy()
        keys[replays] = keys_all[source[replays]]
        self._history = keys_all[-self._keep:].copy()
        times = None
        if c.timed:
            per_command = c.shift_interval / c.generation * 1.5        # two commands in three insert
            gaps = rng.exponential(per_command, size=n)
            gaps[rng.random(n) < 1e-5] = 2 * c.span
            clock = self._now + np.cumsum(gaps)
            self._now = float(clock[-1]) % float(1 << c.time_width)
            times = np.floor(clock).astype(np.uint64) & np.uint64((1 << c.time_width) - 1)
        return ops, keys, times


@dataclass(frozen=True)
class Mismatch:
    """The first command the core answered otherwise than the model.

    Attributes
    ----------
    index : int
        Its index in the soak (from 0).
    op : int
    key : int
    time : int or None
    core : str
        The core's answer (``hit``/``miss``, or the op it echoed).
    model : str
        The model's.
    """

    index: int
    op: int
    key: int
    time: int | None
    core: str
    model: str

    def __str__(self) -> str:
        from ..sim.reference import describe
        command = (self.op, self.key) if self.time is None else (self.op, self.key, self.time)
        return f"command {self.index}: {describe(command)}: core {self.core}, model {self.model}"


@dataclass
class SoakResult:
    """What :func:`soak` measured.

    Attributes
    ----------
    config : Config
    scan : str
    seed : int
        Seed of the command stream (the testbench's PRNG seed is derived from it).
    lanes : int
        1 for the bare core, else the lanes of the lanes filter soaked.
    pause : float
    requested : int
        Commands asked for.
    commands : int
        Commands run and checked (fewer than ``requested`` if a time budget ran out or a mismatch stopped it).
    mismatches : int
        Answers that differ in the chunk that stopped the soak (0 for a pass), plus op echoes that differ.
    first : Mismatch or None
    counters : dict or list of dict
        The core's counters at the end (a dict per lane with ``lanes`` > 1).
    model_counters : dict or list of dict
        The model's.
    cycles : int
    hits : int
        Commands answered with a hit.
    seconds : float
        Wall time of the run (after the build).
    build_seconds : float
    testbench_cpu_seconds : float
        CPU time of the Verilator testbench process (the wall time on a shared machine is longer).
    python_cpu_seconds : float
        CPU time of this process in the run: the stream, the model and the chunk files.
    """

    config: Config
    scan: str
    seed: int
    pause: float
    lanes: int = 1
    requested: int = 0
    commands: int = 0
    mismatches: int = 0
    first: Mismatch | None = None
    counters: dict = field(default_factory=dict)
    model_counters: dict = field(default_factory=dict)
    cycles: int = 0
    hits: int = 0
    seconds: float = 0.0
    build_seconds: float = 0.0
    testbench_cpu_seconds: float = 0.0
    python_cpu_seconds: float = 0.0

    @property
    def counters_match(self) -> bool:
        return self.counters == self.model_counters

    @property
    def passed(self) -> bool:
        return self.mismatches == 0 and self.counters_match

    @property
    def commands_per_second(self) -> float:
        return self.commands / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict:
        """The result as ``soak.json`` holds it."""
        return {
            "config": asdict(self.config), "scan": self.scan, "lanes": self.lanes, "seed": self.seed,
            "pause": self.pause,
            "requested": self.requested, "commands": self.commands, "mismatches": self.mismatches,
            "first_mismatch": None if self.first is None else {**asdict(self.first), "text": str(self.first)},
            "counters": self.counters, "model_counters": self.model_counters,
            "counters_match": self.counters_match, "passed": self.passed, "cycles": self.cycles,
            "cycles_per_command": round(self.cycles / self.commands, 4) if self.commands else None,
            "hits": self.hits, "seconds": round(self.seconds, 2), "build_seconds": round(self.build_seconds, 2),
            "commands_per_second": round(self.commands_per_second),
            "testbench_cpu_seconds": round(self.testbench_cpu_seconds, 2),
            "python_cpu_seconds": round(self.python_cpu_seconds, 2),
            "commands_per_testbench_cpu_second": round(self.commands / self.testbench_cpu_seconds)
            if self.testbench_cpu_seconds else None,
        }


def soak(config: Config, work, *, commands: int, scan: str = "fsm", lanes: int = 1, seed: int = 1,
         pause: float = 0.1, chunk: int = 1 << 20, replay: float = 0.5, max_seconds: float | None = None,
         report=None, log=print, _flip=None) -> SoakResult:
    """Run ``commands`` random commands (:class:`Stream`) through the core (or ``lanes`` lanes) on Verilator in
    chunks and score every answer against the model, and the counters at the end.

    Parameters
    ----------
    config : Config
    work : str or os.PathLike
        Work directory of the Verilator model and the chunk files.
    commands : int
        Commands to run, ``>= 1``.
    scan : {"fsm", "parallel"}
    lanes : int
        One of :data:`apbbf.model.lanes.LANES`: 1 soaks the bare core (``APBBF``), more the lanes filter
        (``Lanes(config, lanes, scan=scan)``, a slot per lane).
    seed : int
        Seed of the command stream and (derived) of the testbench's PRNG, ``>= 0``.
    pause : float
        Probability of an idle gap before a command and of backpressure in a cycle, in ``[0, 1)``.
    chunk : int
        Commands per chunk, ``>= 1``.
    replay : float
        :class:`Stream`'s share of replayed keys.
    max_seconds : float, optional
        A time budget: no chunk is started after it has run out (the chunks in flight are still checked), so
        fewer than ``commands`` may run; :attr:`SoakResult.requested` keeps ``commands``.
    report : str or os.PathLike, optional
        Where to write the result as JSON (:meth:`SoakResult.as_dict`).
    log : callable
        Called with progress lines.
    _flip : int, optional
        Test hook: the command whose returned hit bit is inverted before scoring (the soak must catch it).

    Returns
    -------
    SoakResult

    Raises
    ------
    TypeError, ValueError
        If a parameter is out of range (the message names it).
    RuntimeError
        If the testbench stops.
    """
    from ..hdl.core.apbbf import SCANS
    from ..model.lanes import Lanes, check_lanes, lane_masks
    from ..sim.corebench import SoakProcess, build_sim
    from ..sim.lanesbench import build_lanes_sim
    from ..sim.reference import Reference
    check_config(config)
    check_lanes(lanes)
    lane_masks(config, lanes)                        # a Config too wide for the lane hash is refused here
    check_integer("commands", commands, range(1, 1 << 48))
    check_integer("chunk", chunk, range(1, 1 << 26))
    check_integer("seed", seed, range(0, 1 << 64))
    if scan not in SCANS:
        raise ValueError(f"scan must be one of {', '.join(map(repr, SCANS))}, not {scan!r}")
    if not 0 <= pause < 1:
        raise ValueError(f"pause must be in [0, 1), not {pause}")
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"max_seconds must be positive, not {max_seconds}")
    result = SoakResult(config=config, scan=scan, lanes=lanes, seed=seed, pause=pause, requested=commands)
    t = time.monotonic()
    if lanes == 1:
        binary = build_sim(config, scan, Path(work))
        model = Reference(config)
        score = model.batch
    else:
        binary = build_lanes_sim(config, lanes, Path(work), scan=scan)
        model = Lanes(config, lanes)
        score = model.run                            # the stream has no reserved op
    result.build_seconds = time.monotonic() - t
    stream = Stream(config, seed, replay=replay)
    t0, cpu0 = time.monotonic(), time.process_time()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    last_log = t0
    in_flight = []                                   # (start index, ops, keys, times) of submitted chunks
    issued = 0
    with SoakProcess(binary, timed=config.timed, pause=pause, seed=(seed * 0x9E3779B97F4A7C15 + 1) % 2**64,
                     lanes=lanes) as sim:
        while in_flight or issued < commands:
            if max_seconds is not None and time.monotonic() - t0 >= max_seconds:
                commands = issued                    # the budget ran out: only the chunks in flight remain
            while issued < commands and len(in_flight) < 2:
                n = min(chunk, commands - issued)
                ops, keys, times = stream.chunk(n)
                sim.submit(ops, keys, times)
                in_flight.append((issued, ops, keys, times))
                issued += n
            start, ops, keys, times = in_flight.pop(0)
            out = sim.collect()
            hits = out.hits
            if _flip is not None and start <= _flip < start + len(ops):
                hits[_flip - start] ^= True
            model_hits, _ = score(ops, keys, times)
            wrong = np.flatnonzero(hits != model_hits)
            result.commands += len(ops)
            result.cycles = out.cycles
            result.hits += int(hits.sum())
            result.counters = out.counters
            result.mismatches = len(wrong) + (out.first_op_mismatch is not None)
            if result.mismatches:
                if out.first_op_mismatch is not None and (not len(wrong) or out.first_op_mismatch < wrong[0]):
                    i = out.first_op_mismatch
                    core, expected = "echoed another op", f"op {int(ops[i])}"
                else:
                    i = int(wrong[0])
                    core, expected = ("hit" if hits[i] else "miss"), ("hit" if model_hits[i] else "miss")
                result.first = Mismatch(start + i, int(ops[i]), int(keys[i]),
                                        None if times is None else int(times[i]), core, expected)
                break
            now = time.monotonic()
            if now - last_log >= 30:
                last_log = now
                log(f"soak: {result.commands:,} commands checked, {result.commands / (now - t0):,.0f} commands/s, "
                    f"{result.cycles:,} cycles")
    result.seconds = time.monotonic() - t0
    result.python_cpu_seconds = time.process_time() - cpu0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)        # the testbench, waited for on close
    result.testbench_cpu_seconds = (children.ru_utime + children.ru_stime) - (children0.ru_utime +
                                                                               children0.ru_stime)
    result.model_counters = model.counters
    if report is not None:
        report = Path(report)
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(result.as_dict(), indent=2) + "\n")
    return result
