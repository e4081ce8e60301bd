// nextpnr-ecp5's packed I/O and clock cells, for simulating the routed design, in the parameter encoding nextpnr's
// packer gives them. The DDR registers and the delay are this project's pre-synthesis models (sim/ecp5/ddr_io.v,
// delayg.v) inside the I/O logic: what is checked here is where nextpnr put them and how it set them.
// - TRELLIS_IO, the pad: DIR INPUT, OUTPUT or BIDIR; the output from I, or from the I/O logic's IOLDO when
//   DATAMUX_ODDR or DATAMUX_OREG is IOLDO; the output enable (T high: high impedance) from T, or from IOLTO when
//   TRIMUX_TSREG is IOLTO; an unconnected T drives.
// - IOLOGIC and SIOLOGIC, the pad's I/O logic: MODE NONE, IREG_OREG or IDDRX1_ODDRX1. The input delay (DELAY.OUTDEL
//   DISABLED) or the output delay (ENABLED) of DELAY.DEL_VALUE steps of 25 ps, as nextpnr resolved it from the
//   DELAYG's DEL_MODE and DEL_VALUE; in IDDRX1_ODDRX1 the IDDRX1F on PADDI (RXDATA0, RXDATA1) and the ODDRX1F on
//   TXDATA0, TXDATA1 (IOLDO); in either mode the input flip-flop (FF.INREGMODE FF: PADDI to INFF), the output
//   flip-flop (OUTREG.OUTREGMODE FF: TXDATA0 to IOLDO) and the tristate flip-flop (TSREG.OUTREGMODE FF: TSDATA0 to
//   IOLTO), clocked by CLK through CLKIMUX (input side) or CLKOMUX (output side): CLK, INV or 0; reset by LSR
//   through LSRMUX (LSR or INV) where LSRIMUX or LSROMUX is LSRMUX (0: none); enabled by CE through CEMUX (CE,
//   INV, 1, 0) where CEIMUX or CEOMUX is CEMUX (1: always); SRMODE ASYNC or LSR_OVER_CE; REGSET RESET or SET.
//   INDD and DI give the delayed pad to the fabric.
//   Stops the simulation on: another MODE, an IDDRXN, ODDRXN, MIDDRX, MODDRX or MTDDRX mode, IOLTOMUX other than
//   NONE (tristate DDR), DELAY.WAIT_FOR_EDGE ENABLED, DEL_VALUE outside 0..127, any other mux value, MOVE high (the
//   dynamic delay).
// - DCCA, a global clock buffer: CLKO is CLKI while CE is high or unconnected (nextpnr's own DCCA have none),
//   low while CE is low.
// Not modelled: GSR, ECLK, DQS, the pad's electrical settings, the timing.
`timescale 1ns / 1fs
module TRELLIS_IO(inout B, input I, input T, input IOLDO, input IOLTO, output O);
    parameter DIR = "INPUT";
    parameter DATAMUX_ODDR = "PADDO";
    parameter DATAMUX_MDDR = "PADDO";
    parameter DATAMUX_OREG = "PADDO";
    parameter TRIMUX_TSREG = "PADDT";

    initial begin
        if (DIR != "INPUT" && DIR != "OUTPUT" && DIR != "BIDIR") begin
            $display("ERROR: TRELLIS_IO %m: DIR %0s is not INPUT, OUTPUT or BIDIR", DIR);
            $fatal(1);
        end
        if (DATAMUX_MDDR != "PADDO") begin
            $display("ERROR: TRELLIS_IO %m: DATAMUX_MDDR %0s is not modelled", DATAMUX_MDDR);
            $fatal(1);
        end
    end

    wire data = (DATAMUX_ODDR == "IOLDO" || DATAMUX_OREG == "IOLDO") ? IOLDO : I;
    wire tristate_in = TRIMUX_TSREG == "IOLTO" ? IOLTO : T;
    wire tristate = tristate_in === 1'bz ? 1'b0 : tristate_in;
    generate
        if (DIR == "INPUT") begin : input_pad
            assign B = 1'bz;
            assign O = B;
        end else if (DIR == "OUTPUT") begin : output_pad
            assign B = tristate ? 1'bz : data;
            assign O = 1'bx;
        end else begin : bidir_pad
            assign B = tristate ? 1'bz : data;
            assign O = B;
        end
    endgenerate
endmodule

// one of the I/O logic's single data rate flip-flops
module apbbf_iologic_ff(input clock, input reset, input enable, input D, output reg Q);
    parameter SET_VALUE = 1'b0;
    parameter ASYNC = 1;
    initial Q = SET_VALUE;
    generate if (ASYNC) begin : async
        always @(posedge clock or posedge reset)
            if (reset) Q <= SET_VALUE;
            else if (enable) Q <= D;
    end else begin : sync
        always @(posedge clock)
            if (reset) Q <= SET_VALUE;
            else if (enable) Q <= D;
    end endgenerate
endmodule

module IOLOGIC(
    input CLK, LSR, CE, PADDI, TXDATA0, TXDATA1, TSDATA0, TSDATA1, LOADN, MOVE, DIRECTION, ECLK,
    output RXDATA0, RXDATA1, INFF, INDD, DI, IOLDO, IOLTO, CFLAG
);
    parameter MODE = "NONE";
    parameter GSR = "DISABLED";
    parameter CLKIMUX = "CLK";
    parameter CLKOMUX = "CLK";
    parameter LSRIMUX = "0";
    parameter LSROMUX = "0";
    parameter LSRMUX = "LSR";
    parameter CEIMUX = "1";
    parameter CEOMUX = "1";
    parameter CEMUX = "CE";
    parameter SRMODE = "ASYNC";
    parameter \DELAY.OUTDEL = "DISABLED";
    parameter integer \DELAY.DEL_VALUE = 0;
    parameter \DELAY.WAIT_FOR_EDGE = "DISABLED";
    parameter \FF.INREGMODE = "NONE";
    parameter \FF.REGSET = "RESET";
    parameter \OUTREG.OUTREGMODE = "NONE";
    parameter \OUTREG.REGSET = "RESET";
    parameter \TSREG.OUTREGMODE = "NONE";
    parameter \TSREG.REGSET = "RESET";
    parameter \IDDRXN.MODE = "NONE";
    parameter \ODDRXN.MODE = "NONE";
    parameter \MIDDRX.MODE = "NONE";
    parameter \MODDRX.MODE = "NONE";
    parameter \MTDDRX.MODE = "NONE";
    parameter IOLTOMUX = "NONE";
    parameter \MTDDRX.DQSW_INVERT = "DISABLED";
    parameter \MTDDRX.REGSET = "RESET";
    parameter \MIDDRX_MODDRX.WRCLKMUX = "NONE";

    task refuse(input [8*40-1:0] name, input [8*20-1:0] value);
        begin
            $display("ERROR: IOLOGIC %m: %0s %0s is not modelled", name, value);
            $fatal(1);
        end
    endtask
    initial begin
        if (MODE != "NONE" && MODE != "IREG_OREG" && MODE != "IDDRX1_ODDRX1") refuse("MODE", MODE);
        if (\IDDRXN.MODE != "NONE") refuse("IDDRXN.MODE", \IDDRXN.MODE );
        if (\ODDRXN.MODE != "NONE") refuse("ODDRXN.MODE", \ODDRXN.MODE );
        if (\MIDDRX.MODE != "NONE") refuse("MIDDRX.MODE", \MIDDRX.MODE );
        if (\MODDRX.MODE != "NONE") refuse("MODDRX.MODE", \MODDRX.MODE );
        if (\MTDDRX.MODE != "NONE") refuse("MTDDRX.MODE", \MTDDRX.MODE );
        if (IOLTOMUX != "NONE") refuse("IOLTOMUX", IOLTOMUX);
        if (\DELAY.WAIT_FOR_EDGE != "DISABLED") refuse("DELAY.WAIT_FOR_EDGE", \DELAY.WAIT_FOR_EDGE );
        if (\DELAY.OUTDEL != "DISABLED" && \DELAY.OUTDEL != "ENABLED") refuse("DELAY.OUTDEL", \DELAY.OUTDEL );
        if (CLKIMUX != "CLK" && CLKIMUX != "INV" && CLKIMUX != "0") refuse("CLKIMUX", CLKIMUX);
        if (CLKOMUX != "CLK" && CLKOMUX != "INV" && CLKOMUX != "0") refuse("CLKOMUX", CLKOMUX);
        if (LSRIMUX != "LSRMUX" && LSRIMUX != "0") refuse("LSRIMUX", LSRIMUX);
        if (LSROMUX != "LSRMUX" && LSROMUX != "0") refuse("LSROMUX", LSROMUX);
        if (LSRMUX != "LSR" && LSRMUX != "INV") refuse("LSRMUX", LSRMUX);
        if (CEIMUX != "CEMUX" && CEIMUX != "1") refuse("CEIMUX", CEIMUX);
        if (CEOMUX != "CEMUX" && CEOMUX != "1") refuse("CEOMUX", CEOMUX);
        if (CEMUX != "CE" && CEMUX != "INV" && CEMUX != "1" && CEMUX != "0") refuse("CEMUX", CEMUX);
        if (SRMODE != "ASYNC" && SRMODE != "LSR_OVER_CE") refuse("SRMODE", SRMODE);
        if (\FF.INREGMODE != "NONE" && \FF.INREGMODE != "FF") refuse("FF.INREGMODE", \FF.INREGMODE );
        if (\OUTREG.OUTREGMODE != "NONE" && \OUTREG.OUTREGMODE != "FF")
            refuse("OUTREG.OUTREGMODE", \OUTREG.OUTREGMODE );
        if (\TSREG.OUTREGMODE != "NONE" && \TSREG.OUTREGMODE != "FF") refuse("TSREG.OUTREGMODE", \TSREG.OUTREGMODE );
        if (MODE == "IDDRX1_ODDRX1" && \OUTREG.OUTREGMODE == "FF") refuse("OUTREG.OUTREGMODE FF with", MODE);
        if (\DELAY.DEL_VALUE < 0 || \DELAY.DEL_VALUE > 127) begin
            $display("ERROR: IOLOGIC %m: DELAY.DEL_VALUE must be 0..127 steps of 25 ps, not %0d", \DELAY.DEL_VALUE );
            $fatal(1);
        end
    end
    always @(posedge MOVE) begin
        $display("ERROR: IOLOGIC %m: MOVE rose: the dynamic delay is not modelled");
        $fatal(1);
    end

    localparam integer IN_STEPS = \DELAY.OUTDEL == "DISABLED" ? \DELAY.DEL_VALUE : 0;
    localparam integer OUT_STEPS = \DELAY.OUTDEL == "ENABLED" ? \DELAY.DEL_VALUE : 0;
    wire pad;
    DELAYG #(.DEL_MODE("USER_DEFINED"), .DEL_VALUE(IN_STEPS)) input_delay(.A(PADDI), .Z(pad));
    assign INDD = pad;
    assign DI = pad;

    wire clock_in = CLKIMUX == "0" ? 1'b0 : CLKIMUX == "INV" ? ~CLK : CLK;
    wire clock_out = CLKOMUX == "0" ? 1'b0 : CLKOMUX == "INV" ? ~CLK : CLK;
    wire lsr = LSR === 1'bz ? 1'b0 : LSRMUX == "INV" ? ~LSR : LSR;
    wire reset_in = LSRIMUX == "LSRMUX" ? lsr : 1'b0;
    wire reset_out = LSROMUX == "LSRMUX" ? lsr : 1'b0;
    wire ce = CEMUX == "1" ? 1'b1 : CEMUX == "0" ? 1'b0 : CEMUX == "INV" ? ~CE : CE;
    wire enable_in = CEIMUX == "CEMUX" ? ce : 1'b1;
    wire enable_out = CEOMUX == "CEMUX" ? ce : 1'b1;
    localparam ASYNC = SRMODE == "ASYNC";

    wire data_out, oddr_q, oreg_q;
    generate if (MODE == "IDDRX1_ODDRX1") begin : ddr
        IDDRX1F iddr(.D(pad), .SCLK(clock_in), .RST(reset_in), .Q0(RXDATA0), .Q1(RXDATA1));
        ODDRX1F oddr(.SCLK(clock_out), .RST(reset_out), .D0(TXDATA0), .D1(TXDATA1), .Q(oddr_q));
        assign data_out = oddr_q;
    end else begin : sdr
        assign RXDATA0 = 1'bx;
        assign RXDATA1 = 1'bx;
        apbbf_iologic_ff #(.SET_VALUE(\OUTREG.REGSET == "SET"), .ASYNC(ASYNC)) oreg(
            .clock(clock_out), .reset(reset_out), .enable(enable_out), .D(TXDATA0), .Q(oreg_q));
        assign data_out = \OUTREG.OUTREGMODE == "FF" ? oreg_q : 1'bx;
    end endgenerate
    generate if (OUT_STEPS != 0) begin : output_delay
        DELAYG #(.DEL_MODE("USER_DEFINED"), .DEL_VALUE(OUT_STEPS)) delay(.A(data_out), .Z(IOLDO));
    end else begin : no_output_delay
        assign IOLDO = data_out;
    end endgenerate

    wire inff_q, tsreg_q;
    apbbf_iologic_ff #(.SET_VALUE(\FF.REGSET == "SET"), .ASYNC(ASYNC)) inff(
        .clock(clock_in), .reset(reset_in), .enable(enable_in), .D(pad), .Q(inff_q));
    assign INFF = \FF.INREGMODE == "FF" ? inff_q : 1'bx;
    apbbf_iologic_ff #(.SET_VALUE(\TSREG.REGSET == "SET"), .ASYNC(ASYNC)) tsreg(
        .clock(clock_out), .reset(reset_out), .enable(enable_out), .D(TSDATA0), .Q(tsreg_q));
    assign IOLTO = \TSREG.OUTREGMODE == "FF" ? tsreg_q : 1'bx;
    assign CFLAG = 1'b0;
endmodule

// the I/O logic of a top or bottom pin: IOLOGIC without the DDR gearing nextpnr allows only at the sides
module SIOLOGIC(
    input CLK, LSR, CE, PADDI, TXDATA0, TXDATA1, TSDATA0, TSDATA1, LOADN, MOVE, DIRECTION,
    output RXDATA0, RXDATA1, INFF, INDD, DI, IOLDO, IOLTO, CFLAG
);
    parameter MODE = "NONE";
    parameter GSR = "DISABLED";
    parameter CLKIMUX = "CLK";
    parameter CLKOMUX = "CLK";
    parameter LSRIMUX = "0";
    parameter LSROMUX = "0";
    parameter LSRMUX = "LSR";
    parameter CEIMUX = "1";
    parameter CEOMUX = "1";
    parameter CEMUX = "CE";
    parameter SRMODE = "ASYNC";
    parameter \DELAY.OUTDEL = "DISABLED";
    parameter integer \DELAY.DEL_VALUE = 0;
    parameter \DELAY.WAIT_FOR_EDGE = "DISABLED";
    parameter \FF.INREGMODE = "NONE";
    parameter \FF.REGSET = "RESET";
    parameter \OUTREG.OUTREGMODE = "NONE";
    parameter \OUTREG.REGSET = "RESET";
    parameter \TSREG.OUTREGMODE = "NONE";
    parameter \TSREG.REGSET = "RESET";
    IOLOGIC #(.MODE(MODE), .GSR(GSR), .CLKIMUX(CLKIMUX), .CLKOMUX(CLKOMUX), .LSRIMUX(LSRIMUX), .LSROMUX(LSROMUX),
              .LSRMUX(LSRMUX), .CEIMUX(CEIMUX), .CEOMUX(CEOMUX), .CEMUX(CEMUX), .SRMODE(SRMODE),
              .\DELAY.OUTDEL (\DELAY.OUTDEL ), .\DELAY.DEL_VALUE (\DELAY.DEL_VALUE ),
              .\DELAY.WAIT_FOR_EDGE (\DELAY.WAIT_FOR_EDGE ), .\FF.INREGMODE (\FF.INREGMODE ),
              .\FF.REGSET (\FF.REGSET ), .\OUTREG.OUTREGMODE (\OUTREG.OUTREGMODE ),
              .\OUTREG.REGSET (\OUTREG.REGSET ), .\TSREG.OUTREGMODE (\TSREG.OUTREGMODE ),
              .\TSREG.REGSET (\TSREG.REGSET )) side_logic(
        .CLK(CLK), .LSR(LSR), .CE(CE), .PADDI(PADDI), .TXDATA0(TXDATA0), .TXDATA1(TXDATA1), .TSDATA0(TSDATA0),
        .TSDATA1(TSDATA1), .LOADN(LOADN), .MOVE(MOVE), .DIRECTION(DIRECTION), .ECLK(1'b0), .RXDATA0(RXDATA0),
        .RXDATA1(RXDATA1), .INFF(INFF), .INDD(INDD), .DI(DI), .IOLDO(IOLDO), .IOLTO(IOLTO), .CFLAG(CFLAG));
endmodule

module DCCA(input CLKI, input CE, output CLKO);
    assign CLKO = CE === 1'b0 ? 1'b0 : CLKI;
endmodule
