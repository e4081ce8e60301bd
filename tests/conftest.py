"""Settings of the whole suite."""

import json
import os
import resource
import time

import pytest

# The Verilator models the tests build run for seconds: compile them unoptimized (apbbf.sim.verilator).
os.environ.setdefault("APBBF_VERILATOR_OPT", "-O0")

#: The suite's longest files, longest first (processor seconds per file, ``--cpu-durations``, 2026-12): pytest-xdist
#: hands each worker a file at a time (``--dist loadfile``) in collection order, so a long file collected late runs
#: alone at the end while the other worker idles. Collected first, they overlap and the short files fill in after.
LONGEST_FILES = ("test_core.py", "test_packet_dedup.py", "test_core_timed.py", "test_cocotb.py",
                 "test_appliance_cocotb.py", "test_cocotb_memory_dedup.py", "test_key_extractor.py",
                 "test_memory_dedup.py", "test_appliance_host.py", "test_key_extractor_recipes.py",
                 "test_cocotb_control.py", "test_dedup.py", "test_memory_core.py", "test_compiled.py",
                 "test_flows.py", "test_verilog_lint.py", "test_formal.py", "test_host_interface.py",
                 "test_cocotb_memory.py", "test_hash.py", "test_lanes.py", "test_parity.py", "test_cocotb_dedup.py",
                 "test_dram_filter.py", "test_eth_cocotb.py", "test_capture.py")


def pytest_collection_modifyitems(items):
    rank = {name: index for index, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FILES)))   # stable: each file stays whole


def pytest_addoption(parser):
    parser.addoption("--cpu-durations", metavar="PATH", default=None,
                     help="append each test's processor seconds (this process and the simulators it waited for) "
                          "and wall seconds to PATH as JSON lines (with the pytest-xdist worker that ran it): "
                          "durations that a loaded machine does not stretch")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = item.config.getoption("--cpu-durations")
    if path is None:
        yield
        return
    cpu, wall = _cpu_seconds(), time.monotonic()
    yield
    record = {"test": item.nodeid, "cpu": round(_cpu_seconds() - cpu, 3), "wall": round(time.monotonic() - wall, 3),
              "worker": os.environ.get("PYTEST_XDIST_WORKER", "")}
    with open(path, "a") as out:                         # one short line a write: the xdist workers may share it
        out.write(json.dumps(record) + "\n")


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _faster_reduce_xor():
    """Amaranth's Python simulator compiles a reduce-XOR (``Value.xor()``: every bit of the hashes) to
    ``format(x, 'b').count('1') % 2``; ``int.bit_count()`` gives the same parity in a sixth of the time, and the
    suite's Amaranth simulations of the core spend about a fifth of their time there. The rest of the compiled code
    is Amaranth's own. The compiler is private: without it (another Amaranth) the simulations run unchanged, and
    ``tests/test_amaranth_api.py`` checks the parity either way."""
    from amaranth.sim import _pyrtl

    compiler = getattr(_pyrtl, "_RHSValueCompiler", None)
    if compiler is None or getattr(compiler.on_Operator, "bit_count", False):
        return
    compile_operator = compiler.on_Operator

    def on_Operator(self, value):
        if value.operator == "r^" and len(value.operands) == 1:
            arg, = value.operands
            return f"(({(1 << len(arg)) - 1:#x} & {self(arg)}).bit_count() & 1)"
        return compile_operator(self, value)

    on_Operator.bit_count = True
    compiler.on_Operator = on_Operator


_faster_reduce_xor()
