# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""The memory port of a filter in external memory (:class:`~apbbf.hdl.core.memory_port.MemoryPortSignature`) on
a LiteDRAM native user port."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ...model.config import Config, check_config, check_integer
from ..core.memory_port import MemoryPortSignature

__all__ = ["NativePortSignature", "NativePortAdapter"]


class NativePortSignature(wiring.Signature):
    """LiteDRAM's native user port, from the user's side (the user drives ``cmd`` and ``wdata``):

    - ``cmd`` (out): ``we`` (1: a write) and ``addr`` (a word of ``data_width`` bits);
    - ``wdata`` (out): ``data`` and ``we`` (byte enables) of each write, in the order of the write commands,
      taken when ``wdata.ready`` is high (some cycles after its command);
    - ``rdata`` (in): ``data`` of each read, in the order of the reads; LiteDRAM's crossbar ignores
      ``rdata.ready``: the user must take every word as it comes.

    The port keeps the order of its commands, reads and writes together (LiteDRAM's crossbar lets a port into
    another bank only once its commands in the last one are done): a read after a write to the same word
    returns it.

    Parameters
    ----------
    addr_width, data_width : int
        Word address bits (1..64) and data bits (8..1024, a multiple of 8).
    """

    def __init__(self, addr_width: int, data_width: int):
        check_integer("addr_width", addr_width, range(1, 65))
        check_integer("data_width", data_width, range(8, 1025))
        if data_width % 8:
            raise ValueError(f"data_width must be a multiple of 8, not {data_width}")
        self.addr_width, self.data_width = addr_width, data_width
        super().__init__({
            "cmd": Out(stream.Signature(data.StructLayout({"we": 1, "addr": addr_width}))),
            "wdata": Out(stream.Signature(data.StructLayout({"data": data_width, "we": data_width // 8}))),
            "rdata": In(stream.Signature(data.StructLayout({"data": data_width}))),
        })

    def __eq__(self, other):
        return (type(other) is type(self) and other.addr_width == self.addr_width
                and other.data_width == self.data_width)

    def __repr__(self):
        return f"NativePortSignature({self.addr_width}, {self.data_width})"


class NativePortAdapter(wiring.Component):
    """The filter's memory port served by a LiteDRAM native port: each block word of B bits is B / ``data_width``
    consecutive native words, from word ``base`` on, low bits first.

    A block read is that many read commands, its answer the words assembled; a block write that many write
    commands and their data, every byte enabled. ``memory.written`` rises in the cycle that the last command of a
    write is taken: the native port keeps the order of its commands, so every read taken after it returns it.
    Reads are issued only while the answer queue has room for all the words outstanding (``read_words``), since
    the native port cannot hold its read data back.

    Parameters
    ----------
    config : Config
        With a row layout; B a multiple of ``data_width``.
    addr_width, data_width : int
        The native port's (:class:`NativePortSignature`).
    base : int
        Native word of block word 0, a multiple of B / ``data_width``; the region ends within ``addr_width``.
    read_words : int
        Native read words outstanding at most (the answer queue's depth), B / ``data_width`` .. 1024.
    write_words : int
        Native write words whose data the port has not asked for yet, at most (the write data queue's depth),
        B / ``data_width`` .. 1024. LiteDRAM asks for a write's data when it issues the write to the SDRAM, many
        cycles after it took the command: the default (16, more than LiteDRAM's command buffer of 8) lets a
        command's writes into the controller back to back.

    Attributes
    ----------
    memory : In(MemoryPortSignature(config))
        The filter's memory port, served.
    native : Out(NativePortSignature(addr_width, data_width))
        To the controller.
    enable : In(1, init=1)
        Requests are taken only while it is high (the controller's initialisation done).

    Raises
    ------
    TypeError, ValueError
        If a parameter is of the wrong type or out of range (the message names it).
    """

    def __init__(self, config: Config, *, addr_width: int, data_width: int, base: int = 0, read_words: int = 32,
                 write_words: int = 16):
        check_config(config)
        signature = NativePortSignature(addr_width, data_width)
        if not config.row_layout:
            raise ValueError("a native port adapter needs a Config with a row layout (row_bits > 0), not row_bits=0")
        B = config.block_bits
        if B % data_width:
            raise ValueError(f"block_bits must be a multiple of data_width: B={B}, data_width={data_width}")
        words = B // data_width
        check_integer("base", base, range(0, 1 << addr_width))
        if base % words:
            raise ValueError(f"base must be a multiple of the {words} native words of a block, not {base}")
        if base + config.memory_blocks * words > 1 << addr_width:
            raise ValueError(f"the region of {config.memory_blocks * words} words from base {base} ends past "
                             f"addr_width={addr_width} ({1 << addr_width} words)")
        check_integer("read_words", read_words, range(words, 1025))
        check_integer("write_words", write_words, range(words, 1025))
        self._config, self._words, self._base, self._read_words = config, words, base, read_words
        self._write_words = write_words
        super().__init__({"memory": In(MemoryPortSignature(config)), "native": Out(signature),
                          "enable": In(1, init=1)})

    @property
    def words(self) -> int:
        """Native words per block."""
        return self._words

    def elaborate(self, platform):
        # A request is taken once all its native commands are: ``word`` counts them, the request's payload held
        # by the scan until then. Write data goes through a queue of its own (the native port asks for it after
        # its command); read words come back into the answer queue, which has room reserved for every word of
        # the reads outstanding.
        m = Module()
        c, words, dw = self._config, self._words, self.native.signature.data_width
        req, rsp, native = self.memory.req, self.memory.rsp, self.native

        m.submodules.wdata = wqueue = fifo.SyncFIFOBuffered(width=dw, depth=self._write_words)
        m.submodules.rdata = rqueue = fifo.SyncFIFOBuffered(width=dw, depth=self._read_words)
        word = Signal(range(words))
        last_word = word == words - 1
        outstanding = Signal(range(self._read_words + 1))          # read words issued and not yet taken from rqueue
        read_room = outstanding + words <= self._read_words
        block = Signal(c.block_bits)
        m.d.comb += block.eq(req.payload.data)
        pieces = [block[i * dw:(i + 1) * dw] for i in range(words)]
        piece = Signal(dw)
        with m.Switch(word):
            for i in range(words):
                with m.Case(i):
                    m.d.comb += piece.eq(pieces[i])

        write = req.payload.write
        can = Signal()
        m.d.comb += can.eq(self.enable & req.valid & (read_room | write) & (~write | wqueue.w_rdy))
        m.d.comb += [native.cmd.valid.eq(can), native.cmd.payload.we.eq(write),
                     native.cmd.payload.addr.eq(self._base + req.payload.addr * words + word)]
        taken = native.cmd.valid & native.cmd.ready
        m.d.comb += [wqueue.w_en.eq(taken & write), wqueue.w_data.eq(piece)]
        with m.If(taken):
            m.d.sync += word.eq(0 if words == 1 else Mux(last_word, 0, word + 1))
        m.d.comb += [req.ready.eq(taken & last_word), self.memory.written.eq(taken & last_word & write)]

        m.d.comb += [native.wdata.valid.eq(wqueue.r_rdy), native.wdata.payload.data.eq(wqueue.r_data),
                     native.wdata.payload.we.eq(Const(-1, dw // 8)), wqueue.r_en.eq(native.wdata.ready)]

        # Answers: the read words in order, a block once all its words are in the queue's head and the register.
        m.d.comb += [rqueue.w_en.eq(native.rdata.valid), rqueue.w_data.eq(native.rdata.payload.data),
                     native.rdata.ready.eq(1)]
        issued = taken & ~write
        if words == 1:
            m.d.comb += [rsp.valid.eq(rqueue.r_rdy), rsp.payload.data.eq(rqueue.r_data),
                         rqueue.r_en.eq(rsp.ready)]
            consumed = rsp.valid & rsp.ready
        else:
            gathered = Signal((words - 1) * dw)                     # the block's words before its last
            count = Signal(range(words))
            final = count == words - 1
            m.d.comb += [rsp.valid.eq(rqueue.r_rdy & final), rsp.payload.data.eq(Cat(gathered, rqueue.r_data)),
                         rqueue.r_en.eq(rqueue.r_rdy & (~final | rsp.ready))]
            with m.If(rqueue.r_rdy & ~final):
                m.d.sync += [gathered.word_select(count, dw).eq(rqueue.r_data), count.eq(count + 1)]
            with m.If(rsp.valid & rsp.ready):
                m.d.sync += count.eq(0)
            consumed = rqueue.r_en
        m.d.sync += outstanding.eq(outstanding + issued - consumed)
        return m
