# Board builds (issue 5). Included by the top-level Makefile; expects PY, STAMP/setup and BOARD from it.
BOARD ?= icebreaker

.PHONY: bitstream fmax

# Bitstream + build/$(BOARD)/report.json + a summary table (YoWASP yosys/nextpnr; BOARD=icebreaker|ulx3s-85f).
bitstream: setup
	$(PY) scripts/build.py --board $(BOARD)

# Bare-core Fmax/BRAM sweep on ECP5-85F speed 6 and iCE40UP5K: build/reports/fmax.json and fmax.png.
fmax: setup
	$(PY) scripts/fmax.py
