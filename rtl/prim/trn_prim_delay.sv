// trn_prim_delay: a DEPTH-stage shift register with a common enable, used for the Tensor Engine's input skew,
// output de-skew and control pipeline. DEPTH = 0 is a wire. No reset: it carries datapath values only
// (control bits that need a reset use their own flops).
module trn_prim_delay #(
  parameter int unsigned WIDTH = 32,
  parameter int unsigned DEPTH = 1
) (
  input  logic             clk_i,
  input  logic             en_i,    // shift by one stage when 1, hold when 0
  input  logic [WIDTH-1:0] data_i,
  output logic [WIDTH-1:0] data_o   // data_i of DEPTH enabled cycles ago
);

  if (DEPTH == 0) begin : g_wire
    assign data_o = data_i;
  end else if (DEPTH == 1) begin : g_one
    logic [WIDTH-1:0] stage_q;
    always_ff @(posedge clk_i) begin
      if (en_i) stage_q <= data_i;
    end
    assign data_o = stage_q;
  end else begin : g_chain
    logic [DEPTH-1:0][WIDTH-1:0] stage_q;  // stage_q[0] is the newest value
    always_ff @(posedge clk_i) begin
      if (en_i) stage_q <= {stage_q[DEPTH-2:0], data_i};
    end
    assign data_o = stage_q[DEPTH-1];
  end

endmodule
