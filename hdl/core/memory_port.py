"""The memory port of a filter whose segments are in an external memory (DRAM): requests and answers of variable
latency, in order."""

from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config, check_integer
from .types import ConfigSignature

__all__ = ["DEPTHS", "check_depth", "address_width", "request_layout", "read_layout", "MemoryPortSignature"]

#: Commands a memory-port scan keeps in flight at most (its ``depth``): from the first read of a command to the
#: last write of it that the memory acknowledged.
DEPTHS = range(1, 65)


def check_depth(depth) -> int:
    """``depth`` if it is an integer in :data:`DEPTHS` (1..64).

    Raises
    ------
    TypeError
        If ``depth`` is not an integer.
    ValueError
        If it is out of range.
    """
    return check_integer("depth", depth, DEPTHS)


def _row_config(config: Config) -> Config:
    check_config(config)
    if not config.row_layout:
        raise ValueError("a memory port needs a Config with a row layout (row_bits > 0), not row_bits=0")
    return config


def address_width(config: Config) -> int:
    """Bits of a block word's address in the memory, enough for :attr:`~apbbf.model.Config.memory_blocks`.

    Raises
    ------
    ValueError
        If the Config has no row layout.
    """
    return max(1, (_row_config(config).memory_blocks - 1).bit_length())


def request_layout(config: Config) -> data.StructLayout:
    """A memory request: ``write`` (1: store ``data`` at ``addr``; 0: read the word at ``addr``), ``addr`` (a
    block word, :meth:`~apbbf.model.Config.memory_block`) and ``data`` (B bits, a write's only)."""
    return data.StructLayout({"write": 1, "addr": address_width(config), "data": _row_config(config).block_bits})


def read_layout(config: Config) -> data.StructLayout:
    """A read's answer: ``data``, the B-bit block word."""
    return data.StructLayout({"data": _row_config(config).block_bits})


class MemoryPortSignature(ConfigSignature):
    """A memory port of variable latency, from the requester's side (a scan takes ``Out(MemoryPortSignature)``).

    - ``req`` (out, a stream of :func:`request_layout`): reads and writes of one block word each, in the order
      the requester means them. The memory takes one when ``req.ready`` is high; a requester holds ``valid`` and
      the payload until then.
    - ``rsp`` (in, a stream of :func:`read_layout`): one answer per read, in the order of the reads, whenever the
      memory has it. (:class:`~apbbf.hdl.core.scan_memory.MemoryScan` leaves at most its ``answer_depth`` reads
      unanswered and has room for all of their answers, so its ``rsp.ready`` stays high: a memory that holds
      only a few answers before it stops taking requests cannot stall it.)
    - ``written`` (in, 1 bit): high for one cycle per write, in the order of the writes, once the write has landed:
      every read the memory takes from the next cycle on returns it. Before that a read may return the word as it
      was (AXI4 allows exactly this between its read and write channels). A memory that keeps the order of its
      requests, reads and writes together (LiteDRAM's native port to one bank), may raise it in the cycle it
      takes the write.

    Parameters
    ----------
    config : Config
        With a row layout (``row_bits > 0``).

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no row layout.
    """

    @staticmethod
    def members_of(config: Config) -> dict:
        return {
            "req": Out(stream.Signature(request_layout(config))),
            "rsp": In(stream.Signature(read_layout(config))),
            "written": In(1),
        }
