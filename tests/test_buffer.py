# amaranth: UnusedElaboratable=no
"""The circular buffer (hdl/core/buffer.py) against the golden models' base index, roles, stale flags and retirements:
one command entering while the one before it is decided (as the parallel scan drives it), or with idle cycles
between them (as the FSM scan does); for a time-bounded window each command is staged first, in the cycle the one
ahead of it enters or later, and waits staged across decisions in the second case."""

import random
import zlib

import pytest

from apbbf.hdl.core.buffer import STAGE_TIME_COPIES, CircularBuffer
from apbbf.model import APBBF, Config, Op
from apbbf.model.timewindow import TimedAPBBF
from .streams import run_simulation


def _bits(positions):
    return sum(1 << p for p in set(positions))


class CountReference:
    """What the buffer must say about each command of a window bounded by count (:class:`APBBF`)."""

    def __init__(self, config):
        self.config = config
        self.model = APBBF(config)

    def before(self, op, now):
        c, model = self.config, self.model
        P = c.physical_segments
        shifting = op != Op.QUERY and model.n % c.generation == 0
        base_after = (model.base - 1) % P if shifting else model.base
        return dict(base=model.base, fresh=_bits(model.pos(i) for i in range(c.segments)),
                    shift=shifting, restart=False,
                    targets=_bits((base_after + i) % P for i in range(c.k)) if op != Op.QUERY else 0,
                    retire=_bits([model.pos(c.segments - 1)]) if shifting else 0)

    def decide(self, op, now):
        if op != Op.QUERY:
            self.model.insert(random.getrandbits(self.config.key_width))

    def counters(self):
        return dict(inserts=self.model.n, shifts=self.model.shifts)


class TimedReference(CountReference):
    """The same for a time-bounded window (:class:`TimedAPBBF`)."""

    def __init__(self, config):
        self.config = config
        self.model = TimedAPBBF(config)

    def before(self, op, now):
        c, model = self.config, self.model
        model._expire(now)
        fresh = _bits(p for p in range(c.physical_segments) if model._live[p] and not model._stale[p])
        base, live = model.base, model._live.copy()
        restarts, shifts = model.restarts, model.shifts
        saved = (model._bits.copy(), model._stamps.copy(), model._stale.copy(), model._live.copy(), model.base,
                 model._fill, model._started, model._t_shift, model._t_last, model.shifts, model.overflows,
                 model.expired, model.restarts)
        restart = shift = False
        targets = retire = 0
        if op != Op.QUERY:
            model._before_insert(now)
            restart, shift = model.restarts > restarts, model.shifts > shifts
            targets = _bits(model.pos(i) for i in range(c.k))
            if shift and not restart:
                retire = _bits(p for p in range(c.physical_segments) if live[p] and not model._live[p])
        (model._bits, model._stamps, model._stale, model._live, model.base, model._fill, model._started,
         model._t_shift, model._t_last, model.shifts, model.overflows, model.expired, model.restarts) = saved
        return dict(base=base, fresh=fresh, shift=shift, restart=restart, targets=targets, retire=retire)

    def decide(self, op, now):
        self.model.command(op, random.getrandbits(self.config.key_width), now)

    def counters(self):
        m = self.model
        return dict(inserts=m.n, shifts=m.shifts, overflows=m.overflows, expired=m.expired)


CONFIGS = {
    "count-k2l3": Config(2, 3, segment_blocks=4),
    "count-k3l8": Config(3, 8, segment_blocks=2),
    "count-g1": Config(1, 1, block_bits=8, block_hashes=4, segment_blocks=1),
    "timed-k2l3": Config(2, 3, segment_blocks=4, span=60, time_width=10, extra_segments=2),
    "timed-k3l4-w8": Config(3, 4, segment_blocks=2, span=40, time_width=8),
}


@pytest.mark.parametrize("pipelined", [True, False], ids=["pipelined", "gaps"])
@pytest.mark.parametrize("name,lookahead", [
    pytest.param(name, lookahead, id=name + ("" if lookahead else "-as-is"))
    for name in CONFIGS for lookahead in (True, False)])
def test_buffer_follows_the_model(name, pipelined, lookahead):
    """Every output the model defines, every cycle a command is in the buffer; for a time-bounded window with
    ``lookahead`` (its restart and shift registered at entry) and without (a command decided in its second cycle
    at the earliest, its outputs checked from then on)."""
    config = CONFIGS[name]
    dut = CircularBuffer(config, lookahead=lookahead)
    reference = (TimedReference if config.timed else CountReference)(config)
    seed = zlib.crc32(name.encode()) % 1000 + pipelined     # not hash(): str hashes differ between processes
    print(f"seed {seed}")
    rng = random.Random(seed)
    mask = (1 << config.time_width) - 1
    commands = []
    now = rng.randrange(mask + 1)
    for _ in range(40 * config.physical_segments):
        roll = rng.random()
        if config.timed and roll < 0.03:
            now += rng.randrange(config.span // 2, 2 * config.span)        # gaps: expiry and restarts
        elif roll < 0.5:
            now += rng.randrange(4)
        commands.append((rng.choice([Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT]), now & mask))

    async def bench(ctx):
        P = config.physical_segments
        dirty = {}                                      # position -> cycles until its scrub is done
        index, staged, entered, waited = 0, None, None, 0
        first = False                                   # the entered command's first cycle in the buffer
        while index < len(commands) or staged is not None or entered is not None:
            decide = False
            # Without the lookahead a command's outputs hold from its second cycle: it is decided then at the
            # earliest (the parallel scan at pace 2).
            if entered is not None and not (first and not lookahead):
                want = reference.before(*entered)
                got = {field: ctx.get(getattr(dut, field)) for field in want}
                assert got == want, f"command {entered}: buffer {got}, model {want}"
                below = (want["base"] - 1) % P
                # Without the lookahead a position stays dirty a cycle longer (its ``left`` reads -1 then): a
                # command is checked from its second cycle, so the cycle after a shift, which is exact, is not.
                wait = want["shift"] and not want["restart"] and dirty.get(below, -2) >= (0 if lookahead else -1)
                assert ctx.get(dut.wait) == wait, f"command {entered}: wait {ctx.get(dut.wait)}, want {wait}"
                decide = not wait
                waited += wait
            # A command is staged (a time-bounded window compares its time then) at least a cycle before it
            # enters: while the staged slot is empty, or in the cycle its command enters.
            if pipelined:
                enter = staged is not None and (entered is None or decide)
                stage = index < len(commands) and (staged is None or enter)
            else:
                enter = staged is not None and entered is None and rng.random() < 0.6
                stage = index < len(commands) and (staged is None or enter) and rng.random() < 0.7
            if enter:
                ctx.set(dut.enter_op, staged[0])
            if stage and config.timed:
                for copy in range(STAGE_TIME_COPIES):       # the time, its complement in odd copies
                    ctx.set(dut.stage_time[copy], commands[index][1] ^ (((1 << config.time_width) - 1) * (copy & 1)))
            ctx.set(dut.enter, enter)
            ctx.set(dut.enter_held, enter and not decide)     # what enter is when no command is decided
            if config.timed:
                ctx.set(dut.stage, stage)
            ctx.set(dut.decide, decide)
            ctx.set(dut.cleaned_next, _bits(p for p, left in dirty.items() if left == 1))
            counted = reference.counters()             # the counters count a cycle after each decision
            await ctx.tick()
            got = {field: ctx.get(getattr(dut, field)) for field in counted}
            assert got == counted, f"before command {index}: counters {got}, model {counted}"
            dirty = {p: left - 1 for p, left in dirty.items() if left > -1}
            if decide:
                if want["restart"]:
                    dirty = {}
                for p in range(P):
                    if want["retire"] >> p & 1:
                        dirty[p] = rng.randrange(1, 8 * config.generation + 4)
                reference.decide(*entered)
                entered = None
            first = enter
            if enter:
                entered, staged = staged, None
            if stage:
                staged = commands[index]
                index += 1
        assert reference.model.shifts > P
        assert waited or config.extra_segments, "no shift had to wait for its segment: the test covers no wait"

    run_simulation(dut, bench)
