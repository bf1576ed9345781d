// `trnsim matmul` at Trainium scale: 128x128 arrays (trn3 for the MX types, trn2 for a stochastically
// rounded FP8 output), K long enough for several K tiles of 2R = 256 partitions and several MX blocks per tile,
// ragged M and N. The CLI compares every element with the golden GEMM (and the golden cast) itself; here the
// result file is checked against the golden computed from the same inputs too (the MX ones: the golden quantizer
// and MX GEMM; the SR one: each element is one of the two neighbours of the golden FP32 sum). On the TLM Tensor
// Engine these take well under a second each, so they run in the default suite.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/mx_golden.h"
#include "tests/cli/cli_runner.h"
#include "tests/cli/npy_files.h"

namespace {

using namespace trnsim;
using namespace trnsim::test;

std::vector<uint32_t> random_f32(size_t n, std::mt19937_64& rng, float sd) {
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<uint32_t> v(n);
  for (auto& x : v) {
    const float f = d(rng);
    std::memcpy(&x, &f, 4);
  }
  return v;
}

struct LongMx {
  const char* dtype;
  isa::Dtype dt;
};

class MatmulTrnScaleMx : public ::testing::TestWithParam<LongMx> {};

TEST_P(MatmulTrnScaleMx, Trn3GemmMatchesTheGoldenQuantizationAndGemm) {
  const LongMx c = GetParam();
  std::mt19937_64 rng(4242 + int(c.dt));
  const int k = 700, m = 150, n = 530;  // 3 K tiles (256, 256, 188), 22 blocks, a ragged last block of 28
  auto s = random_f32(size_t(k) * m, rng, 2.0f), mv = random_f32(size_t(k) * n, rng, 0.5f);
  s[size_t(5) * m + 7] = 0x7FC00000u;  // a NaN block on each side: code 0xFF, NaN products in those columns
  mv[size_t(600) * n + 11] = 0xFF800000u;
  const std::string out = next_scratch(".npy");
  const Result r = run(std::string("matmul --config trn3 --te tlm --dtype ") + c.dtype + " --stationary " +
                       write_npy(s, k, m) + " --moving " + write_npy(mv, k, n) + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  const golden::MxTensor qs = golden::quantize_mx(c.dt, k, m, s), qm = golden::quantize_mx(c.dt, k, n, mv);
  const auto want = golden::gemm({c.dt, k, m, n, qs.elements, qm.elements, qs.scales, qm.scales}, 128);
  const auto got = read_npy_f32(out, want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "O[" << i / n << "][" << i % n << "]";  // NaNs are canonical on both sides
  }
}

INSTANTIATE_TEST_SUITE_P(MxTypes, MatmulTrnScaleMx,
                         ::testing::Values(LongMx{"mxfp8e4m3", isa::Dtype::kMxFp8E4M3},
                                           LongMx{"mxfp8e5m2", isa::Dtype::kMxFp8E5M2},
                                           LongMx{"mxfp4", isa::Dtype::kMxFp4}));

TEST(MatmulTrnScaleSr, Trn2Fp8GemmWithAStochasticallyRoundedFp8Output) {
  std::mt19937_64 rng(99);
  const int k = 600, m = 130, n = 520;
  const auto s = random_f32(size_t(k) * m, rng, 1.0f), mv = random_f32(size_t(k) * n, rng, 1.0f);
  const std::string out = next_scratch(".npy");
  const Result r = run("matmul --config trn2 --te tlm --dtype fp8e4m3 --out-dtype fp8e4m3 --round stochastic "
                       "--seed 31337 --stationary " + write_npy(s, k, m) + " --moving " + write_npy(mv, k, n) +
                       " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  std::vector<uint16_t> s8(s.size()), m8(mv.size());
  for (size_t i = 0; i < s.size(); ++i) s8[i] = golden::narrow_from_f32(isa::Dtype::kFp8E4M3, s[i], true);
  for (size_t i = 0; i < mv.size(); ++i) m8[i] = golden::narrow_from_f32(isa::Dtype::kFp8E4M3, mv[i], true);
  const auto sums = golden::gemm({isa::Dtype::kFp8E4M3, k, m, n, s8, m8}, 128);
  const auto got = read_npy_f32(out, sums.size());
  for (size_t i = 0; i < sums.size(); ++i) {
    const uint16_t lo = golden::narrow_stochastic(isa::Dtype::kFp8E4M3, sums[i], true, 0);
    const uint32_t a = golden::widen_to_f32(isa::Dtype::kFp8E4M3, lo);
    const uint32_t b = golden::widen_to_f32(isa::Dtype::kFp8E4M3, uint16_t(lo + 1));
    ASSERT_TRUE(got[i] == a || (got[i] == b && a != sums[i]) || (lo & 0x7F) == 0x7E)
        << "O[" << i / n << "][" << i % n << "]";
  }
}

}  // namespace
