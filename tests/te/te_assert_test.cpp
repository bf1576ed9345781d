// Tensor Engine RTL assertions fired on purpose (docs/verification.md, "Assertions"): the harness breaks one
// interface rule at a time and the test checks that the engine's assertion names the rule in a readable message,
// and that the failure names the cycle and a waveform window. The other rules' tests: te_error_test.cpp
// (illegal dtype, K, N; stationary beat withdrawn), te_accumulate_test.cpp (LoadStationary with accumulate) and
// te_wave_window_test.cpp (FST after a failure).
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl.h"

namespace trnsim {
namespace {

using cosim::TeCommand;
using cosim::TeRtl;
using cosim::TeRtlError;
using cosim::TeRtlOptions;

struct Failure {
  std::string error;   // the TeRtlError text
  std::string output;  // what the RTL printed (its $error lines) and the "[ fail-at  ]" line
};

Failure run_and_capture(const TeRtlOptions& opts, const std::vector<TeCommand>& cmds, int rows = 4, int cols = 4) {
  Failure f;
  auto te = TeRtl::create(rows, cols, opts);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  try {
    te->run(cmds);
  } catch (const TeRtlError& e) {
    f.error = e.what();
  }
  std::fflush(stdout);
  std::fflush(stderr);
  f.output = ::testing::internal::GetCapturedStdout();
  f.output += ::testing::internal::GetCapturedStderr();
  return f;
}

std::vector<uint16_t> ones(size_t n) { return std::vector<uint16_t>(n, 0x3F80); }

TEST(TeAssert, CommandWithdrawnBeforeItWasTakenFiresCmdHold) {
  TeRtlOptions opts;
  opts.break_hold_streams = 1;  // cmd: the MultiplyMoving waits while the load runs, and is withdrawn
  const Failure f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 0, 4, ones(16)},
                                           {TeCommand::Op::kMultiplyMoving, 0, 4, ones(16)}});
  ASSERT_FALSE(f.error.empty()) << "no assertion fired";
  EXPECT_NE(f.output.find("trn_te: cmd_valid_i dropped or command changed while cmd_ready_o was low"),
            std::string::npos)
      << f.output;
  EXPECT_NE(f.error.find("RTL assertion failed"), std::string::npos) << f.error;
  EXPECT_NE(f.output.find("[ fail-at  ] block=te 4x4 cycle="), std::string::npos) << f.output;
}

// FP8 double-row (rule 8): K may reach 2 x ROWS for FP8 only; a BF16 K above ROWS, an FP8 K above 2 x ROWS, and a
// MultiplyMoving whose dtype pairs partitions unlike the loaded stationary's each fire an assertion naming it.
TEST(TeAssert, KBeyondThePassAndUnpairedMovingDataFireCmdKAndCmdPairing) {
  const TeRtlOptions opts;
  const std::vector<uint16_t> fp8_ones(64, 0x3838);  // lanes of two E4M3 1.0
  Failure f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 2, 9, std::vector<uint16_t>(5 * 4, 0x3838)}});
  EXPECT_NE(f.output.find("trn_te: LoadStationary K=9 outside 1..8 for dtype 2"), std::string::npos) << f.output;
  f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 0, 5, ones(20)}});
  EXPECT_NE(f.output.find("trn_te: LoadStationary K=5 outside 1..4 for dtype 0"), std::string::npos) << f.output;
  f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 2, 8, std::vector<uint16_t>(16, 0x3838)},
                             {TeCommand::Op::kMultiplyMoving, 0, 4, ones(16)}});
  ASSERT_FALSE(f.error.empty()) << "no assertion fired";
  EXPECT_NE(f.output.find("trn_te: MultiplyMoving dtype 0 pairs 1 partition(s) per PE row, the loaded stationary 2"),
            std::string::npos)
      << f.output;
  f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 0, 4, ones(16)},
                             {TeCommand::Op::kMultiplyMoving, 3, 4, std::vector<uint16_t>(fp8_ones.begin(),
                                                                                         fp8_ones.begin() + 16)}});
  EXPECT_NE(f.output.find("trn_te: MultiplyMoving dtype 3 pairs 2 partition(s) per PE row, the loaded stationary 1"),
            std::string::npos)
      << f.output;
}

TEST(TeAssert, MovingBeatWithdrawnUnderBackpressureFiresMovHold) {
  TeRtlOptions opts;
  opts.break_hold_streams = 4;  // mov: a column offered while the full pipeline is stalled is withdrawn
  opts.out_stall_prob = 1.0;    // the consumer never takes a result, so the pipeline stalls once full
  const Failure f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 0, 4, ones(16)},
                                           {TeCommand::Op::kMultiplyMoving, 0, 40, ones(160)}});
  ASSERT_FALSE(f.error.empty()) << "no assertion fired";
  EXPECT_NE(f.output.find("trn_te: mov_valid_i dropped or mov_data_i changed while mov_ready_o was low"),
            std::string::npos)
      << f.output;
  EXPECT_NE(f.error.find("--wave-from"), std::string::npos) << f.error;
}

TEST(TeAssert, StationaryBeatWithdrawnFiresStatHoldWithItsMessage) {
  TeRtlOptions opts;
  opts.break_hold_streams = 2;
  const Failure f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 0, 8, ones(32)}}, 8, 4);
  ASSERT_FALSE(f.error.empty()) << "no assertion fired";
  EXPECT_NE(f.output.find("trn_te: stat_valid_i dropped or stat_data_i changed while stat_ready_o was low"),
            std::string::npos)
      << f.output;
}

// The engine's own output, forced wrong (rtl/te/trn_te_force.vlt): the result beat comes out in the wrong PSUM
// write-back mode while the consumer stalls, so only the engine's assertion can see it.
TEST(TeAssert, ResultBeatInTheWrongPsumModeFiresOutAccCmd) {
  TeRtlOptions opts;
  opts.force_out_acc_beat = 0;  // the first result beat says "add to PSUM" for an overwrite MultiplyMoving
  opts.out_stall_prob = 1.0;
  const Failure f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 0, 4, ones(16)},
                                           {TeCommand::Op::kMultiplyMoving, 0, 4, ones(16), false}});
  ASSERT_FALSE(f.error.empty()) << "no assertion fired";
  EXPECT_NE(f.output.find("trn_te: result beat with out_acc_o=1, but its MultiplyMoving was taken with cmd_acc_i=0"),
            std::string::npos)
      << f.output;
  EXPECT_NE(f.error.find("RTL assertion failed"), std::string::npos) << f.error;
  EXPECT_NE(f.output.find("[ fail-at  ] block=te 4x4 cycle="), std::string::npos) << f.output;
}

TEST(TeAssert, PsumModeChangedWhileStalledFiresOutAccHold) {
  TeRtlOptions opts;
  opts.force_out_acc_beat = 0;  // right mode (accumulate) on the beat's first cycle, overwrite from its second
  opts.force_out_acc_late = true;
  opts.out_stall_prob = 1.0;
  const Failure f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 0, 4, ones(16)},
                                           {TeCommand::Op::kMultiplyMoving, 0, 4, ones(16), true}});
  ASSERT_FALSE(f.error.empty()) << "no assertion fired";
  EXPECT_NE(f.output.find("trn_te: out_acc_o changed from 1 to 0 while the result beat was stalled (out_ready_i low)"),
            std::string::npos)
      << f.output;
}

// Without backpressure the beat is taken at once: the transactor's own check names the beat, the command and the
// two modes (the engine's assertion would report a cycle later).
TEST(TeAssert, TransactorRejectsAResultBeatInTheWrongPsumMode) {
  TeRtlOptions opts;
  opts.force_out_acc_beat = 5;  // beat 1 of the second MultiplyMoving
  const Failure f = run_and_capture(opts, {{TeCommand::Op::kLoadStationary, 0, 4, ones(16)},
                                           {TeCommand::Op::kMultiplyMoving, 0, 4, ones(16), true},
                                           {TeCommand::Op::kMultiplyMoving, 0, 3, ones(12), true}});
  EXPECT_NE(f.error.find("out_acc_o=0 (overwrite PSUM) on result beat 1 of command #2, a MultiplyMoving taken with "
                         "cmd_acc_i=1 (add to PSUM)"),
            std::string::npos)
      << f.error;
  EXPECT_NE(f.error.find("cycle "), std::string::npos) << f.error;
  EXPECT_NE(f.error.find("--wave-from"), std::string::npos) << f.error;
}

}  // namespace
}  // namespace trnsim
