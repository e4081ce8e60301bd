"""credit_flag and stepped (hdl/lib/credits.py) against their contract, a count of credits: with takes only while a
credit is left and gives only of credits taken, the registered flag is "a credit is left" after every clock, and the
next value is that after this clock's take and give; stepped's count is the count."""

import random

import pytest
from amaranth import Elaboratable, Module, Signal

from apbbf.hdl.lib.credits import credit_flag, stepped

from .streams import run_simulation


class _Flag(Elaboratable):
    def __init__(self, total, init):
        self.total, self.init = total, init
        self.take, self.give = Signal(), Signal()
        self.flag, self.flag_next = Signal(init=(total if init is None else init) > 0), Signal()
        self.count = Signal(range(total + 1), init=total if init is None else init)

    def elaborate(self, platform):
        m = Module()
        flag_next = credit_flag(m, "test", self.take, self.give, self.total, init=self.init)
        m.d.comb += self.flag_next.eq(flag_next)
        m.d.sync += [self.flag.eq(flag_next),
                     self.count.eq(stepped(m, self.count, up=self.give, down=self.take, name="mirror"))]
        return m


@pytest.mark.parametrize("total, init", [(1, None), (2, None), (5, None), (5, 0), (8, 3)])
@pytest.mark.parametrize("take_rate, give_rate", [(0.5, 0.5), (0.9, 0.3), (0.3, 0.9)],
                         ids=["even", "drains", "fills"])
def test_matches_a_count(total, init, take_rate, give_rate):
    seed = 31 * total + (init or 0)
    print(f"seed {seed}")
    rng = random.Random(seed)
    dut = _Flag(total, init)
    credits = total if init is None else init
    seen = {"none left": 0, "all back": 0, "both": 0}

    async def bench(ctx):
        nonlocal credits
        for cycle in range(600):
            assert ctx.get(dut.flag) == (credits > 0), cycle
            assert ctx.get(dut.count) == credits, cycle
            # phases of 50 clocks with the rates swapped, so that the count reaches both of its ends
            rates = (take_rate, give_rate) if cycle // 50 % 2 == 0 else (give_rate, take_rate)
            take = credits > 0 and rng.random() < rates[0]
            give = credits - take < total and rng.random() < rates[1]
            ctx.set(dut.take, take)
            ctx.set(dut.give, give)
            after = credits - take + give
            assert ctx.get(dut.flag_next) == (after > 0), cycle
            seen["both"] += take and give
            credits = after
            seen["none left"] += credits == 0
            seen["all back"] += credits == total
            await ctx.tick()

    run_simulation(dut, bench)
    assert all(count > 2 for count in seen.values()), seen      # every edge of the count is reached
