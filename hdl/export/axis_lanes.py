# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""AXI4-Stream wrapper of the lanes filter (:class:`~apbbf.hdl.core.lanes.Lanes`): several commands per beat.

A beat carries ``slots`` commands, each in its own byte-aligned field of the core's command format
(:class:`~apbbf.hdl.export.axis.CommandFormat`); ``tkeep`` says which slots hold a command, as AXI4-Stream
says which bytes hold data: a slot is valid iff the ``tkeep`` bit of its first byte is set (the other bytes of
the slot are ignored; a sender sets all of a slot's bits or none). The response beat answers the command beat,
slot for slot: one byte per slot in :class:`~apbbf.hdl.export.axis.ResponseFormat`, with ``tkeep`` set on the
bytes of the slots that held a command; the byte of a slot without one is zero. Command order is beat order, then
slot 0 (the least significant) first.

After a reset ``s_axis_cmd_tready`` is high from the first clock edge, unlike the single core's wrapper (which holds it
low while the core clears its memories): the beats queue in the lanes' queues (up to their room) while the cores
clear, and are answered in order once they are done.

=====================  =====  ==========================  =====================================================
Port                   Dir    Width                       Meaning
=====================  =====  ==========================  =====================================================
``aclk``, ``aresetn``  in     1                           As :class:`~apbbf.hdl.export.axis.AXIStreamAPBBF`.
``s_axis_cmd_t*``      in     ``slots`` commands          ``tvalid``/``tready``/``tdata``/``tkeep``.
``m_axis_rsp_t*``      out    ``slots`` bytes             ``tvalid``/``tready``/``tdata``/``tkeep``.
``inserts``, ...       out    ``32 * lanes``              Each lane's counter, lane 0 in the low 32 bits.
=====================  =====  ==========================  =====================================================

:class:`LanesCommandFormat` packs and :class:`LanesResponseFormat` unpacks the beats in Python.
"""

from __future__ import annotations

from amaranth import ClockDomain, Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config
from ..core.lanes import Lanes
from .axis import CommandFormat, ResponseFormat

__all__ = ["LanesCommandFormat", "LanesResponseFormat", "AXIStreamLanes"]


class LanesCommandFormat:
    """The command beat of ``slots`` slots: slot s is :class:`~apbbf.hdl.export.axis.CommandFormat` at byte
    ``s * slot_bytes``.

    Parameters
    ----------
    config : Config
    slots : int
        Slots per beat, >= 1.
    """

    def __init__(self, config: Config, slots: int):
        self.slot = CommandFormat(config)
        self.slots = slots

    @property
    def slot_bytes(self) -> int:
        """Bytes of one slot."""
        return self.slot.width // 8

    @property
    def width(self) -> int:
        """``tdata`` bits."""
        return self.slot.width * self.slots

    @property
    def keep_width(self) -> int:
        """``tkeep`` bits (one per byte)."""
        return self.width // 8

    def pack(self, beat) -> tuple[int, int]:
        """``(tdata, tkeep)`` of ``beat``: a sequence of ``slots`` entries, each ``None`` (no command) or
        ``(op, key)`` / ``(op, key, time)`` as :meth:`CommandFormat.pack` takes them."""
        if len(beat) != self.slots:
            raise ValueError(f"a beat has {self.slots} slots, not {len(beat)}")
        tdata = tkeep = 0
        ones = (1 << self.slot_bytes) - 1
        for s, command in enumerate(beat):
            if command is None:
                continue
            tdata |= self.slot.pack(*command) << (s * self.slot.width)
            tkeep |= ones << (s * self.slot_bytes)
        return tdata, tkeep


class LanesResponseFormat:
    """The response beat: one :class:`~apbbf.hdl.export.axis.ResponseFormat` byte per slot."""

    def __init__(self, slots: int):
        self.slots = slots

    @property
    def width(self) -> int:
        return 8 * self.slots

    def unpack(self, tdata: int, tkeep: int) -> list:
        """Per slot: ``None`` (no command in the slot) or ``(op, hit, reserved)``."""
        return [ResponseFormat.unpack(tdata >> (8 * s) & 0xFF) if tkeep >> s & 1 else None
                for s in range(self.slots)]


class AXIStreamLanes(wiring.Component):
    """The :class:`~apbbf.hdl.core.lanes.Lanes` filter behind AXI4-Stream ports (module documentation).

    Like :class:`~apbbf.hdl.export.axis.AXIStreamAPBBF`, the wrapper defines its ``sync`` domain from ``aclk``
    and ``~aresetn`` and gates ``s_axis_cmd_tready`` and ``m_axis_rsp_tvalid`` with ``aresetn``; beats in flight
    at a reset are dropped without a response. ``s_axis_cmd_tready`` is high from the first edge after a reset
    (the beats queue while the cores clear). A response slot without a command reads zero. It adds no
    registers.

    Parameters
    ----------
    config : Config
    lanes : int
        One of :data:`apbbf.model.lanes.LANES`.
    slots : int, optional
        Commands per beat (``lanes`` by default); see :class:`~apbbf.hdl.core.lanes.Lanes`.
    scan, fifo_depth, reorder_depth
        As :class:`~apbbf.hdl.core.lanes.Lanes`.

    Attributes
    ----------
    aclk, aresetn : In(1)
    s_axis_cmd_tvalid, s_axis_cmd_tready, s_axis_cmd_tdata, s_axis_cmd_tkeep
        The command beats (:class:`LanesCommandFormat`).
    m_axis_rsp_tvalid, m_axis_rsp_tready, m_axis_rsp_tdata, m_axis_rsp_tkeep
        The response beats (:class:`LanesResponseFormat`).
    inserts, shifts : Out(32 * lanes)
    overflows, expired : Out(32 * lanes)
        With a span only.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.core.lanes.Lanes`.
    """

    def __init__(self, config: Config, lanes: int, *, slots: int | None = None, scan: str = "parallel",
                 fifo_depth: int = 16, reorder_depth: int = 32):
        self._core = Lanes(config, lanes, slots=slots, scan=scan, fifo_depth=fifo_depth,
                           reorder_depth=reorder_depth)                  # checks every parameter now
        self._config, self._lanes = config, lanes
        self._format = LanesCommandFormat(config, self._core.slots)
        self._responses = LanesResponseFormat(self._core.slots)
        counters = ["inserts", "shifts"] + (["overflows", "expired"] if config.timed else [])
        super().__init__({
            "aclk": In(1),
            "aresetn": In(1),
            "s_axis_cmd_tvalid": In(1),
            "s_axis_cmd_tready": Out(1),
            "s_axis_cmd_tdata": In(self._format.width),
            "s_axis_cmd_tkeep": In(self._format.keep_width),
            "m_axis_rsp_tvalid": Out(1),
            "m_axis_rsp_tready": In(1),
            "m_axis_rsp_tdata": Out(self._responses.width),
            "m_axis_rsp_tkeep": Out(self._core.slots),
            **{name: Out(32 * lanes) for name in counters},
        })

    @property
    def config(self) -> Config:
        return self._config

    @property
    def lanes(self) -> int:
        return self._lanes

    @property
    def core(self) -> Lanes:
        """The wrapped lanes filter."""
        return self._core

    @property
    def command_format(self) -> LanesCommandFormat:
        return self._format

    def elaborate(self, platform):
        # Only renaming and slicing: each slot's fields at their CommandFormat offsets, its valid bit from the
        # tkeep bit of its first byte, and the response slots' valid bits back out as tkeep; an empty response
        # slot's byte is zeroed (the core leaves whatever its last answer there was).
        m = Module()
        m.domains.sync = sync = ClockDomain("sync", local=True)
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]
        m.submodules.lanes = core = self._core
        c, fmt = self._config, self._format
        slot = fmt.slot
        for s in range(core.slots):
            tdata = self.s_axis_cmd_tdata[s * slot.width:(s + 1) * slot.width]
            command = core.cmd.payload[s]
            response = core.rsp.payload[s]
            m.d.comb += [
                command.valid.eq(self.s_axis_cmd_tkeep[s * fmt.slot_bytes]),
                command.op.eq(tdata[:2]),
                command.key.eq(tdata[slot.key_offset:slot.key_offset + c.key_width]),
                self.m_axis_rsp_tkeep[s].eq(response.valid),
                self.m_axis_rsp_tdata[8 * s:8 * s + 2].eq(Mux(response.valid, response.op, 0)),
                self.m_axis_rsp_tdata[8 * s + ResponseFormat.hit_bit].eq(response.valid & response.hit),
                self.m_axis_rsp_tdata[8 * s + ResponseFormat.reserved_bit].eq(
                    response.valid & (response.op.as_value() == 3)),
            ]
            if c.timed:
                m.d.comb += command.time.eq(tdata[slot.time_offset:slot.time_offset + c.time_width])
        m.d.comb += [
            core.cmd.valid.eq(self.s_axis_cmd_tvalid & self.aresetn),
            self.s_axis_cmd_tready.eq(core.cmd.ready & self.aresetn),
            self.m_axis_rsp_tvalid.eq(core.rsp.valid & self.aresetn),
            core.rsp.ready.eq(self.m_axis_rsp_tready & self.aresetn),
        ]
        for name in ["inserts", "shifts"] + (["overflows", "expired"] if c.timed else []):
            port = getattr(self, name)
            for lane in range(self._lanes):
                m.d.comb += port[32 * lane:32 * (lane + 1)].eq(getattr(core, name)[lane])
        return m
