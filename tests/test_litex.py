# amaranth: UnusedElaboratable=no
"""The LiteX wrapper (apbbf.litex_soc.LiteXDedup): the exported de-duplicator with its control registers in a LiteX
SoC for the Colorlight 5A-75B's device (LFE5U-25F, its 25 MHz clock on P6), elaborated to Verilog by LiteX's
builder (no synthesis): the instance's ports all bound, the registers a bus region of 256 bytes, the exported
Verilog among the platform's sources."""

import re

import pytest

pytest.importorskip("litex")

from apbbf.model import Config                                      # noqa: E402
from apbbf.model.packet import KeySpec                              # noqa: E402

CONFIG = Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7)


def _platform():
    from litex.build.generic_platform import IOStandard, Pins, Subsignal
    from litex.build.lattice import LatticePlatform
    io = [("clk25", 0, Pins("P6"), IOStandard("LVCMOS33")),
          ("serial", 0, Subsignal("tx", Pins("T6")), Subsignal("rx", Pins("R7")), IOStandard("LVCMOS33"))]
    platform = LatticePlatform("LFE5U-25F-6BG256C", io, toolchain="trellis")
    platform.default_clk_name, platform.default_clk_period = "clk25", 40.0
    return platform


def test_soc_elaborates(tmp_path):
    from litex.soc.integration.builder import Builder
    from litex.soc.integration.soc_core import SoCCore

    from apbbf.litex_soc import REGION_SIZE, LiteXDedup
    from apbbf.sim.cocotb.dedup_tests import COUNTERS
    platform = _platform()
    soc = SoCCore(platform, clk_freq=25e6, cpu_type=None, integrated_rom_size=0, integrated_sram_size=0,
                  with_uart=False, with_timer=False)
    dedup = LiteXDedup(platform, CONFIG, KeySpec.frame(), tmp_path / "apbbf", data_width=64, max_frame=1522)
    dedup.add_to_soc(soc, "apbbf", origin=0x4000_0000)
    # the frames through the SoC: a loop from the source back to the sink is enough to bind every stream signal
    soc.comb += dedup.source.connect(dedup.sink, omit={"duplicate", "unchecked", "errored"})
    Builder(soc, output_dir=str(tmp_path / "build"), compile_software=False, compile_gateware=False).build(run=False)
    top = (tmp_path / "build" / "gateware" / "platform.v").read_text()
    instance = top[top.index("apbbf_dedup_axis apbbf_dedup_axis("):]
    instance = instance[:instance.index(");")]
    bound = dict(re.findall(r"\.(\w+)\s*\(([^)]*)\)", instance))
    exported = dedup.verilog.read_text()
    module = exported[exported.index("module apbbf_dedup_axis("):]
    ports = {p.strip() for p in module[module.index("(") + 1:module.index(");")].split(",")}
    assert set(bound) == ports and all(bound.values()), sorted(ports - set(bound))
    assert {f"s_axil_{s}" for s in ("awaddr", "wdata", "bresp", "araddr", "rdata", "rresp")} <= ports
    assert set(COUNTERS) <= ports
    assert str(dedup.verilog) in {str(path) for path, *_ in platform.sources}
    region = soc.bus.regions["apbbf"]
    assert (region.origin, region.size) == (0x4000_0000, REGION_SIZE)
    assert "s_axil" in exported and "ACTION takes drop, mark, count" in exported


def test_bad_options(tmp_path):
    from apbbf.litex_soc import LiteXDedup
    platform = _platform()
    with pytest.raises(ValueError, match="control=True and timestamps='tuser'"):
        LiteXDedup(platform, CONFIG, KeySpec.frame(), tmp_path, timestamps="counter")
    with pytest.raises(ValueError, match="max_frame"):
        LiteXDedup(platform, CONFIG, KeySpec.frame(), tmp_path, max_frame=1)


def test_csr_soc_elaborates(tmp_path):
    """The map as LiteX CSRs: every register of the map in LiteX's csr.csv under its name (the readable ones as
    CSRStatus, the writable as CSRStorage), the bridge's error and busy; the instance's ports all bound."""
    from litex.soc.integration.builder import Builder
    from litex.soc.integration.soc_core import SoCCore

    from apbbf.litex_soc import LiteXDedupCSR
    from apbbf.model.registers import Access, register_map
    platform = _platform()
    soc = SoCCore(platform, clk_freq=25e6, cpu_type=None, integrated_rom_size=0, integrated_sram_size=0,
                  with_uart=False, with_timer=False)
    dedup = LiteXDedupCSR(platform, CONFIG, KeySpec.frame(), tmp_path / "apbbf", data_width=64, max_frame=1522)
    dedup.add_to_soc(soc, "apbbf")
    soc.comb += dedup.source.connect(dedup.sink, omit={"duplicate", "unchecked", "errored"})
    Builder(soc, output_dir=str(tmp_path / "build"), compile_software=False, compile_gateware=False,
            csr_csv=str(tmp_path / "csr.csv")).build(run=False)
    csrs = {line.split(",")[1]: line.split(",") for line in (tmp_path / "csr.csv").read_text().splitlines()
            if line.startswith("csr_register,")}
    for register in register_map().values():
        name = register.name.lower()
        if register.access != Access.RO:
            assert csrs[f"apbbf_{name}"][4].strip() == "rw", (name, csrs.get(f"apbbf_{name}"))
        if register.access != Access.WO:
            status = f"apbbf_{name}" + ("_now" if register.access == Access.RW else "")
            assert csrs[status][4].strip() == "ro", (name, csrs.get(status))
    assert {"apbbf_error", "apbbf_busy"} <= set(csrs)
    top = (tmp_path / "build" / "gateware" / "platform.v").read_text()
    instance = top[top.index("apbbf_dedup_axis apbbf_dedup_axis("):]
    bound = dict(re.findall(r"\.(\w+)\s*\(([^)]*)\)", instance[:instance.index(");")]))
    assert all(bound.values()) and "s_axil_awaddr" in bound
    with pytest.raises(ValueError, match="origin must be None"):
        dedup.add_to_soc(soc, "again", origin=0x4000_0000)
