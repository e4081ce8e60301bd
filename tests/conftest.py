"""Settings of the whole suite."""

import os

# The Verilator models the tests build run for seconds: compile them unoptimized (apbbf.sim.verilator).
os.environ.setdefault("APBBF_VERILATOR_OPT", "-O0")

#: The suite's longest files, longest first (``make test``'s durations, 2026-11): pytest-xdist hands each worker a file
#: at a time (``--dist loadfile``) in collection order, so a long file collected late runs alone at the end while
#: the other worker idles. Collected first, they overlap and the short files fill in after them.
LONGEST_FILES = ("test_cocotb.py", "test_packet_dedup.py", "test_core_timed.py", "test_core.py",
                 "test_key_extractor_recipes.py", "test_dedup.py", "test_key_extractor.py", "test_cocotb_dedup.py",
                 "test_appliance_cocotb.py", "test_eth_cocotb.py", "test_lanes.py", "test_verilog_lint.py",
                 "test_capture.py")


def pytest_collection_modifyitems(items):
    rank = {name: index for index, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FILES)))   # stable: each file stays whole
