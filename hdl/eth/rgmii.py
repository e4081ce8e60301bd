"""The RGMII PHY interface: four data bits and a control bit each way on both clock edges, GMII bytes inside."""

from amaranth import Cat, ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import io, wiring
from amaranth.lib.wiring import In, Out

from .layouts import GMIIRxSignature, GMIITxSignature

__all__ = ["RGMII", "DELAY_TAP", "MAX_DELAY", "check_rgmii_parameters"]

#: ECP5 DELAYG step, seconds (25 ps, Lattice TN1265).
DELAY_TAP = 25e-12
#: Longest ECP5 DELAYG delay, seconds (127 steps).
MAX_DELAY = 127 * DELAY_TAP


def _pin(pins, *names):
    for name in names:
        if hasattr(pins, name):
            return getattr(pins, name)
    raise TypeError(f"pins has no {' or '.join(names)} (an RGMII resource requested with dir='-')")


def _check_delay(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {value!r}")
    if not 0 <= value <= MAX_DELAY:
        raise ValueError(f"{name} must be from 0 to {MAX_DELAY:.3e} s (127 ECP5 delay steps), not {value}")


def _ports(pins):
    return {
        "rx_clk": _pin(pins, "rx_clk"), "rx_ctl": _pin(pins, "rx_ctl", "rx_ctrl"),
        "rx_data": _pin(pins, "rx_data"), "tx_clk": _pin(pins, "tx_clk"),
        "tx_ctl": _pin(pins, "tx_ctl", "tx_ctrl"), "tx_data": _pin(pins, "tx_data"),
    }


def check_rgmii_parameters(pins, *, rx_domain, tx_domain, rx_delay, tx_delay) -> None:
    """Raise ``TypeError``/``ValueError`` naming the first of :class:`RGMII`'s parameters that is bad."""
    for name, value in (("rx_domain", rx_domain), ("tx_domain", tx_domain)):
        if not isinstance(value, str) or not value:
            raise TypeError(f"{name} must be a domain name, not {value!r}")
    _check_delay("rx_delay", rx_delay)
    _check_delay("tx_delay", tx_delay)
    for name, port in _ports(pins).items():
        expected = 4 if name.endswith("data") else 1
        if len(port) != expected:
            raise ValueError(f"pins.{name} must have {expected} bits, not {len(port)}")


class RGMII(wiring.Component):
    """An RGMII PHY's pins as GMII bytes, at 1000 Mb/s (125 MHz, both edges).

    Receive: the PHY's ``rx_clk`` clocks the receive domain (``rx_clk`` here; the parent makes the domain
    ``rx_domain`` of it). On the rising edge ``rx_data`` carries bits 3..0 and ``rx_ctl`` the data valid; on the
    falling edge bits 7..4 and valid XOR error. Between frames the PHY sends its link status in band (RGMII 2.0
    section 3.4.1): ``link_up``, ``speed`` and ``full_duplex``, in the receive domain.

    Transmit: the bytes on ``gmii_tx`` are sent in ``tx_domain`` (a 125 MHz clock the parent makes, from a PLL or
    the board's oscillator), and ``tx_clk`` is that clock, sent as DDR data (1 on the rising, 0 on the falling
    edge) so that it leaves the chip through the same kind of register as the data.

    Clocking. RGMII sends clock and data edge-aligned and wants 1.5..2 ns of skew at the receiver. Either the
    PHY adds it (its "RGMII-ID" internal delays, by a strap or a register) and the FPGA uses plain DDR registers
    through the platform (``io.DDRBuffer``), or the FPGA delays: ``rx_delay`` puts an ECP5 ``DELAYG`` (25 ps
    steps) between the pad and the input DDR register of ``rx_ctl`` and ``rx_data``, ``tx_delay`` one after the
    output DDR register of ``tx_clk``. On the Colorlight 5A-75B the B50612D delays its transmit clock by itself
    and the FPGA delays the received data 2 ns (``rx_delay=2e-9, tx_delay=0``, LiteEth's setting for the board);
    the Versa's PHYs add both delays themselves (``rx_delay=tx_delay=0``, LiteEth's setting for that board).

    Parameters
    ----------
    pins
        The platform's RGMII resource requested with ``dir="-"``: ``rx_clk``, ``rx_ctl`` (or ``rx_ctrl``),
        ``rx_data``, ``tx_clk``, ``tx_ctl`` (or ``tx_ctrl``), ``tx_data``.
    rx_domain, tx_domain : str
        The receive and transmit clock domains.
    rx_delay, tx_delay : float
        Seconds of ECP5 input delay on the received data, of output delay on ``tx_clk``; 0 (no delay element)
        to 3.175 ns. On a platform other than ECP5 they must be 0, except on
        :class:`~apbbf.hdl.eth.generic_io.GenericIOPlatform` (simulation: no delays).

    Attributes
    ----------
    rx_clk : Out(1)
        The received clock, to clock ``rx_domain``.
    gmii_rx : Out(GMIIRxSignature())
        In ``rx_domain``, registered.
    gmii_tx : In(GMIITxSignature())
        In ``tx_domain``.
    link_up, full_duplex : Out(1)
    speed : Out(2)
        In-band status: 0 for 10, 1 for 100, 2 for 1000 Mb/s.
    """

    rx_clk: Out(1)
    gmii_rx: Out(GMIIRxSignature())
    gmii_tx: In(GMIITxSignature())
    link_up: Out(1)
    speed: Out(2)
    full_duplex: Out(1)

    def __init__(self, pins, *, rx_domain: str = "rx", tx_domain: str = "tx", rx_delay: float = 0.0,
                 tx_delay: float = 0.0):
        check_rgmii_parameters(pins, rx_domain=rx_domain, tx_domain=tx_domain, rx_delay=rx_delay,
                               tx_delay=tx_delay)
        self._ports = _ports(pins)
        self._rx_domain, self._tx_domain = rx_domain, tx_domain
        self._rx_delay, self._tx_delay = rx_delay, tx_delay
        super().__init__()

    @property
    def rx_delay(self) -> float:
        return self._rx_delay

    @property
    def tx_delay(self) -> float:
        return self._tx_delay

    def _delays_apply(self, platform):
        if getattr(platform, "family", None) == "ecp5":
            return True
        if getattr(platform, "ignores_io_delays", False):
            return False
        if self._rx_delay or self._tx_delay:
            raise NotImplementedError(f"rx_delay and tx_delay use ECP5 DELAYG elements; on {platform!r} set "
                                      "them to 0 and let the PHY add the RGMII skew")
        return False

    def _ddr_in(self, m, name, port, delay_taps):
        buffer_i = Signal(2 * len(port), name=f"{name}_ddr")
        if not delay_taps:
            m.submodules[name] = buffer = io.DDRBuffer("i", port, i_domain=self._rx_domain)
            m.d.comb += buffer_i.eq(Cat(buffer.i[0], buffer.i[1]))
            return buffer_i[:len(port)], buffer_i[len(port):]
        # The ECP5 path the platform has no option for: pad, DELAYG, IDDRX1F.
        rise, fall = Signal(len(port), name=f"{name}_rise"), Signal(len(port), name=f"{name}_fall")
        for bit in range(len(port)):
            pad, delayed = Signal(name=f"{name}_pad{bit}"), Signal(name=f"{name}_delayed{bit}")
            m.submodules[f"{name}_ib{bit}"] = Instance("IB", i_I=port.io[bit], o_O=pad)
            m.submodules[f"{name}_delay{bit}"] = Instance(
                "DELAYG", p_DEL_MODE="SCLK_ALIGNED", p_DEL_VALUE=delay_taps, i_A=pad, o_Z=delayed)
            m.submodules[f"{name}_iddr{bit}"] = Instance(
                "IDDRX1F", i_SCLK=ClockSignal(self._rx_domain), i_RST=Const(0), i_D=delayed,
                o_Q0=rise[bit], o_Q1=fall[bit])
        return rise, fall

    def elaborate(self, platform):
        delays = self._delays_apply(platform)                  # raises before a Module exists
        m = Module()
        # DDR registers in the I/O cells (io.DDRBuffer through the platform) on every data and control pin, and
        # one more register stage in the fabric each way: what reaches the framers is a plain registered byte.
        rx_taps = round(self._rx_delay / DELAY_TAP) if delays else 0
        tx_taps = round(self._tx_delay / DELAY_TAP) if delays else 0
        ports = self._ports

        m.submodules.rx_clk_buffer = rx_clk = io.Buffer("i", ports["rx_clk"])
        m.d.comb += self.rx_clk.eq(rx_clk.i)
        if hasattr(platform, "add_clock_constraint") and hasattr(ports["rx_clk"], "io"):
            platform.add_clock_constraint(ports["rx_clk"].io, 125e6)

        rx = m.d[self._rx_domain]
        ctl_rise, ctl_fall = self._ddr_in(m, "rx_ctl", ports["rx_ctl"], rx_taps)
        data_rise, data_fall = self._ddr_in(m, "rx_data", ports["rx_data"], rx_taps)
        rx += [
            self.gmii_rx.data.eq(Cat(data_rise, data_fall)),
            self.gmii_rx.dv.eq(ctl_rise),
            self.gmii_rx.er.eq(ctl_rise ^ ctl_fall),
        ]
        with m.If(~ctl_rise & ~(ctl_rise ^ ctl_fall)):           # idle: in-band status
            rx += [self.link_up.eq(data_rise[0]), self.speed.eq(data_rise[1:3]),
                   self.full_duplex.eq(data_rise[3])]

        m.submodules.tx_data = tx_data = io.DDRBuffer("o", ports["tx_data"], o_domain=self._tx_domain)
        m.submodules.tx_ctl = tx_ctl = io.DDRBuffer("o", ports["tx_ctl"], o_domain=self._tx_domain)
        m.d.comb += [
            tx_data.o[0].eq(self.gmii_tx.data[:4]), tx_data.o[1].eq(self.gmii_tx.data[4:]),
            tx_ctl.o[0].eq(self.gmii_tx.en), tx_ctl.o[1].eq(self.gmii_tx.en ^ self.gmii_tx.er),
        ]
        if not tx_taps:
            m.submodules.tx_clk = tx_clk = io.DDRBuffer("o", ports["tx_clk"], o_domain=self._tx_domain)
            m.d.comb += [tx_clk.o[0].eq(1), tx_clk.o[1].eq(0)]
        else:
            # ODDRX1F, DELAYG, pad: the clock leaves tx_taps steps after the data.
            ddr, delayed = Signal(), Signal()
            m.submodules.tx_clk_oddr = Instance(
                "ODDRX1F", i_SCLK=ClockSignal(self._tx_domain), i_RST=Const(0), i_D0=Const(1), i_D1=Const(0),
                o_Q=ddr)
            m.submodules.tx_clk_delay = Instance(
                "DELAYG", p_DEL_MODE="SCLK_ALIGNED", p_DEL_VALUE=tx_taps, i_A=ddr, o_Z=delayed)
            m.submodules.tx_clk_ob = Instance("OB", i_I=delayed, o_O=ports["tx_clk"].io[0])
        return m
