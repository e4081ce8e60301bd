"""The FSM scan: Algorithm 1 of paper 000 over the registered match bits, one segment per cycle."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring

from ...model.config import Config, check_config
from .buffer import STAGE_TIME_COPIES
from .hash import block_mask, block_picks, hash_latency
from .scan import scan_signature
from .segments import READ_LATENCY
from .types import Op, asks, inserts

__all__ = ["FSMScan", "restart_cycles", "enter_one_at_a_time"]


def enter_one_at_a_time(m, config: Config, buffer, payload, idle, op) -> None:
    """Drive the circular buffer's entry for a scan that takes one command at a time and decides it before it
    takes the next (the FSM scan, the memory scan): while ``idle`` the buffer takes the offered command (its op
    from ``payload``). A time-bounded window's buffer takes the command's time a cycle before it enters (it
    compares it with the deadlines then): staged while idle, entered the cycle after, with the op registered by
    the scan (``op``; never in a cycle with a decision: ``enter_held`` is ``enter``)."""
    if config.timed:
        entering = Signal()
        m.d.sync += entering.eq(idle)
        ones = (1 << config.time_width) - 1              # the buffer's odd copies of the time: its complement
        m.d.comb += [buffer.stage.eq(idle), buffer.enter.eq(entering), buffer.enter_held.eq(entering),
                     buffer.enter_op.eq(op)]
        m.d.comb += [buffer.stage_time[n].eq(payload.time ^ (ones * (n & 1))) for n in range(STAGE_TIME_COPIES)]
    else:
        m.d.comb += [buffer.enter.eq(idle), buffer.enter_op.eq(payload.op)]


def restart_cycles(config: Config) -> tuple[int, int]:
    """The fewest and most cycles by which an insert that restarts a time-bounded window delays the commands
    behind it, against an ordinary insert (:func:`apbbf.sim.cycles.command_cycles`), with ``rsp.ready`` high:
    the clearing of every memory (from the cycle after the segments take the clear), ``segment_blocks + 3``
    cycles, whatever was in flight (one command at a time)."""
    cycles = config.segment_blocks + 3
    return cycles, cycles


class FSMScan(wiring.Component):
    """One command at a time: hash, read every segment, pick the key's bits from each block, register the match
    bits, walk them as Algorithm 1 does (one access per cycle, so a query takes as many scan cycles as the paper
    counts accesses), write, respond.

    Cycles per command with ``rsp.ready`` high (:func:`apbbf.sim.cycles.command_cycles`): accept 1, hash
    ``latency``, read :data:`~apbbf.hdl.core.segments.READ_LATENCY` (2), pick 1, then for a query that scans
    (QUERY, TEST_AND_INSERT with k fresh segments) match 1 and the scan's accesses, the write 1 (INSERT,
    TEST_AND_INSERT) and the response 1.

    Parameters
    ----------
    config : Config

    Attributes
    ----------
    cmd, rsp, hash, segments, buffer
        See :func:`~apbbf.hdl.core.scan.scan_signature`.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    """

    def __init__(self, config: Config):
        check_config(config)
        self._config = config
        super().__init__(scan_signature(config))

    @property
    def config(self) -> Config:
        return self._config

    def elaborate(self, platform):
        # Commands do not overlap, so the write of one lands before the read of the next: no forwarding. A
        # command that shifts waits (in HASH) until the segment it shifts into is clean, so its read of that
        # segment returns zeros and its write is exact; one that restarts a time-bounded window clears every
        # memory first (CLEAR), so it reads zeros everywhere.
        c = self._config
        k, P = c.k, c.physical_segments
        hash, segments, buffer = self.hash, self.segments, self.buffer
        m = Module()

        # Accepting a command must not put logic between the FSM's state and the key's 64 enables: ``idle``
        # and ``cmd.ready`` are flip-flops set from the state's next value, and while idle the key, the op and
        # the buffer's entry load every cycle (the last load before the accept is the command's; the buffer
        # allows an entry with no command while none is undecided). Only the FSM's own next state depends on
        # ``cmd.valid``.
        op = Signal(Op)
        key = Signal(c.key_width)
        idle, ready = Signal(init=1), Signal()
        accept = Signal()
        m.d.comb += [hash.key.eq(key), buffer.cleaned_next.eq(segments.cleaned_next),
                     self.cmd.ready.eq(ready), accept.eq(self.cmd.valid & ready)]
        enter_one_at_a_time(m, c, buffer, self.cmd.payload, idle, op)

        # The key's b bits are picked from each block into registers (``picks``, loaded every cycle: the read
        # data and the hashes hold still from the blocks' arrival, PICK, to the write), and ANDed into the match
        # bits a cycle later: the picks' multiplexers sit beside each segment's block RAMs, and only P bits cross
        # to the scan (the whole test between the block RAMs' output registers and the match bits was the FSM's
        # path, most of it routing). ``write`` (the WRITE state) is a flip-flop set on the way in: the 2P block
        # RAM write enables hang on it and on the buffer's registered targets, not on a decode of the state.
        write = Signal()
        match = Signal(P)
        for j in range(P):
            segment_hash, block = hash.hashes[j], segments.read_data[j]
            picks = Signal(c.block_hashes, name=f"picks{j}")
            m.d.comb += [segments.read_addr[j].eq(segment_hash.index),
                         segments.write_addr[j].eq(segment_hash.index),
                         segments.write_data[j].eq(block | block_mask(c, segment_hash))]
            m.d.sync += [picks.eq(Cat(*block_picks(c, segment_hash, block))),
                         match[j].eq(picks.all() & buffer.fresh[j])]
        m.d.comb += [segments.write_en.eq(Mux(write, buffer.targets, 0)),
                     segments.retire.eq(Mux(write, buffer.retire, 0))]

        # Algorithm 1's registers: i (logical), its physical position, p and c. It starts at logical L' - k, L'
        # the fresh segments (k + l in a window bounded by count). The step's two ends are flags kept a step
        # ahead, each picked by the match bit: ``completes`` (a match now makes p + c = k: present) and
        # ``exhausted`` (i < k: a miss now leaves i < 0, absent). So a SCAN cycle is the match bit, done, and the
        # next state, with no sum or compare between them.
        scan_i = Signal(range(-k, P + 1))
        scan_pos = Signal(range(P))
        scan_p = Signal(range(k + 1))
        scan_c = Signal(range(k + 1))
        completes, exhausted = Signal(), Signal()
        # The fresh segments and the scan's start position do not change from the cycle after a command enters
        # to its decision (only ``enter`` and ``decide`` move the buffer), and PICK comes hash_latency + 2 cycles
        # after entry: so both are counted in registers, one per cycle, off PICK's path.
        fresh = Signal(range(P + 1))
        start = Signal(range(P))
        m.d.sync += fresh.eq(sum(buffer.fresh[j] for j in range(P)))
        first = Signal(range(-P, 2 * P))
        m.d.comb += first.eq(buffer.base + fresh - k)
        m.d.sync += start.eq(Mux(first < 0, first + P, Mux(first >= P, first - P, first)))
        hit = Signal()
        m.d.comb += [self.rsp.payload.op.eq(op), self.rsp.payload.hit.eq(hit)]
        hash_wait = Signal(range(hash_latency(c) + 1))
        read_wait = Signal(range(READ_LATENCY))
        with m.If(idle):
            m.d.sync += [op.eq(self.cmd.payload.op), key.eq(self.cmd.payload.key),
                         hash_wait.eq(hash_latency(c) - 1), hit.eq(0)]
        # The state next cycle is IDLE after a response taken, or in IDLE without an accept; the segments are
        # ready next cycle (conservative: the cycle a clearing ends counts as not ready, so the first command
        # after reset is accepted a cycle after the reset's clearing).
        idle_next = Signal()
        m.d.sync += [idle.eq(idle_next), ready.eq(idle_next & segments.ready & ~segments.clear)]
        # The hash runs every cycle: the key register holds the command's key from its accept until the FSM is
        # idle again, after the write, so the hashes are the key's from ``latency`` cycles after the accept to the
        # response. (Enabled in HASH only, a decode of the state drove the hash's hundreds of enables, and the
        # FSM's path went to it across the device and back.)
        m.d.comb += hash.en.eq(1)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += idle_next.eq(~accept)
                with m.If(accept):
                    m.next = "HASH"
            with m.State("HASH"):
                with m.If(hash_wait != 0):
                    m.d.sync += hash_wait.eq(hash_wait - 1)
                with m.Elif(buffer.restart):
                    m.next = "CLEAR"
                with m.Elif(~buffer.wait):                 # a shift waits for its segment to be clean
                    m.next = "READ"
            with m.State("CLEAR"):
                m.d.comb += segments.clear.eq(1)
                m.next = "CLEARING"
            with m.State("CLEARING"):
                with m.If(segments.ready):
                    m.next = "READ"
            with m.State("READ"):
                m.d.comb += segments.read_en.eq(1)
                m.d.sync += read_wait.eq(READ_LATENCY - 2)
                m.next = "FETCH"
            with m.State("FETCH"):
                # The block RAMs' output registers take the data.
                with m.If(read_wait != 0):
                    m.d.sync += read_wait.eq(read_wait - 1)
                with m.Else():
                    m.next = "PICK"
            with m.State("PICK"):
                # The blocks are here: picks[] registers at the end of this cycle. An insert writes next.
                with m.If((op == Op.INSERT) | ((fresh < k) & (op == Op.TEST_AND_INSERT))):
                    m.d.sync += write.eq(1)
                    m.next = "WRITE"
                with m.Elif((fresh < k) | ~asks(op)):
                    m.next = "RESPOND"                     # absent with no access; or the reserved op 3
                with m.Else():
                    m.next = "MATCH"
            with m.State("MATCH"):
                # match[] registers at the end of this cycle.
                m.d.sync += [scan_i.eq(fresh - k), scan_pos.eq(start), scan_p.eq(0), scan_c.eq(0),
                             completes.eq(k == 1), exhausted.eq(fresh < 2 * k)]
                m.next = "SCAN"
            with m.State("SCAN"):
                # One access per cycle (paper 000 Algorithm 1).
                done = Signal()
                with m.If(match.bit_select(scan_pos, 1)):
                    m.d.sync += [scan_c.eq(scan_c + 1), scan_i.eq(scan_i + 1),
                                 scan_pos.eq(Mux(scan_pos == P - 1, 0, scan_pos + 1)),
                                 completes.eq(scan_p + scan_c + 2 == k), exhausted.eq(scan_i + 1 < k)]
                    with m.If(completes):                          # p + c = k: present
                        m.d.sync += hit.eq(1)
                        m.d.comb += done.eq(1)
                with m.Else():                                     # miss: jump back k, the run becomes p
                    back = scan_pos - k
                    m.d.sync += [scan_i.eq(scan_i - k), scan_p.eq(scan_c), scan_c.eq(0),
                                 scan_pos.eq(Mux(scan_pos >= k, back, back + P)),
                                 completes.eq(scan_c + 1 == k), exhausted.eq(scan_i - k < k)]
                    with m.If(exhausted):                          # i < 0: absent
                        m.d.comb += done.eq(1)
                with m.If(done & (op == Op.QUERY)):
                    m.next = "RESPOND"
                with m.Elif(done):
                    m.d.sync += write.eq(1)
                    m.next = "WRITE"
            with m.State("WRITE"):
                m.d.comb += buffer.decide.eq(1)
                m.d.sync += write.eq(0)
                m.next = "RESPOND"
            with m.State("RESPOND"):
                m.d.comb += self.rsp.valid.eq(1)
                with m.If(self.rsp.ready):
                    m.d.comb += [buffer.decide.eq(~inserts(op)), idle_next.eq(1)]
                    m.next = "IDLE"
        return m
