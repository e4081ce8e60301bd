# amaranth: UnusedElaboratable=no
# (the de-duplicator builds its key extractor for its caller: unused when the de-duplicator is)
"""Packet de-duplication at line rate: frames in, each frame's key tested and inserted in the time-bounded window,
duplicates dropped, marked or counted; :class:`apbbf.model.dedup.Dedup` is its specification."""

from amaranth import Cat, Module, Mux, ResetInserter, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config, check_integer
from ...model.dedup import Action, Status
from ...model.packet import KeySpec
from ..core.apbbf import SCANS, APBBF
from ..core.memory_apbbf import MemoryAPBBF
from ..core.memory_port import MemoryPortSignature, check_depth
from ..lib.credits import credit_flag
from ..lib.banked_queue import BankedQueue
from .key_extractor import KeyExtractor
from ..lib.ungated_fifo import UngatedFIFO
from ..core.types import Op
from ...model.registers import ACTIONS

__all__ = ["DATA_WIDTHS", "MEMORY_SCAN", "in_beat_layout", "out_beat_layout", "PacketDedup"]


def _most_pace(data_width: int) -> int:
    """The parallel core's pace at most at ``data_width``: a frame of 60 bytes takes four beats or more at 128 bits
    and below, two at 256, one at 512."""
    return 3 if data_width <= 128 else 2 if data_width <= 256 else 1


#: ``tdata`` widths the de-duplicator takes, bits.
DATA_WIDTHS = (64, 128, 256, 512)

#: The scan of a Config with a row layout: its segments in an external memory
#: (:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`).
MEMORY_SCAN = "memory"


def in_beat_layout(data_width: int, time_width: int) -> data.StructLayout:
    """One beat of an incoming frame: ``data``, ``keep`` (byte lanes, packed from lane 0; only the last beat may be
    partial), ``last``, and ``user``: ``error`` (on the last beat: the MAC marks the frame bad) and ``time`` (on the
    first beat: the frame's time in ticks, when the design takes its times from ``tuser``)."""
    return data.StructLayout({
        "data": data_width, "keep": data_width // 8, "last": 1,
        "user": data.StructLayout({"error": 1, "time": time_width}),
    })


def out_beat_layout(data_width: int) -> data.StructLayout:
    """One beat of an outgoing frame: ``data``, ``keep``, ``last``, and ``user`` (on the last beat, 0 elsewhere):
    ``duplicate`` (the frame is a copy of one seen within the window: with ``action="mark"`` the mark),
    ``unchecked`` (its answer could not be had: passed on untested, fail open) and
    ``errored`` (the MAC marked it bad: passed on untested)."""
    return data.StructLayout({
        "data": data_width, "keep": data_width // 8, "last": 1,
        "user": data.StructLayout({"duplicate": 1, "unchecked": 1, "errored": 1}),
    })


def _status_layout():
    return data.StructLayout({"status": 2})


class PacketDedup(wiring.Component):
    """Frames in and out as AXI4-Stream; every frame's key (:class:`~apbbf.hdl.packet.key_extractor.KeyExtractor`) sent
    to the time-windowed core (:class:`~apbbf.hdl.core.APBBF`) as TEST_AND_INSERT with the frame's time; the
    answers decide what happens to each frame, as :class:`apbbf.model.dedup.Dedup` says.

    The filter never stalls the link. A key that cannot be queued for the core (the core clearing after reset or
    a restart, a full key queue) leaves its frame *unchecked*: passed on unmarked, not inserted, counted.

    With a Config of a row layout (``row_bits > 0``) the segments are in an external memory behind
    :attr:`memory` (:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`, ``memory_depth`` commands in flight), whose
    answers may come at any time: a frame whose answer is not at the output within ``answer_deadline`` cycles of
    its key entering the key queue is *late*: passed on unmarked and counted in ``unchecked`` and ``late``. Its
    key was tested and inserted all the same (the core does every command it took), and its answer is discarded
    when it comes (:class:`apbbf.model.dedup.Dedup`'s ``late`` frames). So a memory that answers slowly, or
    never, costs unchecked frames, never a stalled link or a false negative. The packet buffer then holds
    ``answer_deadline`` cycles of beats in place of the on-chip core's restart. Frames
    wait in a packet buffer for their answer: with ``drop`` the whole frame (store and forward), with ``mark``
    its last beat, with ``count`` not at all. The buffer holds the longest the core can keep an answer back (a
    restart clears every memory: ``segment_blocks`` cycles) and, with ``drop``, the longest frame, so only a
    consumer that stops taking frames (``o.ready`` low) holds back ``i.ready``. With ``count`` frames pass
    straight through (``o.payload.user`` is 0) and ``i.ready`` is ``o.ready``. With ``drop``, the buffer counts
    beats, not bytes: with ``limit = ceil((max_frame + 4 * fcs) / (data_width / 8))``, a frame of more than
    ``limit + 1`` beats is passed on unchecked as soon as its beat ``limit + 2`` arrives (its key, when it comes,
    is dropped). So a frame of at most ``max_frame`` bytes is always checked, one of more than
    ``(limit + 1) * data_width / 8 - 4 * fcs`` bytes never (:func:`apbbf.model.dedup.oversize` says the same).

    Parameters
    ----------
    config : Config
        The filter: with a span (the window, in ticks) and 64-bit keys.
    spec : KeySpec
        Which bytes of a frame make its key (:mod:`apbbf.model.packet`).
    data_width : int
        ``tdata`` bits: 64, 128, 256 or 512.
    action : {"drop", "mark", "count"}
    timestamps : {"tuser", "counter"}
        Where a frame's time comes from: ``tuser`` of its first beat (a MAC timestamp, in ticks), or a
        free-running counter of ``tick_cycles`` clock cycles per tick.
    tick_cycles : int
        Cycles per tick of the counter, 1..2**16.
    fcs : bool
        The frames end with their FCS (not part of the key).
    max_frame : int
        Longest frame, bytes, 64..65535 (with ``drop``: the buffer's size follows, frames of more beats than it
        and one pass unchecked, and its beats must exceed :attr:`extractor_latency` and two).
    key_queue : int
        Keys that may wait for the core, 2..256 (in a :class:`~apbbf.hdl.packet.banked_queue.BankedQueue`, whose
        read-ahead takes about 6 cycles: below 8, fewer than one key per clock reach a core that takes one).
    scan : {"fsm", "parallel", "memory", None}
        The core's scan (``None``, the default: ``memory`` for a Config with a row layout, else ``parallel``;
        ``memory`` goes with a row layout only): ``parallel`` keeps one key per clock. Below 512 bits a frame of 60 bytes or more takes
        two beats at least, and at 128 bits and below four, so the parallel core is built for a key every other
        clock, or every third (``pace=2`` or ``pace=3``: a shallower decision, :class:`~apbbf.hdl.core.APBBF`); at
        512 bits for one every clock (:attr:`core_pace`).
    pace : {None, 1, 2, 3}
        The parallel core's cycles per key at most, if not the width's (``None``, the default: :attr:`core_pace`):
        no more than a frame of 60 bytes takes in beats (1 at 512 bits, 2 at 256, 3 at 128 and 64). A design whose
        clock is far below the de-duplicator's Fmax can take a smaller core: at 64 bits ``pace=2`` has about 500
        LUT4 fewer than ``pace=3`` in the benchmark's de-duplicator.
    memory_depth : int
        With the memory scan: commands in flight at most, 1..64 (:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`).
    memory_one_row : bool
        With the memory scan: its requests ordered for a memory that serves one open row at a time, in order
        (LiteDRAM's native port; ``one_row`` of :class:`~apbbf.hdl.core.scan_memory.MemoryScan`).
    answer_deadline : int
        With the memory scan: cycles from a key entering the key queue to its frame passing on unchecked (late),
        1..65535.
    clearable : bool
        Build the run-time clear (``control_clear``); without it the port is ignored and the design is the same
        as before the control ports were added.
    runtime_window : bool
        Build the run-time window (``control_window``); without it the ports are ignored.
    runtime_seed : bool
        Build the run-time seed of the hash (``control_seed``, ``control_rekey``; :mod:`apbbf.model.hashing`,
        "The run-time seed"), with ``clearable``: a re-key is a clear that also puts the new seed in place.
        Without it the ports are ignored and the hash is the build seed's alone.

    Attributes
    ----------
    i : In(stream.Signature(in_beat_layout(data_width, time_width)))
    o : Out(stream.Signature(out_beat_layout(data_width)))
    frames, duplicates, dropped, unchecked, errored : Out(32)
        As :class:`apbbf.model.dedup.Counters`, counted the cycle after each frame's decision is taken
        (with ``drop`` and ``mark``, by the clock edge at which its last beat leaves; wrap).
    late : Out(32)
        With the memory scan: of the unchecked, the late frames (as ``unchecked``).
    memory : Out(MemoryPortSignature(config))
        With the memory scan: the memory (:class:`~apbbf.hdl.core.memory_port.MemoryPortSignature`).
    memory_idle : In(1, init=1)
        With the memory scan: high while the memory owes the core nothing (no read unanswered, no write without
        its ``written``; an AXI4 master: none outstanding). A clear resets the core only while it is high too.
    control_action : In(2)
        The action at run time, by its value in :data:`apbbf.model.registers.ACTIONS` (0 drop, 1 mark, 2 count;
        reset: the built ``action``), one of :attr:`runtime_actions` (another counts): every decision taken from the
        second clock edge after a change on takes the new one (so after the change a frame's index is the value
        ``frames`` has two cycles later).
    control_clear : In(1)
        With ``clearable``, a pulse: empty the filter. From the next cycle frames pass unchecked until every key sent to the core has
        its answer (with the memory scan, also until the core is idle and so is ``memory_idle``: no write of
        the old filter is in flight to be taken for one of the clearing's); then the core is reset for a cycle (``control_cleared`` high) and clears its memory as after
        a reset, and the frames after that are keyed into the empty filter. Asked for again meanwhile, one clear.
    control_cleared : Out(1)
        High in the cycle the core is reset by a clear.
    control_frames : Out(32)
        Frames whose decision has been made so far, in order (wraps): in the cycle after ``control_cleared`` (or
        ``control_window_done``) it is the index of the first frame that the cleared filter (or the new window)
        decides.
    control_window, control_window_set : In(32), In(1)
        With ``runtime_window``: a pulse of ``control_window_set`` asks for a window of ``control_window`` ticks
        (1 .. ``2**(time_width-1) - 1``, the caller checks; reset: the Config's span). As for a clear, frames pass
        unchecked until every key sent to the core has its answer; then the core takes the span, its shift
        interval ``span // l + 1`` (computed meanwhile, a bit per cycle) and, for a shorter span, lowers its
        segments' expiry (:meth:`apbbf.model.dedup.Dedup.set_window`). A clear keeps the window.
    control_window_done : Out(1)
        High in the cycle the core takes the new window.
    control_seed, control_rekey : In(64), In(1)
        With ``runtime_seed``: a pulse of ``control_rekey`` re-keys the filter with the run-time seed
        ``control_seed`` (held from the pulse until ``control_cleared``, in whose cycle it is read; the hash's
        seed is 0 after reset): it is a clear (``control_clear``, whose ``control_cleared`` and
        ``control_frames`` name it too), and in the cycle the core is reset the hash takes the new seed, so the
        frames after it are keyed with it into the empty filter (:meth:`apbbf.model.dedup.Dedup.rekey`). Asked
        for during a clear, the clear is the re-key.

    Raises
    ------
    TypeError, ValueError
        If a parameter is of the wrong type or out of range (the message names it).
    """

    def __init__(self, config: Config, spec: KeySpec, *, data_width: int = 512, action: str = "drop",
                 timestamps: str = "tuser", tick_cycles: int = 1, fcs: bool = False, max_frame: int = 9600,
                 key_queue: int = 16, scan: str | None = None, pace: int | None = None, memory_depth: int = 8,
                 memory_one_row: bool = False, answer_deadline: int = 1024, clearable: bool = False,
                 runtime_window: bool = False, runtime_seed: bool = False):
        check_config(config)
        if not config.timed:
            raise ValueError("config must have a span: the de-duplicator's window is bounded by time")
        if config.key_width != 64:
            raise ValueError(f"config.key_width must be 64 (the keys are CRC-64), not {config.key_width}")
        if not isinstance(spec, KeySpec):
            raise TypeError(f"spec must be a KeySpec, not {spec!r}")
        if data_width not in DATA_WIDTHS:
            raise ValueError(f"data_width must be one of {', '.join(map(str, DATA_WIDTHS))}, not {data_width!r}")
        if action not in [a.value for a in Action]:
            raise ValueError(f"action must be 'drop', 'mark' or 'count', not {action!r}")
        if timestamps not in ("tuser", "counter"):
            raise ValueError(f"timestamps must be 'tuser' or 'counter', not {timestamps!r}")
        check_integer("tick_cycles", tick_cycles, range(1, (1 << 16) + 1))
        if not isinstance(fcs, bool):
            raise TypeError(f"fcs must be a bool, not {fcs!r}")
        check_integer("max_frame", max_frame, range(64, 65536))
        check_integer("key_queue", key_queue, range(2, 257))
        if scan is None:
            scan = MEMORY_SCAN if config.row_layout else "parallel"
        if scan not in (*SCANS, MEMORY_SCAN):
            raise ValueError(f"scan must be one of {', '.join(map(repr, (*SCANS, MEMORY_SCAN)))}, not {scan!r}")
        if config.row_layout and scan != MEMORY_SCAN:
            raise ValueError(f"a Config with a row layout (row_bits={config.row_bits}) takes scan 'memory', "
                             f"not {scan!r}")
        if scan == MEMORY_SCAN and not config.row_layout:
            raise ValueError("scan 'memory' needs a Config with a row layout (row_bits > 0), not row_bits=0")
        check_depth(memory_depth)
        if not isinstance(memory_one_row, bool):
            raise TypeError(f"memory_one_row must be a bool, not {memory_one_row!r}")
        self._memory_one_row = memory_one_row
        check_integer("answer_deadline", answer_deadline, range(1, 1 << 16))
        if pace is not None:
            most = _most_pace(data_width) if scan == "parallel" else 1
            check_integer("pace", pace, range(1, most + 1))
        self._pace = pace
        if not isinstance(clearable, bool):
            raise TypeError(f"clearable must be a bool, not {clearable!r}")
        self._clearable = clearable
        if not isinstance(runtime_window, bool):
            raise TypeError(f"runtime_window must be a bool, not {runtime_window!r}")
        self._runtime_window = runtime_window
        if not isinstance(runtime_seed, bool):
            raise TypeError(f"runtime_seed must be a bool, not {runtime_seed!r}")
        if runtime_seed and not clearable:
            raise ValueError("runtime_seed needs clearable=True (a re-key is a clear with a new seed)")
        self._runtime_seed = runtime_seed
        self._extractor = KeyExtractor(spec, data_width, fcs=fcs)
        self._info_layout = data.StructLayout({"time": config.time_width, "errored": 1, "released": 1})
        limit = -(-(max_frame + 4 * fcs) // (data_width // 8))
        # The extractor's beats pass a register first (see elaborate): keys come a cycle after its own latency.
        self._latency = self._extractor.latency + 1
        if action == "drop" and limit <= self._latency + 2:
            # A frame released early puts its decision in the queue a cycle after its beat ``limit``: the key of
            # the frame before it must be out of the extractor by then, or the decisions would leave frame order
            # (and a release and that key in one cycle would be one write to the decision queue).
            least = (self._latency + 2) * (data_width // 8) - 4 * fcs
            raise ValueError(f"max_frame must be more than {least} bytes with data_width {data_width} and action "
                             f"'drop', not {max_frame}")
        self._config, self._spec, self._width = config, spec, data_width
        self._action, self._timestamps, self._tick_cycles = Action(action), timestamps, tick_cycles
        self._fcs, self._max_frame, self._key_queue, self._scan = fcs, max_frame, key_queue, scan
        self._memory_depth, self._answer_deadline = memory_depth, answer_deadline
        # A frame's info waits for its key, which comes at most ``latency`` cycles after its last beat, and the info
        # is written a cycle after that beat: so the queue and its head register hold ``latency`` entries at most,
        # one frame ending per clock. Its write is not gated by its room (sim/dedup.py checks the room on every
        # write): ``lib.fifo.SyncFIFO``'s gate, its level's compare, went to every LUT RAM cell (7.5 ns at 64 bits).
        self._info = UngatedFIFO(width=self._info_layout.size, depth=self._latency + 4)
        members = {
            "i": In(stream.Signature(in_beat_layout(data_width, config.time_width))),
            "o": Out(stream.Signature(out_beat_layout(data_width))),
            "frames": Out(32), "duplicates": Out(32), "dropped": Out(32), "unchecked": Out(32),
            "errored": Out(32),
            "control_action": In(2, init=ACTIONS.index(self._action.value)), "control_clear": In(1),
            "control_cleared": Out(1), "control_frames": Out(32),
            "control_window": In(32, init=config.span), "control_window_set": In(1), "control_window_done": Out(1),
            "control_seed": In(64), "control_rekey": In(1),
        }
        if scan == MEMORY_SCAN:
            members.update({"late": Out(32), "memory": Out(MemoryPortSignature(config)), "memory_idle": In(1, init=1)})
        super().__init__(members)

    @property
    def config(self) -> Config:
        return self._config

    @property
    def spec(self) -> KeySpec:
        return self._spec

    @property
    def data_width(self) -> int:
        return self._width

    @property
    def action(self) -> str:
        return self._action.value

    @property
    def timestamps(self) -> str:
        return self._timestamps

    @property
    def tick_cycles(self) -> int:
        return self._tick_cycles

    @property
    def fcs(self) -> bool:
        return self._fcs

    @property
    def max_frame(self) -> int:
        return self._max_frame

    @property
    def key_queue(self) -> int:
        return self._key_queue

    @property
    def scan(self) -> str:
        return self._scan

    @property
    def memory_depth(self) -> int:
        return self._memory_depth

    @property
    def answer_deadline(self) -> int:
        return self._answer_deadline

    @property
    def clearable(self) -> bool:
        return self._clearable

    @property
    def runtime_window(self) -> bool:
        return self._runtime_window

    @property
    def runtime_seed(self) -> bool:
        """Whether the hash takes a run-time seed (``control_rekey``)."""
        return self._runtime_seed

    @property
    def runtime_actions(self) -> tuple[str, ...]:
        """The actions ``control_action`` takes: with ``drop`` every one (the whole frame waits for its answer),
        with ``mark`` ``mark`` and ``count`` (only the last beat waits: no frame can be dropped), with ``count``
        ``count`` alone (no ``tuser`` out)."""
        return {Action.DROP: ACTIONS, Action.MARK: ("mark", "count"), Action.COUNT: ("count",)}[self._action]

    @property
    def core_pace(self) -> int:
        """The core's cycles per key at most (:class:`~apbbf.hdl.core.APBBF`'s ``pace``), with the parallel scan: 3
        at 64 and 128 bits, where a frame of 60 bytes or more takes four beats or more (at pace 3 the decision is
        a few registers, and the de-duplicator's clock is no longer bounded by it: ``docs/measurements.md``); 2 at
        256 bits (two beats); else 1."""
        if self._scan != "parallel":
            return 1
        return _most_pace(self._width) if self._pace is None else self._pace

    @property
    def extractor_latency(self) -> int:
        """Cycles from a frame's last beat accepted to its key, at most: the register in front of the key
        extractor and its latency bound (:attr:`KeyExtractor.latency
        <apbbf.hdl.packet.key_extractor.KeyExtractor.latency>`)."""
        return self._latency

    @property
    def _hold(self) -> int:
        """Cycles an answer can be held back at most: a restart (``segment_blocks`` cycles) or, with the memory
        scan, the answer deadline; and the commands queued before it and the pipeline's own latency."""
        wait = self._answer_deadline if self._scan == MEMORY_SCAN else self._config.segment_blocks
        return wait + 2 * self._key_queue + 64

    @property
    def buffer_beats(self) -> int:
        """Beats the packet buffer holds (0 with ``count``): the longest frame (and its FCS), the longest an
        answer can be held back (a restart: ``segment_blocks`` cycles, or with the memory scan
        ``answer_deadline``; and the commands queued before it), and the pipeline's own latency, rounded up to a
        power of two."""
        if self._action == Action.COUNT:
            return 0
        frame = self._limit if self._action == Action.DROP else 0
        return 1 << (frame + self._hold - 1).bit_length()

    def packet_buffer(self) -> BankedQueue:
        """A packet buffer as this de-duplicator builds its own (a new one, to measure alone: ``make
        dedup-bench`` places it between registers).

        Raises
        ------
        ValueError
            With ``count``, which has no packet buffer.
        """
        if self._action == Action.COUNT:
            raise ValueError("action count has no packet buffer")
        # Its write through registers at each bank: at 512 bits its 65 block RAMs are spread over the device, and
        # the input's valid to their write enables was the buffer's path placed alone (114.8 MHz; 127.8 after).
        layout = data.StructLayout({"data": self._width, "keep": self._width // 8, "last": 1})
        return BankedQueue(layout, self.buffer_beats, registered_write=True)

    def _elaborate_window(self, m, core, outstanding, windowing):
        """A window change: its shift interval divided out a bit per cycle (l is any integer) while the keys
        drain; then the core takes both, and lowers its expiry in the next cycle."""
        c = self._config
        w = c.time_width
        span = Signal(w, init=c.span)
        interval = Signal(w, init=c.shift_interval)
        lower = Signal()
        pending = Signal(w)                                 # the span asked for, shifted out into the division
        quotient = Signal(w)
        remainder = Signal(range(2 * c.l))
        bits = Signal(range(w + 1))                         # bits of the quotient still to find
        asked = Signal(w)
        m.d.comb += [core.span.eq(span), core.shift_interval.eq(interval), core.lower.eq(lower),
                     self.control_window_done.eq(lower)]
        m.d.sync += lower.eq(0)
        with m.If(self.control_window_set & ~windowing):
            m.d.sync += [windowing.eq(1), asked.eq(self.control_window[:w]), pending.eq(self.control_window[:w]),
                         quotient.eq(0), remainder.eq(0), bits.eq(w)]
        with m.Elif(windowing & (bits != 0)):
            partial = Cat(pending[w - 1], remainder)        # the remainder with the next bit of the span
            take = partial >= c.l
            m.d.sync += [pending.eq(pending << 1), bits.eq(bits - 1), quotient.eq(Cat(take, quotient)),
                         remainder.eq(Mux(take, partial - c.l, partial))]
        with m.Elif(windowing & (outstanding == 0) & ~lower):
            m.d.sync += [span.eq(asked), interval.eq(quotient + 1), lower.eq(1)]
        with m.Elif(lower):
            m.d.sync += windowing.eq(0)

    @property
    def _limit(self) -> int:
        """Beats of the longest frame (with its FCS)."""
        return -(-(self._max_frame + 4 * self._fcs) // (self._width // 8))

    def elaborate(self, platform):
        # Keys flow forward only: extractor -> key queue -> core; a decision per frame, in frame order, enters the
        # decision queue when its key does (checked, unchecked or errored), and the core's answers, in the order
        # of the checked frames, enter the answer queue. The output stage takes a frame's decision (and, if
        # checked, its answer) when its first beat (drop) or its last beat (mark) is due, and counts it.
        c = self._config
        m = Module()
        m.submodules.extractor = extractor = self._extractor
        # Run-time control: a clear resets the core (``clear_reset``) once no key is queued or in it.
        clearing, clear_reset = Signal(), Signal()
        memory = self._scan == MEMORY_SCAN
        if memory:
            core = MemoryAPBBF(c, depth=self._memory_depth, one_row=self._memory_one_row,
                               runtime_window=self._runtime_window, tweak=self._runtime_seed)
        else:
            core = APBBF(c, scan=self._scan, pace=self.core_pace, runtime_window=self._runtime_window,
                         tweak=self._runtime_seed)
        m.submodules.core = ResetInserter(clear_reset)(core) if self._clearable else core
        if memory:
            wiring.connect(m, core.memory, wiring.flipped(self.memory))

        accept = self.i.valid & self.i.ready
        beat = self.i.payload

        # The frame's time (first beat) and its length so far (for the oversize rule).
        first = Signal(init=1)
        with m.If(accept):
            m.d.sync += first.eq(beat.last)
        now = Signal(c.time_width)
        if self._timestamps == "counter":
            prescaler = Signal(range(self._tick_cycles))
            with m.If(prescaler == self._tick_cycles - 1):
                m.d.sync += [prescaler.eq(0), now.eq(now + 1)]
            with m.Else():
                m.d.sync += prescaler.eq(prescaler + 1)
        # The frame's time is loaded every cycle, with the time source's while no frame is under way (``first``):
        # as the enable of its flip-flops, ``accept`` (the packet buffer's room) was a long net from the buffer's
        # block RAM (the 64-bit path of a seed, 7.87 ns).
        frame_time = Signal(c.time_width)
        stamp = Mux(first, beat.user.time if self._timestamps == "tuser" else now, frame_time)
        m.d.sync += frame_time.eq(stamp)

        limit = self._limit
        drop = self._action == Action.DROP
        beats_in = Signal(range(limit + 2))
        oversize = Signal()                                 # this frame passed the limit (drop: released)
        release = Signal()                                  # it does so in this cycle
        with m.If(accept):
            m.d.sync += beats_in.eq(Mux(beat.last, 0, Mux(beats_in == limit + 1, beats_in, beats_in + 1)))
            with m.If(beat.last):
                m.d.sync += oversize.eq(0)
        if drop:
            m.d.comb += release.eq(accept & ~oversize & (beats_in == limit) & ~beat.last)
            with m.If(release):
                m.d.sync += oversize.eq(1)

        # The extractor sees every accepted beat, a cycle later: its input is a register, loaded every cycle (only its
        # valid flag depends on the accept), so that the packet buffer's level, which decides ``i.ready``, reaches one
        # flip-flop and not the enables of the extractor's wide input. Per frame, (time, errored, released) waits for
        # its key in a FIFO of LUT RAM, and the FIFO's head in a register (loaded as the head before it is read), so
        # that a key's status starts from flip-flops: read straight from the LUT RAM it was a long route in front of
        # the key queue's and decision queue's writes. The key comes at least three cycles after its frame's last beat
        # is accepted (one into the extractor, two through it); the info is written a cycle after that accept, and the
        # head holds it two cycles after the write. The register holds the head's complement: a register of the read
        # data itself would be merged by Yosys into the memory's read port, which then maps to a block RAM without its
        # output register (5.8 ns from the clock to the data; so does ``SyncFIFOBuffered``'s).
        m.d.sync += [extractor.i.valid.eq(accept), extractor.i.payload.data.eq(beat.data),
                     extractor.i.payload.keep.eq(beat.keep), extractor.i.payload.last.eq(beat.last)]
        info_layout = self._info_layout
        m.submodules.info = info = self._info
        info_in = data.View(info_layout, info.w_data)
        info_head = Signal(info_layout.size)                # the head, complemented
        info_out = data.View(info_layout, ~info_head)
        info_held = Signal()
        # The write, a cycle after the last beat, from registers: the accept (``i.ready``, the packet buffer's room)
        # reaches one flip-flop here, not the FIFO's write enables across the device. The data is loaded every cycle;
        # a frame is released on a beat before its last (``release`` needs ``~beat.last``), so at its last beat
        # ``oversize`` alone says whether it was.
        m.d.sync += [info.w_en.eq(accept & beat.last), info_in.time.eq(stamp), info_in.errored.eq(beat.user.error),
                     info_in.released.eq(oversize)]

        # Keys to the core through a short queue; every frame's status into the decision queue, in order. The key
        # queue is a ``BankedQueue`` as the others (a few block RAMs, not a LUT RAM's dozens of cells), and the keys
        # in it, its read stage included, are ``key_queue`` credits: a key's write, and its frame's status (whether
        # it fit), hang on a flip-flop. A ``lib.fifo.SyncFIFOBuffered`` of LUT RAM computed its room from its level,
        # and the write enable it gated went to every LUT RAM of the queue and back to the level: at 64 bits the
        # de-duplicator's critical path (6.86 ns, 5.2 of it routing).
        key_layout = data.StructLayout({"key": len(extractor.o.payload.key), "time": c.time_width})
        m.submodules.keys = keys = BankedQueue(key_layout, self._key_queue)
        key_room = Signal(init=1)
        m.d.sync += key_room.eq(credit_flag(m, "key_queue", keys.w.valid & key_room,
                                            keys.r.valid & keys.r.ready, self._key_queue))
        decisions_depth = max(self.buffer_beats, 4 * self._key_queue, 16)
        if memory:
            # A decision waits for its answer ``answer_deadline`` cycles at most from its write, a frame per cycle
            # at most (with ``count`` too, whose frames do not wait): the decisions of ``_hold`` cycles.
            decisions_depth = max(decisions_depth, 1 << (self._hold - 1).bit_length())
            stamp_width = self._answer_deadline.bit_length() + 1
            decision_layout = data.StructLayout({"status": 2, "stamp": stamp_width})
        else:
            decision_layout = 2
        m.submodules.decisions = decisions = BankedQueue(decision_layout, decisions_depth)
        m.submodules.answers = answers = BankedQueue(1, decisions_depth)
        key_arrives = extractor.o.valid
        info_load = info.r_rdy & (~info_held | key_arrives)
        m.d.comb += info.r_en.eq(info_load)
        with m.If(info_load):
            m.d.sync += [info_head.eq(~info.r_data), info_held.eq(1)]
        with m.Elif(key_arrives):
            m.d.sync += info_held.eq(0)
        windowing = Signal()                                # a window change under way
        room = key_room & ~clearing & ~windowing            # a clear under way: frames pass unchecked
        m.d.comb += [keys.w.valid.eq(key_arrives & ~info_out.errored & ~info_out.released & room),
                     keys.w.payload.key.eq(extractor.o.payload.key), keys.w.payload.time.eq(info_out.time)]
        status = Signal(2)
        m.d.comb += status.eq(Mux(info_out.errored, Status.ERRORED,
                                  Mux(room & ~info_out.released, Status.CHECKED, Status.UNCHECKED)))
        # A released frame's decision goes in a cycle after its release (from a register: the accept, which the
        # release hangs on, stays off the decision queue's write across the device); an errored one's key is not
        # inserted.
        release_write = Signal()
        m.d.sync += release_write.eq(release)
        decision_status = Mux(release_write, Status.UNCHECKED, status)
        m.d.comb += decisions.w.valid.eq((key_arrives & ~info_out.released) | release_write)
        if memory:
            # Each decision carries the cycle it was written at: its answer's deadline runs from there.
            clock = Signal(stamp_width)
            m.d.sync += clock.eq(clock + 1)
            m.d.comb += [decisions.w.payload.status.eq(decision_status), decisions.w.payload.stamp.eq(clock)]
        else:
            m.d.comb += decisions.w.payload.eq(decision_status)
        m.d.comb += [core.cmd.valid.eq(keys.r.valid), core.cmd.payload.op.eq(Op.TEST_AND_INSERT),
                     core.cmd.payload.key.eq(keys.r.payload.key), core.cmd.payload.time.eq(keys.r.payload.time),
                     keys.r.ready.eq(core.cmd.ready),
                     answers.w.valid.eq(core.rsp.valid), answers.w.payload.eq(core.rsp.payload.hit),
                     core.rsp.ready.eq(answers.w.ready)]

        # The clear: keys sent and not yet answered counted; with none left the core is reset for a cycle (the
        # memory core once its writes have landed too: the reset's clearing counts acknowledgements, and one of
        # the old filter's would count as one of its own, declaring words clean before their zeros land).
        outstanding = Signal(range(self._key_queue + 1024))
        if self._clearable or self._runtime_window:
            m.d.sync += outstanding.eq(outstanding + keys.w.valid - (core.rsp.valid & core.rsp.ready))
        if self._runtime_window:
            self._elaborate_window(m, core, outstanding, windowing)
        if self._clearable:
            ask = self.control_clear
            if self._runtime_seed:
                # A re-key is a clear whose reset cycle also puts the staged seed in the hash (no key is in the
                # core then, and the core clears its memory before it takes the next).
                # The seed is read then, not staged here: the register file holds it until the clear is done.
                seed, rekeying = Signal(64), Signal()
                ask = self.control_clear | self.control_rekey
                m.d.comb += core.tweak.eq(seed)
                with m.If(clear_reset):
                    with m.If(rekeying):
                        m.d.sync += seed.eq(self.control_seed)
                    m.d.sync += rekeying.eq(0)
                with m.If(self.control_rekey):
                    m.d.sync += rekeying.eq(1)
            with m.If(clear_reset):
                m.d.sync += [clearing.eq(ask), clear_reset.eq(0)]
            with m.Else():
                with m.If(ask):
                    m.d.sync += clearing.eq(1)
                quiet = (core.idle & self.memory_idle) if memory else 1
                m.d.sync += clear_reset.eq(clearing & (outstanding == 0) & quiet)
        with m.If(decisions.w.valid):
            m.d.sync += self.control_frames.eq(self.control_frames + 1)
        m.d.comb += self.control_cleared.eq(clear_reset)
        action = Signal(2, init=ACTIONS.index(self._action.value))
        m.d.sync += action.eq(self.control_action)
        act_drop = Signal()
        m.d.comb += act_drop.eq(drop & (action == ACTIONS.index("drop")))

        # The decision of the frame at the head of the output, once known.
        take = Signal()                                     # the head frame's decision is taken now
        late = Signal()                                     # and it is late (memory scan only)
        if memory:
            # Answers come in the order of the checked frames, late ones included: ``owed`` counts the late frames
            # whose answers are still to come, and those are read and discarded as they reach the head. It is
            # bounded by the keys between the key queue and the answer queue (a few hundred).
            decision = decisions.r.payload.status
            age = Signal(stamp_width)
            m.d.comb += age.eq(clock - decisions.r.payload.stamp)
            owed = Signal(16)
            discard = answers.r.valid & (owed != 0)
            answer_here = answers.r.valid & (owed == 0)
            expired = age >= self._answer_deadline
            known = decisions.r.valid & ((decision != Status.CHECKED) | answer_here | expired)
            m.d.comb += late.eq((decision == Status.CHECKED) & ~answer_here)
            duplicate = (decision == Status.CHECKED) & answer_here & answers.r.payload
            m.d.sync += owed.eq(owed + (take & late) - discard)
            m.d.comb += [decisions.r.ready.eq(take),
                         answers.r.ready.eq(discard | (take & (decision == Status.CHECKED) & answer_here))]
        else:
            decision = decisions.r.payload
            known = decisions.r.valid & ((decision != Status.CHECKED) | answers.r.valid)
            duplicate = (decision == Status.CHECKED) & answers.r.payload
            m.d.comb += [decisions.r.ready.eq(take), answers.r.ready.eq(take & (decision == Status.CHECKED))]
        unchecked = ((decision == Status.UNCHECKED) | late) if memory else decision == Status.UNCHECKED
        # The counters count a decision the cycle after it is taken, from registers: the decision comes from the
        # queues' heads through a few LUTs, and behind it were the counters' 32-bit carry chains.
        counted, counted_duplicate, counted_unchecked, counted_errored = Signal(), Signal(), Signal(), Signal()
        counted_drop = Signal()
        m.d.sync += [counted.eq(take), counted_duplicate.eq(duplicate), counted_drop.eq(act_drop),
                     counted_unchecked.eq(unchecked),
                     counted_errored.eq(decision == Status.ERRORED)]
        with m.If(counted):
            m.d.sync += [
                self.frames.eq(self.frames + 1),
                self.duplicates.eq(self.duplicates + counted_duplicate),
                self.dropped.eq(self.dropped + (counted_duplicate & counted_drop)),
                self.unchecked.eq(self.unchecked + counted_unchecked),
                self.errored.eq(self.errored + counted_errored),
            ]
        if memory:
            counted_late = Signal()
            m.d.sync += counted_late.eq(late)
            with m.If(counted):
                m.d.sync += self.late.eq(self.late + counted_late)

        if self._action == Action.COUNT:
            # Frames pass as they come; decisions are only counted.
            m.d.comb += [self.o.valid.eq(self.i.valid), self.i.ready.eq(self.o.ready),
                         self.o.payload.data.eq(beat.data), self.o.payload.keep.eq(beat.keep),
                         self.o.payload.last.eq(beat.last), take.eq(known)]
            return m

        # The packet buffer, and the output stage, which hands the head frame's decision on in ``user``.
        flags = Signal(self.o.payload.user.shape())
        m.d.comb += [flags.duplicate.eq(duplicate & (action == ACTIONS.index("mark"))), flags.unchecked.eq(unchecked),
                     flags.errored.eq(decision == Status.ERRORED)]
        m.submodules.buffer = buffer = self.packet_buffer()
        m.d.comb += [buffer.w.valid.eq(self.i.valid), self.i.ready.eq(buffer.w.ready),
                     buffer.w.payload.data.eq(beat.data), buffer.w.payload.keep.eq(beat.keep),
                     buffer.w.payload.last.eq(beat.last)]
        head = buffer.r.payload
        # The head frame's decision waits in registers (``current``), taken from the queues as soon as the frame
        # before it has left: in the cycle its last beat leaves, or any later cycle. So ``buffer.r.ready`` and
        # ``o.valid`` come from these flip-flops, the buffer's head and ``o.ready``, not through the decision and
        # answer queues' heads (``known``): those were five LUTs in front of the buffer's read-ahead across the
        # device. A frame still leaves in the cycle after the one before it: the decision is loaded in the same
        # cycle that the last beat leaves.
        current = Signal()                                  # the head frame's decision is in the registers
        current_keep = Signal()                             # and the frame is forwarded (drop)
        current_flags = Signal(flags.shape())
        leaving = buffer.r.valid & buffer.r.ready
        frame_left = leaving & head.last
        m.d.comb += take.eq(known & (~current | frame_left))
        with m.If(take):
            m.d.sync += [current.eq(1), current_keep.eq(~(duplicate & act_drop)), current_flags.eq(flags)]
        with m.Elif(frame_left):
            m.d.sync += current.eq(0)
        m.d.comb += [self.o.payload.data.eq(head.data), self.o.payload.keep.eq(head.keep),
                     self.o.payload.last.eq(head.last)]
        with m.If(head.last):
            m.d.comb += self.o.payload.user.eq(current_flags)
        if drop:
            # The whole frame waits for its decision, and a dropped frame's beats are read and not passed on.
            ready_beat = buffer.r.valid & current
            m.d.comb += [self.o.valid.eq(ready_beat & current_keep),
                         buffer.r.ready.eq(ready_beat & (self.o.ready | ~current_keep))]
        else:                                               # mark: only the last beat waits
            ready_beat = buffer.r.valid & (~head.last | current)
            m.d.comb += [self.o.valid.eq(ready_beat), buffer.r.ready.eq(ready_beat & self.o.ready)]
        return m
