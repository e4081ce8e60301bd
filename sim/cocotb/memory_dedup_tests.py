"""cocotb benches of the exported packet de-duplicator with its segments behind an AXI4 master (``apbbf export
--dedup --memory axi``): cocotbext-axi frames in and out as :mod:`~apbbf.sim.cocotb.dedup_tests` sends them,
cocotbext-axi's ``AxiRam`` as the memory with every channel paused at random, and the AXI rules checked on every
edge (:class:`~apbbf.sim.cocotb.memory_tests.AxiChecker`).

Every frame out, its bytes and its ``tuser`` flags, is scored in order against :class:`apbbf.model.dedup.Dedup`
(:func:`apbbf.sim.dedup.score_frames`), and the counters at the end. Which frames were late (their answer past the
deadline: passed unchecked, their keys inserted) the bench reads from the ``frames``, ``unchecked`` and ``late``
counters on every edge: they count one decision per cycle at most, in frame order.

Run them through :func:`apbbf.sim.cocotb.runner.run_dedup` with ``test_module`` :data:`MODULE`.
"""

from __future__ import annotations

import os
import random
import warnings
from types import SimpleNamespace

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiRam

from ..dedup import Mismatch, score_frames
from ..frames import copy_of, pad, packet, traffic
from .dedup_tests import TB, _seed
from .memory_tests import CHANNELS, AxiChecker
from .testbench import Pause, _quiet

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi(\.|$)")

MODULE = "apbbf.sim.cocotb.memory_dedup_tests"
COUNTERS = ("frames", "duplicates", "dropped", "unchecked", "errored", "late")
EVERY = dict(aw=(0.3, 2), w=(0.3, 2), b=(0.4, 3), ar=(0.3, 2), r=(0.4, 3))


class MemoryDedupTB(TB):
    """:class:`~apbbf.sim.cocotb.dedup_tests.TB` with the ``AxiRam``, its pauses, the AXI checker and the
    decisions read from the counters."""

    def __init__(self, dut, seed: int):
        super().__init__(dut, seed)
        from ...hdl.export.axi_memory import memory_bytes
        p, c = self.params, self.params.config
        self.axi = SimpleNamespace(config=c, data_width=getattr(p, "axi_data_width", 64),
                                   base=getattr(p, "axi_base", 0),
                                   max_outstanding=(getattr(p, "max_outstanding", None)
                                                    or getattr(p, "memory_depth", 8) * c.physical_segments),
                                   bytes=memory_bytes(c))
        size = 1 << (self.axi.base + self.axi.bytes + 4096 - 1).bit_length()
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.aclk, dut.aresetn, reset_active_level=False,
                          size=size)
        for interface in (self.ram.write_if, self.ram.read_if):
            _quiet(interface)
        self.ram.write(0, random.Random(seed + 1).randbytes(size))      # garbage, as a DRAM's at power-up
        self.pauses = {name: Pause(random.Random(seed + 2 + n)) for n, name in enumerate(CHANNELS)}
        for name, pause in self.pauses.items():
            interface = self.ram.write_if if name in ("aw", "w", "b") else self.ram.read_if
            getattr(interface, f"{name}_channel").set_pause_generator(iter(pause))
        self.checker = AxiChecker(dut, self.axi)
        self.decided = []                                # (unchecked, late) of each frame since the reset
        cocotb.start_soon(self._decisions())

    def set_pauses(self, **settings) -> None:
        """``channel=(probability, burst)`` for each AXI channel named; the others unpaused."""
        for name in CHANNELS:
            self.pauses[name].set(*settings.get(name, (0.0, 1)))

    async def _decisions(self):
        dut, last = self.dut, (0, 0, 0)
        while True:
            await RisingEdge(dut.aclk)
            if not int(dut.aresetn.value):
                last = (0, 0, 0)
                continue
            now = tuple(int(getattr(dut, name).value) for name in ("frames", "unchecked", "late"))
            if now[0] != last[0]:
                self.decided.append((now[1] != last[1] and now[2] == last[2], now[2] != last[2]))
            last = now

    async def reset(self):
        """Reset, then wait until the filter has cleared every word of its region through AXI: one write a block,
        every write answered (at most 12 cycles a block)."""
        self.dut.aresetn.value = 0
        await ClockCycles(self.dut.aclk, 4)
        self.dut.aresetn.value = 1
        blocks, start = self.params.config.memory_blocks, self.checker.writes
        for cycle in range(12 * blocks + 200):
            await RisingEdge(self.dut.aclk)
            if self.checker.writes - start >= blocks and not self.checker.open_writes:
                break
        else:
            raise AssertionError(f"{self.checker.writes - start} writes answered in {cycle + 1} cycles after the "
                                 f"reset: the filter did not clear its {blocks} blocks")
        cocotb.log.info("region cleared %d cycles after the reset", cycle + 1)
        await ClockCycles(self.dut.aclk, 16)
        self.sent, self.out, self.decided = [], [], []
        self.sink.clear()

    def score(self, changes=None):
        """Score what came out against the model (the late frames as the counters said; with ``changes``, as
        :func:`~apbbf.sim.dedup.score_frames`), and the counters; the AXI rules; no AXI error."""
        try:
            if self.checker.failure:
                raise Mismatch(self.checker.failure)
            model = score_frames(self.params, self.sent, self.out, decided=self.decided, changes=changes)
            counters = {name: int(getattr(self.dut, name).value) for name in COUNTERS}
            if counters != model.counters.as_dict():
                raise Mismatch(f"counters {counters}, model {model.counters.as_dict()}")
            errors = (int(self.dut.axi_read_errors.value), int(self.dut.axi_write_errors.value))
            if errors != (0, 0):
                raise Mismatch(f"AXI errors counted {errors} from a RAM that answers OKAY")
        except Mismatch as error:
            raise Mismatch(f"{error} ({f'changes {changes}, ' if changes else ''}bench seed {self.seed}; waveform "
                           f"{os.environ.get('APBBF_WAVES')})") from None
        return model


async def _start(dut, name: str) -> MemoryDedupTB:
    tb = MemoryDedupTB(dut, _seed(name))
    cocotb.log.info("%s: bench seed %d (from COCOTB_RANDOM_SEED and the test's name)", name, tb.seed)
    await tb.reset()
    return tb


@cocotb.test()
@cocotb.parametrize(pauses=[cocotb.Param(None, "None"), cocotb.Param(EVERY, "every")])
async def random_traffic(dut, pauses=None):
    """Packets and copies of every kind, some outside the window, some errored, with gaps at the pace the memory
    keeps: every frame checked and scored."""
    tb = await _start(dut, "random_traffic")
    if pauses:
        tb.set_pauses(**pauses)
    tb.idle.set(0.6, 8)
    tb.backpressure.set(0.2, 2)
    tb.send(traffic(40, tb.seed % 1000))
    await tb.drain(600)
    model = tb.score()
    assert model.counters.duplicates > 5 and model.counters.late == 0, model.counters


@cocotb.test()
async def back_to_back_copies(dut):
    """Each frame followed at once by its copy: the copy's key reaches the scan with the original's insert still
    in flight, and is found."""
    tb = await _start(dut, "back_to_back_copies")
    rng = random.Random(tb.seed)
    tb.idle.set(0.5, 20)
    items, time = [], 0
    for _ in range(12):
        p = packet(rng)
        items += [(pad(bytes(p)), time, False), (pad(bytes(copy_of(p, "exact", rng))), time + 1, False)]
        time += 3
    tb.send(items)
    await tb.drain(600)
    model = tb.score()
    assert model.counters.duplicates == 12, model.counters


@cocotb.test()
async def slow_memory_fails_open(dut):
    """Read answers held back for long stretches (``rready`` low 70 % of the time in runs of 400 cycles, past the
    deadline of 200 cycles that the export has for this bench): the frames
    whose answers wait are late, passed unchecked and counted; the link never stalls; the rest is checked."""
    tb = await _start(dut, "slow_memory_fails_open")
    tb.set_pauses(r=(0.7, 400))
    tb.send(traffic(60, tb.seed % 1000))
    stalled = 0
    while not tb.source.empty() or tb.source.active:
        await RisingEdge(dut.aclk)
        stalled += int(dut.s_axis_tvalid.value and not dut.s_axis_tready.value)
    tb.set_pauses()
    await tb.drain(600)                  # three deadlines: a frame still held would be out by then
    model = tb.score()
    assert stalled == 0, f"s_axis_tready was low for {stalled} cycles"
    assert model.counters.late > 0 and model.counters.frames == 60, model.counters
