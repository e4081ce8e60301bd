"""Amaranth 0.5 gateware, one block per file in dataflow order: frames → key (:mod:`.key_extractor`, the
packet de-duplicator's front end) → hash (:mod:`.hash`) → segments (:mod:`.segments`) → scan (:mod:`.scan_fsm`,
:mod:`.scan_parallel`, with the circular buffer :mod:`.buffer`) → response (:mod:`.response`), composed by the core
(:class:`APBBF`, :mod:`.core`); N of them behind one stream of command beats (:class:`Lanes`, :mod:`.lanes`); the packet de-duplicator that puts them together (:class:`PacketDedup`,
:mod:`.packet_dedup`); the AXI4-Stream wrappers (:mod:`.axis`, :mod:`.axis_dedup`), the UART host interface and
the board tops."""

from .core import APBBF, SCANS
from .hash import HashUnit
from .key_extractor import KeyExtractor
from .lanes import Lanes
from .packet_dedup import PacketDedup
from .types import Op, command_layout, response_layout

__all__ = ["APBBF", "SCANS", "HashUnit", "KeyExtractor", "Lanes", "PacketDedup", "Op", "command_layout", "response_layout"]
