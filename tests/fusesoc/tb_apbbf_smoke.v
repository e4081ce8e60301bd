// Smoke testbench for a filter made by the apbbf FuseSoC generator (module smoke_filter, key_width 32):
// INSERT a key, QUERY it (hit), QUERY an absent key (miss), TEST_AND_INSERT the absent key (miss), QUERY it
// again (hit); every response must carry the command's op. Prints "ok" per check and PASS at the end, or
// FAIL lines and then stops with $fatal (vvp exits non-zero, so does fusesoc).
`timescale 1ns / 1ps

module tb_apbbf_smoke;
    localparam [1:0] QUERY = 2'd0, INSERT = 2'd1, TEST_AND_INSERT = 2'd2;
    localparam [31:0] KEY_A = 32'hDEADBEEF, KEY_B = 32'h12345678;

    reg aclk = 1'b0;
    always #5 aclk = ~aclk;
    reg aresetn = 1'b0;
    reg cmd_valid = 1'b0;
    reg [39:0] cmd_data = 40'd0;
    wire cmd_ready, rsp_valid;
    wire [7:0] rsp_data;
    wire [31:0] inserts, shifts;

    smoke_filter dut (
        .aclk(aclk), .aresetn(aresetn),
        .s_axis_cmd_tvalid(cmd_valid), .s_axis_cmd_tready(cmd_ready), .s_axis_cmd_tdata(cmd_data),
        .m_axis_rsp_tvalid(rsp_valid), .m_axis_rsp_tready(1'b1), .m_axis_rsp_tdata(rsp_data),
        .inserts(inserts), .shifts(shifts)
    );

    // Everything is sampled and driven at the falling edge, where the core's outputs are settled.
    integer responses = 0;
    reg [7:0] last_rsp = 8'd0;
    always @(negedge aclk)
        if (aresetn && rsp_valid) begin
            last_rsp = rsp_data;
            responses = responses + 1;
        end

    integer errors = 0;

    task command(input [1:0] op, input [31:0] key, input expect_hit, input [8*24-1:0] what);
        integer before, waited;
        begin
            before = responses;
            @(negedge aclk);
            cmd_data = {key, 6'd0, op};
            cmd_valid = 1'b1;
            while (!cmd_ready) @(negedge aclk);
            @(negedge aclk);                          // taken at the rising edge in between
            cmd_valid = 1'b0;
            waited = 0;
            while (responses == before && waited < 1000) begin
                @(negedge aclk);
                waited = waited + 1;
            end
            if (responses == before) begin
                $display("FAIL: %0s: no response", what);
                errors = errors + 1;
            end else if (last_rsp[1:0] !== op || last_rsp[2] !== expect_hit || last_rsp[7:3] !== 5'd0) begin
                $display("FAIL: %0s: response %h, expected op %0d hit %0d", what, last_rsp, op, expect_hit);
                errors = errors + 1;
            end else
                $display("ok: %0s", what);
        end
    endtask

    initial begin
        repeat (4) @(negedge aclk);
        aresetn = 1'b1;                               // the core clears its memories, then takes commands
        command(INSERT, KEY_A, 1'b0, "insert A");
        command(QUERY, KEY_A, 1'b1, "query A");
        command(QUERY, KEY_B, 1'b0, "query B (absent)");
        command(TEST_AND_INSERT, KEY_B, 1'b0, "test-and-insert B");
        command(QUERY, KEY_B, 1'b1, "query B");
        if (inserts !== 32'd2) begin
            $display("FAIL: inserts = %0d, expected 2", inserts);
            errors = errors + 1;
        end
        if (errors != 0) $fatal(1, "FAIL: %0d errors", errors);
        $display("PASS: apbbf smoke test");
        $finish;
    end

    initial begin
        #200000;
        $fatal(1, "FAIL: timeout");
    end
endmodule
