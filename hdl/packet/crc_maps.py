"""CRC-64/XZ (the packet key's CRC, :data:`apbbf.model.packet.CRC`) as linear maps over GF(2), for datapaths
that apply zero padding, a trailer or a beat of any width as constant matrices: the library's algorithm run
bit-serially on unit vectors (:class:`CRCModel`), checked against ``amaranth.lib.crc`` (:func:`crc_model`).
Used by :class:`~apbbf.hdl.packet.key_extractor.KeyExtractor`."""

from functools import lru_cache

from amaranth import Cat, Const

from ...model.packet import BLOCK_BYTES, CRC

__all__ = ["CRCModel", "crc_model", "reflect", "compose", "transform", "inverse", "zeros_matrix", "step_matrix",
           "StateBasis", "state_basis", "trailer_matrix", "apply_rows", "xor_lut4"]

_M64 = (1 << 64) - 1


def reflect(value: int, width: int) -> int:
    return int(f"{value:0{width}b}"[::-1], 2)


class CRCModel:
    """The reflected CRC-64/XZ register, bit-serial, from the library's algorithm parameters."""

    def __init__(self):
        alg = CRC(8).algorithm
        assert alg.crc_width == 64 and alg.reflect_input and alg.reflect_output
        self.poly = reflect(alg.polynomial, 64)
        self.init = reflect(alg.initial_crc, 64)
        self.xor_output = alg.xor_output

    def feed(self, state: int, value: int, nbytes: int) -> int:
        """The register after ``nbytes`` bytes of ``value`` (byte 0 first, each LSB first)."""
        poly = self.poly
        for i in range(nbytes):
            state ^= (value >> (8 * i)) & 0xFF
            for _ in range(8):
                state = (state >> 1) ^ (poly if state & 1 else 0)
        return state

    def unzero(self, state: int, nbytes: int) -> int:
        """The inverse of ``feed(state, 0, nbytes)`` (the polynomial has x^0, so bit 63 tells the step)."""
        for _ in range(8 * nbytes):
            state = (((state ^ self.poly) << 1) | 1) & _M64 if state >> 63 else (state << 1) & _M64
        return state

    def matrix(self, function, inputs: int) -> list[int]:
        """Row masks of the linear map ``function`` (on ``inputs`` bits): output bit r = parity(x & rows[r])."""
        columns = [function(1 << j) for j in range(inputs)]
        return [sum(1 << j for j, c in enumerate(columns) if c >> r & 1) for r in range(64)]


@lru_cache(maxsize=1)
def crc_model() -> CRCModel:
    model = CRCModel()
    for text in (b"123456789", bytes(range(70))):
        got = model.feed(model.init, int.from_bytes(text, "little"), len(text)) ^ model.xor_output
        assert got == CRC(8).compute(text), "the register model disagrees with amaranth.lib.crc"
    return model


def compose(outer, inner) -> tuple[int, ...]:
    """Row masks of ``outer`` after ``inner`` (both from :meth:`CRCModel.matrix`, ``outer`` on 64 bits): output
    bit r is the parity of the inner bits that ``outer``'s row r selects, so its row is their rows' XOR."""
    rows = []
    for row in outer:
        combined, i = 0, 0
        while row:
            if row & 1:
                combined ^= inner[i]
            row >>= 1
            i += 1
        rows.append(combined)
    return tuple(rows)


@lru_cache(maxsize=None)
def zeros_matrix(nbytes: int) -> tuple[int, ...]:
    """``A^nbytes``: the register after ``nbytes`` zero bytes (``A`` from the register model, its powers by
    squaring: the bit-serial register would take 512 steps per byte)."""
    if nbytes < 0:
        raise ValueError(f"nbytes must be at least 0, not {nbytes}")
    if nbytes <= 1:
        model = crc_model()
        return tuple(model.matrix(lambda s: model.feed(s, 0, nbytes), 64))
    half = zeros_matrix(nbytes // 2)
    even = compose(half, half)
    return compose(zeros_matrix(1), even) if nbytes % 2 else even


@lru_cache(maxsize=None)
def step_matrix(step: int) -> tuple[int, ...]:
    """One beat of ``step`` bytes: the register after it, as a linear map of ``Cat(state, beat)``."""
    model = crc_model()
    return tuple(model.matrix(lambda x: model.feed(x & _M64, x >> 64, step), 64 + 8 * step))


def transform(rows, value: int) -> int:
    """``rows`` (row masks) applied to the integer ``value``: bit r of the result is the parity of
    ``value & rows[r]``."""
    return sum((bin(row & value).count("1") & 1) << r for r, row in enumerate(rows))


def _columns_to_rows(columns) -> tuple[int, ...]:
    return tuple(sum((column >> r & 1) << j for j, column in enumerate(columns)) for r in range(64))


def _reduce(echelon: dict, vector: int) -> int:
    """``vector`` less its part in the span of ``echelon`` (pivot bit -> vector with that highest bit)."""
    while vector and vector.bit_length() - 1 in echelon:
        vector ^= echelon[vector.bit_length() - 1]
    return vector


def inverse(rows) -> tuple[int, ...]:
    """The inverse of the invertible 64 x 64 matrix ``rows`` (row masks), by Gauss-Jordan elimination."""
    work = [(row, 1 << r) for r, row in enumerate(rows)]
    for column in range(64):
        pivot = next((i for i in range(column, 64) if work[i][0] >> column & 1), None)
        if pivot is None:
            raise ValueError("the matrix is singular")
        work[column], work[pivot] = work[pivot], work[column]
        for i in range(64):
            if i != column and work[i][0] >> column & 1:
                work[i] = (work[i][0] ^ work[column][0], work[i][1] ^ work[column][1])
    return tuple(identity for _, identity in work)


class StateBasis:
    """The register's 64 bits in the basis where a beat's state step ``A = A^step`` is (block) companion: a
    state-space transformation (J. H. Derby, "High-speed CRC computation using state-space transformations",
    GLOBECOM 2001). With ``s = K u`` and ``u = T s``, ``s' = A s ^ x`` becomes
    ``u' = (T A K) u ^ T x``, and ``T A K`` has at most two ones a row (a companion block per Krylov chain
    ``v, A v, A^2 v, ...``): the loop that runs once per beat is one LUT level; ``T`` and ``K`` go into the
    feed-forward matrices before and after it.

    Parameters
    ----------
    step : int
        Bytes of a beat.

    Attributes
    ----------
    to_basis : tuple of int
        ``T``, row masks (u = T s).
    from_basis : tuple of int
        ``K``, row masks (s = K u).
    loop : tuple of int
        ``T A K``, row masks.
    """

    def __init__(self, step: int):
        A = zeros_matrix(step)
        # Chains from unit vectors first (the longest), then from A's fixed vectors and unit vectors: for
        # CRC-64/XZ, whose polynomial has (x + 1)^2 as a factor, A^step has a 2-dimensional fixed space and no
        # cyclic vector; a chain of 63 and one fixed vector outside it leave every row two ones at most.
        def chain(start, echelon):
            vectors, echelon, v = [], dict(echelon), start
            while (reduced := _reduce(echelon, v)):
                echelon[reduced.bit_length() - 1] = reduced
                vectors.append(v)
                v = transform(A, v)
            return vectors, echelon

        columns, echelon = max((chain(1 << j, {}) for j in range(64)), key=lambda c: len(c[0]))
        candidates = _null_space([row ^ (1 << r) for r, row in enumerate(A)]) + [1 << j for j in range(64)]
        for start in candidates:
            if len(columns) == 64:
                break
            more, echelon = chain(start, echelon)
            columns += more
        self.from_basis = _columns_to_rows(columns)
        self.to_basis = inverse(self.from_basis)
        self.loop = compose(self.to_basis, compose(A, self.from_basis))


def _null_space(rows) -> list[int]:
    """A basis of the vectors ``v`` with ``transform(rows, v) == 0``."""
    work, pivots = list(rows), []
    for column in range(64):
        pivot = next((i for i in range(len(pivots), 64) if work[i] >> column & 1), None)
        if pivot is None:
            continue
        r = len(pivots)
        work[r], work[pivot] = work[pivot], work[r]
        for i in range(64):
            if i != r and work[i] >> column & 1:
                work[i] ^= work[r]
        pivots.append(column)
    free = [c for c in range(64) if c not in pivots]
    basis = []
    for f in free:
        v = 1 << f
        for r, c in enumerate(pivots):
            if work[r] >> f & 1:
                v |= 1 << c
        basis.append(v)
    return basis


@lru_cache(maxsize=None)
def state_basis(step: int) -> StateBasis:
    """The :class:`StateBasis` of a beat of ``step`` bytes."""
    return StateBasis(step)


@lru_cache(maxsize=None)
def trailer_matrix(bits: int, slots: int = 1) -> tuple[int, ...]:
    """The trailer block's contribution from a zero register, a linear map of the segments' lengths:
    ``Cat(len_0, ..., len_(slots-1))``, ``bits`` bits each, ``len_r`` in the trailer's bytes ``4r .. 4r + 3``."""
    if not 1 <= bits <= 32:
        raise ValueError(f"bits must be 1..32, not {bits}")
    model = crc_model()
    field = (1 << bits) - 1

    def trailer(lengths):
        value = 0
        for r in range(slots):
            value |= (lengths >> (bits * r) & field) << (32 * r)
        return model.feed(0, value, BLOCK_BYTES)

    return tuple(model.matrix(trailer, bits * slots))


def apply_rows(rows, value):
    """``rows`` (from :meth:`CRCModel.matrix`) applied to ``value``: one XOR tree per output bit."""
    return Cat(*[(value & row).xor() if row else Const(0) for row in rows])


def xor_lut4(rows) -> int:
    """LUT4s of ``rows`` (from :meth:`CRCModel.matrix`) as XOR trees of 4-input LUTs: a row of weight w >= 2
    needs ``ceil((w - 1) / 3)`` (each LUT4 folds three more inputs in); a row of weight 0 or 1 is a wire."""
    return sum(-(-(bin(row).count("1") - 1) // 3) for row in rows if bin(row).count("1") > 1)
