# amaranth: UnusedElaboratable=no
"""The ECP5 block RAM of the segments (hdl/lib/ecp5_ram.py): its DP16KD tiling, driven through the DP16KD model, does
cycle for cycle what the inferred memory does (hdl/lib/block_ram.py InferredBlockRAM); the model itself follows the
DP16KD's pins; the platform picks the implementation."""

import random

import pytest
from amaranth import ClockSignal, Const, Fragment, Module, Signal
from amaranth_boards.icebreaker import ICEBreakerPlatform
from amaranth_boards.ulx3s import ULX3S_85F_Platform

from apbbf.hdl.lib.devices import DP16KD_SHAPES, tile
from apbbf.hdl.lib.ecp5_ram import DP16KDModel, ECP5BlockRAM, SimulatedECP5, is_ecp5
from apbbf.hdl.lib.block_ram import READ_LATENCY, InferredBlockRAM, block_ram_for
from .streams import run_simulation


@pytest.mark.parametrize("depth,width", [
    (512, 64),       # 2 x 512x36 (the bench's segments)
    (4096, 64),      # 16 x 4096x4 (the ULX3S board's segments)
    (16, 16),        # 1 x 1024x18
    (1, 256),        # 8 x 512x36, one word
    (2048, 8),       # 1 x 2048x9
    (32768, 1),      # 2 columns x 2 rows of 16384x1: the read multiplexer
])
def test_ecp5_block_ram_equals_inferred(depth, width):
    """Random reads and writes (read enable low now and then, reads of the word being written) into the DP16KD
    tiling (model) and into the inferred memory: the read data is equal in every cycle once both have read."""
    ecp5, inferred = ECP5BlockRAM(depth, width, model=True), InferredBlockRAM(depth, width)
    m = Module()
    m.submodules.ecp5, m.submodules.inferred = ecp5, inferred
    rng = random.Random(depth * 31 + width)
    addresses = [rng.randrange(depth) for _ in range(6)]       # few addresses: collisions and rereads

    async def bench(ctx):
        for cycle in range(400):
            read_en = rng.random() < 0.8
            write = (rng.choice(addresses), rng.getrandbits(width), rng.random() < 0.6)
            read = rng.choice(addresses) if rng.random() < 0.5 else write[0]
            for dut in (ecp5, inferred):
                ctx.set(dut.read_en, read_en)
                ctx.set(dut.read_addr, read)
                ctx.set(dut.write_addr, write[0])
                ctx.set(dut.write_data, write[1])
                ctx.set(dut.write_en, write[2])
            await ctx.tick()
            if cycle > READ_LATENCY:
                got, want = ctx.get(ecp5.read_data), ctx.get(inferred.read_data)
                assert got == want, f"cycle {cycle}: DP16KD tiling {got:#x}, inferred memory {want:#x}"

    run_simulation(m, bench)


@pytest.mark.parametrize("width,words", DP16KD_SHAPES)
def test_tiling_uses_the_mode_of_its_words(width, words):
    """A memory of exactly one DP16KD configuration takes one DP16KD in that configuration."""
    t = tile(DP16KD_SHAPES, words, width)
    assert (t.word_bits, t.words, t.blocks) == (width, words, 1)


def test_model_reads_two_cycles_after_the_address():
    """One DP16KD model in the 36-bit mode with OUTREG: the word written is read back on DOA (low 18 bits) and
    DOB (high 18 bits) the second clock edge after the address, and is held while OCEB is low."""
    m = Module()
    waddr, raddr, wdata = Signal(9), Signal(9), Signal(36)
    we, ce, oce = Signal(), Signal(), Signal()
    doa, dob = Signal(18), Signal(18)
    pins = {"i_CLKA": ClockSignal(), "i_CLKB": ClockSignal(), "i_CEA": Const(1), "i_WEA": Const(1),
            "i_CEB": ce, "i_OCEB": oce, "i_OCEA": oce, "i_WEB": Const(0), "i_RSTB": Const(0)}
    pins.update({f"i_ADA{i}": we for i in range(4)})
    pins.update({f"i_ADA{i + 5}": waddr[i] for i in range(9)})
    pins.update({f"i_ADB{i + 5}": raddr[i] for i in range(9)})
    pins.update({f"i_DIA{i}": wdata[i] for i in range(18)})
    pins.update({f"i_DIB{i}": wdata[18 + i] for i in range(18)})
    pins.update({f"o_DOA{i}": doa[i] for i in range(18)})
    pins.update({f"o_DOB{i}": dob[i] for i in range(18)})
    m.submodules.ram = DP16KDModel(p_DATA_WIDTH_A=36, p_DATA_WIDTH_B=36, p_REGMODE_A="OUTREG",
                                   p_REGMODE_B="OUTREG", **pins)

    async def bench(ctx):
        ctx.set(waddr, 5)
        ctx.set(wdata, 0x9_8765_4321)
        ctx.set(we, 1)
        await ctx.tick()
        ctx.set(we, 0)
        ctx.set(raddr, 5)
        ctx.set(ce, 1)
        ctx.set(oce, 1)
        await ctx.tick()                           # the address edge
        assert ctx.get(doa) == 0
        ctx.set(ce, 0)
        await ctx.tick()                           # the output register edge
        assert (ctx.get(dob) << 18 | ctx.get(doa)) == 0x9_8765_4321
        ctx.set(oce, 0)
        ctx.set(raddr, 6)
        ctx.set(ce, 1)
        await ctx.tick().repeat(3)
        assert (ctx.get(dob) << 18 | ctx.get(doa)) == 0x9_8765_4321, "OCEB low: the output register holds"

    run_simulation(m, bench)


@pytest.mark.parametrize("platform,kind", [
    (None, InferredBlockRAM), (ICEBreakerPlatform(), InferredBlockRAM), (ULX3S_85F_Platform(), ECP5BlockRAM),
    (SimulatedECP5(), ECP5BlockRAM),
])
def test_platform_picks_the_block_ram(platform, kind):
    ram = block_ram_for(platform, 512, 64)
    Fragment.get(ram, platform)
    assert type(ram) is kind
    assert is_ecp5(platform) == (kind is ECP5BlockRAM)


def test_instances_on_ecp5():
    """For an ECP5 platform the tiling is DP16KD instances with both output registers on."""
    fragment = Fragment.get(ECP5BlockRAM(512, 64), ULX3S_85F_Platform())
    instances = [sub for sub, _, _ in fragment.subfragments if getattr(sub, "type", None) == "DP16KD"]
    assert len(instances) == 2
    for instance in instances:
        assert instance.parameters["REGMODE_A"] == instance.parameters["REGMODE_B"] == "OUTREG"
        assert instance.parameters["DATA_WIDTH_A"] == instance.parameters["DATA_WIDTH_B"] == 36


@pytest.mark.parametrize("kwargs,message", [
    (dict(p_DATA_WIDTH_A=36, p_DATA_WIDTH_B=18), "DATA_WIDTH_A and DATA_WIDTH_B must be equal"),
    (dict(p_DATA_WIDTH_A=18, p_DATA_WIDTH_B=18, p_REGMODE_A="OUTREG"), "REGMODE_A and REGMODE_B must be the same"),
    (dict(p_CSDECODE_B="0b001"), "CSDECODE_B must be '0b000'"),
    (dict(i_WEB=Const(1)), "WEB must be tied low"),
    (dict(i_CLKB=ClockSignal("other")), "CLKA and CLKB must be the same ClockSignal"),
    (dict(DOA0=Signal()), "must be p_, i_ or o_ ones"),
])
def test_model_refuses_what_it_does_not_model(kwargs, message):
    base = {"i_CLKA": ClockSignal(), "i_CLKB": ClockSignal()}
    with pytest.raises(ValueError, match=message):
        DP16KDModel(**{**base, **kwargs})
