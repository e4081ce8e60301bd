"""The filter core, in the order a command flows through it: its payloads (:mod:`.types`), the hash
(:mod:`.hash`), the segments' block RAMs (:mod:`.segments`, over :mod:`apbbf.hdl.lib.block_ram`), the
circular buffer (:mod:`.buffer`), the scans (:mod:`.scan`, :mod:`.scan_fsm`, :mod:`.scan_parallel`), the
responses (:mod:`.response`), composed by :class:`APBBF` (:mod:`.apbbf`). With the segments in an external
memory: the memory port (:mod:`.memory_port`) and the memory scan (:mod:`.scan_memory`), composed by
:class:`MemoryAPBBF` (:mod:`.memory_apbbf`).

The block RAM per device lives in :mod:`apbbf.hdl.lib`, not with the boards: the segments map onto it, and the
core must not import the board room.
"""

from .apbbf import APBBF, SCANS
from .memory_apbbf import MemoryAPBBF

__all__ = ["APBBF", "SCANS", "MemoryAPBBF"]
