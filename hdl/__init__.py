"""Amaranth 0.5 gateware, in rooms by subsystem:

- :mod:`.core`: the filter core (hash -> segments -> circular buffer and scan -> response), :class:`APBBF`,
  and N of them behind one stream of command beats (:class:`Lanes`);
- :mod:`.packet`: frames to keys (:class:`KeyExtractor`) and the packet de-duplicator (:class:`PacketDedup`);
- :mod:`.export`: the AXI4-Stream wrappers and the conversion to one Verilog file;
- :mod:`.board`: the UART, the host protocol and the board tops.
"""

from .core.apbbf import APBBF, SCANS
from .core.hash import HashUnit
from .core.lanes import Lanes
from .core.types import Op, command_layout, response_layout
from .packet.dedup import PacketDedup
from .packet.key_extractor import KeyExtractor

__all__ = ["APBBF", "SCANS", "HashUnit", "KeyExtractor", "Lanes", "PacketDedup", "Op", "command_layout", "response_layout"]
