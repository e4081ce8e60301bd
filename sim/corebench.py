"""The bare core on Verilator with a generated C++ testbench: what the line-rate benchmark
(:mod:`apbbf.flows.bench`) and the soak (:mod:`apbbf.flows.soak`) share.

:func:`build_sim` exports ``APBBF(config, scan=...)``, writes :data:`TESTBENCH` beside it and builds both with
:func:`apbbf.sim.verilator.build`. The one executable has two modes:

* **File mode** (``Vcore commands.bin results.bin``; :func:`run_file`): all commands of one file, ``cmd.valid``
  and ``rsp.ready`` high, then per command its accept and response cycle, the answer and the op echoed.
* **Soak mode** (``Vcore --soak PAUSE SEED``; :class:`SoakProcess`): one core kept running across chunks. Each
  line on stdin names a chunk's command file and its result file; the testbench runs the chunk (draining its
  responses before the next chunk), writes the result file and prints ``done`` on stdout. A xorshift PRNG
  seeded with ``SEED`` drops ``cmd.valid`` before a command (an idle gap; a command offered stays offered until
  it is taken) and ``rsp.ready`` (backpressure), each with probability ``PAUSE / 2**32``. The result file holds
  a header of u64 (the commands, those answered, the cycle count, the first command whose echoed op differs,
  then the core's counters in :func:`counter_names` order) and the hit bits packed (little bit order).

A command file is ``n`` (u64), then ``n`` ops (u8), ``n`` keys (u64) and ``n`` times (u64; zero without a span),
little-endian.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["PRELUDE", "MAIN", "TESTBENCH", "counter_names", "build_sim", "write_commands", "run_file", "SoakChunk",
           "SoakProcess"]


#: C++ of every generated testbench (the bare core's here, the lanes filter's in :mod:`apbbf.sim.lanesbench`), in
#: place of ``@PRELUDE@``: the command file's reader, the PRNG of the idle gaps and backpressure (``Pacer``) and
#: ``Harness``, the top's model taken through reset, from which each testbench's ``Bench`` derives.
PRELUDE = r"""
struct Commands {
    uint64_t n = 0;
    std::vector<uint8_t> ops;
    std::vector<uint64_t> keys, times;
    bool read(const char* path) {
        FILE* f = fopen(path, "rb");
        if (!f || fread(&n, 8, 1, f) != 1) { fprintf(stderr, "cannot read %s\n", path); if (f) fclose(f); return false; }
        ops.resize(n); keys.resize(n); times.resize(n);
        bool ok = fread(ops.data(), 1, n, f) == n && fread(keys.data(), 8, n, f) == n &&
                  fread(times.data(), 8, n, f) == n;
        fclose(f);
        if (!ok) fprintf(stderr, "short file %s\n", path);
        return ok;
    }
};

// The PRNG of the idle gaps and the backpressure: go() is false with probability pause / 2**32.
struct Pacer {
    uint64_t rng;
    uint32_t pause;
    Pacer(uint32_t pause, uint64_t seed) : pause(pause) {
        rng = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
        if (!rng) rng = 1;
    }
    bool go() {
        if (!pause) return true;
        rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
        return (uint32_t)((rng * 0x2545F4914F6CDD1DULL) >> 32) >= pause;
    }
};

// The model of a testbench's top (its ports clk, rst, cmd.valid, rsp.ready), held in reset for 4 clocks.
template <class Top> struct Harness : Pacer {
    VerilatedContext* context;
    Top* top;
    uint64_t cycle = 0;
    bool hold = false;                            // what is offered and not yet taken stays offered
    Harness(uint32_t pause, uint64_t seed) : Pacer(pause, seed) {
        context = new VerilatedContext;
        top = new Top{context};
        top->clk = 0; top->rst = 1; top->cmd___05Fvalid = 0; top->rsp___05Fready = 1;
        top->eval();
        for (int i = 0; i < 4; i++) { top->clk = 1; top->eval(); top->clk = 0; top->eval(); }
        top->rst = 0;
        top->eval();
    }
    ~Harness() { top->final(); delete top; delete context; }
};
"""

#: C++ of every generated testbench, in place of ``@MAIN@``: file mode, soak mode and ``main``. The testbench
#: defines ``Bench``, a ``Harness`` of its top with ``run``, and ``counters(top, header)``, which appends the counters.
MAIN = r"""
static int file_mode(const char* in, const char* out) {
    Commands c;
    if (!c.read(in)) return 2;
    uint64_t n = c.n;
    std::vector<uint64_t> accept(n), respond(n);
    std::vector<uint8_t> hit(n), rop(n);
    Bench bench(0, 1);
    uint64_t answered = bench.run(c, accept.data(), respond.data(), hit.data(), rop.data(), nullptr);
    FILE* o = fopen(out, "wb");
    fwrite(&answered, 8, 1, o);
    fwrite(accept.data(), 8, n, o);
    fwrite(respond.data(), 8, n, o);
    fwrite(hit.data(), 1, n, o);
    fwrite(rop.data(), 1, n, o);
    fclose(o);
    if (answered < n) { fprintf(stderr, "timeout: %llu of %llu answered\n", (unsigned long long)answered, (unsigned long long)n); return 1; }
    return 0;
}

static int soak_mode(uint32_t pause, uint64_t seed) {
    Bench bench(pause, seed);
    char in[4096], out[4096];
    Commands c;
    std::vector<uint8_t> hit, packed;
    while (scanf("%4095s %4095s", in, out) == 2) {
        if (!c.read(in)) return 2;
        uint64_t n = c.n;
        hit.assign(n, 0);
        uint64_t first = n;
        uint64_t answered = bench.run(c, nullptr, nullptr, hit.data(), nullptr, &first);
        packed.assign((n + 7) / 8, 0);
        for (uint64_t i = 0; i < n; i++) packed[i >> 3] |= hit[i] << (i & 7);
        std::vector<uint64_t> header = {n, answered, bench.cycle, first};
        counters(bench.top, header);
        FILE* o = fopen(out, "wb");
        if (!o) { fprintf(stderr, "cannot write %s\n", out); return 2; }
        fwrite(header.data(), 8, header.size(), o);
        fwrite(packed.data(), 1, packed.size(), o);
        fclose(o);
        printf("done\n");
        fflush(stdout);
        if (answered < n) { fprintf(stderr, "timeout: %llu of %llu answered\n", (unsigned long long)answered, (unsigned long long)n); return 1; }
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 4 && !strcmp(argv[1], "--soak")) return soak_mode((uint32_t)strtoul(argv[2], 0, 0), strtoull(argv[3], 0, 0));
    if (argc == 3) return file_mode(argv[1], argv[2]);
    fprintf(stderr, "usage: %s commands.bin results.bin | %s --soak PAUSE SEED\n", argv[0], argv[0]);
    return 2;
}
"""

TESTBENCH = r"""
// Generated by apbbf.sim.corebench: the bare core, commands from files, results to files.
#include "Vcore.h"
#include "verilated.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#define TIMED @TIMED@
// Verilator escapes the "__" of Amaranth's port names (cmd__valid) as "___05F".

static void set_payload(Vcore* top, uint8_t op, uint64_t key, uint64_t time) {
    unsigned __int128 v = (unsigned __int128)(op & 3) | ((unsigned __int128)key << 2);
    if (TIMED) v |= (unsigned __int128)time << (2 + @KEY_WIDTH@);
@SET@
}

@PRELUDE@
struct Bench : Harness<Vcore> {
    using Harness::Harness;
    // Run the n commands of c; record what the pointers ask for. Returns the number answered.
    uint64_t run(const Commands& c, uint64_t* accept, uint64_t* respond, uint8_t* hit, uint8_t* rop,
                 uint64_t* first_op_mismatch) {
        uint64_t n = c.n, issued = 0, answered = 0;
        const uint64_t limit = cycle + 64 * n + 10000000;
        while (answered < n && cycle < limit) {
            bool valid = issued < n && (hold || go());
            bool ready = go();
            top->cmd___05Fvalid = valid;
            if (valid) set_payload(top, c.ops[issued], c.keys[issued], c.times[issued]);
            top->rsp___05Fready = ready;
            top->clk = 0;
            top->eval();                          // settle: cmd.ready, rsp.valid of this cycle
            bool taken = valid && top->cmd___05Fready;
            bool responded = ready && top->rsp___05Fvalid;
            uint64_t rsp = (uint64_t)top->rsp___05Fpayload;
            top->clk = 1;
            top->eval();                          // the rising edge
            hold = valid && !taken;
            if (taken) { if (accept) accept[issued] = cycle; issued++; }
            if (responded && answered < n) {
                if (respond) respond[answered] = cycle;
                if (rop) rop[answered] = rsp & 3;
                if (first_op_mismatch && *first_op_mismatch == n && (rsp & 3) != c.ops[answered])
                    *first_op_mismatch = answered;
                hit[answered] = (rsp >> 2) & 1;
                answered++;
            }
            cycle++;
        }
        return answered;
    }
};

static void counters(Vcore* top, std::vector<uint64_t>& header) {   // in counter_names() order
    header.push_back(top->inserts);
    header.push_back(top->shifts);
#if TIMED
    header.push_back(top->overflows);
    header.push_back(top->expired);
#endif
}

@MAIN@"""


def counter_names(timed: bool) -> tuple[str, ...]:
    """The counters of a core (and of each lane of a lanes filter): ``inserts``, ``shifts``, and with a span
    (``timed``) ``overflows``, ``expired``; the order the soak mode's result header holds them in."""
    return ("inserts", "shifts") + (("overflows", "expired") if timed else ())


def build_sim(config, scan: str, work, *, platform=None) -> Path:
    """Export the bare core elaborated for ``platform`` (e.g. :func:`apbbf.flows.bench.sim_platform`), generate
    :data:`TESTBENCH` and build both with Verilator (:func:`apbbf.sim.verilator.build`, skipped if unchanged).

    Parameters
    ----------
    config : Config
    scan : {"fsm", "parallel"}
    work : str or os.PathLike
        Work directory: ``core.v`` and ``tb.cpp`` are written there, the model built in ``<work>/obj``.
    platform : optional
        What the core is elaborated for (``None``: inferred memories).

    Returns
    -------
    pathlib.Path
        The executable.

    Raises
    ------
    ValueError
        If the key is wider than 64 bits, or key and time together wider than 126 (the testbench drives a
        128-bit payload).
    """
    from amaranth.back import verilog

    from ..hdl.core.apbbf import APBBF
    from ..hdl.export.verilog import find_yosys
    from .verilator import build
    if not os.environ.get("YOSYS"):               # amaranth.back.verilog runs the YOSYS it names
        os.environ["YOSYS"] = find_yosys()
    if config.key_width > 64:
        raise ValueError(f"key_width must be at most 64 for the C++ testbench, not {config.key_width}")
    width = 2 + config.key_width + (config.time_width if config.timed else 0)
    if width > 128:
        raise ValueError(f"key_width + time_width must be at most 126 for the C++ testbench, not {width - 2}")
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    if width <= 64:
        setter = "    top->cmd___05Fpayload = (uint64_t)v;"
    else:
        setter = "\n".join(f"    top->cmd___05Fpayload[{w}] = (uint32_t)(v >> {32 * w});"
                           for w in range((width + 31) // 32))
    _write_if_changed(work / "core.v", verilog.convert(APBBF(config, scan=scan), name="core", platform=platform))
    testbench = TESTBENCH.replace("@PRELUDE@", PRELUDE).replace("@MAIN@", MAIN)
    testbench = testbench.replace("@SET@", setter).replace("@TIMED@", "1" if config.timed else "0")
    _write_if_changed(work / "tb.cpp", testbench.replace("@KEY_WIDTH@", str(config.key_width)))
    return build([work / "core.v"], "core", work, main=work / "tb.cpp", executable="Vcore")


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_commands(path, ops, keys, times=None) -> None:
    """Write a command file (the module docstring's layout): ``ops`` (uint8), ``keys`` (uint64) and ``times``
    (uint64, or ``None``: zeros)."""
    ops = np.ascontiguousarray(ops, dtype=np.uint8)
    n = len(ops)
    stamps = np.zeros(n, dtype="<u8") if times is None else np.ascontiguousarray(times, dtype="<u8")
    with open(path, "wb") as f:
        f.write(np.uint64(n).tobytes())
        f.write(ops.tobytes())
        f.write(np.ascontiguousarray(keys, dtype="<u8").tobytes())
        f.write(stamps.tobytes())


def run_file(binary, ops, keys, times=None, *, name: str = "commands") -> dict:
    """Run one command stream through the testbench ``binary`` in file mode (``cmd.valid`` and ``rsp.ready``
    high), with its files ``<name>.cmd`` and ``<name>.rsp`` beside the model's work directory.

    Returns
    -------
    dict
        ``answered`` (int), ``accept`` and ``respond`` (int64 cycles per command), ``hit`` (bool), ``op``
        (uint8, the op each response echoes), ``seconds`` (of simulation).
    """
    binary = Path(binary).resolve()
    work = binary.parent.parent
    n = len(ops)
    write_commands(work / f"{name}.cmd", ops, keys, times)
    t = time.monotonic()
    subprocess.run([str(binary), f"{name}.cmd", f"{name}.rsp"], cwd=work, check=True)
    seconds = time.monotonic() - t
    raw = (work / f"{name}.rsp").read_bytes()
    return {
        "answered": int(np.frombuffer(raw[:8], dtype="<u8")[0]),
        "accept": np.frombuffer(raw[8:8 + 8 * n], dtype="<u8").astype(np.int64),
        "respond": np.frombuffer(raw[8 + 8 * n:8 + 16 * n], dtype="<u8").astype(np.int64),
        "hit": np.frombuffer(raw[8 + 16 * n:8 + 17 * n], dtype=np.uint8).astype(bool),
        "op": np.frombuffer(raw[8 + 17 * n:8 + 18 * n], dtype=np.uint8),
        "seconds": seconds,
    }


@dataclass
class SoakChunk:
    """The testbench's results of one chunk in soak mode.

    Attributes
    ----------
    commands : int
        Commands in the chunk.
    answered : int
        Responses received (``commands`` unless the testbench timed out).
    cycles : int
        Clock cycles since reset, at the end of the chunk.
    first_op_mismatch : int or None
        The first command of the chunk whose response echoed another op.
    hits : numpy.ndarray of bool
        The answers.
    counters : dict or list of dict
        The core's counters at the end of the chunk: ``inserts``, ``shifts`` (and ``overflows``, ``expired``
        with a span); for a lanes filter, a dict per lane.
    """

    commands: int
    answered: int
    cycles: int
    first_op_mismatch: int | None
    hits: np.ndarray
    counters: dict | list


class SoakProcess:
    """The testbench ``binary`` in soak mode: one core (or lanes filter) across chunks, up to two chunks in flight.

    Parameters
    ----------
    binary : str or os.PathLike
        From :func:`build_sim`, or with ``lanes`` from :func:`apbbf.sim.lanesbench.build_lanes_sim`.
    timed : bool
        The core's Config has a span (its counters include ``overflows`` and ``expired``).
    lanes : int
        1 for the bare core; the lanes of a lanes filter (each chunk's counters are then a dict per lane).
    pause : float
        Probability of an idle gap before each command and of backpressure in each cycle, in ``[0, 1)``.
    seed : int
        Seed of the testbench's PRNG, ``0 <= seed < 2**64``.

    Raises
    ------
    ValueError
        If ``pause`` or ``seed`` is out of range.
    """

    def __init__(self, binary, *, timed: bool, pause: float, seed: int, lanes: int = 1):
        if not 0 <= pause < 1:
            raise ValueError(f"pause must be in [0, 1), not {pause}")
        if not 0 <= seed < 1 << 64:
            raise ValueError(f"seed must be from 0 to 2**64-1, not {seed}")
        self._binary = Path(binary).resolve()
        self._work = self._binary.parent.parent
        self._names = counter_names(timed)
        self._lanes = lanes
        self._slot = 0
        self._pending = []
        self._process = subprocess.Popen([str(self._binary), "--soak", str(int(pause * 2**32)), str(seed)],
                                         cwd=self._work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def submit(self, ops, keys, times=None) -> None:
        """Queue a chunk (at most two may wait for :meth:`collect`).

        Raises
        ------
        RuntimeError
            If two chunks are already in flight.
        """
        if len(self._pending) >= 2:
            raise RuntimeError("two chunks are in flight: collect one first")
        name = f"soak{self._slot}"
        self._slot ^= 1
        write_commands(self._work / f"{name}.cmd", ops, keys, times)
        self._process.stdin.write(f"{name}.cmd {name}.rsp\n")
        self._process.stdin.flush()
        self._pending.append((name, len(ops)))

    def collect(self) -> SoakChunk:
        """Wait for the oldest chunk in flight and return its results.

        Raises
        ------
        RuntimeError
            If no chunk is in flight, or the testbench stopped (timeout or I/O error).
        """
        if not self._pending:
            raise RuntimeError("no chunk is in flight")
        name, n = self._pending.pop(0)
        line = self._process.stdout.readline()
        raw = (self._work / f"{name}.rsp").read_bytes() if line.strip() == "done" else b""
        size = 8 * (4 + len(self._names) * self._lanes)
        if len(raw) < size:
            raise RuntimeError(f"the testbench stopped (exit status {self._process.poll()})")
        header = [int(v) for v in np.frombuffer(raw[:size], dtype="<u8")]
        if header[0] != n:
            raise RuntimeError(f"the testbench answered a chunk of {header[0]} commands, not {n}")
        if header[1] < n:
            raise RuntimeError(f"the testbench timed out: {header[1]} of {n} commands answered")
        hits = np.unpackbits(np.frombuffer(raw[size:], dtype=np.uint8), count=n, bitorder="little").astype(bool)
        values = header[4:]                       # counter by counter, lane by lane
        counters = [{name: values[which * self._lanes + lane] for which, name in enumerate(self._names)}
                    for lane in range(self._lanes)]
        counters = counters[0] if self._lanes == 1 else counters
        return SoakChunk(commands=n, answered=header[1], cycles=header[2],
                         first_op_mismatch=None if header[3] == n else header[3], hits=hits, counters=counters)

    def close(self) -> None:
        """End the testbench: it exits when its stdin closes; with a chunk still in flight it is killed."""
        if self._process.poll() is None:
            if self._pending:
                self._process.kill()
            else:
                try:
                    self._process.stdin.close()
                    self._process.wait(timeout=60)
                except (BrokenPipeError, subprocess.TimeoutExpired):
                    self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            try:
                stream.close()
            except BrokenPipeError:
                pass
        self._pending = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
