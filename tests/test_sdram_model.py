"""The SDR SDRAM chip model's checker (:class:`apbbf.sim.cocotb.sdram_chip.SdramChecker`) fed command sequences
without a simulator: for each data sheet rule, a sequence that keeps it exactly and the same sequence one cycle
short, which must fail naming the rule, the command and the bank.

The clock is 200 MHz (tCK 5 ns, the -5T grade's fastest), where every ns rule is several cycles long: tRCD 3,
tRP 3, tRAS 8, tRC 11, tRRD 2, tRFC 11 cycles.
"""

import dataclasses
import math

import pytest

from apbbf.sim.cocotb.sdram_chip import (M12L16161A_5T, ModeRegister, SdramChecker, TimingViolation, decode)

TCK = 5.0
T = M12L16161A_5T
POWER_UP = math.ceil(T.power_up / TCK)          # 40,000 cycles
RCD, RP, RAS, RC, RRD, RFC = (math.ceil(x / TCK) for x in (T.tRCD, T.tRP, T.tRAS_min, T.tRC, T.tRRD, T.tRFC))
MR_CL3_BL1 = 0x030
MR_CL3_BL4 = 0x032


def initialised(mode=MR_CL3_BL1, **options):
    """A checker after the data sheet's initialisation; returns it and the first cycle free for commands."""
    c = SdramChecker(options.pop("timing", T), tck=TCK, **options)
    t = POWER_UP
    c.command(t, "PRECHARGE ALL")
    t += RP
    c.command(t, "AUTO REFRESH")
    t += RFC
    c.command(t, "AUTO REFRESH")
    t += RFC
    c.command(t, "LOAD MODE REGISTER", 0, mode)
    assert c.initialised_at == t
    return c, t + T.tMRD_clk


def test_cycle_counts():
    assert (RCD, RP, RAS, RC, RRD, RFC) == (3, 3, 8, 11, 2, 11)
    assert T.tREFI == pytest.approx(15625.0)


# Each case: (rule, a function that runs the sequence with its critical gap shortened by `short` cycles).

def _trcd(short):
    c, t = initialised()
    c.command(t, "ACTIVE", 1, 5)
    c.command(t + RCD - short, "READ", 1, 0)


def _trcd_write(short):
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 5)
    c.command(t + RCD - short, "WRITE", 0, 0)


def _trp(short):
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 1)
    t += RAS
    c.command(t, "PRECHARGE", 0)
    c.command(t + RP - short, "ACTIVE", 0, 2)


def _trp_refresh(short):
    c, t = initialised()
    c.command(t, "ACTIVE", 1, 1)
    t += RAS
    c.command(t, "PRECHARGE ALL")
    c.command(t + RP - short, "AUTO REFRESH")


def _tras(short):
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 1)
    c.command(t + RAS - short, "PRECHARGE", 0)


def _tras_all(short):
    c, t = initialised()
    c.command(t, "ACTIVE", 1, 1)
    c.command(t + RAS - short, "PRECHARGE ALL")


def _trc(short):
    # the part's tRC (55 ns) is tRAS + tRP exactly, so the rule is tested on a part with a longer one (70 ns):
    # the precharge at tRAS leaves tRP kept when tRC is broken
    timing = dataclasses.replace(T, tRC=70)
    c, t = initialised(timing=timing)
    c.command(t, "ACTIVE", 0, 1)
    c.command(t + RAS, "PRECHARGE", 0)
    c.command(t + 14 - short, "ACTIVE", 0, 2)


def _trrd(short):
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 1)
    c.command(t + RRD - short, "ACTIVE", 1, 1)


def _trdl(short):
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 1)
    t += RAS
    c.command(t, "WRITE", 0, 3)
    c.command(t + T.tRDL_clk - short, "PRECHARGE", 0)


def _trdl_burst(short):
    c, t = initialised(MR_CL3_BL4)
    c.command(t, "ACTIVE", 0, 1)
    t += RAS
    c.command(t, "WRITE", 0, 4)                     # data in at t..t+3
    c.command(t + 3 + T.tRDL_clk - short, "PRECHARGE", 0)


def _trfc(short):
    c, t = initialised()
    c.command(t, "AUTO REFRESH")
    c.command(t + RFC - short, "ACTIVE", 0, 1)


def _trfc_refresh(short):
    c, t = initialised()
    c.command(t, "AUTO REFRESH")
    c.command(t + RFC - short, "AUTO REFRESH")


def _tmrd(short):
    c, t = initialised()
    c.command(t, "LOAD MODE REGISTER", 0, MR_CL3_BL1)
    c.command(t + T.tMRD_clk - short, "ACTIVE", 0, 1)


def _power_up(short):
    c = SdramChecker(tck=TCK)
    c.command(POWER_UP - short, "PRECHARGE ALL")


def _refresh_deadline(short):
    """One refresh per tREFI from the end of the initialisation, the last one late by `short` cycles past the
    slack (one interval)."""
    c, t0 = initialised(refresh_slack=1.0)
    start = t0 - T.tMRD_clk                         # the initialisation ended at the mode register set
    refi = T.tREFI / TCK                            # 3125 cycles
    for n in range(1, 5):
        c.command(start + round(n * refi), "AUTO REFRESH")
    # the 5th is due at 5 intervals; with one interval of slack, the check at 6 intervals fails without it
    c.command(start + round(6 * refi) - 1 + short, "AUTO REFRESH")


def _tras_max(short):
    c, t = initialised(refresh_slack=100)
    c.command(t, "ACTIVE", 0, 1)
    c.command(t + round(T.tRAS_max / TCK) + (1 if short else 0), "PRECHARGE", 0)


RULES = {
    "tRCD": _trcd, "tRCD/write": _trcd_write, "tRP": _trp, "tRP/refresh": _trp_refresh, "tRAS min": _tras,
    "tRAS min/all": _tras_all, "tRC": _trc, "tRRD": _trrd, "tRDL (write recovery)": _trdl,
    "tRDL (write recovery)/burst": _trdl_burst, "tRFC": _trfc, "tRFC/refresh": _trfc_refresh, "tMRD": _tmrd,
    "power-up wait": _power_up, "tREFI (refresh deadline)": _refresh_deadline, "tRAS max": _tras_max,
}


@pytest.mark.parametrize("case", RULES)
def test_rule_kept(case):
    RULES[case](0)


@pytest.mark.parametrize("case", RULES)
def test_rule_broken_by_one_cycle(case):
    rule = case.split("/")[0]
    with pytest.raises(TimingViolation) as caught:
        RULES[case](1)
    assert caught.value.rule == rule, str(caught.value)
    assert str(caught.value).startswith(f"SDRAM {rule} violated: ")


def test_message_names_rule_command_bank_and_times():
    with pytest.raises(TimingViolation) as caught:
        _trcd(1)
    message = str(caught.value)
    c, t = initialised()
    assert message == (f"SDRAM tRCD violated: READ to bank 1 at cycle {t + 2} ({(t + 2) * TCK:.1f} ns): 10.0 ns "
                       f"after ACTIVE at cycle {t} ({t * TCK:.1f} ns), needs 15 ns")


def test_read_closed_bank_and_activate_open_bank():
    c, t = initialised()
    with pytest.raises(TimingViolation, match="READ to a closed bank violated: READ to bank 0"):
        c.command(t, "READ", 0, 0)
    c, t = initialised()
    with pytest.raises(TimingViolation, match="WRITE to a closed bank"):
        c.command(t, "WRITE", 1, 0)
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 7)
    with pytest.raises(TimingViolation, match="ACTIVE to an open bank violated: ACTIVE to bank 0.*row 7"):
        c.command(t + RC, "ACTIVE", 0, 8)
    # after its precharge the bank reads as closed again
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 7)
    c.command(t + RAS, "PRECHARGE", 0)
    with pytest.raises(TimingViolation, match="closed bank"):
        c.command(t + RAS + 5, "READ", 0, 0)


def test_refresh_and_mode_set_need_all_banks_idle():
    c, t = initialised()
    c.command(t, "ACTIVE", 1, 7)
    with pytest.raises(TimingViolation, match="all banks idle violated: AUTO REFRESH.*bank 1 is open"):
        c.command(t + RAS, "AUTO REFRESH")
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 7)
    with pytest.raises(TimingViolation, match="all banks idle violated: LOAD MODE REGISTER"):
        c.command(t + RAS, "LOAD MODE REGISTER", 0, MR_CL3_BL1)


def test_initialisation_sequence():
    # an ACTIVE after power-up without the initialisation
    c = SdramChecker(tck=TCK)
    with pytest.raises(TimingViolation, match="initialisation violated: ACTIVE"):
        c.command(POWER_UP, "ACTIVE", 0, 0)
    # one AUTO REFRESH only: the mode register set does not complete the initialisation
    c = SdramChecker(tck=TCK)
    t = POWER_UP
    c.command(t, "PRECHARGE ALL")
    c.command(t + RP, "AUTO REFRESH")
    c.command(t + RP + RFC, "LOAD MODE REGISTER", 0, MR_CL3_BL1)
    assert c.initialised_at is None
    with pytest.raises(TimingViolation, match="initialisation violated: ACTIVE"):
        c.command(t + RP + RFC + 2, "ACTIVE", 0, 0)
    # LiteDRAM's order (PRECHARGE ALL, mode set, PRECHARGE ALL, two refreshes, mode set) completes it
    c = SdramChecker(tck=TCK)
    for command, gap in (("PRECHARGE ALL", 0), ("LOAD MODE REGISTER", RP), ("PRECHARGE ALL", 2),
                         ("AUTO REFRESH", RP), ("AUTO REFRESH", RFC), ("LOAD MODE REGISTER", RFC)):
        t += gap
        c.command(t, command, 0, MR_CL3_BL1 | 0x100 if command == "LOAD MODE REGISTER" and gap == RP else MR_CL3_BL1)
    assert c.initialised_at == t


def test_mode_register_checked_when_used():
    # CAS latency 2 at 200 MHz: the part needs tCK >= 10 ns for CL 2
    c, t = initialised(mode=0x020)
    c.command(t, "ACTIVE", 0, 1)
    with pytest.raises(TimingViolation, match="mode register violated: READ.*CAS latency 2 needs tCK >= 10"):
        c.command(t + RCD, "READ", 0, 0)
    # the same at 100 MHz is legal
    c = SdramChecker(tck=10.0)
    t = math.ceil(T.power_up / 10.0)
    for command, gap in (("PRECHARGE ALL", 0), ("AUTO REFRESH", 2), ("AUTO REFRESH", 6), ("LOAD MODE REGISTER", 6),
                         ("ACTIVE", 2), ("READ", 2)):
        t += gap
        c.command(t, command, 0, 0x020 if command == "LOAD MODE REGISTER" else 0)
    # a reserved operating mode (A8, LiteDRAM's DLL reset bit) left in the mode register
    c, t = initialised(mode=MR_CL3_BL1 | 0x100)
    c.command(t, "ACTIVE", 0, 1)
    with pytest.raises(TimingViolation, match="reserved operating mode A8:A7 = 10"):
        c.command(t + RCD, "WRITE", 0, 0)
    assert ModeRegister(0x032).burst_length == 4 and ModeRegister(0x032).cas_latency == 3


def test_bursts_and_bus_turnaround():
    c, t = initialised(MR_CL3_BL4)
    c.command(t, "ACTIVE", 0, 9)
    burst = c.command(t + RCD, "READ", 0, 6)
    assert burst.columns == [6, 7, 4, 5] and burst.first_data == t + RCD + 3 and burst.end == t + RCD + 7
    # a WRITE while that data is on the bus
    with pytest.raises(TimingViolation, match="data bus turnaround violated: WRITE to bank 0"):
        c.command(t + RCD + 4, "WRITE", 0, 0)
    # BURST TERMINATE: data already on its way (CL - 1 cycles) still comes out
    c, t = initialised(MR_CL3_BL4)
    c.command(t, "ACTIVE", 0, 9)
    burst = c.command(t + RCD, "READ", 0, 0)
    c.command(t + RCD + 1, "BURST TERMINATE")
    assert burst.end == t + RCD + 1 + 3
    # interleaved order
    c, t = initialised(MR_CL3_BL4 | 0x8)
    c.command(t, "ACTIVE", 1, 9)
    assert c.command(t + RCD, "WRITE", 1, 6).columns == [6, 7, 4, 5]
    c, t = initialised(0x033 | 0x8)                  # BL 8 interleaved
    c.command(t, "ACTIVE", 1, 9)
    assert c.command(t + RCD, "READ", 1, 5).columns == [5, 4, 7, 6, 1, 0, 3, 2]


def test_auto_precharge():
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 1)
    c.command(t + RCD, "WRITE", 0, 1 << 10)          # A10: auto precharge after write recovery and tRAS
    closes = t + RAS
    with pytest.raises(TimingViolation, match="tRP violated: ACTIVE to bank 0"):
        c.command(closes + RP - 1, "ACTIVE", 0, 2)
    c, t = initialised()
    c.command(t, "ACTIVE", 0, 1)
    c.command(t + RCD, "WRITE", 0, 1 << 10)
    c.command(t + RAS + RP, "ACTIVE", 0, 2)


def test_decode():
    assert decode(1, 0, 0, 0) == "DESELECT"
    assert decode(0, 1, 1, 1) == "NOP"
    assert decode(0, 0, 1, 0, 1) == "PRECHARGE ALL"
    assert decode(0, 0, 1, 0, 0) == "PRECHARGE"
    assert decode(0, 1, 1, 0) == "BURST TERMINATE"
    assert decode(0, 0, 0, 0) == "LOAD MODE REGISTER"
    assert decode(0, 0, 0, 1) == "AUTO REFRESH"


def test_refresh_counts_and_gap():
    c, t = initialised()
    start = t - T.tMRD_clk
    for n in range(1, 4):
        c.command(start + 3000 * n, "AUTO REFRESH")
    c.finish(start + 9500)
    assert c.refreshes == 3 and c.max_refresh_gap == 3000


def test_cycle_breakdown():
    """Each cycle counted once: the commands, and the gaps named by the commands around them."""
    from apbbf.sim.cocotb.sdram_chip import cycle_breakdown
    commands = [(10, "ACTIVE", 0, 5), (12, "READ", 0, 0), (13, "READ", 0, 1), (16, "WRITE", 0, 2),
                (19, "READ", 0, 3), (20, "PRECHARGE", 0, 0), (22, "AUTO REFRESH", 0, 0), (26, "ACTIVE", 1, 7)]
    counts = cycle_breakdown(commands, 11, 26)
    assert counts == {"cycles": 15, "READ": 3, "turnaround read to write": 2, "turnaround write to read": 2,
                      "refresh": 4, "wait tRCD": 1, "WRITE": 1, "PRECHARGE": 1, "AUTO REFRESH": 1}, counts
    assert sum(n for name, n in counts.items() if name != "cycles") == counts["cycles"]


def test_power_up_shortened_for_simulation():
    """A simulation's shorter power-up wait (the gateware told the same): a command before it still fails, one at
    it passes; the wait may not exceed the part's, nor be negative."""
    wait = 20_000.0                                 # 20 us, 4,000 cycles at 200 MHz
    cycles = math.ceil(wait / TCK)
    with pytest.raises(TimingViolation, match="power-up wait violated: PRECHARGE ALL at cycle 3999 .*for 20000 ns"):
        SdramChecker(tck=TCK, power_up=wait).command(cycles - 1, "PRECHARGE ALL")
    SdramChecker(tck=TCK, power_up=wait).command(cycles, "PRECHARGE ALL")
    with pytest.raises(TimingViolation, match="power-up wait"):       # the part's own wait by default
        SdramChecker(tck=TCK).command(cycles, "PRECHARGE ALL")
    for bad in (-1, T.power_up + 1, "20us"):
        with pytest.raises(ValueError, match="power_up must be from 0 to the part's 200000 ns"):
            SdramChecker(tck=TCK, power_up=bad)
