# Line-rate benchmark (a script, not a test): ops/cycle on Verilator, post-route Fmax, Mops/s vs line rates.
# Writes build/reports/bench.json and bench.png. BENCH_ARGS=--quick reuses cached P&R results (~1 min).
BENCH_ARGS ?=

bench: setup
	$(PY) scripts/bench.py $(BENCH_ARGS)
