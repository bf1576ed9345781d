// STUB (being written): IEEE-754 binary32 adder, RNE.
module trn_fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] s_o
);
  assign s_o = a_i + b_i;
endmodule
