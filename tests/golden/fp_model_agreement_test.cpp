// The model's bit-level conversions (model/fp) against the golden by-value ones (firmware/golden): two independent
// implementations that must agree on every bit.
//  - widening: every BF16/FP16 pattern (65536) and every FP8 pattern (256);
//  - narrowing, for each dtype and both FP8 overflow modes: every FP32 pattern within 2 ulp of each rounding
//    boundary (the midpoints between adjacent representable values, including the subnormal range, zero and the
//    overflow threshold) and of each representable value, the specials, and 10 million random FP32 patterns
//    (seeded; the seed is printed and can be set with the TRNSIM_SEED environment variable);
//  - add/mul: random FP32 pairs (the two implementations use the same host arithmetic, so this mainly checks NaN
//    canonicalization).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "firmware/golden/fp_golden.h"
#include "model/fp/fp_ops.h"
#include "tests/support/test_seed.h"

namespace trnsim {
namespace isa {
/// Lets GoogleTest print a dtype parameter by name.
void PrintTo(Dtype dt, std::ostream* os) { *os << dtype_name(dt); }
}  // namespace isa

namespace {

using isa::Dtype;

constexpr long kRandomPatterns = 10'000'000;

// One seed per test process (the tests below share it), TRNSIM_SEED / --gtest_random_seed to change it.
uint64_t test_seed() {
  static const uint64_t seed = test::test_seed(0x7E57F00Du);
  return seed;
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

/// Largest positive finite pattern and the "one past max" value of each narrow dtype (BRIEF rule 1, OCP OFP8).
struct Limits {
  uint16_t max_finite;
  double one_past_max;  ///< 2^(emax+1), or 480 for E4M3 (whose 1111.111 is NaN)
  int min_exp;          ///< exponent of the smallest subnormal
  int max_exp;          ///< exponent of the largest normal binade
};

Limits limits_of(Dtype dt) {
  switch (dt) {
    case Dtype::kBf16: return {0x7F7F, std::ldexp(1.0, 128), -133, 127};
    case Dtype::kFp16: return {0x7BFF, 65536.0, -24, 15};
    case Dtype::kFp8E4M3:
    case Dtype::kMxFp8E4M3: return {0x7E, 480.0, -9, 8};  // MX types: their element format (OCP MX v1.0 5.3)
    case Dtype::kFp8E5M2:
    case Dtype::kMxFp8E5M2: return {0x7B, 65536.0, -16, 15};
    case Dtype::kMxFp4: return {0x7, 8.0, -1, 2};  // E2M1: max 6, smallest subnormal 0.5
    case Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  return {0, 0, 0, 0};
}

/// Compares model and golden narrowing of `f32` in both modes; counts and reports the first mismatches.
class NarrowChecker {
 public:
  explicit NarrowChecker(Dtype dt) : dt_(dt) {}

  void check(uint32_t f32) {
    for (const bool sat : {true, false}) {
      const uint16_t want = golden::narrow_from_f32(dt_, f32, sat);
      const uint16_t got = model::fp::narrow(dt_, f32, sat);
      ++checked_;
      if (got != want && ++mismatches_ <= 10) {
        ADD_FAILURE() << isa::dtype_name(dt_) << (sat ? " sat" : " non-sat") << " narrow(0x" << std::hex << f32
                      << "): model 0x" << got << ", golden 0x" << want;
      }
    }
  }

  long mismatches() const { return mismatches_; }
  long checked() const { return checked_; }

 private:
  Dtype dt_;
  long mismatches_ = 0;
  long checked_ = 0;
};

void check_all_pattern_neighbourhoods(Dtype dt, NarrowChecker& checker) {
  const Limits lim = limits_of(dt);
  // Magnitudes of 0 .. max finite (decoded by golden widening, itself checked against TestFloat and hand values)
  // plus the virtual one past max.
  std::vector<double> values;
  for (uint32_t p = 0; p <= lim.max_finite; ++p) {
    const uint32_t b = golden::widen_to_f32(dt, static_cast<uint16_t>(p));
    float f;
    std::memcpy(&f, &b, sizeof f);
    values.push_back(f);
  }
  values.push_back(lim.one_past_max);
  auto around = [&](double magnitude) {
    const float f = static_cast<float>(magnitude);  // exact: midpoints have at most 12 significant bits
    ASSERT_EQ(static_cast<double>(f), magnitude);
    const uint32_t b = bits_of(f);
    for (int d = -2; d <= 2; ++d) {
      const int64_t p = static_cast<int64_t>(b) + d;
      if (p < 0 || p > 0x7F800000) continue;  // below zero or past Inf: those patterns are covered elsewhere
      checker.check(static_cast<uint32_t>(p));
      checker.check(static_cast<uint32_t>(p) | 0x80000000u);
    }
  };
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    around(values[i]);                              // the representable value itself (and zero)
    around((values[i] + values[i + 1]) / 2);        // the rounding boundary above it (incl. overflow threshold)
  }
  if (lim.one_past_max < 3.4e38) around(lim.one_past_max);  // 2^128 (BF16) is not an FP32 value
  // Specials: +-Inf, NaNs with assorted payloads, FP32 max and min.
  for (const uint32_t s : {0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu, 0x7F7FFFFFu, 0x00000001u,
                           0x007FFFFFu, 0x00800000u}) {
    checker.check(s);
    checker.check(s | 0x80000000u);
  }
}

void check_random(Dtype dt, NarrowChecker& checker) {
  const Limits lim = limits_of(dt);
  std::mt19937_64 rng(test_seed() ^ (static_cast<uint64_t>(dt) * 0x9E3779B97F4A7C15ull));
  // Half uniform over all 2^32 patterns, half with the exponent drawn from the format's range +-3 binades (where
  // the interesting rounding happens; uniform patterns mostly over- or underflow FP8).
  std::uniform_int_distribution<int> exp_dist(lim.min_exp - 3 + 127, lim.max_exp + 3 + 127);
  for (long i = 0; i < kRandomPatterns; ++i) {
    uint32_t b = static_cast<uint32_t>(rng());
    if (i & 1) {
      const int e = std::max(0, std::min(255, exp_dist(rng)));
      b = (b & 0x807FFFFFu) | (static_cast<uint32_t>(e) << 23);
    }
    checker.check(b);
  }
}

class NarrowAgreement : public ::testing::TestWithParam<Dtype> {};

TEST_P(NarrowAgreement, BoundaryNeighbourhoods) {
  NarrowChecker checker(GetParam());
  check_all_pattern_neighbourhoods(GetParam(), checker);
  EXPECT_EQ(checker.mismatches(), 0) << "of " << checker.checked();
  RecordProperty("checked", static_cast<int>(checker.checked()));
}

TEST_P(NarrowAgreement, RandomPatterns) {
  NarrowChecker checker(GetParam());
  check_random(GetParam(), checker);
  EXPECT_EQ(checker.mismatches(), 0) << "of " << checker.checked() << " (TRNSIM_SEED=" << test_seed() << ")";
}

/// Encodings of a dtype's element: 16 for MXFP4 (E2M1), 256 for the 8-bit types, 65536 for the 16-bit ones.
uint32_t pattern_count(Dtype dt) { return dt == Dtype::kMxFp4 ? 16 : isa::dtype_bits(dt) == 8 ? 256 : 65536; }

TEST_P(NarrowAgreement, WidenEveryPattern) {
  const Dtype dt = GetParam();
  const uint32_t count = pattern_count(dt);
  int mismatches = 0;
  for (uint32_t p = 0; p < count; ++p) {
    const uint32_t want = golden::widen_to_f32(dt, static_cast<uint16_t>(p));
    const uint32_t got = model::fp::widen(dt, static_cast<uint16_t>(p));
    if (got != want && ++mismatches <= 10) {
      ADD_FAILURE() << isa::dtype_name(dt) << " widen(0x" << std::hex << p << "): model 0x" << got << ", golden 0x"
                    << want;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(NarrowAgreement, WidenThenNarrowIsIdentity) {
  // Every non-NaN narrow value is representable in FP32, so narrowing it back must give the same pattern.
  const Dtype dt = GetParam();
  const uint32_t count = pattern_count(dt);
  int mismatches = 0;
  for (uint32_t p = 0; p < count; ++p) {
    if (golden::is_nan(dt, static_cast<uint16_t>(p))) continue;
    const uint32_t f32 = golden::widen_to_f32(dt, static_cast<uint16_t>(p));
    for (const bool sat : {true, false}) {
      const bool e5m2 = dt == Dtype::kFp8E5M2 || dt == Dtype::kMxFp8E5M2;
      if (e5m2 && sat && (p & 0x7F) == 0x7C) continue;  // saturating: Inf -> max
      const uint16_t g = golden::narrow_from_f32(dt, f32, sat);
      const uint16_t m = model::fp::narrow(dt, f32, sat);
      if ((g != p || m != p) && ++mismatches <= 10) {
        ADD_FAILURE() << isa::dtype_name(dt) << " round trip 0x" << std::hex << p << ": golden 0x" << g
                      << ", model 0x" << m;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, NarrowAgreement, ::testing::ValuesIn(isa::kAllDtypes),
                         [](const ::testing::TestParamInfo<Dtype>& info) {
                           return std::string(isa::dtype_name(info.param));
                         });
// The MX element formats (rule 10): E4M3 and E5M2 as OFP8, and E2M1, which neither golden nor model had before.
INSTANTIATE_TEST_SUITE_P(MxElements, NarrowAgreement, ::testing::ValuesIn(isa::kMxTypes),
                         [](const ::testing::TestParamInfo<Dtype>& info) {
                           return std::string(isa::dtype_name(info.param));
                         });

TEST(ArithAgreement, RandomAddMul) {
  std::mt19937_64 rng(test_seed());
  long mismatches = 0;
  for (long i = 0; i < 1'000'000; ++i) {
    const uint32_t a = static_cast<uint32_t>(rng());
    const uint32_t b = static_cast<uint32_t>(rng());
    if (golden::f32_add(a, b) != model::fp::add(a, b)) ++mismatches;
    if (golden::f32_mul(a, b) != model::fp::mul(a, b)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
  // The specials that produce NaN must give the canonical NaN in both.
  EXPECT_EQ(model::fp::add(0x7F800000u, 0xFF800000u), 0x7FC00000u);
  EXPECT_EQ(model::fp::mul(0x80000000u, 0xFF800000u), 0x7FC00000u);
  EXPECT_EQ(model::fp::add(0xFF812345u, 0u), 0x7FC00000u);
}

}  // namespace
}  // namespace trnsim
