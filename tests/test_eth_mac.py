# amaranth: UnusedElaboratable=no
"""The RGMII MAC's parameters, its PLL settings, and the MAC alone elaborated for both boards with Ethernet
(Colorlight 5A-75B, Lattice ECP5 Versa): the I/O primitives each board's PHYs need are the ones emitted."""

import re

import pytest
from amaranth.hdl import Fragment
from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform
from amaranth_boards.versa_ecp5 import VersaECP5Platform

from apbbf.hdl.eth import RGMII, RGMIIMAC
from apbbf.hdl.eth.axis_mac import rgmii_ports
from apbbf.hdl.eth.ecp5_pll import pll_dividers
from apbbf.hdl.eth.loopback import RGMIILoopback


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(data_width=48), ValueError, "data_width"),
    (dict(data_width="64"), TypeError, "data_width"),
    (dict(rx_depth=100), ValueError, "rx_depth"),
    (dict(tx_depth=2), ValueError, "tx_depth"),
    (dict(rx_delay=4e-9), ValueError, "rx_delay"),
    (dict(tx_delay="2ns"), TypeError, "tx_delay"),
    (dict(ifg=8), ValueError, "ifg"),
    (dict(tx_domain="sync"), TypeError, "tx_domain"),
])
def test_bad_parameters(kwargs, error, name):
    with pytest.raises(error, match=name):
        RGMIIMAC(rgmii_ports(), **kwargs)


def test_pins_checked():
    class Pins:
        pass
    with pytest.raises(TypeError, match="rx_clk"):
        RGMII(Pins())


def test_delays_need_ecp5():
    with pytest.raises(NotImplementedError, match="DELAYG"):
        Fragment.get(RGMII(rgmii_ports(), rx_delay=2e-9), None)


def test_pll_dividers():
    d = pll_dividers(25e6, 125e6, 62.5e6)
    assert 25e6 / d["CLKI_DIV"] * d["CLKFB_DIV"] == 125e6
    assert 400e6 <= 125e6 * d["CLKOP_DIV"] <= 800e6
    assert 125e6 * d["CLKOP_DIV"] / d["CLKOS_DIV"] == 62.5e6
    with pytest.raises(ValueError, match="PLL"):
        pll_dividers(25e6, 125e6, 61e6)


def _netlist(platform, board):
    plan = platform.prepare(RGMIILoopback(board), name="top")
    return plan.files["top.il"]


@pytest.mark.parametrize("board, platform, delayed", [
    ("colorlight-5a75b", Colorlight_5A75B_R70Platform, True),
    ("versa-ecp5", VersaECP5Platform, False),
])
def test_loopback_elaborates(board, platform, delayed):
    """The Colorlight's received data goes through DELAYG (2 ns, 80 steps) into IDDRX1F, its transmit clock
    leaves undelayed (the B50612D delays it); the Versa's PHYs delay both ways, so no DELAYG at all. Every RGMII
    pin has its DDR register, and the receive clock pin is constrained at 125 MHz."""
    text = _netlist(platform(), board)
    cells = re.findall(r"^\s*cell \\(\w+) ", text, re.MULTILINE)
    assert cells.count("IDDRX1F") == 5 and cells.count("ODDRX1F") == 6 and cells.count("EHXPLLL") == 1
    if delayed:
        assert cells.count("DELAYG") == 5
        assert "parameter \\DEL_VALUE 80" in text
    else:
        assert "DELAYG" not in cells


@pytest.mark.parametrize("board, platform", [                    # the de-duplicator takes ~10 s: make test-slow
    pytest.param("colorlight-5a75b", Colorlight_5A75B_R70Platform, marks=pytest.mark.slow),
    pytest.param("versa-ecp5", VersaECP5Platform, marks=pytest.mark.slow),
])
def test_appliance_elaborates(board, platform):
    """The appliance top (two MACs, the de-duplicator between port 0's receive side and port 1's transmit side)
    elaborates for both boards; on the Colorlight port 1 is requested without the PHY reset and MDIO that it
    shares with port 0."""
    from apbbf.hdl.appliance.core import DedupAppliance
    from apbbf.model import Config
    config = Config(2, 3, segment_blocks=16, span=1000, time_width=16)
    plan = platform().prepare(DedupAppliance(board, config), name="top")
    text = plan.files["top.il"]
    cells = re.findall(r"^\s*cell \\(\w+) ", text, re.MULTILINE)
    assert cells.count("IDDRX1F") == 10 and cells.count("ODDRX1F") == 12 and cells.count("EHXPLLL") == 1
    assert "dedup" in text
