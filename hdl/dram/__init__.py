"""The filter's memory port on a board's DRAM: LiteDRAM's native port (:mod:`.native`) and the controller's
start-up without a CPU (:mod:`.initializer`) with the DDR3's read leveling (:mod:`.leveling`)."""

from .initializer import LiteDRAMInitializer
from .leveling import ReadLeveler
from .litedram import LiteDRAMDDR3Memory, LiteDRAMMemory
from .native import NativePortAdapter, NativePortSignature

__all__ = ["LiteDRAMInitializer", "LiteDRAMMemory", "LiteDRAMDDR3Memory", "NativePortAdapter", "NativePortSignature",
           "ReadLeveler"]
