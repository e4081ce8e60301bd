"""What a scan is connected to: the signature shared by :class:`~apbbf.hdl.core.scan_fsm.FSMScan` and
:class:`~apbbf.hdl.core.scan_parallel.ParallelScan`.

A scan takes the core's commands, drives the hash unit, reads and writes the segments, tells the circular
buffer when an insert happens, and answers every command in order.
"""

from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from ...model.config import Config
from .buffer import BufferSignature
from .hash import HashSignature
from .segments import SegmentAccessSignature
from .types import ConfigSignature, command_layout, response_layout

__all__ = ["ScanSignature", "scan_signature"]


class ScanSignature(ConfigSignature):
    """A scan's ports: ``cmd`` in, ``rsp`` out, and the hash unit's, the segments' and the circular buffer's
    ports from the driving side (connect them with :func:`amaranth.lib.wiring.connect`)."""

    @staticmethod
    def members_of(config: Config) -> dict:
        return {
            "cmd": In(stream.Signature(command_layout(config.key_width,
                                                      config.time_width if config.timed else 0))),
            "rsp": Out(stream.Signature(response_layout())),
            "hash": Out(HashSignature(config).flip()),
            "segments": Out(SegmentAccessSignature(config)),
            "buffer": Out(BufferSignature(config).flip()),
        }


#: The former name of :class:`ScanSignature`.
scan_signature = ScanSignature
