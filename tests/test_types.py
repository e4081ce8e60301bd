# amaranth: UnusedElaboratable=no
"""One definition of the ops: the gateware's Op is the model's, member for member; the payload layouts; the
core's signatures as classes that carry their parameters."""

import pytest
from amaranth import Shape

from apbbf.hdl.core.buffer import BufferSignature, CircularBuffer, buffer_signature
from apbbf.hdl.lib.ecp5_ram import BlockRAMSignature, ECP5BlockRAM, block_ram_signature
from apbbf.hdl.core.hash import HashSignature, HashUnit, hash_signature
from apbbf.hdl.core.scan import ScanSignature, scan_signature
from apbbf.hdl.core.segments import SegmentAccessSignature, Segments, segment_access_signature
from apbbf.hdl.lib.block_ram import InferredBlockRAM
from apbbf.hdl.core.types import Op as HdlOp, command_layout, response_layout
from apbbf.model import Config, Op as ModelOp


def test_ops_do_not_drift():
    assert [(op.name, op.value) for op in HdlOp] == [(op.name, op.value) for op in ModelOp]
    assert Shape.cast(HdlOp) == Shape(2, signed=False)        # 3 is reserved


def test_layouts():
    layout = command_layout(100)
    assert (layout["op"].offset, layout["key"].offset, layout.size) == (0, 2, 102)
    assert layout["op"].shape is HdlOp
    layout = response_layout()
    assert (layout["op"].offset, layout["hit"].offset, layout.size) == (0, 2, 3)


SIGNATURES = [
    (HashSignature, hash_signature, HashUnit, None), (BufferSignature, buffer_signature, CircularBuffer, None),
    (SegmentAccessSignature, segment_access_signature, Segments, "access"), (ScanSignature, scan_signature, None, None),
]


@pytest.mark.parametrize("cls,former,component,member", SIGNATURES, ids=[row[0].__name__ for row in SIGNATURES])
def test_config_signatures(cls, former, component, member):
    """Each signature that follows from a Config is a class carrying it (``config``), equal to another of its
    class with an equal Config only; its former function name is the class itself; the component built on it
    has it."""
    config, other = Config(2, 3, segment_blocks=4), Config(2, 3, segment_blocks=8)
    signature = cls(config)
    assert former is cls and signature.config is config and repr(signature) == f"{cls.__name__}({config!r})"
    assert signature == cls(Config(2, 3, segment_blocks=4)) and signature != cls(other)
    assert signature.flip() == cls(config).flip() and signature.flip() != signature
    assert all(signature != row[0](config) for row in SIGNATURES if row[0] is not cls)
    if component is not None:
        built = component(config)
        # the segments take the scan's side of theirs flipped (In)
        assert (built.signature.members[member].signature.flip() if member else built.signature) == signature
    with pytest.raises(TypeError, match="config"):
        cls("k=2")


def test_block_ram_signature():
    signature = BlockRAMSignature(512, 64, parity=True)
    assert block_ram_signature is BlockRAMSignature
    assert (signature.depth, signature.width, signature.parity) == (512, 64, True)
    assert signature == BlockRAMSignature(512, 64, True) != BlockRAMSignature(512, 64)
    assert "read_parity" in signature.members and "read_parity" not in BlockRAMSignature(512, 64).members
    assert InferredBlockRAM(512, 64, parity=True).signature == signature == ECP5BlockRAM(512, 64, parity=True).signature
