// The golden softmax / LayerNorm / RMSNorm / TE transpose themselves: hand-computed rows, special values, accuracy
// against an extended-precision evaluation of the mathematical definitions (the bound docs/kernels.md states), and
// the transpose against the golden GEMM with an identity moving matrix.
#include "firmware/golden/nn_golden.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "firmware/golden/engine_golden.h"
#include "firmware/golden/float_bits.h"
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/transformer_golden.h"
#include "tests/kernels/nn_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim::golden {
namespace {

using isa::DataType;
using test::f32_bits;

std::vector<uint32_t> bits(std::initializer_list<float> v) {
  std::vector<uint32_t> out;
  for (const float f : v) out.push_back(f32_bits(f));
  return out;
}

bool is_nan32(uint32_t b) { return std::isnan(float_from_bits(b)); }

/// Relative error of FP32 `got` against `ref`.
double rel_error(uint32_t got, long double ref) {
  return std::fabs(double((static_cast<long double>(float_from_bits(got)) - ref) / ref));
}

TEST(GoldenSoftmax, HandRows) {
  SoftmaxSpec s{1, 2};
  EXPECT_EQ(softmax_rows(s, bits({0.0f, 0.0f})), bits({0.5f, 0.5f}));
  EXPECT_EQ(softmax_rows(s, bits({-0.0f, 0.0f})), bits({0.5f, 0.5f}));  // -0 and +0 alike
  // e^0 = 1 and e^-huge = 0: the larger element takes everything.
  EXPECT_EQ(softmax_rows(s, bits({1e30f, -1e30f})), bits({1.0f, 0.0f}));
  EXPECT_EQ(softmax_rows(s, bits({-INFINITY, 3.0f})), bits({0.0f, 1.0f}));
  SoftmaxSpec one{1, 1};
  EXPECT_EQ(softmax_rows(one, bits({-123.0f})), bits({1.0f}));
  // NaN anywhere, or +inf (inf - inf), or a row of -inf: the whole row is the canonical NaN.
  for (const auto& row : {bits({NAN, 1.0f}), bits({INFINITY, 1.0f}), bits({-INFINITY, -INFINITY})}) {
    const auto out = softmax_rows(s, row);
    EXPECT_EQ(out[0], kF32CanonicalNan);
    EXPECT_EQ(out[1], kF32CanonicalNan);
  }
  // scale applies before the max: [0, ln 2 / 0.5] * 0.5 -> [0, ln 2] -> [1/3, 2/3].
  SoftmaxSpec half{1, 2, 0.5f};
  const auto out = softmax_rows(half, bits({0.0f, 2.0f * 0.69314718f}));
  EXPECT_NEAR(float_from_bits(out[0]), 1.0f / 3.0f, 1e-7f);
  EXPECT_NEAR(float_from_bits(out[1]), 2.0f / 3.0f, 1e-7f);
}

TEST(GoldenSoftmax, CausalMask) {
  SoftmaxSpec s{3, 3, 1.0f, true, 0};
  const auto out = softmax_rows(s, bits({5, 1, 9, 2, 2, 9, 7, 7, 7}));
  EXPECT_EQ(out, bits({1, 0, 0, 0.5f, 0.5f, 0, 1.0f / 3.0f, 1.0f / 3.0f, 1.0f / 3.0f}));
  SoftmaxSpec off{1, 3, 1.0f, true, 1};
  EXPECT_EQ(softmax_rows(off, bits({2, 2, 100})), bits({0.5f, 0.5f, 0}));
}

TEST(GoldenSoftmax, UnnormalisedGivesTheExponentialsAndTheReciprocals) {
  // The attention piece's order (normalise = false): out_j = cast(e_j), and 1 / s per row. Row 0: the maximum 3 is
  // subtracted, e^0 = 1 and e^-inf = 0; row 1 is causal-masked past column 1 (offset 0: row 1 sees columns 0, 1).
  SoftmaxSpec s{2, 3, 1.0f, true, 0, DataType::kFp32, DataType::kBf16};
  s.normalise = false;
  std::vector<uint32_t> recip;
  const auto out = softmax_rows(s, bits({3, 1, 3, 0, 0, 5}), &recip);
  // Row 0 sees column 0 only: e = 1, s = 1. Row 1: two e^0, s = 2; the masked column is +0 whatever its input.
  EXPECT_EQ(out, (std::vector<uint32_t>{0x3F80u, 0, 0, 0x3F80u, 0x3F80u, 0}));
  EXPECT_EQ(recip, bits({1.0f, 0.5f}));
  // Not causal: e^(1 - 3) = 0.13533528 (FP32 0x3E0A9555) rounds once to BF16 0x3E0B; s = 1 + 0.13533528 + 1 in FP32.
  SoftmaxSpec full{1, 3, 1.0f, false, 0, DataType::kFp32, DataType::kBf16};
  full.normalise = false;
  const auto e = softmax_rows(full, bits({3, 1, 3}), &recip);
  EXPECT_EQ(e, (std::vector<uint32_t>{0x3F80u, 0x3E0Bu, 0x3F80u}));
  EXPECT_NEAR(float_from_bits(recip[0]), 1.0 / (2.0 + std::exp(-2.0)), 1e-7);
}

TEST(GoldenSoftmax, OutputCastOnce) {
  SoftmaxSpec s{1, 3, 1.0f, false, 0, DataType::kFp32, DataType::kBf16};
  const auto out = softmax_rows(s, bits({0, 0, 0}));
  // 1/3 in FP32 is 0x3EAAAAAB; its one rounding to BF16 is 0x3EAB.
  EXPECT_EQ(out, (std::vector<uint32_t>{0x3EABu, 0x3EABu, 0x3EABu}));
}

// The bound of docs/kernels.md: each exp within 1 ULP, then a sum of n terms, a reciprocal and a product, each
// rounded once: relative error below (n + 4) * 2^-23 against the exact softmax of the FP32 inputs.
TEST(GoldenSoftmax, AccurateAgainstExtendedPrecision) {
  std::mt19937_64 rng(test::test_seed());
  double worst = 0.0;
  for (const int cols : {1, 2, 7, 64, 700}) {
    SoftmaxSpec s{8, cols, 0.125f};
    const auto in = test::random_elements(DataType::kFp32, std::size_t(8) * cols, rng, 20.0f);
    const auto out = softmax_rows(s, in);
    for (int r = 0; r < 8; ++r) {
      long double m = -INFINITY, sum = 0;
      for (int j = 0; j < cols; ++j) m = std::max(m, (long double)float_from_bits(in[std::size_t(r) * cols + j]));
      for (int j = 0; j < cols; ++j) sum += expl(0.125L * (float_from_bits(in[std::size_t(r) * cols + j]) - m));
      for (int j = 0; j < cols; ++j) {
        const long double ref = expl(0.125L * (float_from_bits(in[std::size_t(r) * cols + j]) - m)) / sum;
        if (ref < 1e-30L) continue;  // underflowed terms: absolute error only
        const double e = rel_error(out[std::size_t(r) * cols + j], ref);
        worst = std::max(worst, e / std::ldexp(1.0, -23));
        EXPECT_LE(e, (cols + 4) * std::ldexp(1.0, -23)) << fmt::format("cols {} row {} col {}", cols, r, j);
      }
    }
  }
  std::cout << fmt::format("[ accuracy ] softmax worst relative error {:.2f} x 2^-23\n", worst);
}

TEST(GoldenNorm, HandRows) {
  NormSpec s{1, 4, 0.0f};
  const auto ones = bits({1, 1, 1, 1}), zeros = bits({0, 0, 0, 0});
  const auto ln = layernorm_rows(s, bits({1, 2, 3, 4}), ones, zeros);
  // mean 2.5, variance 1.25: (x - 2.5) / sqrt(1.25)
  const long double r = 1.0L / sqrtl(1.25L);
  const float c[] = {-1.5f, -0.5f, 0.5f, 1.5f};
  for (int j = 0; j < 4; ++j) EXPECT_LE(rel_error(ln[std::size_t(j)], c[j] * r), std::ldexp(1.0, -22)) << j;
  // A constant row is centred to 0: out = beta.
  NormSpec e{1, 4, 1e-5f};
  EXPECT_EQ(layernorm_rows(e, bits({7, 7, 7, 7}), bits({2, 3, 4, 5}), bits({-1, 0.5f, 8, -0.0f})),
            bits({-1, 0.5f, 8, 0.0f}));
  // RMSNorm of [3, 4]: mean square 12.5.
  NormSpec rs{1, 2, 0.0f};
  const auto rms = rmsnorm_rows(rs, bits({3, 4}), bits({1, -2}));
  EXPECT_LE(rel_error(rms[0], 3.0L / sqrtl(12.5L)), std::ldexp(1.0, -22));
  EXPECT_LE(rel_error(rms[1], -8.0L / sqrtl(12.5L)), std::ldexp(1.0, -22));
  // NaN / inf in a row: LayerNorm's whole row is NaN.
  for (const uint32_t v : {0x7FC00000u, 0x7F800000u, 0xFF800000u}) {
    const auto out = layernorm_rows(e, {v, f32_bits(1), f32_bits(2), f32_bits(3)}, ones, zeros);
    for (const uint32_t o : out) EXPECT_TRUE(is_nan32(o)) << fmt::format("{:#x}", v);
  }
}

// LayerNorm / RMSNorm against an extended-precision evaluation (gamma = 1, beta = 0): every output within
// (cols + 8) * 2^-23 * (1 + |exact|) (the sums' roundings grow with cols; rsqrt is within 1 ULP).
TEST(GoldenNorm, AccurateAgainstExtendedPrecision) {
  std::mt19937_64 rng(test::test_seed());
  double worst_ln = 0.0, worst_rms = 0.0;
  for (const int cols : {1, 2, 33, 768}) {
    const int rows = 6;
    NormSpec s{rows, cols, 1e-5f};
    auto in = test::random_elements(DataType::kFp32, std::size_t(rows) * cols, rng, 2.0f);
    for (auto& v : in) v = f32_bits(float_from_bits(v) + 3.0f);  // a mean away from 0
    const std::vector<uint32_t> ones(std::size_t(cols), f32_bits(1.0f)), zeros(std::size_t(cols), 0u);
    const auto ln = layernorm_rows(s, in, ones, zeros);
    const auto rms = rmsnorm_rows(s, in, ones);
    for (int r = 0; r < rows; ++r) {
      long double sum = 0, sq = 0, q = 0;
      for (int j = 0; j < cols; ++j) sum += float_from_bits(in[std::size_t(r) * cols + j]);
      const long double mean = sum / cols;
      for (int j = 0; j < cols; ++j) {
        const long double x = float_from_bits(in[std::size_t(r) * cols + j]);
        sq += (x - mean) * (x - mean);
        q += x * x;
      }
      const long double rs_ln = 1.0L / sqrtl(sq / cols + 1e-5L), rs_rms = 1.0L / sqrtl(q / cols + 1e-5L);
      const double tol = (cols + 8) * std::ldexp(1.0, -23);
      for (int j = 0; j < cols; ++j) {
        const std::size_t i = std::size_t(r) * cols + j;
        const long double x = float_from_bits(in[i]);
        const long double want_ln = (x - mean) * rs_ln, want_rms = x * rs_rms;
        const double e_ln = std::fabs(double(float_from_bits(ln[i]) - want_ln)) / (1.0 + std::fabs(double(want_ln)));
        const double e_rms =
            std::fabs(double(float_from_bits(rms[i]) - want_rms)) / (1.0 + std::fabs(double(want_rms)));
        EXPECT_LE(e_ln, tol) << fmt::format("layernorm cols {} [{}][{}]", cols, r, j);
        EXPECT_LE(e_rms, tol) << fmt::format("rmsnorm cols {} [{}][{}]", cols, r, j);
        worst_ln = std::max(worst_ln, e_ln / std::ldexp(1.0, -23));
        worst_rms = std::max(worst_rms, e_rms / std::ldexp(1.0, -23));
      }
    }
  }
  std::cout << fmt::format(
      "[ accuracy ] layernorm worst {:.2f} x 2^-23, rmsnorm worst {:.2f} x 2^-23 (of 1 + |exact|)\n", worst_ln,
      worst_rms);
}

TEST(GoldenTranspose, EqualsGoldenGemmWithIdentity) {
  std::mt19937_64 rng(test::test_seed());
  // The last shape has a special value (Inf, NaN, -0, ...) in about one element of three: most tile columns hold
  // two or more non-finite inputs.
  for (const auto& [rows, cols, tile, special_every] :
       {std::tuple{5, 7, 16, 17}, std::tuple{37, 20, 16, 17}, std::tuple{20, 9, 8, 17}, std::tuple{19, 13, 4, 3}}) {
    const auto in = test::random_elements(DataType::kBf16, std::size_t(rows) * cols, rng, 3.0f, true, special_every);
    const auto out = transpose_te(isa::Dtype::kBf16, rows, cols, in, tile, DataType::kFp32);
    // Per row tile: stationary = in[r0:r1, :] ([K, cols]), moving = identity [K, K] -> [cols, K].
    for (int r0 = 0; r0 < rows; r0 += tile) {
      const int k = std::min(tile, rows - r0);
      GemmOperands ops{isa::Dtype::kBf16, k, cols, k, {}, {}};
      for (int i = 0; i < k * cols; ++i) ops.stationary.push_back(uint16_t(in[std::size_t(r0) * cols + i]));
      for (int i = 0; i < k; ++i) {
        for (int j = 0; j < k; ++j) ops.moving.push_back(i == j ? 0x3F80 : 0);
      }
      const auto want = gemm(ops, tile);
      for (int c = 0; c < cols; ++c) {
        for (int r = 0; r < k; ++r) {
          EXPECT_EQ(out[std::size_t(c) * rows + r0 + r], want[std::size_t(c) * k + r]) << c << "," << r0 + r;
        }
      }
    }
  }
}

TEST(GoldenTranspose, SignedZeroNanAndInfSpread) {
  // in = [[-0, 1], [inf, 2], [3, 4]] (bf16), one tile of 3 rows.
  const std::vector<uint32_t> in{0x8000, 0x3F80, 0x7F80, 0x4000, 0x4040, 0x4080};
  const auto out = transpose_te(isa::Dtype::kBf16, 3, 2, in, 16, DataType::kBf16);
  // out row 0 = in column 0: -0 -> +0 but the inf in that column spreads: NaN at rows 0 and 2, inf at row 1.
  EXPECT_EQ(out, (std::vector<uint32_t>{0x7FC0, 0x7F80, 0x7FC0, 0x3F80, 0x4000, 0x4080}));
  // Tiles of 1 row: nothing spreads, -0 still becomes +0.
  const auto tiled = transpose_te(isa::Dtype::kBf16, 3, 2, in, 1, DataType::kBf16);
  EXPECT_EQ(tiled, (std::vector<uint32_t>{0x0000, 0x7F80, 0x4040, 0x3F80, 0x4000, 0x4080}));
}

TEST(GoldenAttention, BothNormalisationOrdersStayWithinTheBf16Bound) {
  // Causal attention of one head (T = 40 over tiles of 16, d = 8) in both orders: P normalised then rounded to BF16
  // (the separate programs), and P = the exponentials rounded to BF16 with O^T's columns multiplied by 1 / s at the
  // end (the attention pieces). Against softmax(Q K^T / sqrt d) V in long double from the same BF16 inputs, each
  // output is off by at most about one BF16 rounding of the probabilities, 2^-8 of the largest |V| (sum_k p_k = 1),
  // plus the FP32 sums' roundings. Leaving out the final multiply, or applying it twice, misses by a factor s >= 1.
  const int T = 40, d = 8;
  std::mt19937_64 rng(test::test_seed());
  std::normal_distribution<float> n01(0.0f, 1.0f);
  auto draw = [&](std::size_t n) {
    std::vector<uint32_t> v(n);
    for (auto& x : v) x = element_from_f32(DataType::kBf16, f32_bits(2.0f * n01(rng)), true);
    return v;
  };
  const std::vector<uint32_t> qT = draw(std::size_t(d) * T), kT = draw(std::size_t(d) * T);
  const std::vector<uint32_t> v = draw(std::size_t(T) * d);
  const auto val = [](uint32_t bf16) { return static_cast<long double>(float_from_bits(bf16 << 16)); };
  long double vmax = 0;
  for (const uint32_t x : v) vmax = std::max(vmax, std::fabs(val(x)));
  for (const bool deferred : {false, true}) {
    const AttentionResult r = attention(T, 1, d, true, true, qT, kT, v, 16, deferred);
    int worst_q = -1;
    long double worst = 0;
    for (int q = 0; q < T; ++q) {
      std::vector<long double> p(std::size_t(q) + 1);
      long double m = -INFINITY, s = 0;
      for (int k = 0; k <= q; ++k) {
        long double dot = 0;
        for (int c = 0; c < d; ++c) dot += val(qT[std::size_t(c) * T + q]) * val(kT[std::size_t(c) * T + k]);
        p[std::size_t(k)] = dot / std::sqrt(static_cast<long double>(d));
        m = std::max(m, p[std::size_t(k)]);
      }
      for (auto& x : p) s += (x = std::exp(x - m));
      for (int c = 0; c < d; ++c) {
        long double ref = 0;
        for (int k = 0; k <= q; ++k) ref += p[std::size_t(k)] / s * val(v[std::size_t(k) * d + c]);
        const long double err = std::fabs(float_from_bits(r.outT[std::size_t(c) * T + q]) - ref);
        if (err > worst) worst = err, worst_q = q;
      }
    }
    EXPECT_LE(worst, std::ldexp(vmax, -8) + 1e-5L) << (deferred ? "deferred" : "normalised") << ": query " << worst_q;
    EXPECT_GT(worst, 0.0L);
  }
}

TEST(GoldenActivationDevice, ExpAndRsqrtWithinOneUlp) {
  std::mt19937_64 rng(test::test_seed());
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  for (int i = 0; i < 20000; ++i) {
    const uint32_t z = f32_bits(u(rng));
    std::string why;
    EXPECT_TRUE(within_ulps(DataType::kFp32, true, activation_device(isa::ActFunc::kExp, z),
                            activation_reference(isa::ActFunc::kExp, z), kActivationUlpBound, &why))
        << why;
    const uint32_t p = z & 0x7FFFFFFFu;
    EXPECT_TRUE(within_ulps(DataType::kFp32, true, activation_device(isa::ActFunc::kRsqrt, p),
                            activation_reference(isa::ActFunc::kRsqrt, p), kActivationUlpBound, &why))
        << why;
  }
  EXPECT_EQ(activation_device(isa::ActFunc::kExp, 0xFF800000u), 0u);
  EXPECT_EQ(activation_device(isa::ActFunc::kExp, f32_bits(89.0f)), 0x7F800000u);
  EXPECT_EQ(activation_device(isa::ActFunc::kRsqrt, 0x80000000u), 0xFF800000u);
  EXPECT_EQ(activation_device(isa::ActFunc::kRsqrt, f32_bits(-1.0f)), kF32CanonicalNan);
}

}  // namespace
}  // namespace trnsim::golden
