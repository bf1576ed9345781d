// The chip: several NeuronCores sharing one HBM (docs/architecture.md, "The chip"), through the driver's per-core
// views. The device is `tiny` (2 cores) with its HBM narrowed to 32 B/ns, less than two DMA engines ask for
// (23 B/ns each, BRIEF section 2), so that two cores streaming at once contend; the expected times come from the
// HBM model's documented rule (model/mem/hbm_model.h), computed here by hand.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "cosim/device/sim_device.h"
#include "firmware/driver/core_device.h"
#include "firmware/driver/driver.h"
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/kernels/gemm_launch.h"
#include "firmware/isa/isa.h"
#include "model/config/chip_config.h"
#include "model/mem/hbm_model.h"
#include "spec/trn_regs.h"
#include "tests/support/random_operands.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {
namespace {

constexpr double kHbmBytesPerNs = 32.0;

model::ChipConfig chip_test_config() {
  model::ChipConfig c = model::chip_config("tiny");
  c.hbm_bytes_per_ns = kHbmBytesPerNs;
  return c;
}

cosim::SimDevice& chip_device() {
  static const std::unique_ptr<cosim::SimDevice> dev =
      std::make_unique<cosim::SimDevice>(chip_test_config(), cosim::SimDeviceOptions{});
  return *dev;
}

class ChipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = &chip_device();
    driver::reset_device(*dev_);
    const auto regions = driver::chip_regions(model::chip_config("tiny").hbm_bytes, 2);
    for (uint32_t c = 0; c < 2; ++c) {
      views_.push_back(std::make_unique<driver::CoreDevice>(*dev_, c));
      drivers_.push_back(std::make_unique<driver::Driver>(*views_[c], regions[c]));
    }
  }
  driver::Driver& core(int c) { return *drivers_.at(size_t(c)); }

  cosim::SimDevice* dev_ = nullptr;
  std::vector<std::unique_ptr<driver::CoreDevice>> views_;
  std::vector<std::unique_ptr<driver::Driver>> drivers_;
};

/// One HBM -> SBUF copy of `elems` FP32 on `hbm_src` into partition 0, then halt.
isa::Program copy_to_sbuf(uint64_t hbm_src, int elems) {
  return isa::assemble(fmt::format(".queue dma\ndma_copy src=hbm:0x{:x} dst=sbuf:0x0 type=fp32 count=[{}]\nhalt\n",
                                   hbm_src, elems));
}

TEST_F(ChipTest, ChipRegistersDescribeTheCoresAndEachBlockKnowsItsCore) {
  EXPECT_EQ(dev_->read_reg(regs::CHIP_CORES), 2u);
  EXPECT_EQ(dev_->read_reg(regs::CHIP_INT_ENABLE), 0b11u);
  EXPECT_EQ(dev_->read_reg(regs::HBM_BW_MBPS), 32000u);
  for (uint32_t c = 0; c < 2; ++c) {
    EXPECT_EQ(dev_->read_reg(c * regs::CORE_STRIDE + regs::ID), regs::kIdValue) << "core " << c;
    EXPECT_EQ(dev_->read_reg(c * regs::CORE_STRIDE + regs::CORE_ID), c);
    EXPECT_EQ(core(int(c)).info().core, c);
    EXPECT_EQ(core(int(c)).info().cores, 2u);
  }
  // The blocks of cores the chip does not have read 0 and ignore writes.
  EXPECT_EQ(dev_->read_reg(2 * regs::CORE_STRIDE + regs::ID), 0u);
  dev_->write_reg(7 * regs::CORE_STRIDE + regs::DOORBELL, 1);
  EXPECT_EQ(dev_->read_reg(7 * regs::CORE_STRIDE + regs::STATUS), 0u);
  EXPECT_THROW(driver::CoreDevice(*dev_, 2), std::out_of_range);
  // Enable bits of cores that do not exist stay 0.
  dev_->write_reg(regs::CHIP_INT_ENABLE, 0xFFFFFFFFu);
  EXPECT_EQ(dev_->read_reg(regs::CHIP_INT_ENABLE), 0b11u);
}

TEST_F(ChipTest, EachCoreHasItsOwnSbufWindowAndBothSeeOneHbm) {
  // Core 0 copies 64 FP32 from HBM into its SBUF; core 1 copies the same HBM bytes into its own: the host reads
  // each core's copy through its view, and core 1's SBUF bytes that core 0 wrote nothing to stay 0.
  std::vector<uint32_t> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0x3F800000u + uint32_t(i);
  const uint64_t src = core(0).alloc(x.size() * 4);
  core(0).write_hbm(src, x.data(), x.size() * 4);
  core(0).load_program(copy_to_sbuf(src, 64));
  core(0).run(1'000'000);
  std::vector<uint32_t> got0(64), got1(64, 0xDEADBEEFu);
  core(0).read_sbuf(0, 0, got0.data(), 256);
  core(1).read_sbuf(0, 0, got1.data(), 256);
  EXPECT_EQ(got0, x);
  EXPECT_EQ(got1, std::vector<uint32_t>(64, 0u)) << "core 1's SBUF is not core 0's";
  core(1).load_program(copy_to_sbuf(src, 64));  // core 0's data, by its HBM address
  core(1).run(1'000'000);
  core(1).read_sbuf(0, 0, got1.data(), 256);
  EXPECT_EQ(got1, x);
  // The chip's map: core 1's SBUF at SBUF_BASE + CORE_MEM_STRIDE.
  uint32_t first = 0;
  dev_->read_mem(regs::SBUF_BASE + regs::CORE_MEM_STRIDE, &first, 4);
  EXPECT_EQ(first, x[0]);
  EXPECT_THROW(dev_->read_mem(regs::SBUF_BASE + 2ull * regs::CORE_MEM_STRIDE, &first, 4), std::out_of_range);
}

TEST_F(ChipTest, AFaultOnOneCoreStopsThatCoreAndNamesItTheOtherRunsOn) {
  const uint64_t src = core(0).alloc(4096);
  core(0).load_program(copy_to_sbuf(src, 1024));
  core(1).load_program(isa::assemble(".queue dma\ndma_copy src=hbm:0xFFFFFFF000 dst=sbuf:0x0 type=fp32 count=[16]\n"
                                     "halt\n"));
  core(0).start();
  core(1).start();
  try {
    core(1).wait(1'000'000);
    FAIL() << "core 1's copy outside HBM did not stop it";
  } catch (const driver::DeviceFault& e) {
    EXPECT_EQ(e.core(), 1u);
    EXPECT_EQ(e.code(), regs::ERR_HBM_RANGE);
    EXPECT_NE(std::string(e.what()).find("(core 1)"), std::string::npos) << e.what();
  }
  const driver::RunResult r0 = core(0).wait(1'000'000);
  EXPECT_EQ(r0.retired[size_t(isa::Engine::kDma)], 2u);
  EXPECT_EQ(dev_->read_reg(regs::ERR_CODE), 0u) << "core 0 has no error";
  EXPECT_EQ(dev_->read_reg(regs::CORE_STRIDE + regs::ERR_CODE), regs::ERR_HBM_RANGE);
}

TEST_F(ChipTest, WaitingForOneCoreIgnoresTheOthersLatchedInterrupt) {
  // Core 1 finishes first (a short copy) and keeps its interrupt latched; the wait for core 0 still waits for core 0.
  const uint64_t src = core(0).alloc(1 << 20);
  core(0).load_program(copy_to_sbuf(src, 40000));
  core(1).load_program(copy_to_sbuf(src, 16));
  core(0).start();
  core(1).start();
  const driver::RunResult r0 = core(0).wait(10'000'000);
  EXPECT_EQ(dev_->read_reg(regs::CHIP_INT_SUMMARY), 0b10u) << "core 1's line is still up, core 0's was cleared";
  const driver::RunResult r1 = core(1).wait(10'000'000);
  EXPECT_GT(r0.cycles, r1.cycles);
  EXPECT_EQ(dev_->read_reg(regs::CHIP_INT_SUMMARY), 0u);
}

TEST_F(ChipTest, CoreAWritesHbmAndSignalsCoreBWhichThenReadsIt) {
  // docs/isa.md "Semaphores across cores": core 0's dma queue copies x into an HBM buffer and signals semaphore 2
  // of core 1 (the signal waits for the copy); core 1 waits on it and copies the buffer into its SBUF.
  std::vector<uint32_t> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0x40000000u + uint32_t(i) * 7u;
  const uint64_t src = core(0).alloc(x.size() * 4), mid = core(0).alloc(x.size() * 4);
  core(0).write_hbm(src, x.data(), x.size() * 4);
  core(0).load_program(isa::assemble(fmt::format(
      ".queue dma\ndma_copy src=hbm:0x{:x} dst=hbm:0x{:x} type=fp32 count=[512]\nsem_signal sem=2 value=1 core=1\n"
      "halt\n", src, mid)));
  core(1).load_program(isa::assemble(fmt::format(
      ".queue dma\nsem_wait sem=2 value=1\ndma_copy src=hbm:0x{:x} dst=sbuf:0x0 type=fp32 count=[512]\nhalt\n",
      mid)));
  core(1).start();  // the receiver first: a doorbell's soft reset clears its semaphores
  core(0).start();
  const uint64_t c0 = core(0).wait(10'000'000).cycles, c1 = core(1).wait(10'000'000).cycles;
  std::vector<uint32_t> got(512);
  core(1).read_sbuf(0, 0, got.data(), got.size() * 4);
  EXPECT_EQ(got, x);
  EXPECT_GT(c1, c0) << "core 1 read only after core 0's copy and signal";
}

TEST_F(ChipTest, ASignalToACoreTheChipLacksStopsTheSenderNamingTheField) {
  core(0).load_program(isa::assemble(".queue te\nsem_signal sem=0 core=5\nhalt\n"));
  try {
    core(0).run(1'000'000);
    FAIL() << "a signal to core 5 of a 2-core chip was taken";
  } catch (const driver::DeviceFault& e) {
    EXPECT_EQ(e.code(), regs::ERR_BAD_FIELD);
    EXPECT_EQ(e.info(), uint32_t(isa::field_id("core")));
  }
}

TEST_F(ChipTest, AWaitOnlyAnotherCoreCouldSatisfyIsADeadlockOnceThatCoreHalts) {
  // Core 1 waits for semaphore 3, which nobody signals, while core 0 runs a long copy: no deadlock while core 0
  // runs (it might still signal); when core 0 halts, core 1 stops with DEADLOCK naming the semaphore.
  const uint64_t src = core(0).alloc(1 << 20);
  core(0).load_program(copy_to_sbuf(src, 40000));
  core(1).load_program(isa::assemble(".queue te\nsem_wait sem=3 value=1\nhalt\n"));
  core(1).start();
  core(0).start();
  const uint64_t c0 = core(0).wait(10'000'000).cycles;
  try {
    core(1).wait(10'000'000);
    FAIL() << "core 1's wait ended";
  } catch (const driver::DeviceFault& e) {
    EXPECT_EQ(e.code(), regs::ERR_DEADLOCK);
    EXPECT_EQ(e.info(), 3u);
    EXPECT_GE(e.cycles() + 2, c0) << "not before core 0 halted";
  }
}

TEST_F(ChipTest, ChipResetSoftResetsEveryCore) {
  core(0).load_program(copy_to_sbuf(0, 16));
  core(1).load_program(copy_to_sbuf(0, 16));
  core(0).run(1'000'000);
  core(1).run(1'000'000);
  for (uint32_t c = 0; c < 2; ++c) EXPECT_NE(dev_->read_reg(c * regs::CORE_STRIDE + regs::STATUS), 0u);
  dev_->write_reg(regs::CHIP_INT_ENABLE, 0);
  dev_->write_reg(regs::CHIP_RESET, regs::CHIP_RESET_CORES_MASK);
  for (uint32_t c = 0; c < 2; ++c) {
    EXPECT_EQ(dev_->read_reg(c * regs::CORE_STRIDE + regs::STATUS), 0u) << "core " << c;
    EXPECT_EQ(dev_->read_reg(c * regs::CORE_STRIDE + regs::queue_reg(1, regs::Q_PC)), 0u);
  }
  EXPECT_EQ(dev_->read_reg(regs::CHIP_INT_ENABLE), 0b11u);
}

TEST_F(ChipTest, TwoCoresStreamingFromHbmAtOnceShareItsBandwidthFairly) {
  // B bytes per copy, one DMA engine each (23 B/ns); the HBM carries 32 B/ns. Alone: start latency + B / 23.
  // Together, from the same cycle: each stream gets half, 16 B/ns, and both end at start latency + B / 16, B / 16 -
  // B / 23 later than alone. (The cycle counts compared are whole programs: a few cycles of their own beside the
  // copy, the same in each run.)
  const int elems = 23000;
  const double bytes = 4.0 * elems, te_ghz = 2.4;
  const uint64_t src = core(0).alloc(uint64_t(bytes));
  core(0).load_program(copy_to_sbuf(src, elems));
  const uint64_t alone = core(0).run(10'000'000).cycles;
  EXPECT_NEAR(double(alone), (1300.0 + bytes / 23.0) * te_ghz, 40.0) << "one core alone moves at its engine's rate";

  core(1).load_program(copy_to_sbuf(src, elems));
  core(0).start();
  core(1).start();
  const uint64_t c0 = core(0).wait(10'000'000).cycles, c1 = core(1).wait(10'000'000).cycles;
  const double later = (bytes / 16.0 - bytes / 23.0) * te_ghz;
  EXPECT_NEAR(double(c0) - double(alone), later, 4.0) << "alone " << alone << ", together " << c0;
  EXPECT_NEAR(double(c1) - double(alone), later, 4.0) << "alone " << alone << ", together " << c1;
}

TEST_F(ChipTest, AnHbmToHbmCopyAloneIsCappedByTheHbm) {
  // An HBM -> HBM copy carries each byte twice (read and write): 2B HBM bytes asked at 2 x 23 = 46 B/ns, more than
  // the 32 B/ns the HBM carries, so it takes start latency + 2B / 32: 2B / 32 - B / 23 longer than an HBM -> SBUF
  // copy of B bytes, which moves at its engine's rate.
  const int elems = 23000;
  const double bytes = 4.0 * elems, te_ghz = 2.4;
  const uint64_t src = core(0).alloc(uint64_t(bytes)), dst = core(0).alloc(uint64_t(bytes));
  core(0).load_program(copy_to_sbuf(src, elems));
  const uint64_t to_sbuf = core(0).run(10'000'000).cycles;
  core(0).load_program(isa::assemble(fmt::format(
      ".queue dma\ndma_copy src=hbm:0x{:x} dst=hbm:0x{:x} type=fp32 count=[{}]\nhalt\n", src, dst, elems)));
  const uint64_t cycles = core(0).run(10'000'000).cycles;
  EXPECT_NEAR(double(cycles) - double(to_sbuf), (2.0 * bytes / kHbmBytesPerNs - bytes / 23.0) * te_ghz, 4.0)
      << "HBM -> SBUF " << to_sbuf << ", HBM -> HBM " << cycles;
}

struct CoresGemmCase {
  isa::Dtype dtype;
  int k, m, n;
  bool accumulate;
  std::vector<std::pair<int, int>> pieces;  ///< rows x columns of the piece on core 0, core 1 (split_gemm)
};

class CoresGemm : public ChipTest, public ::testing::WithParamInterface<CoresGemmCase> {};

TEST_P(CoresGemm, SplitOverBothCoresMatchesTheGoldenGemmBitForBit) {
  // Ragged shapes: M = 37 gives core 0 two 16-row tiles and core 1 five rows; M = 5 leaves core 1 out (too little
  // moving to cut N); M = 12 with 280 KB of moving is cut by N, and its P is accumulated through out_ld.
  const CoresGemmCase c = GetParam();
  std::mt19937_64 rng(test_seed(uint64_t(c.k) * 7919u + uint64_t(c.m) * 31u + uint64_t(c.n)));
  kernels::GemmHostOperands ops = random_gemm_operands(c.dtype, c.k, c.m, c.n, rng);
  const std::vector<uint32_t> p = random_bf16_exact_f32(size_t(c.m) * c.n, rng);
  if (c.accumulate) ops.accumulate_into = &p;
  const auto r = kernels::run_gemm_cores({&core(0), &core(1)}, ops, 100'000'000);
  std::vector<std::pair<int, int>> pieces;
  for (const kernels::GemmPiece& piece : r.pieces) pieces.emplace_back(piece.layout.m, piece.layout.n);
  EXPECT_EQ(pieces, c.pieces);
  const auto want = golden::gemm({c.dtype, c.k, c.m, c.n, ops.stationary, ops.moving}, 16, c.accumulate ? &p : nullptr);
  ASSERT_EQ(r.out.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(r.out[i], want[i]) << "out[" << i / c.n << "][" << i % c.n << "]";
  }
  uint64_t longest = 0;
  for (const auto& run : r.runs) longest = std::max(longest, run.cycles);
  EXPECT_EQ(r.cycles, longest);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CoresGemm,
                         ::testing::Values(
                             CoresGemmCase{isa::Dtype::kBf16, 40, 37, 45, false, {{32, 45}, {5, 45}}},
                             CoresGemmCase{isa::Dtype::kFp16, 17, 64, 130, true, {{32, 130}, {32, 130}}},
                             CoresGemmCase{isa::Dtype::kFp8E4M3, 70, 33, 20, true, {{32, 20}, {1, 20}}},
                             CoresGemmCase{isa::Dtype::kBf16, 3, 5, 7, false, {{5, 7}}},
                             CoresGemmCase{isa::Dtype::kBf16, 200, 12, 700, true, {{12, 352}, {12, 348}}}),
                         [](const ::testing::TestParamInfo<CoresGemmCase>& info) {
                           const CoresGemmCase& c = info.param;
                           return fmt::format("{}_k{}_m{}_n{}{}", isa::dtype_name(c.dtype), c.k, c.m, c.n,
                                              c.accumulate ? "_acc" : "");
                         });

TEST(HbmModel, FairSharesGiveSlowStreamsTheirRateAndSplitTheRestEqually) {
  using V = std::vector<double>;
  EXPECT_EQ(model::HbmModel::fair_shares({23, 23}, 100), (V{23, 23})) << "room for both";
  EXPECT_EQ(model::HbmModel::fair_shares({23, 23}, 32), (V{16, 16}));
  EXPECT_EQ(model::HbmModel::fair_shares({23, 4, 23}, 32), (V{14, 4, 14})) << "the 4 B/ns stream keeps its rate";
  EXPECT_EQ(model::HbmModel::fair_shares({30, 10}, 30), (V{20, 10}));
  EXPECT_EQ(model::HbmModel::fair_shares({}, 30), V{});
  // 128 engines (8 trn2 cores x 16) asking 23 B/ns each of 2900: every one gets 2900 / 128, none is starved.
  for (double s : model::HbmModel::fair_shares(V(128, 23.0), 2900)) EXPECT_DOUBLE_EQ(s, 2900.0 / 128);
  EXPECT_THROW(model::HbmModel(0.0), std::invalid_argument);
}

}  // namespace
}  // namespace trnsim::test
