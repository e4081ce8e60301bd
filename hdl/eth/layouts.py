"""The shapes the Ethernet blocks pass between them: GMII bytes in the PHY's clock domains, frame bytes with their
end and error, and the frame beats of the user's side (the shape :class:`~apbbf.hdl.packet.dedup.PacketDedup`
takes, without the time)."""

from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

__all__ = ["DATA_WIDTHS", "MIN_FRAME", "MIN_PAYLOAD", "FCS_BYTES", "PREAMBLE", "SFD", "MIN_IFG",
           "GMIIRxSignature", "GMIITxSignature", "byte_layout", "beat_layout", "check_data_width"]

#: Widths of the user-side beats the MAC takes and gives, bits.
DATA_WIDTHS = (8, 16, 32, 64, 128, 256, 512)
#: Shortest valid frame on the wire, from the destination address to the FCS inclusive, bytes.
MIN_FRAME = 64
#: Frames shorter than this (without the FCS) are padded with zeros on transmit, bytes.
MIN_PAYLOAD = MIN_FRAME - 4
FCS_BYTES = 4
PREAMBLE = 0x55
SFD = 0xD5
#: Inter-frame gap, byte times.
MIN_IFG = 12


def check_data_width(data_width) -> None:
    """Raise ``TypeError``/``ValueError`` unless ``data_width`` is one of :data:`DATA_WIDTHS`."""
    if isinstance(data_width, bool) or not isinstance(data_width, int):
        raise TypeError(f"data_width must be an integer, not {data_width!r}")
    if data_width not in DATA_WIDTHS:
        raise ValueError(f"data_width must be one of {DATA_WIDTHS}, not {data_width}")


class GMIIRxSignature(wiring.Signature):
    """What the PHY receives, one byte per clock of its receive domain: ``data``, ``dv`` (data valid: the byte is
    part of a frame, preamble included) and ``er`` (the PHY saw a coding error; with ``dv`` low it means carrier
    extension or a false carrier, which the MAC ignores)."""

    def __init__(self):
        super().__init__({"data": Out(8), "dv": Out(1), "er": Out(1)})


class GMIITxSignature(wiring.Signature):
    """What the PHY transmits, one byte per clock of its transmit domain: ``data``, ``en`` (the byte is part of a
    frame, preamble included) and ``er`` (propagate an error: the link partner sees the frame as bad)."""

    def __init__(self):
        super().__init__({"data": Out(8), "en": Out(1), "er": Out(1)})


def byte_layout() -> data.StructLayout:
    """One byte of a frame between the framers and the beat packing: ``data``, ``last`` and ``error`` (on the
    last byte: the frame is bad)."""
    return data.StructLayout({"data": 8, "last": 1, "error": 1})


def beat_layout(data_width: int) -> data.StructLayout:
    """One beat of a frame on the user's side: ``data`` (byte i in bits 8i+7..8i), ``keep`` (bytes present,
    packed from lane 0; only the last beat may be partial), ``last`` and ``user.error`` (on the last beat: the
    frame is bad: a bad FCS, an error from the PHY, a runt, or cut short by a full buffer). The frame is without
    its FCS: the receiver checks and removes it, the transmitter appends it."""
    check_data_width(data_width)
    return data.StructLayout({
        "data": data_width, "keep": data_width // 8, "last": 1,
        "user": data.StructLayout({"error": 1}),
    })
