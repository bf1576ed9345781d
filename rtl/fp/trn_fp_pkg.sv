// trnsim floating-point package: data-type codes and format constants shared by the FP units and the
// Tensor Engine. The dtype codes are part of the ISA: the region marked GENERATED comes from spec/isa.json, like the
// C++ isa::DataType (spec/isa_spec.h).
package trn_fp_pkg;

  // ---- GENERATED from spec/isa.json by scripts/gen-isa.cmake (make isa-gen): do not edit this region
  // 3-bit dtype field: the narrow TE operand types (codes 0..3) and the MX types (dtype_legal),
  // whose element formats the FP units convert. Other codes are illegal and flagged by the units that decode them.
  typedef enum logic [2:0] {
    DT_BF16 = 3'd0,  // bfloat16: 1-8-7, bias 127
    DT_FP16 = 3'd1,  // IEEE 754 binary16: 1-5-10, bias 15
    DT_FP8E4M3 = 3'd2,  // OCP OFP8 E4M3: 1-4-3, bias 7, no Inf, NaN = S.1111.111, max 448
    DT_FP8E5M2 = 3'd3,  // OCP OFP8 E5M2: 1-5-2, bias 15, IEEE-style Inf/NaN, max 57344
    DT_MXFP8E4M3 = 3'd5,  // OCP MXFP8 E4M3: FP8 E4M3 elements (emax 8) in blocks of 32 partitions sharing an E8M0 scale
    DT_MXFP8E5M2 = 3'd6,  // OCP MXFP8 E5M2: FP8 E5M2 elements (emax 15) in blocks of 32 partitions sharing an E8M0 scale
    DT_MXFP4 = 3'd7   // OCP MXFP4: FP4 E2M1 elements (emax 2, one per byte in the low nibble) in blocks of 32 partitions sharing an E8M0 scale
  } dtype_e;
  // Random bits stochastic rounding compares with the discarded fraction (BRIEF section 3 rule 9) (C++ isa::kSrBits).
  localparam int unsigned SR_BITS = 16;
  // ---- END GENERATED

  // Canonical quiet NaN written for every NaN result (numerics contract, rule 5).
  localparam logic [31:0] F32_QNAN = 32'h7FC0_0000;

  // True for the MX (block-scaled) dtype codes (BRIEF section 3 rule 10).
  function automatic logic dtype_is_mx(logic [2:0] code);
    return code == DT_MXFP8E4M3 || code == DT_MXFP8E5M2 || code == DT_MXFP4;
  endfunction

  // True for the dtype codes the Tensor Engine implements: the narrow types and the MX types (not 4, fp32).
  function automatic logic dtype_legal(logic [2:0] code);
    return code <= 3'd3 || dtype_is_mx(code);
  endfunction

  // Leading-zero count of a 32-bit word, as a 5-stage binary search: each stage tests the upper part of what
  // is left and shifts it out when it is all zero. Shifts by {flag, zeros} and one flag variable per stage
  // keep the verilated code short and free of branches. Returns 31 for x == 0 (callers handle zero).
  function automatic logic [4:0] lzc32(logic [31:0] x);
    logic [31:0] v;
    logic        z16, z8, z4, z2, z1;
    v   = x;
    z16 = v[31:16] == '0;
    v   = v << {z16, 4'd0};
    z8  = v[31:24] == '0;
    v   = v << {z8, 3'd0};
    z4  = v[31:28] == '0;
    v   = v << {z4, 2'd0};
    z2  = v[31:30] == '0;
    v   = v << {z2, 1'd0};
    z1  = ~v[31];
    return {z16, z8, z4, z2, z1};
  endfunction

  // ---------------------------------------------------------------------------------------------------------------
  // FP32 multiply and add, the one implementation of both (BRIEF section 3 rules 2-5). The modules trn_fp32_mul and
  // trn_fp32_add put them on ports; the Tensor Engine's PEs call them directly. `verilator no_inline_task` makes
  // each one C++ function for the whole model instead of a copy in every caller: inlined, a 16x16 engine carried
  // 256 copies of the PE's multipliers and adders, several MB of code executed on every cycle, and ran from the
  // instruction cache's misses (docs/performance.md, "The RTL's speed").
  // ---------------------------------------------------------------------------------------------------------------

  // IEEE-754 binary32 multiply, round to nearest, ties to even, times 2^scale before that one rounding.
  //
  // Full gradual underflow: subnormal inputs are used as they are and subnormal results are produced (no
  // FTZ/DAZ). Overflow gives +-Inf, Inf * 0 gives NaN, and every NaN result is the canonical quiet NaN.
  // scale multiplies the exact product by 2^scale before the rounding (0 for a plain multiply): the MX product of
  // BRIEF section 3 rule 10, a * b * 2^(ca - 127) * 2^(cb - 127) rounded once, with scale = ca + cb - 254. The
  // scaling is exact, so a result that the scale moves into the subnormal range is rounded once, not twice.
  //
  // Datapath: subnormal inputs are first normalised (leading one moved to the hidden-bit position, exponent lowered
  // to match; only for subnormals), so the 24x24-bit significand product has its leading one at bit 47 or 46. One
  // normalising shift follows (left by 0 or 1, or right for results below the normal range, the bits shifted out
  // going to the sticky bit), then one rounding increment on the packed {exponent, mantissa} word so that a
  // mantissa carry moves into the exponent on its own (subnormal -> normal, max finite -> Inf).
  // Exponents are kept offset by +32 (EXP_OFS) so that a normalised subnormal (exponent down to -21) stays
  // positive and every comparison is unsigned.
  function automatic logic [31:0] fp32_mul(logic [31:0] a, logic [31:0] b, logic signed [9:0] scale);
    /*verilator no_inline_task*/
    localparam int unsigned EXP_OFS = 32;
    localparam logic signed [11:0] EXP_AT_47 = 12'(2 * EXP_OFS + 126);  // exp_sum giving result exponent 0
    logic a_exp_zero, b_exp_zero, a_exp_max, b_exp_max, a_man_zero, b_man_zero;
    logic a_zero, b_zero, a_inf, b_inf, a_nan, b_nan, sign;
    logic [4:0]  a_lz, b_lz;
    logic [23:0] a_sig, b_sig;  // normalised significands, bit 23 set for every non-zero operand
    logic [8:0]  a_exp, b_exp;  // biased exponents + EXP_OFS
    logic [47:0] prod;
    logic signed [11:0] exp_sum;  // a_exp + b_exp (18..574) plus scale (-512..511)
    logic        prod_lz;  // leading zeros of the product: 0 or 1
    logic [47:0] norm;
    logic [10:0] exp_r;  // 1..1022 (a scaled product can be far past the FP32 range: an overflow)
    logic        shr_sticky;
    logic [5:0]  shr_amt;
    logic [63:0] prod_shr;
    logic signed [11:0] lz_s;
    logic        guard, sticky, round_up, ovf;
    logic [33:0] packed_r;  // [33:23] exponent field

    // Operand classification.
    a_exp_zero = a[30:23] == '0;
    b_exp_zero = b[30:23] == '0;
    a_exp_max  = &a[30:23];
    b_exp_max  = &b[30:23];
    a_man_zero = a[22:0] == '0;
    b_man_zero = b[22:0] == '0;
    a_zero     = a_exp_zero & a_man_zero;
    b_zero     = b_exp_zero & b_man_zero;
    a_inf      = a_exp_max & a_man_zero;
    b_inf      = b_exp_max & b_man_zero;
    a_nan      = a_exp_max & ~a_man_zero;
    b_nan      = b_exp_max & ~b_man_zero;
    sign       = a[31] ^ b[31];

    // Unpack and normalise. A normal operand is 1.m * 2^(e-127): significand {1, m}, exponent e. A subnormal is
    // 0.m * 2^-126; with lz zeros above the leading one of m it equals ({m, 0} << lz) * 2^(-lz-127) read as a
    // 1.xxx significand, i.e. exponent -lz.
    a_lz = '0;
    if (a_exp_zero) a_lz = lzc32({a[22:0], 9'd0});  // a branch: the count is only needed for a subnormal
    b_lz = '0;
    if (b_exp_zero) b_lz = lzc32({b[22:0], 9'd0});
    a_sig = a_exp_zero ? {a[22:0], 1'b0} << a_lz : {1'b1, a[22:0]};
    b_sig = b_exp_zero ? {b[22:0], 1'b0} << b_lz : {1'b1, b[22:0]};
    a_exp = a_exp_zero ? 9'(EXP_OFS) - 9'(a_lz) : 9'(a[30:23]) + 9'(EXP_OFS);
    b_exp = b_exp_zero ? 9'(EXP_OFS) - 9'(b_lz) : 9'(b[30:23]) + 9'(EXP_OFS);

    // Significand product, in [2^46, 2^48) for non-zero operands. With the leading one at bit 47 the biased
    // result exponent is a_exp + b_exp - 2*EXP_OFS - 126 = exp_sum - 190.
    prod    = 48'(a_sig) * 48'(b_sig);
    exp_sum = $signed(12'(a_exp)) + $signed(12'(b_exp)) + 12'(scale);
    prod_lz = ~prod[47];

    // Normalisation into norm[47:0] with the hidden-bit position at bit 47, plus the result exponent exp_r (>= 1;
    // exp_r == 1 with norm[47] == 0 is a subnormal):
    //   - result exponent exp_sum - 190 - prod_lz >= 1: shift left by prod_lz (normal result)
    //   - otherwise (E = exp_sum - 190 <= 1): shift right by 1 - E so that the exponent becomes 1; the bits shifted
    //     out go to the sticky bit. Shifts of 63 or more leave only the sticky bit.
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

    // Round to nearest even on the packed word {exp_r - 1, 24-bit significand}: adding the hidden bit to exp_r - 1
    // gives the exponent field, and a rounding carry propagates into it. exp_r is at most 893 (382 without a
    // scale), so an 11-bit exponent part holds it; a field of 255 or more is an overflow.
    guard    = norm[23];
    sticky   = (norm[22:0] != '0) | shr_sticky;
    round_up = guard & (sticky | norm[24]);
    packed_r = {exp_r - 11'd1, 23'd0} + 34'(norm[47:24]) + 34'(round_up);
    ovf      = packed_r[33:23] >= 11'd255;

    // Result: special operands first, then overflow, then the rounded value.
    if (a_nan | b_nan | (a_inf & b_zero) | (a_zero & b_inf)) return F32_QNAN;
    if (a_inf | b_inf) return {sign, 8'hFF, 23'd0};
    if (a_zero | b_zero) return {sign, 31'd0};  // before ovf: a zero stays zero whatever scale says
    if (ovf) return {sign, 8'hFF, 23'd0};
    return {sign, packed_r[30:0]};
  endfunction

  // IEEE-754 binary32 add, round to nearest, ties to even. Subtraction is a + (-b): the caller flips b's sign bit.
  // Full gradual underflow (no FTZ/DAZ). An exact zero sum is +0, except -0 + -0 = -0. Inf - Inf gives NaN and
  // every NaN result is the canonical quiet NaN.
  //
  // Datapath: order the operands by magnitude, align the smaller one right with three extra low bits (guard, round,
  // sticky; bits shifted past them are ORed into the sticky bit), add or subtract the 27-bit values, normalise with
  // one left shift by the leading-zero count of the 28-bit sum (limited by the subnormal boundary), then round with
  // one increment on the packed {exponent, mantissa} word. Data-dependent choices (operand order, add/subtract)
  // are selects rather than branches, which keeps the verilated code free of unpredictable branches.
  function automatic logic [31:0] fp32_add(logic [31:0] a, logic [31:0] b);
    /*verilator no_inline_task*/
    logic        a_exp_max, b_exp_max, a_man_zero, b_man_zero, a_inf, b_inf, a_nan, b_nan;
    logic        eff_sub;  // signs differ: the magnitudes are subtracted
    logic [31:0] big_op;
    logic [30:0] sml_mag;  // magnitude of the smaller operand (its sign only matters through eff_sub)
    logic [7:0]  big_exp, small_exp, exp_diff, norm_amt;
    logic [23:0] big_sig, small_sig;
    logic        swap, align_sticky, round_up, ovf;
    logic [4:0]  align_amt, sum_lz;
    logic [26:0] small_ext, small_shr, small_al;
    logic [27:0] sum, norm;
    logic [31:0] packed_r;  // [31:23] exponent field

    // Special operands.
    a_exp_max  = &a[30:23];
    b_exp_max  = &b[30:23];
    a_man_zero = a[22:0] == '0;
    b_man_zero = b[22:0] == '0;
    a_inf      = a_exp_max & a_man_zero;
    b_inf      = b_exp_max & b_man_zero;
    a_nan      = a_exp_max & ~a_man_zero;
    b_nan      = b_exp_max & ~b_man_zero;
    eff_sub    = a[31] ^ b[31];

    // Order by magnitude (|big_op| >= |sml_mag|) and unpack; the result takes the sign of the bigger operand. A
    // subnormal has no hidden bit and the scale of exponent field 1, so its effective exponent is 1. The other
    // magnitude is a ^ b ^ big: one select instead of two with the same condition (Verilator would merge those into
    // a data-dependent branch).
    swap      = b[30:0] > a[30:0];
    big_op    = swap ? b : a;
    sml_mag   = a[30:0] ^ b[30:0] ^ big_op[30:0];
    big_exp   = big_op[30:23] | {7'd0, big_op[30:23] == '0};
    small_exp = sml_mag[30:23] | {7'd0, sml_mag[30:23] == '0};
    big_sig   = {big_op[30:23] != '0, big_op[22:0]};
    small_sig = {sml_mag[30:23] != '0, sml_mag[22:0]};

    // Alignment: shift the smaller significand (with 3 extra low bits) right by the exponent difference; any 1
    // shifted out sets bit 0 (sticky). A difference of 27 or more leaves only the sticky bit.
    exp_diff     = big_exp - small_exp;
    align_amt    = (exp_diff > 8'd27) ? 5'd27 : exp_diff[4:0];
    small_ext    = {small_sig, 3'd0};
    small_shr    = small_ext >> align_amt;
    align_sticky = (small_shr << align_amt) != small_ext;
    small_al     = small_shr | {26'd0, align_sticky};

    // Magnitude add or subtract (never negative: |big_op| >= |sml_mag|); bit 27 is the carry-out of an addition.
    // Subtraction as two's complement (invert and add one, modulo 2^28), so that add and subtract share one adder.
    sum = {1'b0, big_sig, 3'd0} + ({1'b0, small_al} ^ {28{eff_sub}}) + 28'(eff_sub);

    // Normalisation into norm[27:0] with the hidden-bit position at bit 27: mantissa [26:4], guard bit 3,
    // round/sticky bits [2:0]. One left shift by the leading-zero count of the sum covers every case (0 after a
    // carry-out, 1 for a sum without carry, more after cancellation), limited so that the result exponent
    // big_exp + 1 - shift stays >= 1 (a result that cannot be normalised is a subnormal). A shift of 3 or more only
    // happens for a subtraction of operands at most one exponent apart, where the alignment lost no bits, so the
    // zeros shifted in are exact.
    sum_lz   = lzc32({sum, 4'd0});
    norm_amt = (8'(sum_lz) < big_exp) ? 8'(sum_lz) : big_exp;
    norm     = sum << norm_amt;

    // Round to nearest even on the packed word {big_exp - norm_amt, 24-bit significand}. That exponent is the
    // result exponent minus one; adding the hidden bit completes the exponent field (subnormals have no hidden bit
    // and exponent field 0), and a rounding carry propagates into it. A field of 255 or more overflows.
    round_up = norm[3] & ((norm[2:0] != '0) | norm[4]);
    packed_r = {1'b0, big_exp - norm_amt, 23'd0} + 32'(norm[27:4]) + 32'(round_up);
    ovf      = packed_r[31:23] >= 9'd255;

    // Result: NaN, Inf, exact zero, overflow, rounded value.
    if (a_nan | b_nan | (a_inf & b_inf & eff_sub)) return F32_QNAN;
    if (a_inf | b_inf | ovf) return {big_op[31], 8'hFF, 23'd0};
    // Exact zero (x + -x, or two zeros): +0 under round-to-nearest, -0 only for -0 + -0.
    if (sum == '0) return {a[31] & b[31], 31'd0};
    return {big_op[31], packed_r[30:0]};
  endfunction

endpackage
