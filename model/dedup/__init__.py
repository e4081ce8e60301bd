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
   A *late* frame (a flag the datapath gives, as *unchecked*: a filter in an external memory whose answer did not
   come in time) is tested and inserted as a checked frame, but its answer is not used: it is passed on (unmarked)
   and counted in ``unchecked`` and in ``late``, never in ``duplicates``.
3. The action decides the output: ``drop`` forwards every frame but duplicates (counted in ``dropped``); ``mark``
   forwards every frame and marks the duplicates (a ``tuser`` bit on the frame's last beat); ``count`` forwards
   every frame unmarked.

Counters: ``frames`` (all), ``duplicates``, ``dropped``, ``unchecked``, ``errored``, ``late``.

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

from .terms import (DATA_WIDTHS, ETHERNET_HEADER, Action, Status, Counters, to_ticks, span_ticks, oversize,
                    ethernet_lengths)
from .exact import BulkExactWindow, ExactWindow
from .bulk import BULK_COMMANDS, BULK_ENTRIES, TimedTestAndInsert
from .pipeline import DedupResult, Dedup

__all__ = ["DATA_WIDTHS", "ETHERNET_HEADER", "BULK_COMMANDS", "BULK_ENTRIES", "Action", "Status", "Counters",
           "to_ticks", "span_ticks", "oversize", "ethernet_lengths", "ExactWindow", "BulkExactWindow", "TimedTestAndInsert", "DedupResult",
           "Dedup"]
