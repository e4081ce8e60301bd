"""The command line: JSON output of analyze and params, the demo, and error reporting."""

import json

import pytest

from apbbf import cli


def _json(capsys, argv):
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_analyze_apbf(capsys):
    data = _json(capsys, ["analyze", "--k", "4", "--l", "3", "--json"])
    assert f"{data['fp_paper']:.6f}" == "0.100586"
    assert set(data["accesses"]) == {"window", "fp", "false"}
    assert data["capacity_factor"] == 1.0
    for key in ("fp", "npws", "efficiency"):
        assert key in data


def test_analyze_apbbf(capsys):
    data = _json(capsys, ["analyze", "--k", "3", "--l", "8", "--block-bits", "64", "--block-hashes", "4", "--json"])
    assert f"{data['fp']:.7f}" == "0.0026767"
    assert f"{data['capacity_factor']:.3f}" == "0.968"


def test_params(capsys):
    data = _json(capsys, ["params", "--fp", "0.001", "--window", "10000", "--json"])
    assert data["fp"] <= 0.001 and data["window"] >= 10000
    assert data["block_bits"] == 64 and data["block_hashes"] == 4


def test_params_lanes(capsys):
    """--lanes sizes each lane so that the window over all lanes holds with probability 1 - 1e-9 on random keys."""
    from apbbf.model.lanes import lanes_window
    data = _json(capsys, ["params", "--fp", "0.001", "--window", "10000", "--lanes", "4", "--json"])
    assert data["lanes"] == 4 and data["lane_window"] == data["window"] < 10000
    assert data["window_kept_1e_9"] >= 10000 and data["window_worst"] == data["window"]
    assert data["window_kept_1e_9"] == lanes_window(data["window"], 4)["guaranteed"]
    one = _json(capsys, ["params", "--fp", "0.01", "--span", "100us", "--rate", "1e7", "--json"])
    four = _json(capsys, ["params", "--fp", "0.01", "--span", "100us", "--rate", "1e7", "--lanes", "4", "--json"])
    assert four["memory_bits"] < one["memory_bits"] and four["lanes_memory_bits"] == 4 * four["memory_bits"]


def test_params_table(capsys):
    assert cli.main(["params", "--fp", "0.01", "--window", "1000"]) == 0
    assert "bits_per_element" in capsys.readouterr().out


def test_error_exit(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["params", "--fp", "2", "--window", "10"])
    assert exit_info.value.code == 2
    assert "fp must be in" in capsys.readouterr().err


def test_demo(capsys):
    assert cli.main(["demo", "--fp", "0.01", "--window", "2000", "--probes", "20000"]) == 0
    assert "false negatives among the last" in capsys.readouterr().out


def test_registry():
    names = [name for name, _ in cli.COMMANDS]
    assert names[:3] == ["analyze", "params", "demo"]
    with pytest.raises(ValueError, match="already registered"):
        cli.register("demo", lambda sub: None)


def test_a_command_builds_only_its_own_parser():
    """``apbbf dedup`` does not import Amaranth through ``export``'s parser (start-up): a fresh interpreter that
    parses a dedup command line has not loaded apbbf.export."""
    import subprocess
    import sys
    code = ("import sys\nfrom apbbf import cli\ntry:\n    cli.main(['dedup', '/nonexistent/x.pcap'])\n"
            "except SystemExit:\n    pass\nprint('apbbf.export' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
    assert "export" in cli.build_parser().format_help()
