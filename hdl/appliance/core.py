# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""The de-duplication appliance on a two-port board: port 0's frames through
:class:`~apbbf.hdl.packet.dedup.PacketDedup` and out of port 1, port 1's frames out of port 0 unchanged."""

from amaranth import Cat, ClockDomain, ClockSignal, Module, ResetSignal, Signal
from amaranth.build import Attrs, Resource, Subsignal
from amaranth.lib import data, fifo, io, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config
from ...model.packet import KeySpec
from ...model.protocol import APPLIANCE_COUNTERS as PROTOCOL_COUNTERS
from ..core.memory_port import MemoryPortSignature
from ..dram.litedram import LiteDRAMDDR3Memory, LiteDRAMMemory
from ..packet.dedup import MEMORY_SCAN, PacketDedup
from ..eth.ecp5_pll import ECP5PLL
from ..lib.frame_fifo import FrameFIFO
from ..eth.layouts import beat_layout
from ..eth.loopback import BOARD_PHYS
from ..eth.mac import COUNTERS, RGMIIMAC

__all__ = ["ApplianceCore", "DedupAppliance", "DRAM_TYPES", "MEMORY_ORDERS", "memory_scan_options", "USER_HZ", "APPLIANCE_COUNTERS", "MAX_FRAME"]

#: Longest frame the de-duplicator checks, bytes without the FCS: 1514 and two VLAN tags. Longer frames (jumbo)
#: pass unchecked.
MAX_FRAME = 1522

#: The appliance's counters, in order: each port's MAC counters, then the de-duplicator's (the host protocol's
#: APPLIANCE payload, :data:`apbbf.model.protocol.APPLIANCE_COUNTERS`).
APPLIANCE_COUNTERS = tuple(f"port{port}_{name}" for port in (0, 1) for name in COUNTERS) + (
    "dedup_frames", "dedup_duplicates", "dedup_dropped", "dedup_unchecked", "dedup_errored")
assert APPLIANCE_COUNTERS == PROTOCOL_COUNTERS

#: The DRAM each board's appliance can keep its filter in (LiteDRAM's ``memtype``).
DRAM_TYPES = {"colorlight-5a75b": "SDR", "versa-ecp5": "DDR3"}

#: The de-duplicator's clock (``sync``), Hz: 64-bit beats need 15.6 MHz at line rate; a whole number of cycles
#: per microsecond for the time counter.
USER_HZ = 50e6
#: The memory scan's order (``one_row``) and commands in flight (``memory_depth`` of
#: :class:`~apbbf.hdl.packet.dedup.PacketDedup`) per LiteDRAM core, as measured fastest (``docs/dram.md``). The SDR
#: SDRAM through LiteDRAM and the chip model (``make dram-bench``): one_row 1.175 of 1.488 Mpps at depths 2, 4 and 8
#: alike on the former 11-segment shape (1.223 on the build's 6 segments at depth 2), the other order 0.84, so
#: depth 2 (850 LUT4 and 815 FF fewer than 8). The DDR3 native port's model
#: (``make ddr3-bench``): the other order 1.11 at depth 8, one_row 0.90.
MEMORY_ORDERS = {"SDR": (True, 2), "DDR3": (False, 8)}


def memory_scan_options(config: Config, memory: str) -> dict:
    """The de-duplicator's memory scan options (``memory_one_row``, ``memory_depth`` of
    :class:`~apbbf.hdl.packet.dedup.PacketDedup`) for ``config`` on the LiteDRAM core ``memory``
    (:data:`MEMORY_ORDERS`: the order and commands in flight measured fastest on it).

    Raises
    ------
    ValueError
        If ``memory`` is not a key of :data:`MEMORY_ORDERS`.
    """
    if memory not in MEMORY_ORDERS:
        raise ValueError(f"memory must be one of {', '.join(MEMORY_ORDERS)}, not {memory!r}")
    one_row, depth = MEMORY_ORDERS[memory]
    return {"memory_one_row": one_row and config.row_layout, "memory_depth": depth}


def _port_pins(platform, number):
    """Port ``number``'s RGMII pins; without the PHY reset and MDIO when they are port 0's too (the Colorlight's
    two PHYs share them, and its resource of port 1 repeats port 0's pins, so requesting both whole fails)."""
    resource = platform.lookup("eth_rgmii", number)
    shared = platform.lookup("eth_rgmii", 0)

    def pins(res, name):
        return [tuple(io.ios[0].names) for io in res.ios if io.name == name]

    if pins(resource, "rst") != pins(shared, "rst"):
        return platform.request("eth_rgmii", number, dir="-")
    name = f"eth_rgmii_data_{number}"
    subsignals = [io for io in resource.ios if io.name not in ("rst", "mdc", "mdio")]
    platform.add_resources([Resource(name, 0, *subsignals, resource.attrs)])
    return platform.request(name, 0, dir="-")


#: litex-boards' I/O attributes of the Versa's DDR3 (``lattice_versa_ecp5.py``), by amaranth-boards' subsignal
#: names; every pin SSTL135_I with a fast slew rate besides.
DDR3_ATTRS = {"dq": dict(TERMINATION="75"), "clk": dict(IO_TYPE="SSTL135D_I"),
              "dqs": dict(IO_TYPE="SSTL135D_I", TERMINATION="OFF", DIFFRESISTOR="100")}


def _ddr3_resource(platform) -> str:
    """amaranth-boards' ``ddr3`` pins with litex-boards' attributes (:data:`DDR3_ATTRS`), added as
    ``ddr3_litex``: amaranth-boards puts ``TERMINATION=75`` on the whole resource (outputs included), LiteX on the
    data pins only."""
    resource = platform.lookup("ddr3", 0)
    subsignals = [Subsignal(sub.name, *sub.ios, Attrs(**DDR3_ATTRS.get(sub.name, {}))) for sub in resource.ios]
    platform.add_resources([Resource("ddr3_litex", 0, *subsignals, Attrs(IO_TYPE="SSTL135_I", SLEWRATE="FAST"))])
    return "ddr3_litex"


def _control_members(action, config, runtime_window=False, runtime_seed=False):
    """The de-duplicator's run-time control ports, as the appliance's tops forward them: the action and the clear,
    with ``runtime_window`` the window, with ``runtime_seed`` the seed and the re-key
    (:class:`~apbbf.hdl.packet.dedup.PacketDedup`)."""
    from ...model.registers import ACTIONS
    members = {"control_action": In(2, init=ACTIONS.index(action)), "control_clear": In(1),
               "control_cleared": Out(1), "control_frames": Out(32)}
    if runtime_window:
        members.update({"control_window": In(32, init=config.span), "control_window_set": In(1),
                        "control_window_done": Out(1)})
    if runtime_seed:
        members.update({"control_seed": In(64), "control_rekey": In(1)})
    return members


def _check_runtime_seed(runtime_seed):
    if not isinstance(runtime_seed, bool):
        raise TypeError(f"runtime_seed must be a bool, not {runtime_seed!r}")


def connect_control(m, outer, inner):
    """Forward the run-time control ports of ``outer`` (a component with :func:`_control_members`) to those of
    the same names on ``inner``: the inputs in, the outputs back."""
    for name, member in outer.signature.members.items():
        if name.startswith("control_"):
            if member.flow == In:
                m.d.comb += getattr(inner, name).eq(getattr(outer, name))
            else:
                m.d.comb += getattr(outer, name).eq(getattr(inner, name))


def _check_action(action):
    if action == "mark":
        raise ValueError("action must be 'drop' or 'count' on the appliance, not 'mark': a mark travels in "
                         "tuser, which has no place on the wire")


class ApplianceCore(wiring.Component):
    """The appliance between two pairs of RGMII pins: two MACs (:class:`~apbbf.hdl.eth.mac.RGMIIMAC`), port 0's
    receive side through a de-duplicator (:class:`~apbbf.hdl.packet.dedup.PacketDedup`, time from a
    free-running counter of ``tick_cycles`` cycles per microsecond) to port 1's transmit side, and port 1's
    receive side to port 0's transmit side unchanged, through a frame queue (:class:`FrameFIFO`). The design
    provides ``sync`` (the de-duplicator's and the MACs' user side) and ``eth_tx`` (125 MHz, both transmit
    sides).

    Frames are never held back at the line: when port 1 cannot keep up, the de-duplicator's buffer and then port
    0's receive FIFO fill, and the frames that do not fit are counted there (``port0_rx_overflows``). A frame the
    MAC marked bad goes through unchecked (``dedup_errored``) and out with a bad FCS.

    Parameters
    ----------
    port0_pins, port1_pins
        RGMII resources (:class:`~apbbf.hdl.eth.rgmii.RGMII`).
    config : Config
        The filter: a time window (span in microseconds), 64-bit keys.
    spec : KeySpec
        The key (default ``l3l4``).
    action : {"drop", "count"}
        ``mark`` has no place on the wire (its mark is a ``tuser`` bit).
    tick_cycles : int
        ``sync`` cycles per microsecond.
    rx_delay, tx_delay : float
        The RGMII I/O delays (:class:`~apbbf.hdl.eth.rgmii.RGMII`).
    data_width : int
        Beats between the MACs and the de-duplicator, 64..512 bits.
    max_frame : int
        Longest frame checked, bytes without the FCS (longer ones pass unchecked).
    rx_depth : int
        Beats of each receive FIFO (``rx_depth`` of :class:`~apbbf.hdl.eth.mac.RGMIIMAC`).
    memory : {"SDR", "DDR3"}
        The LiteDRAM core behind a Config with a row layout: the memory scan's order and depth
        (:data:`MEMORY_ORDERS`).
    runtime_seed : bool
        The hash's run-time seed (:class:`~apbbf.hdl.packet.dedup.PacketDedup`'s ``runtime_seed``: ports
        ``control_seed`` and ``control_rekey``); off by default (it costs logic: ``docs/appliance.md``).
    runtime_window : bool
        Build the de-duplicator's run-time window (``control_window``, ``control_window_set``,
        ``control_window_done``: the ports of :class:`~apbbf.hdl.packet.dedup.PacketDedup`).

    Attributes
    ----------
    port0_rx_frames ... dedup_errored : Out(32)
        The counters of :data:`APPLIANCE_COUNTERS`.
    link_up : Out(2)
        Bit i: port i's PHY reports a link.
    time : Out(config.time_width)
        Microseconds since reset: the time of a frame whose first beat enters the de-duplicator in this cycle.
    frame_start : Out(1)
        A frame's first beat enters the de-duplicator in this cycle (with :attr:`time`, what a bench scores the
        model with).
    control_action, control_clear : In(2), In(1)
    control_cleared, control_frames : Out(1), Out(32)
        The de-duplicator's run-time control (:class:`~apbbf.hdl.packet.dedup.PacketDedup`): the action and a
        clear of the filter, from the control registers.
    control_seed, control_rekey : In(64), In(1)
        (``runtime_seed``.) The run-time seed and the re-key, as the de-duplicator's.
    control_window, control_window_set, control_window_done : In(32), In(1), Out(1)
        With ``runtime_window``: the de-duplicator's run-time window.
    """

    def __init__(self, port0_pins, port1_pins, config: Config, spec: KeySpec | None = None, *,
                 action: str = "drop", tick_cycles: int = round(USER_HZ / 1e6), rx_delay: float = 0.0,
                 tx_delay: float = 0.0, data_width: int = 64, max_frame: int = MAX_FRAME, rx_depth: int = 512,
                 memory: str = "SDR", runtime_window: bool = False, runtime_seed: bool = False):
        _check_action(action)
        _check_runtime_seed(runtime_seed)
        self._dedup = PacketDedup(config, spec or KeySpec.l3l4(), data_width=data_width, action=action,
                                  timestamps="tuser", fcs=False, max_frame=max_frame, clearable=True,
                                  runtime_window=runtime_window, runtime_seed=runtime_seed,
                                  **memory_scan_options(config, memory))
        self._tick_cycles = tick_cycles
        # A transmit FIFO of 16 beats is in LUT RAM: its read data reaches the transmit side without a block
        # RAM's 5.8 ns clock-to-out (the one path over 8 ns left with 64 beats in block RAM).
        options = dict(data_width=data_width, tx_domain="eth_tx", rx_delay=rx_delay, tx_delay=tx_delay,
                       rx_depth=rx_depth, tx_depth=16)
        self._port0 = RGMIIMAC(port0_pins, **options)
        self._port1 = RGMIIMAC(port1_pins, **options)
        self._data_width = data_width
        members = {
            **{name: Out(32) for name in APPLIANCE_COUNTERS},
            "link_up": Out(2),
            "time": Out(config.time_width),
            "frame_start": Out(1),
            **_control_members(action, config, runtime_window, runtime_seed),
        }
        if self._dedup.scan == MEMORY_SCAN:
            members.update({"memory": Out(MemoryPortSignature(config)), "dedup_late": Out(32)})
        super().__init__(members)

    @property
    def counters(self) -> dict:
        """Counter name (:data:`APPLIANCE_COUNTERS`) -> its 32-bit signal, in order."""
        return {name: getattr(self, name) for name in APPLIANCE_COUNTERS}

    @property
    def dedup(self) -> PacketDedup:
        return self._dedup

    @property
    def config(self) -> Config:
        return self._dedup.config

    def elaborate(self, platform):
        m = Module()
        m.submodules.port0 = port0 = self._port0
        m.submodules.port1 = port1 = self._port1
        m.submodules.dedup = dedup = self._dedup
        # Everything between the MACs runs in sync, which carries a beat per clock at 3.2 times a port's rate,
        # so nothing here needs to be fast; what the 125 MHz sides need is that a frame never starves once it
        # has started on the wire (below). The frames' time: microseconds since reset, from a prescaler of sync
        # (the de-duplicator takes it from tuser, so that a bench can read each frame's time).
        prescaler = Signal(range(self._tick_cycles))
        with m.If(prescaler == self._tick_cycles - 1):
            m.d.sync += [prescaler.eq(0), self.time.eq(self.time + 1)]
        with m.Else():
            m.d.sync += prescaler.eq(prescaler + 1)
        first = Signal(init=1)
        with m.If(dedup.i.valid & dedup.i.ready):
            m.d.sync += first.eq(dedup.i.payload.last)
        m.d.comb += [
            dedup.i.valid.eq(port0.rx.valid), port0.rx.ready.eq(dedup.i.ready),
            dedup.i.payload.data.eq(port0.rx.payload.data), dedup.i.payload.keep.eq(port0.rx.payload.keep),
            dedup.i.payload.last.eq(port0.rx.payload.last),
            dedup.i.payload.user.error.eq(port0.rx.payload.user.error), dedup.i.payload.user.time.eq(self.time),
            self.frame_start.eq(dedup.i.valid & dedup.i.ready & first),
        ]
        # Port 1 transmits whole frames: with drop the de-duplicator sends whole frames already (store and
        # forward), and a short queue ends its paths at registers; with count the frame's beats come at the
        # pace of two clock crossings, so a frame queue holds each frame until it is whole. Port 1's received frames
        # cross two clock domains on their way to port 0: a frame queue too, so no beat arrives late.
        if self._dedup.action == "drop":
            m.submodules.port1_queue = queue = fifo.SyncFIFOBuffered(width=beat_layout(self._data_width).size,
                                                                     depth=4)
            m.d.comb += [queue.w_en.eq(dedup.o.valid), dedup.o.ready.eq(queue.w_rdy),
                         port1.tx.payload.eq(queue.r_data), port1.tx.valid.eq(queue.r_rdy),
                         queue.r_en.eq(port1.tx.ready)]
            to_port1 = queue.w_data
        else:
            m.submodules.port1_queue = queue = FrameFIFO(beat_layout(self._data_width))
            m.d.comb += [queue.i.valid.eq(dedup.o.valid), dedup.o.ready.eq(queue.i.ready)]
            to_port1 = queue.i.payload.as_value()
            wiring.connect(m, queue.o, port1.tx)
        beat = data.View(beat_layout(self._data_width), to_port1)
        # A frame the MAC marked bad leaves marked bad (with a bad FCS). With drop the de-duplicator says so
        # (errored); with count it passes each beat in the cycle it takes it, with tuser 0, so the mark is the
        # received beat's own.
        bad = dedup.o.payload.user.errored if self._dedup.action == "drop" else port0.rx.payload.user.error
        m.d.comb += [beat.data.eq(dedup.o.payload.data), beat.keep.eq(dedup.o.payload.keep),
                     beat.last.eq(dedup.o.payload.last), beat.user.error.eq(bad)]
        m.submodules.port0_queue = port0_queue = FrameFIFO(beat_layout(self._data_width))
        wiring.connect(m, port1.rx, port0_queue.i)
        wiring.connect(m, port0_queue.o, port0.tx)

        for port_name, port in (("port0", port0), ("port1", port1)):
            for name in COUNTERS:
                m.d.comb += getattr(self, f"{port_name}_{name}").eq(getattr(port, name))
        for name in ("frames", "duplicates", "dropped", "unchecked", "errored"):
            m.d.comb += getattr(self, f"dedup_{name}").eq(getattr(dedup, name))
        m.d.comb += self.link_up.eq(Cat(port0.link_up, port1.link_up))
        if self._dedup.scan == MEMORY_SCAN:
            wiring.connect(m, dedup.memory, wiring.flipped(self.memory))
            m.d.comb += self.dedup_late.eq(dedup.late)
        connect_control(m, self, dedup)

        return m


class DedupAppliance(wiring.Component):
    """:class:`ApplianceCore` on a two-port board: the pins, each board's RGMII delays, both transmit sides
    and ``sync`` (:data:`USER_HZ`) from one ECP5 PLL on the board's reference clock, the PHYs held out of reset.

    Parameters
    ----------
    board : str
        A key of :data:`apbbf.hdl.eth.loopback.BOARD_PHYS`.
    config, spec, action, data_width, max_frame, runtime_window, runtime_seed
        As :class:`ApplianceCore`.
    dram : apbbf.flows.litedram.Core or None
        The board's DRAM as the filter's memory (a Config with a row layout; :data:`DRAM_TYPES`): a LiteDRAM core
        generated for ``sync`` (:data:`USER_HZ`; its ``verilog`` must be added to the build), started by the
        gateware. The Colorlight's SDR (:class:`~apbbf.hdl.dram.litedram.LiteDRAMMemory`): the SDRAM's clock pin
        is ``sync`` shifted by 180 degrees, from the same PLL. The Versa's DDR3
        (:class:`~apbbf.hdl.dram.litedram.LiteDRAMDDR3Memory`): the core's clock generator runs from the 100 MHz
        oscillator and ``sync`` is its sys clock; the PLL makes only the transmit clock.

    Attributes
    ----------
    port0_rx_frames ... dedup_errored : Out(32)
    link_up : Out(2)
    dram_ready : Out(1)
        The DRAM is initialised (and on the DDR3 read levelled); 0 without DRAM.
    dram_error : Out(1)
        The DDR3's read leveling found a byte lane that reads right at no setting (the LiteDRAM core's
        ``init_error``); 0 otherwise.
    control_action, control_clear, control_cleared, control_frames
        As :class:`ApplianceCore`; with ``runtime_window`` also the window's, with ``runtime_seed`` also
        ``control_seed`` and ``control_rekey``.
    """

    def __init__(self, board: str, config: Config, spec: KeySpec | None = None, *, action: str = "drop",
                 data_width: int = 64, max_frame: int = MAX_FRAME, dram=None, runtime_window: bool = False,
                 runtime_seed: bool = False):
        if board not in BOARD_PHYS:
            raise ValueError(f"board must be one of {', '.join(BOARD_PHYS)}, not {board!r}")
        _check_action(action)
        _check_runtime_seed(runtime_seed)
        if dram is not None:
            memtype = dram.settings.get("memtype", "SDR")
            if DRAM_TYPES.get(board) != memtype:
                raise ValueError(f"the filter in DRAM is built for the colorlight-5a75b's SDR SDRAM and the "
                                 f"versa-ecp5's DDR3, not {board!r} with {memtype}")
            if dram.settings["sys_clk_freq"] != USER_HZ:
                raise ValueError(f"the LiteDRAM core must run at the de-duplicator's {USER_HZ / 1e6:g} MHz, not "
                                 f"{dram.settings['sys_clk_freq'] / 1e6:g}")
            if not config.row_layout:
                raise ValueError("the filter in DRAM needs a Config with a row layout (row_bits > 0)")
        elif config.row_layout:
            raise ValueError("a Config with a row layout needs the board's DRAM (dram=...)")
        self._dram = dram
        self._board = board
        self._options = dict(spec=spec, action=action, data_width=data_width, max_frame=max_frame,
                             runtime_window=runtime_window, runtime_seed=runtime_seed)
        self._config = config
        self._core = None
        # the de-duplicator checks its parameters now, not at elaboration
        PacketDedup(config, spec or KeySpec.l3l4(), data_width=data_width, action=action, max_frame=max_frame,
                    runtime_window=runtime_window)
        super().__init__({
            **{name: Out(32) for name in APPLIANCE_COUNTERS},
            "link_up": Out(2), "dram_ready": Out(1), "dram_error": Out(1),
            **_control_members(action, config, runtime_window, runtime_seed),
        })

    @property
    def counters(self) -> dict:
        """Counter name (:data:`APPLIANCE_COUNTERS`) -> its 32-bit signal, in order."""
        return {name: getattr(self, name) for name in APPLIANCE_COUNTERS}

    def elaborate(self, platform):
        m = Module()
        # One transmit clock for both ports (the PHYs take any 125 MHz within 100 ppm); each port's receive
        # side runs on its PHY's clock inside its MAC; the de-duplicator runs in sync.
        _, clock, clock_hz, rx_delay, tx_delay = BOARD_PHYS[self._board]
        m.domains.eth_tx = ClockDomain("eth_tx")
        m.domains.sync = ClockDomain("sync")
        shifted, second = None, "sync"
        ddr3 = self._dram is not None and DRAM_TYPES[self._board] == "DDR3"
        if self._dram is not None and not ddr3:
            m.domains.sdram_ps = ClockDomain("sdram_ps", reset_less=True)
            shifted = "sdram_ps"
        if ddr3:
            second = None                     # sync is the DDR3 core's own sys clock (_ddr3 below)
        m.submodules.pll = pll = ECP5PLL(input_hz=clock_hz, output_hz=125e6, second_hz=USER_HZ,
                                         second_domain=second, shifted_domain=shifted)
        m.submodules.clk_buffer = clk = io.Buffer("i", platform.request(clock, 0, dir="-"))
        m.d.comb += pll.clk_in.eq(clk.i)

        port0_pins = platform.request("eth_rgmii", 0, dir="-")
        port1_pins = _port_pins(platform, 1)
        m.submodules.core = core = ApplianceCore(port0_pins, port1_pins, self._config, rx_delay=rx_delay,
                                                 tx_delay=tx_delay, tick_cycles=round(USER_HZ / 1e6),
                                                 memory="DDR3" if ddr3 else "SDR", **self._options)
        for name in APPLIANCE_COUNTERS:
            m.d.comb += getattr(self, name).eq(getattr(core, name))
        m.d.comb += self.link_up.eq(core.link_up)
        if ddr3:
            self._ddr3(m, platform, core)
        elif self._dram is not None:
            # The board ties CS# low, CKE high and DQM low: the core's own outputs for them stay unconnected.
            # The chip's clock: sync shifted by half a period, through a DDR output (a clock on a pin).
            sdram = platform.request("sdram", 0, dir="-")
            pins = {"a": sdram.a.io, "ba": sdram.ba.io, "dq": sdram.dq.io, "ras_n": sdram.ras.io,
                    "cas_n": sdram.cas.io, "we_n": sdram.we.io}
            m.submodules.dram = dram = LiteDRAMMemory(self._config, self._dram.settings, self._dram.csrs(),
                                                      pins=pins)
            wiring.connect(m, core.memory, dram.memory)
            m.d.comb += [self.dram_ready.eq(dram.ready), self.dram_error.eq(dram.init_error)]
            m.submodules.sdram_clk = sdram_clk = io.DDRBuffer("o", sdram.clk, o_domain="sdram_ps")
            m.d.comb += [sdram_clk.o[0].eq(1), sdram_clk.o[1].eq(0)]
        connect_control(m, self, core)

        m.submodules.phy_reset = phy_reset = io.Buffer("o", port0_pins.rst)
        m.d.comb += phy_reset.o.eq(0)             # active low (PinsN): 0 holds the PHYs out of reset
        if hasattr(port1_pins, "rst"):
            m.submodules.phy1_reset = phy1_reset = io.Buffer("o", port1_pins.rst)
            m.d.comb += phy1_reset.o.eq(0)
        return m

    def _ddr3(self, m, platform, core):
        # The DDR3 core makes its clocks from the board's 100 MHz oscillator (LiteDRAM's ECP5 clock generator:
        # ECLKSYNCB, CLKDIVF and DDRDLLA need its sys2x and sys in lock step), so the de-duplicator runs in its
        # sys clock: no clock crossing between the filter and its memory.
        ddr3 = platform.request(_ddr3_resource(platform), 0, dir="-")
        pins = {"a": ddr3.a.io, "ba": ddr3.ba.io, "cas_n": ddr3.cas.io, "cke": ddr3.clk_en.io, "clk_p": ddr3.clk.p,
                "cs_n": ddr3.cs.io, "dm": ddr3.dm.io, "dq": ddr3.dq.io, "dqs_p": ddr3.dqs.p, "odt": ddr3.odt.io,
                "ras_n": ddr3.ras.io, "reset_n": ddr3.rst.io, "we_n": ddr3.we.io}
        m.submodules.dram = dram = LiteDRAMDDR3Memory(self._config, self._dram.settings, self._dram.csrs(),
                                                      pins=pins)
        m.submodules.dram_clk_buffer = clk = io.Buffer("i", platform.request("clk100", 0, dir="-"))
        m.d.comb += [dram.clk_in.eq(clk.i), ClockSignal("sync").eq(dram.user_clk),
                     ResetSignal("sync").eq(dram.user_rst), self.dram_ready.eq(dram.ready),
                     self.dram_error.eq(dram.init_error)]
        wiring.connect(m, core.memory, dram.memory)
