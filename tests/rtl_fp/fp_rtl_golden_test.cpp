// RTL floating-point units (rtl/fp/, verilated) against the golden host library (firmware/golden/fp_golden.h),
// bit for bit; NaN results must be the canonical NaN on both sides.
//   - widening: every BF16 and FP16 pattern, every FP8 E4M3 and E5M2 pattern;
//   - narrowing to each dtype in both FP8 overflow modes: every FP32 pattern within 2 ulp of each rounding
//     boundary (midpoints between adjacent representable values, incl. subnormals, zero and the overflow
//     threshold) and of each representable value, +-Inf and NaNs, then 10 million biased random patterns;
//   - stochastic rounding (rule 9): generator and converter on random patterns, seeds and keys;
//   - FP32 add and mul on biased random pairs (subnormals, overflow edge, cancellation, ties, specials).
// Random tests print their seed; TRNSIM_SEED=<n> re-runs them with another one.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cosim/fp/fp_rtl.h"
#include "firmware/golden/fp_golden.h"
#include "tests/rtl_fp/rtl_fp_test_util.h"

namespace trnsim {
namespace {

using cosim::FpRtl;
using isa::Dtype;
using rtlfp_test::Fp32Gen;
using rtlfp_test::kFormats;
using rtlfp_test::MismatchLog;
using rtlfp_test::NarrowFormat;

const NarrowFormat& format(Dtype dt) {
  for (const NarrowFormat& f : kFormats) {
    if (f.dt == dt) return f;
  }
  throw std::logic_error("unknown dtype");
}

std::string name(Dtype dt) { return std::string(isa::dtype_name(dt)); }

// ---------------------------------------------------------------------------------------------------------------
// (a) Exhaustive widening.
// ---------------------------------------------------------------------------------------------------------------

void widen_all_patterns(Dtype dt) {
  FpRtl rtl;
  MismatchLog log("widen " + name(dt));
  const uint32_t count = isa::dtype_bits(dt) == 16 ? 65536u : 256u;
  for (uint32_t p = 0; p < count; ++p) {
    const auto bits = static_cast<uint16_t>(p);
    const uint32_t want = golden::widen_to_f32(dt, bits);
    const uint32_t got = rtl.widen(dt, bits);
    if (got != want) log.add(fmt::format("pattern {:04X}: golden {:08X}, RTL {:08X}", p, want, got));
  }
  log.expect_none(count);
}

TEST(RtlFpWidenVsGolden, AllBf16PatternsWidenExactly) { widen_all_patterns(Dtype::kBf16); }
TEST(RtlFpWidenVsGolden, AllFp16PatternsWidenExactly) { widen_all_patterns(Dtype::kFp16); }
TEST(RtlFpWidenVsGolden, AllFp8E4M3PatternsWidenExactly) { widen_all_patterns(Dtype::kFp8E4M3); }
TEST(RtlFpWidenVsGolden, AllFp8E5M2PatternsWidenExactly) { widen_all_patterns(Dtype::kFp8E5M2); }

// ---------------------------------------------------------------------------------------------------------------
// (b) Narrowing.
// ---------------------------------------------------------------------------------------------------------------

// Every FP32 pattern within 2 ulp of an anchor: each non-negative representable value of the target format and
// each midpoint between neighbours (the rounding boundaries), including the midpoint between the largest finite
// value and the next step beyond it (the overflow threshold). Both signs; then +-Inf and a spread of NaNs.
std::vector<uint32_t> boundary_points(const NarrowFormat& f) {
  std::vector<double> anchors;
  const double top_step = rtlfp_test::narrow_value(f, f.max_finite) - rtlfp_test::narrow_value(f, f.max_finite - 1u);
  for (uint32_t mag = 0; mag <= f.max_finite; ++mag) {
    const double v = rtlfp_test::narrow_value(f, mag);
    const double next = mag < f.max_finite ? rtlfp_test::narrow_value(f, mag + 1) : v + top_step;
    anchors.push_back(v);
    anchors.push_back((v + next) / 2);
  }
  std::vector<uint32_t> points;
  for (double a : anchors) {
    const float x = static_cast<float>(a);
    EXPECT_EQ(static_cast<double>(x), a) << "anchor not exact in FP32";  // self-check of the test
    const uint32_t u = golden::bits_from_float(x);
    for (int d = -2; d <= 2; ++d) {
      const int64_t p = static_cast<int64_t>(u) + d;
      if (p < 0 || p > 0x7F800000) continue;
      points.push_back(static_cast<uint32_t>(p));
      points.push_back(static_cast<uint32_t>(p) | 0x80000000u);
    }
  }
  for (uint32_t special : {0x7F800000u, 0x7F800001u, 0x7F800002u, 0x7FA00000u, 0x7FBFFFFFu, 0x7FC00000u,
                           0x7FC00001u, 0x7FFFFFFFu}) {
    points.push_back(special);
    points.push_back(special | 0x80000000u);
  }
  return points;
}

void narrow_boundaries(Dtype dt) {
  FpRtl rtl;
  MismatchLog log("narrow to " + name(dt));
  const std::vector<uint32_t> points = boundary_points(format(dt));
  uint64_t checked = 0;
  for (bool sat : {true, false}) {
    for (uint32_t x : points) {
      const uint16_t want = golden::narrow_from_f32(dt, x, sat);
      const uint16_t got = rtl.narrow(dt, x, sat);
      ++checked;
      if (got != want) log.add(fmt::format("{:08X} sat={}: golden {:04X}, RTL {:04X}", x, sat, want, got));
    }
  }
  std::cout << "[   INFO   ] " << checked << " boundary checks\n";
  log.expect_none(checked);
}

TEST(RtlFpNarrowVsGolden, Bf16WithinTwoUlpOfEveryRoundingBoundaryBothModes) { narrow_boundaries(Dtype::kBf16); }
TEST(RtlFpNarrowVsGolden, Fp16WithinTwoUlpOfEveryRoundingBoundaryBothModes) { narrow_boundaries(Dtype::kFp16); }
TEST(RtlFpNarrowVsGolden, Fp8E4M3WithinTwoUlpOfEveryRoundingBoundaryBothModes) {
  narrow_boundaries(Dtype::kFp8E4M3);
}
TEST(RtlFpNarrowVsGolden, Fp8E5M2WithinTwoUlpOfEveryRoundingBoundaryBothModes) {
  narrow_boundaries(Dtype::kFp8E5M2);
}

// Random FP32 patterns: a quarter uniform over all 2^32 patterns, an eighth special values, the rest with an
// exponent inside (or just outside) the range the target can represent, with tie-heavy mantissas.
// 2.5 million patterns per dtype (10 million in all), each narrowed in both FP8 modes.
constexpr int kRandomNarrowPerDtype = 2500000;

/// FP32 biased exponents from `below` binades under the target's smallest subnormal to 3 above its largest binade.
std::pair<uint32_t, uint32_t> exp_range(const NarrowFormat& f, int below) {
  const int emax = static_cast<int>(f.max_finite >> f.man_bits) - f.bias;
  const int emin_sub = 1 - f.bias - f.man_bits;
  return {static_cast<uint32_t>(std::clamp(127 + emin_sub - below, 0, 255)),
          static_cast<uint32_t>(std::clamp(127 + emax + 3, 0, 255))};
}

void narrow_random(Dtype dt, uint64_t default_seed) {
  const uint64_t seed = rtlfp_test::test_seed(default_seed);
  Fp32Gen gen(seed);
  const auto [exp_lo, exp_hi] = exp_range(format(dt), 3);
  FpRtl rtl;
  MismatchLog log("narrow to " + name(dt) + " (random)");
  for (int i = 0; i < kRandomNarrowPerDtype; ++i) {
    uint32_t x;
    const uint64_t kind = gen.bits(3);
    if (kind < 2) {
      x = static_cast<uint32_t>(gen.bits(32));
    } else if (kind == 2) {
      x = gen.special();
    } else {
      x = gen.with_exp(gen.uniform(exp_lo, exp_hi));
    }
    for (bool sat : {true, false}) {
      const uint16_t want = golden::narrow_from_f32(dt, x, sat);
      const uint16_t got = rtl.narrow(dt, x, sat);
      if (got != want) log.add(fmt::format("{:08X} sat={}: golden {:04X}, RTL {:04X}", x, sat, want, got));
    }
  }
  log.expect_none(2ull * kRandomNarrowPerDtype);
}

TEST(RtlFpNarrowVsGolden, Bf16OnRandomFp32BothModes) { narrow_random(Dtype::kBf16, 0xB16B16u); }
TEST(RtlFpNarrowVsGolden, Fp16OnRandomFp32BothModes) { narrow_random(Dtype::kFp16, 0xF16F16u); }
TEST(RtlFpNarrowVsGolden, Fp8E4M3OnRandomFp32BothModes) { narrow_random(Dtype::kFp8E4M3, 0xE4E4E4u); }
TEST(RtlFpNarrowVsGolden, Fp8E5M2OnRandomFp32BothModes) { narrow_random(Dtype::kFp8E5M2, 0xE5E5E5u); }

// The MX element formats (BRIEF rule 10; OCP MX v1.0 section 5.3): the MX dtype codes convert their elements,
// MXFP8 as FP8 and MXFP4 as FP4 E2M1 (no Inf or NaN: saturating, NaN -> +0). Every pattern widens as the golden
// says; narrowing near every value and rounding boundary (E2M1's listed by hand) and on random values, both modes.
TEST(RtlFpMxElementsVsGolden, EveryPatternWidensAndBoundariesAndRandomValuesNarrow) {
  FpRtl rtl;
  // E2M1: 1 sign, 2 exponent, 1 mantissa bit, bias 1, no specials, largest magnitude pattern 0x7 (6.0).
  constexpr NarrowFormat kE2M1{Dtype::kMxFp4, 2, 1, 1, false, 0x7};
  for (const Dtype dt : isa::kMxTypes) {
    MismatchLog log("MX element " + name(dt));
    const NarrowFormat& f = dt == Dtype::kMxFp4      ? kE2M1
                            : dt == Dtype::kMxFp8E4M3 ? format(Dtype::kFp8E4M3)
                                                      : format(Dtype::kFp8E5M2);
    const uint32_t patterns = dt == Dtype::kMxFp4 ? 16 : 256;
    for (uint32_t p = 0; p < patterns; ++p) {
      const uint32_t want = golden::widen_to_f32(dt, uint16_t(p)), got = rtl.widen(dt, uint16_t(p));
      if (got != want) log.add(fmt::format("widen {:02X}: golden {:08X}, RTL {:08X}", p, want, got));
    }
    std::vector<uint32_t> points = boundary_points(f);
    Fp32Gen gen(rtlfp_test::test_seed(0x3A3Au + uint64_t(dt)));
    for (int i = 0; i < 200000; ++i) {
      points.push_back(i % 4 == 0 ? static_cast<uint32_t>(gen.bits(32)) : gen.with_exp(gen.uniform(100, 140)));
    }
    for (const uint32_t x : points) {
      for (const bool sat : {true, false}) {
        const uint16_t want = golden::narrow_from_f32(dt, x, sat), got = rtl.narrow(dt, x, sat);
        if (got != want) log.add(fmt::format("narrow {:08X} sat={}: golden {:04X}, RTL {:04X}", x, sat, want, got));
      }
    }
    log.expect_none(patterns + 2 * points.size());
  }
}

// Stochastic rounding (BRIEF rule 9): the RTL's generator (trn_fp_sr_rng) and converter against the golden's, on
// the same random patterns with a random seed and element key each; 500,000 per dtype, both FP8 modes.
void narrow_stochastic_random(Dtype dt, uint64_t default_seed) {
  const uint64_t seed = rtlfp_test::test_seed(default_seed);
  Fp32Gen gen(seed);
  const auto [exp_lo, exp_hi] = exp_range(format(dt), 20);  // deep underflow too: fractions below 2^-16
  FpRtl rtl;
  MismatchLog log("stochastic narrow to " + name(dt));
  constexpr int kCount = 500000;
  for (int i = 0; i < kCount; ++i) {
    const uint64_t kind = gen.bits(3);
    const uint32_t x = kind == 0   ? static_cast<uint32_t>(gen.bits(32))
                       : kind == 1 ? gen.special()
                                   : gen.with_exp(gen.uniform(exp_lo, exp_hi));
    const auto sr_seed = static_cast<uint32_t>(gen.bits(32));
    const uint64_t key = gen.bits(64);
    for (bool sat : {true, false}) {
      const uint16_t want = golden::narrow_stochastic(dt, x, sat, golden::sr_random_bits(sr_seed, key));
      const uint16_t got = rtl.narrow_stochastic(dt, x, sat, sr_seed, key);
      if (got != want) {
        log.add(fmt::format("{:08X} sat={} seed {:08X} key {:016X}: golden {:04X}, RTL {:04X}", x, sat, sr_seed,
                            key, want, got));
      }
    }
  }
  log.expect_none(2ull * kCount);
}

TEST(RtlFpStochasticVsGolden, Bf16) { narrow_stochastic_random(Dtype::kBf16, 0x5B16u); }
TEST(RtlFpStochasticVsGolden, Fp16) { narrow_stochastic_random(Dtype::kFp16, 0x5F16u); }
TEST(RtlFpStochasticVsGolden, Fp8E4M3) { narrow_stochastic_random(Dtype::kFp8E4M3, 0x5E43u); }
TEST(RtlFpStochasticVsGolden, Fp8E5M2) { narrow_stochastic_random(Dtype::kFp8E5M2, 0x5E52u); }

// ---------------------------------------------------------------------------------------------------------------
// (d) FP32 add and mul.
// ---------------------------------------------------------------------------------------------------------------

constexpr int kArithPairs = 3000000;

TEST(RtlFpArithVsGolden, AddOnBiasedRandomPairs) {
  const uint64_t seed = rtlfp_test::test_seed(0xADDADDu);
  Fp32Gen gen(seed);
  FpRtl rtl;
  MismatchLog log("f32 add");
  for (int i = 0; i < kArithPairs; ++i) {
    const auto [a, b] = gen.pair();
    const uint32_t want = golden::f32_add(a, b);
    const uint32_t got = rtl.add(a, b);
    if (got != want) log.add(fmt::format("{:08X} + {:08X}: golden {:08X}, RTL {:08X}", a, b, want, got));
  }
  log.expect_none(kArithPairs);
}

TEST(RtlFpArithVsGolden, MulOnBiasedRandomPairs) {
  const uint64_t seed = rtlfp_test::test_seed(0x3A13A1u);
  Fp32Gen gen(seed);
  FpRtl rtl;
  MismatchLog log("f32 mul");
  for (int i = 0; i < kArithPairs; ++i) {
    const auto [a, b] = gen.pair();
    const uint32_t want = golden::f32_mul(a, b);
    const uint32_t got = rtl.mul(a, b);
    if (got != want) log.add(fmt::format("{:08X} * {:08X}: golden {:08X}, RTL {:08X}", a, b, want, got));
  }
  log.expect_none(kArithPairs);
}

// The scaled multiply (MX products, BRIEF rule 10): a * b * 2^scale rounded once, on biased random pairs with a
// scale anywhere in the unit's -512..511 (most within the MX range -254..254), and by hand: 1.5 * 2^-149 is a tie
// between the two smallest subnormals (even: 2 * 2^-149); 2^127 is the largest power of two, 2^128 overflows.
TEST(RtlFpArithVsGolden, ScaledMulRoundsOnceOnBiasedRandomPairs) {
  FpRtl rtl;
  EXPECT_EQ(rtl.mul_scaled(0x3FC00000u, 0x3F800000u, -149), 0x00000002u);
  EXPECT_EQ(rtl.mul_scaled(0x3F800000u, 0x3F800000u, 127), 0x7F000000u);
  EXPECT_EQ(rtl.mul_scaled(0x3F800000u, 0x3F800000u, 128), 0x7F800000u);
  EXPECT_EQ(rtl.mul_scaled(0x43E00000u, 0x43E00000u, -254), 0x00000000u) << "448^2 * 2^-254 < half of 2^-149";
  EXPECT_EQ(rtl.mul_scaled(0x00000001u, 0x7F7FFFFFu, 254), golden::f32_mul_scaled(0x00000001u, 0x7F7FFFFFu, 254));
  Fp32Gen gen(rtlfp_test::test_seed(0x5CA1Eu));
  MismatchLog log("f32 mul scaled");
  constexpr int kPairs = 1000000;
  for (int i = 0; i < kPairs; ++i) {
    const auto [a, b] = gen.pair();
    const int scale = gen.bits(2) == 0 ? int(gen.uniform(0, 1023)) - 512 : int(gen.uniform(0, 508)) - 254;
    const uint32_t want = golden::f32_mul_scaled(a, b, scale);
    const uint32_t got = rtl.mul_scaled(a, b, scale);
    if (got != want) {
      log.add(fmt::format("{:08X} * {:08X} * 2^{}: golden {:08X}, RTL {:08X}", a, b, scale, want, got));
    }
  }
  log.expect_none(kPairs);
}

}  // namespace
}  // namespace trnsim
