"""The APBBF core: segments in block RAM, an insert path that ages them by generation, Algorithm 1's scan."""

from amaranth import Module, Signal, Cat, Const, Mux
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..model.config import Config
from .hash import HashUnit
from .types import Op, command_layout, response_layout

__all__ = ["APBBF", "MAX_MEMORY_BITS"]

#: The largest filter memory (spare segment included) any supported device holds: the 208 DP16KD blocks of
#: an ECP5-85F used 16 data bits wide (the parity bits of the 18-bit words cannot hold filter bits).
MAX_MEMORY_BITS = 208 * 16384


def block_fields(config: Config, value):
    """Split a segment hash (as the model's ``HashSpec.split``): block index and the B-bit mask of b bits."""
    index = value[:config.block_index_bits]
    parts = []
    for part in range(config.block_hashes):
        start = config.block_index_bits + part * config.offset_bits
        offset = value[start:start + config.offset_bits]
        parts.append((Const(1, config.part_bits) << offset)[:config.part_bits])    # one-hot decode
    return index, Cat(*parts)


class APBBF(wiring.Component):
    """Age-Partitioned Blocked Bloom Filter (paper 000 §6), answering as :class:`apbbf.model.APBBF` does.

    Why it is built this way
    ------------------------
    Every physical segment (k + l of the paper plus a spare) is its own block RAM addressed by its own hash
    (paper 000 §5.1: the hash belongs to the buffer position). So all of a key's blocks are read in one cycle,
    and the match bits are registered; the scan then walks them as Algorithm 1 does, one segment per cycle,
    so a query takes as many scan cycles as the paper counts accesses. An insert writes ``block | mask`` into
    the k newest segments in one cycle. Commands do not overlap: the write of one command lands before the
    read of the next, so back-to-back inserts to one block need no forwarding here.

    Retiring a segment does not stall: on a shift the retired segment becomes the spare and is cleared in the
    background, one block per cycle, while commands go on; the previous spare, already clear, becomes segment
    0. Only if a generation is shorter than the clearing (``g·cycles per insert < segment_blocks``) does the
    core wait, with ``cmd.ready`` low, at the generation boundary until the spare is clear.

    After reset every memory is cleared (``segment_blocks`` cycles) with ``cmd.ready`` low.

    Cycles per command, with ``rsp.ready`` high (see :mod:`apbbf.sim.cycles`): accept 1, hash
    ``HashUnit.latency``, read 1, match 1, then the scan's accesses (QUERY, TEST_AND_INSERT), the write 1
    (INSERT, TEST_AND_INSERT) and the response 1.

    Parameters
    ----------
    config : Config

    Attributes
    ----------
    cmd : In(stream.Signature(command_layout(key_width)))
        Commands ``{op, key}``.
    rsp : Out(stream.Signature(response_layout()))
        One response ``{op, hit}`` per command, in order.
    inserts : Out(32)
        Inserts so far (wraps).
    shifts : Out(32)
        Shifts (generations) so far (wraps).

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If the memory, spare included, is larger than any supported device's block RAM.
    """

    def __new__(cls, config, *args, **kwargs):
        # Checked before the object exists: a core refused here is not an unused elaboratable.
        if not isinstance(config, Config):
            raise TypeError(f"config must be a Config, not {config!r}")
        if config.hardware_memory_bits > MAX_MEMORY_BITS:
            raise ValueError(f"config needs {config.hardware_memory_bits} bits of block RAM "
                             f"({config.physical_segments} segments of {config.segment_blocks} x "
                             f"{config.block_bits}); the largest supported device (ECP5-85F) holds at most "
                             f"{MAX_MEMORY_BITS}: reduce segment_blocks, block_bits, k or l")
        return super().__new__(cls, config, *args, **kwargs)

    def __init__(self, config: Config):
        self._config = config
        super().__init__({
            "cmd": In(stream.Signature(command_layout(config.key_width))),
            "rsp": Out(stream.Signature(response_layout())),
            "inserts": Out(32),
            "shifts": Out(32),
        })

    @property
    def config(self) -> Config:
        return self._config

    def elaborate(self, platform):
        c = self._config
        k, l, P, S = c.k, c.l, c.physical_segments, c.segment_blocks
        m = Module()

        m.submodules.hash = hash_unit = HashUnit(c)

        op = Signal(Op)
        key = Signal(c.key_width)
        m.d.comb += hash_unit.key.eq(key)

        # Circular buffer (paper 000 §5.1): base is the physical position of logical segment 0; fill is n mod g.
        base = Signal(range(P))
        fill = Signal(range(c.generation))
        shifting = Signal()                                   # the next insert shifts first (n mod g == 0)
        m.d.comb += shifting.eq(fill == 0)
        new_base = Signal(range(P))
        m.d.comb += new_base.eq(Mux(shifting, Mux(base == 0, P - 1, base - 1), base))

        # Clearing: every memory after reset, the spare after a shift. One block per cycle.
        clear_addr = Signal(range(S))
        clear_all = Signal(init=1)                             # reset clears everything first
        scrubbing = Signal()
        spare = Signal(range(P))                               # physical position of the spare, pos(k + l)
        m.d.comb += spare.eq(Mux(base == 0, P - 1, base - 1))

        # Memories, one per physical segment.
        read_en = Signal()
        match_en = Signal()
        write_en = Signal()
        match = Signal(P)
        blocks, masks, indices = [], [], []
        for j in range(P):
            mem = memory.Memory(shape=c.block_bits, depth=S, init=[])
            m.submodules[f"segment{j}"] = mem
            read = mem.read_port()
            write = mem.write_port()
            index, mask = block_fields(c, hash_unit.hashes[j])
            m.d.comb += [read.addr.eq(index), read.en.eq(read_en)]
            blocks.append(read.data)
            masks.append(mask)
            indices.append(index)
            # Logical segment of this memory once the insert's shift (if any) is done.
            logical = Signal(range(P), name=f"logical{j}")
            m.d.comb += logical.eq(Mux(j >= new_base, j - new_base, j + P - new_base))
            with m.If(match_en):
                m.d.sync += match[j].eq((read.data & mask) == mask)
            with m.If(clear_all | (scrubbing & (spare == j))):
                m.d.comb += [write.addr.eq(clear_addr), write.data.eq(0), write.en.eq(1)]
            with m.Elif(write_en & (logical < k)):
                # The new segment 0 after a shift is the spare, clear: its old data counts as zero.
                old = Mux(shifting & (logical == 0), 0, read.data)
                m.d.comb += [write.addr.eq(index), write.data.eq(old | mask), write.en.eq(1)]

        with m.If(clear_all | scrubbing):
            m.d.sync += clear_addr.eq(clear_addr + 1)
            with m.If(clear_addr == S - 1):
                m.d.sync += [clear_all.eq(0), scrubbing.eq(0)]

        # Algorithm 1 registers: i (logical), its physical position, p and c.
        scan_i = Signal(range(-k, k + l + 1))
        scan_pos = Signal(range(P))
        scan_p = Signal(range(k + 1))
        scan_c = Signal(range(k + 1))
        hit = Signal()
        m.d.comb += [self.rsp.payload.op.eq(op), self.rsp.payload.hit.eq(hit)]

        hash_wait = Signal(range(hash_unit.latency + 1))

        with m.FSM():
            with m.State("IDLE"):
                # At a generation boundary the spare must be clear before the next insert may shift into it.
                m.d.comb += self.cmd.ready.eq(~clear_all & ~(shifting & scrubbing))
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.sync += [op.eq(self.cmd.payload.op), key.eq(self.cmd.payload.key),
                                 hash_wait.eq(hash_unit.latency - 1), hit.eq(0)]
                    m.next = "HASH"
            with m.State("HASH"):
                m.d.comb += hash_unit.en.eq(1)
                with m.If(hash_wait == 0):
                    m.next = "READ"
                with m.Else():
                    m.d.sync += hash_wait.eq(hash_wait - 1)
            with m.State("READ"):
                m.d.comb += read_en.eq(1)
                m.next = "MATCH"
            with m.State("MATCH"):
                m.d.comb += match_en.eq(1)
                # match[] registers at the end of this cycle; the scan starts at logical segment l.
                start = base + l
                m.d.sync += [scan_i.eq(l), scan_pos.eq(Mux(start >= P, start - P, start)),
                             scan_p.eq(0), scan_c.eq(0)]
                with m.If(op == Op.INSERT):
                    m.next = "WRITE"
                with m.Else():
                    m.next = "SCAN"
            with m.State("SCAN"):
                # One access per cycle (paper 000 Algorithm 1).
                done = Signal()
                with m.If(match.bit_select(scan_pos, 1)):
                    m.d.sync += [scan_c.eq(scan_c + 1), scan_i.eq(scan_i + 1),
                                 scan_pos.eq(Mux(scan_pos == P - 1, 0, scan_pos + 1))]
                    with m.If(scan_p + scan_c + 1 == k):          # p + c = k: present
                        m.d.sync += hit.eq(1)
                        m.d.comb += done.eq(1)
                with m.Else():                                     # miss: jump back k, the run becomes p
                    back = scan_pos - k
                    m.d.sync += [scan_i.eq(scan_i - k), scan_p.eq(scan_c), scan_c.eq(0),
                                 scan_pos.eq(Mux(scan_pos >= k, back, back + P))]
                    with m.If(scan_i < k):                         # i < 0: absent
                        m.d.comb += done.eq(1)
                with m.If(done & (op == Op.QUERY)):
                    m.next = "RESPOND"
                with m.Elif(done):
                    m.next = "WRITE"
            with m.State("WRITE"):
                m.d.comb += write_en.eq(1)
                m.d.sync += [base.eq(new_base), fill.eq(Mux(fill == c.generation - 1, 0, fill + 1)),
                             self.inserts.eq(self.inserts + 1)]
                with m.If(shifting):
                    m.d.sync += [self.shifts.eq(self.shifts + 1), scrubbing.eq(1), clear_addr.eq(0)]
                m.next = "RESPOND"
            with m.State("RESPOND"):
                m.d.comb += self.rsp.valid.eq(1)
                with m.If(self.rsp.ready):
                    m.next = "IDLE"
        return m
