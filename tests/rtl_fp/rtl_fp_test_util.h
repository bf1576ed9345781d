// Helpers shared by the RTL floating-point unit tests: seeds, NaN-aware comparison, mismatch reporting and an
// independent description of the narrow formats (field widths, values of patterns) used to build test points.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <utility>

#include "firmware/isa/dtype.h"
#include "firmware/golden/float_bits.h"
#include "tests/support/test_seed.h"

namespace trnsim::rtlfp_test {

using trnsim::test::test_seed;  // tests/support/test_seed.h

inline bool f32_is_nan(uint32_t x) { return (x & 0x7F800000u) == 0x7F800000u && (x & 0x007FFFFFu) != 0; }

/// Field layout of a narrow format, written out from the format definitions (BRIEF section 3, OCP OFP8).
struct NarrowFormat {
  isa::Dtype dt;
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee_specials;     ///< all-ones exponent is Inf/NaN (BF16, FP16, E5M2); E4M3: only S.1111.111 is NaN
  uint16_t max_finite;    ///< largest finite magnitude pattern
};

inline constexpr NarrowFormat kFormats[] = {
    {isa::Dtype::kBf16, 8, 7, 127, true, 0x7F7F},
    {isa::Dtype::kFp16, 5, 10, 15, true, 0x7BFF},
    {isa::Dtype::kFp8E4M3, 4, 3, 7, false, 0x7E},
    {isa::Dtype::kFp8E5M2, 5, 2, 15, true, 0x7B},
};

/// Value of a non-negative finite magnitude pattern of `f`, computed in double (exact for all these formats).
inline double narrow_value(const NarrowFormat& f, uint32_t mag) {
  const uint32_t e = mag >> f.man_bits;
  const uint32_t m = mag & ((1u << f.man_bits) - 1);
  if (e == 0) return std::ldexp(static_cast<double>(m), 1 - f.bias - f.man_bits);
  return std::ldexp(static_cast<double>((1u << f.man_bits) | m), static_cast<int>(e) - f.bias - f.man_bits);
}

/// True when `bits` (low 8 bits for FP8) is a NaN of `f`.
inline bool narrow_is_nan(const NarrowFormat& f, uint16_t bits) {
  const uint32_t total = 1 + f.exp_bits + f.man_bits;
  const uint32_t mag = bits & ((1u << (total - 1)) - 1);
  if (!f.ieee_specials) return mag == ((1u << (total - 1)) - 1);
  return (mag >> f.man_bits) == ((1u << f.exp_bits) - 1) && (mag & ((1u << f.man_bits) - 1)) != 0;
}

/// Random FP32 operands biased towards the cases that break floating-point units: ties and near-ties at a random
/// rounding position, subnormals, the overflow edge, exact and near cancellation, and special values.
class Fp32Gen {
 public:
  explicit Fp32Gen(uint64_t seed) : rng_(seed) {}

  uint64_t bits(int n) { return n == 0 ? 0 : rng_() >> (64 - n); }
  uint32_t uniform(uint32_t lo, uint32_t hi) { return lo + static_cast<uint32_t>(rng_() % (hi - lo + 1)); }

  /// A 23-bit mantissa: uniform, sparse, all-ones tails, or an exact tie (100..0) below a random position.
  uint32_t mantissa() {
    uint32_t m = static_cast<uint32_t>(bits(23));
    switch (bits(3)) {
      case 0: m &= static_cast<uint32_t>(bits(23) & bits(23)); break;  // few bits set
      case 1: {  // tie pattern: random head, then 1 followed by zeros
        const uint32_t tail = uniform(1, 23);
        m = (m & ~((1u << tail) - 1)) | (1u << (tail - 1));
        break;
      }
      case 2: {  // all ones (or all zeros) below a random position: just under / over a tie
        const uint32_t tail = uniform(1, 23);
        m = (bits(1) != 0) ? (m | ((1u << tail) - 1)) : (m & ~((1u << tail) - 1));
        break;
      }
      default: break;
    }
    return m & 0x7FFFFFu;
  }

  /// An FP32 value with biased exponent field `exp` (0..255), random sign and mantissa.
  uint32_t with_exp(uint32_t exp) {
    const uint32_t sign = static_cast<uint32_t>(bits(1)) << 31;  // separate statements: fixed draw order
    return sign | (exp << 23) | mantissa();
  }

  /// One of the special or boundary encodings (random sign).
  uint32_t special() {
    static constexpr uint32_t kSpecials[] = {
        0x00000000u, 0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x7F7FFFFFu, 0x00000001u,
        0x007FFFFFu, 0x00800000u, 0x3F800000u, 0x00400000u, 0x7F000000u, 0x00000003u, 0x3F7FFFFFu};
    const uint32_t v = kSpecials[rng_() % (sizeof kSpecials / sizeof kSpecials[0])];
    return v | (static_cast<uint32_t>(bits(1)) << 31);
  }

  /// A pair (a, b) for add and mul, drawn from a mix of interesting exponent relations.
  std::pair<uint32_t, uint32_t> pair() {
    switch (bits(4)) {
      case 0:
      case 1: return {static_cast<uint32_t>(bits(32)), static_cast<uint32_t>(bits(32))};
      case 2: return {with_exp(uniform(0, 2)), with_exp(uniform(0, 2))};                    // subnormal + subnormal
      case 3: return {with_exp(uniform(0, 2)), with_exp(uniform(0, 40))};                   // subnormal mix
      case 4: return {with_exp(uniform(250, 254)), with_exp(uniform(250, 254))};            // overflow edge (add)
      case 5: {  // product exponent near the subnormal range: ea + eb - 127 in [-26, 2]
        const uint32_t ea = uniform(1, 254);
        const int eb = static_cast<int>(uniform(101, 129)) - static_cast<int>(ea);
        return {with_exp(ea), with_exp(static_cast<uint32_t>(std::clamp(eb, 0, 254)))};
      }
      case 6: {  // product exponent near overflow: ea + eb - 127 in [252, 256]
        const uint32_t ea = uniform(125, 254);
        const int eb = static_cast<int>(uniform(379, 383)) - static_cast<int>(ea);
        return {with_exp(ea), with_exp(static_cast<uint32_t>(std::clamp(eb, 1, 254)))};
      }
      case 7:
      case 8: {  // near cancellation: b = -(a + small pattern delta), same or adjacent exponent
        const uint32_t a = with_exp(uniform(0, 254));
        const int width = static_cast<int>(uniform(0, 24));
        const int64_t delta_mag = static_cast<int64_t>(bits(width));
        const int64_t delta = bits(1) != 0 ? delta_mag : -delta_mag;
        const int64_t mag = std::clamp<int64_t>(static_cast<int64_t>(a & 0x7FFFFFFFu) + delta, 0, 0x7F7FFFFF);
        return {a, static_cast<uint32_t>(mag) | ((a & 0x80000000u) ^ 0x80000000u)};
      }
      case 9:
      case 10: {  // exponent difference 0..30 (alignment and sticky edges)
        const uint32_t ea = uniform(0, 254);
        const uint32_t d = uniform(0, 30);
        return {with_exp(ea), with_exp(ea >= d ? ea - d : 0)};
      }
      case 11: return {special(), static_cast<uint32_t>(bits(32))};
      case 12: return {static_cast<uint32_t>(bits(32)), special()};
      case 13: return {special(), special()};
      default: return {with_exp(uniform(100, 154)), with_exp(uniform(100, 154))};             // ordinary range
    }
  }

 private:
  std::mt19937_64 rng_;
};

/// Counts mismatches and reports the first few in full; the test fails at the end if any were seen.
class MismatchLog {
 public:
  explicit MismatchLog(std::string what, uint64_t max_reported = 12) : what_(std::move(what)), max_(max_reported) {}
  void add(const std::string& detail) {
    if (count_ < max_) ADD_FAILURE() << what_ << ": " << detail;
    ++count_;
  }
  uint64_t count() const { return count_; }
  void expect_none(uint64_t checked) const {
    EXPECT_EQ(count_, 0u) << what_ << ": " << count_ << " mismatches out of " << checked << " checks";
  }

 private:
  std::string what_;
  uint64_t max_;
  uint64_t count_ = 0;
};

}  // namespace trnsim::rtlfp_test
