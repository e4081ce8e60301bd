"""Benchmark of ``apbbf dedup`` on a capture (``make capture-bench``): in one run on the same capture, frames per
second of ``apbbf dedup`` (keys ``l3l4`` and ``frame``), of Wireshark's ``editcap -D`` and ``editcap -w`` where
installed, and of the raw read of the file (the limit: its bytes, and its records walked by the reader
``apbbf dedup`` uses); the wall time of ``apbbf dedup`` on a small capture (start-up included); the peak memory,
and with ``memory_frames`` the same on a capture that many frames long (memory flat in the capture's length).

Each tool runs as a user runs it (a subprocess, wall clock, the median of ``repeats`` runs; peak memory from the
child's resource usage; the package byte-compiled first, as an installation has it, and the compiled loops'
cache warmed). Recall is measured against the exact de-duplication of the same key over the same
window (``apbbf dedup``'s report: duplicates found of the exact ones); ``editcap -w``'s removed frames are compared
with the exact ``frame``-key duplicates (editcap compares whole frames by MD5 within its window, so a frame removed
by it is an exact copy); ``editcap -D`` compares with the last N frames, not a time window.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["run", "profile", "small_capture", "repeated_capture", "flagged_pcapng", "speed_table", "TARGETS"]

#: The targets, as ratios of the medians of one run's repeats.
TARGETS = {"editcap_w_speedup": 10.0, "raw_read_fraction": 0.30, "small_capture_seconds": 1.0}


def _cpu_of_children() -> float:
    """User and system seconds of the children waited for so far."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command, **kwargs) -> tuple[float, int, str, str, float]:
    """Run ``command``: (wall seconds, peak resident memory of the child in bytes, stdout, stderr, its user and
    system seconds).

    Raises
    ------
    RuntimeError
        If it exits with a status other than 0 or 1.
    """
    cpu = _cpu_of_children()
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    out, err = child.communicate()
    seconds = time.perf_counter() - start
    # communicate() has reaped it: its peak is in the children's usage (the largest child so far)
    import resource
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if child.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({child.returncode}): {err[-2000:]}")
    return seconds, peak, out, err, _cpu_of_children() - cpu


def _peak_of(command) -> tuple[float, int, str, str, float]:
    """:func:`_timed` in a fresh helper process, so that the peak memory is this command's alone."""
    code = ("import json, resource, subprocess, sys, time\n"
            "start = time.perf_counter()\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "seconds = time.perf_counter() - start\n"
            "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(json.dumps([seconds, usage.ru_maxrss * 1024, r.returncode, r.stdout, r.stderr[-4000:],\n"
            "                  usage.ru_utime + usage.ru_stime]))\n")
    result = subprocess.run([sys.executable, "-c", code, *map(str, command)], capture_output=True, text=True,
                            check=True)
    seconds, peak, status, out, err, cpu = json.loads(result.stdout)
    if status not in (0, 1):
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({status}): {err[-2000:]}")
    return seconds, peak, out, err, cpu


def _frames(path: Path) -> int:
    from ..capture import iter_capture
    return sum(len(chunk) for chunk in iter_capture(path))


def _raw_read(path: Path, repeats: int) -> dict:
    """The read limit: the file's bytes into memory (numpy), and its records walked and their fields gathered
    (:func:`apbbf.capture.iter_capture`, the reader ``apbbf dedup`` uses), in this process, the page cache and the
    reader warm (its compiled walk loaded: no start-up)."""
    from ..capture import iter_capture
    size = path.stat().st_size
    np.fromfile(path, dtype=np.uint8)                             # warm the page cache
    sum(len(chunk) for chunk in iter_capture(path))                 # and the reader (its compiled walk loaded)
    byte_times, record_times, record_cpu, frames = [], [], [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        np.fromfile(path, dtype=np.uint8)
        byte_times.append(time.perf_counter() - start)
        start, cpu = time.perf_counter(), time.process_time()
        frames = sum(len(chunk) for chunk in iter_capture(path))
        record_times.append(time.perf_counter() - start)
        record_cpu.append(time.process_time() - cpu)
    bytes_s, records_s = statistics.median(byte_times), statistics.median(record_times)
    return {"bytes_seconds": round(bytes_s, 3), "bytes_per_second": round(size / bytes_s),
            "records_cpu_seconds": round(statistics.median(record_cpu), 3),
            "frames_per_second_at_byte_rate": round(frames / bytes_s),
            "records_seconds": round(records_s, 3), "records_frames_per_second": round(frames / records_s),
            "records_bytes_per_second": round(size / records_s)}


def small_capture(capture: Path, path: Path, frames: int = 27) -> Path:
    """The first ``frames`` records of a pcap ``capture`` (its own header and records) written to ``path``.

    Raises
    ------
    ValueError
        If ``capture`` is not a pcap file with that many records.
    """
    from ..capture import read_capture
    chunk = read_capture(capture)
    if chunk.format != "pcap" or len(chunk) < frames:
        raise ValueError(f"{capture}: a pcap capture of at least {frames} records is needed")
    path.write_bytes(chunk.data[:int(chunk.blocks[frames, 1])].tobytes())     # blocks[0] is the file header
    return path


def repeated_capture(capture: Path, path: Path, times: int) -> Path:
    """``capture`` (pcap) ``times`` over, one copy after another in time (each shifted by the capture's duration
    plus a second, so no copy of one repetition lies within a window of the next), written to ``path``: a long
    capture of the same traffic, in chunks (bounded memory).

    Raises
    ------
    ValueError
        If ``capture`` is not pcap or is empty.
    """
    from ..capture import iter_capture
    first, last = None, None
    for chunk in iter_capture(capture):
        if len(chunk):
            first = chunk.times[0] if first is None else first
            last = chunk.times.max() if last is None else max(last, chunk.times.max())
        if chunk.format != "pcap":
            raise ValueError(f"{capture}: a pcap capture is needed")
    if first is None:
        raise ValueError(f"{capture}: no records")
    shift_ns = int(last - first) + 1_000_000_000
    with open(path, "wb") as out:
        for repetition in range(times):
            for chunk in iter_capture(capture):
                data = np.frombuffer(chunk.data, dtype=np.uint8).copy()
                starts = chunk.blocks[chunk.blocks[:, 2] >= 0, 0]
                big = bool(chunk.big_endian[0])
                nano = chunk.resolution == "1 ns"
                seconds = data[starts[:, None] + np.arange(4)].copy().view(">u4" if big else "<u4")[:, 0]
                fraction = data[starts[:, None] + 4 + np.arange(4)].copy().view(">u4" if big else "<u4")[:, 0]
                total = seconds.astype(np.int64) * 10 ** 9 + fraction.astype(np.int64) * (1 if nano else 1000) \
                    + repetition * shift_ns
                seconds = (total // 10 ** 9).astype(">u4" if big else "<u4")
                fraction = ((total % 10 ** 9) // (1 if nano else 1000)).astype(">u4" if big else "<u4")
                data[starts[:, None] + np.arange(4)] = seconds.view(np.uint8).reshape(-1, 4)
                data[starts[:, None] + 4 + np.arange(4)] = fraction.view(np.uint8).reshape(-1, 4)
                skip = chunk.skip if chunk.skip or not repetition else 24
                out.write(data[skip:int(chunk.blocks[-1, 1])].tobytes())
    return path


def _apbbf_run(apbbf: Path, capture: Path, key: str, window: str, seed: int, output: Path | None,
               repeats: int) -> dict:
    times, peaks, cpus, report = [], [], [], None
    for _ in range(repeats):
        command = [str(apbbf), "dedup", str(capture), "--window", window, "--key", key, "--seed", str(seed),
                   "--json", "-q"] + (["-o", str(output)] if output is not None else [])
        seconds, peak, out, _, cpu = _peak_of(command)
        times.append(seconds)
        peaks.append(peak)
        cpus.append(cpu)
        report = json.loads(out)
    if output is not None:
        output.unlink(missing_ok=True)
    return {"times": times, "peak": max(peaks), "report": report, "cpu": statistics.median(cpus)}


def _compile_package() -> None:
    """The package's modules byte-compiled, as an installation compiles them: a run then starts as a user's does
    (with ``PYTHONDONTWRITEBYTECODE`` set, as on this machine, every run would otherwise compile every module of
    an editable install again)."""
    import compileall
    import apbbf
    import apbbf.model
    for root in {*apbbf.__path__, *apbbf.model.__path__}:
        compileall.compile_dir(root, quiet=1)


def _warm_compiled(apbbf: Path, capture: Path, work: Path, window: str, seed: int) -> None:
    """``apbbf dedup`` once on the capture's first records, enough of them to use the compiled loops
    (:mod:`apbbf.model.compiled`), so that their cache on disk holds them, as it does after an installation's first
    run (which compiles them: tens of seconds once)."""
    from ..capture import read_capture
    from ..model.compiled import WORTH_BYTES
    chunk = read_capture(capture)
    if chunk.format != "pcap":
        return
    records = int(np.searchsorted(chunk.blocks[:, 1], 2 * WORTH_BYTES)) + 1
    prefix = work / "warm.pcap"
    prefix.write_bytes(chunk.data[:int(chunk.blocks[min(records, len(chunk.blocks) - 1), 1])].tobytes())
    for key in ("l3l4", "frame"):
        _timed([str(apbbf), "dedup", str(prefix), "--window", window, "--key", key, "--seed", str(seed), "-q",
                "-o", str(work / "warm.out.pcap")])
    prefix.unlink()
    (work / "warm.out.pcap").unlink(missing_ok=True)


def run(capture: Path, out_dir: Path, *, work: Path | None = None, window: str = "1ms", repeats: int = 1,
        seed: int = 1, memory_frames: int | None = None) -> dict:
    """Run the benchmark on ``capture``; write ``out_dir/capture_bench.json`` and return its content.

    Parameters
    ----------
    capture : pathlib.Path
        A pcap capture (the small capture is its first 27 records).
    out_dir : pathlib.Path
        Where the report goes.
    work : pathlib.Path or None
        Where the tools write their outputs (removed after each run); default the capture's folder.
    window : str
        The window (``apbbf dedup --window``; editcap gets it in seconds).
    repeats : int
        Runs per tool; the median is reported (the small capture: at least three).
    seed : int
        The hash seed of ``apbbf dedup`` (so that reruns are the same).
    memory_frames : int or None
        Also run ``apbbf dedup`` (``l3l4``, no output) on the capture repeated to at least this many frames, for
        its peak memory against the capture's own (a long run: 10^7 frames take minutes).

    Raises
    ------
    RuntimeError
        If a tool fails.
    """
    from ..dedup import parse_window
    capture, out_dir = Path(capture), Path(out_dir)
    work = Path(work) if work is not None else capture.parent
    work.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    frames = _frames(capture)
    apbbf = Path(sys.executable).parent / "apbbf"
    _compile_package()
    _warm_compiled(apbbf, capture, work, window, seed)
    report = {"capture": str(capture), "frames": frames, "bytes": capture.stat().st_size, "window": window,
              "repeats": repeats, "machine": f"{os.cpu_count()} cores, shared",
              "load_average_start": [round(x, 2) for x in os.getloadavg()], "runs": []}
    for key in ("l3l4", "frame"):
        result = _apbbf_run(apbbf, capture, key, window, seed, work / f"apbbf-{key}.pcap", repeats)
        r, seconds = result["report"], statistics.median(result["times"])
        cmp = r["comparison"]
        report["runs"].append({
            "tool": "apbbf dedup", "key": key, "seconds": round(seconds, 2),
            "runs_seconds": [round(t, 2) for t in result["times"]],
            "frames_per_second": round(frames / seconds), "cpu_seconds": round(result["cpu"], 2),
            "removed": r["counters"]["dropped"],
            "exact_duplicates": r["exact"]["duplicates"], "found": cmp["duplicates_found"],
            "missed": cmp["duplicates_missed"],
            "recall": cmp["duplicates_found"] / max(1, r["exact"]["duplicates"]),
            "false_positives": cmp["false_positives"], "stage_seconds": r["seconds"],
            "peak_memory_bytes": result["peak"],
            "config": {name: r["filter"][name] for name in ("k", "l", "segment_blocks", "extra_segments")}})
    exact_frame = next(r for r in report["runs"] if r["key"] == "frame")["exact_duplicates"]
    editcap = shutil.which("editcap")
    if editcap:
        version = subprocess.run([editcap, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        window_s = parse_window(window) / 1e9
        for option, value, key in (("-D", "1000", "frame (MD5, last 1000 frames)"),
                                   ("-w", f"{window_s:g}", "frame (MD5)")):
            times, cpus = [], []
            text = ""
            for _ in range(repeats):
                # -F pcap: the same output format as apbbf dedup's (editcap writes pcapng by default)
                seconds, _, out, err, cpu = _timed([editcap, "-F", "pcap", option, value, str(capture),
                                                    str(work / "editcap.pcap")])
                times.append(seconds)
                cpus.append(cpu)
                text = out + err
            seconds = statistics.median(times)
            kept = _frames(work / "editcap.pcap")
            (work / "editcap.pcap").unlink()
            match = re.search(r"(\d+) packets? seen, (\d+) packets? skipped", text)
            report["runs"].append({
                "tool": f"editcap {option}", "command": f"editcap -F pcap {option} {value}", "version": version,
                "key": key, "seconds": round(seconds, 2), "runs_seconds": [round(t, 2) for t in times],
                "frames_per_second": round(frames / seconds), "cpu_seconds": round(statistics.median(cpus), 2),
                "removed": frames - kept,
                "exact_duplicates": exact_frame if option == "-w" else None,
                "recall": (frames - kept) / max(1, exact_frame) if option == "-w" else None,
                "editcap_says": match.group(0) if match else None})
    else:
        report["editcap"] = "not installed (apt-get install wireshark-common): its rows are skipped"
    report["raw_read"] = _raw_read(capture, max(1, repeats))
    small = small_capture(capture, work / "small.pcap")
    small_runs = [_timed([str(apbbf), "dedup", str(small), "--window", window, "--seed", str(seed), "-q"])
                  for _ in range(max(3, repeats))]
    small.unlink()
    small_times = [r[0] for r in small_runs]
    report["small_capture"] = {"frames": 27, "seconds": round(statistics.median(small_times), 3),
                               "runs_seconds": [round(t, 3) for t in small_times],
                               "cpu_seconds": round(statistics.median(r[4] for r in small_runs), 3)}
    if memory_frames:
        copies = -(-memory_frames // frames)
        long = repeated_capture(capture, work / "long.pcap", copies)
        result = _apbbf_run(apbbf, long, "l3l4", window, seed, None, 1)
        seconds = result["times"][0]
        report["long_capture"] = {"frames": frames * copies, "bytes": long.stat().st_size,
                                  "seconds": round(seconds, 2),
                                  "frames_per_second": round(frames * copies / seconds),
                                  "peak_memory_bytes": result["peak"],
                                  "missed": result["report"]["comparison"]["duplicates_missed"]}
        long.unlink()
    report["ratios"] = _ratios(report)
    report["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    path = out_dir / "capture_bench.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report


# The profile ---------------------------------------------------------------------------------------------------

def flagged_pcapng(capture: Path, path: Path) -> Path:
    """A pcap ``capture`` as a nanosecond pcapng (one section, one interface of its link type) whose every
    enhanced packet block carries an ``epb_flags`` option (inbound, unicast): the same frames and times, written to
    ``path`` in chunks.

    Raises
    ------
    ValueError
        If ``capture`` is not pcap.
    """
    import struct
    from ..capture import iter_capture
    with open(path, "wb") as out:
        started = False
        for chunk in iter_capture(capture):
            if chunk.format != "pcap":
                raise ValueError(f"{capture}: a pcap capture is needed")
            if not started:
                started = True
                # section header (no options), then an interface with if_tsresol 9 and its end of options
                out.write(struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28))
                idb = struct.pack("<HHI", chunk.linktype, 0, 262144) + struct.pack("<HHB3x", 9, 1, 9) + bytes(4)
                out.write(struct.pack("<II", 1, 12 + len(idb)) + idb + struct.pack("<I", 12 + len(idb)))
            view = chunk.data.data
            parts = []
            flags = struct.pack("<HHI", 2, 4, 1 | 1 << 2) + bytes(4)     # epb_flags: inbound, unicast; end
            for t, at, caplen, wirelen in zip(chunk.times.tolist(), chunk.offsets.tolist(), chunk.caplens.tolist(),
                                              chunk.wirelens.tolist()):
                pad = -caplen % 4
                total = 32 + caplen + pad + len(flags)
                parts.append(struct.pack("<IIIIIII", 6, total, 0, t >> 32, t & 0xFFFFFFFF, caplen, wirelen))
                parts.append(view[at:at + caplen])
                parts.append(bytes(pad) + flags + struct.pack("<I", total))
            out.write(b"".join(parts))
    return path


#: The parts of a run's time the profile names (:func:`profile`): (stage, part, how it is measured). A function
#: is ``(file, name)``: its file's name and its own (a compiled kernel's too); ``tt`` its own time, ``ct`` with
#: what it calls, ``of`` its time under a caller; a part whose measure starts with ``-`` is the stage's rest.
_PARTS = (
    ("read", "the file's bytes read, and joined to the chunk before", [
        ("tt", ("~", "<method 'read' of '_io.FileIO' objects>")),
        ("of", ("~", "<method 'join' of 'bytes' objects>"), ("capture.py", "_chunks_of"))]),
    ("read", "the record walk, first pass (compiled)", [("tt", ("_kernels.py", "walk_pcap"))]),
    ("read", "the records' starts checked over arrays, second pass", [("ct", ("records.py", "check_walk"))]),
    ("read", "the records' fields gathered (numpy)", [
        ("ct", ("capture.py", "_read_pcap")), ("-ct", ("records.py", "walk_pcap")),
        ("-ct", ("records.py", "check_walk"))]),
    ("read", "the chunks' rest (headers repeated, the walk's log)", [
        ("ct", ("capture.py", "_chunks_of")), ("-ct", ("capture.py", "_read_pcap")),
        ("-ct", ("capture.py", "_read_pcapng")), ("-tt", ("~", "<method 'read' of '_io.FileIO' objects>")),
        ("-of", ("~", "<method 'join' of 'bytes' objects>"), ("capture.py", "_chunks_of"))]),
    ("read", "pcapng blocks and their options (numpy)", [("ct", ("capture.py", "_read_pcapng"))]),
    ("read", "ticks, peaks, datapath lengths, link layer (both passes)", [
        ("ct", ("arrivals.py", "add")), ("ct", ("dedup.py", "released_of")), ("ct", ("links.py", "network_layer"))]),
    ("size", "sizing (solve_timed)", [("ct", ("dedup.py", "size_filter"))]),
    ("keys", "classification (compiled)", [("tt", ("_kernels.py", "classify"))]),
    ("keys", "the messages' rows and their CRC-64 (compiled)", [("tt", ("_kernels.py", "message_keys"))]),
    ("keys", "the rest (numpy: ranges, masks, offsets)", [
        ("ct", ("batch.py", "frame_keys")), ("-tt", ("_kernels.py", "classify")),
        ("-tt", ("_kernels.py", "message_keys"))]),
    ("exact", "messages compared (compiled)", [("tt", ("_kernels.py", "messages_equal"))]),
    ("exact", "the rest (numpy: grouped by key, ages)", [
        ("ct", ("exact.py", "run")), ("-tt", ("_kernels.py", "messages_equal"))]),
    ("filter", "the generations: shifts, retirements, restarts from the times (compiled)", [
        ("tt", ("_kernels.py", "timed_schedule"))]),
    ("filter", "the generations' bookkeeping (numpy)", [
        ("ct", ("bulk.py", "_schedule")), ("-tt", ("_kernels.py", "timed_schedule"))]),
    ("filter", "the commands: query, Algorithm 1, inserts (compiled)", [
        ("tt", ("_kernels.py", "timed_test_and_insert"))]),
    ("filter", "the rest (numpy: each command's generation, the actions, the counters)", [
        ("ct", ("pipeline.py", "run")), ("-ct", ("bulk.py", "_schedule")),
        ("-tt", ("_kernels.py", "timed_test_and_insert"))]),
    ("write", "the system call (writev)", [("tt", ("~", "<built-in method posix.writev>"))]),
    ("write", "the kept records' runs", [
        ("ct", ("capture.py", "write_chunk")), ("-tt", ("~", "<built-in method posix.writev>"))]),
)


def _matches(key, function) -> bool:
    filename, _, name = key
    return name == function[1] and (filename == function[0] or Path(filename).name == function[0])


def _measure(stats: dict, how, function, caller=None) -> float:
    total = 0.0
    for key, (_, _, tt, ct, callers) in stats.items():
        if not _matches(key, function):
            continue
        if how == "of":
            total += sum(c[3] for k, c in callers.items() if _matches(k, caller))
        else:
            total += tt if how == "tt" else ct
    return total


def _breakdown(stats: dict, frames: int) -> dict:
    """The parts of :data:`_PARTS` from a profile's statistics (``pstats.Stats.stats``), and the run's rest."""
    parts = []
    for stage, part, terms in _PARTS:
        seconds = 0.0
        for how, function, *caller in terms:
            value = _measure(stats, how.lstrip("-"), function, *caller)
            seconds += -value if how.startswith("-") else value
        parts.append({"stage": stage, "part": part, "seconds": round(max(0.0, seconds), 4)})
    total = _measure(stats, "ct", ("dedup.py", "dedup_capture"))
    parts.append({"stage": "other", "part": "the chunk loop's bookkeeping (flags, counts, totals), the report",
                  "seconds": round(max(0.0, total - sum(p["seconds"] for p in parts)), 4)})
    for p in parts:
        p["us_per_frame"] = round(p["seconds"] / max(1, frames) * 1e6, 4)
        p["share"] = round(p["seconds"] / total, 4) if total else 0.0
    top = sorted(stats.items(), key=lambda item: -item[1][2])[:20]
    return {"seconds": round(total, 3), "us_per_frame": round(total / max(1, frames) * 1e6, 3), "parts": parts,
            "top_own_time": [{"function": f"{Path(k[0]).name}:{k[1]}({k[2]})", "calls": v[1],
                              "seconds": round(v[2], 4)} for k, v in top]}


def _profile_child(argv: list) -> dict:
    """The profile's runs in this (fresh) process (:func:`profile`): a cold run (imports and numba's kernels
    loaded), a warm one timed, a warm one profiled, and the pcapng's."""
    import cProfile
    import pstats
    capture, output, window, key, seed, pcapng = argv
    args = dict(window=None, key=key, seed=int(seed))
    fresh = cProfile.Profile()
    start = time.perf_counter()
    fresh.enable()
    from ..dedup import dedup_capture, parse_window
    args["window"] = parse_window(window)
    dedup_capture(capture, output=output, **args)
    fresh.disable()
    cold = time.perf_counter() - start
    Path(output).unlink()
    stats = pstats.Stats(fresh).stats
    imports = _measure(stats, "ct", ("<frozen importlib._bootstrap>", "_find_and_load"))
    numba = _measure(stats, "ct", ("compiled.py", "_build"))
    loads = _measure(stats, "ct", ("dispatcher.py", "_compile_for_args"))
    from ..capture import iter_capture
    frames = sum(len(chunk) for chunk in iter_capture(capture))
    start = time.perf_counter()
    report = dedup_capture(capture, output=output, **args)
    warm = time.perf_counter() - start
    Path(output).unlink()
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    dedup_capture(capture, output=output, **args)
    profiler.disable()
    profiled = time.perf_counter() - start
    Path(output).unlink()
    result = {
        "frames": frames,
        "cold_run": {"seconds": round(cold, 3), "imports_seconds": round(imports - numba, 3),
                     "numba_import_seconds": round(numba, 3), "kernels_loaded_seconds": round(loads, 3),
                     "cprofile": True},
        "warm_run": {"seconds": round(warm, 3), "stages": report["seconds"],
                     "us_per_frame": round(warm / frames * 1e6, 3)},
        "profiled_run": {"seconds": round(profiled, 3), "overhead": round(profiled / warm, 3),
                         **_breakdown(pstats.Stats(profiler).stats, frames)},
        "raw_read": _raw_read(Path(capture), 3),
    }
    if pcapng != "-":
        from ..capture import _options, _packet_flags
        start = time.perf_counter()
        ng = dedup_capture(pcapng, output=output, **args)
        seconds = time.perf_counter() - start
        Path(output).unlink()
        start = time.perf_counter()
        marked = dedup_capture(pcapng, output=output, action="mark", **args)
        mark_seconds = time.perf_counter() - start
        Path(output).unlink()
        # the flags option of every packet, over arrays (the reader's) against one option at a time in Python
        arrays = loop = 0.0
        for chunk in iter_capture(pcapng):
            packets = chunk.blocks[chunk.blocks[:, 2] >= 0]
            where, stops = packets[:, 0], packets[:, 1]
            clock = time.perf_counter()
            flags = _packet_flags(chunk.data, where, stops, chunk.caplens, chunk.big_endian[chunk.blocks[:, 2] >= 0])
            arrays += time.perf_counter() - clock
            clock = time.perf_counter()
            looped = np.zeros(len(where), dtype=np.int64)
            buffer = chunk.data.data
            for index, (at, stop, caplen) in enumerate(zip(where.tolist(), stops.tolist(), chunk.caplens.tolist())):
                for code, value, size in _options(buffer, at + 28 + caplen + (-caplen % 4), stop - 4, True):
                    if code == 2 and size == 4:
                        looped[index] = int.from_bytes(buffer[value:value + 4], "little")
            loop += time.perf_counter() - clock
            assert np.array_equal(flags, looped)
        result["pcapng_with_epb_flags"] = {
            "path": pcapng, "bytes": Path(pcapng).stat().st_size, "seconds": round(seconds, 3),
            "stages": ng["seconds"], "same_decisions": ng["counters"] == report["counters"],
            "mark_seconds": round(mark_seconds, 3), "mark_stages": marked["seconds"],
            "marked": marked["counters"]["duplicates"],
            "flags_over_arrays_us_per_frame": round(arrays / frames * 1e6, 4),
            "flags_one_option_at_a_time_us_per_frame": round(loop / frames * 1e6, 4)}
    return result


def profile(capture: Path, out_dir: Path, *, work: Path | None = None, window: str = "1ms", key: str = "l3l4",
            seed: int = 1, pcapng: bool = True) -> dict:
    """Where the time of ``apbbf dedup`` goes, per frame, on ``capture``; written to ``out_dir/capture_profile.json``
    and returned.

    In a fresh interpreter: a cold run (with cProfile: the imports, numba's import, its kernels loaded from the
    cache), a warm run timed (its report's stages), and a warm run under cProfile, its time split into the parts
    of each stage (:data:`_PARTS`: the record walk, the fields, the keys' CRC, the filter's generations and
    commands, the exact answer, the write; a kernel's own time is its compiled loop's). Beside them: the raw read
    (the records walked, as :func:`run` measures it), the interpreter's start (``python -c pass``) and the
    command's on the 27-frame capture (start-up: numba is not imported for it), and the budget the 30 % target
    leaves per frame. With ``pcapng``, the capture converted to pcapng with ``epb_flags``
    on every packet (:func:`flagged_pcapng`) is run warm too, and the flags' reading over arrays timed against
    one option at a time.

    Raises
    ------
    RuntimeError
        If the runs fail.
    """
    capture, out_dir = Path(capture), Path(out_dir)
    work = Path(work) if work is not None else capture.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    apbbf = Path(sys.executable).parent / "apbbf"
    _compile_package()
    _warm_compiled(apbbf, capture, work, window, seed)
    flagged = "-"
    if pcapng:
        flagged = work / f"{capture.stem}-flags.pcapng"
        if not flagged.exists() or flagged.stat().st_mtime < capture.stat().st_mtime:
            flagged_pcapng(capture, flagged)
    starts = [_timed([sys.executable, "-c", "pass"])[0] for _ in range(3)]
    small = small_capture(capture, work / "profile.small.pcap")
    smalls = [_timed([str(apbbf), "dedup", str(small), "--window", window, "--seed", str(seed), "-q"])[0]
              for _ in range(3)]
    small.unlink()
    code = ("import json, sys\nfrom apbbf.flows.capture_bench import _profile_child\n"
            "print(json.dumps(_profile_child(sys.argv[1:])))\n")
    child = subprocess.run([sys.executable, "-c", code, str(capture), str(work / "profile.out.pcap"), window, key,
                            str(seed), str(flagged)], capture_output=True, text=True)
    if child.returncode:
        raise RuntimeError(f"the profile failed: {child.stderr[-2000:]}")
    result = json.loads(child.stdout)
    raw = result["raw_read"]
    frames = result["frames"]
    budget = raw["records_seconds"] / TARGETS["raw_read_fraction"]
    report = {"capture": str(capture), "key": key, "window": window, "machine": f"{os.cpu_count()} cores, shared",
              "load_average_start": [round(x, 2) for x in os.getloadavg()],
              "interpreter_start_seconds": round(statistics.median(starts), 3),
              "small_capture_seconds": round(statistics.median(smalls), 3), **result,
              "target": {"raw_read_fraction": TARGETS["raw_read_fraction"], "run_seconds": round(budget, 3),
                         "us_per_frame": round(budget / frames * 1e6, 3)}}
    report["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    (out_dir / "capture_profile.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _ratios(report: dict) -> dict:
    runs = {(r["tool"], r["key"].split(" ")[0]): r for r in report["runs"]}
    ours = {key: runs[("apbbf dedup", key)] for key in ("l3l4", "frame")}
    out = {}
    for tool in ("editcap -w", "editcap -D"):
        theirs = next((r for r in report["runs"] if r["tool"] == tool), None)
        if theirs:
            out[f"vs_{tool.replace(' ', '_').replace('-', '')}"] = {
                key: round(r["frames_per_second"] / theirs["frames_per_second"], 2) for key, r in ours.items()}
        if theirs and all(len(r.get("runs_seconds", ())) > 1 for r in (theirs, *ours.values())):
            # the spread over the repeats: their fastest against our slowest run, and their slowest against our
            # fastest (every pairing of the runs lies between)
            out[f"vs_{tool.replace(' ', '_').replace('-', '')}_range"] = {
                key: [round(min(theirs["runs_seconds"]) / max(r["runs_seconds"]), 2),
                      round(max(theirs["runs_seconds"]) / min(r["runs_seconds"]), 2)] for key, r in ours.items()}
        if theirs and theirs.get("cpu_seconds") and all(r.get("cpu_seconds") for r in ours.values()):
            out[f"vs_{tool.replace(' ', '_').replace('-', '')}_cpu"] = {
                key: round(theirs["cpu_seconds"] / r["cpu_seconds"], 2) for key, r in ours.items()}
    raw = report["raw_read"]
    out["of_raw_read_records"] = {key: round(r["frames_per_second"] / raw["records_frames_per_second"], 3)
                                  for key, r in ours.items()}
    if raw.get("records_cpu_seconds") and all(r.get("cpu_seconds") for r in ours.values()):
        out["of_raw_read_records_cpu"] = {key: round(raw["records_cpu_seconds"] / r["cpu_seconds"], 3)
                                          for key, r in ours.items()}
    out["of_raw_read_bytes"] = {key: round(r["frames_per_second"] / raw["frames_per_second_at_byte_rate"], 4)
                                for key, r in ours.items()}
    if "long_capture" in report:
        out["memory_long_over_short"] = round(report["long_capture"]["peak_memory_bytes"]
                                              / ours["l3l4"]["peak_memory_bytes"], 2)
    out["recall"] = {key: r["recall"] for key, r in ours.items()}
    return out


def _rate(value: int) -> str:
    return f"{value:,}".replace(",", " ")


def speed_table(report: dict) -> str:
    """The docs' speed table (docs/dedup.md's ``capture-bench`` block) from a report of :func:`run`."""
    lines = ["| tool | key | seconds (range over the runs) | frames/s | frames removed | exact duplicates in the "
             "window | recall | CPU seconds |", "|---|---|---:|---:|---:|---:|---:|---:|"]

    def cpu(value):
        return "" if value is None else f"{value:.2f}"

    for r in report["runs"]:
        recall = "" if r.get("recall") is None else f"{100 * r['recall']:.3f} %".replace(".000 %", " %")
        exact = "" if r.get("exact_duplicates") is None else _rate(r["exact_duplicates"])
        name = f"`{r['tool']}`" if r["tool"] == "apbbf dedup" else f"`{r['command']}`"
        runs = r.get("runs_seconds") or ()
        seconds = f"{r['seconds']:.2f}" + (f" ({min(runs):.2f}-{max(runs):.2f})" if len(runs) > 1 else "")
        lines.append(f"| {name} | `{r['key']}` | {seconds} | {_rate(r['frames_per_second'])} | "
                     f"{_rate(r['removed'])} | {exact} | {recall} | {cpu(r.get('cpu_seconds'))} |")
    raw = report["raw_read"]
    lines.append(f"| raw read: the records walked (`apbbf.capture.iter_capture`) | | {raw['records_seconds']:.2f} | "
                 f"{_rate(raw['records_frames_per_second'])} | | | | {cpu(raw.get('records_cpu_seconds'))} |")
    lines.append(f"| raw read: the file's bytes (`numpy.fromfile`, {raw['bytes_per_second'] / 1e6:.0f} MB/s) | | "
                 f"{raw['bytes_seconds']:.2f} | {_rate(raw['frames_per_second_at_byte_rate'])} | | | | |")
    ratios = report["ratios"]
    ours = {r["key"]: r for r in report["runs"] if r["tool"] == "apbbf dedup"}
    repeats = report.get("repeats", 1)
    each = "one run each" if repeats == 1 else f"the median of {repeats} runs each"
    text = [f"On {_rate(report['frames'])} frames ({report['bytes'] / 1e6:.0f} MB), {each}, wall clock "
            f"with start-up: `apbbf dedup` is"]

    def spread(name, key):
        """`` (low-high over the runs)`` of a ratio, or nothing with one run."""
        low, high = ratios.get(f"{name}_range", {}).get(key, (None, None))
        return "" if low is None else f" ({low}-{high} over the runs)"

    if "vs_editcap_w" in ratios:
        w = ratios["vs_editcap_w"]
        text.append(f"{w['frame']} times as fast as `editcap -w` on the same key{spread('vs_editcap_w', 'frame')}, "
                    f"{w['l3l4']} with `l3l4`{spread('vs_editcap_w', 'l3l4')}, and {ratios['vs_editcap_D']['frame']} "
                    f"times `editcap -D 1000`;")
    text.append(f"{100 * ratios['of_raw_read_records']['l3l4']:.0f} % of the records' read rate "
                f"({100 * ratios['of_raw_read_bytes']['l3l4']:.1f} % of the bytes' rate) with `l3l4`. "
                f"A {report['small_capture']['frames']}-frame capture takes {report['small_capture']['seconds']:.2f} s "
                f"(start-up included). Peak memory {ours['l3l4']['peak_memory_bytes'] / 2 ** 20:.0f} MiB")
    if "long_capture" in report:
        long = report["long_capture"]
        text[-1] += (f", and {long['peak_memory_bytes'] / 2 ** 20:.0f} MiB on {_rate(long['frames'])} frames "
                     f"({long['bytes'] / 1e9:.1f} GB, {_rate(long['frames_per_second'])} frames/s)")
    text[-1] += "."
    if "vs_editcap_w_cpu" in ratios:
        text.append(f"In CPU seconds (user and system, which the machine's load moves far less than the wall "
                    f"clock): {ratios['vs_editcap_w_cpu']['frame']} times `editcap -w` "
                    f"({ratios['vs_editcap_w_cpu']['l3l4']} with `l3l4`)"
                    + (f", {100 * ratios['of_raw_read_records_cpu']['l3l4']:.0f} % of the records' read"
                       if "of_raw_read_records_cpu" in ratios else "")
                    + (f", {report['small_capture']['cpu_seconds']:.2f} s for the small capture"
                       if report["small_capture"].get("cpu_seconds") is not None else "") + ".")
    stages = ours["l3l4"]["stage_seconds"]
    text.append("Where `l3l4`'s time goes (its report's `seconds`): " + ", ".join(
        f"{name} {value:.2f}" for name, value in stages.items() if name != "total") + " s.")
    return "\n".join(lines) + "\n\n" + " ".join(text)
