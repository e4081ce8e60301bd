"""The packet front end: frames to keys (:class:`KeyExtractor`, with the CRC's linear maps of
:mod:`.crc_maps`), and the de-duplicator that puts the extractor, the core and a packet buffer together
(:class:`PacketDedup`, :mod:`.dedup`)."""

from .dedup import PacketDedup
from .key_extractor import KeyExtractor

__all__ = ["KeyExtractor", "PacketDedup"]
