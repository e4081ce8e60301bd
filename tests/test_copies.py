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

    def __init__(self, copies, undo):
        self._copies, self._undo = copies, undo
        super().__init__({"value": In(WIDTH), "en": In(1), "held": Out(WIDTH).array(copies)})

    def elaborate(self, platform):
        m = Module()
        held = register_copies(m, self.value, self._copies, name="kept", enable=self.en, undo=self._undo)
        m.d.comb += [self.held[n].eq(value) for n, value in enumerate(held)]
        return m


@pytest.mark.parametrize("undo", [True, False], ids=["undone", "as-stored"])
def test_copies_hold_the_value(undo):
    """Every copy loads only with the enable; undone, each gives the value; as stored, odd copies give its
    complement (what a carry chain reading the complement takes)."""
    dut = _Copies(MAX_COPIES, undo)
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
            for n in range(MAX_COPIES):
                expected = loaded ^ (ONES if n & 1 and not undo else 0)
                assert ctx.get(dut.held[n]) == expected, (n, hex(loaded))

    run_simulation(dut, bench)


@pytest.mark.parametrize("copies", [0, MAX_COPIES + 1, 2.0, "2"])
def test_wrong_copies(copies):
    with pytest.raises(ValueError, match=r"copies must be an integer 1\.\.4"):
        register_copies(Module(), Signal(4), copies, name="kept")


def test_copies_survive_synthesis():
    """Each of the copies is still its own set of flip-flops after Yosys's ECP5 synthesis (plain copies would be
    merged into one), odd ones with their readers' carry chains taking the complement as is."""
    class Compares(wiring.Component):
        value: In(WIDTH)
        en: In(1)
        bound: In(WIDTH)
        reached: Out(MAX_COPIES)

        def elaborate(self, platform):
            m = Module()
            held = register_copies(m, self.value, MAX_COPIES, name="kept", enable=self.en, undo=False)
            for n, copy in enumerate(held):             # value >= bound, as the time-bounded core compares
                bound = self.bound.rotate_left(n)           # a bound per copy, so no two compares are one
                compare = (copy + bound)[-1] if n & 1 else ~(copy - bound)[-1]
                m.d.sync += self.reached[n].eq(compare)
            return m

    copies = flip_flops_per_copy(synthesize_ecp5(Compares(), "test_copies"), "kept")
    assert copies == {str(n): WIDTH for n in range(MAX_COPIES)}, copies


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
