"""Generic blocks, below every other room (they import nothing from the gateware but each other):

- queues: :class:`UngatedFIFO` (:mod:`.ungated_fifo`, a LUT RAM queue its writer never fills, the write not gated
  by the level), :class:`BankedQueue` (:mod:`.banked_queue`, a wide block RAM queue in banks, each with its own
  pointers and room), :class:`FrameFIFO` (:mod:`.frame_fifo`, store and forward of whole frames) and
  :class:`RegisteredAsyncFIFO` (:mod:`.cdc_fifo`, a clock-domain crossing with every path into and out of its
  memory starting at a register);
- flags: :func:`credit_flag` and :func:`stepped` (:mod:`.credits`, a registered "one is left" flag over a count,
  kept by cases);
- block RAM per device: the devices' block RAM tables and the check that a filter fits them (:mod:`.devices`),
  the ECP5's DP16KD (:mod:`.ecp5_ram`) and the one for a platform (:mod:`.block_ram`).
"""

from .banked_queue import BankedQueue
from .cdc_fifo import RegisteredAsyncFIFO
from .credits import credit_flag, stepped
from .frame_fifo import FrameFIFO
from .ungated_fifo import UngatedFIFO

__all__ = ["BankedQueue", "RegisteredAsyncFIFO", "credit_flag", "stepped", "FrameFIFO", "UngatedFIFO"]
