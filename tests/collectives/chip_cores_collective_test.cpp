// The cores of a chip in a multi-chip system's collective (docs/neuronlink.md "The cores of a chip"): a ring of two
// `tiny` chips of two cores each. Core 1 of every chip hands its share to core 0 through HBM and a semaphore across
// cores; core 0 runs the all-reduce and signals back; core 1 reads the sum. Results against the golden all-reduce.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "cosim/device/sim_system.h"
#include "firmware/driver/core_device.h"
#include "firmware/driver/driver.h"
#include "firmware/golden/collective_golden.h"
#include "firmware/isa/isa.h"
#include "model/collective/topology.h"
#include "model/core/chip.h"
#include "model/config/chip_config.h"
#include "spec/trn_regs.h"

namespace trnsim::test {
namespace {

constexpr int kChips = 2, kCores = 2;
constexpr uint64_t kSeed = 5, kCount = 300, kTimeout = 50'000'000;

cosim::SimSystem& shared_system() {
  const model::ChipConfig trn2 = model::chip_config("trn2");
  static const std::unique_ptr<cosim::SimSystem> sys = std::make_unique<cosim::SimSystem>(
      model::chip_config("tiny"),
      model::collective::Topology({kChips}, {trn2.link_gbytes_per_s}, trn2.link_hop_latency_ns));
  return *sys;
}

class ChipCoresCollective : public ::testing::Test {
 protected:
  void SetUp() override {
    cosim::SimSystem& sys = shared_system();
    ASSERT_EQ(sys.chip(0).cores(), kCores);
    for (int r = 0; r < kChips; ++r) {
      driver::reset_device(sys.device(r));
      const auto regions = driver::chip_regions(model::chip_config("tiny").hbm_bytes, kCores);
      for (int c = 0; c < kCores; ++c) {
        views_.push_back(std::make_unique<driver::CoreDevice>(sys.device(r), uint32_t(c)));
        drivers_.push_back(std::make_unique<driver::Driver>(*views_.back(), regions[size_t(c)]));
        drivers_.back()->set_watchdog(0);  // core 1 waits for the whole collective
      }
    }
  }
  driver::Driver& core(int chip, int c) { return *drivers_.at(size_t(chip * kCores + c)); }

  std::vector<std::unique_ptr<driver::CoreDevice>> views_;
  std::vector<std::unique_ptr<driver::Driver>> drivers_;
};

TEST_F(ChipCoresCollective, CoreOneHandsItsShareToCoreZeroWhichAllReducesAndSignalsBack) {
  const uint64_t in = 0x10000, buf = 0x20000;  // HBM of each chip: core 1's input, the collective's buffer
  for (int r = 0; r < kChips; ++r) {
    std::vector<uint32_t> x(kCount);
    for (uint64_t j = 0; j < kCount; ++j) {
      x[j] = golden::collective_test_value(golden::CollectiveDtype::kFp32, kSeed, r, j);
    }
    core(r, 1).write_hbm(in, x.data(), x.size() * 4);
    core(r, 1).load_program(isa::assemble(fmt::format(
        ".queue dma\n"
        "dma_copy src=hbm:0x{0:x} dst=hbm:0x{1:x} type=fp32 count=[{2}]\n"
        "sem_signal sem=1 value=1 core=0   # the share is in the buffer\n"
        "sem_wait sem=2 value=1            # the sum is\n"
        "dma_copy src=hbm:0x{1:x} dst=sbuf:0x0 type=fp32 count=[{2}]\n"
        "halt\n",
        in, buf, kCount)));
    core(r, 0).load_program(isa::assemble(fmt::format(
        ".queue cc\n"
        "sem_wait sem=1 value=1\n"
        "all_reduce dtype=fp32 algorithm=ring hbm=0x{:x} count={}\n"
        "sem_signal sem=2 value=1 core=1\n"
        "halt\n",
        buf, kCount)));
  }
  for (int r = 0; r < kChips; ++r) core(r, 1).start();  // the receivers of the signals first
  for (int r = 0; r < kChips; ++r) core(r, 0).start();
  for (int r = 0; r < kChips; ++r) {
    for (int c = 0; c < kCores; ++c) core(r, c).wait(kTimeout);
  }
  golden::CollectiveAlgorithm algo;
  algo.dims = {kChips};
  algo.link_gbytes_per_s = {model::chip_config("trn2").link_gbytes_per_s};
  const auto want = golden::collective_reduced(algo, golden::CollectiveDtype::kFp32, kCount, [](int rank, uint64_t j) {
    return golden::collective_test_value(golden::CollectiveDtype::kFp32, kSeed, rank, j);
  });
  for (int r = 0; r < kChips; ++r) {
    std::vector<uint32_t> got(kCount);
    core(r, 1).read_sbuf(0, 0, got.data(), got.size() * 4);
    EXPECT_EQ(got, want) << "chip " << r << ", core 1's SBUF";
  }
}

TEST_F(ChipCoresCollective, ACollectiveOnAnotherCoreThanCoreZeroStopsItNamingTheOpcode) {
  core(0, 1).load_program(isa::assemble(".queue cc\nall_reduce dtype=fp32 algorithm=ring hbm=0x0 count=16\nhalt\n"));
  try {
    core(0, 1).run(kTimeout);
    FAIL() << "core 1 ran a collective";
  } catch (const driver::DeviceFault& e) {
    EXPECT_EQ(e.core(), 1u);
    EXPECT_EQ(e.code(), regs::ERR_CC_UNSUPPORTED);
    EXPECT_EQ(e.info(), uint32_t(isa::field_id("opcode")));
    EXPECT_NE(e.detail().find("issued by its core 0"), std::string::npos) << e.detail();
  }
}

}  // namespace
}  // namespace trnsim::test
