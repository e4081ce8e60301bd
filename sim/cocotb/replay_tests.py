"""cocotb bench that replays a capture through the exported packet de-duplicator (``apbbf_dedup_axis``) and checks
it against what ``apbbf dedup`` did with the same capture.

``apbbf dedup`` runs the model on a capture and prints the ``apbbf export --dedup`` command that builds the same
design; this bench is the other half of that promise. The frames come in the order of the capture, each with its
tick in ``tuser`` of its first beat and its error flag on its last (the :class:`~.dedup_tests.TB` of the
de-duplicator's benches: cocotbext-axi source and sink, idle gaps and backpressure), and random times in
``tuser`` of the later beats and random error bits on the earlier ones, which the design must ignore
(:class:`ReplayTB`). What comes out must be exactly what ``apbbf dedup`` forwarded, frame for frame and in order:
the bytes, the ``tuser`` flags (duplicate, unchecked, errored) and, at the end, the five counters.

The replay, the frames in and what must come out, is a JSON file named by :data:`REPLAY_ENV`, written by
:func:`write_replay`; the design's parameters come in :data:`~.dedup_tests.PARAMS_ENV`. Both are set by
:func:`apbbf.sim.cocotb.runner.run_dedup_replay`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
from cocotbext.axi import AxiStreamFrame

from ..dedup import Mismatch
from .dedup_tests import COUNTERS, TB, _seed
from .tests import _pause

__all__ = ["REPLAY_ENV", "write_replay", "read_replay", "ReplayTB", "compare"]

REPLAY_ENV = "APBBF_DEDUP_REPLAY"


def write_replay(path, frames, forwarded, counters: dict) -> Path:
    """Write a replay for :data:`REPLAY_ENV`.

    Parameters
    ----------
    path : str or os.PathLike
    frames : iterable of (bytes, int, bool)
        The frames in, in order: bytes (no FCS unless the design has one), the tick for ``tuser`` (any
        non-negative integer: the bench sends it modulo ``2**time_width``), errored.
    forwarded : iterable of (bytes, (int, int, int))
        What must come out, in order: bytes and ``tuser`` flags ``(duplicate, unchecked, errored)``.
    counters : dict
        ``frames``, ``duplicates``, ``dropped``, ``unchecked`` and ``errored`` at the end.

    Returns
    -------
    pathlib.Path
    """
    if set(counters) != set(COUNTERS):
        raise ValueError(f"counters must have the keys {COUNTERS}, not {sorted(counters)}")
    path = Path(path)
    path.write_text(json.dumps({
        "frames": [[bytes(frame).hex(), int(tick), bool(errored)] for frame, tick, errored in frames],
        "forwarded": [[bytes(frame).hex(), [int(flag) for flag in flags]] for frame, flags in forwarded],
        "counters": {name: int(counters[name]) for name in COUNTERS},
    }))
    return path


def read_replay(path):
    """The replay in ``path``: (frames, forwarded, counters) as :func:`write_replay` takes them."""
    replay = json.loads(Path(path).read_text())
    frames = [(bytes.fromhex(frame), tick, errored) for frame, tick, errored in replay["frames"]]
    forwarded = [(bytes.fromhex(frame), tuple(flags)) for frame, flags in replay["forwarded"]]
    return frames, forwarded, replay["counters"]


class ReplayTB(TB):
    """:class:`~.dedup_tests.TB` with noise where the design must not look: a random time in ``tuser`` of every beat
    after the first, a random error bit on every beat before the last (the documented contract: the time is read
    on the first beat, the error on the last; ``apbbf dedup`` never sees either)."""

    def frame(self, data: bytes, time: int, errored: bool) -> AxiStreamFrame:
        lanes = self.params.data_width // 8
        n = max(1, len(data))
        count = (n + lanes - 1) // lanes
        mask = (1 << self.params.config.time_width) - 1
        user = []
        for beat in range(count):
            stamp = time if beat == 0 else self.rng.getrandbits(self.params.config.time_width)
            error = errored if beat == count - 1 else self.rng.random() < 0.5
            user += [(stamp & mask) << 1 | int(error)] * min(lanes, n - beat * lanes)
        return AxiStreamFrame(data, tuser=user)


def _describe(frame: bytes, flags) -> str:
    return f"{len(frame)} bytes {frame[:16].hex()}..., flags (duplicate, unchecked, errored) {tuple(flags)}"


def compare(out, forwarded, counters: dict, expected_counters: dict) -> None:
    """Raise :class:`~apbbf.sim.dedup.Mismatch` at the first frame (or counter) where the design's output ``out``
    differs from ``forwarded``."""
    for index, (got, want) in enumerate(zip(out, forwarded)):
        if got[0] != want[0] or tuple(got[1]) != tuple(want[1]):
            raise Mismatch(f"forwarded frame {index}: the design gave {_describe(*got)}, apbbf dedup "
                           f"{_describe(*want)}")
    if len(out) != len(forwarded):
        raise Mismatch(f"the design forwarded {len(out)} frames, apbbf dedup {len(forwarded)} (the first "
                       f"{min(len(out), len(forwarded))} agree)")
    if counters != expected_counters:
        raise Mismatch(f"counters: the design's {counters}, apbbf dedup's {expected_counters}")


@cocotb.test()
@cocotb.parametrize((("idle", "backpressure"), [(None, None), (_pause(0.3, 3), _pause(0.4, 3))]))
async def replay(dut, idle, backpressure):
    """The capture's frames with their ticks: the frames out, their flags and the counters are apbbf dedup's."""
    path = os.environ.get(REPLAY_ENV)
    if not path:
        raise ValueError(f"{REPLAY_ENV} is not set: run the bench through "
                         "apbbf.sim.cocotb.runner.run_dedup_replay")
    frames, forwarded, expected_counters = read_replay(path)
    tb = ReplayTB(dut, _seed("replay"))
    tb.set_inserters(idle, backpressure)
    await tb.reset()
    tb.send(frames)
    # 150 idle cycles outlast any frame's wait for its answer (the extractor's latency, 31 cycles for l3l4 at 64
    # bits, 59 for a five-range recipe, and the core's pipeline); stopping early fails the comparison, never passes
    await tb.drain(quiet=150)
    counters = {name: int(getattr(dut, name).value) for name in COUNTERS}
    try:
        compare(tb.out, forwarded, counters, expected_counters)
    except Mismatch as error:
        waves = os.environ.get("APBBF_WAVES")
        raise Mismatch(f"{error} (replay {path}; bench seed {tb.seed}"
                       + (f"; waveform {waves})" if waves and Path(waves).exists() else ")")) from None
