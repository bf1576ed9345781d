// Long NeuronLink runs (label long): >= 100k cycles of traffic near saturation on the 4x4 and 2x2x2 tori, and the
// 3x5 torus (odd and even ring sizes in one network) under every pattern.
#include <string>

#include <gtest/gtest.h>

#include "tests/noc/noc_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim {
namespace {

using cosim::noc::NocNetwork;
using cosim::noc::Pattern;
using cosim::noc::TrafficOptions;

constexpr Pattern kPatterns[] = {Pattern::kUniform, Pattern::kTranspose, Pattern::kBitComp, Pattern::kHotspot,
                                 Pattern::kNeighbor};

TEST(NocLong, Uniform4x4For100kCycles) {
  NocNetwork net(test::torus("4x4"));
  TrafficOptions t;
  t.rate = 0.45;
  t.max_len = 5;
  t.inject_cycles = 100000;
  t.seed = test::test_seed();
  t.check_order = true;
  const auto r = test::expect_clean_run(net, t, "4x4 uniform 100k cycles");
  EXPECT_GE(r.cycles, 100000u);
}

TEST(NocLong, Hotspot2x2x2For100kCycles) {
  NocNetwork net(test::torus("2x2x2"));
  TrafficOptions t;
  t.pattern = Pattern::kHotspot;
  t.rate = 0.25;
  t.max_len = 5;
  t.inject_cycles = 100000;
  t.seed = test::test_seed();
  const auto r = test::expect_clean_run(net, t, "2x2x2 hotspot 100k cycles");
  EXPECT_GE(r.cycles, 100000u);
}

TEST(NocLong, OverloadWithLinkLatency4x4For100kCycles) {
  NocNetwork net(test::torus("4x4", "d2v4", 2));
  TrafficOptions t;
  t.pattern = Pattern::kTranspose;
  t.rate = 1.0;  // offered above saturation: source queues grow, the network must keep moving and drain
  t.max_len = 8;
  t.inject_cycles = 100000;
  t.drain_limit = 2000000;
  t.seed = test::test_seed();
  const auto r = test::expect_clean_run(net, t, "4x4 d2v4 transpose overload, link latency 2, 100k cycles");
  EXPECT_GE(r.cycles, 100000u);
}

// Near saturation on the 3x5 torus: about 90 % of the accepted throughput at full offered load (docs/neuronlink.md).
double near_saturation_3x5(Pattern p) {
  switch (p) {
    case Pattern::kUniform: return 0.44;
    case Pattern::kTranspose: return 0.37;
    case Pattern::kBitComp: return 0.64;
    case Pattern::kHotspot: return 0.22;
    case Pattern::kNeighbor: return 0.64;
  }
  return 0.1;
}

class Noc3x5 : public ::testing::TestWithParam<Pattern> {};

TEST_P(Noc3x5, EveryPatternNearSaturationAndLow) {
  for (double rate : {0.05, near_saturation_3x5(GetParam())}) {
    NocNetwork net(test::torus("3x5"));
    TrafficOptions t;
    t.pattern = GetParam();
    t.rate = rate;
    t.max_len = 5;
    t.inject_cycles = 20000;
    t.seed = test::test_seed() + static_cast<uint64_t>(rate * 100);
    t.check_order = true;
    test::expect_clean_run(net, t, "3x5 " + to_string(GetParam()) + " rate " + std::to_string(rate));
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, Noc3x5, ::testing::ValuesIn(kPatterns),
                         [](const ::testing::TestParamInfo<Pattern>& info) { return to_string(info.param); });

TEST(NocLong, Uniform3x5For100kCyclesWithLinkLatency) {
  NocNetwork net(test::torus("3x5", "", 1));
  TrafficOptions t;
  t.rate = 0.35;
  t.max_len = 5;
  t.inject_cycles = 100000;
  t.seed = test::test_seed();
  t.check_order = true;
  const auto r = test::expect_clean_run(net, t, "3x5 uniform 100k cycles, link latency 1");
  EXPECT_GE(r.cycles, 100000u);
}

}  // namespace
}  // namespace trnsim
