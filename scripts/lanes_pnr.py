#!/usr/bin/env python3
"""Place and route of the lanes filter (:class:`apbbf.hdl.lanes.Lanes`) on ECP5-85F speed 6, ports registered,
for its post-route Fmax; Mops/s is that Fmax times the commands per clock measured in simulation on random keys
(``tests/test_lanes.py``, :mod:`apbbf.sim.lanes`). Writes ``build/lanes_pnr/<lanes>/result.json``.

Run one at a time, in the background, under ``nice``: an ECP5-85F seed of a multi-lane design takes minutes.
"""

import argparse
import json
import sys
from pathlib import Path

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from apbbf.flows.pnr import TARGETS, run_pnr_cached, target_platform
from apbbf.hdl.lanes import Lanes
from apbbf.model import Config

ROOT = Path(__file__).resolve().parent.parent


class RegisteredLanes(wiring.Component):
    """The lanes filter for timing: every slot's key shifted in serially (one chain), the slots' valid bits and
    one op registered; the response beat's hits OR-reduced into a register, ``cmd.ready`` and ``rsp.valid``
    registered out; ``rsp.ready`` is high."""

    def __init__(self, config, lanes):
        self._core = Lanes(config, lanes)
        self._config = config
        super().__init__({"serial_in": In(1), "valid_in": In(self._core.slots), "op_in": In(2),
                          "hit_out": Out(1), "ready_out": Out(1), "rsp_out": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.lanes = core = self._core
        c, S = self._config, core.slots
        chain = Signal(S * c.key_width)
        valid, op = Signal(S), Signal(2)
        m.d.sync += [chain.eq(Cat(self.serial_in, chain[:-1])), valid.eq(self.valid_in), op.eq(self.op_in),
                     self.hit_out.eq(Cat(core.rsp.payload[s].hit for s in range(S)).any()),
                     self.ready_out.eq(core.cmd.ready), self.rsp_out.eq(core.rsp.valid)]
        m.d.comb += [core.cmd.valid.eq(valid.any()), core.rsp.ready.eq(1)]
        for s in range(S):
            m.d.comb += [core.cmd.payload[s].valid.eq(valid[s]), core.cmd.payload[s].op.as_value().eq(op),
                         core.cmd.payload[s].key.eq(chain[s * c.key_width:(s + 1) * c.key_width])]
        return m


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--seeds", default="1", help="comma-separated nextpnr seeds (default 1)")
    parser.add_argument("--segment-blocks", type=int, default=512)
    args = parser.parse_args(argv)
    config = Config(3, 8, 64, 4, args.segment_blocks)
    work = ROOT / "build" / "lanes_pnr" / str(args.lanes)
    seeds = [int(s) for s in args.seeds.split(",")]
    result = run_pnr_cached(RegisteredLanes(config, args.lanes), target_platform("ecp5"), work,
                            freq_mhz=TARGETS["ecp5"].core_mhz, reuse=True, seeds=seeds)
    print(json.dumps({k: result[k] for k in ("fmax_mhz", "seeds", "bram_used", "critical_path", "seconds")
                      if k in result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
