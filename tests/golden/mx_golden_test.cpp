// Golden MX quantization and the MX GEMM product (BRIEF section 3 rule 10) against values worked out by hand from
// the rule and the OCP MX v1.0 element tables (E4M3 max 448, E5M2 max 57344, E2M1 values 0, 0.5, 1, 1.5, 2, 3, 4,
// 6). The expected codes are written out below with the arithmetic that gives them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/mx_golden.h"

namespace {

using namespace trnsim;
using isa::Dtype;

uint32_t f32(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

std::vector<uint32_t> column(const std::vector<float>& v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(f32(f));
  return out;
}

TEST(MxQuantize, E4M3BlockSharesTheExponentOfItsLargestMagnitude) {
  // max |v| = 3: floor(log2 3) = 1, code = 1 - 8 + 127 = 120, scale 2^-7; elements v * 128:
  // 1.0 -> 128 = 2^7 (exponent field 7 + 7 = 14: 0x70), 0.5 -> 64 (0x68), -3.0 -> -384 = -1.5 * 2^8 (0xFC),
  // 0.01 -> 1.28 -> nearest E4M3 1.25 (0x3A).
  const golden::MxTensor t = golden::quantize_mx(Dtype::kMxFp8E4M3, 4, 1, column({1.0f, 0.5f, -3.0f, 0.01f}));
  ASSERT_EQ(t.scales.size(), 1u);
  EXPECT_EQ(t.scales[0], 120);
  EXPECT_EQ(t.elements, (std::vector<uint16_t>{0x70, 0x68, 0xFC, 0x3A}));
}

TEST(MxQuantize, E2M1RoundsTiesToEvenAndKeepsTheSign) {
  // max 6: floor(log2 6) = 2, code = 2 - 2 + 127 = 127 (scale 1). 6 -> 0x7; 1 -> 0x2; 0.25 is halfway between 0
  // and 0.5: even code 0; -0.75 halfway between 0.5 (0x1) and 1 (0x2): even 0x2, negative 0xA; 5 halfway between
  // 4 (0x6) and 6 (0x7): 0x6.
  const golden::MxTensor t =
      golden::quantize_mx(Dtype::kMxFp4, 5, 1, column({6.0f, 1.0f, 0.25f, -0.75f, 5.0f}));
  EXPECT_EQ(t.scales[0], 127);
  EXPECT_EQ(t.elements, (std::vector<uint16_t>{0x7, 0x2, 0x0, 0xA, 0x6}));
}

TEST(MxQuantize, LargestElementSaturatesToTheElementMaximum) {
  // 480 = 1.875 * 2^8: code = 8 - 8 + 127 = 127; 480 / 1 is past the midpoint 464 between 448 and 480 (E4M3's one
  // past max), so it rounds to overflow: saturates to 448 (0x7E). -1.0 stays -1.0 (0xB8).
  EXPECT_EQ(golden::quantize_mx(Dtype::kMxFp8E4M3, 2, 1, column({480.0f, -1.0f})).elements,
            (std::vector<uint16_t>{0x7E, 0xB8}));
  // E5M2: 126000 = 1.92 * 2^16: code = 16 - 15 + 127 = 128, 126000 / 2 = 63000 is past the midpoint 61440 between
  // 57344 and 65536: saturates to 57344 (0x7B).
  const golden::MxTensor t = golden::quantize_mx(Dtype::kMxFp8E5M2, 1, 1, column({126000.0f}));
  EXPECT_EQ(t.scales[0], 128);
  EXPECT_EQ(t.elements[0], 0x7B);
}

TEST(MxQuantize, SpecialBlocks) {
  // A NaN or an Inf anywhere in a block: scale 0xFF (NaN), elements 0.
  const float inf = std::numeric_limits<float>::infinity();
  const golden::MxTensor nan_block =
      golden::quantize_mx(Dtype::kMxFp8E5M2, 3, 1, column({1.0f, std::nanf(""), 2.0f}));
  EXPECT_EQ(nan_block.scales[0], 0xFF);
  EXPECT_EQ(nan_block.elements, (std::vector<uint16_t>{0, 0, 0}));
  EXPECT_EQ(golden::quantize_mx(Dtype::kMxFp4, 2, 1, column({-inf, 1.0f})).scales[0], 0xFF);
  // All zeros: code 0, signs kept (E2M1 sign bit 0x8).
  const golden::MxTensor zeros = golden::quantize_mx(Dtype::kMxFp4, 2, 1, column({-0.0f, 0.0f}));
  EXPECT_EQ(zeros.scales[0], 0);
  EXPECT_EQ(zeros.elements, (std::vector<uint16_t>{0x8, 0x0}));
  // Tiny values clamp the code at 0 (scale 2^-127): 2^-140 / 2^-127 = 2^-13 is below half the smallest E4M3
  // subnormal (2^-9): 0. floor(log2 2^-140) - 8 + 127 = -21 -> 0.
  const golden::MxTensor tiny = golden::quantize_mx(Dtype::kMxFp8E4M3, 1, 1, column({std::ldexp(1.0f, -140)}));
  EXPECT_EQ(tiny.scales[0], 0);
  EXPECT_EQ(tiny.elements[0], 0);
}

TEST(MxQuantize, BlocksRunAlongKAndTheLastOneIsShort) {
  // K = 33, F = 2: block 0 is rows 0..31, block 1 row 32 alone. Column 0 holds 1.0 except 4.0 in row 32; column 1
  // holds 2^-20 everywhere. Column 0: block 0 max 1 -> code 0 - 8 + 127 = 119 (elements 1 * 2^8 = 0x78), block 1
  // max 4 -> code 121 (element 4 * 2^6 = 256: 0x78). Column 1: code -20 - 8 + 127 = 99, element 2^8: 0x78.
  std::vector<uint32_t> v;
  for (int r = 0; r < 33; ++r) {
    v.push_back(f32(r == 32 ? 4.0f : 1.0f));
    v.push_back(f32(std::ldexp(1.0f, -20)));
  }
  const golden::MxTensor t = golden::quantize_mx(Dtype::kMxFp8E4M3, 33, 2, v);
  EXPECT_EQ(t.scales, (std::vector<uint8_t>{119, 99, 121, 99}));
  for (uint16_t e : t.elements) EXPECT_EQ(e, 0x78);
}

golden::GemmOperands one_by_one(Dtype dt, uint16_t a, uint8_t ca, uint16_t b, uint8_t cb) {
  return {dt, 1, 1, 1, {a}, {b}, {ca}, {cb}};
}

TEST(MxGemm, ProductIsScaledAndRoundedOnce) {
  // 448 * 2^(254-127) is no FP32 value, but 448 * 2^127 * 2^-9 * 2^-127 = 0.875 is (0x3F600000).
  EXPECT_EQ(golden::gemm(one_by_one(Dtype::kMxFp8E4M3, 0x7E, 254, 0x01, 0), 16)[0], 0x3F600000u);
  // 1.5 * 2^(105-127) * 1 * 2^(0-127) = 1.5 * 2^-149: halfway between 2^-149 and 2^-148: even, 0x00000002.
  EXPECT_EQ(golden::gemm(one_by_one(Dtype::kMxFp8E4M3, 0x3C, 105, 0x38, 0), 16)[0], 0x00000002u);
  // Overflow: 448 * 2^127 * 1 * 2^127 -> +Inf. A NaN scale on either side -> canonical NaN.
  EXPECT_EQ(golden::gemm(one_by_one(Dtype::kMxFp8E4M3, 0x7E, 254, 0x38, 254), 16)[0], 0x7F800000u);
  EXPECT_EQ(golden::gemm(one_by_one(Dtype::kMxFp4, 0x2, 0xFF, 0x2, 127), 16)[0], 0x7FC00000u);
  // E2M1 6 * 2^(130-127) * -0.5 * 2^(120-127) = -3 * 2^-4 = -0.1875 (0xBE400000).
  EXPECT_EQ(golden::gemm(one_by_one(Dtype::kMxFp4, 0x7, 130, 0x9, 120), 16)[0], 0xBE400000u);
}

TEST(MxGemm, KTileIsTwiceTheRows) {
  EXPECT_EQ(golden::k_tile(Dtype::kMxFp8E4M3, 16), 32);
  EXPECT_EQ(golden::k_tile(Dtype::kMxFp4, 128), 256);
}

}  // namespace
