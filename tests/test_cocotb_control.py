# amaranth: UnusedElaboratable=no
"""The exported de-duplicator's control registers (``apbbf export --dedup --control``) on Icarus Verilog: the
cocotb benches of :mod:`apbbf.sim.cocotb.control_tests` through cocotbext-axi's ``AxiLiteMaster``, every access
against the model of the register file and every frame against the model with the same changes; and the slave's
refusals of what the gateware cannot take."""

from pathlib import Path

import pytest

from apbbf.model import Config
from apbbf.model.packet import KeySpec
from apbbf.model.registers import Capability, Facts
from apbbf.model.timeanalysis import window_capacity
from apbbf.sim.cocotb import runner

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb-control"
CONFIG = Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7, extra_segments=2)
SEED = 20261202
EXPECTED_TESTS = frozenset(["reset_values", "writes", "changes_under_traffic", "action_toggles",
                            "rekey_under_traffic"])


def _run_icarus(name, expected, testcase=None, **options):
    runner.check_simulator("icarus")
    build_dir = BUILD / name
    results = build_dir / "results.xml"
    try:
        runner.run_dedup(CONFIG, KeySpec.frame(), build_dir, sim="icarus", seed=SEED, waves="on-failure",
                         test_module=runner.CONTROL_TEST_MODULE, control=True, data_width=64, action="drop",
                         max_frame=288, testcase=testcase, **options)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb control registers on Icarus (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed)
                    + f"; waveform {build_dir / 'apbbf_dedup_axis.fst'}", pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    assert set(ran) == set(expected) and len(ran) == len(expected), sorted(ran)


def test_icarus():
    """Without the run-time seed: SEED_LO, SEED_HI and CONTROL.REKEY refused, nothing changed."""
    _run_icarus("w64-drop-frame", EXPECTED_TESTS)


@pytest.mark.slow                                   # about 40 s; make test has the Amaranth benches of the re-key
def test_icarus_runtime_seed():
    """With the run-time seed (``apbbf export --dedup --control --runtime-seed``): the writes (a re-key among
    them) and re-keys under traffic, every frame the model's with the same schedule."""
    tests = ("writes", "rekey_under_traffic")
    _run_icarus("w64-drop-frame-seed", tests, testcase=list(tests), runtime_seed=True)


def test_slave_refuses_what_the_gateware_cannot_change():
    from apbbf.hdl.lib.axil_registers import AXI4LiteRegisters
    with pytest.raises(ValueError, match="facts.caps must not list"):
        AXI4LiteRegisters(Facts(CONFIG, caps=Capability.KEY))
    with pytest.raises(ValueError, match="must list CLEAR with REKEY"):
        AXI4LiteRegisters(Facts(CONFIG, caps=Capability.REKEY))
    assert AXI4LiteRegisters(Facts(CONFIG, caps=Capability.REKEY | Capability.CLEAR)).facts.caps & Capability.REKEY
    with pytest.raises(TypeError, match="facts must be a Facts"):
        AXI4LiteRegisters(CONFIG)


def test_control_facts():
    from apbbf.hdl.export.axis_dedup import AXIStreamPacketDedup, control_facts
    from apbbf.hdl.packet.dedup import PacketDedup
    for action, actions in (("drop", ("drop", "mark", "count")), ("mark", ("mark", "count")), ("count", ("count",))):
        facts = control_facts(PacketDedup(CONFIG, KeySpec.l3l4(), data_width=64, action=action, max_frame=1522))
        assert (facts.action, facts.actions, facts.key, facts.keys, facts.max_frame) == (
            action, actions, "l3l4", ("l3l4", None), 1522)
        assert facts.caps == Capability.CLEAR | (Capability.ACTION if len(actions) > 1 else 0)
    windowed = control_facts(PacketDedup(CONFIG, KeySpec.l3l4(), data_width=64, max_frame=1522, clearable=True,
                                         runtime_window=True))
    assert windowed.caps & Capability.WINDOW and windowed.window_min == 1
    assert windowed.capacity == window_capacity(CONFIG) >= CONFIG.span
    seeded = control_facts(PacketDedup(CONFIG, KeySpec.l3l4(), data_width=64, max_frame=1522, clearable=True,
                                       runtime_seed=True))
    assert seeded.caps == Capability.CLEAR | Capability.ACTION | Capability.REKEY
    with pytest.raises(ValueError, match="runtime_seed needs clearable=True"):
        PacketDedup(CONFIG, KeySpec.l3l4(), data_width=64, max_frame=1522, runtime_seed=True)
    with pytest.raises(TypeError, match="runtime_seed must be a bool"):
        PacketDedup(CONFIG, KeySpec.l3l4(), data_width=64, max_frame=1522, clearable=True, runtime_seed=1)
    with pytest.raises(ValueError, match="runtime_seed needs control=True"):
        AXIStreamPacketDedup(CONFIG, KeySpec.frame(), data_width=64, max_frame=1522, runtime_seed=True)
    spec = KeySpec.parse("frame:0+12")
    custom = control_facts(PacketDedup(CONFIG, spec, data_width=64, max_frame=1522))
    assert custom.keys == (None, None, str(spec)) and custom.keys_mask == 0b100
    assert AXIStreamPacketDedup(CONFIG, KeySpec.frame(), data_width=64, max_frame=1522).registers is None
    with pytest.raises(TypeError, match="control must be a bool"):
        AXIStreamPacketDedup(CONFIG, KeySpec.frame(), control=1)
    with pytest.raises(TypeError, match="dedup must be a PacketDedup"):
        control_facts(CONFIG)


def test_export_command(tmp_path, capsys):
    """``apbbf export --dedup --control`` writes the slave's ports and says so in the header; ``--control``
    without ``--dedup`` is refused."""
    from apbbf import cli
    out = tmp_path / "d.v"
    base = ["export", "--k", "2", "--l", "3", "--segment-blocks", "16", "--seed", "5", "--span", "300",
            "-o", str(out)]
    assert cli.main(base + ["--control"]) == 1
    assert "--control adds the de-duplicator's control registers: only with --dedup" in capsys.readouterr().err
    assert cli.main(base + ["--dedup", "--runtime-seed"]) == 1
    assert "--runtime-seed is written through the control registers: only with --control" in capsys.readouterr().err
    assert cli.main(base + ["--dedup", "--control", "--key", "frame", "--data-width", "64", "--max-frame",
                            "288"]) == 0
    assert "control registers on s_axil" in capsys.readouterr().out
    text = out.read_text()
    assert "s_axil_aw*/w*/b*/ar*/r*  AXI4-Lite slave" in text and "ACTION takes drop, mark, count" in text
    for port in ("input [7:0] s_axil_awaddr;", "output [1:0] s_axil_bresp;", "output [31:0] s_axil_rdata;",
                 "input [3:0] s_axil_wstrb;"):
        assert port in text, port
