// trn_te_pe: one processing element of the weight-stationary systolic array.
//
// Holds two widened stationary values (FP32): w0 for the PE row's first partition and w1 for its second, used only
// by FP8 operands (double-row, BRIEF section 3 rule 8: each PE contracts two partitions per cycle). Each enabled
// cycle it takes the two moving values from its left neighbour and the partial sum from the PE above, and registers
//   mov0_o, mov1_o <= mov0_i, mov1_i                (to the right neighbour)
//   s              =  a0 ? psum_i + w0 * mov0_i : psum_i
//   psum_o        <=  a1 ? s + w1 * mov1_i : s      (to the PE below)
// Numerics: BRIEF section 3 rules 2-3 and 8. Every product is rounded before its add (separate units, no FMA) and
// the two partitions are added one after the other in partition order, so the column sum is rule 3's. An inactive
// partition (k >= K, or the second partition of a BF16/FP16 row) passes the sum through unchanged.
// MX (rule 10): each product is w * mov * 2^(ws - 127) * 2^(ms - 127), rounded once (fp32_mul's scale), with
// ws the E8M0 scale loaded with the stationary values and ms the moving values' scale, which travels right with
// them; both partitions of a PE row lie in one 32-partition block, so one scale serves both. A scale of 0xFF (NaN)
// on either side makes the product the canonical NaN. Other dtypes get scales of 127 (2^0) from trn_te.
// Shadow weights: a LoadStationary writes the shadow registers (w0/w1/ws_sh_q, w_we_i) while the active ones
// (w0/w1/ws_q, a0/a1_q) still serve the moving columns in flight. The first moving column of the next
// MultiplyMoving carries a swap flag (sw_i, travelling right with the moving values); the PE computes that column
// with the shadow values and the row's new activity (act0_i/act1_i) and makes them active. trn_te takes no
// stationary beat while a swap flag is still inside the array, so a shadow register is never written before its PE
// has swapped.
module trn_te_pe
  import trn_fp_pkg::*;
(
  input  logic        clk_i,
  input  logic        en_i,     // pipeline advance; 0 = global stall (hold all registers)
  input  logic        act0_i,   // loaded row activity: its first partition is part of the contraction (k < K)
  input  logic        act1_i,   // its second partition is (FP8 double-row only); both taken on a swap
  input  logic        w_we_i,   // write w0_i, w1_i, ws_i into the shadow stationary registers
  input  logic [31:0] w0_i,     // widened stationary value of the first partition (FP32)
  input  logic [31:0] w1_i,     // widened stationary value of the second partition (FP32; 0 unless FP8)
  input  logic [7:0]  ws_i,     // E8M0 scale of the stationary values (MX; 127 otherwise), written with them
  input  logic [31:0] mov0_i,   // widened moving value of the first partition (FP32) from the left
  input  logic [31:0] mov1_i,   // widened moving value of the second partition (FP32; 0 unless FP8)
  input  logic [7:0]  ms_i,     // E8M0 scale of the moving values (MX; 127 otherwise), from the left
  input  logic        sw_i,     // swap flag of the moving column, from the left: use and keep the shadow values
  input  logic [31:0] psum_i,   // partial column sum (FP32) from above
  output logic [31:0] mov0_o,   // registered moving values, to the right
  output logic [31:0] mov1_o,
  output logic [7:0]  ms_o,     // registered moving scale, to the right
  output logic        sw_o,     // registered swap flag, to the right
  output logic [31:0] psum_o    // registered partial column sum, downward
);

  logic [31:0] w0_q, w1_q, w0_sh_q, w1_sh_q;   // active and shadow stationary values
  logic [7:0]  ws_q, ws_sh_q, ms_q;
  logic        a0_q, a1_q;                    // active partition activity
  logic        sw_q;
  logic [31:0] mov0_q, mov1_q, psum_q;
  logic [31:0] w0, w1;                        // the values this column is computed with
  logic [7:0]  ws;
  logic        a0, a1;
  logic [31:0] prod, sum;     // the first partition's product and the sum with it (the sum received if inactive)
  logic [31:0] prod1, sum1;   // the second partition's (FP8), added to sum: the PE's new partial sum
  logic signed [9:0] scale;    // (ws - 127) + (ms - 127)
  logic              scale_nan;

  assign w0 = sw_i ? w0_sh_q : w0_q;
  assign w1 = sw_i ? w1_sh_q : w1_q;
  assign ws = sw_i ? ws_sh_q : ws_q;
  assign a0 = sw_i ? act0_i : a0_q;
  assign a1 = sw_i ? act1_i : a1_q;

  assign scale     = $signed({2'b00, ws}) + $signed({2'b00, ms_i}) - 10'sd254;
  assign scale_nan = (ws == 8'hFF) || (ms_i == 8'hFF);

  // The products and sums, by the FP32 functions of trn_fp_pkg (one C++ function each in the verilated model, shared
  // by every PE). An inactive partition computes neither: its sum is the one it received (prod reads 0).
  always_comb begin
    prod = '0;
    sum  = psum_i;
    if (a0) begin
      prod = scale_nan ? F32_QNAN : fp32_mul(w0, mov0_i, scale);
      sum  = fp32_add(psum_i, prod);
    end
    // The second partition of an FP8 row, added after the first (rule 8).
    prod1 = '0;
    sum1  = sum;
    if (a1) begin
      prod1 = scale_nan ? F32_QNAN : fp32_mul(w1, mov1_i, scale);
      sum1  = fp32_add(sum, prod1);
    end
  end

  always_ff @(posedge clk_i) begin
    if (w_we_i) begin
      w0_sh_q <= w0_i;
      w1_sh_q <= w1_i;
      ws_sh_q <= ws_i;
    end
  end

  always_ff @(posedge clk_i) begin
    if (en_i && sw_i) begin
      w0_q <= w0_sh_q;
      w1_q <= w1_sh_q;
      ws_q <= ws_sh_q;
      a0_q <= act0_i;
      a1_q <= act1_i;
    end
  end

  always_ff @(posedge clk_i) begin
    if (en_i) begin
      mov0_q <= mov0_i;
      mov1_q <= mov1_i;
      ms_q   <= ms_i;
      sw_q   <= sw_i;
      psum_q <= sum1;
    end
  end

  assign mov0_o = mov0_q;
  assign mov1_o = mov1_q;
  assign ms_o   = ms_q;
  assign sw_o   = sw_q;
  assign psum_o = psum_q;

endmodule
