// Softmax, LayerNorm, RMSNorm and TE transpose end to end: host tensors -> driver -> in-process SystemC model
// (tiny config: 16 partitions, 16x16 TE, or trn2 in nn_kernels_trn2_device_test; four queues running concurrently) ->
// HBM result, compared bit for bit with the golden kernels. Ragged shapes, special values, narrow inputs/outputs. The
// device runs with the model's own hazard checker (two engines touching the same SBUF/PSUM bytes without a semaphore
// chain) and uninitialised-read checker on, so each run also proves the program orders every access the model sees and
// reads nothing unwritten.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "firmware/golden/nn_golden.h"
#include "firmware/kernels/nn_launch.h"
#include "spec/trn_regs.h"
#include "tests/kernels/device/kernel_device.h"
#include "tests/kernels/nn_test_util.h"
#include "tests/kernels/program_sim.h"
#include "tests/support/test_seed.h"

namespace trnsim::kernels {
namespace {

using isa::DataType;

constexpr uint64_t kTimeout = 50'000'000;

/// The process's device (configuration NN_TEST_CONFIG, a compile definition, default tiny; TLM datapath) with the
/// hazard and uninitialised-read checkers on.
driver::Device& checked_device() {
#ifndef NN_TEST_CONFIG
#define NN_TEST_CONFIG "tiny"
#endif
  return test::kernel_device({NN_TEST_CONFIG, /*checks=*/true});
}

class CheckedDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = &checked_device();
    dev_->write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
    drv_ = std::make_unique<driver::Driver>(*dev_);
    before_ = drv_->read_counters();
  }
  /// Prints cycles, instructions per queue and each engine's busy share of the run; the cycles must agree with
  /// program_sim's estimate of a program of the same shape (the cost figures of docs/isa.md) within 1 %.
  void report(const std::string& what, const KernelRun& r, const isa::Program& same_shape) const {
    const test::TimingEstimate est = test::estimate_timing(drv_->info(), same_shape);
    const driver::DeviceCounters after = drv_->read_counters();
    const uint64_t elapsed = after.uptime - before_.uptime;
    std::string busy;
    for (std::size_t q = 0; q < after.queues.size() && q < before_.queues.size(); ++q) {
      busy += fmt::format(" {} {:.0f}%", isa::engine_name(static_cast<isa::Engine>(q)),
                          elapsed > 0 ? 100.0 * double(after.queues[q].busy - before_.queues[q].busy) / double(elapsed)
                                      : 0.0);
    }
    std::cout << fmt::format(
        "[ model    ] {}: {} cycles ({:.1f} us), {} instructions (te {}, dma {}, act {}, vec {}); "
        "busy:{}; estimate {} ({:+.1f}%)\n",
        what, r.run.cycles, drv_->info().cycles_to_us(r.run.cycles), r.instructions, r.run.retired[0], r.run.retired[1],
        r.run.retired[2], r.run.retired[3], busy, est.cycles,
        100.0 * (double(est.cycles) - double(r.run.cycles)) / double(r.run.cycles));
    EXPECT_NEAR(double(est.cycles), double(r.run.cycles), 0.01 * double(r.run.cycles) + 100.0) << what;
  }
  driver::Device* dev_ = nullptr;
  std::unique_ptr<driver::Driver> drv_;
  driver::DeviceCounters before_;
};

struct Case {
  int rows, cols;
  DataType in = DataType::kFp32, out = DataType::kFp32;
  bool specials = false;
  float scale = 1.0f;
  bool causal = false;
};

std::string name_of(const Case& c) {
  return fmt::format("{}x{}_{}_{}{}{}", c.rows, c.cols, isa::data_type_name(c.in), isa::data_type_name(c.out),
                     c.specials ? "_special" : "", c.causal ? "_causal" : "");
}

class SoftmaxOnModel : public CheckedDeviceTest, public ::testing::WithParamInterface<Case> {};

TEST_P(SoftmaxOnModel, MatchesGoldenBitForBit) {
  const Case c = GetParam();
  std::mt19937_64 rng(test::test_seed());
  const auto in = test::random_elements(c.in, std::size_t(c.rows) * c.cols, rng, 3.0f, c.specials);
  SoftmaxLayout l;
  l.rows = c.rows;
  l.cols = c.cols;
  l.scale = c.scale;
  l.causal = c.causal;
  l.in_type = c.in;
  l.out_type = c.out;
  const KernelRun r = run_softmax(*drv_, l, in, kTimeout);
  const golden::SoftmaxSpec s{c.rows, c.cols, c.scale, c.causal, 0, c.in, c.out};
  test::expect_same_bits(r.out, golden::softmax_rows(s, in), c.cols, "softmax");
  report("softmax " + name_of(c), r, make_softmax_program(drv_->info(), l));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxOnModel,
                         ::testing::Values(Case{1, 1}, Case{17, 33}, Case{45, 700}, Case{130, 5},
                                           Case{33, 64, DataType::kFp32, DataType::kFp32, false, 0.125f, true},
                                           Case{37, 50, DataType::kBf16, DataType::kBf16},
                                           Case{50, 61, DataType::kFp32, DataType::kFp32, true},
                                           Case{50, 61, DataType::kFp32, DataType::kBf16, true, 4.0f, true},
                                           // GPT-2 small attention scores: sequence 128, head dim 64
                                           Case{128, 128, DataType::kFp32, DataType::kBf16, false, 0.125f, true}),
                         [](const auto& i) { return name_of(i.param); });

class NormOnModel : public CheckedDeviceTest, public ::testing::WithParamInterface<Case> {};

TEST_P(NormOnModel, LayerNormMatchesGoldenBitForBit) {
  const Case c = GetParam();
  std::mt19937_64 rng(test::test_seed());
  const auto in = test::random_elements(c.in, std::size_t(c.rows) * c.cols, rng, 3.0f, c.specials);
  const auto gamma = test::random_elements(DataType::kFp32, std::size_t(c.cols), rng, 1.0f);
  const auto beta = test::random_elements(DataType::kFp32, std::size_t(c.cols), rng, 1.0f);
  LayerNormLayout l;
  l.rows = c.rows;
  l.cols = c.cols;
  l.in_type = c.in;
  l.out_type = c.out;
  const KernelRun r = run_layernorm(*drv_, l, in, gamma, beta, kTimeout);
  const golden::NormSpec s{c.rows, c.cols, l.eps, c.in, c.out};
  test::expect_same_bits(r.out, golden::layernorm_rows(s, in, gamma, beta), c.cols, "layernorm");
  report("layernorm " + name_of(c), r, make_layernorm_program(drv_->info(), l));
}

TEST_P(NormOnModel, RmsNormMatchesGoldenBitForBit) {
  const Case c = GetParam();
  std::mt19937_64 rng(test::test_seed());
  const auto in = test::random_elements(c.in, std::size_t(c.rows) * c.cols, rng, 3.0f, c.specials);
  const auto gamma = test::random_elements(DataType::kFp32, std::size_t(c.cols), rng, 1.0f);
  RmsNormLayout l;
  l.rows = c.rows;
  l.cols = c.cols;
  l.in_type = c.in;
  l.out_type = c.out;
  const KernelRun r = run_rmsnorm(*drv_, l, in, gamma, kTimeout);
  const golden::NormSpec s{c.rows, c.cols, l.eps, c.in, c.out};
  test::expect_same_bits(r.out, golden::rmsnorm_rows(s, in, gamma), c.cols, "rmsnorm");
  report("rmsnorm " + name_of(c), r, make_rmsnorm_program(drv_->info(), l));
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormOnModel,
                         ::testing::Values(Case{1, 1}, Case{17, 33}, Case{45, 700}, Case{130, 5},
                                           Case{37, 50, DataType::kBf16, DataType::kBf16},
                                           Case{50, 61, DataType::kFp32, DataType::kFp32, true},
                                           Case{50, 61, DataType::kFp16, DataType::kBf16, true},
                                           Case{128, 768}),  // GPT-2 small: sequence 128, hidden 768
                         [](const auto& i) { return name_of(i.param); });

struct TCase {
  int rows, cols;
  isa::Dtype dtype = isa::Dtype::kBf16;
  DataType out = DataType::kBf16;
  bool specials = false;
};

class TransposeOnModel : public CheckedDeviceTest, public ::testing::WithParamInterface<TCase> {};

TEST_P(TransposeOnModel, MatchesGoldenBitForBit) {
  const TCase c = GetParam();
  std::mt19937_64 rng(test::test_seed());
  const DataType in_type = static_cast<DataType>(static_cast<uint8_t>(c.dtype));
  const auto in = test::random_elements(in_type, std::size_t(c.rows) * c.cols, rng, 3.0f, c.specials, 23);
  TransposeLayout l;
  l.rows = c.rows;
  l.cols = c.cols;
  l.dtype = c.dtype;
  l.out_type = c.out;
  const KernelRun r = run_transpose(*drv_, l, in, kTimeout);
  test::expect_same_bits(r.out,
                         golden::transpose_te(c.dtype, c.rows, c.cols, in, transpose_tile_rows(drv_->info()), c.out),
                         c.rows, "transpose");
  report(fmt::format("transpose {}x{} {}->{}", c.rows, c.cols, isa::dtype_name(c.dtype), isa::data_type_name(c.out)), r,
         make_transpose_program(drv_->info(), l));
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransposeOnModel,
                         ::testing::Values(TCase{1, 1}, TCase{17, 33}, TCase{45, 700}, TCase{130, 5},
                                           TCase{40, 70, isa::Dtype::kFp16, DataType::kFp32},
                                           TCase{33, 20, isa::Dtype::kFp8E4M3, DataType::kFp8E4M3},
                                           TCase{50, 45, isa::Dtype::kBf16, DataType::kBf16, true}, TCase{128, 768}),
                         [](const auto& i) {
                           return fmt::format("{}x{}_{}_{}{}", i.param.rows, i.param.cols,
                                              isa::dtype_name(i.param.dtype), isa::data_type_name(i.param.out),
                                              i.param.specials ? "_special" : "");
                         });

}  // namespace
}  // namespace trnsim::kernels
