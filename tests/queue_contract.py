"""The contract of a queue at its ports, checked clock by clock, as Amaranth's ``tests/test_lib_fifo.py`` checks its
FIFOs against ``FIFOModel``: the queue under test and :class:`QueueContract` see the same handshakes, and the
contract fails the first clock the queue does something it does not promise.

A queue promises:

- **order and integrity**: every entry offered is the oldest entry written and not yet read, bit for bit (none
  lost, none duplicated, none invented);
- **no early entry**: an entry is offered no sooner than ``min_latency`` clocks after it was written;
- **room**: the writer is refused only while ``capacity`` entries or more are held, and never let in while
  ``limit`` are;
- **progress**: an entry that may leave (``releasable``) is offered within ``max_latency`` clocks of becoming the
  oldest (or of being written, if later).

The caller samples the ports before each clock edge and hands them to :meth:`QueueContract.clock`; for a queue
between two clock domains, :meth:`QueueContract.write` and :meth:`QueueContract.read` take each side at its own
edges, with a common time.
"""

from collections import deque


class QueueContract:
    """The contract of one queue (the module docstring).

    Parameters
    ----------
    capacity : int
        Entries the queue takes before it may refuse a write.
    limit : int
        Entries it may hold at most (default ``capacity``).
    min_latency : int
        Clocks (or units of the caller's time) from a write to the earliest offer of its entry.
    max_latency : int or None
        Clocks from an entry becoming releasable and the oldest to its offer; ``None``: not checked.
    releasable : callable or None
        ``releasable(held)`` (the entries held, oldest first): whether the oldest may leave now (a frame queue
        holds a frame until its last beat is in). ``None``: always.
    """

    def __init__(self, *, capacity: int, limit: int | None = None, min_latency: int = 1,
                 max_latency: int | None = None, releasable=None):
        self.capacity, self.limit = capacity, capacity if limit is None else limit
        self.min_latency, self.max_latency = min_latency, max_latency
        self.releasable = releasable
        self.held = deque()                  # (entry, time written)
        self.head_since = None               # when the oldest entry became the oldest and releasable
        self.now = 0
        self.writes = self.reads = self.refusals = 0      # refusals: clocks without room

    def _fail(self, message):
        raise AssertionError(f"time {self.now}: {message} ({len(self.held)} held)")

    def write(self, *, ready: bool, valid: bool, data, now: int | None = None):
        """The write side at one edge: ``ready`` (room), ``valid`` and ``data`` as sampled before it."""
        if now is not None:
            self.now = now
        if not ready:
            self.refusals += 1                  # clocks without room
            if len(self.held) < self.capacity:
                self._fail(f"write refused with room (capacity {self.capacity})")
        elif len(self.held) >= self.limit:
            self._fail(f"ready with {self.limit} entries held, its limit")
        if ready and valid:
            self.held.append((data, self.now))
            self.writes += 1

    def read(self, *, valid: bool, ready: bool, data, now: int | None = None):
        """The read side at one edge: ``valid``, ``data`` (the head offered) and ``ready`` as sampled before it."""
        if now is not None:
            self.now = now
        may_leave = bool(self.held) and (self.releasable is None or self.releasable(list(self.held)))
        if may_leave and self.head_since is None:
            self.head_since = max(self.now, self.held[0][1])
        if not may_leave:
            self.head_since = None
        if valid:
            if not self.held:
                self._fail(f"offered {data!r} from an empty queue")
            entry, written = self.held[0]
            if data != entry:
                self._fail(f"offered {data!r}, the oldest entry is {entry!r}")
            if self.now < written + self.min_latency:
                self._fail(f"offered an entry written at {written}, before {self.min_latency} clocks")
            if not may_leave:
                self._fail(f"offered {data!r}, which may not leave yet")
        elif (self.max_latency is not None and self.head_since is not None
              and self.now - self.head_since > self.max_latency):
            self._fail(f"the oldest entry not offered for {self.now - self.head_since} clocks "
                       f"(at most {self.max_latency})")
        if valid and ready:
            self.held.popleft()
            self.reads += 1
            self.head_since = None

    def clock(self, *, w_ready, w_valid, w_data, r_valid, r_ready, r_data):
        """Both sides of a queue in one clock domain at one edge, then the clock."""
        self.write(ready=w_ready, valid=w_valid, data=w_data)      # its room as held before the edge
        self.read(valid=r_valid, ready=r_ready, data=r_data)       # an entry written now is not yet offered
        self.now += 1


async def drive(ctx, contract, rng, *, w_valid, w_ready, w_data, r_valid, r_ready, r_data, width: int,
                cycles: int, write_rate: float, read_rate: float, gated_writer: bool = False, entries=None):
    """Random writes and reads of a queue in the ``sync`` domain for ``cycles`` clocks, every edge checked by
    ``contract``. The ports are Amaranth values (a layout's ``as_value()``). A written entry is held on
    ``w_data`` with ``w_valid`` until it is taken, as a stream's rules ask; with ``gated_writer``, ``w_valid``
    is raised only with ``w_ready`` (a queue whose writer must never write it full). ``entries``: the entries to
    write, in order (default random ``width``-bit words). The write and read rates switch places every 64 clocks,
    so that the queue fills and drains."""
    entries = iter(entries) if entries is not None else None
    pending = None
    for cycle in range(cycles):
        rates = (write_rate, read_rate) if cycle // 64 % 2 == 0 else (read_rate, write_rate)
        if pending is None and rng.random() < rates[0]:
            pending = rng.getrandbits(width) if entries is None else next(entries, None)
        offer = pending is not None and (not gated_writer or ctx.get(w_ready))
        ctx.set(w_valid, offer)
        ctx.set(w_data, pending if pending is not None else 0)
        ctx.set(r_ready, rng.random() < rates[1])
        *_, wr, wv, wd, rv, rr, rd = await ctx.tick().sample(w_ready, w_valid, w_data, r_valid, r_ready, r_data)
        contract.clock(w_ready=bool(wr), w_valid=bool(wv), w_data=wd, r_valid=bool(rv), r_ready=bool(rr),
                       r_data=rd)
        if wv and wr:
            pending = None
