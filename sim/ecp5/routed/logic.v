// nextpnr-ecp5's packed logic cells, for simulating the routed design (nextpnr's --write JSON, read back by yosys
// and written as Verilog), in the parameter encoding nextpnr's packer gives them:
// - TRELLIS_COMB, one LUT4 of a slice: MODE LOGIC (F is INITVAL indexed by {D, C, B, A}), CCU2 (half of a CCU2C:
//   F = LUT4 xor the carry in unless CCU2_INJECT1 is YES; FCO the carry out, from the LUT4 and the LUT2 of
//   INITVAL[3:0]), DPRAM (16 x 1 LUT RAM: the LUT4 read as memory, written at WAD from WD on WCK while WRE);
//   OFX is the slice's wide-function mux: M ? FXB : FXA when FXA or FXB is connected (the LUT6/7 mux), else
//   M ? F1 : F (the LUT5 mux); RAMW_BLOCK: nothing (a placeholder nextpnr puts where the LUT RAM's TRELLIS_RAMW
//   takes the slice, with no pins connected);
// - TRELLIS_FF: the slice's flip-flop, its data from DI (SD 1: the LUT in front of it) or M (SD 0: general
//   routing); CEMUX CE, INV, 1 or 0; CLKMUX CLK or INV; LSRMUX LSR or INV; SRMODE LSR_OVER_CE (synchronous) or
//   ASYNC; REGSET RESET or SET (the value LSR loads, and the value at configuration); LSRMODE LSR;
// - TRELLIS_RAMW: the slice that carries the LUT RAM's write address and data to its TRELLIS_COMBs (WAD0..3 on
//   D0, B0, C0, A0; DI0..3 on C1, A1, D1, B1).
// A pin nextpnr leaves unconnected is a constant it folded into the parameters: a LUT input reads 1 (the fabric
// ties an unused LUT input high), LSR 0, CE as CEMUX says. Stops the simulation on: an unknown MODE, CEMUX,
// CLKMUX, LSRMUX, SRMODE, REGSET, SD, WREMUX or WCKMUX value; LSRMODE PRLD. Not modelled: GSR, the timing.
`timescale 1ns / 1fs
module TRELLIS_COMB(
    input A, B, C, D, M, FCI, F1, FXA, FXB, DI0, DI1, WD, WAD0, WAD1, WAD2, WAD3, WRE, WCK,
    output F, FCO, OFX
);
    parameter MODE = "LOGIC";
    parameter [15:0] INITVAL = 16'h0000;
    parameter CCU2_INJECT1 = "NO";
    parameter WREMUX = "WRE";
    parameter WCKMUX = "WCK";

    initial begin
        if (MODE != "LOGIC" && MODE != "CCU2" && MODE != "DPRAM" && MODE != "RAMW_BLOCK") begin
            $display("ERROR: TRELLIS_COMB %m: MODE %0s is not LOGIC, CCU2, DPRAM or RAMW_BLOCK", MODE);
            $fatal(1);
        end
        if (CCU2_INJECT1 != "NO" && CCU2_INJECT1 != "YES") begin
            $display("ERROR: TRELLIS_COMB %m: CCU2_INJECT1 %0s is not YES or NO", CCU2_INJECT1);
            $fatal(1);
        end
        if (WREMUX != "WRE" && WREMUX != "INV" && WREMUX != "1" && WREMUX != "0") begin
            $display("ERROR: TRELLIS_COMB %m: WREMUX %0s is not WRE, INV, 1 or 0", WREMUX);
            $fatal(1);
        end
        if (WCKMUX != "WCK" && WCKMUX != "INV") begin
            $display("ERROR: TRELLIS_COMB %m: WCKMUX %0s is not WCK or INV", WCKMUX);
            $fatal(1);
        end
    end

    // an unconnected LUT input is tied high
    wire a = A === 1'bz ? 1'b1 : A, b = B === 1'bz ? 1'b1 : B, c = C === 1'bz ? 1'b1 : C, d = D === 1'bz ? 1'b1 : D;
    // the LUT's 16 bits: INITVAL, or the LUT RAM's contents (in the same order)
    reg [15:0] bits = INITVAL;
    wire [7:0] s3 = d ? bits[15:8] : bits[7:0];
    wire [3:0] s2 = c ? s3[7:4] : s3[3:0];
    wire [1:0] s1 = b ? s2[3:2] : s2[1:0];
    wire lut4 = a ? s1[1] : s1[0];
    wire lut2 = a ? (b ? INITVAL[3] : INITVAL[1]) : (b ? INITVAL[2] : INITVAL[0]);
    wire inject = MODE == "CCU2" && CCU2_INJECT1 == "YES";
    assign F = MODE == "CCU2" ? lut4 ^ (inject ? 1'b0 : FCI) : lut4;
    assign FCO = MODE == "CCU2" ? (~lut4 & (inject ? 1'b0 : lut2)) | (lut4 & FCI) : 1'bx;
    assign OFX = (FXA !== 1'bz || FXB !== 1'bz) ? (M ? FXB : FXA) : (M ? F1 : F);

    // LUT RAM: the read address is {RAD3..0} on {A, C, B, D} (nextpnr's wiring); the LUT reads bit {D, C, B, A},
    // so the word at address WAD is bit {WAD0, WAD2, WAD1, WAD3}
    wire write_clock = WCKMUX == "INV" ? ~WCK : WCK;
    wire write_enable = WREMUX == "1" ? 1'b1 : WREMUX == "0" ? 1'b0 : WREMUX == "INV" ? ~WRE : WRE;
    generate if (MODE == "DPRAM") begin : ram
        always @(posedge write_clock)
            if (write_enable === 1'b1)
                bits[{WAD0, WAD2, WAD1, WAD3}] <= WD;
            else if (write_enable !== 1'b0)
                bits <= 16'hxxxx;
    end endgenerate
endmodule

module TRELLIS_FF(input CLK, LSR, CE, DI, M, output reg Q);
    parameter GSR = "ENABLED";
    parameter CEMUX = "1";
    parameter CLKMUX = "CLK";
    parameter LSRMUX = "LSR";
    parameter SRMODE = "LSR_OVER_CE";
    parameter REGSET = "RESET";
    parameter LSRMODE = "LSR";
    parameter SD = "1";

    initial begin
        if (CEMUX != "CE" && CEMUX != "INV" && CEMUX != "1" && CEMUX != "0") begin
            $display("ERROR: TRELLIS_FF %m: CEMUX %0s is not CE, INV, 1 or 0", CEMUX);
            $fatal(1);
        end
        if (CLKMUX != "CLK" && CLKMUX != "INV") begin
            $display("ERROR: TRELLIS_FF %m: CLKMUX %0s is not CLK or INV", CLKMUX);
            $fatal(1);
        end
        if (LSRMUX != "LSR" && LSRMUX != "INV") begin
            $display("ERROR: TRELLIS_FF %m: LSRMUX %0s is not LSR or INV", LSRMUX);
            $fatal(1);
        end
        if (SRMODE != "LSR_OVER_CE" && SRMODE != "ASYNC") begin
            $display("ERROR: TRELLIS_FF %m: SRMODE %0s is not LSR_OVER_CE or ASYNC", SRMODE);
            $fatal(1);
        end
        if (REGSET != "RESET" && REGSET != "SET") begin
            $display("ERROR: TRELLIS_FF %m: REGSET %0s is not RESET or SET", REGSET);
            $fatal(1);
        end
        if (LSRMODE != "LSR") begin
            $display("ERROR: TRELLIS_FF %m: LSRMODE %0s is not modelled (LSR only)", LSRMODE);
            $fatal(1);
        end
        if (SD != "0" && SD != "1") begin
            $display("ERROR: TRELLIS_FF %m: SD %0s is not 0 (M) or 1 (DI)", SD);
            $fatal(1);
        end
    end

    localparam SET_VALUE = REGSET == "SET" ? 1'b1 : 1'b0;
    wire clock = CLKMUX == "INV" ? ~CLK : CLK;
    // an unconnected LSR is a constant nextpnr found inactive
    wire reset = LSR === 1'bz ? 1'b0 : LSRMUX == "INV" ? ~LSR : LSR;
    wire enable = CEMUX == "1" ? 1'b1 : CEMUX == "0" ? 1'b0 : CEMUX == "INV" ? ~CE : CE;
    wire data = SD == "0" ? M : DI;
    initial Q = SET_VALUE;
    generate if (SRMODE == "ASYNC") begin : async
        always @(posedge clock or posedge reset)
            if (reset) Q <= SET_VALUE;
            else if (enable) Q <= data;
    end else begin : sync
        always @(posedge clock)
            if (reset) Q <= SET_VALUE;
            else if (enable) Q <= data;
    end endgenerate
endmodule

module TRELLIS_RAMW(
    input A0, B0, C0, D0, A1, B1, C1, D1,
    output WDO0, WDO1, WDO2, WDO3, WADO0, WADO1, WADO2, WADO3
);
    assign {WADO3, WADO2, WADO1, WADO0} = {A0, C0, B0, D0};
    assign {WDO3, WDO2, WDO1, WDO0} = {B1, D1, A1, C1};
endmodule
