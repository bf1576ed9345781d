// trn_fp32_add: IEEE-754 binary32 add, round to nearest, ties to even (BRIEF section 3 rules 3-5).
//
// Purely combinational: trn_fp_pkg::fp32_add on ports, for the FP units' own model (trn_fp_units: `trnsim fpcheck
// --rtl`, the TestFloat and numerics tests); the function holds the datapath and its description, and the Tensor
// Engine's PEs call it directly. Subtraction is a + (-b): the caller flips b's sign bit. Full gradual underflow (no
// FTZ/DAZ). An exact zero sum is +0, except -0 + -0 = -0. Inf - Inf gives NaN and every NaN result is the canonical
// quiet NaN 32'h7FC0_0000.
module trn_fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] s_o
);
  import trn_fp_pkg::*;

  assign s_o = fp32_add(a_i, b_i);

endmodule
