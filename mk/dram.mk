# The boards' DRAM through LiteDRAM. Included by the top-level Makefile; expects PY and setup from it.
#   make litedram      the LiteDRAM cores generated into build/litedram/<target>/ (never committed; the tests
#                      that need one generate it themselves, cached there)
#   make dram-bench    random-row read rates on Icarus with the chip model, and the filter's commands per second on
#                      the SDRAM at 50 MHz (about 6 minutes): build/reports/dram_bench.json
LITEDRAM_TARGETS ?= colorlight-5a75b versa-ecp5
DRAM_BENCH_ARGS ?=

.PHONY: litedram dram-bench ddr3-bench

litedram: setup
	$(PY) scripts/litedram.py --force $(LITEDRAM_TARGETS)

dram-bench: setup iverilog
	$(PY) scripts/dram_bench.py $(DRAM_BENCH_ARGS)

ddr3-bench: setup
	$(PY) scripts/ddr3_bench.py
