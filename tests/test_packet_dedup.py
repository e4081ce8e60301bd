# amaranth: UnusedElaboratable=no
"""PacketDedup in the Amaranth simulator, scored frame by frame against :class:`apbbf.model.dedup.Dedup`
(:mod:`apbbf.sim.dedup`): frames built with scapy (Ethernet, IPv4/IPv6, TCP/UDP, 0-2 VLAN tags, ARP) and copies
that differ only in masked fields, runts, jumbo frames, every ``keep`` pattern, back-to-back minimum frames,
idle gaps, output backpressure, reset mid-frame and fail open."""

import random

import pytest

from apbbf.hdl.packet.dedup import PacketDedup
from apbbf.model import Config
from apbbf.model.packet import KeySpec, Range
from apbbf.sim.dedup import RESET, Mismatch, simulate_dedup
from apbbf.sim.frames import copy_of, pad, packet, traffic

CONFIG = Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7)
SPECS = {"l3l4": KeySpec.l3l4(), "frame": KeySpec.frame(),
         "ports": KeySpec((Range("l3", 12, 8),), (Range("l3", 8, 32, b"\xff" * 4),), (Range("frame", 0, 14),))}


def make(spec="l3l4", **kwargs):
    kwargs.setdefault("max_frame", 9600)
    return lambda: PacketDedup(CONFIG, SPECS[spec], **kwargs)


def summary(run):
    return {"frames out": len(run.out), **run.counters}


# Against the model -------------------------------------------------------------------------------------------------

#: (data_width, action, spec): each action and each preset at both ends of the widths.
MODEL_CASES = [(64, "drop", "l3l4"), (512, "mark", "frame"), (64, "count", "frame"), (512, "drop", "l3l4"),
               (64, "mark", "ports")]
#: Outside ``make test`` (``make test-slow``): the others cover every action and preset, and
#: ``test_back_to_back_minimum_frames`` the 512-bit de-duplicator.
SLOW_CASES = {(512, "drop", "l3l4"), (64, "mark", "ports"), (512, "mark", "frame")}


@pytest.mark.parametrize("width,action,spec", [pytest.param(*case, marks=pytest.mark.slow) if case in SLOW_CASES
                                               else case for case in MODEL_CASES],
                         ids=["-".join(map(str, case)) for case in MODEL_CASES])
def test_matches_model(width, action, spec):
    seed = 11
    print(f"seed {seed}")
    items = traffic(90, seed)
    run = simulate_dedup(make(spec, data_width=width, action=action), items, seed=seed,
                         name=f"dedup-{width}-{action}-{spec}")
    assert run.counters["frames"] == len(items)
    assert run.counters["duplicates"] > 10 and run.counters["unchecked"] == 0, summary(run)


@pytest.mark.parametrize("width", [128, 256])
@pytest.mark.slow
def test_every_width(width):
    items = traffic(40, 5)
    run = simulate_dedup(make("ports", data_width=width, action="mark"), items, seed=5, name=f"dedup-w{width}")
    assert run.counters["duplicates"] > 5, summary(run)


#: Idle gaps alone and backpressure alone run in ``make test-slow``; ``make test`` runs both at once, which reaches
#: the stalls of each side and their overlap.
@pytest.mark.parametrize("gap,stall,action", [pytest.param(0.3, 0.0, "drop", marks=pytest.mark.slow),
                                              pytest.param(0.0, 0.5, "mark", marks=pytest.mark.slow),
                                              (0.3, 0.5, "drop")],
                         ids=["idle-drop", "backpressure-mark", "both-drop"])
def test_gaps_and_backpressure(gap, stall, action):
    items = traffic(50, 21)
    run = simulate_dedup(make(data_width=64, action=action), items, seed=21, gap=gap, stall=stall,
                         name=f"dedup-stall-{action}")
    assert run.counters["unchecked"] == 0 and run.counters["duplicates"] > 5, summary(run)


#: Without the FCS every other test; ``make test`` runs this one with it.
@pytest.mark.parametrize("fcs", [pytest.param(False, marks=pytest.mark.slow), True])
def test_fcs(fcs):
    """With ``fcs`` the last 4 bytes are not keyed: copies with different FCS bytes are duplicates."""
    rng = random.Random(3)
    items = []
    for time in range(0, 40, 2):
        frame = pad(bytes(packet(rng))) if time % 4 == 0 else items[-1][0][:-4 if fcs else None]
        items.append((frame + (rng.randbytes(4) if fcs else b""), time, False))
    run = simulate_dedup(make(data_width=64, action="mark", fcs=fcs), items, seed=3, name=f"dedup-fcs-{fcs}")
    assert run.counters["duplicates"] >= 9, summary(run)


# Directed ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,duplicates", [("l3l4", 4), ("frame", 1)])
def test_masked_fields(spec, duplicates):
    """Copies that differ in TTL, DSCP or a VLAN tag are duplicates under ``l3l4``, not under ``frame`` (only
    the exact copy is)."""
    rng = random.Random(1)
    p = packet(rng, tags=1, v6=False, size=40)
    frames = [pad(bytes(p)), *(copy_of(p, kind, rng) for kind in ("exact", "ttl", "dscp", "vlan"))]
    assert len(set(frames)) == 4
    items = [(frame, 10 + t, False) for t, frame in enumerate(frames)]
    run = simulate_dedup(make(spec, data_width=64, action="mark"), items, name=f"dedup-masked-{spec}")
    assert [flags[0] for _, flags in run.out] == [0] + [1] * duplicates + [0] * (4 - duplicates)


def test_window_edge():
    """A copy ``span`` ticks after its last insert is a duplicate; one long after is not."""
    frame = pad(bytes(packet(random.Random(2), tags=0, v6=True, size=10)))
    span = CONFIG.span
    times = [0, span, 2 * span, 2 * span + 4 * span + 100]
    run = simulate_dedup(make(data_width=64, action="mark"), [(frame, t, False) for t in times],
                         name="dedup-window")
    assert [flags[0] for _, flags in run.out] == [0, 1, 1, 0]


@pytest.mark.slow
def test_free_running_counter():
    """Times from the design's own counter (``tuser`` times ignored): copies more than ``span`` ticks of
    ``tick_cycles`` cycles after their original are new, nearer ones duplicates."""
    rng = random.Random(14)
    originals = [pad(bytes(packet(rng, tags=0, v6=False, size=0))) for _ in range(4)]
    items = []
    for n in range(60):
        items.append((rng.choice(originals), 0, False))
        if n % 10 == 9:
            items.append((pad(bytes(packet(rng, size=1500))), 0, False))     # 190 beats: time passes
    run = simulate_dedup(make(data_width=64, action="mark", timestamps="counter", tick_cycles=2), items,
                         name="dedup-counter")
    assert 5 < run.counters["duplicates"] < 60, summary(run)


def test_errored_frames_pass_uninserted():
    """A frame the MAC marks bad passes flagged and is not inserted: its copy is not a duplicate."""
    frame = pad(bytes(packet(random.Random(4), tags=0, size=40)))
    items = [(frame, 0, True), (frame, 1, False), (frame, 2, True), (frame, 3, False)]
    run = simulate_dedup(make(data_width=64, action="drop"), items, name="dedup-errored")
    assert [flags for _, flags in run.out] == [(0, 0, 1), (0, 0, 0), (0, 0, 1)]
    assert run.counters["errored"] == 2 and run.counters["dropped"] == 1


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_every_keep_pattern(width):
    """Frame lengths covering every residue modulo the beat, runts (1 to 13 bytes) among them."""
    rng = random.Random(width)
    lanes = width // 8
    items, time = [], 0
    for length in [*range(1, 14), *range(60, 60 + lanes + 1)]:
        frame = pad(bytes(packet(rng, tags=0, size=200)))[:length] if length >= 60 else rng.randbytes(length)
        items += [(frame, time, False), (frame, time + 1, False)]
        time += 3
    run = simulate_dedup(make(data_width=width, action="mark"), items, seed=width, name=f"dedup-keep-{width}")
    assert run.counters["duplicates"] == len(items) // 2, summary(run)


@pytest.mark.slow
def test_jumbo_frames():
    rng = random.Random(6)
    jumbo = pad(bytes(packet(rng, tags=1, size=8950)))
    items = [(jumbo, 0, False), (pad(bytes(packet(rng))), 1, False), (jumbo, 2, False)]
    run = simulate_dedup(make(data_width=512, action="drop"), items, name="dedup-jumbo")
    assert run.counters["dropped"] == 1 and len(run.out) == 2


def test_oversize_frames_pass_unchecked():
    """With ``drop``, a frame longer than ``max_frame`` is released before its key is known: unchecked."""
    rng = random.Random(8)
    long = pad(bytes(packet(rng, size=1400)))
    short = pad(bytes(packet(rng, size=10)))
    items = [(short, 0, False), (long, 1, False), (long, 2, False), (short, 3, False)]
    run = simulate_dedup(make(data_width=64, action="drop", max_frame=1000), items, name="dedup-oversize")
    assert [flags for _, flags in run.out] == [(0, 0, 0), (0, 1, 0), (0, 1, 0)]


@pytest.mark.slow
def test_release_beside_a_key():
    """With ``drop`` at the smallest ``max_frame`` allowed (64-bit beats), each short frame follows a long one (so
    its key comes out at the extractor's worst latency) and is followed back to back by an oversize frame, whose
    release is then due a few cycles after that key: the two decisions enter the queue in two writes, in frame
    order (a release and a key in the same cycle would be one write, and a decision lost)."""
    seed = 14
    print(f"seed {seed}")
    rng = random.Random(seed)
    latency = make(data_width=64, action="drop")().extractor_latency
    max_frame = (latency + 3) * 8
    with pytest.raises(ValueError, match="max_frame"):
        make(data_width=64, action="drop", max_frame=max_frame - 8)()
    originals = [(pad(bytes(packet(rng, size=rng.randrange(80, 150)))), pad(bytes(packet(rng, size=0))))
                 for _ in range(4)]
    items = []
    for n in range(16):
        long, short = rng.choice(originals)
        over = b""
        while len(over) <= max_frame + 8:           # packet() draws an ARP frame now and then: not oversize
            over = pad(bytes(packet(rng, size=max_frame + rng.randrange(10, 40))))
        items += [(long, n, False), (short, n, False), (over, n, False)]
    run = simulate_dedup(make(data_width=64, action="drop", max_frame=max_frame), items, seed=seed,
                         name="dedup-release-beside-a-key")
    assert run.counters["unchecked"] == 16 and run.counters["duplicates"] >= 20, summary(run)


@pytest.mark.parametrize("action", [pytest.param("mark", marks=pytest.mark.slow), "drop"])
def test_back_to_back_minimum_frames(action):
    """At 512 bits, 60-byte frames back to back: one frame per clock in and out, none unchecked (with ``drop``,
    a dropped frame takes its clock too, and the forwarded ones leave in the clocks between); with ``drop``
    through a key queue of 6, the least that keeps a key per clock flowing (docs/dedup.md)."""
    rng = random.Random(9)
    originals = [pad(bytes(packet(rng, tags=0, v6=False, size=0))) for _ in range(150)]
    items = [(rng.choice(originals[:n + 1]), n // 4, False) for n in range(300)]
    key_queue = 6 if action == "drop" else 16
    run = simulate_dedup(make(data_width=512, action=action, key_queue=key_queue), items,
                         name=f"dedup-line-rate-{action}")
    assert run.counters["unchecked"] == 0, summary(run)
    assert run.first_beat == list(range(run.first_beat[0], run.first_beat[0] + len(items)))
    if action == "mark":
        assert run.taken == list(range(run.taken[0], run.taken[0] + len(items)))
    else:
        assert run.counters["dropped"] > 50 and len(run.out) == len(items) - run.counters["dropped"], summary(run)
        assert run.taken[-1] - run.taken[0] < len(items), summary(run)


@pytest.mark.slow
def test_fail_open_when_the_core_falls_behind():
    """With the FSM scan the core takes a key every few cycles: back-to-back minimum frames overflow the key
    queue, and the frames that found it full pass unchecked, flagged and counted; the link never stalls."""
    rng = random.Random(10)
    originals = [pad(bytes(packet(rng, tags=0, v6=False, size=0))) for _ in range(8)]
    items = [(rng.choice(originals), n // 4, False) for n in range(200)]
    run = simulate_dedup(make(data_width=512, action="mark", scan="fsm", key_queue=4), items, name="dedup-fail-open")
    assert run.counters["unchecked"] > 50 and run.counters["duplicates"] > 5, summary(run)
    assert run.first_beat == list(range(run.first_beat[0], run.first_beat[0] + len(items)))


@pytest.mark.slow
def test_reset_mid_frame():
    items = traffic(40, 12)
    items = items[:20] + [RESET] + items[20:]
    run = simulate_dedup(make(data_width=64, action="drop"), items, seed=12, name="dedup-reset")
    assert run.resets


def test_reset_cuts_a_frame_and_its_tail_is_a_new_frame():
    """What a reset does, as docs/dedup.md states it: a reset in the middle of a frame's beats, and the source goes
    on with the frame's tail once the filter has cleared its memory. A frame still in the packet buffer is lost,
    and so is the cut frame's head; the counters start again from zero; the tail enters as a frame of its own, so
    a copy of it is its duplicate; and a frame inserted before the reset is new again (the filter was emptied).
    Times on beats after the first and error bits on beats before the last are noise, ignored."""
    from amaranth import ClockDomain, Module
    from amaranth.sim import Simulator

    from apbbf.model.dedup import Dedup
    from apbbf.sim.dedup import beats

    dut = PacketDedup(CONFIG, SPECS["l3l4"], data_width=64, action="drop", max_frame=9600)
    rng = random.Random(14)
    before = [pad(bytes(packet(rng, tags=0, v6=False, size=40))) for _ in range(2)]
    cut = pad(bytes(packet(rng, tags=1, v6=False, size=300)))
    head_beats = 10
    tail = cut[8 * head_beats:]
    after = [(tail, 20), (tail, 21), (before[0], 22)]    # the tail, its copy, a frame inserted before the reset
    settle = CONFIG.segment_blocks + 8
    out, reset_at, counters = [], [], {}

    async def send(ctx, frame, time, count=None):
        for n, (data, keep, last) in enumerate(beats(frame, 8)[:count]):
            ctx.set(dut.i.payload.data, data)
            ctx.set(dut.i.payload.keep, keep)
            ctx.set(dut.i.payload.last, last)
            ctx.set(dut.i.payload.user.time, time if n == 0 else rng.getrandbits(CONFIG.time_width))
            ctx.set(dut.i.payload.user.error, 0 if last else rng.getrandbits(1))
            ctx.set(dut.i.valid, 1)
            while not (await ctx.tick().sample(dut.i.ready))[-1]:
                pass
        ctx.set(dut.i.valid, 0)

    async def producer(ctx):
        await ctx.tick().repeat(settle)
        await send(ctx, before[0], 10)
        await ctx.tick().repeat(100)                    # out, and inserted
        await send(ctx, before[1], 11)                  # in flight at the reset
        await send(ctx, cut, 12, head_beats)
        ctx.set(domain.rst, 1)
        await ctx.tick()
        ctx.set(domain.rst, 0)
        reset_at.append(len(out))
        await ctx.tick().repeat(settle)
        for frame, time in after:
            await send(ctx, frame, time)
        await ctx.tick().repeat(300)
        counters.update({name: ctx.get(getattr(dut, name))
                         for name in ("frames", "duplicates", "dropped", "unchecked", "errored")})

    async def consumer(ctx):
        ctx.set(dut.o.ready, 1)
        frame = bytearray()
        async for _, _, valid, payload, in_reset in ctx.tick().sample(dut.o.valid, dut.o.payload, domain.rst):
            if in_reset:
                frame = bytearray()
            elif valid:
                frame += int(payload.data).to_bytes(8, "little")[:bin(payload.keep).count("1")]
                if payload.last:
                    user = payload.user
                    out.append((bytes(frame), (int(user.duplicate), int(user.unchecked), int(user.errored))))
                    frame = bytearray()

    top = Module()
    top.domains.sync = domain = ClockDomain("sync")
    top.submodules.dut = dut
    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer, background=True)
    sim.run()

    assert out[:reset_at[0]] == [(before[0], (0, 0, 0))], out
    model = Dedup(CONFIG, SPECS["l3l4"], "drop", max_frame=9600, data_width=64)
    expected = [(frame, (int(mark), 0, 0)) for frame, time in after
                for _, forward, mark in [model.frame(frame, time)] if forward]
    assert out[reset_at[0]:] == expected == [(tail, (0, 0, 0)), (before[0], (0, 0, 0))]
    assert {**counters, "late": 0} == model.counters.as_dict() == dict(frames=3, duplicates=1, dropped=1, unchecked=0,
                                                                       errored=0, late=0)


@pytest.mark.slow
def test_detects_a_wrong_answer():
    """The scoring can fail: a DUT built with a span of 300 ticks that claims (to the harness's model) a span of
    20 answers "duplicate" for copies 20 to 300 ticks apart that the model calls new. Twenty frames: the first
    such copy is frame 7, and a failing run is simulated twice (the second time for its VCD)."""
    short = Config(2, 3, segment_blocks=16, span=20, time_width=16, seed=7)

    class Lying(PacketDedup):
        config = property(lambda self: short)

    items = traffic(20, 13)
    with pytest.raises(Mismatch, match="frame 7: flags"):
        simulate_dedup(lambda: Lying(CONFIG, SPECS["l3l4"], data_width=64, action="mark"), items,
                       name="dedup-detect")


# Parameters ---------------------------------------------------------------------------------------------------------

def test_init_wrong_config():
    with pytest.raises(TypeError, match="config"):
        PacketDedup("config", KeySpec.l3l4())
    with pytest.raises(ValueError, match="span"):
        PacketDedup(Config(2, 3, segment_blocks=4), KeySpec.l3l4())
    with pytest.raises(ValueError, match="key_width"):
        PacketDedup(Config(2, 3, segment_blocks=4, span=100, key_width=32), KeySpec.l3l4())


@pytest.mark.parametrize("name,value,error", [
    ("data_width", 32, ValueError), ("action", "forward", ValueError), ("timestamps", "mac", ValueError),
    ("tick_cycles", 0, ValueError), ("tick_cycles", 1.5, TypeError), ("fcs", 1, TypeError),
    ("max_frame", 63, ValueError), ("max_frame", 65536, ValueError), ("key_queue", 1, ValueError),
    ("scan", "serial", ValueError), ("pace", 0, ValueError), ("pace", 4, ValueError), ("pace", 2.0, TypeError),
])
def test_init_wrong_parameter(name, value, error):
    with pytest.raises(error, match=name):
        PacketDedup(CONFIG, KeySpec.l3l4(), **{name: value})


@pytest.mark.parametrize("data_width,pace", [(512, 2), (256, 3)])
def test_init_pace_above_the_widths(data_width, pace):
    # A 60-byte frame is one beat at 512 bits and two at 256: a slower core would fall behind such frames.
    with pytest.raises(ValueError, match="pace"):
        PacketDedup(CONFIG, KeySpec.l3l4(), data_width=data_width, pace=pace)


def test_pace_default_and_chosen():
    assert [PacketDedup(CONFIG, KeySpec.l3l4(), data_width=w).core_pace for w in (64, 128, 256, 512)] == [3, 3, 2, 1]
    assert PacketDedup(CONFIG, KeySpec.l3l4(), data_width=64, pace=2).core_pace == 2
    assert PacketDedup(CONFIG, KeySpec.l3l4(), data_width=64, scan="fsm").core_pace == 1


def test_init_wrong_spec():
    with pytest.raises(TypeError, match="spec"):
        PacketDedup(CONFIG, "l3l4")


def test_init_max_frame_below_the_extractor_latency():
    with pytest.raises(ValueError, match="max_frame"):
        PacketDedup(CONFIG, KeySpec.l3l4(), data_width=512, action="drop", max_frame=64)
