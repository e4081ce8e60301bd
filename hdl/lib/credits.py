"""A registered "one is left" flag over a count, kept by cases: credits, room and "not empty" off the adder."""

from amaranth import Mux, Signal

__all__ = ["stepped", "credit_flag"]


def stepped(m, count, *, up, down, name: str | None = None):
    """The next value of ``count``, one more with ``up`` and one less with ``down`` (unchanged with both or
    neither): picked by (``down``, ``up``) at the last gate among the count and its two adders, which are adders of
    the register alone. ``up`` and ``down`` are a user's decisions, late in the cycle, and run into no carry
    chain (a read's or a write's enable into a level's adder was a 64-bit de-duplicator's path three times)."""
    name = name or count.name
    more, fewer = Signal.like(count, name=f"{name}_up"), Signal.like(count, name=f"{name}_down")
    m.d.comb += [more.eq(count + 1), fewer.eq(count - 1)]
    return Mux(down, Mux(up, count, fewer), Mux(up, more, count))


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
    m.d.sync += [count.eq(stepped(m, count, up=give, down=take, name=name)), flag.eq(flag_next)]
    m.d.comb += flag_next.eq(flag)
    with m.If(take & ~give):
        m.d.comb += flag_next.eq(count != 1)
    with m.Elif(give & ~take):
        m.d.comb += flag_next.eq(1)
    return flag_next
