# amaranth: UnusedElaboratable=no
"""Board tops: each elaborates for its amaranth-boards platform (Amaranth's build plan, no tools run), takes its
clock and device from that platform, and refuses a filter its device's block RAM cannot hold."""

import re

import pytest
from amaranth_boards.icebreaker import ICEBreakerPlatform
from amaranth_boards.ulx3s import ULX3S_85F_Platform

from apbbf.hdl.board.boards import BOARDS, ICEBreakerTop, ULX3STop, board_info
from apbbf.hdl.lib.devices import BLOCK_RAM, block_ram, check_memory
from apbbf.model import Config

#: board -> (platform class, UART baud)
EXPECTED = {"icebreaker": (ICEBreakerPlatform, 3_000_000), "ulx3s-85f": (ULX3S_85F_Platform, 1_000_000)}


def test_every_board_is_tested():
    assert set(BOARDS) == set(EXPECTED)


#: ``make test`` elaborates the iCEBreaker's top (every board shares the top's code), ``make test-slow`` every board's.
@pytest.mark.parametrize("board", [board if board == "icebreaker" else pytest.param(board, marks=pytest.mark.slow)
                                   for board in BOARDS])
def test_board_top_elaborates_for_its_platform(board):
    """Amaranth's build plan for the board (RTLIL and pin constraints): the top requests only pins its platform
    has, with the default config; the segments are inferred memories on iCE40 and DP16KD instances with their
    output registers on ECP5 (as many as the device table says)."""
    top_class, platform = board_info(board)
    assert isinstance(platform, EXPECTED[board][0])
    top = top_class()
    plan = platform.prepare(top, name="top")
    assert "top.il" in plan.files and "build_top.sh" in plan.files
    constraints = plan.files["top.pcf" if board == "icebreaker" else "top.lpf"]
    assert "uart_0__rx" in constraints and "uart_0__tx" in constraints
    rtlil = plan.files["top.il"]
    memories = re.findall(r"^\s*memory width (\d+) .*size (\d+)", rtlil, re.M)
    segment = (str(top.config.block_bits), str(top.config.segment_blocks))
    if board == "icebreaker":
        assert memories.count(segment) == top.config.physical_segments, memories
    else:
        assert segment not in memories, memories
        assert len(re.findall(r"^\s*cell \\DP16KD ", rtlil, re.M)) == \
            block_ram(platform.device).blocks_for_config(top.config)
        assert rtlil.count('parameter \\REGMODE_B "OUTREG"') == block_ram(platform.device).blocks_for_config(top.config)


@pytest.mark.parametrize("board", list(BOARDS))
def test_clock_and_baud_from_platform(board):
    top_class, platform = board_info(board)
    top = top_class()
    assert top.clock_hz == platform.default_clk_frequency
    assert top.device == platform.device
    assert top.baud == EXPECTED[board][1]
    assert top.divisor * top.baud == top.clock_hz and top.divisor >= 4


def test_default_configs_fill_the_block_ram():
    """The defaults use what the device has: iCE40UP5K 28 of 30 EBR (+1 key buffer), ECP5-85F 192 of 208."""
    assert ICEBreakerTop().config.hardware_memory_bits == 28 * 4096
    assert ULX3STop().config.hardware_memory_bits == 192 * 16 * 1024


@pytest.mark.parametrize("top_class,config,device,capacity", [
    (ICEBreakerTop, Config(6, 7, block_bits=16, block_hashes=2, segment_blocks=1024, key_width=32),
     "iCE40UP5K", "122880"),
    (ULX3STop, Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=8192), "LFE5U-85F", "3407872"),
])
def test_too_large_for_the_device(top_class, config, device, capacity):
    with pytest.raises(ValueError, match=rf"more than the {device} has.*= {capacity}.*reduce segment_blocks"):
        top_class(config)


def test_key_buffer_is_counted():
    """15 segments of 512 x 16 bits fill all 30 SB_RAM40_4K: no block RAM left for the host interface's key
    buffer."""
    config = Config(6, 8, block_bits=16, block_hashes=2, segment_blocks=512, key_width=32)
    assert config.hardware_memory_bits == 30 * 4096
    check_memory(config, "iCE40UP5K")                         # the filter alone fits
    with pytest.raises(ValueError, match="less 1 for the host interface's key buffer"):
        ICEBreakerTop(config)


def test_lanes_are_counted():
    """Each lane has its own segments: the benchmark's Config takes 24 DP16KD, so eight lanes fit the LFE5U-85F's
    208 and sixteen do not."""
    config = Config(3, 8, block_bits=64, block_hashes=4, segment_blocks=512)
    assert block_ram("LFE5U-85F").blocks_for_config(config) == 24
    check_memory(config, "LFE5U-85F", lanes=8)
    with pytest.raises(ValueError, match="config needs 384 DP16KD \\(16 lanes of 12 segments"):
        check_memory(config, "LFE5U-85F", lanes=16)


@pytest.mark.parametrize("platform", [ICEBreakerPlatform, ULX3S_85F_Platform])
def test_block_ram_table_keyed_by_platform_device(platform):
    ram = block_ram(platform.device)
    assert ram.device == platform.device and ram.source


@pytest.mark.parametrize("device,count,bits", [("iCE40UP5K", 30, 4096), ("LFE5U-85F", 208, 16384)])
def test_block_ram_facts(device, count, bits):
    ram = BLOCK_RAM[device]
    assert (ram.count, ram.data_bits, ram.capacity_bits) == (count, bits, count * bits)
    assert ram.blocks_for(0) == 0 and ram.blocks_for(1) == 1 and ram.blocks_for(bits + 1) == 2


@pytest.mark.parametrize("call,error,message", [
    (lambda: block_ram("XC7A35T"), ValueError, "device must be one of"),
    (lambda: block_ram(None), TypeError, "device must be a string"),
    (lambda: check_memory("config", "iCE40UP5K"), TypeError, "config must be a Config"),
    (lambda: check_memory(Config(2, 3), "iCE40UP5K", reserved_blocks=31), ValueError, "reserved_blocks must be"),
    (lambda: check_memory(Config(2, 3), "iCE40UP5K", lanes=0), ValueError, "lanes must be"),
    (lambda: board_info("arty"), ValueError, "board must be one of icebreaker, ulx3s-85f"),
    (lambda: ICEBreakerTop(max_batch=0), ValueError, "max_batch must be from 1"),
])
def test_checks(call, error, message):
    with pytest.raises(error, match=message):
        call()
