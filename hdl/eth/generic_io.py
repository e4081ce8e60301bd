"""I/O buffers in plain logic, so that designs with ``io.DDRBuffer`` can be simulated as Verilog and exported for
other vendors' tools."""

from amaranth import ClockDomain, ClockSignal, Module, Mux, Signal
from amaranth.hdl import IOBufferInstance
from amaranth.lib import io

__all__ = ["GenericIOPlatform"]


class _Buffer(io.Buffer):
    def elaborate(self, platform):
        m = Module()
        port = self._port
        inv = sum(bit << n for n, bit in enumerate(port.invert))
        i = Signal(len(port)) if self.direction is not io.Direction.Output else None
        o = Signal(len(port)) if self.direction is not io.Direction.Input else None
        m.submodules.buffer = IOBufferInstance(port.io, i=i, o=o, oe=self.oe if o is not None else None)
        if i is not None:
            m.d.comb += self.i.eq(i ^ inv)
        if o is not None:
            m.d.comb += o.eq(self.o ^ inv)
        return m


class _DDRBuffer(io.DDRBuffer):
    def elaborate(self, platform):
        # Rising-edge and falling-edge registers on the pin, and one more rising-edge register, so that i[0]
        # (the rising edge) and i[1] (the falling edge after it) come out together, as in an ECP5 IDDRX1F; the
        # output is o[0] for the high half of the clock and o[1] for the low half, from registers.
        m = Module()
        port = self._port
        inv = sum(bit << n for n, bit in enumerate(port.invert))
        if self.direction is io.Direction.Bidir:
            raise NotImplementedError("GenericIOPlatform has no bidirectional DDR buffer")
        if self.direction is io.Direction.Input:
            domain = self.i_domain
            m.domains.fall = fall = ClockDomain("fall", clk_edge="neg", reset_less=True, local=True)
            m.d.comb += fall.clk.eq(ClockSignal(domain))
            pin = Signal(len(port))
            m.submodules.buffer = IOBufferInstance(port.io, i=pin)
            rise_q, fall_q = Signal(len(port)), Signal(len(port))
            m.d[domain] += rise_q.eq(pin)
            m.d.fall += fall_q.eq(pin)
            m.d[domain] += [self.i[0].eq(rise_q ^ inv), self.i[1].eq(fall_q ^ inv)]
        else:
            domain = self.o_domain
            m.domains.fall = fall = ClockDomain("fall", clk_edge="neg", reset_less=True, local=True)
            m.d.comb += fall.clk.eq(ClockSignal(domain))
            high, low, low_q = Signal(len(port)), Signal(len(port)), Signal(len(port))
            m.d[domain] += [high.eq(self.o[0] ^ inv), low.eq(self.o[1] ^ inv)]
            m.d.fall += low_q.eq(low)
            pin = Signal(len(port))
            m.d.comb += pin.eq(Mux(ClockSignal(domain), high, low_q))
            m.submodules.buffer = IOBufferInstance(port.io, o=pin, oe=self.oe)
        return m


class GenericIOPlatform:
    """Stands in for a platform when a design is converted without one: ``io.Buffer`` and ``io.DDRBuffer`` (the
    inputs and the outputs) become plain Verilog registers on both clock edges, for Icarus or Verilator, or for
    a vendor tool that infers its own DDR registers. No I/O delays: ``ignores_io_delays`` is true, and blocks
    with delay elements (:class:`~apbbf.hdl.eth.rgmii.RGMII`) leave them out.

    Pass it as ``platform`` to :func:`amaranth.back.verilog.convert`.
    """

    ignores_io_delays = True

    def get_io_buffer(self, buffer):
        if isinstance(buffer, io.DDRBuffer):
            result = _DDRBuffer(buffer.direction, buffer.port, i_domain=buffer.i_domain, o_domain=buffer.o_domain)
        elif isinstance(buffer, io.FFBuffer):
            raise NotImplementedError("GenericIOPlatform has no FFBuffer")
        elif isinstance(buffer, io.Buffer):
            result = _Buffer(buffer.direction, buffer.port)
        else:
            raise TypeError(f"unsupported buffer {buffer!r}")
        if buffer.direction is not io.Direction.Output:
            result.i = buffer.i
        if buffer.direction is not io.Direction.Input:
            result.o = buffer.o
            result.oe = buffer.oe
        return result
