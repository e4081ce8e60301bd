# Line-rate benchmark (a script, not a test): ops/cycle on Verilator, post-route Fmax, Mops/s vs line rates.
# Writes build/reports/bench.json and bench.png (scripts/bench.py, apbbf.flows.bench; 20+ min). BENCH_ARGS=--quick
# runs 2·10^4 commands per mix and reuses kept P&R results of the same designs (about a minute once they exist).
BENCH_ARGS ?=

.PHONY: bench

bench: setup
	$(PY) scripts/bench.py $(BENCH_ARGS)

# Packet de-duplicator benchmark: frames/clock (simulated, scored), Fmax on ECP5-85F for data_width 64 and 512
# (median of 3 nextpnr seeds), Mpps vs line rates, key extractor and packet buffer cost. build/reports/dedup_bench.*
.PHONY: dedup-bench
dedup-bench: setup
	$(PY) scripts/dedup_bench.py $(DEDUP_BENCH_ARGS)

# The lanes filter placed and routed on ECP5-85F (two lanes of Config(3, 8, 64, 4, 512) by default; static placer,
# router2): build/lanes_pnr/<lanes>/result.json, the median of seeds 1-3 (about 8 min on 2 cores).
LANES_PNR_ARGS ?= --lanes 2 --seeds 1,2,3 --jobs 2
.PHONY: lanes-pnr
lanes-pnr: setup
	$(PY) scripts/lanes_pnr.py $(LANES_PNR_ARGS)

# The memory core's access budget (a script, not a test): accesses and bytes per command, commands per cycle against
# a memory of fixed latency at each in-flight depth, the depth each latency needs. build/reports/memory_bench.json
# (scripts/memory_bench.py; a few minutes).
.PHONY: memory-bench
memory-bench: setup
	$(PY) scripts/memory_bench.py $(MEMORY_BENCH_ARGS)

# The memory core placed and routed alone on the 5A-75B's LFE5U-25F (RegisteredMemoryCore, depth 8), nextpnr seeds
# 1-3 one after another with router2, each stopped at 15 minutes: build/reports/memory_pnr.json, each seed's Fmax,
# LUT4, FF, router time and critical path, and the median Fmax (scripts/memory_pnr.py; about 25 minutes).
MEMORY_PNR_ARGS ?=
.PHONY: memory-pnr
memory-pnr: setup
	$(PY) scripts/memory_pnr.py $(MEMORY_PNR_ARGS)
