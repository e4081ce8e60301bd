"""The golden model as the simulation benches score against it: one interface for a window bounded by count
(:class:`apbbf.model.APBBF`) and by time (:class:`apbbf.model.timewindow.TimedAPBBF`), with the core's answer to
the reserved op 3 (not executed: hit 0, nothing changes but the expiry a query would observe too).

A command is ``(op, key)``, or ``(op, key, time)`` for a Config with a span.
"""

from __future__ import annotations

import numpy as np

from ..model.config import Config, check_config
from ..model.filters import APBBF, Op
from ..model.timewindow import TimedAPBBF

__all__ = ["RESERVED_OP", "Reference", "describe"]

#: The op value the command layout can carry but the filter does not define.
RESERVED_OP = 3


def describe(command) -> str:
    """``QUERY key=0x.. [t=..]`` for a failure message."""
    op, key, *time = command
    name = Op(op).name if op in tuple(Op) else f"op {int(op)} (reserved)"
    return f"{name} key={key:#x}" + (f" t={time[0]}" if time else "")


class Reference:
    """The golden model of a Config, command by command or in batches.

    Parameters
    ----------
    config : Config

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    """

    def __init__(self, config: Config):
        self.config = check_config(config)
        self.reset()

    def reset(self) -> None:
        """Start again empty (the core was reset)."""
        self.model = TimedAPBBF(self.config) if self.config.timed else APBBF(self.config)

    def _split(self, commands):
        commands = list(commands)
        ops = np.array([int(getattr(c[0], "value", c[0])) for c in commands], dtype=np.int64)
        keys = [c[1] for c in commands]
        if self.config.timed:
            if any(len(c) != 3 for c in commands):
                raise ValueError("a Config with a span needs (op, key, time) commands")
            return ops, keys, [c[2] for c in commands]
        if any(len(c) != 2 for c in commands):
            raise ValueError("a Config without a span takes (op, key) commands")
        return ops, keys, None

    def run(self, commands) -> tuple[np.ndarray, np.ndarray]:
        """Answers and access counts of ``commands``, in order, updating the model (batch path)."""
        return self.batch(*self._split(commands))

    def batch(self, ops, keys, times=None) -> tuple[np.ndarray, np.ndarray]:
        """Answers and access counts of commands given as arrays, in order, updating the model (the model's
        batch path, as :meth:`run` without the tuples).

        Parameters
        ----------
        ops : array_like of int
            0..3 (3 the reserved op).
        keys : numpy.ndarray of uint64, or sequence of int
        times : array_like of int, optional
            Required with a span, refused without.

        Raises
        ------
        ValueError
            If ``times`` is given without a span or missing with one.
        """
        if self.config.timed and times is None:
            raise ValueError("times are required for a Config with a span")
        if not self.config.timed and times is not None:
            raise ValueError("times must be None for a Config without a span")
        ops = np.asarray(ops, dtype=np.int64)
        reserved = ops == RESERVED_OP
        model_ops = np.where(reserved, int(Op.QUERY), ops)
        if times is None:
            hits, accesses = self.model.run(model_ops, keys)
        else:
            hits, accesses = self.model.run(model_ops, keys, times)
        hits[reserved] = False
        accesses[reserved] = 0
        return hits, accesses

    def command(self, op, key, time=None) -> bool:
        """The answer to one command, updating the model."""
        return bool(self.run([(op, key) if time is None else (op, key, time)])[0][0])

    @property
    def counters(self) -> dict:
        """The core's counters as the model counts them (modulo 2**32)."""
        m = self.model
        counters = {"inserts": m.n, "shifts": m.shifts}
        if self.config.timed:
            counters.update(overflows=m.overflows, expired=m.expired)
        return {name: value & 0xFFFFFFFF for name, value in counters.items()}
