"""The circular buffer of segments (paper 000 §5.1): which physical segment plays which role, and when it shifts."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..model.config import Config, check_config

__all__ = ["buffer_signature", "CircularBuffer"]


def _roles(P: int, members) -> int:
    """Initial value of a role vector: bit j set when physical segment j is at a logical position in
    ``members`` for base 0."""
    return sum(1 << (i % P) for i in members)


def buffer_signature(config: Config) -> wiring.Signature:
    """The buffer's ports (see :class:`CircularBuffer`); a scan that drives it takes
    ``Out(buffer_signature(config).flip())``."""
    P = config.physical_segments
    return wiring.Signature({
        "insert": In(1),
        "base": Out(range(P)),
        "spare": Out(range(P)),
        "fill_zero": Out(1, init=1),
        "targets": Out(P),
        "starts": Out(P, init=_roles(P, range(config.l + 1))),
        "shift": Out(1),
        "inserts": Out(32),
        "shifts": Out(32),
    })


class CircularBuffer(wiring.Component):
    """The state that ages the filter: the base index, the fill of the current generation and the physical
    segments in each role, as the golden model keeps them (:class:`apbbf.model.filters.AgePartitioned`).

    After reset ``base`` is 0 and ``fill_zero`` is high: the first insert shifts first (``shifts`` reads 1
    after it), so the first key lands in logical segment 0 = physical position ``k + l`` (``base - 1``).

    Parameters
    ----------
    config : Config

    Attributes
    ----------
    insert : In(1)
        An insert is done in this cycle (with its shift first, if ``fill_zero``).
    base : Out(range(k+l+1))
        Physical position of logical segment 0.
    spare : Out(range(k+l+1))
        Physical position of the spare, logical ``k + l``: never read or written by commands.
    fill_zero : Out(1)
        ``n mod g == 0``: the next insert shifts first.
    targets : Out(k+l+1)
        Bit j set: the next insert writes physical segment j (logical 0..k-1 after its shift, if any).
    starts : Out(k+l+1)
        Bit j set: physical segment j is a logical start 0..l of Algorithm 1 now (before the next insert's
        shift): where a run of k matches may begin.
    shift : Out(1)
        ``insert & fill_zero``: this cycle's insert shifts; the retired segment becomes the spare.
    inserts, shifts : Out(32)
        Inserts and shifts (generations) since reset (wrap).

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
        super().__init__(buffer_signature(config))

    @property
    def config(self) -> Config:
        return self._config

    def elaborate(self, platform):
        # Roles are P-bit vectors (bit j: physical segment j has the role) that rotate by one on a shift
        # (base - 1), so no per-segment modular arithmetic sits in the paths that use them.
        c = self._config
        k, P, g = c.k, c.physical_segments, c.generation
        m = Module()
        fill = Signal(range(g))                                  # n mod g
        newest = Signal(P, init=_roles(P, range(k)))             # logical 0..k-1 now
        newest_next = Signal(P, init=_roles(P, range(-1, k - 1)))   # logical 0..k-1 after the next shift
        m.d.comb += [self.spare.eq(Mux(self.base == 0, P - 1, self.base - 1)),
                     self.targets.eq(Mux(self.fill_zero, newest_next, newest)),
                     self.shift.eq(self.insert & self.fill_zero)]
        with m.If(self.insert):
            m.d.sync += [fill.eq(Mux(fill == g - 1, 0, fill + 1)),
                         self.fill_zero.eq(fill == g - 1),
                         self.inserts.eq(self.inserts + 1)]
        with m.If(self.shift):
            m.d.sync += [self.base.eq(Mux(self.base == 0, P - 1, self.base - 1)),
                         newest.eq(newest_next), newest_next.eq(newest_next.rotate_right(1)),
                         self.starts.eq(self.starts.rotate_right(1)), self.shifts.eq(self.shifts + 1)]
        return m
