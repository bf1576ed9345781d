// Stochastic rounding (BRIEF section 3 rule 9; docs/numerics.md "Stochastic rounding"): the golden against
// hand-worked values, the model (model/fp) against the golden bit for bit, and the statistics the rule promises.
//  - generator: hand values computed outside the project (Python, from the published fmix32 constants);
//  - golden narrowing: values whose fraction f of an ULP is worked out by hand, at the random bits where the
//    result flips, in the normal, subnormal and overflow ranges, with specials;
//  - model = golden on random FP32 x random bits for every narrow dtype and both FP8 modes, and on the generator;
//  - statistics on the model: the round-up frequency matches F / 2^16, the mean converges to the value, specials
//    and exact values do what round-to-nearest does; determinism per seed, independence across seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "firmware/golden/float_bits.h"
#include "firmware/golden/fp_golden.h"
#include "model/fp/fp_ops.h"
#include "tests/support/test_seed.h"

namespace trnsim {
namespace {

using isa::Dtype;

using golden::bits_from_float;
using golden::float_from_bits;

constexpr Dtype kSrTypes[] = {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8E4M3, Dtype::kFp8E5M2};

// ---- the generator -----------------------------------------------------------------------------------------

TEST(SrGenerator, GoldenMatchesValuesComputedOutsideTheProject) {
  // python3: fmix(h): h ^= h>>16; h *= 0x85EBCA6B; h ^= h>>13; h *= 0xC2B2AE35; h ^= h>>16 (mod 2^32);
  // bits = fmix(fmix(fmix(seed) ^ lo32(key)) ^ hi32(key)) >> 16.
  EXPECT_EQ(golden::sr_random_bits(0, 0), 0x0000);  // fmix32(0) = 0
  EXPECT_EQ(golden::sr_random_bits(1, 0), 0x5716);
  EXPECT_EQ(golden::sr_random_bits(0, 1), 0x2FEF);
  EXPECT_EQ(golden::sr_random_bits(7, (uint64_t{1} << 56) | 0x1000), 0x96D9);  // SBUF (space 1), byte 0x1000
  EXPECT_EQ(golden::sr_random_bits(0xDEADBEEFu, 0x123456789ABCDEF0ull), 0x1131);
}

TEST(SrGenerator, ModelMatchesGoldenOnRandomSeedsAndKeys) {
  std::mt19937_64 rng(test::test_seed(0x5EED5EEDu));
  int mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    const auto seed = static_cast<uint32_t>(rng());
    const uint64_t key = rng();
    if (model::fp::sr_bits(seed, key) != golden::sr_random_bits(seed, key) && ++mismatches <= 5) {
      ADD_FAILURE() << "seed " << seed << " key " << key << ": model " << model::fp::sr_bits(seed, key)
                    << ", golden " << golden::sr_random_bits(seed, key);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(SrGenerator, SameSeedSameBitsOtherSeedsOtherBits) {
  int equal_across_seeds = 0;
  for (uint64_t key = 0; key < 10000; ++key) {
    EXPECT_EQ(model::fp::sr_bits(42, key), model::fp::sr_bits(42, key));
    equal_across_seeds += model::fp::sr_bits(42, key) == model::fp::sr_bits(43, key);
  }
  // Independent 16-bit values agree with probability 2^-16: 10,000 keys expect 0.15 equal; 5 or more would be a
  // correlation (Poisson tail < 1e-6).
  EXPECT_LT(equal_across_seeds, 5);
}

// ---- golden narrowing, by hand ----------------------------------------------------------------------------

TEST(SrGolden, FlipsAtTheRandomBitsTheFractionSays) {
  // BF16, 1 + 2^-9: between 1.0 (0x3F80) and 1 + 2^-7 (0x3F81), f = 1/4, F = 16384: hi iff r >= 65536 - 16384.
  const uint32_t x = bits_from_float(1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, x, true, 49151), 0x3F80);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, x, true, 49152), 0x3F81);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, x | 0x80000000u, true, 49152), 0xBF81);  // sign kept
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, x | 0x80000000u, true, 0), 0xBF80);
  // FP16, 1 + 3 * 2^-13: between 1 (0x3C00) and 1 + 2^-10 (0x3C01), f = 3/8, F = 24576.
  const uint32_t y = bits_from_float(1.0f + 3 * std::ldexp(1.0f, -13));
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp16, y, true, 40959), 0x3C00);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp16, y, true, 40960), 0x3C01);
  // E5M2, 1.1 (FP32 0x3F8CCCCD): between 1 (0x3C) and 1.25 (0x3D); f = 0.1 / 0.25 = 0.4000000238...,
  // F = floor(0.4000000238 * 65536) = 26214.
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E5M2, 0x3F8CCCCDu, true, 65536 - 26214 - 1), 0x3C);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E5M2, 0x3F8CCCCDu, true, 65536 - 26214), 0x3D);
}

TEST(SrGolden, ExactValuesStayWhateverTheBits) {
  for (const uint16_t r : {0, 1, 32768, 65535}) {
    EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, bits_from_float(1.0f), true, r), 0x3F80);
    EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E4M3, bits_from_float(448.0f), true, r), 0x7E);
    EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp16, 0x80000000u, true, r), 0x8000);  // -0
  }
}

TEST(SrGolden, SubnormalsAndTheTruncatedFraction) {
  // FP16: 2^-25 is half the smallest subnormal 2^-24 (0x0001): f = 1/2.
  const uint32_t half_min = bits_from_float(std::ldexp(1.0f, -25));
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp16, half_min, true, 32767), 0x0000);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp16, half_min, true, 32768), 0x0001);
  // BF16: 2^-149 (FP32's smallest subnormal) is 2^-16 of BF16's smallest subnormal 2^-133: F = 1.
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, 0x00000001u, true, 65534), 0x0000);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, 0x00000001u, true, 65535), 0x0001);
  // E4M3: 2^-149 is 2^-140 of the smallest subnormal 2^-9: F = 0, never rounds up (the 16-bit truncation).
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E4M3, 0x00000001u, true, 65535), 0x00);
}

TEST(SrGolden, OverflowAndSpecialsFollowRuleSix) {
  // E4M3 464 lies halfway between max 448 (0x7E) and the one past it (480): hi is an overflow.
  const uint32_t x = bits_from_float(464.0f);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E4M3, x, true, 32767), 0x7E);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E4M3, x, true, 32768), 0x7E);   // saturating
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E4M3, x, false, 32767), 0x7E);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E4M3, x, false, 32768), 0x7F);  // OCP: NaN
  // BF16 0x7F7F8000: halfway between max 0x7F7F and 2^128.
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, 0x7F7F8000u, true, 32767), 0x7F7F);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, 0x7F7F8000u, true, 32768), 0x7F80);
  // At or past the one past max: always the overflow result. Infinities and NaN: rule 6.
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E5M2, bits_from_float(65536.0f), false, 0), 0x7C);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E5M2, bits_from_float(-65536.0f), true, 0), 0xFB);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kBf16, 0xFF800000u, true, 12345), 0xFF80);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E5M2, 0x7F800000u, true, 12345), 0x7B);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp16, 0x7F800001u, true, 12345), golden::kFp16CanonicalNan);
  EXPECT_EQ(golden::narrow_stochastic(Dtype::kFp8E4M3, 0xFFC00000u, false, 1), golden::kE4M3CanonicalNan);
}

// ---- model = golden -----------------------------------------------------------------------------------------

class SrAgreement : public ::testing::TestWithParam<Dtype> {};

TEST_P(SrAgreement, ModelMatchesGoldenOnRandomValuesAndBits) {
  const Dtype dt = GetParam();
  std::mt19937_64 rng(test::test_seed(0x5A5A0000u) ^ static_cast<uint64_t>(dt));
  // Half the patterns uniform, half with an exponent near the format's range (where the rounding happens), and
  // random bits of every kind: uniform, and the two values next to the flip point 65536 - F.
  std::uniform_int_distribution<uint32_t> exp_dist(127 - 30, 127 + 20);
  int mismatches = 0;
  long checked = 0;
  for (int i = 0; i < 1000000; ++i) {
    uint32_t x = static_cast<uint32_t>(rng());
    if (i & 1) x = (x & 0x807FFFFFu) | (exp_dist(rng) << 23);
    const auto r = static_cast<uint16_t>(rng());
    for (const bool sat : {true, false}) {
      const uint16_t want = golden::narrow_stochastic(dt, x, sat, r);
      const uint16_t got = model::fp::narrow_stochastic(dt, x, sat, r);
      ++checked;
      if (got != want && ++mismatches <= 10) {
        ADD_FAILURE() << isa::dtype_name(dt) << " x=0x" << std::hex << x << " r=0x" << r << " sat=" << sat
                      << ": model 0x" << got << ", golden 0x" << want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << checked;
}

// ---- statistics -----------------------------------------------------------------------------------------------

/// Rounds `x` stochastically `n` times on the model, with the generator's bits for keys 0..n-1 under `seed`;
/// returns how often it rounded to `hi_pattern` and the mean of the results (as doubles).
struct Tally {
  long hi = 0;
  double mean = 0;
};
Tally tally(Dtype dt, uint32_t x, uint16_t hi_pattern, long n, uint32_t seed) {
  Tally t;
  double sum = 0;
  for (long k = 0; k < n; ++k) {
    const uint16_t p = model::fp::narrow_stochastic(dt, x, true, model::fp::sr_bits(seed, uint64_t(k)));
    t.hi += p == hi_pattern;
    sum += float_from_bits(golden::widen_to_f32(dt, p));
  }
  t.mean = sum / double(n);
  return t;
}

TEST(SrStatistics, RoundUpFrequencyMatchesTheDiscardedFraction) {
  // BF16 values 1 + j/8 ULP (ULP 2^-7) for j = 1..7: P(hi) = j/8 exactly (F = j * 8192). 200,000 draws each: the
  // frequency's standard deviation is <= sqrt(0.25 / 200000) = 0.0011; the bound is 5 of them.
  constexpr long kN = 200000;
  for (int j = 1; j <= 7; ++j) {
    const uint32_t x = bits_from_float(1.0f + float(j) * std::ldexp(1.0f, -10));
    const Tally t = tally(Dtype::kBf16, x, 0x3F81, kN, 2026);
    const double p = double(j) / 8, sd = std::sqrt(p * (1 - p) / kN);
    EXPECT_NEAR(double(t.hi) / kN, p, 5 * sd) << "j = " << j;
  }
}

TEST(SrStatistics, MeanOfManyRoundingsConvergesToTheValue) {
  // E4M3 and FP16 values with fractions that are not multiples of 2^-16 as well: the mean of n roundings is
  // within 5 standard deviations (ULP * sqrt(f (1 - f) / n) <= ULP / (2 sqrt n)) plus the truncation bias
  // (< 2^-16 ULP) of the value itself. Round-to-nearest would be off by up to half an ULP.
  constexpr long kN = 200000;
  struct Case {
    Dtype dt;
    float x;
    float ulp;
  };
  for (const Case c : {Case{Dtype::kFp8E4M3, 1.3f, 0.125f}, Case{Dtype::kFp8E4M3, -0.0421f, 1.0f / 256},
                       Case{Dtype::kFp16, 3.14159265f, 1.0f / 512}, Case{Dtype::kBf16, 1e-3f, std::ldexp(1.0f, -17)}}) {
    const Tally t = tally(c.dt, bits_from_float(c.x), 0xFFFF, kN, 99);
    const double bound = 5 * c.ulp / (2 * std::sqrt(double(kN))) + c.ulp * std::ldexp(1.0, -16);
    EXPECT_NEAR(t.mean, double(c.x), bound) << isa::dtype_name(c.dt) << " " << c.x;
  }
}

TEST(SrStatistics, SpecialsAndLargeValuesRoundAsRoundToNearestDoes) {
  // NaN, +-Inf and values at or past the one past max give rule 6's result whatever the bits.
  for (const Dtype dt : kSrTypes) {
    for (const uint32_t x : {0x7FC00000u, 0xFF800001u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu, 0xFF000000u}) {
      for (const bool sat : {true, false}) {
        const uint16_t rne = golden::narrow_from_f32(dt, x, sat);
        for (uint64_t k = 0; k < 64; ++k) {
          ASSERT_EQ(model::fp::narrow_stochastic(dt, x, sat, model::fp::sr_bits(5, k)), rne)
              << isa::dtype_name(dt) << " x=0x" << std::hex << x;
        }
      }
    }
  }
}

TEST(SrStatistics, ResultIsAlwaysOneOfTheTwoNeighbours) {
  // Whatever the bits, the result is the value rounded toward zero or away from it: RNE's result or its
  // neighbour (checked on the patterns: truncation gives lo; lo + 1 is hi).
  std::mt19937_64 rng(test::test_seed(0xAB1Eu));
  for (const Dtype dt : kSrTypes) {
    for (int i = 0; i < 100000; ++i) {
      const uint32_t x = (static_cast<uint32_t>(rng()) & 0x807FFFFFu) | ((127u - 10 + uint32_t(rng() % 20)) << 23);
      const uint16_t lo = golden::narrow_stochastic(dt, x, true, 0);        // F + 0 < 2^16 unless exact: lo
      const uint16_t any = golden::narrow_stochastic(dt, x, true, static_cast<uint16_t>(rng()));
      ASSERT_TRUE(any == lo || any == lo + 1) << isa::dtype_name(dt) << " x=0x" << std::hex << x;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(NarrowTypes, SrAgreement, ::testing::ValuesIn(kSrTypes),
                         [](const ::testing::TestParamInfo<Dtype>& info) {
                           return std::string(isa::dtype_name(info.param));
                         });

}  // namespace
}  // namespace trnsim
