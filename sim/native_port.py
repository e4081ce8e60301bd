"""A LiteDRAM native port in front of a DDR3, for the Amaranth simulator: what the filter meets on the Versa,
where no chip model is at hand (LiteDRAM's ECP5DDRPHY has no simulation models here).

:class:`DDR3NativePortModel` takes the native port's commands (:class:`~apbbf.hdl.dram.native.NativePortSignature`)
at the pace the DDR3 allows them through LiteDRAM's controller at 1:2, its timings in sys cycles as LiteDRAM
computes them (:attr:`apbbf.flows.litedram.Core.settings`' ``timing_cycles``):

- one command (a BL8 burst, one native word) per ``tCCD`` cycles;
- a command to another row than the last command's pays ``tRP + tRCD`` first (the row closed, the other opened:
  no bank is assumed to have its row open in advance, so the pace is the slowest a row change can cost);
- a read after a write waits ``tWTR`` more, a write after a read ``tCCD`` more (the bus turns around);
- every ``tREFI`` cycles a refresh: no command for ``tRFC + tRP`` cycles, every row closed after it;
- each read's word comes back ``read_latency`` cycles after its command, plus 0 to ``jitter`` at random, in
  order; each write's data is asked for ``write_latency`` cycles after its command, in order.

It checks what LiteDRAM's port relies on and raises :class:`NativePortError`: a read word that finds
``rdata.ready`` low (the crossbar does not wait), write data not offered when asked, a byte enable low, an address
past the memory. It counts commands, row changes, refreshes and the cycles the port held a command back.
"""

from __future__ import annotations

import collections
import random

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

__all__ = ["NativePortError", "DDR3NativePortModel", "CoreOnNativePort", "simulate"]


class NativePortError(AssertionError):
    """The design broke a rule of LiteDRAM's native port."""


class DDR3NativePortModel:
    """The native port of a LiteDRAM DDR3 core (see the module's documentation).

    Parameters
    ----------
    native : NativePortSignature's interface
        The design's ``native`` port (its ``cmd``, ``wdata``, ``rdata``).
    settings : dict
        A DDR3 core's settings: ``timing_cycles`` (``tCCD``, ``tRP``, ``tRCD``, ``tWTR``, ``tREFI``, ``tRFC``),
        ``read_latency``, ``write_latency``, ``native_bits``, ``ncols``, ``nbanks``, ``burst_length``.
    words : int
        Native words of the memory.
    seed : int
        Seed of the garbage the words start with and of the read jitter.
    jitter : int
        Most cycles added to a read's latency.
    refresh : bool
        Refresh stalls on (False: none, to see what they cost).
    """

    def __init__(self, native, settings: dict, words: int, *, seed: int, jitter: int = 4, refresh: bool = True):
        t = settings["timing_cycles"]
        self.native, self.words, self.rng = native, words, random.Random(seed)
        self.tccd, self.row_change = t["tCCD"], t["tRP"] + t["tRCD"]
        self.twtr, self.trefi, self.refresh_cycles = t["tWTR"], t["tREFI"], t["tRFC"] + t["tRP"]
        self.read_latency, self.write_latency = settings["read_latency"], settings["write_latency"]
        self.jitter, self.refresh = jitter, refresh
        self.row_words = settings["ncols"] // settings["burst_length"]       # native words in a bank row
        self.mask = (1 << settings["native_bits"]) - 1
        self.enables = (1 << (settings["native_bits"] // 8)) - 1
        self.memory = {}
        self.counts = {"reads": 0, "writes": 0, "row_changes": 0, "refreshes": 0, "held_cycles": 0}
        self.cycles = 0
        self.taken = []                            # (cycle, we) of every command taken
        self.row_change_cycles = []                # the cycle of every command that changed the row

    def row_of(self, address: int) -> int:
        """The bank row (bank and row together) of a native word: LiteDRAM's ROW_BANK_COL order."""
        return address // self.row_words

    def word(self, address: int) -> int:
        if address not in self.memory:
            self.memory[address] = self.rng.getrandbits(self.mask.bit_length())      # power-up garbage
        return self.memory[address]

    async def serve(self, ctx):
        """The background testbench (for :func:`apbbf.sim.harness.simulate`'s ``server``)."""
        native = self.native
        reads = collections.deque()              # (cycle due, address, command number)
        writes = collections.deque()             # (cycle due, address, command number)
        free_at = 0                              # the first cycle a command may be taken
        row, last_write = None, None
        issued = 0                               # commands taken
        next_refresh = self.trefi
        now = 0
        while True:
            if self.refresh and now >= next_refresh and now >= free_at:
                free_at = now + self.refresh_cycles
                next_refresh += self.trefi
                row = None
                self.counts["refreshes"] += 1
            ready = now >= free_at
            ctx.set(native.cmd.ready, ready)
            read_due = bool(reads) and reads[0][0] <= now
            write_due = bool(writes) and writes[0][0] <= now
            ctx.set(native.rdata.valid, read_due)
            if read_due:
                _, wanted, number = reads[0]
                if any(address == wanted and earlier < number for _, address, earlier in writes):
                    raise NativePortError(f"cycle {now}: a read of {reads[0][1]:#x} due before an earlier write "
                                          "to it landed (the model's latencies cannot keep the port's order)")
                ctx.set(native.rdata.payload.data, self.word(reads[0][1]))
            ctx.set(native.wdata.ready, write_due)
            *_, valid, we, address, w_valid, w_data, w_we, r_ready = await ctx.tick().sample(
                native.cmd.valid, native.cmd.payload.we, native.cmd.payload.addr, native.wdata.valid,
                native.wdata.payload.data, native.wdata.payload.we, native.rdata.ready)
            if read_due:
                if not r_ready:
                    raise NativePortError(f"cycle {now}: the read word of {reads[0][1]:#x} found rdata.ready low")
                reads.popleft()
            if write_due:
                if not w_valid:
                    raise NativePortError(f"cycle {now}: the write data of {writes[0][1]:#x} not offered when asked")
                if w_we != self.enables:
                    raise NativePortError(f"cycle {now}: byte enables {w_we:#x} (every byte is written)")
                self.memory[writes[0][1]] = w_data & self.mask
                writes.popleft()
            if valid and not ready:
                self.counts["held_cycles"] += 1
            if valid and ready:
                if address >= self.words:
                    raise NativePortError(f"cycle {now}: address {address:#x} past the {self.words} words")
                cost = self.tccd
                opening = 0
                if self.row_of(address) != row:
                    opening = self.row_change
                    row = self.row_of(address)
                    self.counts["row_changes"] += 1
                    self.row_change_cycles.append(now)
                cost += opening
                if last_write is not None and bool(we) != last_write:
                    cost += self.twtr if last_write else self.tccd
                last_write = bool(we)
                self.taken.append((now, last_write))
                free_at = now + cost
                issued += 1
                if we:
                    last = writes[-1][0] if writes else 0
                    writes.append((max(last + 1, now + opening + self.write_latency), address, issued))
                    self.counts["writes"] += 1
                else:
                    last = reads[-1][0] if reads else 0
                    due = now + opening + self.read_latency + self.rng.randint(0, self.jitter)
                    reads.append((max(last + 1, due), address, issued))
                    self.counts["reads"] += 1
            now += 1
            self.cycles = now


class CoreOnNativePort(wiring.Component):
    """A memory core (:class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`) with its memory port on a native port
    adapter: the core's ``cmd``, ``rsp`` and counters, and the adapter's ``native`` port (for
    :class:`DDR3NativePortModel`), as :func:`apbbf.sim.harness.simulate`'s ``design``."""

    def __init__(self, core, adapter):
        self._core, self.adapter = core, adapter
        members = {name: member for name, member in core.signature.members.items() if name != "memory"}
        super().__init__({**members, "native": Out(adapter.native.signature)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.core, m.submodules.adapter = self._core, self.adapter
        wiring.connect(m, self._core.memory, self.adapter.memory)
        wiring.connect(m, self.adapter.native, wiring.flipped(self.native))
        for name in self.signature.members:
            if name in ("cmd", "rsp"):
                wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(self._core, name))
            elif name != "native":
                m.d.comb += getattr(self, name).eq(getattr(self._core, name))
        return m


def simulate(config, commands, settings: dict, *, seed: int, refresh: bool = True, jitter: int = 4,
             adapter=None, depth: int = 8, one_row: bool = False, name: str = "ddr3-native",
             max_cycles: int = 400_000):
    """Run ``commands`` through the memory core (``depth``, ``one_row``) on a native port adapter of ``settings``' widths (or
    ``adapter()``) served by a :class:`DDR3NativePortModel`, every answer checked against the golden model
    (:func:`apbbf.sim.harness.simulate`). Returns ``(run, model)``.

    Raises
    ------
    apbbf.sim.harness.Mismatch
        On the first wrong, missing or extra response.
    NativePortError
        On a broken rule of the native port.
    """
    from ..hdl.core.memory_apbbf import MemoryAPBBF
    from ..hdl.dram.native import NativePortAdapter
    from .harness import simulate as simulate_core
    models = []
    words = 1 << settings["native_addr_bits"]

    def design():
        make = adapter or (lambda: NativePortAdapter(config, addr_width=settings["native_addr_bits"],
                                                     data_width=settings["native_bits"], read_words=32))
        return CoreOnNativePort(MemoryAPBBF(config, depth=depth, one_row=one_row), make())

    def server(dut):
        models.append(DDR3NativePortModel(dut.native, settings, words, seed=seed, jitter=jitter, refresh=refresh))
        return models[-1].serve

    run = simulate_core(config, commands, seed=seed, name=name, server=server, max_cycles=max_cycles,
                        design=((name, config, refresh, jitter, depth, one_row, adapter), design))
    return run, models[-1]
