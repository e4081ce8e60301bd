"""The de-duplication appliance on a two-port board: :class:`~apbbf.hdl.appliance.core.DedupAppliance` and, on the
board's UART, the host protocol's INFO and APPLIANCE (:class:`~apbbf.hdl.appliance.host.ApplianceHost`)."""

from amaranth import Cat, ClockDomain, Module, ResetSignal
from amaranth.lib import cdc, io, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config
from ...model.packet import KeySpec
from .core import APPLIANCE_COUNTERS, MAX_FRAME, USER_HZ, ApplianceCore, DedupAppliance
from ..dram.litedram import LiteDRAMMemory
from ..eth.axis_mac import rgmii_ports
from .host import ApplianceHost, key_name

__all__ = ["ApplianceTop", "ApplianceVerilogTop"]


def _control(m, host, core):
    """The control registers of ``host`` drive the run-time control ports of ``core`` (its de-duplicator's)."""
    for name, member in core.signature.members.items():
        if name.startswith("control_"):
            port, register = getattr(core, name), getattr(host, name)
            m.d.comb += port.eq(register) if member.flow == In else register.eq(port)


class ApplianceTop(DedupAppliance):
    """The appliance's bitstream top for ``board``: the two ports and the de-duplicator, the UART at
    :attr:`baud` (1 ms inter-byte timeout), and on the Versa the LEDs (0 and 1: each port's link, 2: the UART
    busy, 3: the DRAM ready, 4: the DDR3's read leveling failed). The Colorlight's UART transmit pin is its only
    LED.

    Parameters
    ----------
    board : str
        ``"colorlight-5a75b"`` or ``"versa-ecp5"``.
    config : Config
    spec : KeySpec
        ``KeySpec.l3l4()`` (default) or ``KeySpec.frame()``.
    action : {"drop", "mark", "count"}
    dram : apbbf.flows.litedram.Core or None
        As :class:`~apbbf.hdl.appliance.core.DedupAppliance`.
    runtime_seed : bool
        The hash's run-time seed, re-keyed through the control registers (``apbbf host ... rekey``; off by
        default: it costs logic, ``docs/appliance.md``).
    runtime_window : bool
        The window writable at run time over the UART (``WINDOW``, up to what the memory holds at the planned
        rate): the de-duplicator's run-time window and the register's capability.
    """

    #: The UART's bit rate: ``sync`` (50 MHz) / 50, exact; the Versa's FT2232H makes 1 Mbaud exactly too.
    baud = 1_000_000

    def __init__(self, board: str, config: Config, spec: KeySpec | None = None, *, action: str = "drop",
                 dram=None, runtime_seed: bool = False, runtime_window: bool = False):
        spec = spec or KeySpec.l3l4()
        super().__init__(board, config, spec, action=action, dram=dram, runtime_seed=runtime_seed,
                         runtime_window=runtime_window)
        self._host = ApplianceHost(config, action=action, key=key_name(spec), max_frame=MAX_FRAME,
                                   divisor=round(USER_HZ) // self.baud, timeout_cycles=round(USER_HZ) // 1000,
                                   runtime_seed=runtime_seed, runtime_window=runtime_window)
        self.sync_hz = USER_HZ

    def elaborate(self, platform):
        # The appliance's module (its clocks, pins and core) with the host side added in its sync (the UART is
        # far slower than any clock here).
        m = super().elaborate(platform)
        appliance = self
        m.submodules.host = host = self._host
        m.d.comb += [host.counters.eq(Cat(getattr(appliance, name) for name in APPLIANCE_COUNTERS)),
                     host.link.eq(appliance.link_up)]
        _control(m, host, appliance)
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = tx = io.Buffer("o", uart.tx)
        m.d.comb += [host.rx.eq(rx.i), tx.o.eq(host.tx)]
        if self._board == "versa-ecp5":
            for number, value in enumerate([appliance.link_up[0], appliance.link_up[1], host.busy,
                                             appliance.dram_ready, appliance.dram_error]):
                m.submodules[f"led_{number}"] = led = io.Buffer("o", platform.request("led", number, dir="-"))
                m.d.comb += led.o.eq(value)
        return m


class ApplianceVerilogTop(wiring.Component):
    """The appliance without a board, for Verilog and the cocotb benches: :class:`~apbbf.hdl.appliance.core.
    ApplianceCore` and :class:`ApplianceHost` with their clocks and pins as ports.

    ============================  =====  ==========================================================================
    Port                          Dir    Meaning
    ============================  =====  ==========================================================================
    ``clk``, ``rst``              in     ``sync`` (the de-duplicator's and the host's clock), reset active high
    ``eth_tx_clk``                in     125 MHz, both transmit sides
    ``port{0,1}_rgmii_*``                each port's ``rx_clk``, ``rx_ctl``, ``rxd`` in; ``tx_clk``, ``tx_ctl``,
                                         ``txd`` out (the PHYs add the receive and transmit delays)
    ``uart_rx``, ``uart_tx``      in/out the host protocol, 8N1 at ``clk`` / ``divisor``
    counters, ``link_up``         out    as :class:`~apbbf.hdl.appliance.core.ApplianceCore`
    ``now_us``, ``frame_start``   out    each frame's time as the de-duplicator takes it (``time``)
    ============================  =====  ==========================================================================

    Parameters
    ----------
    config, spec, action
        As :class:`ApplianceTop`.
    tick_cycles : int
        ``clk`` cycles per microsecond.
    divisor : int
        ``clk`` cycles per UART bit.
    rx_depth : int
        Each receive FIFO's beats.
    runtime_seed : bool
        As :class:`ApplianceTop`.
    dram : apbbf.flows.litedram.Core or None
        With a Config of a row layout: the SDR SDRAM's LiteDRAM core (generated for ``clk``), its pins as
        ``sdram_*`` ports (:class:`~apbbf.hdl.dram.litedram.LiteDRAMMemory`), ``dram_ready`` (out) once the
        gateware has started it, and ``dedup_late`` (out, 32: the de-duplicator's ``late``).
    runtime_window : bool
        As :class:`ApplianceTop`.
    power_up_us : float
        With ``dram``: the SDRAM's power-up wait (:class:`~apbbf.hdl.dram.initializer.LiteDRAMInitializer`, 0 to
        1e6; the data sheet's 200 by default). A simulation may shorten it when its chip model is told the same
        wait (:class:`~apbbf.sim.cocotb.sdram_chip.SdramChecker`'s ``power_up``).
    """

    def __init__(self, config: Config, spec: KeySpec | None = None, *, action: str = "drop", tick_cycles: int = 50,
                 divisor: int = 50, rx_depth: int = 512, dram=None, runtime_seed: bool = False,
                 runtime_window: bool = False, power_up_us: float = 200.0):
        spec = spec or KeySpec.l3l4()
        # Refused before any block is made, so a refusal leaves nothing unused behind.
        if config.row_layout != (dram is not None):
            raise ValueError("a Config with a row layout goes with the DRAM (dram=...), and only it")
        if dram is not None and dram.settings.get("memtype", "SDR") != "SDR":
            raise ValueError(f"the Verilog top takes the SDR SDRAM's core only, not {dram.settings['memtype']}: the "
                             "DDR3 core's PHY has no simulation models")
        self._core = ApplianceCore(rgmii_ports("port0_rgmii_"), rgmii_ports("port1_rgmii_"), config, spec,
                                   action=action, tick_cycles=tick_cycles, rx_depth=rx_depth,
                                   runtime_seed=runtime_seed, runtime_window=runtime_window)
        self._host = ApplianceHost(config, action=action, key=key_name(spec), max_frame=MAX_FRAME,
                                   divisor=divisor, timeout_cycles=1000 * tick_cycles, runtime_seed=runtime_seed,
                                   runtime_window=runtime_window)
        self._dram = None if dram is None else LiteDRAMMemory(config, dram.settings, dram.csrs(),
                                                              power_up_us=power_up_us)
        super().__init__({
            "clk": In(1), "rst": In(1), "eth_tx_clk": In(1), "uart_rx": In(1, init=1), "uart_tx": Out(1, init=1),
            **{name: Out(32) for name in APPLIANCE_COUNTERS},
            "link_up": Out(2), "now_us": Out(config.time_width), "frame_start": Out(1),
            **({} if dram is None else {"dram_ready": Out(1), "dedup_late": Out(32)}),
        })

    @property
    def core(self) -> ApplianceCore:
        return self._core

    def elaborate(self, platform):
        m = Module()
        # sync and eth_tx from the ports, the transmit side's reset synchronized from sync's; nothing else.
        m.domains.sync = sync = ClockDomain("sync", local=True)
        m.domains.eth_tx = eth_tx = ClockDomain("eth_tx", local=True)
        m.d.comb += [sync.clk.eq(self.clk), sync.rst.eq(self.rst), eth_tx.clk.eq(self.eth_tx_clk)]
        m.submodules.tx_reset = cdc.ResetSynchronizer(ResetSignal("sync"), domain="eth_tx")
        m.submodules.core = core = self._core
        m.submodules.host = host = self._host
        _control(m, host, core)
        m.d.comb += [host.counters.eq(Cat(getattr(core, name) for name in APPLIANCE_COUNTERS)),
                     host.link.eq(core.link_up), host.rx.eq(self.uart_rx), self.uart_tx.eq(host.tx),
                     self.link_up.eq(core.link_up), self.now_us.eq(core.time), self.frame_start.eq(core.frame_start)]
        if self._dram is not None:
            m.submodules.dram = dram = self._dram
            wiring.connect(m, core.memory, dram.memory)
            m.d.comb += [self.dram_ready.eq(dram.ready), self.dedup_late.eq(core.dedup_late)]
        for name in APPLIANCE_COUNTERS:
            m.d.comb += getattr(self, name).eq(getattr(core, name))
        return m
