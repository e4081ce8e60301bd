# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""AXI4-Stream wrapper of the packet de-duplicator, for Verilog, Vivado and Quartus designs.

The ports are plain signals named as AXI4-Stream has them, so that cocotbext-axi's
``AxiStreamBus.from_prefix(dut, "s_axis")`` and vendor tools' interface inference bind to them:

======================  =====  ===================  ===========================================================
Port                    Dir    Width                Meaning
======================  =====  ===================  ===========================================================
``aclk``                in     1                    Clock.
``aresetn``             in     1                    Synchronous reset, active low: frames held in the packet
                                                    buffer are lost, the filter is emptied and clears its
                                                    memory (frames arriving meanwhile pass unchecked).
``s_axis_tvalid``       in     1                    Frames in.
``s_axis_tready``       out    1                    Low only while the packet buffer is full (the consumer
                                                    holds ``m_axis_tready`` low) or during reset.
``s_axis_tdata``        in     W                    Byte i in bits 8i+7..8i.
``s_axis_tkeep``        in     W/8                  Bytes present, packed from lane 0 (only the last beat may
                                                    be partial).
``s_axis_tlast``        in     1                    Last beat of a frame.
``s_axis_tuser``        in     1 (+ time_width)     ``[0]`` (last beat): the MAC marks the frame bad;
                                                    ``[time_width:1]`` (first beat, with
                                                    ``timestamps="tuser"``): the frame's time in ticks.
``m_axis_tvalid``       out    1                    Frames out, in order.
``m_axis_tready``       in     1
``m_axis_tdata``        out    W
``m_axis_tkeep``        out    W/8
``m_axis_tlast``        out    1
``m_axis_tuser``        out    3                    On the last beat (0 elsewhere): ``[0]`` duplicate (the mark
                                                    with ``action="mark"``), ``[1]`` unchecked, ``[2]`` errored.
``frames``              out    32                   Frames out or dropped (wrap), as
``duplicates``          out    32                   :class:`apbbf.model.dedup.Counters`.
``dropped``             out    32
``unchecked``           out    32
``errored``             out    32
``s_axil_*``            --     AXI4-Lite            With ``control=True``: the control registers
                                                    (:mod:`apbbf.hdl.lib.axil_registers`).
======================  =====  ===================  ===========================================================

With a Config of a row layout (the memory scan: ``apbbf export --dedup --memory axi``) the filter's segments are
in the user's memory behind an AXI4 master, as :mod:`apbbf.hdl.export.axis_memory`'s (``m_axi_*``,
``axi_read_errors``, ``axi_write_errors``), and ``late`` (out, 32) counts the unchecked frames whose answers came
too late (:class:`~apbbf.hdl.packet.dedup.PacketDedup`'s ``answer_deadline``).
"""

from __future__ import annotations

from amaranth import ClockDomain, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config
from ...model.packet import KeySpec
from ...model.registers import KEY_RECIPES, Capability, Facts
from ...model.timeanalysis import window_capacity
from ..packet.dedup import MEMORY_SCAN, PacketDedup
from ..lib.axil_registers import AXI4LiteRegisters, axil_members
from .axis_memory import axi_master, axi_master_members, connect_axi_master

__all__ = ["AXIStreamPacketDedup", "COUNTERS", "AXI_OPTIONS", "control_facts", "connect_control"]

#: The counter ports, in the order of :class:`apbbf.model.dedup.Counters` (and ``late`` with the memory scan).
COUNTERS = ("frames", "duplicates", "dropped", "unchecked", "errored")

#: The options of the AXI4 master (with the memory scan only).
AXI_OPTIONS = ("axi_data_width", "axi_base", "axi_addr_width", "max_outstanding")


def control_facts(dedup: PacketDedup) -> Facts:
    """The register map's facts of ``dedup`` exported with its control registers: its Config, built action and
    the actions it takes at run time (:attr:`~apbbf.hdl.packet.dedup.PacketDedup.runtime_actions`), its key recipe
    alone (``l3l4`` or ``frame`` at their values, another at value 2 under its text), ``max_frame``, ticks from
    ``tuser`` or its counter (``TICK_NS`` 0), ``ACTION`` (with more than one action) and ``CLEAR`` at run time;
    built with its run-time window (``runtime_window``), ``WINDOW`` too, up to the capacity of its memory at the
    planned rate (:func:`~apbbf.model.timeanalysis.window_capacity`), else a capacity of its span; built with its
    run-time seed (``runtime_seed``), ``REKEY`` too.

    Raises
    ------
    TypeError
        If ``dedup`` is not a :class:`~apbbf.hdl.packet.dedup.PacketDedup`.
    """
    if not isinstance(dedup, PacketDedup):
        raise TypeError(f"dedup must be a PacketDedup, not {dedup!r}")
    name = next((n for n in KEY_RECIPES if getattr(KeySpec, n)() == dedup.spec), str(dedup.spec))
    keys = tuple(n if n == name else None for n in KEY_RECIPES) + (() if name in KEY_RECIPES else (name,))
    caps = Capability.CLEAR | (Capability.ACTION if len(dedup.runtime_actions) > 1 else Capability(0))
    if dedup.runtime_seed:
        caps |= Capability.REKEY
    capacity = dedup.config.span
    if dedup.runtime_window:
        caps |= Capability.WINDOW
        capacity = window_capacity(dedup.config)
    return Facts(dedup.config, action=dedup.action, actions=dedup.runtime_actions, key=name, keys=keys,
                 max_frame=dedup.max_frame, capacity=capacity, caps=caps)


class AXIStreamPacketDedup(wiring.Component):
    """:class:`~apbbf.hdl.packet.dedup.PacketDedup` behind AXI4-Stream ports named as Verilog designs expect.

    The wrapper defines its own ``sync`` domain clocked by ``aclk`` and reset by ``~aresetn``;
    ``s_axis_tready`` and ``m_axis_tvalid`` are held low during reset. It adds no registers.

    Parameters
    ----------
    config : Config
    spec : KeySpec
    control : bool
        Add the control registers behind an AXI4-Lite slave (``s_axil_*``: the map of
        :mod:`apbbf.model.registers` with :func:`control_facts`; :class:`~apbbf.hdl.lib.axil_registers.AXI4LiteRegisters`).
    runtime_seed : bool
        With ``control``: the hash's run-time seed (``SEED_LO``, ``SEED_HI``, ``CONTROL.REKEY``;
        :class:`~apbbf.hdl.packet.dedup.PacketDedup`'s ``runtime_seed``). Without it (the default) a re-key is
        refused.
    **options
        As :class:`~apbbf.hdl.packet.dedup.PacketDedup` (``data_width``, ``action``, ``timestamps``, ...), and
        with the memory scan those of :data:`AXI_OPTIONS` (as
        :class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF`'s).

    Attributes
    ----------
    dedup : PacketDedup
        The wrapped design (its parameters as properties).
    adapter : AXI4MemoryAdapter or None
        With the memory scan, the AXI4 master.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.packet.dedup.PacketDedup`.
    """

    def __init__(self, config: Config, spec: KeySpec, *, control: bool = False, runtime_seed: bool = False,
                 **options):
        check_config(config)
        if not isinstance(control, bool):
            raise TypeError(f"control must be a bool, not {control!r}")
        if not isinstance(runtime_seed, bool):
            raise TypeError(f"runtime_seed must be a bool, not {runtime_seed!r}")
        if runtime_seed and not control:
            raise ValueError("runtime_seed needs control=True (the seed is written through the control registers)")
        axi = {name: options.pop(name) for name in AXI_OPTIONS if name in options}
        control_options = ({"clearable": True, "runtime_window": True, "runtime_seed": runtime_seed} if control
                           else {})
        self._dedup = dedup = PacketDedup(config, spec, **options, **control_options)
        self._adapter = None
        if dedup.scan == MEMORY_SCAN:
            self._adapter = axi_master(config, depth=dedup.memory_depth, **axi)
        elif axi:
            raise ValueError(f"{', '.join(axi)} are options of the memory scan (a Config with a row layout)")
        self._registers = AXI4LiteRegisters(control_facts(dedup)) if control else None
        W = dedup.data_width
        user_in = 1 + (config.time_width if dedup.timestamps == "tuser" else 0)
        members = {
            "aclk": In(1), "aresetn": In(1),
            "s_axis_tvalid": In(1), "s_axis_tready": Out(1), "s_axis_tdata": In(W), "s_axis_tkeep": In(W // 8),
            "s_axis_tlast": In(1), "s_axis_tuser": In(user_in),
            "m_axis_tvalid": Out(1), "m_axis_tready": In(1), "m_axis_tdata": Out(W), "m_axis_tkeep": Out(W // 8),
            "m_axis_tlast": Out(1), "m_axis_tuser": Out(3),
            **{name: Out(32) for name in COUNTERS},
            **(axil_members() if control else {}),
        }
        if self._adapter is not None:
            members.update({"late": Out(32), **axi_master_members(self._adapter)})
        super().__init__(members)

    @property
    def dedup(self) -> PacketDedup:
        return self._dedup

    @property
    def adapter(self):
        return self._adapter

    @property
    def registers(self) -> AXI4LiteRegisters | None:
        """The control registers (``control=True``), else None."""
        return self._registers

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync", local=True)
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]
        m.submodules.dedup = dedup = self._dedup
        i, o = dedup.i, dedup.o
        m.d.comb += [
            i.valid.eq(self.s_axis_tvalid & self.aresetn),
            self.s_axis_tready.eq(i.ready & self.aresetn),
            i.payload.data.eq(self.s_axis_tdata), i.payload.keep.eq(self.s_axis_tkeep),
            i.payload.last.eq(self.s_axis_tlast), i.payload.user.error.eq(self.s_axis_tuser[0]),
            self.m_axis_tvalid.eq(o.valid & self.aresetn),
            o.ready.eq(self.m_axis_tready & self.aresetn),
            self.m_axis_tdata.eq(o.payload.data), self.m_axis_tkeep.eq(o.payload.keep),
            self.m_axis_tlast.eq(o.payload.last), self.m_axis_tuser.eq(o.payload.user),
        ]
        if dedup.timestamps == "tuser":
            m.d.comb += i.payload.user.time.eq(self.s_axis_tuser[1:])
        for name in COUNTERS:
            m.d.comb += getattr(self, name).eq(getattr(dedup, name))
        if self._adapter is not None:
            m.submodules.axi = adapter = self._adapter
            wiring.connect(m, dedup.memory, adapter.memory)
            connect_axi_master(m, self, adapter)
            # a clear resets the core only with nothing in flight on the AXI side
            m.d.comb += dedup.memory_idle.eq((adapter.reads_outstanding == 0) & (adapter.writes_outstanding == 0))
            m.d.comb += self.late.eq(dedup.late)
        if self._registers is not None:
            m.submodules.registers = regs = self._registers
            for port, member in axil_members().items():
                inner, outer = getattr(regs, port), getattr(self, port)
                m.d.comb += inner.eq(outer) if member.flow == wiring.In else outer.eq(inner)
            connect_control(m, regs, dedup)
        return m


def connect_control(m, regs: AXI4LiteRegisters, dedup: PacketDedup) -> None:
    """Wire the register file ``regs`` to the de-duplicator ``dedup`` in ``m``: its counters in, the action, the
    clear, the window (and with ``runtime_seed`` the seed and the re-key) out, and the frame index of each change
    back."""
    m.d.comb += [getattr(regs, f"counters_{name}").eq(getattr(dedup, name)) for name in COUNTERS]
    m.d.comb += [dedup.control_action.eq(regs.action), dedup.control_clear.eq(regs.clear),
                 regs.cleared.eq(dedup.control_cleared), regs.decided.eq(dedup.control_frames),
                 dedup.control_window.eq(regs.window), dedup.control_window_set.eq(regs.window_set),
                 regs.window_done.eq(dedup.control_window_done)]
    if dedup.runtime_seed:
        m.d.comb += [dedup.control_seed.eq(regs.seed), dedup.control_rekey.eq(regs.rekey)]
