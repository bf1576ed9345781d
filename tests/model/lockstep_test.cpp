// The lockstep checker itself: it must stop at the first differing bit, cycle count or PSUM write-back mode and say
// where. A datapath that is wrong on purpose (one flipped result bit, one extra cycle, the results in the other
// PSUM mode) stands in for a broken RTL.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl_compute.h"
#include "model/te/te_functional.h"

namespace trnsim::test {
namespace {

// The TLM datapath with one fault: result element `bad_index` gets its lowest bit flipped, or every multiply
// reports one cycle more, or its results come back in the other PSUM write-back mode.
enum class Fault { kBit, kExtraCycle, kPsumMode };
class FaultyDatapath : public model::TeFunctional {
 public:
  FaultyDatapath(int rows, int cols, size_t bad_index, Fault fault)
      : TeFunctional(rows, cols), bad_index_(bad_index), fault_(fault) {}
  using TeFunctional::multiply_moving;
  uint64_t multiply_moving(isa::Dtype dt, int k, int n, const std::vector<uint16_t>& moving,
                           const std::vector<uint8_t>& scales, std::vector<uint32_t>& out,
                           model::PsumWrite& psum_write, uint32_t index) override {
    const uint64_t cycles = TeFunctional::multiply_moving(dt, k, n, moving, scales, out, psum_write, index);
    if (fault_ == Fault::kBit) out.at(bad_index_) ^= 1u;
    if (fault_ == Fault::kPsumMode) {
      psum_write = psum_write == model::PsumWrite::kAccumulate ? model::PsumWrite::kOverwrite
                                                               : model::PsumWrite::kAccumulate;
    }
    return cycles + (fault_ == Fault::kExtraCycle ? 1 : 0);
  }

 private:
  size_t bad_index_;
  Fault fault_;
};

std::vector<uint16_t> ones(size_t n) { return std::vector<uint16_t>(n, 0x3F80); }  // BF16 1.0

TEST(Lockstep, StopsAtTheFirstDifferingElementNamingInstructionElementAndBits) {
  cosim::TeLockstep ls(std::make_unique<model::TeFunctional>(4, 4),
                       std::make_unique<FaultyDatapath>(4, 4, 7, Fault::kBit));
  ls.load_stationary(isa::Dtype::kBf16, 3, 4, ones(12));
  std::vector<uint32_t> out;
  try {
    ls.multiply_moving(isa::Dtype::kBf16, 3, 5, ones(15), out, 42);
    FAIL() << "expected a mismatch";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("instruction 42"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[m=1, n=2]"), std::string::npos) << msg;            // element 7 of [4, 5]
    EXPECT_NE(msg.find("expected 0x40400000"), std::string::npos) << msg;  // 1*1 summed over K=3 = 3.0
    EXPECT_NE(msg.find("got 0x40400001"), std::string::npos) << msg;
  }
}

TEST(Lockstep, StopsOnACycleCountDifference) {
  cosim::TeLockstep ls(std::make_unique<model::TeFunctional>(4, 4),
                       std::make_unique<FaultyDatapath>(4, 4, 0, Fault::kExtraCycle));
  ls.load_stationary(isa::Dtype::kBf16, 2, 2, ones(4));
  std::vector<uint32_t> out;
  try {
    ls.multiply_moving(isa::Dtype::kBf16, 2, 3, ones(6), out, 5);
    FAIL() << "expected a mismatch";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("instruction 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cycles expected 13 (tlm), got 14 (rtl)"), std::string::npos) << msg;  // N + R + C + 2
  }
}

TEST(Lockstep, StopsOnAResultInTheWrongPsumMode) {
  cosim::TeLockstep ls(std::make_unique<model::TeFunctional>(4, 4),
                       std::make_unique<FaultyDatapath>(4, 4, 0, Fault::kPsumMode));
  ls.load_stationary(isa::Dtype::kBf16, 2, 2, ones(4));
  std::vector<uint32_t> out;
  model::PsumWrite write = model::PsumWrite::kAccumulate;
  try {
    ls.multiply_moving(isa::Dtype::kBf16, 2, 3, ones(6), out, write, 9);
    FAIL() << "expected a mismatch";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("lockstep mismatch at instruction 9: PSUM write-back mode expected accumulate (tlm), got "
                       "overwrite (rtl)"),
              std::string::npos)
        << msg;
  }
}

// The verilated engine returns the mode its result beats carried (out_acc_o), in both modes.
TEST(Lockstep, RtlReturnsThePsumModeOfItsResultBeats) {
  cosim::TeLockstep ls(std::make_unique<model::TeFunctional>(4, 4), std::make_unique<cosim::TeRtlCompute>(4, 4));
  ls.load_stationary(isa::Dtype::kBf16, 2, 2, ones(4));
  for (const model::PsumWrite mode : {model::PsumWrite::kAccumulate, model::PsumWrite::kOverwrite}) {
    std::vector<uint32_t> out;
    model::PsumWrite write = mode;
    ls.multiply_moving(isa::Dtype::kBf16, 2, 3, ones(6), out, write, 3);
    EXPECT_EQ(write, mode) << model::psum_write_name(mode);
    EXPECT_EQ(out, std::vector<uint32_t>(6, 0x40000000u)) << model::psum_write_name(mode);  // 1*1 + 1*1 = 2.0
  }
}

// A result beat in the wrong mode (the engine's out_acc_o forced, rtl/te/trn_te_force.vlt) stops the RTL
// datapath with the transactor's error, naming the instruction and the cycle.
TEST(Lockstep, RtlResultInTheWrongPsumModeNamesInstructionAndCycle) {
  cosim::TeRtlOptions opts;
  opts.force_out_acc_beat = 1;
  cosim::TeRtlCompute te(4, 4, opts);
  te.load_stationary(isa::Dtype::kBf16, 2, 2, ones(4));
  std::vector<uint32_t> out;
  model::PsumWrite write = model::PsumWrite::kOverwrite;
  try {
    te.multiply_moving(isa::Dtype::kBf16, 2, 3, ones(6), out, write, 17);
    FAIL() << "expected the transactor to reject the beat";
  } catch (const cosim::TeRtlError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("instruction 17: cycle ", 0), 0u) << msg;
    EXPECT_NE(msg.find("out_acc_o=1 (add to PSUM) on result beat 1 of command #0, a MultiplyMoving taken with "
                       "cmd_acc_i=0 (overwrite PSUM)"),
              std::string::npos)
        << msg;
  }
}

TEST(Lockstep, RtlAndTlmAgreeOnEveryCommandOfASmallSequence) {
  cosim::TeLockstep ls(std::make_unique<model::TeFunctional>(8, 4), std::make_unique<cosim::TeRtlCompute>(8, 4));
  std::vector<uint16_t> s(5 * 3), mv(5 * 9);
  for (size_t i = 0; i < s.size(); ++i) s[i] = uint16_t(0x3C00 + 0x40 * i);   // FP16 1.0, 1.0625, ...
  for (size_t i = 0; i < mv.size(); ++i) mv[i] = uint16_t(0xBC00 - 0x10 * i);  // FP16 -1.0, ...
  EXPECT_EQ(ls.load_stationary(isa::Dtype::kFp16, 5, 3, s), 1u + 5u);
  std::vector<uint32_t> out;
  EXPECT_EQ(ls.multiply_moving(isa::Dtype::kFp16, 5, 9, mv, out, 1), 9u + 8u + 4u + 2u);
  EXPECT_EQ(out.size(), 3u * 9u);
}

}  // namespace
}  // namespace trnsim::test
