"""The response queue of a pipelined scan: responses wait here for ``rsp.ready``, and a command is only
accepted when its response is sure to find room."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer
from ..lib.credits import stepped
from .types import response_layout

__all__ = ["ResponseQueue"]


class ResponseQueue(wiring.Component):
    """A FIFO of responses with credit-based admission.

    A pipeline cannot stop: every command it has accepted produces a response some cycles later. So a command
    may only be accepted while there is a *credit*: ``depth`` minus the commands accepted and not yet answered
    (in flight or queued). With no credit left ``available`` is low and the scan holds ``cmd.ready`` low.

    Parameters
    ----------
    depth : int
        Responses the queue holds, 1..1024: at least the pipeline's depth in commands so that it runs at one
        command per clock while ``o.ready`` is high.

    Attributes
    ----------
    reserve : In(1)
        A command is accepted in this cycle: it takes a credit.
    available : Out(1)
        A credit is left: a command may be accepted in this cycle.
    available_next : Out(1)
        ``available`` as it will read in the next cycle (from this cycle's ``reserve`` and returned credit).
    available_if_reserved, available_if_not : Out(1)
        ``available_next`` if a credit is reserved in this cycle, and if not: neither depends on ``reserve``.
    i : In(stream.Signature(response_layout()))
        Responses from the pipeline, one per reserved credit. ``i.ready`` is always high for them.
    o : Out(stream.Signature(response_layout()))
        Responses in order.

    Raises
    ------
    TypeError, ValueError
        If ``depth`` is not an integer from 1 to 1024.
    """

    def __init__(self, depth: int):
        check_integer("depth", depth, range(1, 1025))
        self._depth = depth
        super().__init__({
            "reserve": In(1),
            "available": Out(1),
            "available_next": Out(1),
            "available_if_reserved": Out(1),
            "available_if_not": Out(1),
            "i": In(stream.Signature(response_layout())),
            "o": Out(stream.Signature(response_layout())),
        })

    @property
    def depth(self) -> int:
        return self._depth

    def elaborate(self, platform):
        # ``available`` is a register (whether the next credit count is above zero), not a compare of the
        # count, and ``reserve`` only picks between the next counts computed without it: ``reserve`` comes from
        # the scan's decision to let a command go, the one loop that cannot be pipelined. ``available_next``
        # feeds that decision a cycle ahead, so it is no sum either: two flags kept in registers (no credit
        # left, one left) and the credit returned now decide it in one LUT.
        m = Module()
        m.submodules.fifo = queue = fifo.SyncFIFOBuffered(width=response_layout().size, depth=self._depth)
        wiring.connect(m, wiring.flipped(self.i), queue.w_stream)
        wiring.connect(m, queue.r_stream, wiring.flipped(self.o))
        credits = Signal(range(self._depth + 1), init=self._depth)
        available = Signal(init=1)
        none_left, one_left = Signal(init=self._depth == 0), Signal(init=self._depth == 1)
        back = self.o.valid & self.o.ready
        moves = Cat(back, self.reserve)                   # 0b01: +1, 0b10: -1, else 0
        m.d.comb += [
            # reserve only with a credit: the count after it is not zero with "two or more", or "one, and one
            # comes back".
            self.available_if_reserved.eq(~none_left & ~one_left | (one_left & back)),
            self.available_if_not.eq(~none_left | back),
            self.available_next.eq(Mux(self.reserve, self.available_if_reserved, self.available_if_not)),
        ]
        # The flags' next values without the sum: the count moves by -1, 0 or +1, so each is a compare of the
        # count now with a constant, picked by (reserve, back); no carry chain between the returned credit and
        # the flags.
        # No carry chain after the returned credit either (the response queue's ready -> the adder's carry was a
        # 64-bit de-duplicator's path, 6.28 ns).
        m.d.sync += [credits.eq(stepped(m, credits, up=back, down=self.reserve, name="credits")),
                     available.eq(self.available_next),
                     none_left.eq(Mux(moves == 0b10, credits == 1, Mux(moves == 0b01, 0, none_left))),
                     one_left.eq(Mux(moves == 0b10, credits == 2, Mux(moves == 0b01, none_left, one_left)))]
        m.d.comb += self.available.eq(available)
        return m
