"""The memory core (:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`) against a memory that stops taking
requests while a few of its read answers wait (:class:`apbbf.sim.memory.MemoryModel` with ``max_reads``): the
request stream carries reads and writes in one order, so such a memory holds up the writes behind a read too.

The scan answers a command only when it has every block, and holds ``rsp.ready`` low while that command writes
its blocks; its next read waits in the request register, in front of those writes. With a memory that will not
take that read until an answer is taken, neither side moves: the run below deadlocks. (The AXI4 export never
meets this: its adapter queues the answers of ``depth * physical_segments`` reads, all the scan can leave
unanswered, so it never stops taking reads while answers wait.) The test is marked ``xfail(strict=True)``: it
documents the deadlock and fails once the scan, or the port's stated contract, resolves it.
"""

import pytest

from apbbf.model import Config
from apbbf.sim.harness import Mismatch, random_commands
from apbbf.sim.memory import simulate

CONFIG = Config(2, 3, segment_blocks=8, row_bits=512)


def test_memory_holding_every_unanswered_read_runs():
    """The same commands with a memory that takes reads while up to ``depth * physical_segments`` answers wait
    (what the AXI4 adapter queues): every answer the model's."""
    commands = random_commands(CONFIG, 60, seed=5)
    print("seed 5")
    simulate(CONFIG, commands, seed=5, depth=4, name="memory-backpressure-ok",
             max_reads=4 * CONFIG.physical_segments)


@pytest.mark.xfail(strict=True, raises=Mismatch, reason="the memory scan deadlocks when the memory stops taking "
                   "requests while read answers wait (its next read blocks the answered command's writes)")
def test_memory_with_a_full_read_buffer_deadlocks():
    commands = random_commands(CONFIG, 60, seed=5)
    print("seed 5")
    simulate(CONFIG, commands, seed=5, depth=4, name="memory-backpressure", max_reads=2, max_cycles=1500)
