"""Place and route of the lanes filter (:class:`apbbf.hdl.core.lanes.Lanes`) for its post-route Fmax: Mops/s is that
Fmax times the commands per clock measured in simulation on random keys (:mod:`apbbf.sim.lanes`)."""

# (no "from __future__ import annotations": wiring.Component reads the port annotations as objects)
from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..hdl.core.lanes import Lanes
from ..model.config import check_config
from .pnr import SEEDS, TARGETS, run_pnr_cached, target_platform

__all__ = ["RegisteredLanes", "lanes_pnr"]


class RegisteredLanes(wiring.Component):
    """The lanes filter for timing, as :class:`~apbbf.flows.designs.RegisteredCore` is the core: every slot's
    key shifted in serially (one chain), the slots' valid bits and one op registered; the response beat's hits
    OR-reduced into a register, ``cmd.ready`` and ``rsp.valid`` registered out; ``rsp.ready`` is high.

    Parameters
    ----------
    config : Config
    lanes : int
    """

    def __init__(self, config, lanes: int):
        check_config(config)
        self._config = config
        self._core = Lanes(config, lanes)
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


def lanes_pnr(config, lanes: int, family: str, work, *, reuse: bool = False, seeds=SEEDS) -> dict:
    """Post-route Fmax of :class:`RegisteredLanes` on ``family``'s target device, as
    :func:`apbbf.flows.pnr.core_pnr` (the memory of all lanes must fit the device's block RAM)."""
    from ..hdl.core.devices import BLOCK_RAM, block_ram
    platform = target_platform(family)
    ram = block_ram(platform.device)
    used = lanes * ram.blocks_for(config.hardware_memory_bits)
    if used > ram.count:
        raise ValueError(f"{lanes} lanes of this Config need {used} block RAMs, the {platform.device} has {ram.count}")
    return run_pnr_cached(RegisteredLanes(config, lanes), platform, work, freq_mhz=TARGETS[family].core_mhz,
                          reuse=reuse, seeds=seeds)
