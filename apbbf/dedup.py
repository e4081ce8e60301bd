# amaranth: UnusedElaboratable=no
"""``apbbf dedup``: run the de-duplication model (:mod:`apbbf.model.dedup`) on pcap or pcapng captures.

The captures (:mod:`apbbf.capture`: any link type that carries IP, compressed, standard input, several files as
one stream) are keyed as the gateware keys the Ethernet frames that carry their packets
(:func:`apbbf.model.packet.network_layer`), and the filter runs on the frames' times in ticks, across the files in
the order given. The output is the input's own records, for the frames the datapath forwards.

The filter is sized in one of three ways:

- from the capture itself (the default, for files): ``rate`` is the most checked frames within any ``span``
  ticks, divided by ``span``, and :func:`apbbf.model.timeanalysis.solve_timed` gives the smallest Config with the
  worst-case fp at that rate and the span kept up to ``burst`` times it (``--burst``, default 2: frames arriving in
  bursts inside a span shift the filter by count as well as by time, about twice as often as a steady stream of
  the same peak; see :mod:`apbbf.model.timeanalysis`);
- from a rate the user gives (``--rate``, peak frames per second), the same way: a pipe cannot be sized from its
  own peak before it has been read;
- from a Config the user gives (``--config``): the one an earlier run printed, or an exported core's (its
  Verilog file, whose header records it).

The hash seed is drawn afresh (``secrets.randbits(64)``, as ``apbbf export`` does) unless ``--seed`` or the
given Config has one; it is printed with the Config, and so is the ``apbbf export --dedup`` command that builds
the same design. With ``drop``, frames longer than ``--max-frame`` pass unchecked exactly as the gateware passes
them (:func:`apbbf.model.dedup.oversize`, which counts ``--data-width`` beats).

The report compares the filter with an exact de-duplication over the same keys and ticks
(:class:`apbbf.model.dedup.BulkExactWindow`: :class:`~apbbf.model.dedup.ExactWindow`'s answers over arrays).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import secrets
import shlex
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

from .arrivals import PeakTracker, _Arrivals
from .capture import STDIO

__all__ = ["parse_window", "parse_rate", "parse_config", "peak_count", "size_filter", "export_command",
           "check_datapath", "dedup_capture", "parse_change", "changes_of", "add_parser", "main"]

#: Config fields that ``--config`` reads, in the order the report prints them.
CONFIG_FIELDS = ("k", "l", "block_bits", "block_hashes", "segment_blocks", "key_width", "seed", "span",
                 "time_width", "extra_segments", "row_bits", "burst_bits")


# Sizing -----------------------------------------------------------------------------------------------------------

def parse_window(text: str) -> int:
    """Nanoseconds in a duration such as ``1ms``, ``600us``, ``10ns`` or ``0.5s``.

    Raises
    ------
    ValueError
        If ``text`` is not a positive duration of at least 1 ns.
    """
    from .units import duration
    seconds = duration(text)
    ns = round(seconds * 1e9)
    if ns < 1:
        raise ValueError(f"a duration must be at least 1 ns, not {text!r}")
    return ns


_SCALES = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}


def parse_rate(text: str) -> float:
    """Frames per second in ``2e6``, ``2M``, ``1.5Mpps``, ``800k``.

    Raises
    ------
    ValueError
        If ``text`` is not a positive rate.
    """
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([kKmMgG]?)\s*(?:pps|fps|/s)?\s*", text)
    try:
        rate = float(match.group(1)) * _SCALES[match.group(2).lower()] if match else float("nan")
    except ValueError:
        rate = float("nan")
    if not rate > 0 or rate == float("inf"):
        raise ValueError(f"--rate must be a positive number of frames per second (e.g. 2e6, 2M, 1.5Mpps), "
                         f"not {text!r}")
    return rate


def parse_config(text: str, seed: int | None = None):
    """The Config in ``text``: ``Config(k=3, l=21, ..., span=1000, ...)`` as ``apbbf dedup`` prints it, the
    ``Filter:`` line of an exported core's Verilog header, or the name of a file holding either (an exported
    ``.v``: its header is read).

    Parameters
    ----------
    text : str
    seed : int or None
        The hash seed if ``text`` has none (None: draw one); if ``text`` has one, ``seed`` must agree.

    Returns
    -------
    Config

    Raises
    ------
    ValueError
        If there is no Config with a span in ``text``, a field is out of range, or the seeds disagree.
    """
    from .model.config import Config
    source = "--config"
    path = Path(text)
    if len(text) < 4096 and "=" not in text and path.is_file():
        source = str(path)
        text = path.read_text(errors="replace")
        if "module " in text:
            text = text[:text.index("module ")]                    # a Verilog file: its header
    fields = {}
    for name, value in re.findall(r"\b(" + "|".join(CONFIG_FIELDS) + r")(?:\(\w+\))?\s*=\s*(0x[0-9a-fA-F]+|\d+)",
                                  text):
        fields.setdefault(name, int(value, 0))
    missing = [name for name in ("k", "l", "span") if name not in fields]
    if missing:
        raise ValueError(f"{source} holds no time-window Config (missing {', '.join(missing)}): give the "
                         f"Config(...) line an earlier apbbf dedup printed, or an exported core's Verilog file")
    if seed is not None and "seed" in fields and fields["seed"] != seed:
        raise ValueError(f"--seed {seed:#x} and the seed of {source} ({fields['seed']:#x}) differ: give one")
    fields.setdefault("seed", secrets.randbits(64) if seed is None else seed)
    try:
        return Config(**fields)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{source}: {error}") from None


def peak_count(ticks: np.ndarray, span: int) -> int:
    """The most ticks values within any ``span + 1`` consecutive ticks (keys a window must hold at once)."""
    if not len(ticks):
        return 0
    first = np.searchsorted(ticks, ticks - span, side="left")
    return int((np.arange(len(ticks)) - first + 1).max())


def size_filter(ticks: np.ndarray | None, span: int, fp: float, *, burst: float = 2.0, time_width: int | None = None,
                rate: float | None = None, seed: int = 0, peak: int | None = None, gap: int | None = None):
    """The filter for a capture (module documentation): ``(config, sizing)``.

    Parameters
    ----------
    ticks : numpy.ndarray of int64
        The checked frames' ticks, non-decreasing (ignored, but for the longest gap, with ``rate``).
    span : int
        Ticks.
    fp : float
        Target worst-case false-positive rate at the planned rate.
    burst : float
        Rates up to ``burst`` times the planned rate keep the span (>= 1).
    time_width : int or None
        Bits of the filter's times; default the smallest of 32, 48, 64 above the span and the longest gap.
    rate : float or None
        The planned rate in frames per tick; None: the capture's peak (the most ticks within a span, divided by
        the span).
    seed : int
        The hash seed.
    peak, gap : int or None
        The most ticks within any ``span + 1`` consecutive ticks and the longest gap between consecutive ticks,
        if already known (:class:`PeakTracker`, a capture read in chunks): ``ticks`` is then not read.

    Returns
    -------
    config : Config
    sizing : dict
        ``peak_frames_per_span`` (None if ``rate`` is given), ``rate_per_tick`` (the planned rate),
        ``predicted_fp`` (worst case at that rate), ``burst``, ``longest_gap_ticks``, ``planned_from``
        (``"capture"`` or ``"rate"``).

    Raises
    ------
    ValueError
        If no configuration meets the targets.
    """
    from .model.timeanalysis import solve_timed, timed_analysis
    if rate is None:
        peak = max(1, peak_count(ticks, span) if peak is None else peak)
        rate = peak / span
    else:
        peak = None
    if gap is None:
        gap = int(np.diff(ticks).max()) if len(ticks) > 1 else 0
    if time_width is None:
        time_width = next((w for w in (32, 48, 64) if span + gap < 1 << (w - 1)), 64)
    config = solve_timed(fp, span, rate, burst=burst, time_width=time_width, seed=seed)
    return config, {"peak_frames_per_span": peak, "rate_per_tick": rate,
                    "predicted_fp": timed_analysis(config, rate)["fp"], "burst": burst, "longest_gap_ticks": gap,
                    "planned_from": "capture" if peak is not None else "rate"}


def export_command(config, key: str, action: str, *, data_width: int = 512, max_frame: int = 9600,
                   fcs: bool = False, output: str = "apbbf_dedup_axis.v") -> str:
    """The ``apbbf export --dedup`` command line that builds the gateware of this run (the same Config, seed
    included, key, action, width, ``max_frame`` and FCS), frames timed by ``tuser`` in the same ticks."""
    c = config
    words = ["apbbf", "export", "--dedup", "--key", key, "--data-width", data_width, "--action", action,
             "--max-frame", max_frame] + (["--fcs"] if fcs else []) + [
        "--k", c.k, "--l", c.l, "--block-bits", c.block_bits, "--block-hashes", c.block_hashes,
        "--segment-blocks", c.segment_blocks, "--span", c.span, "--time-width", c.time_width,
        "--extra-segments", c.extra_segments] + (
        ["--row-bits", c.row_bits] + (["--burst-bits", c.burst_bits] if c.burst_bits else []) if c.row_layout
        else []) + ["--seed", f"{c.seed:#x}", "-o", output]
    return " ".join(shlex.quote(str(w)) for w in words)


# The run ----------------------------------------------------------------------------------------------------------

class _Bar:
    """A tqdm bar on stderr when wanted (a terminal, not --quiet), else nothing."""

    def __init__(self, enabled: bool, total: int, desc: str, unit: str):
        self._bar = None
        if enabled:
            from tqdm import tqdm
            self._bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, leave=False,
                             delay=0.5)
        self._done = 0

    def to(self, done: int) -> None:
        if self._bar is not None:
            self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()



def check_datapath(spec, action: str, *, max_frame: int, data_width: int, fcs: bool) -> None:
    """Refuse a datapath that the printed ``apbbf export --dedup`` command could not build: the gateware's own
    checks (:class:`~apbbf.hdl.packet.dedup.PacketDedup`, on a placeholder filter; with ``drop``, ``max_frame``
    must be more beats than the key extractor's latency for ``spec``). The placeholder is never elaborated: this
    file's first line tells Amaranth so (``UnusedElaboratable=no``).

    A datapath the gateware took is remembered (:func:`accepted_datapaths`: a file in the user's cache directory,
    keyed by the gateware's sources' sizes and times), so that a later run does not import Amaranth to ask again.

    Raises
    ------
    ValueError
        Naming the parameter and the least value the gateware takes.
    """
    key = json.dumps([str(spec), action, max_frame, data_width, bool(fcs)])
    cache = accepted_datapaths()
    if cache is not None and key in cache["datapaths"]:
        return
    from .hdl.packet.dedup import PacketDedup
    from .model.config import Config
    try:
        PacketDedup(Config(1, 1, span=1), spec, data_width=data_width, action=action, fcs=fcs, max_frame=max_frame)
    except ValueError as error:
        raise ValueError(f"{error} (the gateware refuses it: apbbf export --dedup could not build this datapath)") \
            from None
    if cache is not None:
        cache["datapaths"] = sorted(set(cache["datapaths"]) | {key})[-256:]
        try:
            path = cache.pop("path")
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}")
            partial.write_text(json.dumps(cache))
            os.replace(partial, path)
        except OSError:
            pass                                            # a cache that cannot be written is not one


def _gateware_stamp() -> str | None:
    """The sizes and modification times of the gateware's Python sources (``hdl/``), or None if they are not
    found: what an accepted datapath is valid for."""
    here = Path(__file__).resolve().parent
    for root in (here / "hdl", here.parent / "hdl"):
        if (root / "packet").is_dir():
            files = sorted(root.rglob("*.py"))
            return ";".join(f"{f.relative_to(root)}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files)
    return None


def accepted_datapaths() -> dict | None:
    """The datapaths :func:`check_datapath` found the gateware to take, as remembered in
    ``$XDG_CACHE_HOME/apbbf/datapaths.json`` (default ``~/.cache``) for these gateware sources: ``{"datapaths":
    [...], "path": Path, ...}``; None when the sources cannot be found (nothing is remembered then). Set
    ``APBBF_NO_CACHE=1`` to ask the gateware every time.
    """
    if os.environ.get("APBBF_NO_CACHE"):
        return None
    stamp = _gateware_stamp()
    if stamp is None:
        return None
    import hashlib
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "apbbf" / "datapaths.json"
    digest = hashlib.sha256(stamp.encode()).hexdigest()
    try:
        cache = json.loads(path.read_text())
        if cache.get("gateware") != digest or not isinstance(cache.get("datapaths"), list):
            raise ValueError("stale")
    except (OSError, ValueError):
        cache = {"gateware": digest, "datapaths": []}
    cache["path"] = path
    return cache


def _as_paths(paths) -> list:
    import os
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    paths = list(paths)
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"a capture must be a str or os.PathLike, not {p!r}")
    return paths


def dedup_capture(paths, *, window: int | None = None, key: str = "l3l4", fp: float = 1e-4, action: str = "drop",
                  tick: int = 1000, burst: float = 2.0, output=None, fcs: int | None = None,
                  time_width: int | None = None, engine: str = "bulk", progress: bool = False,
                  rate: float | None = None, config=None, seed: int | None = None, max_frame: int = 9600,
                  data_width: int = 512, datapath_fcs: bool = False, chunk_bytes: int | None = None,
                  changes=None) -> dict:
    """Run the de-duplication model on captures (one stream) and compare it with the exact answer.

    Parameters
    ----------
    paths : str or os.PathLike, or a list of them
        pcap or pcapng captures, in order (``-``: standard input); compressed ones are decompressed.
    window : int or None
        The window in nanoseconds; None: 1 ms, or the span of ``config`` in ticks.
    key : str
        A key specification (:meth:`apbbf.model.packet.KeySpec.parse`).
    fp : float
        Target false-positive rate of the filter at the planned rate.
    action : {"drop", "mark", "count"}
    tick : int
        Nanoseconds per tick.
    burst : float
        See :func:`size_filter`.
    output : str or os.PathLike or None
        Where to write the frames the datapath forwards (``-``: standard output; ``.gz``, ``.zst``, ``.lz4``
        compress).
    fcs : int or None
        FCS bytes at the end of each record, overriding the capture's declaration.
    time_width : int or None
        See :func:`size_filter`.
    engine : {"bulk", "model"}
        The filter's evaluation (:class:`apbbf.model.dedup.Dedup`).
    progress : bool
        Show progress bars on stderr.
    rate : float or None
        The planned rate in frames per second, instead of the capture's own peak.
    config : Config or None
        The filter, instead of sizing one (its span is the window in ticks).
    seed : int or None
        The hash seed when the filter is sized here; None: drawn.
    max_frame, data_width, datapath_fcs
        The gateware's: with ``drop``, longer frames pass unchecked (:func:`apbbf.model.dedup.oversize`).
    chunk_bytes : int or None
        Bytes read at a time (:func:`apbbf.capture.iter_capture`; default 4 MiB): the records are processed in
        chunks of whole records, so the memory does not grow with the capture (a file sized from its own peak is
        read twice: its times first, and the second pass takes the first's record starts, checked, from a
        temporary file: :class:`apbbf.records.WalkLog`). Chunks change no answer.
    changes : dict or None
        Run-time changes by frame index, as the gateware's register map names them (``CHANGE_FRAME``):
        :meth:`apbbf.model.dedup.Dedup.run`'s ``changes`` (``("action", name)``, ``("clear",)``, ``("rekey",
        seed)``; :func:`parse_change` reads them from text). The exact answer is not cleared: misses after a
        clear or a re-key are the change's.

    Returns
    -------
    dict
        The report (``capture``, ``key``, ``window``, ``filter``, ``datapath``, ``counters``, ``exact``,
        ``comparison``, ``output``, ``export``, ``seconds``).

    Raises
    ------
    CorruptCapture
        At a corrupt record in the middle of a capture (naming its byte offset): the frames before it were
        processed and written; the exception's ``report`` is theirs.
    TypeError, ValueError, OSError
        On bad arguments or captures; nothing is written then.
    """
    from .model.config import check_config, check_integer
    from .model.dedup import DATA_WIDTHS, BulkExactWindow, Dedup, ethernet_lengths, oversize, span_ticks
    from .capture import CorruptCapture, iter_captures, open_output, write_chunk
    from .records import WalkLog
    from .model.packet import FrameBatch, KeySpec, check_link, frame_keys, linktype_name, network_layer
    from .model.timeanalysis import planned_rate, timed_analysis

    paths = _as_paths(paths)
    spec = KeySpec.parse(key)
    check_integer("tick", tick, range(1, 1 << 63))
    if action not in ("drop", "mark", "count"):
        raise ValueError(f"action must be drop, mark or count, not {action!r}")
    check_integer("max_frame", max_frame, range(64, 65536))
    if data_width not in DATA_WIDTHS:
        raise ValueError(f"data_width must be one of {', '.join(map(str, DATA_WIDTHS))}, not {data_width!r}")
    check_datapath(spec, action, max_frame=max_frame, data_width=data_width, fcs=datapath_fcs)
    if config is not None:
        check_config(config)
        if not config.timed or config.key_width != 64:
            raise ValueError("config must have a span (the window in ticks) and 64-bit keys")
        if rate is not None:
            raise ValueError("give --rate or --config, not both")
        if seed is not None and seed != config.seed:
            raise ValueError(f"--seed {seed:#x} and the Config's seed ({config.seed:#x}) differ: give one")
        if window is None:
            window = config.span * tick
        elif span_ticks(window, tick) != config.span:
            raise ValueError(f"--window {window} ns is {span_ticks(window, tick)} ticks of {tick} ns, but the "
                             f"Config's span is {config.span}: give one of them (or the --tick it was sized with)")
    if window is None:
        window = 1_000_000
    check_integer("window", window, range(1, 1 << 63))
    if rate is not None and not (isinstance(rate, (int, float)) and rate > 0):
        raise ValueError(f"rate must be a positive number of frames per second, not {rate!r}")
    if config is None and rate is None and any(str(p) == STDIO for p in paths):
        raise ValueError("standard input cannot be sized from its own peak rate before it has been read: give "
                         "--rate (the peak frames per second to plan for) or --config (the Config an earlier "
                         "apbbf dedup or an exported core printed)")
    if output is not None and str(output) != STDIO and any(str(p) != STDIO and Path(p).exists()
                                                            and Path(p).resolve() == Path(output).resolve()
                                                            for p in paths):
        raise ValueError(f"the output {output} is one of the captures")
    seconds = {"read": 0.0, "size": 0.0, "keys": 0.0, "exact": 0.0, "filter": 0.0, "write": 0.0}
    clock = time.perf_counter()
    span = span_ticks(window, tick)
    planned = None if rate is None else rate * tick / 1e9
    drawn = secrets.randbits(64) if seed is None else seed
    datapath = dict(max_frame=max_frame, data_width=data_width, fcs=datapath_fcs)
    sizing = None

    def released_of(capture, linktype):
        if action != "drop" or not len(capture):
            return np.zeros(len(capture), dtype=bool)
        lengths = ethernet_lengths(FrameBatch(capture.data, capture.offsets, capture.frame_lengths), linktype)
        return oversize(lengths, max_frame, data_width, datapath_fcs)

    def same_link(capture, linktype):
        if len(capture) and capture.linktype != linktype:
            raise ValueError(f"{capture.path} has link type {linktype_name(capture.linktype)}, not "
                             f"{linktype_name(linktype)} as before: one link type per run")

    corrupt = log = None
    if config is None and planned is None:
        # a file sized from its own peak: a first pass over its records (their times and lengths only)
        bar = _Bar(progress, None, "sizing", "frame")
        peaks, arrivals, frames, first = PeakTracker(span), _Arrivals(), 0, None
        log = WalkLog()                                      # the records' starts, for the second pass
        try:
            for capture in iter_captures(paths, fcs=fcs, chunk_bytes=chunk_bytes, log=log):
                if first is None:
                    first, linktype = capture, capture.linktype
                    check_link(spec, linktype)
                same_link(capture, linktype)
                if len(capture):
                    ticks = arrivals.add(capture.times) // tick
                    peaks.add(ticks[~capture.errored & ~released_of(capture, linktype)])
                frames += len(capture)
                bar.to(frames)
        except CorruptCapture as error:
            corrupt = error                                  # sized on the records before it
        finally:
            bar.close()
        if first is None:
            raise corrupt
        seconds["read"] += time.perf_counter() - clock
        clock = time.perf_counter()
        config, sizing = size_filter(None, span, fp, burst=burst, time_width=time_width, seed=drawn,
                                     peak=peaks.peak, gap=peaks.gap)
        seconds["size"] += time.perf_counter() - clock
        clock = time.perf_counter()
        log.replay()
        chunks = iter_captures(paths, fcs=fcs, chunk_bytes=chunk_bytes, log=log)
        total = frames
    else:
        # records are processed (and written) as they arrive; the filter is sized by the user
        chunks = iter_captures(paths, fcs=fcs, chunk_bytes=chunk_bytes)
        first = next(chunks)
        linktype = first.linktype
        check_link(spec, linktype)
        chunks = itertools.chain([first], chunks)
        total = None
        if config is None:
            config, sizing = size_filter(np.zeros(0, dtype=np.int64), span, fp, burst=burst, time_width=time_width,
                                         rate=planned, seed=drawn)
    if sizing is None:
        sizing = {"peak_frames_per_span": None, "rate_per_tick": planned_rate(config),
                  "predicted_fp": timed_analysis(config, planned_rate(config))["fp"], "burst": None,
                  "planned_from": "config", "longest_gap_ticks": None}
    marks = action == "mark" or any(c == ("action", "mark") for made in (changes or {}).values() for c in made)
    if output is not None and marks and first.format != "pcapng":
        raise ValueError("pcap records have no room for a mark: use a pcapng capture, or --action drop or count")
    seconds["read"] += time.perf_counter() - clock

    pipeline = Dedup(config, spec, action, engine=engine, linktype=linktype, **datapath)
    retain = span + (config.k + 1) * config.shift_interval
    exact = BulkExactWindow(span, retain)
    totals = dict.fromkeys(("frames", "bytes", "errored", "truncated", "fcs_removed",
                            "oversize", "exact", "checked", "found", "false_positives", "late", "missed", "fresh",
                            "fresh_hit", "written"), 0)
    peaks, arrivals = PeakTracker(span), _Arrivals()
    # a file is written under a temporary name and renamed when complete: an error leaves nothing behind
    out = temporary = None
    if output is not None:
        if str(output) != STDIO:
            target = Path(output)
            temporary = target.with_name(f".{target.name}.{os.getpid()}.partial")
        out = open_output(output, into=temporary)
    complete = False
    bar = _Bar(progress, total, "dedup", "frame")
    sources, warnings = set(), []

    def dedup_chunk(capture):
        """Key, filter, score and write one chunk of records."""
        same_link(capture, linktype)
        sources.add(capture.source)
        warnings.extend(f"{capture.path}: {w}" if len(paths) > 1 else w for w in capture.warnings)
        m = len(capture)
        if not m:
            if out is not None:
                write_chunk(out, capture, np.zeros(0, dtype=bool))
            return
        clock = time.perf_counter()
        ticks = arrivals.add(capture.times) // tick
        errored = capture.errored
        released = released_of(capture, linktype)
        checked = ~errored & ~released
        records = FrameBatch(capture.data, capture.offsets, capture.frame_lengths)
        view, ethertypes = network_layer(records, linktype)
        peaks.add(ticks[checked])                  # the peak within any span, across chunks
        seconds["read"] += time.perf_counter() - clock
        forward = np.ones(m, dtype=bool)
        mark = np.zeros(m, dtype=bool)
        chunk = 1 << 16
        for lo in range(0, m, chunk):
            hi = min(m, lo + chunk)
            clock = time.perf_counter()
            keys, texts = frame_keys(view[lo:hi], spec, message_rows=True, ethertypes=ethertypes[lo:hi])
            seconds["keys"] += time.perf_counter() - clock
            clock = time.perf_counter()
            ok = np.flatnonzero(checked[lo:hi])
            dup, age = exact.run(keys[ok], texts[ok], ticks[lo:hi][ok])
            del texts
            seconds["exact"] += time.perf_counter() - clock
            clock = time.perf_counter()
            result = pipeline.run(records[lo:hi], ticks[lo:hi], errored=errored[lo:hi], keys=keys, changes=changes)
            seconds["filter"] += time.perf_counter() - clock
            forward[lo:hi], mark[lo:hi] = result.forward, result.mark
            filtered = result.duplicate[ok]
            fresh = age < 0                     # no copy within the filter's longest memory
            totals["exact"] += int(dup.sum())
            totals["found"] += int((filtered & dup).sum())
            totals["false_positives"] += int((filtered & ~dup).sum())
            totals["late"] += int((filtered & ~dup & (age > span)).sum())
            totals["missed"] += int((dup & ~filtered).sum())
            totals["fresh"] += int(fresh.sum())
            totals["fresh_hit"] += int((filtered & fresh).sum())
            bar.to(totals["frames"] + hi)
        totals["frames"] += m
        totals["bytes"] += int(capture.caplens.sum())
        totals["errored"] += int(errored.sum())
        totals["truncated"] += int(np.count_nonzero(capture.caplens < capture.wirelens))
        totals["fcs_removed"] += int(np.count_nonzero(capture.frame_lengths < capture.caplens))
        totals["oversize"] += int(released.sum())
        totals["checked"] += int(checked.sum())
        if out is not None:
            clock = time.perf_counter()
            totals["written"] += write_chunk(out, capture, forward, mark if action == "mark" else None)
            seconds["write"] += time.perf_counter() - clock

    try:
        try:
            clock = time.perf_counter()
            for capture in chunks:
                seconds["read"] += time.perf_counter() - clock
                dedup_chunk(capture)
                clock = time.perf_counter()
        except CorruptCapture as error:
            corrupt = error                                  # the frames before it are kept and written
        complete = True
    finally:
        bar.close()
        if log is not None:
            log.close()
        if out is not None:
            out.close()
        if temporary is not None:
            if complete:
                os.replace(temporary, output)
            else:
                temporary.unlink(missing_ok=True)

    n = totals["frames"]
    if sizing.get("longest_gap_ticks") is None:
        sizing["longest_gap_ticks"] = peaks.gap
    peak = max(1, peaks.peak)
    sizing["capture_peak_frames_per_span"] = peak
    sizing["capture_peak_fp"] = timed_analysis(config, peak / span)["fp"]
    filt = pipeline.filter
    c = config
    report = {
        "capture": {
            "path": ", ".join(map(str, paths)), "files": len(paths), "sources": sorted(sources),
            "format": first.format,
            "linktype": linktype, "linktype_name": linktype_name(linktype), "resolution": first.resolution,
            "frames": n, "bytes": totals["bytes"], "errored": totals["errored"], "truncated": totals["truncated"],
            "fcs_removed": totals["fcs_removed"], "reordered_timestamps": arrivals.reordered,
            "largest_step_back_ns": arrivals.step_back,
            "duration_seconds": float((arrivals.latest - arrivals.first) / 1e9) if n else 0.0,
            "warnings": warnings,
        },
        "key": str(spec),
        "window": {"nanoseconds": window, "tick_nanoseconds": tick, "span_ticks": span,
                   "recent_copy_ticks": retain},
        "filter": {
            "k": c.k, "l": c.l, "block_bits": c.block_bits, "block_hashes": c.block_hashes,
            "segment_blocks": c.segment_blocks, "key_width": c.key_width, "seed": c.seed, "span": c.span,
            "time_width": c.time_width, "extra_segments": c.extra_segments, "row_bits": c.row_bits,
            "burst_bits": c.burst_bits, "physical_segments": c.physical_segments, "generation": c.generation,
            "shift_interval": c.shift_interval, "memory_bits": c.hardware_memory_bits, "fp_target": fp, **sizing,
            "shifts": filt.shifts, "overflows": filt.overflows, "restarts": filt.restarts, "engine": engine,
        },
        "datapath": {**datapath, "oversize": totals["oversize"]},
        "action": action,
        "counters": pipeline.counters.as_dict(),
        "exact": {"duplicates": totals["exact"], "checked": totals["checked"]},
        "comparison": {
            "duplicates_found": totals["found"],
            "false_positives": totals["false_positives"],
            "false_positives_late_copies": totals["late"],
            "frames_without_recent_copy": totals["fresh"],
            "false_positive_rate": float(totals["fresh_hit"] / max(1, totals["fresh"])),
            "duplicates_missed": totals["missed"],
        },
        "output": None if output is None else {"path": str(output), "frames": totals["written"]},
        "export": export_command(c, str(spec), action, **datapath),
        "seconds": {name: round(value, 3) for name, value in seconds.items()},
    }
    report["seconds"]["total"] = round(sum(seconds.values()), 3)
    if corrupt is not None:
        report["capture"]["error"] = str(corrupt)
        corrupt.report = report
        raise corrupt
    return report


# Command line -----------------------------------------------------------------------------------------------------

_KEY_HELP = """\
key specification (default l3l4):
  l3l4     the IPv4/IPv6 packet as its length field gives it (no VLAN tags, padding or FCS), with DSCP/ECN,
           TTL and header checksum (IPv4) or traffic class and hop limit (IPv6) masked; other frames as frame
  frame    every byte of the frame, FCS excluded (the length is part of the key)
  RANGES   ranges separated by commas, each BASE:OFFSET+LENGTH[/MASK]:
             BASE   frame (byte 0 of the frame) or l3 (the IP header, after up to two VLAN tags)
             LENGTH bytes, or * for "to the end" (of the frame, or of the IP packet for l3)
             MASK   hex, two digits per byte, ANDed with the range's first bytes (at most 64)
           e.g. frame:0+12,l3:0+* (the MAC addresses and the IP packet, nothing masked)
           Ranges of one base increase and do not overlap; frame ranges come first and, with l3 ranges, end by
           byte 14. Frames that are not IPv4/IPv6 use them if all are frame ranges, else frame.
  CLASS=RANGES;...  a recipe per class (ipv4, ipv6, other; RANGES may be frame or l3l4), the rest frame,
           e.g. "ipv4=l3:0+20/ff00ffffffffffff00ff0000,l3:20+*;ipv6=l3l4"
The key is CRC-64/XZ of the selected bytes (docs/dedup.md, apbbf.model.packet)."""

_LINK_HELP = """\
link types (what the key covers):
  Ethernet (1)           as above
  LINUX_SLL (113), LINUX_SLL2 (276: tcpdump -i any), NULL (0), LOOP (108: BSD/macOS loopback), RAW (101),
  IPV4 (228), IPV6 (229: tunnels, VPNs), PPP (9, 50)
                         the link header is removed; l3l4 and l3 ranges key the IP packet exactly as on the
                         Ethernet frame carrying it (the same keys); frame keys the packet after the link header
                         (a packet seen on two interfaces of a -i any capture is one packet); frame ranges other
                         than frame:0+* are refused
  any other (802.11...)  frame only: every byte of each record, as editcap compares them"""

_SIZE_HELP = """\
sizing: a file is sized from its own peak rate; standard input (-) needs --rate or --config."""


def _ns(text: str) -> int:
    try:
        return parse_window(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _rate(text: str) -> float:
    try:
        return parse_rate(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _seed(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"--seed must be an integer 0..2**64-1 (e.g. 0x1234abcd), not {text!r}")
    return value


def _config_text(f: dict) -> str:
    return (f"Config(k={f['k']}, l={f['l']}, block_bits={f['block_bits']}, block_hashes={f['block_hashes']}, "
            f"segment_blocks={f['segment_blocks']}, seed={f['seed']:#x}, span={f['span']}, "
            f"time_width={f['time_width']}, extra_segments={f['extra_segments']}"
            + (f", row_bits={f['row_bits']}, burst_bits={f.get('burst_bits', 0)}" if f.get("row_bits") else "")
            + ")")


def _print_report(report: dict, file=None) -> None:
    def say(text):
        print(text, file=file)

    cap, f, cnt, cmp = report["capture"], report["filter"], report["counters"], report["comparison"]
    sources = [s for s in cap["sources"] if s != "file"]
    say(f"capture  {cap['path']}: {cap['format']}" + (f" ({', '.join(sources)})" if sources else "")
        + f", link type {cap['linktype_name']}, {cap['resolution']} timestamps, {cap['frames']} frames, "
        f"{cap['bytes']} bytes, {cap['duration_seconds']:.6g} s" + (f", {cap['files']} files" if cap["files"] > 1
                                                                     else ""))
    extra = [f"{cap[name]} {name.replace('_', ' ')}" for name in ("errored", "truncated", "fcs_removed") if cap[name]]
    if cap["reordered_timestamps"]:
        extra.append(f"{cap['reordered_timestamps']} timestamps earlier than one before them (by up to "
                     f"{cap['largest_step_back_ns'] / 1e3:g} us: taken as arriving at the latest time)")
    if extra:
        say(f"         {', '.join(extra)}")
    for warning in cap["warnings"]:
        say(f"         warning: {warning}")
    w = report["window"]
    say(f"key      {report['key']}")
    say(f"window   {w['nanoseconds'] / 1e6:g} ms = {w['span_ticks']} ticks of {w['tick_nanoseconds']} ns")
    planned = {"capture": f"the capture's peak {f['peak_frames_per_span']} frames per span",
               "rate": "--rate", "config": ""}[f["planned_from"]]
    if f["planned_from"] == "config":
        say(f"sizing   the Config given: up to {f['rate_per_tick']:.4g} frames per tick shift by time (a generation "
            f"per shift interval), predicted fp {f['predicted_fp']:.3g} there")
    else:
        say(f"sizing   planned {f['rate_per_tick']:.4g} frames per tick ({planned}), burst {f['burst']:g}x, fp "
            f"target {f['fp_target']:g} (predicted {f['predicted_fp']:.3g} at the planned rate)")
    if f["planned_from"] != "capture":
        say(f"         this capture's peak {f['capture_peak_frames_per_span']} frames per span "
            f"({f['capture_peak_frames_per_span'] / f['span'] / f['rate_per_tick']:.3g}x the planned rate): "
            f"predicted fp {f['capture_peak_fp']:.3g} there")
    say(f"config   {_config_text(f)}: {f['physical_segments']} segments, generation {f['generation']}, shift "
        f"interval {f['shift_interval']} ticks, {f['memory_bits']} bits")
    say(f"filter   {f['shifts']} shifts, {f['overflows']} overflows, {f['restarts']} restarts ({f['engine']})")
    d = report["datapath"]
    say(f"datapath data_width {d['data_width']}, max_frame {d['max_frame']}" + (", FCS" if d["fcs"] else "")
        + (f": {d['oversize']} frames longer passed unchecked" if report["action"] == "drop" else ""))
    say(f"counters frames {cnt['frames']}, duplicates {cnt['duplicates']}, dropped {cnt['dropped']}, "
        f"unchecked {cnt['unchecked']}, errored {cnt['errored']} (action {report['action']})")
    ex = report["exact"]
    say(f"exact    {ex['duplicates']} duplicates among {ex['checked']} checked frames (full keys, same window)")
    say(f"result   duplicates found {cmp['duplicates_found']} of {ex['duplicates']}, missed "
        f"{cmp['duplicates_missed']}; false positives {cmp['false_positives']}: "
        f"{cmp['false_positives_late_copies']} copies just older than the window, "
        f"{cmp['false_positives'] - cmp['false_positives_late_copies']} of "
        f"{cmp['frames_without_recent_copy']} frames without a copy in the last {w['recent_copy_ticks']} ticks "
        f"({cmp['false_positive_rate']:.3g})")
    if report["output"]:
        say(f"output   {report['output']['frames']} frames to {report['output']['path']}")
    say(f"export   {report['export']}")
    say("seconds  " + ", ".join(f"{name} {value:.2f}" for name, value in report["seconds"].items()))
    if cmp["duplicates_missed"]:
        say(f"MISSED   {cmp['duplicates_missed']} duplicates within the window were not found"
            + (f": the filter overflowed {f['overflows']} times (give a larger --burst)" if f["overflows"] else ""))


def parse_change(text: str) -> tuple[int, tuple]:
    """``FRAME:action=NAME``, ``FRAME:clear``, ``FRAME:rekey=SEED`` or ``FRAME:window=TICKS`` as ``(frame,
    change)``.

    Raises
    ------
    ValueError
        If ``text`` is none of these (the message gives the forms).
    """
    forms = "FRAME:action=drop|mark|count, FRAME:clear, FRAME:rekey=SEED or FRAME:window=TICKS"
    frame, _, change = text.partition(":")
    name, _, value = change.partition("=")
    try:
        index = int(frame, 0)
        if index < 0:
            raise ValueError
        if name == "action" and value in ("drop", "mark", "count"):
            return index, ("action", value)
        if name == "clear" and not value:
            return index, ("clear",)
        if name == "rekey" and 0 <= int(value, 0) < 1 << 64:
            return index, ("rekey", int(value, 0))
        if name == "window" and int(value, 0) > 0:
            return index, ("window", int(value, 0))
    except ValueError:
        pass
    raise ValueError(f"--change must be {forms}, not {text!r}")


def changes_of(texts) -> dict | None:
    """The ``--change`` texts as :func:`dedup_capture`'s ``changes`` (None for none)."""
    changes = {}
    for text in texts or ():
        index, change = parse_change(text)
        changes.setdefault(index, []).append(change)
    return changes or None


def _dedup(args) -> int:
    config = None
    if args.config is not None:
        config = parse_config(args.config, args.seed)
    try:
        report = dedup_capture(args.capture, window=args.window, key=args.key, fp=args.fp, action=args.action,
                               tick=args.tick, burst=args.burst, output=args.output, fcs=args.fcs,
                               time_width=args.time_width, engine=args.engine,
                               progress=not args.quiet and sys.stderr.isatty(), rate=args.rate, config=config,
                               seed=args.seed, max_frame=args.max_frame, data_width=args.data_width,
                               datapath_fcs=args.datapath_fcs, changes=changes_of(args.change))
    except OSError as error:
        raise ValueError(str(error)) from None
    except ValueError as error:
        report = getattr(error, "report", None)
        if report is None:
            raise
        # a corrupt record: the frames before it were written; their report, then the error (status 2)
        _show(args, report)
        print(f"apbbf dedup: error: {error}", file=sys.stderr)
        return 2
    _show(args, report)
    return 1 if report["comparison"]["duplicates_missed"] else 0


def _show(args, report: dict) -> None:
    # the frames go to standard output: the report to standard error
    file = sys.stderr if args.output is not None and str(args.output) == STDIO else sys.stdout
    if args.json:
        print(json.dumps(report, indent=2), file=file)
    else:
        _print_report(report, file)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``dedup`` subcommand to ``subparsers`` (see :func:`apbbf.cli.register`)."""
    parser = subparsers.add_parser(
        "dedup", help="de-duplicate pcap/pcapng captures with the model and compare with the exact answer",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Run the packet de-duplication model (key extraction, the time-windowed filter sized from the capture's "
            "own peak rate, a --rate or a --config, the action) on pcap or pcapng captures (several files: one "
            "stream, one output; - : standard input; .gz/.zst/.lz4 decompressed), write the frames it forwards "
            "(-o: same format, timestamp resolution and order; - : standard output), and compare with an exact "
            "de-duplication over the same window. Exit status 1 if a duplicate within the window was missed, 2 "
            "on errors (nothing is written then).", 100),
        epilog=_KEY_HELP + "\n\n" + _LINK_HELP + "\n\n" + _SIZE_HELP)
    parser.add_argument("capture", nargs="+",
                        help="pcap or pcapng files (gzip, zstd, lz4 too), in order: one stream; - for standard input")
    parser.add_argument("--window", type=_ns, default=None, metavar="T",
                        help="time window, e.g. 1ms, 600us, 10ms (default 1ms, or the --config's span)")
    parser.add_argument("--key", default="l3l4", metavar="SPEC", help="l3l4 (default), frame, or RANGES (below)")
    parser.add_argument("--fp", type=float, default=1e-4, metavar="E",
                        help="target false-positive rate at the planned rate (default 1e-4)")
    parser.add_argument("--rate", type=_rate, default=None, metavar="R",
                        help="plan for R frames per second at the peak (e.g. 2M), instead of the capture's own "
                             "peak: needed for standard input")
    parser.add_argument("--config", default=None, metavar="CONFIG",
                        help="use this filter: the Config(...) an earlier run printed, or an exported core's "
                             "Verilog file (its header); its span is the window in ticks")
    parser.add_argument("--seed", type=_seed, default=None,
                        help="hash seed, 0..2**64-1 (default: drawn afresh, secrets.randbits(64), and printed)")
    parser.add_argument("--action", choices=("drop", "mark", "count"), default="drop",
                        help="drop duplicates, mark them (pcapng comment), or count only (default drop)")
    parser.add_argument("-o", "--output", default=None, metavar="OUT",
                        help="write the forwarded frames here (- for standard output; .gz/.zst/.lz4 compress)")
    parser.add_argument("--tick", type=_ns, default=1000, metavar="T",
                        help="the filter's time unit, e.g. 1us (default), 100ns, 1ns")
    parser.add_argument("--burst", type=float, default=2.0, metavar="X",
                        help="rates up to X times the planned one keep the window (default 2)")
    parser.add_argument("--fcs", type=int, choices=(0, 4), default=None,
                        help="FCS bytes at the end of each record (default: as the capture declares)")
    parser.add_argument("--time-width", type=int, default=None, metavar="BITS",
                        help="bits of the filter's times (default 32, or 48/64 for long gaps)")
    gateware = parser.add_argument_group("the gateware's datapath (as apbbf export --dedup builds it)")
    gateware.add_argument("--max-frame", type=int, default=9600, metavar="BYTES",
                          help="with drop, longer frames pass unchecked, as the gateware passes them (default 9600)")
    gateware.add_argument("--data-width", type=int, default=512, choices=(64, 128, 256, 512),
                          help="tdata bits, which --max-frame counts beats of (default 512)")
    gateware.add_argument("--datapath-fcs", action="store_true",
                          help="the datapath's frames end with their FCS (export --fcs)")
    parser.add_argument("--engine", choices=("bulk", "model"), default="bulk",
                        help="bulk: the filter evaluated in bulk (default); model: TimedAPBBF.run (slow, the "
                             "reference)")
    parser.add_argument("--change", action="append", default=[], metavar="FRAME:CHANGE",
                        help="a run-time change before frame FRAME (0-based), as the gateware's registers make it: "
                             "action=drop|mark|count, clear, rekey=SEED, window=TICKS (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=_dedup)
    return parser


def main(argv=None) -> int:
    """``python -m apbbf.dedup CAPTURE ...``: the ``apbbf dedup`` subcommand on its own."""
    parser = argparse.ArgumentParser(prog="python -m apbbf.dedup")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["dedup"] + list(sys.argv[1:] if argv is None else argv))
    try:
        return args.func(args)
    except (TypeError, ValueError) as error:
        parser.exit(2, f"apbbf dedup: error: {error}\n")


if __name__ == "__main__":
    sys.exit(main())
