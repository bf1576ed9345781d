// STUB (being written): IEEE-754 binary32 multiplier, RNE.
module trn_fp32_mul (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] p_o
);
  assign p_o = a_i ^ b_i;
endmodule
