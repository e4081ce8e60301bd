# amaranth: UnusedElaboratable=no
"""The APBBF core: the hash unit, the segments, the circular buffer and a scan, composed.

(The pragma above: the segments are made in ``APBBF.__init__``, and are used exactly when their core is, which
warns on its own when it is not.)
"""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config
from .buffer import CircularBuffer
from ..lib.devices import check_parity
from .hash import HashUnit, connect_hash
from .scan_fsm import FSMScan
from .scan_parallel import ParallelScan, check_pace
from .segments import Segments
from .types import command_layout, response_layout

__all__ = ["APBBF", "SCANS"]

#: The scan implementations: ``"fsm"`` follows Algorithm 1 one segment per cycle; ``"parallel"`` decides
#: from all segments at once and takes a command every clock.
SCANS = {"fsm": FSMScan, "parallel": ParallelScan}


class APBBF(wiring.Component):
    """Age-Partitioned Blocked Bloom Filter (paper 000 §6), answering as :class:`apbbf.model.APBBF` does.

    Every physical segment (k + l of the paper plus a spare) is its own block RAM addressed by its own hash
    (paper 000 §5.1: the hash belongs to the buffer position), so all of a key's blocks are read in one cycle,
    and an insert writes ``block | mask`` into the k newest segments in one cycle. Two scans share the hash
    unit, the segments and the circular buffer:

    - ``scan="fsm"`` (:class:`~apbbf.hdl.core.scan_fsm.FSMScan`): Algorithm 1 over the registered match bits, one
      segment per cycle, one command at a time.
    - ``scan="parallel"`` (:class:`~apbbf.hdl.core.scan_parallel.ParallelScan`): a pipeline that takes a command
      every clock, with the writes of the commands ahead forwarded to the reads behind them.

    Retiring a segment does not stall: on a shift the retired segment becomes the spare and is cleared in the
    background, one block per cycle, while commands go on; the previous spare, already clear, becomes segment
    0. Only if a generation is shorter than the clearing (``g·cycles per insert < segment_blocks``) does the
    core wait at the generation boundary until the spare is clear (with ``cmd.ready`` low; the parallel scan
    accepts one more command, into its skid register, first). After reset every
    memory is cleared (``segment_blocks`` cycles) with ``cmd.ready`` low, and the filter is empty. Cycles per
    command: :mod:`apbbf.sim.cycles`.

    Parameters
    ----------
    config : Config
    scan : {"fsm", "parallel"}
    pace : {1, 2, 3}
        (``scan="parallel"``.) Cycles per command at most: 1, a command every clock; 2, every other clock at
        most, with a shallower decision; 3, every third clock, decided from registered flags
        (:class:`~apbbf.hdl.core.scan_parallel.ParallelScan`).
    parity : bool
        Protect every block word with parity (:class:`~apbbf.hdl.core.segments.Segments`): a word whose parity fails
        reads as all ones, so a flipped memory bit can cause a false positive, never a false negative. Without
        faults the answers are the same as without parity; the latency is the same.
    runtime_window : bool
        (Config with a span.) The span at run time: :attr:`span`, :attr:`shift_interval` and :attr:`lower`
        (:class:`~apbbf.hdl.core.buffer.CircularBuffer`'s ``window_*``).
    tweak : bool
        The hash's run-time seed at :attr:`tweak` (:class:`~apbbf.hdl.core.hash.HashUnit`'s ``tweak``); without it
        (the default) the core is as before the port existed.

    Attributes
    ----------
    cmd : In(stream.Signature(command_layout(key_width[, time_width])))
        Commands ``{op, key}``, and ``time`` (ticks, non-decreasing modulo ``2**time_width``) for a Config with
        a span.
    rsp : Out(stream.Signature(response_layout()))
        One response ``{op, hit}`` per command, in order.
    inserts : Out(32)
        Inserts so far (wraps).
    shifts : Out(32)
        Shifts (generations) so far (wraps); the first insert after reset is a shift.
    overflows, expired : Out(32)
        (Config with a span.) Segments retired early because the pool was full; segments retired because they
        expired (:class:`apbbf.model.timewindow.TimedAPBBF`).
    span, shift_interval : In(time_width)
        (``runtime_window``.) The span and ``span // l + 1`` of the commands taken from now on (reset: the
        Config's); change them only with no command in the core.
    lower : In(1)
        (``runtime_window``.) A pulse with no command in the core, the cycle after :attr:`span` changed: the
        segments' expiry beyond the last insert's time plus the span comes down to it
        (:meth:`apbbf.model.timewindow.TimedAPBBF.set_window`).
    tweak : In(64)
        (``tweak``.) The run-time seed (:mod:`apbbf.model.hashing`, "The run-time seed"): change it only with no
        command in the core (a reset follows, to empty the filter).
    parity_errors : Out(32)
        (``parity`` only.) Block words read whose parity failed, per memory read port per read (wraps):
        :class:`~apbbf.hdl.core.segments.Segments`.

    Raises
    ------
    TypeError
        If ``config`` is not a Config, or ``parity``, ``runtime_window`` or ``tweak`` not a bool.
    ValueError
        If ``scan`` is unknown, ``pace`` is not 1, 2 or 3 (or not 1 with the FSM scan), or the Config has a row
        layout.
    """

    def __init__(self, config: Config, *, scan: str = "fsm", parity: bool = False, pace: int = 1,
                 runtime_window: bool = False,
                 tweak: bool = False):
        if scan not in SCANS:
            raise ValueError(f"scan must be one of {', '.join(map(repr, SCANS))}, not {scan!r}")
        check_config(config)
        if config.row_layout:
            raise ValueError(f"the on-chip core takes a Config without a row layout (row_bits=0), not "
                             f"row_bits={config.row_bits}: a row layout is for a memory behind a port "
                             f"(apbbf.hdl.core.memory_apbbf.MemoryAPBBF)")
        check_parity(parity)
        check_pace(pace)
        if scan == "fsm" and pace != 1:
            raise ValueError(f"pace must be 1 with scan='fsm' (it takes one command at a time), not {pace}")
        if not isinstance(runtime_window, bool):
            raise TypeError(f"runtime_window must be a bool, not {runtime_window!r}")
        if not isinstance(tweak, bool):
            raise TypeError(f"tweak must be a bool, not {tweak!r}")
        self._tweak = tweak
        if runtime_window and not config.timed:
            raise ValueError("runtime_window needs a Config with a span")
        self._runtime_window = runtime_window
        self._pace = pace
        self._config = config
        self._scan = scan
        self._parity = parity
        members = {
            "cmd": In(stream.Signature(command_layout(config.key_width, config.time_width if config.timed else 0))),
            "rsp": Out(stream.Signature(response_layout())),
            "inserts": Out(32),
            "shifts": Out(32),
        }
        if config.timed:
            members.update({"overflows": Out(32), "expired": Out(32)})
        if runtime_window:
            members.update({"span": In(config.time_width, init=config.span),
                            "shift_interval": In(config.time_width, init=config.shift_interval), "lower": In(1)})
        if tweak:
            members["tweak"] = In(64)
        if parity:
            members["parity_errors"] = Out(32)
        super().__init__(members)
        # Made here, not in elaborate, so that a simulation reaches the memories (Segments.memories).
        self._segments = Segments(config, parity=parity)

    @property
    def config(self) -> Config:
        return self._config

    @property
    def segments(self) -> Segments:
        """The segments (:class:`~apbbf.hdl.core.segments.Segments`): their memories, for a simulation that
        reads or writes the stored words (:meth:`~apbbf.hdl.core.segments.Segments.memories`)."""
        return self._segments

    @property
    def scan(self) -> str:
        """``"fsm"`` or ``"parallel"``."""
        return self._scan

    @property
    def pace(self) -> int:
        """Cycles per command at most of the parallel scan (1, 2 or 3; 1 for the FSM scan)."""
        return self._pace

    @property
    def parity(self) -> bool:
        """Whether the block words carry parity."""
        return self._parity

    def elaborate(self, platform):
        # key -> hash -> segments -> scan -> response: the scan drives the other three through their ports.
        m = Module()
        m.submodules.hash = hash_unit = HashUnit(self._config, tweak=self._tweak)
        if self._tweak:
            m.d.comb += hash_unit.tweak.eq(self.tweak)
        m.submodules.segments = segments = self._segments
        m.submodules.buffer = buffer = CircularBuffer(self._config, lookahead=self._pace == 1,
                                                      runtime_window=self._runtime_window)
        scan_class = SCANS[self._scan]
        m.submodules.scan = scan = (scan_class(self._config, pace=self._pace) if self._scan == "parallel" else
                                    scan_class(self._config))

        wiring.connect(m, wiring.flipped(self.cmd), scan.cmd)
        connect_hash(m, scan.hash, hash_unit)
        wiring.connect(m, scan.segments, segments.access)
        wiring.connect(m, scan.buffer, buffer)
        wiring.connect(m, scan.rsp, wiring.flipped(self.rsp))
        m.d.comb += [self.inserts.eq(buffer.inserts), self.shifts.eq(buffer.shifts)]
        if self._config.timed:
            m.d.comb += [self.overflows.eq(buffer.overflows), self.expired.eq(buffer.expired)]
        if self._runtime_window:
            m.d.comb += [buffer.window_span.eq(self.span), buffer.window_interval.eq(self.shift_interval),
                         buffer.window_lower.eq(self.lower)]
        if self._parity:
            m.d.comb += self.parity_errors.eq(segments.parity_errors)
        return m
