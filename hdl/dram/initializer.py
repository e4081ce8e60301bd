# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""LiteDRAM's SDRAM start-up without a CPU: the power-up wait, then the initialisation that LiteX's BIOS issues
through the DFI injector's CSRs, written on the core's ``wb_ctrl`` Wishbone port."""

import math

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer

__all__ = ["WishboneSignature", "LiteDRAMInitializer", "init_writes"]

#: DFII ``control`` after the initialisation: hardware control (SEL), CKE, ODT, RESET_N.
HARDWARE_CONTROL = 0x0F
#: The steps of LiteDRAM's sequences that write DFII ``control`` (their ``command`` is its bits), not a command:
#: SDR's and DDR3's CKE, DDR3's RESET# released (the wait after it is the data sheet's 500 us before CKE).
CONTROL_STEPS = ("Bring CKE high", "Release reset")


class WishboneSignature(wiring.Signature):
    """The classic Wishbone master's side of LiteX's ``wb_ctrl`` (32-bit data, word addresses): ``adr``,
    ``dat_w``, ``sel``, ``cyc``, ``stb``, ``we`` out; ``ack``, ``dat_r`` in."""

    def __init__(self, addr_width: int = 30):
        super().__init__({"adr": Out(addr_width), "dat_w": Out(32), "sel": Out(4), "cyc": Out(1), "stb": Out(1),
                          "we": Out(1), "ack": In(1), "dat_r": In(32)})


def init_writes(sequence, csrs: dict) -> list[tuple[int, int, int]]:
    """The CSR writes of LiteDRAM's initialisation ``sequence`` (:func:`apbbf.flows.litedram.init_sequence`):
    ``(byte address, value, cycles to wait after it)``, the port handed back to the controller and
    ``init_done`` set at the end, as LiteX's BIOS does it.

    Raises
    ------
    KeyError
        If ``csrs`` lacks one of the DFI injector's registers.
    """
    writes = []
    resets = any(step["name"].startswith("Release reset") for step in sequence)
    for step in sequence:
        if step["name"].startswith(CONTROL_STEPS):                     # software control: CKE, RESET_N, ODT
            # DDR3's waits follow its control writes (500 us before CKE, tXPR after it); SDR's CKE needs none
            # after the power-up wait
            writes.append((csrs["sdram_dfii_control"], step["command"], step["delay"] if resets else 0))
            continue
        writes += [(csrs["sdram_dfii_pi0_address"], step["address"], 0),
                   (csrs["sdram_dfii_pi0_baddress"], step["bank"], 0),
                   (csrs["sdram_dfii_pi0_command"], step["command"], 0),
                   (csrs["sdram_dfii_pi0_command_issue"], 1, step["delay"])]
    writes += [(csrs["sdram_dfii_control"], HARDWARE_CONTROL, 0), (csrs["ddrctrl_init_done"], 1, 2)]
    return writes


class LiteDRAMInitializer(wiring.Component):
    """Holds the LiteDRAM core in reset (``core_rst``) for the SDRAM's power-up wait, then writes
    :func:`init_writes` on ``wb`` one by one, each after the last one's ``ack`` and wait, and raises ``done``
    (the native port is open from then on).

    Parameters
    ----------
    sequence : list of dict
        LiteDRAM's initialisation (:func:`apbbf.flows.litedram.init_sequence`).
    csrs : dict
        The core's CSR byte addresses by name (:meth:`apbbf.flows.litedram.Core.csrs`).
    clk_freq : float
        The core's sys clock, Hz (1 MHz .. 1 GHz).
    power_up_us : float
        The power-up wait, µs (the data sheet's: 200 for SDR SDRAM), 0 .. 10**6.
    leveler : ReadLeveler or None
        Run on ``wb`` after the sequence, before the pins are handed back
        (:class:`~apbbf.hdl.dram.leveling.ReadLeveler`); then the core's ``ddrctrl_init_error`` is written with
        whether a lane failed (the core's ``init_error`` output).

    Attributes
    ----------
    wb : Out(WishboneSignature())
    core_rst : Out(1)
        The core's reset, high during the power-up wait.
    done : Out(1)
    error : Out(1)
        The leveler found a lane with no window (0 without a leveler); valid with ``done``.

    Raises
    ------
    TypeError, ValueError
        If a parameter is of the wrong type or out of range.
    KeyError
        If ``csrs`` lacks a register the initialisation writes.
    """

    def __init__(self, sequence, csrs: dict, *, clk_freq: float, power_up_us: float = 200.0, leveler=None):
        if not isinstance(clk_freq, (int, float)) or not 1e6 <= clk_freq <= 1e9:
            raise ValueError(f"clk_freq must be from 1e6 to 1e9 Hz, not {clk_freq!r}")
        if not isinstance(power_up_us, (int, float)) or not 0 <= power_up_us <= 1e6:
            raise ValueError(f"power_up_us must be from 0 to 1e6, not {power_up_us!r}")
        self._writes = init_writes(sequence, csrs)
        self._leveler = leveler
        if leveler is not None:
            # the scan runs before the pins are handed back (the last two writes); its verdict goes with them
            self._writes.insert(-1, (csrs["ddrctrl_init_error"], 0, 0))
        self._power_up = math.ceil(power_up_us * 1e-6 * clk_freq)
        for address, value, wait in self._writes:
            check_integer("csr address", address, range(0, 1 << 32))
            check_integer("csr value", value, range(0, 1 << 32))
            check_integer("delay", wait, range(0, 1 << 20))
        super().__init__({"wb": Out(WishboneSignature()), "core_rst": Out(1), "done": Out(1), "error": Out(1)})

    @property
    def writes(self) -> list:
        return list(self._writes)

    @property
    def power_up_cycles(self) -> int:
        return self._power_up

    def elaborate(self, platform):
        # A step counter walks the writes; ``wait`` counts the power-up and each write's delay down. The leveler
        # has the bus between the sequence and the hand-back.
        m = Module()
        writes, leveler = self._writes, self._leveler
        wb = wiring.Signature.create(self.wb.signature) if leveler is not None else self.wb
        error_step = len(writes) - 2 if leveler is not None else None
        level_step = len(writes) - 3
        if leveler is not None:
            m.submodules.leveler = leveler
            m.d.comb += self.error.eq(leveler.failed.any())
        step = Signal(range(len(writes) + 1))
        wait = Signal(range(max(self._power_up, max(w for *_, w in writes), 4) + 1), init=self._power_up)
        m.d.comb += wb.sel.eq(0xF)
        with m.FSM():
            with m.State("POWER-UP"):
                m.d.comb += self.core_rst.eq(1)
                with m.If(wait == 0):
                    m.d.sync += wait.eq(4)
                    m.next = "SETTLE"
                with m.Else():
                    m.d.sync += wait.eq(wait - 1)
            with m.State("SETTLE"):                                   # out of reset a few cycles, as the bench
                with m.If(wait == 0):
                    m.next = "WRITE"
                with m.Else():
                    m.d.sync += wait.eq(wait - 1)
            with m.State("WRITE"):
                m.d.comb += [wb.cyc.eq(1), wb.stb.eq(1), wb.we.eq(1)]
                with m.Switch(step):
                    for n, (address, value, delay) in enumerate(writes):
                        with m.Case(n):
                            m.d.comb += [wb.adr.eq(address >> 2),
                                         wb.dat_w.eq(self.error if n == error_step else value)]
                            with m.If(wb.ack):
                                m.d.sync += wait.eq(delay)
                with m.If(wb.ack):
                    m.d.sync += step.eq(step + 1)
                    m.next = "DELAY"
            with m.State("DELAY"):
                with m.If(wait != 0):
                    m.d.sync += wait.eq(wait - 1)
                with m.Elif(step == len(writes)):
                    m.next = "DONE"
                with m.Else():
                    m.next = "WRITE"
                    if leveler is not None:
                        with m.If(step == level_step):
                            m.next = "LEVEL"
            if leveler is not None:
                with m.State("LEVEL"):
                    m.d.comb += leveler.start.eq(1)
                    with m.If(leveler.done):
                        m.next = "WRITE"
            with m.State("DONE"):
                m.d.comb += self.done.eq(1)
        if leveler is not None:
            # the bus is the leveler's while it scans, the sequence's otherwise
            with m.If(leveler.start & ~leveler.done):
                wiring.connect(m, wiring.flipped(self.wb), leveler.wb)
            with m.Else():
                wiring.connect(m, wiring.flipped(self.wb), wb)
        return m
