// Tensor Engine RTL: illegal command fields and bad harness input are reported, never silently computed.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl.h"

namespace trnsim {
namespace {

using cosim::TeCommand;
using cosim::TeRtl;
using cosim::TeRtlError;

// Runs `cmds` and returns the TeRtlError text (empty if none was thrown).
std::string run_error(TeRtl& te, const std::vector<TeCommand>& cmds) {
  try {
    te.run(cmds);
  } catch (const TeRtlError& e) {
    return e.what();
  }
  return {};
}

TEST(TeErrors, IllegalDtypeCodeFiresAssertionAndRaisesErr) {
  // 4 is fp32, the one code of the 3-bit field that is no TE operand type (5..7 are the MX types).
  for (uint8_t code : {4}) {
    auto te = TeRtl::create(4, 4);
    const size_t beats = isa::te_sbuf_partitions(static_cast<isa::Dtype>(code), 4);
    const std::string err =
        run_error(*te, {{TeCommand::Op::kLoadStationary, code, 4, std::vector<uint16_t>(beats * 4, 0)}});
    EXPECT_NE(err.find("assertion"), std::string::npos) << "code " << int{code} << ": " << err;
    EXPECT_TRUE(te->error_flag()) << "err_o must be sticky after an illegal command (code " << int{code} << ")";
  }
}

TEST(TeErrors, LoadStationaryWithZeroPartitionsIsRejected) {
  auto te = TeRtl::create(4, 4);
  const std::string err = run_error(*te, {{TeCommand::Op::kLoadStationary, 0, 0, {}}});
  EXPECT_NE(err.find("assertion"), std::string::npos) << err;
  EXPECT_TRUE(te->error_flag());
}

TEST(TeErrors, MultiplyMovingLongerThanPsumBankIsRejected) {
  auto te = TeRtl::create(4, 4);
  const std::string err = run_error(*te, {{TeCommand::Op::kMultiplyMoving, 0, 513, std::vector<uint16_t>(513 * 4, 0)}});
  EXPECT_NE(err.find("assertion"), std::string::npos) << err;
  EXPECT_TRUE(te->error_flag());
}

TEST(TeErrors, PermanentBackpressureTripsTheWatchdog) {
  cosim::TeRtlOptions opts;
  opts.watchdog_cycles = 200;
  opts.out_stall_prob = 1.0;  // the consumer never takes a result
  auto te = TeRtl::create(4, 4, opts);
  const std::string err = run_error(*te, {{TeCommand::Op::kLoadStationary, 0, 4, std::vector<uint16_t>(16, 0)},
                                          {TeCommand::Op::kMultiplyMoving, 0, 64, std::vector<uint16_t>(256, 0)}});
  EXPECT_NE(err.find("watchdog"), std::string::npos) << err;
  EXPECT_NE(err.find("results 0/64"), std::string::npos) << err;
}

TEST(TeErrors, WithdrawnBeatFiresHoldAssertion) {
  cosim::TeRtlOptions opts;
  opts.break_hold_rule = true;  // the stationary beat offered during the command cycle is withdrawn
  auto te = TeRtl::create(8, 4, opts);
  const std::string err = run_error(*te, {{TeCommand::Op::kLoadStationary, 0, 8, std::vector<uint16_t>(32, 0x3F80)}});
  EXPECT_NE(err.find("assertion"), std::string::npos) << err;
}

TEST(TeErrors, UnbuiltSizeNamesTheBuiltOnes) {
  try {
    TeRtl::create(5, 7);
    FAIL() << "no exception";
  } catch (const TeRtlError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("5x7"), std::string::npos) << msg;
    EXPECT_NE(msg.find("16x16"), std::string::npos) << msg;
  }
}

TEST(TeErrors, BeatCountMismatchIsInvalidArgument) {
  auto te = TeRtl::create(4, 4);
  EXPECT_THROW(te->run({{TeCommand::Op::kLoadStationary, 0, 4, std::vector<uint16_t>(15, 0)}}),
               std::invalid_argument);
  EXPECT_THROW(te->matmul(isa::Dtype::kBf16, 5, 4, 4, std::vector<uint16_t>(20), std::vector<uint16_t>(20)),
               std::invalid_argument);
  EXPECT_THROW(te->matmul(isa::Dtype::kBf16, 4, 4, 513, std::vector<uint16_t>(16), std::vector<uint16_t>(4 * 513)),
               std::invalid_argument);
}

}  // namespace
}  // namespace trnsim
