"""Amaranth 0.5 gateware, in rooms by subsystem:

- :mod:`.core`: the filter core (hash -> segments -> circular buffer and scan -> response), :class:`APBBF`,
  and N of them behind one stream of command beats (:class:`Lanes`);
- :mod:`.packet`: frames to keys (:class:`KeyExtractor`) and the packet de-duplicator (:class:`PacketDedup`);
- :mod:`.export`: the AXI4-Stream wrappers and the conversion to one Verilog file;
- :mod:`.board`: the UART, the host protocol and the board tops.

The modules had flat names before the rooms (``apbbf.hdl.packet_dedup``, ``apbbf.hdl.segments``, ...); those
names still import, as aliases of the modules they became (:data:`MOVED`).
"""

import importlib
import importlib.abc
import importlib.util
import sys

from .core.apbbf import APBBF, SCANS
from .core.hash import HashUnit
from .core.lanes import Lanes
from .core.types import Op, command_layout, response_layout
from .packet.dedup import PacketDedup
from .packet.key_extractor import KeyExtractor

__all__ = ["APBBF", "SCANS", "HashUnit", "KeyExtractor", "Lanes", "PacketDedup", "Op", "command_layout", "response_layout",
           "MOVED"]

#: Former flat module names and the modules they are now (``apbbf.hdl.`` omitted on both sides).
MOVED = {
    "types": "core.types", "hash": "core.hash", "segments": "core.segments", "buffer": "core.buffer",
    "scan": "core.scan", "scan_fsm": "core.scan_fsm", "scan_parallel": "core.scan_parallel",
    "response": "core.response", "devices": "core.devices", "ecp5_ram": "core.ecp5_ram",
    "key_extractor": "packet.key_extractor", "crc_maps": "packet.crc_maps", "packet_dedup": "packet.dedup",
    "axis": "export.axis", "axis_dedup": "export.axis_dedup", "verilog": "export.verilog",
    "uart": "board.uart", "host_parser": "board.host_parser", "host_executor": "board.host_executor",
    "host_replier": "board.host_replier", "host_interface": "board.host_interface",
    "filter_over_uart": "board.filter_over_uart", "boards": "board.boards", "lanes": "core.lanes",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a former module name as the module it became (the same module object, imported on demand)."""

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, name = fullname.rpartition(".")
        if prefix == __name__ and name in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module(f"{__name__}.{MOVED[spec.name.rpartition('.')[2]]}")
        spec.loader_state = module.__spec__          # the import system replaces __spec__: put it back after
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())
