"""cocotb benches of the control registers of the de-duplicator with its segments behind an AXI4 master
(``apbbf export --dedup --control --memory axi``): cocotbext-axi's ``AxiLiteMaster`` on ``s_axil`` as
:mod:`~apbbf.sim.cocotb.control_tests` drives it, and ``AxiRam`` as the memory with its channels paused as
:mod:`~apbbf.sim.cocotb.memory_dedup_tests` pauses them. Every frame out is scored against
:class:`apbbf.model.dedup.Dedup` with each change (``clear``, ``set_window``, ``set_action``) before the frame
``CHANGE_FRAME`` named, and with the late frames the counters name.

- ``clear_with_writes_in_flight``: every key answered, the last writes still unanswered (B held back for
  :data:`HOLD_B` cycles; when the last writes landed before the hold, new keys one at a time until one's write is
  held, :data:`EXTRA_KEYS` at most), the filter is cleared; once its clearing is done, the keys from before the clear come
  again, each followed at once by its copy, with new keys repeated at every distance up to two past the
  commands in flight, while W lands writes late (:data:`LATE_WRITES`): the cleared filter holds none of the old
  keys, finds every new one and checks every frame. A clear that reset the core with a write unanswered takes its
  B response for one of its own, and stays an acknowledgement ahead from then on: with one command in flight
  (the bench's export) the next command reads a block whose write has not landed and misses the key.
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
#: After a clear's clearing: W refused nine cycles in ten, each cycle drawn alone, so that a command's second
#: write is still unlanded when its first is answered (a scan an acknowledgement ahead then reads past it).
LATE_WRITES = dict(w=(0.9, 1))
#: Cycles B is held back around a clear.
HOLD_B = 300
#: New keys sent at most, one at a time, while B is held, when the writes before a clear all landed before the
#: hold began (the clear must be asked with a write unanswered).
EXTRA_KEYS = 4
#: The frames' idle gaps (probability, run) before a clear, and after its clearing (none: a group's frames back
#: to back, so that a read comes while the write of its key a command ahead is still held in W).
BEFORE_IDLE, AFTER_IDLE = (0.8, 16), (0.0, 1)
#: Cycles per frame of a group, after a clear's clearing, before the next group.
GROUP_GAP = 48


class MemoryControlTB(ControlTB, MemoryDedupTB):
    """The control bench (:class:`~apbbf.sim.cocotb.control_tests.ControlTB`) on the memory export's bench
    (:class:`~apbbf.sim.cocotb.memory_dedup_tests.MemoryDedupTB`: the ``AxiRam``, its pauses, the AXI checker)."""

    def score_changes(self, changes):
        return MemoryDedupTB.score(self, changes)


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
    """Groups of frames: each packet followed at once by its copy."""
    groups = []
    for p in packets:
        groups.append([(pad(bytes(p)), time, False), (pad(bytes(copy_of(p, "exact", rng))), time + 1, False)])
        time += 2
    return groups, time


def _every_distance(rng, distances, time):
    """Groups of frames: for each distance d from 1 to ``distances``, a new key, d - 1 new keys, and the key
    again."""
    groups = []
    for d in range(1, distances + 1):
        key = packet(rng, size=6)
        items = [(pad(bytes(key)), time, False)]
        items += [(pad(bytes(packet(rng, size=6))), time, False) for _ in range(d - 1)]
        items.append((pad(bytes(copy_of(key, "exact", rng))), time + 1, False))
        groups.append(items)
        time += 2
    return groups, time


async def _send_spaced(tb, groups, cycles: int):
    """Each group's frames back to back, then ``cycles`` per frame of it before the next group: the memory keeps
    up, with the frames of a group closer together than their writes land."""
    for group in groups:
        tb.send(group)
        await tb.source.wait()
        await ClockCycles(tb.dut.aclk, cycles * len(group))


@cocotb.test()
@cocotb.parametrize(clears=[1, 3])
async def clear_with_writes_in_flight(dut, clears):
    """Clears, each asked with writes outstanding in a memory that takes and answers them slowly, the frames
    paced so that the memory keeps up: every frame out is the model's with the clears at the frames
    ``CHANGE_FRAME`` names, and every frame after a clear's clearing is checked."""
    tb = await _start(dut, "clear_with_writes_in_flight")
    rng = random.Random(tb.seed)
    distances = tb.params.memory_depth + 2
    tb.set_pauses(**SLOW_WRITES)
    tb.idle.set(*BEFORE_IDLE)
    changes, time, in_flight, after = {}, 100, [], []
    for _ in range(clears):
        old = [packet(rng, size=rng.choice((0, 6, 40))) for _ in range(4)]
        items, time = _pairs(rng, old, time)
        more, time = _every_distance(rng, distances, time)
        tb.send(item for group in items + more for item in group)
        # every key answered, the writes of the last ones still going out: B held back for a run of
        # HOLD_B cycles from here, and the clear asked meanwhile, with those writes unanswered
        await tb.source.wait()
        while int(dut.frames.value) != len(tb.sent):
            await RisingEdge(dut.aclk)
        tb.set_pauses(**{**SLOW_WRITES, "b": (0.99, HOLD_B)})
        await ClockCycles(dut.aclk, SLOW_WRITES["b"][1] + 8)   # the run under way ends, the hold begins
        for _ in range(EXTRA_KEYS):
            if tb.checker.open_writes:
                break
            # the last writes landed before the hold began: one more new key, its write held back by it
            tb.send([(pad(bytes(packet(rng, size=6))), time, False)])
            time += 1
            await tb.source.wait()
            while int(dut.frames.value) != len(tb.sent):
                await RisingEdge(dut.aclk)
            for _ in range(SLOW_WRITES["aw"][1] * 4):
                if tb.checker.open_writes:
                    break
                await RisingEdge(dut.aclk)
        tb.set_pauses(**SLOW_WRITES)                            # after the hold
        in_flight.append(tb.checker.open_writes)
        start = tb.checker.writes
        assert await tb.write(OFFSETS["CONTROL"], int(Control.CLEAR))
        frame, _ = await tb.read(OFFSETS["CHANGE_FRAME"])
        changes.setdefault(frame, []).append(("clear",))
        await tb.source.wait()
        await _regions_cleared(tb, start)
        tb.idle.set(*AFTER_IDLE)
        tb.set_pauses(**LATE_WRITES)
        # the old keys again (the cleared filter holds none: each passes, its copy right behind it is found),
        # and new keys repeated at every distance up to two past the commands in flight
        items, time = _pairs(rng, old + [packet(rng, size=6) for _ in range(8)], time)
        more, time = _every_distance(rng, distances, time)
        first = len(tb.sent)
        await _send_spaced(tb, items + more, GROUP_GAP)
        after += range(first, len(tb.sent))
        tb.idle.set(*BEFORE_IDLE)
        tb.set_pauses(**SLOW_WRITES)
    await tb.source.wait()
    tb.set_pauses()                                         # the last answers come before the deadline
    await tb.drain(600)
    model = tb.score_changes(changes)
    unchecked = [n for n in after if any(tb.decided[n])]
    cocotb.log.info("writes in flight as each clear was asked: %s; changes at frames %s; %s; unchecked after "
                    "the clearing: %s", in_flight, sorted(changes), model.counters, unchecked)
    assert all(in_flight) and len(changes) == clears, (in_flight, changes)
    assert not unchecked, f"frames {unchecked} after a clear's clearing passed unchecked"
    assert model.counters.duplicates >= clears * (len(old) + distances), model.counters


@cocotb.test()
async def changes_under_traffic(dut):
    """The action changed, the window shrunk and grown back, the filter cleared and the counters snapshot while
    frames go through and the memory's channels pause at random: the frames out are the model's with each
    change before the frame ``CHANGE_FRAME`` names."""
    tb = await _start(dut, "changes_under_traffic")
    tb.set_pauses(**EVERY)
    await run_changes_under_traffic(tb)
