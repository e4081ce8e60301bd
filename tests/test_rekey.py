# amaranth: UnusedElaboratable=no
"""The run-time seed (apbbf.model.hashing, "The run-time seed"): its definition in the model, the hash unit's
``tweak`` port against it, and the model's re-key (a clear and a new run-time seed)."""

import random

import numpy as np
import pytest
from amaranth import Value

from apbbf.hdl.core.hash import HashUnit
from apbbf.model import Config, HashSpec
from apbbf.model.hashing import (MIX_ROUNDS, SBOX, TWEAK_ROTATION, mix_permutation, round_keys, tweak_words)
from .streams import run_simulation

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
