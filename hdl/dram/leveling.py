# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""LiteDRAM's ECP5DDRPHY read leveling without a CPU: per byte lane, every read bitslip and read delay is tried
with test patterns written and read back through the DFI injector's CSRs, and the lane is set to the centre of
its longest window of settings that read back right, as LiteX's BIOS does it."""

import random

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer
from .initializer import WishboneSignature

__all__ = ["ReadLeveler", "test_patterns", "lane_masks", "pick_window"]

#: DFII ``command`` bits (LiteDRAM's ``DFII_COMMAND_*``).
CS, WE, CAS, RAS, WRDATA, RDDATA = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
ACTIVATE, WRITE, READ, PRECHARGE = RAS | CS, CAS | WE | CS | WRDATA, CAS | CS | RDDATA, RAS | WE | CS
#: The PHY's and the injector's registers the scan writes and reads.
CSRS = ("ddrphy_dly_sel", "ddrphy_rdly_dq_rst", "ddrphy_rdly_dq_inc", "ddrphy_rdly_dq_bitslip_rst",
        "ddrphy_rdly_dq_bitslip", "ddrphy_burstdet_clr", "ddrphy_burstdet_seen")


def test_patterns(count: int, phases: int, phase_bits: int, seed: int = 0x1E7E1) -> list[int]:
    """``count`` fixed pseudo-random bursts of ``phases * phase_bits`` bits (phase 0 in the low bits), the same
    on every build, so that a bitslip or a delay off by one beat reads back another burst's bits."""
    rng = random.Random(seed)
    return [rng.getrandbits(phases * phase_bits) for _ in range(count)]


def lane_masks(lanes: int, phase_bits: int) -> list[list[int]]:
    """Per lane, per 32-bit CSR word of a phase's data (word 0 the low bits): the bits of that lane (the PHY
    puts beat ``b`` of lane ``i`` at byte ``b * lanes + i`` of a phase)."""
    words = phase_bits // 32
    return [[sum(0xFF << (8 * n) for n in range(4) if (4 * w + n) % lanes == lane) for w in range(words)]
            for lane in range(lanes)]


def pick_window(passes: list[list[bool]]) -> tuple[int, int] | None:
    """What the scan picks from ``passes[bitslip][delay]`` (the gateware's rule, for the benches): the centre
    ``(bitslip, start + (length - 1) // 2)`` of the longest run of passing delays within one bitslip (the first
    such run on a tie), or None when no setting passes."""
    best = None                                      # (length, bitslip, start)
    for bitslip, row in enumerate(passes):
        start = length = 0
        for delay, ok in enumerate(row):
            if not ok:
                length = 0
                continue
            if length == 0:
                start = delay
            length += 1
            if best is None or length > best[0]:
                best = (length, bitslip, start)
    if best is None:
        return None
    length, bitslip, start = best
    return bitslip, start + (length - 1) // 2


class ReadLeveler(wiring.Component):
    """On ``start``, with the DFI injector in software control and the DRAM initialised, scans the read bitslip
    and the read delay of each byte lane and sets each lane to the centre of its longest passing window
    (:func:`pick_window`), then raises ``done``; a lane with no passing setting is set back to the PHY's reset
    values (bitslip 0, delay 0) and sets its bit of ``failed``.

    A setting passes when every test pattern (:func:`test_patterns`), written to row 0 of bank 0 through the
    injector's write phase and read back through its read phase, has the lane's bits right and the lane's
    DQSBUFM saw the read burst (``burstdet_seen``). Each action on a lane selects it alone (``dly_sel``) and
    pauses all lanes' DQSBUFMs together after it, as the BIOS does.

    Parameters
    ----------
    csrs : dict
        The core's CSR byte addresses (:data:`CSRS` and the injector's ``pi<n>`` registers).
    lanes : int
        Byte lanes (DQS groups), 1 .. 8.
    delays : int
        Read delay taps (ECP5DDRPHY: 8), 2 .. 64.
    bitslips : int
        Read bitslips (ECP5DDRPHY: 4), 1 .. 16.
    phases : int
        DFI phases, 1 .. 4.
    phase_bits : int
        Data bits of one phase (ECP5DDRPHY: 4 beats of the DQ width), a multiple of 32 up to 256.
    rdphase, wrphase : int
        The injector phases that issue reads and writes.
    patterns : int
        Test patterns per setting, 1 .. 8.
    wait_cycles : int
        Cycles waited after each command (row opened, burst written, burst read back, row closed), 1 .. 1024:
        longer than the PHY's read latency.

    Attributes
    ----------
    wb : Out(WishboneSignature())
        On ``wb_ctrl``; idle outside the scan.
    start : In(1)
    done : Out(1)
        Held from the end of the scan on.
    failed : Out(lanes)
        Lanes that no setting read right.
    bitslip, delay : Out(8 * lanes)
        Each lane's setting (a byte each), valid with ``done``.

    Raises
    ------
    TypeError, ValueError
        If a parameter is of the wrong type or out of range.
    KeyError
        If ``csrs`` lacks a register the scan uses.
    """

    def __init__(self, csrs: dict, *, lanes: int = 2, delays: int = 8, bitslips: int = 4, phases: int = 2,
                 phase_bits: int = 64, rdphase: int = 0, wrphase: int = 1, patterns: int = 2,
                 wait_cycles: int = 32):
        check_integer("lanes", lanes, range(1, 9))
        check_integer("delays", delays, range(2, 65))
        check_integer("bitslips", bitslips, range(1, 17))
        check_integer("phases", phases, range(1, 5))
        check_integer("phase_bits", phase_bits, range(32, 257, 32))
        check_integer("rdphase", rdphase, range(phases))
        check_integer("wrphase", wrphase, range(phases))
        check_integer("patterns", patterns, range(1, 9))
        check_integer("wait_cycles", wait_cycles, range(1, 1025))
        if phase_bits % (8 * lanes) != 0:
            raise ValueError(f"phase_bits must be a multiple of 8 * lanes ({8 * lanes}), not {phase_bits}")
        names = list(CSRS)
        for p in {0, rdphase, wrphase} | set(range(phases)):
            names += [f"sdram_dfii_pi{p}_{r}" for r in ("command", "command_issue", "address", "baddress")]
        names += [f"sdram_dfii_pi{p}_{r}" for p in range(phases) for r in ("wrdata", "rddata")]
        self._csr = {name: csrs[name] for name in names}
        self.lanes, self.delays, self.bitslips = lanes, delays, bitslips
        self.phases, self.phase_bits, self.rdphase, self.wrphase = phases, phase_bits, rdphase, wrphase
        self.wait_cycles = wait_cycles
        self.patterns = test_patterns(patterns, phases, phase_bits)
        super().__init__({"wb": Out(WishboneSignature()), "start": In(1), "done": Out(1), "failed": Out(lanes),
                          "bitslip": Out(8 * lanes), "delay": Out(8 * lanes)})

    def _words(self, phase: int, name: str) -> list[int]:
        """The byte addresses of a phase's ``wrdata`` or ``rddata`` 32-bit words, the low word first (LiteX puts
        a wide CSR's most significant word at its first address)."""
        base, words = self._csr[f"sdram_dfii_pi{phase}_{name}"], self.phase_bits // 32
        return [base + 4 * (words - 1 - w) for w in range(words)]

    def elaborate(self, platform):
        # Counters walk lane, bitslip, delay and pattern; each step is a short list of Wishbone accesses, one FSM
        # state each (a state waits for the access's ack, and wait_cycles after a command). The longest run of
        # passing delays is tracked as the scan goes, so nothing is stored per setting.
        m = Module()
        wb, csr = self.wb, self._csr
        lanes, delays, bitslips = self.lanes, self.delays, self.bitslips
        words = self.phase_bits // 32

        lane = Signal(range(lanes))
        slip = Signal(range(bitslips))
        delay = Signal(range(delays))
        pattern = Signal(range(len(self.patterns)))
        count = Signal(range(max(delays, bitslips) + 1))      # increments left to apply
        ok = Signal()                                           # every pattern so far read right
        run_start, run_length = Signal(range(delays)), Signal(range(delays + 1))
        best_slip, best_start = Signal(range(bitslips)), Signal(range(delays))
        best_length = Signal(range(delays + 1))
        wait = Signal(range(self.wait_cycles + 1))
        failed = Signal(lanes)
        chosen_slip = Array(Signal(8, name=f"bitslip_{n}") for n in range(lanes))
        chosen_delay = Array(Signal(8, name=f"delay_{n}") for n in range(lanes))
        m.d.comb += [self.failed.eq(failed), wb.sel.eq(0xF)]
        m.d.comb += [self.bitslip[8 * n:8 * n + 8].eq(chosen_slip[n]) for n in range(lanes)]
        m.d.comb += [self.delay[8 * n:8 * n + 8].eq(chosen_delay[n]) for n in range(lanes)]

        # the current pattern's 32-bit words (phase-major, low word first) and the lane's bits in a word
        pattern_words = [Signal(32, name=f"pattern_word_{n}") for n in range(self.phases * words)]
        with m.Switch(pattern):
            for p, burst in enumerate(self.patterns):
                with m.Case(p):
                    m.d.comb += [w.eq((burst >> (32 * n)) & 0xFFFFFFFF) for n, w in enumerate(pattern_words)]
        masks = lane_masks(lanes, self.phase_bits)
        lane_mask = [Signal(32, name=f"lane_mask_{w}") for w in range(words)]
        with m.Switch(lane):
            for n in range(lanes):
                with m.Case(n):
                    m.d.comb += [lane_mask[w].eq(masks[n][w]) for w in range(words)]
        selected = Signal(lanes)
        m.d.comb += selected.eq(1 << lane)

        def command(phase, value):
            return [(csr[f"sdram_dfii_pi{phase}_address"], 0, 0), (csr[f"sdram_dfii_pi{phase}_baddress"], 0, 0),
                    (csr[f"sdram_dfii_pi{phase}_command"], value, 0),
                    (csr[f"sdram_dfii_pi{phase}_command_issue"], 1, self.wait_cycles)]

        def on_lane(register):
            # select the lane alone, strobe the register, then pause every lane's DQSBUFM once
            return [(csr["ddrphy_dly_sel"], selected, 0), (csr[register], 1, 0), (csr["ddrphy_dly_sel"], 0, 0),
                    (csr["ddrphy_dly_sel"], (1 << lanes) - 1, 0), (csr["ddrphy_dly_sel"], 0, 0)]

        def check(word):
            def handler(data):
                good = ((data ^ pattern_words[word]) & lane_mask[word % words]) == 0
                return [ok.eq(ok & good)]
            return handler

        probe = command(0, ACTIVATE)
        probe += [(address, pattern_words[p * words + w], 0)
                  for p in range(self.phases) for w, address in enumerate(self._words(p, "wrdata"))]
        probe += command(self.wrphase, WRITE)
        probe += [(csr["ddrphy_burstdet_clr"], 1, 0)]
        probe += command(self.rdphase, READ)
        probe += command(0, PRECHARGE)
        probe += [("read", address, check(p * words + w))
                  for p in range(self.phases) for w, address in enumerate(self._words(p, "rddata"))]
        probe += [("read", csr["ddrphy_burstdet_seen"], lambda data: [ok.eq(ok & (data & selected).any())])]

        def steps(name, ops, then):
            # one state per access (and one per wait after it), then the state ``then``
            for i, op in enumerate(ops):
                after = f"{name}-{i + 1}" if i + 1 < len(ops) else then
                with m.State(f"{name}-{i}"):
                    m.d.comb += [wb.cyc.eq(1), wb.stb.eq(1)]
                    if op[0] == "read":
                        _, address, handler = op
                        m.d.comb += wb.adr.eq(address >> 2)
                        with m.If(wb.ack):
                            m.d.sync += handler(wb.dat_r)
                            m.next = after
                    else:
                        address, value, cycles = op
                        m.d.comb += [wb.we.eq(1), wb.adr.eq(address >> 2), wb.dat_w.eq(value)]
                        with m.If(wb.ack):
                            if cycles:
                                m.d.sync += wait.eq(cycles - 1)
                                m.next = f"{name}-{i}-wait"
                            else:
                                m.next = after
                if op[0] != "read" and op[2]:
                    with m.State(f"{name}-{i}-wait"):
                        with m.If(wait == 0):
                            m.next = after
                        with m.Else():
                            m.d.sync += wait.eq(wait - 1)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [lane.eq(0), failed.eq(0)]
                    m.next = "LANE-0"
            steps("LANE", on_lane("ddrphy_rdly_dq_bitslip_rst"), "LANE-SCAN")
            with m.State("LANE-SCAN"):
                m.d.sync += [slip.eq(0), best_length.eq(0), best_slip.eq(0), best_start.eq(0)]
                m.next = "SLIP-0"
            steps("SLIP", on_lane("ddrphy_rdly_dq_rst"), "SLIP-SCAN")
            with m.State("SLIP-SCAN"):
                m.d.sync += [delay.eq(0), run_length.eq(0), pattern.eq(0), ok.eq(1)]
                m.next = "PROBE-0"
            steps("PROBE", probe, "PROBED")
            with m.State("PROBED"):
                with m.If(pattern != len(self.patterns) - 1):
                    m.d.sync += pattern.eq(pattern + 1)
                    m.next = "PROBE-0"
                with m.Else():
                    # the run of passing delays this setting ends or extends
                    with m.If(ok):
                        m.d.sync += run_length.eq(run_length + 1)
                        with m.If(run_length == 0):
                            m.d.sync += run_start.eq(delay)
                        with m.If(run_length + 1 > best_length):
                            m.d.sync += [best_length.eq(run_length + 1), best_slip.eq(slip),
                                         best_start.eq(Mux(run_length == 0, delay, run_start))]
                    with m.Else():
                        m.d.sync += run_length.eq(0)
                    m.d.sync += [pattern.eq(0), ok.eq(1)]
                    with m.If(delay != delays - 1):
                        m.d.sync += delay.eq(delay + 1)
                        m.next = "DELAY-0"
                    with m.Elif(slip != bitslips - 1):
                        m.d.sync += slip.eq(slip + 1)
                        m.next = "BITSLIP-0"
                    with m.Else():
                        m.next = "PICK"
            steps("DELAY", on_lane("ddrphy_rdly_dq_inc"), "PROBE-0")
            steps("BITSLIP", on_lane("ddrphy_rdly_dq_bitslip"), "SLIP-0")
            with m.State("PICK"):
                with m.If(best_length == 0):                     # no window: back to the reset values
                    m.d.sync += [failed.eq(failed | selected), chosen_slip[lane].eq(0), chosen_delay[lane].eq(0)]
                with m.Else():
                    m.d.sync += [chosen_slip[lane].eq(best_slip),
                                 chosen_delay[lane].eq(best_start + ((best_length - 1) >> 1))]
                m.next = "SET-SLIP-0"
            # the chosen bitslip and delay, from the reset values up by single steps
            def set_to(name, reset, increment, value, then):
                steps(name, on_lane(reset), f"{name}-COUNT")
                with m.State(f"{name}-COUNT"):
                    m.d.sync += count.eq(value)
                    m.next = f"{name}-UP"
                with m.State(f"{name}-UP"):
                    with m.If(count == 0):
                        m.next = then
                    with m.Else():
                        m.d.sync += count.eq(count - 1)
                        m.next = f"{name}-INC-0"
                steps(f"{name}-INC", on_lane(increment), f"{name}-UP")
            set_to("SET-SLIP", "ddrphy_rdly_dq_bitslip_rst", "ddrphy_rdly_dq_bitslip", chosen_slip[lane],
                   "SET-DELAY-0")
            set_to("SET-DELAY", "ddrphy_rdly_dq_rst", "ddrphy_rdly_dq_inc", chosen_delay[lane], "NEXT-LANE")
            with m.State("NEXT-LANE"):
                with m.If(lane == lanes - 1):
                    m.next = "DONE"
                with m.Else():
                    m.d.sync += lane.eq(lane + 1)
                    m.next = "LANE-0"
            with m.State("DONE"):
                m.d.comb += self.done.eq(1)
        return m

