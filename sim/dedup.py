"""Amaranth-simulator harness of the packet de-duplicator: frames through
:class:`~apbbf.hdl.packet.dedup.PacketDedup`, scored frame by frame against :class:`apbbf.model.dedup.Dedup`.

A producer testbench offers each frame beat by beat (random idle gaps between beats with ``gap`` above 0; the
frame's time in ``tuser`` of its first beat, its error flag on its last), holding a beat while ``i.ready`` is low;
a consumer takes the output with random backpressure (``stall``) and collects frames and their flags. A
:data:`RESET` in the frame list pulses the reset once the frame before it has been offered up to its middle
beat, so a reset lands mid-frame: everything in flight is lost, the model starts empty again.

The score: the frames out (bytes, in order) and their ``tuser`` flags must be exactly the model's forwarded
frames and marks, and the counters must be the model's. With ``timestamps="counter"`` a frame's time is the
counter's reading (cycles // ``tick_cycles``) when its first beat is taken. A frame the DUT reports *unchecked* (fail open: no
answer in time) is given to the model as unchecked; with ``action="drop"`` a dropped frame shows no flags, so
runs that drop must have none unchecked (the harness checks that the model found the frame a duplicate). On a
mismatch the run is repeated with a VCD under ``build/vcd/``.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from amaranth import ClockDomain, Module
from amaranth.sim import Simulator

from ..hdl.packet.dedup import PacketDedup
from ..model.dedup import Dedup
from .harness import run_with_vcd
from .memory import MemoryModel

__all__ = ["RESET", "Mismatch", "DedupRun", "simulate_dedup", "score_frames", "beats"]

#: Marker in a frame list: pulse the reset in the middle of the next frame.
RESET = None


class Mismatch(AssertionError):
    """The de-duplicator's output differs from the model's."""


@dataclass
class DedupRun:
    """What a simulation observed."""
    out: list = field(default_factory=list)            #: (frame bytes, (duplicate, unchecked, errored)) in order
    first_beat: list = field(default_factory=list)     #: cycle of each frame's first beat into ``i``
    first_accept: list = field(default_factory=list)   #: cycles before the edge that took each first beat
    taken: list = field(default_factory=list)          #: cycle of each output frame's last beat
    counters: dict = field(default_factory=dict)
    decided: list = field(default_factory=list)        #: (cycle, unchecked, late) of each decision, from the counters
    resets: list = field(default_factory=list)        #: cycle of the first edge in each reset (as ``taken``)
    cycles: int = 0


def beats(frame: bytes, lanes: int) -> list[tuple[int, int, bool]]:
    """A frame as ``(data, keep, last)`` beats of ``lanes`` bytes (a frame of 0 bytes is one empty beat)."""
    chunks = [frame[i:i + lanes] for i in range(0, len(frame), lanes)] or [b""]
    return [(int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, n == len(chunks) - 1)
            for n, chunk in enumerate(chunks)]


def _counter_names(dut) -> tuple[str, ...]:
    return ("frames", "duplicates", "dropped", "unchecked", "errored") + (("late",) if dut.scan == "memory" else ())


def _simulate_once(dut, items, *, seed, gap, stall, vcd_path, max_cycles, settle, memory):
    lanes = dut.data_width // 8
    run = DedupRun()
    sent = [False]
    rng_in, rng_out = random.Random(seed), random.Random(seed + 1)

    async def producer(ctx):
        for _ in range(settle):                         # the core clears its memory after reset
            await ctx.tick()
        cycle = settle
        for index, item in enumerate(items):
            if item is RESET:
                continue
            frame, time, errored = item
            frame_beats = beats(frame, lanes)
            cut = index + 1 < len(items) and items[index + 1] is RESET
            for n, (value, keep, last) in enumerate(frame_beats):
                while gap and rng_in.random() < gap:
                    await ctx.tick()
                    cycle += 1
                if cut and n == len(frame_beats) // 2:
                    ctx.set(dut.i.valid, 0)
                    ctx.set(dut.i.payload.user.error, 0)
                    for _ in range(2):
                        await ctx.tick()
                    ctx.set(dut_reset, 1)
                    # The edge that samples the reset is the third from here; a frame whose last beat left at
                    # the second is out before the reset.
                    run.resets.append(cycle + 3)
                    await ctx.tick()
                    ctx.set(dut_reset, 0)
                    for _ in range(settle):
                        await ctx.tick()
                    cycle += 3 + settle
                    break
                ctx.set(dut.i.payload.data, value)
                ctx.set(dut.i.payload.keep, keep)
                ctx.set(dut.i.payload.last, last)
                ctx.set(dut.i.payload.user.error, errored if last else 0)
                # the time counts on the first beat only: other beats carry noise
                ctx.set(dut.i.payload.user.time, time if n == 0 else rng_in.getrandbits(8))
                ctx.set(dut.i.valid, 1)
                if n == 0:
                    run.first_beat.append(cycle)
                while True:
                    _, _, ready = await ctx.tick().sample(dut.i.ready)
                    cycle += 1
                    if ready:
                        break
                if n == 0:
                    run.first_accept.append(cycle - 1)      # cycles before the edge that took it
                ctx.set(dut.i.valid, 0)
        sent[0] = True

    async def consumer(ctx):
        frame, cycle = bytearray(), 0
        async for _, _, valid, payload, in_reset in ctx.tick().sample(dut.o.valid, dut.o.payload, dut_reset):
            cycle += 1
            if in_reset:                                # a frame being sent when the reset came is cut short
                frame = bytearray()
                continue
            if valid and ctx.get(dut.o.ready):
                data, keep = payload.data, payload.keep
                if keep & (keep + 1):
                    raise Mismatch(f"output keep {keep:#x} is not packed from lane 0")
                frame += int(data).to_bytes(lanes, "little")[:bin(keep).count("1")]
                user = (int(payload.user.duplicate), int(payload.user.unchecked), int(payload.user.errored))
                if payload.last:
                    run.out.append((bytes(frame), user))
                    run.taken.append(cycle)
                    frame = bytearray()
                elif any(user):
                    raise Mismatch(f"output frame {len(run.out)}: tuser {user} on a beat that is not the last")
            ctx.set(dut.o.ready, not (stall and rng_out.random() < stall))
            if cycle >= max_cycles:
                break

    async def watchdog(ctx):
        cycle = 0
        while not sent[0] and cycle < max_cycles:
            await ctx.tick()
            cycle += 1
        quiet = 0                                       # then until the output has been idle a while
        while quiet < settle + 200 and cycle < max_cycles:
            _, _, valid = await ctx.tick().sample(dut.o.valid)
            cycle += 1
            quiet = 0 if valid else quiet + 1
        run.cycles = cycle
        run.counters = {name: ctx.get(getattr(dut, name)) for name in _counter_names(dut)}

    async def decisions(ctx):
        # The counters count one decision per cycle at most, in frame order: each step of ``frames`` is one
        # frame's, and the steps of ``unchecked`` and ``late`` with it say how it went (with ``count`` frames
        # show no flags, and a late frame's flag looks as an unchecked one's).
        cycle, last = 0, (0, 0, 0)
        late = getattr(dut, "late", None)
        async for _, _, in_reset in ctx.tick().sample(dut_reset):
            cycle += 1
            now = (ctx.get(dut.frames), ctx.get(dut.unchecked), 0 if late is None else ctx.get(late))
            if not in_reset and now[0] != last[0]:
                if now[0] != (last[0] + 1) & 0xFFFFFFFF:
                    raise Mismatch(f"cycle {cycle}: frames counted {now[0] - last[0]} at once")
                run.decided.append((cycle, now[1] != last[1] and now[2] == last[2], now[2] != last[2]))
            last = now

    full_writes = []

    async def info_room(ctx):
        # The frame info queue's write is not gated by its room: it must never find it full.
        async for _, _, w_en, w_rdy in ctx.tick().sample(dut._info.w_en, dut._info.w_rdy):
            if w_en and not w_rdy:
                full_writes.append(run.cycles)

    top = Module()
    top.domains.sync = domain = ClockDomain("sync")
    top.submodules.dut = dut
    sim = Simulator(top)
    dut_reset = domain.rst
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer, background=True)
    sim.add_testbench(info_room, background=True)
    sim.add_testbench(decisions, background=True)
    if memory is not None:
        sim.add_testbench(memory.server(dut), background=True)
    sim.add_testbench(watchdog)
    run_with_vcd(sim, vcd_path)
    if full_writes:
        raise Mismatch(f"{len(full_writes)} writes into the full frame info queue")
    return run


def score_frames(dut, frames, out, *, whole: bool = True, decided=None, changes=None) -> Dedup:
    """Score ``frames`` (``(index, (frame, time, errored))`` sent after a reset) against ``out`` (``(frame,
    (duplicate, unchecked, errored))`` taken after it), frame by frame; ``dut`` needs ``config``, ``spec``,
    ``action``, ``max_frame``, ``data_width`` and ``fcs`` (the model passes frames over the beat limit unchecked,
    as the DUT must). With ``whole`` False (a reset cut the run short) the outputs need only be a prefix of
    the model's. ``decided``: ``(unchecked, late)`` of each frame in order, as the DUT's counters said (which
    frames were late; with ``count``, which unchecked). ``changes`` maps a frame index to the run-time changes
    made before it, in order: ``("action", name)``, ``("clear",)``, ``("rekey", seed)`` or ``("window", span)``
    (:mod:`apbbf.model.registers`, ``CHANGE_FRAME``). Returns the model, for its counters.

    Raises
    ------
    Mismatch
        On the first difference.
    """
    model = Dedup(dut.config, dut.spec, dut.action, max_frame=dut.max_frame, data_width=dut.data_width,
                  fcs=dut.fcs)
    position = 0
    changes = changes or {}
    for n, (index, (frame, time, errored)) in enumerate(frames):
        for change in changes.get(index, ()):
            model.change(change)
        keyed = frame[:-4] if dut.fcs else frame
        # fail open is the DUT's to decide: a frame it flags unchecked goes to the model as unchecked, or as late
        # if its counters said so
        counted = decided[n] if decided is not None and n < len(decided) else (False, False)
        late = counted[1]
        if dut.action == "count":
            unchecked = counted[0]
        else:
            unchecked = (not late and position < len(out) and out[position][0] == frame
                         and bool(out[position][1][1]))
        duplicate, forward, mark = model.frame(keyed, time, errored=errored, unchecked=unchecked, late=late)
        if not forward:
            continue
        flags = ((0, 0, 0) if dut.action == "count"
                 else (int(mark), int((unchecked or late) and not errored), int(errored)))
        if position >= len(out):
            if whole:
                raise Mismatch(f"frame {index} ({len(frame)} bytes) never came out ({len(out)} frames did)")
            return model
        got = out[position]
        if got[0] != frame:
            raise Mismatch(f"output frame {position}: expected frame {index} ({len(frame)} bytes: "
                           f"{frame[:16].hex()}...), got {len(got[0])} bytes {got[0][:16].hex()}...")
        if got[1] != flags:
            raise Mismatch(f"frame {index}: flags (duplicate, unchecked, errored) {got[1]}, model {flags}")
        position += 1
    if position != len(out):
        raise Mismatch(f"{len(out) - position} frames more than the model forwards")
    return model


def _score(dut, items, run):
    """Compare the run with the model, part by part between resets; raise :class:`Mismatch` on the first
    difference."""
    if dut.timestamps == "counter":
        # The frame's time is the free-running counter's when its first beat is taken: ticks of tick_cycles
        # cycles since the start (runs with a counter have no reset marker).
        if RESET in items:
            raise ValueError("runs with timestamps='counter' cannot have a reset marker")
        mask = (1 << dut.config.time_width) - 1
        items = [(frame, (cycle // dut.tick_cycles) & mask, errored)
                 for (frame, _, errored), cycle in zip(items, run.first_accept)]
    parts, frames = [], []
    for index, item in enumerate(items):
        if item is RESET:
            parts.append(frames[:-1])                   # the frame before a reset is cut by it
            frames = []
        else:
            frames.append((index, item))
    parts.append(frames)
    bounds = [0, *run.resets, float("inf")]
    model = None
    for n, part in enumerate(parts):
        out = [o for o, taken in zip(run.out, run.taken) if bounds[n] <= taken < bounds[n + 1]]
        decided = [flags for cycle, *flags in run.decided if bounds[n] <= cycle < bounds[n + 1]]
        model = score_frames(dut, part, out, whole=n == len(parts) - 1, decided=decided)
    counters = {name: value for name, value in model.counters.as_dict().items() if name in _counter_names(dut)}
    if run.counters != counters:
        raise Mismatch(f"counters {run.counters}, model {counters}")


def simulate_dedup(make_dut, items, *, seed: int = 0, gap: float = 0.0, stall: float = 0.0,
                   name: str = "dedup", max_cycles: int | None = None, memory: dict | None = None) -> DedupRun:
    """Run ``items`` (``(frame, time, errored)`` triples and :data:`RESET` markers) through a fresh
    ``make_dut()``, score the output against the model and return what was observed.

    Parameters
    ----------
    make_dut : callable
        Returns a new :class:`~apbbf.hdl.packet.dedup.PacketDedup` (a failing run is repeated on a new one).
    gap : float
        Probability of an idle cycle before each input beat.
    stall : float
        Probability that ``o.ready`` is low in a cycle.
    memory : dict or None
        With the memory scan: the options of the :class:`~apbbf.sim.memory.MemoryModel` that serves
        ``dut.memory`` (seeded from ``seed``; ``{}``: its defaults).

    Raises
    ------
    Mismatch
        On the first difference; the message names the frame, the seed and the VCD.
    apbbf.sim.memory.PortError
        On a broken rule of the memory port.
    """
    dut = make_dut()
    if not isinstance(dut, PacketDedup):
        raise TypeError(f"make_dut must return a PacketDedup, not {dut!r}")
    lanes = dut.data_width // 8
    total_beats = sum(len(beats(item[0], lanes)) for item in items if item is not RESET)
    settle = dut.config.segment_blocks + 8
    if dut.scan == "memory":
        # The memory core clears every word after reset: a write each, at the memory's pace.
        settle = 3 * dut.config.memory_blocks + 200
        memory = {} if memory is None else memory
    elif memory is not None:
        raise ValueError("memory goes with a de-duplicator of the memory scan")
    if max_cycles is None:
        max_cycles = int((total_beats + 40 * len(items)) / max(0.05, (1 - gap) * (1 - stall)) * 2) + 4000
        max_cycles += settle * (1 + sum(1 for item in items if item is RESET))

    def memory_model():
        return None if memory is None else MemoryModel(dut.config, seed=seed + 2, **memory)

    kwargs = dict(seed=seed, gap=gap, stall=stall, max_cycles=max_cycles, settle=settle)
    try:
        run = _simulate_once(dut, items, vcd_path=None, memory=memory_model(), **kwargs)
        _score(dut, items, run)
        return run
    except Mismatch as error:
        vcd_path = os.path.join("build", "vcd", f"{name}.vcd")
        try:
            _simulate_once(make_dut(), items, vcd_path=vcd_path, memory=memory_model(), **kwargs)
        except Mismatch:
            pass
        raise Mismatch(f"{error} (seed {seed}; waveform in {vcd_path})") from None
