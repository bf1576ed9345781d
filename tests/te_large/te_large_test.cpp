// The large Tensor Engines (64x64 and 128x128, built with -DTRNSIM_LARGE_TE=ON and verilated hierarchically, see
// rtl/CMakeLists.txt): seeded random GEMMs bit-exact against the golden GEMM and the latency formulas at size, with
// and without stalls, and a waveform. Label `long`: run with `make test-long`.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl.h"
#include "firmware/golden/float_bits.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/mx_golden.h"
#include "tests/te/te_test_util.h"
#include "tools/wave/vcd_declarations.h"

namespace trnsim {
namespace {

using isa::Dtype;

// Every square size of 64 or more that this binary was built with.
std::vector<int> large_sizes() {
  std::vector<int> sizes;
  for (const std::string& s : cosim::TeRtl::built_sizes()) {
    const int rows = std::stoi(s.substr(0, s.find('x')));
    if (rows >= 64 && s == std::to_string(rows) + "x" + std::to_string(rows)) sizes.push_back(rows);
  }
  return sizes;
}

// "128x128_bf16": the test name of a (size, dtype) parameter.
std::string size_dtype_name(const ::testing::TestParamInfo<std::tuple<int, Dtype>>& info) {
  const int size = std::get<0>(info.param);
  return std::to_string(size) + "x" + std::to_string(size) + "_" +
         std::string(isa::dtype_name(std::get<1>(info.param)));
}

class TeLarge : public ::testing::TestWithParam<std::tuple<int, Dtype>> {};

// A handful of shapes on one engine, each a LoadStationary + MultiplyMoving pass with every valid/ready high: the
// full array with the largest N, partial K and M, a single partition, a single column. A full pass is kmax
// partitions: the rows, or twice that for FP8 (double-row, BRIEF section 3 rule 8).
TEST_P(TeLarge, RandomGemmsBitExactAndTimed) {
  const auto [size, dt] = GetParam();
  std::mt19937_64 rng(test::test_seed());
  auto te = cosim::TeRtl::create(size, size);
  const int kmax = int(isa::te_max_k(dt, unsigned(size)));
  const std::vector<std::tuple<int, int, int>> shapes = {
      {kmax, size, 512}, {kmax - 5, size / 2 + 1, 1}, {1, size, 33}, {kmax / 2 + 3, 1, 200}};
  for (const auto& [k, m, n] : shapes) {
    const auto s = test::random_tensor(dt, static_cast<size_t>(k) * m, rng);
    const auto mv = test::random_tensor(dt, static_cast<size_t>(k) * n, rng);
    std::vector<cosim::TeCommandTiming> t;
    const auto got = te->matmul(dt, k, m, n, s, mv, &t);
    const auto want = golden::gemm({dt, k, m, n, s, mv}, size);
    EXPECT_EQ(got, want) << isa::dtype_name(dt) << " K=" << k << " M=" << m << " N=" << n;
    // LoadStationary: 1 command cycle + one beat per PE row (K, FP8 ceil(K / 2)). MultiplyMoving:
    // 1 + N + ROWS + COLS + 1 (docs/architecture.md).
    const bool fp8 = dt == Dtype::kFp8E4M3 || dt == Dtype::kFp8E5M2;
    EXPECT_EQ(t[0].latency(), 1u + static_cast<uint64_t>(fp8 ? (k + 1) / 2 : k)) << "K=" << k;
    EXPECT_EQ(t[1].latency(), 2u + static_cast<uint64_t>(n) + 2u * static_cast<uint64_t>(size)) << "N=" << n;
  }
}

// Random input gaps and output backpressure: the whole pipeline stalls together, across the row blocks too.
TEST_P(TeLarge, BackpressureAndGapsKeepResultsExact) {
  const auto [size, dt] = GetParam();
  const uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  cosim::TeRtlOptions opts;
  opts.in_gap_prob = 0.3;
  opts.out_stall_prob = 0.4;
  opts.seed = seed;
  auto te = cosim::TeRtl::create(size, size, opts);
  const int k = int(isa::te_max_k(dt, unsigned(size))), m = size, n = 40;
  const auto s = test::random_tensor(dt, static_cast<size_t>(k) * m, rng);
  const auto mv = test::random_tensor(dt, static_cast<size_t>(k) * n, rng);
  EXPECT_EQ(te->matmul(dt, k, m, n, s, mv), golden::gemm({dt, k, m, n, s, mv}, size)) << isa::dtype_name(dt);
}

INSTANTIATE_TEST_SUITE_P(Sizes, TeLarge, ::testing::Combine(::testing::ValuesIn(large_sizes()),
                                                            ::testing::ValuesIn(isa::kAllDtypes)),
                         size_dtype_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TeLarge);

// MX (BRIEF section 3 rule 10) at size: one pass contracts 2 x size partitions, so 4 (64x64) or 8 (128x128) scale
// blocks of 32 meet in one column sum, each PE row taking its block's scales. Operands quantized by the golden
// quantizer from random FP32 (a NaN in one stationary block), the result against the golden MX GEMM.
class TeLargeMx : public ::testing::TestWithParam<std::tuple<int, Dtype>> {};

// The E8M0 code of every element from the block scales [ceil(K / 32), F]: element (k, f) takes block k / 32's.
std::vector<uint8_t> element_scales(const std::vector<uint8_t>& blocks, int k, int f) {
  std::vector<uint8_t> out(size_t(k) * f);
  for (int kk = 0; kk < k; ++kk) {
    for (int ff = 0; ff < f; ++ff) out[size_t(kk) * f + ff] = blocks[size_t(kk / int(isa::kMxBlockSize)) * f + ff];
  }
  return out;
}

TEST_P(TeLargeMx, QuantizedGemmsWithSeveralBlocksPerPass) {
  const auto [size, dt] = GetParam();
  std::mt19937_64 rng(test::test_seed());
  std::normal_distribution<float> d(0.0f, 4.0f);
  auto te = cosim::TeRtl::create(size, size);
  for (const auto& [k, m, n] : {std::tuple{2 * size, size, 300}, std::tuple{2 * size - 37, size / 2 + 3, 17}}) {
    std::vector<uint32_t> s(size_t(k) * m), mv(size_t(k) * n);
    for (auto& x : s) x = golden::bits_from_float(d(rng));
    for (auto& x : mv) x = golden::bits_from_float(d(rng) * 0.01f);
    s[size_t(40) * m + 1] = 0x7FC00000u;  // column 1's second block gets the NaN scale 0xFF
    const golden::MxTensor qs = golden::quantize_mx(dt, k, m, s), qm = golden::quantize_mx(dt, k, n, mv);
    const cosim::TeRunResult r =
        te->run({cosim::stationary_command(dt, k, m, size, qs.elements, element_scales(qs.scales, k, m)),
                 cosim::moving_command(dt, k, n, size, qm.elements, false, element_scales(qm.scales, k, n))});
    const auto want = golden::gemm({dt, k, m, n, qs.elements, qm.elements, qs.scales, qm.scales}, size);
    for (int mm = 0; mm < m; ++mm) {
      for (int nn = 0; nn < n; ++nn) {
        ASSERT_EQ(r.results.at(0)[size_t(nn) * size + mm], want[size_t(mm) * n + nn])
            << isa::dtype_name(dt) << " K=" << k << " out[" << mm << "][" << nn << "]";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, TeLargeMx, ::testing::Combine(::testing::ValuesIn(large_sizes()),
                                                              ::testing::ValuesIn(isa::kMxTypes)),
                         size_dtype_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TeLargeMx);

// Full dotted names of the variables the FST declares (tools/wave/vcd_declarations.h).
std::set<std::string> fst_signals(const std::string& fst) {
  std::set<std::string> names;
  for (const wave::VcdSignal& s : wave::read_fst_declarations(fst).value_or(std::vector<wave::VcdSignal>{})) {
    names.insert(s.full_name());
  }
  return names;
}

class TeLargeWave : public ::testing::TestWithParam<int> {};

// Waveforms of the hierarchically verilated engines stop at the partition rows' ports (rtl/te/trn_te_hier.vlt); the
// GTKWave layout must name exactly what is there.
TEST_P(TeLargeWave, FstHasTheLayoutsSignals) {
  const int size = GetParam();
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "trnsim_te_large_wave";
  fs::create_directories(dir);
  const fs::path fst = dir / ("te_" + std::to_string(size) + ".fst");
  const fs::path gtkw = dir / ("te_" + std::to_string(size) + ".gtkw");
  fs::remove(fst);
  {
    cosim::TeRtlOptions opts;
    opts.wave_path = fst.string();
    auto te = cosim::TeRtl::create(size, size, opts);
    te->matmul(Dtype::kBf16, 4, 4, 3, std::vector<uint16_t>(16, 0x3F80), std::vector<uint16_t>(12, 0x4000));
  }  // the engine closes the file
  ASSERT_TRUE(fs::exists(fst));
  EXPECT_FALSE(cosim::TeRtl::traces_pe_registers(size, size));
  cosim::write_te_gtkw(gtkw.string(), fst.string(), size, size);

  const std::set<std::string> signals = fst_signals(fst.string());
  ASSERT_TRUE(signals.count("TOP.trn_te.out_data_o")) << signals.size() << " signals in the FST";
  std::ifstream layout(gtkw);
  std::string line;
  int checked = 0;
  while (std::getline(layout, line)) {
    if (line.empty() || line[0] == '[' || line[0] == '@' || line[0] == '-' || line[0] == '*') continue;
    const size_t range = line.rfind('[');
    const bool has_range = range != std::string::npos && line.find(':', range) != std::string::npos;
    const std::string base = has_range ? line.substr(0, range) : line;
    EXPECT_TRUE(signals.count(base)) << "layout names a signal that is not in the FST: " << line;
    ++checked;
  }
  EXPECT_GT(checked, 5 * size);  // five signals per partition row, plus the engine's own
}

INSTANTIATE_TEST_SUITE_P(Sizes, TeLargeWave, ::testing::ValuesIn(large_sizes()),
                         [](const auto& info) { return std::to_string(info.param) + "x" + std::to_string(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TeLargeWave);

}  // namespace
}  // namespace trnsim
