// Golden GEMM against hand-computed results (BRIEF section 3 rules 1-5). Every expected FP32 pattern below is
// worked out by hand in the comments; none is produced by the code under test.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "firmware/golden/gemm_golden.h"

namespace trnsim::golden {
namespace {

using isa::Dtype;
using Bits = std::vector<uint32_t>;

// BF16 patterns (FP32 high half): 1.0, 2.0, ..., and powers of two (biased exponent << 7).
constexpr uint16_t kBf1 = 0x3F80, kBf2 = 0x4000, kBf3 = 0x4040, kBf4 = 0x4080, kBf5 = 0x40A0, kBf6 = 0x40C0,
                   kBf7 = 0x40E0, kBf8 = 0x4100;
constexpr uint16_t kBfMinus1 = 0xBF80;
constexpr uint16_t kBf2p24 = 0x4B80;  // 2^24: biased 151 = 0x97
constexpr uint16_t kBfZero = 0x0000;

// FP32 patterns used in the expectations.
constexpr uint32_t kF2p24 = 0x4B800000;       // 16777216
constexpr uint32_t kF2p24Plus2 = 0x4B800001;  // 16777218 (FP32 spacing is 2 in [2^24, 2^25))
constexpr uint32_t kF2p24Plus4 = 0x4B800002;  // 16777220
constexpr uint32_t kNan = 0x7FC00000;

GemmOperands make(Dtype dt, int k, int m, int n, std::vector<uint16_t> s, std::vector<uint16_t> mv) {
  GemmOperands ops{dt, k, m, n, std::move(s), std::move(mv)};
  return ops;
}

TEST(GoldenGemm, TwoByTwoByTwoBf16) {
  // S[K=2, M=2] = [[1, 2], [3, 4]], Mv[K=2, N=2] = [[5, 6], [7, 8]].
  // out = S^T @ Mv: out[0][0] = 1*5 + 3*7 = 26, out[0][1] = 1*6 + 3*8 = 30,
  //                 out[1][0] = 2*5 + 4*7 = 38, out[1][1] = 2*6 + 4*8 = 44.
  // 26 = 1.625 * 2^4 -> 0x41D00000; 30 = 1.875 * 2^4 -> 0x41F00000;
  // 38 = 1.1875 * 2^5 -> 0x42180000; 44 = 1.375 * 2^5 -> 0x42300000.
  const GemmOperands ops = make(Dtype::kBf16, 2, 2, 2, {kBf1, kBf2, kBf3, kBf4}, {kBf5, kBf6, kBf7, kBf8});
  EXPECT_EQ(gemm(ops, 2), (Bits{0x41D00000, 0x41F00000, 0x42180000, 0x42300000}));
  EXPECT_EQ(gemm(ops, 128), (Bits{0x41D00000, 0x41F00000, 0x42180000, 0x42300000}));
}

TEST(GoldenGemm, RectangularLayoutFp16) {
  // K = 1, S = [1, 2] (M = 2), Mv = [3, 4, 5] (N = 3): out[i][j] = S[i] * Mv[j] = [[3, 4, 5], [6, 8, 10]].
  // FP16: 1 = 0x3C00, 2 = 0x4000, 3 = 0x4200, 4 = 0x4400, 5 = 0x4500.
  const GemmOperands ops = make(Dtype::kFp16, 1, 2, 3, {0x3C00, 0x4000}, {0x4200, 0x4400, 0x4500});
  EXPECT_EQ(gemm(ops, 16), (Bits{0x40400000, 0x40800000, 0x40A00000, 0x40C00000, 0x41000000, 0x41200000}));
}

TEST(GoldenGemm, NanAndInfFp16) {
  // S[K=2, M=2] = [[Inf, 1], [1, 2]], Mv[K=2, N=2] = [[0, 1], [3, 1]].
  // out[0][0] = Inf*0 + 1*3 = NaN -> canonical 0x7FC00000;  out[0][1] = Inf*1 + 1*1 = +Inf = 0x7F800000;
  // out[1][0] = 1*0 + 2*3 = 6 = 0x40C00000;                 out[1][1] = 1*1 + 2*1 = 3 = 0x40400000.
  const GemmOperands ops =
      make(Dtype::kFp16, 2, 2, 2, {0x7C00, 0x3C00, 0x3C00, 0x4000}, {0x0000, 0x3C00, 0x4200, 0x3C00});
  EXPECT_EQ(gemm(ops, 2), (Bits{kNan, 0x7F800000, 0x40C00000, 0x40400000}));
  // +Inf + -Inf in the column sum: S = [Inf, -Inf], Mv = [1, 1] -> NaN, written canonical.
  const GemmOperands inf_minus_inf = make(Dtype::kFp16, 2, 1, 1, {0x7C00, 0xFC00}, {0x3C00, 0x3C00});
  EXPECT_EQ(gemm(inf_minus_inf, 2), Bits{kNan});
  // An FP8 E4M3 NaN input (S.1111.111, here negative 0xFF) times 1.0 (0x38) -> canonical NaN.
  const GemmOperands e4m3_nan = make(Dtype::kFp8E4M3, 1, 1, 1, {0xFF}, {0x38});
  EXPECT_EQ(gemm(e4m3_nan, 1), Bits{kNan});
}

TEST(GoldenGemm, KTilingChangesRounding) {
  // One column: products 2^24, 1, 1, 1 (S = [2^24, 1, 1, 1], Mv = all 1). FP32 spacing at 2^24 is 2, so 2^24 + 1 is
  // a tie that rounds to the even 2^24.
  const GemmOperands ops = make(Dtype::kBf16, 4, 1, 1, {kBf2p24, kBf1, kBf1, kBf1}, {kBf1, kBf1, kBf1, kBf1});
  // One tile (rows >= K): 0 + 2^24 = 2^24; + 1 -> 2^24; + 1 -> 2^24; + 1 -> 2^24.
  EXPECT_EQ(gemm(ops, 4), Bits{kF2p24});
  EXPECT_EQ(gemm(ops, 128), Bits{kF2p24});
  // Tiles of 2: tile 0 = 0 + 2^24 + 1 -> 2^24; tile 1 = 0 + 1 + 1 = 2; PSUM = 2^24 + 2 (exact) = 0x4B800001.
  EXPECT_EQ(gemm(ops, 2), Bits{kF2p24Plus2});
  // Tiles of 3: tile 0 -> 2^24, tile 1 = 1; PSUM = 2^24 + 1 -> 2^24.
  EXPECT_EQ(gemm(ops, 3), Bits{kF2p24});
  // Tiles of 1: PSUM = 2^24, then + 1 three times, each a tie back to 2^24.
  EXPECT_EQ(gemm(ops, 1), Bits{kF2p24});
}

TEST(GoldenGemm, PartitionOrderIsIncreasingK) {
  // Products 1, 1, 1, 2^24 in partition order: 1, 2, 3, then 3 + 2^24 = 16777219, a tie between 2^24 + 2 (odd
  // significand) and 2^24 + 4 (even): 0x4B800002. Adding in the opposite order would give 2^24.
  const GemmOperands ops = make(Dtype::kBf16, 4, 1, 1, {kBf1, kBf1, kBf1, kBf2p24}, {kBf1, kBf1, kBf1, kBf1});
  EXPECT_EQ(gemm(ops, 4), Bits{kF2p24Plus4});
}

TEST(GoldenGemm, AccumulateInto) {
  // S = [1, 1], Mv = [1, 1]: column sum 2. Old PSUM 3.0 (0x40400000) -> 5.0 = 0x40A00000.
  const GemmOperands ops = make(Dtype::kBf16, 2, 1, 1, {kBf1, kBf1}, {kBf1, kBf1});
  const Bits three{0x40400000};
  EXPECT_EQ(gemm(ops, 2, &three), Bits{0x40A00000});
  // Old PSUM 2^24: one tile -> 2^24 + 2 = 0x4B800001; tiles of one row -> (2^24 + 1) + 1, each a tie -> 2^24.
  const Bits big{kF2p24};
  EXPECT_EQ(gemm(ops, 2, &big), Bits{kF2p24Plus2});
  EXPECT_EQ(gemm(ops, 1, &big), Bits{kF2p24});
  // A NaN in the old PSUM gives a canonical NaN.
  const Bits old_nan{0xFFC00001};
  EXPECT_EQ(gemm(ops, 2, &old_nan), Bits{kNan});
}

TEST(GoldenGemm, ColumnSumStartsAtPositiveZero) {
  // The only product is -1 * 0 = -0; the column sum is +0 + -0 = +0 under RNE, so the result is +0, not -0.
  const GemmOperands ops = make(Dtype::kBf16, 1, 1, 1, {kBfMinus1}, {kBfZero});
  EXPECT_EQ(gemm(ops, 1), Bits{0x00000000});
  // Accumulating +0 into an old -0 also gives +0.
  const Bits minus_zero{0x80000000};
  EXPECT_EQ(gemm(ops, 1, &minus_zero), Bits{0x00000000});
}

TEST(GoldenGemm, Bf16ProductsUnderflowAndOverflow) {
  // 2^-100 (BF16 biased 27 -> 0x0D80) * 2^-40 (biased 87 -> 0x2B80) = 2^-140: an FP32 subnormal, 2^9 * 2^-149,
  // pattern 0x00000200 (no flush to zero).
  EXPECT_EQ(gemm(make(Dtype::kBf16, 1, 1, 1, {0x0D80}, {0x2B80}), 1), Bits{0x00000200});
  // 2^-100 * 2^-60 (biased 67 -> 0x2180) = 2^-160 < half of 2^-149: rounds to +0.
  EXPECT_EQ(gemm(make(Dtype::kBf16, 1, 1, 1, {0x0D80}, {0x2180}), 1), Bits{0x00000000});
  // 2^100 (biased 227 -> 0x7180) squared = 2^200: overflows to +Inf.
  EXPECT_EQ(gemm(make(Dtype::kBf16, 1, 1, 1, {0x7180}, {0x7180}), 1), Bits{0x7F800000});
}

TEST(GoldenGemm, Fp8Inputs) {
  // E5M2: 1.5 = 0 01111 10 = 0x3E, -2 = 1 10000 00 = 0xC0: product -3 = 0xC0400000.
  EXPECT_EQ(gemm(make(Dtype::kFp8E5M2, 1, 1, 1, {0x3E}, {0xC0}), 1), Bits{0xC0400000});
  // E4M3: 448 (0x7E) * 448 = 200704 = 1.53125 * 2^17 -> 0x48440000; plus 2^-9 (0x01) * 1 (0x38) is far below
  // half an ulp of 200704 (ulp 2^-6): the sum stays 0x48440000.
  EXPECT_EQ(gemm(make(Dtype::kFp8E4M3, 2, 1, 1, {0x7E, 0x01}, {0x7E, 0x38}), 2), Bits{0x48440000});
}

TEST(GoldenGemm, FullSizeShape) {
  // K = 256 (two tiles of 128), M = 128, N = 512, all ones: every output is 128 + 128 = 256 = 0x43800000.
  const int k = 256, m = 128, n = 512;
  const GemmOperands ops = make(Dtype::kBf16, k, m, n, std::vector<uint16_t>(k * m, kBf1),
                                std::vector<uint16_t>(k * n, kBf1));
  const Bits out = gemm(ops, 128);
  ASSERT_EQ(out.size(), static_cast<size_t>(m * n));
  for (const uint32_t v : out) ASSERT_EQ(v, 0x43800000u);
}

TEST(GoldenGemm, RejectsBadShapes) {
  EXPECT_THROW(gemm(make(Dtype::kBf16, 0, 1, 1, {}, {}), 1), std::invalid_argument);
  EXPECT_THROW(gemm(make(Dtype::kBf16, 2, 1, 1, {kBf1}, {kBf1, kBf1}), 1), std::invalid_argument);
  EXPECT_THROW(gemm(make(Dtype::kBf16, 1, 1, 2, {kBf1}, {kBf1}), 1), std::invalid_argument);
  EXPECT_THROW(gemm(make(Dtype::kBf16, 1, 1, 1, {kBf1}, {kBf1}), 0), std::invalid_argument);
  const Bits wrong_size{0, 0};
  EXPECT_THROW(gemm(make(Dtype::kBf16, 1, 1, 1, {kBf1}, {kBf1}), 1, &wrong_size), std::invalid_argument);
}

}  // namespace
}  // namespace trnsim::golden
