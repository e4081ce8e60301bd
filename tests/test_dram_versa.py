# amaranth: UnusedElaboratable=no
"""The filter in the Versa's DDR3: the memory core on the native port adapter at LiteDRAM's DDR3 core's 128 bits,
served by a model of the native port with its latencies, its row changes and its refresh stalls
(:class:`apbbf.sim.native_port.DDR3NativePortModel`; no DDR3 chip model is at hand), every answer against the
golden model; the sizing of the Versa's window in DRAM and its refusals; the appliance elaborated with the DDR3
core. The model is checked to catch a design that breaks the port's rules."""

import pytest

from apbbf.hdl.dram import NativePortAdapter
from apbbf.model import Config, Op
from apbbf.sim import harness, native_port
from apbbf.sim.native_port import NativePortError

BOARD = "versa-ecp5"
SEED = 20261203
#: The Versa's row layout (B = one 128-bit native word, 2 KiB rows, k = 3, l = 2, 7 physical segments) with
#: 64 blocks a segment (4 rows) and a short span, so that shifts and the clearing come within a few hundred
#: commands; SHORT has 2 rows, for ``make test``.
CONFIG = Config(3, 2, block_bits=128, segment_blocks=64, row_bits=16384, span=400, time_width=12,
                extra_segments=1, seed=0x7E5A)
SHORT = Config(3, 2, block_bits=128, segment_blocks=32, row_bits=16384, span=60, time_width=12,
               extra_segments=1, seed=0x7E5B)


@pytest.fixture(scope="module")
def core():
    from apbbf.flows.litedram import generate
    return generate(BOARD)


def _run(config, commands, settings, *, seed, adapter=None, name="versa-native"):
    return native_port.simulate(config, commands, settings, seed=seed, adapter=adapter, name=name)


@pytest.mark.parametrize("config, count", [(SHORT, 30), pytest.param(CONFIG, 300, marks=pytest.mark.slow)],
                         ids=["short", "long"])
def test_filter_on_ddr3_native_port(core, config, count):
    """Every answer the model's through shifts and the clearing, with refresh stalls, row changes and read
    latencies of 13 to 17 cycles."""
    print(f"seed {SEED}")
    assert core.settings["native_bits"] == 128 and config.physical_segments == 7
    commands = harness.timed_commands(config, count, seed=SEED, rate=1.2, duplicates=0.5)
    run, model = _run(config, commands, core.settings, seed=SEED)
    assert model.counts["refreshes"] > 2
    assert model.counts["row_changes"] > count // 4
    assert model.counts["reads"] >= sum(op != Op.INSERT for op, *_ in commands)


def test_model_catches_a_broken_adapter(core):
    """An adapter that drops the answer queue's room check (reads issued with no room for their words) loses a
    read word: the model raises."""

    class Unreserved(NativePortAdapter):
        def elaborate(self, platform):
            m = super().elaborate(platform)
            m.d.comb += self.native.rdata.ready.eq(0)          # the port's read words dropped
            return m

    make = lambda: Unreserved(SHORT, addr_width=core.settings["native_addr_bits"],        # noqa: E731
                              data_width=128, read_words=32)
    commands = harness.timed_commands(SHORT, 10, seed=SEED, duplicates=0.5)
    with pytest.raises(NativePortError, match="rdata.ready low"):
        _run(SHORT, commands, core.settings, seed=SEED, adapter=make, name="versa-broken")


def test_window_in_ddr3_fits():
    """1 s at 1.488 Mpps with fp 1e-4 in the Versa's DDR3: the row layout of its 2 KiB rows, well within
    128 MiB, 10 native words per frame."""
    from apbbf.flows.appliance import DRAM, appliance_config, choose_memory, memory_numbers
    config = appliance_config(BOARD, window_us=1_000_000, memory="dram", seed=1)
    assert config.span == 1_000_000 and config.row_bits == 16384 and config.block_bits == 128
    numbers = memory_numbers(BOARD, config, 50e6)
    assert numbers["bytes"] <= DRAM[BOARD]["bytes"] and numbers["native_words_per_frame"] == 9
    assert numbers["port_words_per_second"] == 25e6
    assert choose_memory(BOARD, 1_000_000, None, "drop") == "dram"


@pytest.mark.parametrize("window_us, fp", [(40_000_000, 1e-4), (8_000_000, 1e-7)], ids=["window", "fp"])
def test_window_past_the_ddr3_is_refused(window_us, fp):
    """A window or fp the 128 MiB cannot hold is refused before any tool runs, naming the capacity."""
    from apbbf.flows.appliance import appliance_config
    with pytest.raises(ValueError, match="more than the versa-ecp5's 134217728"):
        appliance_config(BOARD, window_us=window_us, fp=fp, memory="dram")


@pytest.mark.slow
def test_appliance_elaborates_with_ddr3(core):
    """The Versa's appliance with its filter in DDR3 elaborates for the board: sync is the DDR3 core's user
    clock, the transmit PLL has no second output, the pins carry litex-boards' attributes."""
    from amaranth.back import rtlil
    from apbbf.flows.appliance import _platform
    from apbbf.hdl.appliance.core import DedupAppliance
    platform = _platform(BOARD)
    top = DedupAppliance(BOARD, SHORT, dram=core)
    text = rtlil.convert(top, platform=platform)
    assert "litedram_core" in text and "user_clk" in text
    assert "CLKOS_ENABLE" not in text


@pytest.mark.slow
def test_versa_top_shows_the_ddr3_state_on_leds(core):
    """The Versa's bitstream top with its filter in DDR3: the read leveling is in it, and LED 3 shows the DRAM
    ready and LED 4 the leveling's failure (the core's ``init_error``)."""
    from apbbf.flows.appliance import _platform
    from apbbf.hdl.appliance.top import ApplianceTop
    plan = _platform(BOARD).prepare(ApplianceTop(BOARD, SHORT, dram=core), name="top")
    text, lpf = plan.files["top.il"], plan.files["top.lpf"]
    assert "leveler" in text and "init_error" in text
    for number in range(5):
        assert f"led_{number}__" in lpf, number
    assert "led_5__" not in lpf


def test_ddr3_initializer_writes(core):
    """The DDR3 sequence as LiteX's BIOS issues it: RESET# released (ODT, RESET_N) and 50,000 cycles (1 ms, the
    data sheet's 500 us before CKE), CKE high and 10,000 cycles, the mode registers and ZQ calibration through
    ``pi0``, the pins handed back last."""
    from apbbf.hdl.dram.initializer import init_writes
    csrs = core.csrs()
    sequence = core.settings["init_sequence"]
    writes = init_writes(sequence, csrs)
    control = csrs["sdram_dfii_control"]
    assert writes[0] == (control, 0x0C, 50_000) and writes[1] == (control, 0x0E, 10_000)
    issues = [w for w in writes if w[0] == csrs["sdram_dfii_pi0_command_issue"]]
    assert len(issues) == len(sequence) - 2 == 5
    assert writes[-2][:2] == (control, 0x0F) and writes[-1][:2] == (csrs["ddrctrl_init_done"], 1)
    mr0 = [step for step in sequence if step["name"].startswith("Load Mode Register 0")][0]
    assert "CL=6" in mr0["name"] and core.settings["cl"] == 6 and core.settings["cwl"] == 5


def test_ddr3_leveler_matches_litex(core):
    """The read leveling's phases and widths are those LiteX's BIOS is built with for this core (its generated
    ``sdram_phy.h``): read phase, write phase, byte lanes, delay taps, bitslips, data bits a phase."""
    from apbbf.hdl.dram.litedram import ddr3_leveler
    header = (core.directory / "software" / "include" / "generated" / "sdram_phy.h").read_text()
    defines = dict(line.split()[1:3] for line in header.splitlines()
                   if line.startswith("#define SDRAM_PHY_") and len(line.split()) == 3)
    leveler = ddr3_leveler(core.settings, core.csrs())
    assert (leveler.rdphase, leveler.wrphase) == (int(defines["SDRAM_PHY_RDPHASE"]),
                                                  int(defines["SDRAM_PHY_WRPHASE"]))
    assert (leveler.lanes, leveler.delays, leveler.bitslips) == (int(defines["SDRAM_PHY_MODULES"]),
                                                                 int(defines["SDRAM_PHY_DELAYS"]),
                                                                 int(defines["SDRAM_PHY_BITSLIPS"]))
    assert leveler.phases * leveler.phase_bits == int(defines["SDRAM_PHY_PHASES"]) * int(
        defines["SDRAM_PHY_DFI_DATABITS"])


def test_ddr3_memory_elaborates(core):
    """The DDR3 memory alone: the core's clock and user domain as ports, every DDR3 pin on the instance."""
    from amaranth.back import rtlil
    from apbbf.hdl.dram import LiteDRAMDDR3Memory
    from apbbf.hdl.dram.litedram import DDR3_PINS
    dram = LiteDRAMDDR3Memory(SHORT, core.settings, core.csrs())
    assert dram.data_width == 128 and dram.addr_width == 23
    text = rtlil.convert(dram)
    for name in DDR3_PINS:
        assert f"ddram_{name}" in text, name
    with pytest.raises(ValueError, match="block_bits must be a multiple of data_width"):
        LiteDRAMDDR3Memory(Config(3, 2, block_bits=64, segment_blocks=32, row_bits=16384, span=60, time_width=12,
                                  extra_segments=1), core.settings, core.csrs())


def test_ddr3_refresh_from_the_data_sheet():
    """The appliance's DDR3 core waits the 1 Gbit part's tRFC (110 ns: 6 cycles at 50 MHz) after a refresh, not
    LiteDRAM's module's 64 cycles."""
    from apbbf.flows.appliance import DRAM
    from apbbf.flows.litedram import generate
    core = generate(BOARD, sys_clk_freq=50e6, timing=DRAM[BOARD]["timing"])
    assert core.settings["timing_cycles"]["tRFC"] == 6 and generate(BOARD).settings["timing_cycles"]["tRFC"] == 64


def test_verilog_top_refuses_ddr3(core):
    """The appliance's Verilog top (the cocotb benches') takes the SDR core only."""
    from apbbf.hdl.appliance.top import ApplianceVerilogTop
    with pytest.raises(ValueError, match="SDR SDRAM's core only, not DDR3"):
        ApplianceVerilogTop(SHORT, dram=core)
