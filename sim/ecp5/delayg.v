// ECP5 DELAYG: a fixed input or output delay, for simulation. Each step is 25 ps (Lattice TN1265); DEL_VALUE (an
// integer, 0..127) sets the steps as nextpnr-ecp5 encodes it: a non-zero DEL_VALUE wins, else the DEL_MODE's own
// default (USER_DEFINED 0, SCLK_ALIGNED 50, SCLK_CENTERED 39, SCLK_ZEROHOLD 59, ECLK_ALIGNED 21, ECLK_CENTERED 11,
// ECLKBRIDGE_ALIGNED 39, ECLKBRIDGE_CENTERED 29, DQS_ALIGNED_X2 6, DQS_CMD_CLK 9). The delay is a transport delay:
// every edge of A reaches Z that much later. An unknown DEL_MODE or a DEL_VALUE out of range stops the simulation.
`timescale 1ns / 1fs
module DELAYG(input A, output Z);
    parameter DEL_MODE = "USER_DEFINED";
    parameter integer DEL_VALUE = 0;
    //: one step, ns
    localparam real STEP_NS = 0.025;

    function integer mode_steps(input [8*20-1:0] mode);
        case (mode)
            "USER_DEFINED": mode_steps = 0;
            "DQS_ALIGNED_X2": mode_steps = 6;
            "DQS_CMD_CLK": mode_steps = 9;
            "ECLK_ALIGNED": mode_steps = 21;
            "ECLK_CENTERED": mode_steps = 11;
            "ECLKBRIDGE_ALIGNED": mode_steps = 39;
            "ECLKBRIDGE_CENTERED": mode_steps = 29;
            "SCLK_ALIGNED": mode_steps = 50;
            "SCLK_CENTERED": mode_steps = 39;
            "SCLK_ZEROHOLD": mode_steps = 59;
            default: mode_steps = -1;
        endcase
    endfunction

    localparam integer STEPS = DEL_VALUE != 0 ? DEL_VALUE : mode_steps(DEL_MODE);
    localparam real DELAY_NS = STEPS * STEP_NS;

    initial begin
        if (mode_steps(DEL_MODE) < 0) begin
            $display("ERROR: DELAYG %m: DEL_MODE %0s is not one of the ECP5's modes", DEL_MODE);
            $fatal(1);
        end
        if (DEL_VALUE < 0 || DEL_VALUE > 127) begin
            $display("ERROR: DELAYG %m: DEL_VALUE must be 0..127 steps of 25 ps, not %0d", DEL_VALUE);
            $fatal(1);
        end
    end

    // (the level at time 0 as well: a pin that never toggles still reaches Z)
    reg delayed = 1'bx;
    initial #0 delayed <= #(DELAY_NS) A;
    always @(A) delayed <= #(DELAY_NS) A;
    assign Z = delayed;
endmodule
