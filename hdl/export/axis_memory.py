# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""The filter with its segments in an external memory, for Verilog designs: the AXI4-Stream command and response
streams of :class:`~apbbf.hdl.export.axis.AXIStreamAPBBF` (the same ``tdata`` layouts) around
:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`, and its memory port as an AXI4 master
(:class:`~apbbf.hdl.export.axi_memory.AXI4MemoryAdapter`) for the user's memory controller.

The ports: ``aclk``, ``aresetn``, ``s_axis_cmd_*``, ``m_axis_rsp_*`` and the counters as
:class:`~apbbf.hdl.export.axis.AXIStreamAPBBF` has them; ``axi_read_errors`` and ``axi_write_errors`` (read bursts
and B responses with SLVERR or DECERR, wrapping); and ``m_axi_<signal>`` for every AXI4 signal of
:class:`~apbbf.hdl.export.axi_memory.AXI4Signature` (``m_axi_awaddr``, ``m_axi_wdata``, ``m_axi_rready``, ...),
as Xilinx IP and cocotbext-axi's ``AxiBus.from_prefix(dut, "m_axi")`` name them. The AXI ``VALID`` outputs and
``RREADY``/``BREADY`` are low while ``aresetn`` is low.
"""

from __future__ import annotations

from amaranth import ClockDomain, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from ...model.config import Config, check_integer
from ..core.memory_apbbf import MemoryAPBBF
from ..core.scan_memory import reads_unanswered
from .axi_memory import MAX_OUTSTANDING, AXI4MemoryAdapter, AXI4Signature
from .axis import CommandFormat, connect_core, stream_members

__all__ = ["AXIStreamMemoryAPBBF", "AXI_PREFIX", "axi_master", "axi_master_members", "connect_axi_master"]

#: Prefix of the AXI4 master's ports.
AXI_PREFIX = "m_axi_"


def axi_master(config: Config, *, depth: int = 8, axi_data_width: int = 64, axi_base: int = 0,
               axi_addr_width: int | None = None, max_outstanding: int | None = None) -> AXI4MemoryAdapter:
    """The AXI4 master of a memory scan of ``depth`` commands in flight (the options as
    :class:`AXIStreamMemoryAPBBF`'s), its parameters checked.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.export.axi_memory.AXI4MemoryAdapter`, or if ``max_outstanding`` is below
        :func:`~apbbf.hdl.core.scan_memory.reads_unanswered` (``min(depth, 2) * physical_segments``).
    """
    least = reads_unanswered(config, depth)
    if max_outstanding is None:
        max_outstanding = depth * config.physical_segments
    check_integer("max_outstanding", max_outstanding, MAX_OUTSTANDING)
    if max_outstanding < least:
        raise ValueError(f"max_outstanding must be at least the reads the memory scan leaves unanswered, "
                         f"min(depth, 2) * physical segments = {min(depth, 2)} * {config.physical_segments} = "
                         f"{least} (with fewer, a read waiting for room would hold up the writes that free it), "
                         f"not {max_outstanding}")
    return AXI4MemoryAdapter(config, data_width=axi_data_width, base=axi_base, addr_width=axi_addr_width,
                             max_outstanding=max_outstanding)


def axi_master_members(adapter: AXI4MemoryAdapter) -> dict:
    """The ports of ``adapter``'s AXI4 master as a top's members (``m_axi_<signal>``), and its error counters
    (``axi_read_errors``, ``axi_write_errors``)."""
    members = {"axi_read_errors": Out(32), "axi_write_errors": Out(32)}
    members.update({AXI_PREFIX + name: member
                    for name, member in adapter.signature.members["axi"].signature.members.items()})
    return members


def connect_axi_master(m: Module, top, adapter: AXI4MemoryAdapter) -> None:
    """Drive ``top``'s ``m_axi_*`` ports and error counters (:func:`axi_master_members`) from ``adapter``, the AXI
    ``VALID`` outputs and ``RREADY``/``BREADY`` low while ``top.aresetn`` is."""
    m.d.comb += [top.axi_read_errors.eq(adapter.read_errors), top.axi_write_errors.eq(adapter.write_errors)]
    gated = {"awvalid", "wvalid", "arvalid", "bready", "rready"}     # low during reset
    for name, member in adapter.signature.members["axi"].signature.members.items():
        port, inner = getattr(top, AXI_PREFIX + name), getattr(adapter.axi, name)
        if member.flow == Out:
            m.d.comb += port.eq(inner & top.aresetn if name in gated else inner)
        else:
            m.d.comb += inner.eq(port)


class AXIStreamMemoryAPBBF(wiring.Component):
    """:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF` behind AXI4-Stream command and response ports, its memory
    an AXI4 master (the module's documentation lists the ports).

    The wrapper defines its own ``sync`` domain clocked by ``aclk`` and reset by ``~aresetn``. The AXI4 slave must
    be reset with it (AXI4 resets both ends of an interface together): a response to a transaction issued before
    the reset would be taken for one issued after it.

    Parameters
    ----------
    config : Config
        With a row layout (``row_bits > 0``) and B >= 8.
    depth : int
        Commands in flight at most, 1..64 (:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`).
    axi_data_width : int
        AXI data bits, a power of two from 32 to 1024.
    axi_base : int
        Byte address of the filter's region (block word 0), a multiple of ``max(B, axi_data_width) / 8``.
    axi_addr_width : int or None
        AXI address bits, 12..64 (default: 32, or 64 if the region ends past 4 GiB).
    max_outstanding : int or None
        AXI reads and writes in flight at most, each, up to 4096 (the adapter queues that many answers); at least
        ``min(depth, 2) * physical_segments``, the reads the scan may leave unanswered (default ``depth *
        physical_segments``, so that as many writes as reads may be in flight).

    Attributes
    ----------
    aclk, aresetn, s_axis_cmd_*, m_axis_rsp_*, inserts, shifts, overflows, expired
        As :class:`~apbbf.hdl.export.axis.AXIStreamAPBBF`'s (``overflows``, ``expired`` with a span).
    axi_read_errors, axi_write_errors : Out(32)
        AXI read bursts and B responses with SLVERR or DECERR (wrap).
    m_axi_* : the members of AXI4Signature(axi_addr_width, axi_data_width)
        The AXI4 master.

    Raises
    ------
    TypeError
        If ``config`` is not a Config or an option not an integer.
    ValueError
        As :class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF` and
        :class:`~apbbf.hdl.export.axi_memory.AXI4MemoryAdapter`.
    """

    def __init__(self, config: Config, *, depth: int = 8, axi_data_width: int = 64, axi_base: int = 0,
                 axi_addr_width: int | None = None, max_outstanding: int | None = None):
        # both check their parameters now, not at elaboration
        self._core = MemoryAPBBF(config, depth=depth)
        self._adapter = axi_master(config, depth=depth, axi_data_width=axi_data_width, axi_base=axi_base,
                                   axi_addr_width=axi_addr_width, max_outstanding=max_outstanding)
        self._config, self._depth = config, depth
        self._format = CommandFormat(config)
        members = stream_members(config, self._format)
        members.update(axi_master_members(self._adapter))
        super().__init__(members)

    @property
    def config(self) -> Config:
        return self._config

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def adapter(self) -> AXI4MemoryAdapter:
        """The AXI4 master (its data width, base, address width and bounds)."""
        return self._adapter

    @property
    def axi_signature(self) -> AXI4Signature:
        return self._adapter.signature.members["axi"].signature

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync", local=True)
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]
        m.submodules.core = core = self._core
        m.submodules.axi = adapter = self._adapter
        connect_core(m, self, core, self._config)
        wiring.connect(m, core.memory, adapter.memory)
        connect_axi_master(m, self, adapter)
        return m
