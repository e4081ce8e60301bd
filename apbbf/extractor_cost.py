"""What the key extractor costs: its LUT4s, flip-flops and post-route Fmax placed alone, beside an estimate of
what its CRC matrices must cost (``build/reports/key_extractor.json``, :func:`extractor_report`).

The estimate (:func:`matrix_estimate`) counts, for every constant GF(2) matrix the gateware applies
(:meth:`apbbf.hdl.packet.key_extractor.KeyExtractor.matrices`), an XOR tree of 4-input LUTs per row
(:func:`apbbf.hdl.packet.crc_maps.xor_lut4`): no sharing between rows, no muxes, no registers. Synthesis shares
sub-expressions and folds the muxes in, so the two numbers bracket the matrices' real share.

For the Fmax the extractor is placed alone behind registers (:class:`RegisteredKeyExtractor`), as the project's
other timing designs are (:mod:`apbbf.sim.designs`), with :func:`apbbf.flows.pnr.run_pnr_cached`.
"""

import json
from pathlib import Path

from .hdl.packet.crc_maps import xor_lut4
from .hdl.packet.key_extractor import KeyExtractor
from .model.packet import KeySpec
from .sim.designs import RegisteredKeyExtractor

__all__ = ["matrix_estimate", "extractor_report", "REPORT"]

#: Where :func:`extractor_report` writes by default.
REPORT = Path("build") / "reports" / "key_extractor.json"


def matrix_estimate(extractor: KeyExtractor) -> dict:
    """LUT4s of the extractor's CRC matrices as XOR trees (module documentation), per stage and in total.

    Raises
    ------
    TypeError
        If ``extractor`` is not a KeyExtractor.
    """
    if not isinstance(extractor, KeyExtractor):
        raise TypeError(f"extractor must be a KeyExtractor, not {extractor!r}")
    stages = {}
    for stage, rows, copies in extractor.matrices():
        stages[stage] = stages.get(stage, 0) + copies * xor_lut4(rows)
    return {"stages": stages, "total": sum(stages.values())}


def extractor_report(spec="l3l4", widths=(64, 512), *, path=REPORT, work="build/extractor", pnr: bool = True,
                     seeds=None, reuse: bool = True, freq_mhz: float = 250) -> dict:
    """Synthesize the key extractor for the ECP5-85F (the ULX3S's device) at each width, place and route it
    alone (with ``pnr``: nextpnr seeds ``seeds``, the median and spread), and write the cells, the Fmax and
    :func:`matrix_estimate` to ``path`` as JSON.

    Parameters
    ----------
    spec : KeySpec or str
        The key specification (:meth:`KeySpec.parse <apbbf.model.packet.KeySpec.parse>` text).
    widths : iterable of int
        Data widths (64, 128, 256, 512).
    path : str or os.PathLike
        The JSON file written (its directory is created).
    work : str or os.PathLike
        Work directory of the tools (one folder per width).
    pnr : bool
        Place and route (else synthesis and the estimate only).
    seeds : iterable of int or None
        nextpnr seeds (default :data:`apbbf.flows.pnr.SEEDS`).
    reuse : bool
        Reuse a kept place-and-route result of the same design.
    freq_mhz : float
        nextpnr's ``--freq`` (above what the design reaches, so that the placer works for speed).

    Returns
    -------
    dict
        What was written: ``spec`` and per width ``slots``, ``latency``, ``estimate`` (:func:`matrix_estimate`),
        ``cells`` (LUT4, flip-flops, ... of the design synthesized alone) and, with ``pnr``, ``pnr`` (Fmax median,
        spread, seeds, the critical path of the median seed).
    """
    from .flows.dedup_bench import synth_cost
    from .flows.pnr import SEEDS, run_pnr_cached, target_platform
    from amaranth import Value
    spec = KeySpec.parse(spec) if isinstance(spec, str) else spec
    if not isinstance(spec, KeySpec):
        raise TypeError(f"spec must be a KeySpec or its text, not {spec!r}")
    path, work = Path(path), Path(work)
    result = {"spec": str(spec), "device": None, "widths": {}}
    for width in widths:
        extractor = KeyExtractor(spec, width)
        entry = {"slots": extractor.slots, "latency": extractor.latency, "estimate": matrix_estimate(extractor)}
        platform = target_platform("ecp5")
        result["device"] = platform.device
        ports = [extractor.i.valid, Value.cast(extractor.i.payload), extractor.o.valid,
                 Value.cast(extractor.o.payload)]
        entry["cells"] = synth_cost(extractor, platform, work / f"synth-{width}", ports)
        if pnr:
            run = run_pnr_cached(RegisteredKeyExtractor(KeyExtractor(spec, width)), target_platform("ecp5"),
                                 work / f"pnr-{width}", freq_mhz=freq_mhz, reuse=reuse,
                                 seeds=SEEDS if seeds is None else seeds)
            entry["pnr"] = {k: run[k] for k in ("fmax_mhz", "fmax_min_mhz", "fmax_max_mhz", "spread_mhz", "seeds",
                                                "cells", "critical_path", "seconds")}
        result["widths"][str(width)] = entry
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2) + "\n")
    return result
