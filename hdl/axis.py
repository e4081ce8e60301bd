"""AXI4-Stream wrapper of the APBBF core, for Verilog, Vivado and Quartus designs.

The wrapper's ports are plain signals whose names, once exported (:func:`apbbf.export.export_verilog`), follow
AXI4-Stream naming, so that cocotbext-axi's ``AxiStreamBus.from_prefix(dut, "s_axis_cmd")`` and vendor tools'
interface inference bind to them:

=====================  =====  ==========================  =====================================================
Port                   Dir    Width                       Meaning
=====================  =====  ==========================  =====================================================
``aclk``               in     1                           Clock; everything is synchronous to its rising edge.
``aresetn``            in     1                           Synchronous reset, active low. While low, both
                                                          ``tready``/``tvalid`` outputs are low; after it the
                                                          core clears its memory (``segment_blocks`` cycles,
                                                          ``s_axis_cmd_tready`` low) and the filter is empty.
``s_axis_cmd_tvalid``  in     1                           Command stream.
``s_axis_cmd_tready``  out    1
``s_axis_cmd_tdata``   in     :func:`cmd_tdata_width`     ``op`` in ``[1:0]``, key in ``[8 +: key_width]``.
``m_axis_rsp_tvalid``  out    1                           Response stream, one response per command, in order.
``m_axis_rsp_tready``  in     1
``m_axis_rsp_tdata``   out    8                           ``op`` in ``[1:0]``, ``hit`` in ``[2]``.
``inserts``            out    32                          Inserts since reset (wraps).
``shifts``             out    32                          Shifts (generations) since reset (wraps).
=====================  =====  ==========================  =====================================================

Bit layouts (AXI4-Stream ``tdata`` is a whole number of bytes):

- command ``tdata``, ``8 + 8·⌈key_width/8⌉`` bits: byte 0 holds the op (``[1:0]``: 0 QUERY, 1 INSERT,
  2 TEST_AND_INSERT; 3 is reserved and must not be sent; ``[7:2]`` are ignored), bytes 1.. hold the key, least
  significant byte first (``[8 +: key_width]``; padding bits above the key are ignored).
- response ``tdata``, 8 bits: ``[1:0]`` the op of the command answered, ``[2]`` hit (always 0 for INSERT),
  ``[7:3]`` zero.

The pure-Python helpers :func:`pack_command` and :func:`unpack_response` implement the same layouts for test
benches and host software.
"""

from __future__ import annotations

from amaranth import ClockDomain, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..model.config import Config, check_config, check_key_width
from .core import APBBF

__all__ = ["AXIStreamAPBBF", "cmd_tdata_width", "RSP_TDATA_WIDTH", "KEY_OFFSET", "HIT_BIT",
           "pack_command", "unpack_response"]

#: Bit of the command ``tdata`` where the key starts (byte 1).
KEY_OFFSET = 8
#: Width of the response ``tdata``.
RSP_TDATA_WIDTH = 8
#: Bit of the response ``tdata`` that holds hit.
HIT_BIT = 2


def cmd_tdata_width(key_width: int) -> int:
    """Width of the command ``tdata``: one op byte plus the key rounded up to whole bytes.

    Parameters
    ----------
    key_width : int
        Key width in bits, 8..512 (as :class:`~apbbf.model.config.Config`).

    Returns
    -------
    int
        ``8 + 8·⌈key_width/8⌉``.

    Raises
    ------
    TypeError
        If ``key_width`` is not an integer.
    ValueError
        If ``key_width`` is out of range.
    """
    check_key_width(key_width)
    return KEY_OFFSET + 8 * ((key_width + 7) // 8)


def pack_command(op, key: int, key_width: int) -> int:
    """The command ``tdata`` for ``(op, key)``.

    Parameters
    ----------
    op : Op, apbbf.model.Op or int
        QUERY (0), INSERT (1) or TEST_AND_INSERT (2).
    key : int
        The key, ``0 <= key < 2**key_width``.
    key_width : int

    Raises
    ------
    TypeError
        If ``key`` or ``key_width`` is not an integer.
    ValueError
        If ``op`` is not one of the three ops or ``key`` does not fit.
    """
    check_key_width(key_width)
    if isinstance(key, bool) or not isinstance(key, int):
        raise TypeError(f"key must be an integer, not {key!r}")
    if not 0 <= key < 1 << key_width:
        raise ValueError(f"key must be from 0 to 2**{key_width}-1, not {key:#x}")
    value = getattr(op, "value", op)
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1, 2):
        raise ValueError(f"op must be QUERY (0), INSERT (1) or TEST_AND_INSERT (2), not {op!r}")
    return value | key << KEY_OFFSET


def unpack_response(tdata: int) -> tuple[int, bool]:
    """``(op, hit)`` from a response ``tdata``.

    Raises
    ------
    TypeError
        If ``tdata`` is not an integer.
    ValueError
        If ``tdata`` does not fit in 8 bits or its reserved bits ``[7:3]`` are not zero.
    """
    if isinstance(tdata, bool) or not isinstance(tdata, int):
        raise TypeError(f"tdata must be an integer, not {tdata!r}")
    if not 0 <= tdata < 1 << RSP_TDATA_WIDTH or tdata >> (HIT_BIT + 1):
        raise ValueError(f"response tdata {tdata:#04x} has bits set outside [2:0]")
    return tdata & 3, bool(tdata >> HIT_BIT & 1)


class AXIStreamAPBBF(wiring.Component):
    """The :class:`~apbbf.hdl.core.APBBF` core behind AXI4-Stream ports named as Verilog designs expect.

    The wrapper defines its own ``sync`` clock domain, clocked by ``aclk`` and reset (synchronously) by
    ``~aresetn``, so the exported module has no ``clk``/``rst`` ports of Amaranth's: every port is one of the
    signature members below, exported under exactly its name. ``s_axis_cmd_tready`` and ``m_axis_rsp_tvalid``
    are gated by ``aresetn`` so that no transfer happens while the reset is asserted (AXI4-Stream requires
    ``TVALID`` low during reset); commands in flight at a reset are dropped without a response.

    Latency and throughput are the core's (:mod:`apbbf.sim.cycles`): the wrapper adds no registers.

    Parameters
    ----------
    config : Config
    scan : {"fsm", "parallel"}
        The core's scan (:class:`~apbbf.hdl.core.APBBF`).

    Attributes
    ----------
    aclk, aresetn : In(1)
    s_axis_cmd_tvalid : In(1)
    s_axis_cmd_tready : Out(1)
    s_axis_cmd_tdata : In(cmd_tdata_width(config.key_width))
    m_axis_rsp_tvalid : Out(1)
    m_axis_rsp_tready : In(1)
    m_axis_rsp_tdata : Out(8)
    inserts, shifts : Out(32)

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If the core cannot be built for ``config`` (see :class:`~apbbf.hdl.core.APBBF`).
    """

    def __init__(self, config: Config, *, scan: str = "fsm"):
        check_config(config)
        self._core = APBBF(config, scan=scan)  # checks the memory size and scan now, not at elaboration
        self._config = config
        super().__init__({
            "aclk": In(1),
            "aresetn": In(1),
            "s_axis_cmd_tvalid": In(1),
            "s_axis_cmd_tready": Out(1),
            "s_axis_cmd_tdata": In(cmd_tdata_width(config.key_width)),
            "m_axis_rsp_tvalid": Out(1),
            "m_axis_rsp_tready": In(1),
            "m_axis_rsp_tdata": Out(RSP_TDATA_WIDTH),
            "inserts": Out(32),
            "shifts": Out(32),
        })

    @property
    def config(self) -> Config:
        """The filter's Config."""
        return self._config

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync", local=True)
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]

        m.submodules.core = core = self._core
        key_width = self._config.key_width
        m.d.comb += [
            core.cmd.valid.eq(self.s_axis_cmd_tvalid & self.aresetn),
            core.cmd.payload.op.eq(self.s_axis_cmd_tdata[:2]),
            core.cmd.payload.key.eq(self.s_axis_cmd_tdata[KEY_OFFSET:KEY_OFFSET + key_width]),
            self.s_axis_cmd_tready.eq(core.cmd.ready & self.aresetn),

            self.m_axis_rsp_tvalid.eq(core.rsp.valid & self.aresetn),
            core.rsp.ready.eq(self.m_axis_rsp_tready & self.aresetn),
            self.m_axis_rsp_tdata[:2].eq(core.rsp.payload.op),
            self.m_axis_rsp_tdata[HIT_BIT].eq(core.rsp.payload.hit),

            self.inserts.eq(core.inserts),
            self.shifts.eq(core.shifts),
        ]
        return m
