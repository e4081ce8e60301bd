# amaranth: UnusedElaboratable=no
"""The filter with its segments in the 5A-75B's SDR SDRAM: the memory core on a LiteDRAM core that the gateware
starts by itself (power-up wait, the initialisation through ``wb_ctrl``), the SDRAM chip model on the pins,
every answer against the golden model (:mod:`apbbf.sim.cocotb.dram_filter_tests`, on Icarus); and the blocks
alone: the native port adapter in the Amaranth simulator against a model of the native port, and the
initializer's writes.

Icarus must be installed: without it the tests fail, they do not skip.
"""

import random
from pathlib import Path

import pytest

from apbbf.hdl.core.memory_apbbf import MemoryAPBBF
from apbbf.hdl.dram import LiteDRAMInitializer, NativePortAdapter
from apbbf.hdl.dram.initializer import init_writes
from apbbf.model import Config
from apbbf.sim.harness import random_commands
from apbbf.sim.native_port import CoreOnNativePort as _Composed

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb"
SEED = 20261202
# 7 physical segments of 64-bit blocks (two native words each) in 2048-bit rows: 896 blocks, 1,792 native words,
# seven of the SDRAM's bank rows (256 words each), so keys open other rows and banks
CONFIG = Config(2, 3, segment_blocks=128, row_bits=2048, span=300, time_width=12, extra_segments=2, seed=0x5A)


@pytest.fixture(scope="module")
def core():
    from apbbf.flows.litedram import generate
    return generate("colorlight-5a75b")


def test_filter_on_sdram(core):
    """Every answer the model's, the counters too, with the chip model checking every command against the data
    sheet's timings and the refresh deadline, through the power-up, the initialisation and the clearing."""
    from apbbf.sim.cocotb import dram_filter
    build_dir = BUILD / "dram-filter"
    results = build_dir / "results.xml"
    try:
        # a power-up wait of 20 us, a tenth of the data sheet's, which the chip model checks (the 200 us: the
        # appliance's DRAM bench, tests/test_appliance_cocotb.py; its cycles: test_initializer_writes)
        dram_filter.run(CONFIG, core, build_dir, seed=SEED, power_up_us=20.0, testcase="random_commands",
                        params={"commands": 200, "tick_step": 3})
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb on Icarus, the filter on SDRAM (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed),
                    pytrace=False)
    ran, failed = read_results(results)
    assert ran == ["random_commands"] and not failed, (ran, failed)


class NativePortModel:
    """A LiteDRAM native port as the crossbar behaves to one user: takes commands when it likes (``cmd.ready`` at
    random), asks for each write's data some cycles after its command, in order, and returns each read's word
    some cycles after its command, in order, ignoring ``rdata.ready``; the words in a dict. Commands are done in
    order, so a read returns every write taken before it. Fails on a read word that finds nobody ready (never:
    the adapter reserves the room), a wdata offered late, or an address past the memory."""

    def __init__(self, native, words: int, seed: int):
        self.native, self.words, self.rng = native, words, random.Random(seed)
        self.memory = {}
        self.commands = 0

    async def serve(self, ctx):
        native = self.native
        pending = []                               # (cycle due, we, addr)
        now = 0
        while True:
            ctx.set(native.cmd.ready, self.rng.random() < 0.6)
            due = pending[0] if pending and pending[0][0] <= now else None
            ctx.set(native.wdata.ready, bool(due and due[1]))
            ctx.set(native.rdata.valid, bool(due and not due[1]))
            if due and not due[1]:
                ctx.set(native.rdata.payload.data, self.memory.get(due[2], due[2] * 0x9E3779B1 & 0xFFFFFFFF))
            _, _, cmd_valid, cmd_ready, we, addr, w_valid, w_data, w_we, r_ready = await ctx.tick().sample(
                native.cmd.valid, native.cmd.ready, native.cmd.payload.we, native.cmd.payload.addr,
                native.wdata.valid, native.wdata.payload.data, native.wdata.payload.we, native.rdata.ready)
            now += 1
            if due:
                if due[1]:
                    assert w_valid, f"cycle {now}: write data for word {due[2]:#x} not offered when asked"
                    assert w_we == 0xF, f"byte enables {w_we:#x}"
                    self.memory[due[2]] = w_data
                else:
                    assert r_ready, f"cycle {now}: read word dropped"
                pending.pop(0)
            if cmd_valid and cmd_ready:
                assert addr < self.words, f"address {addr:#x} past the memory"
                last = pending[-1][0] if pending else now
                pending.append((max(last + 1, now + self.rng.randint(2, 9)), we, addr))
                self.commands += 1


@pytest.mark.parametrize("block_bits", [pytest.param(32, marks=pytest.mark.slow), 64,
                                        pytest.param(128, marks=pytest.mark.slow)])
def test_native_adapter_against_model(block_bits):
    """The memory core on the adapter on a model of the native port: every answer the golden model's, the
    blocks as B / 32 words each, writes landed before the reads behind them."""
    from apbbf.sim import harness
    seed = 30 + block_bits
    print(f"seed {seed}")
    config = Config(2, 3, block_bits=block_bits, block_hashes=4, segment_blocks=8, row_bits=8 * block_bits,
                    seed=seed)
    models = []

    def design():
        core = MemoryAPBBF(config, depth=4)
        adapter = NativePortAdapter(config, addr_width=12, data_width=32, base=64, read_words=16)
        return _Composed(core, adapter)

    def server(dut):
        models.append(NativePortModel(dut.native, 1 << 12, seed))
        return models[-1].serve

    commands = random_commands(config, 120, seed=seed, duplicates=0.5)
    harness.simulate(config, commands, seed=seed, name=f"native-{block_bits}", server=server,
                     design=(("native", block_bits), design), max_cycles=200_000)
    assert models[-1].commands > 100


def test_initializer_writes(core):
    """The writes are LiteX's BIOS sequence: the DFI injector's registers, in order, the port handed back last."""
    csrs = core.csrs()
    writes = init_writes(core.settings["init_sequence"], csrs)
    assert writes[0][:2] == (csrs["sdram_dfii_control"], core.settings["init_sequence"][0]["command"])
    assert writes[-2][:2] == (csrs["sdram_dfii_control"], 0x0F) and writes[-1][:2] == (csrs["ddrctrl_init_done"], 1)
    issues = [w for w in writes if w[0] == csrs["sdram_dfii_pi0_command_issue"]]
    assert len(issues) == len(core.settings["init_sequence"]) - 1
    init = LiteDRAMInitializer(core.settings["init_sequence"], csrs, clk_freq=60e6)
    assert init.power_up_cycles == 12000


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(data_width=48), ValueError, "block_bits must be a multiple of data_width"),
    (dict(base=3), ValueError, "base must be a multiple"),
    (dict(addr_width=4), ValueError, "ends past addr_width"),
    (dict(read_words=1), ValueError, "read_words"),
    (dict(write_words=1), ValueError, "write_words"),
], ids=["width", "base", "addr", "read-words", "write-words"])
def test_adapter_refuses(kwargs, error, match):
    options = {"addr_width": 20, "data_width": 32, **kwargs}
    with pytest.raises(error, match=match):
        NativePortAdapter(CONFIG, **options)
