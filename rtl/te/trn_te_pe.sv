// trn_te_pe: one processing element of the weight-stationary systolic array.
//
// Holds one widened stationary value (FP32). Each enabled cycle it takes the moving value from its left neighbour
// and the partial sum from the PE above, and registers
//   mov_o  <= mov_i                          (to the right neighbour)
//   psum_o <= act_i ? psum_i + w * mov_i     (to the PE below; product and sum each FP32 RNE, no FMA)
//                   : psum_i                 (inactive partition: pass the sum through unchanged)
// Numerics: BRIEF section 3 rules 2-3. The product is rounded before the add (two separate units).
module trn_te_pe (
  input  logic        clk_i,
  input  logic        en_i,     // pipeline advance; 0 = global stall (hold all registers)
  input  logic        act_i,    // this PE's partition is part of the contraction (k < K)
  input  logic        w_we_i,   // write w_i into the stationary register
  input  logic [31:0] w_i,      // widened stationary value (FP32)
  input  logic [31:0] mov_i,    // widened moving value (FP32) from the left
  input  logic [31:0] psum_i,   // partial column sum (FP32) from above
  output logic [31:0] mov_o,    // registered moving value, to the right
  output logic [31:0] psum_o    // registered partial column sum, downward
);

  logic [31:0] w_q;
  logic [31:0] mov_q, psum_q;
  logic [31:0] prod, sum, psum_d;

  trn_fp32_mul u_mul (
    .a_i (w_q),
    .b_i (mov_i),
    .p_o (prod)
  );

  trn_fp32_add u_add (
    .a_i (psum_i),
    .b_i (prod),
    .s_o (sum)
  );

  assign psum_d = act_i ? sum : psum_i;

  always_ff @(posedge clk_i) begin
    if (w_we_i) w_q <= w_i;
  end

  always_ff @(posedge clk_i) begin
    if (en_i) begin
      mov_q  <= mov_i;
      psum_q <= psum_d;
    end
  end

  assign mov_o  = mov_q;
  assign psum_o = psum_q;

endmodule
