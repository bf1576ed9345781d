// The TLM Tensor Engine datapath (model::TeFunctional) against the golden GEMM, bit for bit (BRIEF section 3 rules
// 1-3, 5), for every kernel this CPU can run (avx512 / avx2 / generic) and every dtype: every input pattern widened,
// special values (NaN payloads, +-Inf, -0, subnormals, FP8 max, BF16 products that overflow or underflow in FP32),
// K = 1..rows, ragged M and N including N = 1 and N = 512, stationary reuse across commands, and directed cases
// whose result depends on the summation order or on the start value +0.0.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/golden/gemm_golden.h"
#include "model/fp/fp_ops.h"
#include "model/te/te_functional.h"
#include "tests/support/test_seed.h"

namespace trnsim {
namespace {

using isa::Dtype;
using model::TeFunctional;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

// Runs one LoadStationary + MultiplyMoving on `te`, compares with golden::gemm(tile_rows = te.rows()).
void expect_matches_golden(TeFunctional& te, Dtype dt, int k, int m, int n, const std::vector<uint16_t>& st,
                           const std::vector<uint16_t>& mv, const std::string& what, bool load = true) {
  if (load) {
    // One beat per PE row: K partitions, or ceil(K / 2) pairs for FP8 (rule 8).
    const uint64_t load_cycles = te.load_stationary(dt, k, m, st);
    const bool fp8 = dt == Dtype::kFp8E4M3 || dt == Dtype::kFp8E5M2;
    EXPECT_EQ(load_cycles, 1u + uint64_t(fp8 ? (k + 1) / 2 : k)) << what;
  }
  std::vector<uint32_t> got;
  const uint64_t cycles = te.multiply_moving(dt, k, n, mv, got, 0);
  EXPECT_EQ(cycles, model::TeTiming::multiply_moving(te.rows(), te.cols(), n)) << what;
  const std::vector<uint32_t> want = golden::gemm({dt, k, m, n, st, mv}, te.rows());
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) {
      ADD_FAILURE() << what << " [kernel " << te.kernel() << "]: out[" << i / n << "][" << i % n << "] got "
                    << hex32(got[i]) << " want " << hex32(want[i]);
    }
  }
  EXPECT_EQ(bad, 0) << what << " [kernel " << te.kernel() << "]: " << bad << " of " << got.size() << " differ";
}

uint16_t one(Dtype dt) {
  switch (dt) {
    case Dtype::kBf16: return 0x3F80;
    case Dtype::kFp16: return 0x3C00;
    case Dtype::kFp8E4M3:
    case Dtype::kMxFp8E4M3: return 0x38;
    case Dtype::kFp8E5M2:
    case Dtype::kMxFp8E5M2: return 0x3C;
    case Dtype::kMxFp4: return 0x2;  // E2M1 1.0: exponent 1 (bias 1), mantissa 0
    case Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  return 0;
}

// Special patterns: +-0, subnormals (smallest, largest), smallest normal, max finite, +-Inf, NaNs with several
// payloads and signs (E4M3: its two NaN encodings), 1.0 and -1.0.
std::vector<uint16_t> specials(Dtype dt) {
  switch (dt) {
    case Dtype::kBf16:
      return {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x8080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80,
              0x7FC0, 0xFFC0, 0x7F81, 0xFFFF, 0x3F80, 0xBF80};
    case Dtype::kFp16:
      return {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x8400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00,
              0x7E00, 0xFE00, 0x7C01, 0xFFFF, 0x3C00, 0xBC00};
    case Dtype::kFp8E4M3:
    case Dtype::kMxFp8E4M3:
      return {0x00, 0x80, 0x01, 0x81, 0x07, 0x08, 0x88, 0x7E, 0xFE, 0x7F, 0xFF, 0x38, 0xB8};
    case Dtype::kFp8E5M2:
    case Dtype::kMxFp8E5M2:
      return {0x00, 0x80, 0x01, 0x81, 0x03, 0x04, 0x84, 0x7B, 0xFB, 0x7C, 0xFC, 0x7E, 0xFE, 0x7D, 0xFF, 0x3C, 0xBC};
    case Dtype::kMxFp4:  // E2M1: +-0, +-0.5 (subnormal), +-1, +-6 (max); no Inf or NaN
      return {0x0, 0x8, 0x1, 0x9, 0x2, 0xA, 0x7, 0xF};
    case Dtype::kFp32:  // not a narrow (TE operand) type
      break;
  }
  return {};
}

// Operand mix: mostly moderate values (sums stay finite, rounding is exercised), some from the whole finite range,
// some specials, and for BF16 exponents at both ends so products overflow to Inf or land in (or below) the FP32
// subnormal range.
uint16_t draw(Dtype dt, std::mt19937_64& rng, int special_percent) {
  const unsigned pick = unsigned(rng() % 100);
  const uint32_t r = uint32_t(rng());
  const std::vector<uint16_t> sp = specials(dt);
  if (pick < unsigned(special_percent)) return sp[r % sp.size()];
  const bool wide = pick >= 85;
  const uint32_t sign = r >> 31;
  for (;;) {
    const uint32_t x = uint32_t(rng());
    switch (dt) {
      case Dtype::kBf16: {
        uint32_t e = wide ? x % 255u : 123u + x % 9u;
        if (pick >= 95) e = (x & 1) ? 1u + (x >> 1) % 12u : 242u + (x >> 1) % 12u;  // products under/overflow
        return uint16_t((sign << 15) | (e << 7) | ((x >> 8) & 0x7Fu));
      }
      case Dtype::kFp16: {
        const uint32_t e = wide ? x % 31u : 11u + x % 9u;
        return uint16_t((sign << 15) | (e << 10) | ((x >> 8) & 0x3FFu));
      }
      case Dtype::kFp8E4M3:
      case Dtype::kMxFp8E4M3: {
        const uint32_t e = wide ? x % 16u : 5u + x % 5u;
        const uint16_t b = uint16_t((sign << 7) | (e << 3) | ((x >> 8) & 7u));
        if ((b & 0x7F) == 0x7F) continue;
        return b;
      }
      case Dtype::kFp8E5M2:
      case Dtype::kMxFp8E5M2: {
        const uint32_t e = wide ? x % 31u : 13u + x % 5u;
        return uint16_t((sign << 7) | (e << 2) | ((x >> 8) & 3u));
      }
      case Dtype::kMxFp4: return uint16_t(x & 0xFu);  // every E2M1 code is finite
      case Dtype::kFp32:  // not a narrow (TE operand) type
        return 0;
    }
  }
}

std::vector<uint16_t> tensor(Dtype dt, size_t count, std::mt19937_64& rng, int special_percent) {
  std::vector<uint16_t> v(count);
  for (auto& x : v) x = draw(dt, rng, special_percent);
  return v;
}

const std::vector<Dtype> kDtypes(std::begin(isa::kAllDtypes), std::end(isa::kAllDtypes));

class TeFunctionalTest : public ::testing::TestWithParam<std::tuple<std::string, Dtype>> {
 protected:
  std::unique_ptr<TeFunctional> make(int rows, int cols) {
    auto te = std::make_unique<TeFunctional>(rows, cols);
    EXPECT_TRUE(te->use_kernel(std::get<0>(GetParam())));
    return te;
  }
  Dtype dt() const { return std::get<1>(GetParam()); }
};

// Every 16-bit input pattern (FP8: the high byte must be ignored) through both operands: out = +0.0 + x * 1.0 is
// widen(x) except that -0.0 becomes +0.0 and NaNs become canonical.
TEST_P(TeFunctionalTest, EveryPatternWidensExactly) {
  auto te = make(1, 128);
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  const std::vector<uint16_t> unit{one(dt())};
  auto expected = [&](uint16_t p) {
    const uint32_t w = model::fp::widen(dt(), p);
    return w == 0x80000000u ? 0u : w;
  };
  // Moving operand: 128 commands of N = 512 against stationary 1.0 (K = 1, M = 1).
  te->load_stationary(dt(), 1, 1, unit);
  for (size_t c = 0; c < all.size(); c += 512) {
    const std::vector<uint16_t> mv(all.begin() + ptrdiff_t(c), all.begin() + ptrdiff_t(c + 512));
    std::vector<uint32_t> out;
    te->multiply_moving(dt(), 1, 512, mv, out, 0);
    for (int j = 0; j < 512; ++j) {
      ASSERT_EQ(hex32(out[j]), hex32(expected(mv[j]))) << "moving pattern 0x" << std::hex << mv[j];
    }
  }
  // Stationary operand: 512 loads of M = 128 against moving 1.0 (K = 1, N = 1).
  for (size_t c = 0; c < all.size(); c += 128) {
    const std::vector<uint16_t> st(all.begin() + ptrdiff_t(c), all.begin() + ptrdiff_t(c + 128));
    te->load_stationary(dt(), 1, 128, st);
    std::vector<uint32_t> out;
    te->multiply_moving(dt(), 1, 1, unit, out, 0);
    for (int i = 0; i < 128; ++i) {
      ASSERT_EQ(hex32(out[i]), hex32(expected(st[i]))) << "stationary pattern 0x" << std::hex << st[i];
    }
  }
}

// K = 1..rows (FP8: 1..2 * rows, double-row) on several engine sizes, ragged M and N (including M = 1, M = cols,
// N = 1, N = 512), ordinary values with a few specials.
TEST_P(TeFunctionalTest, AllKRaggedShapesMatchGolden) {
  std::mt19937_64 rng(test::test_seed());
  for (const auto& [rows, cols] : {std::pair{16, 16}, std::pair{128, 128}, std::pair{7, 5}, std::pair{1, 1}}) {
    auto te = make(rows, cols);
    std::uniform_int_distribution<int> m_any(1, cols), n_any(1, 70);
    for (int k = 1; k <= int(isa::te_max_k(dt(), unsigned(rows))); ++k) {
      const int m = k % 5 == 0 ? cols : k % 7 == 0 ? 1 : m_any(rng);
      const int n = k % 8 == 0 ? 512 : k % 8 == 3 ? 1 : k % 8 == 5 ? 512 - int(rng() % 31) : n_any(rng);
      const auto st = tensor(dt(), size_t(k) * m, rng, 2);
      const auto mv = tensor(dt(), size_t(k) * n, rng, 2);
      expect_matches_golden(*te, dt(), k, m, n, st, mv,
                            std::to_string(rows) + "x" + std::to_string(cols) + " K=" + std::to_string(k) +
                                " M=" + std::to_string(m) + " N=" + std::to_string(n));
      if (HasFailure()) return;
    }
  }
}

// Dense specials: many columns become NaN or +-Inf, products of max values overflow, subnormal products round.
TEST_P(TeFunctionalTest, SpecialValuesMatchGolden) {
  std::mt19937_64 rng(test::test_seed());
  for (const auto& [rows, cols] : {std::pair{16, 16}, std::pair{128, 128}, std::pair{5, 9}}) {
    auto te = make(rows, cols);
    for (int pct : {5, 20, 60}) {
      const int kmax = int(isa::te_max_k(dt(), unsigned(rows)));
      for (const auto& [k, m, n] : {std::tuple{kmax, cols, 512}, std::tuple{std::max(1, kmax - 3), cols - 1, 37},
                                    std::tuple{1, cols, 1}, std::tuple{kmax, 1, 512}}) {
        const auto st = tensor(dt(), size_t(k) * m, rng, pct);
        const auto mv = tensor(dt(), size_t(k) * n, rng, pct);
        expect_matches_golden(*te, dt(), k, m, n, st, mv,
                              std::to_string(pct) + "% specials, " + std::to_string(rows) + "x" +
                                  std::to_string(cols) + " K=" + std::to_string(k) + " M=" + std::to_string(m) +
                                  " N=" + std::to_string(n));
      }
    }
  }
}

// One stationary, several MultiplyMoving commands of different N (the packed moving buffer is reused), then a
// smaller stationary (the packed weights shrink).
TEST_P(TeFunctionalTest, StationaryReusedAndReloaded) {
  std::mt19937_64 rng(test::test_seed());
  auto te = make(128, 128);
  for (const auto& [k, m] : {std::pair{128, 128}, std::pair{33, 61}, std::pair{128, 3}}) {
    const auto st = tensor(dt(), size_t(k) * m, rng, 3);
    te->load_stationary(dt(), k, m, st);
    for (int n : {512, 1, 100, 17, 512, 33}) {
      const auto mv = tensor(dt(), size_t(k) * n, rng, 3);
      expect_matches_golden(*te, dt(), k, m, n, st, mv,
                            "K=" + std::to_string(k) + " M=" + std::to_string(m) + " N=" + std::to_string(n),
                            /*load=*/false);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, TeFunctionalTest,
    ::testing::Combine(::testing::ValuesIn(TeFunctional::available_kernels()), ::testing::ValuesIn(kDtypes)),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" + std::string(isa::dtype_name(std::get<1>(info.param)));
    });

// ---- directed cases, every kernel ----------------------------------------------------------------------------------

class TeFunctionalDirected : public ::testing::TestWithParam<std::string> {};

// out[0][j] for a K x 1 stationary and a K x n moving operand, BF16.
std::vector<uint32_t> column_sums(const std::string& kernel, const std::vector<uint16_t>& st,
                                  const std::vector<uint16_t>& mv, int n) {
  TeFunctional te(128, 128);
  EXPECT_TRUE(te.use_kernel(kernel));
  const int k = int(st.size());
  te.load_stationary(Dtype::kBf16, k, 1, st);
  std::vector<uint32_t> out;
  te.multiply_moving(Dtype::kBf16, k, n, mv, out, 0);
  return out;
}

// The column sum adds partitions in increasing order: 2^24 + 1 + 1 rounds to 2^24 at each step (ties to even),
// while the reverse order would give 2^24 + 2. Repeated over N = 512 columns so every lane of every block sees it.
TEST_P(TeFunctionalDirected, SumsInPartitionOrder) {
  const std::vector<uint16_t> st{0x3F80, 0x3F80, 0x3F80};  // 1.0 x3
  std::vector<uint16_t> mv;
  for (uint16_t v : {uint16_t(0x4B80), uint16_t(0x3F80), uint16_t(0x3F80)})  // 2^24, 1, 1
    mv.insert(mv.end(), 512, v);
  for (uint32_t v : column_sums(GetParam(), st, mv, 512)) ASSERT_EQ(hex32(v), "0x4B800000");
  std::vector<uint16_t> rev;
  for (uint16_t v : {uint16_t(0x3F80), uint16_t(0x3F80), uint16_t(0x4B80)}) rev.insert(rev.end(), 512, v);
  for (uint32_t v : column_sums(GetParam(), st, rev, 512)) ASSERT_EQ(hex32(v), "0x4B800001");  // 2^24 + 2
}

// The sum starts at +0.0: a single -0.0 product gives +0.0. Each product is rounded before it is added (no
// fused multiply-add): partition 0's product is 2^-16 * 2^-133 = 2^-149 (the smallest FP32 subnormal, exact),
// partition 1's is 2^-75 * 2^-75 = 2^-150, a tie that rounds to +0.0, so the sum is 2^-149 (0x00000001); a fused
// multiply-add would round 2^-149 + 2^-150 once, to 2^-148 (0x00000002).
TEST_P(TeFunctionalDirected, StartsAtPlusZeroAndRoundsEachProduct) {
  for (uint32_t v : column_sums(GetParam(), {0xBF80}, std::vector<uint16_t>(512, 0x0000), 512))  // -1.0 * +0.0
    ASSERT_EQ(hex32(v), "0x00000000");
  const std::vector<uint16_t> st{0x3780, 0x1A00};  // 2^-16, 2^-75
  std::vector<uint16_t> mv(512, 0x0001);           // partition 0: 2^-133 (smallest BF16 subnormal)
  mv.insert(mv.end(), 512, uint16_t(0x1A00));      // partition 1: 2^-75
  for (uint32_t v : column_sums(GetParam(), st, mv, 512)) ASSERT_EQ(hex32(v), "0x00000001");
}

// NaN results are canonical whatever the input payload or sign; Inf - Inf is NaN; overflow gives Inf.
TEST_P(TeFunctionalDirected, CanonicalNanAndOverflow) {
  for (uint16_t nan : {uint16_t(0x7F81), uint16_t(0xFFC1), uint16_t(0xFFFF)}) {
    for (uint32_t v : column_sums(GetParam(), {0x3F80}, std::vector<uint16_t>(37, nan), 37))
      ASSERT_EQ(hex32(v), "0x7FC00000");
  }
  std::vector<uint16_t> inf_minus_inf(512, 0x7F80);
  inf_minus_inf.insert(inf_minus_inf.end(), 512, 0xFF80);
  for (uint32_t v : column_sums(GetParam(), {0x3F80, 0x3F80}, inf_minus_inf, 512)) ASSERT_EQ(hex32(v), "0x7FC00000");
  // max * max overflows to +Inf in FP32; -max * max to -Inf; their sum is NaN.
  for (uint32_t v : column_sums(GetParam(), {0x7F7F}, std::vector<uint16_t>(9, 0x7F7F), 9))
    ASSERT_EQ(hex32(v), "0x7F800000");
  for (uint32_t v : column_sums(GetParam(), {0x7F7F, 0xFF7F}, std::vector<uint16_t>(2, 0x7F7F), 1))
    ASSERT_EQ(hex32(v), "0x7FC00000");
}

INSTANTIATE_TEST_SUITE_P(Kernels, TeFunctionalDirected, ::testing::ValuesIn(TeFunctional::available_kernels()),
                         [](const auto& info) { return info.param; });

TEST(TeFunctionalKernels, GenericAlwaysAvailableAndDefaultIsFirst) {
  const std::vector<std::string> k = TeFunctional::available_kernels();
  ASSERT_FALSE(k.empty());
  EXPECT_EQ(k.back(), "generic");
  EXPECT_EQ(k.front(), TeFunctional::kernel_name());
  EXPECT_EQ(std::string(TeFunctional(4, 4).kernel()), k.front());
  TeFunctional te(4, 4);
  EXPECT_FALSE(te.use_kernel("no-such-kernel"));
}

TEST(TeFunctionalKernels, RejectsShapesOutsideTheArray) {
  TeFunctional te(8, 4);
  EXPECT_THROW(te.load_stationary(Dtype::kBf16, 9, 4, std::vector<uint16_t>(36)), std::invalid_argument);
  EXPECT_THROW(te.load_stationary(Dtype::kFp8E4M3, 17, 4, std::vector<uint16_t>(68)), std::invalid_argument);
  te.load_stationary(Dtype::kFp8E4M3, 16, 4, std::vector<uint16_t>(64));  // double-row: 2 x 8 rows
  EXPECT_THROW(te.load_stationary(Dtype::kBf16, 8, 5, std::vector<uint16_t>(40)), std::invalid_argument);
  EXPECT_THROW(te.load_stationary(Dtype::kBf16, 2, 2, std::vector<uint16_t>(3)), std::invalid_argument);
  te.load_stationary(Dtype::kBf16, 2, 2, std::vector<uint16_t>(4));
  std::vector<uint32_t> out;
  EXPECT_THROW(te.multiply_moving(Dtype::kBf16, 3, 1, std::vector<uint16_t>(3), out, 0), std::invalid_argument);
  EXPECT_THROW(te.multiply_moving(Dtype::kBf16, 2, 2, std::vector<uint16_t>(3), out, 0), std::invalid_argument);
}

// ---- MX (rule 10): every kernel against the golden GEMM on random elements (specials included) and random
// scales. Scales are drawn near 127 (the fast path: scaled operands are FP32 values) or anywhere in 0..255 (0xFF
// NaN, and extremes whose scaled operands leave FP32, which take the exact path).
class TeFunctionalMx : public ::testing::TestWithParam<std::tuple<std::string, Dtype>> {};

TEST_P(TeFunctionalMx, RandomElementsAndScalesMatchGolden) {
  const auto [kernel, dt] = GetParam();
  const uint64_t seed = test::test_seed() ^ uint64_t(dt);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 24; ++trial) {
    TeFunctional te(16, 16);
    ASSERT_TRUE(te.use_kernel(kernel));
    const int k = 1 + int(rng() % 32), m = 1 + int(rng() % 16), n = 1 + int(rng() % 40);
    const bool extreme = trial % 3 == 2;
    auto scale = [&] { return uint8_t(extreme ? rng() % 256 : 120 + rng() % 15); };
    const std::vector<uint16_t> st = tensor(dt, size_t(k) * m, rng, 10), mv = tensor(dt, size_t(k) * n, rng, 10);
    // Golden scales are per block [ceil(K/32), F]; the datapath takes one per element [K, F] (K <= 32 here: one
    // block).
    std::vector<uint8_t> st_scales(static_cast<size_t>(m)), mv_scales(static_cast<size_t>(n));
    for (auto& c : st_scales) c = scale();
    for (auto& c : mv_scales) c = scale();
    std::vector<uint8_t> st_each(size_t(k) * m), mv_each(size_t(k) * n);
    for (int r = 0; r < k; ++r) {
      for (int c = 0; c < m; ++c) st_each[size_t(r) * m + c] = st_scales[size_t(c)];
      for (int c = 0; c < n; ++c) mv_each[size_t(r) * n + c] = mv_scales[size_t(c)];
    }
    EXPECT_EQ(te.load_stationary(dt, k, m, st, st_each), 1u + uint64_t(k + 1) / 2);
    std::vector<uint32_t> got;
    model::PsumWrite write = model::PsumWrite::kOverwrite;
    te.multiply_moving(dt, k, n, mv, mv_each, got, write, 0);
    const auto want = golden::gemm({dt, k, m, n, st, mv, st_scales, mv_scales}, 16);
    ASSERT_EQ(got.size(), want.size());
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != want[i] && bad++ < 5) {
        ADD_FAILURE() << isa::dtype_name(dt) << " [kernel " << kernel << "] trial " << trial << " (TRNSIM_SEED="
                      << test::test_seed() << "): out[" << i / size_t(n) << "][" << i % size_t(n) << "] got "
                      << hex32(got[i]) << " want " << hex32(want[i]);
      }
    }
  }
}

TEST(TeFunctionalMxDirected, ScaledOperandsOutsideFp32TakeTheExactPath) {
  // 448 * 2^127 (no FP32 value) times 2^-9 * 2^-127: 0.875 (golden MxGemm.ProductIsScaledAndRoundedOnce).
  TeFunctional te(16, 16);
  te.load_stationary(Dtype::kMxFp8E4M3, 1, 1, {0x7E}, {254});
  std::vector<uint32_t> out;
  model::PsumWrite write = model::PsumWrite::kOverwrite;
  te.multiply_moving(Dtype::kMxFp8E4M3, 1, 1, {0x01}, {0}, out, write, 0);
  EXPECT_EQ(out.at(0), 0x3F600000u);
  EXPECT_THROW(te.multiply_moving(Dtype::kMxFp8E4M3, 1, 1, {0x01}, {}, out, write, 0), std::invalid_argument);
}

std::vector<std::tuple<std::string, Dtype>> mx_params() {
  std::vector<std::tuple<std::string, Dtype>> p;
  for (const std::string& k : TeFunctional::available_kernels())
    for (Dtype dt : isa::kMxTypes) p.emplace_back(k, dt);
  return p;
}

INSTANTIATE_TEST_SUITE_P(Mx, TeFunctionalMx, ::testing::ValuesIn(mx_params()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, Dtype>>& info) {
                           return std::get<0>(info.param) + "_" + std::string(isa::dtype_name(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace trnsim
