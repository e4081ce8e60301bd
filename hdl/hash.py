"""The hash unit: the model's hash specification (``apbbf.model.hashing``) as pipelined XOR trees."""

from amaranth import Module, Signal, Cat
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..model.config import Config, check_config
from ..model.hashing import HashSpec

__all__ = ["HashUnit"]


def _parity_of(value, mask: int):
    bits = [value[i] for i in range(len(value)) if mask >> i & 1]
    return Cat(*bits).xor()


class HashUnit(wiring.Component):
    """Every physical segment's H3 hash of a key, bit for bit as :class:`~apbbf.model.hashing.HashSpec`.

    Each output bit is the parity of the key bits its constant mask selects: an XOR tree of LUTs. A register
    stage follows the tree (and, for keys wider than 64 bits, the shared fold stage before it), so the hash
    never sets the clock: a 32-input tree is three LUT4 levels deep.

    Parameters
    ----------
    config : Config

    Attributes
    ----------
    key : In(key_width)
        The key; must be held stable for :attr:`latency` cycles (the core holds it in a register).
    en : In(1)
        Load the pipeline registers; hold ``en`` high for :attr:`latency` cycles. Low, the registers keep
        their value (and do not toggle).
    hashes : Out(ArrayLayout(hash_bits, physical_segments))
        ``hashes[j]``: the hash of physical segment j, valid :attr:`latency` cycles after ``key``.
    """

    def __new__(cls, config, *args, **kwargs):
        # Checked before the object exists: a unit refused here is not an unused elaboratable.
        check_config(config)
        return super().__new__(cls, config, *args, **kwargs)

    def __init__(self, config: Config):
        self._config = config
        self._spec = HashSpec(config)
        super().__init__({
            "key": In(config.key_width),
            "en": In(1),
            "hashes": Out(data.ArrayLayout(config.hash_bits, config.physical_segments)),
        })

    @property
    def config(self) -> Config:
        return self._config

    @property
    def latency(self) -> int:
        """Cycles from ``key`` to ``hashes``: 1, or 2 with the fold stage (key_width > 64)."""
        return 2 if self._spec.fold_masks else 1

    def elaborate(self, platform):
        m = Module()
        folded = self.key
        with m.If(self.en):
            if self._spec.fold_masks:
                folded = Signal(len(self._spec.fold_masks))
                m.d.sync += folded.eq(Cat(*(_parity_of(self.key, mask) for mask in self._spec.fold_masks)))
            for j, masks in enumerate(self._spec.segment_masks):
                m.d.sync += self.hashes[j].eq(Cat(*(_parity_of(folded, mask) for mask in masks)))
        return m
