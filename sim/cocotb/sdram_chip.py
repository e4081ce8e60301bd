"""A cycle-level model of an SDR SDRAM, written from the data sheet, that fails on every timing violation.

Two layers:

- :class:`SdramChecker`, a plain Python class fed ``(cycle, command, bank, address)``: it decodes the mode register,
  tracks every bank, the initialisation and the refreshes, and raises :class:`TimingViolation` naming the rule,
  the command, the bank and the times when a command breaks the data sheet. No simulator is needed to test it.
- :class:`SdramChip`, the cocotb model on a core's SDRAM pins (``sdram_a``, ``sdram_ba``, ``sdram_cs_n``,
  ``sdram_ras_n``, ``sdram_cas_n``, ``sdram_we_n``, ``sdram_cke``, ``sdram_dm`` and ``sdram_dq`` through a
  driver the bench's wrapper provides): it samples the pins at each rising edge of the clock as the chip does,
  feeds the checker, keeps the data per bank, row and column, writes with the data masks, and drives read data
  exactly CAS latency cycles after the READ (the read masks' latency is two cycles).

The values (:data:`M12L16161A_5T`) are those of the ESMT M12L16161A data sheet at the -5T speed grade (see
``docs/dram.md`` for each one's source); :class:`SdramTiming` holds any other part's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["SdramTiming", "Geometry", "M12L16161A_5T", "M12L16161A_GEOMETRY_X32", "TimingViolation",
           "COMMANDS", "decode", "ModeRegister", "SdramChecker", "SdramChip", "cycle_breakdown"]


@dataclass(frozen=True)
class SdramTiming:
    """The data sheet's timing rules of one part and speed grade (ns unless the name says CLK).

    Attributes
    ----------
    part : str
    tRCD, tRP, tRAS_min, tRC, tRRD, tRFC : float
        ACTIVE to READ/WRITE, PRECHARGE to ACTIVE/REFRESH, ACTIVE to PRECHARGE, ACTIVE to ACTIVE (same bank),
        ACTIVE to ACTIVE (other bank), AUTO REFRESH to any command, in ns.
    tRAS_max : float
        The longest a row may stay open, ns.
    tRDL_clk : int
        Last data in to PRECHARGE (write recovery, the data sheet's tRDL or tWR), in clocks.
    tMRD_clk : int
        MODE REGISTER SET to any command, in clocks.
    tCK_min : dict
        The shortest clock period at each CAS latency the part supports, ns.
    refresh_window, refresh_count : float, int
        ``refresh_count`` AUTO REFRESH commands every ``refresh_window`` ns: tREFI is their ratio.
    power_up : float
        NOP or DESELECT only for this long after power-up, ns.
    init_refreshes : int
        AUTO REFRESH commands between the initial PRECHARGE ALL and the MODE REGISTER SET.
    """

    part: str
    tRCD: float
    tRP: float
    tRAS_min: float
    tRAS_max: float
    tRC: float
    tRRD: float
    tRFC: float
    tRDL_clk: int
    tMRD_clk: int
    tCK_min: dict
    refresh_window: float
    refresh_count: int
    power_up: float
    init_refreshes: int = 2

    @property
    def tREFI(self) -> float:
        """The average refresh interval, ns."""
        return self.refresh_window / self.refresh_count


#: ESMT M12L16161A-5T (512K x 16 x 2 banks, 200 MHz): docs/dram.md gives each value's source.
M12L16161A_5T = SdramTiming(
    part="M12L16161A-5T", tRCD=15, tRP=15, tRAS_min=40, tRAS_max=100_000, tRC=55, tRRD=10, tRFC=55,
    tRDL_clk=2, tMRD_clk=2, tCK_min={2: 10.0, 3: 5.0}, refresh_window=32e6, refresh_count=2048,
    power_up=200_000, init_refreshes=2)


@dataclass(frozen=True)
class Geometry:
    """Banks, rows, columns and the data width of the (possibly several chips wide) device."""

    banks: int
    rows: int
    columns: int
    data_bits: int

    @property
    def bytes(self) -> int:
        return self.banks * self.rows * self.columns * self.data_bits // 8


#: Two M12L16161A side by side as the Colorlight 5A-75B v7.0 wires them: 2 banks, 2,048 rows, 256 columns, 32 bits.
M12L16161A_GEOMETRY_X32 = Geometry(banks=2, rows=2048, columns=256, data_bits=32)


class TimingViolation(AssertionError):
    """A command broke a data sheet rule.

    Attributes
    ----------
    rule, command : str
    bank : int or None
    cycle : int
        The clock cycle of the offending command (or of the check that found a deadline passed).
    detail : str
    """

    def __init__(self, rule: str, command: str, bank, cycle: int, tck: float, detail: str):
        self.rule, self.command, self.bank, self.cycle, self.detail = rule, command, bank, cycle, detail
        where = "" if bank is None else f" to bank {bank}"
        super().__init__(f"SDRAM {rule} violated: {command}{where} at cycle {cycle} ({cycle * tck:.1f} ns): {detail}")


#: (cs_n, ras_n, cas_n, we_n) -> command, with cs_n low (cs_n high is DESELECT).
COMMANDS = {
    (0, 1, 1, 1): "NOP",
    (0, 0, 1, 1): "ACTIVE",
    (0, 1, 0, 1): "READ",
    (0, 1, 0, 0): "WRITE",
    (0, 1, 1, 0): "BURST TERMINATE",
    (0, 0, 1, 0): "PRECHARGE",
    (0, 0, 0, 1): "AUTO REFRESH",
    (0, 0, 0, 0): "LOAD MODE REGISTER",
}


def decode(cs_n: int, ras_n: int, cas_n: int, we_n: int, a10: int = 0) -> str:
    """The command of the control pins (``PRECHARGE ALL`` when A10 is high on a PRECHARGE)."""
    if cs_n:
        return "DESELECT"
    command = COMMANDS[(0, ras_n, cas_n, we_n)]
    if command == "PRECHARGE" and a10:
        return "PRECHARGE ALL"
    return command


@dataclass(frozen=True)
class ModeRegister:
    """The mode register's fields (A0-A2 burst length, A3 burst type, A4-A6 CAS latency, A7-A8 operating mode,
    A9 write burst mode), and whether the data sheet defines them."""

    value: int

    @property
    def burst_length(self):
        """1, 2, 4, 8, "full" (a page), or None (reserved)."""
        return {0: 1, 1: 2, 2: 4, 3: 8, 7: "full"}.get(self.value & 7)

    @property
    def interleaved(self) -> bool:
        return bool(self.value >> 3 & 1)

    @property
    def cas_latency(self):
        """2 or 3, or None (reserved)."""
        return {2: 2, 3: 3}.get(self.value >> 4 & 7)

    @property
    def operating_mode(self) -> int:
        return self.value >> 7 & 3

    @property
    def single_write(self) -> bool:
        """A9: burst read, single-location write."""
        return bool(self.value >> 9 & 1)

    def problems(self, timing: SdramTiming, tck: float) -> list[str]:
        """What the data sheet does not allow in this mode at clock period ``tck`` ns."""
        out = []
        if self.burst_length is None:
            out.append(f"reserved burst length code {self.value & 7}")
        if self.burst_length == "full" and self.interleaved:
            out.append("full-page bursts are sequential only")
        cl = self.cas_latency
        if cl is None:
            out.append(f"reserved CAS latency code {self.value >> 4 & 7}")
        elif cl not in timing.tCK_min:
            out.append(f"CAS latency {cl} not supported by {timing.part}")
        elif tck + 1e-9 < timing.tCK_min[cl]:
            out.append(f"CAS latency {cl} needs tCK >= {timing.tCK_min[cl]} ns, the clock is {tck:.3f} ns")
        if self.operating_mode != 0:
            out.append(f"reserved operating mode A8:A7 = {self.operating_mode:02b}")
        return out


@dataclass
class _Bank:
    open: bool = False
    row: int = 0
    activated: int | None = None        # cycle of the last ACTIVE
    precharged: int | None = None       # cycle the last precharge started (explicit or automatic)
    last_data_in: int | None = None     # cycle of the last write data accepted
    auto_precharge_at: int | None = None


@dataclass
class Burst:
    """A READ or WRITE burst in progress: its data cycles and columns."""

    kind: str                           # "READ" or "WRITE"
    bank: int
    row: int
    columns: list
    first_data: int                     # cycle of the first data
    end: int                            # one past the last data cycle (shortened when interrupted)


class SdramChecker:
    """The data sheet's rules, fed one command at a time.

    Parameters
    ----------
    timing : SdramTiming
    geometry : Geometry
    tck : float
        The clock period, ns.
    refresh_slack : float
        How many tREFI intervals the refreshes may lag their average schedule (counted from the end of the
        initialisation), at any time. The data sheet asks ``refresh_count`` refreshes per ``refresh_window``; a
        run shorter than the window can only check the average rate, with this allowance for a refresh a little
        late.
    check_power_up : bool
        Check the power-up wait (a bench that starts the model late turns it off).
    power_up : float or None
        The power-up wait checked, ns: the part's (``timing.power_up``) by default. A simulation shortens it only
        together with the controller's own wait (both from one parameter); any command but NOP or DESELECT before
        it still fails.

    Notes
    -----
    Call :meth:`command` for every command the chip samples (NOP and DESELECT too, or at least :meth:`advance`
    every cycle), with non-decreasing cycles, and :meth:`finish` at the end: the deadlines (tRAS max, refresh) are
    checked on every call.
    """

    def __init__(self, timing: SdramTiming = M12L16161A_5T, geometry: Geometry = M12L16161A_GEOMETRY_X32, *,
                 tck: float, refresh_slack: float = 1.0, check_power_up: bool = True, power_up: float | None = None):
        if power_up is not None and not (isinstance(power_up, (int, float)) and 0 <= power_up <= timing.power_up):
            raise ValueError(f"power_up must be from 0 to the part's {timing.power_up} ns, not {power_up!r}")
        self.power_up = timing.power_up if power_up is None else float(power_up)
        self.timing, self.geometry, self.tck = timing, geometry, float(tck)
        self.refresh_slack = float(refresh_slack)
        self.check_power_up = check_power_up
        self.banks = [_Bank() for _ in range(geometry.banks)]
        self.mode: ModeRegister | None = None
        self.initialised_at: int | None = None
        self._precharged_all = False    # the initialisation's PRECHARGE ALL seen
        self._init_refreshes = 0
        self.last_refresh: int | None = None
        self.last_mrs: int | None = None
        self.last_active: tuple[int, int] | None = None    # (cycle, bank)
        self.refreshes = 0              # AUTO REFRESH commands since the initialisation
        self.refresh_cycles: list[int] = []
        self.max_refresh_gap = 0        # cycles, between refreshes after the initialisation
        self.bursts: list[Burst] = []   # the bursts whose data may still be on the bus
        self.cycle = 0
        self.counts: dict[str, int] = {}

    # helpers ----------------------------------------------------------------------------------------------------

    def _fail(self, rule, command, bank, cycle, detail):
        raise TimingViolation(rule, command, bank, cycle, self.tck, detail)

    def _ns(self, cycles: int) -> float:
        return cycles * self.tck

    def _min_ns(self, rule, command, bank, cycle, since, what, need_ns):
        if since is None:
            return
        if self._ns(cycle - since) + 1e-6 < need_ns:
            self._fail(rule, command, bank, cycle,
                       f"{self._ns(cycle - since):.1f} ns after {what} at cycle {since} "
                       f"({self._ns(since):.1f} ns), needs {need_ns} ns")

    def _min_clk(self, rule, command, bank, cycle, since, what, need):
        if since is None:
            return
        if cycle - since < need:
            self._fail(rule, command, bank, cycle,
                       f"{cycle - since} clocks after {what} at cycle {since} ({self._ns(since):.1f} ns), "
                       f"needs {need} clocks")

    def _common(self, command, bank, cycle):
        """tRFC and tMRD: no command (but NOP) inside a refresh or a mode register set."""
        self._min_ns("tRFC", command, bank, cycle, self.last_refresh, "AUTO REFRESH", self.timing.tRFC)
        self._min_clk("tMRD", command, bank, cycle, self.last_mrs, "LOAD MODE REGISTER", self.timing.tMRD_clk)

    def _all_idle(self, command, cycle):
        for index, b in enumerate(self.banks):
            if b.open:
                self._fail("all banks idle", command, None, cycle,
                           f"bank {index} is open (row {b.row}, activated at cycle {b.activated}); "
                           "precharge every bank first")
            self._min_ns("tRP", command, index, cycle, b.precharged, "its precharge", self.timing.tRP)

    def _burst_length(self) -> int:
        bl = self.mode.burst_length
        return self.geometry.columns if bl == "full" else bl

    def _columns(self, column: int, length: int) -> list:
        if self.mode.burst_length == "full":
            return [(column + i) % self.geometry.columns for i in range(length)]
        base = column & ~(length - 1)
        offset = column & (length - 1)
        if self.mode.interleaved:
            return [base | (offset ^ i) for i in range(length)]
        return [base | ((offset + i) & (length - 1)) for i in range(length)]

    def _close(self, bank_index: int, cycle: int):
        b = self.banks[bank_index]
        b.open, b.precharged, b.auto_precharge_at = False, cycle, None

    def _settle(self, cycle: int):
        """Automatic precharges whose time has come."""
        for index, b in enumerate(self.banks):
            if b.open and b.auto_precharge_at is not None and b.auto_precharge_at <= cycle:
                self._close(index, b.auto_precharge_at)

    def _interrupt_burst(self, cycle: int, command: str, bank=None):
        """A READ, WRITE, BURST TERMINATE or PRECHARGE at ``cycle`` ends the burst in progress (a PRECHARGE only
        the burst of its bank): a READ's data already on its way (CAS latency - 1 cycles) still comes out,
        unless a WRITE takes the bus; a WRITE's data stops at once."""
        burst = self.burst
        if burst is None or burst.end <= cycle or (bank is not None and burst.bank not in bank):
            return
        if burst.kind == "READ" and command != "WRITE":
            burst.end = min(burst.end, cycle + self.mode.cas_latency)
        else:
            burst.end = min(burst.end, cycle)

    @property
    def burst(self) -> Burst | None:
        """The last burst started (the one a new command interrupts)."""
        return self.bursts[-1] if self.bursts else None

    def burst_at(self, kind: str, cycle: int) -> Burst | None:
        """The ``kind`` burst whose data is on the bus at ``cycle``, if any."""
        for burst in self.bursts:
            if burst.kind == kind and burst.first_data <= cycle < burst.end:
                return burst
        return None

    # the rules ----------------------------------------------------------------------------------------------------

    def advance(self, cycle: int):
        """Check the deadlines up to ``cycle``: no row open past tRAS max, the refreshes on schedule."""
        if cycle < self.cycle:
            raise ValueError(f"cycles must not go back ({cycle} after {self.cycle})")
        self.cycle = cycle
        self._settle(cycle)
        for index, b in enumerate(self.banks):
            if b.open and self._ns(cycle - b.activated) > self.timing.tRAS_max:
                self._fail("tRAS max", "(row still open)", index, cycle,
                           f"row {b.row} open since cycle {b.activated} ({self._ns(b.activated):.1f} ns), "
                           f"{self._ns(cycle - b.activated):.1f} ns > {self.timing.tRAS_max} ns")
        if self.initialised_at is not None:
            elapsed = self._ns(cycle - self.initialised_at)
            due = math.floor(elapsed / self.timing.tREFI - self.refresh_slack)
            if self.refreshes < due:
                last = self.last_refresh if self.refreshes else self.initialised_at
                self._fail("tREFI (refresh deadline)", "(no AUTO REFRESH)", None, cycle,
                           f"{self.refreshes} AUTO REFRESH in {elapsed:.1f} ns since the initialisation ended at "
                           f"cycle {self.initialised_at}; {due} due at one per {self.timing.tREFI:.1f} ns "
                           f"({self.timing.refresh_count} per {self.timing.refresh_window / 1e6:g} ms) with "
                           f"{self.refresh_slack:g} interval(s) of slack; the last at cycle {last}")

    def command(self, cycle: int, command: str, bank: int = 0, address: int = 0):
        """One command sampled at the rising edge of ``cycle``.

        Parameters
        ----------
        cycle : int
        command : str
            A value of :data:`COMMANDS`, ``"PRECHARGE ALL"`` or ``"DESELECT"``.
        bank, address : int
            The bank and address pins (row for ACTIVE, column and A10 for READ and WRITE, the mode for
            LOAD MODE REGISTER).

        Returns
        -------
        Burst or None
            The burst a READ or WRITE starts (its columns and data cycles).

        Raises
        ------
        TimingViolation
        """
        self.advance(cycle)
        self.counts[command] = self.counts.get(command, 0) + 1
        if command in ("NOP", "DESELECT"):
            return None
        t = self.timing
        if self.check_power_up and self._ns(cycle) < self.power_up:
            self._fail("power-up wait", command, None, cycle,
                       f"{self._ns(cycle):.1f} ns after power-up, only NOP or DESELECT for {self.power_up:g} ns")
        if command == "ACTIVE":
            b = self.banks[bank]
            if self.initialised_at is None:
                self._fail("initialisation", command, bank, cycle,
                           "the initialisation (PRECHARGE ALL, "
                           f"{t.init_refreshes} AUTO REFRESH, LOAD MODE REGISTER) has not been completed")
            if b.open:
                self._fail("ACTIVE to an open bank", command, bank, cycle,
                           f"row {b.row} is open since cycle {b.activated}; precharge it first")
            self._common(command, bank, cycle)
            self._min_ns("tRP", command, bank, cycle, b.precharged, "its precharge", t.tRP)
            self._min_ns("tRC", command, bank, cycle, b.activated, "its last ACTIVE", t.tRC)
            if self.last_active is not None and self.last_active[1] != bank:
                self._min_ns("tRRD", command, bank, cycle, self.last_active[0],
                             f"ACTIVE to bank {self.last_active[1]}", t.tRRD)
            b.open, b.row, b.activated = True, address % self.geometry.rows, cycle
            self.last_active = (cycle, bank)
            return None
        if command in ("READ", "WRITE"):
            b = self.banks[bank]
            if self.initialised_at is None:
                self._fail("initialisation", command, bank, cycle, "the initialisation has not been completed")
            problems = self.mode.problems(t, self.tck)
            if problems:
                self._fail("mode register", command, bank, cycle, "; ".join(problems))
            if not b.open:
                self._fail(f"{command} to a closed bank", command, bank, cycle,
                           "no row is open in the bank" +
                           (f" (precharged at cycle {b.precharged})" if b.precharged is not None else ""))
            self._common(command, bank, cycle)
            self._min_ns("tRCD", command, bank, cycle, b.activated, "ACTIVE", t.tRCD)
            if command == "WRITE":
                reading = self.burst_at("READ", cycle)
                if reading is not None:
                    self._fail("data bus turnaround", command, bank, cycle,
                               f"read data of the READ to bank {reading.bank} is on the bus at this cycle "
                               f"(cycles {reading.first_data}..{reading.end - 1})")
            self._interrupt_burst(cycle, command)
            length = 1 if command == "WRITE" and self.mode.single_write else self._burst_length()
            column = (address & 0x3FF) % self.geometry.columns
            columns = self._columns(column, length)
            first = cycle + (self.mode.cas_latency if command == "READ" else 0)
            self.bursts = [x for x in self.bursts if x.end > cycle]
            self.bursts.append(Burst(command, bank, b.row, columns, first, first + length))
            if address >> 10 & 1:                # auto precharge after the burst (and write recovery)
                if command == "WRITE":
                    b.auto_precharge_at = max(cycle + length - 1 + t.tRDL_clk,
                                              b.activated + math.ceil(t.tRAS_min / self.tck))
                else:
                    b.auto_precharge_at = max(cycle + length, b.activated + math.ceil(t.tRAS_min / self.tck))
            if command == "WRITE":
                b.last_data_in = cycle + length - 1
            return self.burst
        if command == "BURST TERMINATE":
            self._common(command, None, cycle)
            self._interrupt_burst(cycle, command)
            if self.burst is not None and self.burst.kind == "WRITE" and self.burst.end >= cycle:
                self.banks[self.burst.bank].last_data_in = min(self.banks[self.burst.bank].last_data_in, cycle - 1)
            return None
        if command in ("PRECHARGE", "PRECHARGE ALL"):
            self._common(command, None if command == "PRECHARGE ALL" else bank, cycle)
            targets = range(len(self.banks)) if command == "PRECHARGE ALL" else [bank]
            if self.burst is not None and self.burst.bank in targets and self.burst.end > cycle:
                self._interrupt_burst(cycle, command, targets)
                if self.burst.kind == "WRITE":
                    self.banks[self.burst.bank].last_data_in = min(self.banks[self.burst.bank].last_data_in,
                                                                   cycle - 1)
            for index in targets:
                b = self.banks[index]
                if not b.open:
                    continue
                self._min_ns("tRAS min", command, index, cycle, b.activated, "ACTIVE", t.tRAS_min)
                if b.last_data_in is not None and b.last_data_in >= b.activated:
                    self._min_clk("tRDL (write recovery)", command, index, cycle, b.last_data_in,
                                  "the last write data", t.tRDL_clk)
                self._close(index, cycle)
            if command == "PRECHARGE ALL" and self.initialised_at is None:
                self._precharged_all, self._init_refreshes = True, 0
            return None
        if command == "AUTO REFRESH":
            self._all_idle(command, cycle)
            self._common(command, None, cycle)
            if self.initialised_at is not None:
                if self.refresh_cycles:
                    self.max_refresh_gap = max(self.max_refresh_gap, cycle - self.refresh_cycles[-1])
                self.refreshes += 1
                self.refresh_cycles.append(cycle)
            elif self._precharged_all:
                self._init_refreshes += 1
            self.last_refresh = cycle
            return None
        if command == "LOAD MODE REGISTER":
            self._all_idle(command, cycle)
            self._common(command, None, cycle)
            if self.burst is not None and self.burst.end > cycle:
                self._fail("LOAD MODE REGISTER during a burst", command, None, cycle,
                           f"the {self.burst.kind} burst ends at cycle {self.burst.end}")
            self.mode = ModeRegister(address & ((1 << 11) - 1))
            self.last_mrs = cycle
            if self.initialised_at is None and self._precharged_all and self._init_refreshes >= t.init_refreshes:
                self.initialised_at = cycle
            return None
        raise ValueError(f"unknown command {command!r}")

    def finish(self, cycle: int):
        """Check the deadlines at the end of a run."""
        self.advance(cycle)


class SdramChip:
    """The cocotb model of the SDRAM on a core's pins.

    Parameters
    ----------
    clk
        The clock the chip samples on (its rising edges).
    pins : dict
        Handles: ``a``, ``ba``, ``cs_n``, ``ras_n``, ``cas_n``, ``we_n``, ``cke``, ``dm`` (outputs of the core),
        ``dq`` (the resolved bus, read for write data), ``dq_drive`` and ``dq_oe`` (the wrapper's driver of the
        bus: value, and an enable per byte lane).
    checker : SdramChecker
    log : logging.Logger, optional

    Notes
    -----
    A violation is raised from :meth:`run`'s coroutine (so the cocotb test that started it fails with the
    checker's message) and kept in :attr:`violation`.
    """

    def __init__(self, clk, pins: dict, checker: SdramChecker, log=None):
        self.clk, self.pins, self.checker, self.log = clk, pins, checker, log
        g = checker.geometry
        self.lanes = g.data_bits // 8
        self.memory: dict[tuple[int, int, int], int] = {}
        self.violation: TimingViolation | None = None
        self.cycle = 0
        self.reads = self.writes = 0
        self._dm_history = [0, 0]       # dm at the last two edges (read masks act two cycles later)
        self._driving = False
        self.commands: list[tuple[int, str, int, int]] | None = None   # set to a list to record

    @staticmethod
    def _int(handle):
        """The handle's value as an int, or None if any bit is X or Z."""
        value = handle.value
        if not value.is_resolvable:
            return None
        return int(value)

    def unwritten(self, bank: int, row: int, column: int) -> int:
        """What a never-written location reads (a fixed pattern of its address)."""
        return (0xA5A5A5A5 ^ (bank << 28) ^ (row << 12) ^ (column * 0x01010101)) & ((1 << 32) - 1)

    async def run(self):
        """Sample the pins at every rising edge, forever (start it with ``cocotb.start_soon``)."""
        from cocotb.triggers import RisingEdge
        p = self.pins
        cke_before = 0
        while True:
            await RisingEdge(self.clk)
            self.cycle += 1
            cycle = self.cycle
            cke = self._int(p["cke"])
            cs_n = self._int(p["cs_n"])
            try:
                if cke is None:
                    if cs_n == 0:
                        self.checker._fail("defined inputs", "(CKE undefined)", None, cycle,
                                           f"CKE is {p['cke'].value} with CS# low")
                    self.checker.advance(cycle)
                    command = None
                elif not cke_before:
                    self.checker.advance(cycle)      # clock suspended or powered down: inputs ignored
                    command = None
                else:
                    if cs_n is None:
                        self.checker._fail("defined inputs", "(CS# undefined)", None, cycle,
                                           f"CS# is {p['cs_n'].value} with CKE high")
                    pins = [self._int(p[n]) for n in ("ras_n", "cas_n", "we_n")]
                    if cs_n == 0 and None in pins:
                        self.checker._fail("defined inputs", "(command undefined)", None, cycle,
                                           f"RAS#/CAS#/WE# are {p['ras_n'].value}/{p['cas_n'].value}/"
                                           f"{p['we_n'].value} with CS# low")
                    a = self._int(p["a"]) if cs_n == 0 else 0
                    ba = self._int(p["ba"]) if cs_n == 0 else 0
                    command = decode(cs_n, *pins, (a or 0) >> 10 & 1) if cs_n == 0 else "DESELECT"
                    if command not in ("NOP", "DESELECT") and (a is None or ba is None):
                        self.checker._fail("defined inputs", command, None, cycle,
                                           f"address {p['a'].value} bank {p['ba'].value}")
                    if self.commands is not None and command not in ("NOP", "DESELECT"):
                        self.commands.append((cycle, command, ba, a))
                    self.checker.command(cycle, command, ba or 0, a or 0)
                cke_before = cke
                self._data(cycle)
            except TimingViolation as violation:
                self.violation = violation
                if self.log:
                    self.log.error(str(violation))
                p["dq_oe"].value = 0
                raise

    def _data(self, cycle: int):
        """The data at this edge: a write's data in, and a read's data out after it (for the next edge)."""
        p, checker = self.pins, self.checker
        dm = self._int(p["dm"])
        burst = checker.burst_at("WRITE", cycle)
        if burst is not None:
            column = burst.columns[cycle - burst.first_data]
            key = (burst.bank, burst.row, column)
            if dm is None:
                checker._fail("defined inputs", "WRITE data", burst.bank, cycle, f"DQM is {p['dm'].value}")
            bits = str(p["dq"].value)             # MSB first
            width = len(bits)
            old = self.memory.get(key, self.unwritten(*key))
            new = old
            for lane in range(self.lanes):
                if dm >> lane & 1:
                    continue
                lane_bits = bits[width - 8 * (lane + 1):width - 8 * lane]
                if any(c not in "01" for c in lane_bits):
                    checker._fail("defined inputs", "WRITE data", burst.bank, cycle,
                                  f"byte lane {lane} is {lane_bits} and not masked")
                new = new & ~(0xFF << (8 * lane)) | int(lane_bits, 2) << (8 * lane)
            self.memory[key] = new
            self.writes += 1
        self._dm_history = [self._dm_history[1], dm or 0]
        drive_cycle = cycle + 1
        burst = checker.burst_at("READ", drive_cycle)
        if burst is not None:
            column = burst.columns[drive_cycle - burst.first_data]
            key = (burst.bank, burst.row, column)
            value = self.memory.get(key, self.unwritten(*key))
            read_mask = self._dm_history[0]         # DQM two edges before the data's edge
            p["dq_drive"].value = value
            p["dq_oe"].value = ((1 << self.lanes) - 1) & ~read_mask
            self._driving = True
            self.reads += 1
        elif self._driving:
            p["dq_oe"].value = 0
            self._driving = False


#: How :func:`cycle_breakdown` names a cycle with no command, by the commands around it (previous, next).
_GAPS = {
    ("ACTIVE", "READ"): "wait tRCD", ("ACTIVE", "WRITE"): "wait tRCD", ("PRECHARGE", "ACTIVE"): "wait tRP",
    ("PRECHARGE ALL", "ACTIVE"): "wait tRP", ("PRECHARGE ALL", "AUTO REFRESH"): "refresh",
    ("PRECHARGE", "AUTO REFRESH"): "refresh", ("AUTO REFRESH", "ACTIVE"): "refresh",
    ("READ", "WRITE"): "turnaround read to write", ("WRITE", "READ"): "turnaround write to read",
    ("WRITE", "PRECHARGE"): "wait tWR", ("WRITE", "PRECHARGE ALL"): "wait tWR",
    ("READ", "PRECHARGE"): "wait read to precharge", ("READ", "PRECHARGE ALL"): "wait read to precharge",
    ("ACTIVE", "PRECHARGE"): "wait tRAS", ("ACTIVE", "ACTIVE"): "wait tRRD/tRC",
    ("READ", "READ"): "idle between reads", ("WRITE", "WRITE"): "idle between writes",
}


def cycle_breakdown(commands, start: int, end: int) -> dict:
    """Where the command bus's cycles went from ``start`` to ``end`` (exclusive): the cycles of each command, and
    each cycle without one named by the commands around it (``wait tRCD`` between an ACTIVE and its READ or
    WRITE, ``turnaround read to write``, ``refresh`` around an AUTO REFRESH, ...; :data:`_GAPS`).

    Parameters
    ----------
    commands : list of (cycle, command, bank, address)
        As :attr:`SdramChip.commands` records them (NOP and DESELECT left out), in order.
    start, end : int
        Chip cycles.

    Returns
    -------
    dict
        Cycles by name, and ``"cycles"``: ``end - start``.
    """
    inside = [(cycle, command) for cycle, command, *_ in commands if start <= cycle < end]
    before = [command for cycle, command, *_ in commands if cycle < start]
    after = [command for cycle, command, *_ in commands if cycle >= end]
    counts: dict[str, int] = {}

    def add(name, n):
        if n > 0:
            counts[name] = counts.get(name, 0) + n

    previous, at = (before[-1] if before else None), start
    for cycle, command in inside + [(end, after[0] if after else None)]:
        if previous in ("AUTO REFRESH",) or command in ("AUTO REFRESH",):
            gap = "refresh"
        else:
            gap = _GAPS.get((previous, command), f"idle {previous} to {command}".lower())
        add(gap, cycle - at)
        if cycle < end:
            add(command, 1)
        previous, at = command, cycle + 1
    return {"cycles": end - start, **dict(sorted(counts.items(), key=lambda item: -item[1]))}
