"""Linear maps over GF(2) of a register (H3 hashes, CRC matrices) in two stages, through the XORs of its nibbles.

An output bit of such a map is the parity of the input bits its mask selects, which is the XOR, over the input's
nibbles (:data:`NIBBLE` bits), of the XOR of the bits the mask selects in that nibble (:func:`nibble_terms`). The
first stage registers each nibble's XOR combinations that some mask takes (at most 15 per nibble, each one LUT4)
once, for every output of every map over the same input (:func:`register_nibble_xors`); the second XORs one of
them per nibble (:func:`xor_terms`: up to 16 terms for a 64-bit input, two LUT4 levels).

Parities of groups of the selected bits in the first stage instead (4 or 8 bits, a LUT or a small tree per
output bit and group) have each input bit feed a LUT in about half of all output bits: for the hash, over a hundred
LUTs beside segments spread over the device's block RAM columns; for the key extractor's CRC matrices, 30 per bit
and matrix. Those nets were the two most congested groups of the packet de-duplicator in nextpnr's router2 heat
map. Through nibble XORs an input bit feeds the 8 combinations it is part of, and a combination a handful of
outputs; the first stage costs one LUT per combination, not one per output bit and group.
"""

from amaranth import Cat, Const, Signal

__all__ = ["NIBBLE", "nibble_terms", "register_nibble_xors", "xor_terms"]

#: Bits per group whose XOR combinations the first stage registers (one LUT4 each).
NIBBLE = 4


def nibble_terms(mask: int, width: int) -> list[tuple[int, int]]:
    """The terms of the parity of the bits ``mask`` selects in a ``width``-bit value, one per :data:`NIBBLE`
    of the value where ``mask`` selects a bit: ``(nibble, combination)``, the XOR of the bits of that nibble set
    in ``combination`` (1 to 15). The parity is the XOR of the terms (an empty list: 0)."""
    terms = []
    for nibble in range(-(-width // NIBBLE)):
        combination = mask >> (NIBBLE * nibble) & ((1 << NIBBLE) - 1)
        if combination:
            terms.append((nibble, combination))
    return terms


def register_nibble_xors(m, value, masks, name: str, *, en=None, reset_less: bool = False) -> dict:
    """Registers (in ``m.d.sync``, loaded when ``en`` if given) the nibble XORs of ``value`` that the parities of
    ``masks`` take, named ``<name>_<nibble>_<combination>``, and returns them by ``(nibble, combination)``."""
    width = len(value)
    xors = {}
    for nibble, combination in sorted({term for mask in masks for term in nibble_terms(mask, width)}):
        bits = [value[NIBBLE * nibble + b] for b in range(NIBBLE) if combination >> b & 1]
        register = Signal(name=f"{name}_{nibble}_{combination:x}", reset_less=reset_less)
        if en is None:
            m.d.sync += register.eq(Cat(*bits).xor())
        else:
            with m.If(en):
                m.d.sync += register.eq(Cat(*bits).xor())
        xors[nibble, combination] = register
    return xors


def xor_terms(xors: dict, mask: int, width: int):
    """The parity of the bits ``mask`` selects in a ``width``-bit value, from its registered nibble XORs
    (:func:`register_nibble_xors`): the XOR of at most ``width / 4`` of them."""
    terms = [xors[term] for term in nibble_terms(mask, width)]
    return Cat(*terms).xor() if terms else Const(0, 1)
