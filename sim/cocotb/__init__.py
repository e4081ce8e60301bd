"""cocotb 2.x test benches of the exported Verilog core (:mod:`apbbf.hdl.export.axis`) on a real simulator.

- :mod:`.testbench`: the bench's parts as small classes, in the style of cocotb's matrix_multiplier example:
  a driver (:class:`~.testbench.CommandDriver`, cocotbext-axi ``AxiStreamSource``), an input monitor
  (:class:`~.testbench.CommandMonitor`), an output monitor (:class:`~.testbench.ResponseMonitor`,
  ``AxiStreamSink``), the transaction-level model (:class:`~.testbench.ReferenceModel`, the golden model) and an
  in-order :class:`~.testbench.Scoreboard`, put together by :class:`~.testbench.Testbench`.
- :mod:`.tests`: the cocotb tests (random streams, directed edges, the first insert's shift, reset under
  traffic, and the soak), in the style of alexforencich's verilog-axis benches: the bench's ``TB`` class is
  :class:`~.testbench.Testbench`, and each idle/backpressure combination of a test is its own named test
  (``cocotb.parametrize`` over ``idle_inserter`` and ``backpressure_inserter``).
- :mod:`.runner`: export, build and run through ``cocotb_tools.runner`` on Icarus or Verilator.

Nothing here imports cocotb at package import time except :mod:`.testbench` and :mod:`.tests`, which only run
inside a simulator.
"""
