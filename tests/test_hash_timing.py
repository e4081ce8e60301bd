# amaranth: UnusedElaboratable=no
"""The hash-timing harness (apbbf.flows.hash_timing): the registered wrapper computes what the hash unit does
(so the measured netlist is the unit, not something Yosys could trim), and arguments are checked before any
tool runs."""

import random

import pytest

from apbbf.flows.hash_timing import CONFIGS, hash_pnr
from apbbf.sim.designs import RegisteredHash
from apbbf.hdl.core.hash import hash_latency
from apbbf.model import Config, HashSpec
from .streams import run_simulation

SEED = 61


def reduce_depth(bits: int) -> int:
    depth = 0
    while bits > 1:
        bits, depth = (bits + 3) // 4, depth + 1
    return depth


@pytest.mark.parametrize("config", [Config(2, 2, block_bits=16, block_hashes=2, segment_blocks=16, key_width=32),
                                    Config(1, 2, segment_blocks=8, key_width=70, seed=9)], ids=["k32", "k70"])
def test_registered_hash_outputs_the_parity_of_every_hash_bit(config):
    """A random bit stream shifts through the key register every cycle, ``en`` high: after each clock edge the
    pin shows the XOR of all segment-hash bits of the key the register held latency + the reduction's depth +
    1 edges earlier."""
    dut = RegisteredHash(config)
    spec = HashSpec(config)
    print(f"seed {SEED}")
    rng = random.Random(SEED)
    delay = hash_latency(config) + reduce_depth(config.physical_segments * config.hash_bits) + 1
    mask = (1 << config.key_width) - 1

    def parity_of_hashes(key):
        return sum(bin(spec.segment_hash(j, key)).count("1") for j in range(config.physical_segments)) & 1

    async def bench(ctx):
        ctx.set(dut.en_in, 1)
        keys, key, checked = [], 0, 0
        for edge in range(1, 3 * config.key_width + delay):
            bit = rng.getrandbits(1)
            ctx.set(dut.serial_in, bit)
            await ctx.tick()
            key = (key << 1 | bit) & mask                   # the register after this edge
            keys.append(key)
            if edge > delay + 1:                           # en itself is registered: one edge later
                want = parity_of_hashes(keys[edge - delay - 1])
                assert ctx.get(dut.out) == want, f"edge {edge}: key {keys[edge - delay - 1]:#x}"
                checked += 1
        assert checked > 2 * config.key_width

    run_simulation(dut, bench)


def test_hash_pnr_checks_arguments(tmp_path):
    config = CONFIGS["ice40"][0]
    with pytest.raises(ValueError, match="family must be one of"):
        hash_pnr(config, "gowin", tmp_path)
    with pytest.raises(ValueError, match="at least one nextpnr seed"):
        hash_pnr(config, "ice40", tmp_path, seeds=[])
    with pytest.raises(TypeError, match="config must be a Config"):
        hash_pnr((6, 7), "ice40", tmp_path)
    assert not any(tmp_path.iterdir())
