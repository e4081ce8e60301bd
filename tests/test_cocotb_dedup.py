"""The exported packet de-duplicator (``apbbf_dedup_axis``) on Icarus Verilog, driven by the cocotb benches of
:mod:`apbbf.sim.cocotb.dedup_tests` with cocotbext-axi frames and scored frame by frame against the model.

Each case is exported, compiled and run in ``build/cocotb-dedup/<name>/``, which keeps the results XML and the
waveform (``apbbf_dedup_axis.fst``). Every case must run exactly :data:`EXPECTED_TESTS` and pass them all.
"""

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from apbbf.model import Config
from apbbf.model.packet import KeySpec
from apbbf.sim.cocotb import runner

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb-dedup"
CONFIG = Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7)
SEED = 20261122

MULTI = "ipv4=frame:0+12,l3:0+1,l3:2+6,l3:9+1,l3:12+*;ipv6=frame:0+12,l3:0+*/f00fffffffffff00;other=frame"
CASES = {
    "w64-drop-l3l4": (KeySpec.l3l4(), dict(data_width=64, action="drop")),
    "w512-mark-frame": (KeySpec.frame(), dict(data_width=512, action="mark")),
    # five ranges: the MAC addresses and the IPv4 header without DSCP, TTL and checksum (a copy with another VLAN
    # tag, TTL or DSCP is a duplicate), the rest of the packet; IPv6 with its own recipe
    "w64-drop-multi": (KeySpec.parse(MULTI), dict(data_width=64, action="drop")),
}
#: Cases outside ``make test`` (``make test-slow``): Icarus runs the 512-bit design at a few hundred cycles/s.
SLOW = {"w512-mark-frame"}
#: Cases that ``make test`` runs only in part (these benches; all of them in ``make test-slow``).
QUICK = {"w64-drop-multi": ("masked_copies", "jumbo_frames"),
         "w64-drop-l3l4": ("random_traffic/idle=pause30x3/backpressure=pause40x3", "reset_mid_frame")}

EXPECTED_TESTS = frozenset([
    "random_traffic/idle=None/backpressure=None", "random_traffic/idle=pause30x3/backpressure=pause40x3",
    "masked_copies", "every_length", "back_to_back_minimum_frames", "jumbo_frames", "reset_mid_frame",
])


def _results(path: Path):
    ran, failed = [], []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        if list(case.iter("skipped")):
            continue
        ran.append(case.get("name"))
        for failure in list(case.iter("failure")) + list(case.iter("error")):
            failed.append(f"{case.get('name')}: {failure.get('message') or ''}")
    return ran, failed


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW | set(QUICK) else name
                                  for name in CASES] + [f"{name}-quick" for name in QUICK])
def test_icarus(name):
    runner.check_simulator("icarus")
    quick = name.endswith("-quick") and name.removesuffix("-quick") in QUICK
    case = name.removesuffix("-quick") if quick else name
    spec, options = CASES[case]
    build_dir = BUILD / name
    results = build_dir / "results.xml"
    try:
        runner.run_dedup(CONFIG, spec, build_dir, sim="icarus", seed=SEED, waves=True,
                         testcase=QUICK[case] if quick else None, **options)
    except SystemExit as exit_:
        failed = _results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb dedup on Icarus, case {name} (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed)
                    + f"; waveform {build_dir / 'apbbf_dedup_axis.fst'}", pytrace=False)
    ran, failed = _results(results)
    assert not failed, failed
    expected = set(QUICK[case]) if quick else EXPECTED_TESTS
    assert set(ran) == expected and len(ran) == len(expected), sorted(ran)
    if case == "w64-drop-l3l4":
        _check_ports((build_dir / f"{runner.DEDUP_TOPLEVEL}.v").read_text())


@pytest.mark.slow
def test_export_ports(tmp_path):
    """The top that ``apbbf.export`` writes: :func:`_check_ports` (``make test`` checks the same on the top its
    64-bit l3l4 bench exported, test_icarus)."""
    from apbbf.export import export_dedup_verilog
    path = export_dedup_verilog(CONFIG, KeySpec.l3l4(), tmp_path / "dedup.v", data_width=64, action="mark")
    _check_ports(path.read_text())


def _check_ports(text):
    """The exported top's ports (64-bit l3l4 de-duplicator of CONFIG) carry AXI4-Stream names and the header says
    what the design is."""
    assert text.startswith("// apbbf_dedup_axis: packet de-duplicator")
    assert "Key: l3l4" in text and "tuser[16:1] (first beat)" in text
    assert "predicted false-positive rate (worst case, just before a shift): " in text
    header = text[text.index("module apbbf_dedup_axis("):]
    header = header[:header.index(");")]
    ports = {p.strip() for p in header[header.index("(") + 1:].split(",")}
    assert ports == {"aclk", "aresetn", *(f"s_axis_t{s}" for s in ("valid", "ready", "data", "keep", "last", "user")),
                     *(f"m_axis_t{s}" for s in ("valid", "ready", "data", "keep", "last", "user")),
                     "frames", "duplicates", "dropped", "unchecked", "errored"}
    assert "input [63:0] s_axis_tdata;" in text and "input [16:0] s_axis_tuser;" in text
    assert "output [2:0] m_axis_tuser;" in text


@pytest.mark.slow
def test_export_command(tmp_path):
    """``apbbf export --dedup`` writes the de-duplicator with the options given (a key recipe of several ranges,
    in ``apbbf dedup``'s syntax); without a span it says why."""
    import subprocess
    import sys
    out = tmp_path / "d.v"
    base = [sys.executable, "-W", "error", "-m", "apbbf.export", "--dedup", "--k", "2", "--l", "3",
            "--segment-blocks", "16", "--data-width", "64", "--seed", "5", "-o", str(out)]
    result = subprocess.run(base + ["--span", "300", "--action", "mark", "--key", MULTI], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert f"Key: {KeySpec.parse(MULTI)} " in text and "Action: mark" in text and "seed=0x5" in text
    assert "key extractor: 5 range slot(s)" in text
    assert "packet de-duplicator" in result.stdout
    result = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "span" in result.stderr
