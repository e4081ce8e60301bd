# amaranth: UnusedElaboratable=no
"""Every component refuses a parameter out of its range when it is built (``__init__``), with the error type and
a message that names the parameter and what is allowed: one table for the gateware (the model's ``Config`` has
its own in ``tests/test_config.py``)."""

import pytest

from apbbf.hdl.board.host_executor import HostExecutor
from apbbf.hdl.board.host_interface import HostInterface
from apbbf.hdl.board.host_parser import HostParser
from apbbf.hdl.board.uart import UARTReceiver, UARTTransmitter
from apbbf.hdl.core.apbbf import APBBF
from apbbf.hdl.core.buffer import CircularBuffer
from apbbf.hdl.lib.ecp5_ram import ECP5BlockRAM
from apbbf.hdl.core.hash import HashUnit
from apbbf.hdl.core.lanes import LaneHash, Lanes
from apbbf.hdl.core.response import ResponseQueue
from apbbf.hdl.core.scan_fsm import FSMScan
from apbbf.hdl.core.scan_parallel import ParallelScan
from apbbf.hdl.core.segments import Segments
from apbbf.hdl.lib.block_ram import InferredBlockRAM
from apbbf.hdl.export.axi_memory import AXI4MemoryAdapter, AXI4Signature
from apbbf.hdl.export.axis import AXIStreamAPBBF
from apbbf.hdl.export.axis_dedup import AXIStreamPacketDedup
from apbbf.hdl.export.axis_lanes import AXIStreamLanes
from apbbf.hdl.export.axis_memory import AXIStreamMemoryAPBBF
from apbbf.hdl.packet.dedup import PacketDedup
from apbbf.hdl.packet.key_extractor import KeyExtractor
from apbbf.model import Config
from apbbf.model.packet import KeySpec

CONFIG = Config(2, 3, segment_blocks=4)
ROWS = Config(2, 3, segment_blocks=4, row_bits=512)
TIMED = Config(2, 3, segment_blocks=4, span=100, time_width=12)
L3L4 = KeySpec.l3l4()


def _case(name, build, error, message):
    return pytest.param(build, error, message, id=name)


CASES = [
    # a Config where one is needed
    *[_case(f"{cls.__name__}-config", lambda cls=cls: cls((2, 3)), TypeError, "config must be a Config")
      for cls in (APBBF, HashUnit, CircularBuffer, FSMScan, ParallelScan, Segments, AXIStreamAPBBF, HostExecutor,
                  HostInterface)],
    _case("Lanes-config", lambda: Lanes("k=2 l=3", 2), TypeError, "config must be a Config"),
    _case("PacketDedup-config", lambda: PacketDedup("config", L3L4), TypeError, "config"),
    # the core
    _case("APBBF-scan", lambda: APBBF(CONFIG, scan="systolic"), ValueError, "scan must be one of 'fsm', 'parallel'"),
    _case("APBBF-parity", lambda: APBBF(CONFIG, parity=1), TypeError, "parity must be a bool"),
    _case("APBBF-pace", lambda: APBBF(CONFIG, scan="parallel", pace=4), ValueError, "pace must be from 1 to 3, not 4"),
    _case("APBBF-pace-type", lambda: APBBF(CONFIG, scan="parallel", pace=2.0), TypeError, "pace must be an integer"),
    _case("APBBF-pace-fsm", lambda: APBBF(CONFIG, scan="fsm", pace=2), ValueError, "pace must be 1 with scan='fsm'"),
    _case("ParallelScan-pace", lambda: ParallelScan(CONFIG, pace=0), ValueError, "pace must be from 1 to 3, not 0"),
    _case("CircularBuffer-lookahead", lambda: CircularBuffer(CONFIG, lookahead=1), TypeError,
          "lookahead must be a bool"),
    _case("AXIStreamAPBBF-scan", lambda: AXIStreamAPBBF(CONFIG, scan="fast"), ValueError, "scan must be one of"),
    _case("Segments-parity", lambda: Segments(CONFIG, parity="yes"), TypeError, "parity must be a bool"),
    _case("ResponseQueue-depth-low", lambda: ResponseQueue(0), ValueError, "depth must be from 1 to 1024"),
    _case("ResponseQueue-depth-high", lambda: ResponseQueue(1025), ValueError, "depth must be from 1 to 1024"),
    _case("ResponseQueue-depth-type", lambda: ResponseQueue(4.0), TypeError, "depth must be an integer"),
    _case("InferredBlockRAM-depth", lambda: InferredBlockRAM(0, 8), ValueError, "depth"),
    _case("InferredBlockRAM-width", lambda: InferredBlockRAM(8, 0), ValueError, "width"),
    _case("ECP5BlockRAM-depth-type", lambda: ECP5BlockRAM(8.0, 8), TypeError, "depth"),
    _case("ECP5BlockRAM-parity", lambda: ECP5BlockRAM(4, 64, parity=1), TypeError, "parity must be a bool"),
    # lanes
    _case("Lanes-lanes", lambda: Lanes(CONFIG, 3), ValueError, "lanes"),
    _case("Lanes-slots", lambda: Lanes(CONFIG, 2, slots=17), ValueError, "slots must be from 1 to 16"),
    _case("Lanes-scan", lambda: Lanes(CONFIG, 2, scan="wide"), ValueError, "scan must be one of"),
    _case("Lanes-fifo_depth", lambda: Lanes(CONFIG, 2, fifo_depth=1), ValueError, "fifo_depth must be from 2 to 64"),
    _case("Lanes-reorder_depth", lambda: Lanes(CONFIG, 2, reorder_depth=24), ValueError,
          "reorder_depth must be a power of two"),
    _case("LaneHash-lanes", lambda: LaneHash(CONFIG, 1), ValueError, "lanes must be at least 2"),
    _case("AXIStreamLanes-lanes", lambda: AXIStreamLanes(CONFIG, 5), ValueError, "lanes"),
    # the packet front end
    _case("KeyExtractor-spec", lambda: KeyExtractor("frame", 64), TypeError, "spec"),
    _case("KeyExtractor-data_width-type", lambda: KeyExtractor(L3L4, 64.0), TypeError, "data_width"),
    *[_case(f"KeyExtractor-data_width-{width}", lambda width=width: KeyExtractor(L3L4, width), ValueError,
            "data_width") for width in (8, 96, 1024)],
    _case("KeyExtractor-fcs", lambda: KeyExtractor(L3L4, 64, fcs=1), TypeError, "fcs"),
    _case("PacketDedup-span", lambda: PacketDedup(CONFIG, L3L4), ValueError, "span"),
    _case("PacketDedup-spec", lambda: PacketDedup(TIMED, "l3l4"), TypeError, "spec"),
    _case("PacketDedup-memory_one_row", lambda: PacketDedup(TIMED, L3L4, memory_one_row=1), TypeError,
          "memory_one_row"),
    *[_case(f"PacketDedup-{name}-{value!r}", lambda name=name, value=value: PacketDedup(TIMED, L3L4, **{name: value}),
            error, name)
      for name, value, error in [("data_width", 32, ValueError), ("action", "forward", ValueError),
                                 ("timestamps", "mac", ValueError), ("tick_cycles", 0, ValueError),
                                 ("tick_cycles", 1.5, TypeError), ("fcs", 1, TypeError),
                                 ("max_frame", 65536, ValueError), ("key_queue", 1, ValueError),
                                 ("clearable", 1, TypeError)]],
    _case("AXIStreamPacketDedup-action", lambda: AXIStreamPacketDedup(TIMED, L3L4, action="keep"), ValueError,
          "action"),
    # the board side
    _case("HostParser-key_width", lambda: HostParser(7), ValueError, "key_width must be from 8 to 512, not 7"),
    _case("HostParser-key_width-type", lambda: HostParser(32.0), TypeError, "key_width must be an integer"),
    _case("HostParser-max_batch", lambda: HostParser(32, max_batch=256), ValueError,
          "max_batch must be from 1 to 255, not 256"),
    _case("HostParser-max_batch-type", lambda: HostParser(32, max_batch=True), TypeError,
          "max_batch must be an integer"),
    _case("HostParser-timeout_cycles", lambda: HostParser(32, timeout_cycles=15), ValueError,
          "timeout_cycles must be from 16 to 4294967296, not 15"),
    _case("HostExecutor-max_batch", lambda: HostExecutor(CONFIG, max_batch=0), ValueError,
          "max_batch must be from 1 to 255, not 0"),
    _case("HostInterface-timeout_cycles", lambda: HostInterface(CONFIG, timeout_cycles=(1 << 32) + 1), ValueError,
          "timeout_cycles must be from 16 to 4294967296, not 4294967297"),
    _case("HostInterface-max_batch-type", lambda: HostInterface(CONFIG, max_batch="64"), TypeError,
          "max_batch must be an integer"),
    *[_case(f"{cls.__name__}-divisor-{divisor}", lambda cls=cls, divisor=divisor: cls(divisor), ValueError,
            rf"divisor must be from 4 to 16777216, not {divisor}")
      for cls in (UARTReceiver, UARTTransmitter) for divisor in (3, (1 << 24) + 1)],
    _case("AXI4MemoryAdapter-data_width", lambda: AXI4MemoryAdapter(ROWS, data_width=96), ValueError,
          "data_width must be a power of two from 32 to 1024 bits, not 96"),
    _case("AXI4MemoryAdapter-base", lambda: AXI4MemoryAdapter(ROWS, base=4), ValueError,
          "base must be a multiple of 8 bytes"),
    _case("AXI4MemoryAdapter-max_outstanding", lambda: AXI4MemoryAdapter(ROWS, max_outstanding=4097), ValueError,
          "max_outstanding must be from 1 to 4096, not 4097"),
    _case("AXI4MemoryAdapter-on-chip", lambda: AXI4MemoryAdapter(CONFIG), ValueError, "row layout"),
    _case("AXI4Signature-addr_width", lambda: AXI4Signature(8, 64), ValueError, "addr_width must be from 12 to 64"),
    _case("AXIStreamMemoryAPBBF-depth", lambda: AXIStreamMemoryAPBBF(ROWS, depth=65), ValueError,
          "depth must be from 1 to 64, not 65"),
    _case("AXIStreamMemoryAPBBF-max_outstanding", lambda: AXIStreamMemoryAPBBF(ROWS, depth=2, max_outstanding=11),
          ValueError, r"max_outstanding must be at least the reads the memory scan leaves unanswered, "
          r"min\(depth, 2\) \* physical segments = 2 \* 6 = 12 .*, not 11"),
    _case("AXIStreamMemoryAPBBF-max_outstanding-deep", lambda: AXIStreamMemoryAPBBF(ROWS, depth=8, max_outstanding=11),
          ValueError, r"min\(depth, 2\) \* physical segments = 2 \* 6 = 12 .*, not 11"),
    _case("AXIStreamMemoryAPBBF-max_outstanding-depth-1",
          lambda: AXIStreamMemoryAPBBF(ROWS, depth=1, max_outstanding=5),
          ValueError, r"min\(depth, 2\) \* physical segments = 1 \* 6 = 6 .*, not 5"),
    *[_case(f"{cls.__name__}-divisor-type", lambda cls=cls: cls(4.0), TypeError, "divisor must be an integer")
      for cls in (UARTReceiver, UARTTransmitter)],
]


@pytest.mark.parametrize("build,error,message", CASES)
def test_init_wrong(build, error, message):
    with pytest.raises(error, match=message):
        build()
