"""The APBBF core: segments in block RAM, an insert path that ages them by generation, Algorithm 1's scan."""

from amaranth import Module, Signal, Cat, Const, Mux
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..model.config import Config, check_config
from .hash import HashUnit
from .segments import Segments
from .types import Op, command_layout, response_layout

__all__ = ["APBBF", "MAX_MEMORY_BITS", "SCANS"]

#: The scan implementations: ``"fsm"`` follows Algorithm 1 one segment per cycle; ``"parallel"`` decides
#: from all segments at once and takes a command every clock.
SCANS = ("fsm", "parallel")

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


def block_bits_set(config: Config, value, blocks):
    """Whether the b bits a segment hash selects are all set in the given blocks, ORed together.

    ``blocks`` holds B-bit blocks or ``(block, enable)`` pairs (a block that counts only when ``enable``).
    One bit per part is picked by its offset (a B/b-to-1 multiplexer) and the b picks are ANDed: shallower
    logic than comparing the whole B-bit block with the mask. The enable gates the picked bit, after the
    multiplexer, so a late enable (forwarding) adds one gate, not a level in front of the multiplexer.
    """
    blocks = [item if isinstance(item, tuple) else (item, 1) for item in blocks]
    picks = []
    for part in range(config.block_hashes):
        start = config.block_index_bits + part * config.offset_bits
        offset = value[start:start + config.offset_bits]
        bits = [block[part * config.part_bits:(part + 1) * config.part_bits].bit_select(offset, 1) & enable
                for block, enable in blocks]
        picks.append(Cat(*bits).any())
    return Cat(*picks).all()


def _rotations(P: int, members, name: str):
    """A P-bit register with bit j set when physical segment j is at a logical position in ``members``
    for base 0; on a shift (base - 1) it rotates by one, so no per-segment arithmetic is needed."""
    return Signal(P, name=name, init=sum(1 << (i % P) for i in members))


class APBBF(wiring.Component):
    """Age-Partitioned Blocked Bloom Filter (paper 000 §6), answering as :class:`apbbf.model.APBBF` does.

    Why it is built this way
    ------------------------
    Every physical segment (k + l of the paper plus a spare) is its own block RAM addressed by its own hash
    (paper 000 §5.1: the hash belongs to the buffer position). So all of a key's blocks are read in one cycle,
    and an insert writes ``block | mask`` into the k newest segments in one cycle. Two scans share the hash
    unit, the segments and the insert path:

    - ``scan="fsm"`` (the paper's): the match bits are registered and walked as Algorithm 1 does, one segment
      per cycle, so a query takes as many scan cycles as the paper counts accesses. Commands do not overlap:
      the write of one lands before the read of the next, so no forwarding is needed.
    - ``scan="parallel"``: a pipeline that takes a command every clock and decides "k consecutive matches
      among segments 0..k+l-1" (the answer of Algorithm 1) from all match bits at once. A read misses the
      writes of the three commands ahead of it; those are forwarded (see ``_elaborate_parallel``).

    Retiring a segment does not stall: on a shift the retired segment becomes the spare and is cleared in the
    background, one block per cycle, while commands go on; the previous spare, already clear, becomes segment
    0. Only if a generation is shorter than the clearing (``g·cycles per insert < segment_blocks``) does the
    core wait, with ``cmd.ready`` low, at the generation boundary until the spare is clear.

    After reset every memory is cleared (``segment_blocks`` cycles) with ``cmd.ready`` low.

    Cycles per command, with ``rsp.ready`` high (see :mod:`apbbf.sim.cycles`). FSM: accept 1, hash
    ``HashUnit.latency``, read 1, match 1, then the scan's accesses (QUERY, TEST_AND_INSERT), the write 1
    (INSERT, TEST_AND_INSERT) and the response 1. Parallel: 1, with a response ``latency + 6`` cycles later.

    Parameters
    ----------
    config : Config
    scan : {"fsm", "parallel"}

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
        If ``scan`` is unknown, or the memory, spare included, is larger than any supported device's block RAM.
    """

    def __new__(cls, config, *args, scan="fsm", **kwargs):
        # Checked before the object exists: a core refused here is not an unused elaboratable.
        if scan not in SCANS:
            raise ValueError(f"scan must be one of {', '.join(map(repr, SCANS))}, not {scan!r}")
        check_config(config)
        if config.hardware_memory_bits > MAX_MEMORY_BITS:
            raise ValueError(f"config needs {config.hardware_memory_bits} bits of block RAM "
                             f"({config.physical_segments} segments of {config.segment_blocks} x "
                             f"{config.block_bits}); the largest supported device (ECP5-85F) holds at most "
                             f"{MAX_MEMORY_BITS}: reduce segment_blocks, block_bits, k or l")
        return super().__new__(cls, config, *args, scan=scan, **kwargs)

    def __init__(self, config: Config, *, scan: str = "fsm"):
        self._config = config
        self._scan = scan
        super().__init__({
            "cmd": In(stream.Signature(command_layout(config.key_width))),
            "rsp": Out(stream.Signature(response_layout())),
            "inserts": Out(32),
            "shifts": Out(32),
        })

    @property
    def config(self) -> Config:
        return self._config

    @property
    def scan(self) -> str:
        """``"fsm"`` or ``"parallel"``."""
        return self._scan

    def elaborate(self, platform):
        m = Module()
        m.submodules.hash = hash_unit = HashUnit(self._config)
        m.submodules.segments = segments = Segments(self._config)
        if self._scan == "fsm":
            self._elaborate_fsm(m, hash_unit, segments)
        else:
            self._elaborate_parallel(m, hash_unit, segments)
        return m

    def _circular_buffer(self, m, segments):
        """Base index, n mod g and the sets of physical segments by role (paper 000 §5.1), shared by both
        scans. Set bit j: physical segment j is ``newest`` (logical 0..k-1), ``newest_next`` (0..k-1 once
        the next shift is done), ``starts`` (0..l, where a run of k matches may start; Algorithm 1's j)."""
        c = self._config
        k, l, P = c.k, c.l, c.physical_segments
        base = Signal(range(P))                          # physical position of logical segment 0
        fill = Signal(range(c.generation))               # n mod g
        fill_zero = Signal(init=1)                       # n mod g == 0: the next insert shifts first
        newest = _rotations(P, range(k), "newest")
        newest_next = _rotations(P, range(-1, k - 1), "newest_next")
        starts = _rotations(P, range(l + 1), "starts")
        m.d.comb += segments.spare.eq(Mux(base == 0, P - 1, base - 1))   # pos(k + l)
        return base, fill, fill_zero, newest, newest_next, starts

    def _insert(self, m, segments, write, buffer, indices, blocks, targets=None):
        """The insert path: write ``blocks`` into the k newest segments, after the shift if ``n mod g == 0``.

        ``targets``, if given, are those segments already worked out (the parallel scan does it when the
        command is accepted), and are written as they are."""
        c = self._config
        base, fill, fill_zero, newest, newest_next, starts = buffer
        if targets is None:
            targets = Mux(write, Mux(fill_zero, newest_next, newest), 0)
        for j in range(c.physical_segments):
            m.d.comb += [segments.write_en[j].eq(targets[j]),
                         segments.write_addr[j].eq(indices[j]),
                         segments.write_data[j].eq(blocks[j])]
        with m.If(write):
            m.d.sync += [fill.eq(Mux(fill == c.generation - 1, 0, fill + 1)),
                         fill_zero.eq(fill == c.generation - 1),
                         self.inserts.eq(self.inserts + 1)]
            with m.If(fill_zero):
                # Shift: base - 1; every role moves one physical position down.
                m.d.sync += [base.eq(Mux(base == 0, c.physical_segments - 1, base - 1)),
                             newest.eq(newest_next), newest_next.eq(newest_next.rotate_right(1)),
                             starts.eq(starts.rotate_right(1)), self.shifts.eq(self.shifts + 1)]
                m.d.comb += segments.scrub.eq(1)        # the retired segment is the spare from now on

    def _elaborate_fsm(self, m, hash_unit, segments):
        c = self._config
        k, l, P = c.k, c.l, c.physical_segments
        op = Signal(Op)
        key = Signal(c.key_width)
        m.d.comb += hash_unit.key.eq(key)
        buffer = base, fill, fill_zero, _, _, _ = self._circular_buffer(m, segments)

        write = Signal()
        match_en = Signal()
        match = Signal(P)
        indices, blocks = [], []
        for j in range(P):
            index, mask = block_fields(c, hash_unit.hashes[j])
            data_j = segments.read_data[j]
            m.d.comb += segments.read_addr[j].eq(index)
            with m.If(match_en):
                m.d.sync += match[j].eq(block_bits_set(c, hash_unit.hashes[j], [data_j]))
            # (The new segment 0 of a shift is the spare, already clear: a command that would shift is only
            # accepted once the clearing is done, so its read of the spare returned zeros.)
            indices.append(index)
            blocks.append(data_j | mask)
        self._insert(m, segments, write, buffer, indices, blocks)

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
                m.d.comb += self.cmd.ready.eq(segments.ready & ~(fill_zero & segments.scrubbing))
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
                m.d.comb += segments.read_en.eq(1)
                m.next = "MATCH"
            with m.State("MATCH"):
                # match[] registers at the end of this cycle; the scan starts at logical segment l.
                m.d.comb += match_en.eq(1)
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
                m.d.comb += write.eq(1)
                m.next = "RESPOND"
            with m.State("RESPOND"):
                m.d.comb += self.rsp.valid.eq(1)
                with m.If(self.rsp.ready):
                    m.next = "IDLE"

    def _elaborate_parallel(self, m, hash_unit, segments):
        # Pipeline, one command per stage, a new one every clock:
        #   accept -> key register -> hash (latency) -> R: read all segments -> Q: read data registered
        #   (the block RAM's output register can absorb it) -> M: match and new blocks -> D: decide, write.
        # A read in cycle r misses the writes that D makes in cycles r, r+1 and r+2, so M ORs in the blocks
        # written then (D now, and two cycles of history) where the address matches. Writes only ever set
        # bits, and a written block holds everything earlier, so this is exact whatever the RAM returns on a
        # read-during-write. Clearing is the exception; it never meets a command: at a generation boundary a
        # command is only accepted once no shift is in flight and the spare is clear.
        c = self._config
        k, l, P = c.k, c.l, c.physical_segments
        latency = hash_unit.latency
        buffer = base, fill, fill_zero, _, _, _ = self._circular_buffer(m, segments)

        # Responses wait in a FIFO; a command is accepted only with a credit, i.e. room for its response
        # whatever happens downstream (credits = depth - commands accepted but not yet answered).
        depth = latency + 8
        m.submodules.responses = responses = fifo.SyncFIFOBuffered(width=3, depth=depth)
        credits = Signal(range(depth + 1), init=depth)
        m.d.comb += [self.rsp.valid.eq(responses.r_rdy), self.rsp.payload.eq(responses.r_data),
                     responses.r_en.eq(self.rsp.ready)]

        # Generation boundary seen from the accepting side: inserts accepted mod g, and a shift in flight.
        accepted_fill = Signal(range(c.generation))
        accepted_fill_zero = Signal(init=1)
        shift_in_flight = Signal()
        boundary_wait = accepted_fill_zero & (shift_in_flight | segments.scrubbing)
        m.d.comb += self.cmd.ready.eq(segments.ready & ~boundary_wait & (credits != 0))
        accept = self.cmd.valid & self.cmd.ready
        answered = self.rsp.valid & self.rsp.ready
        m.d.sync += credits.eq(credits - accept + answered)
        # The segments a command writes (targets) and where its runs of k may start (starts) follow from the
        # command order alone, so they are worked out here, at acceptance, and travel down the pipeline as
        # registers: the decide stage and the forwarding then need no logic of their own for them.
        accepted_newest = _rotations(P, range(k), "accepted_newest")
        accepted_newest_next = _rotations(P, range(-1, k - 1), "accepted_newest_next")
        accepted_starts = _rotations(P, range(l + 1), "accepted_starts")
        inserting = self.cmd.payload.op != Op.QUERY
        targets_in = Mux(accept & inserting,
                         Mux(accepted_fill_zero, accepted_newest_next, accepted_newest), 0)
        with m.If(accept & inserting):
            m.d.sync += [accepted_fill.eq(Mux(accepted_fill == c.generation - 1, 0, accepted_fill + 1)),
                         accepted_fill_zero.eq(accepted_fill == c.generation - 1)]
            with m.If(accepted_fill_zero):
                m.d.sync += [shift_in_flight.eq(1), accepted_newest.eq(accepted_newest_next),
                             accepted_newest_next.eq(accepted_newest_next.rotate_right(1)),
                             accepted_starts.eq(accepted_starts.rotate_right(1))]

        # Key register, then the hash pipeline with valid and op alongside.
        key = Signal(c.key_width)
        valid = [Signal(name=f"valid{stage}") for stage in range(latency + 1)]
        ops = [Signal(Op, name=f"op{stage}") for stage in range(latency + 1)]
        targets = [Signal(P, name=f"targets{stage}") for stage in range(latency + 1)]
        starts = [Signal(P, name=f"starts{stage}") for stage in range(latency + 1)]
        m.d.comb += [hash_unit.key.eq(key), hash_unit.en.eq(1)]
        m.d.sync += [key.eq(self.cmd.payload.key), valid[0].eq(accept), ops[0].eq(self.cmd.payload.op),
                     targets[0].eq(targets_in), starts[0].eq(accepted_starts)]
        for stage in range(1, latency + 1):
            m.d.sync += [valid[stage].eq(valid[stage - 1]), ops[stage].eq(ops[stage - 1]),
                         targets[stage].eq(targets[stage - 1]), starts[stage].eq(starts[stage - 1])]

        hashes_layout = data.ArrayLayout(c.hash_bits, P)
        blocks_layout = data.ArrayLayout(c.block_bits, P)
        indices_layout = data.ArrayLayout(c.block_index_bits, P)

        # D's writes now and in the two cycles before: the writes a read may have missed.
        current = (segments.write_en, segments.write_addr, segments.write_data)
        history = [(Signal(P, name=f"fwd_en{age}"), Signal(indices_layout, name=f"fwd_addr{age}"),
                    Signal(blocks_layout, name=f"fwd_data{age}")) for age in (1, 2)]
        m.d.sync += [history[0][n].eq(current[n]) for n in range(3)]
        m.d.sync += [history[1][n].eq(history[0][n]) for n in range(3)]

        # R: read every segment at the key's block.
        q_valid, q_op, q_hashes = Signal(), Signal(Op), Signal(hashes_layout)
        q_targets, q_starts = Signal(P), Signal(P)
        m.d.comb += segments.read_en.eq(1)
        for j in range(P):
            m.d.comb += segments.read_addr[j].eq(hash_unit.hashes[j][:c.block_index_bits])
        m.d.sync += [q_valid.eq(valid[latency]), q_op.eq(ops[latency]), q_hashes.eq(hash_unit.hashes),
                     q_targets.eq(targets[latency]), q_starts.eq(starts[latency])]

        # Q: register the read data, and compare this command's blocks with those the three commands ahead
        # write (they are now in M, in D, and done with D one cycle ago; in the next cycle they are the
        # current write and the two of history), so M only has to gate and OR.
        m_valid, m_op, m_hashes, m_data = Signal(), Signal(Op), Signal(hashes_layout), Signal(blocks_layout)
        m_targets, m_starts = Signal(P), Signal(P)
        m_same = [Signal(P, name=f"same{n}") for n in range(3)]
        d_valid, d_op, d_targets, d_starts = Signal(), Signal(Op), Signal(P), Signal(P)
        d_match, d_indices, d_blocks = Signal(P), Signal(indices_layout), Signal(blocks_layout)
        m.d.sync += [m_valid.eq(q_valid), m_op.eq(q_op), m_hashes.eq(q_hashes), m_data.eq(segments.read_data),
                     m_targets.eq(q_targets), m_starts.eq(q_starts)]
        for j in range(P):
            index = q_hashes[j][:c.block_index_bits]
            ahead = (m_hashes[j][:c.block_index_bits], d_indices[j], history[0][1][j])
            m.d.sync += [m_same[n][j].eq(index == ahead[n]) for n in range(3)]

        # M: the blocks as they are now (read data plus forwarded writes; exact because writes only set bits
        # and a written block holds everything written before), their match bits, the blocks to write.
        m.d.sync += [d_valid.eq(m_valid), d_op.eq(m_op), d_targets.eq(m_targets), d_starts.eq(m_starts)]
        for j in range(P):
            index, mask = block_fields(c, m_hashes[j])
            sources = [(m_data[j], 1)] + [(written[j], m_same[n][j] & enable[j])
                                          for n, (enable, _, written) in enumerate((current, *history))]
            block = m_data[j]
            for source, enable in sources[1:]:
                block = block | (source & enable.replicate(c.block_bits))
            m.d.sync += [d_match[j].eq(block_bits_set(c, m_hashes[j], sources)), d_indices[j].eq(index),
                         d_blocks[j].eq(block | mask)]

        # D: "k consecutive matches among segments 0..k+l-1", the answer of Algorithm 1: a run of k matches
        # starting at a physical segment that is a logical start 0..l before this command's shift.
        runs = Cat(*(Cat(*(d_match[(s + i) % P] for i in range(k))).all() for s in range(P)))
        hit = (runs & d_starts).any()
        d_inserting = d_valid & (d_op != Op.QUERY)
        self._insert(m, segments, d_inserting, buffer,
                     [d_indices[j] for j in range(P)], [d_blocks[j] for j in range(P)], targets=d_targets)
        with m.If(d_inserting & fill_zero):
            m.d.sync += shift_in_flight.eq(0)
        m.d.comb += [responses.w_en.eq(d_valid), responses.w_data.eq(Cat(d_op, hit & (d_op != Op.INSERT)))]
