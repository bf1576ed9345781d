// Tensor Engine RTL: cycle counts follow the closed-form latency model of docs/architecture.md ("Timing").
//
// With every valid/ready high:
//   LoadStationary(K)            = 1 + K                    cycles (command handshake .. last stationary beat;
//                                  FP8: 1 + ceil(K / 2), one beat per PE row's pair of partitions)
//   MultiplyMoving(N)            = 1 + N + (ROWS + COLS + 1) cycles (command handshake .. last result beat;
//                                  ROWS + COLS + 1 register stages from a moving beat to its result beat)
//   LoadStationary + Multiply    = K + N + ROWS + COLS + 3  cycles, i.e. 2R + C + N + 3 for a full-height tile,
//                                  SCALE-Sim's weight-stationary 2R + C + T - 2 plus 5 (see the doc)
//   one LoadStationary and MultiplyMoving(N1), (N2), ... back to back: each further command adds 1 + N_i cycles.
//   a LoadStationary after a MultiplyMoving: its command is taken as soon as that multiply has taken its first
//                                  column; beat j (PE row j) no earlier than COLS + 1 + j cycles after that column
//                                  and its last beat no earlier than ROWS + COLS cycles after it (shadow weights:
//                                  the swap has passed row j, or left the array); the next MultiplyMoving after
//                                  both sequencers are idle.
// The expected values below are the formula, written out; nothing is taken from the engine under test.
#include <algorithm>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl.h"
#include "tests/te/te_test_util.h"

namespace trnsim {
namespace {

using cosim::TeCommand;
using cosim::TeCommandTiming;
using cosim::TeRtl;
using isa::Dtype;

TEST(TeTiming, LoadAndMultiplyLatenciesFollowTheFormula) {
  std::mt19937_64 rng(test::test_seed());
  for (const auto& [r, c] : {std::pair{4, 4}, std::pair{8, 4}, std::pair{8, 8}, std::pair{16, 16}}) {
    auto te = TeRtl::create(r, c);
    const uint64_t rows = r, cols = c;
    for (int k : {1, r / 2, r}) {
      for (int n : {1, 7, 64, 512}) {
        const auto s = test::random_tensor(Dtype::kBf16, static_cast<size_t>(k) * c, rng);
        const auto mv = test::random_tensor(Dtype::kBf16, static_cast<size_t>(k) * n, rng);
        std::vector<TeCommandTiming> t;
        te->matmul(Dtype::kBf16, k, c, n, s, mv, &t);
        ASSERT_EQ(t.size(), 2u);
        SCOPED_TRACE(testing::Message() << r << "x" << c << " K=" << k << " N=" << n);
        EXPECT_EQ(t[0].latency(), 1u + static_cast<uint64_t>(k));
        EXPECT_EQ(t[1].latency(), 1u + static_cast<uint64_t>(n) + rows + cols + 1u);
        // The multiply's command is taken the cycle after the last stationary beat.
        EXPECT_EQ(t[1].cmd_cycle, t[0].last_beat_cycle + 1);
        EXPECT_EQ(t[1].last_out_cycle - t[0].cmd_cycle + 1,
                  static_cast<uint64_t>(k) + static_cast<uint64_t>(n) + rows + cols + 3);
      }
    }
  }
}

// FP8 double-row (rule 8): a LoadStationary takes one beat per PE row, two partitions each, so
// L_load(K) = 1 + ceil(K / 2); MultiplyMoving is unchanged. A pass contracts up to 2 * ROWS partitions in the
// cycles a BF16 pass needs for ROWS, so a K of 2 * ROWS * t takes t passes instead of 2t: half the TE cycles.
TEST(TeTiming, Fp8LoadTakesOneBeatPerPairAndContractsTwiceTheRowsPerPass) {
  std::mt19937_64 rng(test::test_seed());
  for (const auto& [r, c] : {std::pair{4, 4}, std::pair{8, 4}, std::pair{16, 16}}) {
    auto te = TeRtl::create(r, c);
    const uint64_t rows = r, cols = c;
    for (int k : {1, 2, r - 1, r + 1, 2 * r - 1, 2 * r}) {
      if (k < 1) continue;
      const int n = 33;
      const auto s = test::random_tensor(Dtype::kFp8E4M3, static_cast<size_t>(k) * c, rng);
      const auto mv = test::random_tensor(Dtype::kFp8E4M3, static_cast<size_t>(k) * n, rng);
      std::vector<TeCommandTiming> t;
      te->matmul(Dtype::kFp8E4M3, k, c, n, s, mv, &t);
      ASSERT_EQ(t.size(), 2u);
      SCOPED_TRACE(testing::Message() << r << "x" << c << " fp8 K=" << k);
      EXPECT_EQ(t[0].latency(), 1u + static_cast<uint64_t>((k + 1) / 2));
      EXPECT_EQ(t[1].latency(), 1u + static_cast<uint64_t>(n) + rows + cols + 1u);
    }
    // K = 2 * ROWS: one FP8 pass (load 1 + ROWS) against two BF16 passes of ROWS each.
    const int n = 512;
    std::vector<TeCommandTiming> t8, t16;
    te->matmul(Dtype::kFp8E5M2, 2 * r, c, n, std::vector<uint16_t>(size_t(2 * r) * c, 0x3C),
               std::vector<uint16_t>(size_t(2 * r) * n, 0x3C), &t8);
    te->matmul(Dtype::kBf16, r, c, n, std::vector<uint16_t>(size_t(r) * c, 0x3F80),
               std::vector<uint16_t>(size_t(r) * n, 0x3F80), &t16);
    const uint64_t fp8_pass = t8[0].latency() + t8[1].latency(), bf16_pass = t16[0].latency() + t16[1].latency();
    EXPECT_EQ(fp8_pass, (1 + rows) + (n + rows + cols + 2));  // 2R partitions, the cycles of R in BF16
    EXPECT_EQ(fp8_pass, bf16_pass) << "one FP8 pass of 2R partitions costs one BF16 pass of R: K = 2R in half";
  }
}

TEST(TeTiming, FullHeightTileIsScaleSimPlusFive) {
  for (const auto& [r, c] : {std::pair{4, 4}, std::pair{8, 4}, std::pair{8, 8}, std::pair{16, 16}}) {
    auto te = TeRtl::create(r, c);
    const int n = 100;
    std::vector<TeCommandTiming> t;
    te->matmul(Dtype::kBf16, r, c, n, std::vector<uint16_t>(static_cast<size_t>(r) * c, 0x3F80),
               std::vector<uint16_t>(static_cast<size_t>(r) * n, 0x3F80), &t);
    const uint64_t total = t[1].last_out_cycle - t[0].cmd_cycle + 1;
    const uint64_t scale_sim = 2u * r + c + n - 2;  // SCALE-Sim: 2*Sr + Sc + T - 2
    EXPECT_EQ(total, scale_sim + 5) << r << "x" << c;
  }
}

TEST(TeTiming, BackToBackMultipliesStreamOneColumnPerCycle) {
  const int size = 8;
  auto te = TeRtl::create(size, size);
  const std::vector<int> ns = {10, 3, 50};
  std::vector<TeCommand> cmds = {{TeCommand::Op::kLoadStationary, 0, size, std::vector<uint16_t>(size * size, 0)}};
  for (int n : ns) cmds.push_back({TeCommand::Op::kMultiplyMoving, 0, n, std::vector<uint16_t>(n * size, 0)});
  const auto r = te->run(cmds);
  // Each MultiplyMoving command is taken the cycle after the previous one's last moving beat.
  for (size_t i = 1; i + 1 < cmds.size(); ++i) {
    EXPECT_EQ(r.timing[i + 1].cmd_cycle, r.timing[i].last_beat_cycle + 1);
    EXPECT_EQ(r.timing[i].last_beat_cycle - r.timing[i].cmd_cycle, static_cast<uint64_t>(ns[i - 1]));
  }
  // Load (1 + K) + each multiply (1 + N_i) + the pipeline (ROWS + COLS + 1) behind the last beat.
  const uint64_t expect = (1 + size) + (1 + 10) + (1 + 3) + (1 + 50) + size + size + 1;
  EXPECT_EQ(r.timing.back().last_out_cycle - r.timing.front().cmd_cycle + 1, expect);
}

// Shadow weights and the two sequencers: a LoadStationary is taken while the multiply before it streams (once that
// multiply has taken its swapping first column); its beat j waits only for the swap flag to pass PE row j (COLS + 1
// + j cycles after that column was taken), its last beat for the flag to leave the array (ROWS + COLS cycles after
// it); the next MultiplyMoving follows the earlier one's last column back to back when the load is done by then.
// K below ROWS (and FP8's pairs) make the last beat the one that waits.
TEST(TeTiming, LoadOverlapsTheMultiplyBeforeIt) {
  for (const auto& [r, c] : {std::pair{4, 4}, std::pair{8, 4}, std::pair{16, 16}}) {
    auto te = TeRtl::create(r, c);
    const uint64_t rows = r, cols = c;
    for (const auto& [dt, k] : {std::pair{Dtype::kBf16, r}, std::pair{Dtype::kBf16, r / 2}, std::pair{Dtype::kBf16, 1},
                                std::pair{Dtype::kFp8E4M3, 2 * r - 1}}) {
      const uint64_t beats = uint64_t(isa::te_sbuf_partitions(dt, unsigned(k)));
      for (int n : {1, 5, c, c + 1, r + c - 2, r + c - 1, r + c, 100}) {
        const uint16_t one = dt == Dtype::kBf16 ? 0x3F80 : 0x3838;  // 1.0 (FP8: a pair of 1.0)
        std::vector<TeCommand> cmds;
        for (int rep = 0; rep < 2; ++rep) {
          cmds.push_back({TeCommand::Op::kLoadStationary, uint8_t(dt), k, std::vector<uint16_t>(beats * c, one)});
          cmds.push_back({TeCommand::Op::kMultiplyMoving, uint8_t(dt), n, std::vector<uint16_t>(size_t(n) * r, one)});
        }
        const auto t = te->run(cmds).timing;
        ASSERT_EQ(t.size(), 4u);
        SCOPED_TRACE(testing::Message() << r << "x" << c << " " << isa::dtype_name(dt) << " K=" << k << " N=" << n);
        const uint64_t first_mov = t[1].cmd_cycle + 1;  // the swapping column
        EXPECT_EQ(t[1].cmd_cycle, t[0].last_beat_cycle + 1);
        EXPECT_EQ(t[2].cmd_cycle, first_mov + 1) << "taken once the multiply before it has swapped";
        const uint64_t first_stat = std::max(t[2].cmd_cycle + 1, first_mov + cols + 1);
        const uint64_t last_stat = std::max(first_stat + beats - 1, first_mov + rows + cols);
        EXPECT_EQ(t[2].last_beat_cycle, last_stat);
        EXPECT_EQ(t[3].cmd_cycle, std::max(t[2].last_beat_cycle, t[1].last_beat_cycle) + 1);
        EXPECT_EQ(t[3].last_out_cycle, t[3].cmd_cycle + uint64_t(n) + rows + cols + 1);
        if (beats == rows && uint64_t(n) >= cols + 1 + rows) {
          EXPECT_EQ(t[3].cmd_cycle, t[1].last_beat_cycle + 1) << "the load hides under the multiply";
        }
      }
    }
  }
}

}  // namespace
}  // namespace trnsim
