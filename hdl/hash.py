"""The hash unit, and the decoding of a segment hash into a block index and the bits it selects.

The hash itself is specified once, in :mod:`apbbf.model.hashing`; this file builds it as XOR trees and says how
its output is read: :func:`segment_hash_layout` names the fields, :func:`block_mask` turns the offsets into the
B-bit mask an insert ORs into the block, :func:`block_bits_set` tests them in a block that was read.
"""

from amaranth import Cat, Const, Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..model.config import Config, check_config
from ..model.hashing import FOLD_WIDTH, HashSpec

__all__ = ["segment_hash_layout", "hash_latency", "hash_signature", "HashUnit", "block_mask", "block_bits_set"]


def segment_hash_layout(config: Config) -> data.StructLayout:
    """The fields of one segment hash, least significant first (:meth:`apbbf.model.hashing.HashSpec.split`):
    ``index`` (``log2(segment_blocks)`` bits) picks the block, ``offsets[p]`` (``log2(B/b)`` bits each) picks
    the bit of part p."""
    return data.StructLayout({
        "index": unsigned(config.block_index_bits),
        "offsets": data.ArrayLayout(config.offset_bits, config.block_hashes),
    })


def hash_latency(config: Config) -> int:
    """Cycles from a key to its segment hashes: 1, or 2 with the fold stage (``key_width > 64``)."""
    return 2 if config.key_width > FOLD_WIDTH else 1


def hash_signature(config: Config) -> wiring.Signature:
    """The hash unit's ports: ``key`` and ``en`` in, one :func:`segment_hash_layout` per physical segment out.
    A user of the unit takes ``Out(hash_signature(config).flip())``."""
    return wiring.Signature({
        "key": In(config.key_width),
        "en": In(1),
        "hashes": Out(data.ArrayLayout(segment_hash_layout(config), config.physical_segments)),
    })


def _parity_of(value, mask: int):
    bits = [value[i] for i in range(len(value)) if mask >> i & 1]
    return Cat(*bits).xor()


class HashUnit(wiring.Component):
    """Every physical segment's H3 hash of a key, bit for bit as :class:`~apbbf.model.hashing.HashSpec`.

    Parameters
    ----------
    config : Config

    Attributes
    ----------
    key : In(key_width)
        The key; must be held stable for :attr:`latency` cycles (the scans hold it in a register).
    en : In(1)
        Load the pipeline registers; hold ``en`` high for :attr:`latency` cycles. Low, the registers keep
        their value (and do not toggle).
    hashes : Out(ArrayLayout(segment_hash_layout(config), physical_segments))
        ``hashes[j]``: the hash of physical segment j, valid :attr:`latency` cycles after ``key``.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    """

    def __new__(cls, config, *args, **kwargs):
        # Checked before the object exists: a unit refused here is not an unused elaboratable.
        check_config(config)
        return super().__new__(cls, src_loc_at=1)

    def __init__(self, config: Config):
        self._config = config
        self._spec = HashSpec(config)
        super().__init__(hash_signature(config))

    @property
    def config(self) -> Config:
        return self._config

    @property
    def latency(self) -> int:
        """Cycles from ``key`` to ``hashes`` (:func:`hash_latency`)."""
        return hash_latency(self._config)

    def elaborate(self, platform):
        # Each output bit is the parity of the key bits its constant mask selects: an XOR tree of LUTs. A
        # register stage follows the trees (and, for keys wider than 64 bits, the shared fold stage before
        # them), so the hash never sets the clock on its own: a 32-input tree is three LUT4 levels deep.
        m = Module()
        folded = self.key
        with m.If(self.en):
            if self._spec.fold_masks:
                folded = Signal(len(self._spec.fold_masks))
                m.d.sync += folded.eq(Cat(*(_parity_of(self.key, mask) for mask in self._spec.fold_masks)))
            for j, masks in enumerate(self._spec.segment_masks):
                m.d.sync += self.hashes[j].eq(Cat(*(_parity_of(folded, mask) for mask in masks)))
        return m


def block_mask(config: Config, segment_hash):
    """The B-bit mask of the b bits a segment hash selects in its block: part p's offset decoded one-hot
    into bits ``p·B/b ..``. (An insert ORs it into the block.)"""
    parts = [(Const(1, config.part_bits) << segment_hash.offsets[part])[:config.part_bits]
             for part in range(config.block_hashes)]
    return Cat(*parts)


def block_bits_set(config: Config, segment_hash, blocks):
    """Whether the b bits a segment hash selects are all set in the given blocks, ORed together.

    ``blocks`` holds B-bit blocks or ``(block, enable)`` pairs (a block that counts only when ``enable``).
    One bit per part is picked by its offset (a B/b-to-1 multiplexer) and the b picks are ANDed: shallower
    logic than comparing the whole B-bit block with the mask. The enable gates the picked bit, after the
    multiplexer, so a late enable (forwarding) adds one gate, not a level in front of the multiplexer.
    """
    blocks = [item if isinstance(item, tuple) else (item, 1) for item in blocks]
    picks = []
    for part in range(config.block_hashes):
        offset = segment_hash.offsets[part]
        bits = [block[part * config.part_bits:(part + 1) * config.part_bits].bit_select(offset, 1) & enable
                for block, enable in blocks]
        picks.append(Cat(*bits).any())
    return Cat(*picks).all()
