# amaranth: UnusedElaboratable=no
"""One definition of the ops: the gateware's Op is the model's, member for member."""

from amaranth import Shape

from apbbf.hdl.core.types import Op as HdlOp, command_layout, response_layout
from apbbf.model import Op as ModelOp


def test_ops_do_not_drift():
    assert [(op.name, op.value) for op in HdlOp] == [(op.name, op.value) for op in ModelOp]
    assert Shape.cast(HdlOp) == Shape(2, signed=False)        # 3 is reserved


def test_layouts():
    layout = command_layout(100)
    assert (layout["op"].offset, layout["key"].offset, layout.size) == (0, 2, 102)
    assert layout["op"].shape is HdlOp
    layout = response_layout()
    assert (layout["op"].offset, layout["hit"].offset, layout.size) == (0, 2, 3)
