// Tensor Engine RTL: results bit-exact against the golden host GEMM (BRIEF section 3), for every dtype, several
// array sizes and the awkward shapes (K < rows, M < cols, N = 1, N = 512), under backpressure too.
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl.h"
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "tests/te/te_test_util.h"

namespace trnsim {
namespace {

using cosim::TeRtl;
using cosim::TeRtlOptions;
using isa::Dtype;
using test::hex32;

// Compares an engine result against golden; reports the first few mismatching elements.
void expect_bit_exact(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want, int m, int n,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int shown = 0, bad = 0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const uint32_t g = got[i * n + j], w = want[i * n + j];
      if (g != w) {
        ++bad;
        if (shown++ < 5) ADD_FAILURE() << what << ": out[" << i << "][" << j << "] got " << hex32(g) << " want " << hex32(w);
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << m * n << " elements differ";
}

std::vector<uint32_t> golden_gemm(Dtype dt, int k, int m, int n, const std::vector<uint16_t>& s,
                                  const std::vector<uint16_t>& mv, int rows) {
  golden::GemmOperands ops{dt, k, m, n, s, mv};
  return golden::gemm(ops, rows);
}

// ---- Random GEMMs over (array size, dtype) -------------------------------------------------------------------
// Parameters: (array rows, array cols, dtype).
class TeRandomGemm : public ::testing::TestWithParam<std::tuple<std::pair<int, int>, Dtype>> {};

TEST_P(TeRandomGemm, ShapesBitExactAgainstGolden) {
  const auto [size, dt] = GetParam();
  const auto [rows, cols] = size;
  std::mt19937_64 rng(test::test_seed());
  auto te = TeRtl::create(rows, cols);
  std::uniform_int_distribution<int> n_any(2, 64);
  // (K, M, N): full tile, K < rows, M < cols, N = 1, N = 512, everything ragged, a 1x1x1 product. A full tile is
  // kmax partitions: rows, or 2 * rows for FP8 (double-row, rule 8), where an odd K and K just above the rows also
  // matter (the last PE row's second partition unused; every PE row's second partition used).
  const int kmax = int(isa::te_max_k(dt, unsigned(rows)));
  std::vector<std::tuple<int, int, int>> shapes = {
      {kmax, cols, n_any(rng)}, {std::max(1, kmax / 2 - 1), cols, 17}, {kmax, std::max(1, cols - 3), 9},
      {kmax, cols, 1},          {kmax, cols, 512},                      {3 % kmax + 1, cols / 2 + 1, n_any(rng)},
      {1, 1, 1}};
  if (kmax > rows) {
    shapes.emplace_back(kmax - 1, cols, 13);
    shapes.emplace_back(rows + 1, cols, 5);
  }
  for (const auto& [k, m, n] : shapes) {
    const auto s = test::random_tensor(dt, static_cast<size_t>(k) * m, rng);
    const auto mv = test::random_tensor(dt, static_cast<size_t>(k) * n, rng);
    const std::string what = std::string(isa::dtype_name(dt)) + " K=" + std::to_string(k) + " M=" +
                             std::to_string(m) + " N=" + std::to_string(n);
    expect_bit_exact(te->matmul(dt, k, m, n, s, mv), golden_gemm(dt, k, m, n, s, mv, rows), m, n, what);
  }
}

TEST_P(TeRandomGemm, SpecialValuesBitExactAgainstGolden) {
  const auto [rows, cols] = std::get<0>(GetParam());
  const Dtype dt = std::get<1>(GetParam());  // not a structured binding: the lambda below captures it (C++17)
  std::mt19937_64 rng(test::test_seed());
  auto te = TeRtl::create(rows, cols);
  const std::vector<uint16_t> specials = test::special_values(dt);
  // Mostly ordinary values with specials sprinkled in, so some columns stay finite and some become NaN/Inf.
  auto pick = [&](size_t count) {
    std::vector<uint16_t> v = test::random_tensor(dt, count, rng);
    for (uint16_t& x : v)
      if (rng() % 5 == 0) x = specials[rng() % specials.size()];
    return v;
  };
  for (int rep = 0; rep < 3; ++rep) {
    const int k = int(isa::te_max_k(dt, unsigned(rows))), m = cols, n = 24;
    const auto s = pick(static_cast<size_t>(k) * m);
    const auto mv = pick(static_cast<size_t>(k) * n);
    expect_bit_exact(te->matmul(dt, k, m, n, s, mv), golden_gemm(dt, k, m, n, s, mv, rows), m, n,
                     std::string(isa::dtype_name(dt)) + " specials rep " + std::to_string(rep));
  }
}

TEST_P(TeRandomGemm, BackpressureAndGapsKeepResultsExact) {
  const auto [size, dt] = GetParam();
  const auto [rows, cols] = size;
  const uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  TeRtlOptions opts;
  opts.in_gap_prob = 0.3;
  opts.out_stall_prob = 0.4;
  opts.seed = seed;
  auto te = TeRtl::create(rows, cols, opts);
  const int k = int(isa::te_max_k(dt, unsigned(rows))) - (rows > 4 ? 1 : 0), m = cols, n = 40;
  const auto s = test::random_tensor(dt, static_cast<size_t>(k) * m, rng);
  const auto mv = test::random_tensor(dt, static_cast<size_t>(k) * n, rng);
  expect_bit_exact(te->matmul(dt, k, m, n, s, mv), golden_gemm(dt, k, m, n, s, mv, rows), m, n,
                   std::string(isa::dtype_name(dt)) + " with stalls");
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<std::pair<int, int>, Dtype>>& info) {
  const auto [rows, cols] = std::get<0>(info.param);
  return std::to_string(rows) + "x" + std::to_string(cols) + "_" + std::string(isa::dtype_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Sizes, TeRandomGemm,
                         ::testing::Combine(::testing::Values(std::pair{4, 4}, std::pair{8, 4}, std::pair{8, 8},
                                                              std::pair{16, 16}),
                                            ::testing::Values(Dtype::kBf16, Dtype::kFp16, Dtype::kFp8E4M3,
                                                              Dtype::kFp8E5M2)),
                         param_name);

// ---- Orientation: the result is stationary^T @ moving, not its transpose -------------------------------------
// ---- MX (BRIEF section 3 rule 10) --------------------------------------------------------------------------------
// Every PE multiplies its two elements by both E8M0 scales before the one rounding, and a NaN scale makes the
// product NaN. The expected column sums are formed here from the golden primitives, in rule 3's order: from +0.0,
// partition by partition, f32_add(sum, f32_mul_scaled(widen(s), widen(m), cs + cm - 254)). Each PE row gets scales
// of its own (the RTL takes a scale per PE row and column; whole 32-partition blocks are the kernel's business), with
// codes across the range: 0, 127, 254, 0xFF (NaN) and random ones.
TEST(TeMx, EachPeScalesItsProductsByBothScalesBeforeTheOneRounding) {
  std::mt19937_64 rng(test::test_seed());
  for (const auto& [rows, cols] : {std::pair{4, 4}, std::pair{16, 16}}) {
    auto te = TeRtl::create(rows, cols);
    for (const Dtype dt : isa::kMxTypes) {
      for (const int k : {2 * rows, 2 * rows - 1, 3}) {
        const int m = cols, n = 37;
        const uint16_t mask = dt == Dtype::kMxFp4 ? 0x0F : 0xFF;
        std::vector<uint16_t> s(size_t(k) * m), mv(size_t(k) * n);
        for (auto& x : s) x = uint16_t(rng() & mask);
        for (auto& x : mv) x = uint16_t(rng() & mask);
        const auto code = [&] {
          const uint64_t r = rng() % 16;
          return uint8_t(r == 0 ? 0 : r == 1 ? 254 : r == 2 ? 0xFF : r == 3 ? 127 : 100 + rng() % 55);
        };
        // One code per PE row (partition pair) and column, given to both partitions of the pair.
        std::vector<uint8_t> ss(s.size()), ms(mv.size());
        for (int j = 0; 2 * j < k; ++j) {
          for (int c = 0; c < m; ++c) ss[size_t(2 * j) * m + c] = code();
          for (int c = 0; c < n; ++c) ms[size_t(2 * j) * n + c] = code();
          if (2 * j + 1 < k) {
            for (int c = 0; c < m; ++c) ss[size_t(2 * j + 1) * m + c] = ss[size_t(2 * j) * m + c];
            for (int c = 0; c < n; ++c) ms[size_t(2 * j + 1) * n + c] = ms[size_t(2 * j) * n + c];
          }
        }
        const cosim::TeRunResult r = te->run({cosim::stationary_command(dt, k, m, cols, s, ss),
                                              cosim::moving_command(dt, k, n, rows, mv, false, ms)});
        std::vector<uint32_t> got(size_t(m) * n), want(size_t(m) * n);
        for (int mm = 0; mm < m; ++mm) {
          for (int nn = 0; nn < n; ++nn) {
            got[size_t(mm) * n + nn] = r.results.at(0)[size_t(nn) * cols + mm];
            uint32_t sum = 0;
            for (int kk = 0; kk < k; ++kk) {
              const uint8_t cs = ss[size_t(kk) * m + mm], cm = ms[size_t(kk) * n + nn];
              const uint32_t p = cs == 0xFF || cm == 0xFF
                                     ? golden::kF32CanonicalNan
                                     : golden::f32_mul_scaled(golden::widen_to_f32(dt, s[size_t(kk) * m + mm]),
                                                              golden::widen_to_f32(dt, mv[size_t(kk) * n + nn]),
                                                              int(cs) + int(cm) - 254);
              sum = golden::f32_add(sum, p);
            }
            want[size_t(mm) * n + nn] = sum;
          }
        }
        expect_bit_exact(got, want, m, n, std::string(isa::dtype_name(dt)) + " " + std::to_string(rows) + "x" +
                                              std::to_string(cols) + " K=" + std::to_string(k));
      }
    }
  }
}

TEST(TeOrientation, TwoByTwoByTwoComesOutUntransposed) {
  auto te = TeRtl::create(4, 4);
  // stationary S = [[1, 2], [3, 4]] (K=2 x M=2), moving = [[5, 6], [7, 8]] (K=2 x N=2), BF16.
  const std::vector<uint16_t> s = {0x3F80, 0x4000, 0x4040, 0x4080};
  const std::vector<uint16_t> mv = {0x40A0, 0x40C0, 0x40E0, 0x4100};
  const std::vector<uint32_t> out = te->matmul(Dtype::kBf16, 2, 2, 2, s, mv);
  // S^T @ moving = [[1*5 + 3*7, 1*6 + 3*8], [2*5 + 4*7, 2*6 + 4*8]] = [[26, 30], [38, 44]].
  const std::vector<float> want = {26.0f, 30.0f, 38.0f, 44.0f};
  ASSERT_EQ(out.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    float got;
    std::memcpy(&got, &out[i], sizeof got);
    EXPECT_EQ(got, want[i]) << "element " << i / 2 << "," << i % 2;
  }
}

// ---- FP8 double-row (BRIEF section 3 rule 8): one pass of a 4-row array contracts 8 FP8 partitions in one sum ----
// Products 2^22 (2048 * 2048) at partitions 0..3 sum to 2^24 exactly; each later product 1 is then a tie that rounds
// back to 2^24 (FP32 spacing 2 there). One sum over all 8 partitions: 2^24 = 0x4B800000. Tiled by the 4 rows (as
// BF16 is): 2^24 + (1 + 1 + 1 + 1) = 2^24 + 4 = 0x4B800002. The values are worked out by hand, not by a model.
TEST(TeDoubleRow, AnFp8PassOfTwiceTheRowsIsOneSumInPartitionOrder) {
  constexpr uint16_t kE5m2_2048 = 0x68, kE5m2_1 = 0x3C;  // 0 11010 00 = 2^11; 0 01111 00 = 1.0
  constexpr uint16_t kBf16_2048 = 0x4500, kBf16_1 = 0x3F80;
  const int k = 8, m = 1, n = 1;
  std::vector<uint16_t> s8(k), mv8(k), s16(k), mv16(k);
  for (int i = 0; i < k; ++i) {
    s8[i] = mv8[i] = i < 4 ? kE5m2_2048 : kE5m2_1;
    s16[i] = mv16[i] = i < 4 ? kBf16_2048 : kBf16_1;
  }
  auto te = TeRtl::create(4, 4);
  EXPECT_EQ(te->matmul(Dtype::kFp8E5M2, k, m, n, s8, mv8), std::vector<uint32_t>{0x4B800000u});
  // The golden applies the same tile: one pass for FP8, two tiles of 4 for BF16.
  EXPECT_EQ(golden_gemm(Dtype::kFp8E5M2, k, m, n, s8, mv8, 4), std::vector<uint32_t>{0x4B800000u});
  EXPECT_EQ(golden_gemm(Dtype::kBf16, k, m, n, s16, mv16, 4), std::vector<uint32_t>{0x4B800002u});
  // A BF16 pass holds only 4 partitions.
  EXPECT_THROW(te->matmul(Dtype::kBf16, k, m, n, s16, mv16), std::invalid_argument);
}

// ---- Several MultiplyMoving on one LoadStationary, different dtypes on each ---------------------------------
TEST(TeSequences, BackToBackMultiplyMovingReuseStationary) {
  const uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  const int size = 8;
  auto te = TeRtl::create(size, size);
  using cosim::TeCommand;
  const Dtype dt = Dtype::kFp16;
  const auto s = test::random_tensor(dt, size * size, rng);
  std::vector<TeCommand> cmds = {{TeCommand::Op::kLoadStationary, 1, size, s}};
  std::vector<std::vector<uint16_t>> movs;
  for (int n : {5, 1, 33}) {
    movs.push_back(test::random_tensor(dt, static_cast<size_t>(n) * size, rng));  // beat-major [N, K]
    cmds.push_back({TeCommand::Op::kMultiplyMoving, 1, n, movs.back()});
  }
  const cosim::TeRunResult r = te->run(cmds);
  ASSERT_EQ(r.results.size(), 3u);
  for (size_t i = 0; i < movs.size(); ++i) {
    const int n = cmds[i + 1].count;
    std::vector<uint16_t> mv(static_cast<size_t>(size) * n);  // [K, N]
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < size; ++k) mv[k * n + j] = movs[i][j * size + k];
    const auto want = golden_gemm(dt, size, size, n, s, mv, size);
    std::vector<uint32_t> got(static_cast<size_t>(size) * n);  // beats are [N, M]
    for (int j = 0; j < n; ++j)
      for (int c = 0; c < size; ++c) got[c * n + j] = r.results[i][j * size + c];
    expect_bit_exact(got, want, size, n, "multiply #" + std::to_string(i));
  }
}

// Shadow weights: a LoadStationary taken while the previous MultiplyMoving's columns are still in the array must not
// change them, and the next MultiplyMoving must compute with the new stationary only, including a new K (the
// partition activity swaps with the weights) and a new pairing (BF16 -> FP8 double-row -> FP16). N = 1 puts the
// load right behind the single column of the multiply before it.
TEST(TeSequences, LoadDuringTheDrainSwapsWeightsBetweenColumns) {
  std::mt19937_64 rng(test::test_seed());
  for (const auto& [rows, cols] : {std::pair{4, 4}, std::pair{8, 4}, std::pair{16, 16}}) {
    auto te = TeRtl::create(rows, cols);
    struct Step {
      Dtype dt;
      int k, n;
    };
    const std::vector<Step> steps = {{Dtype::kBf16, rows, 1}, {Dtype::kBf16, rows / 2, 3},
                                     {Dtype::kFp8E4M3, 2 * rows - 1, 1}, {Dtype::kFp16, 1, 2 * (rows + cols)}};
    std::vector<cosim::TeCommand> cmds;
    std::vector<std::vector<uint32_t>> want;
    for (const Step& st : steps) {
      const auto s = test::random_tensor(st.dt, size_t(st.k) * cols, rng);
      const auto mv = test::random_tensor(st.dt, size_t(st.k) * st.n, rng);
      cmds.push_back(cosim::stationary_command(st.dt, st.k, cols, cols, s));
      cmds.push_back(cosim::moving_command(st.dt, st.k, st.n, rows, mv, false));
      want.push_back(golden_gemm(st.dt, st.k, cols, st.n, s, mv, rows));
    }
    const cosim::TeRunResult r = te->run(cmds);
    ASSERT_EQ(r.results.size(), steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      const int n = steps[i].n;
      std::vector<uint32_t> got(size_t(cols) * n);  // beats are [N, M]
      for (int j = 0; j < n; ++j)
        for (int c = 0; c < cols; ++c) got[size_t(c) * n + j] = r.results[i][size_t(j) * cols + c];
      expect_bit_exact(got, want[i], cols, n,
                       std::to_string(rows) + "x" + std::to_string(cols) + " multiply #" + std::to_string(i));
    }
  }
}

// The shadow-weight rule row by row (docs/architecture.md "In a stream"): a load's beat j is taken as soon as the
// previous swap has passed PE row j, while that swap is still in the rows below. Random chains of loads right behind
// short multiplies (N from 1 to ROWS + COLS + 2, so the swap is anywhere in the array when the beats start), each
// with its own K (1 .. ROWS; FP8: up to 2 ROWS) and dtype: every multiply must see exactly its own stationary and
// partition activity (the golden GEMM), and the RTL's assertions (a_stat_swap, a_stat_last_swap) must stay quiet.
TEST(TeSequences, RandomLoadsBehindShortMultipliesSeeOnlyTheirOwnWeights) {
  std::mt19937_64 rng(test::test_seed());
  for (const auto& [rows, cols] : {std::pair{4, 4}, std::pair{8, 4}, std::pair{16, 16}}) {
    auto te = TeRtl::create(rows, cols);
    const std::vector<Dtype> dtypes = {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8E4M3, Dtype::kFp8E5M2};
    std::vector<cosim::TeCommand> cmds;
    std::vector<std::vector<uint32_t>> want;
    std::vector<int> ns;
    for (int step = 0; step < 24; ++step) {
      const Dtype dt = dtypes[rng() % dtypes.size()];
      const int max_k = int(isa::te_pe_partitions(dt)) * rows;
      const int k = 1 + int(rng() % uint64_t(max_k)), n = 1 + int(rng() % uint64_t(rows + cols + 2));
      const auto st = test::random_tensor(dt, size_t(k) * cols, rng);
      const auto mv = test::random_tensor(dt, size_t(k) * n, rng);
      cmds.push_back(cosim::stationary_command(dt, k, cols, cols, st));
      cmds.push_back(cosim::moving_command(dt, k, n, rows, mv, false));
      want.push_back(golden_gemm(dt, k, cols, n, st, mv, rows));
      ns.push_back(n);
    }
    const cosim::TeRunResult r = te->run(cmds);
    ASSERT_EQ(r.results.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const int n = ns[i];
      std::vector<uint32_t> got(size_t(cols) * n);  // beats are [N, M]
      for (int j = 0; j < n; ++j)
        for (int c = 0; c < cols; ++c) got[size_t(c) * n + j] = r.results[i][size_t(j) * cols + c];
      expect_bit_exact(got, want[i], cols, n,
                       std::to_string(rows) + "x" + std::to_string(cols) + " multiply #" + std::to_string(i));
    }
  }
}

}  // namespace
}  // namespace trnsim
