# amaranth: UnusedElaboratable=no
"""Captures as users have them (apbbf/capture.py, through ``apbbf dedup``): every link type that carries IP, a
``tcpdump -i any`` capture with each packet on two interfaces, pipes, rings of files, compressed files, time going
backwards, the sizing options (--rate, --config, --seed), and the errors (exit status 2, nothing written)."""

import gzip
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import dpkt
import numpy as np
import pytest
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import CookedLinuxV2, Ether
from scapy.utils import PcapNgWriter

from apbbf import cli
from apbbf.capture import read_capture, read_captures
from apbbf.dedup import parse_config

from .dedup_traffic import traffic
from .test_packet import _link_record

SEED = 31
WINDOW = "200us"
#: One filter for every run that must make the same decisions (the seed fixed).
CONFIG = "Config(k=3, l=6, block_bits=64, block_hashes=4, segment_blocks=64, seed=0x5eed, span=200, time_width=32, " \
         "extra_segments=3)"
SCRIPT = Path(sys.executable).parent / "apbbf"


@pytest.fixture(scope="module")
def packets():
    """(time_ns, IP packet) of generated traffic with copies (TTL, DSCP, VLAN changes and exact copies), IP only
    (every link type below carries it), times made distinct so that output records can be told apart."""
    items, last = [], -1
    for t, frame, _ in traffic(1200, SEED, rate=5e5, duplicates=0.3, window=200_000):
        layer = Ether(frame)
        while layer is not None and not isinstance(layer, (IP, IPv6)):
            layer = layer.payload if layer.payload else None
        if layer is None:
            continue
        t = max(t, last + 1)
        items.append((t, layer.copy()))
        last = t
    return items


def _write(path, records, linktype, *, ng=False):
    """Records (time_ns, bytes) as a nanosecond pcap (dpkt) or a microsecond pcapng (scapy) of ``linktype``."""
    if ng:
        with PcapNgWriter(str(path)) as writer:
            for t, data in records:
                writer.write(_ng_packet(data, t, linktype))
        return path
    # dpkt's writer: scapy's takes link type 0 (NULL) for "the first packet's"
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535, linktype=linktype, nano=True)
        for t, data in records:
            writer.writepkt_time(data, Decimal(t) / Decimal(10 ** 9))
    return path


def _ng_packet(data, t, linktype):
    from scapy.config import conf
    packet = conf.l2types.num2layer[linktype](data)
    packet.time = Decimal(t) / Decimal(10 ** 9)
    return packet


def _run(capsys, *args, code=None):
    """``apbbf dedup ARGS --json --quiet`` in this process (the hash seed fixed, unless given): (exit status,
    report)."""
    args = list(map(str, args))
    if "--seed" not in args and "--config" not in args:
        args += ["--seed", str(SEED)]                  # reproducible: the hash seed fixed
    capsys.readouterr()
    status = cli.main(["dedup", *args, "--json", "--quiet"])
    captured = capsys.readouterr()
    assert captured.out.startswith("{"), captured.err
    return status, json.loads(captured.out)


def _refused(capsys, *args, words=()):
    """``apbbf dedup ARGS`` must exit with status 2, name ``words`` on stderr and write nothing."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["dedup", *map(str, args), "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err, err
    return err


def _kept_times(path):
    capture = read_capture(path)
    return capture.times.tolist()


LINKTYPES = {"ethernet": 1, "sll": 113, "sll2": 276, "null": 0, "loop": 108, "raw": 101, "ppp": 9}


def test_every_link_type_makes_the_same_decisions(packets, tmp_path, capsys):
    """The same traffic as Ethernet, SLL, SLL2, NULL, LOOP, RAW, PPP, IPV4 and IPV6 captures: l3l4 gives the same
    keys, so the same duplicates, the same exact answer and the same frames kept."""
    print(f"seed {SEED}")
    results = {}
    for name, linktype in LINKTYPES.items():
        path = _write(tmp_path / f"{name}.pcap", [(t, _link_record(linktype, p)) for t, p in packets], linktype)
        status, report = _run(capsys, path, "--config", CONFIG, "--tick", "1us", "-o", tmp_path / f"{name}.out")
        assert status == 0 and report["capture"]["linktype"] == linktype
        results[name] = (report["counters"], report["exact"], report["comparison"],
                         _kept_times(tmp_path / f"{name}.out"))
    v4 = [(t, p) for t, p in packets if p.version == 4]
    v6 = [(t, p) for t, p in packets if p.version == 6]
    for version, chosen, linktype in ((4, v4, 228), (6, v6, 229)):
        eth = _write(tmp_path / f"eth{version}.pcap", [(t, _link_record(1, p)) for t, p in chosen], 1)
        raw = _write(tmp_path / f"ip{version}.pcap", [(t, bytes(p)) for t, p in chosen], linktype)
        _, a = _run(capsys, eth, "--config", CONFIG, "-o", tmp_path / "a.out")
        _, b = _run(capsys, raw, "--config", CONFIG, "-o", tmp_path / "b.out")
        assert a["counters"] == b["counters"] and a["exact"] == b["exact"], f"IPv{version}"
        assert _kept_times(tmp_path / "a.out") == _kept_times(tmp_path / "b.out")
    ethernet = results.pop("ethernet")
    assert ethernet[0]["duplicates"] > 100 and ethernet[1]["duplicates"] > 100, f"seed {SEED}"
    assert ethernet[2]["duplicates_missed"] == 0
    for name, result in results.items():
        assert result == ethernet, f"seed {SEED}: {name}"


def test_any_interface_capture_keeps_one_copy(packets, tmp_path, capsys):
    """A ``tcpdump -i any`` capture (LINUX_SLL2) where every packet shows on two interfaces (bond0 and eth0, a
    few microseconds apart, different cooked headers): one copy of each is kept, under frame and l3l4."""
    records = []
    for t, packet in packets[:300]:
        records.append((t, bytes(CookedLinuxV2(proto=0x0800 if packet.version == 4 else 0x86DD, ifindex=5, pkttype=4,
                                               lladdrtype=1, lladdrlen=6, src=b"\x02\0\0\0\0\5") / packet)))
        records.append((t + 3000, bytes(CookedLinuxV2(proto=0x0800 if packet.version == 4 else 0x86DD, ifindex=2,
                                                      pkttype=4, lladdrtype=1, lladdrlen=6,
                                                      src=b"\x02\0\0\0\0\2") / packet)))
    records.sort(key=lambda r: r[0])
    assert records[0][1] != records[1][1]                              # editcap keeps both
    path = _write(tmp_path / "any.pcap", records, 276)
    for key in ("frame", "l3l4"):
        status, report = _run(capsys, path, "--key", key, "--window", "1ms", "-o", tmp_path / "one.pcap")
        assert status == 0
        expected = {bytes(p) for _, p in packets[:300]}
        if key == "frame":
            # every packet once (originals and their unchanged copies in the traffic are one packet too)
            kept = [r[20:] for r in _records(tmp_path / "one.pcap")]
            assert set(kept) == expected and len(kept) == len(set(kept))
        assert report["comparison"]["duplicates_missed"] == 0
        assert report["counters"]["dropped"] >= 300


def _records(path):
    capture = read_capture(path)
    return [capture.data[o:o + n].tobytes() for o, n in zip(capture.offsets, capture.caplens)]


def test_pipe(packets, tmp_path):
    """``cat capture | apbbf dedup - -o - --config ...`` writes what the run on the file writes; the report goes
    to standard error. Without a size, a pipe is refused: exit status 2, nothing on standard output."""
    path = _write(tmp_path / "in.pcap", [(t, _link_record(1, p)) for t, p in packets], 1)
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    on_file = subprocess.run([str(SCRIPT), "dedup", str(path), "--config", CONFIG, "-q", "-o",
                              str(tmp_path / "file.out")], capture_output=True, timeout=600, env=env)
    assert on_file.returncode == 0, on_file.stderr
    piped = subprocess.run([str(SCRIPT), "dedup", "-", "--config", CONFIG, "-q", "-o", "-", "--json"],
                           input=path.read_bytes(), capture_output=True, timeout=600, env=env)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == (tmp_path / "file.out").read_bytes()
    report = json.loads(piped.stderr)
    assert report["capture"]["sources"] == ["stdin"] and report["filter"]["planned_from"] == "config"
    rated = subprocess.run([str(SCRIPT), "dedup", "-", "--rate", "2M", "--seed", "7", "-q", "-o", "-"],
                           input=path.read_bytes(), capture_output=True, timeout=600, env=env)
    assert rated.returncode == 0 and rated.stdout[:4] == path.read_bytes()[:4]
    assert "(--rate)" in rated.stderr.decode()
    unsized = subprocess.run([str(SCRIPT), "dedup", "-", "-q", "-o", "-"], input=path.read_bytes(),
                             capture_output=True, timeout=600, env=env)
    assert unsized.returncode == 2 and unsized.stdout == b""
    assert b"--rate" in unsized.stderr and b"--config" in unsized.stderr


def test_ring_of_files_is_one_stream(packets, tmp_path, capsys):
    """Three files (as tcpdump -C/-W writes them) are one stream: the window carries across them (copies of a
    frame in the file before are found) and the one output equals the run on the whole capture's."""
    records = [(t, _link_record(1, p)) for t, p in packets]
    whole = _write(tmp_path / "whole.pcap", records, 1)
    third = len(records) // 3
    parts = [_write(tmp_path / f"ring{i}.pcap", records[i * third:(i + 1) * third if i < 2 else None], 1)
             for i in range(3)]
    _, one = _run(capsys, whole, "--config", CONFIG, "-o", tmp_path / "whole.out")
    _, ring = _run(capsys, *parts, "--config", CONFIG, "-o", tmp_path / "ring.out")
    assert ring["capture"]["files"] == 3
    assert ring["counters"] == one["counters"] and ring["exact"] == one["exact"]
    assert (tmp_path / "ring.out").read_bytes() == (tmp_path / "whole.out").read_bytes()
    _, alone = _run(capsys, parts[1], "--config", CONFIG)
    _, first = _run(capsys, parts[0], "--config", CONFIG)
    assert ring["exact"]["duplicates"] > first["exact"]["duplicates"] + alone["exact"]["duplicates"] - 1, \
        "copies across the files' boundaries are found"
    # pcapng files are written one section after another
    ng = [_write(tmp_path / f"ring{i}.pcapng", records[i * third:(i + 1) * third], 1, ng=True) for i in range(2)]
    _, report = _run(capsys, *ng, "--config", CONFIG, "--action", "mark", "-o", tmp_path / "ring.pcapng")
    assert len(_records(tmp_path / "ring.pcapng")) == 2 * third
    assert report["counters"]["duplicates"] > 0


def test_compressed_in_and_out(packets, tmp_path, capsys):
    """gzip (and zstd, lz4) captures are read by their magic whatever their name; an output ending .gz, .zst or
    .lz4 is compressed; the frames are those of the plain run."""
    import lz4.frame
    import zstandard
    path = _write(tmp_path / "in.pcap", [(t, _link_record(1, p)) for t, p in packets], 1)
    _, plain = _run(capsys, path, "--config", CONFIG, "-o", tmp_path / "plain.out")
    expected = (tmp_path / "plain.out").read_bytes()
    data = path.read_bytes()
    (tmp_path / "in.pcap.gz").write_bytes(gzip.compress(data))
    (tmp_path / "in.pcap.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    (tmp_path / "in.lz4").write_bytes(lz4.frame.compress(data))
    (tmp_path / "gzipped-without-suffix").write_bytes(gzip.compress(data))
    for name, source, out, unpack in (
            ("in.pcap.gz", "gzip", "out.pcap.gz", gzip.decompress),
            ("gzipped-without-suffix", "gzip", "out.pcap", bytes),
            ("in.pcap.zst", "zstd", "out.pcap.zst",
             lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b)),
            ("in.lz4", "lz4", "out.lz4", lz4.frame.decompress)):
        status, report = _run(capsys, tmp_path / name, "--config", CONFIG, "-o", tmp_path / out)
        assert status == 0 and report["capture"]["sources"] == [source]
        assert report["counters"] == plain["counters"]
        assert unpack((tmp_path / out).read_bytes()) == expected, name
    (tmp_path / "broken.gz").write_bytes(gzip.compress(data)[:1000])
    _refused(capsys, tmp_path / "broken.gz", "-o", tmp_path / "no.pcap", words=["compressed stream is damaged"])
    assert not (tmp_path / "no.pcap").exists()


def test_time_going_backwards(packets, tmp_path, capsys):
    """A record stamped earlier than one before it is taken as arriving at the latest time: counted, with the
    largest step back, and its copy 150 us after the latest time is within a 200 us window."""
    (_, a), (_, b) = packets[0], packets[1]
    records = [(10_000_000, _link_record(1, a)), (10_500_000, _link_record(1, b)),
               (9_900_000, _link_record(1, b)), (10_650_000, _link_record(1, a))]
    path = _write(tmp_path / "back.pcap", records, 1)
    status, report = _run(capsys, path, "--config", CONFIG)
    assert status == 0
    assert report["capture"]["reordered_timestamps"] == 1
    assert report["capture"]["largest_step_back_ns"] == 600_000
    # b again at (taken) 10.5 ms: a copy; a again 650 us after the first a: not within the window
    assert report["counters"]["duplicates"] == report["exact"]["duplicates"] == 1
    assert cli.main(["dedup", str(path), "--config", CONFIG, "--quiet"]) == 0
    assert "earlier than one before them (by up to 600 us" in capsys.readouterr().out


def test_seed_config_and_the_export_command(packets, tmp_path, capsys):
    """--seed is taken and printed in the Config; the printed Config, and an exported core's Verilog header, give
    the same filter back; the printed export command builds that Config."""
    import argparse

    from apbbf.export import add_parser as export_parser
    from apbbf.hdl.export.axis_dedup import AXIStreamPacketDedup
    from apbbf.hdl.export.verilog import dedup_header
    from apbbf.model import Config
    from apbbf.model.packet import KeySpec

    path = _write(tmp_path / "in.pcap", [(t, _link_record(1, p)) for t, p in packets], 1)
    _, sized = _run(capsys, path, "--window", WINDOW, "--seed", "0x1234abcd")
    f = sized["filter"]
    assert f["seed"] == 0x1234ABCD and f["planned_from"] == "capture"
    config = Config(f["k"], f["l"], block_bits=f["block_bits"], block_hashes=f["block_hashes"],
                    segment_blocks=f["segment_blocks"], seed=f["seed"], span=f["span"], time_width=f["time_width"],
                    extra_segments=f["extra_segments"])
    assert cli.main(["dedup", str(path), "--window", WINDOW, "--seed", "0x1234abcd", "--quiet"]) == 0
    text = capsys.readouterr().out
    printed = next(line for line in text.splitlines() if line.startswith("config"))[9:].split(":")[0]
    assert "seed=0x1234abcd" in printed and parse_config(printed) == config
    # the export command, parsed by apbbf export's own parser, builds the same Config
    command = next(line for line in text.splitlines() if line.startswith("export"))[9:]
    parser = argparse.ArgumentParser()
    export_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(command.split()[1:])
    assert args.dedup and args.key == "l3l4" and args.action == "drop" and args.max_frame == 9600
    assert Config(args.k, args.l, block_bits=args.block_bits, block_hashes=args.block_hashes,
                  segment_blocks=args.segment_blocks, key_width=args.key_width, seed=args.seed, span=args.span,
                  time_width=args.time_width, extra_segments=args.extra_segments) == config
    # the same decisions from the printed Config, and from an exported core's header
    _, again = _run(capsys, path, "--config", printed)
    assert again["counters"] == sized["counters"] and again["window"] == sized["window"]
    header = tmp_path / "core.v"
    header.write_text(dedup_header(AXIStreamPacketDedup(config, KeySpec.l3l4(), data_width=64, max_frame=1518))
                      + "module apbbf_dedup_axis(k=1);\n")
    assert parse_config(str(header)) == config
    facts = header.read_text()                              # the time window's facts, as the bare core's header
    assert "time window (apbbf.model.timeanalysis.time_window_facts; a key is a frame's key" in facts
    assert f"the count floor: extra_segments = {config.extra_segments} >= l - 1" in facts.replace("\n//     ", " ")
    _, from_core = _run(capsys, path, "--config", header)
    assert from_core["counters"] == sized["counters"]
    # a Config without a seed takes --seed, or draws one
    bare = printed.replace("seed=0x1234abcd, ", "")
    assert parse_config(bare, 0x99).seed == 0x99


def test_max_frame_option(packets, tmp_path, capsys):
    """--max-frame and --data-width: with drop, longer frames pass unchecked, counted, not inserted."""
    path = _write(tmp_path / "in.pcap", [(t, _link_record(1, p)) for t, p in packets], 1)
    _, report = _run(capsys, path, "--config", CONFIG, "--max-frame", "1000", "--data-width", "64")
    lengths = [len(_link_record(1, p)) for _, p in packets]
    oversize = sum(n > 1008 for n in lengths)
    assert report["datapath"]["oversize"] == report["counters"]["unchecked"] == oversize > 10
    assert report["exact"]["checked"] == len(packets) - oversize
    assert report["comparison"]["duplicates_missed"] == 0
    _, marked = _run(capsys, path, "--config", CONFIG, "--max-frame", "1000", "--action", "count")
    assert marked["counters"]["unchecked"] == 0


def test_bad_input_is_refused(packets, tmp_path, capsys):
    """Exit status 2, a message naming what to do, and no output file."""
    eth = _write(tmp_path / "eth.pcap", [(t, _link_record(1, p)) for t, p in packets[:50]], 1)
    sll = _write(tmp_path / "sll.pcap", [(t, _link_record(113, p)) for t, p in packets[:50]], 113)
    ng = _write(tmp_path / "eth.pcapng", [(t, _link_record(1, p)) for t, p in packets[:50]], 1, ng=True)
    out = tmp_path / "out.pcap"
    cases = [
        ([eth, sll], ["link type 1 (ETHERNET)", "113 (LINUX_SLL)", "different link types"]),
        ([eth, ng], ["pcapng", "one output holds one format"]),
        ([sll, "--key", "frame:0+12,l3:0+*"], ["frame:0+12", "113 (LINUX_SLL)", "l3 ranges"]),
        ([eth, "--config", "Config(k=3)"], ["missing l, span", "--config"]),
        ([eth, "--config", CONFIG, "--seed", "5"], ["--seed 0x5", "differ"]),
        ([eth, "--config", CONFIG, "--window", "1ms"], ["span is 200"]),
        ([eth, "--config", CONFIG, "--rate", "1M"], ["--rate or --config"]),
        ([eth, "--rate", "fast"], ["--rate must be a positive number"]),
        ([eth, "--seed", "-1"], ["--seed must be"]),
        ([eth, "--max-frame", "10"], ["max_frame"]),
        # a datapath the printed export command could not build: the gateware's least max_frame for l3l4
        ([eth, "--max-frame", "280", "--data-width", "64"], ["max_frame must be more than 280 bytes",
                                                             "apbbf export --dedup could not build"]),
    ]
    for args, words in cases:
        _refused(capsys, *args, "-o", out, words=words)
        assert not out.exists(), args
    _refused(capsys, eth, "-o", eth, words=["is one of the captures"])
    assert read_captures([eth])[0].linktype == 1


@pytest.mark.parametrize("kind", ["pcap", "pcapng-2-sections", "pcap.gz"])
def test_stream_in_small_chunks(kind, packets, tmp_path, monkeypatch, capsysbinary):
    """Standard input read as it arrives, in chunks that cut records anywhere (pcap, pcapng with two sections,
    gzip): the same decisions and the same output bytes as the run on the file; every record and header once."""
    import io

    import apbbf.capture
    records = [(t, _link_record(1, p)) for t, p in packets]
    if kind.startswith("pcapng"):
        half = len(records) // 2
        data = b"".join(_write(tmp_path / f"s{i}.pcapng", part, 1, ng=True).read_bytes()
                        for i, part in enumerate((records[:half], records[half:])))
    else:
        data = _write(tmp_path / "s.pcap", records, 1).read_bytes()
    path = tmp_path / "whole"
    path.write_bytes(data)
    assert cli.main(["dedup", str(path), "--config", CONFIG, "-q", "--json", "-o", str(tmp_path / "file.out")]) == 0
    on_file = json.loads(capsysbinary.readouterr().out)
    if kind.endswith(".gz"):
        data = gzip.compress(data)
    monkeypatch.setattr(apbbf.capture, "STREAM_CHUNK", 997)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert cli.main(["dedup", "-", "--config", CONFIG, "-q", "--json", "-o", "-"]) == 0
    captured = capsysbinary.readouterr()
    piped = json.loads(captured.err)
    assert captured.out == (tmp_path / "file.out").read_bytes()
    for part in ("counters", "exact", "comparison"):
        assert piped[part] == on_file[part], part
    assert piped["capture"]["frames"] == len(records) and piped["capture"]["files"] == 1
    # the chunks themselves: every record once, in order
    for size in (501, 30):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        chunks = list(apbbf.capture.iter_capture("-", chunk_bytes=size))
        assert len(chunks) > 20
        times = [t for chunk in chunks for t in chunk.times.tolist()]
        assert times == read_capture(path).times.tolist()
        out = io.BytesIO()
        for chunk in chunks:
            apbbf.capture.write_chunk(out, chunk, np.ones(len(chunk), dtype=bool))
        assert out.getvalue() == path.read_bytes(), size


def test_other_link_types_work_with_frame(tmp_path, capsys):
    """802.11 with radiotap (127): --key frame compares every byte of each record, as editcap does; l3l4 is
    refused with what works instead."""
    import random
    rng = random.Random(5)
    bodies = [rng.randbytes(rng.randrange(30, 300)) for _ in range(40)]
    records = [(1_000_000 + 10_000 * i, bodies[i % 25]) for i in range(60)]       # 35 copies, 10 ms apart at most
    path = _write(tmp_path / "wlan.pcap", records, 127)
    status, report = _run(capsys, path, "--key", "frame", "--window", "1s", "-o", tmp_path / "out.pcap")
    assert status == 0 and report["capture"]["linktype_name"] == "127 (IEEE802_11_RADIOTAP)"
    assert report["exact"]["duplicates"] == report["counters"]["dropped"] == 35
    assert _records(tmp_path / "out.pcap") == bodies[:25]
    _refused(capsys, path, "-o", tmp_path / "no.pcap", words=["key l3l4", "127 (IEEE802_11_RADIOTAP)", "--key frame"])
    assert not (tmp_path / "no.pcap").exists()
