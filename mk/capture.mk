# apbbf dedup against editcap -w (a script, not a test): frames/s on 10^6 generated frames, start-up included.
# Writes build/reports/capture_bench.json (scripts/capture_bench.py, apbbf.flows.capture_bench; a few minutes).
.PHONY: capture-bench
capture-bench: setup
	$(PY) scripts/capture_bench.py $(CAPTURE_BENCH_ARGS)

# Where apbbf dedup's time goes per frame on the same capture (cProfile, the stages split into their parts):
# build/reports/capture_profile.json (scripts/capture_bench.py --profile; about a minute).
.PHONY: capture-profile
capture-profile: setup
	$(PY) scripts/capture_bench.py --profile $(CAPTURE_BENCH_ARGS)
