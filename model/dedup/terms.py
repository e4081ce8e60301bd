"""The de-duplicator's terms: its actions and frame statuses, its counters, ticks, and which frames are
too long to check (:mod:`apbbf.model.dedup`'s documentation, "Definition").
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass

import numpy as np

from ..config import check_integer
from ..packet import IP_LINKTYPES, LINKTYPE_ETHERNET, FrameBatch, network_layer

__all__ = ["DATA_WIDTHS", "ETHERNET_HEADER", "Action", "Status", "Counters", "to_ticks", "span_ticks", "oversize", "ethernet_lengths"]


#: ``tdata`` widths of the datapath, bits (``apbbf.hdl.packet.dedup.DATA_WIDTHS``).
DATA_WIDTHS = (64, 128, 256, 512)
#: Ethernet header bytes (destination, source, EtherType) added to a packet of another link type.
ETHERNET_HEADER = 14


class Action(enum.Enum):
    """What happens to a duplicate: ``drop`` it, ``mark`` it (forwarded), or ``count`` it only (forwarded)."""
    DROP = "drop"
    MARK = "mark"
    COUNT = "count"


class Status(enum.IntEnum):
    """How a frame went through: its key was tested (``CHECKED``), or it passed untested: the MAC marked it bad
    (``ERRORED``: not inserted), its key could not be queued for the filter (``UNCHECKED``: not inserted), or
    its key was tested and inserted but the answer came too late for the frame (``LATE``: passed on as
    unchecked, and counted so; an external memory's filter only)."""
    CHECKED = 0
    ERRORED = 1
    UNCHECKED = 2
    LATE = 3


@dataclass
class Counters:
    """The pipeline's counters (module documentation)."""
    frames: int = 0
    duplicates: int = 0
    dropped: int = 0
    unchecked: int = 0
    errored: int = 0
    late: int = 0                                      #: of the unchecked, those whose key was inserted

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
