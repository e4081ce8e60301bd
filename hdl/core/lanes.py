"""Lanes: several commands per clock, each to the filter of its key's lane (:mod:`apbbf.model.lanes`)."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config, check_integer
from ...model.hashing import HashSpec
from ...model.lanes import check_lanes, lane_masks
from .apbbf import APBBF, SCANS
from ..lib.credits import credit_flag
from .hash import HashUnit, selected_bits, tree_groups, hash_latency
from .scan_parallel import queue_depth
from .types import Op
from ..lib.ungated_fifo import UngatedFIFO

__all__ = ["LaneHash", "Lanes", "slot_command_layout", "slot_response_layout", "lanes_command_layout",
           "lanes_response_layout"]

#: Credits of the register slice between each lane's pick and its core: a credit comes back four cycles after
#: the pick that took it (the slice's write a cycle later, its head two cycles after that, the credit's count), so
#: four keep a command per clock flowing.
_SLICE_CREDITS = 4


def slot_command_layout(config: Config) -> data.StructLayout:
    """One command slot of a beat: ``{valid, op, key[, time]}`` (``time`` with a span)."""
    fields = {"valid": 1, "op": Op, "key": config.key_width}
    if config.timed:
        fields["time"] = config.time_width
    return data.StructLayout(fields)


def slot_response_layout() -> data.StructLayout:
    """One response slot of a beat: ``{valid, op, hit}``."""
    return data.StructLayout({"valid": 1, "op": Op, "hit": 1})


def lanes_command_layout(config: Config, slots: int) -> data.ArrayLayout:
    """A command beat: ``slots`` :func:`slot_command_layout` slots, slot 0 in the least significant bits."""
    return data.ArrayLayout(slot_command_layout(config), slots)


def lanes_response_layout(slots: int) -> data.ArrayLayout:
    """A response beat: ``slots`` :func:`slot_response_layout` slots, slot 0 in the least significant bits."""
    return data.ArrayLayout(slot_response_layout(), slots)


def _one_hot_pick(select, values):
    """The value of ``values`` whose bit of ``select`` (one-hot) is set: an OR of ANDs."""
    picked = 0
    for bit, value in zip(select, values):
        picked = picked | (value & bit.replicate(len(value)))
    return picked


class LaneHash(HashUnit):
    """The lane of a key (:class:`apbbf.model.lanes.LaneSpec`), pipelined as the hash unit: fold, mixer, then an
    XOR tree per lane bit in place of the segment hashes; :func:`~apbbf.hdl.core.hash.hash_latency` cycles.

    It is a :class:`~apbbf.hdl.core.hash.HashUnit` with other output masks, so the fold and the mixer are the hash
    unit's own (one definition of the mixer in gateware).

    Parameters
    ----------
    config : Config
    lanes : int
        2 or more, one of :data:`apbbf.model.lanes.LANES`.

    Attributes
    ----------
    key : In(key_width)
    en : In(1)
        Load the pipeline registers (as :class:`~apbbf.hdl.core.hash.HashUnit`'s ``en``).
    lane : Out(range(lanes))
        The lane of the key that entered :attr:`latency` loads ago.
    """

    def __init__(self, config: Config, lanes: int):
        self._masks = lane_masks(config, lanes)
        if lanes < 2:
            raise ValueError(f"lanes must be at least 2 for a LaneHash, not {lanes}")
        self._config = config
        self._spec = HashSpec(config)
        wiring.Component.__init__(self, {"key": In(config.key_width), "en": In(1), "lane": Out(range(lanes))})

    def elaborate(self, platform):
        # The hash unit's fold and mixer, then one pipelined XOR tree per lane bit: the same stages as the
        # segment hashes, so the lane is ready when a core's hashes of the same key would be.
        m = Module()
        spec = self._spec
        folded = self.key
        if spec.fold_masks:
            folded = Cat(*self._tree(m, [selected_bits(self.key, mask) for mask in spec.fold_masks],
                                     tree_groups(self._config.key_width), "fold"))
        mixed, = self._mixer(m, folded)
        bits = self._tree(m, [selected_bits(mixed, mask) for mask in self._masks], tree_groups(spec.mix_width), "lane")
        m.d.comb += self.lane.eq(Cat(*bits))
        return m


class Lanes(wiring.Component):
    """N filters with one Config, taking up to ``slots`` commands per clock, each answered by the filter of
    its key's lane, every answer as :class:`apbbf.model.lanes.Lanes` gives it, in command order.

    **Interface.** One command stream whose beat carries ``slots`` commands, each with its own ``valid`` bit
    (:func:`lanes_command_layout`), and one response stream whose beat answers one command beat, slot for slot
    (:func:`lanes_response_layout`: a response slot is valid iff its command slot was). One wide stream, not N
    streams, because that is what AXI4-Stream users have: a wide TDATA with TKEEP-like per-slot qualifiers,
    one handshake per beat, so the beats keep their order without any cross-stream arbitration outside, and a
    response beat matches its command beat one to one (a beat with no valid slot gets an empty response beat).
    Command order is beat order, then slot 0 first within a beat.

    **Dispatch.** The key of every slot goes through a :class:`LaneHash` (a free-running pipeline into a skid
    queue: ``cmd.ready`` is a register, high while the queue has room for every beat in flight). A beat
    dispatches when a reorder entry is free and the queue of every lane it has a command for has room (a
    credit): one queue per lane, each entry a beat's commands, its reorder tag and a mask of the lane's slots, so a
    beat takes one entry in each lane it reaches, whatever number of its slots go there. Each lane takes, every
    clock, the lowest slot of its head beat that it has not taken yet, and lets the beat go with the last: its
    commands in command order, by construction, with no compare of ages.

    **Reorder.** Each lane's core answers its commands in order; a FIFO per lane remembers the (tag, slot) of
    every command in flight in it, and the answer is written into the reorder buffer at that place. The oldest
    beat leaves when all of its valid slots are answered. Everything else is the core's
    (:class:`~apbbf.hdl.core.APBBF`): the lanes' cores are independent, so the lanes filter has no forwarding
    between them and no false negative by construction.

    Parameters
    ----------
    config : Config
    lanes : int
        One of :data:`apbbf.model.lanes.LANES`.
    slots : int, optional
        Commands per beat, 1 to 16; ``lanes`` by default. More lanes than slots (more banks than lanes) trades
        memory for fewer stalls when two keys of a beat collide.
    scan : {"parallel", "fsm"}
        The cores' scan (``"parallel"``: one command per clock per lane).
    fifo_depth : int
        Beats each lane's queue holds, 2 to 64 (default 16; the commands per clock on random keys for each depth
        are in ``docs/lanes.md``).
    reorder_depth : int
        Beats in flight between dispatch and response, a power of two from 2 to 256 (default 32: more than a
        FIFO's wait plus a core's latency, so that it does not limit the rate).

    Attributes
    ----------
    cmd : In(stream.Signature(lanes_command_layout(config, slots)))
    rsp : Out(stream.Signature(lanes_response_layout(slots)))
    inserts, shifts : Out(ArrayLayout(32, lanes))
        Each lane's core's counters; ``overflows`` and ``expired`` too with a span.

    Raises
    ------
    TypeError, ValueError
        If a parameter is out of its range (the message names it).
    """

    def __init__(self, config: Config, lanes: int, *, slots: int | None = None, scan: str = "parallel",
                 fifo_depth: int = 16, reorder_depth: int = 32):
        check_config(config)
        check_lanes(lanes)
        lane_masks(config, lanes)
        if slots is not None:
            check_integer("slots", slots, range(1, 17))
        if scan not in SCANS:
            raise ValueError(f"scan must be one of {', '.join(map(repr, SCANS))}, not {scan!r}")
        check_integer("fifo_depth", fifo_depth, range(2, 65))
        check_integer("reorder_depth", reorder_depth, range(2, 257))
        if reorder_depth & (reorder_depth - 1):
            raise ValueError(f"reorder_depth must be a power of two from 2 to 256, not {reorder_depth}")
        slots = lanes if slots is None else slots
        self._config, self._lanes, self._slots, self._scan = config, lanes, slots, scan
        self._fifo_depth, self._reorder_depth = fifo_depth, reorder_depth
        counters = ["inserts", "shifts"] + (["overflows", "expired"] if config.timed else [])
        super().__init__({
            "cmd": In(stream.Signature(lanes_command_layout(config, slots))),
            "rsp": Out(stream.Signature(lanes_response_layout(slots))),
            **{name: Out(data.ArrayLayout(32, lanes)) for name in counters},
        })
        self._counters = counters

    config = property(lambda self: self._config)
    lanes = property(lambda self: self._lanes, doc="Filters (lanes).")
    slots = property(lambda self: self._slots, doc="Commands per beat.")
    scan = property(lambda self: self._scan, doc="The cores' scan.")

    @property
    def latency(self) -> int:
        """Cycles of the lane hash in front of the dispatch (0 with one lane)."""
        return hash_latency(self._config) if self._lanes > 1 else 0

    def elaborate(self, platform):
        # Stall pipeline (lane hash) -> a queue of beats per lane -> each lane's commands of a beat in slot order
        # -> a register slice -> N cores -> reorder buffer. One queue per lane, each entry a whole beat with the
        # lane's slots marked, so a lane's commands are in command order by construction: beats in the queue's
        # order, slots in a beat lowest first, and no tag is compared to find the oldest (the compares of the
        # heads of a queue per (slot, lane) were the lanes' critical path). The slice keeps the lane's pick and
        # the core's entry stage in separate cycles.
        m = Module()
        c, N, S, D = self._config, self._lanes, self._slots, self._reorder_depth
        tag_bits = max(1, (D - 1).bit_length())
        command_layout = data.StructLayout({"op": Op, "key": c.key_width,
                                            **({"time": c.time_width} if c.timed else {})})
        # A lane's queue entry: the beat's commands, its reorder tag, and which of its slots are the lane's.
        record_layout = data.StructLayout({"commands": data.ArrayLayout(command_layout, S), "tag": tag_bits})
        # Beside it, the lane's slots of the beat and how many there are, less one.
        mask_layout = data.StructLayout({"mask": S, "extra": range(S)})
        entry_layout = data.StructLayout({"command": command_layout, "tag": tag_bits})
        inflight_layout = data.StructLayout({"tag": tag_bits, "slot": range(S)})

        # 1. The lane hash. It runs freely: every register of it loads every clock, so that no stall signal fans
        # out to them (it did, to every pipeline register of every slot, and it was the critical path). A beat
        # leaves it into a skid queue that dispatch reads, and a beat is taken only while that queue has room for
        # every beat in flight: ``cmd.ready`` is a register, from a count of the beats in flight. The skid holds
        # each lane's slots of the beat as a bit mask, decoded on the way in.
        latency = self.latency
        beat = self.cmd.payload
        beat_valid = self.cmd.valid
        masks = [Cat(beat[s].valid for s in range(S))]      # per lane: its valid slots of the beat
        lane_any = [masks[0].any()]                          # and whether it has any
        dispatch = Signal()
        if N > 1:
            lane_of = [Signal(range(N), name=f"lane_of{s}") for s in range(S)]
            for s in range(S):
                unit = LaneHash(c, N)
                m.submodules[f"lane_hash{s}"] = unit
                m.d.comb += [unit.key.eq(self.cmd.payload[s].key), unit.en.eq(1), lane_of[s].eq(unit.lane)]
            taken = Signal()
            ready = Signal(init=1)
            m.d.comb += [taken.eq(self.cmd.valid & ready), self.cmd.ready.eq(ready)]
            beat_valid = taken
            for stage in range(latency):
                registered = Signal(lanes_command_layout(c, S), name=f"beat{stage}")
                valid = Signal(name=f"beat{stage}_valid")
                m.d.sync += [registered.eq(beat), valid.eq(beat_valid)]
                beat, beat_valid = registered, valid
            # The skid is two queues in step, as a lane's queue is: the beats in LUT RAM, ungated (the credits keep
            # it from filling) and read straight; and, for each lane, its slots of the beat and whether it has any,
            # in a small SyncFIFOBuffered. The dispatch decides from those few flip-flops, and its read is the
            # enable of that queue's output register and of the beats' read pointer, not of a register of the
            # whole beat (about 290 flip-flops at four lanes: the dispatch's fan-out was the four lanes' path).
            skid_layout = data.StructLayout({"masks": data.ArrayLayout(S, N), "any": N})
            # Deep enough for every beat in flight: those in the pipeline and a write's two cycles to the head.
            capacity = latency + 3
            skid = UngatedFIFO(width=len(beat.as_value()), depth=capacity)
            skid_masks = fifo.SyncFIFOBuffered(width=skid_layout.size, depth=capacity + 1)
            m.submodules.skid, m.submodules.skid_masks = skid, skid_masks
            lane_masks_in = [Cat(beat[s].valid & (lane_of[s] == lane) for s in range(S)) for lane in range(N)]
            m.d.comb += [skid.w_en.eq(beat_valid), skid.w_data.eq(beat), skid.r_en.eq(dispatch),
                         skid_masks.w_en.eq(beat_valid), skid_masks.r_en.eq(dispatch),
                         skid_masks.w_data.eq(Cat(*lane_masks_in, Cat(mask.any() for mask in lane_masks_in)))]
            # ready: a place left in the queue for the beats in flight, by cases, so that no adder is behind it.
            m.d.sync += ready.eq(credit_flag(m, "skid", taken, dispatch, capacity))
            # The masks show at their head a cycle after the beat does, so their r_rdy is the skid's.
            skid_head = data.View(skid_layout, skid_masks.r_data)
            beat, beat_valid = data.View(lanes_command_layout(c, S), skid.r_data), skid_masks.r_rdy
            masks = [skid_head.masks[lane] for lane in range(N)]
            lane_any = [skid_head.any[lane] for lane in range(N)]

        # 2. Dispatch into the lanes' queues, with a reorder entry per beat.
        # A beat is written into its lanes' queues a cycle after its dispatch, from registers, and the dispatch
        # reads a registered room flag per queue kept from its credits (entries free, counting the writes on their
        # way): the queues sit by their lanes' cores across the device, and neither their levels nor their write
        # enables are then in the same cycle as the decision. A queue is written only for a beat with a command in
        # its lane. A queue is two in step: the beats' records in LUT RAM, ungated (the credits keep it from
        # filling) and read straight, so that no register of a whole beat has its enable on the lane's pick; and
        # their masks, a few bits, in a SyncFIFOBuffered, so that the pick starts from flip-flops, not from a
        # LUT RAM read. The mask shows at its head a cycle after the record does, so its ``r_rdy`` is the queue's.
        # The mask's count less one rides with it: the beat's last slot is then a compare of two small registers.
        depth = self._fifo_depth
        queues = [UngatedFIFO(width=record_layout.size, depth=depth) for _ in range(N)]
        mask_queues = [fifo.SyncFIFOBuffered(width=mask_layout.size, depth=depth + 1) for _ in range(N)]
        for lane in range(N):
            m.submodules[f"queue{lane}"] = queues[lane]
            m.submodules[f"mask_queue{lane}"] = mask_queues[lane]
        tail = Signal(tag_bits)
        has_room = [Signal(init=1, name=f"room_{lane}") for lane in range(N)]
        room = Signal()
        m.d.comb += room.eq(Cat(~lane_any[lane] | has_room[lane] for lane in range(N)).all())
        if N == 1:
            m.d.comb += self.cmd.ready.eq(~beat_valid | dispatch)
        takes = [Signal(name=f"take_{lane}") for lane in range(N)]
        record = Signal(record_layout)
        record_masks = [Signal(mask_layout, name=f"record_mask{lane}") for lane in range(N)]
        m.d.sync += record.tag.eq(tail)
        for s in range(S):
            m.d.sync += [record.commands[s].op.eq(beat[s].op), record.commands[s].key.eq(beat[s].key)]
            if c.timed:
                m.d.sync += record.commands[s].time.eq(beat[s].time)
        for lane in range(N):
            m.d.comb += takes[lane].eq(dispatch & lane_any[lane])
            m.d.sync += [queues[lane].w_en.eq(takes[lane]), mask_queues[lane].w_en.eq(takes[lane]),
                         record_masks[lane].mask.eq(masks[lane]),
                         record_masks[lane].extra.eq(sum(masks[lane][s] for s in range(S)) - 1)]
            m.d.comb += [queues[lane].w_data.eq(record), mask_queues[lane].w_data.eq(record_masks[lane])]

        # 3. Per lane: the lowest of the head beat's slots not yet taken goes to the lane's core; the beat leaves
        # the queue with its last. The pick is the one loop here (the slots taken -> the pick -> the queue's read ->
        # the next head), a few bits wide, so it does nothing else in its cycle: the picked command is copied into
        # the slice, and its place into the in-flight FIFO, a cycle later, from registers (the pick, one-hot, and a
        # copy of the head loaded every clock), and the pick reads a registered room flag kept from the slice's and
        # the in-flight FIFO's credits.
        expected = [Signal(S, name=f"expected{e}") for e in range(D)]
        pending = [Signal(S, name=f"pending{e}") for e in range(D)]
        answers = [Signal(lanes_response_layout(S), name=f"answer{e}") for e in range(D)]
        answered = []                                        # per lane: (one-hot (tag, slot), op, hit)
        for lane in range(N):
            core = APBBF(c, scan=self._scan)
            m.submodules[f"lane{lane}"] = core
            # Buffered: the place of an answer comes from flip-flops, not through LUT RAM. One entry more than
            # its credits: a SyncFIFOBuffered's writes stop when the memory behind its output register is full,
            # which can happen with one entry fewer than its depth in it.
            inflight_credits = queue_depth(c) + _SLICE_CREDITS + 4
            inflight = fifo.SyncFIFOBuffered(width=inflight_layout.size, depth=inflight_credits + 1)
            m.submodules[f"inflight{lane}"] = inflight
            slice_ = fifo.SyncFIFOBuffered(width=entry_layout.size, depth=_SLICE_CREDITS + 1)
            m.submodules[f"slice{lane}"] = slice_
            sliced = data.View(entry_layout, slice_.r_data)
            queue = queues[lane]
            mask_queue = mask_queues[lane]
            head_record, head_mask = data.View(record_layout, queue.r_data), data.View(mask_layout, mask_queue.r_data)
            done = Signal(S, name=f"done{lane}")             # the head beat's slots already taken
            taken_here = Signal(range(S), name=f"taken{lane}")   # and how many
            remaining = Signal(S, name=f"remaining{lane}")
            pick = Signal(S, name=f"pick{lane}")
            last = Signal(name=f"last{lane}")
            room_here = Signal(init=1, name=f"room{lane}")
            fire = Signal(name=f"issue{lane}")
            m.d.comb += [
                remaining.eq(head_mask.mask & ~done),
                pick.eq(remaining & -remaining),
                last.eq(taken_here == head_mask.extra),
                fire.eq(mask_queue.r_rdy & room_here),
                queue.r_en.eq(fire & last),
                mask_queue.r_en.eq(fire & last),
            ]
            with m.If(fire):
                m.d.sync += [done.eq(Mux(last, 0, done | pick)), taken_here.eq(Mux(last, 0, taken_here + 1))]
            picked = Signal(S, name=f"picked{lane}")
            copy = Signal(record_layout, name=f"head{lane}")
            m.d.sync += [picked.eq(Mux(fire, pick, 0)), copy.eq(head_record)]
            chosen = Signal(entry_layout, name=f"chosen{lane}")
            chosen_slot = Signal(range(S), name=f"chosen_slot{lane}")
            m.d.comb += chosen.tag.eq(copy.tag)
            for s in range(S):
                with m.If(picked[s]):
                    m.d.comb += [chosen.command.eq(copy.commands[s]), chosen_slot.eq(s)]
            # The slice holds commands in the order the core takes them, so the in-flight record is written as
            # a command enters the slice.
            m.d.sync += room_here.eq(
                credit_flag(m, f"slice{lane}", fire, slice_.r_en & slice_.r_rdy, _SLICE_CREDITS)
                & credit_flag(m, f"inflight{lane}", fire, inflight.r_en & inflight.r_rdy, inflight_credits))
            m.d.comb += [
                slice_.w_en.eq(picked.any()),
                slice_.w_data.eq(chosen),
                inflight.w_en.eq(picked.any()),
                inflight.w_data.eq(Cat(chosen.tag, chosen_slot)),
                core.cmd.valid.eq(slice_.r_rdy),
                core.cmd.payload.op.eq(sliced.command.op),
                core.cmd.payload.key.eq(sliced.command.key),
                slice_.r_en.eq(core.cmd.ready),
                core.rsp.ready.eq(1),
                inflight.r_en.eq(core.rsp.valid),
            ]
            if c.timed:
                m.d.comb += core.cmd.payload.time.eq(sliced.command.time)
            # The credits: one taken by a dispatch into this queue, one given back by a read from it.
            m.d.sync += has_room[lane].eq(credit_flag(m, f"queue_free{lane}", takes[lane], queue.r_en, depth))
            for name in self._counters:
                m.d.comb += getattr(self, name)[lane].eq(getattr(core, name))
            where = data.View(inflight_layout, inflight.r_data)
            # An answer is registered with its place as it leaves the core, and lands a cycle later, its place
            # decoded one-hot into registers: the core's response valid drives a few registers, not the decode of
            # every reorder entry, and each entry's update reads one flip-flop per lane.
            answer_valid = Signal(name=f"answer_valid{lane}")
            answer_where = Signal(inflight_layout, name=f"answer_where{lane}")
            answer_op, answer_hit = Signal(Op, name=f"answer_op{lane}"), Signal(name=f"answer_hit{lane}")
            m.d.sync += [answer_valid.eq(core.rsp.valid), answer_where.eq(where),
                         answer_op.eq(core.rsp.payload.op), answer_hit.eq(core.rsp.payload.hit)]
            lands = Signal(D * S, name=f"lands{lane}")
            op_landing, hit_landing = Signal(Op, name=f"landing_op{lane}"), Signal(name=f"landing_hit{lane}")
            m.d.sync += [lands.eq(Cat(answer_valid & (answer_where.tag == e) & (answer_where.slot == s)
                                      for e in range(D) for s in range(S))),
                         op_landing.eq(answer_op), hit_landing.eq(answer_hit)]
            answered.append((lands, op_landing, hit_landing))

        # 4. The reorder buffer: answers land at their (tag, slot); the oldest beat leaves when complete.
        # Retirement is a loop (the head's completeness -> leave -> the next head), so it is kept short: each
        # entry's completeness is a register, computed from its next state, the head is one-hot, and "not
        # empty" and "full" are flags registered from the count's next value by cases, so the loop is a one-hot
        # pick of D flip-flops, the leave gate and the head's update. The same one-hot head picks the answers,
        # which leave through the response and loop nowhere.
        # A dispatched beat is written into its entry a cycle later, from registers (its entry one-hot, its
        # valid slots), so that ``dispatch``, behind the FIFOs' room, fans out to those registers and not to
        # every entry. Its first answer comes many cycles later (through a FIFO, the slice and a core), and the
        # head does not see the entry before it is written: "not empty" counts written entries.
        head_onehot = Signal(D, init=1)
        complete = Signal(D, init=(1 << D) - 1)
        nonempty = Signal()
        full = Signal()
        m.d.comb += dispatch.eq(beat_valid & room & ~full)
        allocate = Signal(D)
        allocate_valid = Signal(S)
        m.d.sync += [allocate.eq(Cat(dispatch & (tail[:tag_bits] == e) for e in range(D))),
                     allocate_valid.eq(Cat(beat[s].valid for s in range(S)))]
        allocated = Signal()
        m.d.comb += allocated.eq(allocate.any())
        for e in range(D):
            here = allocate[e]
            pending_next = []
            for s in range(S):
                arrives = Signal(name=f"arrives{e}_{s}")
                m.d.comb += arrives.eq(Cat(lands[e * S + s] for lands, op, hit in answered).any())
                for lands, op, hit in answered:
                    with m.If(lands[e * S + s]):
                        m.d.sync += [answers[e][s].op.eq(op), answers[e][s].hit.eq(hit)]
                with m.If(here):
                    m.d.sync += [expected[e][s].eq(allocate_valid[s])]
                # A slot is pending from its beat's dispatch until its answer lands.
                pending_next.append(Mux(here, allocate_valid[s], pending[e][s] & ~arrives))
                m.d.sync += pending[e][s].eq(pending_next[-1])
            m.d.sync += complete[e].eq(~Cat(*pending_next).any())
        # The oldest beat's answers are picked by the one-hot head, an AND-OR: each of its flip-flops reaches one
        # entry's few bits (a binary head's bits reached every entry's, and that 32-way pick was a path).
        oldest = Signal(lanes_response_layout(S))
        oldest_expected = Signal(S)
        m.d.comb += [
            oldest_expected.eq(_one_hot_pick(head_onehot, expected)),
            oldest.eq(_one_hot_pick(head_onehot, [answer.as_value() for answer in answers])),
        ]
        for s in range(S):
            m.d.comb += [
                self.rsp.payload[s].valid.eq(oldest_expected[s]),
                self.rsp.payload[s].op.eq(oldest[s].op),
                self.rsp.payload[s].hit.eq(oldest[s].hit),
            ]
        leave = Signal()
        m.d.comb += [
            self.rsp.valid.eq(nonempty & (complete & head_onehot).any()),
            leave.eq(self.rsp.valid & self.rsp.ready),
        ]
        # "Full" counts the dispatched beats, "not empty" the written ones: they differ by the beat being written.
        m.d.sync += [full.eq(~credit_flag(m, "reorder_free", dispatch, leave, D)),
                     nonempty.eq(credit_flag(m, "reorder_written", leave, allocated, D, init=0))]
        with m.If(dispatch):
            m.d.sync += tail.eq(tail + 1)
        with m.If(leave):
            m.d.sync += head_onehot.eq(head_onehot.rotate_left(1))
        return m

