"""The scripts' shared options: ``--seeds`` parsed in one place (:func:`apbbf.flows.args.add_seeds`), with one
default (:data:`apbbf.flows.pnr.SEEDS`, the median of three), in every script that places and routes."""

import importlib.util
from pathlib import Path

import pytest

from apbbf.flows.pnr import SEEDS

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _script(name):
    spec = importlib.util.spec_from_file_location(f"script_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Stop(Exception):
    pass


def _capture(seen):
    def flow(*args, seeds, **kwargs):
        seen.append(list(seeds))
        raise _Stop
    return flow


def _appliance(monkeypatch, seen):
    module = _script("appliance")
    monkeypatch.setattr(module, "build_appliance", _capture(seen))
    return module, ["--board", "colorlight-5a75b"]


def _lanes_pnr(monkeypatch, seen):
    module = _script("lanes_pnr")
    monkeypatch.setattr(module, "lanes_pnr", _capture(seen))
    return module, []


def _dedup_bench(monkeypatch, seen):
    import apbbf.flows.dedup_bench
    monkeypatch.setattr(apbbf.flows.dedup_bench, "run", _capture(seen))
    return _script("dedup_bench"), []


@pytest.mark.parametrize("script", [_appliance, _lanes_pnr, _dedup_bench], ids=["appliance", "lanes_pnr",
                                                                                 "dedup_bench"])
@pytest.mark.parametrize("given, seeds", [(None, list(SEEDS)), ("0x2,5", [2, 5])])
def test_seeds(monkeypatch, script, given, seeds):
    seen = []
    module, argv = script(monkeypatch, seen)
    with pytest.raises(_Stop):
        module.main(argv + ([] if given is None else ["--seeds", given]))
    assert seen == [seeds]


@pytest.mark.parametrize("script", [_appliance, _lanes_pnr, _dedup_bench], ids=["appliance", "lanes_pnr",
                                                                                 "dedup_bench"])
def test_bad_seeds_refused(monkeypatch, script, capsys):
    module, argv = script(monkeypatch, [])
    with pytest.raises(SystemExit):
        module.main(argv + ["--seeds", "1,-2"])
    assert "none negative" in capsys.readouterr().err


def test_one_parser_and_one_default():
    assert SEEDS == (1, 2, 3)
    for path in sorted(SCRIPTS.glob("*.py")):
        text = path.read_text()
        assert '"--seeds"' not in text, f"{path.name} parses --seeds itself (use apbbf.flows.args.add_seeds)"
