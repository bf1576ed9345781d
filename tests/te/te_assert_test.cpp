// Tensor Engine RTL assertions fired on purpose (docs/verification.md, "Assertions"): the harness breaks one
// interface rule at a time and the test checks that the engine's assertion names the rule in a readable message,
// and that the failure names the cycle and a waveform window. The other rules' tests: te_error_test.cpp
// (illegal dtype, K, N; stationary beat withdrawn) and te_wave_window_test.cpp (FST after a failure).
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

}  // namespace
}  // namespace trnsim
