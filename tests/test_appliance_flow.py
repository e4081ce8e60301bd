# amaranth: UnusedElaboratable=no
"""The appliance's build, without the tools: the filter sized per board, the block RAM check, the window's
numbers, the report's pages; the board top (with its UART) elaborated; the options it refuses."""

import json
import subprocess
from dataclasses import replace

import pytest
from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform

from apbbf.flows.appliance import (BOARD_DEFAULTS, IMIX_PPS, LINE_RATE_PPS, appliance_config, check_block_ram,
                                   domain_name, markdown, summary, window_numbers)
from apbbf.model import Config


def test_rates():
    assert round(LINE_RATE_PPS) == 1_488_095
    assert 320_000 < IMIX_PPS < 335_000


@pytest.mark.slow                                           # the model's solver: ~10 s per board
@pytest.mark.parametrize("board", list(BOARD_DEFAULTS))
def test_default_config_fits(board):
    config = appliance_config(board, seed=0x1234)
    assert config.span == BOARD_DEFAULTS[board]["window_us"] and config.seed == 0x1234
    blocks = check_block_ram(board, config, "drop")
    assert blocks["filter"] + blocks["other"] <= blocks["available"]
    numbers = window_numbers(config)
    line = numbers["line_rate_64B"]
    assert not line["overflow"] and line["window_ms"] == config.span / 1000
    assert line["window_keys"] == round(LINE_RATE_PPS * config.span / 1e6)
    assert line["fp"] <= BOARD_DEFAULTS[board]["fp"]
    assert numbers["imix"]["window_keys"] < line["window_keys"]


#: What appliance_config("colorlight-5a75b") gives (4 ms at fp 1e-3), and what it gives for fp 1e-4.
COLORLIGHT = Config(k=2, l=4, segment_blocks=512, span=4000, time_width=32, extra_segments=1)
TOO_LARGE = Config(k=3, l=3, segment_blocks=1024, span=4000, time_width=32, extra_segments=1)


def test_block_ram_check():
    blocks = check_block_ram("colorlight-5a75b", COLORLIGHT, "drop")
    assert blocks["filter"] == 16 and blocks["filter"] + blocks["other"] <= blocks["available"] == 56
    with pytest.raises(ValueError, match="DP16KD"):
        check_block_ram("colorlight-5a75b", TOO_LARGE, "drop")
    assert appliance_config("colorlight-5a75b", config=COLORLIGHT, seed=7) == Config(
        k=2, l=4, segment_blocks=512, span=4000, time_width=32, extra_segments=1, seed=7)


def test_too_large_refused():
    with pytest.raises(ValueError, match="board"):
        appliance_config("ulx3s-85f")
    with pytest.raises(ValueError, match="window_us"):
        appliance_config("versa-ecp5", window_us=0)


def test_domain_names():
    assert domain_name("$glbnet$port1.packer.rx_clk").startswith("rx of port1")
    assert domain_name("$glbnet$appliance.port0.rx_clk").startswith("rx of port0")
    assert domain_name("$glbnet$appliance.pll.eth_tx_clk").startswith("eth_tx")
    assert domain_name("$glbnet$appliance.dedup.answer_queue.clk").startswith("sync")
    # the Versa's: the user clock, and the oscillator into the DDR3 core's PLL (nextpnr's names in a routed build)
    assert domain_name("$glbnet$clk").startswith("sync")
    assert domain_name("$glbnet$dram.clk_in").startswith("clk100")
    assert domain_name("$glbnet$dram.core.crg_clkout1").startswith("init")


def test_report_pages():
    config = COLORLIGHT
    domain = {"net": "n", "constraint_mhz": 125.0, "fmax_mhz": 130.0, "fmax_min_mhz": 128.0, "fmax_max_mhz": 140.0,
              "met_every_seed": True}
    report = {
        "board": "colorlight-5a75b", "device": "LFE5U-25F-BG256 speed 6", "bitstream": "top.bit",
        "bitstream_seed": 1, "timing_met": True, "action": "drop", "key": "l3l4", "sync_mhz": 50.0,
        "baud": 1_000_000, "domains": {"eth_tx (125 MHz, both transmit sides)": domain}, "seeds": {"1": {}},
        "cells": {"luts": 100}, "utilization": {"DP16KD": {"used": 38, "available": 56}},
        "config": {"k": 2, "seed": 0}, "physical_segments": 8, "memory_bits": 1, "window": window_numbers(config),
        "synth_seconds": 1, "build_seconds": 2}
    page = markdown(report)
    assert "| eth_tx (125 MHz, both transmit sides) | 125.0 MHz | 130.0 MHz | 128.0–140.0 MHz | yes |" in page
    assert "| 1 GbE, 64-byte frames | 1488095 | 5952 | 4 |" in page
    assert "- ports: 1000 Mb/s full duplex only: RGMII at 100 and 10 Mb/s is not implemented" in page
    assert "timing met" in summary(report)
    assert "- hash seed 0x0000000000000000 (given; `SEED=0x0` repeats it" in page
    report.update(config={"k": 2, "seed": 0xABC}, seed_drawn=True)
    assert "hash seed 0x0000000000000abc (drawn for this build; `SEED=0xabc` repeats it" in markdown(report)
    assert "hash seed 0x0000000000000abc (drawn): SEED=0xabc repeats this build" in summary(report)
    assert "## The memory" not in markdown(report)


def test_report_of_the_filter_in_dram():
    """The DRAM build's report: the row layout, the words a frame takes, and the headroom at both rates."""
    from apbbf.flows.appliance import memory_numbers
    rows = Config(k=3, l=4, block_bits=32, segment_blocks=65536, span=250000, extra_segments=3, row_bits=8192)
    m = memory_numbers("colorlight-5a75b", rows, 50e6)
    # 10 live segments read (the 11th is being cleared) and k = 3 written
    assert (m["row_bits"], m["rows"], m["row_blocks"], m["native_words_per_frame"]) == (8192, 4096, 16, 13)
    assert m["bytes"] == m["capacity_bytes"] == 4 << 20
    assert abs(m["words_per_second_at_line_rate"] - (13 * LINE_RATE_PPS + m["clearing_words_per_second"])) < 1
    assert m["port_word_ratio"] == round(50e6 / m["words_per_second_at_line_rate"], 3)
    assert 2 < m["port_word_ratio"] < m["port_word_ratio_imix"]
    assert memory_numbers("colorlight-5a75b", COLORLIGHT, 50e6)["where"] == "block RAM"
    report = {"board": "colorlight-5a75b", "device": "LFE5U-25F", "bitstream": "top.bit", "bitstream_seed": 1,
              "timing_met": False, "action": "drop", "key": "l3l4", "sync_mhz": 50.0, "baud": 1_000_000,
              "domains": {}, "seeds": {"1": {}}, "cells": {}, "utilization": {}, "config": {"seed": 0},
              "physical_segments": 11, "memory_bits": 1, "window": window_numbers(rows), "memory": m,
              "synth_cpu_seconds": 90.0, "lut_mapping": "abc",
              "seed_build_cpu_seconds": {"median": 900.0, "min": 800.0, "max": 1000.0}}
    page = markdown(report)
    assert "4096 rows of 8192 bits (row_bits), 16 blocks of each segment in a row. A frame takes 13 native words" in page
    assert f"{m['port_word_ratio']:g} and {m['port_word_ratio_imix']:g} times the words needed" in page
    assert "`make dram-bench` measures the rate with them" in page
    assert "one seed's whole build (synthesis and nextpnr) 900 processor seconds (median; 800–1000)" in page
    assert (f"filter in DRAM: 4096 rows of 8192 bits, 13 words a frame, the port's word rate {m['port_word_ratio']:g} "
            "times the need at 1.488 Mpps") in summary(report)


def test_each_build_draws_a_fresh_seed(monkeypatch):
    """Without a seed every appliance Config has a fresh one from secrets; a given seed is kept (SEED= repeats a
    build)."""
    from apbbf.flows import appliance
    drawn = iter([0x1111, 0x2222])
    monkeypatch.setattr(appliance.secrets, "randbits", lambda bits: next(drawn) if bits == 64 else None)
    assert appliance_config("colorlight-5a75b", config=COLORLIGHT).seed == 0x1111
    assert appliance_config("colorlight-5a75b", config=COLORLIGHT).seed == 0x2222
    assert appliance_config("colorlight-5a75b", config=COLORLIGHT, seed=0).seed == 0
    monkeypatch.undo()
    assert len({appliance.draw_seed() for _ in range(4)}) == 4


@pytest.mark.slow                                           # the de-duplicator's elaboration: ~20 s
def test_board_top_elaborates():
    from apbbf.hdl.appliance.top import ApplianceTop
    config = Config(2, 3, segment_blocks=16, span=1000, time_width=16)
    plan = Colorlight_5A75B_R70Platform().prepare(ApplianceTop("colorlight-5a75b", config), name="top")
    lpf = plan.files["top.lpf"]
    assert "uart_0__rx" in lpf and "uart_0__tx" in lpf and "parser" in plan.files["top.il"]


def test_mark_refused():
    from apbbf.hdl.appliance.core import DedupAppliance
    with pytest.raises(ValueError, match="mark"):
        DedupAppliance("colorlight-5a75b", Config(2, 3, segment_blocks=16, span=1000), action="mark")


#: A process that spins for about ``seconds`` of processor time, then ends (the stand-in for a nextpnr run).
def _spin(seconds):
    import sys
    return [sys.executable, "-c", f"import time\nwhile time.process_time() < {seconds}: pass"]


def test_cpu_budget_stops_a_run():
    """A run past its processor-time budget is stopped when it may be, and runs on to its end when it may not
    (the one on_overrun note said); the processor time is the kernel's, not the wall clock's."""
    from apbbf.toolchain import cpu_seconds, run_with_cpu_budget
    assert cpu_seconds(-1) is None
    stopped = run_with_cpu_budget(_spin(30), cpu_budget_s=0.15, poll_s=0.05)
    assert stopped["stopped"] and stopped["returncode"] is None and 0.15 <= stopped["cpu_seconds"] < 5
    notes = []
    finished = run_with_cpu_budget(_spin(0.4), cpu_budget_s=0.1, poll_s=0.05, may_stop=lambda: False,
                                   on_overrun=notes.append)
    assert not finished["stopped"] and finished["returncode"] == 0 and finished["cpu_seconds"] >= 0.4
    assert len(notes) == 1 and notes[0] > 0.1
    sleeper = run_with_cpu_budget([_spin(0)[0], "-c", "import time; time.sleep(0.6)"], cpu_budget_s=0.2,
                                  poll_s=0.05)
    assert not sleeper["stopped"] and sleeper["wall_seconds"] >= 0.6 and sleeper["cpu_seconds"] < 0.2
    with pytest.raises(subprocess.CalledProcessError):
        run_with_cpu_budget([_spin(0)[0], "-c", "raise SystemExit(3)"], cpu_budget_s=10, poll_s=0.05)


def test_seed_budget_lets_the_last_run_finish():
    """A seed past its budget may be stopped while another has finished or is still running or to come; the last
    one left with none finished may not (a busy machine never leaves a build with no routed seed)."""
    from apbbf.flows.appliance import SeedBudget
    budget = SeedBudget([1, 2, 3])
    assert budget.may_stop(1)
    budget.done(1, finished=False)
    assert budget.may_stop(2) and budget.may_stop(3)
    budget.done(2, finished=False)
    assert not budget.may_stop(3)
    budget = SeedBudget([1, 2])
    budget.done(1, finished=True)
    assert budget.may_stop(2)
    assert not SeedBudget([5]).may_stop(5)


def test_build_options_refused(tmp_path):
    from apbbf.flows.appliance import build_appliance
    with pytest.raises(ValueError, match="steps"):
        build_appliance("colorlight-5a75b", build_dir=tmp_path, config=COLORLIGHT, seed=1, steps="place")
    with pytest.raises(ValueError, match="pnr_cpu_minutes"):
        build_appliance("colorlight-5a75b", build_dir=tmp_path, config=COLORLIGHT, seed=1, pnr_cpu_minutes=0)


def test_report_from_seeds_run_one_at_a_time(tmp_path, monkeypatch):
    """steps="report" makes the report from the seed runs in the build folder (as STEPS=pnr leaves them, one seed
    at a time): Fmax per domain over the seeds, each seed's processor time and one seed's whole build's; a seed
    stopped at its budget (no .config) is left out; options of another build are refused."""
    from dataclasses import fields

    from apbbf.flows.appliance import build_appliance
    monkeypatch.setenv("ECPPACK", "true")
    config = replace(COLORLIGHT, seed=5)
    options = {"board": "colorlight-5a75b", "config": {f.name: getattr(config, f.name) for f in fields(config)},
               "action": "drop", "key": "l3l4", "placer": "static", "router": "router2"}
    (tmp_path / "options.json").write_text(json.dumps(options))
    (tmp_path / "synth.json").write_text(json.dumps({"synth_seconds": 400.0, "synth_cpu_seconds": 80.0,
                                                     "lut_mapping": "abc"}))
    (tmp_path / "top.rpt").write_text("")
    for seed, (tx, cpu) in {1: (119.5, 600.0), 2: (131.0, 700.0), 3: (140.0, None)}.items():
        fmax = {"$glbnet$eth_tx_clk": {"achieved": tx, "constraint": 125.0},
                "$glbnet$clk": {"achieved": 70.0 + seed, "constraint": 50.0}}
        (tmp_path / f"seed{seed}.json").write_text(json.dumps({"fmax": fmax}))
        (tmp_path / f"seed{seed}.tim").write_text("")
        if cpu is not None:                                    # seed 3 was stopped: no .config
            (tmp_path / f"seed{seed}.config").write_text("")
            (tmp_path / f"seed{seed}.run.json").write_text(json.dumps({"stopped": False, "cpu_seconds": cpu,
                                                                       "wall_seconds": 3 * cpu}))
    report = build_appliance("colorlight-5a75b", build_dir=tmp_path, config=config, seed=5, steps="report")
    assert report["seeds_unfinished"] == [3] and report["bitstream_seed"] == 2 and report["timing_met"]
    tx = report["domains"]["eth_tx (125 MHz, both transmit sides)"]
    assert (tx["fmax_mhz"], tx["fmax_min_mhz"], tx["fmax_max_mhz"], tx["met_every_seed"]) == (125.25, 119.5, 131.0,
                                                                                                False)
    assert report["seeds"]["1"]["cpu_seconds"] == 600.0 and report["seeds"]["2"]["seconds"] == 2100.0
    assert report["seed_build_cpu_seconds"] == {"median": 730.0, "min": 680.0, "max": 780.0}
    assert report["synth_cpu_seconds"] == 80.0 and report["lut_mapping"] == "abc"
    with pytest.raises(ValueError, match="no build of these options"):
        build_appliance("colorlight-5a75b", build_dir=tmp_path, config=replace(config, seed=6), seed=6,
                        steps="report")


def test_write_routed_keeps_the_routed_design(tmp_path, monkeypatch):
    """write_routed asks nextpnr for each seed's routed design (``--write seed<N>.routed.json``); without it, none."""
    from dataclasses import fields

    from apbbf.flows.appliance import build_appliance
    config = replace(COLORLIGHT, seed=5)
    options = {"board": "colorlight-5a75b", "config": {f.name: getattr(config, f.name) for f in fields(config)},
               "action": "drop", "key": "l3l4", "placer": "static", "router": "router2"}
    (tmp_path / "options.json").write_text(json.dumps(options))
    (tmp_path / "top.rpt").write_text("")
    # a stand-in for nextpnr: it records its arguments and writes what a routed seed leaves
    fake = tmp_path / "nextpnr"
    fake.write_text("#!/bin/sh\necho \"$@\" > args.txt\nfor a in \"$@\"; do case $prev in --textcfg) : > \"$a\";; "
                    "--report) echo '{\"fmax\": {}}' > \"$a\";; --log) : > \"$a\";; esac; prev=$a; done\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NEXTPNR_ECP5", str(fake))
    monkeypatch.setenv("ECPPACK", "true")
    monkeypatch.setattr("apbbf.toolchain.use_yowasp", lambda: None)
    for write_routed in (True, False):
        build_appliance("colorlight-5a75b", build_dir=tmp_path, config=config, seed=5, seeds=[1], steps="pnr",
                        write_routed=write_routed)
        assert ("--write seed1.routed.json" in (tmp_path / "args.txt").read_text()) is write_routed


def test_pnr_and_report_take_the_synthesis_seed(tmp_path, monkeypatch):
    """steps="pnr" and "report" without a seed take the hash seed that the synthesis in the build folder used
    (its options.json, with whether it was drawn), so STEPS=pnr needs no SEED=; a folder with no synthesis is
    refused by name."""
    from dataclasses import fields

    from apbbf.flows.appliance import build_appliance
    with pytest.raises(ValueError, match="holds no synthesized build"):
        build_appliance("colorlight-5a75b", build_dir=tmp_path, config=COLORLIGHT, seeds=[1], steps="pnr")
    seed = 0x1234_5678_9ABC_DEF0
    print(f"hash seed {seed:#x}")
    config = replace(COLORLIGHT, seed=seed)
    options = {"board": "colorlight-5a75b", "config": {f.name: getattr(config, f.name) for f in fields(config)},
               "action": "drop", "key": "l3l4", "placer": "static", "router": "router2", "seed_drawn": True}
    (tmp_path / "options.json").write_text(json.dumps(options))
    (tmp_path / "top.rpt").write_text("")
    fake = tmp_path / "nextpnr"
    fake.write_text("#!/bin/sh\nfor a in \"$@\"; do case $prev in --textcfg) : > \"$a\";; "
                    "--report) echo '{\"fmax\": {}}' > \"$a\";; --log) : > \"$a\";; esac; prev=$a; done\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NEXTPNR_ECP5", str(fake))
    monkeypatch.setenv("ECPPACK", "true")
    monkeypatch.setattr("apbbf.toolchain.use_yowasp", lambda: None)
    report = build_appliance("colorlight-5a75b", build_dir=tmp_path, config=config, seeds=[1], steps="pnr")
    assert report["seed"] == seed and report["seed_drawn"] is True
    report = build_appliance("colorlight-5a75b", build_dir=tmp_path, config=config, seeds=[1], steps="report")
    assert report["seed"] == report["config"]["seed"] == seed
    # a seed given that is not the synthesis's is still refused
    with pytest.raises(ValueError, match="no build of these options"):
        build_appliance("colorlight-5a75b", build_dir=tmp_path, config=config, seed=seed + 1, seeds=[1],
                        steps="report")
