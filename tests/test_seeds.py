# amaranth: UnusedElaboratable=no
"""Hash seeds of the user-facing outputs: board builds, ``apbbf export`` and the FuseSoC generator draw a fresh
seed unless one is given, and say which (the flows that need the tools are stubbed: the seed logic runs
before them)."""

from dataclasses import replace

import pytest

import apbbf.export as export
from apbbf.flows.board import board_config, config_fields, summary
from apbbf.fusesoc import config_from_parameters
from apbbf.hdl.board.boards import BOARDS
from apbbf.model import Config


def test_draw_seed_is_64_bit_and_fresh():
    seeds = {export.draw_seed() for _ in range(50)}
    assert len(seeds) == 50
    assert all(0 <= seed < 1 << 64 for seed in seeds)
    assert max(seeds) >= 1 << 60                      # (fails with probability 50 * 2**-4)


@pytest.mark.parametrize("board", list(BOARDS))
def test_board_config_draws_unless_given(board):
    default = BOARDS[board].default_config
    first, drawn = board_config(board)
    second, _ = board_config(board)
    assert drawn and first.seed != second.seed
    assert replace(first, seed=default.seed) == default
    given, drawn = board_config(board, seed=0x1234)
    assert not drawn and given == replace(default, seed=0x1234)
    custom = replace(default, l=default.l + 1, seed=99)
    assert board_config(board, custom, seed=5) == (replace(custom, seed=5), False)


def test_board_config_errors():
    with pytest.raises(ValueError, match="board must be one of"):
        board_config("de10-nano")
    with pytest.raises(ValueError, match="seed must be from 0 to"):
        board_config("icebreaker", seed=1 << 64)
    with pytest.raises(TypeError, match="seed must be an integer"):
        board_config("icebreaker", seed="1")
    with pytest.raises(TypeError, match="config must be a Config"):
        board_config("icebreaker", (6, 7))


def test_config_fields():
    assert config_fields(None) == set() and config_fields("") == set()
    assert config_fields("k=4, seed=0x10,l=9") == {"k", "seed", "l"}


def test_summary_prints_the_seed():
    config = BOARDS["icebreaker"].default_config
    report = {"board": "icebreaker", "device": "iCE40UP5K-SG48", "clock_hz": 12e6, "baud": 3_000_000,
              "bitstream": None, "fmax": {}, "cells": {}, "utilization": {},
              "filter": {"config": {"k": config.k, "l": config.l, "block_bits": config.block_bits,
                                    "block_hashes": config.block_hashes, "segment_blocks": config.segment_blocks,
                                    "key_width": config.key_width, "seed": 0xABC},
                         "hardware_memory_bits": 1, "window": 1, "predicted_fp": None, "bits_per_element": 1.0},
              "seed": 0xABC, "seed_drawn": True}
    text = summary(report)
    assert "hash seed 0x0000000000000abc (drawn for this build" in text
    report["seed_drawn"] = False
    assert summary(report).endswith("\n  hash seed 0x0000000000000abc")


@pytest.fixture
def exported(monkeypatch, tmp_path):
    """``apbbf export`` with the conversion stubbed: records the Configs it was asked for."""
    configs = []

    def fake(config, path, *, name, scan, parity=False, pace=1):
        configs.append(config)
        return tmp_path / "x.v"

    monkeypatch.setattr(export, "export_verilog", fake)
    return configs


def test_export_draws_a_seed(exported, capsys):
    for _ in range(2):
        assert export.main(["--k", "2", "--l", "3", "-o", "x.v"]) == 0
    first, second = exported
    assert first.seed != second.seed
    out = capsys.readouterr().out
    assert f"hash seed {first.seed:#018x} (drawn; pass --seed to repeat it)" in out


def test_export_keeps_a_given_seed(exported, capsys):
    assert export.main(["--k", "2", "--l", "3", "--seed", "0x1234", "-o", "x.v"]) == 0
    assert exported[0] == Config(2, 3, seed=0x1234)
    out = capsys.readouterr().out
    assert "hash seed 0x0000000000001234" in out and "drawn" not in out


def test_fusesoc_parameters_draw_a_seed_unless_given():
    first, _, _ = config_from_parameters({"k": 2, "l": 3})
    second, _, _ = config_from_parameters({"k": 2, "l": 3})
    assert first.seed != second.seed
    assert replace(first, seed=0) == Config(2, 3)
    given, _, _ = config_from_parameters({"k": 2, "l": 3, "seed": 0x1234})
    assert given == Config(2, 3, seed=0x1234)
