// The model's floating-point operations (see fp_ops.h).
//
// Conversions work on the integer fields directly: a FP32 value is significand * 2^exponent with an integer
// significand; narrowing shifts the significand right to the target's quantum (the weight of its last mantissa bit
// at that magnitude) and rounds to nearest-even using the bits shifted out (the first one is the guard bit, the
// rest the sticky bits). This file is deliberately written differently from firmware/golden/fp_golden.cpp, which
// decides the same questions by value; the tests require the two to agree on every bit.
#include "model/fp/fp_ops.h"

#include <cmath>
#include <cstring>

namespace trnsim::model::fp {
namespace {

/// Field layout of a narrow format. E4M3 has no infinity and a single NaN mantissa (S.1111.111); E2M1 (the MXFP4
/// element, OCP MX v1.0 section 5.3.3) has neither Inf nor NaN.
struct Layout {
  unsigned exp_bits;
  unsigned man_bits;
  int bias;
  bool has_inf;        ///< IEEE-style specials: exponent all ones = Inf (mantissa 0) or NaN
  uint32_t max_finite; ///< largest positive finite encoding
  bool has_nan = true; ///< false: every encoding is finite (E2M1)
};

constexpr Layout layout(isa::Dtype dt) {
  switch (dt) {
    case isa::Dtype::kBf16: return {8, 7, 127, true, 0x7F7F};
    case isa::Dtype::kFp16: return {5, 10, 15, true, 0x7BFF};
    case isa::Dtype::kFp8E4M3:
    case isa::Dtype::kMxFp8E4M3: return {4, 3, 7, false, 0x7E};
    case isa::Dtype::kFp8E5M2:
    case isa::Dtype::kMxFp8E5M2: return {5, 2, 15, true, 0x7B};
    case isa::Dtype::kMxFp4: return {2, 1, 1, false, 0x7, false};
    case isa::Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  return {8, 7, 127, true, 0x7F7F};
}

constexpr uint32_t kF32SignBit = 0x80000000u;
constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr int kF32Bias = 127;
constexpr unsigned kF32ManBits = 23;

/// Canonical NaN of a narrow format: sign 0, exponent all ones, mantissa MSB set (E4M3: all mantissa bits set).
uint16_t narrow_nan(const Layout& l) {
  const uint32_t exp_ones = ((1u << l.exp_bits) - 1) << l.man_bits;
  const uint32_t man = l.has_inf ? (1u << (l.man_bits - 1)) : ((1u << l.man_bits) - 1);
  return static_cast<uint16_t>(exp_ones | man);
}

/// Index of the most significant set bit of x (x != 0).
unsigned msb_index(uint32_t x) {
  unsigned i = 0;
  while (x >>= 1) ++i;
  return i;
}

uint32_t canonical(float f) {
  if (std::isnan(f)) return kF32Qnan;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

float to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

uint32_t widen(isa::Dtype dt, uint16_t bits) {
  const Layout l = layout(dt);
  const unsigned width = 1 + l.exp_bits + l.man_bits;
  const uint32_t pattern = bits & ((1u << width) - 1);
  const uint32_t sign = (pattern >> (width - 1)) ? kF32SignBit : 0;
  const uint32_t exp = (pattern >> l.man_bits) & ((1u << l.exp_bits) - 1);
  const uint32_t man = pattern & ((1u << l.man_bits) - 1);
  const uint32_t exp_ones = (1u << l.exp_bits) - 1;

  if (l.has_inf && exp == exp_ones) return man == 0 ? (sign | kF32Inf) : kF32Qnan;
  if (!l.has_inf && l.has_nan && exp == exp_ones && man == (1u << l.man_bits) - 1) return kF32Qnan;
  if (exp == 0 && man == 0) return sign;

  const unsigned man_shift = kF32ManBits - l.man_bits;
  if (dt == isa::Dtype::kBf16) {
    return sign | (exp << kF32ManBits) | (man << man_shift);  // same exponent field as FP32
  }
  if (exp != 0) {
    const uint32_t exp32 = static_cast<uint32_t>(static_cast<int>(exp) - l.bias + kF32Bias);
    return sign | (exp32 << kF32ManBits) | (man << man_shift);
  }
  // Subnormal FP16/FP8: value = man * 2^(1 - bias - man_bits), a normal FP32 number. Shift the leading one into
  // the implicit position.
  const unsigned lead = msb_index(man);                // leading one's position in the mantissa field
  const int unbiased = 1 - l.bias - static_cast<int>(l.man_bits - lead);
  const uint32_t frac = (man << (l.man_bits - lead)) & ((1u << l.man_bits) - 1);
  return sign | (static_cast<uint32_t>(unbiased + kF32Bias) << kF32ManBits) | (frac << man_shift);
}

namespace {

/// narrow() and narrow_stochastic(): `sr_bits` null rounds to nearest even, else stochastically with those bits.
uint16_t narrow_with(isa::Dtype dt, uint32_t f32, bool saturate, const uint32_t* sr_bits, int scale_shift = 0) {
  const Layout l = layout(dt);
  const unsigned width = 1 + l.exp_bits + l.man_bits;
  const uint32_t sign = (f32 & kF32SignBit) ? (1u << (width - 1)) : 0;
  const uint32_t exp32 = (f32 >> kF32ManBits) & 0xFF;
  const uint32_t man32 = f32 & ((1u << kF32ManBits) - 1);

  if (exp32 == 0xFF && man32 != 0) return l.has_nan ? narrow_nan(l) : 0;  // E2M1 has no NaN: +0

  // Overflow result (also for +-Inf inputs): BF16/FP16 -> Inf; FP8 saturating -> max finite;
  // FP8 non-saturating -> E4M3 NaN, E5M2 Inf.
  const uint32_t inf_pattern = ((1u << l.exp_bits) - 1) << l.man_bits;
  const auto overflow = [&]() -> uint16_t {
    const bool is_fp8 = (width == 8);
    if ((is_fp8 && saturate) || !l.has_nan) return static_cast<uint16_t>(sign | l.max_finite);  // E2M1: always
    if (!l.has_inf) return narrow_nan(l);
    return static_cast<uint16_t>(sign | inf_pattern);
  };
  if (exp32 == 0xFF) return overflow();
  if (exp32 == 0 && man32 == 0) return static_cast<uint16_t>(sign);

  // |x| = sig * 2^e2 with an integer significand.
  const uint32_t sig = exp32 == 0 ? man32 : (man32 | (1u << kF32ManBits));
  // The value is multiplied by 2^-scale_shift here, exactly (narrow_scaled; 0 otherwise).
  const int e2 = (exp32 == 0 ? (1 - kF32Bias - static_cast<int>(kF32ManBits))
                             : (static_cast<int>(exp32) - kF32Bias - static_cast<int>(kF32ManBits))) -
                 scale_shift;
  // Unbiased exponent of |x|, clamped below at the target's minimum normal exponent (subnormal range), and the
  // target's quantum exponent there.
  const int exp_x = e2 + static_cast<int>(msb_index(sig));
  const int min_exp = 1 - l.bias;
  const int exp_t = exp_x > min_exp ? exp_x : min_exp;
  const int quantum = exp_t - static_cast<int>(l.man_bits);
  // > 0 without scaling (the narrow formats have fewer mantissa bits than FP32); a scaled-up FP32 subnormal can
  // have fewer significant bits than the target keeps (shift <= 0): then it is exact.
  const int shift = quantum - e2;

  uint64_t q;
  if (shift <= 0) {
    q = uint64_t{sig} << -shift;
  } else if (sr_bits != nullptr) {
    // Stochastic (rule 9): the dropped bits as a fraction of the quantum, truncated to kSrBits bits, plus the
    // random bits; a carry out rounds the magnitude up. sig < 2^24, so from shift 40 on both q and the fraction are 0.
    const uint64_t wide = sig;
    q = shift >= 40 ? 0 : wide >> shift;
    const uint64_t dropped = shift >= 40 ? wide : wide & ((uint64_t{1} << shift) - 1);
    const int down = shift - isa::kSrBits;  // dropped has `shift` bits; keep its top kSrBits
    const uint64_t fraction = down >= 64 ? 0 : down >= 0 ? dropped >> down : dropped << -down;
    q += (fraction + *sr_bits) >> isa::kSrBits;
  } else if (shift >= 40) {
    q = 0;  // |x| < 2^(quantum - 16): far below half a quantum, rounds to zero
  } else {
    const uint64_t wide = sig;
    q = wide >> shift;
    const uint64_t dropped = wide & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);  // the guard bit's weight
    const bool round_up = dropped > half || (dropped == half && (q & 1));
    q += round_up ? 1 : 0;
  }
  // Encoding = ((biased exponent - 1) << man_bits) + q. For the subnormal range (exp_t == min_exp) the first term
  // is 0 and q < 2^man_bits is the subnormal mantissa; q with the implicit bit set adds 1 to the exponent field,
  // which also absorbs a carry out of rounding.
  const uint64_t enc = (static_cast<uint64_t>(exp_t + l.bias - 1) << l.man_bits) + q;
  if (enc > l.max_finite) return overflow();
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(enc));
}

}  // namespace

uint16_t narrow(isa::Dtype dt, uint32_t f32, bool saturate) { return narrow_with(dt, f32, saturate, nullptr); }

uint16_t narrow_stochastic(isa::Dtype dt, uint32_t f32, bool saturate, uint16_t random_bits) {
  const uint32_t bits = random_bits;
  return narrow_with(dt, f32, saturate, &bits);
}

uint16_t narrow_scaled(isa::Dtype dt, uint32_t f32, int shift, bool saturate) {
  return narrow_with(dt, f32, saturate, nullptr, shift);
}

uint8_t mx_scale_code(isa::Dtype dt, uint32_t max_abs) {
  if (max_abs >= kF32Inf) return 0xFF;  // NaN or Inf in the block
  if (max_abs == 0) return 0;
  const uint32_t exp32 = max_abs >> kF32ManBits;
  const int log2_max = exp32 != 0 ? static_cast<int>(exp32) - kF32Bias
                                  : static_cast<int>(msb_index(max_abs)) - kF32Bias - static_cast<int>(kF32ManBits) + 1;
  const Layout l = layout(dt);
  const int emax = static_cast<int>((l.max_finite >> l.man_bits)) - l.bias;  // the largest normal binade
  const int code = log2_max - emax + 127;
  return static_cast<uint8_t>(code < 0 ? 0 : code > 254 ? 254 : code);
}

uint16_t sr_bits(uint32_t seed, uint64_t key) {
  // Three rounds of MurmurHash3's fmix32 (see fp_ops.h).
  uint32_t h = seed;
  for (const uint32_t word : {0u, static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)}) {
    h ^= word;
    h = (h ^ (h >> 16)) * 0x85EBCA6Bu;
    h = (h ^ (h >> 13)) * 0xC2B2AE35u;
    h ^= h >> 16;
  }
  return static_cast<uint16_t>(h >> 16);
}

uint32_t add(uint32_t a, uint32_t b) { return canonical(to_float(a) + to_float(b)); }

uint32_t mul(uint32_t a, uint32_t b) { return canonical(to_float(a) * to_float(b)); }

}  // namespace trnsim::model::fp
