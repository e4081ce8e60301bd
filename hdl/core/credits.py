"""A registered "one is left" flag over a count, kept by cases: credits, room and "not empty" off the adder."""

from amaranth import Mux, Signal

__all__ = ["credit_flag"]


def credit_flag(m, name: str, take, give, total: int, *, init: int | None = None):
    """The next value of "a credit is left" over ``total`` credits (``init`` of them at reset, ``total`` by
    default), one taken by ``take`` and one given back by ``give`` in a clock: by cases from a count of the
    credits, so that no adder or compare is behind it. Register it (reset to ``init > 0``) where it is used.

    Entries free in a queue are credits (taken by a write, given back by a read), and so are entries held (taken by
    a read, given back by a write, none at reset): the flag is then "room", or "not empty"."""
    init = total if init is None else init
    count = Signal(range(total + 1), init=init, name=f"{name}_count")
    flag = Signal(init=init > 0, name=f"{name}_flag")
    flag_next = Signal(name=f"{name}_next")
    # The count's next value is picked by (take, give) at the last gate among the count and its two adders (of the
    # register alone): ``take`` is the user's decision, late in the cycle, and runs into no carry chain.
    up, down = Signal.like(count, name=f"{name}_up"), Signal.like(count, name=f"{name}_down")
    m.d.comb += [up.eq(count + 1), down.eq(count - 1)]
    m.d.sync += [count.eq(Mux(take, Mux(give, count, down), Mux(give, up, count))), flag.eq(flag_next)]
    m.d.comb += flag_next.eq(flag)
    with m.If(take & ~give):
        m.d.comb += flag_next.eq(count != 1)
    with m.Elif(give & ~take):
        m.d.comb += flag_next.eq(1)
    return flag_next
