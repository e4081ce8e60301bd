"""``apbbf dedup`` with a change schedule (``--change FRAME:CHANGE``): a capture replayed as the gateware decides it
when its registers change the action, clear the filter or re-key it at those frames (apbbf.model.dedup.Dedup.run's
``changes``)."""

import pytest

from apbbf import cli
from apbbf.dedup import changes_of, dedup_capture, parse_change

from .dedup_traffic import traffic, write_pcap


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("changes") / "tap.pcap"
    write_pcap(path, list(traffic(3000, 5, duplicates=0.3)))
    return path


def _run(capture, tmp_path, changes=None, name="out.pcap"):
    return dedup_capture(capture, window=1_000_000, seed=9, output=tmp_path / name, changes=changes)


def test_changes_decide_the_frames_after_them(capture, tmp_path):
    plain = _run(capture, tmp_path)["counters"]
    assert plain["dropped"] > 100
    counted = _run(capture, tmp_path, {0: [("action", "count")]})["counters"]
    assert (counted["dropped"], counted["duplicates"]) == (0, plain["duplicates"])
    half = _run(capture, tmp_path, {1500: [("action", "count")]})["counters"]
    assert 0 < half["dropped"] < plain["dropped"] and half["duplicates"] == plain["duplicates"]
    cleared = _run(capture, tmp_path, changes_of(["1000:clear", "2000:rekey=0x1234"]))["counters"]
    assert cleared["duplicates"] < plain["duplicates"] and cleared["frames"] == plain["frames"]
    # split across the reader's chunks: the same answers
    small = dedup_capture(capture, window=1_000_000, seed=9, changes=changes_of(["1000:clear"]), chunk_bytes=4096)
    assert small["counters"] == _run(capture, tmp_path, changes_of(["1000:clear"]))["counters"]


def test_cli_change_option(capture, tmp_path, capsys):
    assert cli.main(["dedup", str(capture), "--window", "1ms", "--seed", "9", "--change", "0:action=count"]) == 0
    assert ", dropped 0," in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["dedup", str(capture), "--change", "x:clear"])
    with pytest.raises(ValueError, match="pcap records have no room for a mark"):
        _run(capture, tmp_path, {5: [("action", "mark")]})


@pytest.mark.parametrize("text", ["5:keep", "5:action=keep", "-1:clear", "5:clear=1", "5:rekey=-1", "clear",
                                  "5:rekey=0x10000000000000000"])
def test_bad_change_refused(text):
    with pytest.raises(ValueError, match="--change must be FRAME:action=drop|mark|count"):
        parse_change(text)


def test_parse_change():
    assert parse_change("10:action=mark") == (10, ("action", "mark"))
    assert changes_of(["3:clear", "3:rekey=7"]) == {3: [("clear",), ("rekey", 7)]} and changes_of([]) is None
