"""The register map's specification (apbbf.model.registers): the map declared once, every register's reset value,
writes in range and out of range, refused accesses that change nothing, the counters' snapshot and clear, and
the changes made on the model (apbbf.model.dedup.Dedup) at the frame index the map names."""

import random

import pytest

from apbbf.model.config import Config
from apbbf.model.dedup import Dedup
from apbbf.model.packet import KeySpec
from apbbf.model.registers import (ACTIONS, APPLIANCE_REGISTERS, DEDUP_COUNTERS, MAP_ID, MAP_VERSION, PORT_COUNTERS,
                                   REGISTERS, Access, Capability, Control, Facts, RegisterError, RegisterFile,
                                   register_map)

CONFIG = Config(k=2, l=3, block_bits=64, block_hashes=4, segment_blocks=64, span=500, time_width=16,
                extra_segments=2, seed=0x0123456789ABCDEF)
CAPS = Capability.ACTION | Capability.CLEAR | Capability.REKEY
FACTS = Facts(CONFIG, action="drop", actions=ACTIONS, key="l3l4", keys=("l3l4",), max_frame=1522, tick_ns=1000,
              caps=CAPS)
OFF = {name: r.offset for name, r in register_map("appliance").items()}


def test_map_is_declared_once_and_well_formed():
    """Offsets word aligned, distinct and increasing; names distinct; the appliance's map is the de-duplicator's
    and the MAC counters; the counters' registers carry the counters' names."""
    for registers in (REGISTERS, APPLIANCE_REGISTERS):
        offsets = [r.offset for r in registers]
        assert offsets == sorted(set(offsets)) and all(o % 4 == 0 for o in offsets)
        assert len({r.name for r in registers}) == len(registers)
    assert APPLIANCE_REGISTERS[:len(REGISTERS)] == REGISTERS
    assert [r.name.lower() for r in APPLIANCE_REGISTERS[len(REGISTERS):]] == list(PORT_COUNTERS)
    assert [name.upper() for name in DEDUP_COUNTERS] == [r.name for r in REGISTERS if 0x80 <= r.offset < 0xC0]
    assert {r.name for r in REGISTERS if r.access == Access.WO} == {"SEED_LO", "SEED_HI", "CONTROL"}
    assert {r.name for r in REGISTERS if r.access == Access.RW} == {"WINDOW", "ACTION", "KEY"}
    # The wire values: firmware compiled against them breaks if one moves.
    assert (OFF["ID"], OFF["WINDOW"], OFF["CONTROL"], OFF["FRAMES"], OFF["PORT0_RX_FRAMES"]) == (0, 0x50, 0x70, 0x80,
                                                                                                   0xC0)
    assert MAP_ID == 0x46425041 and MAP_VERSION == 1
    with pytest.raises(ValueError, match="target"):
        register_map("soc")


def test_every_register_at_reset():
    """Each register's reset value: the facts of the build, the built window, action and key, counters 0; the
    write-only registers refuse a read."""
    regs = RegisterFile(FACTS, link=lambda: 0b10)
    expected = {"ID": MAP_ID, "VERSION": MAP_VERSION, "CAPS": int(CAPS), "ACTIONS": 0b111, "KEYS": 0b1,
                "MAX_FRAME": 1522, "CAPACITY": 500, "TICK_NS": 1000, "K": 2, "L": 3, "BLOCK_BITS": 64,
                "BLOCK_HASHES": 4, "SEGMENT_BLOCKS": 64, "SPAN": 500, "TIME_WIDTH": 16, "EXTRA_SEGMENTS": 2,
                "LINK": 0b10, "CLEARS": 0, "CHANGE_FRAME": 0, "WINDOW": 500, "ACTION": 0, "KEY": 0,
                **{name.upper(): 0 for name in DEDUP_COUNTERS}}
    for r in REGISTERS:
        if r.access == Access.WO:
            with pytest.raises(RegisterError, match=f"{r.name} is write only"):
                regs.read(r.offset)
        else:
            assert regs.read(r.offset) == expected.pop(r.name), r.name
    assert expected == {}
    with pytest.raises(RegisterError, match="no register at offset 0xc0"):
        regs.read(OFF["PORT0_RX_FRAMES"])                    # not in the de-duplicator's map
    assert RegisterFile(Facts(CONFIG, target="appliance")).read(OFF["PORT1_TX_UNDERFLOWS"]) == 0


def _state(regs):
    return (regs.window, regs.action, regs.key, regs.seed, regs.staged_seed, regs.clears, regs.change_frame,
            regs.counters(), regs._base)


@pytest.mark.parametrize("name, value, why", [
    ("WINDOW", 0, "window must be 500..500"), ("WINDOW", 501, "cannot change its window"),
    ("WINDOW", 499, "cannot change its window"),
    ("ACTION", 3, "action must be one of"), ("ACTION", 0xFFFF_FFFF, "action must be one of"),
    ("KEY", 1, r"key must be one of 0 \(l3l4\)"), ("CONTROL", 1 << 4, "unknown CONTROL bits 0x10"),
    ("ID", 0, "ID is read only"), ("FRAMES", 0, "FRAMES is read only"), ("CAPACITY", 1000, "read only"),
])
def test_refused_writes_change_nothing(name, value, why):
    dedup = Dedup(CONFIG, KeySpec.l3l4())
    regs = RegisterFile(FACTS, dedup=dedup)
    before, filt = _state(regs), dedup.filter
    with pytest.raises(RegisterError, match=why) as error:
        regs.write(OFF[name], value)
    assert error.value.register.name == name and error.value.offset == OFF[name]
    assert _state(regs) == before and dedup.filter is filt and dedup.action.value == "drop"


def test_refused_offsets_and_values():
    regs = RegisterFile(FACTS)
    for offset in (0x4C, 0x51, 0x5C, 0x100, 0xFFFF_FFFC):
        with pytest.raises(RegisterError, match="no register"):
            regs.write(offset, 1)
        with pytest.raises(RegisterError, match="no register"):
            regs.read(offset)
    with pytest.raises(ValueError, match="value must be from"):
        regs.write(OFF["WINDOW"], 1 << 32)
    with pytest.raises(TypeError, match="offset must be an integer"):
        regs.read("WINDOW")
    # A build without the capabilities refuses the commands and the seed.
    bare = RegisterFile(Facts(CONFIG))
    for name, value, why in (("CONTROL", Control.CLEAR, "cannot take CLEAR"),
                             ("CONTROL", Control.REKEY | Control.SNAPSHOT, "cannot take REKEY"),
                             ("SEED_LO", 5, "cannot be re-keyed"), ("ACTION", 2, r"one of 0 \(drop\)")):
        with pytest.raises(RegisterError, match=why):
            bare.write(OFF[name], int(value))
    bare.write(OFF["ACTION"], 0)                             # the built one: accepted, nothing changes
    bare.write(OFF["WINDOW"], 500)


def test_writes_in_range():
    regs = RegisterFile(FACTS)
    regs.write(OFF["WINDOW"], 500)
    for value in (2, 1, 0):
        regs.write(OFF["ACTION"], value)
        assert regs.read(OFF["ACTION"]) == value
    regs.write(OFF["KEY"], 0)
    wide = RegisterFile(Facts(CONFIG, capacity=2000, caps=Capability.WINDOW | Capability.KEY, keys=("l3l4", "frame")))
    wide.write(OFF["WINDOW"], 2000)
    assert wide.read(OFF["WINDOW"]) == 2000
    with pytest.raises(RegisterError, match="1..2000"):
        wide.write(OFF["WINDOW"], 2001)
    wide.write(OFF["KEY"], 1)
    assert wide.read(OFF["KEY"]) == 1


def test_seed_is_staged_never_read_and_rekey_clears():
    dedup = Dedup(CONFIG, KeySpec.frame())
    regs = RegisterFile(FACTS, dedup=dedup)
    frame = bytes(range(60))
    dedup.frame(frame, 1)
    regs.write(OFF["SEED_LO"], 0x89ABCDEF)
    regs.write(OFF["SEED_HI"], 0x01234567)
    assert regs.seed == 0 and regs.staged_seed == 0x0123456789ABCDEF
    regs.write(OFF["SEED_HI"], 0xFEDCBA98)
    assert dedup.frame(frame, 2)[0]                          # staged only: still a copy
    regs.write(OFF["CONTROL"], Control.REKEY)
    assert regs.seed == dedup.run_seed == 0xFEDCBA9889ABCDEF and dedup.config == CONFIG
    assert (regs.read(OFF["CLEARS"]), regs.read(OFF["CHANGE_FRAME"])) == (1, 2)
    assert not dedup.frame(frame, 3)[0]                      # the filter was emptied
    for name in ("SEED_LO", "SEED_HI"):
        with pytest.raises(RegisterError, match="write only"):
            regs.read(OFF[name])


def test_snapshot_and_clear_counters():
    """SNAPSHOT copies every counter at once; CLEAR_COUNTERS counts from zero; both in one write lose nothing."""
    live = dict.fromkeys(PORT_COUNTERS + DEDUP_COUNTERS, 0)
    regs = RegisterFile(Facts(CONFIG, target="appliance"), counters=lambda: live)
    rng = random.Random(1)
    total = dict.fromkeys(live, 0)
    for _ in range(50):
        for name in live:
            step = rng.randrange(1 << 20)
            live[name] = (live[name] + step) % (1 << 32)
        before = regs.counters()
        assert all(regs.read(OFF[n.upper()]) == before[n] for n in live)   # frozen until the next snapshot
        regs.write(OFF["CONTROL"], Control.SNAPSHOT | Control.CLEAR_COUNTERS)
        for name in live:
            total[name] = (total[name] + regs.read(OFF[name.upper()])) % (1 << 32)
    assert total == live
    regs.write(OFF["CONTROL"], Control.SNAPSHOT)
    assert set(regs.counters().values()) == {0}
    live["frames"] += 7
    regs.write(OFF["CONTROL"], Control.SNAPSHOT)
    assert regs.read(OFF["FRAMES"]) == 7


def test_changes_at_frame_indices_equal_a_model_told_directly():
    """Changes through the register file go to the model before the next frame, and CHANGE_FRAME names it; the
    same schedule told to a model directly gives the same frames."""
    rng = random.Random(7)
    frames = [bytes([rng.randrange(6)]) * 60 for _ in range(400)]
    schedule = {50: [("ACTION", 2)], 120: [("CONTROL", int(Control.CLEAR))], 200: [("ACTION", 1)],
                260: [("SEED_LO", 99), ("CONTROL", int(Control.REKEY | Control.SNAPSHOT))], 330: [("ACTION", 0)]}
    via = Dedup(CONFIG, KeySpec.frame())
    regs = RegisterFile(FACTS, dedup=via)
    direct = Dedup(CONFIG, KeySpec.frame())
    out_via, out_direct, points = [], [], []
    for i, frame in enumerate(frames):
        for name, value in schedule.get(i, ()):
            regs.write(OFF[name], value)
            if name == "ACTION":
                direct.set_action(ACTIONS[value])
            elif value & Control.REKEY:
                direct.rekey(99)
            elif value & Control.CLEAR:
                direct.clear()
            if name != "SEED_LO":
                points.append(regs.read(OFF["CHANGE_FRAME"]))
        out_via.append(via.frame(frame, i))
        out_direct.append(direct.frame(frame, i))
    assert out_via == out_direct and via.counters == direct.counters
    assert points == [50, 120, 200, 260, 330] and regs.read(OFF["CLEARS"]) == 2
    # Each action was in force where it should be: counting forwards every copy, marking marks them.
    assert all(forward for _, forward, _ in out_via[50:200]) and any(mark for _, _, mark in out_via[200:330])
    assert not any(forward for duplicate, forward, _ in out_via[330:] if duplicate)
    # After the clear and the re-key the first frame is new again.
    assert not out_via[120][0] and not out_via[260][0]


@pytest.mark.parametrize("kwargs, match", [
    (dict(actions=("drop", "drop")), "actions must be distinct"), (dict(actions=()), "actions must be"),
    (dict(action="mark"), "action must be one of actions"), (dict(keys=("frame",)), "keys must hold"),
    (dict(keys=("l3l4", "mine", "mine")), "each recipe once"), (dict(key="frame"), "key must be one of keys"),
    (dict(max_frame=63), "max_frame must be from"), (dict(capacity=499), "capacity must be from"),
    (dict(tick_ns=-1), "tick_ns must be from"), (dict(caps=3), "caps must be a Capability"),
    (dict(target="soc"), "target"),
])
def test_bad_facts_are_refused(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        Facts(CONFIG, **kwargs)


def test_facts_need_a_span_and_dedup_changes_are_checked():
    with pytest.raises(ValueError, match="span"):
        Facts(Config(k=2, l=3, block_bits=64, block_hashes=4, segment_blocks=64))
    with pytest.raises(TypeError, match="facts must be a Facts"):
        RegisterFile(CONFIG)
    dedup = Dedup(CONFIG, KeySpec.l3l4())
    with pytest.raises(ValueError, match="action must be"):
        dedup.set_action("keep")
    with pytest.raises(ValueError, match="key must be"):
        dedup.set_key("mine")
    with pytest.raises(ValueError, match="seed must be from"):
        dedup.rekey(1 << 64)
    with pytest.raises(ValueError, match="span must be from"):
        dedup.set_window(1 << (CONFIG.time_width - 1))
    with pytest.raises(ValueError, match="span must be from"):
        dedup.set_window(0)
    dedup.set_window(501)
    assert dedup.span == 501 and dedup.filter.span == 501
    dedup.clear()                                   # a clear keeps the window
    assert dedup.filter.span == 501
    dedup.set_key("frame")
    assert dedup.spec == KeySpec.frame()


def test_batch_run_takes_a_change_schedule():
    """Dedup.run with changes by frame index gives what the per-frame path gives with the same changes made
    before the same frames, across batches (an index in a later batch waits for it)."""
    import numpy as np

    from apbbf.model.packet import FrameBatch
    rng = random.Random(3)
    frames = [bytes([rng.randrange(5)]) * 60 for _ in range(300)]
    times = list(range(300))
    schedule = {40: [("action", "count")], 100: [("clear",)], 160: [("action", "mark"), ("rekey", 77)],
                250: [("action", "drop")]}
    direct = Dedup(CONFIG, KeySpec.frame())
    expected = []
    for i, frame in enumerate(frames):
        for change in schedule.get(i, ()):
            {"action": direct.set_action, "clear": direct.clear, "rekey": direct.rekey}[change[0]](*change[1:])
        expected.append(direct.frame(frame, times[i]))
    batched = Dedup(CONFIG, KeySpec.frame())
    got = []
    for a, b in ((0, 120), (120, 300)):
        result = batched.run(FrameBatch.from_frames(frames[a:b]), np.array(times[a:b]), changes=schedule)
        got += list(zip(result.duplicate.tolist(), result.forward.tolist(), result.mark.tolist()))
    assert got == expected and batched.counters == direct.counters and batched.run_seed == 77
    with pytest.raises(ValueError, match="a change must be"):
        Dedup(CONFIG, KeySpec.frame()).run(FrameBatch.from_frames(frames[:5]), np.arange(5), changes={2: [("x",)]})
