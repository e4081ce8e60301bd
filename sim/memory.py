"""A memory of variable latency for the Amaranth simulator, and the memory core scored against the golden model.

:class:`MemoryModel` answers a :class:`~apbbf.hdl.core.memory_port.MemoryPortSignature` port as an AXI4 slave
with one ID, or a DRAM controller, may: it takes requests when it likes (``req.ready`` low at random, and for
the whole of each refresh), answers reads in order after a latency drawn per read, and lands writes in order
after a delay drawn per write, raising ``written`` as each lands. A read returns the word as it is when its
answer is first offered, so a read taken before a write has landed may return the word without that write: the
case the scan's forwarding exists for. The words start as random garbage, as a DRAM's do at power-up. With
``lazy_writes`` it holds every write back to the last moment it can: a write lands only in a cycle with no request
offered and no read unanswered, that is once the scan waits for nothing but ``written``. So each command's reads
miss the writes of every command still in flight ahead of it, and only the forwarding can supply their bits.

It checks the port's rules as it goes and raises :class:`PortError` on a violation: a request's payload or valid
changed while it waited, an address past the memory, an answer's ``ready`` taken back (the port allows that,
but see below), more than ``max_outstanding`` requests unanswered.
"""

from __future__ import annotations

import collections
import random

from ..hdl.core.memory_apbbf import MemoryAPBBF
from ..hdl.core.memory_port import address_width
from ..model.config import Config
from .harness import simulate as simulate_core

__all__ = ["PortError", "MemoryModel", "simulate"]


class PortError(AssertionError):
    """The design broke a rule of the memory port."""


class MemoryModel:
    """The state and behaviour of one memory (see the module's documentation).

    Parameters
    ----------
    config : Config
        With a row layout: the memory holds :attr:`~apbbf.model.Config.memory_blocks` words of B bits.
    seed : int
        Seed of every random choice (garbage, stalls, latencies).
    latency : (int, int)
        Fewest and most cycles from taking a read to offering its answer.
    write_delay : (int, int)
        Fewest and most cycles from taking a write to landing it (``written``).
    req_stall : float
        Probability that ``req.ready`` is low in a cycle.
    refresh : (int, int) or None
        Every ``refresh[0]`` cycles the memory stops for ``refresh[1]``: no request taken, no answer offered, no
        write landed (a DRAM's refresh).
    max_reads : int or None
        Reads taken and not yet answered at most: with that many, ``req.ready`` stays low (a memory whose read
        buffer is full, as any real one's gets while its answers wait). None: no bound.
    lazy_writes : bool
        Land a write (once its delay is over) only in a cycle with no request offered and no read taken and
        unanswered: as late as the port allows without stalling the requester for ever.
    """

    def __init__(self, config: Config, *, seed: int, latency=(1, 12), write_delay=(0, 12), req_stall: float = 0.1,
                 refresh=(300, 20), max_reads: int | None = None, lazy_writes: bool = False):
        self.config = config
        self.lazy_writes = lazy_writes
        self.writes_held = 0                      # cycles a due write was held back (lazy_writes)
        self.rng = random.Random(seed)
        self.latency, self.write_delay, self.req_stall, self.refresh = latency, write_delay, req_stall, refresh
        self.max_reads = max_reads
        self.words = [self.rng.getrandbits(config.block_bits) for _ in range(config.memory_blocks)]
        self.reads = collections.deque()          # (cycle it may be offered, address)
        self.writes = collections.deque()         # (cycle it lands, address, data)
        self.taken = {"reads": 0, "writes": 0}
        self.read_addresses = []                  # every read's address, in order
        self.requests = []                        # every request taken, in order: (write, address, data)
        self.max_latency_seen = 0

    def _refreshing(self, now: int) -> bool:
        return self.refresh is not None and now % self.refresh[0] < self.refresh[1]

    def server(self, dut):
        """The background testbench for ``dut.memory`` (for :func:`apbbf.sim.harness.simulate`)."""
        port = dut.memory
        c = self.config
        width = address_width(c)

        async def serve(ctx):
            now = 0
            waiting = None                        # the request offered and not taken last cycle
            offered = None                        # the answer offered now: (address, data)
            while True:
                busy = self._refreshing(now)
                full = self.max_reads is not None and len(self.reads) >= self.max_reads
                ctx.set(port.req.ready, not busy and not full and self.rng.random() >= self.req_stall)
                landed = bool(not busy and self.writes and self.writes[0][0] <= now)
                if landed and self.lazy_writes and (ctx.get(port.req.valid) or self.reads):
                    landed = False
                    self.writes_held += 1
                if landed:
                    _, address, value = self.writes.popleft()
                    self.words[address] = value
                ctx.set(port.written, landed)
                if offered is None and not busy and self.reads and self.reads[0][0] <= now:
                    address = self.reads[0][1]
                    offered = (address, self.words[address])
                ctx.set(port.rsp.valid, offered is not None)
                if offered is not None:
                    ctx.set(port.rsp.payload.as_value(), offered[1])
                rst, valid, raw, req_ready, rsp_ready = await _sample(ctx, port)
                now += 1
                if rst:
                    self.reads.clear()
                    self.writes.clear()
                    waiting = offered = None
                    continue
                if waiting is not None and (not valid or raw != waiting):
                    raise PortError(f"cycle {now}: a request waiting to be taken changed "
                                    f"({waiting:#x} to {'nothing' if not valid else hex(raw)})")
                waiting = raw if valid and not req_ready else None
                if valid and req_ready:
                    write, address, value = raw & 1, raw >> 1 & ((1 << width) - 1), raw >> (1 + width)
                    if address >= c.memory_blocks:
                        raise PortError(f"cycle {now}: address {address} past the memory's {c.memory_blocks} words")
                    self.requests.append((write, address, value))
                    if write:
                        last = self.writes[-1][0] if self.writes else 0
                        self.writes.append((max(last, now + self.rng.randint(*self.write_delay)), address, value))
                        self.taken["writes"] += 1
                    else:
                        last = self.reads[-1][0] if self.reads else 0
                        self.reads.append((max(last, now + self.rng.randint(*self.latency)), address))
                        self.taken["reads"] += 1
                        self.read_addresses.append(address)
                if offered is not None and rsp_ready:
                    self.reads.popleft()
                    offered = None

        return serve


async def _sample(ctx, port):
    """One clock edge: (reset, req.valid, req.payload, req.ready, rsp.ready) as they were at it."""
    _, rst, valid, raw, req_ready, rsp_ready = await ctx.tick().sample(
        port.req.valid, port.req.payload.as_value(), port.req.ready, port.rsp.ready)
    return rst, valid, raw, req_ready, rsp_ready


def simulate(config: Config, commands, *, seed: int = 0, depth: int = 8, one_row: bool = False,
             cmd_gap: float = 0.0, rsp_stall: float = 0.0, name: str = "memory", max_cycles: int | None = None,
             **memory):
    """Run ``commands`` through :class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF` (``depth``, ``one_row``) with a
    :class:`MemoryModel` (its options in ``memory``), and check every response, in order, and the counters at the end, against the
    model (:func:`apbbf.sim.harness.simulate`). Returns the run, with the model memory as ``run.memory``.

    Raises
    ------
    apbbf.sim.harness.Mismatch
        On the first wrong, missing or extra response.
    PortError
        On a broken rule of the memory port.
    """
    models = []

    def server(dut):
        models.append(MemoryModel(config, seed=seed, **memory))
        return models[-1].server(dut)

    if max_cycles is None:
        clearing = config.memory_blocks * 3 + 1000
        per_command = 4 * (config.physical_segments + config.k) + 3 * max(memory.get("latency", (1, 12)))
        max_cycles = clearing * (2 + sum(1 for item in commands if item is None)) + per_command * len(commands) * 4
        if config.timed:
            max_cycles += config.memory_blocks * 3 * len(commands) // 8
    run = simulate_core(config, commands, seed=seed, cmd_gap=cmd_gap, rsp_stall=rsp_stall, name=name,
                        max_cycles=max_cycles, design=(("memory", config, depth, one_row, tuple(sorted(memory.items()))),
                                                       lambda: MemoryAPBBF(config, depth=depth, one_row=one_row)),
                        server=server)
    run.memory = models[-1]
    return run
