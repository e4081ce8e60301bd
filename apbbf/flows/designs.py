"""The designs measured besides the board tops, under their former host-side name: they are gateware, and live in
:mod:`apbbf.sim.designs`."""

from ..sim.designs import BlockRAMProbe, RegisteredCore, RegisteredDedup

__all__ = ["RegisteredCore", "BlockRAMProbe", "RegisteredDedup"]
