"""The RGMII Gigabit Ethernet MAC: the PHY interface, receive and transmit framing, and the clock domain crossings
to the user's domain."""

from amaranth import Cat, ClockDomain, DomainRenamer, Module, ResetSignal, Signal
from amaranth.lib import cdc, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .beat_packer import BeatPacker
from .beat_unpacker import BeatUnpacker
from ..lib.cdc_fifo import RegisteredAsyncFIFO
from .layouts import MIN_IFG, beat_layout, byte_layout, check_data_width
from .rgmii import RGMII, check_rgmii_parameters
from .rx_framer import RXFramer
from .tx_framer import TXFramer, check_ifg

__all__ = ["RGMIIMAC", "COUNTERS", "RX_STAGES"]

#: The MAC's counters, in the user's domain, 32 bits each (they wrap).
COUNTERS = ("rx_frames", "rx_bad_fcs", "rx_phy_errors", "rx_runts", "rx_overflows", "tx_frames", "tx_underflows")


#: Registers between the receive framer and the beat packer (the last one the packer's input), each a clock of
#: the receive side's latency.
RX_STAGES = 4


def _check_depth(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < minimum or value > 1 << 16 or value & (value - 1):
        raise ValueError(f"{name} must be a power of 2 from {minimum} to 65536 beats, not {value}")


class RGMIIMAC(wiring.Component):
    """A Gigabit Ethernet MAC on an RGMII PHY, with frames as ``lib.stream`` beats in the user's domain (``sync``).

    Receive: the PHY's clock clocks a receive domain inside the MAC; frames are checked (:class:`RXFramer`),
    packed into beats (:class:`BeatPacker`) and cross to ``sync`` through a
    :class:`~apbbf.hdl.lib.cdc_fifo.RegisteredAsyncFIFO` of ``rx_depth`` beats (and
    :data:`~apbbf.hdl.lib.cdc_fifo.STAGE_DEPTH` in its output stage). They come out on ``rx`` without preamble,
    SFD or FCS, with ``user.error`` on the last beat of a bad one (bad FCS, PHY error, runt, or cut short because
    ``rx`` was held back until the FIFO filled). The receive side is reset by ``sync``'s reset.

    Transmit: frames on ``tx`` cross to ``tx_domain`` (a 125 MHz domain the design provides) through an
    ``RegisteredAsyncFIFO`` of ``tx_depth`` (+ ``STAGE_DEPTH``) beats and a three-byte queue, and go out one byte
    per clock with preamble, SFD, padding to 60 bytes, FCS and the inter-frame gap (:class:`TXFramer`). A frame
    whose last beat has ``user.error`` goes out with a bad FCS. Once a frame has started on the wire it must not
    starve: ``sync`` must deliver its beats as fast as the line takes them (``data_width / 8`` bytes per beat at
    125 MB/s: with 64-bit beats one beat every eight transmit clocks) or the frame is cut short and marked bad
    (``tx_underflows``). A design that cannot promise it gives ``tx`` whole frames at a time (store and forward
    before the MAC).

    The counters count in ``sync`` (events in the PHY's domains cross through pulse synchronizers: at most one
    per frame, so none is lost).

    100 Mb/s and 10 Mb/s (RGMII at 25 and 2.5 MHz, four bits per clock) are not supported.

    Parameters
    ----------
    pins
        The RGMII resource, requested with ``dir="-"`` (see :class:`~apbbf.hdl.eth.rgmii.RGMII`).
    data_width : int
        Bits per beat on ``rx`` and ``tx``, one of :data:`~apbbf.hdl.eth.layouts.DATA_WIDTHS`.
    tx_domain : str
        The transmit clock domain, 125 MHz; it also clocks ``tx_clk`` to the PHY.
    rx_depth, tx_depth : int
        Beats in the receive and transmit FIFOs' memories, powers of 2 from 4 (each FIFO holds
        :data:`~apbbf.hdl.lib.cdc_fifo.STAGE_DEPTH` more in its output stage). The receive FIFO absorbs the time
        ``rx`` is held back (512 beats of 64 bits: 4 KiB, 33 us at line rate); the transmit FIFO only has to cover the clocks' drift and the user side's
        latency (``tx`` is held back when it is full), and a short one keeps its pointers' logic fast.
    rx_delay, tx_delay : float
        I/O delays, see :class:`~apbbf.hdl.eth.rgmii.RGMII`.
    ifg : int
        Inter-frame gap on transmit, byte times, 12..255.

    Attributes
    ----------
    rx : Out(stream.Signature(beat_layout(data_width)))
    tx : In(stream.Signature(beat_layout(data_width)))
    rx_frames, rx_bad_fcs, rx_phy_errors, rx_runts, rx_overflows, tx_frames, tx_underflows : Out(32)
        ``rx_frames`` counts the frames received with at least one byte besides the FCS (good or bad, and
        those then cut short or dropped whole for want of room: ``rx_overflows``), ``tx_frames`` the frames sent
        whole. Each counts once per frame as long as ``sync`` runs at least at 1/8 of 125 MHz.
    link_up, full_duplex : Out(1)
    speed : Out(2)
        The PHY's in-band status (:class:`~apbbf.hdl.eth.rgmii.RGMII`), synchronized to ``sync``.
    """

    def __init__(self, pins, *, data_width: int = 64, tx_domain: str = "eth_tx", rx_depth: int = 512,
                 tx_depth: int = 64, rx_delay: float = 0.0, tx_delay: float = 0.0, ifg: int = MIN_IFG):
        check_data_width(data_width)
        if not isinstance(tx_domain, str) or not tx_domain or tx_domain in ("sync", "rx"):
            raise TypeError(f"tx_domain must be a domain name other than 'sync' and 'rx', not {tx_domain!r}")
        _check_depth("rx_depth", rx_depth, 4)
        _check_depth("tx_depth", tx_depth, 4)
        check_rgmii_parameters(pins, rx_domain="rx", tx_domain=tx_domain, rx_delay=rx_delay, tx_delay=tx_delay)
        check_ifg(ifg)
        self._data_width = data_width
        self._tx_domain = tx_domain
        self._rx_depth, self._tx_depth = rx_depth, tx_depth
        self._phy = RGMII(pins, rx_domain="rx", tx_domain=tx_domain, rx_delay=rx_delay, tx_delay=tx_delay)
        self._tx_framer = TXFramer(ifg=ifg)
        super().__init__({
            "rx": Out(stream.Signature(beat_layout(data_width))),
            "tx": In(stream.Signature(beat_layout(data_width))),
            **{name: Out(32) for name in COUNTERS},
            "link_up": Out(1), "speed": Out(2), "full_duplex": Out(1),
        })

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def tx_domain(self) -> str:
        return self._tx_domain

    def elaborate(self, platform):
        m = Module()
        # Byte-wide logic in the PHY's clocks, wide beats in the user's: the FIFOs cross at the wide side, so
        # the user's domain may run as slowly as 125 MHz * 8 / data_width. The receive side cannot be held back
        # (the packer cuts frames that do not fit, never the FIFO); the transmit side is paced by the line.
        tx_domain = self._tx_domain
        m.domains.rx = rx = ClockDomain("rx", local=True)
        m.submodules.phy = phy = self._phy
        m.d.comb += rx.clk.eq(phy.rx_clk)
        m.submodules.rx_reset = cdc.ResetSynchronizer(ResetSignal("sync"), domain="rx")

        m.submodules.rx_framer = rx_framer = DomainRenamer("rx")(RXFramer())
        m.submodules.packer = packer = DomainRenamer("rx")(BeatPacker(self._data_width))
        # Registered FIFOs: their block RAM's address and read data, and their pointers, start and end at
        # registers (5.8 ns clock-to-out of an ECP5 block RAM without its output register; lib.fifo's pointer
        # logic missed 125 MHz with the de-duplicator beside it), so the logic around them has the whole clock.
        m.submodules.rx_fifo = rx_fifo = RegisteredAsyncFIFO(
            width=beat_layout(self._data_width).size, depth=self._rx_depth, w_domain="rx", r_domain="sync")
        # A register before the framer and RX_STAGES after it: the receive registers sit in the I/O cells at the
        # pins, far from the logic; the framer's end-of-frame decisions (length, FCS residue) feed the packer's
        # room logic; and the packer's beat register sits by the FIFO's block RAM, which in a full 25F can be
        # across the chip from the framer: with two registers, one wire between them took 7.85 ns of routing from
        # port 1's pins to the packer, and a register fed by the framer's state through its LSR pin (yosys makes
        # `valid` a synchronous reset from the state) 6.77 ns. With four, the 11 bits cross the chip in hops of
        # a clock each, and the register behind the framer's state needs no long route.
        # Each costs a clock of latency and nothing else (the receive side is never held back).
        m.d.rx += [rx_framer.gmii.data.eq(phy.gmii_rx.data), rx_framer.gmii.dv.eq(phy.gmii_rx.dv),
                   rx_framer.gmii.er.eq(phy.gmii_rx.er)]
        byte, byte_valid = rx_framer.o.payload, rx_framer.o.valid
        for stage in range(RX_STAGES - 1):
            next_byte = Signal.like(rx_framer.o.payload, name=f"rx_byte{stage}")
            next_valid = Signal(name=f"rx_byte{stage}_valid")
            m.d.rx += [next_valid.eq(byte_valid), next_byte.eq(byte)]
            byte, byte_valid = next_byte, next_valid
        m.d.rx += [packer.i.valid.eq(byte_valid), packer.i.payload.eq(byte)]
        m.d.comb += [
            rx_fifo.i.payload.eq(packer.o.payload), rx_fifo.i.valid.eq(packer.o.valid),
            self.rx.payload.eq(rx_fifo.o.payload), self.rx.valid.eq(rx_fifo.o.valid), rx_fifo.o.ready.eq(self.rx.ready),
        ]
        # The room is a register computed a clock ahead from w_level alone, compared with constants (no carry
        # chain): w_level is a register too and misses up to two beats written on the last two clocks, which
        # are taken as written (the packer counts the beat it writes on the current clock itself).
        room = Signal(2)
        depth = rx_fifo.depth
        with m.If(rx_fifo.w_level <= depth - 5):
            m.d.rx += room.eq(3)
        with m.Elif(rx_fifo.w_level == depth - 4):
            m.d.rx += room.eq(2)
        with m.Elif(rx_fifo.w_level == depth - 3):
            m.d.rx += room.eq(1)
        with m.Else():
            m.d.rx += room.eq(0)
        m.d.comb += packer.o_room.eq(room)

        m.submodules.tx_fifo = tx_fifo = RegisteredAsyncFIFO(
            width=beat_layout(self._data_width).size, depth=self._tx_depth, w_domain="sync", r_domain=tx_domain)
        m.submodules.unpacker = unpacker = DomainRenamer(tx_domain)(BeatUnpacker(self._data_width))
        m.submodules.tx_framer = tx_framer = DomainRenamer(tx_domain)(self._tx_framer)
        m.d.comb += [
            tx_fifo.i.payload.eq(self.tx.payload), tx_fifo.i.valid.eq(self.tx.valid), self.tx.ready.eq(tx_fifo.i.ready),
            unpacker.i.payload.eq(tx_fifo.o.payload), unpacker.i.valid.eq(tx_fifo.o.valid),
            tx_fifo.o.ready.eq(unpacker.i.ready),
        ]
        # A three-byte queue between the unpacker and the framer: the framer's state (whether it takes a byte)
        # then moves only the queue's read side, and the unpacker's 64 enables hang on the queue's level, a
        # register beside them. Straight, the framer's state reached those enables through four LUTs and across
        # the chip (9.4 ns of an 8 ns clock in a full 25F). Three entries keep one byte per clock flowing.
        m.submodules.tx_bytes = tx_bytes = DomainRenamer(tx_domain)(
            fifo.SyncFIFOBuffered(width=byte_layout().size, depth=3))
        m.d.comb += [
            tx_bytes.w_data.eq(unpacker.o.payload), tx_bytes.w_en.eq(unpacker.o.valid),
            unpacker.o.ready.eq(tx_bytes.w_rdy),
            tx_framer.i.payload.eq(tx_bytes.r_data), tx_framer.i.valid.eq(tx_bytes.r_rdy),
            tx_bytes.r_en.eq(tx_framer.i.ready),
        ]
        wiring.connect(m, tx_framer.gmii, phy.gmii_tx)

        events = {
            "rx_frames": ("rx", rx_framer.frame), "rx_bad_fcs": ("rx", rx_framer.bad_fcs),
            "rx_phy_errors": ("rx", rx_framer.phy_error), "rx_runts": ("rx", rx_framer.runt),
            "rx_overflows": ("rx", packer.overflow),
            "tx_frames": (tx_domain, tx_framer.frame), "tx_underflows": (tx_domain, tx_framer.underflow),
        }
        # Each event registered in its own domain first: the framer's and the packer's states then reach only
        # that register, not the synchronizer's input wherever it was placed.
        for name, (domain, pulse) in events.items():
            m.submodules[f"{name}_sync"] = sync = cdc.PulseSynchronizer(domain, "sync")
            pulse_reg = Signal(name=f"{name}_pulse")
            m.d[domain] += pulse_reg.eq(pulse)
            m.d.comb += sync.i.eq(pulse_reg)
            counter = getattr(self, name)
            with m.If(sync.o):
                m.d.sync += counter.eq(counter + 1)

        status = Signal(4)
        m.submodules.status_sync = cdc.FFSynchronizer(Cat(phy.link_up, phy.speed, phy.full_duplex), status,
                                                      o_domain="sync")
        m.d.comb += [self.link_up.eq(status[0]), self.speed.eq(status[1:3]), self.full_duplex.eq(status[3])]
        return m
