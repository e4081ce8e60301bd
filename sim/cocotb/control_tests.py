"""cocotb benches of the exported de-duplicator's control registers (``apbbf_dedup_axis`` with ``control=True``),
through cocotbext-axi's ``AxiLiteMaster``, every access scored against the model of the register file
(:class:`apbbf.model.registers.RegisterFile`) and the frames against :class:`apbbf.model.dedup.Dedup` with the
changes at the frame indices the registers name.

- ``reset_values``: every register of the map read after reset: the facts, the built window, action and key,
  the counters 0; the write-only registers and the offsets without a register answer SLVERR.
- ``writes``: writes in range and out of range (SLVERR, nothing changed: every register read back after each),
  to read-only registers, to no register, of fewer than four bytes.
- ``rekey_under_traffic`` (a build with the run-time seed, ``runtime_seed=True``): seeds staged and re-keys
  made while frames go through, a copy of a frame before each re-key sent after it: the frames out are the
  model's with each ``("rekey", seed)`` at the frame ``CHANGE_FRAME`` named, ``CLEARS`` counts them, and the seeds
  are never read back (``SEED_LO``, ``SEED_HI`` answer SLVERR and every readable register holds none of them).
- ``changes_under_traffic``: frames go through while the action changes (count, mark, drop), the window
  shrinks and grows back, the filter is cleared and the counters are snapshot and cleared: every frame out equals the model's with the same changes
  at the frames ``CHANGE_FRAME`` named, and the snapshots add up to the counters.

The design's parameters come as for :mod:`apbbf.sim.cocotb.dedup_tests` (:data:`~apbbf.sim.cocotb.dedup_tests.PARAMS_ENV`).
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from ...model.registers import ACTIONS, Access, Capability, Control, RegisterError, RegisterFile, register_map
from ..dedup import Mismatch, score_frames
from ..frames import copy_of, pad, packet
from .dedup_tests import COUNTERS, TB, _seed
from .testbench import _quiet

OFFSETS = {name: r.offset for name, r in register_map().items()}


def _facts(params):
    from ...hdl.export.axis_dedup import control_facts
    from ...hdl.packet.dedup import PacketDedup
    options = {k: getattr(params, k) for k in ("data_width", "action", "fcs", "timestamps", "max_frame")}
    return control_facts(PacketDedup(params.config, params.spec, clearable=True, runtime_window=True,
                                     runtime_seed=getattr(params, "runtime_seed", False), **options))


class ControlTB(TB):
    """The de-duplicator's bench with an ``AxiLiteMaster`` on ``s_axil`` and the register file's model."""

    def __init__(self, dut, seed: int):
        super().__init__(dut, seed)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.aclk, dut.aresetn,
                                  reset_active_level=False)
        _quiet(self.axil.write_if)
        _quiet(self.axil.read_if)
        self.facts = _facts(self.params)
        self.model = RegisterFile(self.facts)

    async def read(self, offset: int):
        """(value, OKAY?) of the register at ``offset``."""
        reply = await self.axil.read(offset, 4)
        return int.from_bytes(reply.data, "little"), reply.resp == AxiResp.OKAY

    async def write(self, offset: int, value: int, length: int = 4) -> bool:
        reply = await self.axil.write(offset, value.to_bytes(4, "little")[:length])
        return reply.resp == AxiResp.OKAY

    async def check_write(self, offset: int, value: int):
        """Write through AXI and to the model: the same answer (OKAY or SLVERR)."""
        try:
            self.model.write(offset, value)
            expected = True
        except RegisterError:
            expected = False
        ok = await self.write(offset, value)
        if ok != expected:
            raise Mismatch(f"write {value:#x} at {offset:#x}: {'OKAY' if ok else 'SLVERR'}, model "
                           f"{'OKAY' if expected else 'SLVERR'}")

    async def check_reads(self, names=None):
        """Read every register (or those named) and compare with the model: value, or SLVERR where the model
        refuses."""
        for name, register in register_map().items():
            if names is not None and name not in names:
                continue
            value, ok = await self.read(register.offset)
            try:
                expected = self.model.read(register.offset)
            except RegisterError:
                if ok:
                    raise Mismatch(f"read of {name} answered OKAY ({value:#x}), the model refuses it") from None
                continue
            if not ok or value != expected:
                raise Mismatch(f"{name}: {value:#x} ({'OKAY' if ok else 'SLVERR'}), model {expected:#x}")

    def score_changes(self, changes):
        """The frames out scored against the model with ``changes`` (frame index: the changes before it)."""
        try:
            return score_frames(self.params, self.sent, self.out, changes=changes)
        except Mismatch as error:
            raise Mismatch(f"{error} (changes {changes}, bench seed {self.seed})") from None


@cocotb.test()
async def reset_values(dut):
    """Every register after reset, as the model of the register file reads it."""
    tb = ControlTB(dut, _seed("reset_values"))
    await tb.reset()
    await tb.check_reads()
    for offset in (0x4C, 0x5C, 0x74, 0x94, 0xC0, 0xFC, 0x51):
        _, ok = await tb.read(offset)
        assert not ok, f"read at {offset:#x} answered OKAY: no register there"
    assert (await tb.read(OFFSETS["SPAN"]))[0] == tb.params.config.span


@cocotb.test()
async def writes(dut):
    """Writes in range and out of range, to read-only registers and to none: the answer is the model's, and after
    each the registers are the model's (a refused write changed nothing)."""
    tb = ControlTB(dut, _seed("writes"))
    await tb.reset()
    span = tb.params.config.span
    cases = [("WINDOW", span), ("WINDOW", 0), ("WINDOW", span - 1), ("WINDOW", span + 1), ("WINDOW", 0xFFFF_FFFF),
             *(("ACTION", v) for v in (2, 1, 0, 3, 4, 0x1_0000_0000 - 1)),
             ("KEY", 0), ("KEY", 1), ("KEY", 2), ("KEY", 1 << 31),
             ("SEED_LO", 1), ("SEED_HI", 2),
             ("CONTROL", int(Control.REKEY)), ("CONTROL", 1 << 4), ("CONTROL", 1 << 31), ("CONTROL", 0),
             ("CONTROL", int(Control.SNAPSHOT)), ("CONTROL", int(Control.SNAPSHOT | Control.CLEAR_COUNTERS)),
             ("CONTROL", int(Control.CLEAR)),
             ("ID", 0), ("FRAMES", 5), ("CAPACITY", span), ("CHANGE_FRAME", 0), ("CLEARS", 1)]
    watched = {"WINDOW", "ACTION", "KEY", "CLEARS", "CHANGE_FRAME", *(n.upper() for n in COUNTERS)}
    for name, value in cases:
        await tb.check_write(OFFSETS[name], value)
        await tb.check_reads(watched)
    for offset in (0x4C, 0x5C, 0x74, 0xC0, 0xFC, 0x52):
        assert not await tb.write(offset, 1), f"write at {offset:#x} answered OKAY: no register there"
    # fewer than four bytes: refused, nothing changed (the action stays the built one)
    assert not await tb.write(OFFSETS["ACTION"], 2, length=1)
    assert not await tb.write(OFFSETS["CONTROL"], int(Control.CLEAR), length=2)
    await tb.check_reads()
    assert tb.model.clears == 1 + bool(tb.facts.caps & Capability.REKEY)


def _frames(rng, count, time=100):
    """Short packets and copies of recent ones (so Icarus runs few cycles), times advancing."""
    sent, items = [], []
    for _ in range(count):
        time += rng.randrange(0, 8)
        if sent and rng.random() < 0.45:
            frame = copy_of(rng.choice(sent[-12:]), rng.choice(("exact", "ttl", "vlan")), rng)
        else:
            p = packet(rng, size=rng.choice((0, 6, 40)))
            sent.append(p)
            frame = pad(bytes(p))
        items.append((frame, time, rng.random() < 0.03))
    return items, time


@cocotb.test()
async def changes_under_traffic(dut):
    """The action changed, the filter cleared and the counters snapshot (and cleared) while frames go through:
    the frames out are the model's with each change before the frame ``CHANGE_FRAME`` names; the snapshots add
    up to the counters."""
    tb = ControlTB(dut, _seed("changes_under_traffic"))
    tb.set_inserters(None, None)
    await tb.reset()
    await run_changes_under_traffic(tb)


async def run_changes_under_traffic(tb: ControlTB):
    """The body of :func:`changes_under_traffic` on a bench reset (also the memory export's,
    :mod:`apbbf.sim.cocotb.memory_control_tests`)."""
    dut = tb.dut
    rng = random.Random(tb.seed)
    actions = [a for a in ("count", "mark", tb.params.action, "count") if a in tb.facts.actions]
    steps = [("action", a) for a in actions] + [("clear",)] + [("action", tb.params.action)]
    rng.shuffle(steps)
    capacity = tb.facts.capacity
    steps[1:1] = [("window", 5)]
    steps[4:4] = [("window", max(1, capacity // 3))]
    steps.append(("window", capacity))
    changes, totals, time = {}, dict.fromkeys(COUNTERS, 0), 100
    for step in steps:
        items, time = _frames(rng, 12, time)
        tb.send(items)
        await ClockCycles(dut.aclk, rng.randrange(20, 120))           # the change lands among the frames
        if step[0] == "action":
            current = (await tb.read(OFFSETS["ACTION"]))[0]
            assert await tb.write(OFFSETS["ACTION"], ACTIONS.index(step[1]))
            if ACTIONS.index(step[1]) == current:
                continue
        elif step[0] == "window":
            current = (await tb.read(OFFSETS["WINDOW"]))[0]
            assert await tb.write(OFFSETS["WINDOW"], step[1])
            assert not await tb.write(OFFSETS["WINDOW"], capacity + 1)     # refused: changes nothing
            if step[1] == current:
                continue
        else:
            assert await tb.write(OFFSETS["CONTROL"], int(Control.CLEAR | Control.SNAPSHOT | Control.CLEAR_COUNTERS))
            for name in COUNTERS:
                totals[name] += (await tb.read(OFFSETS[name.upper()]))[0]
        frame, _ = await tb.read(OFFSETS["CHANGE_FRAME"])
        changes.setdefault(frame, []).append(step)
    items, time = _frames(rng, 12, time)
    tb.send(items)
    await tb.drain()
    assert await tb.write(OFFSETS["CONTROL"], int(Control.SNAPSHOT))
    for name in COUNTERS:
        totals[name] += (await tb.read(OFFSETS[name.upper()]))[0]
    model = tb.score_changes(changes)
    live = {name: int(getattr(dut, name).value) for name in COUNTERS}
    assert live == {name: getattr(model.counters, name) for name in COUNTERS}, (live, model.counters)
    assert totals == live, (totals, live)
    clears, _ = await tb.read(OFFSETS["CLEARS"])
    assert clears == 1 and len(changes) >= 5, changes
    assert (await tb.read(OFFSETS["WINDOW"]))[0] == capacity
    assert model.counters.duplicates > 3 and 0 < model.counters.dropped < model.counters.duplicates, model.counters


@cocotb.test()
async def action_toggles(dut):
    """Frames of three beats, most of them copies, one decided every few cycles, while the action toggles every
    few cycles: a change whose frame index were one off would decide a copy with the wrong action."""
    tb = ControlTB(dut, _seed("action_toggles"))
    tb.set_inserters(None, None)
    await tb.reset()
    await run_action_toggles(tb)


async def run_action_toggles(tb: ControlTB):
    """The body of :func:`action_toggles` on a bench reset."""
    dut = tb.dut
    rng = random.Random(tb.seed)
    lanes = tb.params.data_width // 8
    pool = [rng.randbytes(2 * lanes + 4) for _ in range(3)]
    tb.send((rng.choice(pool), 10 + n // 8, False) for n in range(240))
    changes = {}
    choices = [a for a in ACTIONS if a in tb.facts.actions]
    for _ in range(40):
        await ClockCycles(dut.aclk, rng.randrange(1, 6))
        current = (await tb.read(OFFSETS["ACTION"]))[0]
        action = rng.choice([a for a in choices if ACTIONS.index(a) != current])
        assert await tb.write(OFFSETS["ACTION"], ACTIONS.index(action))
        frame, _ = await tb.read(OFFSETS["CHANGE_FRAME"])
        changes.setdefault(frame, []).append(("action", action))
    await tb.drain()
    model = tb.score_changes(changes)
    live = {name: int(getattr(dut, name).value) for name in COUNTERS}
    assert live == {name: getattr(model.counters, name) for name in COUNTERS}, (live, model.counters)
    assert len(changes) > 20 and model.counters.dropped > 20, (len(changes), model.counters)


@cocotb.test()
async def rekey_under_traffic(dut):
    """Re-keys while frames go through (only a build with the run-time seed; elsewhere ``writes`` checks that
    REKEY is refused): the frames out are the model's with each re-key at the frame ``CHANGE_FRAME`` named (a copy of
    the last frame sent before a re-key is sent after it: found only if the re-key fell before that frame); the
    seeds are never read back."""
    tb = ControlTB(dut, _seed("rekey_under_traffic"))
    if not tb.facts.caps & Capability.REKEY:
        assert not await tb.write(OFFSETS["CONTROL"], int(Control.REKEY))
        return
    tb.set_inserters(None, None)
    await tb.reset()
    rng = random.Random(tb.seed)
    changes, seeds, time = {}, [], 100
    for step in range(3):
        items, time = _frames(rng, 14, time)
        tb.send(items)
        await ClockCycles(dut.aclk, rng.randrange(40, 160))           # the re-key lands among the frames
        seed = rng.getrandbits(64)
        seeds.append(seed)
        await tb.check_write(OFFSETS["SEED_LO"], seed & 0xFFFF_FFFF)
        await tb.check_write(OFFSETS["SEED_HI"], seed >> 32)
        last = items[-1][0]
        await tb.check_write(OFFSETS["CONTROL"], int(Control.REKEY))
        frame, _ = await tb.read(OFFSETS["CHANGE_FRAME"])
        changes.setdefault(frame, []).append(("rekey", seed))
        # a copy of the last frame sent before the re-key, after it (or after the frames still to come)
        tb.send([(last, time + 1, False)])
    items, time = _frames(rng, 14, time)
    tb.send(items)
    await tb.drain()
    model = tb.score_changes(changes)
    assert model.run_seed == seeds[-1], (hex(model.run_seed), [hex(s) for s in seeds])
    live = {name: int(getattr(dut, name).value) for name in COUNTERS}
    assert live == {name: getattr(model.counters, name) for name in COUNTERS}, (live, model.counters)
    assert (await tb.read(OFFSETS["CLEARS"]))[0] == 3 and len(changes) == 3, changes
    # never read back: the seed registers refuse reads, and no readable register holds a half of any seed
    halves = {h for s in seeds for h in (s & 0xFFFF_FFFF, s >> 32)}
    for name, register in register_map().items():
        value, ok = await tb.read(register.offset)
        if register.access == Access.WO:
            assert not ok, f"{name} answered a read"
        else:
            assert ok and value not in halves, (name, hex(value))
