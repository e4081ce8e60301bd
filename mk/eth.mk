# The RGMII Ethernet MAC. Included by the top-level Makefile; expects PY and setup from it.
ETH_BOARD ?= colorlight-5a75b

.PHONY: mac-pnr

# The MAC alone placed and routed on a board with Ethernet (three nextpnr seeds): the post-route Fmax of the
# receive, transmit and user clock domains in build/reports/mac_pnr-$(ETH_BOARD).json (scripts/mac_pnr.py).
mac-pnr: setup
	$(PY) scripts/mac_pnr.py --board $(ETH_BOARD)
