# Line-rate benchmark (a script, not a test): ops/cycle on Verilator, post-route Fmax, Mops/s vs line rates.
# Writes build/reports/bench.json and bench.png (scripts/bench.py, apbbf.flows.bench; 20+ min). BENCH_ARGS=--quick
# runs 2·10^4 commands per mix and reuses kept P&R results of the same designs (about a minute once they exist).
BENCH_ARGS ?=

.PHONY: bench

bench: setup
	$(PY) scripts/bench.py $(BENCH_ARGS)
