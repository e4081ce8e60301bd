"""Place and route of the lanes filter (:class:`apbbf.hdl.core.lanes.Lanes`) for its post-route Fmax: Mops/s is that
Fmax times the commands per clock measured in simulation on random keys (:mod:`apbbf.sim.lanes`)."""

from ..sim.designs import RegisteredLanes
from .pnr import SEEDS, TARGETS, run_pnr_cached, target_platform

__all__ = ["PLACER", "ROUTERS", "ROUTER", "lanes_pnr"]


#: nextpnr's placer for the lanes filter: with the default analytic placer and router1, two lanes of the
#: benchmark's Config had not converged after 40 minutes (congestion); the electrostatic placer spreads them.
PLACER = "static"
#: nextpnr's router per number of lanes (:data:`ROUTER` for the others). Two lanes of the benchmark's Config:
#: router1 routes each seed in 7-10 minutes and closes at 134.8 MHz (128.6-150.3), router2 at 110.8 (103.5-114.1).
#: Four lanes: router1 had 120,000-137,000 of 217,646 arcs left when 15 minutes ran out (seeds 1 and 2, two at
#: once, 12 minutes of them placing); alone, it routed seeds 1 and 3 in 19 and 27 minutes (120.6 and 125.2 MHz,
#: router2 108.3 and 101.9) and not seed 2 in 45. Router2 places and routes a seed in 10 to 13.
ROUTERS = {2: "router1"}
ROUTER = "router2"


def lanes_pnr(config, lanes: int, family: str, work, *, reuse: bool = False, seeds=SEEDS, placer: str = PLACER,
              router: str | None = None, jobs: int = 1, timeout_s: float | None = None) -> dict:
    """Post-route Fmax of :class:`RegisteredLanes` on ``family``'s target device, as
    :func:`apbbf.flows.pnr.core_pnr` (the memory of all lanes must fit the device's block RAM), with nextpnr's
    ``placer`` and ``router`` (default: :data:`ROUTERS`, else :data:`ROUTER`), ``jobs`` seeds at once, each stopped
    after ``timeout_s``."""
    from ..hdl.lib.devices import check_memory
    platform = target_platform(family)
    check_memory(config, platform.device, lanes=lanes)
    router = router or ROUTERS.get(lanes, ROUTER)
    return run_pnr_cached(RegisteredLanes(config, lanes), platform, work, freq_mhz=TARGETS[family].core_mhz,
                          reuse=reuse, seeds=seeds, nextpnr_args=("--placer", placer, "--router", router),
                          jobs=jobs, timeout_s=timeout_s)
