"""Cycle model of the core (``apbbf.hdl.APBBF``) for a window bounded by count: in which cycle each command
is accepted.

FSM scan: a command is accepted in cycle t (``IDLE``), hashed for ``latency`` cycles
(:func:`~apbbf.hdl.core.hash.hash_latency`), its blocks read (``READ_LATENCY`` = 2: the block RAM's address and output
registers) and the key's bits picked from them (1); a query that reads segments (Algorithm 1 counts at least one
access) then matches (1) and scans one segment per cycle for as many cycles as Algorithm 1 counts accesses, an
insert writes (1), and the response is offered (1). With ``rsp.ready`` high
and ``cmd.valid`` always high the next command is accepted in the following cycle. An insert that shifts waits
at the end of its hashing until the segment it shifts into (the one the previous shift retired) is clear:
``segment_blocks + 2`` cycles after the previous shift's write. After reset every memory is cleared first, and
``cmd.ready`` (a register) rises the cycle after the clearing ends.

The parallel scan (``scan="parallel"``) takes a command every cycle: accept, A (the circular buffer decides),
hash (its last stage reads), the block RAMs' output registers, merge, write, match, answer; an insert that shifts
is held in A until the segment it shifts into is clear. ``cmd.ready`` is a register: the command behind one held
in A is still accepted, into a skid register, and the next one when the held command leaves A. After reset the
first command is accepted the cycle after the clearing ends. Its write comes ``latency + READ_LATENCY + 1``
cycles after A.
"""

from __future__ import annotations

import numpy as np

from ..hdl.core.hash import hash_latency
from ..hdl.core.segments import READ_LATENCY
from ..model.config import Config
from ..model.filters import Op

__all__ = ["hash_latency", "command_cycles", "accept_schedule"]


def command_cycles(config: Config, op, accesses: int) -> int:
    """Cycles a command occupies the core when nothing stalls it.

    INSERT: ``latency + R + 4``; QUERY: ``latency + R + 3 + scan``; TEST_AND_INSERT: ``latency + R + 4 + scan``,
    R the read latency (``READ_LATENCY`` = 2) and ``scan`` the match cycle and the accesses (``accesses + 1``), or
    0 when Algorithm 1 reads no segment.
    """
    latency = hash_latency(config) + READ_LATENCY
    op = Op(op)
    if op == Op.INSERT:
        return latency + 4
    if op == Op.QUERY:
        return latency + 3 + _scan_cycles(accesses)
    return latency + 4 + _scan_cycles(accesses)


def _scan_cycles(accesses: int) -> int:
    """The FSM's cycles between picking a query's bits and its answer: matching (1) and the accesses, if any."""
    return accesses + 1 if accesses else 0


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

    Raises
    ------
    ValueError
        If ``scan`` is unknown, or the Config has a span (the cycles of a time-bounded window depend on the
        times; they are measured, not modelled).
    """
    if scan not in ("fsm", "parallel"):
        raise ValueError(f"scan must be 'fsm' or 'parallel', not {scan!r}")
    if config.timed:
        raise ValueError("the cycle model covers windows bounded by count (a Config without a span)")
    latency = hash_latency(config)
    g, S = config.generation, config.segment_blocks
    accept = np.zeros(len(ops), dtype=np.int64)
    t = S + 1                      # reset clears every memory first (segment_blocks cycles); cmd.ready is a
                                   # register: it rises the cycle after the clearing ends
    decided = [t - 1, t - 1]       # parallel: the cycles the last two commands were decided in
    fill = g                       # inserts since the last shift: the first insert shifts
    clean = 0                      # first cycle in which the segment the next shift takes is clear
    for index, (op, count) in enumerate(zip(ops, accesses)):
        op = Op(op)
        accept[index] = t
        shifting = op != Op.QUERY and fill == g
        if scan == "parallel":
            # A command enters A the cycle after it is accepted, or after the one ahead is decided (it waits in
            # the skid register meanwhile); cmd.ready is low while the skid register is full.
            enter = max(t, decided[-1]) + 1
            decide = max(enter, clean) if shifting else enter     # A
            write = decide + latency + READ_LATENCY + 1           # W
            decided = [decided[-1], decide]
            t = max(t + 1, decided[0] + 1)
        else:
            delay = max(0, clean - (t + latency)) if shifting else 0
            write = t + latency + READ_LATENCY + 2 + delay + (_scan_cycles(count) if op == Op.TEST_AND_INSERT else 0)
            t += command_cycles(config, op, count) + delay
        if op != Op.QUERY:
            if shifting:
                # the retired segment is cleared in the S cycles after the shift's write; the buffer learns it
                # a cycle later (a registered ``cleaned``), and the shift that takes it is decided in the next
                clean = write + S + 2
            fill = 1 if shifting else fill + 1
    return accept
