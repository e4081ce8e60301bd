# amaranth: UnusedElaboratable=no
"""``apbbf dedup`` in chunks (apbbf/capture.py's ``iter_captures``, apbbf/dedup.py): the bulk engine against the
golden per-frame model on every link type, key recipe and action, and on a pcapng with ``epb_flags`` (kept in the
output); answers that do not depend on where the chunks end; a corrupt record in the middle of a capture (in a
later chunk, down a pipe); a pipe that closes early (pcap and pcapng)."""

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from apbbf import cli
from apbbf.capture import CorruptCapture, read_capture
from apbbf.dedup import dedup_capture

from .test_capture import CONFIG, _records, _write, packets  # noqa: F401  (the fixture)
from .test_packet import _link_record

SCRIPT = Path(sys.executable).parent / "apbbf"
#: A recipe of several ranges, masks and both bases (a copy re-tagged or routed once more is a duplicate).
RANGES = "ipv4=frame:0+12,l3:0+1,l3:2+6,l3:9+1,l3:12+*;ipv6=frame:0+12,l3:0+*/f00fffffffffff00;other=frame"
LINKTYPES = (1, 113, 276, 0, 108, 101, 228, 229, 9, 50)


@pytest.fixture(scope="module")
def few(packets):
    """The first 300 packets of test_capture's traffic (with copies): short enough for the per-frame model."""
    return packets[:300]


def _same(a: dict, b: dict) -> None:
    """Two reports that must agree on every decision (not on their timings or engine)."""
    for part in ("counters", "exact", "comparison"):
        assert a[part] == b[part], part
    assert (a["output"] or {}).get("frames") == (b["output"] or {}).get("frames")
    for name in ("shifts", "overflows", "restarts"):
        assert a["filter"][name] == b["filter"][name], name


@pytest.mark.parametrize("linktype", LINKTYPES)
def test_bulk_equals_the_model_on_every_link_type_key_and_action(linktype, few, tmp_path):
    """``--engine bulk`` (the default) makes the golden model's (``--engine model``, TimedAPBBF per command)
    decisions on every link type that carries IP, for the presets and a recipe of several ranges (frame ranges
    only where the link type has an Ethernet header), with each action: the same counters, comparison and
    output bytes."""
    if linktype in (228, 229):                            # one IP version per link type
        few = [(t, p) for t, p in few if (p.version == 4) == (linktype == 228)]
    keys = ["l3l4", "frame"] + ([RANGES, "frame:0+12,frame:14+*"] if linktype == 1 else ["l3:12+8,l3:20+4"])
    pcap = _write(tmp_path / "in.pcap", [(t, _link_record(linktype, p)) for t, p in few], linktype)
    pcapng = _write(tmp_path / "in.pcapng", [(t, _link_record(linktype, p)) for t, p in few], linktype, ng=True)
    runs = [(key, "drop", pcap) for key in keys] + [(keys[0], "count", pcap), (keys[0], "mark", pcapng)]
    for key, action, path in runs:
        reports = {}
        for engine in ("model", "bulk"):
            out = tmp_path / f"{engine}{path.suffix}"
            reports[engine] = dedup_capture(path, window=200_000, key=key, action=action, engine=engine, seed=5,
                                            output=out)
        _same(reports["model"], reports["bulk"])
        assert (tmp_path / f"model{path.suffix}").read_bytes() == (tmp_path / f"bulk{path.suffix}").read_bytes(), \
            (key, action)
        assert reports["bulk"]["counters"]["duplicates"] > 5, (key, action)


@pytest.mark.parametrize("ng", [False, True])
def test_chunks_change_no_answer(ng, packets, tmp_path):
    """Read 200 bytes at a time (every chunk a record or two, each repeating the headers), a capture gives the
    report and the output of one big chunk, sized from its own peak or by a --config; several files too."""
    records = [(t, _link_record(1, p)) for t, p in packets[:600]]
    suffix = ".pcapng" if ng else ".pcap"
    third = len(records) // 3
    parts = [_write(tmp_path / f"part{i}{suffix}", records[i * third:(i + 1) * third], 1, ng=ng) for i in range(3)]
    action = "mark" if ng else "drop"
    for sizing in ({"seed": 3}, {"config": _config()}):
        big = dedup_capture(parts, window=200_000, action=action, output=tmp_path / f"big{suffix}", **sizing)
        tiny = dedup_capture(parts, window=200_000, action=action, output=tmp_path / f"tiny{suffix}",
                             chunk_bytes=200, **sizing)
        _same(big, tiny)
        assert big["filter"] == tiny["filter"] and big["capture"] == tiny["capture"]
        assert (tmp_path / f"big{suffix}").read_bytes() == (tmp_path / f"tiny{suffix}").read_bytes()
        assert big["counters"]["duplicates"] > 30


def _config():
    from apbbf.dedup import parse_config
    return parse_config(CONFIG)


def _flagged_pcapng(path, records, rng, *, little):
    """``records`` (time_ns, frame) as a nanosecond pcapng of one section (dpkt's blocks, byte order ``little``)
    whose enhanced packet blocks carry ``epb_flags`` of every kind, the options in varied order: direction and
    reception type, an FCS length of 4 (the frame then ends in a 4-byte FCS), the CRC or another link-layer error
    bit; some with a comment before or after the flags, some with no options. Returns each packet's flags (0:
    none)."""
    import dpkt
    P = dpkt.pcapng
    O = P.PcapngOptionLE if little else P.PcapngOption
    e = "<" if little else ">"
    shb = P.SectionHeaderBlockLE() if little else P.SectionHeaderBlock()
    idb = (P.InterfaceDescriptionBlockLE if little else P.InterfaceDescriptionBlock)(
        snaplen=65535, opts=[O(code=P.PCAPNG_OPT_IF_TSRESOL, data=b"\x09"), O(code=P.PCAPNG_OPT_ENDOFOPT)])
    EPB = P.EnhancedPacketBlockLE if little else P.EnhancedPacketBlock
    parts, written = [bytes(shb), bytes(idb)], []
    for i, (t, frame) in enumerate(records):
        flags, opts = 0, []
        if rng.random() < 0.8:
            fcs = rng.random() < 0.3
            flags = rng.randrange(3) | rng.randrange(5) << 2 | (4 << 5 if fcs else 0)
            if rng.random() < 0.15:
                flags |= 1 << rng.choice((24, 24, 25, 31))               # CRC error mostly, too long, symbol
            frame = frame + (struct.pack(">I", i * 2654435761 & 0xFFFFFFFF) if fcs else b"")
            opts = [O(code=2, data=struct.pack(e + "I", flags))]
            roll = rng.random()
            if roll < 0.3:
                opts.insert(0, O(code=1, data=b"before the flags"))
            elif roll < 0.6:
                opts.append(O(code=1, data=b"after"))
            opts.append(O(code=P.PCAPNG_OPT_ENDOFOPT))
        written.append(flags)
        parts.append(bytes(EPB(ts_high=t >> 32, ts_low=t & 0xFFFFFFFF, pkt_data=frame, opts=opts)))
    path.write_bytes(b"".join(parts))
    return written


@pytest.mark.parametrize("little", [True, False])
def test_epb_flags_are_read_and_kept(little, few, tmp_path):
    """A pcapng whose packets carry ``epb_flags`` (direction, reception type, FCS length, error bits; with other
    options around them, or none): the reader gives each packet's flags, the errored frames and the FCS they
    declare; ``--engine bulk`` makes the golden model's decisions on it with each action, bit for bit the same
    output, whose packets keep their flags (a marked one too, beside its comment)."""
    import random
    seed = 71 + little
    print(f"seed {seed}")
    rng = random.Random(seed)
    records = [(t, _link_record(1, p)) for t, p in few[:200]]
    path = tmp_path / "flags.pcapng"
    flags = _flagged_pcapng(path, records, rng, little=little)
    capture = read_capture(path)
    assert capture.epb_flags.tolist() == flags
    assert capture.errored.tolist() == [f >> 16 != 0 for f in flags]
    assert capture.fcs.tolist() == [(f >> 5) & 0xF for f in flags]
    assert capture.frame_lengths.tolist() == [len(frame) for _, frame in records]
    assert 5 < int(capture.errored.sum()) < 40 and len({f & 3 for f in flags}) == 3
    for action in ("drop", "mark", "count"):
        reports = {}
        for engine in ("model", "bulk"):
            reports[engine] = dedup_capture(path, window=200_000, action=action, engine=engine, seed=5,
                                            output=tmp_path / f"{engine}.pcapng")
        _same(reports["model"], reports["bulk"])
        out = (tmp_path / "bulk.pcapng").read_bytes()
        assert out == (tmp_path / "model.pcapng").read_bytes(), action
        assert reports["bulk"]["counters"]["duplicates"] > 5
        kept = read_capture(tmp_path / "bulk.pcapng")
        forwarded = np.isin(capture.times, kept.times)                   # the times are distinct
        assert len(kept) == forwarded.sum() == reports["bulk"]["output"]["frames"]
        assert kept.epb_flags.tolist() == capture.epb_flags[forwarded].tolist(), action
        assert kept.errored.tolist() == capture.errored[forwarded].tolist()
        marked = [i for i, (a, b, p) in enumerate(kept.blocks.tolist()) if p >= 0
                  and b"apbbf dedup: duplicate" in kept.data[a:b].tobytes()]
        assert len(marked) == (reports["bulk"]["counters"]["duplicates"] if action == "mark" else 0)


def test_corrupt_record_in_the_middle(packets, tmp_path, capsys):
    """A record whose captured length no snap length allows, in the middle of a capture: the frames before it are
    de-duplicated and written (the output is what a capture cut just before it gives), the error names its byte
    offset, the exit status is 2. A pcapng block whose length is not a block's: the same."""
    records = [(t, _link_record(1, p)) for t, p in packets]
    for ng in (False, True):
        path = _write(tmp_path / ("in.pcapng" if ng else "in.pcap"), records, 1, ng=ng)
        data = bytearray(path.read_bytes())
        capture = read_capture(path)
        bad = len(capture) // 2
        start = int(capture.blocks[capture.blocks[:, 2] == bad][0, 0])
        if ng:
            struct.pack_into("<I", data, start + 4, 13)                  # a block length not a multiple of 4
        else:
            struct.pack_into("<I", data, start + 8, 0x7FFF0000)           # captured length
        corrupt = tmp_path / f"corrupt{path.suffix}"
        corrupt.write_bytes(bytes(data))
        cut = tmp_path / f"cut{path.suffix}"
        cut.write_bytes(bytes(data[:start]))
        capsys.readouterr()
        status = cli.main(["dedup", str(corrupt), "--config", CONFIG, "--json", "-q", "-o", str(tmp_path / "a")])
        captured = capsys.readouterr()
        assert status == 2 and f"at byte {start} is corrupt" in captured.err, captured.err
        assert cli.main(["dedup", str(cut), "--config", CONFIG, "--json", "-q", "-o", str(tmp_path / "b")]) == 0
        assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
        assert len(_records(tmp_path / "a")) > 100
        with pytest.raises(CorruptCapture, match=f"byte {start}") as raised:
            dedup_capture(corrupt, window=200_000, seed=1)                # sized from the frames before it
        assert raised.value.offset == start and raised.value.report["counters"]["frames"] == bad


def _cut_before(path, packet):
    """The byte where packet ``packet``'s record (its block) starts in the capture ``path``."""
    capture = read_capture(path)
    return int(capture.blocks[capture.blocks[:, 2] == packet][0, 0])


@pytest.mark.parametrize("ng", [False, True], ids=["pcap", "pcapng"])
def test_a_pipe_that_closes_early(ng, packets, tmp_path):
    """Standard input cut in the middle of a record (a pcap record, a pcapng block), out to standard output: the
    output is a valid capture of the records that arrived whole (the cut one left out, with a warning)."""
    records = [(t, _link_record(1, p)) for t, p in packets[:200]]
    path = _write(tmp_path / ("in.pcapng" if ng else "in.pcap"), records, 1, ng=ng)
    data = path.read_bytes()
    capture = read_capture(path)
    cut = int(capture.offsets[150]) + 10                      # ten bytes into record 150's data
    result = subprocess.run([str(SCRIPT), "dedup", "-", "--config", CONFIG, "--action", "count", "-q", "-o", "-"],
                            input=data[:cut], capture_output=True, check=True)
    assert b"cut short" in result.stderr
    out = tmp_path / ("out.pcapng" if ng else "out.pcap")
    out.write_bytes(result.stdout)
    assert result.stdout == data[:_cut_before(path, 150)]
    assert len(read_capture(out)) == 150 and not read_capture(out).warnings
    assert np.array_equal(read_capture(out).times, capture.times[:150])


@pytest.mark.parametrize("ng", [False, True], ids=["pcap", "pcapng"])
def test_corrupt_record_in_a_later_chunk_and_down_a_pipe(ng, packets, tmp_path):
    """A corrupt record far into a capture read a few kilobytes at a time (many chunks before it): the error names
    its byte offset in the whole capture, and the frames before it are written, the same output as the capture
    cut just before it gives. Through a pipe (standard input to standard output) too: exit status 2, the offset
    named, and standard output a valid capture of the frames before it."""
    records = [(t, _link_record(1, p)) for t, p in packets[:400]]
    path = _write(tmp_path / ("in.pcapng" if ng else "in.pcap"), records, 1, ng=ng)
    data = bytearray(path.read_bytes())
    bad = 300
    start = _cut_before(path, bad)
    if ng:
        struct.pack_into("<I", data, start + 4, 8)                       # a block length below a block's least
    else:
        struct.pack_into("<I", data, start + 8, 0x00FF0000)               # captured length
    suffix = path.suffix
    corrupt, cut = tmp_path / f"corrupt{suffix}", tmp_path / f"cut{suffix}"
    corrupt.write_bytes(bytes(data))
    cut.write_bytes(bytes(data[:start]))
    config = _config()
    expected = dedup_capture(cut, config=config, output=tmp_path / f"expected{suffix}", chunk_bytes=1 << 16)
    with pytest.raises(CorruptCapture, match=f"byte {start} is corrupt") as raised:
        dedup_capture(corrupt, config=config, output=tmp_path / f"out{suffix}", chunk_bytes=3000)
    assert raised.value.offset == start
    _same(raised.value.report, expected)
    assert raised.value.report["counters"]["frames"] == bad
    assert (tmp_path / f"out{suffix}").read_bytes() == (tmp_path / f"expected{suffix}").read_bytes()
    result = subprocess.run([str(SCRIPT), "dedup", "-", "--config", CONFIG, "-q", "-o", "-"], input=bytes(data),
                            capture_output=True)
    assert result.returncode == 2 and f"at byte {start} is corrupt".encode() in result.stderr, result.stderr
    assert result.stdout == (tmp_path / f"expected{suffix}").read_bytes()
    assert len(read_capture(tmp_path / f"expected{suffix}")) == expected["output"]["frames"] > 200


def test_accepted_datapaths_are_remembered(tmp_path, monkeypatch, packets):
    """A datapath the gateware took is remembered in the cache directory, for these gateware sources only; a
    refused one is asked again (and refused again); with the cache warm, a fresh ``apbbf dedup`` does not import
    Amaranth."""
    from apbbf import dedup
    from apbbf.model.packet import KeySpec
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("APBBF_NO_CACHE", raising=False)
    spec = KeySpec.l3l4()
    dedup.check_datapath(spec, "drop", max_frame=9600, data_width=512, fcs=False)
    assert len(dedup.accepted_datapaths()["datapaths"]) == 1
    for _ in range(2):
        with pytest.raises(ValueError, match="gateware refuses"):
            dedup.check_datapath(spec, "drop", max_frame=100, data_width=64, fcs=False)
    assert len(dedup.accepted_datapaths()["datapaths"]) == 1
    monkeypatch.setattr(dedup, "_gateware_stamp", lambda: "other sources")
    assert dedup.accepted_datapaths()["datapaths"] == []
    monkeypatch.undo()
    path = _write(tmp_path / "in.pcap", [(t, _link_record(1, p)) for t, p in packets[:30]], 1)
    code = ("import sys\nfrom apbbf import cli\ncli.main(['dedup', sys.argv[1], '-q', '--seed', '1'])\n"
            "print(any(name.startswith('amaranth') for name in sys.modules))")
    env = {**__import__("os").environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("APBBF_NO_CACHE", None)
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env,
                            check=True)
    assert result.stdout.strip().endswith("False"), result.stdout


@pytest.mark.parametrize("name", ["readme-w64-quick", "readme-w64-fp", "readme-w64-mark", "readme-w512"])
def test_bulk_equals_the_model_on_the_gateware_benches_captures(name, tmp_path, monkeypatch, capsys):
    """The captures ``tests/test_cocotb_dedup.py`` replays through the gateware (the README's command on each),
    with the README's options: ``--engine bulk`` writes the frames and reports the counts ``--engine model``
    does, and reading them 300 bytes at a time changes nothing."""
    import json
    import random
    import shlex

    from .dedup_traffic import write_pcap
    from .test_cocotb_dedup import README_RUNS, readme_commands, readme_traffic
    from .test_dedup import write_dpkt_pcapng
    run = README_RUNS[name]
    items, _ = readme_traffic(name)
    rng = random.Random(run["seed"])
    print(f"{name}: traffic seed {run['seed']}")
    errored = [rng.random() < run.get("errored", 0) for _ in items]
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(readme_commands()[0])[1:] + run["added"]
    capture = argv[1]
    if run.get("format") == "pcapng":
        write_dpkt_pcapng(capture, [(t, frame, kind, bad) for (t, frame, kind), bad in zip(items, errored)])
    else:
        write_pcap(capture, items)
    out = argv[argv.index("-o") + 1]
    reports, outputs = {}, {}
    for engine in ("model", "bulk", "bulk-chunks"):
        capsys.readouterr()
        if engine == "bulk-chunks":
            monkeypatch.setattr("apbbf.capture.STREAM_CHUNK", 300)
        status = cli.main(argv + ["--engine", engine.split("-")[0], "--json", "-q"])
        assert status == 0
        reports[engine] = json.loads(capsys.readouterr().out)
        outputs[engine] = Path(out).read_bytes()
    for engine in ("bulk", "bulk-chunks"):
        _same(reports["model"], reports[engine])
        assert outputs[engine] == outputs["model"]
    assert reports["bulk"]["counters"]["duplicates"] > 0
