"""The designs measured besides the board tops: a block (the core, one block RAM, the hash unit, the lanes filter,
the key extractor, the packet buffer, the packet de-duplicator) between registers, for its post-route Fmax and size.

Each is wrapped so that only its own paths limit the clock: every port of the measured logic is a flip-flop, fed
from a serial-in shift register and folded into a few output registers, so that the design fits the 39 I/O pins
of an iCE40UP5K's sg48 package and no pin delay enters the Fmax. The flows that place and route them are on the
host side (:mod:`apbbf.flows.pnr`, :mod:`apbbf.flows.hash_timing`, :mod:`apbbf.flows.lanes`,
:mod:`apbbf.flows.dedup_bench`, :mod:`apbbf.extractor_cost`).
"""

# (no "from __future__ import annotations": wiring.Component reads the port annotations as objects)
from amaranth import (Cat, ClockDomain, ClockSignal, Const, DomainRenamer, Instance, Module, ResetSignal, Signal,
                      Value)
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..hdl.core.apbbf import APBBF
from ..hdl.lib.devices import BlockRAM
from ..hdl.lib.ecp5_ram import ECP5BlockRAM, SimulatedECP5, is_ecp5
from ..hdl.core.hash import HashUnit
from ..hdl.core.lanes import Lanes
from ..hdl.core.memory_apbbf import MemoryAPBBF
from ..hdl.lib.banked_queue import BankedQueue
from ..hdl.packet.dedup import PacketDedup
from ..hdl.packet.key_extractor import KeyExtractor
from ..model.config import check_config

__all__ = ["RegisteredCore", "RegisteredMemoryCore", "BlockRAMProbe", "RegisteredHash", "BareHash", "RegisteredLanes",
           "RegisteredKeyExtractor", "RegisteredQueue", "RegisteredDedup", "RegisteredControlledDedup"]


def _on_a_global_reset(m: Module, platform, design, domain: str):
    """``design`` (in the ``sync`` domain) as it runs in ``domain``: the same clock, and on an ECP5 device the
    reset through a DCCA, the clock buffer in front of one of the 16 global networks, which reach every
    flip-flop's set/reset pin; elsewhere (simulation, iCE40) the reset as it is.

    nextpnr-ecp5 puts clocks on the global networks and nothing else, so a reset on the fabric is a net with a
    load in every tile of the design: the packet de-duplicator's reaches about 10,900 flip-flops at 64 bits, 8 %
    of the arcs to route, and with it router1 ran past 15 minutes on one seed in three."""
    if not is_ecp5(platform) or isinstance(platform, SimulatedECP5):
        return design
    m.domains += ClockDomain(domain)
    m.d.comb += ClockSignal(domain).eq(ClockSignal())
    m.submodules[f"{domain}_reset"] = Instance("DCCA", i_CLKI=ResetSignal(), i_CE=Const(1), o_CLKO=ResetSignal(domain))
    return DomainRenamer(domain)(design)


def _shift_in(m: Module, serial_in, width: int, name: str = "chain") -> Signal:
    """A ``width``-bit shift register fed from ``serial_in``, one bit per cycle."""
    chain = Signal(width, name=name)
    m.d.sync += chain.eq(Cat(serial_in, chain[:-1]))
    return chain


def _fold(m: Module, value) -> Signal:
    """``value`` folded (XOR) into one bit, a register, four bits into one per registered stage (one LUT4 each), so
    that the fold of a wide output is not the critical path: in two stages, the second XOR of a 512-bit beat's 145
    nibbles was five LUTs across the device, the 512-bit de-duplicator's path on a seed. Each stage's register is
    named ``folded`` (Amaranth numbers them apart)."""
    value = Value.cast(value)
    while True:
        folded = Signal(-(-len(value) // 4))
        m.d.sync += [folded[i].eq(value[4 * i:4 * i + 4].xor()) for i in range(len(folded))]
        if len(folded) == 1:
            return folded
        value = folded


class RegisteredCore(wiring.Component):
    """The bare core for timing: the key (and, for a Config with a span, the time) is shifted in serially, the
    op and ``cmd.valid`` are registered, and ``rsp.valid & hit`` and ``cmd.ready`` are registered out;
    ``rsp.ready`` is high.

    Parameters
    ----------
    config : Config
    scan : {"fsm", "parallel"}
    pace : {1, 2}
        The parallel scan's cycles per command at most (:class:`~apbbf.hdl.core.APBBF`).

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If ``scan`` or ``pace`` is unknown (see :class:`~apbbf.hdl.core.APBBF`).
    """

    serial_in: In(1)
    valid_in: In(1)
    op_in: In(2)
    hit_out: Out(1)
    ready_out: Out(1)

    def __init__(self, config, scan: str = "fsm", pace: int = 1):
        check_config(config)
        self._config = config
        self._core = APBBF(config, scan=scan, pace=pace)
        super().__init__()

    @property
    def config(self):
        """The filter's Config."""
        return self._config

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self._core
        c = self._config
        chain = _shift_in(m, self.serial_in, c.key_width + (c.time_width if c.timed else 0))
        valid = Signal()
        op = Signal(2)
        m.d.sync += [valid.eq(self.valid_in), op.eq(self.op_in),
                     self.hit_out.eq(core.rsp.valid & core.rsp.payload.hit), self.ready_out.eq(core.cmd.ready)]
        m.d.comb += [core.cmd.valid.eq(valid), core.cmd.payload.key.eq(chain[:c.key_width]),
                     core.cmd.payload.op.as_value().eq(op), core.rsp.ready.eq(1)]
        if c.timed:
            m.d.comb += core.cmd.payload.time.eq(chain[c.key_width:])
        return m


class RegisteredMemoryCore(wiring.Component):
    """The memory core (:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`) for timing: the key (and time) and the
    memory's read data are shifted in serially, every other input is a register, and the request (folded), the
    handshakes and ``rsp.valid & hit`` are registered out; ``rsp.ready`` is high.

    Parameters
    ----------
    config : Config
        With a row layout.
    depth : int
        Commands in flight at most.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`.
    """

    serial_in: In(1)
    valid_in: In(1)
    op_in: In(2)
    mem_in: In(4)                     # req.ready, rsp.valid, written, read data's serial bit
    hit_out: Out(1)
    ready_out: Out(1)
    mem_out: Out(3)                   # req.valid, rsp.ready, the request folded

    def __init__(self, config, depth: int = 8):
        check_config(config)
        self._config = config
        self._core = MemoryAPBBF(config, depth=depth)
        super().__init__()

    @property
    def config(self):
        """The filter's Config."""
        return self._config

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self._core
        c = self._config
        chain = _shift_in(m, self.serial_in, c.key_width + (c.time_width if c.timed else 0))
        read_data = _shift_in(m, self.mem_in[3], c.block_bits, name="read_chain")
        valid, op, memory = Signal(), Signal(2), Signal(3)
        m.d.sync += [valid.eq(self.valid_in), op.eq(self.op_in), memory.eq(self.mem_in[:3]),
                     self.hit_out.eq(core.rsp.valid & core.rsp.payload.hit), self.ready_out.eq(core.cmd.ready),
                     self.mem_out[0].eq(core.memory.req.valid), self.mem_out[1].eq(core.memory.rsp.ready)]
        m.d.comb += [core.cmd.valid.eq(valid), core.cmd.payload.key.eq(chain[:c.key_width]),
                     core.cmd.payload.op.as_value().eq(op), core.rsp.ready.eq(1),
                     core.memory.req.ready.eq(memory[0]), core.memory.rsp.valid.eq(memory[1]),
                     core.memory.written.eq(memory[2]), core.memory.rsp.payload.data.eq(read_data),
                     self.mem_out[2].eq(_fold(m, core.memory.req.payload.as_value()))]
        if c.timed:
            m.d.comb += core.cmd.payload.time.eq(chain[c.key_width:])
        return m


class BlockRAMProbe(wiring.Component):
    """One block RAM primitive of a device, 16 bits wide and as deep as one block holds (1024 x 16 for a DP16KD,
    256 x 16 for an SB_RAM40_4K), configured as the filter's segments use it: on an ECP5 a DP16KD with its output
    register (:class:`~apbbf.hdl.lib.ecp5_ram.ECP5BlockRAM`), on an iCE40 an SB_RAM40_4K instance (not an inferred
    memory: Yosys would add read-during-write logic in front of the RAM's output, and that logic, not the RAM,
    would set the clock). Write and read address, write data and write enable come from a serial shift register;
    the read data is registered in the fabric and folded to one pin behind another register. One access per port
    per cycle.

    Parameters
    ----------
    ram : BlockRAM
        The device's block RAM (:func:`apbbf.hdl.lib.devices.block_ram`).

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
        chain = _shift_in(m, self.serial_in, 2 * abits + width)
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
        m.d.sync += [we.eq(self.we_in),
                     data.eq(rdata), self.out.eq(data.xor())]
        return m


class RegisteredHash(wiring.Component):
    """The hash unit between registers: the key from a serial-in shift register, ``en`` registered, the
    segment hashes XORed to one pin through registered 4-input levels.

    Parameters
    ----------
    config : Config

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    """

    serial_in: In(1)
    en_in: In(1)
    out: Out(1)

    def __init__(self, config):
        check_config(config)
        self._config = config
        self._unit = HashUnit(config)
        super().__init__()

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        m.submodules.hash = unit = self._unit
        key = _shift_in(m, self.serial_in, self._config.key_width, name="key")
        en = Signal()
        m.d.sync += en.eq(self.en_in)
        m.d.comb += [unit.key.eq(key), unit.en.eq(en)]
        # The outputs, 4 to a LUT, a register after each level, down to the pin. (Written out, not with `_fold`:
        # `_fold`'s per-bit assignments give Yosys a netlist with other LUT names, and the hash unit's measured
        # Fmax, seed by seed, is of this one.)
        level = Value.cast(unit.hashes)
        depth = 0
        while len(level) > 1:
            reduced = Signal((len(level) + 3) // 4, name=f"reduce{depth}")
            m.d.sync += reduced.eq(Cat(*(level[i:i + 4].xor() for i in range(0, len(level), 4))))
            level, depth = reduced, depth + 1
        m.d.sync += self.out.eq(level[0])
        return m


class BareHash(wiring.Component):
    """The hash unit with plain ports (the segment hashes as one flat output), for its cell count: as the top
    of a synthesis, the unit's own ``hashes`` port would meet Yosys 0.70's renaming of ABC's outputs
    (``hashes[0]`` is also the name Amaranth gives the first element's wire, and ``abc9`` asserts on the
    clash)."""

    def __init__(self, config):
        self._unit = HashUnit(config)
        super().__init__({"key": In(config.key_width), "en": In(1),
                          "out": Out(config.physical_segments * config.hash_bits)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.hash = unit = self._unit
        m.d.comb += [unit.key.eq(self.key), unit.en.eq(self.en), self.out.eq(Value.cast(unit.hashes))]
        return m


class RegisteredLanes(wiring.Component):
    """The lanes filter for timing, as :class:`RegisteredCore` is the core: every slot's
    key shifted in serially (one chain), the slots' valid bits and one op registered; the response beat's hits
    OR-reduced into a register, ``cmd.ready`` and ``rsp.valid`` registered out; ``rsp.ready`` is high.

    Parameters
    ----------
    config : Config
    lanes : int
    """

    def __init__(self, config, lanes: int):
        check_config(config)
        self._config = config
        self._core = Lanes(config, lanes)
        super().__init__({"serial_in": In(1), "valid_in": In(self._core.slots), "op_in": In(2),
                          "hit_out": Out(1), "ready_out": Out(1), "rsp_out": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.lanes = core = self._core
        c, S = self._config, core.slots
        chain = _shift_in(m, self.serial_in, S * c.key_width)
        valid, op = Signal(S), Signal(2)
        m.d.sync += [valid.eq(self.valid_in), op.eq(self.op_in),
                     self.hit_out.eq(Cat(core.rsp.payload[s].hit for s in range(S)).any()),
                     self.ready_out.eq(core.cmd.ready), self.rsp_out.eq(core.rsp.valid)]
        m.d.comb += [core.cmd.valid.eq(valid.any()), core.rsp.ready.eq(1)]
        for s in range(S):
            m.d.comb += [core.cmd.payload[s].valid.eq(valid[s]), core.cmd.payload[s].op.as_value().eq(op),
                         core.cmd.payload[s].key.eq(chain[s * c.key_width:(s + 1) * c.key_width])]
        return m


class _RegisteredBeats(wiring.Component):
    """A design that takes packet beats (``i``: ``data``, ``keep``, ``last``, and more), between registers: the
    beat's fields are shifted in serially and presented from registers with ``valid`` and ``last`` (also
    registered). A subclass names the class of the design it wraps and the parameter
    (``class RegisteredX(_RegisteredBeats, kind=X, name="x")``).

    Raises
    ------
    TypeError
        If the design is not of the subclass's ``kind``.
    """

    serial_in: In(1)
    valid_in: In(1)
    last_in: In(1)

    def __init_subclass__(cls, *, kind: type, name: str, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._kind, cls._name = kind, name

    def __init__(self, design):
        if not isinstance(design, self._kind):
            raise TypeError(f"{self._name} must be a {self._kind.__name__}, not {design!r}")
        self._design = design
        super().__init__()

    @property
    def design(self):
        """The wrapped design."""
        return self._design

    def _beats_in(self, m: Module, *fields):
        """Drive ``i`` of the design (added to ``m`` as ``name``) from the registers; ``fields``: the members of
        the beat taken from the shift register, in its order."""
        chain = _shift_in(m, self.serial_in, sum(len(Value.cast(field)) for field in fields))
        valid, last = Signal(), Signal()
        m.d.sync += [valid.eq(self.valid_in), last.eq(self.last_in)]
        m.d.comb += [self._design.i.valid.eq(valid), self._design.i.payload.last.eq(last), Cat(*fields).eq(chain)]


class RegisteredKeyExtractor(_RegisteredBeats, kind=KeyExtractor, name="extractor"):
    """The key extractor for timing: a beat's ``data`` and ``keep`` are shifted in serially and presented from
    registers with ``valid`` and ``last`` (also registered); the key, length and class are folded (XOR) into a
    register in two registered stages (so that the fold is not the critical path).

    Parameters
    ----------
    extractor : KeyExtractor
    """

    out: Out(2)

    def elaborate(self, platform):
        m = Module()
        m.submodules.extractor = e = self._design
        self._beats_in(m, e.i.payload.data, e.i.payload.keep)
        m.d.sync += self.out[0].eq(e.o.valid)
        m.d.comb += self.out[1].eq(_fold(m, e.o.payload))
        return m


class RegisteredQueue(wiring.Component):
    """A :class:`~apbbf.hdl.lib.banked_queue.BankedQueue` for timing (the de-duplicator's packet buffer,
    :meth:`PacketDedup.packet_buffer <apbbf.hdl.packet.dedup.PacketDedup.packet_buffer>`): the entry is shifted in
    serially and written from registers with ``valid`` (registered), ``r.ready`` comes from a pin through a
    register, and the head entry and ``w.ready`` are folded (XOR) into a register in registered stages.

    Parameters
    ----------
    queue : BankedQueue

    Raises
    ------
    TypeError
        If ``queue`` is not a :class:`~apbbf.hdl.lib.banked_queue.BankedQueue`.
    """

    serial_in: In(1)
    valid_in: In(1)
    ready_in: In(1)
    out: Out(2)

    def __init__(self, queue):
        if not isinstance(queue, BankedQueue):
            raise TypeError(f"queue must be a BankedQueue, not {queue!r}")
        self._queue = queue
        super().__init__()

    @property
    def queue(self) -> BankedQueue:
        return self._queue

    def elaborate(self, platform):
        m = Module()
        m.submodules.queue = queue = self._queue
        chain = _shift_in(m, self.serial_in, len(queue.w.payload.as_value()))
        valid, ready = Signal(), Signal()
        m.d.sync += [valid.eq(self.valid_in), ready.eq(self.ready_in), self.out[0].eq(queue.r.valid)]
        m.d.comb += [queue.w.valid.eq(valid), queue.w.payload.eq(chain), queue.r.ready.eq(ready),
                     self.out[1].eq(_fold(m, Cat(queue.r.payload, queue.w.ready)))]
        return m


class RegisteredDedup(_RegisteredBeats, kind=PacketDedup, name="dedup"):
    """The packet de-duplicator for timing: a beat's ``data``, ``keep`` and time are shifted in serially and
    presented from registers with ``valid`` and ``last`` (also registered); the output beat and the counters
    are folded (XOR) into registers in two registered stages, ``o.ready`` comes from a pin through a register. On an
    ECP5 device the de-duplicator's reset is on a global network (a DCCA), as a design of its size there should
    have it.

    Parameters
    ----------
    dedup : PacketDedup
    """

    ready_in: In(1)
    out: Out(4)

    def elaborate(self, platform):
        m = Module()
        d = self._design
        m.submodules.dedup = _on_a_global_reset(m, platform, d, "dedup")
        self._beats_in(m, d.i.payload.data, d.i.payload.keep, d.i.payload.user)
        ready = Signal()
        m.d.sync += ready.eq(self.ready_in)
        m.d.comb += d.o.ready.eq(ready)
        counters = Cat(d.frames, d.duplicates, d.dropped, d.unchecked, d.errored)
        m.d.sync += [self.out[0].eq(d.o.valid), self.out[3].eq(d.i.ready)]
        m.d.comb += [self.out[1].eq(_fold(m, d.o.payload)), self.out[2].eq(_fold(m, counters))]
        return m


class RegisteredControlledDedup(RegisteredDedup, kind=PacketDedup, name="dedup"):
    """:class:`RegisteredDedup` with its control plane: the de-duplicator built clearable and with its run-time
    window, and the register file (:class:`~apbbf.hdl.lib.axil_registers.AXI4LiteRegisters` of
    :func:`~apbbf.hdl.export.axis_dedup.control_facts`) wired to it as the export wires them; the slave's inputs are
    shifted in from a pin of their own, its outputs folded into a register.

    Parameters
    ----------
    dedup : PacketDedup
        Built with ``clearable`` and ``runtime_window``.

    Raises
    ------
    TypeError
        If ``dedup`` is not a PacketDedup.
    ValueError
        If it lacks ``clearable`` or ``runtime_window``.
    """

    axil_serial_in: In(1)
    axil_out: Out(1)

    def __init__(self, dedup):
        super().__init__(dedup)
        if not (dedup.clearable and dedup.runtime_window):
            raise ValueError("dedup must be built with clearable=True and runtime_window=True")

    def elaborate(self, platform):
        from ..hdl.export.axis_dedup import connect_control, control_facts
        from ..hdl.lib.axil_registers import AXI4LiteRegisters, axil_members
        m = super().elaborate(platform)
        d = self._design
        regs = AXI4LiteRegisters(control_facts(d))
        on_global_reset = is_ecp5(platform) and not isinstance(platform, SimulatedECP5)     # as the de-duplicator
        m.submodules.registers = DomainRenamer("dedup")(regs) if on_global_reset else regs
        inputs = [getattr(regs, name) for name, member in axil_members().items() if member.flow == wiring.In]
        outputs = [getattr(regs, name) for name, member in axil_members().items() if member.flow == wiring.Out]
        chain = _shift_in(m, self.axil_serial_in, sum(len(port) for port in inputs), name="axil_chain")
        m.d.comb += [Cat(*inputs).eq(chain), self.axil_out.eq(_fold(m, Cat(*outputs)))]
        connect_control(m, regs, d)
        return m
