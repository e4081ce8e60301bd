"""The RGMII MAC alone on a board: each frame received on a port is sent back out of it (for place and route, and
as a first test of a board's Ethernet)."""

from amaranth import ClockDomain, Module
from amaranth.lib import io, wiring

from .ecp5_pll import ECP5PLL
from .mac import RGMIIMAC

__all__ = ["RGMIILoopback", "BOARD_PHYS"]

#: Board -> (amaranth-boards platform class name, reference clock resource and frequency, rx_delay, tx_delay):
#: the I/O delays each board's PHYs need (:class:`~apbbf.hdl.eth.rgmii.RGMII`).
BOARD_PHYS = {
    "colorlight-5a75b": ("Colorlight_5A75B_R70Platform", "clk25", 25e6, 2e-9, 0.0),
    "versa-ecp5": ("VersaECP5Platform", "eth_clk125", 125e6, 0.0, 0.0),
}


class RGMIILoopback(wiring.Component):
    """Port ``port``'s MAC with its receive stream fed to its transmit stream, the transmit clock (125 MHz) and
    the user's ``sync`` (62.5 MHz) from an ECP5 PLL on the board's reference clock, and the PHY held out of
    reset.

    Parameters
    ----------
    board : str
        A key of :data:`BOARD_PHYS`.
    port : int
        The ``eth_rgmii`` resource number.
    data_width : int
        The MAC's beat width.
    """

    def __init__(self, board: str, port: int = 0, data_width: int = 64):
        if board not in BOARD_PHYS:
            raise ValueError(f"board must be one of {', '.join(BOARD_PHYS)}, not {board!r}")
        self._board, self._port, self._data_width = board, port, data_width
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        # Everything the MAC needs from a board and nothing else: a PLL, the pins and a loop from its receive
        # stream to its transmit stream (the rest of the design stays out of the timing figures).
        _, clock, clock_hz, rx_delay, tx_delay = BOARD_PHYS[self._board]
        pins = platform.request("eth_rgmii", self._port, dir="-")
        m.domains.eth_tx = ClockDomain("eth_tx")
        m.domains.sync = ClockDomain("sync")
        m.submodules.pll = pll = ECP5PLL(input_hz=clock_hz, output_hz=125e6, second_hz=62.5e6)
        m.submodules.clk_buffer = clk = io.Buffer("i", platform.request(clock, 0, dir="-"))
        m.d.comb += pll.clk_in.eq(clk.i)
        m.submodules.mac = mac = RGMIIMAC(pins, data_width=self._data_width, rx_delay=rx_delay, tx_delay=tx_delay)
        wiring.connect(m, mac.rx, mac.tx)
        if hasattr(pins, "rst"):
            m.submodules.phy_reset = phy_reset = io.Buffer("o", pins.rst)
            m.d.comb += phy_reset.o.eq(0)          # the pin is active low (PinsN): 0 holds the PHY out of reset
        return m
