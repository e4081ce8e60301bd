# amaranth: UnusedElaboratable=no
"""The appliance with its filter in the board's DRAM, before any tool runs: the sizing (a window that fits the
4 MiB SDRAM and one that does not, the choice of memory), the memory's accesses and headroom in the report, the
PLL's clock for the SDRAM pin, and the parameters refused."""

import pytest
from amaranth import ClockDomain, Module
from amaranth.back import rtlil

from apbbf.flows.appliance import (DRAM, IMIX_PPS, LINE_RATE_PPS, appliance_config, choose_memory, memory_numbers,
                                   window_numbers)
from apbbf.hdl.appliance.core import USER_HZ, DedupAppliance
from apbbf.hdl.eth.ecp5_pll import ECP5PLL
from apbbf.model import Config

BOARD = "colorlight-5a75b"


def test_window_in_dram_fits():
    """250 ms at 1.488 Mpps with fp 1e-3 fits the 5A-75B's 4 MiB, in its row layout."""
    config = appliance_config(BOARD, window_us=250_000, memory="dram")
    assert config.span == 250_000 and config.row_bits == DRAM[BOARD]["row_bits"]
    assert config.memory_blocks * config.block_bits // 8 <= DRAM[BOARD]["bytes"]
    # at most 8 segments (the 25F's LUTs bound the memory scan): fewer, larger ones, 32 blocks of each in a row
    assert (config.k, config.l, config.physical_segments, config.segment_blocks) == (2, 2, 6, 131072)
    assert window_numbers(config)["line_rate_64B"]["fp"] <= 1e-3
    numbers = memory_numbers(BOARD, config, USER_HZ)
    assert numbers["where"] == "DRAM"
    # with the pool full every physical segment but the one being cleared is read, and k are written
    words = (config.physical_segments - 1 + config.k) * config.block_bits // 32
    assert numbers["native_words_per_frame"] == words
    assert numbers["words_per_second_at_line_rate"] > words * LINE_RATE_PPS
    assert numbers["port_word_ratio"] == pytest.approx(USER_HZ / numbers["words_per_second_at_line_rate"], rel=1e-3)


def test_one_second_at_the_imix_fits():
    """Planned for the IMIX's 327 kpps, 1 s with fp 1e-3 fits the same 4 MiB (at 1.488 Mpps it is refused); at the
    line rate that filter keeps a shorter window, by its count floor, which the report's numbers say."""
    with pytest.raises(ValueError, match="needs 16777216 bytes"):
        appliance_config(BOARD, window_us=1_000_000, memory="dram")
    config = appliance_config(BOARD, window_us=1_000_000, memory="dram", rate_pps=IMIX_PPS)
    assert config.span == 1_000_000 and config.memory_blocks * config.block_bits // 8 <= DRAM[BOARD]["bytes"]
    numbers = window_numbers(config)
    assert numbers["imix"]["window_ms"] == 1000.0 and numbers["imix"]["fp"] <= 1e-3
    assert numbers["line_rate_64B"]["overflow"] and numbers["line_rate_64B"]["window_ms"] < 1000.0
    assert choose_memory(BOARD, 1_000_000, None, "drop", rate_pps=IMIX_PPS) == "dram"
    for rate in (LINE_RATE_PPS * 1.01, 10, True):
        with pytest.raises(ValueError, match="rate_pps must be"):
            appliance_config(BOARD, window_us=1_000_000, memory="dram", rate_pps=rate)


def test_window_past_the_dram_is_refused():
    with pytest.raises(ValueError, match="more than the colorlight-5a75b's 4194304"):
        appliance_config(BOARD, window_us=2_000_000, memory="dram")
    with pytest.raises(ValueError, match="memory must be one of"):
        appliance_config(BOARD, memory="flash")


def test_memory_chosen_by_the_window():
    """Block RAM while the window fits it (the default 4 ms), DRAM past it."""
    assert choose_memory(BOARD, 4000, None, "drop") == "bram"
    assert choose_memory(BOARD, 250_000, None, "drop") == "dram"
    with pytest.raises(ValueError):
        choose_memory(BOARD, 4_000_000, None, "drop")


def test_pll_shifted_clock():
    """CLKOS2 divides as CLKOS does, half a period later (in VCO cycles); an odd divider is refused."""
    def netlist(**shifted):
        m = Module()
        m.domains.eth_tx, m.domains.sync = ClockDomain("eth_tx"), ClockDomain("sync")
        if shifted:
            m.domains.sdram_ps = ClockDomain("sdram_ps", reset_less=True)
        m.submodules.pll = pll = ECP5PLL(input_hz=25e6, output_hz=125e6, second_hz=50e6, **shifted)
        return pll, rtlil.convert(m, ports=[pll.clk_in, pll.locked])

    pll, text = netlist(shifted_domain="sdram_ps")
    d = pll._dividers
    assert d["CLKOS_DIV"] % 2 == 0
    assert f"CLKOS2_DIV {d['CLKOS_DIV']}" in text
    assert f"CLKOS2_CPHASE {d['CLKOS_DIV'] - 1 + d['CLKOS_DIV'] // 2}" in text
    assert "CLKOS2" not in netlist()[1]
    with pytest.raises(ValueError, match="even CLKOS_DIV"):
        ECP5PLL(input_hz=25e6, output_hz=125e6, second_hz=100e6, shifted_domain="sdram_ps")       # 500 / 5


class _Core:
    settings = {"sys_clk_freq": 60e6}


def test_appliance_refuses():
    rows = Config(2, 3, segment_blocks=64, row_bits=1024, span=1000, time_width=16)
    with pytest.raises(ValueError, match="row layout needs the board's DRAM"):
        DedupAppliance(BOARD, rows)
    with pytest.raises(ValueError, match="must run at the de-duplicator's 50 MHz"):
        DedupAppliance(BOARD, rows, dram=_Core())
    with pytest.raises(ValueError, match="built for the colorlight-5a75b"):
        DedupAppliance("versa-ecp5", rows, dram=_Core())



@pytest.mark.parametrize("memory,one_row,depth", [("SDR", True, 2), ("DDR3", False, 8)])
def test_memory_order_per_core(memory, one_row, depth):
    # The scan's order and depth follow the core behind the filter (MEMORY_ORDERS: each measured fastest there);
    # one_row only with a row layout.
    from apbbf.hdl.appliance.core import memory_scan_options
    rows = Config(2, 3, segment_blocks=64, row_bits=1024, span=1000, time_width=16)
    assert memory_scan_options(rows, memory) == {"memory_one_row": one_row, "memory_depth": depth}
    assert memory_scan_options(Config(2, 3, segment_blocks=16, span=1000), memory)["memory_one_row"] is False


def test_memory_order_refused():
    from apbbf.hdl.appliance.core import memory_scan_options
    with pytest.raises(ValueError, match="memory must be one of SDR, DDR3, not 'DDR2'"):
        memory_scan_options(Config(2, 3, segment_blocks=16, span=1000), "DDR2")
