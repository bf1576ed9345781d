// RTL floating-point units (rtl/fp/, verilated) against references that do not involve the golden library:
//   - the Berkeley TestFloat vectors, read in place from TRNSIM_VECTORS_DIR (result bits; any NaN matches any
//     NaN, and the RTL must write the canonical NaN); skipped when that directory was not found at configure time;
//   - field cases whose expected bits are written here by hand (from the issue and from IEEE 754 / OCP OFP8);
//   - the host's own IEEE binary32 SSE arithmetic (an independent implementation) on random operand pairs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cosim/fp/fp_rtl.h"
#include "tests/rtl_fp/rtl_fp_test_util.h"
#include "tools/testfloat/testfloat_file.h"

#if !defined(TRNSIM_VECTORS_DIR) || !defined(TRNSIM_HAVE_VECTORS)
#error "TRNSIM_VECTORS_DIR and TRNSIM_HAVE_VECTORS must be defined by the build (tests/rtl_fp/CMakeLists.txt)"
#endif

namespace trnsim {
namespace {

using cosim::FpRtl;
using isa::Dtype;
using rtlfp_test::f32_is_nan;
using rtlfp_test::MismatchLog;

constexpr Dtype kBf16 = Dtype::kBf16;
constexpr Dtype kFp16 = Dtype::kFp16;
constexpr Dtype kE4M3 = Dtype::kFp8E4M3;
constexpr Dtype kE5M2 = Dtype::kFp8E5M2;

// Reads a TestFloat file of TRNSIM_VECTORS_DIR; `digits`: hex digits of each field before FLAGS (inputs, result).
// Returns one vector of those field values per line; a missing or malformed file throws testfloat::FormatError.
std::vector<std::vector<uint32_t>> read_vectors(const char* name, const std::vector<int>& digits) {
  std::vector<std::vector<uint32_t>> out;
  for (testfloat::Line& line : testfloat::read_file(std::string(TRNSIM_VECTORS_DIR) + "/" + name, digits)) {
    out.push_back(std::move(line.fields));
  }
  return out;
}

// The tests over the TestFloat files; skipped when the vectors directory is missing on this machine.
class RtlFpTestFloat : public ::testing::Test {
 protected:
  void SetUp() override {
#if !TRNSIM_HAVE_VECTORS
    GTEST_SKIP() << "TestFloat vectors directory not found at configure time: " << TRNSIM_VECTORS_DIR;
#endif
  }
};

// f32 results: a NaN expectation needs the canonical NaN from the RTL, anything else bit equality.
bool f32_result_ok(uint32_t expected, uint32_t got) {
  if (f32_is_nan(expected)) return got == 0x7FC00000u;
  return got == expected;
}

void run_f32_binary_file(const char* name, bool negate_b, bool mul) {
  FpRtl rtl;
  MismatchLog log(name);
  const auto vecs = read_vectors(name, {8, 8, 8});
  EXPECT_EQ(vecs.size(), 46464u) << name;
  for (const auto& v : vecs) {
    const uint32_t b = negate_b ? (v[1] ^ 0x80000000u) : v[1];
    const uint32_t got = mul ? rtl.mul(v[0], b) : rtl.add(v[0], b);
    if (!f32_result_ok(v[2], got)) {
      log.add(fmt::format("{:08X} {:08X}: expected {:08X}, RTL {:08X}", v[0], v[1], v[2], got));
    }
  }
  log.expect_none(vecs.size());
}

TEST_F(RtlFpTestFloat, Fp32AddMatchesEveryLineOfF32AddRne) { run_f32_binary_file("f32_add_rne.tv", false, false); }

TEST_F(RtlFpTestFloat, Fp32AddWithNegatedBMatchesEveryLineOfF32SubRne) {
  run_f32_binary_file("f32_sub_rne.tv", true, false);
}

TEST_F(RtlFpTestFloat, Fp32MulMatchesEveryLineOfF32MulRne) { run_f32_binary_file("f32_mul_rne.tv", false, true); }

TEST_F(RtlFpTestFloat, NarrowToFp16MatchesEveryLineOfF32ToF16Rne) {
  FpRtl rtl;
  MismatchLog log("f32_to_f16_rne.tv");
  const auto vecs = read_vectors("f32_to_f16_rne.tv", {8, 4});
  EXPECT_EQ(vecs.size(), 600u);
  for (const auto& v : vecs) {
    for (bool sat : {false, true}) {  // the FP8 mode must not affect FP16
      const uint16_t got = rtl.narrow(kFp16, v[0], sat);
      const bool exp_nan = (v[1] & 0x7C00u) == 0x7C00u && (v[1] & 0x03FFu) != 0;
      if (exp_nan ? got != 0x7E00u : got != v[1]) {
        log.add(fmt::format("{:08X} (sat={}): expected {:04X}, RTL {:04X}", v[0], sat, v[1], got));
      }
    }
  }
  log.expect_none(2 * vecs.size());
}

TEST_F(RtlFpTestFloat, NarrowToBf16MatchesEveryLineOfF32ToBf16Rne) {
  FpRtl rtl;
  MismatchLog log("f32_to_bf16_rne.tv");
  const auto vecs = read_vectors("f32_to_bf16_rne.tv", {8, 4});
  EXPECT_EQ(vecs.size(), 600u);
  for (const auto& v : vecs) {
    for (bool sat : {false, true}) {
      const uint16_t got = rtl.narrow(kBf16, v[0], sat);
      const bool exp_nan = (v[1] & 0x7F80u) == 0x7F80u && (v[1] & 0x007Fu) != 0;
      if (exp_nan ? got != 0x7FC0u : got != v[1]) {
        log.add(fmt::format("{:08X} (sat={}): expected {:04X}, RTL {:04X}", v[0], sat, v[1], got));
      }
    }
  }
  log.expect_none(2 * vecs.size());
}

void run_widen_file(const char* name, Dtype dt, size_t lines) {
  FpRtl rtl;
  MismatchLog log(name);
  const auto vecs = read_vectors(name, {4, 8});
  EXPECT_EQ(vecs.size(), lines);
  for (const auto& v : vecs) {
    const uint32_t got = rtl.widen(dt, static_cast<uint16_t>(v[0]));
    if (!f32_result_ok(v[1], got)) log.add(fmt::format("{:04X}: expected {:08X}, RTL {:08X}", v[0], v[1], got));
  }
  log.expect_none(vecs.size());
}

TEST_F(RtlFpTestFloat, WidenFp16MatchesEveryLineOfF16ToF32) { run_widen_file("f16_to_f32_rne.tv", kFp16, 408); }

TEST_F(RtlFpTestFloat, WidenBf16MatchesEveryLineOfBf16ToF32) { run_widen_file("bf16_to_f32_rne.tv", kBf16, 600); }

// ---------------------------------------------------------------------------------------------------------------
// Field cases. Expected bits are worked out by hand from the format definitions, not by any code.
// ---------------------------------------------------------------------------------------------------------------

uint32_t f32(float x) { return golden::bits_from_float(x); }

TEST(RtlFpFieldCases, NarrowBf16TieAt0x3F828000RoundsDownToEven0x3F82) {
  FpRtl rtl;
  EXPECT_EQ(rtl.narrow(kBf16, 0x3F828000u, true), 0x3F82u);
  EXPECT_EQ(rtl.narrow(kBf16, 0xBF828000u, true), 0xBF82u);
  EXPECT_EQ(rtl.narrow(kBf16, 0x3F838000u, true), 0x3F84u);  // tie from odd rounds up
  EXPECT_EQ(rtl.narrow(kBf16, 0x3F828001u, true), 0x3F83u);  // just above the tie
}

TEST(RtlFpFieldCases, NarrowBf16OfSignallingNanPattern0x7F800001IsCanonicalNan) {
  FpRtl rtl;
  // Truncation would give 0x7F80 (Inf): the NaN must survive.
  EXPECT_EQ(rtl.narrow(kBf16, 0x7F800001u, false), 0x7FC0u);
  EXPECT_EQ(rtl.narrow(kBf16, 0xFF800001u, true), 0x7FC0u);
  EXPECT_EQ(rtl.narrow(kFp16, 0x7F800001u, true), 0x7E00u);
  EXPECT_EQ(rtl.narrow(kE4M3, 0xFFC00000u, true), 0x7Fu);
  EXPECT_EQ(rtl.narrow(kE5M2, 0x7FFFFFFFu, false), 0x7Eu);
}

TEST(RtlFpFieldCases, NarrowE4M3Of464TiesToEvenMax0x7EInBothModes) {
  FpRtl rtl;
  EXPECT_EQ(rtl.narrow(kE4M3, f32(464.0f), true), 0x7Eu);
  EXPECT_EQ(rtl.narrow(kE4M3, f32(464.0f), false), 0x7Eu);
  EXPECT_EQ(rtl.narrow(kE4M3, f32(-464.0f), false), 0xFEu);
}

TEST(RtlFpFieldCases, NarrowE4M3Of465OverflowsToMaxWhenSaturatingElseNan) {
  FpRtl rtl;
  EXPECT_EQ(rtl.narrow(kE4M3, f32(465.0f), true), 0x7Eu);
  EXPECT_EQ(rtl.narrow(kE4M3, f32(465.0f), false), 0x7Fu);
  EXPECT_EQ(rtl.narrow(kE4M3, f32(-465.0f), true), 0xFEu);
  EXPECT_EQ(rtl.narrow(kE4M3, f32(-465.0f), false), 0x7Fu);
}

TEST(RtlFpFieldCases, NarrowE5M2Of61440TieRoundsPastMaxToInfOrSaturates) {
  FpRtl rtl;
  EXPECT_EQ(rtl.narrow(kE5M2, f32(61440.0f), false), 0x7Cu);
  EXPECT_EQ(rtl.narrow(kE5M2, f32(61440.0f), true), 0x7Bu);
  EXPECT_EQ(rtl.narrow(kE5M2, f32(-61440.0f), false), 0xFCu);
  EXPECT_EQ(rtl.narrow(kE5M2, f32(-61440.0f), true), 0xFBu);
  EXPECT_EQ(rtl.narrow(kE5M2, f32(61439.996f), false), 0x7Bu);  // just below the tie
}

TEST(RtlFpFieldCases, NarrowE4M3Of0x3FA88000RoundsUpTo0x3B) {
  FpRtl rtl;
  // 1.0101_0001b: the dropped bits 1_0001 are above half, so 1.010 rounds up to 1.011 = 0x3B.
  EXPECT_EQ(rtl.narrow(kE4M3, 0x3FA88000u, true), 0x3Bu);
  EXPECT_EQ(rtl.narrow(kE4M3, 0x3FA88000u, false), 0x3Bu);
}

TEST(RtlFpFieldCases, NarrowInfinitiesFollowTheOverflowRulePerFormatAndMode) {
  FpRtl rtl;
  for (bool sat : {false, true}) {
    EXPECT_EQ(rtl.narrow(kBf16, 0x7F800000u, sat), 0x7F80u);
    EXPECT_EQ(rtl.narrow(kBf16, 0xFF800000u, sat), 0xFF80u);
    EXPECT_EQ(rtl.narrow(kFp16, 0x7F800000u, sat), 0x7C00u);
    EXPECT_EQ(rtl.narrow(kFp16, 0xFF800000u, sat), 0xFC00u);
  }
  EXPECT_EQ(rtl.narrow(kE4M3, 0x7F800000u, true), 0x7Eu);
  EXPECT_EQ(rtl.narrow(kE4M3, 0xFF800000u, true), 0xFEu);
  EXPECT_EQ(rtl.narrow(kE4M3, 0x7F800000u, false), 0x7Fu);
  EXPECT_EQ(rtl.narrow(kE4M3, 0xFF800000u, false), 0x7Fu);
  EXPECT_EQ(rtl.narrow(kE5M2, 0x7F800000u, true), 0x7Bu);
  EXPECT_EQ(rtl.narrow(kE5M2, 0xFF800000u, true), 0xFBu);
  EXPECT_EQ(rtl.narrow(kE5M2, 0x7F800000u, false), 0x7Cu);
  EXPECT_EQ(rtl.narrow(kE5M2, 0xFF800000u, false), 0xFCu);
}

TEST(RtlFpFieldCases, NarrowOverflowThresholdsOfBf16AndFp16) {
  FpRtl rtl;
  EXPECT_EQ(rtl.narrow(kFp16, f32(65504.0f), true), 0x7BFFu);
  EXPECT_EQ(rtl.narrow(kFp16, f32(65519.996f), true), 0x7BFFu);  // below the midpoint 65520
  EXPECT_EQ(rtl.narrow(kFp16, f32(65520.0f), true), 0x7C00u);    // tie from odd 0x7BFF rounds up to Inf
  EXPECT_EQ(rtl.narrow(kFp16, f32(-65520.0f), false), 0xFC00u);
  EXPECT_EQ(rtl.narrow(kBf16, 0x7F7F7FFFu, true), 0x7F7Fu);
  EXPECT_EQ(rtl.narrow(kBf16, 0x7F7F8000u, true), 0x7F80u);  // tie from odd 0x7F7F
  EXPECT_EQ(rtl.narrow(kBf16, 0x7F7FFFFFu, false), 0x7F80u);  // FP32 max
}

TEST(RtlFpFieldCases, NarrowSubnormalResultsAndSignedZeros) {
  FpRtl rtl;
  // FP16: smallest subnormal 2^-24, the tie 2^-25 rounds to even (zero), just above it rounds up.
  EXPECT_EQ(rtl.narrow(kFp16, 0x33800000u, true), 0x0001u);  // 2^-24
  EXPECT_EQ(rtl.narrow(kFp16, 0x33000000u, true), 0x0000u);  // 2^-25
  EXPECT_EQ(rtl.narrow(kFp16, 0x33000001u, true), 0x0001u);
  EXPECT_EQ(rtl.narrow(kFp16, 0xB3400000u, true), 0x8001u);  // -0.75 * 2^-24 rounds to -2^-24
  EXPECT_EQ(rtl.narrow(kFp16, 0x387FC000u, true), 0x03FFu);  // largest subnormal 1023 * 2^-24, exact
  EXPECT_EQ(rtl.narrow(kFp16, 0x387FE000u, true), 0x0400u);  // 1023.5 * 2^-24: tie from odd to min normal
  // E4M3: subnormal step 2^-9; 1.5 steps ties to 2 steps, 0.75 steps rounds to 1; E5M2 subnormal step 2^-16.
  EXPECT_EQ(rtl.narrow(kE4M3, 0x3B000000u, true), 0x01u);  // 2^-9
  EXPECT_EQ(rtl.narrow(kE4M3, 0x3B400000u, true), 0x02u);  // 1.5 * 2^-9
  EXPECT_EQ(rtl.narrow(kE4M3, 0x3AC00000u, true), 0x01u);  // 0.75 * 2^-9
  EXPECT_EQ(rtl.narrow(kE4M3, 0x3A800000u, true), 0x00u);  // 2^-10: tie to zero
  EXPECT_EQ(rtl.narrow(kE5M2, 0xB7800000u, true), 0x81u);  // -2^-16
  // BF16 keeps FP32 subnormals at BF16 precision.
  EXPECT_EQ(rtl.narrow(kBf16, 0x00018000u, true), 0x0002u);  // tie from odd
  EXPECT_EQ(rtl.narrow(kBf16, 0x00000001u, true), 0x0000u);
  EXPECT_EQ(rtl.narrow(kBf16, 0x007FFFFFu, true), 0x0080u);  // rounds up to the smallest normal
  // Signed zeros, and FP32 subnormals that vanish in the narrower formats.
  for (Dtype dt : {kFp16, kE4M3, kE5M2, kBf16}) {
    const uint16_t neg_zero = (dt == kFp16 || dt == kBf16) ? 0x8000u : 0x80u;
    EXPECT_EQ(rtl.narrow(dt, 0x00000000u, true), 0x0000u);
    EXPECT_EQ(rtl.narrow(dt, 0x80000000u, false), neg_zero);
  }
  EXPECT_EQ(rtl.narrow(kFp16, 0x807FFFFFu, true), 0x8000u);
  EXPECT_EQ(rtl.narrow(kE4M3, 0x00000001u, true), 0x00u);
}

TEST(RtlFpFieldCases, NarrowIllegalDtypeCodesGiveNan) {
  // Code 4 (fp32) is no narrow format; 5..7 are the MX types, which narrow to their element formats.
  FpRtl rtl;
  EXPECT_EQ(rtl.narrow(static_cast<Dtype>(4), 0x3F800000u, true), 0x7FC0u);
  EXPECT_EQ(rtl.narrow(Dtype::kMxFp8E4M3, 0x3F800000u, true), 0x38u);  // 1.0 in E4M3
  EXPECT_EQ(rtl.narrow(Dtype::kMxFp8E5M2, 0x3F800000u, true), 0x3Cu);  // 1.0 in E5M2
  EXPECT_EQ(rtl.narrow(Dtype::kMxFp4, 0x3F800000u, true), 0x2u);       // 1.0 in E2M1
}

TEST(RtlFpFieldCases, WidenSpecialPatternsOfEachFormat) {
  FpRtl rtl;
  // E4M3: S.1111.111 is NaN, S.1111.110 is 448, S.1111.000 is 256 (no Inf), smallest subnormal 2^-9.
  EXPECT_EQ(rtl.widen(kE4M3, 0x7F), 0x7FC00000u);
  EXPECT_EQ(rtl.widen(kE4M3, 0xFF), 0x7FC00000u);
  EXPECT_EQ(rtl.widen(kE4M3, 0x7E), 0x43E00000u);
  EXPECT_EQ(rtl.widen(kE4M3, 0xFE), 0xC3E00000u);
  EXPECT_EQ(rtl.widen(kE4M3, 0x78), 0x43800000u);
  EXPECT_EQ(rtl.widen(kE4M3, 0x01), 0x3B000000u);
  EXPECT_EQ(rtl.widen(kE4M3, 0x06), 0x3C400000u);  // 6 * 2^-9 = 1.5 * 2^-7
  EXPECT_EQ(rtl.widen(kE4M3, 0x80), 0x80000000u);
  // E5M2: IEEE-style specials, max 57344, smallest subnormal 2^-16.
  EXPECT_EQ(rtl.widen(kE5M2, 0x7C), 0x7F800000u);
  EXPECT_EQ(rtl.widen(kE5M2, 0xFC), 0xFF800000u);
  EXPECT_EQ(rtl.widen(kE5M2, 0x7D), 0x7FC00000u);
  EXPECT_EQ(rtl.widen(kE5M2, 0x7B), 0x47600000u);
  EXPECT_EQ(rtl.widen(kE5M2, 0x01), 0x37800000u);
  EXPECT_EQ(rtl.widen(kE5M2, 0x83), 0xB8400000u);  // -3 * 2^-16
  // FP16 and BF16.
  EXPECT_EQ(rtl.widen(kFp16, 0x0001), 0x33800000u);
  EXPECT_EQ(rtl.widen(kFp16, 0x03FF), 0x387FC000u);
  EXPECT_EQ(rtl.widen(kFp16, 0x7BFF), 0x477FE000u);
  EXPECT_EQ(rtl.widen(kFp16, 0xFC00), 0xFF800000u);
  EXPECT_EQ(rtl.widen(kFp16, 0x7C01), 0x7FC00000u);
  EXPECT_EQ(rtl.widen(kBf16, 0x0001), 0x00010000u);  // stays an FP32 subnormal
  EXPECT_EQ(rtl.widen(kBf16, 0x8000), 0x80000000u);
  EXPECT_EQ(rtl.widen(kBf16, 0xFF81), 0x7FC00000u);
  // FP8 patterns ignore bits [15:8].
  EXPECT_EQ(rtl.widen(kE4M3, 0xAB01), 0x3B000000u);
}

TEST(RtlFpFieldCases, WidenIllegalDtypeCodesGiveCanonicalNan) {
  // Code 4 (fp32) is no narrow format; the MX codes widen their elements (E2M1 0x3 = 1.5, the upper bits ignored).
  FpRtl rtl;
  EXPECT_EQ(rtl.widen(static_cast<Dtype>(4), 0x3C00), 0x7FC00000u);
  EXPECT_EQ(rtl.widen(Dtype::kMxFp8E5M2, 0x3C00), 0x00000000u) << "E5M2 reads bits [7:0]: 0x00";
  EXPECT_EQ(rtl.widen(Dtype::kMxFp4, 0x3C03), 0x3FC00000u);
}

TEST(RtlFpFieldCases, MulSpecialCasesAndGradualUnderflow) {
  FpRtl rtl;
  EXPECT_EQ(rtl.mul(0x7F800000u, 0x00000000u), 0x7FC00000u);  // Inf * 0
  EXPECT_EQ(rtl.mul(0x80000000u, 0xFF800000u), 0x7FC00000u);  // 0 * -Inf
  EXPECT_EQ(rtl.mul(0xFFC00001u, 0x3F800000u), 0x7FC00000u);  // NaN payload and sign are not kept
  EXPECT_EQ(rtl.mul(0x7F800000u, 0x00000001u), 0x7F800000u);  // Inf * smallest subnormal
  EXPECT_EQ(rtl.mul(0x7F7FFFFFu, 0x40000000u), 0x7F800000u);  // max * 2 overflows
  EXPECT_EQ(rtl.mul(0xFF7FFFFFu, 0x3F800001u), 0xFF800000u);
  EXPECT_EQ(rtl.mul(0x80000000u, 0x3F800000u), 0x80000000u);  // -0 * 1
  EXPECT_EQ(rtl.mul(0x00000001u, 0x3F000000u), 0x00000000u);  // 2^-150: tie to even zero
  EXPECT_EQ(rtl.mul(0x00000001u, 0x3F400000u), 0x00000001u);  // 0.75 * 2^-149 rounds up
  EXPECT_EQ(rtl.mul(0x00000003u, 0x3F000000u), 0x00000002u);  // 1.5 * 2^-149: tie to even 2
  EXPECT_EQ(rtl.mul(0x00400000u, 0x40000000u), 0x00800000u);  // subnormal * 2 = smallest normal
  EXPECT_EQ(rtl.mul(0x00800000u, 0x3F000000u), 0x00400000u);  // smallest normal / 2
  EXPECT_EQ(rtl.mul(0x00000001u, 0x4B000000u), 0x00800000u);  // 2^-149 * 2^23 = 2^-126
  EXPECT_EQ(rtl.mul(0x00000001u, 0x4B800000u), 0x01000000u);  // 2^-149 * 2^24 = 2^-125
  EXPECT_EQ(rtl.mul(0x00000001u, 0x7F000000u), 0x34800000u);  // 2^-149 * 2^127 = 2^-22
}

TEST(RtlFpFieldCases, AddSignedZerosCancellationInfAndOverflow) {
  FpRtl rtl;
  EXPECT_EQ(rtl.add(0x80000000u, 0x80000000u), 0x80000000u);  // -0 + -0
  EXPECT_EQ(rtl.add(0x00000000u, 0x80000000u), 0x00000000u);  // +0 + -0
  EXPECT_EQ(rtl.add(0x3F800000u, 0xBF800000u), 0x00000000u);  // 1 + -1
  EXPECT_EQ(rtl.add(0x80000001u, 0x00000001u), 0x00000000u);  // subnormal cancellation
  EXPECT_EQ(rtl.add(0x7F800000u, 0xFF800000u), 0x7FC00000u);  // Inf - Inf
  EXPECT_EQ(rtl.add(0xFF800000u, 0x7F7FFFFFu), 0xFF800000u);
  EXPECT_EQ(rtl.add(0x7F7FFFFFu, 0x73000000u), 0x7F800000u);  // max + half ulp (2^103): tie from odd -> Inf
  EXPECT_EQ(rtl.add(0x7F7FFFFFu, 0x72FFFFFFu), 0x7F7FFFFFu);  // just below the tie
  EXPECT_EQ(rtl.add(0x7F7FFFFFu, 0x7F7FFFFFu), 0x7F800000u);
  EXPECT_EQ(rtl.add(0x00000001u, 0x00000001u), 0x00000002u);
  EXPECT_EQ(rtl.add(0x007FFFFFu, 0x00000001u), 0x00800000u);  // subnormal sum reaches the normal range
  EXPECT_EQ(rtl.add(0x00800000u, 0x80000001u), 0x007FFFFFu);  // and leaves it
  EXPECT_EQ(rtl.add(0x3F800000u, 0x33800000u), 0x3F800000u);  // 1 + 2^-24: tie to even 1
  EXPECT_EQ(rtl.add(0x3F800001u, 0x33800000u), 0x3F800002u);  // 1+ulp + half ulp: tie to even up
  EXPECT_EQ(rtl.add(0x3F800000u, 0xB3800000u), 0x3F7FFFFFu);  // 1 - 2^-24 is exact
  EXPECT_EQ(rtl.add(0x3F800000u, 0xB3000000u), 0x3F800000u);  // 1 - 2^-25: tie to even 1
}

// ---------------------------------------------------------------------------------------------------------------
// Host SSE arithmetic as an independent binary32 reference (x86-64 computes float + and * in SSE registers with
// RNE and gradual underflow; this file is built with -ffp-contract=off and without -ffast-math).
// ---------------------------------------------------------------------------------------------------------------

TEST(RtlFpHostReference, AddAndMulMatchHostSseOnBiasedRandomPairs) {
  const uint64_t seed = rtlfp_test::test_seed(0x5EED0001u);
  rtlfp_test::Fp32Gen gen(seed);
  FpRtl rtl;
  MismatchLog add_log("add vs host"), mul_log("mul vs host");
  constexpr int kPairs = 2000000;
  for (int i = 0; i < kPairs; ++i) {
    const auto [a, b] = gen.pair();
    const float fa = golden::float_from_bits(a), fb = golden::float_from_bits(b);
    const uint32_t want_sum = f32(fa + fb), want_prod = f32(fa * fb);
    const uint32_t got_sum = rtl.add(a, b), got_prod = rtl.mul(a, b);
    if (!f32_result_ok(want_sum, got_sum)) {
      add_log.add(fmt::format("{:08X} + {:08X}: host {:08X}, RTL {:08X}", a, b, want_sum, got_sum));
    }
    if (!f32_result_ok(want_prod, got_prod)) {
      mul_log.add(fmt::format("{:08X} * {:08X}: host {:08X}, RTL {:08X}", a, b, want_prod, got_prod));
    }
  }
  add_log.expect_none(kPairs);
  mul_log.expect_none(kPairs);
}

}  // namespace
}  // namespace trnsim
