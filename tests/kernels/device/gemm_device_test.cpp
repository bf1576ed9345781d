// The GEMM kernel end to end: driver -> SystemC model (tiny config, TLM TE datapath; in process, or served by
// `trnsim serve` in the *_served build: kernel_device.h) -> HBM result,
// compared bit for bit with the golden GEMM; the measured cycles are compared with the kernel's timing estimate.
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/kernels/gemm_kernel.h"
#include "tests/kernels/program_sim.h"
#include "tests/kernels/device/kernel_device.h"
#include "tests/support/random_operands.h"
#include "tests/support/test_seed.h"

namespace trnsim::kernels {
namespace {

struct Shape {
  int k, m, n;
  isa::Dtype dtype = isa::Dtype::kBf16;
  bool accumulate = false;
};

std::string shape_name(const Shape& s) {
  return fmt::format("K{}_M{}_N{}_{}{}", s.k, s.m, s.n, isa::dtype_name(s.dtype), s.accumulate ? "_acc" : "");
}

std::vector<uint8_t> narrow_bytes(const std::vector<uint16_t>& v, unsigned es) {
  std::vector<uint8_t> out(v.size() * es);
  for (std::size_t i = 0; i < v.size(); ++i) {
    out[i * es] = static_cast<uint8_t>(v[i]);
    if (es == 2) out[i * es + 1] = static_cast<uint8_t>(v[i] >> 8);
  }
  return out;
}

class GemmOnModel : public test::KernelDeviceTest, public ::testing::WithParamInterface<Shape> {};

TEST_P(GemmOnModel, MatchesGoldenBitForBit) {
  const Shape s = GetParam();
  const driver::DeviceInfo& info = drv_->info();
  const unsigned es = isa::dtype_bits(s.dtype) / 8;
  std::mt19937_64 rng(test::test_seed());
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const auto narrow_random = [&](std::size_t n) { return test::random_narrow(s.dtype, n, rng); };
  golden::GemmOperands ops;
  ops.dtype = s.dtype;
  ops.k = s.k;
  ops.m = s.m;
  ops.n = s.n;
  ops.stationary = narrow_random(std::size_t(s.k) * s.m);
  ops.moving = narrow_random(std::size_t(s.k) * s.n);
  std::vector<uint32_t> p_init(std::size_t(s.m) * s.n);
  for (auto& x : p_init) {
    const float f = dist(rng);
    std::memcpy(&x, &f, 4);
  }

  GemmLayout l;
  l.dtype = s.dtype;
  l.k = s.k;
  l.m = s.m;
  l.n = s.n;
  l.accumulate_into = s.accumulate;
  l.stationary_hbm = drv_->alloc(ops.stationary.size() * es);
  l.moving_hbm = drv_->alloc(ops.moving.size() * es);
  l.out_hbm = drv_->alloc(p_init.size() * 4);
  const auto st = narrow_bytes(ops.stationary, es), mv = narrow_bytes(ops.moving, es);
  drv_->write_hbm(l.stationary_hbm, st.data(), st.size());
  drv_->write_hbm(l.moving_hbm, mv.data(), mv.size());
  if (s.accumulate) drv_->write_hbm(l.out_hbm, p_init.data(), p_init.size() * 4);

  const isa::Program prog = make_gemm_program(info, l);
  const test::TimingEstimate est = test::estimate_timing(info, prog);
  drv_->load_program(prog);
  const uint64_t busy0 = drv_->read_counters().te_busy;
  const driver::RunResult r = drv_->run(4 * est.cycles + 1'000'000);
  const uint64_t busy = drv_->read_counters().te_busy - busy0;

  std::vector<uint32_t> got(p_init.size());
  drv_->read_hbm(l.out_hbm, got.data(), got.size() * 4);
  const std::vector<uint32_t> want = golden::gemm(ops, int(info.te_rows), s.accumulate ? &p_init : nullptr);
  int shown = 0;
  for (std::size_t i = 0; i < want.size() && shown < 5; ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << fmt::format("out[{}][{}] = {:#010x}, golden {:#010x}", i / s.n, i % s.n, got[i], want[i]);
      ++shown;
    }
  }
  EXPECT_EQ(r.retired[0], prog.queues[0].size());
  EXPECT_EQ(r.retired[1], prog.queues[1].size());
  std::cout << fmt::format(
      "[ model    ] {}: {} cycles ({:.1f} us), TE queue busy {:.1f}%, MAC utilization {:.1f}%; estimate {} cycles "
      "({:+.1f}%)\n",
      shape_name(s), r.cycles, info.cycles_to_us(r.cycles), 100.0 * double(busy) / double(r.cycles),
      100.0 * double(s.k) * s.m * s.n / (double(r.cycles) * info.te_rows * info.te_cols), est.cycles,
      100.0 * (double(est.cycles) - double(r.cycles)) / double(r.cycles));
  // The estimate follows the same cost figures; it may differ by event ordering details only.
  EXPECT_NEAR(double(est.cycles), double(r.cycles), 0.01 * double(r.cycles) + 100.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmOnModel,
                         ::testing::Values(Shape{1, 1, 1}, Shape{1, 5, 7}, Shape{17, 17, 513},
                                           Shape{100, 40, 700}, Shape{300, 20, 2100, isa::Dtype::kBf16, true},
                                           Shape{40, 50, 600, isa::Dtype::kFp16},
                                           Shape{40, 50, 600, isa::Dtype::kFp8E4M3},
                                           Shape{70, 9, 1500, isa::Dtype::kFp8E5M2, true},
                                           Shape{128, 128, 128}, Shape{768, 128, 3072}),
                         [](const auto& info) { return shape_name(info.param); });

}  // namespace
}  // namespace trnsim::kernels
