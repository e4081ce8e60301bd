# amaranth: UnusedElaboratable=no
"""The lanes filter's AXI4-Stream wrapper (hdl/export/axis_lanes.py) in Amaranth's simulator, as its ports and
docs/lanes.md describe it: ``s_axis_cmd_tready`` high at the first edge after reset, the beats given then queued and
answered as the model answers them, and the byte of every response slot without a command zero."""

import random

import pytest
from amaranth import ClockDomain, ClockSignal, Elaboratable, Module, Signal
from amaranth.sim import Simulator

from apbbf.hdl.export.axis_lanes import AXIStreamLanes
from apbbf.model import Config
from apbbf.sim.lanes import lanes_expected, random_beats

COUNT = Config(2, 3, segment_blocks=4, seed=3)
TIMED = Config(2, 3, segment_blocks=4, span=100, time_width=12, extra_segments=2, seed=4)


class _Clocked(Elaboratable):
    """The wrapper clocked by a clock of the testbench (``outer``: the wrapper's own domain is ``sync``), its
    reset a signal of the testbench."""

    def __init__(self, dut):
        self.dut, self.resetn = dut, Signal()

    def elaborate(self, platform):
        m = Module()
        m.domains.outer = ClockDomain()
        m.submodules.dut = self.dut
        m.d.comb += [self.dut.aclk.eq(ClockSignal("outer")), self.dut.aresetn.eq(self.resetn)]
        return m


@pytest.mark.parametrize("config", [COUNT, TIMED], ids=["count", "time"])
def test_from_reset_and_empty_slots(config):
    seed = 61 + config.timed
    print("seed", seed)
    lanes = 2
    dut = AXIStreamLanes(config, lanes)
    top = _Clocked(dut)
    extra = {"gaps": 0.01, "rate": float(lanes)} if config.timed else {}
    beats = random_beats(config, 300, dut.core.slots, seed=seed, empty=0.3, **extra)
    answers, _ = lanes_expected(config, lanes, beats)
    fmt, rng = dut.command_format, random.Random(seed)
    got, first_ready = [], []

    async def source(ctx):
        ctx.set(top.resetn, 0)
        for _ in range(3):
            await ctx.tick("outer")
        ctx.set(top.resetn, 1)
        for index, beat in enumerate(beats):
            tdata, tkeep = fmt.pack(beat)
            ctx.set(dut.s_axis_cmd_tdata, tdata)
            ctx.set(dut.s_axis_cmd_tkeep, tkeep)
            ctx.set(dut.s_axis_cmd_tvalid, 1)
            while True:
                *_, ready = await ctx.tick("outer").sample(dut.s_axis_cmd_tready)
                if index == 0 and not first_ready:
                    first_ready.append(bool(ready))
                if ready:
                    break
            ctx.set(dut.s_axis_cmd_tvalid, 0)
            while rng.random() < 0.1:
                await ctx.tick("outer")

    async def sink(ctx):
        while len(got) < len(beats):
            ctx.set(dut.m_axis_rsp_tready, rng.random() >= 0.2)
            *_, valid, ready, tdata, tkeep = await ctx.tick("outer").sample(
                dut.m_axis_rsp_tvalid, dut.m_axis_rsp_tready, dut.m_axis_rsp_tdata, dut.m_axis_rsp_tkeep)
            if valid and ready:
                got.append((tdata, tkeep))

    sim = Simulator(top)
    sim.add_clock(1e-8, domain="outer")
    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run()

    assert first_ready == [True], "s_axis_cmd_tready low at the first edge after reset"
    empty_slots = stale = 0
    for index, (beat, (tdata, tkeep)) in enumerate(zip(beats, got)):
        for s, slot in enumerate(beat):
            byte = tdata >> (8 * s) & 0xFF
            if slot is None:
                empty_slots += 1
                assert not tkeep >> s & 1 and byte == 0, f"beat {index} slot {s}: empty, response {byte:#04x}"
                continue
            assert tkeep >> s & 1, f"beat {index} slot {s}: a command without its response"
            want = int(slot[0]) | answers[index][s] << 2
            assert byte == want, f"beat {index} slot {s}: {byte:#04x}, the model's {want:#04x}"
            stale += answers[index][s]
    assert empty_slots > 50 and stale > 20, (empty_slots, stale)      # empty slots after slots that hit
