"""cocotb benches of the control registers of the de-duplicator with its segments behind an AXI4 master
(``apbbf export --dedup --control --memory axi``): cocotbext-axi's ``AxiLiteMaster`` on ``s_axil`` as
:mod:`~apbbf.sim.cocotb.control_tests` drives it, and ``AxiRam`` as the memory with its channels paused as
:mod:`~apbbf.sim.cocotb.memory_dedup_tests` pauses them. Every frame out is scored against
:class:`apbbf.model.dedup.Dedup` with each change (``clear``, ``set_window``, ``set_action``) before the frame
``CHANGE_FRAME`` named, and with the late frames the counters name.

- ``clear_with_writes_in_flight``: the filter cleared while the memory takes writes slowly (``AWREADY`` and
  ``WREADY`` low in long runs, B answered late), a write outstanding each time the clear is asked; then the keys
  from before the clear come again, each also repeated at once: the cleared filter holds none of the old keys
  and finds every new one. A clear that reset the core with writes in flight would take their B responses for
  its own clearing's, call words clean whose zeros had not landed, and drop the bits of inserts still in flight
  from its reads.
- ``changes_under_traffic``: the action changed, the window shrunk and grown back, the filter cleared, the
  counters snapshot (:func:`~apbbf.sim.cocotb.control_tests.run_changes_under_traffic`), with the memory's
  channels paused at random.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from ...model.registers import Control
from ..frames import copy_of, pad, packet
from .control_tests import OFFSETS, ControlTB, run_changes_under_traffic
from .dedup_tests import _seed
from .memory_dedup_tests import EVERY, MemoryDedupTB

MODULE = "apbbf.sim.cocotb.memory_control_tests"

#: The memory's writes slow: AW and W refused in long runs, B held back.
SLOW_WRITES = dict(aw=(0.6, 16), w=(0.6, 16), b=(0.7, 24))


class MemoryControlTB(ControlTB, MemoryDedupTB):
    """The control bench (:class:`~apbbf.sim.cocotb.control_tests.ControlTB`) on the memory export's bench
    (:class:`~apbbf.sim.cocotb.memory_dedup_tests.MemoryDedupTB`: the ``AxiRam``, its pauses, the AXI checker)."""

    def score_changes(self, changes):
        return MemoryDedupTB.score(self, changes)

    def writes_in_flight(self) -> int:
        """Writes the memory owes a B response, and one being offered on AW."""
        return self.checker.open_writes + int(self.dut.m_axi_awvalid.value)


async def _start(dut, name: str) -> MemoryControlTB:
    tb = MemoryControlTB(dut, _seed(name))
    cocotb.log.info("%s: bench seed %d (from COCOTB_RANDOM_SEED and the test's name)", name, tb.seed)
    tb.set_inserters(None, None)
    await tb.reset()
    return tb


async def _regions_cleared(tb: MemoryControlTB, start: int):
    """Wait until the filter has written every block of its region since ``start`` writes and nothing is
    outstanding: the clearing after the clear is done and the keys that come now are checked."""
    blocks = tb.params.config.memory_blocks
    for _ in range(40 * blocks + 400):
        await RisingEdge(tb.dut.aclk)
        if tb.checker.writes - start >= blocks and not tb.checker.open_writes:
            break
    await ClockCycles(tb.dut.aclk, 16)


def _pairs(rng, packets, time):
    """Each packet followed at once by its copy."""
    items = []
    for p in packets:
        items += [(pad(bytes(p)), time, False), (pad(bytes(copy_of(p, "exact", rng))), time + 1, False)]
        time += 2
    return items, time


def _every_distance(rng, depth, time):
    """For each distance d from 1 to ``2 * depth``: a new key, d - 1 new keys, and the key again."""
    items = []
    for d in range(1, 2 * depth + 1):
        key = packet(rng, size=6)
        items.append((pad(bytes(key)), time, False))
        items += [(pad(bytes(packet(rng, size=6))), time, False) for _ in range(d - 1)]
        items.append((pad(bytes(copy_of(key, "exact", rng))), time + 1, False))
        time += 2
    return items, time


@cocotb.test()
@cocotb.parametrize(clears=[1, 3])
async def clear_with_writes_in_flight(dut, clears):
    """Clears, each asked with writes outstanding in a memory that takes and answers them slowly: every frame out
    is the model's with the clears at the frames ``CHANGE_FRAME`` names."""
    tb = await _start(dut, "clear_with_writes_in_flight")
    rng = random.Random(tb.seed)
    depth = tb.params.memory_depth
    tb.set_pauses(**SLOW_WRITES)
    changes, time, in_flight = {}, 100, []
    for _ in range(clears):
        old = [packet(rng, size=rng.choice((0, 6, 40))) for _ in range(6)]
        items, time = _pairs(rng, old, time)
        more, time = _every_distance(rng, depth, time)
        tb.send(items + more)
        for _ in range(4000):                              # the clear asked with a write outstanding
            await RisingEdge(dut.aclk)
            if len(tb.sent) - tb.source.count() > len(items) and tb.checker.open_writes:
                break
        in_flight.append(tb.writes_in_flight())
        start = tb.checker.writes
        assert await tb.write(OFFSETS["CONTROL"], int(Control.CLEAR))
        frame, _ = await tb.read(OFFSETS["CHANGE_FRAME"])
        changes.setdefault(frame, []).append(("clear",))
        await tb.source.wait()
        await _regions_cleared(tb, start)
        # the old keys again (the cleared filter holds none: each passes, its copy right behind it is found),
        # and new keys repeated at every distance up to twice the commands in flight
        items, time = _pairs(rng, old, time)
        more, time = _every_distance(rng, depth, time)
        tb.send(items + more)
    await tb.source.wait()
    tb.set_pauses()                                         # the last answers come before the deadline
    await tb.drain(600)
    model = tb.score_changes(changes)
    cocotb.log.info("writes in flight as each clear was asked: %s; changes at frames %s; %s", in_flight,
                    sorted(changes), model.counters)
    assert all(in_flight) and len(changes) == clears, (in_flight, changes)
    assert model.counters.late == 0 and model.counters.duplicates >= clears * (6 + 2 * depth), model.counters


@cocotb.test()
async def changes_under_traffic(dut):
    """The action changed, the window shrunk and grown back, the filter cleared and the counters snapshot while
    frames go through and the memory's channels pause at random: the frames out are the model's with each
    change before the frame ``CHANGE_FRAME`` names."""
    tb = await _start(dut, "changes_under_traffic")
    tb.set_pauses(**EVERY)
    await run_changes_under_traffic(tb)
