"""Settings of the whole suite."""

import os

# The Verilator models the tests build run for seconds: compile them unoptimized (apbbf.sim.verilator).
os.environ.setdefault("APBBF_VERILATOR_OPT", "-O0")
