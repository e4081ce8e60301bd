# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""The appliance's side of the host protocol (:mod:`apbbf.model.protocol`): INFO and APPLIANCE over the UART."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config, check_integer
from ...model.packet import KeySpec
from ...model.protocol import (APPLIANCE_ACTIONS, APPLIANCE_COMMANDS, APPLIANCE_COUNTERS, APPLIANCE_SIZE,
                               INFO_SIZE, PROTOCOL_VERSION, REGISTER_SIZE, Command, Info, Status)
from ...model.registers import Capability, Facts
from ...model.timeanalysis import window_capacity
from ..lib.axil_registers import ADDR_WIDTH, OKAY, AXI4LiteRegisters, axil_members
from ..board.host_parser import TIMEOUT_CYCLES, HostParser, request_layout
from ..board.host_replier import HostReplier, reply_header_layout
from ..board.uart import DIVISORS, UARTReceiver, UARTTransmitter

__all__ = ["ApplianceExecutor", "ApplianceHost", "key_name", "appliance_facts"]


def key_name(spec: KeySpec) -> str:
    """The APPLIANCE payload's name of ``spec`` (:data:`~apbbf.model.protocol.APPLIANCE_KEYS`).

    Raises
    ------
    ValueError
        If ``spec`` is neither ``KeySpec.l3l4()`` nor ``KeySpec.frame()``.
    """
    for name in ("l3l4", "frame"):
        if spec == getattr(KeySpec, name)():
            return name
    raise ValueError(f"spec must be KeySpec.l3l4() or KeySpec.frame() (the APPLIANCE payload names no other), "
                     f"not {spec!r}")


def appliance_facts(config: Config, *, action: str, key: str, max_frame: int, runtime_seed: bool = False,
                    runtime_window: bool = False) -> Facts:
    """The register map's facts of the appliance (the appliance's map, ticks of 1 µs): a ``drop`` build takes
    ``drop`` and ``count`` at run time, a ``count`` build ``count`` (no ``mark`` on the wire); the clear of the
    filter; built with the run-time seed (``runtime_seed``), the re-key (``REKEY``); with ``runtime_window``,
    ``WINDOW`` up to what the memory holds at the planned rate (:func:`~apbbf.model.timeanalysis.window_capacity`),
    else only the built span.

    Raises
    ------
    ValueError
        If ``action`` or ``key`` is not one the appliance builds.
    """
    if action not in ("drop", "count"):
        raise ValueError(f"action must be 'drop' or 'count' on the appliance, not {action!r}")
    if key not in ("l3l4", "frame"):
        raise ValueError(f"key must be 'l3l4' or 'frame', not {key!r}")
    actions = ("drop", "count") if action == "drop" else ("count",)
    caps = Capability.CLEAR | (Capability.ACTION if len(actions) > 1 else Capability(0))
    if runtime_seed:
        caps |= Capability.REKEY
    capacity = config.span
    if runtime_window:
        caps |= Capability.WINDOW
        capacity = window_capacity(config)
    return Facts(config, action=action, actions=actions, key=key, keys=tuple(k if k == key else None
                                                                              for k in ("l3l4", "frame")),
                 max_frame=max_frame, capacity=capacity, tick_ns=1000, caps=caps, target="appliance")


class ApplianceExecutor(wiring.Component):
    """Executes checked requests on the appliance: INFO (its filter's Config, ``max_batch`` 0, ticks of 1 µs),
    APPLIANCE (the build's options, the links and the counters, all taken in the cycle the reply starts), and
    REG_READ and REG_WRITE on the control registers through an AXI4-Lite master (``m_axil_*``), answered OK (with
    the value read) or, if the register file answers SLVERR or the offset is beyond its addresses, BAD_REGISTER.

    Parameters
    ----------
    config : Config
    action : {"drop", "mark", "count"}
    key : {"l3l4", "frame"}
    max_frame : int
        Longest frame the de-duplicator checks, bytes, 64..65535.

    Attributes
    ----------
    request : In(stream.Signature(request_layout()))
    keys : In(stream.Signature(8))
        A register command's word (offset, value), byte by byte (the parser takes no key command).
    header : Out(stream.Signature(reply_header_layout()))
    payload : Out(stream.Signature(8))
    counters : In(32 * len(APPLIANCE_COUNTERS))
        The counters of :data:`~apbbf.model.protocol.APPLIANCE_COUNTERS`, counter i in bits 32i..32i+31.
    link : In(2)
    m_axil_* : the AXI4-Lite master's ports (:func:`~apbbf.hdl.lib.axil_registers.axil_members`, flipped)
    """

    def __init__(self, config: Config, *, action: str, key: str, max_frame: int):
        check_config(config)
        if action not in APPLIANCE_ACTIONS:
            raise ValueError(f"action must be one of {', '.join(APPLIANCE_ACTIONS)}, not {action!r}")
        if key not in ("l3l4", "frame"):
            raise ValueError(f"key must be 'l3l4' or 'frame', not {key!r}")
        check_integer("max_frame", max_frame, range(64, 65536))
        self._config, self._action, self._key, self._max_frame = config, action, key, max_frame
        super().__init__({
            "request": In(stream.Signature(request_layout())),
            "keys": In(stream.Signature(8)),
            "header": Out(stream.Signature(reply_header_layout())),
            "payload": Out(stream.Signature(8)),
            "counters": In(32 * len(APPLIANCE_COUNTERS)),
            "link": In(2),
            **{name.replace("s_axil", "m_axil"): member.flip() for name, member in axil_members().items()},
        })

    def elaborate(self, platform):
        # Byte-wide and stop-and-wait, as the filter boards' executor: a payload byte is a word_select of a
        # constant (INFO) or of a snapshot taken when the reply starts (APPLIANCE), so the counters in one reply
        # are those of one clock cycle.
        m = Module()
        request = self.request.payload
        ok = request.status == Status.OK
        info = Const(int.from_bytes(Info.from_config(self._config, 0, 1000).pack(), "little"), 8 * INFO_SIZE)
        head = Cat(Const(PROTOCOL_VERSION, 8), Const(APPLIANCE_ACTIONS.index(self._action), 8),
                   Const(("l3l4", "frame").index(self._key), 8))
        snapshot = Signal(8 * APPLIANCE_SIZE)
        index = Signal(range(max(INFO_SIZE, APPLIANCE_SIZE)))
        register = (request.command == Command.REG_READ) | (request.command == Command.REG_WRITE)
        word = Signal(8 * REGISTER_SIZE)                    # offset, value: little-endian bytes in from the top
        word_fill = Signal(range(REGISTER_SIZE + 1))
        offset, value = word[:32], word[32:]
        refused = Signal()                                  # the register access was refused
        m.d.comb += [self.header.payload.command.eq(request.command),
                     self.header.payload.status.eq(request.status)]
        with m.If(~ok):
            m.d.comb += self.header.payload.length.eq(0)
        with m.Elif(request.command == Command.INFO):
            m.d.comb += self.header.payload.length.eq(INFO_SIZE)
        with m.Elif(register):
            m.d.comb += self.header.payload.length.eq(Mux(refused | (request.command == Command.REG_WRITE), 0, 4))
            with m.If(refused):
                m.d.comb += self.header.payload.status.eq(Status.BAD_REGISTER)
        with m.Else():
            m.d.comb += self.header.payload.length.eq(APPLIANCE_SIZE)
        m.d.comb += [self.m_axil_awaddr.eq(offset), self.m_axil_araddr.eq(offset), self.m_axil_wdata.eq(value),
                     self.m_axil_wstrb.eq(0xF)]

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.header.valid.eq(self.request.valid & ~(ok & register))
                with m.If(self.request.valid & ok & register):
                    m.d.sync += [word_fill.eq(0), refused.eq(0)]
                    m.next = "WORD"
                with m.If(self.header.valid & self.header.ready):
                    m.d.sync += [index.eq(0), snapshot.eq(Cat(head, self.link, Const(0, 6), Const(self._max_frame, 16),
                                                                self.counters))]
                    with m.If(~ok):
                        m.d.comb += self.request.ready.eq(1)
                    with m.Elif(request.command == Command.INFO):
                        m.next = "INFO"
                    with m.Else():
                        m.next = "APPLIANCE"
            with m.State("WORD"):
                m.d.comb += self.keys.ready.eq(word_fill != REGISTER_SIZE)
                with m.If(self.keys.valid & self.keys.ready):
                    m.d.sync += [word.eq(Cat(word[8:], self.keys.payload)), word_fill.eq(word_fill + 1)]
                with m.If(word_fill == REGISTER_SIZE):
                    with m.If(offset >= 1 << ADDR_WIDTH):
                        m.d.sync += refused.eq(1)
                        m.next = "REPLY"
                    with m.Elif(request.command == Command.REG_READ):
                        m.next = "READ"
                    with m.Else():
                        m.next = "WRITE"
            with m.State("READ"):
                m.d.comb += self.m_axil_arvalid.eq(1)
                with m.If(self.m_axil_arready):
                    m.next = "READ_DATA"
            with m.State("READ_DATA"):
                m.d.comb += self.m_axil_rready.eq(1)
                with m.If(self.m_axil_rvalid):
                    m.d.sync += [value.eq(self.m_axil_rdata), refused.eq(self.m_axil_rresp != OKAY)]
                    m.next = "REPLY"
            with m.State("WRITE"):
                m.d.comb += [self.m_axil_awvalid.eq(1), self.m_axil_wvalid.eq(1)]
                with m.If(self.m_axil_awready & self.m_axil_wready):
                    m.next = "WRITE_RESPONSE"
            with m.State("WRITE_RESPONSE"):
                m.d.comb += self.m_axil_bready.eq(1)
                with m.If(self.m_axil_bvalid):
                    m.d.sync += refused.eq(self.m_axil_bresp != OKAY)
                    m.next = "REPLY"
            with m.State("REPLY"):
                m.d.comb += self.header.valid.eq(1)
                with m.If(self.header.ready):
                    m.d.sync += index.eq(0)
                    with m.If(refused | (request.command == Command.REG_WRITE)):
                        m.d.comb += self.request.ready.eq(1)
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "VALUE"
            with m.State("VALUE"):
                m.d.comb += [self.payload.valid.eq(1), self.payload.payload.eq(value.word_select(index[:2], 8))]
                with m.If(self.payload.ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index == 3):
                        m.d.comb += self.request.ready.eq(1)
                        m.next = "IDLE"
            for state, table, size in (("INFO", info, INFO_SIZE), ("APPLIANCE", snapshot, APPLIANCE_SIZE)):
                with m.State(state):
                    m.d.comb += [self.payload.valid.eq(1), self.payload.payload.eq(table.word_select(index, 8))]
                    with m.If(self.payload.ready):
                        m.d.sync += index.eq(index + 1)
                        with m.If(index == size - 1):
                            m.d.comb += self.request.ready.eq(1)
                            m.next = "IDLE"
        return m


class ApplianceHost(wiring.Component):
    """UART lines in and out, the host protocol between them: :class:`~apbbf.hdl.board.host_parser.HostParser`
    (INFO and APPLIANCE only), :class:`ApplianceExecutor`, :class:`~apbbf.hdl.board.host_replier.HostReplier`.

    Parameters
    ----------
    config, action, key, max_frame
        As :class:`ApplianceExecutor`.
    runtime_seed : bool
        The control registers take ``SEED_LO``, ``SEED_HI`` and ``CONTROL.REKEY`` (:func:`appliance_facts`) for a
        de-duplicator built with its run-time seed.
    runtime_window : bool
        ``WINDOW`` writable (:func:`appliance_facts`), for a de-duplicator built with its run-time window.
    divisor : int
        Clock cycles per UART bit.
    timeout_cycles : int
        Inter-byte timeout inside a request frame, clock cycles.

    Attributes
    ----------
    rx : In(1)
    tx : Out(1)
    counters : In(32 * len(APPLIANCE_COUNTERS))
    link : In(2)
    busy : Out(1)
    control_action, control_clear : Out(2), Out(1)
        To the de-duplicator's ports of the same names: the control registers' (:func:`appliance_facts`, an
        :class:`~apbbf.hdl.lib.axil_registers.AXI4LiteRegisters` behind REG_READ and REG_WRITE).
    control_cleared, control_frames : In(1), In(32)
        From the de-duplicator's ports of the same names.
    control_seed, control_rekey : Out(64), Out(1)
        (``runtime_seed``.) To the de-duplicator's ports of the same names.
    control_window, control_window_set : Out(32), Out(1)
    control_window_done : In(1)
        With ``runtime_window``: to and from the de-duplicator's ports of the same names.
    """

    def __init__(self, config: Config, *, action: str, key: str, max_frame: int, divisor: int,
                 timeout_cycles: int = 1 << 16, runtime_seed: bool = False, runtime_window: bool = False):
        check_integer("divisor", divisor, DIVISORS)
        check_integer("timeout_cycles", timeout_cycles, TIMEOUT_CYCLES)
        if not isinstance(runtime_seed, bool):
            raise TypeError(f"runtime_seed must be a bool, not {runtime_seed!r}")
        if not isinstance(runtime_window, bool):
            raise TypeError(f"runtime_window must be a bool, not {runtime_window!r}")
        self._runtime_seed = runtime_seed
        self._executor = ApplianceExecutor(config, action=action, key=key, max_frame=max_frame)
        self._registers = AXI4LiteRegisters(appliance_facts(config, action=action, key=key, max_frame=max_frame,
                                                            runtime_seed=runtime_seed,
                                                            runtime_window=runtime_window))
        self._divisor, self._timeout = divisor, timeout_cycles
        self._runtime_window = runtime_window
        super().__init__({
            "rx": In(1, init=1), "tx": Out(1, init=1),
            "counters": In(32 * len(APPLIANCE_COUNTERS)), "link": In(2), "busy": Out(1),
            "control_action": Out(2, init=self._registers.action.init), "control_clear": Out(1),
            "control_cleared": In(1), "control_frames": In(32),
            **({"control_seed": Out(64), "control_rekey": Out(1)} if runtime_seed else {}),
            **({"control_window": Out(32, init=config.span), "control_window_set": Out(1),
                "control_window_done": In(1)} if runtime_window else {}),
        })

    @property
    def registers(self) -> AXI4LiteRegisters:
        return self._registers

    def elaborate(self, platform):
        m = Module()
        # The filter boards' parser and replier, as they are; only the executor is the appliance's.
        m.submodules.receiver = receiver = UARTReceiver(self._divisor)
        m.submodules.transmitter = transmitter = UARTTransmitter(self._divisor)
        m.submodules.parser = parser = HostParser(8 * REGISTER_SIZE, max_batch=1, timeout_cycles=self._timeout,
                                                  commands=APPLIANCE_COMMANDS)
        m.submodules.executor = executor = self._executor
        m.submodules.replier = replier = HostReplier()
        wiring.connect(m, receiver.o, parser.rx)
        wiring.connect(m, parser.request, executor.request)
        wiring.connect(m, parser.keys, executor.keys)
        wiring.connect(m, executor.header, replier.header)
        wiring.connect(m, executor.payload, replier.payload)
        wiring.connect(m, replier.tx, transmitter.i)
        m.d.comb += [receiver.rx.eq(self.rx), self.tx.eq(transmitter.tx), executor.counters.eq(self.counters),
                     executor.link.eq(self.link), self.busy.eq(parser.busy | replier.busy)]
        m.submodules.registers = registers = self._registers
        for name, member in axil_members().items():
            master = getattr(executor, name.replace("s_axil", "m_axil"))
            m.d.comb += getattr(registers, name).eq(master) if member.flow == In else master.eq(getattr(registers, name))
        for i, name in enumerate(APPLIANCE_COUNTERS):
            counter = name[len("dedup_"):] if name.startswith("dedup_") else name
            m.d.comb += getattr(registers, f"counters_{counter}").eq(self.counters[32 * i:32 * (i + 1)])
        m.d.comb += [registers.link.eq(self.link), self.control_action.eq(registers.action),
                     self.control_clear.eq(registers.clear), registers.cleared.eq(self.control_cleared),
                     registers.decided.eq(self.control_frames)]
        if self._runtime_seed:
            m.d.comb += [self.control_seed.eq(registers.seed), self.control_rekey.eq(registers.rekey)]
        if self._runtime_window:
            m.d.comb += [self.control_window.eq(registers.window), self.control_window_set.eq(registers.window_set),
                         registers.window_done.eq(self.control_window_done)]
        return m
