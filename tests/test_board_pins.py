"""The appliance's pins and RGMII clocking on each board against boards known to work: litex-boards' platform files
(``litex_boards/platforms/colorlight_5a_75b.py`` ``_io_v7_0`` at litex-hub/litex-boards 133f735,
``lattice_versa_ecp5.py`` at 8a3caca), the delays its targets give LiteEth's ECP5 RGMII PHY
(``targets/colorlight_5a_75x.py``: ``tx_delay=0e-9``, ``rx_delay`` LiteEth's default 2e-9;
``targets/lattice_versa_ecp5.py``: both 0), and LiteEth's ``liteeth/phy/ecp5rgmii.py`` (0e8079a). The references
are transcribed here: a change in amaranth-boards or in the appliance's choices fails this test, and a deliberate
difference is named in :data:`DIFFERENCES` (``docs/netlist-sim.md`` says why)."""

import pytest

from apbbf.hdl.eth.loopback import BOARD_PHYS
from apbbf.hdl.eth.rgmii import DELAY_TAP
from apbbf.sim.cocotb.board_runner import board_platform

#: litex-boards' pins: eth_clocks (tx, rx) and eth (rst_n, rx_ctl, rx_data, tx_ctl, tx_data) of each port.
LITEX_ETH = {
    "colorlight-5a75b": [
        {"tx_clk": ("M2",), "rx_clk": ("M1",), "rst": ("P5",), "mdio": ("T2",), "mdc": ("P3",), "rx_ctl": ("N6",),
         "rx_data": ("N1", "M5", "N5", "M6"), "tx_ctl": ("M3",), "tx_data": ("L1", "L3", "P2", "L4")},
        {"tx_clk": ("M12",), "rx_clk": ("M16",), "rst": ("P5",), "mdio": ("T2",), "mdc": ("P3",),
         "rx_ctl": ("L15",), "rx_data": ("P13", "N13", "P14", "M15"), "tx_ctl": ("R15",),
         "tx_data": ("T14", "R12", "R13", "R14")},
    ],
    "versa-ecp5": [
        {"tx_clk": ("P19",), "rx_clk": ("L20",), "rst": ("U17",), "mdio": ("U18",), "mdc": ("T18",),
         "rx_ctl": ("U19",), "rx_data": ("T20", "U20", "T19", "R18"), "tx_ctl": ("R20",),
         "tx_data": ("N19", "N20", "P18", "P20")},
        {"tx_clk": ("C20",), "rx_clk": ("J19",), "rst": ("F20",), "mdio": ("H20",), "mdc": ("G19",),
         "rx_ctl": ("F19",), "rx_data": ("G18", "G16", "H18", "H17"), "tx_ctl": ("E19",),
         "tx_data": ("J17", "J16", "D19", "D20")},
    ],
}
#: litex-boards' other pins the appliance uses: the 5A-75B v7.0's clk25, and its user_led_n and user_btn_n, which the
#: appliance's UART takes as tx and rx; the Versa's serial and user_led 0..2.
LITEX_OTHER = {
    "colorlight-5a75b": {"clk25": ("P6",), "uart_tx": ("P11",), "uart_rx": ("M13",)},
    "versa-ecp5": {"uart_tx": ("A11",), "uart_rx": ("C11",), "led_0": ("E16",), "led_1": ("D17",),
                   "led_2": ("D18",)},
}
#: The RGMII delays LiteEth's ECP5 PHY is given for each board, seconds (rx: a DELAYG on rx_ctl and rx_data,
#: SCLK_ALIGNED, int(delay / 25 ps) steps; tx: a DELAYG on tx_clk after its ODDRX1F).
LITEX_DELAYS = {"colorlight-5a75b": {"rx": 2e-9, "tx": 0.0}, "versa-ecp5": {"rx": 0.0, "tx": 0.0}}
#: Where the appliance differs from LiteEth's PHY on purpose.
DIFFERENCES = {
    "tx clock": "a PLL's 125 MHz from the board's oscillator, for both ports (LiteEth: each port's own rx_clk)",
    "phy reset": "held high (out of reset) from configuration on (LiteEth: a reset pulse at start, then high)",
    "versa clock": "the Versa's eth_clk125 (L19) feeds the PLL; litex-boards' Versa target uses clk100 (P3)",
}


def _pins(platform, name, number):
    return {io.name: tuple(io.ios[0].names) for io in platform.lookup(name, number).ios}


@pytest.mark.parametrize("board", list(LITEX_ETH))
def test_rgmii_pins_match_litex_boards(board):
    """Both RGMII ports: every pin of amaranth-boards' ``eth_rgmii`` (the resources the appliance requests) is
    litex-boards' for the same board revision (port 1's control pins under amaranth-boards' ``rx_ctrl`` and
    ``tx_ctrl`` spelling on the Versa)."""
    platform = board_platform(board)
    for port, want in enumerate(LITEX_ETH[board]):
        got = {name.replace("ctrl", "ctl"): pins for name, pins in _pins(platform, "eth_rgmii", port).items()}
        assert got == want, (board, port, got)


@pytest.mark.parametrize("board", list(LITEX_OTHER))
def test_clock_uart_and_leds_match_litex_boards(board):
    platform = board_platform(board)
    uart = _pins(platform, "uart", 0)
    got = {"uart_tx": uart["tx"], "uart_rx": uart["rx"]}
    if board == "colorlight-5a75b":
        got["clk25"] = tuple(platform.lookup("clk25", 0).ios[0].names)
    else:
        got.update({f"led_{n}": tuple(platform.lookup("led", n).ios[0].names) for n in range(3)})
    assert got == LITEX_OTHER[board]
    # the reference clock the appliance's PLL takes, by board
    assert BOARD_PHYS[board][1:3] == {"colorlight-5a75b": ("clk25", 25e6), "versa-ecp5": ("eth_clk125", 125e6)}[board]


@pytest.mark.parametrize("board", list(LITEX_DELAYS))
def test_rgmii_delays_match_liteeth(board):
    """The appliance's receive and transmit delays are LiteEth's for the board, in the same 25 ps DELAYG steps (80
    on the 5A-75B's received data and control, none on the Versa's)."""
    _, _, _, rx_delay, tx_delay = BOARD_PHYS[board]
    assert (rx_delay, tx_delay) == (LITEX_DELAYS[board]["rx"], LITEX_DELAYS[board]["tx"])
    assert int(rx_delay / 25e-12) == round(rx_delay / DELAY_TAP)

