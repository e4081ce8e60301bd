"""The FuseSoC generator: a user's core (``tests/fusesoc/apbbf_smoke.core``) asks for a filter, FuseSoC runs the
generator and a Verilog testbench on Icarus (FuseSoC and Icarus as pinned and installed by ``make setup``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import apbbf
from apbbf.fusesoc import PARAMETERS, REQUIRED, config_from_parameters, core_dir, main

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def test_core_file():
    """The core names the generator and its script, at the package's version."""
    core = yaml.safe_load((core_dir() / "apbbf.core").read_text())
    assert core["name"] == f"::apbbf:{apbbf.__version__}"
    generator = core["generators"]["apbbf"]
    assert (core_dir() / generator["command"]).is_file()
    for name in PARAMETERS:
        assert f"{name} (" in generator["usage"], name


def test_generator_on_icarus(tmp_path):
    """fusesoc runs the generator for the smoke core's parameters and the testbench passes on Icarus."""
    (tmp_path / "fusesoc.conf").write_text(f"[main]\ncache_root = {tmp_path / 'cache'}\n")
    # The generator runs under the python3 first on PATH: this environment's, which has apbbf.
    env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    result = subprocess.run([str(BIN / "fusesoc"), "--config", "fusesoc.conf", "--cores-root", str(core_dir()),
                             "--cores-root", str(HERE / "fusesoc"), "run", "--target", "sim", "--build-root",
                             str(tmp_path / "build"), "::apbbf_smoke"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "PASS: apbbf smoke test" in output, output
    for check in ("insert A", "query A", "query B (absent)", "test-and-insert B", "query B"):
        assert f"ok: {check}" in output, output
    generated = sorted((tmp_path / "build").rglob("smoke_filter.v"))     # the generator's, and its copy
    assert generated, "the generator wrote no smoke_filter.v"
    text = generated[0].read_text()
    assert "module smoke_filter(" in text
    assert "k=2 l=3 block_bits(B)=16 block_hashes(b)=2 segment_blocks=16 key_width=32 seed=0x1234" in text
    assert "scan=parallel" in text


@pytest.mark.parametrize("parameters,error,message", [
    ({"l": 3}, ValueError, "parameter 'k' is required"),
    ({"k": 2, "l": 3, "depth": 4}, ValueError, "unknown parameter 'depth'"),
    ({"k": 2, "l": 3, "scan": "fast"}, ValueError, "scan must be 'fsm' or 'parallel'"),
    ({"k": 2, "l": 3, "segment_blocks": 3}, ValueError, "segment_blocks must be a power of two"),
    ({"k": "2", "l": 3}, TypeError, "k must be an integer"),
    ([2, 3], TypeError, "parameters must be a mapping"),
])
def test_bad_parameters(parameters, error, message):
    with pytest.raises(error, match=message):
        config_from_parameters(parameters)


def test_generator_reports_errors(tmp_path, capsys):
    """A bad parameter stops the generator with a message and a non-zero status (FuseSoC then fails)."""
    (tmp_path / "input.yml").write_text(yaml.safe_dump({"gapi": "1.0", "vlnv": "::x-y:0", "files_root": ".",
                                                        "parameters": {"k": 2, "l": 3, "depth": 4}}))
    assert main([str(tmp_path / "input.yml"), "-o", str(tmp_path)]) == 1
    assert "unknown parameter 'depth'" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.v"))


def test_defaults():
    config, scan, name = config_from_parameters({name: 2 for name in REQUIRED})
    assert (config.k, config.l, config.segment_blocks, scan, name) == (2, 2, 512, "fsm", "apbbf_axis")


def test_default_headroom():
    """With a span and no extra_segments the generator takes the default headroom (as apbbf export)."""
    from apbbf.model.timeanalysis import default_extra_segments
    params = {"k": 3, "l": 8, "segment_blocks": 64, "span": 2000, "time_width": 16, "seed": 1}
    config = config_from_parameters(params)[0]
    assert config.extra_segments == default_extra_segments(config) == 9
    assert config_from_parameters({**params, "burst": 4.0})[0].extra_segments > 9
    assert config_from_parameters({**params, "extra_segments": 0})[0].extra_segments == 0
