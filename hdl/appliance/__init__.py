"""The two-port de-duplication appliance (``docs/appliance.md``): :mod:`.core` (two RGMII MACs, the de-duplicator
and, when the window is in DRAM, the LiteDRAM core), :mod:`.host` (its registers over the board's UART) and
:mod:`.top` (the board top, and a top without pins for Verilog benches). Its build is
:mod:`apbbf.flows.appliance`. Nothing here is imported by ``apbbf.hdl`` itself: import the modules you use."""
