// ECP5 DP16KD (18 Kbit true dual port block RAM) for simulation, as Lattice documents it (FPGA-TN-02032, the ECP5
// memory usage guide; the modes as yosys's brams_16kd.txt describes them): what yosys's cells_sim_ecp5.v leaves a
// black box.
//
// Modelled:
// - DATA_WIDTH_A = DATA_WIDTH_B of 1, 2, 4, 9 or 18 (both ports read and write; 18: ADx1..0 are the write's byte
//   enables), or both 36: the pseudo dual port mode (PDPW16KD as nextpnr converts it), port A writing (CEA, WEA
//   high, ADA3..0 the byte enables, DIA the low 18 bits, DIB the high 18) and port B reading (CEB; DOA the low 18
//   bits, DOB the high 18);
// - WRITEMODE NORMAL (a port's output holds while it writes), WRITETHROUGH (it shows the word written),
//   READBEFOREWRITE (it shows the word before the write);
// - REGMODE NOREG (the output latch) or OUTREG (the output register after it, enabled by OCEx);
// - RSTx (active high; RESETMODE SYNC: on the clock edge, not gated by CEx; ASYNC: at once) clears the latch and
//   the register; both start at zero;
// - CSDECODE_x with CSx2..0 (a port is selected when its chip selects equal its CSDECODE), CLKxMUX CLKx or INV;
// - INITVAL_00..3F in the 9-, 18- and 36-bit modes: 16 words of 20 bits each, the low 18 bits an 18-bit word
//   (word 16*i + j of INITVAL_i, bits 20*j+17..20*j), as yosys writes them;
// - a read of a word the other port writes on the same clock edge reads X (the data sheet leaves it undefined), and
//   a bit both ports write on the same edge becomes X.
// - X or Z on CEx, the chip selects, the address or WEx at a clock edge: the port may have written any word (all
//   become X) and reads X.
// Not modelled, and stopping the simulation if used: mixed port widths, INITVAL in the 1-, 2- and 4-bit modes,
// INITVAL's two padding bits set, any other parameter value; in the 36-bit mode WEA low at an enabled edge or WEB
// not low. Not modelled at all: GSR, the timing (setup, hold, clock-to-out), the inversion muxes of the other pins (their parameters are
// not declared, so an instance that sets them does not elaborate).
`timescale 1ns / 1fs
module DP16KD(
    input DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0,
    input ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
    input CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0,
    output DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0,
    input DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
    input ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
    input CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0,
    output DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
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
    parameter CLKAMUX = "CLKA";
    parameter CLKBMUX = "CLKB";
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

    localparam MODE36 = DATA_WIDTH_A == 36;
    localparam integer WIDTH_A = DATA_WIDTH_A, WIDTH_B = DATA_WIDTH_B;
    localparam [17:0] WIDTH_MASK_A = DATA_WIDTH_A >= 18 ? 18'h3ffff : (18'h1 << DATA_WIDTH_A) - 1;
    localparam [17:0] WIDTH_MASK_B = DATA_WIDTH_B >= 18 ? 18'h3ffff : (18'h1 << DATA_WIDTH_B) - 1;
    // the chip-select value each port answers to: "0bXYZ" gives CSx2 = X, CSx1 = Y, CSx0 = Z
    localparam [2:0] CSDEC_A = {CSDECODE_A[23:16] == "1", CSDECODE_A[15:8] == "1", CSDECODE_A[7:0] == "1"};
    localparam [2:0] CSDEC_B = {CSDECODE_B[23:16] == "1", CSDECODE_B[15:8] == "1", CSDECODE_B[7:0] == "1"};

    // 1,024 words of 18 bits: in the 1-, 2- and 4-bit modes the 16 data bits of a word (not bits 8 and 17)
    reg [17:0] mem [0:1023];

    task fail(input [8*80-1:0] what);
        begin
            $display("ERROR: DP16KD %m: %0s (at %t)", what, $realtime);
            $fatal(1);
        end
    endtask

    function [319:0] initval(input integer index);
        case (index)
            0: initval = INITVAL_00;
            1: initval = INITVAL_01;
            2: initval = INITVAL_02;
            3: initval = INITVAL_03;
            4: initval = INITVAL_04;
            5: initval = INITVAL_05;
            6: initval = INITVAL_06;
            7: initval = INITVAL_07;
            8: initval = INITVAL_08;
            9: initval = INITVAL_09;
            10: initval = INITVAL_0A;
            11: initval = INITVAL_0B;
            12: initval = INITVAL_0C;
            13: initval = INITVAL_0D;
            14: initval = INITVAL_0E;
            15: initval = INITVAL_0F;
            16: initval = INITVAL_10;
            17: initval = INITVAL_11;
            18: initval = INITVAL_12;
            19: initval = INITVAL_13;
            20: initval = INITVAL_14;
            21: initval = INITVAL_15;
            22: initval = INITVAL_16;
            23: initval = INITVAL_17;
            24: initval = INITVAL_18;
            25: initval = INITVAL_19;
            26: initval = INITVAL_1A;
            27: initval = INITVAL_1B;
            28: initval = INITVAL_1C;
            29: initval = INITVAL_1D;
            30: initval = INITVAL_1E;
            31: initval = INITVAL_1F;
            32: initval = INITVAL_20;
            33: initval = INITVAL_21;
            34: initval = INITVAL_22;
            35: initval = INITVAL_23;
            36: initval = INITVAL_24;
            37: initval = INITVAL_25;
            38: initval = INITVAL_26;
            39: initval = INITVAL_27;
            40: initval = INITVAL_28;
            41: initval = INITVAL_29;
            42: initval = INITVAL_2A;
            43: initval = INITVAL_2B;
            44: initval = INITVAL_2C;
            45: initval = INITVAL_2D;
            46: initval = INITVAL_2E;
            47: initval = INITVAL_2F;
            48: initval = INITVAL_30;
            49: initval = INITVAL_31;
            50: initval = INITVAL_32;
            51: initval = INITVAL_33;
            52: initval = INITVAL_34;
            53: initval = INITVAL_35;
            54: initval = INITVAL_36;
            55: initval = INITVAL_37;
            56: initval = INITVAL_38;
            57: initval = INITVAL_39;
            58: initval = INITVAL_3A;
            59: initval = INITVAL_3B;
            60: initval = INITVAL_3C;
            61: initval = INITVAL_3D;
            62: initval = INITVAL_3E;
            63: initval = INITVAL_3F;
            default: initval = 320'h0;
        endcase
    endfunction

    function integer phys(input integer position);      // a data bit's place in the 18-bit word
        phys = position + (position >= 8 ? 1 : 0);
    endfunction

    // The bits of its 18-bit word that an access of `width` bits at address `ad` touches (a write: only the
    // byte lanes enabled).
    function [17:0] lane_mask(input integer width, input [13:0] ad, input write);
        integer i, p;
        begin
            lane_mask = 18'h0;
            if (width == 18)
                lane_mask = write ? {{9{ad[1]}}, {9{ad[0]}}} : 18'h3ffff;
            else if (width == 9)
                lane_mask = ad[3] ? {9'h1ff, 9'h0} : {9'h0, 9'h1ff};
            else begin
                p = (ad[3:0] / width) * width;
                for (i = 0; i < width; i = i + 1) lane_mask[phys(p + i)] = 1'b1;
            end
        end
    endfunction

    function [17:0] place(input integer width, input [13:0] ad, input [17:0] data);
        integer i, p;
        begin
            place = 18'h0;
            if (width == 18) place = data;
            else if (width == 9) place = ad[3] ? {data[8:0], 9'h0} : {9'h0, data[8:0]};
            else begin
                p = (ad[3:0] / width) * width;
                for (i = 0; i < width; i = i + 1) place[phys(p + i)] = data[i];
            end
        end
    endfunction

    function [17:0] extract(input integer width, input [13:0] ad, input [17:0] word);
        integer i, p;
        begin
            extract = 18'h0;
            if (width == 18) extract = word;
            else if (width == 9) extract = ad[3] ? word[17:9] : word[8:0];
            else begin
                p = (ad[3:0] / width) * width;
                for (i = 0; i < width; i = i + 1) extract[i] = word[phys(p + i)];
            end
        end
    endfunction

    function ok_width(input integer width);
        ok_width = width == 1 || width == 2 || width == 4 || width == 9 || width == 18 || width == 36;
    endfunction

    function ok_csdecode(input [39:0] value);
        ok_csdecode = value[39:24] == "0b" && (value[23:16] == "0" || value[23:16] == "1") &&
                      (value[15:8] == "0" || value[15:8] == "1") && (value[7:0] == "0" || value[7:0] == "1");
    endfunction

    integer i, j;
    reg [319:0] slice;
    initial begin
        if (!ok_width(DATA_WIDTH_A) || !ok_width(DATA_WIDTH_B))
            fail("DATA_WIDTH_A and DATA_WIDTH_B must be 1, 2, 4, 9, 18 or 36");
        if (DATA_WIDTH_A != DATA_WIDTH_B)
            fail("DATA_WIDTH_A and DATA_WIDTH_B differ: mixed port widths are not modelled");
        if ((REGMODE_A != "NOREG" && REGMODE_A != "OUTREG") || (REGMODE_B != "NOREG" && REGMODE_B != "OUTREG"))
            fail("REGMODE_A and REGMODE_B must be NOREG or OUTREG");
        if ((WRITEMODE_A != "NORMAL" && WRITEMODE_A != "WRITETHROUGH" && WRITEMODE_A != "READBEFOREWRITE") ||
            (WRITEMODE_B != "NORMAL" && WRITEMODE_B != "WRITETHROUGH" && WRITEMODE_B != "READBEFOREWRITE"))
            fail("WRITEMODE_A and WRITEMODE_B must be NORMAL, WRITETHROUGH or READBEFOREWRITE");
        if ((RESETMODE != "SYNC" && RESETMODE != "ASYNC") ||
            (ASYNC_RESET_RELEASE != "SYNC" && ASYNC_RESET_RELEASE != "ASYNC"))
            fail("RESETMODE and ASYNC_RESET_RELEASE must be SYNC or ASYNC");
        if (!ok_csdecode(CSDECODE_A) || !ok_csdecode(CSDECODE_B))
            fail("CSDECODE_A and CSDECODE_B must be 0b followed by three bits");
        if (GSR != "ENABLED" && GSR != "DISABLED" && GSR != "AUTO")
            fail("GSR must be ENABLED, DISABLED or AUTO");
        if (INIT_DATA != "STATIC" && INIT_DATA != "DYNAMIC")
            fail("INIT_DATA must be STATIC or DYNAMIC");
        if ((CLKAMUX != "CLKA" && CLKAMUX != "INV") || (CLKBMUX != "CLKB" && CLKBMUX != "INV"))
            fail("CLKAMUX and CLKBMUX must be the pin's name or INV");
        for (i = 0; i < 64; i = i + 1) begin
            slice = initval(i);
            for (j = 0; j < 16; j = j + 1) begin
                if (slice[20 * j + 18 +: 2] != 2'b00)
                    fail("an INITVAL has a padding bit set (bits 19..18 of a 20-bit word)");
                mem[16 * i + j] = slice[20 * j +: 18];
            end
            if (slice != 320'h0 && DATA_WIDTH_A < 9)
                fail("INITVAL in the 1-, 2- and 4-bit modes is not modelled");
        end
    end

    // ---- port A (widths 1..18; in the 36-bit mode see below)
    wire clk_A = CLKAMUX == "INV" ? ~CLKA : CLKA;
    wire [13:0] ad_A = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0};
    wire [17:0] di_A = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
    wire [2:0] cs_A = {CSA2, CSA1, CSA0};
    reg [17:0] latch_A = 18'h0, oreg_A = 18'h0;
    realtime wtime_A = -1.0;
    integer wword_A = -1;
    reg [17:0] wmask_A = 18'h0;
    always @(posedge clk_A) if (!MODE36) begin : edge_A
        reg ce, we, rst, reading, writing;
        reg [13:0] ad;
        reg [17:0] di, previous, updated, mask, rd;
        integer word, i;
        ce = CEA; we = WEA; rst = RSTA; ad = ad_A; di = di_A;
        reading = 1'b0; writing = 1'b0;
        word = -1;
        if (ce !== 1'b0 && (ce !== 1'b1 || ^cs_A === 1'bx ||
                            (cs_A == CSDEC_A && (^ad === 1'bx || (we !== 1'b0 && we !== 1'b1))))) begin
            // an unknown enable, chip select, address or write enable: the port may have written any word and
            // read anything (the pessimistic reading of an X)
            if (we !== 1'b0 && (WIDTH_A != 18 || ad[1:0] !== 2'b00))   // (no byte enabled: no write)
                for (i = 0; i < 1024; i = i + 1) mem[i] <= 18'bx;
            rd = 18'bx; reading = 1'b1;
        end else if (ce && cs_A == CSDEC_A) begin
            word = ad[13:4];
            previous = mem[word];
            if (we) begin
                writing = 1'b1;
                mask = lane_mask(WIDTH_A, ad, 1'b1);
                updated = (previous & ~mask) | (place(WIDTH_A, ad, di) & mask);
                wtime_A = $realtime; wword_A = word; wmask_A = mask;
                if (WRITEMODE_A == "WRITETHROUGH") begin
                    rd = extract(WIDTH_A, ad, updated); reading = 1'b1;
                end else if (WRITEMODE_A == "READBEFOREWRITE") begin
                    rd = extract(WIDTH_A, ad, previous); reading = 1'b1;
                end                                   // NORMAL: the output holds
            end else begin
                rd = extract(WIDTH_A, ad, previous); reading = 1'b1;
            end
        end
        #0;                                           // port B has done its part of this edge
        if (writing && wtime_B == $realtime && wword_B == word)
            for (i = 0; i < 18; i = i + 1)
                if (mask[i] && wmask_B[i]) updated[i] = 1'bx;   // both ports wrote the bit: unknown
        if (writing) mem[word] <= updated;
        if (reading && wtime_B == $realtime && wword_B == word && (wmask_B & lane_mask(WIDTH_A, ad, 1'b0)) != 0)
            rd = 18'bx;                               // read while port B writes the word: undefined
        if (rst && (RESETMODE == "SYNC" || RESETMODE == "ASYNC")) begin
            latch_A <= 18'h0; oreg_A <= 18'h0;
        end else begin
            if (reading) latch_A <= rd;
            if (OCEA) oreg_A <= latch_A;
        end
    end
    always @(posedge RSTA) if (RESETMODE == "ASYNC") begin
        latch_A <= 18'h0; oreg_A <= 18'h0;
    end
    wire [17:0] out_A = (REGMODE_A == "OUTREG" ? oreg_A : latch_A) & WIDTH_MASK_A;

    // ---- port B (widths 1..18; in the 36-bit mode see below)
    wire clk_B = CLKBMUX == "INV" ? ~CLKB : CLKB;
    wire [13:0] ad_B = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0};
    wire [17:0] di_B = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
    wire [2:0] cs_B = {CSB2, CSB1, CSB0};
    reg [17:0] latch_B = 18'h0, oreg_B = 18'h0;
    realtime wtime_B = -1.0;
    integer wword_B = -1;
    reg [17:0] wmask_B = 18'h0;
    always @(posedge clk_B) if (!MODE36) begin : edge_B
        reg ce, we, rst, reading, writing;
        reg [13:0] ad;
        reg [17:0] di, previous, updated, mask, rd;
        integer word, i;
        ce = CEB; we = WEB; rst = RSTB; ad = ad_B; di = di_B;
        reading = 1'b0; writing = 1'b0;
        word = -1;
        if (ce !== 1'b0 && (ce !== 1'b1 || ^cs_B === 1'bx ||
                            (cs_B == CSDEC_B && (^ad === 1'bx || (we !== 1'b0 && we !== 1'b1))))) begin
            // an unknown enable, chip select, address or write enable: the port may have written any word and
            // read anything (the pessimistic reading of an X)
            if (we !== 1'b0 && (WIDTH_B != 18 || ad[1:0] !== 2'b00))   // (no byte enabled: no write)
                for (i = 0; i < 1024; i = i + 1) mem[i] <= 18'bx;
            rd = 18'bx; reading = 1'b1;
        end else if (ce && cs_B == CSDEC_B) begin
            word = ad[13:4];
            previous = mem[word];
            if (we) begin
                writing = 1'b1;
                mask = lane_mask(WIDTH_B, ad, 1'b1);
                updated = (previous & ~mask) | (place(WIDTH_B, ad, di) & mask);
                wtime_B = $realtime; wword_B = word; wmask_B = mask;
                if (WRITEMODE_B == "WRITETHROUGH") begin
                    rd = extract(WIDTH_B, ad, updated); reading = 1'b1;
                end else if (WRITEMODE_B == "READBEFOREWRITE") begin
                    rd = extract(WIDTH_B, ad, previous); reading = 1'b1;
                end                                   // NORMAL: the output holds
            end else begin
                rd = extract(WIDTH_B, ad, previous); reading = 1'b1;
            end
        end
        #0;                                           // port A has done its part of this edge
        if (writing && wtime_A == $realtime && wword_A == word)
            for (i = 0; i < 18; i = i + 1)
                if (mask[i] && wmask_A[i]) updated[i] = 1'bx;   // both ports wrote the bit: unknown
        if (writing) mem[word] <= updated;
        if (reading && wtime_A == $realtime && wword_A == word && (wmask_A & lane_mask(WIDTH_B, ad, 1'b0)) != 0)
            rd = 18'bx;                               // read while port A writes the word: undefined
        if (rst && (RESETMODE == "SYNC" || RESETMODE == "ASYNC")) begin
            latch_B <= 18'h0; oreg_B <= 18'h0;
        end else begin
            if (reading) latch_B <= rd;
            if (OCEB) oreg_B <= latch_B;
        end
    end
    always @(posedge RSTB) if (RESETMODE == "ASYNC") begin
        latch_B <= 18'h0; oreg_B <= 18'h0;
    end
    wire [17:0] out_B = (REGMODE_B == "OUTREG" ? oreg_B : latch_B) & WIDTH_MASK_B;

    // ---- the 36-bit mode: port A writes, port B reads
    reg [35:0] latch_36 = 36'h0, oreg_36 = 36'h0;
    realtime wtime_36 = -1.0;
    integer wword_36 = -1;
    reg [35:0] wmask_36 = 36'h0;
    always @(posedge clk_A) if (MODE36) begin : write_36
        reg [35:0] previous, updated, mask;
        integer word;
        integer i;
        if (CEA !== 1'b0 && (CEA !== 1'b1 || ^cs_A === 1'bx ||
                             (cs_A == CSDEC_A && (^ad_A[13:5] === 1'bx || (WEA !== 1'b0 && WEA !== 1'b1))))) begin
            if (ad_A[3:0] !== 4'b0000)                            // an unknown write (some byte enabled): any word
                for (i = 0; i < 1024; i = i + 1) mem[i] <= 18'bx;
        end else if (CEA && cs_A == CSDEC_A) begin
            if (WEA !== 1'b1) fail("WEA must be high in the 36-bit mode (its byte enables ADA3..0 write)");
            word = ad_A[13:5];
            mask = {{9{ad_A[3]}}, {9{ad_A[2]}}, {9{ad_A[1]}}, {9{ad_A[0]}}};
            previous = {mem[2 * word + 1], mem[2 * word]};
            updated = (previous & ~mask) | ({di_B, di_A} & mask);
            {mem[2 * word + 1], mem[2 * word]} <= updated;
            wtime_36 = $realtime; wword_36 = word; wmask_36 = mask;
        end
    end
    always @(posedge clk_B) if (MODE36) begin : read_36
        reg reading, rst;
        reg [35:0] rd;
        integer word;
        reading = 1'b0; rst = RSTB;
        if (WEB !== 1'b0) fail("WEB must be low in the 36-bit mode (port B only reads)");
        word = -1;
        if (CEB !== 1'b0 && (CEB !== 1'b1 || ^cs_B === 1'bx || (cs_B == CSDEC_B && ^ad_B[13:5] === 1'bx))) begin
            rd = 36'bx; reading = 1'b1;                   // an unknown read
        end else if (CEB && cs_B == CSDEC_B) begin
            word = ad_B[13:5];
            rd = {mem[2 * word + 1], mem[2 * word]};
            reading = 1'b1;
        end
        #0;                                           // port A has written on this edge
        if (reading && wtime_36 == $realtime && wword_36 == word && wmask_36 != 36'h0)
            rd = 36'bx;                               // read while port A writes the word: undefined
        if (rst) begin
            latch_36 <= 36'h0; oreg_36 <= 36'h0;
        end else begin
            if (reading) latch_36 <= rd;
            if (OCEB) oreg_36 <= latch_36;
        end
    end
    always @(posedge RSTB) if (MODE36 && RESETMODE == "ASYNC") begin
        latch_36 <= 36'h0; oreg_36 <= 36'h0;
    end
    wire [35:0] out_36 = REGMODE_B == "OUTREG" ? oreg_36 : latch_36;

    assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = MODE36 ? out_36[17:0] : out_A;
    assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = MODE36 ? out_36[35:18] : out_B;
endmodule
