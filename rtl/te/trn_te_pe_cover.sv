// trn_te_pe_cover: functional cover points of one processing element (rtl/te/trn_te_pe.sv): special FP32 values
// reaching the PE's adder (trn_fp32_add) as an operand, in an active partition on an enabled cycle. Bound into every
// trn_te_pe in coverage builds only (the bind statement is at the end of this file); `make coverage` counts a point
// as hit when any PE of any engine size hits it.
module trn_te_pe_cover (
  input logic        clk_i,
  input logic        en_i,
  input logic        act_i,    // the first partition is active for this column (after a swap: the loaded one)
  input logic [30:0] psum_i,  // adder operand a, the partial sum from above, without its sign bit
  input logic [30:0] prod,    // adder operand b, the rounded product, without its sign bit
  input logic        scale_nan,  // MX: a NaN (0xFF) scale on either side
  input logic signed [9:0] scale // MX: the product's power of two, (ws - 127) + (ms - 127); 0 for other dtypes
);

  // Operand classes (sign bit dropped). Plain signals, not functions: Verilator 5.006 never counted a cover
  // property whose expression called a function (measured: always 0 hits).
  logic a_max, b_max, a_zero_exp, b_zero_exp, a_frac, b_frac;
  assign a_max      = psum_i[30:23] == 8'hFF;
  assign b_max      = prod[30:23] == 8'hFF;
  assign a_zero_exp = psum_i[30:23] == 8'h00;
  assign b_zero_exp = prod[30:23] == 8'h00;
  assign a_frac     = psum_i[22:0] != '0;
  assign b_frac     = prod[22:0] != '0;

  logic add_on, nan_in, inf_in, inf_both, sub_in;
  assign add_on   = en_i && act_i;
  assign nan_in   = add_on && ((a_max && a_frac) || (b_max && b_frac));
  assign inf_in   = add_on && ((a_max && !a_frac) || (b_max && !b_frac));
  assign inf_both = add_on && a_max && !a_frac && b_max && !b_frac;
  assign sub_in   = add_on && ((a_zero_exp && a_frac) || (b_zero_exp && b_frac));

  c_add_nan:       cover property (@(posedge clk_i) nan_in);
  c_add_inf:       cover property (@(posedge clk_i) inf_in);
  c_add_inf_both:  cover property (@(posedge clk_i) inf_both);
  c_add_subnormal: cover property (@(posedge clk_i) sub_in);
  // MX products (rule 10): a NaN scale, a scale that pushes the product far down (into FP32's subnormal range or
  // below) and far up (past FP32's range).
  c_mx_scale_nan:  cover property (@(posedge clk_i) add_on && scale_nan);
  c_mx_scale_low:  cover property (@(posedge clk_i) add_on && !scale_nan && scale < -10'sd126);
  c_mx_scale_high: cover property (@(posedge clk_i) add_on && !scale_nan && scale > 10'sd127);

endmodule

bind trn_te_pe trn_te_pe_cover u_cover (
  .clk_i     (clk_i),
  .en_i      (en_i),
  .act_i     (a0),
  .psum_i    (psum_i[30:0]),
  .prod      (prod[30:0]),
  .scale_nan (scale_nan),
  .scale     (scale)
);
