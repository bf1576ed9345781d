// trn_te_pe_cover: functional cover points of one processing element (rtl/te/trn_te_pe.sv): special FP32 values
// reaching the PE's adder (trn_fp32_add) as an operand, in an active partition on an enabled cycle. Bound into every
// trn_te_pe in coverage builds only (the bind statement is at the end of this file); `make coverage` counts a point
// as hit when any PE of any engine size hits it.
module trn_te_pe_cover (
  input logic        clk_i,
  input logic        en_i,
  input logic        act_i,
  input logic [30:0] psum_i,  // adder operand a, the partial sum from above, without its sign bit
  input logic [30:0] prod     // adder operand b, the rounded product, without its sign bit
);

  // Operands without their sign bit.
  function automatic logic is_nan(logic [30:0] f);
    return f[30:23] == 8'hFF && f[22:0] != '0;
  endfunction
  function automatic logic is_inf(logic [30:0] f);
    return f[30:23] == 8'hFF && f[22:0] == '0;
  endfunction
  function automatic logic is_subnormal(logic [30:0] f);
    return f[30:23] == 8'h00 && f[22:0] != '0;
  endfunction

  logic add_on;
  assign add_on = en_i && act_i;

  c_add_nan:       cover property (@(posedge clk_i) add_on && (is_nan(psum_i) || is_nan(prod)));
  c_add_inf:       cover property (@(posedge clk_i) add_on && (is_inf(psum_i) || is_inf(prod)));
  c_add_inf_both:  cover property (@(posedge clk_i) add_on && is_inf(psum_i) && is_inf(prod));
  c_add_subnormal: cover property (@(posedge clk_i) add_on && (is_subnormal(psum_i) || is_subnormal(prod)));

endmodule

bind trn_te_pe trn_te_pe_cover u_cover (
  .clk_i  (clk_i),
  .en_i   (en_i),
  .act_i  (act_i),
  .psum_i (psum_i[30:0]),
  .prod   (prod[30:0])
);
