"""The hash unit, and the decoding of a segment hash into a block index and the bits it selects.

The hash itself is specified once, in :mod:`apbbf.model.hashing` (fold, keyed mixer, H3 segment hashes); this
file builds it as a pipeline and says how its output is read: :func:`segment_hash_layout` names the fields,
:func:`block_mask` turns the offsets into the B-bit mask an insert ORs into the block, :func:`block_picks`
picks them from a block that was read.

The pipeline (:func:`hash_stages`), every stage at most two LUT4 levels deep so that the hash never sets the
clock of the core behind it:

- the fold (keys wider than 64 bits) and the segment hashes are pipelined XOR trees: the first stage takes
  parities of 4 bits (one LUT4 as written: its inputs fan out to every tree, so their nets are the slow ones;
  it is the unit's critical path after place and route, where ABC shares sub-XORs between trees), every later
  stage XORs up to 16 of the registered parities (two LUT levels). The segment hashes take two stages, the
  fold three (up to 1024 bits);
- the mixer: :data:`MIX_ROUNDS_PER_STAGE` rounds per stage. A round's key XOR, S-box and (in the last round)
  the final key XOR are one 4-input function per output bit, one LUT4; the bit permutation is wiring. Its last
  register is kept in up to :data:`MIX_COPIES` copies, each feeding the trees of a group of segments: a bit of
  the mixed key feeds a first-stage LUT of about half of every segment's hash bits (over a hundred LUTs, next to
  segments spread over the device's block RAM columns), and as one net that was the critical path of two lanes
  on every seed (9-10 ns of routing).

Built with ``tweak=True`` the unit takes the run-time seed (:mod:`apbbf.model.hashing`, "The run-time seed") at
its ``tweak`` port: each round's input is XORed with its rotation of it (wiring) before the S-box of the build
seed's round key; the fold and the segment masks stay constants, so the XOR trees are those of the unit without
it. It costs an XOR per bit and round (about one LUT4 each, a LUT level more per round at most).
"""

from amaranth import Cat, Const, Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config
from ...model.hashing import FOLD_WIDTH, MIX_ROUNDS, SBOX, TWEAK_ROTATION, HashSpec, mix_permutation, mix_width
from .copies import MAX_COPIES, register_copies
from .types import ConfigSignature

__all__ = ["MIX_ROUNDS_PER_STAGE", "MIX_COPIES", "segment_hash_layout", "tree_groups", "hash_stages", "hash_latency",
           "HashSignature", "hash_signature", "connect_hash", "selected_bits", "HashUnit", "block_mask", "block_picks"]

#: Mixer rounds between two registers (each round is one LUT4 level).
MIX_ROUNDS_PER_STAGE = 2
#: Copies of the mixer's last register, at most (one per group of segments): as many as can be kept distinct
#: (:data:`.copies.MAX_COPIES`; the tree's first LUT absorbs a copy's inversion).
MIX_COPIES = MAX_COPIES
#: Inputs per parity in the first stage of an XOR tree (one LUT4: the key's fan-out is high there).
_FIRST_GROUP = 4
#: Inputs per parity in every other stage of an XOR tree (two LUT4 levels).
_GROUP = 16


def segment_hash_layout(config: Config) -> data.StructLayout:
    """The fields of one segment hash, least significant first (:meth:`apbbf.model.hashing.HashSpec.split`):
    ``index`` (``log2(segment_blocks)`` bits; in the row layout ``log2(row_blocks)``, the block within the key's
    row) picks the block, ``offsets[p]`` (``log2(B/b)`` bits each) picks the bit of part p."""
    return data.StructLayout({
        "index": unsigned(config.segment_index_bits),
        "offsets": data.ArrayLayout(config.offset_bits, config.block_hashes),
    })


def tree_groups(inputs: int) -> list[int]:
    """Inputs per parity in each stage of a pipelined XOR tree that reduces up to ``inputs`` bits to one."""
    groups = [_FIRST_GROUP]
    remaining = -(-inputs // _FIRST_GROUP)
    while remaining > 1:
        groups.append(_GROUP)
        remaining = -(-remaining // _GROUP)
    return groups


def hash_stages(config: Config) -> dict:
    """Register stages of the hash pipeline: ``fold`` (0 for keys of up to 64 bits), ``mix`` and ``segment``.
    They depend on the widths only (a tree is as deep as an all-ones mask needs), not on the seed."""
    check_config(config)
    width = mix_width(config.key_width)
    return {
        "fold": len(tree_groups(config.key_width)) if config.key_width > FOLD_WIDTH else 0,
        "mix": -(-MIX_ROUNDS // MIX_ROUNDS_PER_STAGE),
        "segment": len(tree_groups(width)),
    }


def hash_latency(config: Config) -> int:
    """Cycles from a key to its segment hashes: the sum of :func:`hash_stages` (6 for keys of up to 64 bits, 9
    for wider ones)."""
    return sum(hash_stages(config).values())


class HashSignature(ConfigSignature):
    """The hash unit's ports: ``key`` and ``en`` in, one :func:`segment_hash_layout` per physical segment out,
    and in the row layout the key's ``row`` (:attr:`~apbbf.model.Config.row_index_bits` bits). A user of the unit
    takes ``Out(HashSignature(config).flip())``."""

    @staticmethod
    def members_of(config: Config) -> dict:
        members = {
            "key": In(config.key_width),
            "en": In(1),
            "hashes": Out(data.ArrayLayout(segment_hash_layout(config), config.physical_segments)),
        }
        if config.row_layout:
            members["row"] = Out(max(1, config.row_index_bits))
        return members


#: The former name of :class:`HashSignature`.
hash_signature = HashSignature


def connect_hash(m, hash_port, unit) -> None:
    """Wire a user's ``Out(HashSignature(config).flip())`` port ``hash_port`` to the hash unit ``unit`` in ``m``:
    :func:`amaranth.lib.wiring.connect`, or member by member when the unit also takes a ``tweak``."""
    if not getattr(unit, "has_tweak", False):
        wiring.connect(m, hash_port, unit)
        return
    m.d.comb += [unit.key.eq(hash_port.key), unit.en.eq(hash_port.en), hash_port.hashes.eq(unit.hashes)]
    if hasattr(hash_port, "row"):
        m.d.comb += hash_port.row.eq(unit.row)


def selected_bits(value, mask: int) -> list:
    """The bits of ``value`` where ``mask`` has a 1, lowest first: the inputs of one H3 parity."""
    return [value[i] for i in range(len(value)) if mask >> i & 1]


class HashUnit(wiring.Component):
    """Every physical segment's hash of a key (fold, keyed mixer, H3), bit for bit as
    :class:`~apbbf.model.hashing.HashSpec`, in a pipeline of :func:`hash_latency` stages.

    Parameters
    ----------
    config : Config
    tweak : bool
        Take the run-time seed at :attr:`tweak` (module documentation); without it (the default) the unit is
        the build seed's alone, as before the port existed.

    Attributes
    ----------
    key : In(key_width)
        The key; must be held stable for :attr:`latency` cycles while ``en`` is high (the scans hold it in a
        register), or change every cycle with ``en`` always high (a pipeline).
    en : In(1)
        Load the pipeline registers; hold ``en`` high for :attr:`latency` cycles. Low, the registers keep
        their value (and do not toggle).
    hashes : Out(ArrayLayout(segment_hash_layout(config), physical_segments))
        ``hashes[j]``: the hash of physical segment j, valid :attr:`latency` cycles after ``key``.
    row : Out(max(1, row_index_bits))
        (Row layout.) The key's row (:meth:`apbbf.model.hashing.HashSpec.row_hash`), with ``hashes``; 0 for a
        Config of one row.
    tweak : In(64)
        (``tweak=True``.) The run-time seed: ``hashes`` are :class:`~apbbf.model.hashing.HashSpec`'s with this
        ``run_seed``. Change it only with no key in the pipeline whose hashes are still wanted.

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``tweak`` not a bool.
    """

    #: Whether the unit takes the run-time seed (a class default for the units that derive from this one).
    _tweak = False

    def __init__(self, config: Config, *, tweak: bool = False):
        check_config(config)
        if not isinstance(tweak, bool):
            raise TypeError(f"tweak must be a bool, not {tweak!r}")
        self._config = config
        self._spec = HashSpec(config)
        self._tweak = tweak
        if tweak:
            super().__init__({**HashSignature.members_of(config), "tweak": In(64)})
        else:
            super().__init__(HashSignature(config))

    @property
    def has_tweak(self) -> bool:
        """Whether the unit takes the run-time seed at :attr:`tweak`."""
        return self._tweak

    @property
    def config(self) -> Config:
        return self._config

    @property
    def latency(self) -> int:
        """Cycles from ``key`` to ``hashes`` (:func:`hash_latency`)."""
        return hash_latency(self._config)

    def _tree(self, m, outputs: list[list], groups: list[int], name: str) -> list:
        """A pipelined XOR tree per output: ``outputs[o]`` lists the bits whose parity output o is; stage s XORs
        groups of ``groups[s]`` and registers them (when ``en``). Returns the last stage's 1-bit registers."""
        for stage, group in enumerate(groups):
            reduced = []
            for o, bits in enumerate(outputs):
                parts = [Cat(*bits[i:i + group]).xor() for i in range(0, len(bits), group)]
                regs = Signal(max(1, len(parts)), name=f"{name}{stage}_{o}", reset_less=True)
                if parts:
                    with m.If(self.en):
                        m.d.sync += regs.eq(Cat(*parts))
                reduced.append([regs[i] for i in range(len(regs))])
            outputs = reduced
        return [bits[0] for bits in outputs]

    def _mixer(self, m, folded, copies: int = 1) -> list:
        """The mixer's rounds, :data:`MIX_ROUNDS_PER_STAGE` between registers; returns the mixed key from each of
        ``copies`` (1 to :data:`MIX_COPIES`) copies of the last register (see :data:`MIX_COPIES`)."""
        assert 1 <= copies <= MIX_COPIES
        spec = self._spec
        width, keys = spec.mix_width, spec.round_keys
        permutation = mix_permutation(width)
        state = Cat(folded, Const(0, width - len(folded)))[:width]
        for r in range(spec.rounds):
            out = Signal(width, name=f"round{r}")
            if self._tweak:
                # The run-time seed's word of this round (hashing.tweak_words): a rotation, wiring.
                turn = TWEAK_ROTATION * r % 64
                word = Cat(self.tweak[64 - turn:], self.tweak[:64 - turn])[:width] if turn else self.tweak[:width]
                tweaked = Signal(width, name=f"tweaked{r}")
                m.d.comb += tweaked.eq(state ^ word)
                state = tweaked
            for i in range(width // 4):
                # The round key's nibble (and, in the last round, the final key's bits where this S-box's
                # outputs land) are constants: the S-box table absorbs them, one 4-input function per bit.
                k = keys[r] >> (4 * i) & 15
                last = [keys[-1] >> permutation[4 * i + b] & 1 if r == spec.rounds - 1 else 0 for b in range(4)]
                table = 0
                for v in range(16):
                    table |= (SBOX[v ^ k] ^ sum(bit << b for b, bit in enumerate(last))) << (4 * v)
                nibble = Const(table, 64).word_select(state[4 * i:4 * i + 4], 4)
                for b in range(4):
                    m.d.comb += out[permutation[4 * i + b]].eq(nibble[b])
            if r == spec.rounds - 1:
                return register_copies(m, out, copies, name=f"mix{r // MIX_ROUNDS_PER_STAGE}", enable=self.en)
            if (r + 1) % MIX_ROUNDS_PER_STAGE == 0:
                registered = Signal(width, name=f"mix{r // MIX_ROUNDS_PER_STAGE}", reset_less=True)
                with m.If(self.en):
                    m.d.sync += registered.eq(out)
                state = registered
            else:
                state = out

    def elaborate(self, platform):
        # Three pipelines in a row, each stage at most two LUT4 levels (hash_stages): the hash is never the
        # critical path of the core. Every register loads only with en, so the FSM scan can hold a key in
        # front of the unit for latency cycles and read the hashes long after.
        m = Module()
        spec = self._spec
        stages = hash_stages(self._config)
        folded = self.key
        if spec.fold_masks:
            groups = tree_groups(self._config.key_width)
            assert len(groups) == stages["fold"]
            folded = Cat(*self._tree(m, [selected_bits(self.key, mask) for mask in spec.fold_masks], groups, "fold"))
        segments = len(spec.segment_masks)
        mixed = self._mixer(m, folded, min(MIX_COPIES, segments))
        groups = tree_groups(spec.mix_width)
        assert len(groups) == stages["segment"]
        for j, masks in enumerate(spec.segment_masks):
            copy = mixed[j * len(mixed) // segments]             # the copy of this segment's group
            bits = self._tree(m, [selected_bits(copy, mask) for mask in masks], groups, f"seg{j}_")
            m.d.comb += self.hashes[j].eq(Cat(*bits))
        if self._config.row_layout and spec.row_masks:
            # The row hash is one more H3 hash of the mixed key, from the last copy: the same trees, the same
            # latency.
            bits = self._tree(m, [selected_bits(mixed[-1], mask) for mask in spec.row_masks], groups, "row")
            m.d.comb += self.row.eq(Cat(*bits))
        return m


def block_mask(config: Config, segment_hash):
    """The B-bit mask of the b bits a segment hash selects in its block: part p's offset decoded one-hot
    into bits ``p·B/b ..``. (An insert ORs it into the block.)"""
    parts = [(Const(1, config.part_bits) << segment_hash.offsets[part])[:config.part_bits]
             for part in range(config.block_hashes)]
    return Cat(*parts)


def block_picks(config: Config, segment_hash, block):
    """The b bits a segment hash selects in a B-bit block that was read, a list of one per part (from part p, picked
    by its offset: a B/b-to-1 multiplexer). The key's bits are all set exactly when every pick is: shallower
    logic than comparing the whole block with the mask, and the picks can be registered before they are ANDed."""
    width = config.part_bits
    return [block[part * width:(part + 1) * width].bit_select(segment_hash.offsets[part], 1)
            for part in range(config.block_hashes)]
