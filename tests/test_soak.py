"""The soak of :mod:`apbbf.flows.soak`: a short soak of the core and of the lanes filter passes with every answer
and counter checked, a corrupted answer is caught with its command index, and the random stream replays inserted
keys across chunks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from apbbf.flows.soak import Stream, soak
from apbbf.model import Config

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "test_soak"
SMALL = Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=8, key_width=32)


def test_short_soak_passes_and_reports(tmp_path):
    report = tmp_path / "soak.json"
    result = soak(SMALL, BUILD / "count-fsm", commands=20_000, chunk=6000, seed=3, report=report, log=lambda _: None)
    assert result.passed and result.mismatches == 0 and result.first is None
    assert result.commands == 20_000 and result.cycles > result.commands     # idle gaps, backpressure, FSM scan
    assert 0 < result.hits < result.commands
    assert result.counters == result.model_counters and result.counters["shifts"] > 10
    saved = json.loads(report.read_text())
    assert saved["commands"] == 20_000 and saved["mismatches"] == 0 and saved["scan"] == "fsm"
    assert saved["seed"] == 3 and saved["config"]["k"] == 2 and saved["commands_per_second"] > 0


def test_soak_catches_a_flipped_answer():
    result = soak(SMALL, BUILD / "count-fsm", commands=20_000, chunk=6000, seed=3, log=lambda _: None, _flip=12_345)
    assert not result.passed and result.mismatches == 1
    assert result.first.index == 12_345 and result.first.core != result.first.model
    assert result.commands == 18_000                  # it stopped after the chunk holding the mismatch
    assert "command 12345: " in str(result.first)


@pytest.mark.slow
def test_timed_soak_passes():
    config = Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=4, key_width=32, span=500, time_width=16,
                    extra_segments=1)
    result = soak(config, BUILD / "timed-parallel", commands=20_000, chunk=8192, scan="parallel", seed=4,
                  log=lambda _: None)
    assert result.passed, result.first
    assert set(result.counters) == {"inserts", "shifts", "overflows", "expired"}
    assert result.counters["expired"] > 0


def test_stream_replays_inserted_keys_across_chunks():
    stream = Stream(SMALL, 5)
    inserted, replayed = [], 0
    for n in (300, 1, 700):
        ops, keys, times = stream.chunk(n)
        assert times is None and len(ops) == len(keys) == n
        for op, key in zip(ops.tolist(), keys.tolist()):
            if op != 1 and key in inserted:
                replayed += 1
            if op != 0:
                inserted.append(key)
    assert replayed > 150
    again = Stream(SMALL, 5)
    assert np.array_equal(again.chunk(300)[1], Stream(SMALL, 5).chunk(300)[1])


@pytest.mark.parametrize("name,value,says", [
    ("commands", 0, "commands"), ("chunk", 0, "chunk"), ("scan", "fast", "scan"), ("pause", 1.0, "pause"),
    ("lanes", 3, "lanes"),
])
def test_soak_names_a_bad_parameter(name, value, says):
    kwargs = {"commands": 10, "scan": "fsm", "chunk": 10, "pause": 0.1, name: value}
    with pytest.raises(ValueError, match=says):
        soak(SMALL, BUILD / "unused", **kwargs)


@pytest.mark.slow
def test_lanes_soak_passes_at_more_than_one_command_per_clock():
    # Two lanes, a slot each: beats with one, two or no valid slot (the testbench leaves a slot empty with the
    # pause's probability), every answer and each lane's counters scored against the lanes model.
    result = soak(SMALL, BUILD / "count-parallel-lanes2", commands=20_000, chunk=6000, scan="parallel", lanes=2,
                  seed=3, log=lambda _: None)
    assert result.passed, result.first
    assert result.lanes == 2 and len(result.counters) == 2 and result.counters == result.model_counters
    assert all(lane["shifts"] > 10 for lane in result.counters)
    assert result.cycles < result.commands                     # more than one command per clock, with the pauses
    assert result.as_dict()["lanes"] == 2


@pytest.mark.slow
def test_lanes_soak_catches_a_flipped_answer():
    result = soak(SMALL, BUILD / "count-parallel-lanes2", commands=20_000, chunk=6000, scan="parallel", lanes=2,
                  seed=3, log=lambda _: None, _flip=7_001)
    assert not result.passed and result.first.index == 7_001 and result.commands == 12_000


@pytest.mark.slow
def test_timed_lanes_soak_passes_with_the_fsm_scan():
    # ``make test-slow`` only: ``make test`` soaks lanes on the parallel scan (above) and the time window on one lane
    # (test_timed_soak_passes); tests/test_lanes.py runs time-window lanes on the Amaranth simulator.
    config = Config(2, 3, block_bits=64, block_hashes=4, segment_blocks=4, key_width=32, span=500, time_width=16,
                    extra_segments=1)
    result = soak(config, BUILD / "timed-fsm-lanes2", commands=20_000, chunk=8192, scan="fsm", lanes=2, seed=4,
                  log=lambda _: None)
    assert result.passed, result.first
    assert [set(lane) for lane in result.counters] == [{"inserts", "shifts", "overflows", "expired"}] * 2
    assert all(lane["expired"] > 0 for lane in result.counters)
