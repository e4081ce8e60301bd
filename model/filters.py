"""Age-Partitioned Bloom Filters: the basic APBF (paper 000 §5) and the blocked APBBF (paper 000 §6).

:class:`APBBF` is the specification of the hardware: every response of ``apbbf.hdl.APBBF`` must equal the
answer of this model for the same command, in order.

Both filters share the age-partitioned mechanics (:class:`AgePartitioned`): a circular buffer of segments with a
base index, a shift before an insert when ``n mod g == 0`` that retires the oldest segment, inserts into the k
newest segments, and queries by Algorithm 1 (k consecutive matches, starting at segment l, jumping back k on a
miss), counting segment accesses.

Three conventions a re-implementation must match
------------------------------------------------
The papers do not settle them for this design (the spare position and its hash are this design's own), so a
re-implementation from the papers has to guess; this model and the hardware (``apbbf.hdl``, the exported
Verilog) make them as follows, and an implementation that differs in any of them disagrees with the model
answer by answer.
``tests/test_spec_facts.py`` checks each on the model; the cocotb bench checks them on the exported core.

1. **Which physical segment is logical segment 0.** The buffer has ``P = k + l + 1`` physical positions
   (:attr:`~apbbf.model.config.Config.physical_segments`: the paper's k + l and a spare that commands never
   read or write). Logical segment i is at physical position ``pos(i) = (base + i) mod P``, and physical
   position j is always hashed with H3 stream ``j + 1`` (:mod:`apbbf.model.hashing`; the hash belongs to the
   position, paper 000 §5.1, and stays there while the segment in it ages). After reset ``base = 0`` and every
   shift decrements it, so after s shifts ``base = -s mod P``: logical i is at physical ``(i - s) mod P``,
   hashed with stream ``((i - s) mod P) + 1``, and the spare (logical k + l) is physical ``(k + l - s) mod P``.
   Since the first insert shifts first (2.), nothing is ever written with ``base = 0``: the first insert sets
   its key's bits in physical positions ``k + l, 0, 1, ..., k - 2`` (logical 0..k-1, ``base = P - 1``),
   hashed with streams ``k + l + 1, 1, 2, ..., k - 1``. Logical segment 0 of the first generation is physical
   ``P - 1``, not 0. (The basic :class:`APBF`, kept to reproduce the paper, has no spare: the same holds with
   ``P = k + l`` and slice j salted from stream ``j + 1``.)
2. **The first insert is a shift.** An insert shifts first whenever ``n mod g == 0``, n = 0 included, so after
   n inserts ``shifts == ceil(n / g)``: 1 after the first insert, still 1 after g inserts, 2 after g + 1.
   Queries never shift. The core's ``shifts`` output counts the same (it reads 1 after the first insert).
3. **TEST_AND_INSERT tests before the shift its insert triggers.** It answers as a QUERY just before it would,
   then shifts (if ``n mod g == 0``) and inserts. So at a generation boundary the segment about to be retired
   still counts: a key whose k segments are logical l..l+k-1 is found by the TEST_AND_INSERT, though a QUERY
   after that shift would no longer find it.

Batch path
----------
``run(ops, keys)`` answers a whole command sequence with numpy and gives exactly the per-key answers. Commands
are cut into chunks that contain no shift. Inside a chunk a bit that command t reads is set either before the
chunk or by an earlier inserting command of the chunk, so command t sees bit x iff
``before[x] or first_setter[x] < t``; ``first_setter`` comes from one ``np.minimum.at``. Algorithm 1 then runs
vectorised over the chunk's match matrix.
"""

from __future__ import annotations

import abc
import enum
import math

import numpy as np

from .config import Config, check_config
from .hashing import HashSpec, slice_index_many, slice_salt

__all__ = ["Op", "scan", "scan_from", "AgePartitioned", "APBF", "APBBF"]

_CHUNK = 1 << 15


class Op(enum.IntEnum):
    """Command kinds: the one definition of the ops. ``apbbf.hdl.Op`` (the gateware's 2-bit enum) and the host
    protocol's key commands are built from it."""
    QUERY = 0            #: is the key present? (no change)
    INSERT = 1           #: add the key (the response's hit is 0)
    TEST_AND_INSERT = 2  #: was the key present? then add it (paper 003's test-and-set)


def scan(match: np.ndarray, k: int, l: int) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 (paper 000 §5.4) over a match matrix.

    Parameters
    ----------
    match : numpy.ndarray of bool, shape (n, k + l)
        ``match[q, i]``: query q finds all its bits set in logical segment i.

    Returns
    -------
    hits : numpy.ndarray of bool, shape (n,)
    accesses : numpy.ndarray of int, shape (n,)
        Segments read by each query, as the paper counts them.
    """
    return scan_from(match, k, np.full(len(match), l, dtype=np.int64))


def scan_from(match: np.ndarray, k: int, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 over a match matrix, each query starting at its own logical segment ``start[q]`` (the
    number of segments it looks at minus k; paper 001's ``numSlices - k``). A query whose start is negative
    is absent, with no access.

    Parameters
    ----------
    match : numpy.ndarray of bool, shape (n, segments)
    k : int
    start : numpy.ndarray of int, shape (n,)

    Returns
    -------
    hits, accesses : numpy.ndarray, shape (n,)
        As :func:`scan`.
    """
    n = len(match)
    rows = np.arange(n)
    i = np.array(start, dtype=np.int64)
    p = np.zeros(n, dtype=np.int64)
    c = np.zeros(n, dtype=np.int64)
    accesses = np.zeros(n, dtype=np.int64)
    hits = np.zeros(n, dtype=bool)
    active = i >= 0
    while active.any():
        r = rows[active]
        matched = match[r, i[r]]
        accesses[r] += 1
        rm = r[matched]
        c[rm] += 1
        i[rm] += 1
        found = rm[p[rm] + c[rm] == k]                 # p + c = k: k consecutive matches
        hits[found] = True
        active[found] = False
        rn = r[~matched]
        i[rn] -= k                                       # jump back k, keep the run as p
        p[rn] = c[rn]
        c[rn] = 0
        active[rn[i[rn] < 0]] = False
    return hits, accesses


class AgePartitioned(abc.ABC):
    """The age-partitioned mechanics shared by :class:`APBF` and :class:`APBBF`.

    Subclasses give the segment size in bits and where a key's bits are in a physical segment
    (:meth:`_locate_many`, flat bit indices of shape (n, bits per key)).

    Attributes
    ----------
    n : int
        Inserts so far.
    base : int
        Physical position of logical segment 0: 0 after reset, ``-shifts mod positions`` (the module's
        convention 1).
    shifts : int
        Shifts so far (the generation counter): ``ceil(n / g)``, since the first insert is one (convention 2).
    """

    def __init__(self, k: int, l: int, generation: int, positions: int, segment_size: int):
        self._k, self._l, self._g = k, l, generation
        self._positions = positions
        self._bits = np.zeros((positions, segment_size), dtype=bool)
        self.n = 0
        self.base = 0
        self.shifts = 0

    k = property(lambda self: self._k, doc="Segments written per insert; matches needed by a query.")
    l = property(lambda self: self._l, doc="Extra segments; the window is l generations.")
    generation = property(lambda self: self._g, doc="g, inserts per generation.")
    window = property(lambda self: self._l * self._g, doc="w = l·g (paper 000 §5.2).")

    @property
    def positions(self) -> int:
        """Physical positions in the circular buffer."""
        return self._positions

    def pos(self, i: int) -> int:
        """Physical position of logical segment i (paper 000 §5.1, pos(i))."""
        return (self.base + i) % self._positions

    def segment(self, i: int) -> np.ndarray:
        """A read-only view of logical segment i's bits."""
        view = self._bits[self.pos(i)].view()
        view.flags.writeable = False
        return view

    @abc.abstractmethod
    def _locate_many(self, position: int, keys: np.ndarray) -> np.ndarray:
        """Flat bit indices, shape (n, bits per key), of prepared ``keys`` in physical segment ``position``."""

    @abc.abstractmethod
    def _prepare(self, keys) -> np.ndarray:
        """Keys as the filter's hashes take them (validated), as a numpy array."""

    def _shift(self):
        # Paper 000 §5.1: decrement the base index; the oldest segment is zeroed and reused. With a spare
        # position the retired segment becomes the spare and the (clear) spare becomes the new segment 0.
        self.base = (self.base - 1) % self._positions
        self._bits[self.pos(0)] = False
        if self._positions > self._k + self._l:
            self._bits[self.pos(self._k + self._l)] = False
        self.shifts += 1

    # Per-key path ------------------------------------------------------------------------------------------

    def _locate(self, position: int, key) -> np.ndarray:
        return self._locate_many(position, self._prepare([key]))[0]

    def insert(self, key) -> None:
        """Add ``key``: shift first if ``n mod g == 0``, then set its bits in segments 0..k-1."""
        prepared = self._prepare([key])
        if self.n % self._g == 0:
            self._shift()
        self.n += 1
        for i in range(self._k):
            self._bits[self.pos(i), self._locate_many(self.pos(i), prepared)[0]] = True

    def probe(self, key) -> tuple[bool, int]:
        """Algorithm 1 for ``key``: (present?, segments accessed)."""
        prepared = self._prepare([key])
        k, l = self._k, self._l
        i, p, c, accesses = l, 0, 0, 0
        while i >= 0:
            accesses += 1
            if self._bits[self.pos(i), self._locate_many(self.pos(i), prepared)[0]].all():
                c += 1
                i += 1
                if p + c == k:
                    return True, accesses
            else:
                i -= k
                p, c = c, 0
        return False, accesses

    def query(self, key) -> bool:
        """Is ``key`` among the recent inserts? (Algorithm 1; no false negatives for the last w inserts.)"""
        return self.probe(key)[0]

    def test_and_insert(self, key) -> bool:
        """Answer whether ``key`` was present, then insert it (paper 003's test-and-set)."""
        hit = self.query(key)
        self.insert(key)
        return hit

    # Batch path --------------------------------------------------------------------------------------------

    def run(self, ops, keys) -> tuple[np.ndarray, np.ndarray]:
        """Execute a command sequence; same answers and state as the per-key methods in order.

        Parameters
        ----------
        ops : sequence of Op (or int)
        keys : sequence of keys (or a prepared numpy array)

        Returns
        -------
        hits : numpy.ndarray of bool
            The response of each command (always False for INSERT).
        accesses : numpy.ndarray of int
            Segments accessed by the query part of each command (0 for INSERT).
        """
        keys = self._prepare(keys)
        ops = np.array(ops, dtype=np.int64)
        if ops.ndim == 0:
            ops = np.full(len(keys), ops)
        if len(ops) != len(keys):
            raise ValueError(f"ops and keys must have the same length, not {len(ops)} and {len(keys)}")
        if np.any((ops < 0) | (ops > 2)):
            raise ValueError("ops must be QUERY (0), INSERT (1) or TEST_AND_INSERT (2)")
        hits = np.zeros(len(ops), dtype=bool)
        accesses = np.zeros(len(ops), dtype=np.int64)
        inserting = ops != Op.QUERY
        t0 = 0
        while t0 < len(ops):
            shifted = bool(inserting[t0]) and self.n % self._g == 0
            if shifted:
                if ops[t0] == Op.TEST_AND_INSERT:
                    # Its query comes before the insert, so it sees the filter before the shift.
                    self._run_chunk(ops[t0:t0 + 1] * 0, keys[t0:t0 + 1], hits[t0:t0 + 1], accesses[t0:t0 + 1])
                    ops[t0] = Op.INSERT                         # (ops is this call's own copy)
                self._shift()
            # The chunk ends at the next insert that needs a shift, or after _CHUNK commands.
            stop = self._g if shifted else (-self.n) % self._g
            insert_at = np.flatnonzero(inserting[t0:t0 + _CHUNK])
            t1 = t0 + insert_at[stop] if stop < len(insert_at) else min(t0 + _CHUNK, len(ops))
            self._run_chunk(ops[t0:t1], keys[t0:t1], hits[t0:t1], accesses[t0:t1])
            t0 = t1
        return hits, accesses

    def _run_chunk(self, ops, keys, hits, accesses):
        k, l = self._k, self._l
        n = len(ops)
        t = np.arange(n)
        inserting = ops != Op.QUERY
        match = np.zeros((n, k + l), dtype=bool)
        updates = []
        for i in range(k + l):
            position = self.pos(i)
            where = self._locate_many(position, keys)                       # (n, bits per key)
            seen = self._bits[position][where]
            if i < k and inserting.any():
                first = np.full(self._bits.shape[1], n, dtype=np.int64)
                written = where[inserting]
                np.minimum.at(first, written.ravel(), np.repeat(t[inserting], written.shape[1]))
                seen |= first[where] < t[:, None]
                updates.append((position, written.ravel()))
            match[:, i] = seen.all(axis=1)
        asking = ops != Op.INSERT
        chunk_hits, chunk_accesses = scan(match[asking], k, l)
        hits[asking] = chunk_hits
        accesses[asking] = chunk_accesses
        for position, written in updates:
            self._bits[position, written] = True
        self.n += int(inserting.sum())

    def insert_many(self, keys) -> None:
        """Insert every key, in order."""
        self.run(Op.INSERT, keys)

    def query_many(self, keys) -> np.ndarray:
        """Query every key (no change to the filter)."""
        return self.run(Op.QUERY, keys)[0]

    def probe_many(self, keys) -> tuple[np.ndarray, np.ndarray]:
        """Query every key: (hits, accesses)."""
        return self.run(Op.QUERY, keys)

    def test_and_insert_many(self, keys) -> np.ndarray:
        """Test-and-insert every key in order (a duplicate within the batch is caught)."""
        return self.run(Op.TEST_AND_INSERT, keys)[0]


class APBF(AgePartitioned):
    """The basic Age-Partitioned Bloom Filter of paper 000 §5: k + l slices of m bits, one hash per slice.

    Kept to reproduce the paper; the hardware implements :class:`APBBF` (which equals this structure with
    ``block_hashes = 1``). Keys are integers from 0 to 2**64-1 (use ``key_from_bytes`` for byte strings).

    Parameters
    ----------
    k, l : int
        As in the paper, both at least 1.
    m : int
        Bits per slice; the generation is ``g = ⌊m ln 2 / k⌋`` (paper 000 §5.2) and must be at least 1.
    seed : int
        Seed of the slice hashes (``apbbf.model.hashing.slice_salt``).

    Raises
    ------
    TypeError, ValueError
        If a parameter is not an integer or out of range.
    """

    def __init__(self, k: int, l: int, m: int, seed: int = 0):
        for name, value in (("k", k), ("l", l), ("m", m), ("seed", seed)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an integer, not {value!r}")
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        if l < 1:
            raise ValueError(f"l must be at least 1, not {l}")
        g = math.floor(m * math.log(2) / k)                              # paper 000 §5.2
        if g < 1:
            raise ValueError(f"m must give a generation of at least 1 (m ≥ {math.ceil(k / math.log(2))} "
                             f"for k={k}), not {m}")
        if not 0 <= seed < 1 << 64:
            raise ValueError(f"seed must be from 0 to 2**64-1, not {seed}")
        super().__init__(k, l, g, k + l, m)
        self._m = m
        self._salts = [slice_salt(seed, j) for j in range(k + l)]

    m = property(lambda self: self._m, doc="Bits per slice.")

    def _prepare(self, keys) -> np.ndarray:
        if isinstance(keys, np.ndarray) and keys.dtype == np.uint64:
            return keys
        keys = list(keys)
        for key in keys:
            if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
                raise TypeError(f"key must be an integer, not {key!r}")
            if not 0 <= key < 1 << 64:
                raise ValueError(f"keys must be integers from 0 to 2**64-1, not {key!r}")
        return np.array(keys, dtype=np.uint64)

    def _locate_many(self, position, keys):
        return slice_index_many(keys, self._salts[position], self._m)[:, None]


class _Folded(np.ndarray):
    """Keys already folded to the segment hashes' input (so a prepared batch is never folded twice)."""


class APBBF(AgePartitioned):
    """The Age-Partitioned Blocked Bloom Filter (paper 000 §6): the specification of the hardware.

    Each of the ``k + l + 1`` physical segments (:attr:`Config.physical_segments`: the paper's k + l and the
    spare that the hardware clears in the background) is ``segment_blocks`` blocks of B bits; a key sets or
    tests b bits, one per part, of one block per segment, as :class:`~apbbf.model.hashing.HashSpec` defines
    for that physical segment (stream ``j + 1`` for position j, whatever logical segment is there: see the
    module's conventions for where logical segment 0 is after reset and after each shift).

    Parameters
    ----------
    config : Config

    Raises
    ------
    TypeError
        If ``config`` is not a :class:`Config`.
    """

    def __init__(self, config: Config):
        check_config(config)
        super().__init__(config.k, config.l, config.generation, config.physical_segments, config.segment_bits)
        self._config = config
        self._hash = HashSpec(config)

    config = property(lambda self: self._config, doc="The filter's Config.")
    hash = property(lambda self: self._hash, doc="The filter's HashSpec.")

    def block(self, position: int, index: int) -> int:
        """Block ``index`` of physical segment ``position`` as a B-bit integer (bit 0 first)."""
        B = self._config.block_bits
        bits = self._bits[position, index * B:(index + 1) * B]
        return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")

    def _prepare(self, keys) -> np.ndarray:
        if isinstance(keys, _Folded):
            return keys
        return self._hash.fold_many(self._hash.as_array(keys)).view(_Folded)

    def _locate_many(self, position, folded):
        c = self._config
        blocks, positions = self._hash.locate_many(position, folded)
        return blocks[:, None] * c.block_bits + positions
