"""The filter's memory port on a board's DRAM: LiteDRAM's native port (:mod:`.native`) and the controller's
start-up without a CPU (:mod:`.initializer`)."""

from .initializer import LiteDRAMInitializer
from .litedram import LiteDRAMDDR3Memory, LiteDRAMMemory
from .native import NativePortAdapter, NativePortSignature

__all__ = ["LiteDRAMInitializer", "LiteDRAMMemory", "LiteDRAMDDR3Memory", "NativePortAdapter", "NativePortSignature"]
