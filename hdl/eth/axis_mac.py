# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""The RGMII MAC behind AXI4-Stream ports and its own pins, for Verilog designs and the cocotb benches.

======================  =====  ======  =================================================================
Port                    Dir    Width   Meaning
======================  =====  ======  =================================================================
``aclk``                in     1       The user's clock (``sync``).
``aresetn``             in     1       Synchronous reset, active low; it resets the receive side too.
``eth_tx_clk``          in     1       125 MHz transmit clock (it also leaves as ``rgmii_tx_clk``).
``m_axis_t*``           out    W       Frames received, without FCS: ``tdata``, ``tkeep``, ``tlast``,
                                       ``tuser`` (``[0]`` on the last beat: the frame is bad), ``tvalid``,
                                       ``tready`` (in).
``s_axis_t*``           in     W       Frames to send: ``tuser[0]`` on the last beat sends it with a bad FCS.
``rgmii_*``                            ``rx_clk``, ``rx_ctl``, ``rxd[3:0]`` in; ``tx_clk``, ``tx_ctl``,
                                       ``txd[3:0]`` out.
``rx_frames`` ...       out    32      The counters of :data:`~apbbf.hdl.eth.mac.COUNTERS`.
======================  =====  ======  =================================================================

Convert it with :class:`~apbbf.hdl.eth.generic_io.GenericIOPlatform` (plain registers on both edges) or with a
vendor platform.
"""

from amaranth import ClockDomain, Module, ResetSignal
from amaranth.lib import cdc, io, wiring
from amaranth.lib.wiring import In, Out

from .layouts import check_data_width
from .mac import COUNTERS, RGMIIMAC

__all__ = ["AXIStreamRGMIIMAC", "rgmii_ports"]


class _Pins:
    def __init__(self, prefix):
        self.rx_clk = io.SingleEndedPort(io.IOPort(1, name=f"{prefix}rx_clk"))
        self.rx_ctl = io.SingleEndedPort(io.IOPort(1, name=f"{prefix}rx_ctl"))
        self.rx_data = io.SingleEndedPort(io.IOPort(4, name=f"{prefix}rxd"))
        self.tx_clk = io.SingleEndedPort(io.IOPort(1, name=f"{prefix}tx_clk"))
        self.tx_ctl = io.SingleEndedPort(io.IOPort(1, name=f"{prefix}tx_ctl"))
        self.tx_data = io.SingleEndedPort(io.IOPort(4, name=f"{prefix}txd"))


def rgmii_ports(prefix: str = "rgmii_"):
    """Top-level RGMII ports named ``<prefix>rx_clk``, ``rx_ctl``, ``rxd``, ``tx_clk``, ``tx_ctl``, ``txd``, in
    the shape :class:`~apbbf.hdl.eth.rgmii.RGMII` takes."""
    return _Pins(prefix)


class AXIStreamRGMIIMAC(wiring.Component):
    """:class:`~apbbf.hdl.eth.mac.RGMIIMAC` with AXI4-Stream ports named as Verilog designs expect.

    Parameters
    ----------
    data_width : int
        ``tdata`` bits, one of :data:`~apbbf.hdl.eth.layouts.DATA_WIDTHS`.
    **options
        As :class:`~apbbf.hdl.eth.mac.RGMIIMAC` (``rx_depth``, ``tx_depth``, ``ifg``, ...).
    """

    def __init__(self, data_width: int = 64, **options):
        check_data_width(data_width)
        W = data_width
        self._mac = RGMIIMAC(rgmii_ports(), data_width=data_width, tx_domain="eth_tx", **options)
        super().__init__({
            "aclk": In(1), "aresetn": In(1), "eth_tx_clk": In(1),
            "m_axis_tvalid": Out(1), "m_axis_tready": In(1), "m_axis_tdata": Out(W), "m_axis_tkeep": Out(W // 8),
            "m_axis_tlast": Out(1), "m_axis_tuser": Out(1),
            "s_axis_tvalid": In(1), "s_axis_tready": Out(1), "s_axis_tdata": In(W), "s_axis_tkeep": In(W // 8),
            "s_axis_tlast": In(1), "s_axis_tuser": In(1),
            **{name: Out(32) for name in COUNTERS},
            "link_up": Out(1), "speed": Out(2), "full_duplex": Out(1),
        })

    @property
    def mac(self) -> RGMIIMAC:
        return self._mac

    def elaborate(self, platform):
        m = Module()
        # The user's domain from aclk/aresetn, the transmit domain from eth_tx_clk with the user's reset
        # synchronized to it; no registers of its own.
        m.domains.sync = sync = ClockDomain("sync", local=True)
        m.domains.eth_tx = eth_tx = ClockDomain("eth_tx", local=True)
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn), eth_tx.clk.eq(self.eth_tx_clk)]
        m.submodules.tx_reset = cdc.ResetSynchronizer(ResetSignal("sync"), domain="eth_tx")
        m.submodules.mac = mac = self._mac
        m.d.comb += [
            self.m_axis_tvalid.eq(mac.rx.valid), mac.rx.ready.eq(self.m_axis_tready),
            self.m_axis_tdata.eq(mac.rx.payload.data), self.m_axis_tkeep.eq(mac.rx.payload.keep),
            self.m_axis_tlast.eq(mac.rx.payload.last), self.m_axis_tuser.eq(mac.rx.payload.user.error),
            mac.tx.valid.eq(self.s_axis_tvalid), self.s_axis_tready.eq(mac.tx.ready),
            mac.tx.payload.data.eq(self.s_axis_tdata), mac.tx.payload.keep.eq(self.s_axis_tkeep),
            mac.tx.payload.last.eq(self.s_axis_tlast), mac.tx.payload.user.error.eq(self.s_axis_tuser),
            self.link_up.eq(mac.link_up), self.speed.eq(mac.speed), self.full_duplex.eq(mac.full_duplex),
        ]
        for name in COUNTERS:
            m.d.comb += getattr(self, name).eq(getattr(mac, name))
        return m
