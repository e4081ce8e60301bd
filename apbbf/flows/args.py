"""What the measurement scripts (``scripts/*.py``) and the flows share on their command lines: the repository's
``build/`` folders, nextpnr seeds, FPGA families, counts and report folders, each parsed one way, with one error
message.

A script is a few lines over these: it builds an :class:`argparse.ArgumentParser`, adds what it takes with the
``add_*`` helpers and calls its flow.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .pnr import SEEDS, TARGETS

__all__ = ["ROOT", "BUILD", "REPORTS", "seeds", "positive", "count", "families", "add_seeds", "add_families",
           "add_out"]

#: The repository (the scripts and ``make`` run from a checkout; an installed package's flows take paths).
ROOT = Path(__file__).resolve().parents[2]
#: Where the flows work, one folder each.
BUILD = ROOT / "build"
#: Where every measurement writes its JSON and PNG.
REPORTS = BUILD / "reports"


def seeds(text: str) -> list[int]:
    """nextpnr seeds, ``"1,2,3"``: at least one, none negative (``0x`` prefixes allowed)."""
    try:
        values = [int(item, 0) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of integers, not {text!r}") from None
    if not values or any(value < 0 for value in values):
        raise argparse.ArgumentTypeError(f"must name at least one seed, none negative, not {text!r}")
    return values


def positive(text: str) -> int:
    """An integer of at least 1."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def count(text: str) -> int:
    """A count of at least 1, as an integer or ``N**P`` (``10**8``)."""
    try:
        base, _, power = text.partition("**")
        value = int(base, 0) ** int(power, 0) if power else int(base, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer (or N**P), not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def families(text: str) -> list[str]:
    """FPGA families of :data:`apbbf.flows.pnr.TARGETS`, comma-separated."""
    names = [name for name in text.split(",") if name]
    unknown = [name for name in names if name not in TARGETS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of {', '.join(TARGETS)}, not {text!r}")
    return names


def add_seeds(parser: argparse.ArgumentParser, default=SEEDS) -> None:
    """``--seeds SEED,...``: nextpnr seeds, each Fmax their median."""
    parser.add_argument("--seeds", type=seeds, default=list(default), metavar="SEED,...",
                        help=f"nextpnr seeds; each Fmax is their median (default {','.join(map(str, default))})")


def add_families(parser: argparse.ArgumentParser) -> None:
    """``--families FAMILY,...``: the devices to run."""
    parser.add_argument("--families", type=families, default=list(TARGETS), metavar="FAMILY,...",
                        help=f"FPGA families to run (default {','.join(TARGETS)})")


def add_out(parser: argparse.ArgumentParser, what: str) -> None:
    """``--out DIR``: where the report (``what``) goes, :data:`REPORTS` by default."""
    parser.add_argument("--out", type=Path, default=REPORTS, help=f"where {what} go (default build/reports)")
