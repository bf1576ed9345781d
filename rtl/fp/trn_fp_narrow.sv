// trn_fp_narrow: FP32 -> BF16 / FP16 / FP8 E4M3 / FP8 E5M2, one round-to-nearest-even step (BRIEF section 3
// rule 6).
//
// Purely combinational. The FP32 significand is shifted right straight to the target precision (never via
// another narrow format); the shift grows below the target's normal range, which gives subnormal results,
// and the rounding increment is applied to the packed {exponent, mantissa} word so that a carry moves into
// the exponent (subnormal -> normal, max finite -> overflow). Signed zero is kept.
// Overflow (the rounded magnitude is past the largest finite value, or the input is +-Inf):
//   BF16 / FP16          -> +-Inf
//   FP8, sat_i = 1       -> +-max finite (E4M3 0x7E/0xFE = 448, E5M2 0x7B/0xFB = 57344)
//   FP8, sat_i = 0 (OCP) -> E4M3 NaN 0x7F, E5M2 +-Inf 0x7C/0xFC
// NaN input, or an illegal dtype code (4): the target's canonical NaN (BF16 0x7FC0, FP16 0x7E00,
// E4M3 0x7F, E5M2 0x7E; 16'h7FC0 for illegal codes). FP8 results are in bits [7:0], bits [15:8] are zero.
// The MX types narrow to their element formats: MXFP8 as FP8 (sat_i applies), MXFP4 to FP4 E2M1 in bits [3:0]
// (OCP MX v1.0 section 5.3.3: no Inf or NaN, so overflow and Inf saturate to +-6 and NaN gives +0).
// Stochastic rounding (sr_i = 1; BRIEF section 3 rule 9, docs/numerics.md "Stochastic rounding"): instead of the
// nearest-even increment, the bits shifted out, as a fraction of the last kept bit truncated to SR_BITS bits, are
// added to rnd_i, and the carry out is the increment. Exact values stay exact; NaN, Inf and overflow as above.
module trn_fp_narrow
  import trn_fp_pkg::*;
(
  input  logic [2:0]         dtype_i,  // trn_fp_pkg::dtype_e code
  input  logic               sat_i,    // FP8 only: 1 = saturate overflow to +-max, 0 = OCP non-saturating
  input  logic               sr_i,     // 1 = stochastic rounding with rnd_i, 0 = round to nearest even
  input  logic [SR_BITS-1:0] rnd_i,    // random bits (trn_fp_sr_rng), used when sr_i
  input  logic [31:0]        f32_i,
  output logic [15:0]        data_o    // narrow pattern; FP8 in bits [7:0], FP4 in [3:0], the rest zero
);

  // Written for an illegal dtype code (there is no target format).
  localparam logic [15:0] ILLEGAL_NAN = 16'h7FC0;

  // ---------------------------------------------------------------------------------------------------
  // Target format parameters.
  //   man_w     mantissa field width
  //   bias      exponent bias
  //   max_mag   largest finite magnitude pattern (sign bit clear)
  //   ovf_mag   magnitude pattern written on overflow (Inf, max finite, or the E4M3 NaN)
  //   ovf_sign  overflow result keeps the sign (false only for the E4M3 NaN)
  //   nan_pat   canonical NaN pattern
  // ---------------------------------------------------------------------------------------------------
  logic [3:0]  man_w;
  logic [7:0]  bias;
  logic [14:0] max_mag;
  logic [14:0] ovf_mag;
  logic        ovf_sign;
  logic [15:0] nan_pat;
  logic        legal;
  logic        is_fp8;
  logic        is_fp4;

  always_comb begin
    man_w    = 4'd7;
    bias     = 8'd127;
    max_mag  = 15'h7F7F;
    ovf_mag  = 15'h7F80;
    ovf_sign = 1'b1;
    nan_pat  = 16'h7FC0;
    legal    = 1'b1;
    is_fp8   = 1'b0;
    is_fp4   = 1'b0;
    unique case (dtype_i)
      DT_BF16: begin
        man_w   = 4'd7;
        bias    = 8'd127;
        max_mag = 15'h7F7F;
        ovf_mag = 15'h7F80;
        nan_pat = 16'h7FC0;
      end
      DT_FP16: begin
        man_w   = 4'd10;
        bias    = 8'd15;
        max_mag = 15'h7BFF;
        ovf_mag = 15'h7C00;
        nan_pat = 16'h7E00;
      end
      DT_FP8E4M3, DT_MXFP8E4M3: begin  // an MX type converts to its element format
        man_w    = 4'd3;
        bias     = 8'd7;
        max_mag  = 15'h007E;
        ovf_mag  = sat_i ? 15'h007E : 15'h007F;
        ovf_sign = sat_i;
        nan_pat  = 16'h007F;
        is_fp8   = 1'b1;
      end
      DT_FP8E5M2, DT_MXFP8E5M2: begin
        man_w   = 4'd2;
        bias    = 8'd15;
        max_mag = 15'h007B;
        ovf_mag = sat_i ? 15'h007B : 15'h007C;
        nan_pat = 16'h007E;
        is_fp8  = 1'b1;
      end
      DT_MXFP4: begin  // E2M1: bias 1, max 6 (0x7); no Inf or NaN, so it always saturates and NaN gives +0
        man_w   = 4'd1;
        bias    = 8'd1;
        max_mag = 15'h0007;
        ovf_mag = 15'h0007;
        nan_pat = 16'h0000;
        is_fp4  = 1'b1;
      end
      default: begin
        legal = 1'b0;
      end
    endcase
  end

  // ---------------------------------------------------------------------------------------------------
  // FP32 unpack. A subnormal has no hidden bit and the scale of exponent field 1 (effective exponent 1).
  // ---------------------------------------------------------------------------------------------------
  logic        sign;
  logic [7:0]  f_exp;
  logic [23:0] f_sig;
  logic        f_nan, f_inf;

  always_comb begin
    sign  = f32_i[31];
    f_exp = f32_i[30:23] | {7'd0, f32_i[30:23] == '0};
    f_sig = {f32_i[30:23] != '0, f32_i[22:0]};
    f_nan = (&f32_i[30:23]) && (f32_i[22:0] != '0);
    f_inf = (&f32_i[30:23]) && (f32_i[22:0] == '0);
  end

  // ---------------------------------------------------------------------------------------------------
  // Rebias and choose the right shift that leaves man_w + 1 significand bits. The target exponent
  // t_exp = f_exp - 127 + bias is kept offset by +127 (t_exp_o = f_exp + bias, always positive) so the
  // arithmetic stays unsigned; t_exp >= 1 means t_exp_o >= 128. Below the normal range the result is a
  // subnormal with exponent 1 and the shift grows by 1 - t_exp. Shifts of 25 or more leave nothing.
  // ---------------------------------------------------------------------------------------------------
  logic [8:0]  t_exp_o;
  logic        t_normal;
  logic [8:0]  extra;     // 1 - t_exp when below the normal range, else 0
  logic [8:0]  shamt_w;
  logic [4:0]  shamt;     // 1..25
  logic [8:0]  exp_r;     // target exponent (>= 1), the hidden bit decides normal/subnormal

  always_comb begin
    t_exp_o  = 9'(f_exp) + 9'(bias);
    t_normal = t_exp_o >= 9'd128;
    extra    = t_normal ? 9'd0 : 9'd128 - t_exp_o;
    shamt_w  = 9'd23 - 9'(man_w) + extra;
    shamt    = (shamt_w > 9'd25) ? 5'd25 : shamt_w[4:0];
    exp_r    = t_normal ? t_exp_o - 9'd127 : 9'd1;
  end

  // ---------------------------------------------------------------------------------------------------
  // Shift, round to nearest even, and pack. kept holds the significand bits that survive (hidden bit at
  // position man_w when normal); guard is the first bit below them and sticky ORs the rest.
  // ---------------------------------------------------------------------------------------------------
  logic [31:0] sig_w;
  logic [31:0] kept;
  logic [31:0] rest_mask;
  logic        guard, sticky, rne_up, round_up;
  logic [31:0] dropped;   // the bits shifted out (all of them from shift 25 on, where nothing is kept)
  logic [SR_BITS-1:0] frac;  // dropped as a fraction of the last kept bit, truncated to SR_BITS bits
  logic [SR_BITS:0]   sr_sum;
  logic [31:0] packed_r;
  logic        ovf;

  always_comb begin
    sig_w     = {8'd0, f_sig};
    kept      = sig_w >> shamt;
    guard     = sig_w[shamt - 5'd1];
    rest_mask = (32'd1 << (shamt - 5'd1)) - 32'd1;
    sticky    = (sig_w & rest_mask) != '0;
    rne_up    = guard & (sticky | kept[0]);
    // The true shift is shamt_w (shamt stops at 25, which already drops every significand bit).
    dropped   = sig_w & ((32'd1 << shamt) - 32'd1);
    if (shamt_w >= 9'(SR_BITS)) begin
      frac = (shamt_w - 9'(SR_BITS) >= 9'd32) ? '0 : SR_BITS'(dropped >> (shamt_w - 9'(SR_BITS)));
    end else begin
      frac = SR_BITS'(dropped << (9'(SR_BITS) - shamt_w));
    end
    sr_sum    = {1'b0, frac} + {1'b0, rnd_i};
    round_up  = sr_i ? sr_sum[SR_BITS] : rne_up;
    packed_r  = ((32'(exp_r) - 32'd1) << man_w) + kept + 32'(round_up);
    ovf       = f_inf | (packed_r > 32'(max_mag));
  end

  // ---------------------------------------------------------------------------------------------------
  // Result select: NaN, overflow, rounded value; then placement (FP8 in bits [7:0]).
  // ---------------------------------------------------------------------------------------------------
  logic        res_sign;
  logic [14:0] res_mag;

  always_comb begin
    if (f_nan) begin
      {res_sign, res_mag} = nan_pat;
    end else if (ovf) begin
      res_sign = sign & ovf_sign;
      res_mag  = ovf_mag;
    end else begin
      res_sign = sign;
      res_mag  = packed_r[14:0];
    end
    if (!legal) begin
      data_o = ILLEGAL_NAN;
    end else if (is_fp8) begin
      data_o = {8'd0, res_sign, res_mag[6:0]};
    end else if (is_fp4) begin
      data_o = {12'd0, res_sign, res_mag[2:0]};
    end else begin
      data_o = {res_sign, res_mag};
    end
  end

endmodule
