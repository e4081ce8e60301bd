"""The exact de-duplicator, the answer :mod:`apbbf.model.dedup` is scored against: full keys with the
tick each was last seen.
"""

from __future__ import annotations


import numpy as np

from ..config import check_integer
from .terms import _check_positive_int

__all__ = ["ExactWindow"]


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
