"""The models of nextpnr's packed cells (``sim/ecp5/routed/``) against this project's pre-synthesis models: one small
design with the appliance's block RAM modes (a DP16KD in the 36-bit pseudo dual port mode and one in the 9-bit mode,
their inputs tied as :mod:`apbbf.hdl.lib.ecp5_ram` ties them, output registers on) and its RGMII I/O (IB, DELAYG of
80 steps and IDDRX1F on a pin; ODDRX1F to OB; an output enable through FD1S3AX and OFS1P3DX to OBZ), a counter (a carry chain) and a 16 x 4 LUT RAM with initial
values, synthesized,
placed and routed (yosys, nextpnr-ecp5 on the 5A-75B's device, its RGMII pins), read back as Verilog, and
simulated on Icarus under one testbench (random inputs, seed fixed and printed) beside the same design before
synthesis. Every output, sampled on both clock edges, must be the same in the two runs; with one DP16KD's read
halves swapped in the routed netlist, they must differ."""

import random
import re
import shutil
import subprocess

import pytest

from apbbf.sim.cocotb.dram_runner import ecp5_sim_library
from apbbf.sim.routed import ECP5_MODELS, route, routed_models
from apbbf.toolchain import use_yowasp

SEED = 20261202
CYCLES = 300

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog is not installed")]


def _dp16kd(name: str, mode: int) -> tuple[str, str]:
    """A DP16KD as the appliance's block RAM instantiates it: port A writes, port B reads."""
    low = {36: 5, 9: 3}[mode]
    ports = [".CLKA(clk)", ".CLKB(clk)", ".CEA(1'b1)", ".OCEA(1'b1)", ".RSTA(1'b0)", f".CEB({name}_re)",
             ".OCEB(1'b1)", ".WEB(1'b0)", ".RSTB(1'b0)", *(f".CS{p}{i}(1'b0)" for p in "AB" for i in range(3))]
    enables = [f"{name}_we"] * 4 + ["1'b0"] if mode == 36 else ["1'b0"] * low
    ports.append(".WEA(1'b1)" if mode == 36 else f".WEA({name}_we)")
    for i in range(14):
        ports.append(f".ADA{i}({enables[i] if i < low else f'{name}_wa[{i - low}]'})")
        ports.append(f".ADB{i}({chr(49) + chr(39) + 'b0' if i < low else f'{name}_ra[{i - low}]'})")
    for i in range(36):
        pin = f"DI{'AB'[i // 18]}{i % 18}"
        ports.append(f".{pin}({f'{name}_di[{i}]' if i < mode else chr(49) + chr(39) + 'b0'})")
    outs = [f"DO{p}{i}" for p in "AB" for i in range(18)] if mode == 36 else [f"DOB{i}" for i in range(mode)]
    ports += [f".{pin}({name}_do[{i}])" for i, pin in enumerate(outs)]
    bits = 14 - low
    declarations = (f"    input {name}_we, {name}_re;\n    input [{bits - 1}:0] {name}_wa, {name}_ra;\n"
                    f"    input [{mode - 1}:0] {name}_di;\n    output [{mode - 1}:0] {name}_do;\n")
    instance = (f'    DP16KD #(.DATA_WIDTH_A({mode}), .DATA_WIDTH_B({mode}), .REGMODE_A("OUTREG"), '
                '.REGMODE_B("OUTREG"), .CSDECODE_A("0b000"), .CSDECODE_B("0b000"), .WRITEMODE_A("NORMAL"), '
                '.WRITEMODE_B("NORMAL"), .RESETMODE("SYNC"), .ASYNC_RESET_RELEASE("SYNC"), .GSR("DISABLED"), '
                ".INITVAL_00(320'h000030000200001123453BCDE00001))\n"
                f"        {name} ({', '.join(ports)});\n")
    return declarations, instance


DP_PORTS = [f"{name}_{pin}" for name in ("w36", "w9") for pin in ("we", "re", "wa", "ra", "di", "do")]


def design() -> str:
    (d36, i36), (d9, i9) = _dp16kd("w36", 36), _dp16kd("w9", 9)
    return (f"module top(clk_pin, rx_pin, tx_pin, oe_pin, oe_in, d0, d1, q0, q1, count, lut_do, {', '.join(DP_PORTS)});\n"
            "    input clk_pin, rx_pin, oe_in, d0, d1;\n    output tx_pin, oe_pin, q0, q1;\n"
            "    output reg [9:0] count = 0;\n    output [3:0] lut_do;\n" + d36 + d9 +
            """    wire clk, pad, delayed, ddr, oe0, oe1;
    IB clk_ib(.I(clk_pin), .O(clk));
    IB rx_ib(.I(rx_pin), .O(pad));
    DELAYG #(.DEL_MODE("SCLK_ALIGNED"), .DEL_VALUE(80)) rx_delay(.A(pad), .Z(delayed));
    IDDRX1F rx_iddr(.D(delayed), .SCLK(clk), .RST(1'b0), .Q0(q0), .Q1(q1));
    ODDRX1F tx_oddr(.SCLK(clk), .RST(1'b0), .D0(d0), .D1(d1), .Q(ddr));
    OB tx_ob(.I(ddr), .O(tx_pin));
    FD1S3AX oe_ff0(.CK(clk), .D(~oe_in), .Q(oe0));
    OFS1P3DX oe_ff1(.SCLK(clk), .SP(1'b1), .CD(1'b0), .D(oe0), .Q(oe1));
    OBZ oe_ob(.I(d0), .T(oe1), .O(oe_pin));
    always @(posedge clk) if (d1) count <= count + 10'd3;
    reg [3:0] lut_ram [0:15];
    integer i;
    initial for (i = 0; i < 16; i = i + 1) lut_ram[i] = (7 * i + 3) % 16;
    always @(posedge clk) if (w9_we) lut_ram[w9_wa[3:0]] <= w9_di[3:0];
    assign lut_do = lut_ram[w9_ra[3:0]];
""" + i36 + i9 + "endmodule\n")


#: The 5A-75B's port 0 RGMII pins: rx_clk, rx_data[0], tx_data[0], tx_data[1].
LPF = "".join(f'LOCATE COMP "{port}" SITE "{site}";\nIOBUF PORT "{port}" IO_TYPE=LVCMOS33;\n'
              for port, site in (("clk_pin", "M1"), ("rx_pin", "N1"), ("tx_pin", "L1"), ("oe_pin", "L3")))

#: The testbench: 125 MHz; the inputs change 1 ns after each rising edge, the DDR input 3 ns after each edge (1 ns
#: before the next: after the 2 ns delay, it reaches the IDDRX1F after that edge); every output printed 2 ns after
#: each edge (``H`` rising, ``L`` falling).
TB = """`timescale 1ns / 1fs
module tb;
    reg clk_pin = 0, rx_pin = 0, oe_in = 0, d0 = 0, d1 = 0;
    reg w36_we = 0, w36_re = 0, w9_we = 0, w9_re = 0;
    reg [8:0] w36_wa = 0, w36_ra = 0;
    reg [10:0] w9_wa = 0, w9_ra = 0;
    reg [35:0] w36_di = 0;
    reg [8:0] w9_di = 0;
    wire tx_pin, oe_pin, q0, q1;
    wire [9:0] count;
    wire [3:0] lut_do;
    wire [35:0] w36_do;
    wire [8:0] w9_do;
    top dut(.clk_pin(clk_pin), .rx_pin(rx_pin), .tx_pin(tx_pin), .oe_pin(oe_pin), .oe_in(oe_in), .d0(d0), .d1(d1),
            .q0(q0), .q1(q1), .count(count), .lut_do(lut_do), .w36_we(w36_we), .w36_re(w36_re), .w36_wa(w36_wa), .w36_ra(w36_ra),
            .w36_di(w36_di), .w36_do(w36_do), .w9_we(w9_we), .w9_re(w9_re), .w9_wa(w9_wa), .w9_ra(w9_ra),
            .w9_di(w9_di), .w9_do(w9_do));
    integer seed = SEED, n;
    always #4 clk_pin = ~clk_pin;
    always @(clk_pin) begin
        #2 $display("%s %0d %b%b %b %b %h %h %h %h", clk_pin ? "H" : "L", n, q0, q1, tx_pin, oe_pin, count, lut_do,
                 w36_do, w9_do);
        #1 rx_pin = $random(seed);
    end
    initial begin
        for (n = 0; n < CYCLES; n = n + 1) begin
            @(posedge clk_pin);
            #1;
            {oe_in, d0, d1, w36_we, w36_re, w9_we, w9_re} = $random(seed);
            w36_wa = $random(seed) & 7; w36_ra = $random(seed) & 7; w9_wa = $random(seed) & 7; w9_ra = $random(seed) & 15;
            w36_di = {$random(seed), $random(seed)}; w9_di = $random(seed);
        end
        $finish;
    end
endmodule
"""


def _simulate(work, files) -> str:
    (work / "tb.v").write_text(TB.replace("SEED", str(SEED)).replace("CYCLES", str(CYCLES)))
    subprocess.run(["iverilog", "-g2005", "-s", "tb", "-o", "tb.vvp", "tb.v", *map(str, files)], cwd=work,
                   check=True, capture_output=True, text=True)
    run = subprocess.run(["vvp", "-n", "tb.vvp"], cwd=work, capture_output=True, text=True, timeout=300)
    return run.stdout + run.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The design's trace before synthesis and after routing, and the routed netlist."""
    print(f"seed {SEED}")
    before = tmp_path_factory.mktemp("before")
    (before / "design.v").write_text(design())
    library = ecp5_sim_library(before, ("TRELLIS_IO", "TRELLIS_FF", "IB", "OB", "OBZ", "FD1S3AX", "OFS1P3DX"))
    pre = _simulate(before, [before / "design.v", library, *sorted(ECP5_MODELS.glob("*.v"))])
    after = tmp_path_factory.mktemp("after")
    routed = route(design(), after, nextpnr=use_yowasp()["NEXTPNR_ECP5"], lpf=LPF)
    post = _simulate(after, [routed, *routed_models(after)])
    return pre, post, after


def _trace(out: str) -> list[str]:
    return re.findall(r"^[HL] \d+ .*$", out, re.MULTILINE)


def test_routed_design_uses_the_packed_cells(runs):
    """The routed netlist has what the models are for: the DP16KD with inputs folded into parameters, the DDR
    registers and the delay packed into IOLOGIC, a DCCA on the clock."""
    *_, after = runs
    cells = set(re.findall(r"^  ([A-Z]\w*) ", (after / "routed.v").read_text(), re.MULTILINE))
    assert {"DP16KD", "IOLOGIC", "TRELLIS_IO", "TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DCCA"} <= cells, cells
    assert not cells & {"IDDRX1F", "ODDRX1F", "DELAYG", "FD1S3AX", "OFS1P3DX"}, cells
    text = (after / "routed.v").read_text()
    assert re.search(r"\.\\DELAY\.DEL_VALUE \(32'd80\)", text) and '.CSA0MUX("INV")' in text


def test_routed_design_behaves_as_before_synthesis(runs):
    """Every output on both clock edges, cycle by cycle, after routing as before synthesis (and not all X)."""
    pre, post, _ = runs
    before, after = _trace(pre), _trace(post)
    assert len(before) >= 2 * CYCLES - 2, pre[-2000:]
    assert "ERROR" not in post, post[-2000:]
    known = [line for line in before[20:] if "x" not in line.split()[-2]]
    assert len(known) > CYCLES // 2, before[:40]
    mismatches = [(b, a) for b, a in zip(before, after) if b != a]
    assert not mismatches and len(after) == len(before), mismatches[:10]


def test_swapped_dp16kd_halves_are_caught(runs, tmp_path):
    """The routed netlist with the 36-bit DP16KD's DOA and DOB swapped reads differently."""
    pre, _, after = runs
    text = (after / "routed.v").read_text()
    match = re.search(r"DP16KD #\((?:.|\n)*?\) w36 \((?:.|\n)*?\);", text)
    swapped = re.sub(r"\.DO([AB])(\d+)\(", lambda m: f".DO{'B' if m.group(1) == 'A' else 'A'}{m.group(2)}(",
                     match.group(0))
    (tmp_path / "swapped.v").write_text(text[:match.start()] + swapped + text[match.end():])
    post = _simulate(tmp_path, [tmp_path / "swapped.v", *routed_models(tmp_path)])
    assert _trace(post) != _trace(pre)
