"""The de-duplication appliance on a two-port board: :class:`~apbbf.hdl.eth.appliance.DedupAppliance` and, on the
board's UART, the host protocol's INFO and APPLIANCE (:class:`~apbbf.hdl.board.appliance_host.ApplianceHost`)."""

from amaranth import Cat
from amaranth.lib import io

from ...model.config import Config
from ...model.packet import KeySpec
from ..eth.appliance import APPLIANCE_COUNTERS, MAX_FRAME, USER_HZ, DedupAppliance
from .appliance_host import ApplianceHost, key_name

__all__ = ["ApplianceTop"]


class ApplianceTop(DedupAppliance):
    """The appliance's bitstream top for ``board``: the two ports and the de-duplicator, the UART at
    :attr:`baud` (1 ms inter-byte timeout), and on the Versa the LEDs (0 and 1: each port's link, 2: the UART
    busy). The Colorlight's UART transmit pin is its only LED.

    Parameters
    ----------
    board : str
        ``"colorlight-5a75b"`` or ``"versa-ecp5"``.
    config : Config
    spec : KeySpec
        ``KeySpec.l3l4()`` (default) or ``KeySpec.frame()``.
    action : {"drop", "mark", "count"}
    """

    #: The UART's bit rate: ``sync`` (50 MHz) / 50, exact; the Versa's FT2232H makes 1 Mbaud exactly too.
    baud = 1_000_000

    def __init__(self, board: str, config: Config, spec: KeySpec | None = None, *, action: str = "drop"):
        spec = spec or KeySpec.l3l4()
        super().__init__(board, config, spec, action=action)
        self._host = ApplianceHost(config, action=action, key=key_name(spec), max_frame=MAX_FRAME,
                                   divisor=round(USER_HZ) // self.baud, timeout_cycles=round(USER_HZ) // 1000)
        self.sync_hz = USER_HZ

    def elaborate(self, platform):
        # The appliance's module (its clocks, pins and core) with the host side added in its sync (the UART is
        # far slower than any clock here).
        m = super().elaborate(platform)
        appliance = self
        m.submodules.host = host = self._host
        m.d.comb += [host.counters.eq(Cat(getattr(appliance, name) for name in APPLIANCE_COUNTERS)),
                     host.link.eq(appliance.link_up)]
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = tx = io.Buffer("o", uart.tx)
        m.d.comb += [host.rx.eq(rx.i), tx.o.eq(host.tx)]
        if self._board == "versa-ecp5":
            for number, value in enumerate([appliance.link_up[0], appliance.link_up[1], host.busy]):
                m.submodules[f"led_{number}"] = led = io.Buffer("o", platform.request("led", number, dir="-"))
                m.d.comb += led.o.eq(value)
        return m
