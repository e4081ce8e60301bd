"""The capture benchmark's helpers (apbbf/flows/capture_bench.py): the small capture is the first records of the
big one; the repeated capture is the same records, later in time, copies included; the speed table renders."""

import numpy as np

from apbbf.capture import read_capture
from apbbf.flows.capture_bench import repeated_capture, small_capture, speed_table, _ratios

from .dedup_traffic import traffic, write_pcap


def test_small_and_repeated_captures(tmp_path):
    source = tmp_path / "in.pcap"
    write_pcap(source, traffic(300, 4))
    original = read_capture(source)
    small = read_capture(small_capture(source, tmp_path / "small.pcap", frames=27))
    assert len(small) == 27 and np.array_equal(small.times, original.times[:27])
    long = read_capture(repeated_capture(source, tmp_path / "long.pcap", 3))
    assert len(long) == 3 * len(original) and not long.warnings
    n = len(original)
    assert (np.diff(long.times) >= 0).all() and long.times[n] - long.times[n - 1] >= 10 ** 9
    for copy in range(3):
        assert np.array_equal(long.times[copy * n:(copy + 1) * n] - long.times[copy * n], original.times
                              - original.times[0])
        assert np.array_equal(long.caplens[copy * n:(copy + 1) * n], original.caplens)
    assert long.data[long.offsets[-1]:long.offsets[-1] + long.caplens[-1]].tobytes() == \
        original.data[original.offsets[-1]:original.offsets[-1] + original.caplens[-1]].tobytes()


def test_speed_table():
    run = {"tool": "apbbf dedup", "seconds": 2.0, "frames_per_second": 500_000, "removed": 9, "exact_duplicates": 9,
           "recall": 1.0, "peak_memory_bytes": 100 << 20, "stage_seconds": {"read": 1.0, "total": 2.0}}
    report = {"frames": 10 ** 6, "bytes": 3 * 10 ** 8,
              "runs": [{**run, "key": "l3l4"}, {**run, "key": "frame"},
                       {"tool": "editcap -w", "command": "editcap -F pcap -w 0.001", "key": "frame (MD5)",
                        "seconds": 20.0, "frames_per_second": 50_000, "removed": 9, "exact_duplicates": 9,
                        "recall": 1.0}],
              "raw_read": {"records_seconds": 0.5, "records_frames_per_second": 2_000_000, "bytes_seconds": 0.1,
                           "bytes_per_second": 3e9, "frames_per_second_at_byte_rate": 10 ** 7},
              "small_capture": {"frames": 27, "seconds": 0.3},
              "ratios": {"vs_editcap_w": {"l3l4": 10.0, "frame": 10.0}, "vs_editcap_D": {"l3l4": 1, "frame": 1},
                         "of_raw_read_records": {"l3l4": 0.25, "frame": 0.25},
                         "of_raw_read_bytes": {"l3l4": 0.05, "frame": 0.05}}}
    table = speed_table(report)
    assert "| `apbbf dedup` | `l3l4` | 2.00 | 500 000 |" in table
    assert "10.0 times as fast as `editcap -w`" in table and "25 % of the records' read rate" in table


def test_speed_table_with_cpu_seconds():
    run = {"tool": "apbbf dedup", "seconds": 4.0, "cpu_seconds": 2.0, "frames_per_second": 250_000, "removed": 9,
           "exact_duplicates": 9, "recall": 1.0, "peak_memory_bytes": 100 << 20, "stage_seconds": {"read": 1.0}}
    editcap = {"tool": "editcap -w", "command": "editcap -F pcap -w 0.001", "key": "frame (MD5)", "seconds": 40.0,
               "cpu_seconds": 30.0, "frames_per_second": 25_000, "removed": 9, "exact_duplicates": 9, "recall": 1.0}
    window = {"tool": "editcap -D", "command": "editcap -F pcap -D 1000", "key": "frame (MD5, last 1000 frames)",
              "seconds": 2.0, "cpu_seconds": 2.0, "frames_per_second": 500_000, "removed": 5}
    report = {"frames": 10 ** 6, "bytes": 3 * 10 ** 8,
              "runs": [{**run, "key": "l3l4"}, {**run, "key": "frame"}, window, editcap],
              "raw_read": {"records_seconds": 0.5, "records_cpu_seconds": 0.5, "records_frames_per_second": 2_000_000,
                           "bytes_seconds": 0.1, "bytes_per_second": 3e9, "frames_per_second_at_byte_rate": 10 ** 7},
              "small_capture": {"frames": 27, "seconds": 0.6, "cpu_seconds": 0.25}}
    report["ratios"] = _ratios(report)
    assert report["ratios"]["vs_editcap_w_cpu"] == {"l3l4": 15.0, "frame": 15.0}
    assert report["ratios"]["of_raw_read_records_cpu"] == {"l3l4": 0.25, "frame": 0.25}
    table = speed_table(report)
    assert "| `apbbf dedup` | `l3l4` | 4.00 | 250 000 | 9 | 9 | 100 % | 2.00 |" in table
    assert "In CPU seconds" in table and "15.0 times `editcap -w`" in table and "25 % of the records' read" in table
    assert "0.25 s for the small capture" in table


def test_ratios_of_repeats_and_their_spread():
    """With repeats, the ratios are those of the medians and their range pairs the extreme runs (their fastest
    against our slowest, their slowest against our fastest); the table gives each tool's range of seconds."""
    def ours(key, runs):
        return {"tool": "apbbf dedup", "key": key, "seconds": sorted(runs)[1], "runs_seconds": runs,
                "frames_per_second": round(10 ** 6 / sorted(runs)[1]), "removed": 9, "exact_duplicates": 9,
                "recall": 1.0, "peak_memory_bytes": 100 << 20, "stage_seconds": {"read": 1.0}}

    def theirs(tool, runs):
        return {"tool": tool, "command": f"editcap -F pcap {tool[-2:]} 1", "key": "frame (MD5)",
                "seconds": sorted(runs)[1], "runs_seconds": runs, "frames_per_second": round(10 ** 6 / sorted(runs)[1]),
                "removed": 9}

    report = {"frames": 10 ** 6, "bytes": 3 * 10 ** 8, "repeats": 3,
              "runs": [ours("l3l4", [2.0, 2.5, 3.0]), ours("frame", [2.0, 2.0, 2.0]),
                       theirs("editcap -D", [2.0, 2.0, 2.0]), theirs("editcap -w", [30.0, 24.0, 36.0])],
              "raw_read": {"records_seconds": 0.5, "records_frames_per_second": 2_000_000, "bytes_seconds": 0.1,
                           "bytes_per_second": 3e9, "frames_per_second_at_byte_rate": 10 ** 7},
              "small_capture": {"frames": 27, "seconds": 0.3}}
    report["ratios"] = _ratios(report)
    assert report["ratios"]["vs_editcap_w"] == {"l3l4": 12.0, "frame": 15.0}
    assert report["ratios"]["vs_editcap_w_range"] == {"l3l4": [8.0, 18.0], "frame": [12.0, 18.0]}
    table = speed_table(report)
    assert "| `apbbf dedup` | `l3l4` | 2.50 (2.00-3.00) | 400 000 |" in table
    assert "the median of 3 runs each" in table
    assert "15.0 times as fast as `editcap -w` on the same key (12.0-18.0 over the runs), 12.0 with `l3l4` " \
           "(8.0-18.0 over the runs)" in table
