"""cocotb benches of the exported packet de-duplicator (``apbbf_dedup_axis``), with cocotbext-axi frames.

One small ``TB`` class: an ``AxiStreamSource`` on ``s_axis`` (idle gaps from a pause generator), an
``AxiStreamSink`` on ``m_axis`` (backpressure from another), the clock and the reset. Frames come from
:mod:`apbbf.sim.frames` (scapy); every frame out, its bytes and its ``tuser`` flags, is scored in order against
:class:`apbbf.model.dedup.Dedup` (:func:`apbbf.sim.dedup.score_frames`), and the counters at the end. Each
idle/backpressure combination is its own test.

The design's parameters come in :data:`PARAMS_ENV` (JSON: the Config's fields, the key specification's text and
the PacketDedup options), written by :func:`apbbf.sim.cocotb.runner.run_dedup`.
"""

from __future__ import annotations

import json
import os
import random
from types import SimpleNamespace

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from ...model.config import Config
from ...model.packet import KeySpec, frame_key
from ..dedup import Mismatch, score_frames
from ..frames import copy_of, pad, packet, traffic
from .testbench import Pause, _quiet
from .tests import _pause

PARAMS_ENV = "APBBF_DEDUP_PARAMS"
CLOCK_PERIOD_NS = 10
COUNTERS = ("frames", "duplicates", "dropped", "unchecked", "errored")


def params_to_env(config: Config, spec: KeySpec, options: dict) -> str:
    """The JSON text of :data:`PARAMS_ENV`."""
    import dataclasses
    return json.dumps({"config": dataclasses.asdict(config), "spec": str(spec), "options": options})


def _params():
    text = os.environ.get(PARAMS_ENV)
    if not text:
        raise ValueError(f"{PARAMS_ENV} is not set: run the benches through apbbf.sim.cocotb.runner.run_dedup")
    p = json.loads(text)
    options = {"data_width": 512, "action": "drop", "fcs": False, "timestamps": "tuser", "max_frame": 9600,
               **p["options"]}
    return SimpleNamespace(config=Config(**p["config"]), spec=KeySpec.parse(p["spec"]), **options)


class TB:
    """Clock, reset, source, sink and the frames sent since the last reset."""

    def __init__(self, dut, seed: int):
        self.dut = dut
        self.params = _params()
        self.rng = random.Random(seed)
        self.seed = seed
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk, dut.aresetn,
                                      reset_active_level=False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk, dut.aresetn,
                                  reset_active_level=False)
        _quiet(self.source)
        _quiet(self.sink)
        self.idle, self.backpressure = Pause(self.rng), Pause(self.rng)
        self.source.set_pause_generator(iter(self.idle))
        self.sink.set_pause_generator(iter(self.backpressure))
        self.sent = []                                   # (index, (frame, time, errored)) since the reset
        self.out = []                                    # (frame, flags) since the reset
        Clock(dut.aclk, CLOCK_PERIOD_NS, unit="ns").start()

    def set_inserters(self, idle, backpressure):
        if idle:
            self.idle.set(idle.probability, idle.burst)
        if backpressure:
            self.backpressure.set(backpressure.probability, backpressure.burst)

    async def reset(self):
        """Reset, then wait until the filter has cleared its memory."""
        self.dut.aresetn.value = 0
        await ClockCycles(self.dut.aclk, 4)
        self.dut.aresetn.value = 1
        await ClockCycles(self.dut.aclk, self.params.config.segment_blocks + 8)
        self.sent, self.out = [], []
        self.sink.clear()

    def frame(self, data: bytes, time: int, errored: bool) -> AxiStreamFrame:
        """The source frame: ``tuser`` bit 0 (last beat) errored, bits above (first beat) the time."""
        lanes = self.params.data_width // 8
        n = max(1, len(data))
        user = [0] * n
        for i in range(min(lanes, n)):
            user[i] |= (time & ((1 << self.params.config.time_width) - 1)) << 1
        for i in range((n - 1) // lanes * lanes, n):
            user[i] |= int(errored)
        return AxiStreamFrame(data, tuser=user)

    def send(self, items):
        for item in items:
            self.sent.append((len(self.sent), item))
            self.source.send_nowait(self.frame(*item))

    async def drain(self, quiet: int = 300):
        """Wait until everything sent is through and the output has been idle ``quiet`` cycles; collect it."""
        await self.source.wait()
        idle = 0
        while idle < quiet:
            await RisingEdge(self.dut.aclk)
            self._collect()
            idle = 0 if (self.dut.m_axis_tvalid.value or not self.sink.empty()) else idle + 1
        self._collect()

    def _collect(self):
        while not self.sink.empty():
            frame = self.sink.recv_nowait()
            data = bytes(frame.tdata)
            user = frame.tuser if isinstance(frame.tuser, list) else [frame.tuser] * len(data)
            lanes = self.params.data_width // 8
            last = (len(data) - 1) // lanes * lanes
            if any(user[:last]):
                raise Mismatch(f"output frame {len(self.out)}: tuser set before the last beat")
            flags = user[-1] if user else 0
            self.out.append((data, (flags & 1, flags >> 1 & 1, flags >> 2 & 1)))

    def score(self):
        """Score what came out against the model, and the counters."""
        try:
            model = score_frames(self.params, self.sent, self.out)
            counters = {name: int(getattr(self.dut, name).value) for name in COUNTERS}
            want = {name: getattr(model.counters, name) for name in COUNTERS}
            if counters != want:
                raise Mismatch(f"counters {counters}, model {want}")
        except Mismatch as error:
            raise Mismatch(f"{error} (bench seed {self.seed}; waveform {os.environ.get('APBBF_WAVES')})") from None
        return model


def _seed(name: str) -> int:
    return (cocotb.RANDOM_SEED * 1_000_003 + sum(map(ord, name))) & 0xFFFFFFFF


@cocotb.test()
@cocotb.parametrize((("idle", "backpressure"), [(None, None), (_pause(0.3, 3), _pause(0.4, 3))]))
async def random_traffic(dut, idle, backpressure):
    """Packets and copies of every kind, some outside the window, some errored: scored frame by frame."""
    tb = TB(dut, _seed("random_traffic"))
    tb.set_inserters(idle, backpressure)
    await tb.reset()
    tb.send(traffic(50, tb.seed % 1000))
    await tb.drain()
    model = tb.score()
    assert model.counters.duplicates > 5 and model.counters.unchecked == 0, model.counters


@cocotb.test()
async def masked_copies(dut):
    """Copies that differ in TTL, DSCP or a VLAN tag: duplicates under l3l4 (and recipes that leave those bytes
    out), not under frame."""
    tb = TB(dut, _seed("masked_copies"))
    await tb.reset()
    rng = random.Random(tb.seed)
    p = packet(rng, tags=1, v6=False, size=40)
    frames = [pad(bytes(p)), *(copy_of(p, kind, rng) for kind in ("exact", "ttl", "dscp", "vlan"))]
    tb.send((frame, 10 + t, False) for t, frame in enumerate(frames))
    await tb.drain()
    model = tb.score()
    expected = len(frames) - len({frame_key(frame, tb.params.spec) for frame in frames})   # 4 under l3l4, 1 under frame
    assert model.counters.duplicates == expected, model.counters


@cocotb.test()
async def every_length(dut):
    """Runts of 1 to 13 bytes and lengths covering every keep pattern of the last beat, each sent twice."""
    tb = TB(dut, _seed("every_length"))
    await tb.reset()
    rng = random.Random(tb.seed)
    lanes = tb.params.data_width // 8
    items, time = [], 0
    for length in [*range(1, 14), *range(60, 61 + lanes)]:
        frame = pad(bytes(packet(rng, tags=0, size=200)))[:length] if length >= 60 else rng.randbytes(length)
        items += [(frame, time, False), (frame, time + 1, False)]
        time += 3
    tb.send(items)
    await tb.drain()
    model = tb.score()
    assert model.counters.duplicates == len(items) // 2, model.counters


@cocotb.test()
async def back_to_back_minimum_frames(dut):
    """60-byte frames with no gap: ``s_axis_tready`` never drops and nothing is unchecked."""
    tb = TB(dut, _seed("back_to_back"))
    await tb.reset()
    rng = random.Random(tb.seed)
    originals = [pad(bytes(packet(rng, tags=0, v6=False, size=0))) for _ in range(40)]
    tb.send((rng.choice(originals[:n + 1]), n // 4, False) for n in range(100))
    stalled = 0
    while not tb.source.empty() or tb.source.active:
        await RisingEdge(dut.aclk)
        stalled += int(dut.s_axis_tvalid.value and not dut.s_axis_tready.value)
    await tb.drain()
    model = tb.score()
    assert stalled == 0, f"s_axis_tready was low for {stalled} cycles"
    assert model.counters.unchecked == 0 and model.counters.duplicates > 20, model.counters


@cocotb.test()
async def jumbo_frames(dut):
    """A jumbo frame (9000 bytes at 256 bits and wider, 4000 below: simulation time), a copy dropped."""
    rng = random.Random(_seed("jumbo"))
    tb = TB(dut, _seed("jumbo"))
    await tb.reset()
    jumbo = pad(bytes(packet(rng, tags=1, size=4000 if tb.params.data_width < 256 else 8950)))
    tb.send([(jumbo, 0, False), (pad(bytes(packet(rng))), 1, False), (jumbo, 2, False)])
    await tb.drain()
    model = tb.score()
    assert model.counters.duplicates == 1


@cocotb.test()
async def reset_mid_frame(dut):
    """A reset in the middle of a frame: what was in flight is lost, the design then scores clean."""
    tb = TB(dut, _seed("reset_mid_frame"))
    await tb.reset()
    rng = random.Random(tb.seed)
    tb.send([(pad(bytes(packet(rng, size=1400))), 0, False)])
    await ClockCycles(dut.aclk, 6)
    dut.aresetn.value = 0
    await ClockCycles(dut.aclk, 3)
    dut.aresetn.value = 1
    await Timer(1, "ns")
    await ClockCycles(dut.aclk, tb.params.config.segment_blocks + 8)
    tb.sent, tb.out = [], []
    tb.sink.clear()
    tb.send(traffic(20, tb.seed % 1000))
    await tb.drain()
    model = tb.score()
    assert model.counters.frames == 20, model.counters
