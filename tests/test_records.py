"""The pcap record walk and its log (apbbf/records.py): a second pass takes the first pass's starts only when they
are the walk's own, record for record."""

import struct

import numpy as np
import pytest

from apbbf import records
from apbbf.records import PCAP_RECORD_HEADER, WalkLog, check_walk, walk_pcap


def _buffer(rng, n, *, big=False, tail=b""):
    """A pcap file's bytes: a 24-byte header (zeros) and ``n`` records of random lengths and bytes, then ``tail``."""
    order = ">" if big else "<"
    parts, starts, pos = [bytes(24)], [], 24
    for _ in range(n):
        caplen = int(rng.choice([0, 1, 14, 60, 343, 1514, 9014]))
        body = rng.integers(0, 256, caplen, dtype=np.uint8).tobytes()
        parts.append(struct.pack(order + "IIII", 1, 2, caplen, caplen) + body)
        starts.append(pos)
        pos += PCAP_RECORD_HEADER + caplen
    data = b"".join(parts) + tail
    return np.frombuffer(data, dtype=np.uint8), starts, pos


@pytest.mark.parametrize("big", [False, True])
def test_walk_finds_every_record_and_where_it_stops(big):
    rng = np.random.default_rng(1)
    order = ">" if big else "<"
    # the end of the file; a few bytes; a record cut short; a corrupt record (a captured length beyond the snap)
    for tail in (b"", b"\x00" * 7, struct.pack(order + "IIII", 0, 0, 99, 99) + b"x",
                 struct.pack(order + "IIII", 0, 0, 1 << 20, 0) + bytes(64)):
        data, starts, pos = _buffer(rng, 300, big=big, tail=tail)
        found, stop = walk_pcap(data.data, 24, len(data), 1 << 18, big)
        assert found == starts and stop == pos
        assert check_walk(data, np.array(starts), 24, len(data), 1 << 18, big) == pos


def test_check_walk_takes_only_the_walk():
    rng = np.random.default_rng(2)
    data, starts, pos = _buffer(rng, 200)
    starts = np.array(starts, dtype=np.int64)
    end, snap = len(data), 1 << 18
    assert check_walk(data, starts, 24, end, snap, False) == pos
    assert check_walk(data, starts[:-1], 24, end, snap, False) is None          # the walk goes on
    assert check_walk(data, starts[1:], 24, end, snap, False) is None           # not from the first record
    assert check_walk(data, np.delete(starts, 50), 24, end, snap, False) is None
    assert check_walk(data, np.insert(starts, 50, starts[50] + 16), 24, end, snap, False) is None
    shifted = starts.copy()
    shifted[-1] += 1
    assert check_walk(data, shifted, 24, end, snap, False) is None
    assert check_walk(data, starts, 24, end, snap, True) is None                # the other byte order
    assert check_walk(data, starts, 24, end - 1, snap, False) is None           # the last record cut short
    assert check_walk(data, starts, 24, end, 1013, False) is None               # a record beyond the snap length
    empty = np.zeros(0, dtype=np.int64)
    assert check_walk(data, empty, 24, end, snap, False) is None
    assert check_walk(data[:30], empty, 24, 30, snap, False) == 24


def test_log_replays_chunk_by_chunk():
    log = WalkLog()
    log.add(("a", 0), np.array([24, 100]))
    log.add(("a", 4096), np.array([]))
    log.add(("b", 0), np.array([24]))
    log.replay()
    assert log.take(("a", 0)).tolist() == [24, 100]
    assert log.take(("a", 4096)).tolist() == []
    assert log.take(("c", 0)) is None                                     # another chunk: the log is done
    assert log.take(("b", 0)) is None


def test_a_wrong_log_changes_no_answer(tmp_path, monkeypatch):
    """The second pass checks what the log proposes: a log with a record left out is walked again."""
    from apbbf.dedup import dedup_capture
    rng = np.random.default_rng(3)
    frame = bytes(range(60))
    path = tmp_path / "c.pcap"
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(3000):
            body = frame if i % 3 == 0 else rng.integers(0, 256, int(rng.integers(60, 1500)), dtype=np.uint8).tobytes()
            f.write(struct.pack("<IIII", 1, i, len(body), len(body)) + body)
    common = dict(window=1_000_000, seed=1, output=None, chunk_bytes=1 << 16)
    walks = []
    monkeypatch.setattr("apbbf.capture.walk_pcap",
                        lambda *a, **k: walks.append(1) or records.walk_pcap(*a, **k))
    right = dedup_capture(path, **common)
    walked_right, walks[:] = len(walks), []
    original = WalkLog.take

    def wrong(self, chunk):
        starts = original(self, chunk)
        return None if starts is None or not len(starts) else np.delete(starts, len(starts) // 2)

    monkeypatch.setattr(WalkLog, "take", wrong)
    again = dedup_capture(path, **common)
    # the first pass walks every chunk, the second none with the right log, and every one with the wrong
    assert walked_right > 10 and len(walks) == 2 * walked_right
    assert again["counters"] == right["counters"] and again["comparison"] == right["comparison"]


@pytest.mark.parametrize("order", ["<", ">"])
def test_modified_pcap_has_longer_record_headers(order, tmp_path):
    """Kuznetzov's modified pcap (magic 0xa1b2cd34): 24-byte record headers, read whole, in chunks, and in a
    second pass from the log."""
    from apbbf.capture import iter_capture, read_capture
    rng = np.random.default_rng(4)
    bodies = [rng.integers(0, 256, int(rng.integers(14, 300)), dtype=np.uint8).tobytes() for _ in range(500)]
    parts = [struct.pack(order + "IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)]
    for i, body in enumerate(bodies):
        parts.append(struct.pack(order + "IIIIIHBB", 7, i, len(body), len(body) + 4, 2, 0x0800, 0, 0) + body)
    path = tmp_path / "modified.pcap"
    path.write_bytes(b"".join(parts))
    capture = read_capture(path)
    assert len(capture) == len(bodies) and not capture.warnings
    assert [capture.data[a:a + n].tobytes() for a, n in zip(capture.offsets, capture.caplens)] == bodies
    assert capture.times.tolist() == [7_000_000_000 + 1000 * i for i in range(len(bodies))]
    assert (capture.wirelens - capture.caplens == 4).all()
    log = WalkLog()
    first = [c.caplens.tolist() for c in iter_capture(path, chunk_bytes=4096, log=log)]
    log.replay()
    again = [c.caplens.tolist() for c in iter_capture(path, chunk_bytes=4096, log=log)]
    assert sum(first, []) == sum(again, []) == [len(b) for b in bodies]
