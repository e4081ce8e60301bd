# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""AXI4-Stream wrapper of the APBBF core, for Verilog, Vivado and Quartus designs.

The wrapper's ports are plain signals whose names, once exported (:func:`apbbf.hdl.export.verilog.generate_verilog`),
follow AXI4-Stream naming, so that cocotbext-axi's ``AxiStreamBus.from_prefix(dut, "s_axis_cmd")`` and vendor
tools' interface inference bind to them:

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
``s_axis_cmd_tdata``   in     :attr:`CommandFormat.width`  op, key (and time): :class:`CommandFormat`.
``m_axis_rsp_tvalid``  out    1                           Response stream, one response per command, in order.
``m_axis_rsp_tready``  in     1
``m_axis_rsp_tdata``   out    8                           op, hit, reserved-op flag: :class:`ResponseFormat`.
``inserts``            out    32                          Inserts since reset (wraps).
``shifts``             out    32                          Shifts (generations) since reset (wraps).
``overflows``          out    32                          (With a span.) Segments retired early (wraps).
``expired``            out    32                          (With a span.) Segments retired expired (wraps).
=====================  =====  ==========================  =====================================================

Bit layouts (AXI4-Stream ``tdata`` is a whole number of bytes):

- command ``tdata``: byte 0 holds the op (``[1:0]``: 0 QUERY, 1 INSERT, 2 TEST_AND_INSERT, 3 reserved;
  ``[7:2]`` are ignored); then the key, least significant byte first, in ``⌈key_width/8⌉`` bytes from bit 8;
  then, for a Config with a span, the time in ``⌈time_width/8⌉`` bytes. Padding bits are ignored.
- response ``tdata``, 8 bits: ``[1:0]`` the op of the command answered, ``[2]`` hit (always 0 for INSERT),
  ``[3]`` the command had the reserved op 3 and was not executed (its op reads 3, hit 0, the filter is
  unchanged), ``[7:4]`` zero.

:class:`CommandFormat` and :class:`ResponseFormat` implement the same layouts in Python for test benches and
host software.
"""

from __future__ import annotations

from amaranth import ClockDomain, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config
from ..core.apbbf import APBBF
from ..lib.devices import check_parity

__all__ = ["AXIStreamAPBBF", "CommandFormat", "ResponseFormat", "connect_core", "stream_members"]


def _bytes(bits: int) -> int:
    return (bits + 7) // 8


class CommandFormat:
    """The command ``tdata`` of a Config: the op in byte 0, the key from byte 1, the time after the key.

    Parameters
    ----------
    config : Config

    Attributes
    ----------
    key_offset : int
        Bit where the key starts (8).
    time_offset : int or None
        Bit where the time starts (``8 + 8·⌈key_width/8⌉``), None without a span.
    width : int
        Bits of ``tdata``, a whole number of bytes.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    """

    key_offset = 8

    def __init__(self, config: Config):
        self._config = check_config(config)
        self.time_offset = self.key_offset + 8 * _bytes(config.key_width) if config.timed else None
        self.width = self.key_offset + 8 * _bytes(config.key_width) + (8 * _bytes(config.time_width)
                                                                       if config.timed else 0)

    def pack(self, op, key: int, time: int | None = None) -> int:
        """The ``tdata`` of one command.

        Parameters
        ----------
        op : Op, apbbf.model.Op or int
            0..3 (3 is the reserved op, answered with a flag).
        key : int
            ``0 <= key < 2**key_width``.
        time : int, optional
            ``0 <= time < 2**time_width``; required with a span, refused without.

        Raises
        ------
        TypeError
            If ``key`` or ``time`` is not an integer.
        ValueError
            If ``op``, ``key`` or ``time`` is out of range, or ``time`` is missing or superfluous.
        """
        c = self._config
        if isinstance(key, bool) or not isinstance(key, int):
            raise TypeError(f"key must be an integer, not {key!r}")
        if not 0 <= key < 1 << c.key_width:
            raise ValueError(f"key must be from 0 to 2**{c.key_width}-1, not {key:#x}")
        value = getattr(op, "value", op)
        if isinstance(value, bool) or not isinstance(value, int) or value not in range(4):
            raise ValueError(f"op must be QUERY (0), INSERT (1), TEST_AND_INSERT (2) or the reserved 3, not {op!r}")
        tdata = value | key << self.key_offset
        if c.timed:
            if time is None:
                raise ValueError("a Config with a span needs a time for every command")
            if isinstance(time, bool) or not isinstance(time, int):
                raise TypeError(f"time must be an integer, not {time!r}")
            if not 0 <= time < 1 << c.time_width:
                raise ValueError(f"time must be from 0 to 2**{c.time_width}-1, not {time}")
            tdata |= time << self.time_offset
        elif time is not None:
            raise ValueError("a Config without a span takes no time")
        return tdata


class ResponseFormat:
    """The response ``tdata``: op in ``[1:0]``, hit in ``[2]``, the reserved-op flag in ``[3]``."""

    width = 8
    hit_bit = 2
    reserved_bit = 3

    @classmethod
    def unpack(cls, tdata: int) -> tuple[int, bool, bool]:
        """``(op, hit, reserved)`` of a response ``tdata``.

        Raises
        ------
        TypeError
            If ``tdata`` is not an integer.
        ValueError
            If ``tdata`` does not fit in 8 bits or its bits ``[7:4]`` are not zero.
        """
        if isinstance(tdata, bool) or not isinstance(tdata, int):
            raise TypeError(f"tdata must be an integer, not {tdata!r}")
        if not 0 <= tdata < 1 << cls.width or tdata >> (cls.reserved_bit + 1):
            raise ValueError(f"response tdata {tdata:#04x} has bits set outside [3:0]")
        return tdata & 3, bool(tdata >> cls.hit_bit & 1), bool(tdata >> cls.reserved_bit & 1)


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
    parity : bool
        Parity on every block word (:class:`~apbbf.hdl.core.APBBF`), and the ``parity_errors`` port.
    pace : {1, 2, 3}
        The parallel scan's cycles per command at most (:class:`~apbbf.hdl.core.APBBF`).

    Attributes
    ----------
    aclk, aresetn : In(1)
    s_axis_cmd_tvalid : In(1)
    s_axis_cmd_tready : Out(1)
    s_axis_cmd_tdata : In(CommandFormat(config).width)
    m_axis_rsp_tvalid : Out(1)
    m_axis_rsp_tready : In(1)
    m_axis_rsp_tdata : Out(8)
    inserts, shifts : Out(32)
    overflows, expired : Out(32)
        With a span only.
    parity_errors : Out(32)
        With ``parity`` only: block words read whose parity failed (wraps).

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``parity`` not a bool.
    ValueError
        If ``scan`` is unknown, or ``pace`` not 1, 2 or 3 (not 1 with the FSM scan).
    """

    def __init__(self, config: Config, *, scan: str = "fsm", parity: bool = False, pace: int = 1):
        check_config(config)
        check_parity(parity)
        # checks scan, parity and pace now, not at elaboration
        self._core = APBBF(config, scan=scan, parity=parity, pace=pace)
        self._parity = parity
        self._config = config
        self._format = CommandFormat(config)
        members = stream_members(config, self._format)
        if parity:
            members["parity_errors"] = Out(32)
        super().__init__(members)

    @property
    def config(self) -> Config:
        """The filter's Config."""
        return self._config

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync", local=True)
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]

        m.submodules.core = core = self._core
        connect_core(m, self, core, self._config)
        if self._parity:
            m.d.comb += self.parity_errors.eq(core.parity_errors)
        return m


def stream_members(config: Config, command_format: CommandFormat) -> dict:
    """The ports every AXI4-Stream top of a core has (the table above): the clock and reset, the command and response
    streams, and the counters (with ``overflows`` and ``expired`` for a Config with a span)."""
    members = {
        "aclk": In(1),
        "aresetn": In(1),
        "s_axis_cmd_tvalid": In(1),
        "s_axis_cmd_tready": Out(1),
        "s_axis_cmd_tdata": In(command_format.width),
        "m_axis_rsp_tvalid": Out(1),
        "m_axis_rsp_tready": In(1),
        "m_axis_rsp_tdata": Out(ResponseFormat.width),
        "inserts": Out(32),
        "shifts": Out(32),
    }
    if config.timed:
        members.update({"overflows": Out(32), "expired": Out(32)})
    return members


def connect_core(m, top, core, config: Config) -> None:
    """Wire the core ``core`` (``cmd``, ``rsp`` and the counters, as :class:`~apbbf.hdl.core.APBBF` has them) to the
    AXI4-Stream ports of ``top`` (``aresetn``, ``s_axis_cmd_*``, ``m_axis_rsp_*``, the counters): the layouts of
    :class:`CommandFormat` and :class:`ResponseFormat`, ``tready`` and ``tvalid`` low during reset. The same for
    every top that exports a core behind these streams."""
    c, fmt, tdata = config, CommandFormat(config), top.s_axis_cmd_tdata
    m.d.comb += [
        core.cmd.valid.eq(top.s_axis_cmd_tvalid & top.aresetn),
        core.cmd.payload.op.eq(tdata[:2]),
        core.cmd.payload.key.eq(tdata[fmt.key_offset:fmt.key_offset + c.key_width]),
        top.s_axis_cmd_tready.eq(core.cmd.ready & top.aresetn),

        top.m_axis_rsp_tvalid.eq(core.rsp.valid & top.aresetn),
        core.rsp.ready.eq(top.m_axis_rsp_tready & top.aresetn),
        top.m_axis_rsp_tdata[:2].eq(core.rsp.payload.op),
        top.m_axis_rsp_tdata[ResponseFormat.hit_bit].eq(core.rsp.payload.hit),
        top.m_axis_rsp_tdata[ResponseFormat.reserved_bit].eq(core.rsp.payload.op.as_value() == 3),

        top.inserts.eq(core.inserts),
        top.shifts.eq(core.shifts),
    ]
    if c.timed:
        m.d.comb += [core.cmd.payload.time.eq(tdata[fmt.time_offset:fmt.time_offset + c.time_width]),
                     top.overflows.eq(core.overflows), top.expired.eq(core.expired)]
