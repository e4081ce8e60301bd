# amaranth: UnusedElaboratable=no
"""The run-time seed (apbbf.model.hashing, "The run-time seed"): its definition in the model, the hash unit's
``tweak`` port against it, and the model's re-key (a clear and a new run-time seed)."""

import random

import numpy as np
import pytest
from amaranth import Value

from apbbf.hdl.core.hash import HashUnit
from apbbf.model import Config, HashSpec
from apbbf.model.registers import Capability, Control
from apbbf.model.hashing import (MIX_ROUNDS, SBOX, TWEAK_ROTATION, mix_permutation, round_keys, tweak_words)
from .streams import frame_collector, run_simulation

M64 = (1 << 64) - 1
SEED = 20261202


def _reference_mix(seed: int, run_seed: int, width: int, x: int) -> int:
    """Step 2 of the definition written out, round by round, with the tweak: K[r] ^ rotl64(run_seed, 13r)."""
    keys = round_keys(seed, width)
    permutation = mix_permutation(width)
    for r in range(MIX_ROUNDS):
        turn = TWEAK_ROTATION * r % 64
        tweak = ((run_seed << turn) | (run_seed >> (64 - turn))) & M64 if turn else run_seed
        x ^= keys[r] ^ (tweak & ((1 << width) - 1))
        x = sum(SBOX[x >> (4 * i) & 15] << (4 * i) for i in range(width // 4))
        x = sum((x >> i & 1) << permutation[i] for i in range(width))
    return x ^ keys[MIX_ROUNDS]


@pytest.mark.parametrize("width, key_width", [(64, 64), (32, 32), (64, 128)])
def test_run_seed_is_the_round_keys_tweak(width, key_width):
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    config = Config(2, 3, key_width=key_width, seed=rng.getrandbits(64))
    base = HashSpec(config)
    assert base.run_seed == 0 and base.round_keys == base.base_round_keys == round_keys(config.seed, width)
    assert HashSpec(config, run_seed=0).round_keys == base.round_keys         # run_seed 0: today's hash
    for _ in range(3):
        run_seed = rng.getrandbits(64)
        print(f"run_seed {run_seed:#x}")
        spec = HashSpec(config, run_seed=run_seed)
        assert spec.segment_masks == base.segment_masks and spec.fold_masks == base.fold_masks
        assert spec.round_keys[-1] == base.round_keys[-1]                    # T[R] = 0
        assert tweak_words(run_seed, width)[1] == (((run_seed << 13) | (run_seed >> 51)) & M64) & ((1 << width) - 1)
        keys = [rng.getrandbits(key_width) for _ in range(40)]
        folded = [spec.linear_fold(k) for k in keys]
        assert [spec.mix(f) for f in folded] == [_reference_mix(config.seed, run_seed, width, f) for f in folded]
        assert spec.mix_many(np.array(folded * 2, dtype=np.uint64)).tolist() == [spec.mix(f) for f in folded] * 2
        assert sum(spec.segment_hash(0, k) != base.segment_hash(0, k) for k in keys) > 30


def test_run_seed_checked():
    with pytest.raises(ValueError, match="run_seed"):
        HashSpec(Config(2, 3), run_seed=1 << 64)
    with pytest.raises(ValueError, match="run_seed must be 0 without mixing"):
        HashSpec(Config(2, 3), mixing=False, run_seed=1)
    with pytest.raises(ValueError, match="run_seed"):
        tweak_words(-1, 64)
    with pytest.raises(TypeError, match="tweak must be a bool"):
        HashUnit(Config(2, 3), tweak=1)


@pytest.mark.parametrize("config", [Config(2, 3, seed=11), Config(2, 2, block_bits=16, block_hashes=2,
                                                                  segment_blocks=16, key_width=32, seed=0xC0FFEE)],
                         ids=["k64", "k32"])
def test_hash_unit_tweak_matches_model(config):
    """HashUnit(tweak=True): a key every cycle, the tweak changed every few keys (with the pipeline drained):
    every segment's hash is HashSpec's with that run_seed; a tweak of 0 is the unit without it."""
    rng = random.Random(SEED + 1)
    print(f"seed {SEED + 1}")
    dut = HashUnit(config, tweak=True)
    run_seeds = [0, M64] + [rng.getrandbits(64) for _ in range(3)]
    print("run_seeds", [hex(s) for s in run_seeds])
    specs = {s: HashSpec(config, run_seed=s) for s in run_seeds}

    async def bench(ctx):
        for run_seed in run_seeds:
            ctx.set(dut.tweak, run_seed)
            ctx.set(dut.en, 1)
            keys = [rng.getrandbits(config.key_width) for _ in range(8)]
            for n in range(len(keys) + dut.latency - 1):
                ctx.set(dut.key, keys[min(n, len(keys) - 1)])
                await ctx.tick()
                if n >= dut.latency - 1:
                    want = keys[n - dut.latency + 1]
                    for j in range(config.physical_segments):
                        got = ctx.get(Value.cast(dut.hashes[j]))
                        assert got == specs[run_seed].segment_hash(j, want), (hex(run_seed), j, hex(want))

    run_simulation(dut, bench)


# The de-duplicator re-keyed under traffic -------------------------------------------------------------------

def _rekey_simulate(dut, items, rekeys, rng):
    """Send ``items`` back to back (no gaps); at each cycle of ``rekeys`` (cycle: seed) pulse ``control_rekey``
    (another testbench, so frames keep coming around it). Returns the frames out and the changes by the frame
    index ``control_frames`` named the cycle after ``control_cleared``."""
    from amaranth import ClockDomain, Module
    from amaranth.sim import Simulator
    from apbbf.sim.dedup import beats
    lanes = dut.data_width // 8
    out, changes, done = [], {}, [False]

    async def producer(ctx):
        await ctx.tick().repeat(40)
        for frame, time, errored in items:
            for value, keep, last in beats(frame, lanes):
                ctx.set(dut.i.payload.data, value)
                ctx.set(dut.i.payload.keep, keep)
                ctx.set(dut.i.payload.last, last)
                ctx.set(dut.i.payload.user.time, time)
                ctx.set(dut.i.payload.user.error, errored and last)
                ctx.set(dut.i.valid, 1)
                await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(300)
        done[0] = True

    async def control(ctx):
        cycle = 0
        for at, seed in sorted(rekeys.items()):
            await ctx.tick().repeat(at - cycle)
            ctx.set(dut.control_seed, seed)
            ctx.set(dut.control_rekey, 1)
            await ctx.tick()
            ctx.set(dut.control_rekey, 0)
            cycle = at + 1
            while not ctx.get(dut.control_cleared):
                await ctx.tick()
                cycle += 1
            await ctx.tick()
            ctx.set(dut.control_seed, rng.getrandbits(64))          # held only until control_cleared
            cycle += 1
            changes.setdefault(ctx.get(dut.control_frames), []).append(("rekey", seed))

    consumer = frame_collector(dut.o, lanes, out)

    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.submodules.dut = dut
    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(control, background=True)
    sim.add_testbench(consumer, background=True)
    sim.run()
    return out, changes


#: A filter small enough that the hash decides false positives: a seed not applied shows in the frames.
SMALL = Config(1, 2, block_bits=16, block_hashes=2, segment_blocks=4, span=400, time_width=16, seed=7,
               extra_segments=1)


def test_dedup_rekey_under_traffic_equals_the_model():
    """Frames back to back while the filter is re-keyed twice: every frame out equals the model's with each
    ``("rekey", seed)`` before the frame ``control_frames`` named; a copy of a frame just before a re-key is not
    found after it; and the seeds mattered (a clear in place of each re-key gives other frames)."""
    from apbbf.hdl.packet.dedup import PacketDedup
    from apbbf.model.packet import KeySpec
    from apbbf.sim.dedup import Mismatch, score_frames
    rng = random.Random(SEED + 2)
    print(f"seed {SEED + 2}")
    pool, items, time = [], [], 100
    for n in range(110):
        time += rng.randrange(0, 3)
        if pool and rng.random() < 0.4:
            frame = rng.choice(pool[-10:])
        else:
            frame = rng.randbytes(60)
            pool.append(frame)
        items.append((frame, time, False))
    seeds = [rng.getrandbits(64) for _ in range(2)]
    print("run seeds", [hex(s) for s in seeds])
    dut = PacketDedup(SMALL, KeySpec.frame(), data_width=64, action="mark", max_frame=288, clearable=True,
                      runtime_seed=True)
    out, changes = _rekey_simulate(dut, items, {300: seeds[0], 700: seeds[1]}, rng)
    assert sorted(c[1] for made in changes.values() for c in made) == sorted(seeds), changes
    model = score_frames(dut, list(enumerate(items)), out, changes=changes)
    assert model.run_seed == seeds[1] and model.counters.duplicates > 10, model.counters
    assert len(out) == len(items)                   # mark forwards every frame, in order
    for index in changes:
        assert 5 < index < len(items) - 5, changes     # frames back to back each side of the re-key
        # the first frame after it that copies one before it is not found (nor marked)
        before = {f for f, _, _ in items[:index]}
        after = next(n for n in range(index, len(items)) if items[n][0] in before)
        assert out[after][0] == items[after][0] and out[after][1][0] == 0, (index, after, out[after][1])
    clears = {i: [("clear",) for _ in made] for i, made in changes.items()}
    with pytest.raises(Mismatch):
        score_frames(dut, list(enumerate(items)), out, changes=clears)


# The register file's seed and re-key (AXI4-Lite, Amaranth simulation) --------------------------------------

def _axil_bench(facts, script):
    """Run ``script(bus)`` against :class:`AXI4LiteRegisters` of ``facts``, the de-duplicator's side answered by a
    stub (``cleared`` four cycles after a clear or re-key, ``window_done`` after a window); ``bus`` has
    ``read(offset) -> (value, ok)``, ``write(offset, value, strb) -> ok`` and ``pulses``, the (kind, seed) of each
    clear or re-key asked for."""
    from apbbf.hdl.lib.axil_registers import AXI4LiteRegisters, OKAY
    dut = AXI4LiteRegisters(facts)
    rekey = facts.caps & Capability.REKEY
    pulses = []

    class Bus:
        def __init__(self, ctx):
            self.ctx, self.pulses = ctx, pulses

        async def write(self, offset, value, strb=0xF):
            ctx = self.ctx
            for name, v in (("awaddr", offset), ("wdata", value), ("wstrb", strb), ("awvalid", 1), ("wvalid", 1)):
                ctx.set(getattr(dut, f"s_axil_{name}"), v)
            await ctx.tick().until(dut.s_axil_awready)
            ctx.set(dut.s_axil_awvalid, 0)
            ctx.set(dut.s_axil_wvalid, 0)
            ctx.set(dut.s_axil_bready, 1)
            await ctx.tick().until(dut.s_axil_bvalid)           # taken at that edge; bresp holds after it
            ctx.set(dut.s_axil_bready, 0)
            return ctx.get(dut.s_axil_bresp) == OKAY

        async def read(self, offset):
            ctx = self.ctx
            ctx.set(dut.s_axil_araddr, offset)
            ctx.set(dut.s_axil_arvalid, 1)
            await ctx.tick().until(dut.s_axil_arready)
            ctx.set(dut.s_axil_arvalid, 0)
            ctx.set(dut.s_axil_rready, 1)
            await ctx.tick().until(dut.s_axil_rvalid)
            ctx.set(dut.s_axil_rready, 0)
            return ctx.get(dut.s_axil_rdata), ctx.get(dut.s_axil_rresp) == OKAY

    async def stub(ctx):
        while True:
            await ctx.tick()
            clear, window_set = ctx.get(dut.clear), ctx.get(dut.window_set)
            again = ctx.get(dut.rekey) if rekey else 0
            if clear or again:
                pulses.append(("rekey" if again else "clear", ctx.get(dut.seed) if rekey else None))
            if clear or again or window_set:
                await ctx.tick().repeat(4)
                ctx.set(dut.cleared if not window_set else dut.window_done, 1)
                await ctx.tick()
                ctx.set(dut.cleared, 0)
                ctx.set(dut.window_done, 0)

    async def bench(ctx):
        await script(Bus(ctx))

    run_simulation(dut, bench, background=[stub])
    return pulses


def _axil_facts(rekey):
    from apbbf.model.registers import Facts
    caps = Capability.CLEAR | Capability.ACTION | (Capability.REKEY if rekey else Capability(0))
    return Facts(SMALL, actions=("drop", "mark", "count"), caps=caps)


@pytest.mark.parametrize("rekey", [False, True], ids=["fixed-seed", "runtime-seed"])
def test_axil_seed_writes_equal_the_register_file(rekey):
    """After reset every register reads as the model of the register file; then the seed's writes, re-keys and
    refused writes: each answer is the model's and every readable register after it too (a refused write changed
    nothing); with the run-time seed the re-key pulses carry the staged seed, without it nothing is asked for."""
    from apbbf.model.registers import RegisterError, RegisterFile, register_map
    facts = _axil_facts(rekey)
    model = RegisterFile(facts)
    registers = register_map()
    rng = random.Random(SEED + 3)
    print(f"seed {SEED + 3}")
    seeds = [rng.getrandbits(64) for _ in range(2)]
    off = {n: r.offset for n, r in registers.items()}
    cases = [("SEED_LO", seeds[0] & 0xFFFF_FFFF), ("SEED_HI", seeds[0] >> 32), ("CONTROL", int(Control.REKEY)),
             ("SEED_HI", seeds[1] >> 32), ("CONTROL", int(Control.REKEY | Control.CLEAR)),
             ("SEED_LO", seeds[1] & 0xFFFF_FFFF), ("CONTROL", int(Control.REKEY | Control.SNAPSHOT)),
             ("CONTROL", int(Control.CLEAR)), ("CONTROL", 1 << 4), ("SEED_LO", 5, 0x3), ("CONTROL", 2, 0x1)]
    expected_pulses = []

    async def check_reads(bus):
        for name, register in registers.items():
            value, ok = await bus.read(register.offset)
            try:
                want = model.read(register.offset)
            except RegisterError:
                assert not ok, f"{name} answered a read"
                continue
            assert ok and value == want, (name, hex(value), hex(want))

    async def script(bus):
        await check_reads(bus)
        for name, value, *strb in cases:
            strb = strb[0] if strb else 0xF
            try:
                if strb != 0xF:
                    raise RegisterError("partial", off[name])
                staged = model.staged_seed
                model.write(off[name], value)
                want = True
                if name == "CONTROL" and value & (Control.CLEAR | Control.REKEY):
                    rekeyed = value & Control.REKEY
                    expected_pulses.append(("rekey" if rekeyed else "clear",
                                            (model.seed if rekeyed else staged) if rekey else None))
            except RegisterError:
                want = False
            assert await bus.write(off[name], value, strb) == want, (name, hex(value), strb, want)
            await check_reads(bus)

    pulses = _axil_bench(facts, script)
    assert pulses == expected_pulses, (pulses, expected_pulses)
    assert model.clears == (4 if rekey else 1) and (model.seed == seeds[1] if rekey else model.seed == 0)
