"""The memory core (:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`) against a memory that stops taking
requests while a few of its read answers wait (:class:`apbbf.sim.memory.MemoryModel` with ``max_reads``): the
request stream carries reads and writes in one order, so such a memory holds up the writes behind a read too.

The scan takes every answer as it comes, into a queue of its own with room for every read it leaves unanswered
(:attr:`~apbbf.hdl.core.scan_memory.MemoryScan.answer_depth`), so ``rsp.ready`` stays high and the memory's own
buffer of answers never fills on its account: it runs with a memory that holds a single answer, and with one that
holds every answer the scan may leave waiting.
"""

import pytest

from apbbf.model import Config
from apbbf.sim.harness import random_commands
from apbbf.sim.memory import simulate

CONFIG = Config(2, 3, segment_blocks=8, row_bits=512)


@pytest.mark.parametrize("max_reads", [1, 2, 4 * CONFIG.physical_segments])
def test_memory_holding_few_answers(max_reads):
    commands = random_commands(CONFIG, 60, seed=5)
    print("seed 5")
    simulate(CONFIG, commands, seed=5, depth=4, name=f"memory-backpressure-{max_reads}", max_reads=max_reads)
