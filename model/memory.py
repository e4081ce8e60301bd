"""What a row-layout filter (:attr:`Config.row_bits`) asks of its memory: size, accesses, bursts and row
activations per command, the background clearing of a retired segment, and the rates at a given command rate.

The row layout (:mod:`apbbf.model.hashing`, step 5) puts every block of a key, in every physical segment, in one
memory row of ``row_bits`` bits (:meth:`Config.memory_block`), so each command opens one row (one activation) and
moves whole blocks there:

- a QUERY reads the key's block in each live segment (``k + l`` in the count window; in the time window the live
  segments, ``k + l`` at the planned rate and up to ``physical_segments - 1`` with the pool full);
- an INSERT reads the key's block in the k newest segments and writes them back with its bits merged (a write
  replaces a whole B-bit word: :class:`apbbf.hdl.core.MemoryAPBBF` reads, merges, writes);
- a TEST_AND_INSERT reads as a QUERY does (the k targets among the live segments) and writes k blocks, in the same
  activation.

A block of B bits costs :attr:`Config.bursts_per_block` bursts. On a shift the retired segment is cleared in the
background, row by row: in each of the ``rows`` rows its ``row_blocks`` blocks are written (``segment_blocks``
block writes, ``rows`` activations), and the clearing must be done within one shift interval (by the next shift).
Reset and a time window's restart clear every word of the memory (:attr:`Config.memory_blocks` writes).
"""

from __future__ import annotations

import math

from .config import Config, check_config

__all__ = ["OPS", "memory_bytes", "command_accesses", "clearing_accesses", "shifts_per_second", "access_rate",
           "memory_facts"]

#: Commands :func:`command_accesses` counts.
OPS = ("query", "insert", "test_and_insert")


def _row_config(config) -> Config:
    check_config(config)
    if not config.row_layout:
        raise ValueError("config has no row layout (row_bits=0): its segments are on-chip memories, not rows")
    return config


def memory_bytes(config: Config) -> int:
    """Bytes of memory the filter occupies: ``rows · row_bits / 8`` (each filter row is one memory row, its unused
    tail included).

    Parameters
    ----------
    config : Config
        With a row layout.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no row layout.
    """
    c = _row_config(config)
    return c.rows * c.row_bits // 8


def _live(config: Config, live) -> int:
    if live is None:
        return config.segments
    if isinstance(live, bool) or not isinstance(live, int):
        raise TypeError(f"live must be an integer, not {live!r}")
    top = config.physical_segments - 1 if config.timed else config.segments
    if not config.k <= live <= top:
        raise ValueError(f"live must be from k = {config.k} to {top} segments, not {live}")
    return live


def command_accesses(config: Config, op: str = "test_and_insert", *, live: int | None = None) -> dict:
    """Block accesses, bursts and row activations of one command.

    Parameters
    ----------
    config : Config
        With a row layout.
    op : {"query", "insert", "test_and_insert"}
        The command.
    live : int, optional
        Live segments a query reads, k .. k + l (count window) or k .. ``physical_segments - 1`` (time window);
        default ``k + l``.

    Returns
    -------
    dict
        ``reads`` (blocks read: ``live`` for a query or test-and-insert, k for an insert), ``writes`` (k for an
        insert or test-and-insert, else 0), ``accesses`` (their sum), ``bursts`` (``accesses ·
        bursts_per_block``), ``activations`` (1: every block of the command is in one row).

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``live`` not an integer.
    ValueError
        If it has no row layout, ``op`` is unknown, or ``live`` is out of its range.
    """
    c = _row_config(config)
    if op not in OPS:
        raise ValueError(f"op must be one of {', '.join(OPS)}, not {op!r}")
    live = _live(c, live)
    reads = live if op != "insert" else c.k
    writes = c.k if op != "query" else 0
    accesses = reads + writes
    return {"reads": reads, "writes": writes, "accesses": accesses, "bursts": accesses * c.bursts_per_block,
            "activations": 1}


def clearing_accesses(config: Config) -> dict:
    """The background clearing of one retired segment, per shift: row by row, ``row_blocks`` block writes in
    each of the ``rows`` rows.

    Parameters
    ----------
    config : Config
        With a row layout.

    Returns
    -------
    dict
        ``writes`` (``rows · row_blocks = segment_blocks``), ``bursts`` (``writes · bursts_per_block``),
        ``activations`` (``rows``).

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no row layout.
    """
    c = _row_config(config)
    writes = c.rows * c.row_blocks
    return {"writes": writes, "bursts": writes * c.bursts_per_block, "activations": c.rows}


def shifts_per_second(config: Config, rate: float, tick: float | None = None) -> float:
    """Shifts per second with commands inserting at ``rate`` keys per second: one per generation of g inserts
    (``rate / g``), and in the time window at least one per shift interval (``1 / (shift_interval · tick)``).

    Parameters
    ----------
    config : Config
    rate : float
        Inserts per second, > 0.
    tick : float, optional
        Seconds per tick, > 0; needed with a span.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``config`` is not a Config or a number is not a number.
    ValueError
        If ``rate`` or ``tick`` is not positive, or a time window is given no ``tick``.
    """
    check_config(config)
    rate = _positive("rate", rate)
    by_count = rate / config.generation
    if not config.timed:
        return by_count
    if tick is None:
        raise ValueError("a time window's shifts by time need tick (seconds per tick)")
    return max(by_count, 1.0 / (config.shift_interval * _positive("tick", tick)))


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, not {value}")
    return float(value)


def access_rate(config: Config, rate: float, *, op: str = "test_and_insert", tick: float | None = None,
                live: int | None = None) -> dict:
    """Memory traffic per second with ``rate`` commands ``op`` per second (each an insert unless ``op`` is
    "query"), the background clearing included.

    Parameters
    ----------
    config : Config
        With a row layout.
    rate : float
        Commands per second, > 0.
    op : {"query", "insert", "test_and_insert"}
    tick : float, optional
        Seconds per tick; needed with a span (the shifts by time).
    live : int, optional
        As :func:`command_accesses`.

    Returns
    -------
    dict
        ``commands``, ``shifts`` (:func:`shifts_per_second`; 0 for queries alone), ``accesses``
        (``commands · command accesses + shifts · segment_blocks``), ``bursts`` and ``activations`` (likewise),
        and ``clearing_accesses`` (the part of ``accesses`` that clears), all per second.

    Raises
    ------
    TypeError, ValueError
        As :func:`command_accesses` and :func:`shifts_per_second`.
    """
    c = _row_config(config)
    per = command_accesses(c, op, live=live)
    rate = _positive("rate", rate)
    shifts = 0.0 if op == "query" else shifts_per_second(c, rate, tick)
    clear = clearing_accesses(c)
    return {"commands": rate, "shifts": shifts,
            "accesses": rate * per["accesses"] + shifts * clear["writes"],
            "bursts": rate * per["bursts"] + shifts * clear["bursts"],
            "activations": rate * per["activations"] + shifts * clear["activations"],
            "clearing_accesses": shifts * clear["writes"]}


def memory_facts(config: Config, rate: float | None = None, *, tick: float | None = None) -> dict:
    """Everything above for one Config, JSON-ready: ``bytes``, ``rows``, ``row_bits``, ``row_blocks``,
    ``bursts_per_block``, ``query``, ``insert`` and ``test_and_insert`` (:func:`command_accesses` with ``k + l``
    live segments), ``clearing_per_shift`` (:func:`clearing_accesses`), ``clearing_at_reset`` (block writes that
    clear the whole memory, :attr:`Config.memory_blocks`), and, with a ``rate`` (commands per
    second; default for a time window with ``tick``: its planned rate, g per shift interval), ``per_second``
    (:func:`access_rate` of TEST_AND_INSERT at that rate) and ``rate``.

    Raises
    ------
    TypeError, ValueError
        As :func:`command_accesses` and :func:`access_rate`.
    """
    c = _row_config(config)
    facts = {"bytes": memory_bytes(c), "rows": c.rows, "row_bits": c.row_bits, "row_blocks": c.row_blocks,
             "bursts_per_block": c.bursts_per_block,
             **{op: command_accesses(c, op) for op in OPS}, "clearing_per_shift": clearing_accesses(c),
             "clearing_at_reset": c.memory_blocks}
    if rate is None and c.timed and tick is not None:
        rate = c.generation / (c.shift_interval * _positive("tick", tick))
    if rate is not None:
        facts["rate"] = _positive("rate", rate)
        facts["per_second"] = access_rate(c, rate, tick=tick)
    return facts
