# amaranth: UnusedElaboratable=no
"""The bounded proofs of ``make formal`` (apbbf.sim.formal), shallow enough for ``make test``: the flow runs and
passes on the parallel scan, and (in ``make test-slow``) on the memory core, and it finds the counterexample when the
design is broken."""

import pytest

from apbbf.model import Config
from apbbf.sim import formal

CONFIG = Config(2, 2, block_bits=8, block_hashes=2, segment_blocks=1, key_width=8)
BUILD = "build/formal/test"
#: The passing proof's depth; the broken core's counterexample is deeper (BMC does not reach it at 20: a write, a
#: read of the same block that misses it, then that command's response).
DEPTH = 20
BROKEN_DEPTH = 22


def test_shallow_proof_passes():
    """Depth 20 (the full depths are make formal's; the first command is accepted 2 cycles after reset, and a response
    comes 15 cycles after its command): BMC passes."""
    result = formal.check(CONFIG, "parallel", DEPTH, f"{BUILD}/pass")
    assert result["status"]["bmc"].startswith("PASS"), result["log"]


@pytest.mark.slow
def test_broken_forwarding_is_found(monkeypatch):
    """The same check on a core whose oldest write is not forwarded (the module's source with that one source
    dropped, executed as a mutant): BMC finds a key reported absent that the window must hold."""
    import inspect

    from apbbf.hdl import scan_parallel
    text = inspect.getsource(scan_parallel)
    original = "[written for _, _, written in history]"
    assert text.count(original) == 1
    mutant = dict(vars(scan_parallel))
    exec(compile(text.replace(original, "[written for _, _, written in history[:-1]]"),
                 scan_parallel.__file__, "exec"), mutant)
    monkeypatch.setattr(formal, "APBBF", _with_scan(mutant["ParallelScan"]))
    result = formal.check(CONFIG, "parallel", BROKEN_DEPTH, f"{BUILD}/broken")
    assert result["status"]["bmc"].startswith("FAIL"), result["log"]


def _with_scan(scan_class):
    """An APBBF whose parallel scan is ``scan_class``."""
    from apbbf.hdl import core

    class Core(core.APBBF):
        def elaborate(self, platform):
            saved = core.SCANS["parallel"]
            core.SCANS["parallel"] = scan_class
            try:
                return super().elaborate(platform)
            finally:
                core.SCANS["parallel"] = saved

    return Core


MEMORY_CONFIG = Config(2, 2, block_bits=8, block_hashes=2, segment_blocks=1, key_width=8, row_bits=64)


@pytest.mark.slow
def test_shallow_memory_proof_passes():
    """The memory core with its memory's every choice free (apbbf.sim.formal.FormalMemory): BMC passes at depth 20
    (the reset's clearing, the first commands, their reads and writes; the full depth is make formal's). In ``make
    test-slow``: ``make test`` runs the flow on the parallel scan above, and the memory core against the model in
    Amaranth's simulator with its memory's latencies and refreshes drawn at random (tests/test_memory_core.py)."""
    result = formal.check(MEMORY_CONFIG, "memory", 20, f"{BUILD}/memory", memory_depth=2)
    assert result["status"]["bmc"].startswith("PASS"), result["log"]


@pytest.mark.slow
def test_broken_memory_forwarding_is_found(monkeypatch):
    """make formal's must-hit check of the memory core (scripts/formal.py: MEMORY_HIT, two commands in flight, the
    memory's latency free) on a scan that drops the bits of the writes in flight from the blocks it reads (the
    module's source with that one OR removed, executed as a mutant): BMC finds a query that misses the key the
    command before it inserted, its read answered before that insert's write landed."""
    import inspect
    import runpy
    from pathlib import Path

    from apbbf.hdl.core import memory_apbbf, scan_memory
    script = runpy.run_path(str(Path(__file__).parent.parent / "scripts" / "formal.py"))
    text = inspect.getsource(scan_memory)
    original = "gathered.view.eq(answers.r_data | info_head.extra)"
    assert text.count(original) == 1
    mutant = dict(vars(scan_memory))
    exec(compile(text.replace(original, "gathered.view.eq(answers.r_data)"), scan_memory.__file__, "exec"), mutant)
    monkeypatch.setattr(memory_apbbf, "MemoryScan", mutant["MemoryScan"])
    result = formal.check(script["MEMORY_HIT"], "memory", script["MEMORY_HIT_DEPTH"], f"{BUILD}/memory-broken",
                          memory_depth=2, tasks=("bmc",))
    assert result["status"]["bmc"].startswith("FAIL"), result["log"]
