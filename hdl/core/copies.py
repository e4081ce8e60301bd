"""Copies of a register, for a value read by many carry chains or LUTs spread over the device.

nextpnr places a flip-flop by the centre of its loads; a register that feeds logic next to block RAM columns across
the device then has one long net to most of them, and that net can be the critical path. Copies, each feeding one
group of the loads, shorten it. Yosys merges flip-flops that have the same input, enable and initial value
(``opt_merge``), and Amaranth gives no way to mark one as kept, so the copies differ: even copies store the value,
odd ones its complement (undone where it is read: the first LUT or carry cell there absorbs the inversion), and the
two pairs start from 0 and from all ones. So up to :data:`MAX_COPIES` copies are distinct registers.
"""

from amaranth import Signal, Value

__all__ = ["MAX_COPIES", "register_copies"]

#: Distinct copies :func:`register_copies` can make (stored value or complement, initial value 0 or all ones).
MAX_COPIES = 4


def register_copies(m, value, copies: int, *, name: str, enable=None, reset_less: bool = True,
                    undo: bool = True) -> list:
    """Register ``value`` (when ``enable``, if given) in ``copies`` distinct flip-flop registers of the ``sync``
    domain; returns what each holds, as the value itself (the complement of an odd copy undone), or with
    ``undo=False`` as stored (odd copies the complement: for a reader that uses it as such, such as a carry chain,
    which would otherwise take a LUT in front of it).

    The initial value of every copy is a don't-care to the caller: a copy starts from 0 or from all ones.

    Raises
    ------
    ValueError
        If ``copies`` is not 1 to :data:`MAX_COPIES`.
    """
    if not isinstance(copies, int) or not 1 <= copies <= MAX_COPIES:
        raise ValueError(f"copies must be an integer 1..{MAX_COPIES}, not {copies!r}")
    value = Value.cast(value)
    width = len(value)
    ones = (1 << width) - 1
    held = []
    for copy in range(copies):
        inverted, init = ones * (copy & 1), ones * (copy >> 1)
        registered = Signal(width, name=f"{name}_copy{copy}" if copies > 1 else name, init=init,
                            reset_less=reset_less)
        update = registered.eq(value ^ inverted if inverted else value)
        if enable is None:
            m.d.sync += update
        else:
            with m.If(enable):
                m.d.sync += update
        held.append(registered ^ inverted if inverted and undo else registered)
    return held
