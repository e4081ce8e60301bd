"""Amaranth's public API only: no test and no module of the project imports a private Amaranth module
(``amaranth.hdl._mem``, ...) or reads or writes an attribute that only Amaranth's own code defines with a leading
underscore (``MemoryInstance._data``, ``ReadPort._en``, ``_MustUse__used``, ...). Private names change between
Amaranth releases without notice; simulations reach memories through the objects the gateware hands out
(``APBBF.segments.memories``, ``ctx.get``/``ctx.set`` on ``memory.data[address]``).

The attribute check is by name: Amaranth's private attribute names are gathered from its sources (name-mangled
``__names`` included), and those the project defines itself are allowed, since ``x._config`` on the project's
own objects is not Amaranth's business."""

import ast
from pathlib import Path

import random

import amaranth
import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

ROOT = Path(__file__).resolve().parent.parent
#: Where the project's Python lives; tests and scripts included.
FOLDERS = ("model", "hdl", "sim", "apbbf", "scripts", "tests")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_private_names(paths) -> set:
    """Private attribute names that ``paths`` define: assigned as attributes (``x._a = ...``), as methods or
    class attributes (``def _a``, ``_a = ...`` in a class body), with ``__names`` in a class as Python mangles
    them (``_Class__name``)."""
    names = set()
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            mangle = lambda name, cls=node.name.lstrip("_"): (f"_{cls}{name}" if name.startswith("__") and
                                                             not name.endswith("__") else name)
            for inner in ast.walk(node):
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(mangle(inner.name))
                elif isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store):
                    names.add(mangle(inner.attr))
                elif isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    names.add(mangle(inner.id))
        for node in ast.walk(tree):                     # assignments outside classes (x._a = ... in functions)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return {name for name in names if _private(name)}


def _project_files():
    return sorted(path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py"))


AMARANTH_PRIVATE = _defined_private_names(sorted(Path(amaranth.__file__).parent.rglob("*.py")))
PROJECT_PRIVATE = _defined_private_names(_project_files())
#: Amaranth's private names that the project does not define itself.
FORBIDDEN = AMARANTH_PRIVATE - PROJECT_PRIVATE
#: The known exceptions, each with its reason: the host side's nextpnr options are read from the tables Amaranth's
#: own build scripts use (``apbbf.toolchain.nextpnr_device_args``), so that a measurement places and routes for
#: exactly the device Amaranth would; there is no public accessor for them. The suite's settings
#: (``tests/conftest.py``) have the simulator compile a reduce-XOR to ``int.bit_count()``, a fifth of the core's
#: simulation time; :func:`test_reduce_xor_is_the_parity` checks the result against Python's parity.
ALLOWED = {"apbbf/toolchain.py": {"uses ._nextpnr_device_options", "uses ._nextpnr_package_options"},
           "tests/conftest.py": {"imports amaranth.sim._pyrtl"}}


def _uses(path: Path):
    """(line, what) for every private Amaranth module imported and every forbidden attribute used in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        modules = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for module in modules:
            parts = module.split(".")
            if parts[0] == "amaranth" and any(_private(part) for part in parts[1:]):
                yield node.lineno, f"imports {module}"
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN:
            yield node.lineno, f"uses .{node.attr}"
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr")
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value in FORBIDDEN):
            yield node.lineno, f"{node.func.id}(..., {node.args[1].value!r})"


def test_the_names_are_found():
    """The check knows Amaranth's private names the project once used, and leaves the project's own alone."""
    assert {"_data", "_read_ports", "_en", "_addr", "_MustUse__used"} <= AMARANTH_PRIVATE
    assert {"_read_ports", "_MustUse__used"} <= FORBIDDEN
    assert {"_config", "_parity"} <= PROJECT_PRIVATE and not {"_config", "_parity"} & FORBIDDEN


def test_the_check_can_fail(tmp_path):
    """What the parity test once did is caught."""
    path = tmp_path / "probe.py"
    path.write_text("from amaranth.hdl._mem import MemoryInstance\n"
                    "def f(mi, dut):\n"
                    "    return mi._read_ports[0], dut._MustUse__used, getattr(mi, '_read_ports')\n")
    assert {what for _, what in _uses(path)} == {
        "imports amaranth.hdl._mem", "imports amaranth.hdl._mem.MemoryInstance", "uses ._read_ports",
        "uses ._MustUse__used", "getattr(..., '_read_ports')"}


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_private_amaranth(folder):
    found = [f"{path.relative_to(ROOT)}:{line} {what}" for path in sorted((ROOT / folder).rglob("*.py"))
             for line, what in _uses(path) if what not in ALLOWED.get(str(path.relative_to(ROOT)), ())]
    assert not found, "private Amaranth API: " + "; ".join(found)


@pytest.mark.parametrize("shape", [1, 7, 64, 200, signed(1), signed(13)], ids=str)
def test_reduce_xor_is_the_parity(shape):
    """``Value.xor()`` in the simulator, as the suite compiles it, is the parity of the bits (signed values as
    their two's complement); seed 5."""
    a, parity, m = Signal(shape), Signal(), Module()
    m.d.comb += parity.eq(a.xor())
    width = len(a)
    rng = random.Random(5)
    values = [0, (1 << width) - 1] + [rng.getrandbits(width) for _ in range(50)]

    async def bench(ctx):
        for value in values:
            ctx.set(a, value - (1 << width) if a.shape().signed and value >> (width - 1) else value)
            assert ctx.get(parity) == value.bit_count() % 2, f"{value:#x}"

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
