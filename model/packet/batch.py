"""The batch path: :func:`frame_keys` keys a :class:`FrameBatch` at once with numpy, equal to
:func:`~apbbf.model.packet.reference.frame_key` frame for frame (``tests/test_packet.py``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

import numpy as np

from ..compiled import kernels
from .reference import _frame_bytes
from .spec import (BLOCK_BYTES, _check_spec, CRC64_XZ_PARAMETERS, _ETH_HEADER, ETHERTYPE_IPV4, ETHERTYPE_IPV6,
                   FrameClass, KeySpec, _MAX_TAGS, TPIDS)

__all__ = ["FrameBatch", "MessageRows", "frame_keys"]


class FrameBatch:
    """Frames as one byte buffer: frame i is ``data[offsets[i]:offsets[i] + lengths[i]]`` (without FCS).

    Parameters
    ----------
    data : numpy.ndarray of uint8, or bytes-like
        The buffer (a capture file's bytes, say); not copied.
    offsets, lengths : array-like of int
        One per frame, ``0 <= offsets``, ``0 <= lengths``, ``offsets + lengths <= len(data)``.

    Raises
    ------
    TypeError
        If ``data`` is not a uint8 array or bytes-like, or offsets/lengths are not integer arrays.
    ValueError
        If offsets and lengths differ in length or a frame lies outside the buffer.
    """

    def __init__(self, data, offsets, lengths):
        if isinstance(data, np.ndarray):
            if data.dtype != np.uint8 or data.ndim != 1:
                raise TypeError(f"data must be a 1-D uint8 array, not {data.dtype} of shape {data.shape}")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            data = np.frombuffer(data, dtype=np.uint8)
        else:
            raise TypeError(f"data must be a uint8 array or bytes, not {type(data).__name__}")
        offsets, lengths = np.asarray(offsets), np.asarray(lengths)
        for name, value in (("offsets", offsets), ("lengths", lengths)):
            if value.ndim != 1 or (value.size and value.dtype.kind not in "iu"):
                raise TypeError(f"{name} must be a 1-D integer array, not {value.dtype} of shape {value.shape}")
        if len(offsets) != len(lengths):
            raise ValueError(f"offsets and lengths must have the same length, not {len(offsets)} and {len(lengths)}")
        offsets, lengths = offsets.astype(np.int64), lengths.astype(np.int64)
        if len(offsets) and (offsets.min() < 0 or lengths.min() < 0 or int((offsets + lengths).max()) > len(data)):
            raise ValueError("every frame must lie inside data (0 <= offset, 0 <= length, offset + length <= "
                             f"len(data) = {len(data)})")
        self.data, self.offsets, self.lengths = data, offsets, lengths

    @classmethod
    def from_frames(cls, frames: Iterable) -> "FrameBatch":
        """A batch of the given frames (bytes each), copied into one buffer.

        Raises
        ------
        TypeError
            If a frame is not bytes.
        """
        frames = [_frame_bytes(f) for f in frames]
        lengths = np.array([len(f) for f in frames], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if frames else lengths
        return cls(np.frombuffer(b"".join(frames), dtype=np.uint8), offsets, lengths)

    def __len__(self) -> int:
        return len(self.offsets)

    def frame(self, i: int) -> bytes:
        """Frame ``i`` as bytes."""
        return self.data[self.offsets[i]:self.offsets[i] + self.lengths[i]].tobytes()

    def __getitem__(self, index: slice) -> "FrameBatch":
        """The frames ``index`` selects (a slice or an index array), sharing the buffer."""
        return FrameBatch(self.data, self.offsets[index], self.lengths[index])


class MessageRows:
    """The messages (full keys, :func:`message`) of a batch of frames, as the 64-byte rows they are made of:
    message i is ``rows[first[i]:first[i] + count[i]].tobytes()`` (its blocks, then its trailer).

    Parameters
    ----------
    rows : numpy.ndarray of uint8, shape (m, 64)
    first, count : numpy.ndarray of int64
        One per message: its first row and its rows (at least 1, the trailer).

    Raises
    ------
    ValueError
        If the arrays do not fit together.
    """

    def __init__(self, rows: np.ndarray, first: np.ndarray, count: np.ndarray):
        rows, first, count = np.asarray(rows), np.asarray(first, dtype=np.int64), np.asarray(count, dtype=np.int64)
        if rows.dtype != np.uint8 or rows.ndim != 2 or rows.shape[1] != BLOCK_BYTES:
            raise ValueError(f"rows must be uint8 of shape (m, {BLOCK_BYTES}), not {rows.dtype} {rows.shape}")
        if first.shape != count.shape or first.ndim != 1:
            raise ValueError(f"first and count must be 1-D of one length, not {first.shape} and {count.shape}")
        if len(first) and (count.min() < 1 or first.min() < 0 or int((first + count).max()) > len(rows)):
            raise ValueError("every message must be at least one row inside rows")
        self.rows, self.first, self.count = rows, first, count

    def __len__(self) -> int:
        return len(self.first)

    def message(self, i: int) -> bytes:
        """Message ``i`` as bytes."""
        a = int(self.first[i])
        return self.rows[a:a + int(self.count[i])].tobytes()

    def __getitem__(self, index) -> "MessageRows":
        """The messages ``index`` selects (a slice or an index array), sharing the rows."""
        return MessageRows(self.rows, self.first[index], self.count[index])

    def compact(self) -> "MessageRows":
        """The same messages in rows of their own (only theirs, in order)."""
        owner, index = _ragged(self.count)
        rows = self.rows[self.first[owner] + index]
        return MessageRows(rows, np.cumsum(self.count) - self.count, self.count.copy())

    @staticmethod
    def concatenate(parts) -> "MessageRows":
        """The messages of ``parts`` (a sequence of MessageRows), in order, in one array of rows."""
        parts = list(parts)
        bases = np.cumsum([0] + [len(p.rows) for p in parts])
        rows = np.concatenate([p.rows for p in parts]) if parts else np.zeros((0, BLOCK_BYTES), dtype=np.uint8)
        first = np.concatenate([p.first + base for p, base in zip(parts, bases)] or [np.zeros(0, dtype=np.int64)])
        count = np.concatenate([p.count for p in parts] or [np.zeros(0, dtype=np.int64)])
        return MessageRows(rows, first, count)

    def equal(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Whether message ``a[i]`` equals message ``b[i]``, for index arrays ``a`` and ``b`` of one length."""
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        same = self.count[a] == self.count[b]
        chosen = np.flatnonzero(same)
        if len(chosen):
            counts = self.count[a[chosen]]
            owner, index = _ragged(counts)
            words = self.rows.view(np.uint64) if self.rows.flags.c_contiguous else \
                np.ascontiguousarray(self.rows).view(np.uint64)
            row_equal = (words[self.first[a[chosen]][owner] + index]
                         == words[self.first[b[chosen]][owner] + index]).all(axis=1)
            same[chosen] = np.logical_and.reduceat(row_equal, np.cumsum(counts) - counts)
        return same


_M64 = (1 << 64) - 1


def _reflect(value: int, width: int) -> int:
    return int(f"{value:0{width}b}"[::-1], 2)


class _Tables:
    """CRC-64/XZ as a linear map on numpy arrays (the reflected, table-driven register).

    One byte ``v`` moves the register ``S`` to ``Z(S) ^ T[v]`` with ``Z(S) = (S >> 8) ^ T[S & 0xFF]`` (T is
    linear, T[0] = 0). So a 64-byte block contributes ``C = XOR_j D[j][byte_j]`` with ``D[j] = Z^(63-j)(T)``, and a
    message of B blocks ends at ``Z^(64B)(init) ^ XOR_i Z^(64(B-1-i))(C_i)``; ``Z^(64a)`` of a 64-bit value is
    ``XOR_p E[a][p][byte_p]``.
    """

    def __init__(self):
        algorithm = CRC64_XZ_PARAMETERS
        assert algorithm["crc_width"] == 64 and algorithm["reflect_input"] and algorithm["reflect_output"]
        poly = _reflect(algorithm["polynomial"], 64)
        table = []
        for v in range(256):
            c = v
            for _ in range(8):
                c = (c >> 1) ^ poly if c & 1 else c >> 1
            table.append(c)
        self.T = np.array(table, dtype=np.uint64)
        self.init = _reflect(algorithm["initial_crc"], 64)
        self.xor_output = algorithm["xor_output"]
        self.D = np.zeros((BLOCK_BYTES, 256), dtype=np.uint64)
        row = self.T.copy()
        for distance in range(BLOCK_BYTES):
            self.D[BLOCK_BYTES - 1 - distance] = row
            row = self._zero(row)
        identity = (np.arange(256, dtype=np.uint64)[None, :] << (8 * np.arange(8, dtype=np.uint64))[:, None])
        block = identity.copy()
        for _ in range(BLOCK_BYTES):
            block = self._zero(block)
        self._E = [identity, block]                         # E[a]: (8, 256), Z^(64a) of v << 8p
        self._flat = None
        self._E_flat = None
        self._init = [self.init, self._advance_int(self.init, 1)]

    @property
    def slices(self) -> np.ndarray:
        """The slicing-by-8 tables, shape (8, 256): ``slices[0]`` is T, ``slices[j][v]`` is v followed by j zero
        bytes (the compiled kernel's, :mod:`apbbf.model.compiled`: a 64-bit word a step)."""
        if getattr(self, "_slices", None) is None:
            slices = np.zeros((8, 256), dtype=np.uint64)
            slices[0] = self.T
            for j in range(1, 8):
                slices[j] = self._zero(slices[j - 1])
            self._slices = slices
        return self._slices

    def _zero(self, x: np.ndarray) -> np.ndarray:
        return self.T[(x & np.uint64(0xFF)).astype(np.intp)] ^ (x >> np.uint64(8))

    def _advance_int(self, value: int, a: int) -> int:
        E = self._E[a]
        out = 0
        for p in range(8):
            out ^= int(E[p, (value >> (8 * p)) & 0xFF])
        return out

    def E(self, blocks: int) -> np.ndarray:
        """Tables of ``Z^(64a)`` for a = 0..blocks, shape (blocks + 1, 8, 256)."""
        self.grow(blocks)
        return np.stack(self._E[:blocks + 1])

    def grow(self, blocks: int) -> None:
        """Build the tables of :meth:`E` up to ``blocks`` (for :meth:`advance` and :meth:`init_after`)."""
        if len(self._E) > blocks and self._E_flat is not None:
            return
        while len(self._E) <= blocks:
            last = self._E[-1]
            one = self._E[1]
            nxt = np.zeros_like(last)
            for p in range(8):
                nxt ^= one[p][((last >> np.uint64(8 * p)) & np.uint64(0xFF)).astype(np.intp)]
            self._E.append(nxt)
            self._init.append(self._advance_int(self._init[-1], 1))
        self._E_flat = np.stack(self._E).reshape(-1)

    def init_after(self, blocks: int) -> np.ndarray:
        """``Z^(64B)(init)`` for B = 0..blocks."""
        self.grow(blocks)
        return np.array(self._init[:blocks + 1], dtype=np.uint64)

    def contributions(self, rows: np.ndarray) -> np.ndarray:
        """``C`` of each 64-byte row (uint8, shape (n, 64)), as uint64 (n,): one lookup a byte in the byte tables
        (:attr:`D`, 128 KiB), a few thousand rows at a time (their lookups gathered at once, then XOR-ed)."""
        flat = self._D_flat
        out = np.empty(len(rows), dtype=np.uint64)
        step = 4096
        for a in range(0, len(rows), step):
            out[a:a + step] = np.bitwise_xor.reduce(flat[rows[a:a + step] + _BYTE_TABLES], axis=1)
        return out

    @property
    def _D_flat(self) -> np.ndarray:
        if self._flat is None:
            self._flat = np.ascontiguousarray(self.D).reshape(-1)
        return self._flat

    def advance(self, values: np.ndarray, blocks: np.ndarray) -> np.ndarray:
        """``Z^(64·blocks[i])(values[i])`` for uint64 ``values`` and block counts ``blocks`` (int64, at most the
        largest :meth:`E` was built for): eight lookups each, gathered at once."""
        E = self._E_flat
        octets = np.ascontiguousarray(values, dtype="<u8").view(np.uint8).reshape(-1, 8)
        out = np.empty(len(values), dtype=np.uint64)
        step = 1 << 14
        for a in range(0, len(values), step):
            index = (blocks[a:a + step, None] << 11) + _ADVANCE_OFFSETS + octets[a:a + step]
            out[a:a + step] = np.bitwise_xor.reduce(E[index], axis=1)
        return out


#: Offsets of byte j's table in the flat byte tables (rows of 64 bytes index them: uint16).
_BYTE_TABLES = (np.arange(BLOCK_BYTES, dtype=np.uint16) * 256)[None, :]
#: Offsets of byte p's table in one block count's tables of :meth:`_Tables.E`, flat.
_ADVANCE_OFFSETS = (np.arange(8, dtype=np.int64) * 256)[None, :]


@lru_cache(maxsize=1)
def _tables() -> _Tables:
    return _Tables()


_TAIL = np.array([[0xFF] * v + [0] * (BLOCK_BYTES - v) for v in range(BLOCK_BYTES + 1)], dtype=np.uint8)
_CLASS_CODES = np.array([FrameClass.OTHER, FrameClass.IPV4, FrameClass.IPV6], dtype=np.uint8)


def _classify(head: np.ndarray, n: np.ndarray, ethertypes: np.ndarray | None = None):
    """Vectorised :func:`parse` over the frames' first 64 bytes (zero beyond each frame's end); ``ethertypes``
    (one per frame, -1 for an Ethernet frame) as :func:`parse`'s ``ethertype``."""
    rows = np.arange(len(n))

    def be16(pos):
        pos = np.minimum(pos, BLOCK_BYTES - 2)
        return (head[rows, pos].astype(np.int64) << 8) | head[rows, pos + 1]

    if ethertypes is None:
        ethertypes = np.full(len(n), -1, dtype=np.int64)
    ethernet = ethertypes < 0
    valid = ~ethernet | (n >= _ETH_HEADER)
    ethertype = np.where(ethernet, be16(np.full(len(n), 12)), ethertypes)
    p = np.where(ethernet, _ETH_HEADER, 0).astype(np.int64)
    tags = np.zeros(len(n), dtype=np.int64)
    for _ in range(_MAX_TAGS):
        tagged = valid & np.isin(ethertype, TPIDS)
        valid &= ~tagged | (n >= p + 4)
        tagged &= valid
        ethertype = np.where(tagged, be16(p + 2), ethertype)
        p = np.where(tagged, p + 4, p)
        tags += tagged
    first = head[rows, np.minimum(p, BLOCK_BYTES - 1)]
    ihl = (first & 15).astype(np.int64)
    ipv4 = (valid & (ethertype == ETHERTYPE_IPV4) & (n >= p + 20) & (first >> 4 == 4) & (ihl >= 5)
            & (be16(p + 2) >= 4 * ihl))
    ipv6 = valid & (ethertype == ETHERTYPE_IPV6) & (n >= p + 40) & (first >> 4 == 6)
    kind = np.where(ipv4, 1, np.where(ipv6, 2, 0))             # index into _CLASS_CODES
    ip_length = np.where(ipv4, np.minimum(be16(p + 2), n - p),
                         np.where(ipv6, np.minimum(40 + be16(p + 4), n - p), 0))
    return kind, np.where(kind > 0, p, -1), ip_length, tags


def _ragged(counts: np.ndarray):
    """(owner, index) for ``counts[i]`` items per owner i: owner repeated, index 0..counts[i]-1."""
    owner = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    return owner, np.arange(len(owner)) - starts[owner]


#: Bytes of frame data per internal chunk of :func:`frame_keys` (bounds its working memory).
_CHUNK_BYTES = 1 << 24


def frame_keys(batch: FrameBatch, spec: KeySpec, *, messages: bool = False, classes: bool = False,
               progress=None, ethertypes=None, message_rows: bool = False):
    """The keys of a batch of frames at once (numpy); equal to :func:`frame_key` frame by frame.

    Parameters
    ----------
    batch : FrameBatch
    spec : KeySpec
    ethertypes : array-like of int or None
        One per frame: -1 for an Ethernet frame, else :func:`parse`'s ``ethertype`` (the frame is a network-layer
        packet: :func:`network_layer` gives both); None: every frame is Ethernet.
    messages : bool
        Also return each frame's message (:func:`message`, its full key) as bytes.
    classes : bool
        Also return each frame's :class:`FrameClass` value (uint8: 0, 4 or 6).
    message_rows : bool
        Also return the messages as :class:`MessageRows` (no bytes object per frame), after ``messages``.
    progress : callable or None
        Called with the number of frames done after each internal chunk.

    Returns
    -------
    keys : numpy.ndarray of uint64
        Or a tuple ``(keys, messages, message_rows, classes)`` with the parts asked for (messages a list of
        bytes).

    Raises
    ------
    TypeError
        If ``batch`` is not a FrameBatch or ``spec`` not a KeySpec.
    """
    if not isinstance(batch, FrameBatch):
        raise TypeError(f"batch must be a FrameBatch, not {batch!r}")
    spec = _check_spec(spec)
    if ethertypes is not None:
        ethertypes = np.asarray(ethertypes)
        if ethertypes.shape != (len(batch),) or (ethertypes.size and ethertypes.dtype.kind not in "iu"):
            raise ValueError(f"ethertypes must be {len(batch)} integers (one per frame), not {ethertypes.dtype} of "
                             f"shape {ethertypes.shape}")
        ethertypes = ethertypes.astype(np.int64)
    keys = np.zeros(len(batch), dtype=np.uint64)
    kinds = np.zeros(len(batch), dtype=np.uint8)
    texts: list[bytes] = []
    parts: list[MessageRows] = []
    ends = np.cumsum(batch.lengths + 2 * BLOCK_BYTES)
    lo = 0
    while lo < len(batch):
        hi = max(int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + _CHUNK_BYTES, side="right")), lo + 1)
        chunk_keys, chunk_texts, chunk_kinds, chunk_rows = _keys_chunk(
            batch[lo:hi], spec, messages, None if ethertypes is None else ethertypes[lo:hi])
        if message_rows:
            parts.append(chunk_rows)
        keys[lo:hi] = chunk_keys
        kinds[lo:hi] = chunk_kinds
        texts += chunk_texts
        lo = hi
        if progress is not None:
            progress(hi)
    if not (messages or classes or message_rows):
        return keys
    return (keys,) + ((texts,) if messages else ()) + \
        ((parts[0] if len(parts) == 1 else MessageRows.concatenate(parts),) if message_rows else ()) + \
        ((kinds,) if classes else ())


def _keys_chunk(batch: FrameBatch, spec: KeySpec, messages: bool, ethertypes: np.ndarray | None):
    tables = _tables()
    nf = len(batch)
    n = batch.lengths
    lo = int(batch.offsets.min())
    hi = int((batch.offsets + n).max())
    total = int(n.sum())
    # The chunk's bytes with a block of zeros after them, so that every 64-byte row read below lies inside: the
    # buffer's span if the frames fill most of it, else the frames packed.
    if hi - lo <= 2 * total + 4096:
        off = batch.offsets - lo
        if hi + 2 * BLOCK_BYTES <= len(batch.data):
            # the buffer itself: every row read below lies inside it, and the bytes past a range are masked
            data = batch.data[lo:hi + 2 * BLOCK_BYTES]
        else:
            data = np.zeros(hi - lo + 2 * BLOCK_BYTES, dtype=np.uint8)
            data[:hi - lo] = batch.data[lo:hi]
    else:
        data = np.zeros(total + 2 * BLOCK_BYTES, dtype=np.uint8)
        data[:total] = np.concatenate([batch.data[a:a + b] for a, b in zip(batch.offsets.tolist(), n.tolist())])
        off = np.cumsum(n) - n
    windows = np.lib.stride_tricks.sliding_window_view(data, BLOCK_BYTES)
    fast = kernels(int(n.sum()))
    if fast is not None:
        kind, l3, ip_length = (np.empty(nf, dtype=np.int64) for _ in range(3))
        fast.classify(data, off, n, np.full(nf, -1, dtype=np.int64) if ethertypes is None else ethertypes,
                      kind, l3, ip_length)
    else:
        head = windows[off].copy()
        head &= _TAIL[np.minimum(n, BLOCK_BYTES)]
        kind, l3, ip_length, _ = _classify(head, n, ethertypes)

    recipes = [spec.other, spec.ipv4, spec.ipv6]
    slots = max(len(r) for r in recipes)
    masks = [np.full(BLOCK_BYTES, 0xFF, dtype=np.uint8)]
    starts = np.zeros((slots, nf), dtype=np.int64)
    counts = np.zeros((slots, nf), dtype=np.int64)
    mask_ids = np.zeros((slots, nf), dtype=np.int64)
    for code, recipe in enumerate(recipes):
        members = kind == code
        if not members.any():
            continue
        for slot, r in enumerate(recipe):
            if r.base == "frame":
                base, bound = np.zeros(nf, dtype=np.int64), n
            else:
                base, bound = l3, l3 + ip_length
            start = base + r.offset
            end = bound if r.length is None else start + r.length
            start, end = np.minimum(start, bound), np.minimum(end, bound)
            starts[slot][members] = start[members]
            counts[slot][members] = (end - start)[members]
            if r.mask:
                row = np.full(BLOCK_BYTES, 0xFF, dtype=np.uint8)
                row[:len(r.mask)] = np.frombuffer(r.mask, dtype=np.uint8)
                masks.append(row)
                mask_ids[slot][members] = len(masks) - 1

    # Rows: frame-major, each frame's segments' blocks, then its trailer.
    blocks = -(-counts // BLOCK_BYTES)                          # (slots, nf)
    per_frame = blocks.sum(axis=0) + 1
    first_row = np.cumsum(per_frame) - per_frame
    trailer_row = first_row + per_frame - 1
    if fast is not None:
        # the rows (every byte written) and each message's CRC in one compiled loop over the frames
        rows = np.empty((int(per_frame.sum()), BLOCK_BYTES), dtype=np.uint8)
        keys = np.empty(nf, dtype=np.uint64)
        fast.message_keys(data, off, starts, counts, mask_ids, np.stack(masks), first_row, rows,
                          rows.reshape(-1).view(np.uint64), tables.slices, np.uint64(tables.init),
                          np.uint64(tables.xor_output), keys)
    else:
        rows = np.zeros((int(per_frame.sum()), BLOCK_BYTES), dtype=np.uint8)
        before = np.zeros(nf, dtype=np.int64)
        for slot in range(slots):
            frame, k = _ragged(blocks[slot])
            target = first_row[frame] + before[frame] + k
            rows[target] = windows[off[frame] + starts[slot][frame] + BLOCK_BYTES * k]
            valid = np.minimum(counts[slot][frame] - BLOCK_BYTES * k, BLOCK_BYTES)
            partial = valid < BLOCK_BYTES
            rows[target[partial]] &= _TAIL[valid[partial]]
            masked = (k == 0) & (mask_ids[slot][frame] > 0)
            if masked.any():
                rows[target[masked]] &= np.stack(masks)[mask_ids[slot][frame][masked]]
            before += blocks[slot]
        lengths = rows[trailer_row].view("<u4")                    # (nf, 16)
        lengths[:, :slots] = counts.T.astype("<u4")
        rows[trailer_row] = lengths.view(np.uint8)
        contributions = tables.contributions(rows)
        most = int(per_frame.max())
        tables.grow(most)
        after = np.repeat(trailer_row, per_frame) - np.arange(len(rows))        # blocks after each row
        advanced = tables.advance(contributions, after)
        keys = np.bitwise_xor.reduceat(advanced, first_row) ^ tables.init_after(most)[per_frame]
        keys ^= np.uint64(tables.xor_output)
    texts = [rows[a:b].tobytes() for a, b in zip(first_row.tolist(), (first_row + per_frame).tolist())] \
        if messages else []
    return keys, texts, _CLASS_CODES[kind], MessageRows(rows, first_row, per_frame)
