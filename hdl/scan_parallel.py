"""The parallel scan: a pipeline that takes a command every clock and decides from all segments at once."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring

from ..model.config import Config, check_config
from .buffer import CircularBuffer
from .hash import block_bits_set, block_mask, hash_latency, segment_hash_layout
from .response import ResponseQueue
from .scan import scan_signature
from .types import Op

__all__ = ["ParallelScan"]


class ParallelScan(wiring.Component):
    """A pipeline, one command per stage, a new one every clock; its answer is Algorithm 1's: "k consecutive
    matches among segments 0..k+l-1", decided from all k+l+1 match bits at once.

    Stages: accept → key register → hash (``latency``) → R: read all segments → Q: read data registered →
    M: match bits and new blocks → D: decide, write, respond. A response leaves D ``latency + 6`` cycles after
    its command was accepted and waits in a :class:`~apbbf.hdl.response.ResponseQueue` for ``rsp.ready``.

    Parameters
    ----------
    config : Config

    Attributes
    ----------
    cmd, rsp, hash, segments, buffer
        See :func:`~apbbf.hdl.scan.scan_signature`.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    """

    def __new__(cls, config, *args, **kwargs):
        check_config(config)
        return super().__new__(cls)

    def __init__(self, config: Config):
        self._config = config
        super().__init__(scan_signature(config))

    @property
    def config(self) -> Config:
        return self._config

    def elaborate(self, platform):
        # A read in cycle r misses the writes that D makes in cycles r, r+1 and r+2, so M ORs in the blocks
        # written then (D now, and two cycles of history) where the address matches. Writes only ever set bits,
        # and a written block holds everything earlier, so this is exact whatever the RAM returns on a
        # read-during-write. Clearing is the exception; it never meets a command: at a generation boundary a
        # command is only accepted once no shift is in flight and the spare is clear.
        c = self._config
        k, P = c.k, c.physical_segments
        latency = hash_latency(c)
        hash, segments, buffer = self.hash, self.segments, self.buffer
        m = Module()

        # Responses wait in a queue; a command is accepted only with a credit (room for its response).
        m.submodules.responses = responses = ResponseQueue(latency + 8)
        wiring.connect(m, responses.o, wiring.flipped(self.rsp))

        # The segments a command writes (targets) and where its runs of k may start (starts) follow from the
        # command order alone, so a second circular buffer works them out at acceptance and they travel down
        # the pipeline as registers: the decide stage and the forwarding need no logic of their own for them.
        m.submodules.accepted = accepted = CircularBuffer(c)
        shift_in_flight = Signal()
        boundary_wait = accepted.fill_zero & (shift_in_flight | segments.scrubbing)
        m.d.comb += self.cmd.ready.eq(segments.ready & ~boundary_wait & responses.available)
        accept = self.cmd.valid & self.cmd.ready
        inserting = accept & (self.cmd.payload.op != Op.QUERY)
        m.d.comb += [responses.reserve.eq(accept), accepted.insert.eq(inserting)]
        with m.If(accepted.shift):
            m.d.sync += shift_in_flight.eq(1)

        # Key register, then the hash pipeline with valid, op, targets and starts alongside.
        key = Signal(c.key_width)
        valid = [Signal(name=f"valid{stage}") for stage in range(latency + 1)]
        ops = [Signal(Op, name=f"op{stage}") for stage in range(latency + 1)]
        targets = [Signal(P, name=f"targets{stage}") for stage in range(latency + 1)]
        starts = [Signal(P, name=f"starts{stage}") for stage in range(latency + 1)]
        m.d.comb += [hash.key.eq(key), hash.en.eq(1)]
        m.d.sync += [key.eq(self.cmd.payload.key), valid[0].eq(accept), ops[0].eq(self.cmd.payload.op),
                     targets[0].eq(Mux(inserting, accepted.targets, 0)), starts[0].eq(accepted.starts)]
        for stage in range(1, latency + 1):
            m.d.sync += [valid[stage].eq(valid[stage - 1]), ops[stage].eq(ops[stage - 1]),
                         targets[stage].eq(targets[stage - 1]), starts[stage].eq(starts[stage - 1])]

        hashes_layout = data.ArrayLayout(segment_hash_layout(c), P)
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
            m.d.comb += segments.read_addr[j].eq(hash.hashes[j].index)
        m.d.sync += [q_valid.eq(valid[latency]), q_op.eq(ops[latency]), q_hashes.eq(hash.hashes),
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
            ahead = (m_hashes[j].index, d_indices[j], history[0][1][j])
            m.d.sync += [m_same[n][j].eq(q_hashes[j].index == ahead[n]) for n in range(3)]

        # M: the blocks as they are now (read data plus forwarded writes), their match bits, the blocks to write.
        m.d.sync += [d_valid.eq(m_valid), d_op.eq(m_op), d_targets.eq(m_targets), d_starts.eq(m_starts)]
        for j in range(P):
            sources = [(m_data[j], 1)] + [(written[j], m_same[n][j] & enable[j])
                                          for n, (enable, _, written) in enumerate((current, *history))]
            block = m_data[j]
            for source, enable in sources[1:]:
                block = block | (source & enable.replicate(c.block_bits))
            m.d.sync += [d_match[j].eq(block_bits_set(c, m_hashes[j], sources)), d_indices[j].eq(m_hashes[j].index),
                         d_blocks[j].eq(block | block_mask(c, m_hashes[j]))]

        # D: a run of k matches starting at a physical segment that is a logical start 0..l before this
        # command's shift.
        runs = Cat(*(Cat(*(d_match[(s + i) % P] for i in range(k))).all() for s in range(P)))
        hit = (runs & d_starts).any()
        d_inserting = d_valid & (d_op != Op.QUERY)
        m.d.comb += [segments.write_en.eq(d_targets), segments.write_addr.eq(d_indices),
                     segments.write_data.eq(d_blocks), buffer.insert.eq(d_inserting)]
        with m.If(buffer.shift):
            m.d.sync += shift_in_flight.eq(0)
        m.d.comb += [responses.i.valid.eq(d_valid), responses.i.payload.op.eq(d_op),
                     responses.i.payload.hit.eq(hit & (d_op != Op.INSERT))]
        return m
