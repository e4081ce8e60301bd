# amaranth: UnusedElaboratable=no
"""The de-duplicator benchmark's bookkeeping (:mod:`apbbf.flows.dedup_bench`), without running the tools: the parts'
cells from a hierarchical Yosys ``stat``, and the README's tables from a report."""

import random

import pytest

from apbbf.flows.dedup_bench import PARTS, markdown, module_cells, part_cells, readme_block

STAT = """
Printing statistics.

=== top ===

        +----------Local Count, excluding submodules.
       10 cells
        4   LUT4
        6   TRELLIS_FF

=== top.dedup ===

       3 cells
        2   LUT4
        1   CCU2C

=== top.dedup.extractor ===

      12 cells
       11   LUT4
        1   TRELLIS_DPR16X4

=== top.dedup.extractor.beats ===

       2 cells
        2   LUT4

=== top.dedup.keys ===

       5 cells
        5   TRELLIS_FF

=== top.dedup.answers ===

       1 cells
        1   DP16KD

=== top.dedup.core.segments.segment0 ===

       4 cells
        4   DP16KD

=== top.dedup.buffer ===

       9 cells
        9   DP16KD

=== design hierarchy ===

       99   LUT4
"""


def test_part_cells():
    parts = part_cells(module_cells(STAT), "top.dedup", "ecp5")
    assert set(parts) == {*PARTS, "glue"}
    assert parts["extractor"]["luts"] == 13 and parts["extractor"]["lutram"] == 1      # submodules summed
    assert parts["queue"]["ffs"] == 5 and parts["queue"]["brams"] == 1                 # keys and answers
    assert parts["core"]["brams"] == 4 and parts["buffer"]["brams"] == 9
    assert parts["glue"] == {"luts": 2, "carry": 1, "brams": 0, "sprams": 0, "dsps": 0, "ffs": 0, "lutram": 0}


def test_markdown():
    cells = {"luts": 1000, "ffs": 900, "brams": 59, "carry": 5, "sprams": 0, "dsps": 0, "lutram": 2}
    routed = {"fmax_mhz": 101.5, "fmax_min_mhz": 99.0, "fmax_max_mhz": 104.25, "cells": cells,
              "bram_used": "59/208", "critical_path": {"delay_ns": 9.9, "routing_ns": 7.0, "source": "a", "sink": "b"}}
    unrouted = {"fmax_mhz": None, "fmax_min_mhz": None, "fmax_max_mhz": None, "cells": cells, "bram_used": "0",
                "critical_path": {}}
    sim = {"frames_per_clock_in": 1.0, "frames_per_clock_out": 1.0}
    results = {"seeds": [1, 2, 3], "widths": {
        "512": {"sim": sim, "pnr": routed, "mpps": 101.5, "line_rate": {"100 GbE": False, "40 GbE": True,
                                                                          "10 GbE": True},
                "parts": {"core": cells}, "buffer_alone": {**routed, "fmax_mhz": 150.6}},
        "64": {"sim": sim, "pnr": unrouted, "parts": {"core": cells}},
        "128": {"sim": sim, "pnr": {**routed, "timed_out": [3]}, "mpps": 101.5, "parts": {"core": cells}},
        "256": {"sim": sim, "pnr": {**unrouted, "timed_out": [1, 2, 3]}, "parts": {"core": cells}}}}
    text = markdown(results)
    assert "| 128 | 1.000, 1.000 | 101.5 (99.0–104.2); seed 3 not routed in 15 min |" in text
    assert "| 256 | 1.000, 1.000 | ?; seeds 1, 2, 3 not routed in 15 min |" in text
    assert "| 512 | 1.000, 1.000 | 101.5 (99.0–104.2) | 101.5 | no / yes / yes | 1,000 | 900 | 59/208 | 9.9 ns" in text
    assert "| 64 | 1.000, 1.000 | did not route |" in text
    assert "| 512 | core | 1,000 | 900 | 5 | 2 | 59 |" in text
    assert "| 512 | 150.6 (99.0–104.2) | 1,000 | 900 | 59/208 | 9.9 ns (7.0 routing): a → b |" in text
    assert text.count("the packet buffer alone") == 1                   # only the width that has it: one table
    block = readme_block({**results, "config": {"k": 3, "l": 8, "segment_blocks": 1024, "span": 1000}}, "stamp")
    assert "| data_width 512 | 1.000 | 101.5 (99.0–104.2) | 101.5 | 1,000 / 900 / 59/208 | a → b (9.9 ns) |" in block
    assert "The packet buffer placed alone, MHz: 512 bits 150.6 (99.0–104.2). Written by" in block


def test_the_packet_buffer_measured_alone_is_the_dedups():
    """The bench places the de-duplicator's own packet buffer (its depth, its beat, its registered write) behind
    registers; with ``count`` there is none."""
    from amaranth.hdl import Fragment

    from apbbf.flows.dedup_bench import CONFIG
    from apbbf.hdl.lib.banked_queue import BankedQueue
    from apbbf.hdl.packet.dedup import PacketDedup
    from apbbf.model import Config
    from apbbf.model.packet import KeySpec
    from apbbf.sim.designs import RegisteredQueue
    dedup = PacketDedup(CONFIG, KeySpec.l3l4(), data_width=512, action="drop", max_frame=1518)   # the bench's
    buffer = dedup.packet_buffer()
    assert isinstance(buffer, BankedQueue) and buffer.depth == dedup.buffer_beats and buffer.registered_write
    assert len(buffer.w.payload.as_value()) == 512 + 64 + 1 and len(buffer.bank_widths) == 8
    Fragment.get(RegisteredQueue(buffer), None)
    with pytest.raises(TypeError, match="queue must be a BankedQueue"):
        RegisteredQueue(dedup)
    counting = PacketDedup(Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7), KeySpec.frame(),
                           data_width=64, action="count")
    with pytest.raises(ValueError, match="count"):
        counting.packet_buffer()


def test_pnr_time_limit(tmp_path):
    """A nextpnr run stopped at the benchmark's time limit leaves its seed without an Fmax, listed as timed out."""
    from apbbf.sim.designs import BlockRAMProbe
    from apbbf.flows.pnr import run_pnr, target_platform
    from apbbf.hdl.lib.devices import block_ram
    platform = target_platform("ice40")
    result = run_pnr(BlockRAMProbe(block_ram(platform.device)), platform, tmp_path, freq_mhz=100, seeds=(1,),
                     nextpnr_args=("--router", "router2"), timeout_s=0.01)
    assert result["timed_out"] == [1] and result["seeds"] == {"1": None} and result["fmax_mhz"] is None
    assert result["nextpnr_args"] == ["--router", "router2"]


def test_jobs_checked():
    """The nextpnr runs at once: 1..64, checked before any tool runs."""
    import pytest

    from apbbf.flows.dedup_bench import run
    from apbbf.flows.pnr import run_pnr
    for jobs, error in ((0, ValueError), (65, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="jobs"):
            run("build/never", "build/never", jobs=jobs)
        with pytest.raises(error, match="jobs"):
            run_pnr(None, None, "build/never", freq_mhz=100, jobs=jobs)


def test_pnr_seeds_in_parallel(tmp_path):
    """Two seeds on a shared pool of two runs: each seed has its own result (here both stopped at the limit)."""
    from concurrent.futures import ThreadPoolExecutor

    from apbbf.sim.designs import BlockRAMProbe
    from apbbf.flows.pnr import run_pnr, target_platform
    from apbbf.hdl.lib.devices import block_ram
    platform = target_platform("ice40")
    with ThreadPoolExecutor(max_workers=2) as pool:
        result = run_pnr(BlockRAMProbe(block_ram(platform.device)), platform, tmp_path, freq_mhz=100, seeds=(1, 2),
                         timeout_s=0.01, pool=pool)
    assert result["timed_out"] == [1, 2] and result["seeds"] == {"1": None, "2": None}
    assert set(result["seed_seconds"]) == {"1", "2"}


@pytest.mark.parametrize("width", [1, 4, 5, 145, 580])
def test_the_wrappers_fold_is_the_parity(width):
    """The timing wrappers fold the outputs into one register bit, four bits per stage: that bit is the parity of
    the value some stages earlier (a fold that dropped a bit would let synthesis remove logic it feeds)."""
    from amaranth import Module, Signal
    from amaranth.sim import Simulator
    from apbbf.sim.designs import _fold
    m, value = Module(), Signal(width)
    folded = _fold(m, value)
    rng = random.Random(width)
    values = [rng.getrandbits(width) for _ in range(10)]
    sim = Simulator(m)
    sim.add_clock(1e-6)

    async def bench(ctx):
        for v in values:
            ctx.set(value, v)
            await ctx.tick().repeat(5)              # at most five stages (four bits into one each)
            assert ctx.get(folded) == bin(v).count("1") % 2, f"{v:#x}"

    sim.add_testbench(bench)
    sim.run()


def test_the_timed_design_has_its_reset_on_a_global():
    """Placed on an ECP5, the de-duplicator's reset reaches its flip-flops through a DCCA (a global network), not
    as a fabric net of about 10,900 loads; simulated, the design is as it is (no vendor primitive)."""
    from amaranth.hdl import Fragment, Instance

    from apbbf.flows.pnr import target_platform
    from apbbf.hdl.lib.ecp5_ram import SimulatedECP5
    from apbbf.hdl.packet.dedup import PacketDedup
    from apbbf.model import Config
    from apbbf.model.packet import KeySpec
    from apbbf.sim.designs import RegisteredDedup

    def instances(platform):
        """The types of the vendor primitives in the elaborated wrapper (every level)."""
        dedup = PacketDedup(Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7), KeySpec.frame(),
                            data_width=64)
        found, todo = [], [Fragment.get(RegisteredDedup(dedup), platform)]
        while todo:
            fragment = todo.pop()
            if isinstance(fragment, Instance):
                found.append(fragment.type)
            todo += [sub for sub, *_ in fragment.subfragments]
        return found
    assert instances(target_platform("ecp5")).count("DCCA") == 1
    assert "DCCA" not in instances(None)
    assert "DCCA" not in instances(SimulatedECP5())   # simulated as an ECP5: its block RAMs, not a vendor DCCA
