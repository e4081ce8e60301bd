"""Place and route of the lanes filter (:class:`apbbf.hdl.core.lanes.Lanes`) for its post-route Fmax: Mops/s is that
Fmax times the commands per clock measured in simulation on random keys (:mod:`apbbf.sim.lanes`)."""

from ..sim.designs import RegisteredLanes
from .pnr import SEEDS, TARGETS, run_pnr_cached, target_platform

# RegisteredLanes is gateware (apbbf.sim.designs), still importable from here under its former name.
__all__ = ["PLACER", "ROUTER", "RegisteredLanes", "lanes_pnr"]


#: nextpnr's placer and router for the lanes filter: with the default analytic placer and router1, two lanes of the
#: benchmark's Config had not converged after 40 minutes (congestion); the de-duplicator's flow (electrostatic
#: placer, router2, :mod:`apbbf.flows.dedup_bench`) routes designs of this size.
PLACER, ROUTER = "static", "router2"


def lanes_pnr(config, lanes: int, family: str, work, *, reuse: bool = False, seeds=SEEDS, placer: str = PLACER,
              router: str = ROUTER, jobs: int = 1, timeout_s: float | None = None) -> dict:
    """Post-route Fmax of :class:`RegisteredLanes` on ``family``'s target device, as
    :func:`apbbf.flows.pnr.core_pnr` (the memory of all lanes must fit the device's block RAM), with nextpnr's
    ``placer`` and ``router``, ``jobs`` seeds at once, each stopped after ``timeout_s``."""
    from ..hdl.core.devices import check_memory
    platform = target_platform(family)
    check_memory(config, platform.device, lanes=lanes)
    return run_pnr_cached(RegisteredLanes(config, lanes), platform, work, freq_mhz=TARGETS[family].core_mhz,
                          reuse=reuse, seeds=seeds, nextpnr_args=("--placer", placer, "--router", router),
                          jobs=jobs, timeout_s=timeout_s)
