// trn_fp_units: verification top that exposes each floating-point unit of rtl/fp/ on its own ports.
// Purely combinational; used by `trnsim fpcheck --rtl` and the exhaustive numerics tests.
module trn_fp_units (
  // widening: narrow -> FP32
  input  logic [2:0]  widen_dtype_i,
  input  logic [15:0] widen_data_i,
  output logic [31:0] widen_f32_o,
  // narrowing: FP32 -> narrow
  input  logic [2:0]  narrow_dtype_i,
  input  logic        narrow_sat_i,
  input  logic        narrow_sr_i,    // stochastic rounding, with the generator's bits for (sr_seed_i, sr_key_i)
  input  logic [31:0] sr_seed_i,
  input  logic [63:0] sr_key_i,
  input  logic [31:0] narrow_f32_i,
  output logic [15:0] narrow_data_o,
  // FP32 arithmetic
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  input  logic [9:0]  mul_scale_i,  // signed power of two on the product before its rounding (MX products)
  output logic [31:0] sum_o,
  output logic [31:0] prod_o
);

  trn_fp_widen u_widen (
    .dtype_i (widen_dtype_i),
    .data_i  (widen_data_i),
    .f32_o   (widen_f32_o)
  );

  logic [trn_fp_pkg::SR_BITS-1:0] sr_bits;

  trn_fp_sr_rng u_sr_rng (
    .seed_i (sr_seed_i),
    .key_i  (sr_key_i),
    .bits_o (sr_bits)
  );

  trn_fp_narrow u_narrow (
    .dtype_i (narrow_dtype_i),
    .sat_i   (narrow_sat_i),
    .sr_i    (narrow_sr_i),
    .rnd_i   (sr_bits),
    .f32_i   (narrow_f32_i),
    .data_o  (narrow_data_o)
  );

  trn_fp32_add u_add (
    .a_i (a_i),
    .b_i (b_i),
    .s_o (sum_o)
  );

  trn_fp32_mul u_mul (
    .a_i     (a_i),
    .b_i     (b_i),
    .scale_i ($signed(mul_scale_i)),
    .p_o     (prod_o)
  );

endmodule
