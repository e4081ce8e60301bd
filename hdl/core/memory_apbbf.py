# amaranth: UnusedElaboratable=no
"""The APBBF core with its segments in an external memory: the hash unit, the circular buffer and the memory scan,
composed."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config
from .buffer import CircularBuffer
from .hash import HashUnit, connect_hash
from .memory_port import MemoryPortSignature, check_depth
from .scan_memory import MemoryScan
from .types import command_layout, response_layout

__all__ = ["MemoryAPBBF"]


class MemoryAPBBF(wiring.Component):
    """The Age-Partitioned Blocked Bloom Filter of :class:`~apbbf.hdl.core.apbbf.APBBF`, answering as
    :class:`apbbf.model.APBBF` (or :class:`apbbf.model.timewindow.TimedAPBBF`) does, with every segment in one
    external memory laid out in rows (:attr:`apbbf.model.Config.row_bits`): a key's blocks of every segment are in
    one row of the memory, reached through :attr:`memory`, a port of variable latency with up to ``depth``
    commands in flight (:class:`~apbbf.hdl.core.scan_memory.MemoryScan`).

    Per command the memory sees one read per segment the command may match or writes (a query: the live
    segments; an insert: its k newest) and one write per segment an insert writes, all in one row; a retired
    segment costs ``segment_blocks`` writes of zeros in the background.

    Parameters
    ----------
    config : Config
        With a row layout (``row_bits > 0``).
    depth : int
        Commands in flight at most, 1..64.
    one_row : bool
        Requests ordered for a memory that serves one open row at a time, in order (LiteDRAM's native port):
        :class:`~apbbf.hdl.core.scan_memory.MemoryScan`'s ``one_row``.
    runtime_window : bool
        (Config with a span.) The span at run time: :attr:`span`, :attr:`shift_interval` and :attr:`lower`, as
        :class:`~apbbf.hdl.core.apbbf.APBBF`'s.
    tweak : bool
        The hash's run-time seed at :attr:`tweak`, as :class:`~apbbf.hdl.core.apbbf.APBBF`'s (default off: the
        core, its cycles and its cost as without it).

    Attributes
    ----------
    cmd, rsp
        As :class:`~apbbf.hdl.core.apbbf.APBBF`'s.
    memory : Out(MemoryPortSignature(config))
        The memory (:class:`~apbbf.hdl.core.memory_port.MemoryPortSignature`).
    inserts, shifts, overflows, expired : Out(32)
        As :class:`~apbbf.hdl.core.apbbf.APBBF`'s, counted as each command is decided (before its memory
        access).
    in_flight : Out(range(depth + 1))
        Commands in flight now.
    idle : Out(1)
        The scan's :attr:`~apbbf.hdl.core.scan_memory.MemoryScan.idle`: nothing past the buffer's decision,
        nothing owed by the memory, no clearing under way (a cycle late). A reset of the core with every answer
        taken and ``idle`` high leaves no request, answer or acknowledgement of the memory behind it.
    span, shift_interval, lower : In
        (``runtime_window``.) As :class:`~apbbf.hdl.core.apbbf.APBBF`'s.
    tweak : In(64)
        (``tweak``.) As :class:`~apbbf.hdl.core.apbbf.APBBF`'s.

    Raises
    ------
    TypeError
        If ``config`` is not a Config, ``depth`` not an integer or ``one_row``, ``runtime_window`` or ``tweak`` not a
        bool.
    ValueError
        If the Config has no row layout, or ``depth`` is not 1..64, or ``runtime_window`` is asked of a Config
        without a span.
    """

    def __init__(self, config: Config, *, depth: int = 8, one_row: bool = False, runtime_window: bool = False,
                 tweak: bool = False):
        check_config(config)
        check_depth(depth)
        if not isinstance(one_row, bool):
            raise TypeError(f"one_row must be a bool, not {one_row!r}")
        if not isinstance(runtime_window, bool):
            raise TypeError(f"runtime_window must be a bool, not {runtime_window!r}")
        if not isinstance(tweak, bool):
            raise TypeError(f"tweak must be a bool, not {tweak!r}")
        self._tweak = tweak
        if runtime_window and not config.timed:
            raise ValueError("runtime_window needs a Config with a span")
        if not config.row_layout:
            raise ValueError("a memory core needs a Config with a row layout (row_bits > 0), not row_bits=0")
        self._config, self._depth, self._one_row = config, depth, one_row
        self._runtime_window = runtime_window
        members = {
            "cmd": In(stream.Signature(command_layout(config.key_width, config.time_width if config.timed else 0))),
            "rsp": Out(stream.Signature(response_layout())),
            "memory": Out(MemoryPortSignature(config)),
            "inserts": Out(32),
            "shifts": Out(32),
            "in_flight": Out(range(depth + 1)),
            "idle": Out(1),
        }
        if config.timed:
            members.update({"overflows": Out(32), "expired": Out(32)})
        if runtime_window:
            members.update({"span": In(config.time_width, init=config.span),
                            "shift_interval": In(config.time_width, init=config.shift_interval), "lower": In(1)})
        if tweak:
            members["tweak"] = In(64)
        super().__init__(members)

    @property
    def config(self) -> Config:
        return self._config

    @property
    def depth(self) -> int:
        return self._depth

    def elaborate(self, platform):
        # key -> hash -> buffer's decision -> memory -> answer: the scan drives the other two through their ports.
        m = Module()
        m.submodules.hash = hash_unit = HashUnit(self._config, tweak=self._tweak)
        if self._tweak:
            m.d.comb += hash_unit.tweak.eq(self.tweak)
        m.submodules.buffer = buffer = CircularBuffer(self._config, runtime_window=self._runtime_window)
        m.submodules.scan = scan = MemoryScan(self._config, depth=self._depth, one_row=self._one_row)
        wiring.connect(m, wiring.flipped(self.cmd), scan.cmd)
        connect_hash(m, scan.hash, hash_unit)
        wiring.connect(m, scan.buffer, buffer)
        wiring.connect(m, scan.rsp, wiring.flipped(self.rsp))
        wiring.connect(m, scan.memory, wiring.flipped(self.memory))
        m.d.comb += [self.inserts.eq(buffer.inserts), self.shifts.eq(buffer.shifts), self.in_flight.eq(scan.in_flight),
                     self.idle.eq(scan.idle)]
        if self._config.timed:
            m.d.comb += [self.overflows.eq(buffer.overflows), self.expired.eq(buffer.expired)]
        if self._runtime_window:
            m.d.comb += [buffer.window_span.eq(self.span), buffer.window_interval.eq(self.shift_interval),
                         buffer.window_lower.eq(self.lower)]
        return m
