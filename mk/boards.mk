# Board builds and Fmax runs. Included by the top-level Makefile; expects PY, setup and BOARD from it.
BOARD ?= icebreaker
BOARD_ARGS ?=

.PHONY: bitstream fmax

# Bitstream + build/$(BOARD)/report.json + a summary (YoWASP yosys/nextpnr; BOARD=icebreaker|ulx3s-85f;
# BOARD_ARGS=--config k=4,l=9,... for another filter): scripts/build.py, apbbf.flows.board.
# BOARD=colorlight-5a75b|versa-ecp5: the de-duplication appliance (mk/eth.mk: APPLIANCE_ARGS).
bitstream: setup
	$(if $(filter $(BOARD),$(APPLIANCE_BOARDS)),$(PY) scripts/appliance.py --board $(BOARD) $(APPLIANCE_ARGS),\
	    $(PY) scripts/build.py --board $(BOARD) $(BOARD_ARGS))

# Bare-core Fmax/BRAM sweep on ECP5-85F speed 6 and iCE40UP5K (the ULX3S-85F and iCEBreaker devices):
# build/reports/fmax.json and fmax.png (scripts/fmax.py, apbbf.flows.fmax; the ECP5 runs take minutes each).
fmax: setup
	$(PY) scripts/fmax.py
