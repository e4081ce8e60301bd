# apbbf dedup against editcap -w (a script, not a test): frames/s on 10^6 generated frames, start-up included.
# Writes build/reports/capture_bench.json (scripts/capture_bench.py, apbbf.flows.capture_bench; a few minutes).
.PHONY: capture-bench
capture-bench: setup
	$(PY) scripts/capture_bench.py $(CAPTURE_BENCH_ARGS)
