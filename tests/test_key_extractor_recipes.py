# amaranth: UnusedElaboratable=no
"""The streaming key extractor (hdl/packet/key_extractor.py) on recipes of several ranges: random ones drawn from the
model's grammar and the directed ones users ask for, every key, length and class equal to the model's, in order,
within the stated latency (the bench and the frames: ``tests/extractor_frames.py``). Kept apart from
``tests/test_key_extractor.py`` so that the two halves run on two pytest-xdist workers."""

import random

import pytest

from apbbf.model.packet import KeySpec

from .extractor_frames import DIRECTED, frames_edge, frames_mixed, random_spec, run


@pytest.mark.parametrize("width,trial", [
    pytest.param(width, trial, id=f"W{width}" + (f"-{trial}" if trial else ""),
                 marks=[pytest.mark.slow] if width in (128, 256) or trial else [])
    for width in (64, 128, 256, 512) for trial in range(2 if width == 512 else 1)])
def test_random_recipes(width, trial):
    """Random recipes (seeded) against frame_key, FCS on and off, with idle gaps (a jumbo frame at 256 and 512
    bits; test_random_recipes_long has more). ``make test`` runs a recipe at 64 bits (without FCS, with gaps) and
    one at 512 (with FCS, back to back), ``make test-slow`` every width and a second recipe at 512 bits;
    test_directed_recipes runs the brokers' recipes at 64 bits in ``make test``, every recipe at both widths in
    ``make test-slow``."""
    seed = 1000 * width + trial
    rng = random.Random(seed)
    spec = random_spec(rng)
    fcs = width in (128, 512) and trial == 0
    print(f"seed {seed}: {spec}")
    run(frames_edge(rng, width, jumbo=width >= 256, count=12), spec, width, fcs=fcs, gap=0.2 * (not fcs),
        seed=seed, name=f"random_{width}_{trial}")


@pytest.mark.parametrize("width, name", [
    pytest.param(width, name, id=f"W{width}-{name}",
                 # make test runs the brokers' recipes at 64 bits, and random multi-range recipes at 64 and 512
                 # (test_random_recipes); make test-slow every recipe at both widths (each about 16 s at 512)
                 marks=[pytest.mark.slow] if width == 512 or name in ("packed", "long") else [])
    for width in (64, 512) for name in DIRECTED])
def test_directed_recipes(width, name):
    """Recipes users ask for and the edges of the grammar, on the edge frames, FCS straddling beats (at 512 bits
    also frames ending around the long recipe's boundaries and a jumbo frame)."""
    rng = random.Random(width + len(name))
    frames = frames_edge(rng, width, jumbo=width == 512, count=10 if width == 64 else 20)
    if width == 512:
        frames += [rng.randbytes(n) for n in (3070, 3100, 3101, 9000)]
    run(frames, KeySpec.parse(DIRECTED[name]), width, fcs=True, gap=0.1, seed=width, name=f"directed_{name}_{width}")


@pytest.mark.slow
@pytest.mark.parametrize("width", (64, 128, 256, 512), ids=lambda w: f"W{w}")
def test_random_recipes_long(width):
    """Many random recipes (seeded), each on its own random frames."""
    for trial in range(8):
        seed = 7000 * width + trial
        rng = random.Random(seed)
        spec = random_spec(rng)
        print(f"seed {seed}: {spec}")
        run(frames_edge(rng, width) + frames_mixed(rng, 20, width), spec, width, fcs=trial % 2 == 1,
            gap=rng.choice((0.0, 0.1, 0.5)), seed=seed, name=f"random_long_{width}_{trial}")
