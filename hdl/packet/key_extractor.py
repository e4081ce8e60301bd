"""The streaming key extractor of the packet de-duplicator: frames in, one 64-bit key per frame out, bit-exact with
:func:`apbbf.model.packet.frame_key` (the module documentation of :mod:`apbbf.model.packet` is the specification).

The CRC-64/XZ of the message is computed over the frame's beats *as they come*, not over beats realigned to the
segment's first byte: bytes outside the segment are zeroed, the register starts from a state that undoes the
``shift = s mod (W/8)`` zero bytes in front of the segment, and the zeros that padding to 64 bytes adds (or that
the last beat fed in excess) and the trailer are applied after the last beat as constant matrices. Every constant
(matrices, start states) is derived (:mod:`apbbf.hdl.packet.crc_maps`) from the CRC's :class:`~amaranth.lib.crc.Algorithm` by running its
bit-serial register on unit vectors; :func:`~apbbf.hdl.packet.crc_maps.crc_model` checks that register against ``amaranth.lib.crc``.
"""

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer
from .crc_maps import apply_rows, crc_model, step_matrix, trailer_matrix, zeros_matrix
from ...model.packet import BLOCK_BYTES, ETHERTYPE_IPV4, ETHERTYPE_IPV6, TPIDS, FrameClass, KeySpec

__all__ = ["KeyExtractor", "KINDS", "beat_layout", "key_layout"]

#: Bytes of the header the classifier reads (up to the IPv6 payload length after two tags: bytes 26-27).
_HEADER = 28
#: Bytes of the frame (without FCS) after which its class is decided (module documentation, "Classification").
_PREFIX = 62
#: Bits of the byte positions in a frame: frames of up to 65535 bytes, ranges reaching 22 + 2 * 65535.
_POS = 18
_INF = (1 << _POS) - 1
#: The output's ``kind`` code (2 bits) indexes this: 0 other, 1 IPv4, 2 IPv6 (FrameClass values 0, 4, 6).
KINDS = _KINDS = (FrameClass.OTHER, FrameClass.IPV4, FrameClass.IPV6)


def beat_layout(data_width: int) -> data.StructLayout:
    """A beat of the input stream: ``data`` (byte i in bits 8i..8i+7), ``keep`` (packed from lane 0), ``last``."""
    return data.StructLayout({"data": data_width, "keep": data_width // 8, "last": 1})


#: A key of the output stream: the key, the frame's length without FCS (saturated at 65535), its class code
#: (:data:`KINDS`).
key_layout = data.StructLayout({"key": 64, "length": 16, "kind": 2})


# The block -----------------------------------------------------------------------------------------------------

class KeyExtractor(wiring.Component):
    """Streaming key extractor: the 64-bit de-duplication key (:func:`apbbf.model.packet.frame_key`), the length
    and the class of every frame of an AXI4-Stream-like beat stream.

    Frames enter on ``i`` one beat per cycle at most, with any idle cycles between and within frames (no
    backpressure); each frame's key leaves on ``o`` (no backpressure either) in frame order, at most
    :attr:`latency` cycles after the cycle its last beat was on ``i`` (and at least 2). A frame is at least one
    byte on ``i``; with ``fcs`` a frame of 4 bytes or fewer is keyed as the empty frame. Frames are keyed exactly
    up to 65535 bytes (without FCS); ``length`` saturates at 65535.

    The gateware keys one range per class: every recipe of ``spec`` must have exactly one :class:`Range`
    (the presets ``frame`` and ``l3l4`` do).

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
    latency : int
        The most cycles from a frame's last beat on ``i`` to its key on ``o``.

    Raises
    ------
    TypeError
        If ``spec`` is not a KeySpec, ``data_width`` not an integer or ``fcs`` not a bool.
    ValueError
        If ``data_width`` is not 64, 128, 256 or 512, or a recipe of ``spec`` has more than one range.
    """

    def __init__(self, spec: KeySpec, data_width: int, *, fcs: bool = False):
        if not isinstance(spec, KeySpec):
            raise TypeError(f"spec must be a KeySpec, not {spec!r}")
        for kind in _KINDS:
            recipe = spec.recipe(kind)
            if len(recipe) != 1:
                raise ValueError(f"spec: the gateware keys one range per class, but the {kind.name.lower()} recipe "
                                 f"has {len(recipe)} ranges ({','.join(map(str, recipe))}); the model supports up "
                                 f"to 8")
        check_integer("data_width", data_width)
        if data_width not in (64, 128, 256, 512):
            raise ValueError(f"data_width must be 64, 128, 256 or 512, not {data_width}")
        if not isinstance(fcs, bool):
            raise TypeError(f"fcs must be a bool, not {fcs!r}")
        self._spec, self._data_width, self._fcs = spec, data_width, fcs
        step = data_width // 8
        # per (class index, tags): the segment's start s, and the end of the range if it has a length
        self._variants = {}
        for k, kind in enumerate(_KINDS):
            for tags in (0, 1, 2) if kind != FrameClass.OTHER else (0,):
                r = spec.recipe(kind)[0]
                start = r.offset + (0 if r.base == "frame" else 14 + 4 * tags)
                self._variants[k, tags] = (r, start, _INF if r.length is None else start + r.length)
        self._shifts = sorted({start % step for _, start, _ in self._variants.values()})
        self._head_beats = -(-(_PREFIX + 4 * fcs) // step)
        self._depth = self._head_beats + 6
        # the finisher: one stage for the shift, one per bit of q + 1 in 0..64/(W/8), one for the trailer
        self._q_bits = (BLOCK_BYTES // step).bit_length()
        super().__init__({
            "i": In(stream.Signature(beat_layout(data_width), always_ready=True)),
            "o": Out(stream.Signature(key_layout, always_ready=True)),
        })

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
    def latency(self) -> int:
        # Beat x (arriving in cycle a_x) enters P0 in cycle max(a_x + 2, d + 4, P0 of beat x - 1 + 1), d the cycle
        # of the beat that decided its frame's class (info FIFO readable 3 cycles later, info register 4); with
        # the FCS a beat also waits for the next one (a_(x+1) + 1). Unrolled, a last beat enters P0 by
        # a_x + 3 + head_beats (the deciding beat of an earlier, stalled frame is at most head_beats - 1 beats
        # after that frame's first; beats arrive one per cycle at most). Then Q, P1, P2, F0, q_bits stages, the
        # output register.
        return self._head_beats + 3 + 5 + self._q_bits + 1

    def elaborate(self, platform):
        # Why this shape: no backpressure anywhere, so every stage takes one beat per cycle and nothing ever
        # needs two CRC steps in a cycle. Realigning the beats to the segment's first byte would cost a flush word
        # at the end of each frame (two words in a cycle with back-to-back frames); feeding the beats unaligned
        # and fixing the CRC up with constant matrices afterwards costs none. Beats wait in a FIFO until their
        # frame's class (decided by its first 62 bytes or its end) is known; the one-beat lookahead at the FIFO's
        # head tells where the frame ends when the FCS straddles the last two beats. Each stage is registered:
        # small comparators, one XOR tree, or one constant matrix and a mux.
        m = Module()
        W, B, fcs = self._data_width, self._data_width // 8, self._fcs
        model = crc_model()
        cw = B.bit_length()                 # bytes in a beat, 0..B

        # Input: the byte count of the beat (keep is a run of ones from lane 0).
        count = Signal(cw)
        for lane in range(B):
            with m.If(self.i.payload.keep[lane]):
                m.d.comb += count.eq(lane + 1)

        beat_entry = data.StructLayout({"data": W, "count": cw, "last": 1})
        m.submodules.beats = beats = fifo.SyncFIFO(width=beat_entry.size, depth=self._depth)
        self._beats = beats
        m.d.comb += [
            beats.w_data.eq(Cat(self.i.payload.data, count, self.i.payload.last)),
            beats.w_en.eq(self.i.valid),
        ]

        # Classifier (write side): capture the header, decide at 62 bytes (66 with FCS) or the frame's end.
        header = Signal(8 * _HEADER)
        received = Signal(7)                # bytes of the frame so far, saturated at 127
        beat_index = Signal(range(-(-_HEADER // B) + 1))
        decided = Signal()
        go = Signal()
        n_head = Signal(7)                  # min(n, 127): the frame's length without FCS, as the rules need it
        after = Signal(8)
        m.d.comb += after.eq(received + count)
        m.d.sync += go.eq(0)
        with m.If(self.i.valid):
            for k in range(-(-_HEADER // B)):
                lo, hi = k * B, min(_HEADER, (k + 1) * B)
                with m.If(beat_index == k):
                    m.d.sync += header[8 * lo:8 * hi].eq(self.i.payload.data[:8 * (hi - lo)])
            with m.If(beat_index != -(-_HEADER // B)):
                m.d.sync += beat_index.eq(beat_index + 1)
            m.d.sync += received.eq(Mux(after > 127, 127, after))
            with m.If(~decided & (self.i.payload.last | (after >= _PREFIX + 4 * fcs))):
                m.d.sync += [go.eq(1), decided.eq(1)]
                if fcs:
                    m.d.sync += n_head.eq(Mux(self.i.payload.last, Mux(after > 4, after - 4, 0), 127))
                else:
                    m.d.sync += n_head.eq(Mux(self.i.payload.last, after, 127))
            with m.If(self.i.payload.last):
                m.d.sync += [received.eq(0), beat_index.eq(0), decided.eq(0)]

        # C1: the class from the header (module documentation, "Classification").
        def byte(i):
            return header[8 * i:8 * i + 8]

        def be16(i):
            return Cat(byte(i + 1), byte(i))

        def tpid(value):
            return (value == TPIDS[0]) | (value == TPIDS[1])

        n = n_head
        tag1 = (n >= 14) & tpid(be16(12))
        bad1 = tag1 & (n < 18)
        tag2 = tag1 & ~bad1 & tpid(be16(16))
        bad2 = tag2 & (n < 22)
        tags = Signal(2)
        m.d.comb += tags.eq(Mux(tag2, 2, Mux(tag1, 1, 0)))
        # the checks for each tag count in parallel (constant offsets: no adders), then the tag count picks
        usable = (n >= 14) & ~bad1 & ~bad2
        ipv4, ipv6, total = Signal(), Signal(), Signal(16)
        payload = Signal(16)
        with m.Switch(tags):
            for t in (0, 1, 2):
                with m.Case(t):
                    p = 14 + 4 * t
                    first, ihl = byte(p), byte(p)[:4]
                    m.d.comb += [
                        ipv4.eq(usable & (be16(p - 2) == ETHERTYPE_IPV4) & (n >= p + 20) & (first[4:] == 4) &
                                (ihl >= 5) & (be16(p + 2) >= 4 * ihl)),
                        ipv6.eq(usable & (be16(p - 2) == ETHERTYPE_IPV6) & (n >= p + 40) & (first[4:] == 6)),
                        total.eq(be16(p + 2)),
                        payload.eq(be16(p + 4)),
                    ]
        c_go, c_kind, c_tags, c_field = Signal(), Signal(2), Signal(2), Signal(17)
        m.d.sync += [
            c_go.eq(go),
            c_kind.eq(Mux(ipv4, 1, Mux(ipv6, 2, 0))),
            c_tags.eq(Mux(ipv4 | ipv6, tags, 0)),
            c_field.eq(Mux(ipv4, total, 40 + payload)),
        ]

        # C2: the frame's segment start and end limit, into the info FIFO.
        info_entry = data.StructLayout({"kind": 2, "variant": 4, "start": _POS, "end": _POS})
        m.submodules.infos = infos = fifo.SyncFIFO(width=info_entry.size, depth=self._depth + 2)
        self._infos = infos
        w_info = Signal(info_entry)
        m.d.comb += [infos.w_data.eq(w_info), infos.w_en.eq(c_go)]
        m.d.comb += [w_info.kind.eq(c_kind), w_info.variant.eq(Cat(c_tags, c_kind))]
        with m.Switch(Cat(c_tags, c_kind)):
            for (k, t), (r, start, end) in self._variants.items():
                with m.Case(t | k << 2):
                    m.d.comb += w_info.start.eq(start)
                    if r.base == "l3":
                        bound = Signal(_POS)
                        m.d.comb += bound.eq(14 + 4 * t + c_field)
                        m.d.comb += w_info.end.eq(Mux(bound < end, bound, end))
                    else:
                        m.d.comb += w_info.end.eq(end)

        # Read side: the beat register `cur`, with the FIFO's head as a one-beat lookahead.
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
        m.d.comb += [beats.r_en.eq(load), infos.r_en.eq(info_load)]
        with m.If(load):
            m.d.sync += [cur.eq(head), cur_valid.eq(1)]
        with m.Elif(take):
            m.d.sync += cur_valid.eq(0)
        with m.If(info_load):
            m.d.sync += [info.eq(infos.r_data), info_valid.eq(1)]
        with m.Elif(take & cur.last):
            m.d.sync += info_valid.eq(0)

        # P0: where the segment lies in this beat (lanes lo..hi-1, clamped without comparators), the spec's mask
        # word.
        pos = Signal(_POS)                  # the beat's first byte in the frame
        valid_bytes = Signal(cw)
        if fcs:
            m.d.comb += valid_bytes.eq(Mux(cur.last, Mux(cur.count > 4, cur.count - 4, 0),
                                           Mux(head.last & (head.count < 4), B - 4 + head.count, B)))
        else:
            m.d.comb += valid_bytes.eq(Mux(cur.last, cur.count, B))
        log_b = B.bit_length() - 1
        to_start = Signal(signed(_POS + 1))
        to_end = Signal(signed(_POS + 1))
        lo, end_lanes, hi = Signal(cw), Signal(cw), Signal(cw)
        m.d.comb += [
            to_start.eq(info.start - pos),
            to_end.eq(info.end - pos),
            lo.eq(Mux(to_start[-1], 0, Mux(to_start[log_b:] != 0, B, to_start[:log_b]))),
            end_lanes.eq(Mux(to_end[-1], 0, Mux(to_end[log_b:] != 0, B, to_end[:log_b]))),
            hi.eq(Mux(end_lanes > valid_bytes, valid_bytes, end_lanes)),
        ]
        mask_word = Signal(W)
        m.d.comb += mask_word.eq(Const((1 << W) - 1, W))
        kbits = _POS - log_b
        with m.Switch(Cat(pos[log_b:], info.variant)):
            for (k, t), (r, start, _) in self._variants.items():
                for beat in range(start // B, (start + len(r.mask) - 1) // B + 1) if r.mask else ():
                    word = 0
                    for lane in range(B):
                        j = beat * B + lane - start
                        word |= (r.mask[j] if 0 <= j < len(r.mask) else 0xFF) << (8 * lane)
                    with m.Case(beat | (t | k << 2) << kbits):
                        m.d.comb += mask_word.eq(word)
        q = dict(take=Signal(), last=Signal(), data=Signal(W), mask=Signal(W), lo=Signal(cw), hi=Signal(cw),
                 count=Signal(cw), kind=Signal(2))
        m.d.sync += [q["take"].eq(take), q["last"].eq(take & cur.last)]
        with m.If(take):
            m.d.sync += [q["data"].eq(cur.data), q["mask"].eq(mask_word), q["lo"].eq(lo), q["hi"].eq(hi),
                         q["count"].eq(valid_bytes), q["kind"].eq(info.kind)]
            m.d.sync += pos.eq(Mux(cur.last, 0, Mux(pos > _INF - 2 * B, pos, pos + B)))

        # Q: per-frame counts (segment bytes, beats fed, frame bytes) and the shift of the segment's first beat.
        started = Signal()
        seg_len = Signal(_POS)
        fed_beats = Signal(_POS)
        shift = Signal(range(B))
        n_bytes = Signal(_POS)
        fed = q["lo"] < q["hi"]
        first_fed = fed & ~started
        new_len = seg_len + Mux(fed, q["hi"] - q["lo"], 0)
        new_fed = fed_beats + fed
        new_n = n_bytes + q["count"]
        new_shift = Mux(first_fed, q["lo"], shift)
        p1 = dict(valid=Signal(), data=Signal(W), mask=Signal(W), lo=Signal(cw), hi=Signal(cw), first=Signal(),
                  end=Signal(), started=Signal(), len=Signal(_POS), fed=Signal(_POS), shift=Signal(range(B)),
                  n=Signal(_POS), kind=Signal(2))
        m.d.sync += [p1["valid"].eq(q["take"] & fed), p1["end"].eq(q["last"])]
        with m.If(q["take"]):
            m.d.sync += [
                p1["data"].eq(q["data"]), p1["mask"].eq(q["mask"]), p1["lo"].eq(q["lo"]), p1["hi"].eq(q["hi"]),
                p1["first"].eq(first_fed), p1["started"].eq(started | fed), p1["len"].eq(new_len),
                p1["fed"].eq(new_fed), p1["shift"].eq(new_shift), p1["n"].eq(new_n), p1["kind"].eq(q["kind"]),
            ]
            with m.If(q["last"]):
                m.d.sync += [started.eq(0), seg_len.eq(0), fed_beats.eq(0), n_bytes.eq(0), shift.eq(0)]
            with m.Else():
                m.d.sync += [started.eq(started | fed), seg_len.eq(new_len), fed_beats.eq(new_fed),
                             n_bytes.eq(new_n), shift.eq(new_shift)]

        # P1: bytes outside the segment zeroed, the mask applied; the start state if the segment starts here:
        # init moved back by `shift` zero bytes, so that the zero lanes in front of the segment cancel out.
        lanes = Cat(*[Mux((p1["lo"] <= lane) & (lane < p1["hi"]), 0xFF, 0) for lane in range(B)])
        p2 = dict(valid=Signal(), data=Signal(W), first=Signal(), init=Signal(64))
        m.d.sync += [p2["valid"].eq(p1["valid"]), p2["data"].eq(p1["data"] & p1["mask"] & lanes),
                     p2["first"].eq(p1["first"])]
        with m.Switch(p1["lo"]):
            for s in self._shifts:
                with m.Case(s):
                    m.d.sync += p2["init"].eq(model.unzero(model.init, s))
        fin = ("end", "started", "len", "fed", "shift", "n", "kind")
        p2.update({name: Signal.like(p1[name], name=f"p2_{name}") for name in fin})
        m.d.sync += [p2[name].eq(p1[name]) for name in fin]

        # P2: one CRC step per beat of the segment.
        state = Signal(64)
        with m.If(p2["valid"]):
            m.d.sync += state.eq(apply_rows(step_matrix(B), Cat(Mux(p2["first"], p2["init"], state), p2["data"])))
        p3 = {name: Signal.like(p1[name], name=f"p3_{name}") for name in fin}
        m.d.sync += [p3[name].eq(p2[name]) for name in fin]

        # F0: the state after the segment's last beat (init if the segment is empty), times A^(64 - B + shift);
        # q + 1 = (64/B) * ceil(len / 64) - fed beats + 1, in 0..64/B, says how many more zero beats to apply.
        R = BLOCK_BYTES // B
        f_state = Mux(p3["started"], state, model.init)
        f_shift = Mux(p3["started"], p3["shift"], 0)
        q1 = Signal(self._q_bits + 1)
        m.d.comb += q1.eq(R * ((p3["len"] + BLOCK_BYTES - 1) >> 6) - p3["fed"] + 1)
        stage = dict(valid=Signal(), x=Signal(64), q=Signal(self._q_bits), len=Signal(_POS), n=Signal(_POS),
                     kind=Signal(2))
        m.d.sync += [stage["valid"].eq(p3["end"]), stage["q"].eq(q1), stage["len"].eq(p3["len"]),
                     stage["n"].eq(p3["n"]), stage["kind"].eq(p3["kind"])]
        with m.Switch(f_shift):
            for s in sorted(set(self._shifts) | {0}):
                with m.Case(s):
                    m.d.sync += stage["x"].eq(apply_rows(zeros_matrix(BLOCK_BYTES - B + s), f_state))

        # F1..: times A^(B * 2^b) for each bit b of q + 1.
        for b in range(self._q_bits):
            nxt = {name: Signal.like(sig, name=f"f{b + 1}_{name}") for name, sig in stage.items()}
            m.d.sync += [nxt[name].eq(stage[name]) for name in stage if name != "x"]
            m.d.sync += nxt["x"].eq(Mux(stage["q"][b], apply_rows(zeros_matrix(B << b), stage["x"]), stage["x"]))
            stage = nxt

        # Out: the trailer (len in bytes 0..3) and the output XOR.
        key = apply_rows(trailer_matrix(_POS), stage["len"]) ^ stage["x"] ^ model.xor_output
        m.d.sync += [
            self.o.valid.eq(stage["valid"]),
            self.o.payload.key.eq(key),
            self.o.payload.length.eq(Mux(stage["n"] > 0xFFFF, 0xFFFF, stage["n"])),
            self.o.payload.kind.eq(stage["kind"]),
        ]
        return m
