// The GEMM kernel end to end on the device, through the driver: seeded random operands for every dtype, ragged
// shapes, accumulate-into, against the golden GEMM. Built twice: with the TLM datapath, and with TLM and RTL in
// lockstep (which also stops at the first instruction whose result bits or cycle count differ).
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/kernels/gemm_kernel.h"
#include "firmware/kernels/gemm_launch.h"
#include "tests/model/device_fixture.h"
#include "tests/support/random_operands.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {
namespace {

struct GemmCase {
  isa::Dtype dtype;
  int k, m, n;
  bool accumulate;
};

std::string case_name(const ::testing::TestParamInfo<GemmCase>& info) {
  const GemmCase& c = info.param;
  return std::string(isa::dtype_name(c.dtype)) + "_k" + std::to_string(c.k) + "_m" + std::to_string(c.m) + "_n" +
         std::to_string(c.n) + (c.accumulate ? "_acc" : "");
}

// Random narrow operands with some special values mixed in (NaN, +-Inf where the type has it, -0, subnormals,
// the type's largest finite value).
std::vector<uint16_t> operand(isa::Dtype dt, size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 199);
  const uint32_t specials[] = {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x80000000u, 0x00000001u, 0x477FE000u,
                               0x43E00000u, 0x3A800000u};
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    uint32_t b;
    if (pick(rng) == 0) {
      b = specials[rng() % std::size(specials)];
    } else {
      const float f = dist(rng);
      std::memcpy(&b, &f, 4);
    }
    x = golden::narrow_from_f32(dt, b, true);
  }
  return v;
}

class GemmOnDevice : public DeviceTest, public ::testing::WithParamInterface<GemmCase> {};

TEST_P(GemmOnDevice, MatchesTheGoldenGemmBitForBit) {
  const GemmCase c = GetParam();
  std::mt19937_64 rng(test_seed(uint64_t(c.k) * 1000003u + uint64_t(c.m) * 1009u + uint64_t(c.n)));
  kernels::GemmHostOperands ops;
  ops.dtype = c.dtype;
  ops.k = c.k;
  ops.m = c.m;
  ops.n = c.n;
  ops.stationary = operand(c.dtype, size_t(c.k) * c.m, rng);
  ops.moving = operand(c.dtype, size_t(c.k) * c.n, rng);
  const std::vector<uint32_t> p = random_bf16_exact_f32(size_t(c.m) * c.n, rng);
  if (c.accumulate) ops.accumulate_into = &p;
  const auto r = kernels::run_gemm(*drv_, ops, 100'000'000);
  const auto want = golden::gemm({c.dtype, c.k, c.m, c.n, ops.stationary, ops.moving}, int(drv_->info().te_rows),
                                 c.accumulate ? &p : nullptr);
  ASSERT_EQ(r.out.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(r.out[i], want[i]) << "out[" << i / c.n << "][" << i % c.n << "] (" << dev_->te_name() << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmOnDevice,
                         ::testing::Values(GemmCase{isa::Dtype::kBf16, 16, 16, 64, false},
                                           GemmCase{isa::Dtype::kBf16, 37, 20, 45, false},
                                           GemmCase{isa::Dtype::kFp16, 1, 1, 1, false},
                                           GemmCase{isa::Dtype::kFp16, 33, 17, 513, false},
                                           GemmCase{isa::Dtype::kFp8E4M3, 48, 40, 100, true},
                                           GemmCase{isa::Dtype::kFp8E5M2, 5, 31, 7, false},
                                           GemmCase{isa::Dtype::kFp8E5M2, 70, 3, 300, true}),
                         case_name);

// Everything the kernel does not own keeps its bytes: the operands, HBM around the result, SBUF past the kernel's
// buffers and PSUM banks past its buffers (filled with a canary before the run).
TEST_F(DeviceTest, GemmKernelLeavesMemoryOutsideItsBuffersUntouched) {
  const auto& info = drv_->info();
  const int k = 37, m = 20, n = 45;
  std::mt19937_64 rng(test_seed(3));
  kernels::GemmHostOperands ops;
  ops.dtype = isa::Dtype::kBf16;
  ops.k = k;
  ops.m = m;
  ops.n = n;
  ops.stationary = operand(ops.dtype, size_t(k) * m, rng);
  ops.moving = operand(ops.dtype, size_t(k) * n, rng);

  const uint8_t canary = 0xA5;
  const std::vector<uint8_t> sbuf_fill(size_t(info.sbuf_partitions) * info.sbuf_partition_bytes, canary);
  const std::vector<uint8_t> psum_fill(size_t(info.psum_partitions) * info.psum_partition_bytes, canary);
  dev_->write_mem(regs::SBUF_BASE, sbuf_fill.data(), sbuf_fill.size());
  dev_->write_mem(regs::PSUM_BASE, psum_fill.data(), psum_fill.size());
  // run_gemm allocates stationary, moving, out in that order from HBM 0: put a canary after where out ends.
  const uint64_t out_end = 0x100000;  // well past the three small tensors
  const std::vector<uint8_t> hbm_fill(4096, canary);
  drv_->write_hbm(out_end, hbm_fill.data(), hbm_fill.size());

  const auto r = kernels::run_gemm(*drv_, ops, 10'000'000);
  const auto want = golden::gemm({ops.dtype, k, m, n, ops.stationary, ops.moving}, int(info.te_rows));
  ASSERT_EQ(r.out, want);

  kernels::GemmLayout layout;
  layout.dtype = ops.dtype;
  layout.k = k;
  layout.m = m;
  layout.n = n;
  const kernels::GemmPlan plan = kernels::plan_gemm(info, layout);
  const uint64_t sbuf_used = uint64_t(plan.sbuf_bytes);
  const uint64_t psum_used = uint64_t(plan.psum_buffers) * plan.banks_per_block * info.psum_bank_bytes();
  std::vector<uint8_t> row(info.sbuf_partition_bytes);
  for (uint32_t p = 0; p < info.sbuf_partitions; ++p) {
    drv_->read_sbuf(p, 0, row.data(), row.size());
    for (uint64_t b = sbuf_used; b < row.size(); ++b) {
      ASSERT_EQ(row[b], canary) << "SBUF partition " << p << " byte " << b << " (kernel buffers end at " << sbuf_used
                                << ")";
    }
  }
  row.resize(info.psum_partition_bytes);
  for (uint32_t p = 0; p < info.psum_partitions; ++p) {
    drv_->read_psum(p, 0, row.data(), row.size());
    for (uint64_t b = p < uint32_t(plan.m_tile) ? psum_used : 0; b < row.size(); ++b) {
      ASSERT_EQ(row[b], canary) << "PSUM partition " << p << " byte " << b;
    }
  }
  std::vector<uint8_t> after(hbm_fill.size());
  drv_->read_hbm(out_end, after.data(), after.size());
  EXPECT_EQ(after, hbm_fill) << "HBM past the result";
}

}  // namespace
}  // namespace trnsim::test
