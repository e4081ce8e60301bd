"""Durations as the command line writes them (``600ms``, ``1us``): shared by ``apbbf params`` and ``apbbf dedup``."""

from __future__ import annotations

__all__ = ["duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def duration(text: str) -> float:
    """Seconds in ``text``: a number with a unit (``600ms``, ``1s``, ``1us``, ``10ns``), or plain seconds.

    Raises
    ------
    ValueError
        If ``text`` is not a positive duration.
    """
    value = text.strip()
    for unit in sorted(_UNITS, key=len, reverse=True):
        if value.endswith(unit):
            number, scale = value[:-len(unit)], _UNITS[unit]
            break
    else:
        number, scale = value, 1.0
    try:
        seconds = float(number) * scale
    except ValueError:
        raise ValueError(f"{text!r} is not a duration (e.g. 1ms, 600ms, 2s, 500us)") from None
    if not seconds > 0:
        raise ValueError(f"a duration must be positive, not {text!r}")
    return seconds
