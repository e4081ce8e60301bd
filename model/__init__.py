"""The golden model: the specification of the hardware.

- :class:`Config`: the filter's shape, validated; derived generation, window, memory.
- :mod:`~apbbf.model.hashing`: the hash specification (H3 per physical segment), shared with the gateware.
- :class:`APBF` (paper 000 §5), :class:`APBBF` (paper 000 §6, the hardware's model), :class:`TimeLimitedAPBF` (paper 001).
- :mod:`~apbbf.model.analysis` (paper formulas, Tables 2-3) and :mod:`~apbbf.model.solver` (parameter solver).
"""

from .config import Config
from .filters import APBBF, APBF, AgePartitioned, Op, scan
from .hashing import HashSpec, key_from_bytes

__all__ = ["Config", "HashSpec", "key_from_bytes", "Op", "scan", "AgePartitioned", "APBF", "APBBF"]

from . import analysis, solver
from .analysis import analyze, analyze_config
from .solver import describe, solve
from .timelimited import TimeLimitedAPBF

__all__ += ["analysis", "solver", "analyze", "analyze_config", "describe", "solve", "TimeLimitedAPBF"]

from . import lanes
from .lanes import Lanes, LaneSpec, lanes_window

__all__ += ["lanes", "Lanes", "LaneSpec", "lanes_window"]
