# amaranth: UnusedElaboratable=no
"""UngatedFIFO against a reference queue (Python's deque): random writes and reads that never overfill it, the
head, the level and both flags checked on every clock; a write into a full queue overwrites, as documented; and the
write enable is ``w_en`` itself."""

import random
import re
from collections import deque

import pytest
from amaranth.back import rtlil

from apbbf.hdl.lib.ungated_fifo import UngatedFIFO

from .queue_contract import QueueContract, drive
from .streams import run_simulation


@pytest.mark.parametrize("kwargs, error, message", [
    ({"width": 0, "depth": 4}, ValueError, "width"),
    ({"width": 8, "depth": 1}, ValueError, "depth"),
    ({"width": 8, "depth": 70000}, ValueError, "depth"),
    ({"width": 8.0, "depth": 4}, TypeError, "width"),
    ({"width": 8, "depth": "4"}, TypeError, "depth"),
    ({"width": 8, "depth": 4, "taken": 1}, TypeError, "taken"),
    ({"width": 8, "depth": 4, "slices": 0}, ValueError, "slices"),
    ({"width": 8, "depth": 4, "slices": 9}, ValueError, "slices"),
    ({"width": 8, "depth": 4, "slices": 2.0}, TypeError, "slices"),
])
def test_init_wrong(kwargs, error, message):
    with pytest.raises(error, match=message):
        UngatedFIFO(**kwargs)


@pytest.mark.parametrize("taken, slices", [(False, 1), (True, 1), (True, 3)], ids=["head", "taken", "taken-sliced"])
@pytest.mark.parametrize("depth", [2, 5, 8])
@pytest.mark.parametrize("write_rate, read_rate", [(0.9, 0.9), (0.5, 0.95), (0.95, 0.3)], ids=["even", "drains",
                                                                                               "fills"])
def test_matches_a_queue(depth, write_rate, read_rate, taken, slices):
    """Seed 7 + depth: a write whenever the queue has room and the draw says so, a read whenever the draw says so;
    every clock the head, ``level``, ``w_rdy`` and ``r_rdy`` are the reference queue's, and with ``taken`` the
    entry the last read took is at ``r_taken`` (through full queues: the memory's extra entry keeps it), from
    every slice (three of 4 bits each)."""
    seed = 7 + depth
    print(f"seed {seed}")
    rng = random.Random(seed)
    dut = UngatedFIFO(width=12, depth=depth, taken=taken, slices=slices)
    reference = deque()
    last_taken = None
    counts = {"writes": 0, "reads": 0, "full": 0, "full_taken": 0}

    async def bench(ctx):
        nonlocal last_taken
        for cycle in range(600):
            assert ctx.get(dut.level) == len(reference), cycle
            assert ctx.get(dut.w_rdy) == (len(reference) < depth), cycle
            assert ctx.get(dut.r_rdy) == (len(reference) > 0), cycle
            if reference:
                assert ctx.get(dut.r_data) == reference[0], cycle
            if last_taken is not None:
                assert ctx.get(dut.r_taken) == last_taken, cycle
                counts["full_taken"] += len(reference) == depth
            counts["full"] += len(reference) == depth
            write = len(reference) < depth and rng.random() < write_rate
            read = rng.random() < read_rate
            value = rng.getrandbits(12)
            ctx.set(dut.w_en, write)
            ctx.set(dut.w_data, value)
            ctx.set(dut.r_en, read)
            await ctx.tick()
            if read and reference:
                popped = reference.popleft()
                last_taken = popped if taken else None
                counts["reads"] += 1
            if write:
                reference.append(value)
                counts["writes"] += 1

    run_simulation(dut, bench, vcd=f"ungated_fifo_{depth}_{write_rate}_{read_rate}_{taken}_{slices}")
    assert counts["writes"] > 150 and counts["reads"] > 150, counts
    if write_rate > read_rate:
        assert counts["full"] > 20, counts          # the edge where w_rdy is low is exercised
        if taken:
            assert counts["full_taken"] > 20, counts    # ... with a taken entry held beside a full queue


def test_a_write_into_a_full_queue_overwrites_the_oldest():
    """What the docstring says the writer must avoid: the oldest entry is lost, and the level wraps."""
    dut = UngatedFIFO(width=8, depth=2)

    async def bench(ctx):
        for value in (1, 2, 3):
            ctx.set(dut.w_en, 1)
            ctx.set(dut.w_data, value)
            await ctx.tick()
        ctx.set(dut.w_en, 0)
        await ctx.tick()
        assert ctx.get(dut.r_data) == 3 and ctx.get(dut.level) == 3 % 4

    run_simulation(dut, bench)


def test_the_write_enable_is_w_en():
    """The memory's write port is enabled by ``w_en`` alone: no cell between it and the level."""
    text = rtlil.convert(UngatedFIFO(width=8, depth=4))
    writes = [block for block in text.split("\n  cell ")[1:] if block.startswith("$memwr")]
    enables = [line for block in writes for line in block.splitlines() if "connect \\EN" in line]
    assert len(writes) == 1 and len(enables) == 1, writes
    assert re.fullmatch(r"\s*connect \\EN \{( \\w_en \[0\]){8} \}", enables[0]), enables[0]


@pytest.mark.parametrize("width, slices", [(13, 4)])
def test_slice_widths(width, slices):
    assert UngatedFIFO(width=width, depth=4, slices=slices).slice_widths == (4, 3, 3, 3)


def test_each_slice_reads_at_its_own_address_after_synthesis():
    """Yosys's ECP5 synthesis keeps each slice's pointers and taken entry's address apart (plain copies of one
    register would be merged into one): 4 flip-flops each for 9 entries."""
    from .synthesis import synthesize_ecp5
    cells = synthesize_ecp5(UngatedFIFO(width=64, depth=8, taken=True, slices=4), "test_ungated_fifo_slices")
    registers = {}
    for name, cell in cells.items():
        found = re.search(r"(produce|consume|taken_at)(\d+)", name)
        if cell["type"] == "TRELLIS_FF" and found:
            registers[found.group(0)] = registers.get(found.group(0), 0) + 1
    assert registers == {f"{stem}{n}": 4 for stem in ("produce", "consume", "taken_at") for n in range(4)}, registers


@pytest.mark.parametrize("depth, taken, slices", [(2, False, 1), (5, True, 1), (8, True, 3)])
@pytest.mark.parametrize("write_rate, read_rate", [(0.9, 0.9), (0.95, 0.3)], ids=["even", "fills"])
def test_contract(depth, taken, slices, write_rate, read_rate):
    """The queue contract (tests/queue_contract.py), for a writer that never writes it full: entries in order, a
    write refused only with ``depth`` held, an entry offered the clock after its write and the clock it becomes
    the oldest."""
    seed = 70 + depth
    print(f"seed {seed}")
    dut = UngatedFIFO(width=12, depth=depth, taken=taken, slices=slices)
    contract = QueueContract(capacity=depth, min_latency=1, max_latency=1)

    async def bench(ctx):
        await drive(ctx, contract, random.Random(seed), w_valid=dut.w_en, w_ready=dut.w_rdy, w_data=dut.w_data,
                    r_valid=dut.r_rdy, r_ready=dut.r_en, r_data=dut.r_data, width=12, cycles=800,
                    write_rate=write_rate, read_rate=read_rate, gated_writer=True)

    run_simulation(dut, bench)
    assert contract.reads > 200, contract.reads
    if write_rate > read_rate:
        assert contract.refusals > 10, contract.refusals          # the edge where the queue is full is exercised
