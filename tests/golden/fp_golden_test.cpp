// Golden FP conversions and arithmetic against outside references:
//  - Berkeley TestFloat vectors (SoftFloat results, cross-checked on x86 hardware; see FORMAT.md), read in place;
//  - the field cases of the numerics contract and hand-decoded patterns (values worked out in the comments from
//    the IEEE 754-2019 and OCP OFP8 v1.0 encodings), never values produced by the code under test.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "firmware/golden/fp_golden.h"
#include "tools/testfloat/testfloat_file.h"

namespace trnsim::golden {
namespace {

using isa::Dtype;

constexpr bool kSat = true;
constexpr bool kNoSat = false;

bool f32_is_nan(uint32_t b) { return (b & 0x7FFFFFFFu) > 0x7F800000u; }
bool f16_is_nan(uint32_t b) { return (b & 0x7FFFu) > 0x7C00u; }
bool bf16_is_nan(uint32_t b) { return (b & 0x7FFFu) > 0x7F80u; }

// ---------------------------------------------------------------------------------------------------------------
// TestFloat vectors. A NaN result matches any NaN (the reference keeps payloads, x86-SSE style; the contract writes
// canonical NaNs); everything else must match bit for bit. FLAGS are not compared (the golden code raises none).

class TestFloatVectors : public ::testing::Test {
 protected:
  void SetUp() override {
#if !TRNSIM_HAVE_VECTORS
    GTEST_SKIP() << "TestFloat vectors directory not found at configure time: " << TRNSIM_VECTORS_DIR;
#endif
  }

  /// Runs `fn` over every line of `file` in TRNSIM_VECTORS_DIR and checks the result. `digits`: hex digits of each
  /// field before FLAGS (inputs then the result); `fn` gets those fields and returns the result bits.
  template <typename Fn, typename IsNan>
  void run(const std::string& file, const std::vector<int>& digits, Fn fn, IsNan is_nan_result) {
    const auto lines = testfloat::read_file(std::string(TRNSIM_VECTORS_DIR) + "/" + file, digits);
    int failures = 0;
    for (const testfloat::Line& l : lines) {
      const uint32_t expected = l.fields.back();
      const uint32_t got = fn(l.fields);
      const bool ok = got == expected || (is_nan_result(got) && is_nan_result(expected));
      if (!ok && ++failures <= 10) {
        ADD_FAILURE() << file << ":" << l.line << ": got " << std::hex << got << ", expected " << expected;
      }
    }
    EXPECT_EQ(failures, 0) << file;
    RecordProperty("vectors", static_cast<int>(lines.size()));
  }
};

TEST_F(TestFloatVectors, F32Add) {
  run("f32_add_rne.tv", {8, 8, 8}, [](const auto& f) { return f32_add(f[0], f[1]); }, f32_is_nan);
}

TEST_F(TestFloatVectors, F32Sub) {
  // IEEE 754-2019 5.4.1: subtraction x - y is x + (-y); negation flips only the sign bit.
  run("f32_sub_rne.tv", {8, 8, 8}, [](const auto& f) { return f32_add(f[0], f[1] ^ 0x80000000u); }, f32_is_nan);
}

TEST_F(TestFloatVectors, F32Mul) {
  run("f32_mul_rne.tv", {8, 8, 8}, [](const auto& f) { return f32_mul(f[0], f[1]); }, f32_is_nan);
}

TEST_F(TestFloatVectors, F16ToF32) {
  run("f16_to_f32_rne.tv", {4, 8},
      [](const auto& f) { return widen_to_f32(Dtype::kFp16, static_cast<uint16_t>(f[0])); }, f32_is_nan);
}

TEST_F(TestFloatVectors, F32ToF16) {
  run("f32_to_f16_rne.tv", {8, 4}, [](const auto& f) { return uint32_t{narrow_from_f32(Dtype::kFp16, f[0], kSat)}; },
      f16_is_nan);
}

TEST_F(TestFloatVectors, Bf16ToF32) {
  run("bf16_to_f32_rne.tv", {4, 8},
      [](const auto& f) { return widen_to_f32(Dtype::kBf16, static_cast<uint16_t>(f[0])); }, f32_is_nan);
}

TEST_F(TestFloatVectors, F32ToBf16) {
  run("f32_to_bf16_rne.tv", {8, 4}, [](const auto& f) { return uint32_t{narrow_from_f32(Dtype::kBf16, f[0], kSat)}; },
      bf16_is_nan);
}

// ---------------------------------------------------------------------------------------------------------------
// Field cases of the numerics contract (docs/numerics.md has the table).

TEST(GoldenFieldCases, Bf16TieKeepsEvenMantissa) {
  // 0x3F828000: the dropped low half is exactly 0x8000 (a tie) and 0x3F82 has an even last bit: stays 0x3F82.
  EXPECT_EQ(narrow_from_f32(Dtype::kBf16, 0x3F828000u, kSat), 0x3F82u);
  // The same tie above an odd BF16 (0x3F83) rounds up to 0x3F84.
  EXPECT_EQ(narrow_from_f32(Dtype::kBf16, 0x3F838000u, kSat), 0x3F84u);
}

TEST(GoldenFieldCases, SignallingNanStaysNanInBf16) {
  // 0x7F800001 is a NaN whose payload sits only in the 16 bits BF16 drops; truncating would give Inf (0x7F80).
  EXPECT_EQ(narrow_from_f32(Dtype::kBf16, 0x7F800001u, kSat), kBf16CanonicalNan);
  EXPECT_EQ(narrow_from_f32(Dtype::kBf16, 0xFF800001u, kSat), kBf16CanonicalNan);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp16, 0x7F800001u, kSat), kFp16CanonicalNan);
}

TEST(GoldenFieldCases, E4M3Overflow) {
  // E4M3 near its top: 448 = 1.110b * 2^8 = 0x7E (mantissa 110, even); the pattern above (0x7F) is NaN, and its
  // value would have been 480 = 1.111b * 2^8 (odd mantissa). 464.0 (FP32 0x43E80000) is the midpoint: the tie
  // goes to the even 448.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x43E80000u, kSat), 0x7Eu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x43E80000u, kNoSat), 0x7Eu);
  // 465.0 (0x43E88000) is past the midpoint: it overflows. Saturating -> max 448; non-saturating -> NaN 0x7F.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x43E88000u, kSat), 0x7Eu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x43E88000u, kNoSat), 0x7Fu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0xC3E88000u, kSat), 0xFEu);  // -465 -> -448
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0xC3E88000u, kNoSat), 0x7Fu);  // NaN is written canonical
  // 480.0 (0x43F00000) and +-Inf overflow the same way.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x43F00000u, kSat), 0x7Eu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x43F00000u, kNoSat), 0x7Fu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x7F800000u, kSat), 0x7Eu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0xFF800000u, kSat), 0xFEu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x7F800000u, kNoSat), 0x7Fu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0xFF800000u, kNoSat), 0x7Fu);
}

TEST(GoldenFieldCases, E5M2Overflow) {
  // E5M2 max 57344 = 1.11b * 2^15 = 0x7B (odd mantissa 11). 61440.0 = 1.111b * 2^15 (FP32 0x47700000) is the
  // midpoint between 57344 and 65536 = 2^16 (exponent all ones = Inf, even): the tie rounds to 2^16 = overflow.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0x47700000u, kNoSat), 0x7Cu);  // +Inf
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0x47700000u, kSat), 0x7Bu);    // +max
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0xC7700000u, kNoSat), 0xFCu);  // -Inf
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0xC7700000u, kSat), 0xFBu);    // -max
  // Just below the midpoint (0x476FFFFF) rounds down to max in both modes.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0x476FFFFFu, kNoSat), 0x7Bu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0x476FFFFFu, kSat), 0x7Bu);
  // +-Inf inputs.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0x7F800000u, kNoSat), 0x7Cu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0xFF800000u, kNoSat), 0xFCu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0x7F800000u, kSat), 0x7Bu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0xFF800000u, kSat), 0xFBu);
}

TEST(GoldenFieldCases, SingleRoundingFromF32) {
  // FP32 0x3FA88000 = 1.31640625. E4M3 neighbours in [1, 2) are 1.25 (0x3A) and 1.375 (0x3B), midpoint 1.3125:
  // one rounding gives 0x3B. Going through BF16 first would round to 1.3125 (a BF16 tie to even 0x3FA8), then to
  // the even 1.25 = 0x3A: double rounding must not happen.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x3FA88000u, kSat), 0x3Bu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x3FA88000u, kNoSat), 0x3Bu);
}

// ---------------------------------------------------------------------------------------------------------------
// Hand-decoded widening: value = 2^(e - bias) * 1.m (normal) or 2^(1 - bias) * 0.m (subnormal).

TEST(GoldenWiden, HandDecodedValues) {
  EXPECT_EQ(widen_to_f32(Dtype::kBf16, 0x3F80), 0x3F800000u);  // 1.0
  EXPECT_EQ(widen_to_f32(Dtype::kBf16, 0x0001), 0x00010000u);  // 2^-133: an FP32 subnormal, kept (no DAZ)
  EXPECT_EQ(widen_to_f32(Dtype::kBf16, 0x8000), 0x80000000u);  // -0
  EXPECT_EQ(widen_to_f32(Dtype::kBf16, 0xFF80), 0xFF800000u);  // -Inf
  EXPECT_EQ(widen_to_f32(Dtype::kBf16, 0x7F81), kF32CanonicalNan);
  EXPECT_EQ(widen_to_f32(Dtype::kFp16, 0x3C00), 0x3F800000u);  // 1.0
  EXPECT_EQ(widen_to_f32(Dtype::kFp16, 0x0001), 0x33800000u);  // 2^-24
  EXPECT_EQ(widen_to_f32(Dtype::kFp16, 0x03FF), 0x387FC000u);  // 1023 * 2^-24 = 1.111111111b (9 ones) * 2^-15
  EXPECT_EQ(widen_to_f32(Dtype::kFp16, 0x7BFF), 0x477FE000u);  // 65504
  EXPECT_EQ(widen_to_f32(Dtype::kFp16, 0x7C00), 0x7F800000u);  // +Inf
  EXPECT_EQ(widen_to_f32(Dtype::kFp16, 0xFE01), kF32CanonicalNan);
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E4M3, 0x38), 0x3F800000u);  // 0 0111 000 = 1.0
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E4M3, 0x01), 0x3B000000u);  // 2^-6 * 0.001b = 2^-9
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E4M3, 0x78), 0x43800000u);  // 0 1111 000 = 256: exponent 1111 is finite
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E4M3, 0x7E), 0x43E00000u);  // 448
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E4M3, 0xFE), 0xC3E00000u);  // -448
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E4M3, 0x7F), kF32CanonicalNan);
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E4M3, 0xFF), kF32CanonicalNan);
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E4M3, 0x80), 0x80000000u);  // -0
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E5M2, 0x3C), 0x3F800000u);  // 0 01111 00 = 1.0
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E5M2, 0x01), 0x37800000u);  // 2^-14 * 0.01b = 2^-16
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E5M2, 0x7B), 0x47600000u);  // 57344
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E5M2, 0x7C), 0x7F800000u);  // +Inf
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E5M2, 0xFC), 0xFF800000u);  // -Inf
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E5M2, 0x7D), kF32CanonicalNan);
  // FP8 patterns use the low 8 bits only.
  EXPECT_EQ(widen_to_f32(Dtype::kFp8E4M3, 0xAB38), 0x3F800000u);
}

TEST(GoldenNarrow, HandRoundedValues) {
  // Zero and underflow keep the sign.
  EXPECT_EQ(narrow_from_f32(Dtype::kBf16, 0x80000000u, kSat), 0x8000u);
  EXPECT_EQ(narrow_from_f32(Dtype::kBf16, 0x00000001u, kSat), 0x0000u);  // 2^-149 << half of 2^-133
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x80000001u, kSat), 0x80u);
  // E4M3 smallest subnormal is 2^-9; 2^-10 (0x3A800000) is the tie between 0 (even) and 0x01: rounds to 0.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x3A800000u, kSat), 0x00u);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x3A800001u, kSat), 0x01u);
  // 1.5 * 2^-9 (0x3B400000) is the tie between 0x01 (odd) and 0x02: rounds to 0x02.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0x3B400000u, kSat), 0x02u);
  // FP16 overflow threshold: 65520 = midpoint of 65504 (0x7BFF, odd) and 2^16: overflows to Inf.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp16, 0x477FF000u, kSat), 0x7C00u);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp16, 0x477FEFFFu, kSat), 0x7BFFu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp16, 0xFF800000u, kNoSat), 0xFC00u);
  // BF16: FP32 max (0x7F7FFFFF) is above the midpoint of BF16 max 0x7F7F and 2^128: Inf.
  EXPECT_EQ(narrow_from_f32(Dtype::kBf16, 0x7F7FFFFFu, kSat), 0x7F80u);
  EXPECT_EQ(narrow_from_f32(Dtype::kBf16, 0x7F7F7FFFu, kSat), 0x7F7Fu);
  // NaNs of any sign/payload become the canonical NaN.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E4M3, 0xFFC00000u, kSat), 0x7Fu);
  EXPECT_EQ(narrow_from_f32(Dtype::kFp8E5M2, 0x7FFFFFFFu, kSat), 0x7Eu);
  EXPECT_EQ(narrow_from_f32(Dtype::kBf16, 0xFFC00000u, kSat), 0x7FC0u);
  // FP16 subnormal result: 2^-24 exactly.
  EXPECT_EQ(narrow_from_f32(Dtype::kFp16, 0x33800000u, kSat), 0x0001u);
}

TEST(GoldenArith, CanonicalNanAndSpecials) {
  EXPECT_EQ(f32_add(0x7F800000u, 0xFF800000u), kF32CanonicalNan);  // Inf - Inf
  EXPECT_EQ(f32_mul(0x00000000u, 0x7F800000u), kF32CanonicalNan);  // 0 * Inf
  EXPECT_EQ(f32_add(0xFFC12345u, 0x3F800000u), kF32CanonicalNan);  // NaN payload and sign dropped
  EXPECT_EQ(f32_add(0x3F800000u, 0x3F800000u), 0x40000000u);       // 1 + 1 = 2
  EXPECT_EQ(f32_mul(0x00800000u, 0x3F000000u), 0x00400000u);       // 2^-126 * 0.5 = 2^-127: subnormal, no FTZ
  EXPECT_EQ(f32_add(0x80000000u, 0x80000000u), 0x80000000u);       // -0 + -0 = -0
  EXPECT_EQ(f32_add(0x00000000u, 0x80000000u), 0x00000000u);       // +0 + -0 = +0 under RNE
}

TEST(GoldenHelpers, CanonicalNanAndIsNan) {
  EXPECT_EQ(canonical_nan(Dtype::kBf16), 0x7FC0u);
  EXPECT_EQ(canonical_nan(Dtype::kFp16), 0x7E00u);
  EXPECT_EQ(canonical_nan(Dtype::kFp8E4M3), 0x7Fu);
  EXPECT_EQ(canonical_nan(Dtype::kFp8E5M2), 0x7Eu);
  EXPECT_TRUE(is_nan(Dtype::kFp8E4M3, 0xFF));
  EXPECT_FALSE(is_nan(Dtype::kFp8E4M3, 0x7E));
  EXPECT_FALSE(is_nan(Dtype::kFp8E4M3, 0x78));
  EXPECT_TRUE(is_nan(Dtype::kFp8E5M2, 0x7D));
  EXPECT_FALSE(is_nan(Dtype::kFp8E5M2, 0x7C));  // Inf
  EXPECT_TRUE(is_nan(Dtype::kFp16, 0xFC01));
  EXPECT_FALSE(is_nan(Dtype::kBf16, 0x7F80));
}

}  // namespace
}  // namespace trnsim::golden
