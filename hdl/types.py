"""Shapes shared by the core, its wrappers and the board tops."""

from amaranth.lib import data, enum

__all__ = ["Op", "command_layout", "response_layout"]


class Op(enum.Enum, shape=2):
    """What a command asks of the filter."""
    QUERY = 0            #: is the key present? (no change)
    INSERT = 1           #: add the key (the response's hit is 0)
    TEST_AND_INSERT = 2  #: was the key present? then add it (paper 003's test-and-set)


def command_layout(key_width: int) -> data.StructLayout:
    """Payload of the command stream: ``{op, key}``, op in the low 2 bits."""
    return data.StructLayout({"op": Op, "key": key_width})


def response_layout() -> data.StructLayout:
    """Payload of the response stream: ``{op, hit}``, op in the low 2 bits, hit in bit 2."""
    return data.StructLayout({"op": Op, "hit": 1})
