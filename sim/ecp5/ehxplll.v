// ECP5 EHXPLLL for simulation: its outputs derived from its parameters and the measured period of CLKI, so that a
// wrong divider gives a wrong clock here as it would on the board.
//
// With the feedback from CLKOP (FEEDBK_PATH "CLKOP", the only path modelled) the loop makes
//     f_PFD = f_CLKI / CLKI_DIV,  f_CLKOP = f_PFD * CLKFB_DIV,  f_VCO = f_CLKOP * CLKOP_DIV,
// and each other enabled output x runs at f_VCO / CLKx_DIV. CLKOP's rising edges fall on CLKI's; output x is
// later by ((CLKx_CPHASE - (CLKx_DIV - 1)) + CLKx_FPHASE / 8) VCO periods less CLKOP's own such offset (CPHASE
// = DIV - 1 with FPHASE 0 is no shift; each CPHASE step one VCO period, each FPHASE step an eighth), as Lattice's
// tools and prjtrellis's ecppll set them. The duty cycle is 50 %.
//
// Lock: after SIM_LOCK_CYCLES periods of CLKI in a row within 0.1 % of each other (the data sheet's lock time is
// milliseconds; a simulation waits cycles), LOCK rises and the outputs start; a CLKI period that moves by more than
// 0.1 % drops LOCK and stops them until it is stable again, and so do a reference that stops (no edge for 1.5 of
// its periods) and RST (with PLLRST_ENA "ENABLED").
// Once locked, CLKFB must follow CLKOP (the feedback wired to the output it names): a difference of more than one
// rising edge in 64 of CLKOP stops the simulation.
//
// Lattice DS1044 (sysCLOCK PLL timing) ranges, checked on lock, each violation stopping the simulation: f_CLKI
// 8..400 MHz, f_PFD 3.125..400 MHz, f_VCO 400..800 MHz, each enabled output 3.125..400 MHz; dividers 1..128.
// Not modelled (and stopping the simulation when used): other feedback paths, OUTDIVIDER_MUX other than DIVx,
// the dynamic phase shift (DPHASE_SOURCE "ENABLED"), standby (STDBY_ENABLE "ENABLED"). Not modelled at all:
// ENCLKx (the outputs always run), the trims, jitter, INTLOCK (equal to LOCK), CLKINTFB (low).
`timescale 1ns / 1fs
module EHXPLLL(
    input CLKI, CLKFB, PHASESEL1, PHASESEL0, PHASEDIR, PHASESTEP, PHASELOADREG, STDBY, PLLWAKESYNC, RST,
    input ENCLKOP, ENCLKOS, ENCLKOS2, ENCLKOS3,
    output CLKOP, CLKOS, CLKOS2, CLKOS3, LOCK, INTLOCK, REFCLK, CLKINTFB
);
    parameter CLKI_DIV = 1;
    parameter CLKFB_DIV = 1;
    parameter CLKOP_DIV = 8;
    parameter CLKOS_DIV = 8;
    parameter CLKOS2_DIV = 8;
    parameter CLKOS3_DIV = 8;
    parameter CLKOP_ENABLE = "ENABLED";
    parameter CLKOS_ENABLE = "DISABLED";
    parameter CLKOS2_ENABLE = "DISABLED";
    parameter CLKOS3_ENABLE = "DISABLED";
    parameter CLKOP_CPHASE = 0;
    parameter CLKOS_CPHASE = 0;
    parameter CLKOS2_CPHASE = 0;
    parameter CLKOS3_CPHASE = 0;
    parameter CLKOP_FPHASE = 0;
    parameter CLKOS_FPHASE = 0;
    parameter CLKOS2_FPHASE = 0;
    parameter CLKOS3_FPHASE = 0;
    parameter FEEDBK_PATH = "CLKOP";
    parameter CLKOP_TRIM_POL = "RISING";
    parameter CLKOP_TRIM_DELAY = 0;
    parameter CLKOS_TRIM_POL = "RISING";
    parameter CLKOS_TRIM_DELAY = 0;
    parameter OUTDIVIDER_MUXA = "DIVA";
    parameter OUTDIVIDER_MUXB = "DIVB";
    parameter OUTDIVIDER_MUXC = "DIVC";
    parameter OUTDIVIDER_MUXD = "DIVD";
    parameter PLL_LOCK_MODE = 0;
    parameter PLL_LOCK_DELAY = 200;
    parameter STDBY_ENABLE = "DISABLED";
    parameter REFIN_RESET = "DISABLED";
    parameter SYNC_ENABLE = "DISABLED";
    parameter INT_LOCK_STICKY = "ENABLED";
    parameter DPHASE_SOURCE = "DISABLED";
    parameter PLLRST_ENA = "DISABLED";
    parameter INTFB_WAKE = "DISABLED";
    //: periods of CLKI, stable, before LOCK (the model's, not the chip's)
    parameter integer SIM_LOCK_CYCLES = 16;

    task fail(input [8*96-1:0] what);
        begin
            $display("ERROR: EHXPLLL %m: %0s (at %t)", what, $realtime);
            $fatal(1);
        end
    endtask

    task check_range(input [8*16-1:0] name, input real mhz, input real low, input real high);
        if (mhz < low || mhz > high) begin
            $display("ERROR: EHXPLLL %m: %0s is %f MHz, outside %f..%f MHz (DS1044)", name, mhz, low, high);
            $fatal(1);
        end
    endtask

    function real offset(input integer div, input integer cphase, input integer fphase);
        offset = (cphase - (div - 1)) + fphase / 8.0;          // in VCO periods
    endfunction

    initial begin
        if (FEEDBK_PATH != "CLKOP") fail("FEEDBK_PATH other than CLKOP is not modelled");
        if (OUTDIVIDER_MUXA != "DIVA" || OUTDIVIDER_MUXB != "DIVB" || OUTDIVIDER_MUXC != "DIVC" ||
            OUTDIVIDER_MUXD != "DIVD")
            fail("OUTDIVIDER_MUXA..D other than DIVA..DIVD are not modelled");
        if (DPHASE_SOURCE != "DISABLED") fail("the dynamic phase shift (DPHASE_SOURCE ENABLED) is not modelled");
        if (STDBY_ENABLE != "DISABLED") fail("standby (STDBY_ENABLE ENABLED) is not modelled");
        if (CLKOP_ENABLE != "ENABLED") fail("CLKOP_ENABLE must be ENABLED: CLKOP is the feedback");
        if (CLKI_DIV < 1 || CLKI_DIV > 128 || CLKFB_DIV < 1 || CLKFB_DIV > 128 || CLKOP_DIV < 1 ||
            CLKOP_DIV > 128 || CLKOS_DIV < 1 || CLKOS_DIV > 128 || CLKOS2_DIV < 1 || CLKOS2_DIV > 128 ||
            CLKOS3_DIV < 1 || CLKOS3_DIV > 128)
            fail("a divider is outside 1..128");
        if (CLKOP_FPHASE < 0 || CLKOP_FPHASE > 7 || CLKOS_FPHASE < 0 || CLKOS_FPHASE > 7 ||
            CLKOS2_FPHASE < 0 || CLKOS2_FPHASE > 7 || CLKOS3_FPHASE < 0 || CLKOS3_FPHASE > 7)
            fail("an FPHASE is outside 0..7");
    end

    // The reference's period, measured edge to edge.
    realtime last_edge = -1.0, period = 0.0, locked_period = 0.0;
    integer stable = 0;
    reg locked = 1'b0;
    wire in_reset = PLLRST_ENA == "ENABLED" && RST === 1'b1;
    real t_vco;
    event start;
    always @(posedge CLKI or posedge in_reset) begin
        if (in_reset) begin
            locked = 1'b0; stable = 0; last_edge = -1.0;
        end else begin
            if (last_edge >= 0.0) begin
                if (period > 0.0 && ($realtime - last_edge) > 0.999 * period && ($realtime - last_edge) < 1.001 * period)
                    stable = stable + 1;
                else
                    stable = 0;
                period = $realtime - last_edge;
            end
            last_edge = $realtime;
            if (locked && (period < 0.999 * locked_period || period > 1.001 * locked_period)) begin
                locked = 1'b0; stable = 0;
            end
            if (!locked && stable >= SIM_LOCK_CYCLES) begin
                locked_period = period;
                t_vco = period * CLKI_DIV / (CLKFB_DIV * CLKOP_DIV);
                check_range("f_CLKI", 1e3 / period, 8.0, 400.0);
                check_range("f_PFD", 1e3 / (period * CLKI_DIV), 3.125, 400.0);
                check_range("f_VCO", 1e3 / t_vco, 400.0, 800.0);
                check_range("f_CLKOP", 1e3 / (t_vco * CLKOP_DIV), 3.125, 400.0);
                if (CLKOS_ENABLE == "ENABLED") check_range("f_CLKOS", 1e3 / (t_vco * CLKOS_DIV), 3.125, 400.0);
                if (CLKOS2_ENABLE == "ENABLED") check_range("f_CLKOS2", 1e3 / (t_vco * CLKOS2_DIV), 3.125, 400.0);
                if (CLKOS3_ENABLE == "ENABLED") check_range("f_CLKOS3", 1e3 / (t_vco * CLKOS3_DIV), 3.125, 400.0);
                locked = 1'b1;
                -> start;
            end
        end
    end

    // A reference that stops: the lock is lost after one and a half of its periods without an edge.
    always @(posedge locked) begin : watchdog
        while (locked) begin
            #(1.5 * locked_period);
            if (locked && $realtime - last_edge > 1.5 * locked_period) begin
                locked = 1'b0; stable = 0; last_edge = -1.0; period = 0.0;
            end
        end
    end

    // Each output: from the lock, its first rising edge at its phase offset from CLKOP's, then high for half of
    // every DIV VCO periods while locked.
    reg op = 1'b0, os = 1'b0, os2 = 1'b0, os3 = 1'b0;
    function real first_edge(input integer div, input integer cphase, input integer fphase);
        real t_out, delay;
        begin
            t_out = t_vco * div;
            delay = (offset(div, cphase, fphase) - offset(CLKOP_DIV, CLKOP_CPHASE, CLKOP_FPHASE)) * t_vco;
            while (delay < 0.0) delay = delay + t_out;
            first_edge = delay;
        end
    endfunction
    always @(start) begin : run_op
        real t_out, delay;
        t_out = t_vco * CLKOP_DIV;
        delay = first_edge(CLKOP_DIV, CLKOP_CPHASE, CLKOP_FPHASE);
        #(delay);
        while (locked) begin
            op = 1'b1;
            #(t_out / 2.0);
            op = 1'b0;
            #(t_out - t_out / 2.0);
        end
    end
    always @(start) if (CLKOS_ENABLE == "ENABLED") begin : run_os
        real t_out, delay;
        t_out = t_vco * CLKOS_DIV;
        delay = first_edge(CLKOS_DIV, CLKOS_CPHASE, CLKOS_FPHASE);
        #(delay);
        while (locked) begin
            os = 1'b1;
            #(t_out / 2.0);
            os = 1'b0;
            #(t_out - t_out / 2.0);
        end
    end
    always @(start) if (CLKOS2_ENABLE == "ENABLED") begin : run_os2
        real t_out, delay;
        t_out = t_vco * CLKOS2_DIV;
        delay = first_edge(CLKOS2_DIV, CLKOS2_CPHASE, CLKOS2_FPHASE);
        #(delay);
        while (locked) begin
            os2 = 1'b1;
            #(t_out / 2.0);
            os2 = 1'b0;
            #(t_out - t_out / 2.0);
        end
    end
    always @(start) if (CLKOS3_ENABLE == "ENABLED") begin : run_os3
        real t_out, delay;
        t_out = t_vco * CLKOS3_DIV;
        delay = first_edge(CLKOS3_DIV, CLKOS3_CPHASE, CLKOS3_FPHASE);
        #(delay);
        while (locked) begin
            os3 = 1'b1;
            #(t_out / 2.0);
            os3 = 1'b0;
            #(t_out - t_out / 2.0);
        end
    end

    // CLKFB must be CLKOP: their rising edges counted over 64 of CLKOP's.
    integer op_edges = 0, fb_edges = 0;
    always @(posedge CLKFB) fb_edges = fb_edges + 1;
    always @(posedge op) begin
        op_edges = op_edges + 1;
        if (op_edges % 64 == 0) begin
            if (fb_edges < op_edges - 1 || fb_edges > op_edges + 1)
                fail("CLKFB does not follow CLKOP (FEEDBK_PATH CLKOP): the loop would not lock");
        end
    end
    always @(start) begin
        op_edges = 0; fb_edges = 0;
    end

    assign CLKOP = op;
    assign CLKOS = os;
    assign CLKOS2 = os2;
    assign CLKOS3 = os3;
    assign LOCK = locked;
    assign INTLOCK = locked;
    assign REFCLK = CLKI;
    assign CLKINTFB = 1'b0;
endmodule
