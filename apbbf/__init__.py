"""Age-Partitioned Blocked Bloom Filter: golden model (``apbbf.model``), gateware (``apbbf.hdl``) and
simulation harnesses (``apbbf.sim``)."""

__version__ = "0.1.0"
