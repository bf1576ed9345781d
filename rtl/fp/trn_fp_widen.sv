// STUB (being written): narrow -> FP32 widening.
module trn_fp_widen (
  input  logic [2:0]  dtype_i,  // trn_fp_pkg::dtype_e code
  input  logic [15:0] data_i,   // narrow pattern; FP8 in bits [7:0]
  output logic [31:0] f32_o     // exact FP32 value; NaN -> 32'h7FC0_0000
);
  assign f32_o = {dtype_i, data_i, 13'd0};
endmodule
