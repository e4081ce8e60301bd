"""Benchmark of ``apbbf dedup`` on a capture (``make capture-bench``): frames per second, start-up included, on a
capture of 10^6 frames, against Wireshark's ``editcap -w`` on the same file where it is installed.

Each tool runs as a user runs it (a subprocess, wall clock, the median of ``repeats`` runs): ``apbbf dedup`` with
the ``l3l4`` key (copies routed one hop further or re-tagged are duplicates) and with the ``frame`` key (every
byte, what editcap compares), and ``editcap -w <window>``. Recall is measured against the exact de-duplication of
the same key over the same window (``apbbf dedup``'s report: duplicates found of the exact ones); editcap's
removed frames are compared with the exact ``frame``-key duplicates (editcap compares whole frames by MD5, so a
frame removed by it is an exact copy within its window).
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

__all__ = ["run"]


def _timed(command, **kwargs) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    seconds = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({result.returncode}): {result.stderr[-2000:]}")
    return seconds, result


def _frames(path: Path) -> int:
    from ..capture import read_capture
    return len(read_capture(path))


def run(capture: Path, out_dir: Path, *, work: Path | None = None, window: str = "1ms", repeats: int = 1,
        seed: int = 1) -> dict:
    """Run the benchmark on ``capture``; write ``out_dir/capture_bench.json`` and return its content.

    Parameters
    ----------
    capture : pathlib.Path
        A pcap or pcapng capture.
    out_dir : pathlib.Path
        Where the report goes.
    work : pathlib.Path or None
        Where the tools write their outputs (removed after each run); default the capture's folder.
    window : str
        The window (``apbbf dedup --window``; editcap gets it in seconds).
    repeats : int
        Runs per tool; the median is reported.
    seed : int
        The hash seed of ``apbbf dedup`` (so that reruns are the same).
    """
    from ..dedup import parse_window
    capture, out_dir = Path(capture), Path(out_dir)
    work = Path(work) if work is not None else capture.parent
    work.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    frames = _frames(capture)
    apbbf = Path(sys.executable).parent / "apbbf"
    report = {"capture": str(capture), "frames": frames, "bytes": capture.stat().st_size, "window": window,
              "repeats": repeats, "machine": f"{os.cpu_count()} cores, shared", "runs": []}
    for key in ("l3l4", "frame"):
        times, result = [], None
        for _ in range(repeats):
            seconds, result = _timed([str(apbbf), "dedup", str(capture), "--window", window, "--key", key, "--seed",
                                      str(seed), "--json", "-q", "-o", str(work / f"apbbf-{key}.pcap")])
            times.append(seconds)
        (work / f"apbbf-{key}.pcap").unlink()
        r = json.loads(result.stdout)
        seconds = statistics.median(times)
        cmp = r["comparison"]
        report["runs"].append({
            "tool": "apbbf dedup", "key": key, "seconds": round(seconds, 2),
            "runs_seconds": [round(t, 2) for t in times],
            "frames_per_second": round(frames / seconds), "removed": r["counters"]["dropped"],
            "exact_duplicates": r["exact"]["duplicates"], "found": cmp["duplicates_found"],
            "missed": cmp["duplicates_missed"],
            "recall": cmp["duplicates_found"] / max(1, r["exact"]["duplicates"]),
            "false_positives": cmp["false_positives"], "stage_seconds": r["seconds"]})
    editcap = shutil.which("editcap")
    if editcap:
        version = subprocess.run([editcap, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        window_s = parse_window(window) / 1e9
        times, result = [], None
        for _ in range(repeats):
            # -F pcap: the same output format as apbbf dedup's (editcap writes pcapng by default)
            seconds, result = _timed([editcap, "-F", "pcap", "-w", f"{window_s:g}", str(capture),
                                      str(work / "editcap.pcap")])
            times.append(seconds)
        seconds = statistics.median(times)
        kept = _frames(work / "editcap.pcap")
        (work / "editcap.pcap").unlink()
        exact = next(r for r in report["runs"] if r["key"] == "frame")["exact_duplicates"]
        text = result.stdout + result.stderr
        match = re.search(r"(\d+) packets? seen, (\d+) packets? skipped", text)
        report["runs"].append({
            "tool": "editcap -w", "command": f"editcap -F pcap -w {window_s:g}", "version": version, "key": "frame (MD5)", "seconds": round(seconds, 2),
            "runs_seconds": [round(t, 2) for t in times], "frames_per_second": round(frames / seconds),
            "removed": frames - kept, "exact_duplicates": exact, "recall": (frames - kept) / max(1, exact),
            "editcap_says": match.group(0) if match else None})
        apbbf_frame = next(r for r in report["runs"] if r["key"] == "frame")
        report["speedup_vs_editcap"] = {r["key"]: round(r["frames_per_second"] / (frames / seconds), 2)
                                        for r in report["runs"] if r["tool"] == "apbbf dedup"}
        report["speedup_vs_editcap"]["same_key"] = round(apbbf_frame["frames_per_second"] / (frames / seconds), 2)
    else:
        report["editcap"] = "not installed (apt-get install wireshark-common)"
    path = out_dir / "capture_bench.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report
