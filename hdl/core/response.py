"""The response queue of a pipelined scan: responses wait here for ``rsp.ready``, and a command is only
accepted when its response is sure to find room."""

from amaranth import Module, Mux, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import check_integer
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
            "i": In(stream.Signature(response_layout())),
            "o": Out(stream.Signature(response_layout())),
        })

    @property
    def depth(self) -> int:
        return self._depth

    def elaborate(self, platform):
        # ``available`` is a register (whether the next credit count is above zero), not a compare of the
        # count, and ``reserve`` only picks between the next counts computed without it: ``reserve`` comes from
        # the scan's decision to let a command go, the one loop that cannot be pipelined.
        m = Module()
        m.submodules.fifo = queue = fifo.SyncFIFOBuffered(width=response_layout().size, depth=self._depth)
        wiring.connect(m, wiring.flipped(self.i), queue.w_stream)
        wiring.connect(m, queue.r_stream, wiring.flipped(self.o))
        credits = Signal(range(self._depth + 1), init=self._depth)
        available = Signal(init=1)
        returned = credits + (self.o.valid & self.o.ready)
        taken = Signal.like(credits)
        m.d.comb += taken.eq(returned - 1)
        m.d.sync += [credits.eq(Mux(self.reserve, taken, returned)),
                     available.eq(Mux(self.reserve, taken != 0, returned != 0))]
        m.d.comb += self.available.eq(available)
        return m
