// Tensor Engine RTL: the PSUM write-back mode (cmd_acc_i -> out_acc_o). The test plays the PSUM write port: each
// result beat is added to or written over a PSUM tile according to the beat's out_acc_o, and the final PSUM must
// equal the golden host GEMM (firmware/golden), which splits K into tiles of the array's rows the same way (rule 4).
// The runs have input gaps and output backpressure, so the mode must travel with its column through stalls.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl.h"
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "tests/te/te_test_util.h"

namespace trnsim {
namespace {

using cosim::TeCommand;
using cosim::TeRtl;
using cosim::TeRtlOptions;
using isa::Dtype;
using test::hex32;

// One pass of a K-tiled GEMM: the rows [k0, k0 + k) of stationary [K, M] and moving [K, N].
struct Pass {
  int k0 = 0;
  int k = 0;
  bool accumulate = false;
  bool reload = true;  // false: a MultiplyMoving on the stationary already loaded (no LoadStationary before it)
};

// The commands of `passes`, each LoadStationary padded to the array's columns, each MultiplyMoving beat-major, in
// the engine's lane layout (cosim::stationary_command / moving_command: FP8 partitions paired).
std::vector<TeCommand> commands(const std::vector<Pass>& passes, Dtype dt, int rows, int cols, int m, int n,
                                const std::vector<uint16_t>& s, const std::vector<uint16_t>& mv) {
  std::vector<TeCommand> cmds;
  for (const Pass& p : passes) {
    if (p.reload) {
      const std::vector<uint16_t> tile(s.begin() + ptrdiff_t(p.k0) * m, s.begin() + ptrdiff_t(p.k0 + p.k) * m);
      cmds.push_back(cosim::stationary_command(dt, p.k, m, cols, tile));
    }
    const std::vector<uint16_t> tile(mv.begin() + ptrdiff_t(p.k0) * n, mv.begin() + ptrdiff_t(p.k0 + p.k) * n);
    cmds.push_back(cosim::moving_command(dt, p.k, n, rows, tile, p.accumulate));
  }
  return cmds;
}

// The PSUM write port: applies every result beat of `r` to psum[M, N] in the mode its out_acc_o gives.
void write_psum(const cosim::TeRunResult& r, int cols, int m, int n, std::vector<uint32_t>& psum) {
  for (size_t j = 0; j < r.results.size(); ++j) {
    ASSERT_EQ(r.out_acc[j].size(), size_t(n)) << "multiply #" << j;
    for (int nn = 0; nn < n; ++nn) {
      for (int mm = 0; mm < m; ++mm) {
        const uint32_t sum = r.results[j][size_t(nn) * cols + mm];
        uint32_t& p = psum[size_t(mm) * n + nn];
        p = r.out_acc[j][nn] != 0 ? golden::f32_add(p, sum) : sum;
      }
    }
  }
}

void expect_psum(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want, int n, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) {
      ADD_FAILURE() << what << ": psum[" << i / n << "][" << i % n << "] got " << hex32(got[i]) << " want "
                    << hex32(want[i]);
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " PSUM elements differ";
}

// Random finite FP32 PSUM contents of moderate magnitude.
std::vector<uint32_t> random_psum(size_t count, std::mt19937_64& rng) {
  std::vector<uint32_t> p(count);
  for (uint32_t& x : p) {
    x = uint32_t(rng() & 0x80000000u) | ((120u + uint32_t(rng() % 16)) << 23) | uint32_t(rng() & 0x7FFFFFu);
  }
  return p;
}

// K = 2 full tiles + a partial one through an 8x8 engine, every dtype (a tile: 8 partitions, 16 for FP8, rule 8):
// the first tile overwrites (accumulate off) or adds to what PSUM held (accumulate on), the later tiles add. Input
// gaps and output backpressure throughout.
TEST(TeAccumulate, KTiledPassesGiveTheGoldenPsumInBothModes) {
  const uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  const int rows = 8, cols = 8, m = 7, n = 13;
  for (const Dtype dt : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8E4M3, Dtype::kFp8E5M2}) {
    const int kt = int(isa::te_max_k(dt, unsigned(rows))), k = 2 * kt + 3;
    for (const bool first_accumulates : {false, true}) {
      const std::string what = std::string(isa::dtype_name(dt)) + (first_accumulates ? " into PSUM" : " fresh");
      TeRtlOptions opts;
      opts.in_gap_prob = 0.2;
      opts.out_stall_prob = 0.3;
      opts.seed = seed;
      auto te = TeRtl::create(rows, cols, opts);
      const auto s = test::random_tensor(dt, size_t(k) * m, rng);
      const auto mv = test::random_tensor(dt, size_t(k) * n, rng);
      const std::vector<uint32_t> before = random_psum(size_t(m) * n, rng);
      const std::vector<Pass> passes = {{0, kt, first_accumulates}, {kt, kt, true}, {2 * kt, 3, true}};
      std::vector<uint32_t> psum = before;
      write_psum(te->run(commands(passes, dt, rows, cols, m, n, s, mv)), cols, m, n, psum);
      const golden::GemmOperands ops{dt, k, m, n, s, mv};
      expect_psum(psum, golden::gemm(ops, rows, first_accumulates ? &before : nullptr), n, what);
    }
  }
}

// The K-tiling step on one stationary (cover point c_mult_acc_after_off): an accumulate-off MultiplyMoving and then
// an accumulate-on one, back to back on the same LoadStationary, give S^T @ X0 + S^T @ X1; the golden GEMM of the
// stacked operands [S; S] and [X0; X1] with K tiles of the loaded size is the same sum.
TEST(TeAccumulate, OffThenOnWithTheSameStationaryAddsTheSecondProduct) {
  const uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  const int rows = 4, cols = 4, k = 3, m = 4, n = 9;
  const Dtype dt = Dtype::kBf16;
  TeRtlOptions opts;
  opts.out_stall_prob = 0.5;  // the second command is taken while the first one's results are stalled
  opts.seed = seed;
  auto te = TeRtl::create(rows, cols, opts);
  const auto s = test::random_tensor(dt, size_t(k) * m, rng);
  std::vector<uint16_t> stacked_s = s;
  stacked_s.insert(stacked_s.end(), s.begin(), s.end());
  const auto mv = test::random_tensor(dt, size_t(2 * k) * n, rng);  // [X0; X1]
  const std::vector<Pass> passes = {{0, k, false, true}, {k, k, true, false}};
  // One LoadStationary (of the first k rows of stacked_s, which are S), then the two MultiplyMovings.
  const std::vector<TeCommand> cmds = commands(passes, dt, rows, cols, m, n, stacked_s, mv);
  ASSERT_EQ(cmds.size(), 3u);
  std::vector<uint32_t> psum = random_psum(size_t(m) * n, rng);  // overwritten by the first pass
  const cosim::TeRunResult r = te->run(cmds);
  EXPECT_EQ(r.out_acc.at(0), std::vector<uint8_t>(n, 0));
  EXPECT_EQ(r.out_acc.at(1), std::vector<uint8_t>(n, 1));
  write_psum(r, cols, m, n, psum);
  const golden::GemmOperands ops{dt, 2 * k, m, n, stacked_s, mv};
  expect_psum(psum, golden::gemm(ops, k), n, "bf16 off then on");
}

TEST(TeAccumulate, LoadStationaryWithAccumulateIsRejected) {
  auto te = TeRtl::create(4, 4);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::string err;
  try {
    te->run({{TeCommand::Op::kLoadStationary, 0, 4, std::vector<uint16_t>(16, 0x3F80), true}});
  } catch (const cosim::TeRtlError& e) {
    err = e.what();
  }
  const std::string out = ::testing::internal::GetCapturedStdout() + ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("assertion"), std::string::npos) << err;
  EXPECT_NE(out.find("trn_te: LoadStationary with cmd_acc_i=1 (accumulate applies to MultiplyMoving only)"),
            std::string::npos)
      << out;
  EXPECT_TRUE(te->error_flag()) << "the illegal command must raise the sticky err_o";
}

}  // namespace
}  // namespace trnsim
