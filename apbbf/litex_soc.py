"""The exported de-duplicator in a LiteX SoC: a small LiteX module around ``apbbf export --dedup --control``'s
Verilog, its frames as LiteX stream endpoints and its control registers on the SoC's bus.

:class:`LiteXDedup` writes the Verilog (:func:`apbbf.hdl.export.verilog.generate_dedup_verilog` with
``control=True``) into a folder, adds it to the platform's sources and instantiates it, clocked by ``sys`` (its
``aresetn`` from ``sys``'s reset). Its ``bus`` is the AXI4-Lite slave holding the register map
(:mod:`apbbf.model.registers`); :meth:`LiteXDedup.add_to_soc` maps it into the SoC's address space as a region
of 256 bytes, so firmware reaches register ``R`` at the region's base plus ``APBBF_R`` of the C header
(``python -m apbbf.registers``; the region's base is in LiteX's ``csr.csv`` and ``mem.h`` under its name). The
registers are the register file's, once, not LiteX ``CSRStorage`` copies: a refused write answers SLVERR, which
LiteX's bus turns into its error.

:class:`LiteXDedupCSR` is the same module with the map as LiteX CSRs instead (``CSRStorage`` and ``CSRStatus``
made from :func:`apbbf.model.registers.register_map`, so LiteX's ``csr.h`` names each register): a small bridge
is the AXI4-Lite master of the register file inside, so the register file stays the one that checks every access.

Needs ``litex`` (``pip install apbbf[dram]`` installs it); importing this module imports it.
"""

from __future__ import annotations

from pathlib import Path

from migen import (FSM, Array, Case, Cat, ClockSignal, Constant, If, Instance, Module, Mux, NextState, NextValue,
                   ResetSignal, Signal)
from litex.soc.integration.soc import SoCRegion
from litex.soc.interconnect import axi, stream
from litex.soc.interconnect.csr import AutoCSR, CSRStatus, CSRStorage

from .hdl.export.verilog import DEDUP_MODULE, generate_dedup_verilog
from .model.config import Config
from .model.registers import Access, register_map

__all__ = ["LiteXDedup", "LiteXDedupCSR", "REGION_SIZE"]

#: Bytes of the SoC's address space the register map takes.
REGION_SIZE = 0x100


class LiteXDedup(Module):
    """The exported de-duplicator with its control registers, as a LiteX (migen) module.

    Parameters
    ----------
    platform
        The LiteX platform (the exported Verilog is added to its sources).
    config : Config
    spec : KeySpec
    build_dir : str or os.PathLike
        Where the Verilog is written (``<build_dir>/apbbf_dedup_axis.v``).
    **options
        As :class:`~apbbf.hdl.packet.dedup.PacketDedup` (``data_width`` default 64 here, ``action``,
        ``max_frame``, ...): frames take their time from ``sink.time`` (``timestamps="tuser"``).

    Attributes
    ----------
    sink : stream.Endpoint([("data", W), ("keep", W // 8), ("error", 1), ("time", time_width)])
        Frames in: ``error`` on the last beat (the MAC marks the frame bad), ``time`` on the first (ticks).
    source : stream.Endpoint([("data", W), ("keep", W // 8), ("duplicate", 1), ("unchecked", 1), ("errored", 1)])
        Frames out, in order; the flags on the last beat.
    bus : axi.AXILiteInterface
        The control registers (32-bit data, byte addresses; the low 8 bits decoded).
    frames, duplicates, dropped, unchecked, errored : Signal(32)
        The live counters.
    verilog : Path
        The exported file.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.packet.dedup.PacketDedup`, or if ``options`` asks for ``control`` or another
        ``timestamps``.
    RuntimeError
        If Yosys is missing or fails.
    """

    def __init__(self, platform, config: Config, spec, build_dir, **options):
        if "control" in options or options.get("timestamps", "tuser") != "tuser":
            raise ValueError("LiteXDedup exports with control=True and timestamps='tuser'; not "
                             f"{ {k: options[k] for k in ('control', 'timestamps') if k in options} }")
        options = {"data_width": 64, **options, "control": True}
        width = options["data_width"]
        self.verilog = Path(build_dir) / f"{DEDUP_MODULE}.v"
        self.verilog.parent.mkdir(parents=True, exist_ok=True)
        text = generate_dedup_verilog(config, spec, DEDUP_MODULE, **options)
        if not self.verilog.exists() or self.verilog.read_text() != text:
            self.verilog.write_text(text)
        platform.add_source(str(self.verilog))

        self.sink = sink = stream.Endpoint([("data", width), ("keep", width // 8), ("error", 1),
                                            ("time", config.time_width)])
        self.source = source = stream.Endpoint([("data", width), ("keep", width // 8), ("duplicate", 1),
                                                ("unchecked", 1), ("errored", 1)])
        self.bus = bus = axi.AXILiteInterface(data_width=32, address_width=32)
        self.frames, self.duplicates, self.dropped, self.unchecked, self.errored = (
            Signal(32, name=name) for name in ("frames", "duplicates", "dropped", "unchecked", "errored"))
        user_out = Signal(3)
        self.comb += [source.duplicate.eq(user_out[0]), source.unchecked.eq(user_out[1]),
                      source.errored.eq(user_out[2])]
        self.specials += Instance(
            DEDUP_MODULE,
            i_aclk=ClockSignal("sys"), i_aresetn=~ResetSignal("sys"),
            i_s_axis_tvalid=sink.valid, o_s_axis_tready=sink.ready, i_s_axis_tdata=sink.data,
            i_s_axis_tkeep=sink.keep, i_s_axis_tlast=sink.last,
            i_s_axis_tuser=Cat(sink.error, sink.time),
            o_m_axis_tvalid=source.valid, i_m_axis_tready=source.ready, o_m_axis_tdata=source.data,
            o_m_axis_tkeep=source.keep, o_m_axis_tlast=source.last, o_m_axis_tuser=user_out,
            o_frames=self.frames, o_duplicates=self.duplicates, o_dropped=self.dropped,
            o_unchecked=self.unchecked, o_errored=self.errored,
            i_s_axil_awaddr=bus.aw.addr[:8], i_s_axil_awprot=0, i_s_axil_awvalid=bus.aw.valid,
            o_s_axil_awready=bus.aw.ready,
            i_s_axil_wdata=bus.w.data, i_s_axil_wstrb=bus.w.strb, i_s_axil_wvalid=bus.w.valid,
            o_s_axil_wready=bus.w.ready,
            o_s_axil_bresp=bus.b.resp, o_s_axil_bvalid=bus.b.valid, i_s_axil_bready=bus.b.ready,
            i_s_axil_araddr=bus.ar.addr[:8], i_s_axil_arprot=0, i_s_axil_arvalid=bus.ar.valid,
            o_s_axil_arready=bus.ar.ready,
            o_s_axil_rdata=bus.r.data, o_s_axil_rresp=bus.r.resp, o_s_axil_rvalid=bus.r.valid,
            i_s_axil_rready=bus.r.ready,
        )

    def add_to_soc(self, soc, name: str = "apbbf", origin: int | None = None) -> None:
        """Add this module to ``soc`` as ``name`` and its registers as a bus slave of :data:`REGION_SIZE` bytes at
        ``origin`` (default: where the SoC's allocator puts it).

        Raises
        ------
        ValueError
            If ``origin`` is not aligned to :data:`REGION_SIZE`.
        """
        if origin is not None and origin % REGION_SIZE:
            raise ValueError(f"origin must be a multiple of {REGION_SIZE:#x}, not {origin:#x}")
        setattr(soc.submodules, name, self)
        soc.bus.add_slave(name, self.bus, SoCRegion(origin=origin, size=REGION_SIZE, cached=False))


class LiteXDedupCSR(LiteXDedup, AutoCSR):
    """:class:`LiteXDedup` with the register map as LiteX CSRs (``add_csr`` on the SoC), made from
    :func:`~apbbf.model.registers.register_map`: each register that can be written a ``CSRStorage`` of its name in
    lower case (``window``, ``action``, ``key``, ``seed_lo``, ``seed_hi``, ``control``), each that can be read a
    ``CSRStatus`` (``<name>``; a register that is both is read as ``<name>_now``). A write of a ``CSRStorage`` is
    made on the register file through its AXI4-Lite slave (:attr:`bus`, driven here by the bridge), in the order
    written; ``error`` (``CSRStatus``) is 1 if the last write was refused (``SLVERR``: it changed nothing),
    ``busy`` while writes wait. Between writes the bridge reads every readable register in turn into its
    ``CSRStatus`` (a round of two cycles or so per register), so a status read some cycles after a write or a
    ``SNAPSHOT`` holds what the register file answered.

    Parameters and Raises are :class:`LiteXDedup`'s; :meth:`add_to_soc` adds it with its CSRs (its bus is the
    bridge's, on no SoC bus).
    """

    def __init__(self, platform, config: Config, spec, build_dir, **options):
        super().__init__(platform, config, spec, build_dir, **options)
        registers = list(register_map("dedup").values())
        written = [r for r in registers if r.access != Access.RO]
        read = [r for r in registers if r.access != Access.WO]
        self.error = CSRStatus(1, name="error", description="the last write was refused (SLVERR)")
        self.busy = CSRStatus(1, name="busy", description="writes are waiting for the register file")
        storages, statuses = {}, {}
        for r in written:
            storage = CSRStorage(32, name=r.name.lower(), description=r.doc)
            setattr(self, f"csr_{r.name.lower()}", storage)
            storages[r.offset] = storage
        for r in read:
            name = r.name.lower() + ("_now" if r.access == Access.RW else "")
            status = CSRStatus(32, name=name, description=r.doc)
            setattr(self, f"csr_{name}", status)
            statuses[r.offset] = status
        bus = self.bus
        order = list(storages)
        read_offsets = list(statuses)
        # Writes wait as pending bits, one per writable register, taken lowest first; between them every readable
        # register is read in turn into its status.
        pending, index, take = Signal(len(order)), Signal(max=max(len(order), 2)), Signal(len(order))
        for i in reversed(range(len(order))):
            self.comb += If(pending[i], index.eq(i), take.eq(1 << i))
        address, data = Signal(8), Signal(32)
        poll = Signal(max=len(read_offsets))
        start = Signal()
        self.submodules.fsm = fsm = FSM(reset_state="IDLE")
        self.comb += start.eq(fsm.ongoing("IDLE") & (pending != 0))
        self.sync += pending.eq((pending & ~Mux(start, take, 0)) | Cat(*[storages[o].re for o in order]))
        self.comb += self.busy.status.eq((pending != 0) | fsm.ongoing("WRITE") | fsm.ongoing("WRITE_RESPONSE"))
        fsm.act("IDLE",
                If(pending != 0,
                   NextValue(address, Array([Constant(o, 8) for o in order])[index]),
                   NextValue(data, Array([storages[o].storage for o in order])[index]),
                   NextState("WRITE")
                ).Else(
                   NextValue(address, Array([Constant(o, 8) for o in read_offsets])[poll]),
                   NextState("READ")))
        fsm.act("WRITE",
                bus.aw.valid.eq(1), bus.w.valid.eq(1), bus.w.strb.eq(0xF),
                If(bus.aw.ready & bus.w.ready, NextState("WRITE_RESPONSE")))
        fsm.act("WRITE_RESPONSE",
                bus.b.ready.eq(1),
                If(bus.b.valid, NextValue(self.error.status, bus.b.resp != 0), NextState("IDLE")))
        fsm.act("READ",
                bus.ar.valid.eq(1),
                If(bus.ar.ready, NextState("READ_RESPONSE")))
        fsm.act("READ_RESPONSE",
                bus.r.ready.eq(1),
                If(bus.r.valid,
                   Case(poll, {i: NextValue(statuses[o].status, bus.r.data) for i, o in enumerate(read_offsets)}),
                   NextValue(poll, Mux(poll == len(read_offsets) - 1, 0, poll + 1)),
                   NextState("IDLE")))
        self.comb += [bus.aw.addr.eq(address), bus.ar.addr.eq(address), bus.w.data.eq(data)]

    def add_to_soc(self, soc, name: str = "apbbf", origin: int | None = None) -> None:
        """Add this module to ``soc`` as ``name`` and its CSRs (``soc.add_csr``); ``origin`` must be None (the CSRs
        are placed by LiteX).

        Raises
        ------
        ValueError
            If ``origin`` is given.
        """
        if origin is not None:
            raise ValueError("LiteXDedupCSR's registers are CSRs, placed by LiteX: origin must be None")
        setattr(soc.submodules, name, self)
        soc.add_csr(name)
