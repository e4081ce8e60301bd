// nextpnr-ecp5's packed DP16KD, for simulating the routed design. The block RAM itself is this project's
// pre-synthesis model (sim/ecp5/dp16kd.v, loaded under the name DP16KD_BEHAVIOUR: the same modes, the same checks);
// this wrapper decodes what nextpnr's packer changed: it disconnects every input it found constant and records the
// constant in the input's <pin>MUX parameter.
// - the control inputs (CEx, OCEx, CLKx, WEx, RSTx, CSx2..0): <pin>MUX is the pin's name (the input as it is, or 1
//   when unconnected: its default state) or INV (inverted, or 0 when unconnected);
// - the data and address inputs (DIxN, ADxN): <pin>MUX is the pin's name (the input), 1, 0 or INV.
// An unconnected data or address input whose <pin>MUX is its name stays Z: the model reads it as X. Any other
// <pin>MUX value stops the simulation.
`timescale 1ns / 1fs
module DP16KD(
    input CEA, OCEA, CLKA, WEA, RSTA, CEB, OCEB, CLKB, WEB, RSTB, CSA2, CSA1, CSA0, CSB2, CSB1, CSB0, DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0, DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0, ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0, ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
    output DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0, DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
);
    parameter DATA_WIDTH_A = 18;
    parameter DATA_WIDTH_B = 18;
    parameter REGMODE_A = "NOREG";
    parameter REGMODE_B = "NOREG";
    parameter RESETMODE = "SYNC";
    parameter ASYNC_RESET_RELEASE = "SYNC";
    parameter CSDECODE_A = "0b000";
    parameter CSDECODE_B = "0b000";
    parameter WRITEMODE_A = "NORMAL";
    parameter WRITEMODE_B = "NORMAL";
    parameter GSR = "ENABLED";
    parameter INIT_DATA = "STATIC";
    parameter [319:0] INITVAL_00 = 320'h0;
    parameter [319:0] INITVAL_01 = 320'h0;
    parameter [319:0] INITVAL_02 = 320'h0;
    parameter [319:0] INITVAL_03 = 320'h0;
    parameter [319:0] INITVAL_04 = 320'h0;
    parameter [319:0] INITVAL_05 = 320'h0;
    parameter [319:0] INITVAL_06 = 320'h0;
    parameter [319:0] INITVAL_07 = 320'h0;
    parameter [319:0] INITVAL_08 = 320'h0;
    parameter [319:0] INITVAL_09 = 320'h0;
    parameter [319:0] INITVAL_0A = 320'h0;
    parameter [319:0] INITVAL_0B = 320'h0;
    parameter [319:0] INITVAL_0C = 320'h0;
    parameter [319:0] INITVAL_0D = 320'h0;
    parameter [319:0] INITVAL_0E = 320'h0;
    parameter [319:0] INITVAL_0F = 320'h0;
    parameter [319:0] INITVAL_10 = 320'h0;
    parameter [319:0] INITVAL_11 = 320'h0;
    parameter [319:0] INITVAL_12 = 320'h0;
    parameter [319:0] INITVAL_13 = 320'h0;
    parameter [319:0] INITVAL_14 = 320'h0;
    parameter [319:0] INITVAL_15 = 320'h0;
    parameter [319:0] INITVAL_16 = 320'h0;
    parameter [319:0] INITVAL_17 = 320'h0;
    parameter [319:0] INITVAL_18 = 320'h0;
    parameter [319:0] INITVAL_19 = 320'h0;
    parameter [319:0] INITVAL_1A = 320'h0;
    parameter [319:0] INITVAL_1B = 320'h0;
    parameter [319:0] INITVAL_1C = 320'h0;
    parameter [319:0] INITVAL_1D = 320'h0;
    parameter [319:0] INITVAL_1E = 320'h0;
    parameter [319:0] INITVAL_1F = 320'h0;
    parameter [319:0] INITVAL_20 = 320'h0;
    parameter [319:0] INITVAL_21 = 320'h0;
    parameter [319:0] INITVAL_22 = 320'h0;
    parameter [319:0] INITVAL_23 = 320'h0;
    parameter [319:0] INITVAL_24 = 320'h0;
    parameter [319:0] INITVAL_25 = 320'h0;
    parameter [319:0] INITVAL_26 = 320'h0;
    parameter [319:0] INITVAL_27 = 320'h0;
    parameter [319:0] INITVAL_28 = 320'h0;
    parameter [319:0] INITVAL_29 = 320'h0;
    parameter [319:0] INITVAL_2A = 320'h0;
    parameter [319:0] INITVAL_2B = 320'h0;
    parameter [319:0] INITVAL_2C = 320'h0;
    parameter [319:0] INITVAL_2D = 320'h0;
    parameter [319:0] INITVAL_2E = 320'h0;
    parameter [319:0] INITVAL_2F = 320'h0;
    parameter [319:0] INITVAL_30 = 320'h0;
    parameter [319:0] INITVAL_31 = 320'h0;
    parameter [319:0] INITVAL_32 = 320'h0;
    parameter [319:0] INITVAL_33 = 320'h0;
    parameter [319:0] INITVAL_34 = 320'h0;
    parameter [319:0] INITVAL_35 = 320'h0;
    parameter [319:0] INITVAL_36 = 320'h0;
    parameter [319:0] INITVAL_37 = 320'h0;
    parameter [319:0] INITVAL_38 = 320'h0;
    parameter [319:0] INITVAL_39 = 320'h0;
    parameter [319:0] INITVAL_3A = 320'h0;
    parameter [319:0] INITVAL_3B = 320'h0;
    parameter [319:0] INITVAL_3C = 320'h0;
    parameter [319:0] INITVAL_3D = 320'h0;
    parameter [319:0] INITVAL_3E = 320'h0;
    parameter [319:0] INITVAL_3F = 320'h0;
    parameter CEAMUX = "CEA";
    parameter OCEAMUX = "OCEA";
    parameter CLKAMUX = "CLKA";
    parameter WEAMUX = "WEA";
    parameter RSTAMUX = "RSTA";
    parameter CEBMUX = "CEB";
    parameter OCEBMUX = "OCEB";
    parameter CLKBMUX = "CLKB";
    parameter WEBMUX = "WEB";
    parameter RSTBMUX = "RSTB";
    parameter CSA2MUX = "CSA2";
    parameter CSA1MUX = "CSA1";
    parameter CSA0MUX = "CSA0";
    parameter CSB2MUX = "CSB2";
    parameter CSB1MUX = "CSB1";
    parameter CSB0MUX = "CSB0";
    parameter DIA17MUX = "DIA17";
    parameter DIA16MUX = "DIA16";
    parameter DIA15MUX = "DIA15";
    parameter DIA14MUX = "DIA14";
    parameter DIA13MUX = "DIA13";
    parameter DIA12MUX = "DIA12";
    parameter DIA11MUX = "DIA11";
    parameter DIA10MUX = "DIA10";
    parameter DIA9MUX = "DIA9";
    parameter DIA8MUX = "DIA8";
    parameter DIA7MUX = "DIA7";
    parameter DIA6MUX = "DIA6";
    parameter DIA5MUX = "DIA5";
    parameter DIA4MUX = "DIA4";
    parameter DIA3MUX = "DIA3";
    parameter DIA2MUX = "DIA2";
    parameter DIA1MUX = "DIA1";
    parameter DIA0MUX = "DIA0";
    parameter DIB17MUX = "DIB17";
    parameter DIB16MUX = "DIB16";
    parameter DIB15MUX = "DIB15";
    parameter DIB14MUX = "DIB14";
    parameter DIB13MUX = "DIB13";
    parameter DIB12MUX = "DIB12";
    parameter DIB11MUX = "DIB11";
    parameter DIB10MUX = "DIB10";
    parameter DIB9MUX = "DIB9";
    parameter DIB8MUX = "DIB8";
    parameter DIB7MUX = "DIB7";
    parameter DIB6MUX = "DIB6";
    parameter DIB5MUX = "DIB5";
    parameter DIB4MUX = "DIB4";
    parameter DIB3MUX = "DIB3";
    parameter DIB2MUX = "DIB2";
    parameter DIB1MUX = "DIB1";
    parameter DIB0MUX = "DIB0";
    parameter ADA13MUX = "ADA13";
    parameter ADA12MUX = "ADA12";
    parameter ADA11MUX = "ADA11";
    parameter ADA10MUX = "ADA10";
    parameter ADA9MUX = "ADA9";
    parameter ADA8MUX = "ADA8";
    parameter ADA7MUX = "ADA7";
    parameter ADA6MUX = "ADA6";
    parameter ADA5MUX = "ADA5";
    parameter ADA4MUX = "ADA4";
    parameter ADA3MUX = "ADA3";
    parameter ADA2MUX = "ADA2";
    parameter ADA1MUX = "ADA1";
    parameter ADA0MUX = "ADA0";
    parameter ADB13MUX = "ADB13";
    parameter ADB12MUX = "ADB12";
    parameter ADB11MUX = "ADB11";
    parameter ADB10MUX = "ADB10";
    parameter ADB9MUX = "ADB9";
    parameter ADB8MUX = "ADB8";
    parameter ADB7MUX = "ADB7";
    parameter ADB6MUX = "ADB6";
    parameter ADB5MUX = "ADB5";
    parameter ADB4MUX = "ADB4";
    parameter ADB3MUX = "ADB3";
    parameter ADB2MUX = "ADB2";
    parameter ADB1MUX = "ADB1";
    parameter ADB0MUX = "ADB0";

    task refuse(input [8*8-1:0] pin, input [8*8-1:0] value);
        begin
            $display("ERROR: DP16KD %m: %0sMUX %0s is not the pin's name, INV, 1 or 0", pin, value);
            $fatal(1);
        end
    endtask
    // a control input: unconnected, it is its default state 1
    function control_pin(input value, input inverted);
        control_pin = (value === 1'bz ? 1'b1 : value) ^ inverted;
    endfunction
    function data_pin(input value, input [8*8-1:0] mux, input [8*8-1:0] name);
        data_pin = mux == name ? value : mux == "INV" ? ~value : mux == "1" ? 1'b1 : 1'b0;
    endfunction

    initial begin
        if (CEAMUX != "CEA" && CEAMUX != "INV") refuse("CEA", CEAMUX);
        if (OCEAMUX != "OCEA" && OCEAMUX != "INV") refuse("OCEA", OCEAMUX);
        if (CLKAMUX != "CLKA" && CLKAMUX != "INV") refuse("CLKA", CLKAMUX);
        if (WEAMUX != "WEA" && WEAMUX != "INV") refuse("WEA", WEAMUX);
        if (RSTAMUX != "RSTA" && RSTAMUX != "INV") refuse("RSTA", RSTAMUX);
        if (CEBMUX != "CEB" && CEBMUX != "INV") refuse("CEB", CEBMUX);
        if (OCEBMUX != "OCEB" && OCEBMUX != "INV") refuse("OCEB", OCEBMUX);
        if (CLKBMUX != "CLKB" && CLKBMUX != "INV") refuse("CLKB", CLKBMUX);
        if (WEBMUX != "WEB" && WEBMUX != "INV") refuse("WEB", WEBMUX);
        if (RSTBMUX != "RSTB" && RSTBMUX != "INV") refuse("RSTB", RSTBMUX);
        if (CSA2MUX != "CSA2" && CSA2MUX != "INV") refuse("CSA2", CSA2MUX);
        if (CSA1MUX != "CSA1" && CSA1MUX != "INV") refuse("CSA1", CSA1MUX);
        if (CSA0MUX != "CSA0" && CSA0MUX != "INV") refuse("CSA0", CSA0MUX);
        if (CSB2MUX != "CSB2" && CSB2MUX != "INV") refuse("CSB2", CSB2MUX);
        if (CSB1MUX != "CSB1" && CSB1MUX != "INV") refuse("CSB1", CSB1MUX);
        if (CSB0MUX != "CSB0" && CSB0MUX != "INV") refuse("CSB0", CSB0MUX);
        if (DIA17MUX != "DIA17" && DIA17MUX != "INV" && DIA17MUX != "1" && DIA17MUX != "0") refuse("DIA17", DIA17MUX);
        if (DIA16MUX != "DIA16" && DIA16MUX != "INV" && DIA16MUX != "1" && DIA16MUX != "0") refuse("DIA16", DIA16MUX);
        if (DIA15MUX != "DIA15" && DIA15MUX != "INV" && DIA15MUX != "1" && DIA15MUX != "0") refuse("DIA15", DIA15MUX);
        if (DIA14MUX != "DIA14" && DIA14MUX != "INV" && DIA14MUX != "1" && DIA14MUX != "0") refuse("DIA14", DIA14MUX);
        if (DIA13MUX != "DIA13" && DIA13MUX != "INV" && DIA13MUX != "1" && DIA13MUX != "0") refuse("DIA13", DIA13MUX);
        if (DIA12MUX != "DIA12" && DIA12MUX != "INV" && DIA12MUX != "1" && DIA12MUX != "0") refuse("DIA12", DIA12MUX);
        if (DIA11MUX != "DIA11" && DIA11MUX != "INV" && DIA11MUX != "1" && DIA11MUX != "0") refuse("DIA11", DIA11MUX);
        if (DIA10MUX != "DIA10" && DIA10MUX != "INV" && DIA10MUX != "1" && DIA10MUX != "0") refuse("DIA10", DIA10MUX);
        if (DIA9MUX != "DIA9" && DIA9MUX != "INV" && DIA9MUX != "1" && DIA9MUX != "0") refuse("DIA9", DIA9MUX);
        if (DIA8MUX != "DIA8" && DIA8MUX != "INV" && DIA8MUX != "1" && DIA8MUX != "0") refuse("DIA8", DIA8MUX);
        if (DIA7MUX != "DIA7" && DIA7MUX != "INV" && DIA7MUX != "1" && DIA7MUX != "0") refuse("DIA7", DIA7MUX);
        if (DIA6MUX != "DIA6" && DIA6MUX != "INV" && DIA6MUX != "1" && DIA6MUX != "0") refuse("DIA6", DIA6MUX);
        if (DIA5MUX != "DIA5" && DIA5MUX != "INV" && DIA5MUX != "1" && DIA5MUX != "0") refuse("DIA5", DIA5MUX);
        if (DIA4MUX != "DIA4" && DIA4MUX != "INV" && DIA4MUX != "1" && DIA4MUX != "0") refuse("DIA4", DIA4MUX);
        if (DIA3MUX != "DIA3" && DIA3MUX != "INV" && DIA3MUX != "1" && DIA3MUX != "0") refuse("DIA3", DIA3MUX);
        if (DIA2MUX != "DIA2" && DIA2MUX != "INV" && DIA2MUX != "1" && DIA2MUX != "0") refuse("DIA2", DIA2MUX);
        if (DIA1MUX != "DIA1" && DIA1MUX != "INV" && DIA1MUX != "1" && DIA1MUX != "0") refuse("DIA1", DIA1MUX);
        if (DIA0MUX != "DIA0" && DIA0MUX != "INV" && DIA0MUX != "1" && DIA0MUX != "0") refuse("DIA0", DIA0MUX);
        if (DIB17MUX != "DIB17" && DIB17MUX != "INV" && DIB17MUX != "1" && DIB17MUX != "0") refuse("DIB17", DIB17MUX);
        if (DIB16MUX != "DIB16" && DIB16MUX != "INV" && DIB16MUX != "1" && DIB16MUX != "0") refuse("DIB16", DIB16MUX);
        if (DIB15MUX != "DIB15" && DIB15MUX != "INV" && DIB15MUX != "1" && DIB15MUX != "0") refuse("DIB15", DIB15MUX);
        if (DIB14MUX != "DIB14" && DIB14MUX != "INV" && DIB14MUX != "1" && DIB14MUX != "0") refuse("DIB14", DIB14MUX);
        if (DIB13MUX != "DIB13" && DIB13MUX != "INV" && DIB13MUX != "1" && DIB13MUX != "0") refuse("DIB13", DIB13MUX);
        if (DIB12MUX != "DIB12" && DIB12MUX != "INV" && DIB12MUX != "1" && DIB12MUX != "0") refuse("DIB12", DIB12MUX);
        if (DIB11MUX != "DIB11" && DIB11MUX != "INV" && DIB11MUX != "1" && DIB11MUX != "0") refuse("DIB11", DIB11MUX);
        if (DIB10MUX != "DIB10" && DIB10MUX != "INV" && DIB10MUX != "1" && DIB10MUX != "0") refuse("DIB10", DIB10MUX);
        if (DIB9MUX != "DIB9" && DIB9MUX != "INV" && DIB9MUX != "1" && DIB9MUX != "0") refuse("DIB9", DIB9MUX);
        if (DIB8MUX != "DIB8" && DIB8MUX != "INV" && DIB8MUX != "1" && DIB8MUX != "0") refuse("DIB8", DIB8MUX);
        if (DIB7MUX != "DIB7" && DIB7MUX != "INV" && DIB7MUX != "1" && DIB7MUX != "0") refuse("DIB7", DIB7MUX);
        if (DIB6MUX != "DIB6" && DIB6MUX != "INV" && DIB6MUX != "1" && DIB6MUX != "0") refuse("DIB6", DIB6MUX);
        if (DIB5MUX != "DIB5" && DIB5MUX != "INV" && DIB5MUX != "1" && DIB5MUX != "0") refuse("DIB5", DIB5MUX);
        if (DIB4MUX != "DIB4" && DIB4MUX != "INV" && DIB4MUX != "1" && DIB4MUX != "0") refuse("DIB4", DIB4MUX);
        if (DIB3MUX != "DIB3" && DIB3MUX != "INV" && DIB3MUX != "1" && DIB3MUX != "0") refuse("DIB3", DIB3MUX);
        if (DIB2MUX != "DIB2" && DIB2MUX != "INV" && DIB2MUX != "1" && DIB2MUX != "0") refuse("DIB2", DIB2MUX);
        if (DIB1MUX != "DIB1" && DIB1MUX != "INV" && DIB1MUX != "1" && DIB1MUX != "0") refuse("DIB1", DIB1MUX);
        if (DIB0MUX != "DIB0" && DIB0MUX != "INV" && DIB0MUX != "1" && DIB0MUX != "0") refuse("DIB0", DIB0MUX);
        if (ADA13MUX != "ADA13" && ADA13MUX != "INV" && ADA13MUX != "1" && ADA13MUX != "0") refuse("ADA13", ADA13MUX);
        if (ADA12MUX != "ADA12" && ADA12MUX != "INV" && ADA12MUX != "1" && ADA12MUX != "0") refuse("ADA12", ADA12MUX);
        if (ADA11MUX != "ADA11" && ADA11MUX != "INV" && ADA11MUX != "1" && ADA11MUX != "0") refuse("ADA11", ADA11MUX);
        if (ADA10MUX != "ADA10" && ADA10MUX != "INV" && ADA10MUX != "1" && ADA10MUX != "0") refuse("ADA10", ADA10MUX);
        if (ADA9MUX != "ADA9" && ADA9MUX != "INV" && ADA9MUX != "1" && ADA9MUX != "0") refuse("ADA9", ADA9MUX);
        if (ADA8MUX != "ADA8" && ADA8MUX != "INV" && ADA8MUX != "1" && ADA8MUX != "0") refuse("ADA8", ADA8MUX);
        if (ADA7MUX != "ADA7" && ADA7MUX != "INV" && ADA7MUX != "1" && ADA7MUX != "0") refuse("ADA7", ADA7MUX);
        if (ADA6MUX != "ADA6" && ADA6MUX != "INV" && ADA6MUX != "1" && ADA6MUX != "0") refuse("ADA6", ADA6MUX);
        if (ADA5MUX != "ADA5" && ADA5MUX != "INV" && ADA5MUX != "1" && ADA5MUX != "0") refuse("ADA5", ADA5MUX);
        if (ADA4MUX != "ADA4" && ADA4MUX != "INV" && ADA4MUX != "1" && ADA4MUX != "0") refuse("ADA4", ADA4MUX);
        if (ADA3MUX != "ADA3" && ADA3MUX != "INV" && ADA3MUX != "1" && ADA3MUX != "0") refuse("ADA3", ADA3MUX);
        if (ADA2MUX != "ADA2" && ADA2MUX != "INV" && ADA2MUX != "1" && ADA2MUX != "0") refuse("ADA2", ADA2MUX);
        if (ADA1MUX != "ADA1" && ADA1MUX != "INV" && ADA1MUX != "1" && ADA1MUX != "0") refuse("ADA1", ADA1MUX);
        if (ADA0MUX != "ADA0" && ADA0MUX != "INV" && ADA0MUX != "1" && ADA0MUX != "0") refuse("ADA0", ADA0MUX);
        if (ADB13MUX != "ADB13" && ADB13MUX != "INV" && ADB13MUX != "1" && ADB13MUX != "0") refuse("ADB13", ADB13MUX);
        if (ADB12MUX != "ADB12" && ADB12MUX != "INV" && ADB12MUX != "1" && ADB12MUX != "0") refuse("ADB12", ADB12MUX);
        if (ADB11MUX != "ADB11" && ADB11MUX != "INV" && ADB11MUX != "1" && ADB11MUX != "0") refuse("ADB11", ADB11MUX);
        if (ADB10MUX != "ADB10" && ADB10MUX != "INV" && ADB10MUX != "1" && ADB10MUX != "0") refuse("ADB10", ADB10MUX);
        if (ADB9MUX != "ADB9" && ADB9MUX != "INV" && ADB9MUX != "1" && ADB9MUX != "0") refuse("ADB9", ADB9MUX);
        if (ADB8MUX != "ADB8" && ADB8MUX != "INV" && ADB8MUX != "1" && ADB8MUX != "0") refuse("ADB8", ADB8MUX);
        if (ADB7MUX != "ADB7" && ADB7MUX != "INV" && ADB7MUX != "1" && ADB7MUX != "0") refuse("ADB7", ADB7MUX);
        if (ADB6MUX != "ADB6" && ADB6MUX != "INV" && ADB6MUX != "1" && ADB6MUX != "0") refuse("ADB6", ADB6MUX);
        if (ADB5MUX != "ADB5" && ADB5MUX != "INV" && ADB5MUX != "1" && ADB5MUX != "0") refuse("ADB5", ADB5MUX);
        if (ADB4MUX != "ADB4" && ADB4MUX != "INV" && ADB4MUX != "1" && ADB4MUX != "0") refuse("ADB4", ADB4MUX);
        if (ADB3MUX != "ADB3" && ADB3MUX != "INV" && ADB3MUX != "1" && ADB3MUX != "0") refuse("ADB3", ADB3MUX);
        if (ADB2MUX != "ADB2" && ADB2MUX != "INV" && ADB2MUX != "1" && ADB2MUX != "0") refuse("ADB2", ADB2MUX);
        if (ADB1MUX != "ADB1" && ADB1MUX != "INV" && ADB1MUX != "1" && ADB1MUX != "0") refuse("ADB1", ADB1MUX);
        if (ADB0MUX != "ADB0" && ADB0MUX != "INV" && ADB0MUX != "1" && ADB0MUX != "0") refuse("ADB0", ADB0MUX);
    end

    wire CEA_in = control_pin(CEA, CEAMUX == "INV");
    wire OCEA_in = control_pin(OCEA, OCEAMUX == "INV");
    wire CLKA_in = control_pin(CLKA, CLKAMUX == "INV");
    wire WEA_in = control_pin(WEA, WEAMUX == "INV");
    wire RSTA_in = control_pin(RSTA, RSTAMUX == "INV");
    wire CEB_in = control_pin(CEB, CEBMUX == "INV");
    wire OCEB_in = control_pin(OCEB, OCEBMUX == "INV");
    wire CLKB_in = control_pin(CLKB, CLKBMUX == "INV");
    wire WEB_in = control_pin(WEB, WEBMUX == "INV");
    wire RSTB_in = control_pin(RSTB, RSTBMUX == "INV");
    wire CSA2_in = control_pin(CSA2, CSA2MUX == "INV");
    wire CSA1_in = control_pin(CSA1, CSA1MUX == "INV");
    wire CSA0_in = control_pin(CSA0, CSA0MUX == "INV");
    wire CSB2_in = control_pin(CSB2, CSB2MUX == "INV");
    wire CSB1_in = control_pin(CSB1, CSB1MUX == "INV");
    wire CSB0_in = control_pin(CSB0, CSB0MUX == "INV");
    wire DIA17_in = data_pin(DIA17, DIA17MUX, "DIA17");
    wire DIA16_in = data_pin(DIA16, DIA16MUX, "DIA16");
    wire DIA15_in = data_pin(DIA15, DIA15MUX, "DIA15");
    wire DIA14_in = data_pin(DIA14, DIA14MUX, "DIA14");
    wire DIA13_in = data_pin(DIA13, DIA13MUX, "DIA13");
    wire DIA12_in = data_pin(DIA12, DIA12MUX, "DIA12");
    wire DIA11_in = data_pin(DIA11, DIA11MUX, "DIA11");
    wire DIA10_in = data_pin(DIA10, DIA10MUX, "DIA10");
    wire DIA9_in = data_pin(DIA9, DIA9MUX, "DIA9");
    wire DIA8_in = data_pin(DIA8, DIA8MUX, "DIA8");
    wire DIA7_in = data_pin(DIA7, DIA7MUX, "DIA7");
    wire DIA6_in = data_pin(DIA6, DIA6MUX, "DIA6");
    wire DIA5_in = data_pin(DIA5, DIA5MUX, "DIA5");
    wire DIA4_in = data_pin(DIA4, DIA4MUX, "DIA4");
    wire DIA3_in = data_pin(DIA3, DIA3MUX, "DIA3");
    wire DIA2_in = data_pin(DIA2, DIA2MUX, "DIA2");
    wire DIA1_in = data_pin(DIA1, DIA1MUX, "DIA1");
    wire DIA0_in = data_pin(DIA0, DIA0MUX, "DIA0");
    wire DIB17_in = data_pin(DIB17, DIB17MUX, "DIB17");
    wire DIB16_in = data_pin(DIB16, DIB16MUX, "DIB16");
    wire DIB15_in = data_pin(DIB15, DIB15MUX, "DIB15");
    wire DIB14_in = data_pin(DIB14, DIB14MUX, "DIB14");
    wire DIB13_in = data_pin(DIB13, DIB13MUX, "DIB13");
    wire DIB12_in = data_pin(DIB12, DIB12MUX, "DIB12");
    wire DIB11_in = data_pin(DIB11, DIB11MUX, "DIB11");
    wire DIB10_in = data_pin(DIB10, DIB10MUX, "DIB10");
    wire DIB9_in = data_pin(DIB9, DIB9MUX, "DIB9");
    wire DIB8_in = data_pin(DIB8, DIB8MUX, "DIB8");
    wire DIB7_in = data_pin(DIB7, DIB7MUX, "DIB7");
    wire DIB6_in = data_pin(DIB6, DIB6MUX, "DIB6");
    wire DIB5_in = data_pin(DIB5, DIB5MUX, "DIB5");
    wire DIB4_in = data_pin(DIB4, DIB4MUX, "DIB4");
    wire DIB3_in = data_pin(DIB3, DIB3MUX, "DIB3");
    wire DIB2_in = data_pin(DIB2, DIB2MUX, "DIB2");
    wire DIB1_in = data_pin(DIB1, DIB1MUX, "DIB1");
    wire DIB0_in = data_pin(DIB0, DIB0MUX, "DIB0");
    wire ADA13_in = data_pin(ADA13, ADA13MUX, "ADA13");
    wire ADA12_in = data_pin(ADA12, ADA12MUX, "ADA12");
    wire ADA11_in = data_pin(ADA11, ADA11MUX, "ADA11");
    wire ADA10_in = data_pin(ADA10, ADA10MUX, "ADA10");
    wire ADA9_in = data_pin(ADA9, ADA9MUX, "ADA9");
    wire ADA8_in = data_pin(ADA8, ADA8MUX, "ADA8");
    wire ADA7_in = data_pin(ADA7, ADA7MUX, "ADA7");
    wire ADA6_in = data_pin(ADA6, ADA6MUX, "ADA6");
    wire ADA5_in = data_pin(ADA5, ADA5MUX, "ADA5");
    wire ADA4_in = data_pin(ADA4, ADA4MUX, "ADA4");
    wire ADA3_in = data_pin(ADA3, ADA3MUX, "ADA3");
    wire ADA2_in = data_pin(ADA2, ADA2MUX, "ADA2");
    wire ADA1_in = data_pin(ADA1, ADA1MUX, "ADA1");
    wire ADA0_in = data_pin(ADA0, ADA0MUX, "ADA0");
    wire ADB13_in = data_pin(ADB13, ADB13MUX, "ADB13");
    wire ADB12_in = data_pin(ADB12, ADB12MUX, "ADB12");
    wire ADB11_in = data_pin(ADB11, ADB11MUX, "ADB11");
    wire ADB10_in = data_pin(ADB10, ADB10MUX, "ADB10");
    wire ADB9_in = data_pin(ADB9, ADB9MUX, "ADB9");
    wire ADB8_in = data_pin(ADB8, ADB8MUX, "ADB8");
    wire ADB7_in = data_pin(ADB7, ADB7MUX, "ADB7");
    wire ADB6_in = data_pin(ADB6, ADB6MUX, "ADB6");
    wire ADB5_in = data_pin(ADB5, ADB5MUX, "ADB5");
    wire ADB4_in = data_pin(ADB4, ADB4MUX, "ADB4");
    wire ADB3_in = data_pin(ADB3, ADB3MUX, "ADB3");
    wire ADB2_in = data_pin(ADB2, ADB2MUX, "ADB2");
    wire ADB1_in = data_pin(ADB1, ADB1MUX, "ADB1");
    wire ADB0_in = data_pin(ADB0, ADB0MUX, "ADB0");
    DP16KD_BEHAVIOUR #(
        .DATA_WIDTH_A(DATA_WIDTH_A),
        .DATA_WIDTH_B(DATA_WIDTH_B),
        .REGMODE_A(REGMODE_A),
        .REGMODE_B(REGMODE_B),
        .RESETMODE(RESETMODE),
        .ASYNC_RESET_RELEASE(ASYNC_RESET_RELEASE),
        .CSDECODE_A(CSDECODE_A),
        .CSDECODE_B(CSDECODE_B),
        .WRITEMODE_A(WRITEMODE_A),
        .WRITEMODE_B(WRITEMODE_B),
        .GSR(GSR),
        .INIT_DATA(INIT_DATA),
        .INITVAL_00(INITVAL_00),
        .INITVAL_01(INITVAL_01),
        .INITVAL_02(INITVAL_02),
        .INITVAL_03(INITVAL_03),
        .INITVAL_04(INITVAL_04),
        .INITVAL_05(INITVAL_05),
        .INITVAL_06(INITVAL_06),
        .INITVAL_07(INITVAL_07),
        .INITVAL_08(INITVAL_08),
        .INITVAL_09(INITVAL_09),
        .INITVAL_0A(INITVAL_0A),
        .INITVAL_0B(INITVAL_0B),
        .INITVAL_0C(INITVAL_0C),
        .INITVAL_0D(INITVAL_0D),
        .INITVAL_0E(INITVAL_0E),
        .INITVAL_0F(INITVAL_0F),
        .INITVAL_10(INITVAL_10),
        .INITVAL_11(INITVAL_11),
        .INITVAL_12(INITVAL_12),
        .INITVAL_13(INITVAL_13),
        .INITVAL_14(INITVAL_14),
        .INITVAL_15(INITVAL_15),
        .INITVAL_16(INITVAL_16),
        .INITVAL_17(INITVAL_17),
        .INITVAL_18(INITVAL_18),
        .INITVAL_19(INITVAL_19),
        .INITVAL_1A(INITVAL_1A),
        .INITVAL_1B(INITVAL_1B),
        .INITVAL_1C(INITVAL_1C),
        .INITVAL_1D(INITVAL_1D),
        .INITVAL_1E(INITVAL_1E),
        .INITVAL_1F(INITVAL_1F),
        .INITVAL_20(INITVAL_20),
        .INITVAL_21(INITVAL_21),
        .INITVAL_22(INITVAL_22),
        .INITVAL_23(INITVAL_23),
        .INITVAL_24(INITVAL_24),
        .INITVAL_25(INITVAL_25),
        .INITVAL_26(INITVAL_26),
        .INITVAL_27(INITVAL_27),
        .INITVAL_28(INITVAL_28),
        .INITVAL_29(INITVAL_29),
        .INITVAL_2A(INITVAL_2A),
        .INITVAL_2B(INITVAL_2B),
        .INITVAL_2C(INITVAL_2C),
        .INITVAL_2D(INITVAL_2D),
        .INITVAL_2E(INITVAL_2E),
        .INITVAL_2F(INITVAL_2F),
        .INITVAL_30(INITVAL_30),
        .INITVAL_31(INITVAL_31),
        .INITVAL_32(INITVAL_32),
        .INITVAL_33(INITVAL_33),
        .INITVAL_34(INITVAL_34),
        .INITVAL_35(INITVAL_35),
        .INITVAL_36(INITVAL_36),
        .INITVAL_37(INITVAL_37),
        .INITVAL_38(INITVAL_38),
        .INITVAL_39(INITVAL_39),
        .INITVAL_3A(INITVAL_3A),
        .INITVAL_3B(INITVAL_3B),
        .INITVAL_3C(INITVAL_3C),
        .INITVAL_3D(INITVAL_3D),
        .INITVAL_3E(INITVAL_3E),
        .INITVAL_3F(INITVAL_3F)
    ) ram (
        .CEA(CEA_in),
        .OCEA(OCEA_in),
        .CLKA(CLKA_in),
        .WEA(WEA_in),
        .RSTA(RSTA_in),
        .CEB(CEB_in),
        .OCEB(OCEB_in),
        .CLKB(CLKB_in),
        .WEB(WEB_in),
        .RSTB(RSTB_in),
        .CSA2(CSA2_in),
        .CSA1(CSA1_in),
        .CSA0(CSA0_in),
        .CSB2(CSB2_in),
        .CSB1(CSB1_in),
        .CSB0(CSB0_in),
        .DIA17(DIA17_in),
        .DIA16(DIA16_in),
        .DIA15(DIA15_in),
        .DIA14(DIA14_in),
        .DIA13(DIA13_in),
        .DIA12(DIA12_in),
        .DIA11(DIA11_in),
        .DIA10(DIA10_in),
        .DIA9(DIA9_in),
        .DIA8(DIA8_in),
        .DIA7(DIA7_in),
        .DIA6(DIA6_in),
        .DIA5(DIA5_in),
        .DIA4(DIA4_in),
        .DIA3(DIA3_in),
        .DIA2(DIA2_in),
        .DIA1(DIA1_in),
        .DIA0(DIA0_in),
        .DIB17(DIB17_in),
        .DIB16(DIB16_in),
        .DIB15(DIB15_in),
        .DIB14(DIB14_in),
        .DIB13(DIB13_in),
        .DIB12(DIB12_in),
        .DIB11(DIB11_in),
        .DIB10(DIB10_in),
        .DIB9(DIB9_in),
        .DIB8(DIB8_in),
        .DIB7(DIB7_in),
        .DIB6(DIB6_in),
        .DIB5(DIB5_in),
        .DIB4(DIB4_in),
        .DIB3(DIB3_in),
        .DIB2(DIB2_in),
        .DIB1(DIB1_in),
        .DIB0(DIB0_in),
        .ADA13(ADA13_in),
        .ADA12(ADA12_in),
        .ADA11(ADA11_in),
        .ADA10(ADA10_in),
        .ADA9(ADA9_in),
        .ADA8(ADA8_in),
        .ADA7(ADA7_in),
        .ADA6(ADA6_in),
        .ADA5(ADA5_in),
        .ADA4(ADA4_in),
        .ADA3(ADA3_in),
        .ADA2(ADA2_in),
        .ADA1(ADA1_in),
        .ADA0(ADA0_in),
        .ADB13(ADB13_in),
        .ADB12(ADB12_in),
        .ADB11(ADB11_in),
        .ADB10(ADB10_in),
        .ADB9(ADB9_in),
        .ADB8(ADB8_in),
        .ADB7(ADB7_in),
        .ADB6(ADB6_in),
        .ADB5(ADB5_in),
        .ADB4(ADB4_in),
        .ADB3(ADB3_in),
        .ADB2(ADB2_in),
        .ADB1(ADB1_in),
        .ADB0(ADB0_in),
        .DOA17(DOA17),
        .DOA16(DOA16),
        .DOA15(DOA15),
        .DOA14(DOA14),
        .DOA13(DOA13),
        .DOA12(DOA12),
        .DOA11(DOA11),
        .DOA10(DOA10),
        .DOA9(DOA9),
        .DOA8(DOA8),
        .DOA7(DOA7),
        .DOA6(DOA6),
        .DOA5(DOA5),
        .DOA4(DOA4),
        .DOA3(DOA3),
        .DOA2(DOA2),
        .DOA1(DOA1),
        .DOA0(DOA0),
        .DOB17(DOB17),
        .DOB16(DOB16),
        .DOB15(DOB15),
        .DOB14(DOB14),
        .DOB13(DOB13),
        .DOB12(DOB12),
        .DOB11(DOB11),
        .DOB10(DOB10),
        .DOB9(DOB9),
        .DOB8(DOB8),
        .DOB7(DOB7),
        .DOB6(DOB6),
        .DOB5(DOB5),
        .DOB4(DOB4),
        .DOB3(DOB3),
        .DOB2(DOB2),
        .DOB1(DOB1),
        .DOB0(DOB0)
    );
endmodule
