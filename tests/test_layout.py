"""The gateware's rooms: the public names users import, nothing in ``hdl/`` outside a room, no import hook and no
former flat module name, and imports between rooms that run one way only."""

import ast
import importlib
import sys
from pathlib import Path

import pytest

import apbbf.hdl

ROOT = Path(__file__).resolve().parent.parent

#: The rooms from the bottom up: a room imports only from rooms before it (``eth`` and ``export`` are side by side; ``appliance``, the two-port box, is on top).
LAYERS = {"lib": 0, "core": 1, "packet": 2, "dram": 2, "eth": 3, "export": 3, "board": 4, "appliance": 5}


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
    assert rooms == set(LAYERS)


@pytest.mark.parametrize("name", ["packet_dedup", "segments", "verilog", "lanes", "boards"])
def test_no_former_flat_names(name):
    assert not any(type(finder).__module__.startswith("apbbf") for finder in sys.meta_path)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"apbbf.hdl.{name}")


def _room_imports(path: Path):
    """The rooms ``path`` (a module of a room in ``hdl/``) imports from, with the line of each import."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
            yield node.module.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("apbbf.hdl."):
            yield node.module.split(".")[2], node.lineno


def room_violations(hdl: Path) -> list:
    """Every import in ``hdl``'s rooms from a room at or above its own layer (other than itself)."""
    found = []
    for path in sorted(hdl.glob("*/*.py")):
        room = path.parent.name
        for other, line in _room_imports(path):
            if other in LAYERS and other != room and LAYERS[other] >= LAYERS[room]:
                found.append(f"{path.relative_to(hdl)}:{line} imports {other}/")
    return found


def test_imports_run_one_way():
    assert room_violations(ROOT / "hdl") == []


def test_imports_run_one_way_catches_an_upward_import(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "core").mkdir()
    (tmp_path / "lib" / "queue.py").write_text("from ..core.types import Op\n")
    (tmp_path / "core" / "apbbf.py").write_text("from ..lib.queue import Queue\nfrom . import types\n")
    assert room_violations(tmp_path) == ["lib/queue.py:1 imports core/"]


def test_readme_names_every_file_of_hdl_and_sim():
    readme = (ROOT / "README.md").read_text()
    files = [path for path in [*(ROOT / "hdl").glob("*/*.py"), *(ROOT / "sim").glob("*.py")]
             if path.name != "__init__.py"]
    missing = [str(path.relative_to(ROOT)) for path in files if f"`{path.name}`" not in readme]
    assert not missing, f"README.md's layout tables leave out {missing}"
