"""False positives of the golden model on structured key families, against the analytic prediction, with the
hash as the gateware builds it (H3 behind the keyed mixer) and with H3 alone (``scripts/structured_keys.py``).

Why: the fp analysis (:func:`apbbf.model.analysis.analyze_config`) assumes every key's bits are independent
and uniform. That holds on average over the hash's seed for any fixed pair of keys, but a filter runs with one
seed over a whole family of related keys, and a linear hash (H3) maps keys that form an affine pattern
(counters, one subnet, one varying field) to hashes that form the same pattern. The mixer
(:mod:`apbbf.model.hashing`) is there to break it; this module measures whether it does.

Method (as ``scripts/empirical.py``): each family is a sequence of distinct keys. The filter inserts the first
``(warmup + steady) * g`` of them, g at a time; just before each of the last ``steady`` shifts (the worst case,
which the prediction is) it is probed with the next ``probes`` keys of the sequence, fresh each time, never
inserted. That is repeated for several fixed seeds (independent hash functions over the same keys): the fp is
the total hits over the total probes, with a Wilson 95 % interval, and the per-seed rates show the spread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .model.analysis import analyze_config
from .model.config import Config, check_config, check_integer
from .model.filters import APBBF
from .model.hashing import HashSpec

__all__ = ["Family", "FAMILIES", "DEFAULT_SHAPE", "SEEDS", "ROW_SHAPE", "ROW_SEEDS", "STRATEGIES", "family_keys",
           "wilson", "measure",
           "measure_all", "pollute", "plot"]

#: The filter shape of the measurement (key width and seed are set per family and run): predicted worst-case
#: fp 1.24e-3, g = 916.
DEFAULT_SHAPE = Config(k=3, l=4, block_bits=64, block_hashes=4, segment_blocks=256)
#: The hash seeds of the runs (fixed, so the measurement repeats).
SEEDS = tuple(range(20261201, 20261209))
#: The row layout's shape: :data:`DEFAULT_SHAPE` in rows of 2048 bits, 4 blocks per segment in each of 64 rows
#: (predicted worst-case fp 1.53e-3, against 1.24e-3 were the segments independent).
ROW_SHAPE = replace(DEFAULT_SHAPE, row_bits=2048)
#: The row layout's hash seeds: twice as many (its fp varies more from one hash to another: 64 rows).
ROW_SEEDS = tuple(range(20261201, 20261217))
_M64 = (1 << 64) - 1


@dataclass(frozen=True)
class Family:
    """A family of structured keys: ``keys(n)`` gives its first n members, distinct, in order."""

    name: str
    key_width: int
    universe: int | None
    description: str

    def keys(self, n: int) -> np.ndarray:
        return family_keys(self.name, n)


def _words(values, width: int) -> np.ndarray:
    """Python integers as the (n, words) ``uint64`` array :meth:`HashSpec.as_array` takes for wide keys."""
    words = (width + 63) // 64
    return np.array([[(v >> (64 * w)) & _M64 for w in range(words)] for v in values],
                    dtype=np.uint64).reshape(len(values), words)


_SRC, _DST = 0xC0A8010A, 0x0A000001            # 192.168.1.10 -> 10.0.0.1
_FLOW = _SRC | _DST << 32 | 40000 << 64 | 443 << 80 | 6 << 96     # a TCP 5-tuple, 104 bits

FAMILIES = {f.name: f for f in [
    Family("counter", 64, None, "sequential integers 0, 1, 2, ... (64-bit keys)"),
    Family("strided", 64, None, "i * 4096 (page addresses; 64-bit keys)"),
    Family("ipv4-/16", 32, 1 << 16, "the addresses of 10.1.0.0/16 in order (32-bit keys)"),
    Family("5-tuple-port", 104, 1 << 16, "TCP 5-tuples 192.168.1.10:p -> 10.0.0.1:443, p = 0..65535 "
                                          "(104-bit keys: src, dst, sport, dport, proto)"),
    Family("tcp-seq", 136, None, "one TCP flow's sequence numbers (MSS 1448, one segment in five shorter) "
                                 "with its 5-tuple (136-bit keys)"),
    Family("top-bits", 64, 1 << 20, "keys that differ only in their 20 top bits (a counter there; 64-bit keys)"),
    Family("random", 64, None, "distinct random 64-bit keys"),
]}


def family_keys(name: str, n: int) -> np.ndarray:
    """The first ``n`` members of family ``name``: ``uint64`` of shape (n,), or (n, words) for keys wider
    than 64 bits.

    Raises
    ------
    ValueError
        If the family is unknown or has fewer than ``n`` members.
    TypeError
        If ``n`` is not an integer.
    """
    if name not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, not {name!r}")
    family = FAMILIES[name]
    check_integer("n", n, range(0, (family.universe or 1 << 40) + 1))
    i = np.arange(n, dtype=np.uint64)
    if name == "counter":
        return i
    if name == "strided":
        return i * np.uint64(4096)
    if name == "ipv4-/16":
        return np.uint64(0x0A010000) + i
    if name == "5-tuple-port":
        flow = _FLOW & ~(0xFFFF << 64)
        return _words([flow | p << 64 for p in range(n)], 104)
    if name == "tcp-seq":
        # Two generators, each drawn in order, so that the first n members do not depend on n.
        short = np.random.default_rng(1448).random(n) >= 0.8
        lengths = np.where(short, np.random.default_rng(1449).integers(1, 1448, n), 1448)
        seqs = (0x1234_5678 + np.concatenate([[0], np.cumsum(lengths[:-1])])) % (1 << 32)
        return _words([_FLOW | int(s) << 104 for s in seqs], 136)
    if name == "top-bits":
        return np.uint64(0x0000_0ABC_DEF0_1234) | i << np.uint64(44)
    keys = np.random.default_rng(64).integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False)
    if len(np.unique(keys)) != n:                   # probability about n**2 / 2**65
        raise ValueError(f"the first {n} random keys repeat one: use fewer")
    return keys


def wilson(hits: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95 % for the default z)."""
    if trials <= 0:
        return 0.0, 1.0
    p = hits / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return (0.0 if hits == 0 else max(0.0, centre - half)), (1.0 if hits == trials else min(1.0, centre + half))


class _H3Only(APBBF):
    """The golden model with the H3-only hash (:class:`HashSpec` with ``mixing=False``), for comparison."""

    def __init__(self, config: Config):
        super().__init__(config)
        self._hash = HashSpec(config, mixing=False)          # the filter reads its hash only from here


def measure(name: str, shape: Config = DEFAULT_SHAPE, *, mixing: bool = True, seeds=SEEDS, probes: int = 8000,
            warmup: int | None = None, steady: int = 6) -> dict:
    """The worst-case fp of family ``name`` in a filter of ``shape``, against the prediction.

    Parameters
    ----------
    name : str
        A key of :data:`FAMILIES`.
    shape : Config
        The filter; its ``key_width`` and ``seed`` are replaced by the family's and each run's.
    mixing : bool
        The hash as built (True) or H3 alone (False).
    seeds : iterable of int
        One run per seed.
    probes : int
        Absent keys probed before each of the ``steady`` shifts (fewer if the family is too small).
    warmup : int
        Generations inserted before the first probe (default k + l: every segment holds a generation).
    steady : int
        Generations probed.

    Returns
    -------
    dict
        ``family``, ``mixing``, ``config`` (the shape's fields), ``predicted``, ``measured``, ``ratio``,
        ``interval`` (Wilson 95 %), ``seed_interval`` (95 % from the spread of the per-seed rates, which also
        counts how the filter's state varies from one hash to another), ``hits``, ``probes`` (total),
        ``per_seed`` (rates), ``ok`` (within ±10 % of the prediction, or the prediction inside the interval).

    Raises
    ------
    ValueError, TypeError
        If the family is unknown or a count is out of range.
    """
    check_config(shape, "shape")
    if name not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, not {name!r}")
    family = FAMILIES[name]
    check_integer("probes", probes, range(1, 1 << 30))
    check_integer("steady", steady, range(1, 1000))
    warmup = shape.k + shape.l if warmup is None else check_integer("warmup", warmup, range(0, 1000))
    seeds = [check_integer("seed", seed) for seed in seeds]
    g = shape.generation
    inserted = (warmup + steady) * g
    if family.universe is not None:
        if family.universe <= inserted:
            raise ValueError(f"family {name} has {family.universe} keys, fewer than the {inserted} inserted")
        probes = min(probes, (family.universe - inserted) // steady)
    keys = family.keys(inserted + steady * probes)
    filter_class = APBBF if mixing else _H3Only
    hits, per_seed = 0, []
    predicted = None
    for seed in seeds:
        config = replace(shape, key_width=family.key_width, seed=seed)
        predicted = analyze_config(config)["fp"]
        model = filter_class(config)
        model.insert_many(keys[:warmup * g])
        seed_hits = 0
        for t in range(steady):
            model.insert_many(keys[(warmup + t) * g:(warmup + t + 1) * g])
            start = inserted + t * probes
            seed_hits += int(np.sum(model.query_many(keys[start:start + probes])))
        hits += seed_hits
        per_seed.append(seed_hits / (steady * probes))
    total = steady * probes * len(seeds)
    measured = hits / total
    low, high = wilson(hits, total)
    ratio = measured / predicted
    spread = 1.96 * float(np.std(per_seed, ddof=1)) / math.sqrt(len(per_seed)) if len(per_seed) > 1 else math.nan
    return {"family": name, "description": family.description, "key_width": family.key_width,
            "mixing": mixing, "config": {"k": shape.k, "l": shape.l, "block_bits": shape.block_bits,
                                         "block_hashes": shape.block_hashes, "segment_blocks": shape.segment_blocks,
                                         "row_bits": shape.row_bits},
            "seed_interval": [measured - spread, measured + spread],
            "generation": g, "predicted": predicted, "measured": measured, "ratio": ratio,
            "interval": [low, high], "hits": hits, "probes": total, "probes_per_generation": probes,
            "seeds": seeds, "per_seed": per_seed,
            "ok": abs(ratio - 1) <= 0.1 or low <= predicted <= high}


def measure_all(shape: Config = DEFAULT_SHAPE, *, families=None, seeds=SEEDS, probes: int = 8000,
                progress=None, mixings=(False, True)) -> list[dict]:
    """:func:`measure` for every family (default all of :data:`FAMILIES`), H3 alone and with the mixer (or the
    ``mixings`` given)."""
    results = []
    for name in families or FAMILIES:
        for mixing in mixings:
            result = measure(name, shape, mixing=mixing, seeds=seeds, probes=probes)
            results.append(result)
            if progress:
                progress(result)
    return results


#: How a pollution adversary who knows the seed picks each insert among its candidates (:func:`pollute`).
STRATEGIES = {
    "spread": "the candidate that sets the most new bits in the segments it is written to",
    "concentrate": "the candidate whose new bits land in the fullest blocks (new bits weighted by 1 + the "
                   "bits already set in their block)",
}


def pollute(shape: Config = DEFAULT_SHAPE, *, strategy: str = "concentrate", seed: int = SEEDS[0],
            believed_seed: int | None = None, candidates: int = 64, probes: int = 20000, steady: int = 4,
            rng_seed: int = 7) -> dict:
    """The worst-case fp after an adversary chose every insert, against the prediction.

    The adversary fills the filter for ``k + l + steady`` generations. It believes the hash seed is
    ``believed_seed`` (default: the filter's own ``seed``, i.e. it knows it) and keeps the filter it believes
    in (which, knowing the seed, is the real one: it chose every key). For each insert it hashes ``candidates``
    random keys as that filter would and inserts the best by ``strategy`` (:data:`STRATEGIES`). Just before
    each of the last ``steady`` shifts the real filter is probed with ``probes`` fresh random keys.

    Returns
    -------
    dict
        ``strategy``, ``candidates``, ``seed_known``, ``predicted``, ``measured``, ``ratio``, ``interval``
        (Wilson 95 %), ``probes`` (total), ``seed``, ``believed_seed``, ``rng_seed``.

    Raises
    ------
    ValueError, TypeError
        If the strategy is unknown or a count is out of range.
    """
    check_config(shape, "shape")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    check_integer("candidates", candidates, range(1, 1 << 16))
    check_integer("probes", probes, range(1, 1 << 30))
    check_integer("steady", steady, range(1, 1000))
    config = replace(shape, key_width=64, seed=check_integer("seed", seed))
    believed = config.seed if believed_seed is None else check_integer("believed_seed", believed_seed)
    model = APBBF(config)
    own = model if believed == config.seed else APBBF(replace(config, seed=believed))
    spec = own.hash
    k, l, g, B, P = config.k, config.l, config.generation, config.block_bits, config.physical_segments
    rng = np.random.default_rng(rng_seed)
    hits = total = 0
    for generation in range(k + l + steady):
        if generation >= k + l:
            absent = rng.integers(0, 1 << 63, probes, dtype=np.int64).astype(np.uint64) * np.uint64(2)
            hits += int(np.sum(model.query_many(absent)))
            total += probes
        for _ in range(g):
            keys = rng.integers(0, 1 << 63, candidates, dtype=np.int64).astype(np.uint64) * np.uint64(2) + 1
            folded = spec.fold_many(keys)
            shifting = own.n % g == 0
            score = np.zeros(candidates)
            for i in range(k):
                logical = i - 1 if shifting else i
                position = (own.base + logical) % P
                bits = (np.zeros(config.segment_bits, dtype=bool) if logical < 0
                        else own.segment(logical))
                blocks, offsets = spec.split_many(spec.segment_hash_many(position, folded))
                new = ~bits[blocks[:, None] * B + offsets]                  # (candidates, b)
                if strategy == "spread":
                    score += new.sum(axis=1)
                else:
                    fill = bits.reshape(-1, B)[blocks].sum(axis=1)
                    score += new.sum(axis=1) * (1 + fill)
            chosen = int(keys[int(np.argmax(score))])
            model.insert(chosen)
            if own is not model:
                own.insert(chosen)
    measured = hits / total
    predicted = analyze_config(config)["fp"]
    low, high = wilson(hits, total)
    return {"strategy": strategy, "description": STRATEGIES[strategy], "candidates": candidates,
            "seed_known": own is model, "believed_seed": believed, "predicted": predicted, "measured": measured,
            "ratio": measured / predicted, "interval": [low, high], "probes": total, "seed": config.seed,
            "rng_seed": rng_seed}


def plot(results, path) -> None:
    """Measured / predicted fp per family, H3 alone and with the mixer, with the 95 % intervals (matplotlib,
    written to ``path``)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(dict.fromkeys(r["family"] for r in results))
    fig, ax = plt.subplots(figsize=(10, 4.8))
    width, top = 0.38, 2.5
    for offset, mixing, label in ((-0.5, False, "H3 only"), (0.5, True, "mixer + H3 (the gateware)")):
        rows = [next(r for r in results if r["family"] == n and r["mixing"] == mixing) for n in names]
        xs = [i + offset * width for i in range(len(names))]
        ratios = [r["ratio"] for r in rows]
        errors = [[r["ratio"] - r["interval"][0] / r["predicted"] for r in rows],
                  [r["interval"][1] / r["predicted"] - r["ratio"] for r in rows]]
        ax.bar(xs, ratios, width, yerr=errors, capsize=3, label=label)
        for x, r in zip(xs, rows):                     # each seed's rate; those off the scale at its top
            seeds = [v / r["predicted"] for v in r["per_seed"]]
            ax.scatter([x] * len(seeds), [min(v, top) for v in seeds], s=9, color="black", zorder=3)
            for v in sorted({round(v, 1) for v in seeds if v > top}):
                ax.annotate(f"{v:g}×", (x, top), textcoords="offset points", xytext=(0, -12), ha="center",
                            fontsize=7)
    ax.set_ylim(0, top * 1.02)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhspan(0.9, 1.1, color="green", alpha=0.12, label="±10 %")
    ax.set_xticks(range(len(names)), names, rotation=15)
    ax.set_ylabel("measured fp / predicted fp (dots: per seed)")
    predicted = results[0]["predicted"]
    c = results[0]["config"]
    ax.set_title(f"Structured keys, worst case before a shift: k={c['k']} l={c['l']} B={c['block_bits']} "
                 f"b={c['block_hashes']} {c['segment_blocks']} blocks, predicted fp {predicted:.3g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
