"""The designs measured besides the board tops: the bare core with registered ports, and one block RAM.

Both are wrapped so that only their own paths limit the clock: every port of the measured logic is a flip-flop,
fed from a serial-in shift register and folded into a few output registers, so that the design fits the 39 I/O
pins of an iCE40UP5K's sg48 package and no pin delay enters the Fmax.
"""

# (no "from __future__ import annotations": wiring.Component reads the port annotations as objects)
from amaranth import Cat, ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..hdl.core.apbbf import APBBF
from ..hdl.core.devices import BlockRAM
from ..hdl.core.ecp5_ram import ECP5BlockRAM, is_ecp5
from ..model.config import check_config

__all__ = ["RegisteredCore", "BlockRAMProbe", "RegisteredDedup"]


class RegisteredCore(wiring.Component):
    """The bare core for timing: the key (and, for a Config with a span, the time) is shifted in serially, the
    op and ``cmd.valid`` are registered, and ``rsp.valid & hit`` and ``cmd.ready`` are registered out;
    ``rsp.ready`` is high.

    Parameters
    ----------
    config : Config
    scan : {"fsm", "parallel"}

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If ``scan`` is unknown (see :class:`~apbbf.hdl.core.APBBF`).
    """

    serial_in: In(1)
    valid_in: In(1)
    op_in: In(2)
    hit_out: Out(1)
    ready_out: Out(1)

    def __init__(self, config, scan: str = "fsm"):
        check_config(config)
        self._config = config
        self._core = APBBF(config, scan=scan)
        super().__init__()

    @property
    def config(self):
        """The filter's Config."""
        return self._config

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self._core
        c = self._config
        chain = Signal(c.key_width + (c.time_width if c.timed else 0))
        valid = Signal()
        op = Signal(2)
        m.d.sync += [chain.eq(Cat(self.serial_in, chain[:-1])), valid.eq(self.valid_in), op.eq(self.op_in),
                     self.hit_out.eq(core.rsp.valid & core.rsp.payload.hit), self.ready_out.eq(core.cmd.ready)]
        m.d.comb += [core.cmd.valid.eq(valid), core.cmd.payload.key.eq(chain[:c.key_width]),
                     core.cmd.payload.op.as_value().eq(op), core.rsp.ready.eq(1)]
        if c.timed:
            m.d.comb += core.cmd.payload.time.eq(chain[c.key_width:])
        return m


class BlockRAMProbe(wiring.Component):
    """One block RAM primitive of a device, 16 bits wide and as deep as one block holds (1024 x 16 for a DP16KD,
    256 x 16 for an SB_RAM40_4K), configured as the filter's segments use it: on an ECP5 a DP16KD with its output
    register (:class:`~apbbf.hdl.core.ecp5_ram.ECP5BlockRAM`), on an iCE40 an SB_RAM40_4K instance (not an inferred
    memory: Yosys would add read-during-write logic in front of the RAM's output, and that logic, not the RAM,
    would set the clock). Write and read address, write data and write enable come from a serial shift register;
    the read data is registered in the fabric and folded to one pin behind another register. One access per port
    per cycle.

    Parameters
    ----------
    ram : BlockRAM
        The device's block RAM (:func:`apbbf.hdl.core.devices.block_ram`).

    Raises
    ------
    TypeError
        If ``ram`` is not a BlockRAM.
    """

    serial_in: In(1)
    we_in: In(1)
    out: Out(1)

    #: Data width of the probed memory, bits (the filter's words).
    WIDTH = 16

    def __init__(self, ram: BlockRAM):
        if not isinstance(ram, BlockRAM):
            raise TypeError(f"ram must be a BlockRAM, not {ram!r}")
        self._ram = ram
        super().__init__()

    @property
    def depth(self) -> int:
        """Words of the probed memory: one block RAM's data bits / :attr:`WIDTH`."""
        return self._ram.data_bits // self.WIDTH

    def elaborate(self, platform):
        # The primitive the segments use on this platform, instantiated directly.
        m = Module()
        depth, width = self.depth, self.WIDTH
        abits = (depth - 1).bit_length()
        chain = Signal(2 * abits + width)
        we = Signal()
        data = Signal(width)
        waddr, raddr, wdata = chain[:abits], chain[abits:2 * abits], chain[2 * abits:]
        rdata = Signal(width)
        if is_ecp5(platform):
            m.submodules.ram = ram = ECP5BlockRAM(depth, width)
            m.d.comb += [ram.write_addr.eq(waddr), ram.read_addr.eq(raddr), ram.write_data.eq(wdata),
                         ram.write_en.eq(we), ram.read_en.eq(1), rdata.eq(ram.read_data)]
        elif self._ram.cell == "SB_RAM40_4K":
            m.submodules.ram = Instance(
                "SB_RAM40_4K", p_READ_MODE=0, p_WRITE_MODE=0,
                i_RCLK=ClockSignal("sync"), i_RCLKE=Const(1), i_RE=Const(1), i_RADDR=Cat(raddr, Const(0, 3)),
                i_WCLK=ClockSignal("sync"), i_WCLKE=Const(1), i_WE=we, i_WADDR=Cat(waddr, Const(0, 3)),
                i_MASK=Const(0, 16), i_WDATA=wdata, o_RDATA=rdata)
        else:
            raise ValueError(f"platform must be an ECP5 or iCE40 platform, not {platform!r}")
        m.d.sync += [chain.eq(Cat(self.serial_in, chain[:-1])), we.eq(self.we_in),
                     data.eq(rdata), self.out.eq(data.xor())]
        return m


class RegisteredDedup(wiring.Component):
    """The packet de-duplicator for timing: a beat's ``data``, ``keep`` and time are shifted in serially and
    presented from registers with ``valid`` and ``last`` (also registered); the output beat and the counters
    are folded (XOR) into registers, ``o.ready`` comes from a pin through a register.

    Parameters
    ----------
    dedup : PacketDedup

    Raises
    ------
    TypeError
        If ``dedup`` is not a PacketDedup.
    """

    serial_in: In(1)
    valid_in: In(1)
    last_in: In(1)
    ready_in: In(1)
    out: Out(4)

    def __init__(self, dedup):
        from ..hdl.packet.dedup import PacketDedup
        if not isinstance(dedup, PacketDedup):
            raise TypeError(f"dedup must be a PacketDedup, not {dedup!r}")
        self._dedup = dedup
        super().__init__()

    @property
    def dedup(self):
        return self._dedup

    def elaborate(self, platform):
        m = Module()
        m.submodules.dedup = d = self._dedup
        beat = d.i.payload
        chain = Signal(len(beat.data) + len(beat.keep) + beat.user.shape().size)
        valid, last, ready = Signal(), Signal(), Signal()
        m.d.sync += [chain.eq(Cat(self.serial_in, chain[:-1])), valid.eq(self.valid_in), last.eq(self.last_in),
                     ready.eq(self.ready_in)]
        m.d.comb += [d.i.valid.eq(valid), beat.last.eq(last),
                     Cat(beat.data, beat.keep, beat.user).eq(chain), d.o.ready.eq(ready)]
        counters = Cat(d.frames, d.duplicates, d.dropped, d.unchecked, d.errored)
        m.d.sync += [self.out[0].eq(d.o.valid), self.out[1].eq(d.o.payload.as_value().xor()),
                     self.out[2].eq(counters.xor()), self.out[3].eq(d.i.ready)]
        return m
