# amaranth: UnusedElaboratable=no
"""The exported Verilog passes ``verilator --lint-only`` with Verilator's default warnings (no ``-Wall``, no
``-Wno-*``), so a user whose flow lints imported IP with warnings as errors can drop the file in: the bare core
(both scans), the time-bounded core, the lanes filter, the packet de-duplicator and the filter behind an AXI4
master (``--memory axi``). The waivers the export writes
(:data:`apbbf.hdl.export.verilog.LINT_WAIVED`) are switched back on at the end of the file, which a second module read
after it shows.
"""

import functools
import subprocess

import pytest

from apbbf.hdl.export.verilog import (LINT_WAIVED, generate_dedup_verilog, generate_lanes_verilog,
                                      generate_memory_verilog, generate_verilog)
from apbbf.model import Config
from apbbf.model.packet import KeySpec
from apbbf.sim import verilator

SMALL = dict(k=2, l=3, block_bits=64, block_hashes=4, segment_blocks=64, seed=1)

#: A module with a width truncation of its own, read after the export: the waiver must not cover it.
USER_MODULE = """
module user_after (input wire [7:0] a, output wire b);
  assign b = a;
endmodule
"""


def _lint(tmp_path, text: str, top: str, extra: str = "") -> subprocess.CompletedProcess:
    verilator.check_tools()
    path = tmp_path / "export.v"
    path.write_text(text + extra)
    return subprocess.run(["verilator", "--lint-only", "--top-module", top, path.name], cwd=tmp_path,
                          env=verilator.environ(), capture_output=True, text=True, timeout=300)


@functools.cache
def _export(kind: str) -> tuple[str, str]:
    """The export of ``kind`` and its top module's name, made once per test process (the waiver test lints the
    parallel core's again)."""
    if kind == "lanes":
        return generate_lanes_verilog(Config(**{**SMALL, "segment_blocks": 4}), 2), "apbbf_lanes_axis"
    if kind.startswith("memory"):
        # the filter behind an AXI4 master: a bus wider than the block (lanes), or narrower (bursts); with a span
        width, block = {"memory-wide": (256, 64), "memory-burst": (64, 256)}[kind]
        config = Config(**{**SMALL, "block_bits": block, "segment_blocks": 8}, span=1000, time_width=16,
                        extra_segments=1, row_bits=4096)
        return generate_memory_verilog(config, axi_data_width=width, axi_base=0x10000), "apbbf_memory_axis"
    if kind == "dedup":
        config = Config(**SMALL, span=1000, time_width=16, extra_segments=1)
        return generate_dedup_verilog(config, KeySpec.l3l4(), data_width=64, max_frame=1518), "apbbf_dedup_axis"
    if kind == "dedup-memory":
        # the de-duplicator with its segments behind an AXI4 master, a bus wider than the block
        config = Config(**SMALL, span=1000, time_width=16, extra_segments=1, row_bits=4096)
        return (generate_dedup_verilog(config, KeySpec.l3l4(), data_width=64, max_frame=1518, axi_data_width=128),
                "apbbf_dedup_axis")
    span = dict(span=1000, time_width=16, extra_segments=1) if kind.startswith("timed") else {}
    return generate_verilog(Config(**SMALL, **span), scan=kind.split("-")[1]), "apbbf_axis"


#: ``make test`` lints the parallel core and the de-duplicator (which holds the time-bounded parallel core); the FSM
#: scan, the time-bounded core alone and the lanes in ``make test-slow``.
@pytest.mark.parametrize("kind", [pytest.param("core-fsm", marks=pytest.mark.slow), "core-parallel",
                                  pytest.param("timed-parallel", marks=pytest.mark.slow),
                                  pytest.param("lanes", marks=pytest.mark.slow), "dedup", "memory-wide",
                                  pytest.param("memory-burst", marks=pytest.mark.slow),
                                  pytest.param("dedup-memory", marks=pytest.mark.slow)])
def test_export_lints_clean(tmp_path, kind):
    text, top = _export(kind)
    result = _lint(tmp_path, text, top)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "%Warning" not in result.stderr, result.stderr[-3000:]
    # without the waivers the same file does warn: the test would see a netlist that needs them
    bare = text
    for name in LINT_WAIVED:
        bare = bare.replace(f"/* verilator lint_off {name} */\n", "")
    assert _lint(tmp_path, bare, top).returncode != 0


def test_waivers_do_not_leak(tmp_path):
    text, _ = _export("core-parallel")
    result = _lint(tmp_path, text, "user_after", USER_MODULE)
    assert result.returncode != 0 and "WIDTHTRUNC" in result.stderr, result.stderr[-2000:]
