# amaranth: UnusedElaboratable=no
"""Register copies (hdl/core/copies.py): what each copy holds, and that Yosys keeps them apart."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.back import rtlil
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from apbbf.hdl.core.copies import MAX_COPIES, register_copies
from .streams import run_simulation
from .synthesis import flip_flops_per_copy, synthesize_ecp5

WIDTH = 12
SEED = 2611
ONES = (1 << WIDTH) - 1


class _Copies(wiring.Component):
    """``copies`` copies of ``value``, loaded when ``en``; ``held[n]`` what copy n gives its reader."""

    def __init__(self, copies, undo, complements=True):
        self._copies, self._undo, self._complements = copies, undo, complements
        super().__init__({"value": In(WIDTH), "en": In(1), "held": Out(WIDTH).array(copies)})

    def elaborate(self, platform):
        m = Module()
        held = register_copies(m, self.value, self._copies, name="kept", enable=self.en, undo=self._undo,
                               complements=self._complements)
        m.d.comb += [self.held[n].eq(value) for n, value in enumerate(held)]
        return m


@pytest.mark.parametrize("undo,complements", [(True, True), (False, True), (False, False)],
                         ids=["undone", "as-stored", "no-complements"])
def test_copies_hold_the_value(undo, complements):
    """Every copy loads only with the enable; undone, each gives the value; as stored, odd copies give its
    complement (what a carry chain reading the complement takes); without complements, both copies hold the
    value as stored."""
    copies = MAX_COPIES if complements else 2
    dut = _Copies(copies, undo, complements)
    print(f"seed {SEED}")
    rng = random.Random(SEED)

    async def bench(ctx):
        loaded = None
        for _ in range(50):
            value, en = rng.getrandbits(WIDTH), rng.random() < 0.5
            ctx.set(dut.value, value)
            ctx.set(dut.en, en)
            await ctx.tick()
            loaded = value if en else loaded
            if loaded is None:
                continue
            for n in range(copies):
                expected = loaded ^ (ONES if n & 1 and complements and not undo else 0)
                assert ctx.get(dut.held[n]) == expected, (n, hex(loaded))

    run_simulation(dut, bench)


@pytest.mark.parametrize("copies,complements,most", [(0, True, 4), (MAX_COPIES + 1, True, 4), (2.0, True, 4),
                                                     ("2", True, 4), (0, False, 2), (3, False, 2)])
def test_wrong_copies(copies, complements, most):
    with pytest.raises(ValueError, match=rf"copies must be an integer 1\.\.{most}"):
        register_copies(Module(), Signal(4), copies, name="kept", complements=complements)


@pytest.mark.parametrize("complements", [True, False], ids=["complements", "initial-values"])
def test_copies_survive_synthesis(complements):
    """Each of the copies is still its own set of flip-flops after Yosys's ECP5 synthesis (plain copies would be
    merged into one), odd ones with their readers' carry chains taking the complement as is; without complements,
    the two copies kept apart by their initial values alone."""
    count = MAX_COPIES if complements else 2

    class Compares(wiring.Component):
        value: In(WIDTH)
        en: In(1)
        bound: In(WIDTH)
        reached: Out(count)

        def elaborate(self, platform):
            m = Module()
            held = register_copies(m, self.value, count, name="kept", enable=self.en, undo=False,
                                   complements=complements)
            for n, copy in enumerate(held):             # value >= bound, as the time-bounded core compares
                bound = self.bound.rotate_left(n)           # a bound per copy, so no two compares are one
                compare = (copy + bound)[-1] if n & 1 and complements else ~(copy - bound)[-1]
                m.d.sync += self.reached[n].eq(compare)
            return m

    copies = flip_flops_per_copy(synthesize_ecp5(Compares(), f"test_copies_{complements}"), "kept")
    assert copies == {str(n): WIDTH for n in range(count)}, copies


def test_the_core_copies_survive_synthesis():
    """The time-bounded parallel core at one command per clock keeps, after synthesis, two copies of the entered
    command's deadline (each read by half the segments) and each forwarding flag in one copy per 16 bits of a
    block (each selecting those bits in M)."""
    from apbbf.hdl.core import APBBF
    from apbbf.model import Config
    config = Config(2, 3, block_bits=64, segment_blocks=4, span=40, time_width=16, extra_segments=2)
    cells = synthesize_ecp5(APBBF(config, scan="parallel", pace=1), "test_core_copies")
    assert flip_flops_per_copy(cells, "next_deadline") == {"0": 16, "1": 16}
    for n in (1, 2, 3):
        assert flip_flops_per_copy(cells, f"same{n}_0") == {str(copy): 1 for copy in range(4)}, n


@pytest.mark.parametrize("pace,registers", [(1, {"u_time_copy0", "u_time_copy1", "u_time_copy2", "u_time_copy3"}),
                                            (3, {"u_time"})])
def test_the_staged_time_copies_at_pace_one_only(pace, registers):
    """The parallel scan keeps the staged time in one register per copy at one command per clock (its carry chains
    were the time-bounded core's path), in one register at pace 2 and 3 (where the copies measured slower)."""
    import re

    from apbbf.hdl.core import APBBF
    from apbbf.model import Config
    text = rtlil.convert(APBBF(Config(2, 3, segment_blocks=4, span=40, time_width=16, extra_segments=2),
                               scan="parallel", pace=pace))
    assert set(re.findall(r"wire width 16 \\(u_time\w*)\n", text)) == registers
