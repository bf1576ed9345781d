// The large Tensor Engines this build has (64x64 with -DTRNSIM_LARGE_TE=ON; 128x128 once hierarchical verilation
// is wired in, docs/performance.md): bit-exact against golden, and the latency formula at size. Label `long`: run
// with `make test-long`.
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl.h"
#include "firmware/golden/gemm_golden.h"
#include "tests/te/te_test_util.h"

namespace trnsim {
namespace {

using isa::Dtype;

class TeLarge : public ::testing::TestWithParam<int> {};

TEST_P(TeLarge, RandomGemmsBitExactAndTimed) {
  const int size = GetParam();
  std::mt19937_64 rng(test::test_seed());
  auto te = cosim::TeRtl::create(size, size);
  for (Dtype dt : isa::kAllDtypes) {
    for (const auto& [k, m, n] : std::vector<std::tuple<int, int, int>>{{size, size, 128}, {size - 5, size / 2 + 1, 1}}) {
      const auto s = test::random_tensor(dt, static_cast<size_t>(k) * m, rng);
      const auto mv = test::random_tensor(dt, static_cast<size_t>(k) * n, rng);
      std::vector<cosim::TeCommandTiming> t;
      const auto got = te->matmul(dt, k, m, n, s, mv, &t);
      const auto want = golden::gemm({dt, k, m, n, s, mv}, size);
      EXPECT_EQ(got, want) << isa::dtype_name(dt) << " K=" << k << " M=" << m << " N=" << n;
      EXPECT_EQ(t[0].latency(), 1u + static_cast<uint64_t>(k));
      EXPECT_EQ(t[1].latency(), 2u + static_cast<uint64_t>(n) + 2u * static_cast<uint64_t>(size));
    }
  }
}

// Every square size of 64 or more that this binary was built with.
std::vector<int> large_sizes() {
  std::vector<int> sizes;
  for (const std::string& s : cosim::TeRtl::built_sizes()) {
    const int rows = std::stoi(s.substr(0, s.find('x')));
    if (rows >= 64 && s == std::to_string(rows) + "x" + std::to_string(rows)) sizes.push_back(rows);
  }
  return sizes;
}

INSTANTIATE_TEST_SUITE_P(Sizes, TeLarge, ::testing::ValuesIn(large_sizes()),
                         [](const auto& info) { return std::to_string(info.param) + "x" + std::to_string(info.param); });

}  // namespace
}  // namespace trnsim
