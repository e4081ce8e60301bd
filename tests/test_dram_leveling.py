# amaranth: UnusedElaboratable=no
"""The ECP5DDRPHY read leveling (:class:`apbbf.hdl.dram.leveling.ReadLeveler`) against a model of the PHY's and
the DFI injector's CSRs on ``wb_ctrl``, whose read data is right only inside a window of (bitslip, delay) per
lane: the scan sets each lane to its window's centre, and reports a lane with no window. The model keeps the
PHY's rules: a read or write needs an open row, a row is opened once, and the read data reaches the injector's
``rddata`` registers only after the read latency."""

import pytest
from amaranth.sim import Simulator

from apbbf.hdl.dram.initializer import LiteDRAMInitializer
from apbbf.hdl.dram.leveling import ACTIVATE, PRECHARGE, READ, WRITE, ReadLeveler, lane_masks, pick_window

#: The Versa's core's CSR map (LiteX's csr.csv for ``wb_ctrl``), the registers the scan uses.
CSRS = {"ddrphy_dly_sel": 0x800, "ddrphy_rdly_dq_rst": 0x804, "ddrphy_rdly_dq_inc": 0x808,
        "ddrphy_rdly_dq_bitslip_rst": 0x80C, "ddrphy_rdly_dq_bitslip": 0x810, "ddrphy_burstdet_clr": 0x814,
        "ddrphy_burstdet_seen": 0x818, "ddrctrl_init_done": 0x000, "ddrctrl_init_error": 0x004,
        "sdram_dfii_control": 0x1000,
        **{f"sdram_dfii_pi{p}_{name}": 0x1004 + 0x20 * p + offset
           for p in range(2) for name, offset in (("command", 0), ("command_issue", 4), ("address", 8),
                                                 ("baddress", 12), ("wrdata", 16), ("rddata", 24))}}
LANES, DELAYS, BITSLIPS, PHASE_BITS = 2, 8, 4, 64
#: Cycles from a read's command_issue to its data in ``rddata`` (the core's read latency, 13, and the injector).
READ_CYCLES = 16


class PHYError(AssertionError):
    pass


class PHYModel:
    """The PHY's leveling CSRs and the injector's on a zero-wait-state Wishbone slave. ``passes(lane, bitslip,
    delay)`` says whether a lane reads right at a setting; elsewhere its bits come back inverted. ``bursts(lane,
    delay)`` says whether its DQSBUFM sees the read burst (default: always)."""

    def __init__(self, passes, bursts=lambda lane, delay: True, *, delays=DELAYS, bitslips=BITSLIPS):
        self.passes, self.bursts = passes, bursts
        self.delays, self.bitslips = delays, bitslips
        self.regs = {}
        self.delay, self.bitslip = [0] * LANES, [0] * LANES
        self.row_open = False
        self.burst = None
        self.rddata = [0, 0]
        self.pending = None                               # (cycle it lands, phase data)
        self.seen = 0
        self.probes = 0
        self.writes = []                                  # (address, value), every write

    def _strobe(self, address, cycle):
        selected = [n for n in range(LANES) if self.regs.get(CSRS["ddrphy_dly_sel"], 0) >> n & 1]
        for name, action in (("ddrphy_rdly_dq_rst", lambda n: self.delay.__setitem__(n, 0)),
                             ("ddrphy_rdly_dq_inc", lambda n: self.delay.__setitem__(n, (self.delay[n] + 1) % self.delays)),
                             ("ddrphy_rdly_dq_bitslip_rst", lambda n: self.bitslip.__setitem__(n, 0)),
                             ("ddrphy_rdly_dq_bitslip",
                              lambda n: self.bitslip.__setitem__(n, (self.bitslip[n] + 1) % self.bitslips))):
            if address == CSRS[name]:
                for n in selected:
                    action(n)
        if address == CSRS["ddrphy_burstdet_clr"]:
            self.seen = 0
        for p in range(2):
            if address != CSRS[f"sdram_dfii_pi{p}_command_issue"]:
                continue
            command = self.regs.get(CSRS[f"sdram_dfii_pi{p}_command"], 0)
            if command == ACTIVATE:
                if self.row_open:
                    raise PHYError(f"cycle {cycle}: row opened twice")
                self.row_open = True
            elif command == PRECHARGE:
                self.row_open = False
            elif command in (WRITE, READ):
                if not self.row_open:
                    raise PHYError(f"cycle {cycle}: {'write' if command == WRITE else 'read'} to a closed row")
                if command == WRITE:
                    if p != 1:
                        raise PHYError(f"cycle {cycle}: write on phase {p}, not the write phase 1")
                    self.burst = [self._data(q) for q in range(2)]
                else:
                    if p != 0:
                        raise PHYError(f"cycle {cycle}: read on phase {p}, not the read phase 0")
                    self.probes += 1
                    self.pending = (cycle + READ_CYCLES, self._read())
                    self.seen |= sum(1 << n for n in range(LANES) if self.bursts(n, self.delay[n]))

    def _data(self, phase):
        base = CSRS[f"sdram_dfii_pi{phase}_wrdata"]
        return self.regs.get(base, 0) << 32 | self.regs.get(base + 4, 0)

    def _read(self):
        masks = lane_masks(LANES, PHASE_BITS)
        data = []
        for word in self.burst:
            for n in range(LANES):
                if not self.passes(n, self.bitslip[n], self.delay[n]):
                    mask = masks[n][0] | masks[n][1] << 32
                    word ^= mask
            data.append(word)
        return data

    def access(self, cycle, address, we, value):
        if self.pending and cycle >= self.pending[0]:
            self.rddata, self.pending = self.pending[1], None
        address <<= 2
        if we:
            self.regs[address] = value
            self.writes.append((address, value))
            self._strobe(address, cycle)
            return 0
        if address == CSRS["ddrphy_burstdet_seen"]:
            return self.seen
        for p in range(2):
            base = CSRS[f"sdram_dfii_pi{p}_rddata"]
            if address in (base, base + 4):
                return self.rddata[p] >> (32 if address == base else 0) & 0xFFFFFFFF
        return self.regs.get(address, 0)


def leveler(model, *, patterns=1, wait_cycles=READ_CYCLES):
    return ReadLeveler(CSRS, lanes=LANES, delays=model.delays, bitslips=model.bitslips, phase_bits=PHASE_BITS,
                       patterns=patterns, wait_cycles=wait_cycles)


def level(model, *, max_cycles=200_000, dut=None, **kwargs):
    """Runs the scan (or ``dut``, an initializer) on ``model``; the settings and ``failed`` at ``done``."""
    dut = dut or leveler(model, **kwargs)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    result = {}

    async def bench(ctx):
        if isinstance(dut, ReadLeveler):
            ctx.set(dut.start, 1)
        for cycle in range(max_cycles):
            wb = dut.wb
            if ctx.get(wb.cyc) and ctx.get(wb.stb):
                ctx.set(wb.dat_r, model.access(cycle, ctx.get(wb.adr), ctx.get(wb.we), ctx.get(wb.dat_w)))
                ctx.set(wb.ack, 1)
            else:
                ctx.set(wb.ack, 0)
            if ctx.get(dut.done):
                if isinstance(dut, ReadLeveler):
                    result.update(failed=ctx.get(dut.failed),
                                  bitslip=[ctx.get(dut.bitslip) >> 8 * n & 0xFF for n in range(LANES)],
                                  delay=[ctx.get(dut.delay) >> 8 * n & 0xFF for n in range(LANES)])
                else:
                    result.update(error=ctx.get(dut.error))
                result.update(cycles=cycle)
                return
            await ctx.tick()
        raise AssertionError(f"no done in {max_cycles} cycles")

    sim.add_testbench(bench)
    sim.run()
    return result


def windows(spec):
    """``spec[lane]``: a set of (bitslip, delay) that read right."""
    return lambda lane, bitslip, delay: (bitslip, delay) in spec[lane]


def test_pick_window_rule():
    """The rule: the longest run of passing delays in one bitslip, its centre; the first on a tie; none."""
    rows = [[False] * 8 for _ in range(4)]
    assert pick_window(rows) is None
    rows[0][7] = True
    rows[2][3:7] = [True] * 4
    assert pick_window(rows) == (2, 4)
    rows[1][0:4] = [True] * 4
    assert pick_window(rows) == (1, 1)


#: Lane 0 reads right at bitslip 2, delays 3..6 (and at bitslip 0, delay 7 alone), lane 1 at bitslip 1, delays
#: 0..4: the centres are (2, 4) and (1, 2).
TWO_WINDOWS = [{(2, d) for d in range(3, 7)} | {(0, 7)}, {(1, d) for d in range(0, 5)}]


@pytest.mark.parametrize("patterns, wait_cycles", [(1, READ_CYCLES), pytest.param(2, 32, marks=pytest.mark.slow)],
                         ids=["one-pattern", "default"])
def test_levels_each_lane_to_its_window_centre(patterns, wait_cycles):
    """Each lane ends at its longest window's centre, set in the PHY, after one probe per pattern and setting;
    none fails."""
    model = PHYModel(windows(TWO_WINDOWS))
    result = level(model, patterns=patterns, wait_cycles=wait_cycles)
    print(f"scan: {result['cycles']} cycles, {model.probes} probes")
    assert result["failed"] == 0
    assert (result["bitslip"], result["delay"]) == ([2, 1], [4, 2])
    assert (model.bitslip, model.delay) == ([2, 1], [4, 2])
    assert model.probes == LANES * BITSLIPS * DELAYS * patterns


def test_a_lane_without_a_window_is_reported():
    """Lane 1 reads right nowhere, lane 0 everywhere in bitslip 3 but its DQSBUFM sees the burst only from
    delay 5 on: lane 1 fails and is set back to bitslip 0, delay 0; lane 0 is levelled inside delays 5..7."""
    spec = [{(3, d) for d in range(8)}, set()]
    model = PHYModel(windows(spec), bursts=lambda lane, delay: delay >= 5)
    result = level(model)
    assert result["failed"] == 0b10
    assert (model.bitslip, model.delay) == ([3, 0], [6, 0])


def test_reads_before_the_data_lands_fail():
    """Waiting less than the read latency after a read reads the last burst's data: no window is found (a
    smaller scan: 1 bitslip, 4 delays)."""
    spec = [{(0, d) for d in range(4)}] * 2
    assert level(PHYModel(windows(spec), delays=4, bitslips=1), patterns=2)["failed"] == 0
    assert level(PHYModel(windows(spec), delays=4, bitslips=1), patterns=2, wait_cycles=4)["failed"] == 0b11


#: A smaller scan for the initializer's (2 bitslips, 4 delays): lane 0 right at bitslip 1, delays 1..3.
SMALL = [{(1, d) for d in range(1, 4)}, {(0, d) for d in range(4)}]


@pytest.mark.parametrize("spec, error", [(SMALL, 0), ([SMALL[0], set()], 1)], ids=["pass", "fail"])
def test_initializer_levels_before_the_hand_back(spec, error):
    """The initializer runs the sequence, then the scan (its first write selects lane 0), then hands the pins
    back, writes ``init_error`` with the scan's verdict and ``init_done`` last."""
    sequence = [dict(name="Load Mode Register 0", address=0x320, bank=0, command=0x0F, delay=3)]
    model = PHYModel(windows(spec), delays=4, bitslips=2)
    init = LiteDRAMInitializer(sequence, CSRS, clk_freq=1e6, power_up_us=0, leveler=leveler(model))
    result = level(model, dut=init)
    assert result["error"] == error
    assert model.writes[:4] == [(CSRS["sdram_dfii_pi0_address"], 0x320), (CSRS["sdram_dfii_pi0_baddress"], 0),
                                (CSRS["sdram_dfii_pi0_command"], 0x0F), (CSRS["sdram_dfii_pi0_command_issue"], 1)]
    assert model.writes[4] == (CSRS["ddrphy_dly_sel"], 1)
    assert model.writes[-3:] == [(CSRS["sdram_dfii_control"], 0x0F), (CSRS["ddrctrl_init_error"], error),
                                 (CSRS["ddrctrl_init_done"], 1)]
    assert (model.bitslip[0], model.delay[0]) == (1, 2)


@pytest.mark.parametrize("kwargs, match", [
    (dict(lanes=0), "lanes"), (dict(delays=1), "delays"), (dict(phase_bits=48), "phase_bits"),
    (dict(rdphase=2), "rdphase"), (dict(patterns=0), "patterns"), (dict(wait_cycles=0), "wait_cycles"),
    (dict(lanes=3), "multiple of 8 \\* lanes"),
])
def test_leveler_refuses(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ReadLeveler(CSRS, **kwargs)


def test_leveler_needs_the_phy_csrs():
    with pytest.raises(KeyError, match="ddrphy_burstdet_seen"):
        ReadLeveler({k: v for k, v in CSRS.items() if k != "ddrphy_burstdet_seen"})
