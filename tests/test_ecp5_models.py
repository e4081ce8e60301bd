"""The ECP5 primitive models of ``sim/ecp5/`` (what yosys's ECP5 library leaves black boxes), each against its
contract on Icarus: DP16KD against a reference written from the same documented behaviour (random reads and
writes, seed fixed and printed, in each mode the board tops use and the others it models), EHXPLLL's clocks
measured against the frequencies and phases its dividers give, IDDRX1F/ODDRX1F's pairing and latency, DELAYG's
delay; and each refusing what it does not model."""

import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from apbbf.hdl.eth.ecp5_pll import pll_dividers

MODELS = sorted((Path(__file__).resolve().parents[1] / "sim" / "ecp5").glob("*.v"))
SEED = 20261202

pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog is not installed")


def simulate(tmp_path, tb: str, *, files=(), params=None) -> str:
    """Compile ``tb`` (module ``tb``) with the models and run it; its output. A model's ``$fatal`` ends the run
    with its ERROR line in the output."""
    (tmp_path / "tb.v").write_text(tb)
    args = [f"-Ptb.{name}={value}" for name, value in (params or {}).items()]
    subprocess.run(["iverilog", "-g2005", "-s", "tb", "-o", "tb.vvp", *args, "tb.v", *map(str, MODELS), *files],
                   cwd=tmp_path, check=True, capture_output=True, text=True)
    run = subprocess.run(["vvp", "-n", "tb.vvp"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return run.stdout + run.stderr


# ---- DP16KD

def _pins(port):
    return (", ".join(f".DI{port}{i}(di{port.lower()}[{i}])" for i in range(18)) + ", " +
            ", ".join(f".AD{port}{i}(ad{port.lower()}[{i}])" for i in range(14)) + ", " +
            ", ".join(f".DO{port}{i}(do{port.lower()}[{i}])" for i in range(18)) + ", " +
            f".CE{port}(ce{port.lower()}), .OCE{port}(oce{port.lower()}), .CLK{port}(clk), "
            f".WE{port}(we{port.lower()}), "
            f".RST{port}(rst{port.lower()}), .CS{port}0(1'b0), .CS{port}1(1'b0), .CS{port}2(1'b0)")


DP16KD_TB = f"""`timescale 1ns / 1ps
module tb;
    parameter WIDTH_A = 18, WIDTH_B = 18, CYCLES = 1;
    parameter REGMODE = "NOREG", WRITEMODE = "NORMAL", RESETMODE = "SYNC";
    parameter [319:0] INIT0 = 320'h0;
    reg clk = 0;
    reg [17:0] dia, dib;
    reg [13:0] ada, adb;
    reg cea, ceb, wea, web, rsta, rstb, ocea, oceb;
    wire [17:0] doa, dob;
    reg [71:0] stimulus [0:CYCLES - 1];
    integer n;
    DP16KD #(.DATA_WIDTH_A(WIDTH_A), .DATA_WIDTH_B(WIDTH_B), .REGMODE_A(REGMODE), .REGMODE_B(REGMODE),
             .WRITEMODE_A(WRITEMODE), .WRITEMODE_B(WRITEMODE), .RESETMODE(RESETMODE), .INITVAL_00(INIT0))
        ram ({_pins("A")}, {_pins("B")});
    initial begin
        $readmemh("stimulus.hex", stimulus);
        for (n = 0; n < CYCLES; n = n + 1) begin
            {{cea, wea, rsta, ocea, ada, dia, ceb, web, rstb, oceb, adb, dib}} = stimulus[n];
            #5 clk = 1;
            #4 $display("OUT %0d %h %h", n, doa, dob);
            #1 clk = 0;
        end
        $finish;
    end
endmodule
"""


class DP16KDReference:
    """The documented DP16KD (the header of ``sim/ecp5/dp16kd.v``), one clock for both ports, no collisions."""

    def __init__(self, width, regmode, writemode, init=()):
        self.width, self.outreg, self.writemode = width, regmode == "OUTREG", writemode
        self.mem = [0] * 1024
        for index, word in enumerate(init):
            self.mem[index] = word
        self.latch = {"A": 0, "B": 0}
        self.oreg = {"A": 0, "B": 0}

    @staticmethod
    def _bits(width, address):
        """The 18-bit word and the bit positions an access of ``width`` bits at ``address`` uses."""
        word = address >> 4
        if width == 18:
            return word, list(range(18))
        if width == 9:
            return word, list(range(9 * ((address >> 3) & 1), 9 * ((address >> 3) & 1) + 9))
        p = ((address & 15) // width) * width
        return word, [q + (q >= 8) for q in range(p, p + width)]

    def edge(self, a, b):
        """``a``, ``b``: dicts of ce, we, rst, oce, ad, di; returns (DOA, DOB) after the edge."""
        if self.width == 36:
            return self._edge36(a, b)
        writes, reads = [], {}
        for name, port in (("A", a), ("B", b)):
            if not port["ce"]:
                continue
            word, bits = self._bits(self.width, port["ad"])
            old = self.mem[word]
            if port["we"]:
                lanes = bits if self.width != 18 else [i for i in range(18) if (port["ad"] >> (i // 9)) & 1]
                new = old
                for k, position in enumerate(bits):
                    if position in lanes:
                        new = (new & ~(1 << position)) | (((port["di"] >> k) & 1) << position)
                writes.append((word, new))
                source = {"WRITETHROUGH": new, "READBEFOREWRITE": old}.get(self.writemode)
            else:
                source = old
            if source is not None:
                reads[name] = sum(((source >> position) & 1) << k for k, position in enumerate(bits))
        for word, new in writes:
            self.mem[word] = new
        out = []
        for name, port in (("A", a), ("B", b)):
            if port["rst"]:
                self.latch[name] = self.oreg[name] = 0
            else:
                if port["oce"]:
                    self.oreg[name] = self.latch[name]
                if name in reads:
                    self.latch[name] = reads[name]
            out.append(self.oreg[name] if self.outreg else self.latch[name])
        return tuple(out)

    def _edge36(self, a, b):
        read = None
        if b["ce"]:
            word = b["ad"] >> 5
            read = self.mem[2 * word] | (self.mem[2 * word + 1] << 18)
        if a["ce"]:
            word = a["ad"] >> 5
            value = self.mem[2 * word] | (self.mem[2 * word + 1] << 18)
            data = a["di"] | (b["di"] << 18)
            for lane in range(4):
                if (a["ad"] >> lane) & 1:
                    mask = 0x1FF << (9 * lane)
                    value = (value & ~mask) | (data & mask)
            self.mem[2 * word], self.mem[2 * word + 1] = value & 0x3FFFF, value >> 18
        if b["rst"]:
            self.latch["B"] = self.oreg["B"] = 0
        else:
            if b["oce"]:
                self.oreg["B"] = self.latch["B"]
            if read is not None:
                self.latch["B"] = read
        out = self.oreg["B"] if self.outreg else self.latch["B"]
        return out & 0x3FFFF, out >> 18


def _stimulus(rng, width, cycles, *, reset=True):
    """Random cycles; the two ports never touch the same 18-bit word on one edge (the model makes that X)."""
    rows = []
    words = 512 if width == 36 else 1024
    for n in range(cycles):
        ports = []
        for name in "AB":
            port = {"ce": rng.random() < 0.8, "we": rng.random() < 0.5, "rst": reset and rng.random() < 0.03,
                    "oce": rng.random() < 0.8, "ad": rng.getrandbits(14), "di": rng.getrandbits(18)}
            # a small address range, so that reads find what was written
            word = rng.randrange(8) if n % 3 else rng.randrange(words)
            shift = 5 if width == 36 else 4
            port["ad"] = (word << shift) | (port["ad"] & ((1 << shift) - 1))
            ports.append(port)
        a, b = ports
        if width == 36:
            a["we"], b["we"] = True, False
        if a["ad"] >> (5 if width == 36 else 4) == b["ad"] >> (5 if width == 36 else 4):
            b["ad"] ^= 1 << 13                                   # another word
        rows.append((a, b))
    return rows


def _pack(a, b):
    value = 0
    for port in (a, b):
        for field, bits in (("ce", 1), ("we", 1), ("rst", 1), ("oce", 1), ("ad", 14), ("di", 18)):
            value = (value << bits) | int(port[field])
    return f"{value:018x}"


def run_dp16kd(tmp_path, width, regmode, writemode, *, cycles=400, init=(), seed=SEED, params=None):
    rng = random.Random(seed)
    rows = _stimulus(rng, width, cycles)
    (tmp_path / "stimulus.hex").write_text("\n".join(_pack(a, b) for a, b in rows) + "\n")
    init0 = sum(word << (20 * i) for i, word in enumerate(init))
    out = simulate(tmp_path, DP16KD_TB, params={
        "WIDTH_A": width, "WIDTH_B": width, "CYCLES": cycles, "REGMODE": f'"{regmode}"', "WRITEMODE": f'"{writemode}"',
        "INIT0": f"320'h{init0:x}", **(params or {})})
    got = re.findall(r"^OUT (\d+) (\S+) (\S+)$", out, re.MULTILINE)
    reference = DP16KDReference(width, regmode, writemode, init)
    mask = (1 << min(width, 18)) - 1
    assert len(got) == cycles, out[-2000:]
    for (n, doa, dob), (a, b) in zip(got, rows):
        want = reference.edge(a, b)
        want = want if width == 36 else (want[0] & mask, want[1] & mask)
        assert (doa, dob) == (f"{want[0]:05x}", f"{want[1]:05x}"), \
            f"cycle {n}: DP16KD {width} {regmode} {writemode} gave {doa} {dob}, the contract {want} (seed {seed})"
    print(f"DP16KD {width}-bit {regmode} {writemode}: {cycles} cycles, seed {seed}")


@pytest.mark.parametrize("width, regmode, writemode", [
    (36, "OUTREG", "NORMAL"), (9, "OUTREG", "NORMAL"),            # the modes the appliance's tops use
    (18, "NOREG", "NORMAL"), (18, "OUTREG", "WRITETHROUGH"), (18, "NOREG", "READBEFOREWRITE"),
    (9, "NOREG", "WRITETHROUGH"), (4, "OUTREG", "READBEFOREWRITE"), (2, "NOREG", "NORMAL"), (1, "NOREG", "NORMAL"),
])
def test_dp16kd_modes(tmp_path, width, regmode, writemode):
    run_dp16kd(tmp_path, width, regmode, writemode)


def test_dp16kd_initial_values(tmp_path):
    """INITVAL_00's 20-bit slots hold the first 16 words (their low 18 bits): read back unchanged."""
    init = [random.Random(SEED + i).getrandbits(18) for i in range(16)]
    run_dp16kd(tmp_path, 18, "NOREG", "NORMAL", init=init, cycles=200)


def test_dp16kd_broken_write_mode_is_caught(tmp_path):
    """The reference for WRITETHROUGH against the model in NORMAL: the comparison fails (the test can fail)."""
    rng = random.Random(SEED)
    rows = _stimulus(rng, 18, 200)
    (tmp_path / "stimulus.hex").write_text("\n".join(_pack(a, b) for a, b in rows) + "\n")
    out = simulate(tmp_path, DP16KD_TB, params={"CYCLES": 200, "WRITEMODE": '"NORMAL"'})
    reference = DP16KDReference(18, "NOREG", "WRITETHROUGH")
    got = re.findall(r"^OUT (\d+) (\S+) (\S+)$", out, re.MULTILINE)
    mismatches = sum((doa, dob) != tuple(f"{v:05x}" for v in reference.edge(a, b))
                     for (_, doa, dob), (a, b) in zip(got, rows))
    assert mismatches > 0


def test_dp16kd_collision_reads_x(tmp_path):
    """Port A writes the word port B reads on the same edge: B reads X (the data sheet leaves it undefined)."""
    a = {"ce": 1, "we": 1, "rst": 0, "oce": 1, "ad": 5 << 4 | 3, "di": 0x2A5A5}
    b = {"ce": 1, "we": 0, "rst": 0, "oce": 1, "ad": 5 << 4, "di": 0}
    (tmp_path / "stimulus.hex").write_text(_pack(a, b) + "\n")
    out = simulate(tmp_path, DP16KD_TB, params={"CYCLES": 1})
    assert re.search(r"^OUT 0 00000 xxxxx$", out, re.MULTILINE), out


@pytest.mark.parametrize("params, message", [
    ({"WIDTH_A": 9, "WIDTH_B": 18}, "mixed port widths are not modelled"),
    ({"WIDTH_A": 4, "WIDTH_B": 4, "INIT0": "320'h1"}, "INITVAL in the 1-, 2- and 4-bit modes"),
    ({"WRITEMODE": '"WRITEBACK"'}, "WRITEMODE_A and WRITEMODE_B must be"),
    ({"REGMODE": '"PIPE"'}, "REGMODE_A and REGMODE_B must be"),
    ({"WIDTH_A": 36, "WIDTH_B": 36}, "WEB must be low in the 36-bit mode"),
])
def test_dp16kd_refuses_what_it_does_not_model(tmp_path, params, message):
    b_writes = {"ce": 1, "we": 1, "rst": 0, "oce": 1, "ad": 0, "di": 0}
    a = {"ce": 1, "we": 1, "rst": 0, "oce": 1, "ad": 0x20, "di": 0}
    (tmp_path / "stimulus.hex").write_text(_pack(a, b_writes) + "\n")
    out = simulate(tmp_path, DP16KD_TB, params={"CYCLES": 1, **params})
    assert "ERROR: DP16KD" in out and message in out, out


# ---- EHXPLLL

PLL_TB = """`timescale 1ns / 1fs
module tb;
    parameter real CLKI_NS = 40.0;
    parameter CLKI_DIV = 1, CLKFB_DIV = 5, CLKOP_DIV = 4, CLKOP_CPHASE = 3, CLKOS_DIV = 10, CLKOS_CPHASE = 9,
              CLKOS2_DIV = 10, CLKOS2_CPHASE = 14, FEEDBACK = 1;
    parameter real STOP_NS = 0.0;
    reg clki = 0, running = 1;
    always #(CLKI_NS / 2) if (running) clki = ~clki;
    initial if (STOP_NS > 0.0) #(STOP_NS) running = 0;
    always @(negedge lock) $display("UNLOCK %f", $realtime);
    wire op, os, os2, lock;
    wire fb = FEEDBACK ? op : 1'b0;
    EHXPLLL #(.CLKI_DIV(CLKI_DIV), .CLKFB_DIV(CLKFB_DIV), .CLKOP_DIV(CLKOP_DIV), .CLKOP_CPHASE(CLKOP_CPHASE),
              .CLKOS_ENABLE("ENABLED"), .CLKOS_DIV(CLKOS_DIV), .CLKOS_CPHASE(CLKOS_CPHASE),
              .CLKOS2_ENABLE("ENABLED"), .CLKOS2_DIV(CLKOS2_DIV), .CLKOS2_CPHASE(CLKOS2_CPHASE))
        pll (.CLKI(clki), .CLKFB(fb), .RST(1'b0), .STDBY(1'b0), .CLKOP(op), .CLKOS(os), .CLKOS2(os2), .LOCK(lock));
    always @(posedge clki) if (lock) $display("EDGE clki %f", $realtime);
    always @(posedge op) if (lock) $display("EDGE op %f", $realtime);
    always @(posedge os) if (lock) $display("EDGE os %f", $realtime);
    always @(posedge os2) if (lock) $display("EDGE os2 %f", $realtime);
    initial begin
        @(posedge lock) $display("LOCK %f", $realtime);
        #2000 $finish;
    end
    initial #20000 begin $display("NO LOCK"); $finish; end
endmodule
"""


def _edges(out):
    edges = {}
    for name, time in re.findall(r"^EDGE (\w+) ([\d.]+)$", out, re.MULTILINE):
        edges.setdefault(name, []).append(float(time))
    return edges


def _measure(edges, name):
    times = edges[name]
    return (times[-1] - times[0]) / (len(times) - 1), times


def _phase(edges, name, reference="clki"):
    """The output's rising edges after the reference's, in ns, modulo its period."""
    period, times = _measure(edges, name)
    return min((t - r) % period for t in times for r in edges[reference] if t >= r)


@pytest.mark.parametrize("input_mhz", [25, 125])
def test_pll_clocks_from_its_dividers(tmp_path, input_mhz):
    """The appliance's PLL settings (:func:`pll_dividers`, CLKOS2 180 degrees after CLKOS as ECP5PLL sets it): the
    measured CLKOP, CLKOS and CLKOS2 are 125, 50 and 50 MHz, CLKOP and CLKOS on CLKI's edges, CLKOS2 half a
    period later."""
    d = pll_dividers(input_mhz * 1e6, 125e6, 50e6)
    out = simulate(tmp_path, PLL_TB, params={
        "CLKI_NS": 1e3 / input_mhz, "CLKI_DIV": d["CLKI_DIV"], "CLKFB_DIV": d["CLKFB_DIV"],
        "CLKOP_DIV": d["CLKOP_DIV"], "CLKOP_CPHASE": d["CLKOP_DIV"] - 1, "CLKOS_DIV": d["CLKOS_DIV"],
        "CLKOS_CPHASE": d["CLKOS_DIV"] - 1, "CLKOS2_DIV": d["CLKOS_DIV"],
        "CLKOS2_CPHASE": d["CLKOS_DIV"] - 1 + d["CLKOS_DIV"] // 2})
    assert "LOCK" in out and "ERROR" not in out, out
    edges = _edges(out)
    for name, mhz in (("op", 125), ("os", 50), ("os2", 50)):
        assert _measure(edges, name)[0] == pytest.approx(1e3 / mhz, rel=1e-6), (name, out[:400])
    assert _phase(edges, "op") == pytest.approx(0, abs=1e-6)
    assert _phase(edges, "os") == pytest.approx(0, abs=1e-6)
    assert _phase(edges, "os2", "os") == pytest.approx(10.0, abs=1e-6)


def test_pll_wrong_divider_shows(tmp_path):
    """CLKFB_DIV one too low: CLKOP is 100 MHz, not 125 (what a board would run at with that bitstream)."""
    out = simulate(tmp_path, PLL_TB, params={"CLKFB_DIV": 4})
    assert _measure(_edges(out), "op")[0] == pytest.approx(10.0, rel=1e-6), out[:400]


def test_pll_loses_lock_when_its_reference_stops(tmp_path):
    """CLKI stopped at 1,500 ns: LOCK falls within 1.5 of its periods and CLKOP stops."""
    out = simulate(tmp_path, PLL_TB, params={"STOP_NS": 1500.0})
    unlock = float(re.search(r"^UNLOCK ([\d.]+)$", out, re.M).group(1))
    assert 1500 < unlock <= 1500 + 1.5 * 40 + 20, out[-400:]
    assert max(_edges(out)["op"]) < unlock + 8.0


@pytest.mark.parametrize("params, message", [
    ({"CLKOP_DIV": 1, "CLKOP_CPHASE": 0}, "f_VCO"),            # 125 MHz VCO: below 400
    ({"CLKI_NS": 200.0}, "f_CLKI"),                             # 5 MHz in: below 8
    ({"FEEDBACK": 0}, "CLKFB does not follow CLKOP"),
])
def test_pll_refuses_settings_out_of_range(tmp_path, params, message):
    out = simulate(tmp_path, PLL_TB, params=params)
    assert "ERROR: EHXPLLL" in out and message in out, out[-600:]


# ---- IDDRX1F, ODDRX1F, DELAYG

DDR_TB = """`timescale 1ns / 1ps
module tb;
    reg clk = 0, d = 0;
    reg [1:0] pair = 0;
    wire q0, q1, q;
    IDDRX1F iddr (.D(d), .SCLK(clk), .RST(1'b0), .Q0(q0), .Q1(q1));
    ODDRX1F oddr (.SCLK(clk), .RST(1'b0), .D0(pair[0]), .D1(pair[1]), .Q(q));
    integer n;
    reg [63:0] bits = 64'h9c3a_5f01_e7b2_4d68;
    initial begin
        for (n = 0; n < 32; n = n + 1) begin
            d = bits[2 * n];      pair = {bits[2 * n + 1], bits[2 * n]};
            #2 clk = 1;           // rising edge: d is bit 2n
            #1 $display("HIGH %0d %b %b %b", n, q0, q1, q);
            #1 d = bits[2 * n + 1];
            #2 clk = 0;           // falling edge: d is bit 2n+1
            #1 $display("LOW %0d %b", n, q);
            #1;
        end
        $finish;
    end
endmodule
"""


def test_iddr_oddr_pairing_and_latency(tmp_path):
    """IDDRX1F: at rising edge n, Q0 is the bit taken at edge n-1 and Q1 the one at the falling edge after it.
    ODDRX1F: D0, D1 taken at rising edge n leave as Q while the clock is high, then low, after edge n+2."""
    out = simulate(tmp_path, DDR_TB)
    bits = 0x9C3A_5F01_E7B2_4D68
    bit = lambda i: (bits >> i) & 1
    high = {int(n): (int(a), int(b), int(c)) for n, a, b, c in re.findall(r"^HIGH (\d+) (\d) (\d) (\d)$", out, re.M)}
    low = {int(n): int(c) for n, c in re.findall(r"^LOW (\d+) (\d)$", out, re.M)}
    assert len(high) == len(low) == 32, out
    for n in range(3, 32):
        assert high[n][:2] == (bit(2 * n - 2), bit(2 * n - 1)), (n, high[n])
        assert (high[n][2], low[n]) == (bit(2 * n - 4), bit(2 * n - 3)), (n, high[n], low[n])


DELAY_TB = """`timescale 1ns / 1fs
module tb;
    parameter MODE = "USER_DEFINED";
    parameter VALUE = 80;
    reg a = 0;
    wire z;
    DELAYG #(.DEL_MODE(MODE), .DEL_VALUE(VALUE)) delay (.A(a), .Z(z));
    initial begin
        #10 a = 1;
        #1 a = 0;
        #5 $finish;
    end
    always @(z) $display("Z %b %f", z, $realtime);
endmodule
"""


@pytest.mark.parametrize("mode, value, steps", [("USER_DEFINED", 80, 80), ("SCLK_ALIGNED", 80, 80),
                                                 ("SCLK_ALIGNED", 0, 50), ("USER_DEFINED", 0, 0)])
def test_delayg_delay(tmp_path, mode, value, steps):
    """Each edge of A reaches Z 25 ps per step later (DEL_VALUE, or the mode's own steps when it is 0, as
    nextpnr-ecp5 encodes it); a pulse shorter than the delay passes whole."""
    out = simulate(tmp_path, DELAY_TB, params={"MODE": f'"{mode}"', "VALUE": value})
    times = [(level, float(t)) for level, t in re.findall(r"^Z ([01]) ([\d.]+)$", out, re.M)]
    delay = steps * 0.025
    assert times[-2:] == [("1", pytest.approx(10 + delay)), ("0", pytest.approx(11 + delay))], out


@pytest.mark.parametrize("params, message", [({"VALUE": 128}, "DEL_VALUE must be 0..127"),
                                             ({"MODE": '"SCLK_SKEWED"'}, "is not one of the ECP5's modes")])
def test_delayg_refuses(tmp_path, params, message):
    out = simulate(tmp_path, DELAY_TB, params=params)
    assert "ERROR: DELAYG" in out and message in out, out
