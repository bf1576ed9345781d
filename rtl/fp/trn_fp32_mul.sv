// trn_fp32_mul: IEEE-754 binary32 multiply, round to nearest, ties to even (BRIEF section 3 rules 2 and 5).
//
// Purely combinational (the Tensor Engine PE registers around it). Full gradual underflow: subnormal inputs
// are used as they are and subnormal results are produced (no FTZ/DAZ). Overflow gives +-Inf, Inf * 0 gives
// NaN, and every NaN result is the canonical quiet NaN 32'h7FC0_0000.
//
// Datapath: subnormal inputs are first normalised (leading one moved to the hidden-bit position, exponent
// lowered to match; this branch is only taken for subnormals), so the 24x24-bit significand product always
// has its leading one at bit 47 or 46. One normalising shift follows (left by 0 or 1, or right for results
// below the normal range, the bits shifted out going to the sticky bit), then one rounding increment on the
// packed {exponent, mantissa} word so that a mantissa carry moves into the exponent on its own
// (subnormal -> normal, max finite -> Inf).
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

  // Exponents below are kept offset by +32 so that a normalised subnormal (exponent down to -21) stays
  // positive and every comparison is unsigned.
  localparam int unsigned EXP_OFS = 32;

  // ---------------------------------------------------------------------------------------------------
  // Operand classification.
  // ---------------------------------------------------------------------------------------------------
  logic a_exp_zero, b_exp_zero, a_exp_max, b_exp_max;
  logic a_man_zero, b_man_zero;
  logic a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
  logic sign;

  always_comb begin
    a_exp_zero = a_i[30:23] == '0;
    b_exp_zero = b_i[30:23] == '0;
    a_exp_max  = &a_i[30:23];
    b_exp_max  = &b_i[30:23];
    a_man_zero = a_i[22:0] == '0;
    b_man_zero = b_i[22:0] == '0;
    a_zero     = a_exp_zero & a_man_zero;
    b_zero     = b_exp_zero & b_man_zero;
    a_inf      = a_exp_max & a_man_zero;
    b_inf      = b_exp_max & b_man_zero;
    a_nan      = a_exp_max & ~a_man_zero;
    b_nan      = b_exp_max & ~b_man_zero;
    sign       = a_i[31] ^ b_i[31];
  end

  // ---------------------------------------------------------------------------------------------------
  // Unpack and normalise. A normal operand is 1.m * 2^(e-127): significand {1, m}, exponent e.
  // A subnormal is 0.m * 2^-126; with lz zeros above the leading one of m it equals
  // ({m, 0} << lz) * 2^(-lz-127) read as a 1.xxx significand, i.e. exponent -lz.
  // ---------------------------------------------------------------------------------------------------
  logic [4:0]  a_lz, b_lz;
  logic [23:0] a_sig, b_sig;  // normalised significands, bit 23 set for every non-zero operand
  logic [8:0]  a_exp, b_exp;  // biased exponents + EXP_OFS

  always_comb begin
    a_lz = '0;
    if (a_exp_zero) begin
      a_lz = lzc32({a_i[22:0], 9'd0});
    end
    b_lz = '0;
    if (b_exp_zero) begin
      b_lz = lzc32({b_i[22:0], 9'd0});
    end
    a_sig = a_exp_zero ? {a_i[22:0], 1'b0} << a_lz : {1'b1, a_i[22:0]};
    b_sig = b_exp_zero ? {b_i[22:0], 1'b0} << b_lz : {1'b1, b_i[22:0]};
    a_exp = a_exp_zero ? 9'(EXP_OFS) - 9'(a_lz) : 9'(a_i[30:23]) + 9'(EXP_OFS);
    b_exp = b_exp_zero ? 9'(EXP_OFS) - 9'(b_lz) : 9'(b_i[30:23]) + 9'(EXP_OFS);
  end

  // ---------------------------------------------------------------------------------------------------
  // Significand product, in [2^46, 2^48) for non-zero operands. With the leading one at bit 47 the biased
  // result exponent is a_exp + b_exp - 2*EXP_OFS - 126 = exp_sum - 190.
  // ---------------------------------------------------------------------------------------------------
  // exp_sum is signed and 12 bits wide: a_exp + b_exp (18..574) plus scale_i (-512..511).
  localparam logic signed [11:0] EXP_AT_47 = 12'(2 * EXP_OFS + 126);  // exp_sum giving result exponent 0

  logic [47:0]        prod;
  logic signed [11:0] exp_sum;
  logic               prod_lz;  // leading zeros of the product: 0 or 1

  always_comb begin
    prod    = 48'(a_sig) * 48'(b_sig);
    exp_sum = $signed(12'(a_exp)) + $signed(12'(b_exp)) + 12'(scale_i);
    prod_lz = ~prod[47];
  end

  // ---------------------------------------------------------------------------------------------------
  // Normalisation into norm[47:0] with the hidden-bit position at bit 47, plus the result exponent exp_r
  // (>= 1; exp_r == 1 with norm[47] == 0 is a subnormal):
  //   - result exponent exp_sum - 190 - prod_lz >= 1: shift left by prod_lz (normal result)
  //   - otherwise (E = exp_sum - 190 <= 1): shift right by 1 - E so that the exponent becomes 1; the bits
  //     shifted out go to the sticky bit. Shifts of 63 or more leave only the sticky bit.
  // ---------------------------------------------------------------------------------------------------
  logic [47:0]        norm;
  logic [10:0]        exp_r;  // 1..1022 (a scaled product can be far past the FP32 range: an overflow)
  logic               shr_sticky;
  logic [5:0]         shr_amt;
  logic [63:0]        prod_shr;
  logic signed [11:0] lz_s;

  always_comb begin
    shr_amt    = '0;
    prod_shr   = '0;
    shr_sticky = 1'b0;
    lz_s       = $signed({11'd0, prod_lz});
    if (exp_sum > EXP_AT_47 + lz_s) begin
      norm  = prod << prod_lz;
      exp_r = 11'(exp_sum - EXP_AT_47 - lz_s);
    end else begin
      shr_amt    = (exp_sum + 12'sd63 <= EXP_AT_47 + 12'sd1) ? 6'd63 : 6'(EXP_AT_47 + 12'sd1 - exp_sum);
      prod_shr   = {16'd0, prod} >> shr_amt;
      shr_sticky = (prod_shr << shr_amt) != {16'd0, prod};
      norm       = prod_shr[47:0];
      exp_r      = 11'd1;
    end
  end

  // ---------------------------------------------------------------------------------------------------
  // Round to nearest even on the packed word {exp_r - 1, 24-bit significand}: adding the hidden bit to
  // exp_r - 1 gives the exponent field, and a rounding carry propagates into it. exp_r is at most 893
  // (382 without a scale), so an 11-bit exponent part holds it; a field of 255 or more is an overflow.
  // ---------------------------------------------------------------------------------------------------
  logic        guard, sticky, round_up;
  logic [33:0] packed_r;  // [33:23] exponent field
  logic        ovf;

  always_comb begin
    guard    = norm[23];
    sticky   = (norm[22:0] != '0) | shr_sticky;
    round_up = guard & (sticky | norm[24]);
    packed_r = {exp_r - 11'd1, 23'd0} + 34'(norm[47:24]) + 34'(round_up);
    ovf      = packed_r[33:23] >= 11'd255;
  end

  // ---------------------------------------------------------------------------------------------------
  // Result select: special operands first, then overflow, then the rounded value.
  // ---------------------------------------------------------------------------------------------------
  always_comb begin
    if (a_nan | b_nan | (a_inf & b_zero) | (a_zero & b_inf)) begin
      p_o = F32_QNAN;
    end else if (a_inf | b_inf) begin
      p_o = {sign, 8'hFF, 23'd0};
    end else if (a_zero | b_zero) begin  // before ovf: a zero stays zero whatever scale_i says
      p_o = {sign, 31'd0};
    end else if (ovf) begin
      p_o = {sign, 8'hFF, 23'd0};
    end else begin
      p_o = {sign, packed_r[30:0]};
    end
  end

endmodule
