"""The walk from record to record of a pcap file (:func:`walk_pcap`), and its record (:class:`WalkLog`) so that a
second pass over the same capture checks the records' starts over arrays instead of walking them again.

A record's start is known only from the one before it (its header's captured length), so the walk is a loop, one
Python step per record. Checking a proposed list of starts is not: it is the walk's own list exactly when the
first is where the walk starts, each record's captured length is within the snap length and leads to the next
start, and the walk would stop after the last (:func:`check_walk`). A capture read twice (sized from its own peak
rate first) logs its starts in a temporary file on the first pass and checks them on the second.
"""

from __future__ import annotations

import struct
import tempfile

import numpy as np

from .model.compiled import kernels

__all__ = ["PCAP_RECORD_HEADER", "walk_pcap", "check_walk", "WalkLog"]

#: Bytes of a pcap record header (seconds, fraction, captured length, original length); the modified format's
#: (Kuznetzov's) has 8 more.
PCAP_RECORD_HEADER = 16


def walk_pcap(buffer, pos: int, end: int, snap: int, big: bool, progress=None, size: int = PCAP_RECORD_HEADER
              ) -> tuple[list, int]:
    """The records from ``pos``, one at a time: ``(starts, stop)``, the records' starts and the position where the
    walk stopped (fewer than a header's bytes left, a captured length beyond ``snap``, or a record running past
    ``end``).

    Parameters
    ----------
    buffer : numpy.ndarray of uint8, or bytes-like
        An array is walked by the compiled loop when there is one (:mod:`apbbf.model.compiled`).
    pos, end : int
        The first record's start; the end of the buffer's bytes.
    snap : int
        The largest captured length a record may have.
    big : bool
        Big-endian record headers.
    progress : callable or None
        Called with the position reached every 16 MiB.
    size : int
        Bytes of a record header (the captured length is at byte 8).
    """
    fast = kernels(end - pos) if isinstance(buffer, np.ndarray) else None
    if fast is not None:
        # the same walk, compiled; a chunk at a time, for the progress calls
        found = []
        step = 1 << 24
        while True:
            stop = min(end - size, pos + step)
            out = np.empty(max(0, stop - pos) // size + 1, dtype=np.int64)
            count, pos = fast.walk_pcap(buffer, pos, end, stop, snap, big, size, out)
            found.append(out[:count])
            if progress:
                progress(pos)
            if pos <= stop or pos + size > end:
                break
        return (found[0] if len(found) == 1 else np.concatenate(found)), pos
    caplen_at = struct.Struct(">I" if big else "<I").unpack_from
    starts = []
    append = starts.append
    step = 1 << 24
    while pos + size <= end:
        stop = min(end - size, pos + step)
        # the walk from record to record is sequential
        while pos <= stop:
            caplen = caplen_at(buffer, pos + 8)[0]
            following = pos + size + caplen
            if caplen > snap or following > end:
                return starts, pos
            append(pos)
            pos = following
        if progress:
            progress(pos)
    return starts, pos


def check_walk(data: np.ndarray, starts: np.ndarray, pos: int, end: int, snap: int, big: bool,
               size: int = PCAP_RECORD_HEADER) -> int | None:
    """Whether ``starts`` are the records :func:`walk_pcap` finds from ``pos``: the position where that walk stops
    if they are, else None. Over arrays, but for the one step after the last record.

    Parameters
    ----------
    data : numpy.ndarray of uint8
    starts : numpy.ndarray of int64
        The proposed starts.
    size : int
        As :func:`walk_pcap`'s.
    """
    starts = np.asarray(starts, dtype=np.int64)
    last = pos
    if len(starts):
        if int(starts[0]) != pos or int(starts[-1]) + size > end:
            return None
        octets = data[starts[:, None] + (8 + np.arange(4))]
        caplens = octets.view(">u4" if big else "<u4")[:, 0].astype(np.int64)
        following = starts + size + caplens
        if caplens.max() > snap or int(following[-1]) > end or not np.array_equal(following[:-1], starts[1:]):
            return None
        last = int(following[-1])
    # the walk stops at last: too few bytes for a header there, or a record that is corrupt or runs past the end
    if last + size <= end:
        caplen = struct.unpack_from(">I" if big else "<I", data.data, last + 8)[0]
        if caplen <= snap and last + size + caplen <= end:
            return None
    return last


class WalkLog:
    """The records' starts of each chunk of a capture's first pass, in a temporary file (the memory does not grow
    with the capture), for its second pass: :meth:`add` in the first, then :meth:`replay`, then :meth:`take` in
    the same order.

    Attributes
    ----------
    replaying : bool
        In the second pass.
    """

    def __init__(self):
        self._file = tempfile.TemporaryFile()
        self._chunks = []                   # (chunk, records) per chunk
        self.replaying = False

    def add(self, chunk, starts: np.ndarray) -> None:
        """Log a chunk's starts (``chunk``: what names it, e.g. its file and first byte in it)."""
        self._chunks.append((chunk, len(starts)))
        self._file.write(np.asarray(starts, dtype=np.int64).tobytes())

    def replay(self) -> None:
        """Start the second pass."""
        self._file.flush()
        self._file.seek(0)
        self._chunks.reverse()
        self.replaying = True

    def take(self, chunk) -> np.ndarray | None:
        """The next chunk's logged starts, if it is ``chunk`` (else None, and the log is of no more use)."""
        if not self._chunks or self._chunks[-1][0] != chunk:
            self.close()
            return None
        _, count = self._chunks.pop()
        return np.fromfile(self._file, dtype=np.int64, count=count)

    def close(self) -> None:
        """Forget the log (its file is removed)."""
        self._chunks = []
        self._file.close()

    def __del__(self):
        # a run that stopped on an error between its passes leaves its log to the garbage collector
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()
