"""An RGMII Gigabit Ethernet MAC: the PHY interface, receive and transmit framing and the MAC composing them, with
frames as ``lib.stream`` beats in the user's clock domain (``docs/ethernet.md``). Every module but
``appliance`` (the de-duplication appliance's top) uses Amaranth alone, so the package can be taken on its own."""

from .beat_packer import BeatPacker
from .beat_unpacker import BeatUnpacker
from .cdc_fifo import RegisteredAsyncFIFO
from .ecp5_pll import ECP5PLL
from .frame_fifo import FrameFIFO
from .generic_io import GenericIOPlatform
from .layouts import DATA_WIDTHS, GMIIRxSignature, GMIITxSignature, beat_layout, byte_layout
from .mac import COUNTERS, RGMIIMAC
from .rgmii import RGMII
from .rx_framer import RXFramer
from .tx_framer import TXFramer

__all__ = ["BeatPacker", "BeatUnpacker", "RegisteredAsyncFIFO", "ECP5PLL", "FrameFIFO", "GenericIOPlatform",
           "DATA_WIDTHS", "GMIIRxSignature", "GMIITxSignature", "beat_layout", "byte_layout", "COUNTERS", "RGMIIMAC",
           "RGMII", "RXFramer", "TXFramer"]
