// trn_fp32_add: IEEE-754 binary32 add, round to nearest, ties to even (BRIEF section 3 rules 3-5).
//
// Purely combinational (the Tensor Engine PE registers around it). Subtraction is a + (-b): the caller flips
// b's sign bit. Full gradual underflow (no FTZ/DAZ). An exact zero sum is +0, except -0 + -0 = -0.
// Inf - Inf gives NaN and every NaN result is the canonical quiet NaN 32'h7FC0_0000.
//
// Datapath: order the operands by magnitude, align the smaller one right with three extra low bits (guard,
// round, sticky; bits shifted past them are ORed into the sticky bit), add or subtract the 27-bit values,
// normalise with one left shift by the leading-zero count of the 28-bit sum (limited by the subnormal
// boundary), then round with one increment on the packed {exponent, mantissa} word.
// The datapath is written with selects rather than branches where the choice is data dependent (operand
// order, add/subtract), which keeps the verilated code free of unpredictable branches.
module trn_fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] s_o
);
  import trn_fp_pkg::*;

  // ---------------------------------------------------------------------------------------------------
  // Special operands.
  // ---------------------------------------------------------------------------------------------------
  logic a_exp_max, b_exp_max, a_man_zero, b_man_zero;
  logic a_inf, b_inf, a_nan, b_nan;
  logic eff_sub;  // signs differ: the magnitudes are subtracted

  always_comb begin
    a_exp_max  = &a_i[30:23];
    b_exp_max  = &b_i[30:23];
    a_man_zero = a_i[22:0] == '0;
    b_man_zero = b_i[22:0] == '0;
    a_inf      = a_exp_max & a_man_zero;
    b_inf      = b_exp_max & b_man_zero;
    a_nan      = a_exp_max & ~a_man_zero;
    b_nan      = b_exp_max & ~b_man_zero;
    eff_sub    = a_i[31] ^ b_i[31];
  end

  // ---------------------------------------------------------------------------------------------------
  // Order by magnitude (|big_op| >= |sml_mag|) and unpack. The result takes the sign of the bigger operand.
  // A subnormal has no hidden bit and the scale of exponent field 1, so its effective exponent is 1.
  // ---------------------------------------------------------------------------------------------------
  logic [31:0] big_op;
  logic [30:0] sml_mag;  // magnitude of the smaller operand (its sign only matters through eff_sub)
  logic [7:0]  big_exp, small_exp;
  logic [23:0] big_sig, small_sig;
  logic        swap;

  always_comb begin
    swap      = b_i[30:0] > a_i[30:0];
    big_op    = swap ? b_i : a_i;
    // The other magnitude, as a ^ b ^ big: one select instead of two with the same condition (Verilator would
    // merge those into a data-dependent branch).
    sml_mag   = a_i[30:0] ^ b_i[30:0] ^ big_op[30:0];
    big_exp   = big_op[30:23] | {7'd0, big_op[30:23] == '0};
    small_exp = sml_mag[30:23] | {7'd0, sml_mag[30:23] == '0};
    big_sig   = {big_op[30:23] != '0, big_op[22:0]};
    small_sig = {sml_mag[30:23] != '0, sml_mag[22:0]};
  end

  // ---------------------------------------------------------------------------------------------------
  // Alignment: shift the smaller significand (with 3 extra low bits) right by the exponent difference;
  // any 1 shifted out sets bit 0 (sticky). A difference of 27 or more leaves only the sticky bit.
  // ---------------------------------------------------------------------------------------------------
  logic [7:0]  exp_diff;
  logic [4:0]  align_amt;
  logic [26:0] small_ext, small_shr, small_al;
  logic        align_sticky;

  always_comb begin
    exp_diff     = big_exp - small_exp;
    align_amt    = (exp_diff > 8'd27) ? 5'd27 : exp_diff[4:0];
    small_ext    = {small_sig, 3'd0};
    small_shr    = small_ext >> align_amt;
    align_sticky = (small_shr << align_amt) != small_ext;
    small_al     = small_shr | {26'd0, align_sticky};
  end

  // ---------------------------------------------------------------------------------------------------
  // Magnitude add or subtract (never negative: |big_op| >= |sml_mag|). Bit 27 is the carry-out of an addition.
  // ---------------------------------------------------------------------------------------------------
  logic [27:0] sum;

  // Subtraction as two's complement (invert and add one, modulo 2^28) so that add and subtract share one adder
  // and the verilated code has no data-dependent branch here.
  always_comb begin
    sum = {1'b0, big_sig, 3'd0} + ({1'b0, small_al} ^ {28{eff_sub}}) + 28'(eff_sub);
  end

  // ---------------------------------------------------------------------------------------------------
  // Normalisation into norm[27:0] with the hidden-bit position at bit 27: mantissa [26:4], guard bit 3,
  // round/sticky bits [2:0]. One left shift by the leading-zero count of the 28-bit sum covers every case
  // (0 after a carry-out, 1 for a sum without carry, more after cancellation), limited so that the result
  // exponent big_exp + 1 - shift stays >= 1 (a result that cannot be normalised is a subnormal).
  // A shift of 3 or more only happens for a subtraction of operands at most one exponent apart, where the
  // alignment lost no bits, so the zeros shifted in are exact.
  // ---------------------------------------------------------------------------------------------------
  logic [4:0]  sum_lz;
  logic [7:0]  norm_amt;
  logic [27:0] norm;

  always_comb begin
    sum_lz   = lzc32({sum, 4'd0});
    norm_amt = (8'(sum_lz) < big_exp) ? 8'(sum_lz) : big_exp;
    norm     = sum << norm_amt;
  end

  // ---------------------------------------------------------------------------------------------------
  // Round to nearest even on the packed word {big_exp - norm_amt, 24-bit significand}. That exponent is the
  // result exponent minus one; adding the hidden bit completes the exponent field (subnormals have no hidden
  // bit and exponent field 0), and a rounding carry propagates into it. A field of 255 or more overflows.
  // ---------------------------------------------------------------------------------------------------
  logic        round_up;
  logic [31:0] packed_r;  // [31:23] exponent field
  logic        ovf;

  always_comb begin
    round_up = norm[3] & ((norm[2:0] != '0) | norm[4]);
    packed_r = {1'b0, big_exp - norm_amt, 23'd0} + 32'(norm[27:4]) + 32'(round_up);
    ovf      = packed_r[31:23] >= 9'd255;
  end

  // ---------------------------------------------------------------------------------------------------
  // Result select: NaN, Inf, exact zero, overflow, rounded value.
  // ---------------------------------------------------------------------------------------------------
  always_comb begin
    if (a_nan | b_nan | (a_inf & b_inf & eff_sub)) begin
      s_o = F32_QNAN;
    end else if (a_inf | b_inf | ovf) begin
      s_o = {big_op[31], 8'hFF, 23'd0};
    end else if (sum == '0) begin
      // Exact zero (x + -x, or two zeros): +0 under round-to-nearest, -0 only for -0 + -0.
      s_o = {a_i[31] & b_i[31], 31'd0};
    end else begin
      s_o = {big_op[31], packed_r[30:0]};
    end
  end

endmodule
