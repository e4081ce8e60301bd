"""cocotb benches of the exported lanes filter (``apbbf_lanes_axis``), with cocotbext-axi beats.

One small ``TB`` class: an ``AxiStreamSource`` on ``s_axis_cmd`` (each command beat one transfer, its slots'
``tkeep`` from :class:`~apbbf.hdl.export.axis_lanes.LanesCommandFormat`; idle gaps from a pause generator), an
``AxiStreamSink`` on ``m_axis_rsp`` (backpressure from another), the clock and the reset. Every response slot is
scored in order against :class:`apbbf.model.lanes.Lanes` (:func:`apbbf.sim.lanes.lanes_expected`), and each
lane's counters at the end. Each idle/backpressure combination is its own test::

    random_beats/idle_inserter={None,pause30x3}/backpressure_inserter={None,pause40x3}   (2 tests)
    one_lane_beats        every key of a beat in one lane, a key repeated within a beat
    reset_under_traffic   beats in flight at a reset get no response; the filter is empty afterwards

The design's parameters come in :data:`PARAMS_ENV` (JSON: the Config's fields, the lanes and the options),
written by :func:`apbbf.sim.cocotb.runner.run_lanes`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
from types import SimpleNamespace

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from ...hdl.export.axis_lanes import LanesCommandFormat, LanesResponseFormat
from ...model.config import Config
from ...model.filters import Op
from ...model.lanes import LaneSpec
from ..harness import RESET, Mismatch
from ..lanes import lanes_expected, random_beats
from ..reference import describe
from .testbench import Pause, _quiet
from .tests import _pause, _seed

PARAMS_ENV = "APBBF_LANES_PARAMS"
CLOCK_PERIOD_NS = 10
OPS = (Op.QUERY, Op.INSERT, Op.TEST_AND_INSERT)


def params_to_env(config: Config, lanes: int, options: dict) -> str:
    """The JSON text of :data:`PARAMS_ENV`."""
    return json.dumps({"config": dataclasses.asdict(config), "lanes": lanes, "options": options})


def _params():
    text = os.environ.get(PARAMS_ENV)
    if not text:
        raise ValueError(f"{PARAMS_ENV} is not set: run the benches through apbbf.sim.cocotb.runner.run_lanes")
    p = json.loads(text)
    slots = p["options"].get("slots") or p["lanes"]
    return SimpleNamespace(config=Config(**p["config"]), lanes=p["lanes"], slots=slots)


class TB:
    """Clock, reset, source and sink; :meth:`run` sends beats and scores every response slot."""

    def __init__(self, dut, seed: int):
        self.dut = dut
        p = _params()
        self.config, self.lanes, self.slots = p.config, p.lanes, p.slots
        self.commands = LanesCommandFormat(self.config, self.slots)
        self.responses = LanesResponseFormat(self.slots)
        self.rng = random.Random(seed)
        self.seed = seed
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_cmd"), dut.aclk, dut.aresetn,
                                      reset_active_level=False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_rsp"), dut.aclk, dut.aresetn,
                                  reset_active_level=False)
        _quiet(self.source)
        _quiet(self.sink)
        self.idle, self.backpressure = Pause(self.rng), Pause(self.rng)
        self.source.set_pause_generator(iter(self.idle))
        self.sink.set_pause_generator(iter(self.backpressure))
        Clock(dut.aclk, CLOCK_PERIOD_NS, unit="ns").start()

    @classmethod
    async def start(cls, dut, offset: int, idle=None, backpressure=None) -> "TB":
        seed = _seed(offset)
        tb = cls(dut, seed)
        cocotb.log.info("config %s, %d lanes, %d slots, idle %s, backpressure %s, bench seed %d", tb.config,
                        tb.lanes, tb.slots, idle, backpressure, seed)
        if idle:
            tb.idle.set(idle.probability, idle.burst)
        if backpressure:
            tb.backpressure.set(backpressure.probability, backpressure.burst)
        await tb.reset()
        return tb

    async def reset(self) -> None:
        """Reset, then wait until every lane has cleared its memory."""
        self.dut.aresetn.value = 0
        await ClockCycles(self.dut.aclk, 3)
        self.source.clear()
        self.sink.clear()
        self.dut.aresetn.value = 1
        await ClockCycles(self.dut.aclk, self.config.segment_blocks + 4)

    def frame(self, beat) -> AxiStreamFrame:
        tdata, tkeep = self.commands.pack(beat)
        size = self.commands.keep_width
        return AxiStreamFrame(tdata.to_bytes(size, "little"), [tkeep >> i & 1 for i in range(size)])

    async def run(self, beats) -> list:
        """Send ``beats`` (no :data:`~apbbf.sim.harness.RESET` in them), take a response beat for each and
        score every slot against the model; returns the hits per beat."""
        answers, model = lanes_expected(self.config, self.lanes, beats)
        for beat in beats:
            await self.source.send(self.frame(beat))
        hits = []
        for index, beat in enumerate(beats):
            frame = await self.sink.recv(compact=False)
            tdata = int.from_bytes(bytes(frame.tdata), "little")
            tkeep = sum(bit << i for i, bit in enumerate(frame.tkeep))
            got = self.responses.unpack(tdata, tkeep)
            for s, (slot, answer) in enumerate(zip(beat, got)):
                if slot is None:
                    if answer is not None:
                        raise Mismatch(f"beat {index} slot {s}: empty, but its response is kept; seed {self.seed}")
                    if tdata >> (8 * s) & 0xFF:
                        raise Mismatch(f"beat {index} slot {s}: empty, but its byte is "
                                       f"{tdata >> (8 * s) & 0xFF:#04x}, not zero; seed {self.seed}")
                    continue
                want = answers[index][s]
                if answer is None or answer[0] != int(slot[0]) or answer[1] != want:
                    raise Mismatch(f"beat {index} slot {s}: {describe(slot)}: model says "
                                   f"{'hit' if want else 'miss'}, core says {answer}; seed {self.seed}")
            hits.append([None if a is None else a[1] for a in got])
        await ClockCycles(self.dut.aclk, 4)
        assert self.sink.empty(), f"response beats beyond the {len(beats)} commanded; seed {self.seed}"
        self.check_counters(model)
        return hits

    def check_counters(self, model) -> None:
        """Each lane's counters on the ports equal the model's lanes'."""
        for name in model.counters[0]:
            value = int(getattr(self.dut, name).value)
            got = [value >> (32 * lane) & 0xFFFF_FFFF for lane in range(self.lanes)]
            want = [counters[name] for counters in model.counters]
            assert got == want, f"{name}: core {got}, model {want}; seed {self.seed}"


@cocotb.test()
@cocotb.parametrize(idle_inserter=[None, _pause(0.3, 3)], backpressure_inserter=[None, _pause(0.4, 3)])
async def random_beats_test(dut, idle_inserter, backpressure_inserter):
    """Random keys with duplicates, some slots empty, every response slot scored."""
    tb = await TB.start(dut, 1, idle_inserter, backpressure_inserter)
    extra = {"gaps": 0.01, "rate": float(tb.lanes)} if tb.config.timed else {}
    beats = random_beats(tb.config, 60 * tb.slots, tb.slots, seed=tb.seed, empty=0.1, **extra)
    assert RESET not in beats
    hits = await tb.run(beats)
    assert any(any(h) for h in hits), f"a stream with duplicates never hit; seed {tb.seed}"


@cocotb.test()
async def one_lane_beats(dut):
    """Every key of a beat in one lane, the same key again in a later slot: that lane's commands queue and
    must be answered in slot order."""
    tb = await TB.start(dut, 2)
    spec = LaneSpec(tb.config, tb.lanes)
    pools = [[] for _ in range(tb.lanes)]
    while min(len(pool) for pool in pools) < 20:
        key = tb.rng.getrandbits(tb.config.key_width)
        pools[spec.lane(key)].append(key)
    beats, now = [], 0
    for _ in range(40):
        pool = pools[tb.rng.randrange(tb.lanes)]
        beat = []
        for _ in range(tb.slots):
            key = beat[-1][1] if beat and tb.rng.random() < 0.5 else tb.rng.choice(pool)
            command = (tb.rng.choice(OPS), key)
            beat.append(command + ((now,) if tb.config.timed else ()))
        now += 1
        beats.append(beat)
    await tb.run(beats)


@cocotb.test()
async def reset_under_traffic(dut):
    """A reset while beats are in flight: no response for them, and the filter is empty afterwards (a key
    inserted before the reset is not found after it)."""
    tb = await TB.start(dut, 3)
    timed = tb.config.timed
    before = [[(Op.INSERT, tb.rng.getrandbits(tb.config.key_width)) + ((0,) if timed else ())
               for _ in range(tb.slots)] for _ in range(20)]
    for beat in before:
        await tb.source.send(tb.frame(beat))
    await ClockCycles(tb.dut.aclk, 5)
    await tb.reset()
    await RisingEdge(tb.dut.aclk)
    after = [[(Op.QUERY, command[1]) + ((0,) if timed else ()) for command in beat] for beat in before]
    hits = await tb.run(after)
    assert not any(any(h) for h in hits), f"a key inserted before the reset was found after it; seed {tb.seed}"
