# The RGMII Ethernet MAC. Included by the top-level Makefile; expects PY and setup from it.
ETH_BOARD ?= colorlight-5a75b

.PHONY: mac-pnr

# The MAC alone placed and routed on a board with Ethernet (three nextpnr seeds): the post-route Fmax of the
# receive, transmit and user clock domains in build/reports/mac_pnr-$(ETH_BOARD).json (scripts/mac_pnr.py).
mac-pnr: setup
	$(PY) scripts/mac_pnr.py --board $(ETH_BOARD)

# The de-duplication appliance (make bitstream BOARD=colorlight-5a75b or versa-ecp5, mk/boards.mk):
# build/appliance-$(BOARD)/top.bit and build/reports/appliance-$(BOARD).json and .md (scripts/appliance.py).
# ACTION=drop|count, KEY=l3l4|frame, WINDOW_US (the time window in microseconds) and FP (the worst-case
# false-positive rate at RATE_PPS, default 1.488 Mpps: 327368 plans for the IMIX) size the filter (default: the
# board's), MEMORY=bram|dram puts it in block RAM
# or the board's DRAM (default: block RAM if it fits, else DRAM), SEED its hash seed (default: drawn afresh from
# secrets and recorded in the report: SEED=<it> repeats a build); SEEDS (default
# 1,2,3) places and routes once per nextpnr seed (JOBS at a time) for the median Fmax and a bitstream from a seed
# that meets timing (no one seed meets it every time: docs/appliance.md); a run that has used PNR_CPU_MINUTES of
# processor time (not wall clock) is stopped and its seed left out, unless it is the last one left and none has
# finished. STEPS=synth|pnr|report runs only the synthesis, only nextpnr for SEEDS (on the netlist there), or
# only the report; the last two take the hash seed of the synthesis there (its options.json) unless SEED is given.
# PLACER=heap|static|sa and ROUTER=router1|router2 pick nextpnr's. WRITE_ROUTED=1 keeps each seed's routed design
# (seed<N>.routed.json, for make netlist-sim STAGE=routed). RUNTIME_SEED=1 builds the hash's run-time seed (apbbf
# host ... rekey; about 380 LUT4 and 130 flip-flops more on the de-duplicator of make dedup-bench:
# docs/appliance.md). RUNTIME_WINDOW=1 builds the window writable at run time over the UART (apbbf host ... set
# window 2ms, up to the report's window_capacity_us).
APPLIANCE_BOARDS := colorlight-5a75b versa-ecp5
ACTION ?= drop
KEY ?= l3l4
SEEDS ?= 1,2,3
JOBS ?= 2
PNR_CPU_MINUTES ?= 30
STEPS ?= all
PLACER ?= static
ROUTER ?= router2
APPLIANCE_ARGS = --action $(ACTION) --key $(KEY) --seeds $(SEEDS) --jobs $(JOBS) --pnr-cpu-minutes $(PNR_CPU_MINUTES) \
	--steps $(STEPS) --placer $(PLACER) --router $(ROUTER) \
	$(if $(WINDOW_US),--window-us $(WINDOW_US)) $(if $(FP),--fp $(FP)) $(if $(RATE_PPS),--rate-pps $(RATE_PPS)) $(if $(SEED),--seed $(SEED)) \
	$(if $(MEMORY),--memory $(MEMORY)) $(if $(WRITE_ROUTED),--write-routed) $(if $(RUNTIME_SEED),--runtime-seed) \
	$(if $(RUNTIME_WINDOW),--runtime-window)
