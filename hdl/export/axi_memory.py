# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""An AXI4 master for the memory port of :class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`: the filter's segments
in a memory behind a user's own controller (Xilinx MIG, Intel EMIF, HBM) or interconnect.

Each request of the port (:class:`~apbbf.hdl.core.memory_port.MemoryPortSignature`: one block word of B bits) is
one AXI4 transaction with ID 0, burst type INCR, at byte address ``base + addr * B/8``:

- ``B == data_width``: one beat (``AxLEN = 0``, ``AxSIZE`` the bus width), every byte strobed;
- ``B > data_width``: one burst of ``B / data_width`` beats (``AxLEN = B/data_width - 1``, ``AxSIZE`` the bus
  width), beat 0 the block's least significant bits; at most 256 beats, and a block of at most 4096 bytes
  (aligned to its size, a burst never crosses a 4 KB boundary);
- ``B < data_width``: one beat (``AxLEN = 0``) of the bus width (``AxSIZE = log2(data_width/8)``) at the block's
  own byte address, which need not be aligned to the bus: ``WSTRB`` selects the block's B/8 bytes (the data is
  repeated on every lane), and the read data is taken from those lanes. Blocks narrower than a byte are refused.

Reads keep their order (one ID: AXI4 returns them in order); each answer is queued (in a FIFO of
``max_outstanding`` blocks) and offered on the port from the cycle after its last beat. A write is ``written``
when its B response arrives; with a single ID they arrive in order. A response other than OKAY (SLVERR, DECERR)
is counted (``read_errors``, ``write_errors``); a read that failed answers all ones (the filter may then report
a false positive, never a false negative), a write that failed is still reported ``written`` (the filter may
have lost that block's bits: a false negative is possible, which the counter tells).

Every AXI output is a register or a constant except ``RREADY`` (high whenever the answer queue has room, which
the bound below keeps: always) and ``BREADY`` (always high): R and B are never held back. ``AxVALID`` and
``WVALID`` are raised without waiting for any ready, and address, data and strobes hold still while valid. At
most ``max_outstanding`` reads (from the request taken to the answer taken by the port) and ``max_outstanding``
writes (from the request taken to its B response) are in flight; the adapter holds at most ``max_outstanding``
answers and one block to write, and backpressures the port: ``req.ready`` is low while the channel the request
needs is busy (``ARREADY``, ``AWREADY``, ``WREADY`` low) or the bound is reached, and the answers wait while the
port's ``rsp.ready`` is low. R never waits for the port, so a memory that stops taking reads while their answers
are unread (every real one, eventually) never stalls a write behind them, provided the bound covers every read
the requester may leave unanswered: for :class:`~apbbf.hdl.core.memory_apbbf.MemoryAPBBF`, ``min(depth, 2) *
physical_segments`` (:func:`~apbbf.hdl.core.scan_memory.reads_unanswered`;
:class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF` refuses less).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config, check_integer
from ..core.memory_port import MemoryPortSignature

__all__ = ["AXI_DATA_WIDTHS", "MAX_OUTSTANDING", "ADDR_WIDTHS", "AXI4Signature", "AXI4MemoryAdapter",
           "axi_beats", "memory_bytes"]

#: AXI data widths the adapter drives, in bits (powers of two).
AXI_DATA_WIDTHS = (32, 64, 128, 256, 512, 1024)
#: Transactions in flight per direction at most.
MAX_OUTSTANDING = range(1, 4097)
#: Byte address widths.
ADDR_WIDTHS = range(12, 65)

#: AXI4 constants: INCR bursts, the OKAY response, AxCACHE "normal non-cacheable bufferable" (the value Xilinx IP
#: recommends; a read after a write's response still sees the write, AXI4 A4.4).
BURST_INCR = 0b01
CACHE = 0b0011


def memory_bytes(config: Config) -> int:
    """Bytes of the memory region the filter uses: ``memory_blocks * B/8``.

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError
        If it has no row layout, or B < 8.
    """
    _check_config(config)
    return config.memory_blocks * config.block_bits // 8


def axi_beats(config: Config, data_width: int) -> int:
    """AXI beats per block: ``B / data_width``, or 1 when the block is as wide as the bus or narrower."""
    return max(1, config.block_bits // data_width)


def _check_config(config) -> Config:
    check_config(config)
    if not config.row_layout:
        raise ValueError("an AXI memory needs a Config with a row layout (row_bits > 0), not row_bits=0")
    if config.block_bits < 8:
        raise ValueError(f"block_bits must be at least 8 for an AXI memory (a block is a whole number of bytes "
                         f"at a byte address), not {config.block_bits}")
    return config


class AXI4Signature(wiring.Signature):
    """An AXI4 interface from the master's side (read and write channels, no ``*USER`` and no ``*REGION``),
    members named as the AXI4 signals are (``awaddr``, ``wdata``, ``rresp``, ...): a top that exports them as
    ``m_axi_<member>`` is bound by cocotbext-axi's ``AxiBus.from_prefix(dut, "m_axi")`` and by vendor interface
    inference.

    Parameters
    ----------
    addr_width : int
        Byte address bits, 12..64.
    data_width : int
        Data bits, one of :data:`AXI_DATA_WIDTHS`.
    id_width : int
        ID bits, 1..32.

    Raises
    ------
    TypeError
        If a width is not an integer.
    ValueError
        If a width is out of range.
    """

    def __init__(self, addr_width: int, data_width: int, id_width: int = 1):
        check_integer("addr_width", addr_width, ADDR_WIDTHS)
        _check_data_width(data_width)
        check_integer("id_width", id_width, range(1, 33))
        self.addr_width, self.data_width, self.id_width = addr_width, data_width, id_width
        members = {}
        for channel in ("aw", "ar"):
            members.update({f"{channel}id": Out(id_width), f"{channel}addr": Out(addr_width),
                            f"{channel}len": Out(8), f"{channel}size": Out(3), f"{channel}burst": Out(2),
                            f"{channel}lock": Out(1), f"{channel}cache": Out(4), f"{channel}prot": Out(3),
                            f"{channel}qos": Out(4), f"{channel}valid": Out(1), f"{channel}ready": In(1)})
            if channel == "aw":
                members.update({"wdata": Out(data_width), "wstrb": Out(data_width // 8), "wlast": Out(1),
                                "wvalid": Out(1), "wready": In(1),
                                "bid": In(id_width), "bresp": In(2), "bvalid": In(1), "bready": Out(1)})
        members.update({"rid": In(id_width), "rdata": In(data_width), "rresp": In(2), "rlast": In(1),
                        "rvalid": In(1), "rready": Out(1)})
        super().__init__(members)

    def __repr__(self):
        return f"AXI4Signature({self.addr_width}, {self.data_width}, {self.id_width})"


def _check_data_width(data_width) -> int:
    check_integer("data_width", data_width)
    if data_width not in AXI_DATA_WIDTHS:
        raise ValueError(f"data_width must be a power of two from 32 to 1024 bits, not {data_width}")
    return data_width


def check_axi_options(config: Config, data_width: int, base: int, addr_width: int | None) -> int:
    """Check the adapter's options for ``config``; returns the address width (``addr_width``, or the fewest of 32
    and 64 bits that reach the end of the region when it is None).

    Raises
    ------
    TypeError
        If ``config`` is not a Config, or an option not an integer.
    ValueError
        If the Config has no row layout or B < 8; ``data_width`` is not a power of two from 32 to 1024; a block
        needs more than 256 beats or is larger than 4096 bytes; ``base`` is negative or not a multiple of the
        larger of a block and a bus word in bytes; ``addr_width`` is not 12..64 or the region does not fit under
        it. Each message names the option and its range.
    """
    _check_config(config)
    _check_data_width(data_width)
    B = config.block_bits
    if B // data_width > 256:
        raise ValueError(f"block_bits={B} at data_width={data_width} needs {B // data_width} beats per burst; AXI4 "
                         f"allows 256 at most (data_width must be at least {B // 256})")
    if B > 8 * 4096:
        raise ValueError(f"block_bits={B} is {B // 8} bytes: an AXI4 burst may not cross a 4 KB boundary, so a block "
                         "is at most 4096 bytes (32768 bits)")
    check_integer("base", base, range(0, 1 << 64))
    align = max(B, data_width) // 8
    if base % align:
        raise ValueError(f"base must be a multiple of {align} bytes (the larger of a block and a bus word), "
                         f"not {base:#x}")
    end = base + memory_bytes(config)
    if addr_width is None:
        addr_width = 32 if end <= 1 << 32 else 64
    check_integer("addr_width", addr_width, ADDR_WIDTHS)
    if end > 1 << addr_width:
        raise ValueError(f"the region from base={base:#x} of {memory_bytes(config)} bytes ends at {end:#x}, past "
                         f"addr_width={addr_width} bits (2**{addr_width} bytes)")
    return addr_width


class AXI4MemoryAdapter(wiring.Component):
    """The memory of a :class:`~apbbf.hdl.core.memory_port.MemoryPortSignature` port, as an AXI4 master (the
    transaction pattern, ordering and bounds are in this module's documentation).

    Parameters
    ----------
    config : Config
        With a row layout and B >= 8.
    data_width : int
        AXI data bits: a power of two from 32 to 1024.
    base : int
        Byte address of block word 0; a multiple of ``max(B, data_width) / 8``.
    addr_width : int or None
        AXI byte address bits, 12..64 (default: 32, or 64 if the region ends past 4 GiB).
    max_outstanding : int
        Reads in flight at most (the answer queue's blocks), and writes in flight at most, 1..4096.

    Attributes
    ----------
    memory : In(MemoryPortSignature(config))
        The port the core drives (``req`` in, ``rsp`` and ``written`` out).
    axi : Out(AXI4Signature(addr_width, data_width))
        The AXI4 master.
    read_errors, write_errors : Out(32)
        Read bursts answered with SLVERR or DECERR on any beat, and B responses with SLVERR or DECERR (wrap).
    reads_outstanding, writes_outstanding : Out(range(max_outstanding + 1))
        Reads and writes in flight now.

    Raises
    ------
    TypeError
        If ``config`` is not a Config or an option not an integer.
    ValueError
        As :func:`check_axi_options`; if ``max_outstanding`` is not 1..4096.
    """

    def __init__(self, config: Config, *, data_width: int = 64, base: int = 0, addr_width: int | None = None,
                 max_outstanding: int = 8):
        addr_width = check_axi_options(config, data_width, base, addr_width)
        check_integer("max_outstanding", max_outstanding, MAX_OUTSTANDING)
        self._config, self._data_width, self._base = config, data_width, base
        self._addr_width, self._max_outstanding = addr_width, max_outstanding
        super().__init__({
            "memory": In(MemoryPortSignature(config)),
            "axi": Out(AXI4Signature(addr_width, data_width)),
            "read_errors": Out(32),
            "write_errors": Out(32),
            "reads_outstanding": Out(range(max_outstanding + 1)),
            "writes_outstanding": Out(range(max_outstanding + 1)),
        })

    @property
    def config(self) -> Config:
        return self._config

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def base(self) -> int:
        return self._base

    @property
    def addr_width(self) -> int:
        return self._addr_width

    @property
    def max_outstanding(self) -> int:
        return self._max_outstanding

    @property
    def beats(self) -> int:
        """AXI beats per block (:func:`axi_beats`)."""
        return axi_beats(self._config, self._data_width)

    def elaborate(self, platform):
        c, W, axi = self._config, self._data_width, self.axi
        B, N, limit = c.block_bits, self.beats, self._max_outstanding
        req, rsp = self.memory.req, self.memory.rsp
        m = Module()

        # Byte address of the requested block: addr * B/8 + base (B/8 a power of two, base aligned to it).
        byte_addr = Signal(self._addr_width)
        m.d.comb += byte_addr.eq(Cat(Const(0, (B // 8).bit_length() - 1), req.payload.addr) + self._base)
        size = (W // 8).bit_length() - 1                      # every beat is the bus width
        lanes = W // B if B < W else 1                        # blocks per bus word
        lane_bits = (lanes - 1).bit_length()
        lane = req.payload.addr[:lane_bits]

        for channel in ("aw", "ar"):
            m.d.comb += [getattr(axi, f"{channel}id").eq(0), getattr(axi, f"{channel}len").eq(N - 1),
                         getattr(axi, f"{channel}size").eq(size), getattr(axi, f"{channel}burst").eq(BURST_INCR),
                         getattr(axi, f"{channel}lock").eq(0), getattr(axi, f"{channel}cache").eq(CACHE),
                         getattr(axi, f"{channel}prot").eq(0), getattr(axi, f"{channel}qos").eq(0)]

        # Reads: one AR register; the lane of each read in flight (B < W) in a FIFO; the beats of the oldest
        # read gathered, then queued as its answer. A read is taken only with room for its answer, so R is
        # never held back: a memory that stops taking reads while their answers wait cannot stall the writes.
        reads = Signal(range(limit + 1))
        ar_valid, ar_addr = Signal(), Signal(self._addr_width)
        read_ready = (~ar_valid | axi.arready) & (reads < limit)
        if lanes > 1:
            m.submodules.lanes = lane_fifo = fifo.SyncFIFOBuffered(width=lane_bits, depth=limit)
            read_ready &= lane_fifo.w_rdy
        take_read = req.valid & ~req.payload.write & read_ready
        m.d.comb += [axi.arvalid.eq(ar_valid), axi.araddr.eq(ar_addr)]
        if lanes > 1:
            m.d.comb += [lane_fifo.w_data.eq(lane), lane_fifo.w_en.eq(take_read)]
        with m.If(axi.arready):
            m.d.sync += ar_valid.eq(0)
        with m.If(take_read):
            m.d.sync += [ar_valid.eq(1), ar_addr.eq(byte_addr)]

        m.submodules.answers = answers = fifo.SyncFIFOBuffered(width=B + 1, depth=limit)
        gathered, beat, beat_error = Signal(max(0, B - W)), Signal(range(N)), Signal()
        answered = rsp.valid & rsp.ready
        r_ready = answers.w_rdy                               # always high: ``reads`` bounds the answers
        if lanes > 1:
            r_ready &= lane_fifo.r_rdy
        r_beat = axi.rvalid & r_ready
        beat_data = axi.rdata.word_select(lane_fifo.r_data, B) if lanes > 1 else axi.rdata[:B]
        r_failed = axi.rresp[1]                               # SLVERR (2) or DECERR (3)
        last_beat = beat == N - 1
        m.d.comb += [axi.rready.eq(r_ready),
                     answers.w_data.eq(Cat(Cat(gathered, beat_data) if N > 1 else beat_data,
                                           beat_error | r_failed)),
                     answers.w_en.eq(r_beat & last_beat),
                     rsp.valid.eq(answers.r_rdy), answers.r_en.eq(rsp.ready),
                     rsp.payload.data.eq(Mux(answers.r_data[B], (1 << B) - 1, answers.r_data[:B]))]
        with m.If(r_beat):
            with m.If(last_beat):
                if lanes > 1:
                    m.d.comb += lane_fifo.r_en.eq(1)
                m.d.sync += [beat.eq(0), beat_error.eq(0),
                             self.read_errors.eq(self.read_errors + (beat_error | r_failed))]
            with m.Else():
                m.d.sync += [beat.eq(beat + 1), beat_error.eq(beat_error | r_failed)]
                if N > 1:
                    m.d.sync += gathered.eq(Cat(gathered[W:], beat_data) if N > 2 else beat_data)
        m.d.sync += reads.eq(reads + take_read - answered)

        # Writes: one AW register and one W register (the block, shifted out a beat at a time), both loaded when a
        # write is taken, so AWVALID and WVALID rise together and neither waits for the other's ready.
        writes = Signal(range(limit + 1))
        aw_valid, aw_addr = Signal(), Signal(self._addr_width)
        w_valid, w_beat = Signal(), Signal(range(N))
        w_data, w_strb = Signal(max(B, W)), Signal(W // 8)
        w_last = w_beat == N - 1
        write_ready = (~aw_valid | axi.awready) & (~w_valid | (axi.wready & w_last)) & (writes < limit)
        take_write = req.valid & req.payload.write & write_ready
        m.d.comb += [axi.awvalid.eq(aw_valid), axi.awaddr.eq(aw_addr), axi.wvalid.eq(w_valid),
                     axi.wdata.eq(w_data[:W]), axi.wstrb.eq(w_strb), axi.wlast.eq(w_last)]
        with m.If(axi.awready):
            m.d.sync += aw_valid.eq(0)
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += [w_data.eq(w_data >> W), w_beat.eq(w_beat + 1)]
            with m.If(w_last):
                m.d.sync += [w_valid.eq(0), w_beat.eq(0)]
        with m.If(take_write):
            block_strb = (1 << (B // 8)) - 1 if B < W else (1 << (W // 8)) - 1
            m.d.sync += [aw_valid.eq(1), aw_addr.eq(byte_addr), w_valid.eq(1), w_beat.eq(0),
                         w_data.eq(Cat(*[req.payload.data] * lanes)),
                         w_strb.eq(Const(block_strb, W // 8) << (lane * (B // 8)) if lanes > 1 else block_strb)]
        landed = axi.bvalid & axi.bready
        m.d.comb += [axi.bready.eq(1), self.memory.written.eq(landed)]
        with m.If(landed & axi.bresp[1]):
            m.d.sync += self.write_errors.eq(self.write_errors + 1)
        m.d.sync += writes.eq(writes + take_write - landed)

        m.d.comb += [req.ready.eq(Mux(req.payload.write, write_ready, read_ready)),
                     self.reads_outstanding.eq(reads), self.writes_outstanding.eq(writes)]
        return m
