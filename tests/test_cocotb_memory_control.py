# amaranth: UnusedElaboratable=no
"""The control registers of the de-duplicator with its segments behind an AXI4 master (``apbbf export --dedup
--control --memory axi``) on Icarus Verilog: the benches of :mod:`apbbf.sim.cocotb.memory_control_tests`, with
cocotbext-axi's ``AxiLiteMaster`` on the registers and ``AxiRam`` as the memory, every frame against the model
with the same changes; and the export's command line."""

from pathlib import Path

import pytest

from apbbf.model import Config
from apbbf.model.packet import KeySpec
from apbbf.sim.cocotb import runner
from apbbf.sim.cocotb.memory_control_tests import MODULE

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb-memory-control"
CONFIG = Config(2, 3, segment_blocks=16, row_bits=1024, span=300, time_width=16, seed=7, extra_segments=2)
SEED = 20261202
#: 64-bit frames dropped, a 64-bit AXI bus, four commands in flight.
OPTIONS = dict(control=True, data_width=64, action="drop", max_frame=288, memory_depth=1, axi_data_width=64,
               key_queue=64)

PARTS = [pytest.param(["clear_with_writes_in_flight/clears=1"], id="quick"),
         pytest.param(["clear_with_writes_in_flight/clears=3", "changes_under_traffic"], id="slow",
                      marks=pytest.mark.slow)]


@pytest.mark.parametrize("tests", PARTS)
def test_icarus(tests):
    runner.check_simulator("icarus")
    build_dir = BUILD / "w64-drop-frame"
    results = build_dir / "results.xml"
    results.unlink(missing_ok=True)
    try:
        runner.run_dedup(CONFIG, KeySpec.frame(), build_dir, sim="icarus", seed=SEED, waves="on-failure",
                         testcase=tests, test_module=MODULE, **OPTIONS)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb memory control registers on Icarus (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed),
                    pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    assert sorted(ran) == sorted(tests), ran


@pytest.mark.slow
def test_export_command(tmp_path, capsys):
    """``apbbf export --dedup --control --memory axi`` writes both the slave and the master; the window is a
    register of it."""
    from apbbf.export import main
    out = tmp_path / "d.v"
    assert main(["--dedup", "--control", "--memory", "axi", "--k", "2", "--l", "3", "--segment-blocks", "16",
                 "--seed", "7", "--span", "300", "--time-width", "16", "--row-bits", "1024", "--data-width", "64",
                 "--max-frame", "288", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "segments behind an AXI4 master" in said and "control registers on s_axil" in said
    text = out.read_text()
    for port in ("input [7:0] s_axil_awaddr;", "output [1:0] s_axil_bresp;", "input [63:0] m_axi_rdata;",
                 "output m_axi_bready;"):
        assert port in text, port
    assert "WINDOW" in text
