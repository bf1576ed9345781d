// trn_fp_sr_rng: the random bits of stochastic rounding (BRIEF section 3 rule 9; docs/numerics.md "Stochastic
// rounding"). A counter-based generator with no state: the SR_BITS bits for the element named key_i under seed_i are
// the top bits of h = fmix32(fmix32(fmix32(seed_i) ^ key_i[31:0]) ^ key_i[63:32]), where fmix32 is MurmurHash3's
// 32-bit finalizer (A. Appleby, SMHasher, src/MurmurHash3.cpp). The same function as golden::sr_random_bits and
// model::fp::sr_bits, so every backend rounds an element with the same bits.
//
// Purely combinational (three rounds of two 32-bit multiplies: a verification model, not a timing-closed design).
module trn_fp_sr_rng
  import trn_fp_pkg::*;
(
  input  logic [31:0]        seed_i,
  input  logic [63:0]        key_i,   // the element: destination (space << 56 | byte address), or a vector index
  output logic [SR_BITS-1:0] bits_o
);

  function automatic logic [31:0] fmix32(logic [31:0] x);
    logic [31:0] h;
    h = x ^ (x >> 16);
    h = h * 32'h85EB_CA6B;
    h = h ^ (h >> 13);
    h = h * 32'hC2B2_AE35;
    return h ^ (h >> 16);
  endfunction

  logic [31:0] h0, h1, h2;

  always_comb begin
    h0     = fmix32(seed_i);
    h1     = fmix32(h0 ^ key_i[31:0]);
    h2     = fmix32(h1 ^ key_i[63:32]);
    bits_o = h2[31 -: SR_BITS];
  end

  logic unused_h2_low;  // the low bits of the hash are not used (the top SR_BITS are the better mixed ones)
  assign unused_h2_low = ^h2[31-SR_BITS:0];

endmodule
