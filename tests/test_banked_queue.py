# amaranth: UnusedElaboratable=no
"""The banked block RAM queue: entries out in order and whole (each bank's slice from the same entry), one per clock
each way, its capacity, its parameters."""

import random
import re

import pytest
from amaranth.lib import data

from apbbf.hdl.lib.ecp5_ram import SimulatedECP5
from apbbf.hdl.lib.banked_queue import STAGE_DEPTH, BankedQueue
from .queue_contract import QueueContract, drive
from .streams import check_rules, get, put, rng_for, run_simulation

#: A 20-bit entry in three banks (6, 7 and 7 bits: the fields straddle the banks' edges).
ENTRY = data.StructLayout({"data": 16, "keep": 3, "last": 1})
SEED = 20261126
#: The banks' block RAMs: inferred (``lib.memory``), and the DP16KD with their output register, as on ECP5.
PLATFORMS = pytest.mark.parametrize("platform", [None, SimulatedECP5()], ids=["inferred", "ecp5"])
#: The write into the block RAMs as it comes, or through each bank's registers.
WRITES = pytest.mark.parametrize("registered_write", [False, True], ids=["direct", "registered"])


@pytest.mark.parametrize("kwargs, error, message", [
    ({"depth": 1}, ValueError, "depth"),
    ({"depth": 70000}, ValueError, "depth"),
    ({"depth": 8.0}, TypeError, "depth"),
    ({"depth": 8, "bank_width": 0}, ValueError, "bank_width"),
    ({"depth": 8, "bank_width": True}, TypeError, "bank_width"),
    ({"depth": 8, "registered_write": 1}, TypeError, "registered_write"),
])
def test_init_wrong(kwargs, error, message):
    with pytest.raises(error, match=message):
        BankedQueue(ENTRY, **kwargs)


@pytest.mark.parametrize("width, bank_width, widths", [
    (577, 72, (73,) + (72,) * 7),       # a 512-bit beat: eight banks, 65 block RAMs of 2048 x 9
    (73, 72, (73,)),                    # a 64-bit beat: one bank
    (2, 72, (2,)),
    (20, 6, (7, 7, 6)),
])
def test_bank_widths(width, bank_width, widths):
    assert BankedQueue(width, 8, bank_width=bank_width).bank_widths == widths


@pytest.mark.parametrize("w_stall, r_stall", [(0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.4, 0.4)],
                         ids=["full-rate", "idle", "backpressure", "both"])
@PLATFORMS
@WRITES
def test_entries_in_order(w_stall, r_stall, platform, registered_write):
    print(f"seed {SEED}")
    dut = BankedQueue(ENTRY, 6, bank_width=6, registered_write=registered_write)
    assert len(dut.bank_widths) == 3
    rng = random.Random(SEED)
    entries = [rng.getrandbits(ENTRY.size) for _ in range(300)]
    got, errors = [], []
    w_rng, r_rng = rng_for(w_stall, SEED), rng_for(r_stall, SEED + 1)

    async def producer(ctx):
        for entry in entries:
            await put(ctx, dut.w, ENTRY.from_bits(entry), rng=w_rng, stall=w_stall)

    async def consumer(ctx):
        for _ in entries:
            got.append((await get(ctx, dut.r, rng=r_rng, stall=r_stall)).as_value().value)

    async def watchdog(ctx):
        # A queue that loses entries would leave the consumer waiting: stop at ten times the cycles needed.
        await ctx.tick().repeat(10 * len(entries))
        assert len(got) == len(entries), f"{len(got)} of {len(entries)} entries out after {10 * len(entries)} clocks"

    # The producer in the background: a queue that repeats entries ends the run rather than hangs it.
    run_simulation(dut, consumer, watchdog, background=[producer, check_rules(dut.r, "r", errors)],
                   vcd="banked_queue_in_order", platform=platform)
    assert errors == []
    assert [hex(e) for e in got] == [hex(e) for e in entries]


@PLATFORMS
@WRITES
def test_one_entry_per_clock_and_capacity(platform, registered_write):
    dut = BankedQueue(ENTRY, 6, bank_width=6, registered_write=registered_write)
    rng = random.Random(SEED)
    entries = [rng.getrandbits(ENTRY.size) for _ in range(40)]
    taken, accepted = [], []

    async def bench(ctx):
        # Full: with no reads, depth + STAGE_DEPTH entries go in (each bank's block RAM holds depth, its stage
        # STAGE_DEPTH - 1, the credits it reads ahead with, and the skid register one), then ready is low.
        for entry in entries:
            ctx.set(dut.w.payload, ENTRY.from_bits(entry))
            ctx.set(dut.w.valid, 1)
            _, _, ready = await ctx.tick().sample(dut.w.ready)
            if not ready:
                break
            accepted.append(entry)
        ctx.set(dut.w.valid, 0)
        for _ in range(4):
            await ctx.tick()
        assert len(accepted) == 6 + STAGE_DEPTH
        # Reading on every clock while the rest are written: one entry out on every clock until the last.
        ctx.set(dut.r.ready, 1)
        rest = iter(entries[len(accepted):])
        entry = next(rest)
        ctx.set(dut.w.payload, ENTRY.from_bits(entry))
        ctx.set(dut.w.valid, 1)
        while len(taken) < len(entries):
            _, _, r_valid, payload, w_ready = await ctx.tick().sample(dut.r.valid, dut.r.payload, dut.w.ready)
            assert r_valid, f"no entry out at clock {len(taken)}"
            taken.append(payload.as_value().value)
            if w_ready and entry is not None:
                entry = next(rest, None)
                ctx.set(dut.w.valid, entry is not None)
                if entry is not None:
                    ctx.set(dut.w.payload, ENTRY.from_bits(entry))

    run_simulation(dut, bench, vcd="banked_queue_rate", platform=platform)
    assert taken == entries[:len(taken)]


def _first_entry_clocks(registered_write):
    """Clocks from an entry's write into an empty queue to its ``r.valid``."""
    dut = BankedQueue(ENTRY, 6, bank_width=6, registered_write=registered_write)
    clocks = []

    async def bench(ctx):
        ctx.set(dut.w.payload, ENTRY.from_bits(0x5A5A5))
        ctx.set(dut.w.valid, 1)
        await ctx.tick()
        ctx.set(dut.w.valid, 0)
        for clock in range(1, 20):
            if ctx.get(dut.r.valid):
                clocks.append(clock)
                assert ctx.get(dut.r.payload).as_value().value == 0x5A5A5
                return
            await ctx.tick()

    run_simulation(dut, bench, vcd=f"banked_queue_latency_{registered_write}")
    assert clocks, "the entry never came out"
    return clocks[0]


def test_registered_write_takes_one_clock_more():
    # The banks' write registers are on the path: the entry comes out exactly one clock later (the rate and the
    # capacity are the other tests').
    assert _first_entry_clocks(True) == _first_entry_clocks(False) + 1


@pytest.mark.parametrize("platform, block_ram", [
    (None, "InferredBlockRAM"),
    (SimulatedECP5(), "ECP5BlockRAM"),
    ("ulx3s", "ECP5BlockRAM"),
])
def test_banks_are_the_platforms_block_rams(platform, block_ram):
    # On ECP5 each bank is DP16KD with the output register (no inferred memory, so no read-write bypass of Yosys
    # in front of it), elsewhere a lib.memory with a register behind it: the same two clocks either way.
    from amaranth.hdl import Fragment
    if platform == "ulx3s":
        from amaranth_boards.ulx3s import ULX3S_85F_Platform
        platform = ULX3S_85F_Platform()
    fragment = Fragment.get(BankedQueue(ENTRY, 6, bank_width=6), platform)
    banks = {name: [type(origin).__name__ for origin in sub.origins] for sub, name, _ in fragment.subfragments
             if name.startswith("bank")}
    assert sorted(banks) == ["bank0", "bank1", "bank2"]
    assert all(block_ram in origins for origins in banks.values()), banks


def test_a_beat_takes_as_many_block_rams_as_inferred():
    # A 512-bit beat (577 bits: data, keep, last) of 2048 entries on ECP5: eight banks of 72 or 73 bits, each in
    # DP16KD of 2048 x 9 (the ninth bits carry entry bits), 65 in all, as Yosys maps the inferred memory; the data
    # bits alone (2048 x 8) would take 73.
    from amaranth.hdl import Fragment, Instance
    from amaranth_boards.ulx3s import ULX3S_85F_Platform

    def blocks(fragment):
        return sum(1 if isinstance(sub, Instance) and sub.type == "DP16KD" else blocks(sub)
                   for sub, _, _ in getattr(fragment, "subfragments", ()))
    assert blocks(Fragment.get(BankedQueue(577, 2048), ULX3S_85F_Platform())) == 65


def test_the_banks_write_registers_are_their_own():
    """After Yosys's ECP5 synthesis each bank still has its write data registers when the writer keeps a register
    of the same entry (the de-duplicator's in front of its key extractor, loaded every clock from the same beat):
    merged, that one register would feed both and be placed between them."""
    from amaranth import Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    from .synthesis import synthesize_ecp5

    class Writer(wiring.Component):
        entry: In(ENTRY.size)
        valid: In(1)
        ready: In(1)
        kept: Out(ENTRY.size)
        head: Out(ENTRY.size)

        def elaborate(self, platform):
            m = Module()
            m.submodules.queue = queue = BankedQueue(ENTRY.size, 16, bank_width=6, registered_write=True)
            m.d.sync += self.kept.eq(self.entry)                # the writer's own register of the entry
            m.d.comb += [queue.w.payload.eq(self.entry), queue.w.valid.eq(self.valid), queue.r.ready.eq(self.ready),
                         self.head.eq(queue.r.payload)]
            return m

    cells = synthesize_ecp5(Writer(), "test_banked_queue_write_registers")
    kept = {}
    for name, cell in cells.items():
        found = re.search(r"bank(\d+)[._]write_data", name)
        if cell["type"] == "TRELLIS_FF" and found:
            kept[found.group(1)] = kept.get(found.group(1), 0) + 1
    assert kept == {"0": 7, "1": 7, "2": 6}, kept


@pytest.mark.parametrize("write_rate, read_rate", [(0.9, 0.9), (0.95, 0.4)], ids=["even", "fills"])
@PLATFORMS
@WRITES
def test_contract(write_rate, read_rate, platform, registered_write):
    """The queue contract (tests/queue_contract.py): entries in order and whole; a write refused only while the
    block RAM's ``depth`` entries or more are held (the read stage fills behind it), never let in with
    ``depth`` + :data:`STAGE_DEPTH` held; an entry offered no sooner than its first-entry latency and, once the
    oldest, within as many clocks."""
    print(f"seed {SEED}")
    dut = BankedQueue(ENTRY, 6, bank_width=6, registered_write=registered_write)
    first = 4 + registered_write
    contract = QueueContract(capacity=6, limit=6 + STAGE_DEPTH, min_latency=first, max_latency=first)

    async def bench(ctx):
        await drive(ctx, contract, random.Random(SEED), w_valid=dut.w.valid, w_ready=dut.w.ready,
                    w_data=dut.w.payload.as_value(), r_valid=dut.r.valid, r_ready=dut.r.ready,
                    r_data=dut.r.payload.as_value(), width=ENTRY.size, cycles=800, write_rate=write_rate,
                    read_rate=read_rate)

    run_simulation(dut, bench, platform=platform)
    assert contract.reads > 200, contract.reads
    if write_rate > read_rate:
        assert contract.refusals > 10, contract.refusals
