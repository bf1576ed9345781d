// Every workload of the library's registry (firmware/workloads) on the device, at small shapes: run_and_check
// writes, builds, runs and compares against the golden host kernels, and the test asserts on the report it returns.
// Built twice from this source, like the kernel device tests: in process and against `trnsim serve` (_served).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "firmware/workloads/workloads.h"
#include "tests/kernels/device/kernel_device.h"
#include "tests/support/test_seed.h"

namespace trnsim::workloads {
namespace {

constexpr uint64_t kTimeout = 100'000'000;

/// Shapes small enough for the tiny device and a few seconds of TLM simulation, not multiples of the 16-row TE.
Params small() {
  Params p;
  p.seq = 24, p.d_model = 40, p.heads = 2, p.d_ff = 56;
  p.m = 20, p.k = 37, p.n = 45;
  return p;
}

class WorkloadOnDevice : public test::KernelDeviceTest, public ::testing::WithParamInterface<std::string> {
 protected:
  WorkloadOnDevice() : KernelDeviceTest({"tiny", /*checks=*/true}) {}
};

TEST_P(WorkloadOnDevice, MatchesTheGoldenAndReportsItsFigures) {
  const Entry* e = find(GetParam());
  ASSERT_NE(e, nullptr);
  const Workload w = e->make(small());
  const Tensors in = make_inputs(w.inputs, test::test_seed());
  std::size_t built_programs = 0;
  const Report r = run_and_check(*drv_, w, in, kTimeout, [&](std::size_t p, std::size_t) { built_programs = p; });
  EXPECT_TRUE(r.pass) << r.mismatches << " of " << r.compared << " elements differ";
  EXPECT_EQ(r.mismatches, 0u);
  ASSERT_FALSE(r.checks.empty());
  EXPECT_EQ(r.checks.front().name, "out");  // the result is always checked
  EXPECT_EQ(r.programs, built_programs);
  EXPECT_GT(r.cycles, 0u);
  uint64_t step_cycles = 0;
  int step_programs = 0;
  for (const StepGroup& g : r.steps) step_cycles += g.cycles, step_programs += g.programs;
  EXPECT_EQ(step_cycles, r.cycles);
  EXPECT_EQ(size_t(step_programs), r.programs);
  std::set<std::string> outputs;
  for (const OutputSpec& o : r.outputs) outputs.insert(o.name);
  for (const Check& c : r.checks) {
    EXPECT_EQ(outputs.count(c.name), 1u) << c.name;
    EXPECT_EQ(c.elements, elements(c.shape)) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, WorkloadOnDevice,
                         ::testing::Values("gemm", "gpt2-mlp-up", "softmax", "layernorm", "rmsnorm", "mlp",
                                           "attention", "transformer-block"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

TEST_F(WorkloadOnDevice, AWrongGoldenFailsTheCheck) {
  Workload w = find("layernorm")->make(small());
  const auto right = w.golden;
  w.golden = [right](const Tensors& in, const driver::DeviceInfo& info) {
    Tensors t = right(in, info);
    t.at("out")[7] ^= 1;  // one bit of one element
    return t;
  };
  const Report r = run_and_check(*drv_, w, make_inputs(w.inputs, 3), kTimeout);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.mismatches, 1u);
  ASSERT_EQ(r.checks.front().first.size(), 1u);
  EXPECT_EQ(r.checks.front().first[0].index, 7u);
}

TEST(WorkloadRegistry, BadShapesAndGivenInputsAreRefusedNamingThem) {
  Params p = small();
  p.heads = 3;  // 40 is not a multiple of 3
  try {
    find("attention")->make(p);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--heads 3"), std::string::npos) << e.what();
  }
  const Workload w = find("rmsnorm")->make(small());
  EXPECT_THROW(make_inputs(w.inputs, 1, {{"gamma", Patterns(3)}}), std::invalid_argument);
  // A given input replaces only itself: the others are drawn as without it.
  const Tensors a = make_inputs(w.inputs, 9), b = make_inputs(w.inputs, 9, {{"gamma", Patterns(40, 0x3F800000u)}});
  EXPECT_EQ(a.at("x"), b.at("x"));
  EXPECT_EQ(b.at("gamma"), Patterns(40, 0x3F800000u));
}

}  // namespace
}  // namespace trnsim::workloads
