"""A start on the de-duplication appliance on a two-port board: port 0's frames through
:class:`~apbbf.hdl.packet_dedup.PacketDedup` and out of port 1, port 1's frames out of port 0 unchanged."""

from amaranth import ClockDomain, Module
from amaranth.build import Resource
from amaranth.lib import io, wiring

from ...model.config import Config
from ...model.packet import KeySpec
from ..packet_dedup import PacketDedup
from .ecp5_pll import ECP5PLL
from .loopback import BOARD_PHYS
from .mac import RGMIIMAC

__all__ = ["DedupAppliance", "USER_HZ"]

#: The de-duplicator's clock (``sync``), Hz: 64-bit beats need 15.6 MHz at line rate; a whole number of cycles
#: per microsecond for the time counter.
USER_HZ = 50e6


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


class DedupAppliance(wiring.Component):
    """The appliance's gateware without its host interface: two RGMII MACs (:class:`~apbbf.hdl.eth.mac.RGMIIMAC`)
    and a de-duplicator between port 0's receive side and port 1's transmit side, with time from a free-running
    counter in microseconds (``timestamps="counter"``); port 1's receive side goes to port 0's transmit side
    unchanged. Both transmit sides and ``sync`` (:data:`USER_HZ`) come from one ECP5 PLL on the board's
    reference clock.

    Frames are never held back at the line: when port 1 cannot keep up, the de-duplicator's buffer and then port
    0's receive FIFO fill, and the frames that do not fit are counted there (``rx_overflows`` of port 0).
    A frame the MAC marked bad goes through unchecked (the de-duplicator's ``errored``) and out with a bad FCS.

    Parameters
    ----------
    board : str
        A key of :data:`apbbf.hdl.eth.loopback.BOARD_PHYS`.
    config : Config
        The filter: a time window (span in microseconds), 64-bit keys.
    spec : KeySpec
        The key (default ``l3l4``).
    action : {"drop", "mark", "count"}
    data_width : int
        Beats between the MACs and the de-duplicator, 64..512 bits.
    """

    def __new__(cls, board: str, config: Config, *args, **kwargs):
        if board not in BOARD_PHYS:
            raise ValueError(f"board must be one of {', '.join(BOARD_PHYS)}, not {board!r}")
        return super().__new__(cls, src_loc_at=1)

    def __init__(self, board: str, config: Config, spec: KeySpec | None = None, *, action: str = "drop",
                 data_width: int = 64):
        self._board = board
        self._dedup = PacketDedup(config, spec or KeySpec.l3l4(), data_width=data_width, action=action,
                                  timestamps="counter", tick_cycles=round(USER_HZ / 1e6), fcs=False)
        self._data_width = data_width
        super().__init__({})

    @property
    def dedup(self) -> PacketDedup:
        return self._dedup

    def elaborate(self, platform):
        m = Module()
        # One transmit clock for both ports (the PHYs take any 125 MHz within 100 ppm); each port's receive
        # side runs on its PHY's clock inside its MAC; the de-duplicator runs in sync.
        _, clock, clock_hz, rx_delay, tx_delay = BOARD_PHYS[self._board]
        m.domains.eth_tx = ClockDomain("eth_tx")
        m.domains.sync = ClockDomain("sync")
        m.submodules.pll = pll = ECP5PLL(input_hz=clock_hz, output_hz=125e6, second_hz=USER_HZ)
        m.submodules.clk_buffer = clk = io.Buffer("i", platform.request(clock, 0, dir="-"))
        m.d.comb += pll.clk_in.eq(clk.i)

        port0_pins = platform.request("eth_rgmii", 0, dir="-")
        port1_pins = _port_pins(platform, 1)
        options = dict(data_width=self._data_width, tx_domain="eth_tx", rx_delay=rx_delay, tx_delay=tx_delay)
        m.submodules.port0 = port0 = RGMIIMAC(port0_pins, **options)
        m.submodules.port1 = port1 = RGMIIMAC(port1_pins, **options)
        m.submodules.dedup = dedup = self._dedup

        m.d.comb += [
            dedup.i.valid.eq(port0.rx.valid), port0.rx.ready.eq(dedup.i.ready),
            dedup.i.payload.data.eq(port0.rx.payload.data), dedup.i.payload.keep.eq(port0.rx.payload.keep),
            dedup.i.payload.last.eq(port0.rx.payload.last),
            dedup.i.payload.user.error.eq(port0.rx.payload.user.error),
            port1.tx.valid.eq(dedup.o.valid), dedup.o.ready.eq(port1.tx.ready),
            port1.tx.payload.data.eq(dedup.o.payload.data), port1.tx.payload.keep.eq(dedup.o.payload.keep),
            port1.tx.payload.last.eq(dedup.o.payload.last),
            port1.tx.payload.user.error.eq(dedup.o.payload.user.errored),
        ]
        wiring.connect(m, port1.rx, port0.tx)

        m.submodules.phy_reset = phy_reset = io.Buffer("o", port0_pins.rst)
        m.d.comb += phy_reset.o.eq(0)             # active low (PinsN): 0 holds the PHYs out of reset
        if hasattr(port1_pins, "rst"):
            m.submodules.phy1_reset = phy1_reset = io.Buffer("o", port1_pins.rst)
            m.d.comb += phy1_reset.o.eq(0)
        return m
