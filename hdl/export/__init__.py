"""What a Verilog user gets: the AXI4-Stream wrappers of the core (:class:`AXIStreamAPBBF`), of the lanes filter
(:class:`AXIStreamLanes`) and of the packet de-duplicator (:class:`AXIStreamPacketDedup`), and their conversion to
one Verilog file (:mod:`.verilog`)."""

from .axis import AXIStreamAPBBF
from .axis_dedup import AXIStreamPacketDedup
from .axis_lanes import AXIStreamLanes

__all__ = ["AXIStreamAPBBF", "AXIStreamLanes", "AXIStreamPacketDedup"]
