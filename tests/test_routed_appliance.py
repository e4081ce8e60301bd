"""The 5A-75B appliance's routed netlist (``make bitstream BOARD=colorlight-5a75b WRITE_ROUTED=1``) under the short
cocotb bench (:mod:`apbbf.sim.cocotb.routed_runner`): port 1's frames and the counters are the model's; with one
of the filter's DP16KD wired wrong (its read halves swapped), the bench fails. Each run is about three minutes of
gate-level Icarus; skipped when the build folder holds no routed design."""

import json
import shutil

import pytest

from apbbf.flows.args import BUILD

BOARD = "colorlight-5a75b"
ROUTED = BUILD / f"appliance-{BOARD}" / "seed1.routed.json"
OPTIONS = BUILD / f"appliance-{BOARD}" / "options.json"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog is not installed"),
              pytest.mark.skipif(not ROUTED.exists() or not OPTIONS.exists(),
                                 reason=f"no routed design: make bitstream BOARD={BOARD} SEEDS=1 WRITE_ROUTED=1")]


def test_routed_appliance_forwards_and_drops_as_the_model(tmp_path):
    from apbbf.sim.cocotb.routed_runner import run_routed_board
    run_routed_board(tmp_path, BOARD, ROUTED, json.loads(OPTIONS.read_text()))


def test_routed_appliance_with_a_swapped_dp16kd_fails(tmp_path):
    from apbbf.sim.cocotb.routed_runner import run_routed_board
    with pytest.raises(SystemExit):
        run_routed_board(tmp_path, BOARD, ROUTED, json.loads(OPTIONS.read_text()),
                         swap_dp16kd="core.dedup.core.segments.segment0.ebr_r0_c0")
