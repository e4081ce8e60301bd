"""The parallel scan: a pipeline that takes a command every clock and decides from all segments at once."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring

from ..model.config import Config, check_config
from .hash import block_bits_set, block_mask, hash_latency, segment_hash_layout
from .response import ResponseQueue
from .scan import scan_signature
from .types import Op, asks, inserts

__all__ = ["ParallelScan"]


class ParallelScan(wiring.Component):
    """A pipeline, one command per stage, a new one every clock; its answer is Algorithm 1's: "k consecutive
    matches among segments 0..k+l-1", decided from all k+l+1 match bits at once.

    Stages: accept → A: key register, the circular buffer decides → hash (``latency``) → R: read all segments
    → Q: read data registered → M: match bits and new blocks → D: answer, write, respond. A response leaves D
    ``latency + 6`` cycles after its command was accepted (when it does not wait in A) and waits in a
    :class:`~apbbf.hdl.response.ResponseQueue` for ``rsp.ready``.

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
        return super().__new__(cls, src_loc_at=1)

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
        # read-during-write. Clearing is the exception; it never meets a command: a command that shifts is
        # held in A until the segment it shifts into is clean, and a retired segment is only cleared once the
        # commands ahead of the one that retired it are through D.
        c = self._config
        k, P = c.k, c.physical_segments
        latency = hash_latency(c)
        hash, segments, buffer = self.hash, self.segments, self.buffer
        m = Module()

        # Responses wait in a queue; a command leaves A only with a credit (room for its response).
        m.submodules.responses = responses = ResponseQueue(latency + 8)
        wiring.connect(m, responses.o, wiring.flipped(self.rsp))

        # A: the command just accepted, with its key in front of the hash unit. The circular buffer decides it
        # here (what it may match, what it writes and retires), unless it must wait: for the segment its shift
        # takes to be clean, or, to restart a time-bounded window, for the pipeline to drain and every memory
        # to be cleared.
        a_valid, a_op, key = Signal(), Signal(Op), Signal(c.key_width)
        valid = [Signal(name=f"valid{stage}") for stage in range(latency + 1)]
        ops = [Signal(Op, name=f"op{stage}") for stage in range(latency + 1)]
        targets = [Signal(P, name=f"targets{stage}") for stage in range(latency + 1)]
        fresh = [Signal(P, name=f"fresh{stage}") for stage in range(latency + 1)]
        retire = [Signal(P, name=f"retire{stage}") for stage in range(latency + 1)]
        q_valid, m_valid, d_valid = Signal(), Signal(), Signal()
        ahead = Cat(*valid[1:], q_valid, m_valid, d_valid).any()
        cleared = Signal()                                  # the restart's clearing has been started
        advance = Signal()
        m.d.comb += [
            advance.eq(a_valid & ~buffer.wait & responses.available &
                       (~buffer.restart | (cleared & segments.ready))),
            segments.clear.eq(a_valid & buffer.restart & ~ahead & ~cleared),
            self.cmd.ready.eq(segments.ready & (~a_valid | advance)),
            buffer.enter.eq(self.cmd.valid & self.cmd.ready), buffer.enter_op.eq(self.cmd.payload.op),
            buffer.decide.eq(advance), buffer.cleaned.eq(segments.cleaned),
            responses.reserve.eq(advance),
            hash.key.eq(key), hash.en.eq(1),
        ]
        if c.timed:
            m.d.comb += buffer.enter_time.eq(self.cmd.payload.time)
        with m.If(segments.clear):
            m.d.sync += cleared.eq(1)
        with m.If(advance):
            m.d.sync += [a_valid.eq(0), cleared.eq(0)]
        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += [a_valid.eq(1), a_op.eq(self.cmd.payload.op), key.eq(self.cmd.payload.key)]

        # The hash pipeline, with what the buffer decided alongside.
        m.d.sync += [valid[1].eq(advance), ops[1].eq(a_op), targets[1].eq(Mux(advance, buffer.targets, 0)),
                     fresh[1].eq(buffer.fresh), retire[1].eq(Mux(advance, buffer.retire, 0))]
        for stage in range(2, latency + 1):
            m.d.sync += [valid[stage].eq(valid[stage - 1]), ops[stage].eq(ops[stage - 1]),
                         targets[stage].eq(targets[stage - 1]), fresh[stage].eq(fresh[stage - 1]),
                         retire[stage].eq(retire[stage - 1])]

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
        q_op, q_hashes = Signal(Op), Signal(hashes_layout)
        q_targets, q_fresh, q_retire = Signal(P), Signal(P), Signal(P)
        m.d.comb += segments.read_en.eq(1)
        for j in range(P):
            m.d.comb += segments.read_addr[j].eq(hash.hashes[j].index)
        m.d.sync += [q_valid.eq(valid[latency]), q_op.eq(ops[latency]), q_hashes.eq(hash.hashes),
                     q_targets.eq(targets[latency]), q_fresh.eq(fresh[latency]), q_retire.eq(retire[latency])]

        # Q: register the read data, and compare this command's blocks with those the three commands ahead
        # write (they are now in M, in D, and done with D one cycle ago; in the next cycle they are the
        # current write and the two of history), so M only has to gate and OR.
        m_op, m_hashes, m_data = Signal(Op), Signal(hashes_layout), Signal(blocks_layout)
        m_targets, m_fresh, m_retire = Signal(P), Signal(P), Signal(P)
        m_same = [Signal(P, name=f"same{n}") for n in range(3)]
        d_op, d_targets, d_fresh, d_retire = Signal(Op), Signal(P), Signal(P), Signal(P)
        d_match, d_indices, d_blocks = Signal(P), Signal(indices_layout), Signal(blocks_layout)
        m.d.sync += [m_valid.eq(q_valid), m_op.eq(q_op), m_hashes.eq(q_hashes), m_data.eq(segments.read_data),
                     m_targets.eq(q_targets), m_fresh.eq(q_fresh), m_retire.eq(q_retire)]
        for j in range(P):
            ahead_index = (m_hashes[j].index, d_indices[j], history[0][1][j])
            m.d.sync += [m_same[n][j].eq(q_hashes[j].index == ahead_index[n]) for n in range(3)]

        # M: the blocks as they are now (read data plus forwarded writes), their match bits, the blocks to write.
        m.d.sync += [d_valid.eq(m_valid), d_op.eq(m_op), d_targets.eq(m_targets), d_fresh.eq(m_fresh),
                     d_retire.eq(m_retire)]
        for j in range(P):
            sources = [(m_data[j], 1)] + [(written[j], m_same[n][j] & enable[j])
                                          for n, (enable, _, written) in enumerate((current, *history))]
            block = m_data[j]
            for source, enable in sources[1:]:
                block = block | (source & enable.replicate(c.block_bits))
            m.d.sync += [d_match[j].eq(block_bits_set(c, m_hashes[j], sources) & m_fresh[j]),
                         d_indices[j].eq(m_hashes[j].index), d_blocks[j].eq(block | block_mask(c, m_hashes[j]))]

        # D: k consecutive matches among the fresh segments (Algorithm 1's answer): the run cannot wrap
        # through the free positions below base, which are never fresh.
        runs = Cat(*(Cat(*(d_match[(s + i) % P] for i in range(k))).all() for s in range(P)))
        m.d.comb += [segments.write_en.eq(d_targets), segments.write_addr.eq(d_indices),
                     segments.write_data.eq(d_blocks), segments.retire.eq(d_retire)]
        m.d.comb += [responses.i.valid.eq(d_valid), responses.i.payload.op.eq(d_op),
                     responses.i.payload.hit.eq(runs.any() & asks(d_op))]
        return m
