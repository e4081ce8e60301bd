"""Cycle model of the FSM core: how long each command occupies ``apbbf.hdl.APBBF``.

A command is accepted in cycle t (``IDLE``), hashed for ``latency`` cycles (1, or 2 when the key is folded),
its blocks read (1) and matched (1); a query then scans one segment per cycle for as many cycles as Algorithm 1
counts accesses, an insert writes (1), and the response is offered (1). With ``rsp.ready`` high and
``cmd.valid`` always high the next command is accepted in the following cycle, except at a generation boundary
while the spare segment is still being cleared (``segment_blocks`` cycles after the shift's write), and after
reset, when every memory is cleared first.

The parallel scan (``scan="parallel"``) takes a command every cycle: accept, key register, hash, read, read
data, match, decide; the only waits are after reset and, at a generation boundary, until the previous shift
has reached the decide stage and the spare is clear.
"""

from __future__ import annotations

import numpy as np

from ..hdl.hash import hash_latency
from ..model.config import Config
from ..model.filters import Op

__all__ = ["hash_latency", "command_cycles", "accept_schedule"]


def command_cycles(config: Config, op, accesses: int) -> int:
    """Cycles a command occupies the core when nothing stalls it.

    INSERT: ``latency + 5``; QUERY: ``latency + 4 + accesses``; TEST_AND_INSERT: ``latency + 5 + accesses``.
    """
    latency = hash_latency(config)
    op = Op(op)
    if op == Op.INSERT:
        return latency + 5
    if op == Op.QUERY:
        return latency + 4 + accesses
    return latency + 5 + accesses


def accept_schedule(config: Config, ops, accesses, scan: str = "fsm") -> np.ndarray:
    """Cycle (counted from the end of reset) in which each command is accepted, with ``cmd.valid`` and
    ``rsp.ready`` always high.

    Parameters
    ----------
    ops : sequence of Op
    accesses : sequence of int
        The model's access count for each command's query part (``APBBF.probe``; 0 for INSERT).
    scan : str
        ``"fsm"`` or ``"parallel"``.
    """
    if scan not in ("fsm", "parallel"):
        raise ValueError(f"scan must be 'fsm' or 'parallel', not {scan!r}")
    latency = hash_latency(config)
    g, S = config.generation, config.segment_blocks
    accept = np.zeros(len(ops), dtype=np.int64)
    t = S                          # reset clears every memory first: segment_blocks cycles
    fill = 0                       # n mod g
    ready_after_scrub = 0          # first cycle a command may be accepted at a generation boundary
    for index, (op, count) in enumerate(zip(ops, accesses)):
        op = Op(op)
        if fill == 0:
            t = max(t, ready_after_scrub)
        accept[index] = t
        if op != Op.QUERY:
            if scan == "parallel":
                write = t + latency + 4                   # the decide stage
            else:
                write = t + latency + 3 + (count if op == Op.TEST_AND_INSERT else 0)
            if fill == 0:
                ready_after_scrub = write + S + 1
            fill = (fill + 1) % g
        t += 1 if scan == "parallel" else command_cycles(config, op, count)
    return accept
