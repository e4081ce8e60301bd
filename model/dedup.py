"""Packet de-duplication: frames in, each frame's key tested and inserted in a time-bounded window, duplicates
dropped, marked or counted. The specification of the ``PacketDedup`` datapath and of ``apbbf dedup``.

Definition
----------
The pipeline has a :class:`~apbbf.model.config.Config` with a span (the window, in ticks), a
:class:`~apbbf.model.packet.KeySpec` and an :class:`Action`. Frames come in order, each with its time in *ticks*
(integers, non-decreasing: a MAC timestamp or a free-running counter; the filter sees them modulo
``2**time_width``) and two flags, *errored* (the MAC marked the frame bad) and *unchecked* (the datapath could
not have its answer in time: fail open). For each frame:

1. An errored frame is passed on (unmarked) and counted in ``errored``; no command is sent. Otherwise an unchecked
   frame is passed on (unmarked) and counted in ``unchecked``; no command is sent.
2. Otherwise its key (:func:`apbbf.model.packet.frame_key`) goes to the filter
   (:class:`~apbbf.model.timewindow.TimedAPBBF`) as TEST_AND_INSERT at the frame's time. The frame is a
   *duplicate* iff the answer is a hit; duplicates are counted in ``duplicates``. Every checked frame is inserted,
   duplicates too: the window runs from a key's last copy.
   With ``drop`` and a ``max_frame``, an *oversize* frame comes first: passed on (unmarked) and counted in
   ``unchecked``, errored or not, with no command sent (the datapath releases it from its store-and-forward
   buffer before its key is known; :func:`oversize` says which frames, exactly as the gateware counts beats).
3. The action decides the output: ``drop`` forwards every frame but duplicates (counted in ``dropped``); ``mark``
   forwards every frame and marks the duplicates (a ``tuser`` bit on the frame's last beat); ``count`` forwards
   every frame unmarked.

Counters: ``frames`` (all), ``duplicates``, ``dropped``, ``unchecked``, ``errored``.

Link types
----------
The gateware sees Ethernet frames. A :class:`Dedup` for another link type (``linktype``: a capture's, see
:func:`apbbf.model.packet.network_layer`) keys each record as the Ethernet frame carrying its network-layer
packet would be keyed by the same key (:func:`apbbf.model.packet.record_key`), and counts that frame's length
for ``max_frame``: the packet after the link header plus a 14-byte Ethernet header (the record itself on link
types that carry no IP).

Ticks
-----
:func:`to_ticks` turns capture timestamps (integer nanoseconds) into ticks of ``tick`` nanoseconds:
``floor(t / tick)``, made non-decreasing: a timestamp earlier than the latest one before it takes the latest
tick. So the window is measured in arrival order: a record stamped earlier than one before it is taken as arriving
at the time of the latest (the hardware's clock, which stamps frames as they arrive, never goes back). Captures
merged from several interfaces or written by several capture threads are a few microseconds out of order; a
record placed earlier in time would make a copy look older than it is, or younger than its original. Such
records are counted (``reordered``). The span of a window of
``window`` nanoseconds is ``ceil(window / tick)`` ticks, so that two frames at most ``window`` apart are at most
``span`` ticks apart.

The exact answer
----------------
:class:`ExactWindow` is the ideal de-duplicator the filter is compared with: a dictionary of *full* keys (the
messages of :func:`apbbf.model.packet.message`, the selected bytes themselves, not their hash) with the tick each
was last seen. A checked frame is an exact duplicate iff its full key was last seen at most ``span`` ticks
earlier. With no overflow the filter finds every exact duplicate (no false negatives:
:class:`~apbbf.model.timewindow.TimedAPBBF` keeps every key at least ``span`` ticks after its last insert); it may
also report a frame whose last copy is a little older than the span (the window's slack, up to about
``k·shift_interval`` more) or one never seen (a false positive of the filter or a 64-bit key collision).

Two paths
---------
:meth:`Dedup.frame` (per frame: :func:`~apbbf.model.packet.frame_key` and
:meth:`TimedAPBBF.test_and_insert <apbbf.model.timewindow.TimedAPBBF.test_and_insert>`) and :meth:`Dedup.run`
(a :class:`~apbbf.model.packet.FrameBatch` at once: :func:`~apbbf.model.packet.frame_keys` and either
:meth:`TimedAPBBF.run <apbbf.model.timewindow.TimedAPBBF.run>` or :class:`TimedTestAndInsert`, a bulk evaluation
of the same filter for streams of TEST_AND_INSERT whose cost does not grow with the number of shifts;
``tests/test_dedup.py`` proves it equal to :class:`~apbbf.model.timewindow.TimedAPBBF`, answers and counters).
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass

import numpy as np

from .config import Config, check_config, check_integer
from .filters import Op, scan_from
from .hashing import HashSpec
from .packet import (IP_LINKTYPES, LINKTYPE_ETHERNET, FrameBatch, KeySpec, check_link, frame_keys, network_layer,
                     record_key)
from .timewindow import TimedAPBBF

__all__ = ["Action", "Status", "Counters", "to_ticks", "span_ticks", "oversize", "ethernet_lengths", "ExactWindow",
           "TimedTestAndInsert", "DedupResult", "Dedup"]

#: ``tdata`` widths of the datapath, bits (``apbbf.hdl.packet_dedup.DATA_WIDTHS``).
DATA_WIDTHS = (64, 128, 256, 512)
#: Ethernet header bytes (destination, source, EtherType) added to a packet of another link type.
ETHERNET_HEADER = 14


class Action(enum.Enum):
    """What happens to a duplicate: ``drop`` it, ``mark`` it (forwarded), or ``count`` it only (forwarded)."""
    DROP = "drop"
    MARK = "mark"
    COUNT = "count"


class Status(enum.IntEnum):
    """How a frame went through: its key was tested (``CHECKED``), or it passed untested."""
    CHECKED = 0
    ERRORED = 1
    UNCHECKED = 2


@dataclass
class Counters:
    """The pipeline's counters (module documentation)."""
    frames: int = 0
    duplicates: int = 0
    dropped: int = 0
    unchecked: int = 0
    errored: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _check_positive_int(name: str, value) -> int:
    return check_integer(name, value, range(1, 1 << 63))


def to_ticks(times_ns, tick: int) -> tuple[np.ndarray, int]:
    """Capture timestamps (integer nanoseconds) as non-decreasing ticks of ``tick`` nanoseconds.

    Parameters
    ----------
    times_ns : array-like of int
        Timestamps in nanoseconds, >= 0 (int64 holds them until the year 2262).
    tick : int
        Nanoseconds per tick, >= 1.

    Returns
    -------
    ticks : numpy.ndarray of int64
        ``floor(t / tick)``, each raised to its predecessor's if smaller.
    reordered : int
        How many timestamps were earlier than their predecessor's.

    Raises
    ------
    TypeError
        If ``tick`` is not an integer or the times are not integers.
    ValueError
        If ``tick`` < 1 or a time is negative.
    """
    _check_positive_int("tick", tick)
    times = np.asarray(times_ns)
    if times.size and times.dtype.kind not in "iu":
        raise TypeError(f"times must be integers (nanoseconds), not {times.dtype}")
    times = times.astype(np.int64)
    if times.size and times.min() < 0:
        raise ValueError("times must be >= 0")
    ticks = times // tick
    reordered = int(np.count_nonzero(np.diff(times) < 0)) if len(times) > 1 else 0
    return np.maximum.accumulate(ticks) if len(ticks) else ticks, reordered


def span_ticks(window: int, tick: int) -> int:
    """``ceil(window / tick)``: the span, in ticks, of a window of ``window`` nanoseconds.

    Raises
    ------
    TypeError, ValueError
        If ``window`` or ``tick`` is not a positive integer.
    """
    _check_positive_int("window", window)
    _check_positive_int("tick", tick)
    return -(-window // tick)


def oversize(lengths, max_frame: int, data_width: int = 512, fcs: bool = False) -> np.ndarray:
    """Which frames the datapath passes on unchecked with ``drop`` for being longer than ``max_frame``.

    The gateware counts beats, not bytes: a frame (with its FCS if ``fcs``) of ``ceil(bytes / lanes)`` beats
    (``lanes = data_width / 8``; at least one) is released from the packet buffer, unchecked, if it has more than
    ``limit + 1`` beats, ``limit = ceil((max_frame + 4·fcs) / lanes)``: its beat number ``limit + 1`` arrives and is
    not its last. So a frame of at most ``max_frame`` bytes is always checked, one of more than
    ``(limit + 1)·lanes - 4·fcs`` bytes never.

    Parameters
    ----------
    lengths : array-like of int
        Frame lengths in bytes, without FCS.
    max_frame : int
        64..65535.
    data_width : int
        64, 128, 256 or 512.
    fcs : bool
        The datapath's frames end with their FCS (4 more bytes each).

    Returns
    -------
    numpy.ndarray of bool

    Raises
    ------
    TypeError, ValueError
        If a parameter is of the wrong type or out of range.
    """
    check_integer("max_frame", max_frame, range(64, 65536))
    if data_width not in DATA_WIDTHS:
        raise ValueError(f"data_width must be one of {', '.join(map(str, DATA_WIDTHS))}, not {data_width!r}")
    if not isinstance(fcs, bool):
        raise TypeError(f"fcs must be a bool, not {fcs!r}")
    lanes = data_width // 8
    limit = -(-(max_frame + 4 * fcs) // lanes)
    beats = np.maximum(1, -(-(np.asarray(lengths, dtype=np.int64) + 4 * fcs) // lanes))
    return beats >= limit + 2


def ethernet_lengths(records: FrameBatch, linktype: int = LINKTYPE_ETHERNET) -> np.ndarray:
    """The length of the Ethernet frame (without FCS) that carries each record's packet (module documentation,
    "Link types"): the record's on Ethernet and on link types that carry no IP, else its packet after the link
    header (:func:`~apbbf.model.packet.network_layer`) plus 14 bytes.

    Raises
    ------
    TypeError
        If ``records`` is not a FrameBatch.
    """
    if not isinstance(records, FrameBatch):
        raise TypeError(f"records must be a FrameBatch, not {records!r}")
    if linktype == LINKTYPE_ETHERNET or linktype not in IP_LINKTYPES:
        return records.lengths
    return network_layer(records, linktype)[0].lengths + ETHERNET_HEADER


class ExactWindow:
    """The exact de-duplicator: full keys (bytes) with the tick each was last seen (module documentation).

    Parameters
    ----------
    span : int
        Ticks, >= 1: a key seen at most ``span`` ticks ago is a duplicate.
    retain : int or None
        Keys are remembered this many ticks after they were last seen (>= ``span``; default ``span``), so that
        :meth:`run` can report the age of copies older than the span (the filter's slack).

    Raises
    ------
    TypeError, ValueError
        If ``span`` or ``retain`` is not an integer in range.
    """

    def __init__(self, span: int, retain: int | None = None):
        self.span = _check_positive_int("span", span)
        self.retain = span if retain is None else check_integer("retain", retain, range(span, 1 << 63))
        self._seen: dict[bytes, int] = {}
        self._now = None
        self._swept = 0

    def __len__(self) -> int:
        return len(self._seen)

    def _sweep(self, now: int) -> None:
        """Forget keys last seen more than ``retain`` ticks before ``now`` (when the dictionary has doubled)."""
        if len(self._seen) > 2 * self._swept + 4096:
            oldest = now - self.retain
            for key in [key for key, t in self._seen.items() if t < oldest]:
                del self._seen[key]
            self._swept = len(self._seen)

    def run(self, keys, ticks) -> tuple[np.ndarray, np.ndarray]:
        """Test and insert full keys at their ticks, in order.

        Parameters
        ----------
        keys : sequence of bytes
            Full keys (:func:`apbbf.model.packet.message`).
        ticks : array-like of int
            Non-decreasing, not before the last tick of a previous call.

        Returns
        -------
        duplicate : numpy.ndarray of bool
            Last seen at most ``span`` ticks earlier.
        age : numpy.ndarray of int64
            Ticks since the key was last seen, if at most ``retain``; else -1.

        Raises
        ------
        ValueError
            If keys and ticks differ in length or the ticks decrease.
        """
        ticks = np.asarray(ticks, dtype=np.int64)
        if len(keys) != len(ticks):
            raise ValueError(f"keys and ticks must have the same length, not {len(keys)} and {len(ticks)}")
        if len(ticks) and ((np.diff(ticks) < 0).any() or (self._now is not None and ticks[0] < self._now)):
            raise ValueError("ticks must be non-decreasing")
        age = np.full(len(ticks), -1, dtype=np.int64)
        seen, retain = self._seen, self.retain
        for i, (key, now) in enumerate(zip(keys, ticks.tolist())):
            last = seen.get(key)
            if last is not None and now - last <= retain:
                age[i] = now - last
            seen[key] = now
            if not i & 0xFFFF:
                self._sweep(now)
        if len(ticks):
            self._now = int(ticks[-1])
        return (age >= 0) & (age <= self.span), age


# The filter, evaluated in bulk for TEST_AND_INSERT streams --------------------------------------------------------

_NEVER = np.iinfo(np.int64).max
#: Most commands :class:`TimedTestAndInsert` evaluates at once, and most entries (bits of segment incarnations, or
#: key positions) of its working arrays: they bound its memory.
BULK_COMMANDS = 1 << 16
BULK_ENTRIES = 1 << 23


class TimedTestAndInsert:
    """The time-bounded filter (:class:`~apbbf.model.timewindow.TimedAPBBF`) for a stream of TEST_AND_INSERT
    commands, evaluated in bulk: the same answers and counters as ``TimedAPBBF.run`` with every op
    TEST_AND_INSERT, at a cost that does not grow with the number of shifts.

    How: every command inserts, so which segments are live, fresh, the insert targets, and when the filter shifts,
    retires or restarts depend on the times alone. A loop over these events (a few per shift) records each
    configuration; then, per block of commands, numpy computes every key's H3 bit positions in every physical
    segment (byte tables of the linear hash), the first command to set each bit of each segment incarnation
    (``np.minimum.at``), each query's match against the fresh segments, and Algorithm 1
    (:func:`~apbbf.model.filters.scan_from`).

    Times are given as plain (unwrapped) ticks, non-decreasing; the filter compares them modulo ``2**time_width``,
    which gives the same answers as long as every gap between consecutive commands plus the span is below
    ``2**(time_width - 1)`` ticks (checked).

    Parameters
    ----------
    config : Config
        With a span, ``key_width = 64``.

    Attributes
    ----------
    n, shifts, overflows, expired, restarts : int
        As :class:`~apbbf.model.timewindow.TimedAPBBF`'s.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no span or its keys are not 64 bits.
    """

    def __init__(self, config: Config):
        check_config(config)
        if not config.timed:
            raise ValueError("config has no span: its window is bounded by count alone")
        if config.key_width != 64:
            raise ValueError(f"key_width must be 64 (the packet keys), not {config.key_width}")
        c = self._config = config
        self._P, self._k, self._g = c.physical_segments, c.k, c.generation
        self._span, self._interval, self._S = c.span, c.shift_interval, c.segment_bits
        self._limit = 1 << (c.time_width - 1)
        self._hash = HashSpec(config)
        masks = np.array(self._hash.segment_masks, dtype=np.uint64)                 # (P, hash_bits)
        values = np.arange(256, dtype=np.uint64)[:, None] << (8 * np.arange(8, dtype=np.uint64))[None, :]
        parities = np.bitwise_count(values[:, :, None, None] & masks[None, None, :, :]) & 1
        weights = np.uint64(1) << np.arange(c.hash_bits, dtype=np.uint64)
        # _tab[q, v, p]: H3 hash in physical segment p of the mixed key whose byte q is v and the others 0 (a row
        # per byte value: a gather by byte gives every segment's hash contiguously)
        self._tab = np.ascontiguousarray((parities.astype(np.uint64) * weights).sum(axis=3, dtype=np.uint64)
                                         .transpose(1, 0, 2))
        self.n = self.shifts = self.overflows = self.expired = self.restarts = 0
        self._base = 0
        self._inc_pos: list[int] = []                # physical position of each segment incarnation
        self._stamp: dict[int, int] = {}              # t_j of live incarnations outside the insert targets
        self._first = np.full((self._P, self._S), _NEVER, dtype=np.int64)   # first setter, per position
        self._index = 0                                # commands so far
        self._t_prev = None                            # time of the last command
        self._reset()

    config = property(lambda self: self._config, doc="The filter's Config.")

    @property
    def base(self) -> int:
        """Physical position of logical segment 0 (as TimedAPBBF's)."""
        return self._base

    def _new(self, position: int) -> int:
        self._inc_pos.append(position)
        self._first[position] = _NEVER
        return len(self._inc_pos) - 1

    def _reset(self) -> None:
        """After reset or a restart: k empty segments at base.., not started, generation full."""
        self._live = [self._new((self._base + i) % self._P) for i in range(self._k)]
        self._stamp = {}
        self._fill, self._started, self._t_shift = self._g, False, 0

    # Events ---------------------------------------------------------------------------------------------------

    def _event(self, t: int) -> None:
        """Restart, start and shift at a command at time ``t`` (every event shifts), then its insert."""
        k, span = self._k, self._span
        prev = self._t_prev
        if self._started and t - prev > span:
            self.expired += len(self._live)
            self.restarts += 1
            self._reset()
        just_started = not self._started
        if just_started:
            self._started, self._t_shift = True, t
        # the targets' t_j: their last insert, or the start
        target_stamp = t if just_started else prev
        for inc in self._live[:k]:
            self._stamp[inc] = target_stamp
        if just_started:
            for inc in self._live[k:]:
                self._stamp[inc] = t
        assert self._fill == self._g or t - self._t_shift >= self._interval
        while len(self._live) > k and t - self._stamp[self._live[-1]] > span:
            del self._stamp[self._live.pop()]
            self.expired += 1
        if len(self._live) >= self._P - 1:
            del self._stamp[self._live.pop()]
            self.overflows += 1
        self._base = (self._base - 1) % self._P
        self._live.insert(0, self._new(self._base))
        self._fill, self._t_shift = 0, t
        self.shifts += 1

    def _schedule(self, times: np.ndarray):
        """Run the events of a call; the configuration each command's query and insert see."""
        n, k, g, span = len(times), self._k, self._g, self._span
        previous = np.concatenate([[times[0] if self._t_prev is None else self._t_prev], times[:-1]])
        gaps = np.flatnonzero(times - previous > span)
        records = [self._record()]                   # configuration before each event command
        events = []
        j = 0
        while j < n:
            if not self._started:
                e = j
            else:
                e = j + self._g - self._fill
                due = self._t_shift + self._interval
                if len(self._live) >= self._P - 1 and due - self._stamp[self._live[-1]] <= span:
                    due = self._stamp[self._live[-1]] + span + 1   # the pool is full: a shift by time waits
                e = min(e, max(j, int(np.searchsorted(times, due, side="left"))))
                at = int(np.searchsorted(gaps, j, side="left"))
                if at < len(gaps):
                    e = min(e, int(gaps[at]))
            if e >= n:
                break
            if e > j:
                self._fill += e - j
                self._t_prev = int(times[e - 1])
            self._event(int(times[e]))
            self._fill += 1
            self._t_prev = int(times[e])
            events.append(e)
            records.append(self._record())
            j = e + 1
        if j < n:
            self._fill += n - j
            self._t_prev = int(times[-1])
        self.n += n
        return np.array(events, dtype=np.int64), records

    def _record(self):
        k = self._k
        return (tuple(self._live), tuple(self._stamp.get(inc, 0) for inc in self._live[k:]), self._started)

    # Bulk -----------------------------------------------------------------------------------------------------

    def _locate(self, keys: np.ndarray) -> np.ndarray:
        """Bit positions of each key in each physical segment, (n, P, b) int64."""
        c = self._config
        keys = self._hash.mix_many(np.asarray(keys, dtype=np.uint64))
        hashes = self._tab[0][(keys & np.uint64(0xFF)).astype(np.intp)]
        for q in range(1, 8):
            hashes ^= self._tab[q][((keys >> np.uint64(8 * q)) & np.uint64(0xFF)).astype(np.intp)]
        blocks = (hashes & np.uint64(c.segment_blocks - 1)).astype(np.int64)
        parts = np.arange(c.block_hashes, dtype=np.uint64)
        shifts = np.uint64(c.block_index_bits) + parts * np.uint64(c.offset_bits)
        offsets = ((hashes[:, :, None] >> shifts) & np.uint64(c.part_bits - 1)).astype(np.int64)
        return blocks[:, :, None] * c.block_bits + (parts.astype(np.int64) * c.part_bits) + offsets

    def run(self, keys, times) -> np.ndarray:
        """TEST_AND_INSERT each key at its time, in order; the hits.

        Parameters
        ----------
        keys : array-like of uint64
        times : array-like of int
            Ticks, non-decreasing (also across calls), gaps plus span below ``2**(time_width - 1)``.

        Returns
        -------
        numpy.ndarray of bool

        Raises
        ------
        ValueError
            If keys and times differ in length, or the times decrease or leap too far.
        """
        keys = np.asarray(keys, dtype=np.uint64)
        times = np.asarray(times)
        if times.size and times.dtype.kind not in "iu":
            raise ValueError(f"times must be integers, not {times.dtype}")
        times = times.astype(np.int64)
        if keys.shape != times.shape or keys.ndim != 1:
            raise ValueError(f"keys and times must be 1-D of the same length, not {keys.shape} and {times.shape}")
        n = len(keys)
        if not n:
            return np.zeros(0, dtype=bool)
        steps = np.diff(times, prepend=times[0] if self._t_prev is None else self._t_prev)
        if steps.min() < 0:
            raise ValueError("times must be non-decreasing")
        if int(steps.max()) + self._span >= self._limit:
            raise ValueError(f"a gap of {int(steps.max())} ticks plus the span reaches 2**(time_width-1): the "
                             f"filter's modular times would alias (use a wider time_width)")
        t_before = self._t_prev
        start = self._index
        first_rows = [self._first[self._inc_pos[inc]].copy() for inc in self._record()[0]]
        events, records = self._schedule(times)
        self._index += n
        # configuration index of each command's query (before its own event) and insert (after it)
        j = np.arange(n)
        insert_cfg = np.searchsorted(events, j, side="right")
        query_cfg = np.searchsorted(events, j - 1, side="right")
        k, P, b = self._k, self._P, self._config.block_hashes
        width = max(len(live) for live, _, _ in records)
        incs = np.full((len(records), width), -1, dtype=np.int64)
        stamps = np.full((len(records), max(width - k, 1)), np.iinfo(np.int64).min, dtype=np.int64)
        started = np.zeros(len(records), dtype=bool)
        for r, (live, old, on) in enumerate(records):
            incs[r, :len(live)] = live
            stamps[r, :len(old)] = old
            started[r] = on
        inc_pos = np.array(self._inc_pos, dtype=np.int64)
        previous = np.concatenate([[times[0] if t_before is None else t_before], times[:-1]])
        fresh_old = (stamps[query_cfg] >= (times - self._span)[:, None]).sum(axis=1)
        fresh = np.where(started[query_cfg] & (times - previous <= self._span), k + fresh_old, 0)
        hits = np.zeros(n, dtype=bool)
        # the first setters of the incarnations live before this call
        carried = dict(zip(records[0][0], first_rows))
        # Commands go in blocks: at most ``block`` of them, and segment incarnations spanning at most ``rows``
        # (the first setters of their bits are a dense (rows, segment_bits) array).
        block = max(16, min(BULK_COMMANDS, BULK_ENTRIES // (P * b)))
        rows_cap = max(P + 2 * k + 2, BULK_ENTRIES // self._S)
        newest = incs.max(axis=1)                                     # non-decreasing
        oldest = np.where(incs >= 0, incs, np.iinfo(np.int64).max).min(axis=1)
        S = self._S
        lo = 0
        while lo < n:
            inc_lo = int(oldest[query_cfg[lo]])
            last_ok = int(np.searchsorted(newest, inc_lo + rows_cap, side="right")) - 1
            hi = max(lo + 1, min(n, lo + block, int(np.searchsorted(insert_cfg, last_ok, side="right"))))
            inc_hi = int(newest[insert_cfg[hi - 1]])
            last_cfg = int(insert_cfg[hi - 1])
            dense = np.full((inc_hi - inc_lo + 1, S), _NEVER, dtype=np.int64)
            for inc, row in carried.items():
                dense[inc - inc_lo] = row
            flat = dense.reshape(-1)
            where = self._locate(keys[lo:hi])                         # (m, P, b)
            rows = np.arange(hi - lo)
            index = start + lo + rows                                 # global command numbers
            targets = incs[insert_cfg[lo:hi], :k]                     # (m, k)
            bits = where[rows[:, None], inc_pos[targets]]             # (m, k, b)
            np.minimum.at(flat, ((targets - inc_lo)[:, :, None] * S + bits).ravel(),
                          np.broadcast_to(index[:, None, None], bits.shape).ravel())
            most = int(fresh[lo:hi].max())
            if most:
                looked = incs[query_cfg[lo:hi], :most]                # (m, most)
                valid = np.arange(most)[None, :] < fresh[lo:hi, None]
                looked = np.where(valid, looked, inc_lo)
                bits = where[rows[:, None], inc_pos[looked]]          # (m, most, b)
                seen = (flat[(looked - inc_lo)[:, :, None] * S + bits] < index[:, None, None]).all(axis=2)
                hits[lo:hi] = scan_from(seen & valid, k, fresh[lo:hi] - k)[0]
            live_after = [inc for inc in incs[last_cfg] if inc >= 0]
            carried = {inc: dense[inc - inc_lo].copy() for inc in live_after}
            lo = hi
        for inc, row in carried.items():
            self._first[self._inc_pos[inc]] = row
        return hits


# The pipeline -----------------------------------------------------------------------------------------------------

@dataclass
class DedupResult:
    """What :meth:`Dedup.run` did with each frame.

    Attributes
    ----------
    keys : numpy.ndarray of uint64
        Each frame's key (computed for errored and unchecked frames too).
    status : numpy.ndarray of uint8
        :class:`Status` of each frame.
    duplicate : numpy.ndarray of bool
        The filter's answer (False for frames not checked).
    forward, mark : numpy.ndarray of bool
        Whether the frame leaves the datapath, and with the duplicate mark.
    messages : list of bytes or None
        Each frame's full key (:func:`apbbf.model.packet.message`), if asked for.
    """
    keys: np.ndarray
    status: np.ndarray
    duplicate: np.ndarray
    forward: np.ndarray
    mark: np.ndarray
    messages: list | None = None


def _flags(name: str, value, n: int) -> np.ndarray:
    if value is None:
        return np.zeros(n, dtype=bool)
    value = np.asarray(value)
    if value.shape != (n,) or value.dtype != bool:
        raise ValueError(f"{name} must be a bool array of {n} flags (one per frame), not {value.dtype} of shape "
                         f"{value.shape}")
    return value


class Dedup:
    """The de-duplication pipeline (module documentation) with its filter and counters.

    Parameters
    ----------
    config : Config
        With a span; ``key_width = 64``.
    spec : KeySpec
    action : Action or str
        ``"drop"``, ``"mark"`` or ``"count"``.
    engine : {"model", "bulk"}
        The filter :meth:`run` uses: :class:`~apbbf.model.timewindow.TimedAPBBF` (its ``run``; :meth:`frame` uses
        its per-command path) or :class:`TimedTestAndInsert` (same answers, much faster on long streams; times
        must then be plain non-decreasing ticks).
    linktype : int
        The frames' link type (a capture's; module documentation, "Link types"): 1, Ethernet, by default.
    max_frame : int or None
        With ``drop``, frames longer than this pass unchecked (:func:`oversize`; the gateware's ``max_frame``);
        None: no limit (the default; :class:`~apbbf.hdl.packet_dedup.PacketDedup`'s default is 9600).
    data_width : int
        The datapath's ``tdata`` bits (64, 128, 256, 512), which :func:`oversize` counts beats of.
    fcs : bool
        The datapath's frames end with their FCS (the frames given here never do).

    Attributes
    ----------
    counters : Counters
    filter : TimedAPBBF or TimedTestAndInsert

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``spec`` not a KeySpec.
    ValueError
        If the Config has no span or a key width other than 64, ``action``/``engine`` is unknown, a parameter
        is out of range, or the key needs a layer the link type lacks.
    """

    def __init__(self, config: Config, spec: KeySpec, action="drop", *, engine: str = "model",
                 linktype: int = LINKTYPE_ETHERNET, max_frame: int | None = None, data_width: int = 512,
                 fcs: bool = False):
        check_config(config)
        if not isinstance(spec, KeySpec):
            raise TypeError(f"spec must be a KeySpec, not {spec!r}")
        if config.key_width != 64:
            raise ValueError(f"key_width must be 64 (the packet keys are CRC-64), not {config.key_width}")
        try:
            self.action = Action(action.value if isinstance(action, Action) else action)
        except ValueError:
            raise ValueError(f"action must be 'drop', 'mark' or 'count', not {action!r}") from None
        if engine not in ("model", "bulk"):
            raise ValueError(f"engine must be 'model' or 'bulk', not {engine!r}")
        check_link(spec, linktype)
        if max_frame is not None:
            oversize([], max_frame, data_width, fcs)                 # checks them
        elif data_width not in DATA_WIDTHS:
            raise ValueError(f"data_width must be one of {', '.join(map(str, DATA_WIDTHS))}, not {data_width!r}")
        self.config, self.spec, self.engine = config, spec, engine
        self.linktype, self.max_frame, self.data_width, self.fcs = linktype, max_frame, data_width, fcs
        self.filter = TimedAPBBF(config) if engine == "model" else TimedTestAndInsert(config)
        self.counters = Counters()
        self._mask = (1 << config.time_width) - 1

    def _outputs(self, status: np.ndarray, hits: np.ndarray):
        duplicate = hits & (status == Status.CHECKED)
        forward = ~duplicate if self.action == Action.DROP else np.ones(len(status), dtype=bool)
        mark = duplicate if self.action == Action.MARK else np.zeros(len(status), dtype=bool)
        c = self.counters
        c.frames += len(status)
        c.errored += int(np.count_nonzero(status == Status.ERRORED))
        c.unchecked += int(np.count_nonzero(status == Status.UNCHECKED))
        c.duplicates += int(np.count_nonzero(duplicate))
        c.dropped += int(np.count_nonzero(~forward))
        return duplicate, forward, mark

    def _oversize(self, ethernet_lengths) -> np.ndarray:
        """Frames passed unchecked for their length (with ``drop`` and a ``max_frame``)."""
        if self.action != Action.DROP or self.max_frame is None:
            return np.zeros(np.shape(ethernet_lengths), dtype=bool)
        return oversize(ethernet_lengths, self.max_frame, self.data_width, self.fcs)

    def released(self, records: FrameBatch) -> np.ndarray:
        """Which records pass unchecked for their length (with ``drop`` and a ``max_frame``: :func:`oversize` of
        :func:`ethernet_lengths`)."""
        return self._oversize(ethernet_lengths(records, self.linktype))

    def frame(self, frame, time: int, *, errored: bool = False, unchecked: bool = False) -> tuple[bool, bool, bool]:
        """One frame (a record of the link type) at time ``time`` (ticks): ``(duplicate, forward, mark)``. The
        reference path.

        Raises
        ------
        TypeError
            If ``frame`` is not bytes or ``time`` not an integer.
        ValueError
            If ``time`` is negative.
        """
        check_integer("time", time, range(0, 1 << 63))
        key = record_key(frame, self.spec, self.linktype)
        if self.released(FrameBatch.from_frames([frame]))[0]:
            errored, unchecked = False, True
        status = Status.ERRORED if errored else Status.UNCHECKED if unchecked else Status.CHECKED
        hit = False
        if status == Status.CHECKED:
            if self.engine == "model":
                hit = self.filter.test_and_insert(key, time & self._mask)
            else:
                hit = bool(self.filter.run([key], [time])[0])
        duplicate, forward, mark = self._outputs(np.array([status], dtype=np.uint8), np.array([hit]))
        return bool(duplicate[0]), bool(forward[0]), bool(mark[0])

    def run(self, batch: FrameBatch, times, *, errored=None, unchecked=None, messages: bool = False,
            keys: np.ndarray | None = None) -> DedupResult:
        """A batch of frames, in order (the batch path).

        Parameters
        ----------
        batch : FrameBatch
        times : array-like of int
            Each frame's time in ticks (non-decreasing; the model engine takes them modulo ``2**time_width``).
        errored, unchecked : numpy.ndarray of bool or None
            Per-frame flags (default none).
        messages : bool
            Also return the frames' full keys.
        keys : numpy.ndarray of uint64 or None
            The frames' keys if already computed (:func:`apbbf.model.packet.frame_keys`); not with ``messages``.

        Returns
        -------
        DedupResult

        Raises
        ------
        TypeError
            If ``batch`` is not a FrameBatch.
        ValueError
            If times or flags do not have one entry per frame, or times are negative.
        """
        if not isinstance(batch, FrameBatch):
            raise TypeError(f"batch must be a FrameBatch, not {batch!r}")
        n = len(batch)
        times = np.asarray(times)
        if times.shape != (n,) or (n and times.dtype.kind not in "iu"):
            raise ValueError(f"times must be {n} integers (one per frame), not {times.dtype} of shape {times.shape}")
        times = times.astype(np.int64)
        if n and times.min() < 0:
            raise ValueError("times must be >= 0")
        errored, unchecked = _flags("errored", errored, n), _flags("unchecked", unchecked, n)
        released = self.released(batch)
        errored, unchecked = errored & ~released, unchecked | released
        texts = None
        if keys is None or messages:
            view, ethertypes = network_layer(batch, self.linktype)
            out = frame_keys(view, self.spec, messages=messages, ethertypes=ethertypes)
            keys, texts = out if messages else (out, None)
        status = np.where(errored, Status.ERRORED, np.where(unchecked, Status.UNCHECKED, Status.CHECKED)).astype(
            np.uint8)
        checked = status == Status.CHECKED
        hits = np.zeros(n, dtype=bool)
        if checked.any():
            if self.engine == "model":
                ops = np.full(int(checked.sum()), Op.TEST_AND_INSERT)
                hits[checked] = self.filter.run(ops, keys[checked], times[checked] & self._mask)[0]
            else:
                hits[checked] = self.filter.run(keys[checked], times[checked])
        duplicate, forward, mark = self._outputs(status, hits)
        return DedupResult(keys, status, duplicate, forward, mark, texts)
