"""Frame times across the chunks of a capture read as a stream (``apbbf dedup``): the peak rate and the longest
gap (:class:`PeakTracker`) and timestamps in arrival order (:class:`_Arrivals`)."""

from __future__ import annotations

import numpy as np

__all__ = ["PeakTracker"]


class PeakTracker:
    """:func:`apbbf.dedup.peak_count` and the longest gap of a stream of non-decreasing ticks given in chunks.

    Attributes
    ----------
    peak : int
        The most ticks within any ``span + 1`` consecutive ticks so far.
    gap : int
        The longest step between consecutive ticks so far.
    """

    def __init__(self, span: int):
        self.span, self.peak, self.gap = span, 0, 0
        self._tail = np.zeros(0, dtype=np.int64)           # the ticks within a span of the latest
        self._last = None

    def add(self, ticks: np.ndarray) -> None:
        """The next ticks (non-decreasing, none before the last given)."""
        if not len(ticks):
            return
        joined = np.concatenate([self._tail, ticks])
        starts = np.searchsorted(joined, ticks - self.span, side="left")
        self.peak = max(self.peak, int((np.arange(len(self._tail), len(joined)) - starts + 1).max()))
        if self._last is not None:
            self.gap = max(self.gap, int(ticks[0] - self._last))
        if len(ticks) > 1:
            self.gap = max(self.gap, int(np.diff(ticks).max()))
        self._last = int(ticks[-1])
        self._tail = joined[np.searchsorted(joined, joined[-1] - self.span, side="left"):]


class _Arrivals:
    """Capture timestamps in arrival order, across chunks: a record stamped before the latest time so far is
    taken at the latest time (docs/dedup.md, "Time going backwards")."""

    def __init__(self):
        self.latest = -1
        self.last = None                                      # the last timestamp as written
        self.first = None                                     # the earliest timestamp
        self.reordered = self.step_back = 0

    def add(self, times: np.ndarray) -> np.ndarray:
        """The chunk's times (nanoseconds) as they arrive: each raised to the latest before it."""
        before = np.concatenate([[self.latest if self.latest >= 0 else times[0]],
                                 np.maximum.accumulate(times)[:-1]])
        running = np.maximum(before, times)
        self.step_back = max(self.step_back, int((running - times).max()))
        previous = np.concatenate([[times[0] if self.last is None else self.last], times[:-1]])
        self.reordered += int(np.count_nonzero(times < previous))
        self.last, self.latest = int(times[-1]), int(running[-1])
        self.first = int(times.min()) if self.first is None else min(self.first, int(times.min()))
        return running
