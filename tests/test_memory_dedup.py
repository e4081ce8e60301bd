# amaranth: UnusedElaboratable=no
"""PacketDedup with its segments in an external memory (the memory scan), in the Amaranth simulator against
:class:`apbbf.model.dedup.Dedup` frame by frame (:mod:`apbbf.sim.dedup`), served by a memory of random latency,
late writes, refresh stalls and backpressure (:class:`apbbf.sim.memory.MemoryModel`): answers in time, answers
late (the frame passes unchecked, its key inserted), a memory that never answers (the link never stalls),
copies back to back, reset mid-stream, and the parameters refused."""

import random

import pytest

from apbbf.hdl.packet.dedup import PacketDedup
from apbbf.model import Config
from apbbf.model.packet import KeySpec
from apbbf.sim.dedup import RESET, Mismatch, simulate_dedup
from apbbf.sim.frames import copy_of, pad, packet, traffic

# P = 5 physical segments of 64-bit blocks in 1024-bit rows (16 rows): keys share rows, so the forwarding of the
# inserts in flight decides many answers.
CONFIG = Config(2, 3, segment_blocks=16, row_bits=1024, span=300, time_width=16, seed=7)
L3L4, FRAME = KeySpec.l3l4(), KeySpec.frame()


def make(spec=L3L4, **kwargs):
    kwargs.setdefault("max_frame", 1518)
    return lambda: PacketDedup(CONFIG, spec, **kwargs)


def summary(run):
    return {"frames out": len(run.out), **run.counters}


@pytest.mark.parametrize("width, action, spec", [(64, "drop", L3L4),
                                                 pytest.param(512, "mark", FRAME, marks=pytest.mark.slow),
                                                 pytest.param(64, "count", FRAME, marks=pytest.mark.slow)],
                         ids=["64-drop-l3l4", "512-mark-frame", "64-count-frame"])
def test_answers_in_time(width, action, spec):
    """A memory of a few cycles' latency with refresh, frames at most at the core's pace: every frame checked,
    copies found."""
    seed = 21
    print(f"seed {seed}")
    items = traffic(70, seed)
    run = simulate_dedup(make(spec, data_width=width, action=action), items, seed=seed, stall=0.1,
                         gap=0.5 if width == 512 else 0.0,
                         memory=dict(latency=(1, 12), write_delay=(0, 20), refresh=(300, 20)),
                         name=f"memory-dedup-{width}-{action}")
    assert run.counters["frames"] == len(items)
    assert run.counters["duplicates"] > 10 and run.counters["late"] == 0, summary(run)


@pytest.mark.parametrize("action", ["drop", pytest.param("mark", marks=pytest.mark.slow),
                                    pytest.param("count", marks=pytest.mark.slow)])
def test_late_answers_pass_unchecked(action):
    """A memory that stops for 400 cycles every 1,500 (as a DRAM's refresh, much longer): the frames whose answers
    wait out a stop are late (passed on unchecked, their keys inserted all the same, their answers discarded
    when they come), the others checked, in frame order."""
    seed = 22
    print(f"seed {seed}")
    items = traffic(60, seed)
    run = simulate_dedup(make(data_width=64, action=action, answer_deadline=150), items, seed=seed, gap=0.3,
                         memory=dict(latency=(1, 12), write_delay=(0, 30), refresh=(1500, 400)),
                         name=f"memory-dedup-late-{action}")
    assert 0 < run.counters["late"] < run.counters["frames"] - run.counters["errored"], summary(run)
    assert run.counters["duplicates"] > 0, summary(run)


def test_memory_that_never_answers():
    """No answer ever: every frame passes, unchecked (late once its deadline passed, or refused once the core's
    queue is full), none lost, the link not stalled."""
    seed = 23
    print(f"seed {seed}")
    items = traffic(50, seed)
    run = simulate_dedup(make(data_width=64, action="drop", answer_deadline=40), items, seed=seed,
                         memory=dict(latency=(10 ** 9, 10 ** 9), refresh=None), name="memory-dedup-silent")
    c = run.counters
    assert len(run.out) == c["frames"] == len(items), summary(run)
    assert c["unchecked"] == c["frames"] - c["errored"] and c["late"] > 0 and c["duplicates"] == 0, summary(run)


def test_copies_back_to_back():
    """Minimum-size frames, each followed at once by its copy (the copy's key reaches the core while the
    original's insert is still in flight: the forwarding must find it)."""
    seed = 24
    print(f"seed {seed}")
    rng = random.Random(seed)
    items, time = [], 1000
    for _ in range(25):
        p = packet(rng)
        items += [(pad(bytes(p)), time, False), (pad(bytes(copy_of(p, "exact", rng))), time + 1, False)]
        time += 3
    run = simulate_dedup(make(data_width=64, action="drop"), items, seed=seed,
                         memory=dict(latency=(4, 30), write_delay=(10, 40)), name="memory-dedup-back-to-back")
    assert run.counters["duplicates"] == 25 and run.counters["late"] == 0, summary(run)


@pytest.mark.slow
def test_reset_mid_stream():
    seed = 25
    print(f"seed {seed}")
    items = traffic(30, seed) + [RESET] + traffic(30, seed + 1)
    run = simulate_dedup(make(data_width=64, action="mark"), items, seed=seed,
                         memory=dict(latency=(1, 20)), name="memory-dedup-reset")
    assert run.counters["frames"] > 20, summary(run)


def test_memory_port_and_buffer():
    dut = PacketDedup(CONFIG, L3L4, data_width=64, max_frame=1518, answer_deadline=500)
    assert dut.scan == "memory" and dut.memory_depth == 8 and dut.answer_deadline == 500
    assert "memory" in dut.signature.members and "late" in dut.signature.members
    # the buffer holds the deadline's beats, the commands queued before it and the longest frame
    assert dut.buffer_beats >= 500 + 2 * dut.key_queue + 190
    on_chip = PacketDedup(Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7), L3L4)
    assert on_chip.scan == "parallel" and "memory" not in on_chip.signature.members


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(scan="parallel"), ValueError, "takes scan 'memory'"),
    (dict(scan="fsm"), ValueError, "takes scan 'memory'"),
    (dict(memory_depth=0), ValueError, "depth"),
    (dict(memory_depth=65), ValueError, "depth"),
    (dict(memory_depth="8"), TypeError, "depth"),
    (dict(answer_deadline=0), ValueError, "answer_deadline"),
    (dict(answer_deadline=1 << 16), ValueError, "answer_deadline"),
], ids=["parallel", "fsm", "depth-0", "depth-65", "depth-str", "deadline-0", "deadline-big"])
def test_init_wrong(kwargs, error, match):
    with pytest.raises(error, match=match):
        PacketDedup(CONFIG, L3L4, **kwargs)


def test_memory_scan_needs_a_row_layout():
    with pytest.raises(ValueError, match="row layout"):
        PacketDedup(Config(2, 3, segment_blocks=16, span=300, time_width=16), L3L4, scan="memory")


def test_harness_catches_a_late_frame_called_checked():
    """The score is strict about late frames: told that none was late, the model disagrees with a run that had
    some."""
    from apbbf.sim import dedup as harness
    seed = 26
    items = traffic(30, seed)
    dut = make(data_width=64, action="mark", answer_deadline=30)()
    memory = harness.MemoryModel(CONFIG, seed=seed, latency=(1, 120))
    run = harness._simulate_once(dut, items, seed=seed, gap=0.0, stall=0.0, vcd_path=None, max_cycles=60000,
                                 settle=3 * CONFIG.memory_blocks + 200, memory=memory)
    assert any(late for _, _, late in run.decided)
    harness._score(dut, items, run)
    run.decided = [(cycle, unchecked or late, False) for cycle, unchecked, late in run.decided]
    with pytest.raises(Mismatch):
        harness._score(dut, items, run)
