# amaranth: UnusedElaboratable=no
"""The parity option (hdl/core/segments.py): without faults the core answers as the model does, at the same cycles;
with memory bits flipped during traffic it never answers a false negative and counts the failing words it read;
the same faults without parity do cause a false negative (the fault test can fail); the option is checked.

Faults are injected by a testbench that writes the simulated memories (the ``lib.memory`` objects the core's
segments hand out, ``APBBF.segments.memories(platform)``, through ``ctx.get``/``ctx.set`` on ``data[address]``)
between clock edges: a set data bit is flipped where the word has one
(a lost one is what could cause a false negative), else any bit. With parity a word is only flipped while its
parity is good (at most one flip per write, so every fault is detectable; two in one byte would not be).
"""

import random

import numpy as np
import pytest
from amaranth import ClockDomain, Fragment, Module, Shape
from amaranth.sim import Simulator

from apbbf.hdl import APBBF
from apbbf.hdl.export.axis import AXIStreamAPBBF
from apbbf.hdl.lib.devices import block_ram, check_memory
from apbbf.hdl.lib.ecp5_ram import ECP5BlockRAM, SimulatedECP5
from apbbf.hdl.core.segments import Segments
from apbbf.hdl.lib.block_ram import InferredBlockRAM
from apbbf.hdl.export.verilog import generate_verilog
from apbbf.model import Config, Op
from apbbf.sim.cycles import accept_schedule
from apbbf.sim.harness import expected, random_commands, simulate

CONFIG = Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=4)
NARROW = Config(2, 3, block_bits=16, block_hashes=2, segment_blocks=4)


@pytest.mark.parametrize("scan", ["fsm", "parallel"])
@pytest.mark.parametrize("config", [CONFIG, NARROW], ids=["B64", "B16"])
def test_no_faults_same_answers_and_cycles(config, scan):
    """Parity on, no faults: every answer equals the model's, every command is accepted in the cycle the cycle
    model predicts (the check adds no latency), and parity_errors stays 0."""
    seed = 31 + config.block_bits
    print(f"seed {seed}")
    commands = random_commands(config, (2 * config.segments + 1) * config.generation, seed=seed)
    run = simulate(config, commands, seed=seed, scan=scan, parity=True, name=f"parity-{scan}")
    _, accesses = expected(config, commands)
    predicted = accept_schedule(config, [op for op, _ in commands], accesses, scan=scan)
    measured = np.array([run.accept[i] for i in range(len(commands))])
    assert (measured == predicted).all(), f"seed {seed}: first difference at command {np.argmax(measured != predicted)}"
    assert run.parity_errors == 0


def _parity_good(word, width):
    """Whether a stored word (data bits, then one even-parity bit per 8 of them) has good parity."""
    data_bits = width * 8 // 9
    data, checks = word & ((1 << data_bits) - 1), word >> data_bits
    return all(bin((data >> (8 * g)) & 0xFF).count("1") % 2 == (checks >> g) & 1 for g in range(data_bits // 8))


def run_with_faults(config, scan, *, parity, seed, platform=None, fault_rate=0.08, count=None):
    """Random traffic with memory bits flipped; returns (hits, model hits, faults injected, reads of faulty
    words seen at the memories' read ports, parity_errors)."""
    rng = random.Random(seed)
    commands = random_commands(config, count or 2 * config.segments * config.generation, seed=seed,
                               duplicates=0.5)
    model_hits, _ = expected(config, commands)
    dut = APBBF(config, scan=scan, parity=parity)
    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.submodules.dut = dut
    fragment = Fragment.get(top, platform)
    memories = dut.segments.memories(platform)
    assert len(memories) == config.physical_segments and all(memories), "every segment's memory is found"
    words = min(config.segment_blocks, min(mem.depth for mems in memories for mem in mems))
    hits, done = {}, {"producing": True}
    faulty = {}                        # (segment, memory number, address) -> None while the flip is unwritten
    stats = {"faults": 0, "faulty_reads": 0}

    async def producer(ctx):
        for index, (op, key) in enumerate(commands):
            ctx.set(dut.cmd.valid, 1)
            ctx.set(dut.cmd.payload.op.as_value(), int(op))
            ctx.set(dut.cmd.payload.key, key)
            while True:
                _, _, ready = await ctx.tick().sample(dut.cmd.ready)
                if ready:
                    break
        ctx.set(dut.cmd.valid, 0)
        done["producing"] = False

    async def consumer(ctx):
        ctx.set(dut.rsp.ready, 1)
        index = 0
        while index < len(commands):
            _, _, valid, hit = await ctx.tick().sample(dut.rsp.valid, dut.rsp.payload.hit)
            if valid:
                hits[index] = bool(hit)
                index += 1
        done["responded"] = True               # reads from here on are not compared with the counter
        for _ in range(4):                     # a read's failure is counted READ_LATENCY + 1 cycles after it
            await ctx.tick()
        if parity:
            stats["parity_errors"] = ctx.get(dut.parity_errors)
        done["consumed"] = True

    ports = [(j, n, mem.read_ports[0]) for j, mems in enumerate(memories) for n, mem in enumerate(mems)]

    async def injector(ctx):
        samples = [value for _, _, port in ports for value in (port.en, port.addr)]
        async for _, _, *values in ctx.tick().sample(*samples):
            if "responded" in done:
                return
            # reads at this edge saw the words as they were before it (the read ports are not transparent)
            read = set()
            for (j, n, _), en, addr in zip(ports, values[0::2], values[1::2]):
                if en and (j, n, addr) in faulty:
                    read.add(j)
            stats["faulty_reads"] += len(read)             # one failing word per segment per read
            for j, n, address in list(faulty):
                mem = memories[j][n]
                if not parity or _parity_good(ctx.get(mem.data[address]), Shape.cast(mem.shape).width):
                    del faulty[(j, n, address)]             # rewritten (or, without parity, read once: forget)
            if not done["producing"] or rng.random() >= fault_rate:
                continue
            j = rng.randrange(config.physical_segments)
            n = rng.randrange(len(memories[j]))
            address = rng.randrange(words)
            mem = memories[j][n]
            width = Shape.cast(mem.shape).width
            word = ctx.get(mem.data[address])
            if parity and not _parity_good(word, width):
                continue                                    # at most one flip per write
            data_bits = width * 8 // 9 if parity else width
            ones = [b for b in range(data_bits) if word >> b & 1]
            bit = rng.choice(ones) if ones else rng.randrange(width)
            ctx.set(mem.data[address], word ^ (1 << bit))
            faulty[(j, n, address)] = None
            stats["faults"] += 1

    sim = Simulator(fragment)
    sim.add_clock(1e-8, domain="sync")
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.add_testbench(injector, background=True)
    sim.run()
    assert len(hits) == len(commands)
    return commands, hits, model_hits, stats


def _score(commands, hits, model_hits):
    false_negatives = [i for i, (op, _) in enumerate(commands) if op != Op.INSERT and model_hits[i] and not hits[i]]
    false_positives = [i for i, (op, _) in enumerate(commands) if op != Op.INSERT and hits[i] and not model_hits[i]]
    return false_negatives, false_positives


@pytest.mark.parametrize("scan,platform", [("fsm", None), ("parallel", None), ("parallel", "ecp5")])
def test_faults_never_cause_a_false_negative(scan, platform):
    """Bits flipped in the memories during traffic, parity on: every command the model answers present is
    answered present; the extra presents are counted; parity_errors counts at least every read (per segment)
    of a word holding an unwritten flip."""
    seed = {"fsm": 7, "parallel": 8}[scan] + (10 if platform else 0)
    commands, hits, model_hits, stats = run_with_faults(
        CONFIG, scan, parity=True, seed=seed, platform=SimulatedECP5() if platform else None,
        fault_rate=0.08 if scan == "fsm" else 0.5)                 # the parallel scan takes a command a clock
    false_negatives, false_positives = _score(commands, hits, model_hits)
    print(f"seed {seed}: {stats['faults']} faults, {stats['faulty_reads']} reads of faulty words, "
          f"parity_errors {stats['parity_errors']}, {len(false_positives)} answers present where the model "
          f"says absent, {len(false_negatives)} false negatives")
    assert stats["faults"] >= 20 and stats["faulty_reads"] > 0, f"seed {seed}: the test injected too little"
    assert not false_negatives, f"seed {seed}: command {false_negatives[0]} answered absent, model says present"
    assert stats["parity_errors"] >= stats["faulty_reads"], f"seed {seed}: {stats}"


def test_faults_without_parity_cause_a_false_negative():
    """The mutant: the same fault injection with parity off loses a key (so the test above can fail)."""
    seed = 7
    commands, hits, model_hits, stats = run_with_faults(CONFIG, "fsm", parity=False, seed=seed)
    false_negatives, _ = _score(commands, hits, model_hits)
    print(f"seed {seed}: {stats['faults']} faults without parity, {len(false_negatives)} false negatives")
    assert false_negatives, f"seed {seed}: no false negative without parity; the fault test proves nothing"


def test_memory_accounting_counts_the_parity_bits():
    """iCE40: B/8 more bits per word, more SB_RAM40_4K; ECP5: the ninth bits, no more DP16KD."""
    ice40, ecp5 = block_ram("iCE40UP5K"), block_ram("LFE5U-85F")
    config = Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=256)
    assert ice40.blocks_for_config(config) == 6 * 4 and ice40.blocks_for_config(config, parity=True) == 6 * 5
    for depth in (4, 512, 2048, 4096):
        bench = Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=depth)
        assert ecp5.blocks_for_config(bench, parity=True) == ecp5.blocks_for_config(bench)
    assert ecp5.tile(4096, 64, parity=True).word_bits == 8               # 9-bit mode: the parity rides along
    big = Config(2, 4, block_bits=64, block_hashes=4, segment_blocks=256)    # 7 x 4 SB_RAM40_4K, 7 x 5 with parity
    check_memory(big, "iCE40UP5K")
    with pytest.raises(ValueError, match="parity bits"):
        check_memory(big, "iCE40UP5K", parity=True)


@pytest.mark.parametrize("make", [
    lambda: APBBF(CONFIG, parity=1),
    lambda: Segments(CONFIG, parity="yes"),
    lambda: AXIStreamAPBBF(CONFIG, parity=None),
    lambda: InferredBlockRAM(4, 64, parity=1),
    lambda: ECP5BlockRAM(4, 64, parity=1),
    lambda: block_ram("iCE40UP5K").tile(4, 64, parity=1),
    lambda: check_memory(CONFIG, "iCE40UP5K", parity=1),
    lambda: generate_verilog(CONFIG, parity="on"),
])
def test_init_wrong_parity(make):
    """parity must be a bool: a TypeError naming it, before any elaboratable exists."""
    with pytest.raises(TypeError, match="parity must be a bool"):
        make()


def test_export_with_parity_has_the_port_and_says_so():
    """The Verilog export with parity: the parity_errors port (32 bits) and the header lines."""
    text = generate_verilog(CONFIG, parity=True)
    header = text[text.index("module apbbf_axis("):]
    ports = {p.strip() for p in header[:header.index(");")].split("(", 1)[1].split(",")}
    assert "parity_errors" in ports and "output [31:0] parity_errors;" in text
    assert "--scan fsm --parity)" in text and "parity: one even-parity bit per 8 bits" in text
