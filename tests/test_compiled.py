"""The compiled inner loops (model/compiled.py) give the answers of the paths they replace: the pcap record walk,
the messages and their CRC-64 keys (every class, random recipes, every link type), the bulk filter (against
TimedAPBBF, the specification), and ``apbbf dedup`` end to end (against ``--engine model`` on the numpy paths,
output byte for byte); a small capture does not import numba."""

import random
import struct
import subprocess
import sys

import numpy as np
import pytest
from scapy.layers.inet import UDP
from scapy.packet import Raw

from apbbf.dedup import dedup_capture
from apbbf.model import compiled
from apbbf.model.packet import FrameBatch, KeySpec, frame_key, frame_keys, message, network_layer, record_key
from apbbf.records import walk_pcap

from .dedup_traffic import traffic
from . import test_dedup as dedup_tests
from .test_packet import LINKTYPES, _ip_packets, _link_record, _random_frame, _random_spec, eth, v4, v6
from .test_records import _buffer

pytest.importorskip("numba")

SPECS = [KeySpec.l3l4(), KeySpec.frame(), KeySpec.parse("l3:0+16/ffff,l3:20+*"),
         KeySpec.parse("ipv4=l3:0+20/ff00ffffffffffff00ff0000,l3:20+*;ipv6=l3l4")]


@pytest.fixture
def numba_on(monkeypatch):
    monkeypatch.setenv("APBBF_KERNELS", "numba")


def _in_mode(monkeypatch, mode, function, *args, **kwargs):
    monkeypatch.setenv("APBBF_KERNELS", mode)
    return function(*args, **kwargs)


def test_modes(monkeypatch):
    monkeypatch.setenv("APBBF_KERNELS", "numpy")
    assert compiled.kernels(1 << 40) is None
    monkeypatch.setenv("APBBF_KERNELS", "numba")
    assert compiled.kernels() is not None
    monkeypatch.setenv("APBBF_KERNELS", "fast")
    with pytest.raises(ValueError, match="APBBF_KERNELS"):
        compiled.kernels()


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("size", [16, 24])
def test_walk_equals_the_python_walk(big, size, monkeypatch):
    rng = np.random.default_rng(3 + big)
    order = ">" if big else "<"
    head = struct.pack(order + "IIII", 0, 0, 99, 99) + bytes(size - 16)
    for tail in (b"", b"\x00" * 7, head + b"x", struct.pack(order + "IIII", 0, 0, 1 << 20, 0) + bytes(64)):
        data, _, _ = _buffer(rng, 300, big=big, tail=tail)
        python = _in_mode(monkeypatch, "numpy", walk_pcap, data, 24, len(data), 1 << 18, big, None, size)
        fast = _in_mode(monkeypatch, "numba", walk_pcap, data, 24, len(data), 1 << 18, big, None, size)
        assert list(python[0]) == list(fast[0]) and python[1] == fast[1], f"tail {tail[:8]!r}"


def test_walk_across_its_progress_steps(monkeypatch):
    """More than 16 MiB: the compiled walk goes in steps (a progress call each) and finds every record."""
    rng = np.random.default_rng(5)
    parts, pos, starts = [bytes(24)], 24, []
    for caplen in rng.choice([60, 1514, 9014], 6000).tolist():
        parts.append(struct.pack("<IIII", 1, 2, caplen, caplen) + bytes(caplen))
        starts.append(pos)
        pos += 16 + caplen
    data = np.frombuffer(b"".join(parts), dtype=np.uint8)
    assert len(data) > 1 << 24
    calls = []
    found, stop = _in_mode(monkeypatch, "numba", walk_pcap, data, 24, len(data), 1 << 18, False, calls.append)
    assert list(found) == starts and stop == pos and len(calls) >= 2


def _edge_frames():
    """Frames at the classification's edges: every cut of tagged and untagged IPv4 and IPv6 frames up to 80
    bytes, IHLs and version nibbles around the valid ones, IPv4 total lengths and IPv6 payload lengths around the header's."""
    frames = []
    for tags in ((), (("q", 5),), (("ad", 1), ("q", 2)), (("q", 1), ("q", 2), ("q", 3))):
        p = 14 + 4 * len(tags)
        for layer in (v4() / UDP(sport=1, dport=2) / Raw(b"x" * 40), v6() / UDP() / Raw(b"y" * 30)):
            frame = eth(layer, tags=tags)
            frames += [frame[:n] for n in range(min(len(frame), 80) + 1)]
            for nibble in (version << 4 | ihl for version in (0, 4, 5, 6) for ihl in (0, 4, 5, 6, 15)):
                frames.append(frame[:p] + bytes([nibble]) + frame[p + 1:])
            for value in (0, 1, 19, 20, 21, 39, 40, 41, 60, 4000):
                field = p + (2 if frame[p] >> 4 == 4 else 4)
                frames.append(frame[:field] + value.to_bytes(2, "big") + frame[field + 2:])
    return frames


def test_keys_equal_the_reference_and_the_numpy_rows(monkeypatch):
    seed = 11
    print(f"seed {seed}")
    rng = random.Random(seed)
    frames = [_random_frame(rng) for _ in range(400)] + _edge_frames()
    batch = FrameBatch.from_frames(frames)
    for spec in SPECS + [_random_spec(rng) for _ in range(2)]:
        keys, texts, rows = _in_mode(monkeypatch, "numba", frame_keys, batch, spec, messages=True,
                                     message_rows=True)
        slow_keys, slow_rows = _in_mode(monkeypatch, "numpy", frame_keys, batch, spec, message_rows=True)
        assert np.array_equal(keys, slow_keys), f"seed {seed}, {spec}"
        assert np.array_equal(rows.rows, slow_rows.rows) and np.array_equal(rows.first, slow_rows.first)
        for i, frame in enumerate(frames):
            assert texts[i] == message(frame, spec), f"seed {seed}, {spec}, frame {i}: {frame.hex()}"
            assert int(keys[i]) == frame_key(frame, spec), f"seed {seed}, {spec}, frame {i}: {frame.hex()}"


def test_keys_of_every_link_type(numba_on):
    seed = 12
    print(f"seed {seed}")
    rng = random.Random(seed)
    for linktype in LINKTYPES + (228, 229):
        records = []
        for _ in range(40):
            packet = _ip_packets(rng, 1)[0]
            record = _link_record(101 if linktype in (228, 229) else linktype, packet, rng)
            if rng.random() < 0.2:
                record = record[:rng.randrange(len(record) + 1)]
            records.append(record)
        for spec in SPECS[:3]:
            view, ethertypes = network_layer(FrameBatch.from_frames(records), linktype)
            keys = frame_keys(view, spec, ethertypes=ethertypes)
            for i, record in enumerate(records):
                assert int(keys[i]) == record_key(record, spec, linktype), \
                    f"seed {seed}, link type {linktype}, {spec}, record {i}: {record.hex()}"


@pytest.mark.parametrize("name", ["k2l3", "apbf-k1", "k3l15", "k4l2-b8", "rows-k3l4", "rows-apbf"])
@pytest.mark.parametrize("gaps, burst", [(0.02, 0.0), (0.01, 0.9)], ids=["gaps", "bursts"])
def test_filter_equals_timed_apbbf(name, gaps, burst, numba_on):
    """test_dedup's bulk filter against TimedAPBBF (calls cut anywhere, gaps that restart, bursts that overflow)
    on the compiled loop, for the Configs whose blocks are machine words."""
    dedup_tests.test_bulk_filter_equals_timed_apbbf(name, gaps, burst)


@pytest.mark.parametrize("name", ["k2l3", "k4l2-b8", "apbf-k1"])
@pytest.mark.parametrize("run", [1, 2])
def test_filter_at_generation_boundaries(name, run, numba_on):
    """Runs of one key at one time, so that the filter shifts by count inside them (a query that sees other
    segments than its inserts)."""
    dedup_tests.test_bulk_filter_at_generation_boundaries(name, run)


def test_filter_in_small_blocks(numba_on, monkeypatch):
    """The compiled schedule's state carried across calls of a few hundred commands."""
    dedup_tests.test_bulk_filter_in_small_blocks("k4l2-b8", monkeypatch)


def test_filter_one_command_at_a_time(numba_on):
    dedup_tests.test_bulk_filter_one_command_at_a_time()


def test_filter_across_window_changes(numba_on):
    """The compiled schedule takes the span and expiries that a change of window leaves."""
    from . import test_window_change
    test_window_change.test_paths_agree_across_changes((1, 2000, 77))


@pytest.mark.parametrize("coarse", [False, True])
def test_exact_window_equals_the_dictionary(coarse, numba_on):
    """test_dedup's exact answer in arrays against the dictionary of bytes, with the carried messages and each
    call's compared where they lie (the compiled comparison), in one call and in calls of a few messages."""
    dedup_tests.test_bulk_exact_window_equals_the_dictionary(coarse)


def _capture(path, linktype, count=4000, seed=41):
    import dpkt
    from decimal import Decimal
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535, linktype=linktype, nano=True)
        for t, frame, _ in traffic(count, seed, rate=5e5, duplicates=0.3, window=200_000):
            if linktype != 1:
                layer = Ether(frame)
                while layer is not None and not isinstance(layer, (IP, IPv6)):
                    layer = layer.payload if layer.payload else None
                if layer is None:
                    continue
                frame = _link_record(linktype, layer)
            writer.writepkt_time(frame, Decimal(t) / Decimal(10 ** 9))
    return path


@pytest.mark.parametrize("linktype, key", [(1, "l3l4"), (1, "frame"), (276, "l3l4"), (1, "l3:0+16/ffff,l3:20+*")])
def test_dedup_equals_the_model_engine(linktype, key, tmp_path, monkeypatch):
    """apbbf dedup with the compiled loops (and small chunks, so that the filter runs across many calls) against
    --engine model on the numpy paths: the same report (but for the engine and the times) and the same output."""
    path = _capture(tmp_path / "in.pcap", linktype, count=4000 if linktype == 1 else 1500)
    args = dict(window=200_000, key=key, seed=0x5eed, chunk_bytes=1 << 16)
    fast = _in_mode(monkeypatch, "numba", dedup_capture, [path], output=tmp_path / "fast.pcap", **args)
    model = _in_mode(monkeypatch, "numpy", dedup_capture, [path], output=tmp_path / "model.pcap", engine="model",
                     **args)
    for report in (fast, model):
        report.pop("seconds")
        report["filter"].pop("engine")
        report["output"].pop("path")
    assert fast["counters"]["duplicates"] > 100
    assert fast == model
    assert (tmp_path / "fast.pcap").read_bytes() == (tmp_path / "model.pcap").read_bytes()


def _pcapng(linktype, rng, little_first=True, count=60):
    """A pcapng of ``linktype``: two sections (both byte orders, first ``little_first``), two interfaces each
    (microseconds, nanoseconds), enhanced packet blocks (some with epb_flags and a comment), obsolete packet
    blocks, and blocks of other kinds between them (a name resolution and an interface statistics block)."""
    import dpkt
    P = dpkt.pcapng
    parts, frames = [], []
    for little in (little_first, not little_first):
        O = P.PcapngOptionLE if little else P.PcapngOption
        e = "<" if little else ">"
        parts.append(bytes(P.SectionHeaderBlockLE() if little else P.SectionHeaderBlock()))
        IDB = P.InterfaceDescriptionBlockLE if little else P.InterfaceDescriptionBlock
        for resolution in (b"\x06", b"\x09"):
            parts.append(bytes(IDB(linktype=linktype, snaplen=65535,
                                   opts=[O(code=P.PCAPNG_OPT_IF_TSRESOL, data=resolution),
                                         O(code=P.PCAPNG_OPT_ENDOFOPT)])))
        EPB = P.EnhancedPacketBlockLE if little else P.EnhancedPacketBlock
        PB = P.PacketBlockLE if little else P.PacketBlock
        for i, packet in enumerate(_ip_packets(rng, count)):
            record = _link_record(linktype, packet, rng)
            frames.append(record)
            t = 1_700_000_000_000_000 + 1000 * len(frames)
            roll = rng.random()
            if roll < 0.1:
                parts.append(bytes(PB(iface_id=1, drops_count=0, ts_high=t >> 32, ts_low=t & 0xFFFFFFFF,
                                      pkt_data=record)))
            else:
                opts = [] if roll < 0.7 else [O(code=2, data=struct.pack(e + "I", (4 << 5) | (rng.random() < 0.5) << 24)),
                                               O(code=1, data=b"a comment"), O(code=P.PCAPNG_OPT_ENDOFOPT)]
                parts.append(bytes(EPB(iface_id=i % 2, ts_high=t >> 32, ts_low=t & 0xFFFFFFFF, pkt_data=record,
                                       opts=opts)))
            if i % 25 == 7:
                kind = 4 if i % 2 else 5                         # name resolution, interface statistics
                body = bytes(8)
                parts.append(struct.pack(e + "II", kind, 12 + len(body)) + body + struct.pack(e + "I", 12 + len(body)))
    return b"".join(parts), frames


_CAPTURE_FIELDS = ("offsets", "caplens", "wirelens", "times", "fcs", "errored", "blocks", "big_endian", "linktypes")


@pytest.mark.parametrize("linktype", LINKTYPES)
def test_pcapng_walk_equals_the_python_walk(linktype, tmp_path, monkeypatch):
    """Every link type in pcapng: the compiled walk over the packet blocks reads the same Capture as the Python
    walk, and stops where it does at a corrupt block and at a block cut short."""
    from apbbf.capture import CorruptCapture, read_capture
    seed = 60 + linktype
    rng = random.Random(seed)
    data, frames = _pcapng(linktype, rng, little_first=bool(linktype % 2))
    path = tmp_path / "in.pcapng"
    path.write_bytes(data)
    python = _in_mode(monkeypatch, "numpy", read_capture, path)
    fast = _in_mode(monkeypatch, "numba", read_capture, path)
    assert len(fast) == len(frames), f"seed {seed}"
    for name in _CAPTURE_FIELDS:
        assert np.array_equal(getattr(python, name), getattr(fast, name)), f"seed {seed}: {name}"
    assert [fast.data[o:o + n].tobytes() for o, n in zip(fast.offsets, fast.caplens)] == frames
    # a block cut short at the end, and a block whose length is not one in the middle
    stop = int(fast.blocks[-5, 0])
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[:stop + 20])
    python, fast = (_in_mode(monkeypatch, mode, read_capture, cut) for mode in ("numpy", "numba"))
    assert len(fast) == len(python) > 0 and fast.warnings == python.warnings and fast.warnings
    bad = bytearray(data)
    struct.pack_into("<I" if linktype % 2 else ">I", bad, int(python.blocks[9, 0]) + 4, 13)
    (tmp_path / "bad.pcapng").write_bytes(bytes(bad))
    errors = []
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("APBBF_KERNELS", mode)
        with pytest.raises((CorruptCapture, ValueError)) as error:
            read_capture(tmp_path / "bad.pcapng")
        errors.append(str(error.value))
    assert errors[0] == errors[1] and "byte" in errors[0]


def test_a_small_capture_does_not_import_numba(tmp_path):
    path = _capture(tmp_path / "small.pcap", 1, count=200)
    code = ("import sys\nfrom apbbf.dedup import dedup_capture\n"
            f"dedup_capture([{str(path)!r}], window=200_000, seed=1)\n"
            "assert 'numba' not in sys.modules, 'numba imported'\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "APBBF_KERNELS"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
