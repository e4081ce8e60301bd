# amaranth: UnusedElaboratable=no
"""ECP5 block RAM for the segments: DP16KD instances with the output register on, and the DP16KD's behaviour in
Amaranth for simulation.

A segment of ``depth`` x ``width`` bits is tiled with DP16KD in one configuration (:func:`apbbf.hdl.lib.devices.tile`
with :data:`~apbbf.hdl.lib.devices.DP16KD_SHAPES`): columns side by side, rows stacked in depth and picked by the high
address bits. Each DP16KD is used as a simple dual port RAM, port A writing and port B reading, or in its 36-bit
pseudo dual port mode (PDPW16KD), as Yosys's ECP5 block RAM mapping connects it
(``techlibs/lattice/brams_map_16kd.v``; nextpnr's ``ecp5/pack.cc`` converts a PDPW16KD to the same pins):

- address: ``AD{A,B}13..AD{A,B}n`` carry the word address, n = 0, 1, 2, 3, 4, 5 for 1, 2, 4, 9, 18, 36 bits per
  word; in the 18-bit mode ``ADA1..0``, in the 36-bit mode ``ADA3..0``, are the byte enables of the write;
- data: ``DIA`` in, ``DOB`` out; in the 36-bit mode the low 18 bits go in on ``DIA`` and out on ``DOA``, the
  high 18 in on ``DIB`` and out on ``DOB`` (``WEA`` high, the byte enables write);
- ``REGMODE_A = REGMODE_B = "OUTREG"``: the read data passes the block's output register, enabled by ``OCEA``
  and ``OCEB``; read data is out two clock edges after the address (the data sheet's 0.96 ns clock-to-out of the
  register, instead of 5.8 ns straight from the array);
- ``CSDECODE`` "0b000" with the chip selects low (always selected), ``WRITEMODE`` "NORMAL", ``GSR`` disabled.

:class:`SimulatedECP5` stands for an ECP5 platform where the design is simulated: the segments are built exactly
as for an ECP5, with :class:`DP16KDModel` in place of each instance.

(The pragma above: the DP16KD models and their arrays are made in ``__init__`` and are used exactly when the
component that made them is, which warns on its own when it is not.)
"""

from amaranth import Cat, ClockSignal, Const, Elaboratable, Instance, Module, Mux, Signal, Value
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from .devices import DP16KD_PARITY_SHAPES, DP16KD_SHAPES, check_parity, parity_bits, tile

__all__ = ["DP16KD_WIDTHS", "SimulatedECP5", "is_ecp5", "DP16KDModel", "BlockRAMSignature", "block_ram_signature",
           "ECP5BlockRAM"]

#: The DP16KD's DATA_WIDTH for each number of power-of-two data bits per word a segment uses, and the address
#: bits below the word address (byte enables or unused) in that mode.
DP16KD_WIDTHS = {32: (36, 5), 16: (18, 4), 8: (9, 3), 4: (4, 2), 2: (2, 1), 1: (1, 0)}


class SimulatedECP5:
    """A stand-in for an ECP5 platform in simulation or a simulation export: elaborated with it
    (``Fragment.get(design, SimulatedECP5())``, ``verilog.convert(design, platform=SimulatedECP5())``), the
    segments are built as for an ECP5 with a :class:`DP16KDModel` in place of each DP16KD instance."""

    family = "ecp5"


def is_ecp5(platform) -> bool:
    """Whether ``platform`` is an ECP5 platform (an :class:`amaranth.vendor.LatticePlatform` with family
    ``"ecp5"``) or a :class:`SimulatedECP5`."""
    from amaranth.vendor import LatticePlatform
    return isinstance(platform, SimulatedECP5) or (isinstance(platform, LatticePlatform) and
                                                   platform.family == "ecp5")


class DP16KDModel(Elaboratable):
    """The behaviour of one DP16KD, built from the same arguments as ``Instance("DP16KD", ...)``: the same ``p_``
    parameters and ``i_``/``o_`` pins.

    It models the DP16KD as the segments use it: both ports of the same DATA_WIDTH (1, 2, 4, 9, 18 or 36), port A
    writing (``CEA``, ``WEA`` and the byte enables on the low address pins) and port B reading (``CEB``), in one
    clock domain; the read data passes the output register when REGMODE is ``"OUTREG"`` (enabled by ``OCEB``,
    cleared by ``RSTB``) and comes straight from the array with ``"NOREG"``. A read of the word being written in
    the same cycle returns the old word (the data sheet leaves it undefined; the segments' users do not rely on
    it).

    Raises
    ------
    ValueError
        If the arguments describe a use the model does not cover (the message names it).
    """

    def __init__(self, **kwargs):
        (self._params, self._inputs, self._outputs, self._width, self._outreg,
         self._domain) = self._parse(kwargs)
        # The array is made here, not in elaborate, so that a simulation can read and write its words
        # (``array.data``) through Amaranth's public API: byte lanes of 9 bits in the 18- and 36-bit modes.
        width, lanes = self._width, {36: 4, 18: 2}.get(self._width, 1)
        self._array = memory.Memory(shape=width, depth=16384 >> _ADDRESS_LOW[width], init=[])
        self._write = self._array.write_port(domain=self._domain, granularity=width // lanes if lanes > 1 else None)
        self._read = self._array.read_port(domain=self._domain, transparent_for=())

    @property
    def array(self) -> memory.Memory:
        """The block's words: a ``lib.memory.Memory`` of ``16384 / 2**n`` words of DATA_WIDTH bits (its one write
        port is port A, its one read port port B). A simulation reads and writes them with ``ctx.get`` and
        ``ctx.set`` on ``array.data[address]``."""
        return self._array

    @staticmethod
    def _parse(kwargs):
        params = {name[2:]: value for name, value in kwargs.items() if name.startswith("p_")}
        inputs = {name[2:]: value for name, value in kwargs.items() if name.startswith("i_")}
        outputs = {name[2:]: value for name, value in kwargs.items() if name.startswith("o_")}
        unknown = [name for name in kwargs if name[:2] not in ("p_", "i_", "o_")]
        if unknown:
            raise ValueError(f"DP16KD arguments must be p_, i_ or o_ ones, not {', '.join(unknown)}")
        width_a, width_b = params.get("DATA_WIDTH_A", 18), params.get("DATA_WIDTH_B", 18)
        if width_a != width_b or width_a not in (1, 2, 4, 9, 18, 36):
            raise ValueError(f"DATA_WIDTH_A and DATA_WIDTH_B must be equal and one of 1, 2, 4, 9, 18, 36, not "
                             f"{width_a} and {width_b}")
        modes = {params.get(f"REGMODE_{port}", "NOREG") for port in "AB"}
        if len(modes) != 1 or not modes <= {"NOREG", "OUTREG"}:
            raise ValueError(f"REGMODE_A and REGMODE_B must be the same, NOREG or OUTREG, not {sorted(modes)}")
        for name, want in (("CSDECODE_A", "0b000"), ("CSDECODE_B", "0b000"), ("WRITEMODE_A", "NORMAL"),
                           ("WRITEMODE_B", "NORMAL"), ("RESETMODE", "SYNC")):
            if params.get(name, want) != want:
                raise ValueError(f"{name} must be {want!r} in this model, not {params[name]!r}")
        for pin in ("CSA0", "CSA1", "CSA2", "CSB0", "CSB1", "CSB2", "WEB", "RSTA"):
            if not _is_zero(inputs.get(pin, 0)):
                raise ValueError(f"{pin} must be tied low in this model (port B only reads, always selected)")
        clock = inputs.get("CLKA")
        if not isinstance(clock, ClockSignal) or repr(inputs.get("CLKB")) != repr(clock):
            raise ValueError("CLKA and CLKB must be the same ClockSignal in this model")
        return params, inputs, outputs, width_a, modes == {"OUTREG"}, clock.domain

    def elaborate(self, platform):
        # The array is a lib.memory with one write port (byte lanes of 9 bits in the 18- and 36-bit modes) and one
        # synchronous read port; the output register follows it as in the block.
        width, low = self._width, _ADDRESS_LOW[self._width]
        # an unconnected clock enable is high, any other unconnected pin low (as nextpnr ties them)
        pin = lambda name: Value.cast(self._inputs.get(name, 1 if name in ("CEA", "CEB", "OCEA", "OCEB") else 0))
        m = Module()
        m.submodules.array = self._array
        write, read = self._write, self._read
        address = lambda port: [pin(f"AD{port}{i}") for i in range(low, 14)]
        m.d.comb += [write.addr.eq(Cat(*address("A"))), read.addr.eq(Cat(*address("B")))]
        if width == 36:
            data_pins = [pin(f"DIA{i}") for i in range(18)] + [pin(f"DIB{i}") for i in range(18)]
            m.d.comb += [write.data.eq(Cat(*data_pins)),
                         write.en.eq(pin("CEA").replicate(4) & Cat(*[pin(f"ADA{i}") for i in range(4)]))]
        elif width == 18:
            m.d.comb += [write.data.eq(Cat(*[pin(f"DIA{i}") for i in range(18)])),
                         write.en.eq((pin("CEA") & pin("WEA")).replicate(2) & Cat(*[pin("ADA0"), pin("ADA1")]))]
        else:
            m.d.comb += [write.data.eq(Cat(*[pin(f"DIA{i}") for i in range(width)])),
                         write.en.eq(pin("CEA") & pin("WEA"))]
        m.d.comb += read.en.eq(pin("CEB"))
        data = read.data
        if self._outreg:
            data = Signal(width)
            with m.If(pin("RSTB")):
                m.d[self._domain] += data.eq(0)
            with m.Elif(pin("OCEB")):
                m.d[self._domain] += data.eq(read.data)
        pins = ([f"DOA{i}" for i in range(18)] + [f"DOB{i}" for i in range(18)] if width == 36 else
                [f"DOB{i}" for i in range(width)])
        for index, name in enumerate(pins):
            if name in self._outputs:
                m.d.comb += self._outputs[name].eq(data[index])
        return m


#: The address bits below the word address in each DATA_WIDTH (byte enables or unused).
_ADDRESS_LOW = {mode: low for mode, low in DP16KD_WIDTHS.values()}


def _is_zero(value) -> bool:
    value = Value.cast(value)
    return isinstance(value, Const) and value.value == 0


class BlockRAMSignature(wiring.Signature):
    """The ports of one segment's block RAM, from the RAM's side (see :class:`ECP5BlockRAM`); with ``parity``,
    also ``write_parity`` and ``read_parity`` (:func:`~apbbf.hdl.lib.devices.parity_bits` bits), stored and read
    with the word. Two are equal when their depth, width and parity are.

    Parameters
    ----------
    depth, width : int
        Words and bits per word.
    parity : bool
    """

    def __init__(self, depth: int, width: int, parity: bool = False):
        check_parity(parity)
        self._depth, self._width, self._parity = depth, width, parity
        members = {
            "read_addr": In(range(depth)),
            "read_en": In(1),
            "read_data": Out(width),
            "write_addr": In(range(depth)),
            "write_data": In(width),
            "write_en": In(1),
        }
        if parity:
            members.update({"write_parity": In(parity_bits(width)), "read_parity": Out(parity_bits(width))})
        super().__init__(members)

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def width(self) -> int:
        return self._width

    @property
    def parity(self) -> bool:
        return self._parity

    def __eq__(self, other):
        return (type(other) is type(self) and
                (other.depth, other.width, other.parity) == (self._depth, self._width, self._parity))

    def __repr__(self):
        return f"BlockRAMSignature({self._depth}, {self._width}, parity={self._parity})"


#: The former name of :class:`BlockRAMSignature`.
block_ram_signature = BlockRAMSignature


class ECP5BlockRAM(wiring.Component):
    """One memory of ``depth`` x ``width`` bits built from DP16KD with the output register on: a read port whose
    data comes two cycles after its address, and a write port.

    Parameters
    ----------
    depth, width : int
        Words and bits per word, 1 or more.
    model : bool
        Build :class:`DP16KDModel` instead of DP16KD instances (for simulation).
    parity : bool
        Also store ``width / 8`` parity bits per word (``write_parity``, ``read_parity``) in the DP16KD's ninth
        bits: the tiling uses the 36-, 18- and 9-bit modes only (:data:`~apbbf.hdl.lib.devices.DP16KD_PARITY_SHAPES`),
        each column's data and its parity in one DP16KD word, so the parity takes no more DP16KD than the data
        alone for a width of 8 bits or more and a power-of-two depth (deeper than 2048 words, in several rows).

    Attributes
    ----------
    read_addr, read_en : In
        Read the word at ``read_addr`` in a cycle with ``read_en`` high.
    read_data : Out(width)
        The word read, two cycles after ``read_en`` (the cycle after the block's output register took it); held
        until the next read's data arrives.
    write_addr, write_data, write_en : In
        Write ``write_data`` at ``write_addr`` at the end of a cycle with ``write_en`` high.
    write_parity : In(width / 8), read_parity : Out(width / 8)
        With ``parity``: stored and read with the word.

    Raises
    ------
    TypeError
        If ``depth`` or ``width`` is not an integer, or ``parity`` not a bool.
    ValueError
        If ``depth`` or ``width`` is below 1.
    """

    def __init__(self, depth: int, width: int, *, model: bool = False, parity: bool = False):
        tile(DP16KD_SHAPES, depth, width)                          # checks depth and width
        check_parity(parity)
        self._tiling = tile(DP16KD_PARITY_SHAPES if parity else DP16KD_SHAPES, depth, width)
        self._depth, self._width, self._model, self._parity = depth, width, bool(model), parity
        super().__init__(BlockRAMSignature(depth, width, parity))
        # The blocks are made here, not in elaborate, so that a simulation reaches the models' arrays
        # (``memories``) through Amaranth's public API.
        self._blocks, self._rows, self._parity_rows = self._tile_blocks()

    @property
    def tiling(self):
        """The :class:`~apbbf.hdl.lib.devices.Tiling` of the memory."""
        return self._tiling

    @property
    def memories(self) -> tuple:
        """With ``model``: the ``lib.memory.Memory`` array of every :class:`DP16KDModel` (row by row, column by
        column within a row), whose words a simulation reads and writes with ``ctx.get``/``ctx.set`` on
        ``data[address]``; without ``model`` none (the DP16KD instances hold the words)."""
        return tuple(block.array for block in self._blocks.values() if isinstance(block, DP16KDModel))

    def _tile_blocks(self):
        """The DP16KD instances (or models) of the tiling, by name, wired to the ports; each row's data and
        parity as they come out of its blocks."""
        # Rows are picked by the high address bits: a write enables one row. With parity each column's
        # word_bits / 8 parity bits follow its data bits in the same DP16KD word (its ninth bits: every byte lane
        # is written at once, so which pin carries which bit does not matter).
        t = self._tiling
        checks = t.word_bits // 8 if self._parity else 0          # parity bits per column
        mode, low = DP16KD_WIDTHS[t.word_bits]
        word_bits = (t.words - 1).bit_length()
        row_bits = max(0, (self._depth - 1).bit_length() - word_bits)
        blocks, rows, parity_rows = {}, [], []
        for row in range(t.rows):
            write_en = self.write_en & (self.write_addr[word_bits:] == row if row_bits else 1)
            columns, parity_columns = [], []
            for column in range(t.columns):
                data_in = self.write_data[column * t.word_bits:(column + 1) * t.word_bits]
                data_out = Signal(len(data_in), name=f"data_r{row}_c{column}")
                columns.append(data_out)
                if checks:
                    parity_in = self.write_parity[column * checks:(column + 1) * checks]
                    parity_out = Signal(len(parity_in), name=f"parity_r{row}_c{column}")
                    parity_columns.append(parity_out)
                    # data padded to the column's word_bits, then the parity bits: mode bits in all
                    data_in = Cat(data_in, Const(0, t.word_bits - len(data_in)), parity_in)
                    data_out = Cat(data_out, Signal(t.word_bits - len(data_out)), parity_out)
                ports = {"i_CLKA": ClockSignal("sync"), "i_CLKB": ClockSignal("sync"),
                         "i_CEA": Const(1), "i_OCEA": Const(1), "i_RSTA": Const(0),
                         "i_CEB": self.read_en, "i_OCEB": Const(1), "i_WEB": Const(0), "i_RSTB": Const(0)}
                ports.update({f"i_CS{port}{i}": Const(0) for port in "AB" for i in range(3)})
                used = min(word_bits, len(self.write_addr))
                write_address = [self.write_addr[i] if i < used else Const(0) for i in range(14 - low)]
                read_address = [self.read_addr[i] if i < used else Const(0) for i in range(14 - low)]
                if mode == 36:
                    enables = [write_en] * 4 + [Const(0)]
                    ports["i_WEA"] = Const(1)
                elif mode == 18:
                    enables = [Const(1)] * 2 + [Const(0)] * 2
                    ports["i_WEA"] = write_en
                else:
                    enables = [Const(0)] * low
                    ports["i_WEA"] = write_en
                ports.update({f"i_ADA{i}": bit for i, bit in enumerate(enables + write_address)})
                ports.update({f"i_ADB{i}": bit for i, bit in enumerate([Const(0)] * low + read_address)})
                # data in on DIA (and DIB: the high half in the 36-bit mode), out on DOB (DOA, DOB)
                pins_in = [f"DIA{i}" for i in range(18)] + [f"DIB{i}" for i in range(18)]
                carried = min(len(data_in), mode)
                for index, name in enumerate(pins_in):
                    ports[f"i_{name}"] = data_in[index] if index < carried else Const(0)
                pins_out = ([f"DOA{i}" for i in range(18)] + [f"DOB{i}" for i in range(18)] if mode == 36 else
                            [f"DOB{i}" for i in range(mode)])
                for index, name in enumerate(pins_out[:len(data_out)]):
                    ports[f"o_{name}"] = data_out[index]
                params = {"p_DATA_WIDTH_A": mode, "p_DATA_WIDTH_B": mode, "p_REGMODE_A": "OUTREG",
                          "p_REGMODE_B": "OUTREG", "p_CSDECODE_A": "0b000", "p_CSDECODE_B": "0b000",
                          "p_WRITEMODE_A": "NORMAL", "p_WRITEMODE_B": "NORMAL", "p_RESETMODE": "SYNC",
                          "p_ASYNC_RESET_RELEASE": "SYNC", "p_GSR": "DISABLED"}
                name = f"ebr_r{row}_c{column}"
                blocks[name] = DP16KDModel(**params, **ports) if self._model else Instance("DP16KD", **params,
                                                                                            **ports)
            rows.append(Cat(*columns)[:self._width])
            parity_rows.append(Cat(*parity_columns))
        return blocks, rows, parity_rows

    def elaborate(self, platform):
        # The blocks (_tile_blocks) read in one cycle and register the data in the next; the read's row goes
        # through two registers beside them (address, then output register) to pick the row's data. The output
        # registers load on every clock: without a read (``CEB`` low) a block's read data holds, so they keep the
        # last read's word either way, and no enable net fans out to every block (a register of the constant
        # read enable of the parallel scan, which Yosys merged across the lanes' cores into one net to all).
        t = self._tiling
        word_bits = (t.words - 1).bit_length()
        m = Module()
        for name, block in self._blocks.items():
            m.submodules[name] = block
        row_bits = max(0, (self._depth - 1).bit_length() - word_bits)
        read_row, data_row = Signal(row_bits), Signal(row_bits)
        if row_bits:
            with m.If(self.read_en):
                m.d.sync += read_row.eq(self.read_addr[word_bits:])
            m.d.sync += data_row.eq(read_row)
        rows, parity_rows = self._rows, self._parity_rows
        data, parity = rows[0], parity_rows[0]
        for row in range(1, t.rows):
            data = Mux(data_row == row, rows[row], data)
            parity = Mux(data_row == row, parity_rows[row], parity)
        m.d.comb += self.read_data.eq(data)
        if self._parity:
            m.d.comb += self.read_parity.eq(parity[:len(self.read_parity)])
        return m
