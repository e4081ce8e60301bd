"""Amaranth 0.5 gateware, one block per file in dataflow order: frames → key (:mod:`.key_extractor`, the
packet de-duplicator's front end) → hash (:mod:`.hash`) → segments (:mod:`.segments`) → scan (:mod:`.scan_fsm`,
:mod:`.scan_parallel`, with the circular buffer :mod:`.buffer`) → response (:mod:`.response`), composed by the core
(:class:`APBBF`, :mod:`.core`); its AXI4-Stream wrapper (:mod:`.axis`), the UART host interface and the board
tops."""

from .core import APBBF, SCANS
from .hash import HashUnit
from .key_extractor import KeyExtractor
from .types import Op, command_layout, response_layout

__all__ = ["APBBF", "SCANS", "HashUnit", "KeyExtractor", "Op", "command_layout", "response_layout"]
