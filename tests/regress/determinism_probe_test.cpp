// Determinism probes (BRIEF section 5; issue 6, "the same seed gives the same bits and cycle counts"): two random
// tests that print a digest of every result bit and the cycle count of their run, so that determinism_test.cpp can
// run each in fresh processes with the same seed and with another, and compare. Each also checks its result against
// the golden GEMM, so a probe is a real test too.
//   DeterminismProbe.TeRtlRandomGemm       the verilated 8x8 Tensor Engine, random dtype/shape/operands, random
//                                          input gaps and output backpressure, all from the seed
//   DeterminismProbe.GemmKernelLockstep    the GEMM kernel on the SystemC device with the TLM and RTL engines in
//                                          lockstep (bits and cycles compared per instruction), random dtype/shape
#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/device/sim_device.h"
#include "cosim/te/te_rtl.h"
#include "firmware/driver/driver.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/kernels/gemm_launch.h"
#include "model/config/chip_config.h"
#include "tests/support/test_seed.h"
#include "tests/te/te_test_util.h"

namespace trnsim {
namespace {

// FNV-1a over the result words.
uint64_t digest(const std::vector<uint32_t>& words) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint32_t w : words) {
    for (int b = 0; b < 4; ++b) {
      h ^= (w >> (8 * b)) & 0xFFu;
      h *= 0x100000001B3ull;
    }
  }
  return h;
}

isa::Dtype pick_dtype(std::mt19937_64& rng) {
  const isa::Dtype all[] = {isa::Dtype::kBf16, isa::Dtype::kFp16, isa::Dtype::kFp8E4M3, isa::Dtype::kFp8E5M2};
  return all[rng() % 4];
}

// The line determinism_test.cpp compares: "[ digest   ] NAME dtype=.. k=.. m=.. n=.. bits=HEX cycles=N".
void print_digest(const char* name, isa::Dtype dt, int k, int m, int n, const std::vector<uint32_t>& out,
                  uint64_t cycles) {
  std::printf("[ digest   ] %s dtype=%s k=%d m=%d n=%d bits=%016llx cycles=%llu\n", name,
              std::string(isa::dtype_name(dt)).c_str(), k, m, n, static_cast<unsigned long long>(digest(out)),
              static_cast<unsigned long long>(cycles));
  std::fflush(stdout);
}

TEST(DeterminismProbe, TeRtlRandomGemm) {
  const uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  const int rows = 8, cols = 8;
  const isa::Dtype dt = pick_dtype(rng);
  const int k = 1 + int(rng() % rows), m = 1 + int(rng() % cols), n = 1 + int(rng() % 64);
  cosim::TeRtlOptions opts;
  opts.in_gap_prob = 0.25;
  opts.out_stall_prob = 0.35;
  opts.seed = seed;
  auto te = cosim::TeRtl::create(rows, cols, opts);
  const auto s = test::random_tensor(dt, size_t(k) * m, rng);
  const auto mv = test::random_tensor(dt, size_t(k) * n, rng);
  const std::vector<uint32_t> out = te->matmul(dt, k, m, n, s, mv);
  EXPECT_EQ(out, golden::gemm({dt, k, m, n, s, mv}, rows));
  print_digest("te_rtl", dt, k, m, n, out, te->cycle());
}

TEST(DeterminismProbe, GemmKernelLockstep) {
  const uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  cosim::SimDeviceOptions o;
  o.te = cosim::TeMode::kLockstep;
  cosim::SimDevice dev(model::chip_config("tiny"), o);
  driver::Driver drv(dev);
  kernels::GemmHostOperands ops;
  ops.dtype = pick_dtype(rng);
  ops.k = 1 + int(rng() % 40);
  ops.m = 1 + int(rng() % 40);
  ops.n = 1 + int(rng() % 100);
  ops.stationary = test::random_tensor(ops.dtype, size_t(ops.k) * ops.m, rng);
  ops.moving = test::random_tensor(ops.dtype, size_t(ops.k) * ops.n, rng);
  const kernels::GemmDeviceRun r = kernels::run_gemm(drv, ops, 100'000'000);
  EXPECT_EQ(r.out, golden::gemm({ops.dtype, ops.k, ops.m, ops.n, ops.stationary, ops.moving},
                                int(drv.info().te_rows)));
  print_digest("gemm_lockstep", ops.dtype, ops.k, ops.m, ops.n, r.out, r.run.cycles);
}

}  // namespace
}  // namespace trnsim
