"""The gateware's rooms: the public names users import keep working, every former flat module name imports as
an alias of the module it became (the same object), and nothing sits in ``hdl/`` outside a room."""

import importlib
from pathlib import Path

import pytest

import apbbf.hdl
from apbbf.hdl import MOVED

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("old,new", sorted(MOVED.items()))
def test_former_module_names_are_aliases(old, new):
    former = importlib.import_module(f"apbbf.hdl.{old}")
    assert former is importlib.import_module(f"apbbf.hdl.{new}")
    assert former.__spec__.name == f"apbbf.hdl.{new}"          # the module keeps its own spec


def test_public_names():
    from apbbf.hdl.core import APBBF
    from apbbf.hdl.export import AXIStreamAPBBF, AXIStreamPacketDedup
    from apbbf.hdl.packet import KeyExtractor, PacketDedup
    from apbbf.hdl.packet_dedup import PacketDedup as former
    assert apbbf.hdl.APBBF is APBBF and apbbf.hdl.PacketDedup is PacketDedup is former
    assert apbbf.hdl.KeyExtractor is KeyExtractor
    assert AXIStreamAPBBF.__module__ == "apbbf.hdl.export.axis"
    assert AXIStreamPacketDedup.__module__ == "apbbf.hdl.export.axis_dedup"


def test_every_module_in_a_room():
    loose = [path.name for path in (ROOT / "hdl").glob("*.py") if path.name != "__init__.py"]
    assert not loose, f"hdl/ files outside a room: {loose}"
    rooms = {path.name for path in (ROOT / "hdl").iterdir() if (path / "__init__.py").exists()}
    assert {"core", "packet", "export", "board"} <= rooms
    assert all(new.split(".")[0] in rooms for new in MOVED.values())


def test_measured_designs_moved_with_aliases():
    """The designs the Fmax flows place are gateware (apbbf.sim.designs); their former host-side names are the same
    classes."""
    from apbbf import extractor_cost
    from apbbf.flows import designs, hash_timing, lanes
    from apbbf.sim import designs as moved
    assert (designs.RegisteredCore, designs.BlockRAMProbe, designs.RegisteredDedup) == (
        moved.RegisteredCore, moved.BlockRAMProbe, moved.RegisteredDedup)
    assert hash_timing.RegisteredHash is moved.RegisteredHash and lanes.RegisteredLanes is moved.RegisteredLanes
    assert extractor_cost.RegisteredKeyExtractor is moved.RegisteredKeyExtractor
    assert all(getattr(moved, name).__module__ == "apbbf.sim.designs" for name in moved.__all__)
