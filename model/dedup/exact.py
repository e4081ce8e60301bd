"""The exact de-duplicator, the answer :mod:`apbbf.model.dedup` is scored against: full keys with the
tick each was last seen.
"""

from __future__ import annotations


import numpy as np

from ..compiled import kernels
from ..config import check_integer
from ..packet import MessageRows
from .terms import _check_positive_int

__all__ = ["ExactWindow", "BulkExactWindow"]


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


class BulkExactWindow:
    """:class:`ExactWindow`'s answers for messages given as :class:`~apbbf.model.packet.MessageRows`, computed
    over arrays: the same full-key comparison, without a bytes object or a dictionary entry per frame.

    How: the messages come with a grouping key that equal messages share (their CRC-64 key). Sorted by that key
    (stably), each message's candidate is the latest earlier message of its group; the two are compared whole
    (every row). If they are equal, it is the latest copy; if they differ (two messages with one key: a CRC
    collision, or a grouping key chosen coarse on purpose), the group's earlier members are compared one by one,
    newest first, back to ``retain`` ticks. Messages last seen within ``retain`` ticks of the latest tick are
    carried to the next call.

    Parameters
    ----------
    span, retain : int
        As :class:`ExactWindow`'s.

    Raises
    ------
    TypeError, ValueError
        If ``span`` or ``retain`` is not an integer in range.
    """

    def __init__(self, span: int, retain: int | None = None):
        self.span = _check_positive_int("span", span)
        self.retain = span if retain is None else check_integer("retain", retain, range(span, 1 << 63))
        self._keys = np.zeros(0, dtype=np.uint64)
        self._ticks = np.zeros(0, dtype=np.int64)
        self._messages = MessageRows(np.zeros((0, 64), dtype=np.uint8), np.zeros(0, dtype=np.int64),
                                     np.zeros(0, dtype=np.int64))
        self._now = None

    def __len__(self) -> int:
        """Messages carried from earlier calls."""
        return len(self._keys)

    def run(self, keys, messages: MessageRows, ticks) -> tuple[np.ndarray, np.ndarray]:
        """Test and insert messages at their ticks, in order.

        Parameters
        ----------
        keys : array-like of uint64
            A grouping key per message: equal messages must have equal keys (their CRC-64 key).
        messages : MessageRows
        ticks : array-like of int
            Non-decreasing, not before the last tick of a previous call.

        Returns
        -------
        duplicate, age : numpy.ndarray
            As :meth:`ExactWindow.run`'s.

        Raises
        ------
        TypeError
            If ``messages`` is not a MessageRows.
        ValueError
            If keys, messages and ticks differ in length or the ticks decrease.
        """
        if not isinstance(messages, MessageRows):
            raise TypeError(f"messages must be a MessageRows, not {type(messages).__name__}")
        keys = np.asarray(keys, dtype=np.uint64)
        ticks = np.asarray(ticks, dtype=np.int64)
        n = len(ticks)
        if not len(keys) == len(messages) == n:
            raise ValueError(f"keys, messages and ticks must have the same length, not {len(keys)}, "
                             f"{len(messages)} and {n}")
        if n and ((np.diff(ticks) < 0).any() or (self._now is not None and ticks[0] < self._now)):
            raise ValueError("ticks must be non-decreasing")
        age = np.full(n, -1, dtype=np.int64)
        if not n:
            return age >= 0, age
        c = len(self._keys)
        all_keys = np.concatenate([self._keys, keys])
        all_ticks = np.concatenate([self._ticks, ticks])
        fast = kernels()
        # the carried messages and this call's, numbered one after the other: compared where they lie by the
        # compiled loop, else in one array of rows
        every = None if fast is not None else MessageRows.concatenate([self._messages, messages])
        carried = self._messages

        def text(i):
            return carried.message(i) if i < c else messages.message(i - c)

        order = np.argsort(all_keys, kind="stable")
        grouped = all_keys[order]
        same = np.flatnonzero(grouped[1:] == grouped[:-1])
        previous = np.full(c + n, -1, dtype=np.int64)       # the latest earlier message with the same key
        previous[order[same + 1]] = order[same]
        mine = np.flatnonzero(previous[c:] >= 0) + c
        theirs = previous[mine]
        if every is None:
            equal = np.empty(len(mine), dtype=bool)
            words = [np.ascontiguousarray(m.rows).view(np.uint64) for m in (carried, messages)]
            fast.messages_equal(words[0], carried.first, carried.count, words[1], messages.first, messages.count,
                                c, mine, theirs, equal)
        else:
            equal = every.equal(mine, theirs)
        gaps = all_ticks[mine] - all_ticks[theirs]
        found = equal & (gaps <= self.retain)
        age[mine[found] - c] = gaps[found]
        for i in mine[~equal].tolist():                      # one key, different messages: walk the group
            message, now = text(i), int(all_ticks[i])
            j = int(previous[i])
            while j >= 0 and now - int(all_ticks[j]) <= self.retain:
                if text(j) == message:
                    age[i - c] = now - int(all_ticks[j])
                    break
                j = int(previous[j])
        self._now = int(ticks[-1])
        kept = np.flatnonzero(all_ticks >= self._now - self.retain)
        self._keys, self._ticks = all_keys[kept], all_ticks[kept]
        if every is None:
            self._messages = MessageRows.concatenate([carried[kept[kept < c]].compact(),
                                                      messages[kept[kept >= c] - c].compact()])
        else:
            self._messages = every[kept].compact()
        return (age >= 0) & (age <= self.span), age
