# The appliance's board top simulated before synthesis. Included by the top-level Makefile; expects PY and setup.
# `make netlist-sim BOARD=colorlight-5a75b` (or versa-ecp5): the top `make bitstream` elaborates (EHXPLLL, DELAYG,
# IDDRX1F/ODDRX1F, DP16KD, with the models of sim/ecp5/) under the four appliance benches on Icarus; writes
# build/reports/netlist_sim-$(BOARD).json (scripts/netlist_sim.py; NETLIST_SIM_ARGS: --frames, --seed, ...).
# STAGE=routed: the routed netlist of `make bitstream BOARD=... WRITE_ROUTED=1` under the short bench instead
# (with the models of sim/ecp5/routed/), into build/reports/netlist_sim-$(BOARD)-routed.json.
NETLIST_SIM_ARGS ?=
STAGE ?= rtl

.PHONY: netlist-sim

netlist-sim: setup iverilog
	$(PY) scripts/netlist_sim.py --board $(BOARD) --stage $(STAGE) $(NETLIST_SIM_ARGS)
