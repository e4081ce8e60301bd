"""cocotb benches of a LiteDRAM SDR core with the SDRAM chip model on its pins (run by
:mod:`apbbf.sim.cocotb.dram_runner`).

Every test powers the board up as the data sheet asks: the core is held in reset for the power-up wait (NOP or
DESELECT on the pins, checked by the model), then the host issues LiteDRAM's initialisation through the DFI
injector's CSRs on ``wb_ctrl`` (as LiteX's BIOS does), hands the pins back to the controller and sets
``init_done``, which opens the native port.

- ``traffic``: random reads and writes on the native port (byte enables too), addresses chosen to hit the open
  row, another row of the same bank or the other bank; every read checked against a Python dict of what was
  written (never-written words read the model's pattern), then the idle controller left running until
  ``run_us`` after the initialisation, through several refresh intervals; at the end every written word must be
  in the model's array at the bank, row and column LiteDRAM's ROW_BANK_COL mapping gives.
- ``measure``: reads back to back, one per random row, and the same on one row; rates, the latency from the
  command's handshake to its data, the refreshes seen; written as JSON to ``params["report"]``.

The chip model fails the running test at the first violation of its data sheet (:mod:`.sdram_chip`).
Parameters come as JSON in ``APBBF_DRAM_PARAMS`` (:data:`apbbf.sim.cocotb.dram_runner.PARAMS_ENV`).
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_time

from .sdram_chip import M12L16161A_5T, Geometry, SdramChecker, SdramChip

PARAMS_ENV = "APBBF_DRAM_PARAMS"
PORT = "user_port_native_0_"


def _params() -> dict:
    return json.loads(os.environ[PARAMS_ENV])


class Bench:
    """The core, its clock, the chip model and the host's side of ``wb_ctrl`` and the native port."""

    def __init__(self, dut, params: dict):
        self.dut, self.params = dut, params
        s = params["settings"]
        self.settings = s
        self.period_ps = 2 * round(1e12 / s["sys_clk_freq"] / 2)      # even: cocotb splits it in halves
        self.tck = self.period_ps / 1000
        self.geometry = Geometry(banks=s["nbanks"], rows=s["nrows"], columns=s["ncols"], data_bits=s["databits"])
        self.col_bits = int(math.log2(s["ncols"]))
        self.bank_bits = int(math.log2(s["nbanks"]))
        # the power-up wait: the data sheet's, or the bench's shorter one (``power_up_us``), the reset held and the
        # chip model checking the same
        self.power_up_ns = params.get("power_up_us", M12L16161A_5T.power_up / 1000) * 1000
        self.checker = SdramChecker(M12L16161A_5T, self.geometry, tck=self.tck,
                                    refresh_slack=params.get("refresh_slack", 1.0), power_up=self.power_up_ns)
        pins = {name: getattr(dut, f"sdram_{name}") for name in ("a", "ba", "cs_n", "ras_n", "cas_n", "we_n", "cke",
                                                                   "dm", "dq")}
        pins["dq_drive"], pins["dq_oe"] = dut.dq_drive, dut.dq_oe
        self.chip = SdramChip(dut.sdram_clk, pins, self.checker, log=dut._log)
        self.chip.commands = []
        self.csrs = params["csrs"]

    def cycle(self) -> int:
        return round(get_sim_time("ps") / self.period_ps)

    async def start(self):
        """Clock, chip model, reset held for the power-up wait, LiteDRAM's initialisation, the port opened."""
        dut = self.dut
        for name in ("cmd_valid", "cmd_we", "cmd_addr", "wdata_valid", "wdata_we", "wdata_data"):
            getattr(dut, PORT + name).value = 0
        getattr(dut, PORT + "rdata_ready").value = 1
        for name in ("adr", "dat_w", "sel", "cyc", "stb", "we", "cti", "bte"):
            getattr(dut, "wb_ctrl_" + name).value = 0
        dut.rst.value = 1
        self.chip_task = cocotb.start_soon(self.chip.run())
        cocotb.start_soon(Clock(dut.clk, self.period_ps, unit="ps").start())
        power_up_cycles = math.ceil(self.power_up_ns * 1000 / self.period_ps)
        await ClockCycles(dut.clk, power_up_cycles)
        dut.rst.value = 0
        await ClockCycles(dut.clk, 4)
        for step in self.settings["init_sequence"]:
            if step["name"].startswith("Bring CKE high"):
                await self.csr_write("sdram_dfii_control", step["command"])      # software control, CKE high
                continue
            await self.csr_write("sdram_dfii_pi0_address", step["address"])
            await self.csr_write("sdram_dfii_pi0_baddress", step["bank"])
            await self.csr_write("sdram_dfii_pi0_command", step["command"])
            await self.csr_write("sdram_dfii_pi0_command_issue", 1)
            if step["delay"]:
                await ClockCycles(dut.clk, step["delay"])
        await self.csr_write("sdram_dfii_control", 0x0F)       # hardware control (SEL), CKE, ODT, RESET_N
        await self.csr_write("ddrctrl_init_done", 1)
        await ClockCycles(dut.clk, 2)
        self.initialised_at = self.checker.initialised_at
        assert self.initialised_at is not None, ("the initialisation did not complete (chip model); commands seen: "
                                                 f"{self.chip.commands[:20]}, counts {self.checker.counts}")
        dut._log.info(f"initialised at cycle {self.initialised_at} ({self.initialised_at * self.tck / 1000:.1f} us)")

    async def csr_write(self, name: str, value: int):
        dut = self.dut
        dut.wb_ctrl_adr.value = self.csrs[name] >> 2
        dut.wb_ctrl_dat_w.value = value
        dut.wb_ctrl_sel.value = 0xF
        dut.wb_ctrl_we.value = 1
        dut.wb_ctrl_cyc.value = 1
        dut.wb_ctrl_stb.value = 1
        for _ in range(100):
            await RisingEdge(dut.clk)
            if dut.wb_ctrl_ack.value:
                break
        else:
            raise AssertionError(f"no wishbone ack writing {name}")
        dut.wb_ctrl_cyc.value = 0
        dut.wb_ctrl_stb.value = 0
        dut.wb_ctrl_we.value = 0

    def address(self, bank: int, row: int, column: int) -> int:
        """The native port's word address of a bank, row and column (LiteDRAM's ROW_BANK_COL)."""
        return (row << (self.bank_bits + self.col_bits)) | (bank << self.col_bits) | column

    def location(self, address: int) -> tuple[int, int, int]:
        column = address & (self.geometry.columns - 1)
        bank = address >> self.col_bits & (self.geometry.banks - 1)
        return bank, address >> (self.col_bits + self.bank_bits), column

    async def run_ops(self, ops, expected: dict, rng=None, idle: float = 0.0):
        """Issue ``ops`` (``(we, address, data, byte_enables)``) on the native port, back to back (or with random
        idle cycles, probability ``idle``), and check every read's data. Returns ``(offered, accepted, returned)``
        cycles of the reads."""
        dut = self.dut
        wqueue, rqueue = [], []
        reads = []                      # [offered, accepted, returned]
        done = {"reads": 0}
        mismatches = []

        async def wdata_driver():
            while True:
                if wqueue:
                    data, we = wqueue[0]
                    getattr(dut, PORT + "wdata_valid").value = 1
                    getattr(dut, PORT + "wdata_data").value = data
                    getattr(dut, PORT + "wdata_we").value = we
                else:
                    getattr(dut, PORT + "wdata_valid").value = 0
                await RisingEdge(dut.clk)
                if wqueue and getattr(dut, PORT + "wdata_ready").value:
                    wqueue.pop(0)

        async def rdata_monitor():
            while True:
                await RisingEdge(dut.clk)
                if getattr(dut, PORT + "rdata_valid").value:
                    if not rqueue:
                        mismatches.append(f"read data at cycle {self.cycle()} with no read outstanding")
                        continue
                    address, want, record = rqueue.pop(0)
                    value = getattr(dut, PORT + "rdata_data").value
                    got = int(value) if value.is_resolvable else str(value)
                    record[2] = self.cycle()
                    done["reads"] += 1
                    if got != want:
                        got = got if isinstance(got, str) else f"{got:#010x}"
                        mismatches.append(f"read of address {address:#07x} {self.location(address)}: "
                                          f"{got}, expected {want:#010x} (cycle {record[2]}, offered at {record[0]}, accepted at "
                                          f"{record[1]})")

        writer = cocotb.start_soon(wdata_driver())
        monitor = cocotb.start_soon(rdata_monitor())
        n_reads = 0
        for we, address, data, enables in ops:
            if rng is not None and idle and rng.random() < idle:
                getattr(dut, PORT + "cmd_valid").value = 0
                await ClockCycles(dut.clk, rng.randint(1, 6))
            getattr(dut, PORT + "cmd_valid").value = 1
            getattr(dut, PORT + "cmd_we").value = we
            getattr(dut, PORT + "cmd_addr").value = address
            offered = self.cycle()
            if we:
                old = expected.get(address, self.chip.unwritten(*self.location(address)))
                new = old
                for lane in range(self.geometry.data_bits // 8):
                    if enables >> lane & 1:
                        new = new & ~(0xFF << 8 * lane) | (data & 0xFF << 8 * lane)
                expected[address] = new
                wqueue.append((data, enables))
            else:
                record = [offered, None, None]
                reads.append(record)
                rqueue.append((address, expected.get(address, self.chip.unwritten(*self.location(address))), record))
                n_reads += 1
            for _ in range(100_000):
                await RisingEdge(dut.clk)
                if getattr(dut, PORT + "cmd_ready").value:
                    break
            else:
                raise AssertionError(f"command {'write' if we else 'read'} {address:#07x} never accepted")
            if not we:
                record[1] = self.cycle()
        getattr(dut, PORT + "cmd_valid").value = 0
        for _ in range(10_000):
            if done["reads"] == n_reads and not wqueue:
                break
            await RisingEdge(dut.clk)
        writer.cancel()
        monitor.cancel()
        getattr(dut, PORT + "wdata_valid").value = 0
        assert not mismatches, f"{len(mismatches)} reads wrong, the first: " + "; ".join(mismatches[:5])
        assert done["reads"] == n_reads, f"{n_reads - done['reads']} reads never returned"
        assert not wqueue, f"{len(wqueue)} write data never taken"
        return reads

    async def idle_until(self, cycle: int):
        now = self.cycle()
        if cycle > now:
            await ClockCycles(self.dut.clk, cycle - now)
        self.checker.finish(self.chip.cycle)


def _rng(name: str) -> tuple[random.Random, int]:
    seed = (cocotb.RANDOM_SEED * 1_000_003 + sum(map(ord, name))) % (1 << 32)
    cocotb.log.info(f"{name}: seed {seed} (COCOTB_RANDOM_SEED={os.environ.get('COCOTB_RANDOM_SEED', '?')})")
    return random.Random(seed), seed


def random_ops(bench: Bench, rng: random.Random, count: int, *, writes: float = 0.5) -> list:
    """Random reads and writes: each address in the open row of its bank (40 %), another row of the same bank
    (30 %) or the other bank (30 %); a fifth of the writes with random byte enables."""
    g = bench.geometry
    ops = []
    bank, row = 0, rng.randrange(g.rows)
    rows = {b: rng.randrange(g.rows) for b in range(g.banks)}
    written = []
    for _ in range(count):
        pick = rng.random()
        if pick < 0.4:
            pass
        elif pick < 0.7:
            rows[bank] = rng.choice([r for r in (rng.randrange(g.rows) for _ in range(3)) if r != rows[bank]]
                                    or [(rows[bank] + 1) % g.rows])
        else:
            bank = (bank + rng.randrange(1, g.banks)) % g.banks
        row = rows[bank]
        column = rng.randrange(g.columns)
        we = rng.random() < writes
        if not we and written and rng.random() < 0.5:
            address = rng.choice(written)           # read back something written
        else:
            address = bench.address(bank, row, column)
        if we:
            written.append(address)
            enables = 0xF if rng.random() < 0.8 else rng.randrange(16)
            ops.append((1, address, rng.getrandbits(g.data_bits), enables))
        else:
            ops.append((0, address, 0, 0))
    return ops


@cocotb.test()
async def traffic(dut):
    """Random reads and writes checked against a dict, then idle through refresh intervals; no violation."""
    params = _params()
    bench = Bench(dut, params)
    rng, seed = _rng("traffic")
    await bench.start()
    expected = {}
    ops = random_ops(bench, rng, params.get("ops", 400))
    reads = await bench.run_ops(ops, expected, rng=rng, idle=params.get("idle", 0.2))
    end = bench.initialised_at + math.ceil(params.get("run_us", 80) * 1e6 / bench.period_ps)
    await bench.idle_until(end)
    for address, value in expected.items():
        key = bench.location(address)
        assert bench.chip.memory.get(key) == value, (f"address {address:#07x}: the chip holds "
                                                     f"{bench.chip.memory.get(key)} at {key}, expected {value:#010x}")
    elapsed_us = (bench.cycle() - bench.initialised_at) * bench.tck / 1000
    refreshes = bench.checker.refreshes
    minimum = math.floor(elapsed_us * 1000 / M12L16161A_5T.tREFI) - 1
    dut._log.info(f"traffic: seed {seed}, {len(ops)} commands ({len(reads)} reads), {len(expected)} words written, "
                  f"{elapsed_us:.1f} us after the initialisation, {refreshes} refreshes (max gap "
                  f"{bench.checker.max_refresh_gap} cycles), commands {bench.checker.counts}")
    assert refreshes >= max(minimum, 1), f"{refreshes} refreshes in {elapsed_us:.1f} us"
    for kind in ("ACTIVE", "READ", "WRITE", "PRECHARGE", "AUTO REFRESH"):
        assert bench.checker.counts.get(kind, 0) > 0, f"no {kind} seen: {bench.checker.counts}"


def _summary(values: list[int]) -> dict:
    return {"min": min(values), "median": statistics.median(values), "max": max(values),
            "mean": round(statistics.fmean(values), 3)}


@cocotb.test()
async def measure(dut):
    """Back-to-back reads, one per random row and all on one row: rates, latencies, refresh stalls (JSON)."""
    params = _params()
    bench = Bench(dut, params)
    rng, seed = _rng("measure")
    await bench.start()
    g = bench.geometry
    count = params.get("reads", 2000)
    freq = params["settings"]["sys_clk_freq"]
    patterns = {
        # each read another row than the last read of its bank: a row miss every time (random bank too)
        "random_row": [],
        # banks in turn (0, 1, 0, 1, ...), a random row each time
        "random_row_alternating_banks": [],
        # the same in one bank only: no activation can overlap another bank's
        "random_row_one_bank": [],
        # all reads in one open row
        "same_row": [],
    }
    last = {}
    for _ in range(count):
        bank = rng.randrange(g.banks)
        row = rng.randrange(g.rows)
        while row == last.get(bank):
            row = rng.randrange(g.rows)
        last[bank] = row
        patterns["random_row"].append((0, bench.address(bank, row, rng.randrange(g.columns)), 0, 0))
    last = {}
    for i in range(count):
        bank = i % g.banks
        row = rng.randrange(g.rows)
        while row == last.get(bank):
            row = rng.randrange(g.rows)
        last[bank] = row
        patterns["random_row_alternating_banks"].append((0, bench.address(bank, row, rng.randrange(g.columns)), 0, 0))
    last = None
    for _ in range(count):
        row = rng.randrange(g.rows)
        while row == last:
            row = rng.randrange(g.rows)
        last = row
        patterns["random_row_one_bank"].append((0, bench.address(0, row, rng.randrange(g.columns)), 0, 0))
    row = rng.randrange(g.rows)
    patterns["same_row"] = [(0, bench.address(1, row, rng.randrange(g.columns)), 0, 0) for _ in range(count)]
    results = {}
    for name, ops in patterns.items():
        first_command = len(bench.chip.commands)
        reads = await bench.run_ops(ops, {})
        start, end = reads[0][0], reads[-1][2]
        refreshes = [c for c, command, _, _ in bench.chip.commands[first_command:] if command == "AUTO REFRESH"]
        stalled = [r for r in reads if any(r[0] <= c <= r[2] for c in refreshes)]
        cycles = end - start
        results[name] = {
            "reads": len(reads), "cycles": cycles, "reads_per_cycle": round(len(reads) / cycles, 4),
            "reads_per_second": round(len(reads) / cycles * freq),
            "latency_handshake_to_data_cycles": _summary([r[2] - r[1] for r in reads]),
            "latency_offered_to_data_cycles": _summary([r[2] - r[0] for r in reads]),
            "refreshes": len(refreshes), "reads_spanning_a_refresh": len(stalled),
            "latency_of_those_cycles": _summary([r[2] - r[0] for r in stalled]) if stalled else None,
        }
        dut._log.info(f"measure {name}: {results[name]}")
        await ClockCycles(dut.clk, 10)
    bench.checker.finish(bench.chip.cycle)
    report = {"seed": seed, "sys_clk_hz": freq, "module": params["settings"]["module"],
              "cas_latency": params["settings"]["cl"], "timing_cycles": params["settings"]["timing_cycles"],
              "chip_model": M12L16161A_5T.part, "max_refresh_gap_cycles": bench.checker.max_refresh_gap,
              "patterns": results}
    if params.get("report"):
        with open(params["report"], "w") as out:
            json.dump(report, out, indent=2)
            out.write("\n")

