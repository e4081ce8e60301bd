"""An RGMII Gigabit Ethernet MAC: the PHY interface, receive and transmit framing and the MAC composing them, with
frames as ``lib.stream`` beats in the user's clock domain (``docs/ethernet.md``). Every module uses Amaranth and
the generic blocks of :mod:`apbbf.hdl.lib` alone (the clock-crossing FIFO, the frame FIFO), so the package, with
`hdl/lib`, can be taken on its own (the de-duplication appliance built on it is :mod:`apbbf.hdl.appliance`)."""

from .beat_packer import BeatPacker
from .beat_unpacker import BeatUnpacker
from .ecp5_pll import ECP5PLL
from .generic_io import GenericIOPlatform
from .layouts import DATA_WIDTHS, GMIIRxSignature, GMIITxSignature, beat_layout, byte_layout
from .mac import COUNTERS, RGMIIMAC
from .rgmii import RGMII
from .rx_framer import RXFramer
from .tx_framer import TXFramer

__all__ = ["BeatPacker", "BeatUnpacker", "ECP5PLL", "GenericIOPlatform",
           "DATA_WIDTHS", "GMIIRxSignature", "GMIITxSignature", "beat_layout", "byte_layout", "COUNTERS", "RGMIIMAC",
           "RGMII", "RXFramer", "TXFramer"]
