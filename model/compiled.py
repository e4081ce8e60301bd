"""Compiled inner loops (numba), for the per-record and per-byte loops of ``apbbf dedup`` that numpy cannot do
without a gather per byte: the walk from pcap record to record and CRC-64 over whole messages.

Each kernel has a numpy (or pure Python) counterpart that gives the same answer: the caller keeps it and uses it
when :func:`kernels` returns None. numba is optional (the ``fast`` extra; ``requirements.txt`` installs it). It is
imported only once a process has handed these loops enough work to repay its import and the loading of the
compiled kernels (about half a second, :data:`WORTH_BYTES`), so a small capture never pays for it. The kernels
(:mod:`apbbf.model._kernels`) are cached on disk (numba's ``cache=True``: beside that file, or in the user's cache
directory when that is not writable): only the first run after an installation compiles them.

``APBBF_KERNELS`` chooses: ``auto`` (default, as above), ``numba`` (from the first call: the tests of both paths),
``numpy`` (never).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["kernels", "WORTH_BYTES", "mode"]

#: Bytes of work (capture bytes walked, message bytes hashed) after which ``auto`` imports numba.
WORTH_BYTES = 24 << 20

_state = {"seen": 0, "module": None, "failed": False}


def mode() -> str:
    """``APBBF_KERNELS``: ``auto``, ``numba`` or ``numpy``.

    Raises
    ------
    ValueError
        If the variable holds anything else.
    """
    value = os.environ.get("APBBF_KERNELS", "auto").strip().lower() or "auto"
    if value not in ("auto", "numba", "numpy"):
        raise ValueError(f"APBBF_KERNELS must be auto, numba or numpy, not {value!r}")
    return value


def kernels(work: int = 0):
    """The compiled kernels (an object with ``walk_pcap``, ``message_keys`` and ``timed_test_and_insert``), or None: numba is missing, the
    mode is ``numpy``, or (``auto``) the work handed over so far, ``work`` bytes included, is below
    :data:`WORTH_BYTES`.

    Raises
    ------
    ImportError
        With ``APBBF_KERNELS=numba`` and numba missing.
    """
    chosen = mode()
    if chosen == "numpy":
        return None
    if _state["module"] is not None:
        return _state["module"]
    _state["seen"] += work
    if chosen == "auto" and (_state["failed"] or _state["seen"] < WORTH_BYTES):
        return None
    try:
        _state["module"] = _build()
    except ImportError:
        _state["failed"] = True
        if chosen == "numba":
            raise
        return None
    return _state["module"]


def _build():
    from . import _kernels
    return _kernels
