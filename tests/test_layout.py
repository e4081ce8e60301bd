"""The gateware's rooms: the public names users import, nothing in ``hdl/`` outside a room, no import hook and no
former flat module name."""

import importlib
import sys
from pathlib import Path

import pytest

import apbbf.hdl

ROOT = Path(__file__).resolve().parent.parent

def test_public_names():
    from apbbf.hdl.core import APBBF
    from apbbf.hdl.export import AXIStreamAPBBF, AXIStreamPacketDedup
    from apbbf.hdl.packet import KeyExtractor, PacketDedup
    assert apbbf.hdl.APBBF is APBBF and apbbf.hdl.PacketDedup is PacketDedup
    assert apbbf.hdl.KeyExtractor is KeyExtractor
    assert AXIStreamAPBBF.__module__ == "apbbf.hdl.export.axis"
    assert AXIStreamPacketDedup.__module__ == "apbbf.hdl.export.axis_dedup"


def test_every_module_in_a_room():
    loose = [path.name for path in (ROOT / "hdl").glob("*.py") if path.name != "__init__.py"]
    assert not loose, f"hdl/ files outside a room: {loose}"
    rooms = {path.name for path in (ROOT / "hdl").iterdir() if (path / "__init__.py").exists()}
    assert {"core", "packet", "export", "eth", "board"} <= rooms


@pytest.mark.parametrize("name", ["packet_dedup", "segments", "verilog", "lanes", "boards"])
def test_no_former_flat_names(name):
    assert not any(type(finder).__module__.startswith("apbbf") for finder in sys.meta_path)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"apbbf.hdl.{name}")
