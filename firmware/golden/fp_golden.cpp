// Golden host floating-point conversions, defined by value (see fp_golden.h).
//
// Nothing here manipulates significand bits to round. A narrow encoding is decoded into the real number it stands
// for (computed exactly in double), and narrowing picks the nearest entry of a sorted table of every non-negative
// finite value of the target format. The code is meant to be checked by reading it, not by trusting shifts.
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/float_bits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace trnsim::golden {
namespace {

/// How a format encodes NaN and Inf.
enum class Specials {
  kIeee,     ///< exponent all-ones is Inf (mantissa 0) / NaN (BF16, FP16, E5M2)
  kAllOnes,  ///< no Inf; only S.1111.111 is NaN (E4M3)
  kNone,     ///< neither (FP4 E2M1: OCP MX v1.0 section 5.3.3)
};

/// Layout of one narrow format: 1 sign bit, `exp_bits` exponent bits, `man_bits` mantissa bits. The MX types use
/// their element format (rule 10: MXFP8 E4M3/E5M2 elements are OFP8's; MXFP4 elements are E2M1, bias 1).
struct Format {
  int exp_bits;
  int man_bits;
  int bias;
  Specials specials;
  uint16_t max_finite; ///< largest positive finite pattern
};

Format format_of(isa::Dtype dt) {
  switch (dt) {
    case isa::Dtype::kBf16: return {8, 7, 127, Specials::kIeee, 0x7F7F};
    case isa::Dtype::kFp16: return {5, 10, 15, Specials::kIeee, 0x7BFF};
    case isa::Dtype::kFp8E4M3:
    case isa::Dtype::kMxFp8E4M3: return {4, 3, 7, Specials::kAllOnes, 0x7E};
    case isa::Dtype::kFp8E5M2:
    case isa::Dtype::kMxFp8E5M2: return {5, 2, 15, Specials::kIeee, 0x7B};
    case isa::Dtype::kMxFp4: return {2, 1, 1, Specials::kNone, 0x7};
    case isa::Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  throw std::invalid_argument("golden: unknown dtype");
}

uint16_t sign_bit(const Format& f) { return static_cast<uint16_t>(1u << (f.exp_bits + f.man_bits)); }

uint16_t storage_mask(isa::Dtype dt) {
  if (dt == isa::Dtype::kMxFp4) return 0x0F;  // one E2M1 code per byte, in the low nibble
  return isa::dtype_bits(dt) == 8 ? 0xFF : 0xFFFF;
}

/// The value a non-negative pattern would have if its exponent field were an ordinary exponent: 2^(e-bias) *
/// 1.mantissa for e > 0, 2^(1-bias) * 0.mantissa for e = 0. For max_finite + 1 this is the "one past max" value
/// (2^(emax+1) in IEEE-style formats, 480 in E4M3). Exact in double: at most 11 significant bits.
double magnitude_of(const Format& f, uint16_t pattern) {
  const int e = pattern >> f.man_bits;
  const int m = pattern & ((1 << f.man_bits) - 1);
  if (e == 0) return std::ldexp(static_cast<double>(m), 1 - f.bias - f.man_bits);
  return std::ldexp(static_cast<double>((1 << f.man_bits) + m), e - f.bias - f.man_bits);
}

/// Sorted magnitudes of patterns 0 .. max_finite + 1 (the last entry is the virtual one past max). The index of
/// an entry is its encoding, because the encoding of non-negative values is monotonic in their magnitude.
struct ValueTable {
  Format format;
  std::vector<double> magnitude;

  explicit ValueTable(isa::Dtype dt) : format(format_of(dt)) {
    for (uint32_t p = 0; p <= static_cast<uint32_t>(format.max_finite) + 1; ++p) {
      magnitude.push_back(magnitude_of(format, static_cast<uint16_t>(p)));
    }
  }
};

const ValueTable& table_of(isa::Dtype dt) {
  static const ValueTable bf16(isa::Dtype::kBf16);
  static const ValueTable fp16(isa::Dtype::kFp16);
  static const ValueTable e4m3(isa::Dtype::kFp8E4M3);
  static const ValueTable e5m2(isa::Dtype::kFp8E5M2);
  static const ValueTable e2m1(isa::Dtype::kMxFp4);
  switch (dt) {
    case isa::Dtype::kBf16: return bf16;
    case isa::Dtype::kFp16: return fp16;
    case isa::Dtype::kFp8E4M3:
    case isa::Dtype::kMxFp8E4M3: return e4m3;
    case isa::Dtype::kFp8E5M2:
    case isa::Dtype::kMxFp8E5M2: return e5m2;
    case isa::Dtype::kMxFp4: return e2m1;
    case isa::Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  throw std::invalid_argument("golden: unknown dtype");
}

uint32_t canonicalize(float f) { return std::isnan(f) ? kF32CanonicalNan : bits_from_float(f); }

/// Result of an overflow (rounded magnitude past max finite, or an infinite input), per BRIEF rule 6.
uint16_t overflow_result(isa::Dtype dt, const Format& f, bool negative, bool saturate) {
  const uint16_t sign = negative ? sign_bit(f) : 0;
  const uint16_t inf = static_cast<uint16_t>((((1u << f.exp_bits) - 1) << f.man_bits));
  switch (dt) {
    case isa::Dtype::kBf16:
    case isa::Dtype::kFp16: return static_cast<uint16_t>(sign | inf);
    case isa::Dtype::kFp8E4M3:
    case isa::Dtype::kMxFp8E4M3: return saturate ? static_cast<uint16_t>(sign | f.max_finite) : kE4M3CanonicalNan;
    case isa::Dtype::kFp8E5M2:
    case isa::Dtype::kMxFp8E5M2:
      return static_cast<uint16_t>(sign | (saturate ? f.max_finite : inf));
    case isa::Dtype::kMxFp4: return static_cast<uint16_t>(sign | f.max_finite);  // no Inf: always saturates
    case isa::Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  throw std::invalid_argument("golden: unknown dtype");
}

/// How round_value picks between the two neighbours of a value that is not representable.
struct Rounding {
  bool stochastic = false;  ///< false: nearest, ties to even (rule 6); true: rule 9 with the random bits r
  uint32_t r = 0;
};

/// The pattern for the finite, non-NaN real number x: the nearest (rule 6 rounding: ties to the even encoding) or
/// a stochastic choice of the two neighbours (rule 9); overflow per overflow_result.
uint16_t round_value(isa::Dtype dt, double x, bool saturate, Rounding rounding = {}) {
  const ValueTable& table = table_of(dt);
  const Format& f = table.format;
  const bool negative = std::signbit(x);
  const uint16_t sign = negative ? sign_bit(f) : 0;
  // Nearest table entry to |x|: `hi` is the first entry above |x|, `lo` the one before it.
  const double a = std::fabs(x);
  const std::vector<double>& v = table.magnitude;
  const auto above = std::upper_bound(v.begin(), v.end(), a);
  size_t chosen;
  if (above == v.end()) {
    chosen = v.size() - 1;  // at or past one-past-max: overflow
  } else {
    const size_t hi = static_cast<size_t>(above - v.begin());
    const size_t lo = hi - 1;  // v[0] = 0 <= a, so hi >= 1
    if (v[lo] == a) {
      chosen = lo;
    } else if (rounding.stochastic) {
      // (a - lo) is exact in double (a has 24 significant bits, lo at most 11, at most 2^-149 apart in scale) and
      // hi - lo is a power of two (adjacent values of a binary format), so f * 2^16 and its floor are exact.
      const double f = (a - v[lo]) / (v[hi] - v[lo]);
      const auto fraction = static_cast<uint32_t>(std::floor(std::ldexp(f, isa::kSrBits)));
      chosen = fraction + rounding.r >= (1u << isa::kSrBits) ? hi : lo;
    } else {
      const double mid = (v[lo] + v[hi]) / 2;  // exact: both have few significant bits
      if (a < mid) {
        chosen = lo;
      } else if (a > mid) {
        chosen = hi;
      } else {
        chosen = (lo % 2 == 0) ? lo : hi;  // tie: even mantissa LSB (the index is the encoding)
      }
    }
  }
  if (chosen > f.max_finite) return overflow_result(dt, f, negative, saturate);
  return static_cast<uint16_t>(sign | chosen);
}

}  // namespace

uint16_t canonical_nan(isa::Dtype dt) {
  switch (dt) {
    case isa::Dtype::kBf16: return kBf16CanonicalNan;
    case isa::Dtype::kFp16: return kFp16CanonicalNan;
    case isa::Dtype::kFp8E4M3: return kE4M3CanonicalNan;
    case isa::Dtype::kFp8E5M2: return kE5M2CanonicalNan;
    case isa::Dtype::kMxFp8E4M3: return kE4M3CanonicalNan;
    case isa::Dtype::kMxFp8E5M2: return kE5M2CanonicalNan;
    case isa::Dtype::kMxFp4:  // E2M1 has no NaN
    case isa::Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  throw std::invalid_argument("golden: dtype has no NaN");
}

bool is_nan(isa::Dtype dt, uint16_t bits) {
  const Format f = format_of(dt);
  const uint16_t magnitude = static_cast<uint16_t>(bits & storage_mask(dt) & ~sign_bit(f));
  const uint16_t exp_all_ones = static_cast<uint16_t>(((1u << f.exp_bits) - 1) << f.man_bits);
  switch (f.specials) {
    case Specials::kIeee: return magnitude > exp_all_ones;  // exponent all ones and mantissa non-zero
    case Specials::kAllOnes: return magnitude == 0x7F;      // E4M3: S.1111.111 only
    case Specials::kNone: break;
  }
  return false;
}

uint32_t widen_to_f32(isa::Dtype dt, uint16_t bits) {
  const Format f = format_of(dt);
  bits = static_cast<uint16_t>(bits & storage_mask(dt));
  if (is_nan(dt, bits)) return kF32CanonicalNan;
  const bool negative = (bits & sign_bit(f)) != 0;
  const uint16_t magnitude = static_cast<uint16_t>(bits & ~sign_bit(f));
  double value;
  if (magnitude > f.max_finite) {
    value = std::numeric_limits<double>::infinity();  // only IEEE-style formats get here (E4M3 has no Inf)
  } else {
    value = magnitude_of(f, magnitude);
  }
  // Every narrow value is an FP32 value (at most 11 significant bits, exponents inside FP32's range), so the
  // conversion to float is exact. copysign keeps the sign of zero.
  return bits_from_float(static_cast<float>(std::copysign(value, negative ? -1.0 : 1.0)));
}

uint16_t narrow_from_f32(isa::Dtype dt, uint32_t f32, bool saturate) {
  const Format f = format_of(dt);
  const float x = float_from_bits(f32);
  if (std::isnan(x)) return dt == isa::Dtype::kMxFp4 ? 0 : canonical_nan(dt);  // E2M1 has no NaN: +0
  if (std::isinf(x)) return overflow_result(dt, f, std::signbit(x), saturate);
  return round_value(dt, static_cast<double>(x), saturate);
}

uint16_t narrow_scaled(isa::Dtype dt, uint32_t f32, int shift, bool saturate) {
  const float x = float_from_bits(f32);
  if (!std::isfinite(x)) return narrow_from_f32(dt, f32, saturate);
  // x * 2^-shift is exact in double for |shift| <= 300: FP32 values span 2^-149 .. 2^128.
  if (shift < -300 || shift > 300) throw std::invalid_argument("golden::narrow_scaled: shift out of -300..300");
  return round_value(dt, std::ldexp(static_cast<double>(x), -shift), saturate);
}

uint16_t sr_random_bits(uint32_t seed, uint64_t key) {
  const auto fmix32 = [](uint32_t h) {
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
  };
  const uint32_t h = fmix32(fmix32(fmix32(seed) ^ static_cast<uint32_t>(key)) ^ static_cast<uint32_t>(key >> 32));
  return static_cast<uint16_t>(h >> (32 - isa::kSrBits));
}

uint16_t narrow_stochastic(isa::Dtype dt, uint32_t f32, bool saturate, uint16_t r) {
  const float x = float_from_bits(f32);
  if (!std::isfinite(x)) return narrow_from_f32(dt, f32, saturate);
  return round_value(dt, static_cast<double>(x), saturate, Rounding{true, r});
}

uint32_t f32_add(uint32_t a, uint32_t b) { return canonicalize(float_from_bits(a) + float_from_bits(b)); }

uint32_t f32_mul(uint32_t a, uint32_t b) { return canonicalize(float_from_bits(a) * float_from_bits(b)); }

uint32_t f32_mul_scaled(uint32_t a, uint32_t b, int scale) {
  if (scale < -600 || scale > 600) throw std::invalid_argument("golden::f32_mul_scaled: scale out of -600..600");
  const double p = std::ldexp(static_cast<double>(float_from_bits(a)) * static_cast<double>(float_from_bits(b)),
                              scale);
  return canonicalize(static_cast<float>(p));
}

}  // namespace trnsim::golden
