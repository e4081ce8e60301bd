"""cocotb benches of the filter on the 5A-75B's SDR SDRAM (:mod:`apbbf.sim.cocotb.dram_filter`): the memory core,
LiteDRAM's controller started by the gateware itself, and the chip model on the pins, which fails the test at
the first data sheet violation.

- ``random_commands``: after the power-up wait, the initialisation and the clearing of the filter's region (all
  in gateware), random commands with repeats at short distance and past the window, at the pace the bench
  chooses, every answer in order against the golden model; the counters at the end; then the idle controller
  left running through further refresh intervals, the chip model checking the refresh deadline throughout.

Parameters come as JSON in :data:`apbbf.sim.cocotb.dram_filter.PARAMS_ENV`.
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import replace

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_time

from ...model.config import Config
from .memory_tests import short_repeat_commands
from .sdram_chip import M12L16161A_5T, Geometry, SdramChecker, SdramChip, cycle_breakdown
from .testbench import Testbench

PARAMS_ENV = "APBBF_DRAM_FILTER_PARAMS"


def _params() -> dict:
    return json.loads(os.environ[PARAMS_ENV])


class DRAMBench:
    """The clock at the core's sys frequency, the chip model on the pins, and the core's :class:`Testbench`
    once the DRAM is up (``tb``)."""

    def __init__(self, dut, seed: int):
        p = self.params = _params()
        s = p["settings"]
        self.dut, self.seed = dut, seed
        self.config = Config(**p["config"])
        self.period_ps = 2 * round(1e12 / s["sys_clk_freq"] / 2)        # even: cocotb splits it in halves
        geometry = Geometry(banks=s["nbanks"], rows=s["nrows"], columns=s["ncols"], data_bits=s["databits"])
        # The chip model checks the power-up wait the gateware was built with (``power_up_us``: the data sheet's
        # 200 us, or shorter in a short simulation), so a wait shorter than the built one still fails.
        timing = replace(M12L16161A_5T, power_up=p["power_up_us"] * 1000)
        self.checker = SdramChecker(timing, geometry, tck=self.period_ps / 1000)
        pins = {name: getattr(dut, f"sdram_{name}") for name in ("a", "ba", "cs_n", "ras_n", "cas_n", "we_n", "cke",
                                                                   "dm", "dq")}
        pins["dq_drive"], pins["dq_oe"] = dut.dq_drive, dut.dq_oe
        if p.get("board_pins"):                   # as the 5A-75B wires the chips: CS#, CKE and DQM tied
            pins.update(cs_n=dut.chip_cs_n, cke=dut.chip_cke, dm=dut.chip_dm)
        self.chip = SdramChip(dut.sdram_clk, pins, self.checker, log=dut._log)
        self.tb = None

    def cycle(self) -> int:
        return round(get_sim_time("ps") / self.period_ps)

    async def start(self):
        """Clock and chip model from time 0, the filter's reset pulsed; then wait for the gateware to start the
        DRAM (``dram_ready``) and the filter to take commands (its region cleared)."""
        dut = self.dut
        dut.aresetn.value = 0
        cocotb.start_soon(self.chip.run())
        cocotb.start_soon(Clock(dut.aclk, self.period_ps, unit="ps").start())
        await ClockCycles(dut.aclk, 4)
        dut.aresetn.value = 1
        power_up = math.ceil(self.params["power_up_us"] * 1e6 / self.period_ps)
        for _ in range(power_up + 20_000):
            await RisingEdge(dut.aclk)
            if int(dut.dram_ready.value):
                break
        else:
            raise AssertionError(f"dram_ready never rose ({power_up} cycles of power-up wait and 20,000 more)")
        assert self.checker.initialised_at is not None, "the chip model saw no complete initialisation"
        ready_at = self.cycle()
        for _ in range(40 * self.config.memory_blocks + 5000):
            await RisingEdge(dut.aclk)
            if int(dut.s_axis_cmd_tready.value):
                break
        else:
            raise AssertionError("the filter never took commands after the DRAM was up (clearing its region)")
        dut._log.info(f"DRAM ready at cycle {ready_at}, the filter's region cleared at cycle {self.cycle()} "
                      f"({self.config.memory_blocks} blocks)")
        self.tb = Testbench(dut, self.config, self.seed)


def _seed(name: str) -> int:
    return (cocotb.RANDOM_SEED * 1_000_003 + sum(map(ord, name))) & 0xFFFFFFFF


@cocotb.test()
async def random_commands(dut):
    """Random commands with short repeats, every answer the model's; the counters; refresh kept throughout."""
    bench = DRAMBench(dut, _seed("random_commands"))
    await bench.start()
    tb, c = bench.tb, bench.config
    tb.set_pauses(cmd=0.2, rsp=0.2, burst=2)
    tb.tick_step = bench.params.get("tick_step", 0)         # ticks per command: shifts by time, and clearing
    count = bench.params.get("commands", 200)
    tb.send(short_repeat_commands(c, count, random.Random(tb.seed)))
    await tb.drain(200_000)
    tb.check_counters()
    # idle a few refresh intervals more: the controller must keep refreshing with no traffic
    await ClockCycles(dut.aclk, 4 * bench.params["settings"]["timing_cycles"].get("tREFI", 938))
    bench.checker.finish(bench.chip.cycle)
    refreshes = bench.checker.counts.get("AUTO REFRESH", 0)
    assert refreshes >= 4, f"only {refreshes} refreshes seen"
    dut._log.info(f"{count} commands, {refreshes} refreshes, chip commands {dict(bench.checker.counts)}")


def appliance_row_keys(config: Config, settings: dict, count: int, rng: random.Random) -> tuple[list, int]:
    """``count`` random keys whose SDRAM rows follow one another as the appliance's do: the appliance has
    thousands of rows, so a key's row is almost never one left open in its bank, and the key is in the previous
    key's bank one time in ``nbanks`` (the bench's small Config has few rows, where random keys would find their
    row open far more often). The
    bank and row of a filter row are LiteDRAM's (``ROW_BANK_COL``: column, then bank, then row of the native word
    address). Returns the keys and how many are in the previous key's bank."""
    from ...model.hashing import HashSpec
    spec = HashSpec(config)
    words = config.block_bits // settings["databits"]

    def bank_row(row):
        word = row * config.row_stride_blocks * words
        return word // settings["ncols"] % settings["nbanks"], word // (settings["ncols"] * settings["nbanks"])

    keys, previous, opened, same = [], None, {}, 0
    while len(keys) < count:
        want_same = rng.random() < 1 / settings["nbanks"]
        while True:
            key = rng.getrandbits(config.key_width)
            where = bank_row(spec.row_hash(key))
            if previous is None or (opened.get(where[0]) != where[1] and (where[0] == previous[0]) == want_same):
                break
        same += previous is not None and where[0] == previous[0]
        keys.append(key)
        previous, opened[where[0]] = where, where[1]
    return keys, same


@cocotb.test()
async def measure(dut):
    """TEST_AND_INSERT of new keys back to back, no pauses: commands per cycle through the SDRAM once every
    segment of the pool is live (a warm-up of a generation per physical segment first: each command then reads
    them all), the measured keys' rows as the appliance's (:func:`appliance_row_keys`), every answer still
    checked; the chip's cycles by what they did (:func:`.sdram_chip.cycle_breakdown`); written as JSON to
    ``params["report"]`` (``make dram-bench``)."""
    bench = DRAMBench(dut, _seed("measure"))
    await bench.start()
    tb, c = bench.tb, bench.config
    count = bench.params.get("commands", 400)
    warm = bench.params.get("warm", c.generation * c.physical_segments)
    rng = random.Random(tb.seed)
    from ...model.filters import Op
    tb.send([(Op.TEST_AND_INSERT, rng.getrandbits(c.key_width)) for _ in range(warm)])
    await tb.drain(50 * warm + 10_000)
    before = dict(bench.checker.counts)
    bench.chip.commands = []
    keys, same_bank = appliance_row_keys(c, bench.params["settings"], count, rng)
    tb.send([(Op.TEST_AND_INSERT, key) for key in keys])
    start, chip_start = bench.cycle(), bench.chip.cycle
    await tb.drain(200_000)
    cycles = bench.cycle() - start
    breakdown = cycle_breakdown(bench.chip.commands, chip_start, bench.chip.cycle)
    during = {name: n - before.get(name, 0) for name, n in bench.checker.counts.items()}
    tb.check_counters()
    bench.checker.finish(bench.chip.cycle)
    clock = bench.params["settings"]["sys_clk_freq"]
    report = {"commands": count, "cycles": cycles, "commands_per_cycle": round(count / cycles, 5),
              "commands_per_second": round(count / cycles * clock), "sys_clk_hz": clock,
              "physical_segments": c.physical_segments, "k": c.k, "block_bits": c.block_bits,
              "native_words_per_command_at_most": (c.physical_segments + c.k) * c.block_bits // 32,
              "warm_up_commands": warm, "chip_commands_measured": during,
              "reads_per_command": round(during.get("READ", 0) / count, 2),
              "writes_per_command": round(during.get("WRITE", 0) / count, 2),
              "keys_in_the_previous_keys_bank": round(same_bank / count, 3),
              "actives_per_command": round(during.get("ACTIVE", 0) / count, 2),
              "chip_cycles": breakdown,
              "chip_cycles_per_command": {name: round(n / count, 2) for name, n in breakdown.items()},
              "bench_seed": tb.seed}
    path = bench.params.get("report")
    if path:
        with open(path, "w") as out:
            json.dump(report, out, indent=2)
    dut._log.info(f"measure: {report}")
