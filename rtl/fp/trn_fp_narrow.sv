// STUB (being written): FP32 -> narrow conversion, RNE.
module trn_fp_narrow (
  input  logic [2:0]  dtype_i,  // trn_fp_pkg::dtype_e code
  input  logic        sat_i,    // FP8 only: 1 = saturate overflow to +-max, 0 = OCP non-saturating
  input  logic [31:0] f32_i,
  output logic [15:0] data_o    // narrow pattern; FP8 in bits [7:0], bits [15:8] zero
);
  assign data_o = f32_i[31:16] ^ {13'd0, dtype_i} ^ {15'd0, sat_i};
endmodule
