"""The de-duplication pipeline: frames in, each frame's key tested and inserted, duplicates dropped,
marked or counted (:class:`Dedup`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import SEEDS, Config, check_config, check_integer
from ..filters import Op
from ..packet import LINKTYPE_ETHERNET, FrameBatch, KeySpec, check_link, frame_keys, network_layer, record_key
from ..timewindow import TimedAPBBF
from .bulk import TimedTestAndInsert
from .terms import Action, Counters, DATA_WIDTHS, ethernet_lengths, oversize, Status

__all__ = ["DedupResult", "Dedup"]


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
        None: no limit (the default; :class:`~apbbf.hdl.packet.dedup.PacketDedup`'s default is 9600).
    data_width : int
        The datapath's ``tdata`` bits (64, 128, 256, 512), which :func:`oversize` counts beats of.
    fcs : bool
        The datapath's frames end with their FCS (the frames given here never do).

    Attributes
    ----------
    counters : Counters
    filter : TimedAPBBF or TimedTestAndInsert
    action, built_action : Action
        The action in force (:meth:`set_action` changes it) and the one given, which decides the length rule.
    span : int
        The window's span in force, ticks (:meth:`set_window` changes it).
    run_seed : int
        The hash's run-time seed in force (:mod:`apbbf.model.hashing`, "The run-time seed"): 0 until
        :meth:`rekey`.

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
        self.built_action = self.action
        self.config, self.spec, self.engine = config, spec, engine
        self.linktype, self.max_frame, self.data_width, self.fcs = linktype, max_frame, data_width, fcs
        self.run_seed = 0
        self.filter = self._new_filter()
        self.span = config.span
        self.counters = Counters()
        self._mask = (1 << config.time_width) - 1

    def set_action(self, action) -> None:
        """Decide the frames from the next one on with ``action`` (a run-time change between frames,
        :mod:`apbbf.model.registers`); the filter and the counters go on.

        Raises
        ------
        ValueError
            If ``action`` is not ``"drop"``, ``"mark"`` or ``"count"``.
        """
        try:
            action = Action(action.value if isinstance(action, Action) else action)
        except ValueError:
            raise ValueError(f"action must be 'drop', 'mark' or 'count', not {action!r}") from None
        self.action = action

    def set_key(self, key) -> None:
        """Key the frames from the next one on with ``key`` (a :class:`~apbbf.model.packet.KeySpec`, or the name of
        a standard one: ``"l3l4"`` or ``"frame"``); the filter and the counters go on.

        Raises
        ------
        TypeError, ValueError
            If ``key`` is neither, or needs a layer the link type lacks.
        """
        if isinstance(key, str):
            if key not in ("l3l4", "frame"):
                raise ValueError(f"key must be a KeySpec, 'l3l4' or 'frame', not {key!r}")
            key = getattr(KeySpec, key)()
        if not isinstance(key, KeySpec):
            raise TypeError(f"key must be a KeySpec, 'l3l4' or 'frame', not {key!r}")
        check_link(key, self.linktype)
        self.spec = key

    def set_window(self, span: int) -> None:
        """A window of ``span`` ticks from the next frame on (a run-time change between frames,
        :meth:`apbbf.model.timewindow.TimedAPBBF.set_window`): the keys inserted from then on are held for
        ``span``, the shift interval is ``span // l + 1``; the keys already in keep the expiry they were inserted
        with. The filter and the counters go on (a clear or a re-key keeps the window).

        Raises
        ------
        TypeError, ValueError
            If ``span`` is not an integer in ``1 .. 2**(time_width-1) - 1``.
        """
        self.filter.set_window(span)
        self.span = span

    def clear(self) -> None:
        """Empty the filter before the next frame (a run-time clear): every key before is forgotten; the counters
        go on."""
        self.filter = self._new_filter()
        if self.span != self.config.span:
            self.filter.set_window(self.span)

    def _new_filter(self):
        kind = TimedAPBBF if self.engine == "model" else TimedTestAndInsert
        return kind(self.config, run_seed=self.run_seed)

    def rekey(self, seed: int) -> None:
        """Hash the frames from the next one on with the run-time seed ``seed`` (:mod:`apbbf.model.hashing`, "The
        run-time seed": it tweaks the mixer's round keys; the Config's seed keeps the fold and the masks), and
        empty the filter (a run-time re-key: a clear and a new seed). The counters and the window go on.

        Raises
        ------
        TypeError, ValueError
            If ``seed`` is not an integer in ``0 .. 2**64 - 1``.
        """
        check_integer("seed", seed, SEEDS)
        self.run_seed = seed
        self.clear()

    #: The changes :meth:`run` and :meth:`change` take, by name, and the method each calls.
    CHANGES = {"action": "set_action", "clear": "clear", "rekey": "rekey", "window": "set_window", "key": "set_key"}

    def change(self, change: tuple) -> None:
        """Make one run-time change before the next frame: ``("action", name)``, ``("clear",)``, ``("rekey",
        seed)``, ``("window", span)`` or ``("key", recipe)`` (:data:`CHANGES`).

        Raises
        ------
        TypeError, ValueError
            If ``change`` is none of these, or its argument is refused by its method.
        """
        if not isinstance(change, tuple) or not change or change[0] not in self.CHANGES:
            raise ValueError(f"a change must be ('action', name), ('clear',), ('rekey', seed), ('window', span) or "
                             f"('key', recipe), not {change!r}")
        getattr(self, self.CHANGES[change[0]])(*change[1:])

    def _run_changes(self, batch, times, errored, unchecked, late, messages, keys, changes) -> DedupResult:
        """:meth:`run` in parts between the frames ``changes`` names, each change made before its frame."""
        first, n = self.counters.frames, len(batch)
        cuts = sorted(i - first for i in changes if first <= i < first + n)
        for made in changes.values():
            for change in made:
                if not isinstance(change, tuple) or not change or change[0] not in self.CHANGES:
                    self.change(change)                     # raises
        times = np.asarray(times)
        parts, bounds = [], [0, *cuts, n]

        def part(value, a, b):
            return None if value is None else np.asarray(value)[a:b]

        for a, b in zip(bounds, bounds[1:]):
            for change in changes.get(first + a, ()) if a in cuts else ():
                self.change(change)
            if b > a:
                parts.append(self.run(batch[a:b], times[a:b], errored=part(errored, a, b),
                                      unchecked=part(unchecked, a, b), late=part(late, a, b), messages=messages,
                                      keys=part(keys, a, b)))
        if not parts:
            return self.run(batch, times, errored=errored, unchecked=unchecked, late=late, messages=messages,
                            keys=keys)
        return DedupResult(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                             ("keys", "status", "duplicate", "forward", "mark")),
                           [m for p in parts for m in p.messages] if messages else None)

    def _outputs(self, status: np.ndarray, hits: np.ndarray):
        duplicate = hits & (status == Status.CHECKED)
        forward = ~duplicate if self.action == Action.DROP else np.ones(len(status), dtype=bool)
        mark = duplicate if self.action == Action.MARK else np.zeros(len(status), dtype=bool)
        c = self.counters
        c.frames += len(status)
        c.errored += int(np.count_nonzero(status == Status.ERRORED))
        c.unchecked += int(np.count_nonzero((status == Status.UNCHECKED) | (status == Status.LATE)))
        c.late += int(np.count_nonzero(status == Status.LATE))
        c.duplicates += int(np.count_nonzero(duplicate))
        c.dropped += int(np.count_nonzero(~forward))
        return duplicate, forward, mark

    def _oversize(self, ethernet_lengths) -> np.ndarray:
        """Frames passed unchecked for their length (built with ``drop``, whatever the action at run time: the
        store-and-forward buffer's, and a ``max_frame``)."""
        if self.built_action != Action.DROP or self.max_frame is None:
            return np.zeros(np.shape(ethernet_lengths), dtype=bool)
        return oversize(ethernet_lengths, self.max_frame, self.data_width, self.fcs)

    def released(self, records: FrameBatch) -> np.ndarray:
        """Which records pass unchecked for their length (with ``drop`` and a ``max_frame``: :func:`oversize` of
        :func:`ethernet_lengths`)."""
        return self._oversize(ethernet_lengths(records, self.linktype))

    def frame(self, frame, time: int, *, errored: bool = False, unchecked: bool = False,
              late: bool = False) -> tuple[bool, bool, bool]:
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
        status = (Status.ERRORED if errored else Status.UNCHECKED if unchecked else Status.LATE if late
                  else Status.CHECKED)
        hit = False
        if status in (Status.CHECKED, Status.LATE):
            if self.engine == "model":
                hit = self.filter.test_and_insert(key, time & self._mask)
            else:
                hit = bool(self.filter.run([key], [time])[0])
        duplicate, forward, mark = self._outputs(np.array([status], dtype=np.uint8), np.array([hit]))
        return bool(duplicate[0]), bool(forward[0]), bool(mark[0])

    def run(self, batch: FrameBatch, times, *, errored=None, unchecked=None, late=None, messages: bool = False,
            keys: np.ndarray | None = None, changes=None) -> DedupResult:
        """A batch of frames, in order (the batch path).

        Parameters
        ----------
        batch : FrameBatch
        times : array-like of int
            Each frame's time in ticks (non-decreasing; the model engine takes them modulo ``2**time_width``).
        errored, unchecked, late : numpy.ndarray of bool or None
            Per-frame flags (default none; module documentation).
        messages : bool
            Also return the frames' full keys.
        keys : numpy.ndarray of uint64 or None
            The frames' keys if already computed (:func:`apbbf.model.packet.frame_keys`); not with ``messages``.
        changes : dict or None
            Run-time changes by frame index (``counters.frames`` before the frame, as the register map's
            ``CHANGE_FRAME`` names it): a list of ``("action", name)``, ``("clear",)`` or ``("rekey", seed)``
            each, made before that frame (:meth:`set_action`, :meth:`clear`, :meth:`rekey`); indices outside
            this batch are left for the batch they fall in.

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
        if changes:
            return self._run_changes(batch, times, errored, unchecked, late, messages, keys, changes)
        n = len(batch)
        times = np.asarray(times)
        if times.shape != (n,) or (n and times.dtype.kind not in "iu"):
            raise ValueError(f"times must be {n} integers (one per frame), not {times.dtype} of shape {times.shape}")
        times = times.astype(np.int64)
        if n and times.min() < 0:
            raise ValueError("times must be >= 0")
        errored, unchecked = _flags("errored", errored, n), _flags("unchecked", unchecked, n)
        late = _flags("late", late, n)
        released = self.released(batch)
        errored, unchecked = errored & ~released, unchecked | released
        texts = None
        if keys is None or messages:
            view, ethertypes = network_layer(batch, self.linktype)
            out = frame_keys(view, self.spec, messages=messages, ethertypes=ethertypes)
            keys, texts = out if messages else (out, None)
        status = np.where(errored, Status.ERRORED, np.where(unchecked, Status.UNCHECKED, np.where(
            late, Status.LATE, Status.CHECKED))).astype(np.uint8)
        checked = (status == Status.CHECKED) | (status == Status.LATE)
        hits = np.zeros(n, dtype=bool)
        if checked.any():
            if self.engine == "model":
                ops = np.full(int(checked.sum()), Op.TEST_AND_INSERT)
                hits[checked] = self.filter.run(ops, keys[checked], times[checked] & self._mask)[0]
            else:
                hits[checked] = self.filter.run(keys[checked], times[checked])
        duplicate, forward, mark = self._outputs(status, hits)
        return DedupResult(keys, status, duplicate, forward, mark, texts)
