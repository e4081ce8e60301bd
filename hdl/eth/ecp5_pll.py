"""An ECP5 PLL (EHXPLLL) making the 125 MHz transmit clock of the RGMII MAC, and a second clock, from a board's
oscillator."""

from amaranth import ClockSignal, Const, Instance, Module
from amaranth.lib import cdc, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ECP5PLL", "pll_dividers"]

#: The ECP5 PLL's VCO range, Hz (Lattice DS1044).
VCO_RANGE = (400e6, 800e6)


def pll_dividers(input_hz: float, output_hz: float, second_hz: float) -> dict:
    """``CLKI_DIV``, ``CLKFB_DIV`` (feedback from CLKOP), ``CLKOP_DIV`` and ``CLKOS_DIV`` giving ``output_hz`` on
    CLKOP and ``second_hz`` on CLKOS exactly from ``input_hz``.

    Raises
    ------
    ValueError
        If no setting gives both frequencies exactly with the VCO in range.
    """
    for clki_div in range(1, 129):
        for clkop_div in range(1, 129):
            vco = output_hz * clkop_div
            if not VCO_RANGE[0] <= vco <= VCO_RANGE[1]:
                continue
            clkfb_div = output_hz * clki_div / input_hz
            clkos_div = vco / second_hz
            if clkfb_div == int(clkfb_div) and 1 <= clkfb_div <= 128 and clkos_div == int(clkos_div) \
                    and 1 <= clkos_div <= 128:
                return {"CLKI_DIV": clki_div, "CLKFB_DIV": int(clkfb_div), "CLKOP_DIV": clkop_div,
                        "CLKOS_DIV": int(clkos_div)}
    raise ValueError(f"no ECP5 PLL setting makes {output_hz / 1e6} and {second_hz / 1e6} MHz from "
                     f"{input_hz / 1e6} MHz")


class ECP5PLL(wiring.Component):
    """Drives the clocks of two domains the parent defines from a reference clock: ``output_domain`` (CLKOP)
    and ``second_domain`` (CLKOS), each held in reset until the PLL locks (reset synchronizers).

    Parameters
    ----------
    input_hz, output_hz, second_hz : float
        The reference and the two output frequencies.
    output_domain, second_domain : str
        The domains it clocks (defined by the parent); ``second_domain`` None: CLKOS unused (a parent whose other
        clock comes from elsewhere).
    shifted_domain : str or None
        A third domain (defined by the parent, without a reset), clocked by CLKOS2: ``second_hz`` shifted by
        180 degrees (an SDR SDRAM's clock pin, so that the chip samples ``second_domain``'s outputs mid-cycle).

    Attributes
    ----------
    clk_in : In(1)
    locked : Out(1)
    """

    clk_in: In(1)
    locked: Out(1)

    def __init__(self, *, input_hz: float, output_hz: float, second_hz: float, output_domain: str = "eth_tx",
                 second_domain: str = "sync", shifted_domain: str | None = None):
        self._dividers = pll_dividers(input_hz, output_hz, second_hz)
        if shifted_domain is not None and second_domain is None:
            raise ValueError("a shifted clock (shifted_domain) needs second_domain")
        if shifted_domain is not None and self._dividers["CLKOS_DIV"] % 2:
            raise ValueError(f"a clock shifted by 180 degrees needs an even CLKOS_DIV, not "
                             f"{self._dividers['CLKOS_DIV']} ({second_hz / 1e6} MHz from {input_hz / 1e6} MHz)")
        self._shifted = shifted_domain
        self._hz = (input_hz, output_hz, second_hz)
        self._domains = (output_domain, second_domain)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        # CLKOP feeds back to the PLL (its frequency is exact), CLKOS divides the same VCO; each domain's reset
        # follows the lock through its own synchronizer.
        d = self._dividers
        input_hz, output_hz, second_hz = self._hz
        output_domain, second_domain = self._domains
        clkop = ClockSignal(output_domain)
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{input_hz / 1e6:g}", a_FREQUENCY_PIN_CLKOP=f"{output_hz / 1e6:g}",
            a_FREQUENCY_PIN_CLKOS=f"{second_hz / 1e6:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1", a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=d["CLKI_DIV"], p_FEEDBK_PATH="CLKOP", p_CLKFB_DIV=d["CLKFB_DIV"],
            p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=d["CLKOP_DIV"], p_CLKOP_CPHASE=d["CLKOP_DIV"] - 1,
            p_CLKOP_FPHASE=0,
            **({} if second_domain is None else dict(
                p_CLKOS_ENABLE="ENABLED", p_CLKOS_DIV=d["CLKOS_DIV"], p_CLKOS_CPHASE=d["CLKOS_DIV"] - 1,
                p_CLKOS_FPHASE=0, o_CLKOS=ClockSignal(second_domain))),
            i_CLKI=self.clk_in, i_CLKFB=clkop, i_RST=Const(0), i_STDBY=Const(0), i_PHASESEL0=Const(0),
            i_PHASESEL1=Const(0), i_PHASEDIR=Const(1), i_PHASESTEP=Const(1), i_PHASELOADREG=Const(1),
            i_PLLWAKESYNC=Const(0), i_ENCLKOP=Const(0),
            o_CLKOP=clkop, o_LOCK=self.locked,
            # CLKOS2: CLKOS's divider, its coarse phase half a period (in VCO cycles) later
            **({} if self._shifted is None else dict(
                p_CLKOS2_ENABLE="ENABLED", p_CLKOS2_DIV=d["CLKOS_DIV"],
                p_CLKOS2_CPHASE=d["CLKOS_DIV"] - 1 + d["CLKOS_DIV"] // 2, p_CLKOS2_FPHASE=0,
                o_CLKOS2=ClockSignal(self._shifted))))
        m.submodules.output_reset = cdc.ResetSynchronizer(~self.locked, domain=output_domain)
        if second_domain is not None:
            m.submodules.second_reset = cdc.ResetSynchronizer(~self.locked, domain=second_domain)
        return m
