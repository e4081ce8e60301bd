"""Amaranth 0.5 gateware: the APBBF core (:class:`APBBF`), its hash unit and its stream payload shapes."""

from .core import APBBF, MAX_MEMORY_BITS
from .hash import HashUnit
from .types import Op, command_layout, response_layout

__all__ = ["APBBF", "HashUnit", "Op", "command_layout", "response_layout", "MAX_MEMORY_BITS"]
