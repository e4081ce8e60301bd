"""Shapes shared by the core, its wrappers and the board tops."""

import types

from amaranth.lib import data, enum, wiring

from ...model.config import Config, check_config
from ...model.filters import Op as _ModelOp

__all__ = ["Op", "command_layout", "response_layout", "inserts", "asks", "ConfigSignature"]


def _members(namespace):
    for member in _ModelOp:
        namespace[member.name] = member.value
    namespace["__module__"] = __name__
    namespace["__doc__"] = ("What a command asks of the filter: :class:`apbbf.model.Op` (the one definition of "
                            "the ops) as a 2-bit Amaranth enum; 3 is reserved.")


#: :class:`apbbf.model.Op`'s members, names and values, as a 2-bit :class:`amaranth.lib.enum.Enum` (built from the
#: model's enum, so the two cannot drift).
Op = types.new_class("Op", (enum.Enum,), {"shape": 2}, _members)


def command_layout(key_width: int, time_width: int = 0) -> data.StructLayout:
    """Payload of the command stream: ``{op, key}``, op in the low 2 bits; with a ``time_width`` (a
    time-bounded window), ``{op, key, time}``."""
    fields = {"op": Op, "key": key_width}
    if time_width:
        fields["time"] = time_width
    return data.StructLayout(fields)


def response_layout() -> data.StructLayout:
    """Payload of the response stream: ``{op, hit}``, op in the low 2 bits, hit in bit 2."""
    return data.StructLayout({"op": Op, "hit": 1})


def inserts(op):
    """Whether a command with ``op`` (an :data:`Op` value) inserts: INSERT or TEST_AND_INSERT (not QUERY, nor
    the reserved op 3, which the core answers without executing)."""
    return (op == Op.INSERT) | (op == Op.TEST_AND_INSERT)


def asks(op):
    """Whether a command with ``op`` is answered from the filter: QUERY or TEST_AND_INSERT."""
    return (op == Op.QUERY) | (op == Op.TEST_AND_INSERT)


class ConfigSignature(wiring.Signature):
    """A signature whose members follow from a :class:`~apbbf.model.Config`: the base of the core's signatures
    that carry it (:class:`~apbbf.hdl.core.hash.HashSignature`, :class:`~apbbf.hdl.core.buffer.BufferSignature`,
    :class:`~apbbf.hdl.core.segments.SegmentAccessSignature`, :class:`~apbbf.hdl.core.scan.ScanSignature`), as
    amaranth-soc's ``csr.Signature`` carries its widths. A subclass says what its members are
    (:meth:`members_of`). Two are equal when they are of the same class and their configs are equal.

    Parameters
    ----------
    config : Config

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    """

    def __init__(self, config: Config):
        check_config(config)
        self._config = config
        super().__init__(self.members_of(config))

    @staticmethod
    def members_of(config: Config) -> dict:
        """The members for ``config``, as :class:`amaranth.lib.wiring.Signature` takes them."""
        raise NotImplementedError

    @property
    def config(self) -> Config:
        """The Config the members follow from."""
        return self._config

    def __eq__(self, other):
        return type(other) is type(self) and other.config == self._config

    def __repr__(self):
        return f"{type(self).__name__}({self._config!r})"
