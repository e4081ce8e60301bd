// ECP5 generic DDR I/O registers at X1 gearing, for simulation: IDDRX1F and ODDRX1F, in the latencies Amaranth's
// ECP5 platform builds its io.DDRBuffer on (amaranth.vendor._lattice: input latency 1, and two more pipeline
// stages on output than a plain output register, for which it delays the output enable by two cycles).
//
// IDDRX1F: D is captured on each rising edge of SCLK and on the falling edge after it; at the next rising edge Q0
// takes the rising edge's bit and Q1 the falling edge's. RST (active high, asynchronous) clears every stage.
//
// ODDRX1F: D0 and D1 are taken on a rising edge of SCLK; two rising edges later Q drives D0 while SCLK is high and
// D1 while it is low. RST (active high, asynchronous) clears every stage.
`timescale 1ns / 1fs
module IDDRX1F(input D, input SCLK, input RST, output Q0, output Q1);
    parameter GSR = "ENABLED";
    reg rise = 1'b0, fall = 1'b0, q0 = 1'b0, q1 = 1'b0;
    always @(posedge SCLK or posedge RST)
        if (RST) begin
            rise <= 1'b0; q0 <= 1'b0; q1 <= 1'b0;
        end else begin
            q0 <= rise;
            q1 <= fall;
            rise <= D;
        end
    always @(negedge SCLK or posedge RST)
        if (RST) fall <= 1'b0;
        else fall <= D;
    assign Q0 = q0;
    assign Q1 = q1;
endmodule

module ODDRX1F(input SCLK, input RST, input D0, input D1, output Q);
    parameter GSR = "ENABLED";
    reg [1:0] stage0 = 2'b00, stage1 = 2'b00, stage2 = 2'b00;
    reg low_half = 1'b0;
    always @(posedge SCLK or posedge RST)
        if (RST) begin
            stage0 <= 2'b00; stage1 <= 2'b00; stage2 <= 2'b00;
        end else begin
            stage0 <= {D1, D0};
            stage1 <= stage0;
            stage2 <= stage1;
        end
    // D1's half: the bit sent while SCLK is low, held from the falling edge so that the rising edge's update of
    // stage2 does not reach Q before the clock is high
    reg fall_bit = 1'b0;
    always @(negedge SCLK or posedge RST)
        if (RST) fall_bit <= 1'b0;
        else fall_bit <= stage2[1];
    assign Q = SCLK ? stage2[0] : fall_bit;
endmodule
