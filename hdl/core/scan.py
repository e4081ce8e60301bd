"""What a scan is connected to: the signature shared by :class:`~apbbf.hdl.core.scan_fsm.FSMScan` and
:class:`~apbbf.hdl.core.scan_parallel.ParallelScan`.

A scan takes the core's commands, drives the hash unit, reads and writes the segments, tells the circular
buffer when an insert happens, and answers every command in order.
"""

from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config
from .buffer import buffer_signature
from .hash import hash_signature
from .segments import segment_access_signature
from .types import command_layout, response_layout

__all__ = ["scan_signature"]


def scan_signature(config: Config) -> wiring.Signature:
    """A scan's ports: ``cmd`` in, ``rsp`` out, and the hash unit's, the segments' and the circular buffer's
    ports from the driving side (connect them with :func:`amaranth.lib.wiring.connect`)."""
    return wiring.Signature({
        "cmd": In(stream.Signature(command_layout(config.key_width, config.time_width if config.timed else 0))),
        "rsp": Out(stream.Signature(response_layout())),
        "hash": Out(hash_signature(config).flip()),
        "segments": Out(segment_access_signature(config)),
        "buffer": Out(buffer_signature(config).flip()),
    })
