// trn_fp32_mul: IEEE-754 binary32 multiply, round to nearest, ties to even (BRIEF section 3 rules 2 and 5).
//
// Purely combinational: trn_fp_pkg::fp32_mul on ports, for the FP units' own model (trn_fp_units: `trnsim fpcheck
// --rtl`, the TestFloat and numerics tests); the function holds the datapath and its description, and the Tensor
// Engine's PEs call it directly. Full gradual underflow: subnormal inputs are used as they are and subnormal results
// are produced (no FTZ/DAZ). Overflow gives +-Inf, Inf * 0 gives NaN, and every NaN result is the canonical quiet
// NaN 32'h7FC0_0000.
//
// scale_i multiplies the exact product by 2^scale_i before that one rounding (0 for a plain multiply): the MX
// product of BRIEF section 3 rule 10, a * b * 2^(ca - 127) * 2^(cb - 127) rounded once, with scale_i = ca + cb -
// 254. The scaling is exact, so a result that the scale moves into the subnormal range is rounded once, not twice.
module trn_fp32_mul (
  input  logic [31:0]        a_i,
  input  logic [31:0]        b_i,
  input  logic signed [9:0]  scale_i,  // power of two applied before the rounding, -512..511
  output logic [31:0]        p_o
);
  import trn_fp_pkg::*;

  assign p_o = fp32_mul(a_i, b_i, scale_i);

endmodule
