"""The streaming key extractor of the packet de-duplicator: frames in, one 64-bit key per frame out, bit-exact with
:func:`apbbf.model.packet.frame_key` (the module documentation of :mod:`apbbf.model.packet` is the specification),
for every recipe the model accepts (up to 8 ranges per class).

The CRC-64/XZ of the message is computed over the frame's beats *as they come*, not over beats realigned to a
segment's first byte: each range has a CRC register (a slot) fed the beats with the bytes outside its segment
zeroed; slot 0 starts from a state that undoes the ``shift = s mod (W/8)`` zero bytes in front of its segment, the
others from zero. After the last beat, the zeros that padding to 64 bytes adds (or that the last beat fed in
excess), the slots' order in the message (Horner's rule) and the trailer are applied as constant matrices. Every
constant (matrices, start states) is derived (:mod:`apbbf.hdl.packet.crc_maps`) from the CRC's
:class:`~amaranth.lib.crc.Algorithm` by running its bit-serial register on unit vectors;
:func:`~apbbf.hdl.packet.crc_maps.crc_model` checks that register against ``amaranth.lib.crc``.
"""

from itertools import product

from amaranth import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer
from .crc_maps import apply_rows, compose, crc_model, state_basis, step_matrix, trailer_matrix, transform, zeros_matrix
from ..lib.ungated_fifo import UngatedFIFO
from ...model.packet import BLOCK_BYTES, ETHERTYPE_IPV4, ETHERTYPE_IPV6, TPIDS, FrameClass, KeySpec

__all__ = ["KeyExtractor", "KINDS", "beat_layout", "key_layout"]

#: Bytes of the header the classifier reads (up to the IPv6 payload length after two tags: bytes 26-27).
_HEADER = 28
#: Bytes of the frame (without FCS) after which its class is decided (module documentation, "Classification").
_PREFIX = 62
#: Bits of the byte positions in a frame: frames of up to 65535 bytes, ranges reaching 22 + 2 * 65535.
_POS = 18
_INF = (1 << _POS) - 1
#: What the copies of a slot's state for its padding matrices (F0s) hold XORed: distinct constants, so that no
#: two copies have the same input (Yosys merges registers that do), undone in the partial sums' LUTs. Eight are
#: enough: a slot's shifts are 0 and one per variant (class and tag count) of the frame, at most 1 + 3 + 3.
_COPY_FLIPS = (0, (1 << 64) - 1, 0x5555_5555_5555_5555, 0xAAAA_AAAA_AAAA_AAAA, 0x3333_3333_3333_3333,
               0xCCCC_CCCC_CCCC_CCCC, 0x0F0F_0F0F_0F0F_0F0F, 0xF0F0_F0F0_F0F0_F0F0)
#: The output's ``kind`` code (2 bits) indexes this: 0 other, 1 IPv4, 2 IPv6 (FrameClass values 0, 4, 6).
KINDS = _KINDS = (FrameClass.OTHER, FrameClass.IPV4, FrameClass.IPV6)


def beat_layout(data_width: int) -> data.StructLayout:
    """A beat of the input stream: ``data`` (byte i in bits 8i..8i+7), ``keep`` (packed from lane 0), ``last``."""
    return data.StructLayout({"data": data_width, "keep": data_width // 8, "last": 1})


#: A key of the output stream: the key, the frame's length without FCS (saturated at 65535), its class code
#: (:data:`KINDS`).
key_layout = data.StructLayout({"key": 64, "length": 16, "kind": 2})


# The block -----------------------------------------------------------------------------------------------------

def _blocks_bound(r, start: int) -> int:
    """The most 64-byte blocks range ``r`` (starting at frame byte ``start``) can add to a message of a frame of up
    to 65535 bytes."""
    most = max(0, 65535 - start) if r.length is None else min(r.length, max(0, 65535 - start))
    return -(-most // BLOCK_BYTES)


def _beat_step(step: int):
    """A beat of ``step`` bytes with the state in its companion basis (:func:`~apbbf.hdl.packet.crc_maps.state_basis`,
    the comment at P3 in ``_elaborate_segments``): the state's own rows (the loop) and the beat's data rows
    (``step_matrix``'s data columns, moved into the basis)."""
    basis = state_basis(step)
    return basis.loop, compose(basis.to_basis, tuple(row >> 64 for row in step_matrix(step)))


def _pad_rows(step: int, shift: int):
    """F0's matrix for a state in the basis of beats of ``step`` bytes: back to the register's own basis, then
    ``A^(64 - step + shift)``."""
    return compose(zeros_matrix(BLOCK_BYTES - step + shift), state_basis(step).from_basis)


def _partial_sums(rows, inputs: int, size: int = 8):
    """``rows`` (a matrix as :meth:`~apbbf.hdl.packet.crc_maps.CRCModel.matrix` gives it, on ``inputs`` bits) split for
    two registered stages: the masks of partial sums of at most ``size`` input bits (8: two LUT4 levels), and per
    row the mask of the partial sums whose XOR is that row's output."""
    groups, sums = [], []
    for row in rows:
        bits = [j for j in range(inputs) if row >> j & 1]
        first = len(groups)
        groups += [sum(1 << j for j in bits[i:i + size]) for i in range(0, len(bits), size)]
        sums.append(sum(1 << g for g in range(first, len(groups))))
    return groups, sums


class KeyExtractor(wiring.Component):
    """Streaming key extractor: the 64-bit de-duplication key (:func:`apbbf.model.packet.frame_key`), the length
    and the class of every frame of an AXI4-Stream-like beat stream.

    Frames enter on ``i`` one beat per cycle at most, with any idle cycles between and within frames (no
    backpressure); each frame's key leaves on ``o`` (no backpressure either) in frame order, at most
    :attr:`latency` cycles after the cycle its last beat was on ``i`` (and at least 2). A frame is at least one
    byte on ``i``; with ``fcs`` a frame of 4 bytes or fewer is keyed as the empty frame. Frames are keyed exactly
    up to 65535 bytes (without FCS); ``length`` saturates at 65535.

    Every recipe the model accepts is keyed: up to :data:`~apbbf.model.packet.MAX_RANGES` ranges per class, both
    bases, masks, ``*`` ranges. The gateware has one *slot* per range of the longest recipe (:attr:`slots`): slot
    r keys range r of whichever class the frame is in.

    Parameters
    ----------
    spec : KeySpec
        The key specification.
    data_width : int
        W, the beat width in bits: 64, 128, 256 or 512.
    fcs : bool
        The last 4 bytes of every frame on ``i`` are its FCS: the frame is keyed without them.

    Attributes
    ----------
    i : In(stream.Signature(beat_layout(W), always_ready=True))
        The beats: ``data`` (byte i in bits 8i..8i+7), ``keep`` (a count of leading ones, all ones but on the
        last beat, never 0), ``last``.
    o : Out(stream.Signature(key_layout, always_ready=True))
        One payload per frame: ``key``, ``length`` (bytes without FCS, saturated at 65535), ``kind``
        (the class as a 2-bit code, :data:`KINDS` ``[kind]`` is its :class:`~apbbf.model.packet.FrameClass`).
    spec, data_width, fcs
        The parameters.
    slots : int
        Ranges of the longest recipe: the CRC engines the gateware has.
    latency : int
        The most cycles from a frame's last beat on ``i`` to its key on ``o``; it depends on the width, ``fcs``
        and, through the longest lengths of ranges 1 and later, on the recipe (:attr:`horner_stages`).
    horner_stages : tuple of int
        Per slot r >= 1, the pipeline stages that move the key of ranges 0..r-1 over range r's blocks (one per bit
        of range r's most 64-byte blocks).

    Raises
    ------
    TypeError
        If ``spec`` is not a KeySpec, ``data_width`` not an integer or ``fcs`` not a bool.
    ValueError
        If ``data_width`` is not 64, 128, 256 or 512.
    """

    def __init__(self, spec: KeySpec, data_width: int, *, fcs: bool = False):
        if not isinstance(spec, KeySpec):
            raise TypeError(f"spec must be a KeySpec, not {spec!r}")
        check_integer("data_width", data_width)
        if data_width not in (64, 128, 256, 512):
            raise ValueError(f"data_width must be 64, 128, 256 or 512, not {data_width}")
        if not isinstance(fcs, bool):
            raise TypeError(f"fcs must be a bool, not {fcs!r}")
        self._spec, self._data_width, self._fcs = spec, data_width, fcs
        step = data_width // 8
        self._slots = S = max(len(spec.recipe(kind)) for kind in _KINDS)
        # A class's range r goes to slot r + first[class]: the firsts that need the fewest Horner stages (a `*`
        # range, or a long one, in the last slot; slot 0, which has no Horner stage, may take a long one).
        self._first = min(product(*[range(S - len(spec.recipe(kind)) + 1) for kind in _KINDS]),
                          key=lambda first: (sum(self._plan(first)[2]), first))
        self._variants, self._shifts, self._horner = self._plan(self._first)
        self._head_beats = -(-(_PREFIX + 4 * fcs) // step)
        self._depth = self._head_beats + 8
        # the finisher: one stage for the shift, one per bit of q + 1 in 0..64/(W/8), one for the trailer
        self._q_bits = (BLOCK_BYTES // step).bit_length()
        super().__init__({
            "i": In(stream.Signature(beat_layout(data_width), always_ready=True)),
            "o": Out(stream.Signature(key_layout, always_ready=True)),
        })

    def _plan(self, first):
        """For the class -> first slot map ``first``: per (class index, tags), per slot, (range or None, the
        segment's start s, the range's end if it has a length); per slot the shifts ``s mod (W/8)``; per slot
        r >= 1 its Horner stages. A slot outside the class's recipe has no range and selects nothing."""
        S, step = self._slots, self._data_width // 8
        variants = {}
        for k, kind in enumerate(_KINDS):
            recipe = self._spec.recipe(kind)
            for tags in (0, 1, 2) if kind != FrameClass.OTHER else (0,):
                slots = [(None, _INF, _INF)] * S
                for index, r in enumerate(recipe):
                    start = r.offset + (0 if r.base == "frame" else 14 + 4 * tags)
                    slots[first[k] + index] = (r, start, _INF if r.length is None else start + r.length)
                variants[k, tags] = slots
        shifts = [sorted({ranges[s][1] % step for ranges in variants.values() if ranges[s][0]}) for s in range(S)]
        blocks = [max((_blocks_bound(ranges[s][0], ranges[s][1]) for ranges in variants.values() if ranges[s][0]),
                      default=0) for s in range(S)]
        return variants, shifts, tuple(max(1, b.bit_length()) for b in blocks[1:])

    @property
    def spec(self) -> KeySpec:
        return self._spec

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def fcs(self) -> bool:
        return self._fcs

    @property
    def slots(self) -> int:
        return self._slots

    @property
    def horner_stages(self) -> tuple:
        return self._horner

    @property
    def latency(self) -> int:
        # Beat x (arriving in cycle a_x) enters P0 in cycle max(a_x + 2, d + 7, P0 of beat x - 1 + 1), d the cycle
        # of the beat that decided its frame's class (info FIFO readable 6 cycles later, info register 7); with
        # the FCS a beat also waits for the next one (a_(x+1) + 1). Unrolled, a last beat enters P0 by
        # a_x + 6 + head_beats (the deciding beat of an earlier, stalled frame is at most head_beats - 1 beats
        # after that frame's first; beats arrive one per cycle at most). Then Q, P1, P2, PD, PX, P3, F0s, F0a, F0;
        # two stages per bit of q + 1 and per Horner stage of slots 1..; the output register.
        return self._head_beats + 6 + 9 + 2 * self._q_bits + 2 * sum(self._horner) + 1

    def matrices(self) -> list:
        """The constant GF(2) matrices the gateware applies, as ``(stage, rows, copies)``: ``rows`` as
        :meth:`~apbbf.hdl.packet.crc_maps.CRCModel.matrix` gives them, ``copies`` how many times the gateware has one.
        Stages: ``step`` (a beat into a slot's register), ``pad`` (F0, one per slot and shift), ``zeros`` (F1..,
        the padding's beats), ``horner`` (moving the key over a later range's blocks), ``trailer``."""
        B, out = self._data_width // 8, []
        loop, data_rows = _beat_step(B)
        out.append(("step", tuple(row | data << 64 for row, data in zip(loop, data_rows)), self._slots))
        for shifts in self._shifts:
            for shift in sorted(set(shifts) | {0}):
                out.append(("pad", _pad_rows(B, shift), 1))
        for b in range(self._q_bits):
            out.append(("zeros", zeros_matrix(B << b), self._slots))
        for bits in self._horner:
            for b in range(bits):
                out.append(("horner", zeros_matrix(BLOCK_BYTES << b), 1))
        out.append(("trailer", trailer_matrix(_POS, self._slots), 1))
        return out

    def elaborate(self, platform):
        # Why this shape: no backpressure anywhere, so every stage takes one beat per cycle and nothing ever
        # needs two CRC steps in a cycle. Realigning the beats to a segment's first byte would cost a flush word
        # at the end of each segment (several words in a cycle with short ranges or back-to-back frames); feeding
        # the beats unaligned and fixing the CRC up with constant matrices afterwards costs none. Beats wait in a
        # FIFO until their frame's class (decided by its first 62 bytes or its end) is known; the one-beat
        # lookahead at the FIFO's head tells where the frame ends when the FCS straddles the last two beats.
        # Ranges may share a beat, so each range has its own CRC register (a slot): slot 0 starts from the CRC's
        # initial value, the others from zero, and each one's padded segment is complete when the frame ends.
        # The CRC is affine, so the message's CRC is then Horner's rule over the slots: the key so far moved over
        # the next segment's padded length (a variable power of the zero-byte matrix, one stage per bit) and that
        # segment's own CRC XORed in. Each stage is registered: small comparators, one XOR tree, or one constant
        # matrix and a mux.
        m = Module()
        count, beats, beat_entry = self._elaborate_input(m)
        infos, info_entry = self._elaborate_classifier(m, count)
        q = self._elaborate_read_side(m, beats, beat_entry, infos, info_entry)
        slot, p3_end, p3_n, p3_kind = self._elaborate_segments(m, **q)
        self._elaborate_key(m, slot, p3_end, p3_n, p3_kind)
        return m

    def _elaborate_input(self, m):
        """The beat FIFOs' write side: each beat with its byte counts. Returns the input beat's byte count, the
        FIFOs (counts and flags, data) and the counts' entry layout."""
        W, B, fcs, S = self._data_width, self._data_width // 8, self._fcs, self._slots
        cw = B.bit_length()                 # bytes in a beat, 0..B

        # Input: the byte count of the beat. keep is a run of ones from lane 0 (one-hot where it ends): each bit of
        # the count is an OR of the run's possible ends (a shallow tree, not a priority chain or an adder).
        keep = self.i.payload.keep
        ends = Cat(*[keep[lane] & ~keep[lane + 1] for lane in range(B - 1)], keep[B - 1])
        count = Signal(cw)
        m.d.comb += [count[bit].eq(Cat(*[ends[lane] for lane in range(B) if (lane + 1) >> bit & 1]).any())
                     for bit in range(cw)]
        # With the FCS, the bytes of a beat that are the frame's depend on the next beat when the FCS straddles
        # them: each entry carries what it keeps if it is the last (`own`), and what the beat before it keeps
        # (`prev`), so that the read side only selects.
        own, prev = Signal(cw), Signal(cw)
        if fcs:
            m.d.comb += [own.eq(Mux(count > 4, count - 4, 0)),
                         prev.eq(Mux(self.i.payload.last & (count < 4), B - 4 + count, B))]
        else:
            m.d.comb += [own.eq(count), prev.eq(B)]

        beat_entry = data.StructLayout({"own": cw, "prev": cw, "last": 1})
        # The beat queues never fill (their depth covers the classifier's latency): their write is not gated by
        # their level, so the write enable of their LUT RAM (133 cells at 512 bits) is the input's valid flip-flop.
        # A beat's data has a queue of its own, read where the beat taken last lies (`r_taken`): the read side
        # holds its counts and flags in a register, and its data in the queue, not in W flip-flops whose enable
        # would be the read.
        m.submodules.beats = beats = UngatedFIFO(width=beat_entry.size, depth=self._depth)
        # The data queue in slices of 64 bits (16 LUT RAM cells), each with pointers of its own: at 512 bits one
        # register of the taken beat's address reached all 128 cells (8.8 ns of routing in the whole de-duplicator).
        m.submodules.beat_data = beat_data = UngatedFIFO(width=W, depth=self._depth, taken=True, slices=W // 64)
        self._beats, self._beat_data = beats, beat_data
        m.d.comb += [
            beats.w_data.eq(Cat(own, prev, self.i.payload.last)),
            beats.w_en.eq(self.i.valid),
            beat_data.w_data.eq(self.i.payload.data),
            beat_data.w_en.eq(self.i.valid),
        ]

        return count, (beats, beat_data), beat_entry

    def _elaborate_classifier(self, m, count):
        """The classifier on the write side (K, C1, C2) and the info FIFO's write (C3): each frame's class and
        its slots' segments. Returns the info FIFO and its entry's layout."""
        B, fcs, S = self._data_width // 8, self._fcs, self._slots
        cw = B.bit_length()

        # Classifier (write side): capture the header, decide at 62 bytes (66 with FCS) or the frame's end. A beat
        # that is not its frame's last is whole (B bytes), so the decision needs no count; the frame's bytes up to
        # the deciding beat's end are summed as it is registered, so that K's compares start from a register.
        header = Signal(8 * _HEADER)
        received = Signal(7)                # bytes of the frame before this beat, saturated at 127
        beat_index = Signal(range(-(-_HEADER // B) + 1))
        decided = Signal()
        # Whether received has reached the deciding beat's threshold, a flag kept as received moves (it only
        # grows, by B a beat): a compare there was a carry chain into the enable of K's registers.
        threshold = _PREFIX + 4 * fcs - B
        deciding = Signal(init=threshold <= 0)
        go, k_last, k_after = Signal(), Signal(), Signal(8)
        m.d.sync += go.eq(0)
        with m.If(self.i.valid):
            for k in range(-(-_HEADER // B)):
                lo, hi = k * B, min(_HEADER, (k + 1) * B)
                with m.If(beat_index == k):
                    m.d.sync += header[8 * lo:8 * hi].eq(self.i.payload.data[:8 * (hi - lo)])
            with m.If(beat_index != -(-_HEADER // B)):
                m.d.sync += beat_index.eq(beat_index + 1)
            m.d.sync += [received.eq(Mux(received > 127 - B, 127, received + B)),
                         deciding.eq(received >= threshold - B)]
            with m.If(~decided & (self.i.payload.last | deciding)):
                # received + count, as a frame decides: received is then a multiple of B below 62 + 4 + B (no beat
                # before it saturated), and count is 0..B, B only with keep's last lane: so the sum is count's low
                # bits beside received's high bits, those incremented by keep's last lane. No carry chain behind
                # count's tree (the 512-bit de-duplicator's path, 9.9 ns, from keep through it).
                log_b = B.bit_length() - 1
                m.d.sync += [go.eq(1), decided.eq(1), k_last.eq(self.i.payload.last),
                             k_after.eq(Cat(count[:log_b], Mux(count[log_b], received[log_b:] + 1,
                                                               received[log_b:])))]
            with m.If(self.i.payload.last):
                m.d.sync += [received.eq(0), beat_index.eq(0), decided.eq(0), deciding.eq(threshold <= 0)]

        def byte(header, i):
            return header[8 * i:8 * i + 8]

        def be16(header, i):
            return Cat(byte(header, i + 1), byte(header, i))

        def tpid(value):
            return (value == TPIDS[0]) | (value == TPIDS[1])

        # K: the header for C1, and what C1 reads of the frame's length n (without FCS, as far as the rules need
        # it) and of its tags, as flags: `n >= c` for each length the rules compare with, and the two TPID
        # matches. So C1's checks are of flags and header fields, not of compares after n's own logic (five LUT
        # levels from n's register: the 64-bit path of every seed once the adder before n was registered).
        # n = min(after - 4 * fcs, 127) clamped at 0 if the deciding beat is the frame's last, else 127 (the frame
        # goes on past 62 bytes), so `n >= c` (14 <= c <= 127) is `~k_last | (after >= c + 4 * fcs)`.
        lengths = (14, 18, 22) + tuple(14 + 4 * t + extra for extra in (20, 40) for t in (0, 1, 2))
        k_go = Signal()
        k_header = Signal(8 * _HEADER)
        at_least = {c: Signal(name=f"k_at_least_{c}") for c in lengths}
        k_tpid = {i: Signal(name=f"k_tpid_{i}") for i in (12, 16)}
        m.d.sync += k_go.eq(go)
        with m.If(go):
            m.d.sync += k_header.eq(header)
            m.d.sync += [flag.eq(~k_last | (k_after >= c + 4 * fcs)) for c, flag in at_least.items()]
            m.d.sync += [flag.eq(tpid(be16(header, i))) for i, flag in k_tpid.items()]

        # C1: the class from the header (module documentation, "Classification"): every check for each tag count
        # in parallel (constant offsets: no adders), registered; C1b: the tag count picks.
        tag1 = at_least[14] & k_tpid[12]
        bad1 = tag1 & ~at_least[18]
        tag2 = tag1 & ~bad1 & k_tpid[16]
        bad2 = tag2 & ~at_least[22]
        b_go, b_header, b_tag1, b_tag2, b_usable = Signal(), Signal(8 * _HEADER), Signal(), Signal(), Signal()
        b_v4, b_v6 = Signal(3), Signal(3)
        m.d.sync += [b_go.eq(k_go), b_header.eq(k_header), b_tag1.eq(tag1), b_tag2.eq(tag2),
                     b_usable.eq(at_least[14] & ~bad1 & ~bad2)]
        for t in (0, 1, 2):
            p = 14 + 4 * t
            first, ihl = byte(k_header, p), byte(k_header, p)[:4]
            m.d.sync += [
                b_v4[t].eq((be16(k_header, p - 2) == ETHERTYPE_IPV4) & at_least[p + 20] & (first[4:] == 4) &
                           (ihl >= 5) & (be16(k_header, p + 2) >= 4 * ihl)),
                b_v6[t].eq((be16(k_header, p - 2) == ETHERTYPE_IPV6) & at_least[p + 40] & (first[4:] == 6)),
            ]
        tags = Signal(2)
        m.d.comb += tags.eq(Mux(b_tag2, 2, Mux(b_tag1, 1, 0)))
        ipv4, ipv6, total = Signal(), Signal(), Signal(16)
        payload = Signal(16)
        with m.Switch(tags):
            for t in (0, 1, 2):
                with m.Case(t):
                    p = 14 + 4 * t
                    m.d.comb += [
                        ipv4.eq(b_usable & b_v4[t]),
                        ipv6.eq(b_usable & b_v6[t]),
                        total.eq(be16(b_header, p + 2)),
                        payload.eq(be16(b_header, p + 4)),
                    ]
        c_go, c_kind, c_tags, c_total, c_payload = Signal(), Signal(2), Signal(2), Signal(16), Signal(16)
        # The bound's operands, picked here: the IP field and 14 + 4 tags (IPv4) or 54 + 4 tags (otherwise).
        c_field, c_offset = Signal(16), Signal(range(54 + 4 * 2 + 1))
        m.d.sync += [
            c_go.eq(b_go),
            c_kind.eq(Mux(ipv4, 1, Mux(ipv6, 2, 0))),
            c_tags.eq(Mux(ipv4 | ipv6, tags, 0)),
            c_total.eq(total),
            c_payload.eq(payload),
            c_field.eq(Mux(ipv4, total, payload)),
            c_offset.eq(Mux(ipv4, 14, 54) + 4 * Mux(ipv4 | ipv6, tags, 0)),
        ]

        # C2: the end of the IP packet (the l3 ranges' limit), `bound` = 14 + 4 tags + (IPv4: total length; else:
        # 40 + payload length), and per slot whether it cuts the slot's range short (`bound < end`, as a compare
        # of the IP field with a constant, beside the adder, not after it). The adder's operands are registers and
        # its sum is one, with no multiplexer between: the bound is used only by a variant with l3 ranges, whose
        # kind and tags picked the operands.
        d_go, d_variant, d_bound = Signal(), Signal(4), Signal(_POS)
        d_clip = Signal(S)
        m.d.sync += [d_go.eq(c_go), d_variant.eq(Cat(c_tags, c_kind)), d_bound.eq(c_field + c_offset)]
        with m.Switch(Cat(c_tags, c_kind)):
            for (k, t), ranges in self._variants.items():
                with m.Case(t | k << 2):
                    v4 = _KINDS[k] == FrameClass.IPV4
                    field, offset = (c_total, 14 + 4 * t) if v4 else (c_payload, 54 + 4 * t)
                    for s, (r, start, end) in enumerate(ranges):
                        if r is not None and r.base == "l3":
                            m.d.sync += d_clip[s].eq(field < end - offset if end - offset > 0 else 0)

        # C3 (the info FIFO's write): each slot's segment start and end limit, and whether each is a beat or more
        # away (`>= B`), so that P0 starts from that flag, not from a compare of the whole position.
        info_entry = data.StructLayout({"kind": 2, "variant": 4, "start": data.ArrayLayout(_POS, S),
                                        "end": data.ArrayLayout(_POS, S), "start_far": S, "end_far": S})
        m.submodules.infos = infos = UngatedFIFO(width=info_entry.size, depth=self._depth + 2)
        self._infos = infos
        w_info = Signal(info_entry)
        m.d.comb += [infos.w_data.eq(w_info), infos.w_en.eq(d_go)]
        m.d.comb += [w_info.kind.eq(d_variant[2:]), w_info.variant.eq(d_variant)]
        with m.Switch(d_variant):
            for (k, t), ranges in self._variants.items():
                with m.Case(t | k << 2):
                    for s, (r, start, end) in enumerate(ranges):
                        m.d.comb += [w_info.start[s].eq(start), w_info.start_far[s].eq(start >= B)]
                        if r is not None and r.base == "l3":
                            m.d.comb += [w_info.end[s].eq(Mux(d_clip[s], d_bound, end)),
                                         w_info.end_far[s].eq(Mux(d_clip[s], d_bound >= B, end >= B))]
                        else:
                            m.d.comb += [w_info.end[s].eq(end), w_info.end_far[s].eq(end >= B)]

        return infos, info_entry

    def _elaborate_read_side(self, m, beats, beat_entry, infos, info_entry):
        """The read side and P0: the beat register, the frame's info, and where each slot's segment lies in the
        beat. Returns the Q stage's registers and the mask words of each slot."""
        W, B, fcs, S = self._data_width, self._data_width // 8, self._fcs, self._slots
        cw = B.bit_length()                 # bytes in a beat, 0..B

        # Read side: the beat register `cur` (its data is the data queue's taken entry), with the FIFO's head as a
        # one-beat lookahead.
        beats, beat_data = beats
        cur = Signal(beat_entry)
        cur_valid = Signal()
        head = Signal(beat_entry)
        # The current frame's info is a register too (loaded as its previous frame's last beat is taken), so that
        # P0 starts from flip-flops, not from the FIFO's memory.
        info = Signal(info_entry)
        info_valid = Signal()
        m.d.comb += head.eq(beats.r_data)
        ready = cur_valid & info_valid
        if fcs:
            ready &= cur.last | beats.r_rdy
        take = Signal()
        m.d.comb += take.eq(ready)
        load = beats.r_rdy & (~cur_valid | take)
        info_load = infos.r_rdy & (~info_valid | (take & cur.last))
        m.d.comb += [beats.r_en.eq(load), beat_data.r_en.eq(load), infos.r_en.eq(info_load)]
        with m.If(load):
            m.d.sync += [cur.eq(head), cur_valid.eq(1)]
        with m.Elif(take):
            m.d.sync += cur_valid.eq(0)
        next_info = Signal(info_entry)
        m.d.comb += next_info.eq(infos.r_data)
        with m.If(info_load):
            m.d.sync += [info.kind.eq(next_info.kind), info.variant.eq(next_info.variant), info_valid.eq(1)]
        with m.Elif(take & cur.last):
            m.d.sync += info_valid.eq(0)

        # P0: where each slot's segment lies in this beat (lanes lo..hi-1, clamped without comparators), and which
        # of the spec's mask words (per slot, numbered from 1; 0 is all ones) applies to it.
        # The beat's index in its frame, saturated past the last beat a mask word applies to: what picks the mask
        # word (with the variant), a few bits (the frame's byte position there was a pick of 19 bits, a path).
        masked = [(start + len(r.mask) - 1) // B for ranges in self._variants.values()
                  for r, start, _ in ranges if r is not None and r.mask]
        mask_limit = max(masked, default=0) + 1
        mask_beat = Signal(range(mask_limit + 1))
        valid_bytes = Signal(cw)
        m.d.comb += valid_bytes.eq(Mux(cur.last, cur.own, head.prev if fcs else B))
        log_b = B.bit_length() - 1
        kbits = len(mask_beat)
        # Each slot's lanes are a bit map registered here, so that P1's masks are one LUT a bit: decoded in P1 from
        # lo and hi, each 7-bit register fed about 64 compares and then 512 flip-flops across the device (the
        # 512-bit de-duplicator's path, 9.7 ns: five LUT levels and a carry chain). Each map is an AND of
        # thermometer codes of a few register bits, decoded by table (a compare with a constant would be a carry
        # chain); the one of the beat's valid bytes is shared by the slots.
        def thermometer(value, below):
            # bit `lane` is `lane < value` (`below`) or `lane >= value`, for value in 0..2**len(value) - 1
            code = Signal(B)
            with m.Switch(value):
                for v in range(1 << len(value)):
                    with m.Case(v):
                        m.d.comb += code.eq(sum(1 << lane for lane in range(B) if (lane < v) == below))
            return code
        valid_lanes = thermometer(valid_bytes, below=True)
        q_take, q_last, q_data, q_count, q_kind = Signal(), Signal(), Signal(W), Signal(cw), Signal(2)
        # The beat's data is loaded every cycle, not only when a beat is taken: the stages after Q read it only
        # with a beat (q_take, then each slot's valid), and an enable would hang W flip-flops on `take`.
        m.d.sync += [q_take.eq(take), q_last.eq(take & cur.last), q_data.eq(beat_data.r_taken)]
        with m.If(take):
            m.d.sync += [q_count.eq(valid_bytes), q_kind.eq(info.kind)]
            m.d.sync += mask_beat.eq(Mux(cur.last, 0, Mux(mask_beat == mask_limit, mask_limit, mask_beat + 1)))
        q_lo = [Signal(cw, name=f"q_lo_{s}") for s in range(S)]
        q_hi = [Signal(cw, name=f"q_hi_{s}") for s in range(S)]
        q_lanes = [Signal(B, name=f"q_lanes_{s}") for s in range(S)]
        mask_words = []                     # per slot: the distinct mask words, index 0 all ones
        q_mask = []
        for s in range(S):
            # start and end less the beat's first byte in the frame, as registers: loaded with the frame's info,
            # less B per beat taken until negative (the segment's start, or its end, is then behind). Beside each,
            # whether it is B or more (a flag kept a cycle early, from the info or as `>= 2B` before the step), so
            # that lo and hi are functions of a few bits, not behind a zero test of the whole position (a 64-bit
            # path, 6.47 ns).
            to_start = Signal(signed(_POS + 1), name=f"to_start_{s}")
            to_end = Signal(signed(_POS + 1), name=f"to_end_{s}")
            start_far, end_far = Signal(name=f"start_far_{s}"), Signal(name=f"end_far_{s}")
            with m.If(info_load):
                m.d.sync += [to_start.eq(next_info.start[s]), to_end.eq(next_info.end[s]),
                             start_far.eq(next_info.start_far[s]), end_far.eq(next_info.end_far[s])]
            with m.Elif(take & ~cur.last):
                with m.If(~to_start[-1]):
                    m.d.sync += [to_start.eq(to_start - B), start_far.eq(to_start[log_b + 1:-1].any())]
                with m.If(~to_end[-1]):
                    m.d.sync += [to_end.eq(to_end - B), end_far.eq(to_end[log_b + 1:-1].any())]
            lo, hi = Signal(cw, name=f"lo_{s}"), Signal(cw, name=f"hi_{s}")
            end_lanes = Signal(cw, name=f"end_lanes_{s}")
            m.d.comb += [
                lo.eq(Mux(to_start[-1], 0, Mux(start_far, B, to_start[:log_b]))),
                end_lanes.eq(Mux(to_end[-1], 0, Mux(end_far, B, to_end[:log_b]))),
                hi.eq(Mux(end_lanes > valid_bytes, valid_bytes, end_lanes)),
            ]
            # lanes lo..hi-1: from lo (0 if the start is behind, none if a beat or more away) to the end's lane
            # (none if behind, all if a beat or more away), below the valid bytes
            from_start = Mux(to_start[-1], (1 << B) - 1, Mux(start_far, 0, thermometer(to_start[:log_b], below=False)))
            to_end_lanes = Mux(to_end[-1], 0, Mux(end_far, (1 << B) - 1, thermometer(to_end[:log_b], below=True)))
            words = {(1 << W) - 1: 0}
            cases = {}
            for (k, t), ranges in self._variants.items():
                r, start, _ = ranges[s]
                if r is None or not r.mask:
                    continue
                for beat in range(start // B, (start + len(r.mask) - 1) // B + 1):
                    word = 0
                    for lane in range(B):
                        j = beat * B + lane - start
                        word |= (r.mask[j] if 0 <= j < len(r.mask) else 0xFF) << (8 * lane)
                    cases[beat | (t | k << 2) << kbits] = words.setdefault(word, len(words))
            mask_words.append(sorted(words, key=words.get))
            mask_index = Signal(range(len(words)), name=f"mask_index_{s}")
            with m.Switch(Cat(mask_beat, info.variant)):
                for case, index in cases.items():
                    with m.Case(case):
                        m.d.comb += mask_index.eq(index)
            q_mask.append(Signal.like(mask_index, name=f"q_mask_{s}"))
            with m.If(take):
                m.d.sync += [q_lo[s].eq(lo), q_hi[s].eq(hi), q_mask[s].eq(mask_index),
                             q_lanes[s].eq(from_start & to_end_lanes & valid_lanes)]

        return dict(q_take=q_take, q_last=q_last, q_data=q_data, q_count=q_count, q_kind=q_kind, q_lo=q_lo,
                    q_hi=q_hi, q_lanes=q_lanes, q_mask=q_mask, mask_words=mask_words)

    def _elaborate_segments(self, m, *, q_take, q_last, q_data, q_count, q_kind, q_lo, q_hi, q_lanes, q_mask,
                            mask_words):
        """Q to P3: each slot's segment of the beat, masked, and its CRC step. Returns each slot's P3 registers
        and the frame's (end, bytes, kind) beside them."""
        W, B, S = self._data_width, self._data_width // 8, self._slots
        cw = B.bit_length()
        model, basis = crc_model(), state_basis(B)

        # Q: the frame's bytes so far; per slot, whether the beat feeds its segment, how many of its bytes, and
        # its lanes as a bit mask (0xFF a lane).
        n_bytes = Signal(_POS)
        new_n = n_bytes + q_count
        p1_take, p1_end, p1_data, p1_n, p1_kind = Signal(), Signal(), Signal(W), Signal(_POS), Signal(2)
        m.d.sync += [p1_take.eq(q_take), p1_end.eq(q_last), p1_data.eq(q_data)]     # read with p1_take only
        with m.If(q_take):
            m.d.sync += [p1_n.eq(new_n), p1_kind.eq(q_kind)]
            m.d.sync += n_bytes.eq(Mux(q_last, 0, new_n))
        slot = []                           # per slot: its P1 registers
        for s in range(S):
            fed = q_lo[s] < q_hi[s]
            p1 = {name: Signal(shape, name=f"p1_{name}_{s}") for name, shape in (
                ("lo", cw), ("fed", 1), ("bytes", cw), ("valid", 1), ("lanes", W))}
            # the bits of the beat the slot keeps: its segment's lanes, and the mask's word. One register, so
            # that P2's zeroing is one AND per bit (the word's pick by index, W bits wide, was a net of W loads
            # in front of it: the 512-bit critical path).
            word = Signal(W, name=f"mask_{s}")
            with m.Switch(q_mask[s]):
                for index, value in enumerate(mask_words[s]):
                    with m.Case(index):
                        m.d.comb += word.eq(value)
            # like the data, loaded every cycle: P1 reads them with p1_take (or p1's valid) only. The bytes are
            # hi - lo as it is, its carry chain straight into the register: P1 adds them only if the slot is fed
            # (a clamp here, a compare or the difference's sign, was the end of a 64-bit path either way).
            m.d.sync += [
                p1["valid"].eq(q_take & fed),
                p1["lo"].eq(q_lo[s]), p1["fed"].eq(fed),
                p1["bytes"].eq(q_hi[s] - q_lo[s]),
                p1["lanes"].eq(word & Cat(*[q_lanes[s][lane].replicate(8) for lane in range(B)])),
            ]
            slot.append(p1)

        # P1: per slot, its segment's counts (bytes, beats fed, the shift of its first beat); the beat's bytes
        # outside the segment zeroed, the mask applied; slot 0's start state if its segment starts here: init
        # moved back by `shift` zero bytes, so that the zero lanes in front of the segment cancel out (the other
        # slots start from zero, which zero lanes leave zero).
        p2_end, p2_n, p2_kind = Signal(), Signal(_POS), Signal(2)
        m.d.sync += [p2_end.eq(p1_end), p2_n.eq(p1_n), p2_kind.eq(p1_kind)]
        fin = ("started", "len", "fed", "shift")
        for s, p1 in enumerate(slot):
            p2 = {name: Signal(shape, name=f"p2_{name}_{s}") for name, shape in (
                ("started", 1), ("len", _POS), ("fed", _POS), ("shift", range(B)))}
            started = Signal(name=f"started_{s}")
            seg_len = Signal(_POS, name=f"seg_len_{s}")
            fed_beats = Signal(_POS, name=f"fed_beats_{s}")
            shift = Signal(range(B), name=f"shift_{s}")
            first_fed = p1["fed"] & ~started
            new_len = seg_len + Mux(p1["fed"], p1["bytes"], 0)
            new_fed = fed_beats + p1["fed"]
            new_shift = Mux(first_fed, p1["lo"], shift)
            p2.update(valid=Signal(name=f"p2_valid_{s}"), data=Signal(W, name=f"p2_data_{s}"),
                      first=Signal(name=f"p2_first_{s}"))
            with m.If(p1_take):
                m.d.sync += [p2["first"].eq(first_fed), p2["started"].eq(started | p1["fed"]),
                             p2["len"].eq(new_len), p2["fed"].eq(new_fed), p2["shift"].eq(new_shift)]
                with m.If(p1_end):
                    m.d.sync += [started.eq(0), seg_len.eq(0), fed_beats.eq(0), shift.eq(0)]
                with m.Else():
                    m.d.sync += [started.eq(started | p1["fed"]), seg_len.eq(new_len), fed_beats.eq(new_fed),
                                 shift.eq(new_shift)]
            m.d.sync += [p2["valid"].eq(p1["valid"]), p2["data"].eq(p1_data & p1["lanes"])]
            if s == 0:
                # the register after the segment's first beat of zeros: A^B applied to the start state (in the
                # loop's basis, as every state below)
                p2["start"] = Signal(64, name="p2_start_0")
                with m.Switch(p1["lo"]):
                    for shift in self._shifts[0]:
                        with m.Case(shift):
                            start = model.feed(model.unzero(model.init, shift), 0, B)
                            m.d.sync += p2["start"].eq(transform(basis.to_basis, start))
            slot[s] = p2

        # P2: the beat's part of each slot's CRC step (the step matrix's data columns, in the loop's basis), as
        # registered XORs of at most 8 bits each (two LUT levels; of 16 bits, Yosys shared sub-XORs between the
        # rows and made five, the 512-bit de-duplicator's path), so that the loop below is only the state's own
        # columns and partial sums.
        loop, data_rows = _beat_step(B)
        groups, sums = _partial_sums(data_rows, 8 * B)
        pd_end, pd_n, pd_kind = Signal(), Signal(_POS), Signal(2)
        m.d.sync += [pd_end.eq(p2_end), pd_n.eq(p2_n), pd_kind.eq(p2_kind)]
        for s, p2 in enumerate(slot):
            pd = {name: Signal.like(p2[name], name=f"pd_{name}_{s}") for name in fin + ("valid", "first")}
            m.d.sync += [pd[name].eq(p2[name]) for name in fin + ("valid", "first")]
            if s == 0:
                pd["start"] = Signal(64, name="pd_start_0")
                m.d.sync += pd["start"].eq(p2["start"])
            pd["partial"] = Signal(len(groups), name=f"pd_partial_{s}")
            m.d.sync += pd["partial"].eq(Cat(*[(p2["data"] & group).xor() for group in groups]))
            slot[s] = pd

        # PX: the beat's whole contribution x (the partial sums XORed), with slot 0's start state XORed in on its
        # segment's first beat, so that the loop below is the state's own columns, zeroed on a first beat, and x.
        px_end, px_n, px_kind = Signal(), Signal(_POS), Signal(2)
        m.d.sync += [px_end.eq(pd_end), px_n.eq(pd_n), px_kind.eq(pd_kind)]
        for s, pd in enumerate(slot):
            px = {name: Signal.like(pd[name], name=f"px_{name}_{s}") for name in fin + ("valid", "first")}
            m.d.sync += [px[name].eq(pd[name]) for name in fin + ("valid", "first")]
            px["x"] = Signal(64, name=f"px_x_{s}")
            x = apply_rows(sums, pd["partial"])
            if s == 0:
                x = x ^ Mux(pd["first"], pd["start"], 0)
            m.d.sync += px["x"].eq(x)
            slot[s] = px

        # P3: one CRC step per beat of each slot's segment: x XORed with the state moved over B bytes (zero on
        # the segment's first beat: slot 0's start state is in x). The state is kept in the basis where that move
        # is a companion matrix (:class:`~apbbf.hdl.packet.crc_maps.StateBasis`): each bit the XOR of two state
        # bits at most, x's and the first-beat flag, one LUT4. In the register's own basis each bit was the XOR of
        # 22 to 37 state bits, three to five LUT levels across the slot's logic: the 64-bit path, and at 512 bits
        # (where a beat is a whole 64-byte block, and the basis makes the identity padding of a segment that
        # starts at lane 0 a dense matrix, in registered stages) a path of four levels on one seed.
        p3_end, p3_n, p3_kind = Signal(), Signal(_POS), Signal(2)
        m.d.sync += [p3_end.eq(px_end), p3_n.eq(px_n), p3_kind.eq(px_kind)]
        for s, px in enumerate(slot):
            state = Signal(64, name=f"state_{s}")
            with m.If(px["valid"]):
                m.d.sync += state.eq(Mux(px["first"], 0, apply_rows(loop, state)) ^ px["x"])
            p3 = {name: Signal.like(px[name], name=f"p3_{name}_{s}") for name in fin}
            m.d.sync += [p3[name].eq(px[name]) for name in fin]
            p3["state"] = state
            slot[s] = p3

        return slot, p3_end, p3_n, p3_kind

    def _elaborate_key(self, m, slot, p3_end, p3_n, p3_kind):
        """F0 to the output: each slot's segment padded and moved over the trailer, Horner's rule over the slots,
        the trailer and the output XOR."""
        B, S = self._data_width // 8, self._slots
        model, basis = crc_model(), state_basis(B)

        # F0: each slot's state after its segment's last beat (its start state if the segment is empty), times
        # A^(64 - B + shift); q + 1 = (64/B) * ceil(len / 64) - fed beats + 1, in 0..64/B, says how many more zero
        # beats to apply. That pads the segment to 64 bytes and adds the trailer's 64 (for slot 0, this is the whole
        # key of a one-range recipe; for the others, it keeps Horner's rule below free of the trailer). Three stages:
        # F0s copies the state, one register per shift the slot can have, F0a registers partial sums of 8 bits of each
        # copy (and the shift one-hot), F0 picks one (an AND-OR, not a multiplexer chain). The copies are there for
        # the placer: the state register feeds its own loop's 64 rows, and the padding's rows read about half its bits
        # each, for every shift; from one register those nets spanned the slot's whole logic (the extractor's critical
        # path). Each copy holds the state XORed with a constant of its own, which its partial sums undo for free (a
        # constant in their LUTs): otherwise Yosys would merge copies with the same input into one.
        R = BLOCK_BYTES // B

        def delay(name, signals):
            """Registered copies of ``signals`` (a dict), named ``<name>_<key>``."""
            out = {}
            for key, sig in signals.items():
                out[key] = Signal.like(sig, name=f"{name}_{key}")
                m.d.sync += out[key].eq(sig)
            return out

        common = delay("f0s", {"valid": p3_end, "n": p3_n, "kind": p3_kind})
        lanes_f = []                        # per slot: x (the value), q, len, blocks (ceil(len / 64))
        for s, p3 in enumerate(slot):
            f_state = Mux(p3["started"], p3["state"], transform(basis.to_basis, model.init) if s == 0 else 0)
            q1 = Signal(self._q_bits + 1, name=f"q1_{s}")
            m.d.comb += q1.eq(R * ((p3["len"] + BLOCK_BYTES - 1) >> 6) - p3["fed"] + 1)
            f = dict(q=Signal(self._q_bits, name=f"f0s_q_{s}"), len=Signal(_POS, name=f"f0s_len_{s}"),
                     blocks=Signal(_POS - 6, name=f"f0s_blocks_{s}"), shift=Signal(range(B), name=f"f0s_shift_{s}"))
            m.d.sync += [f["q"].eq(q1), f["blocks"].eq((p3["len"] + BLOCK_BYTES - 1) >> 6),
                         f["shift"].eq(Mux(p3["started"], p3["shift"], 0))]
            # the trailer holds the lengths by range, not by slot: range s of the frame's class is in slot
            # s + first[class]
            with m.Switch(p3_kind):
                for k, first in enumerate(self._first):
                    with m.Case(k):
                        m.d.sync += f["len"].eq(slot[s + first]["len"] if s + first < S else 0)
            copies = {}
            for index, shift in enumerate(sorted(set(self._shifts[s]) | {0})):
                flip = _COPY_FLIPS[index]
                copy = Signal(64, name=f"f0s_state_{s}_{shift}")
                m.d.sync += copy.eq(f_state ^ flip)
                copies[shift] = (copy, flip)
            f["copies"] = copies
            lanes_f.append(f)
        common = delay("f0a", common)
        for s, f in enumerate(lanes_f):
            nxt = delay(f"f0a_{s}", {name: f[name] for name in ("q", "len", "blocks")})
            # the shift one-hot over the candidates, so that F0's pick is an AND-OR beside the XORs
            nxt["pick"] = Signal(len(f["copies"]), name=f"f0a_pick_{s}")
            m.d.sync += nxt["pick"].eq(Cat(*[f["shift"] == shift for shift in f["copies"]]))
            candidates = {}
            for shift, (copy, flip) in f["copies"].items():
                groups, sums = _partial_sums(_pad_rows(B, shift), 64)
                partial = Signal(len(groups), name=f"f0a_partial_{s}_{shift}")
                # each group's parity of the copy, with the flip's parity over the group undone
                m.d.sync += partial.eq(Cat(*[(copy & group).xor() ^ (bin(flip & group).count("1") & 1)
                                             for group in groups]))
                candidates[shift] = (partial, sums)
            nxt["candidates"] = candidates
            lanes_f[s] = nxt
        common = delay("f0", common)
        for s, f in enumerate(lanes_f):
            nxt = delay(f"f0_{s}", {name: f[name] for name in ("q", "len", "blocks")})
            nxt["x"] = Signal(64, name=f"f0_x_{s}")
            x = 0
            for index, (partial, sums) in enumerate(f["candidates"].values()):
                x = x | Mux(f["pick"][index], apply_rows(sums, partial), 0)
            m.d.sync += nxt["x"].eq(x)
            lanes_f[s] = nxt

        def partial_sums(name, rows, value):
            """``rows`` applied to ``value`` in two stages: the registered partial sums (of at most 8 bits: two LUT
            levels, whatever Yosys shares between rows) now, and a function giving the rows' outputs from them (one
            small XOR per row) in the next stage."""
            groups, sums = _partial_sums(rows, len(value))
            partial = Signal(len(groups), name=name)
            m.d.sync += partial.eq(Cat(*[(value & group).xor() for group in groups]))
            return lambda: apply_rows(sums, partial)

        # F1..: times A^(B * 2^b) for each bit b of q + 1, in two stages each (partial sums, then their XOR and
        # the choice by q's bit).
        for b in range(self._q_bits):
            common = delay(f"f{b + 1}a", common)
            moved = []
            for s, f in enumerate(lanes_f):
                moved.append(partial_sums(f"f{b + 1}a_partial_{s}", zeros_matrix(B << b), f["x"]))
                lanes_f[s] = delay(f"f{b + 1}a_{s}", f)
            common = delay(f"f{b + 1}", common)
            for s, f in enumerate(lanes_f):
                nxt = delay(f"f{b + 1}_{s}", {name: f[name] for name in ("q", "len", "blocks")})
                nxt["x"] = Signal(64, name=f"f{b + 1}_x_{s}")
                m.d.sync += nxt["x"].eq(Mux(f["q"][b], moved[s](), f["x"]))
                lanes_f[s] = nxt

        # H: Horner's rule, acc = A^(64 * blocks_r) acc ^ x_r for r = 1.., two stages per bit of blocks_r (as F).
        acc = lanes_f[0]["x"]
        lens = {str(r): f["len"] for r, f in enumerate(lanes_f)}
        waiting = [{"x": f["x"], "blocks": f["blocks"]} for f in lanes_f[1:]]
        stage = 0
        for bits in self._horner:
            for b in range(bits):
                stage += 1
                for half in ("a", ""):
                    name = f"h{stage}{half}"
                    common, lens = delay(name, common), delay(f"{name}_len", lens)
                    x, blocks = waiting[0]["x"], waiting[0]["blocks"]
                    if half == "a":
                        moved = partial_sums(f"{name}_partial", zeros_matrix(BLOCK_BYTES << b), acc)
                        acc = delay(name, {"acc": acc})["acc"]
                    else:
                        nxt_acc = Signal(64, name=f"{name}_acc")
                        chosen = Mux(blocks[b], moved(), acc)
                        m.d.sync += nxt_acc.eq(chosen ^ x if b == bits - 1 else chosen)
                        acc = nxt_acc
                    if half == "" and b == bits - 1:
                        waiting = waiting[1:]
                    waiting = [delay(f"{name}_w{r}", w) for r, w in enumerate(waiting)]
        valid, n_out, kind, lens = common["valid"], common["n"], common["kind"], list(lens.values())

        # Out: the trailer (len_r in bytes 4r..4r+3) and the output XOR.
        key = apply_rows(trailer_matrix(_POS, S), Cat(*lens)) ^ acc ^ model.xor_output
        m.d.sync += [
            self.o.valid.eq(valid),
            self.o.payload.key.eq(key),
            self.o.payload.length.eq(Mux(n_out > 0xFFFF, 0xFFFF, n_out)),
            self.o.payload.kind.eq(kind),
        ]
