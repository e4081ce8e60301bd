"""The AXI4 master of the memory export (:class:`~apbbf.hdl.export.axi_memory.AXI4MemoryAdapter`) alone in
Amaranth's simulator, against a slave written out cycle by cycle: the addresses, lanes and strobes of a block
narrower than the bus, and SLVERR/DECERR counted (a failed read answers all ones, a failed write still lands). The
cocotb benches (tests/test_cocotb_memory.py) run it against cocotbext-axi's AxiRam, which answers OKAY only."""

from amaranth.sim import Simulator

from apbbf.hdl.export.axi_memory import AXI4MemoryAdapter
from apbbf.model import Config

CONFIG = Config(2, 3, block_bits=64, segment_blocks=8, row_bits=512)
BASE = 0x4000


def _run(testbench, data_width=256):
    dut = AXI4MemoryAdapter(CONFIG, data_width=data_width, base=BASE, max_outstanding=4)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        await testbench(ctx, dut)

    sim.add_testbench(bench)
    sim.run()


async def _request(ctx, dut, write, addr, data=0):
    req = dut.memory.req
    ctx.set(req.valid, 1)
    ctx.set(req.payload, {"write": write, "addr": addr, "data": data})
    await ctx.tick().until(req.ready)
    ctx.set(req.valid, 0)


async def _wait(ctx, signal, cycles=20):
    for _ in range(cycles):
        if ctx.get(signal):
            return
        await ctx.tick()
    raise AssertionError(f"{signal.name} not high within {cycles} cycles")


def test_lanes_and_strobes():
    """A 64-bit block on a 256-bit bus: the write at block 5 is one beat at its own byte address, strobing lane 1
    and repeating the data; the read of block 5 answers lane 1 of the beat."""
    async def testbench(ctx, dut):
        axi = dut.axi
        data = 0x0123456789ABCDEF
        await _request(ctx, dut, 1, 5, data)
        await _wait(ctx, axi.awvalid)
        assert ctx.get(axi.awaddr) == BASE + 5 * 8 and ctx.get(axi.awlen) == 0 and ctx.get(axi.awsize) == 5
        assert ctx.get(axi.wvalid) and ctx.get(axi.wlast) and ctx.get(axi.wstrb) == 0xFF << 8
        assert ctx.get(axi.wdata) == data * sum(1 << (64 * n) for n in range(4))
        ctx.set(axi.awready, 1)
        ctx.set(axi.wready, 1)
        await ctx.tick()
        ctx.set(axi.awready, 0)
        ctx.set(axi.wready, 0)
        assert not ctx.get(axi.awvalid) and not ctx.get(axi.wvalid)
        assert ctx.get(dut.writes_outstanding) == 1
        ctx.set(axi.bvalid, 1)                      # OKAY
        assert ctx.get(dut.memory.written)
        await ctx.tick()
        ctx.set(axi.bvalid, 0)
        assert ctx.get(dut.writes_outstanding) == 0 and ctx.get(dut.write_errors) == 0

        await _request(ctx, dut, 0, 5)
        await _wait(ctx, axi.arvalid)
        assert ctx.get(axi.araddr) == BASE + 5 * 8
        ctx.set(axi.arready, 1)
        await ctx.tick()
        ctx.set(axi.arready, 0)
        ctx.set(axi.rvalid, 1)
        ctx.set(axi.rlast, 1)
        ctx.set(axi.rdata, 0xAAAA << 192 | data << 64 | 0x5555)
        assert ctx.get(axi.rready)
        await ctx.tick()
        ctx.set(axi.rvalid, 0)
        ctx.set(dut.memory.rsp.ready, 1)
        await _wait(ctx, dut.memory.rsp.valid)
        assert ctx.get(dut.memory.rsp.payload.data) == data
        await ctx.tick()
        assert ctx.get(dut.reads_outstanding) == 0 and ctx.get(dut.read_errors) == 0

    _run(testbench)


def test_errors_counted():
    """SLVERR on a write's B response and DECERR on a read: both counted; the write is still ``written``, the read
    answers all ones (no false negative from a failed read)."""
    async def testbench(ctx, dut):
        axi = dut.axi
        ctx.set(axi.awready, 1)
        ctx.set(axi.wready, 1)
        ctx.set(axi.arready, 1)
        await _request(ctx, dut, 1, 2, 0x1234)
        await ctx.tick().repeat(2)
        ctx.set(axi.bvalid, 1)
        ctx.set(axi.bresp, 0b10)                   # SLVERR
        assert ctx.get(dut.memory.written)
        await ctx.tick()
        ctx.set(axi.bvalid, 0)
        assert ctx.get(dut.write_errors) == 1

        await _request(ctx, dut, 0, 2)
        await ctx.tick().repeat(2)
        ctx.set(axi.rvalid, 1)
        ctx.set(axi.rlast, 1)
        ctx.set(axi.rresp, 0b11)                   # DECERR
        ctx.set(axi.rdata, 0)
        await ctx.tick()
        ctx.set(axi.rvalid, 0)
        ctx.set(dut.memory.rsp.ready, 1)
        await _wait(ctx, dut.memory.rsp.valid)
        assert ctx.get(dut.memory.rsp.payload.data) == (1 << 64) - 1
        assert ctx.get(dut.read_errors) == 1

    _run(testbench, data_width=64)
