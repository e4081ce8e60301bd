# amaranth: UnusedElaboratable=no
"""The hash unit and the decoding of a segment hash (hdl/core/hash.py) against the hash specification."""

import random

import pytest
from amaranth import Cat, Module, Signal, Value

from apbbf.hdl.core.hash import (MIX_COPIES, HashUnit, block_mask, block_picks, hash_latency, hash_stages,
                                 segment_hash_layout)
from apbbf.model import Config, HashSpec
from .streams import run_simulation
from .synthesis import flip_flops_per_copy, synthesize_ecp5

M64 = (1 << 64) - 1

CONFIGS = [Config(2, 3), Config(2, 3, key_width=512, seed=3), Config(3, 8, block_bits=512, block_hashes=8, key_width=8),
           Config(2, 3, block_bits=16, block_hashes=1, segment_blocks=1),
           Config(2, 2, block_bits=16, block_hashes=2, segment_blocks=16, key_width=32, seed=0xC0FFEE),
           Config(1, 2, key_width=33, seed=M64), Config(2, 2, segment_blocks=64, key_width=100, seed=7)]
IDS = ["k64", "k512", "k8-B512", "b1-S1", "k32", "k33", "k100"]
#: Latency for each config: fold stages (3 for keys wider than 64 bits) + 4 mixer stages + 2 segment-hash stages.
LATENCY = {"k64": 6, "k512": 9, "k8-B512": 6, "b1-S1": 6, "k32": 6, "k33": 6, "k100": 9}
SEED = 51


def keys_for(config, rng, n):
    width = config.key_width
    return [0, (1 << width) - 1, 1, 1 << (width - 1)] + [rng.getrandbits(width) for _ in range(n)]


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_hash_unit_matches_spec(config, request):
    """The hash unit equals HashSpec.segment_hash bit for bit after its latency with ``en`` held high (as the
    FSM scan drives it), and holds its output while ``en`` is low and the key changes."""
    dut = HashUnit(config)
    spec = HashSpec(config)
    print(f"seed {SEED}")
    rng = random.Random(SEED)
    keys = keys_for(config, rng, 40)
    assert dut.latency == hash_latency(config) == LATENCY[request.node.callspec.id]
    assert sum(hash_stages(config).values()) == dut.latency

    async def bench(ctx):
        for key in keys:
            ctx.set(dut.key, key)
            ctx.set(dut.en, 1)
            await ctx.tick().repeat(dut.latency)
            ctx.set(dut.en, 0)
            for _ in range(2):
                ctx.set(dut.key, rng.getrandbits(config.key_width))    # a new key with en low changes nothing
                await ctx.tick()
                for j in range(config.physical_segments):
                    got = ctx.get(Value.cast(dut.hashes[j]))
                    assert got == spec.segment_hash(j, key), f"segment {j} key {key:#x}"

    run_simulation(dut, bench)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_hash_unit_pipelines_with_stalls(config):
    """A new key every cycle, ``en`` high or low at random (high always, as the parallel scan drives it, in
    the first half): after the n-th cycle with ``en`` high the output is the hash of the key presented in the
    (n - latency + 1)-th, for every segment."""
    dut = HashUnit(config)
    spec = HashSpec(config)
    print(f"seed {SEED + 1}")
    rng = random.Random(SEED + 1)
    cycles = 80

    async def bench(ctx):
        sampled = []
        for cycle in range(cycles):
            key = rng.getrandbits(config.key_width)
            en = 1 if cycle < cycles // 2 else rng.random() < 0.6
            ctx.set(dut.key, key)
            ctx.set(dut.en, en)
            await ctx.tick()
            if en:
                sampled.append(key)
                if len(sampled) >= dut.latency:
                    want = sampled[len(sampled) - dut.latency]
                    for j in range(config.physical_segments):
                        got = ctx.get(Value.cast(dut.hashes[j]))
                        assert got == spec.segment_hash(j, want), f"cycle {cycle} segment {j} key {want:#x}"
        assert len(sampled) > cycles // 2 + 5

    run_simulation(dut, bench)


def test_hash_stages():
    """Stages per width: the fold (4 inputs per parity, then 16) 3 for any key wider than 64 bits; the mixer 4;
    the segment hashes 2."""
    assert hash_stages(Config(2, 3, key_width=8)) == {"fold": 0, "mix": 4, "segment": 2}
    assert hash_stages(Config(2, 3, key_width=64)) == {"fold": 0, "mix": 4, "segment": 2}
    for width in (65, 256, 257, 512):
        assert hash_stages(Config(2, 3, key_width=width)) == {"fold": 3, "mix": 4, "segment": 2}, width
    with pytest.raises(TypeError, match="config must be a Config"):
        hash_stages((2, 3))


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_decoding_matches_split(config):
    """segment_hash_layout's fields, block_mask and block_picks read a segment hash as HashSpec.split does: the key's bits
    are all set exactly when every pick is."""
    spec = HashSpec(config)
    rng = random.Random(7)
    value = Signal(config.hash_bits)
    block = Signal(config.block_bits)
    fields = segment_hash_layout(config)(value)
    mask = Signal(config.block_bits)
    index = Signal(max(1, config.block_index_bits))
    found = Signal()
    m = Module()
    m.d.comb += [mask.eq(block_mask(config, fields)), index.eq(fields.index),
                 found.eq(Cat(*block_picks(config, fields, block)).all())]
    assert segment_hash_layout(config).size == config.hash_bits

    async def bench(ctx):
        for _ in range(60):
            hashed = rng.getrandbits(config.hash_bits)
            want_index, want_mask = spec.split(hashed)
            ctx.set(value, hashed)
            contents = rng.getrandbits(config.block_bits) | (want_mask if rng.random() < 0.5 else 0)
            ctx.set(block, contents)
            assert ctx.get(mask) == want_mask
            assert ctx.get(index) == want_index
            assert ctx.get(found) == (contents & want_mask == want_mask)

    run_simulation(m, bench, period=None)


def test_the_mixer_copies_survive_synthesis():
    """The copies of the mixer's last register (each feeding a group of segment trees) are still distinct
    flip-flops after Yosys's ECP5 synthesis: plain copies would be merged back into one net of high fan-out."""
    config = Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=8, key_width=32)
    assert config.physical_segments >= MIX_COPIES
    # Yosys 0.70's abc9 fails an assertion on this netlist (its reintegration pass): the classic abc LUT mapping
    # in place of synth_ecp5's map_luts step, as apbbf.flows.pnr falls back to.
    cells = synthesize_ecp5(HashUnit(config), "test_hash_copies", "synth_ecp5 -top top -run :map_luts; "
                            "abc -dress -lut 4:7; synth_ecp5 -top top -run map_cells:")
    copies = flip_flops_per_copy(cells, "mix")
    assert sorted(copies) == [str(c) for c in range(MIX_COPIES)], copies
    assert all(count == HashSpec(config).mix_width for count in copies.values()), copies
