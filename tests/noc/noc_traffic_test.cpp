// NeuronLink router RTL under synthetic traffic: every pattern at low load and near saturation on the 2x2 and 4x4
// 2-D tori and the 2x2x2 3-D torus. Every packet must arrive exactly once, at its destination, intact and with its
// flits in order, and the network must drain (no deadlock: the watchdog fails a run where nothing moves for 1000
// cycles).
#include <cstdlib>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "tests/noc/noc_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim {
namespace {

using cosim::noc::NocNetwork;
using cosim::noc::Pattern;
using cosim::noc::TrafficOptions;

// Near-saturation offered load (flits per sending router per cycle) per torus and pattern: about 90 % of the
// accepted throughput measured at full offered load with the default builds (NocSweep.DISABLED_Saturation;
// docs/neuronlink.md has the table). Hotspot saturates at the hotspot's ejection port.
double near_saturation(const std::string& dims, Pattern p) {
  struct Row {
    const char* dims;
    double uniform, transpose, bitcomp, hotspot, neighbor;
  };
  static const Row rows[] = {
      {"2x2", 0.55, 0.64, 0.64, 0.53, 0.64},
      {"4x4", 0.53, 0.36, 0.64, 0.23, 0.64},
      {"2x2x2", 0.65, 0.78, 0.78, 0.41, 0.78},
  };
  for (const Row& r : rows) {
    if (dims != r.dims) continue;
    switch (p) {
      case Pattern::kUniform: return r.uniform;
      case Pattern::kTranspose: return r.transpose;
      case Pattern::kBitComp: return r.bitcomp;
      case Pattern::kHotspot: return r.hotspot;
      case Pattern::kNeighbor: return r.neighbor;
    }
  }
  ADD_FAILURE() << "no saturation figure for " << dims;
  return 0.1;
}

using TrafficParam = std::tuple<std::string, Pattern, bool>;  // torus, pattern, near saturation

class NocTraffic : public ::testing::TestWithParam<TrafficParam> {};

TEST_P(NocTraffic, DeliversEveryPacketOnceIntactInOrder) {
  const auto [dims, pattern, sat] = GetParam();
  NocNetwork net(test::torus(dims));
  TrafficOptions t;
  t.pattern = pattern;
  t.rate = sat ? near_saturation(dims, pattern) : 0.05;
  t.inject_cycles = dims == "4x4" ? 1500 : 2000;
  t.min_len = 1;
  t.max_len = 5;
  t.seed = test::test_seed();
  t.check_order = net.build(0).vcs_per_class() == 1;
  test::expect_clean_run(net, t, dims + " " + to_string(pattern) + (sat ? " near saturation" : " low load"));
}

std::string param_name(const ::testing::TestParamInfo<TrafficParam>& info) {
  const auto& [dims, pattern, sat] = info.param;
  return "T" + dims + "_" + to_string(pattern) + (sat ? "_Sat" : "_Low");
}

INSTANTIATE_TEST_SUITE_P(Tori, NocTraffic,
                         ::testing::Combine(::testing::Values("2x2", "4x4", "2x2x2"),
                                            ::testing::Values(Pattern::kUniform, Pattern::kTranspose,
                                                              Pattern::kBitComp, Pattern::kHotspot,
                                                              Pattern::kNeighbor),
                                            ::testing::Bool()),
                         param_name);

// A 3-D torus with a ring of three in Z: the only 3-D shape here on which dimension-order routing takes the minus
// direction in Z (on a ring of two every route is +), so the -z ports, VCs and dateline are exercised too.
TEST(NocTraffic3d, Torus2x2x3UsesBothZDirections) {
  for (const Pattern p : {Pattern::kUniform, Pattern::kNeighbor}) {
    NocNetwork net(test::torus("2x2x3"));
    TrafficOptions t;
    t.pattern = p;
    t.rate = 0.3;
    t.inject_cycles = 2000;
    t.min_len = 1;
    t.max_len = 5;
    t.seed = test::test_seed();
    t.check_order = net.build(0).vcs_per_class() == 1;
    test::expect_clean_run(net, t, "2x2x3 " + to_string(p));
  }
}

// Routers evaluated by several host threads (NocOptions::threads, `trnsim noc --threads`): near saturation with
// packets of 1 to 5 flits, every packet's creation, injection and delivery cycle is the same as on one thread, and
// the run is clean. 3 threads on 16 routers also gives ranges of unequal size (6, 5, 5).
TEST(NocThreads, EveryPacketTakesTheSameCyclesAsOnOneThread) {
  TrafficOptions t;
  t.pattern = Pattern::kUniform;
  t.rate = near_saturation("4x4", Pattern::kUniform);
  t.inject_cycles = 1000;
  t.min_len = 1;
  t.max_len = 5;
  t.seed = test::test_seed();
  t.record_packets = true;
  NocNetwork one(test::torus("4x4"));
  const cosim::noc::TrafficResult r1 = test::expect_clean_run(one, t, "4x4 one thread");
  for (const int threads : {2, 3}) {
    cosim::noc::NocOptions o = test::torus("4x4");
    o.threads = threads;
    NocNetwork net(o);
    EXPECT_EQ(net.threads(), threads);
    const cosim::noc::TrafficResult r = test::expect_clean_run(net, t, "4x4 threads");
    EXPECT_GT(r.packets_delivered, 1000u);
    EXPECT_EQ(r.cycles, r1.cycles) << threads << " threads";
    EXPECT_EQ(net.link_flits(), one.link_flits()) << threads << " threads";
    EXPECT_TRUE(r.packets == r1.packets) << threads << " threads: the packets' cycles differ";
  }
}

// More threads than routers: one per router is started. Outside 1..kMaxThreads: a NocError naming the count.
TEST(NocThreads, CountsAreCheckedAndCappedAtTheRouters) {
  cosim::noc::NocOptions o = test::torus("2x2");
  o.threads = 8;
  EXPECT_EQ(NocNetwork(o).threads(), 4);
  for (const int bad : {0, -1, 100000}) {
    o.threads = bad;
    try {
      NocNetwork net(o);
      ADD_FAILURE() << bad << " threads accepted";
    } catch (const cosim::noc::NocError& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad) + " host threads: outside 1..256"),
                std::string::npos)
          << e.what();
    }
  }
}

// Measurement, not a check: accepted throughput against offered load (run by hand with
// --gtest_also_run_disabled_tests --gtest_filter='NocSweep.*'; NOC_SWEEP_DIMS / NOC_SWEEP_ROUTER pick the torus).
TEST(NocSweep, DISABLED_Saturation) {
  const char* dims_env = std::getenv("NOC_SWEEP_DIMS");
  const char* router_env = std::getenv("NOC_SWEEP_ROUTER");
  const std::string dims = dims_env ? dims_env : "4x4";
  for (Pattern p : {Pattern::kUniform, Pattern::kTranspose, Pattern::kBitComp, Pattern::kHotspot,
                    Pattern::kNeighbor}) {
    for (double rate : {0.2, 0.4, 0.6, 0.8, 1.0}) {
      NocNetwork net(test::torus(dims, router_env ? router_env : ""));
      TrafficOptions t;
      t.pattern = p;
      t.rate = rate;
      t.inject_cycles = 3000;
      t.max_len = 5;
      const auto r = cosim::noc::run_traffic(net, t);
      std::cout << dims << " " << to_string(p) << " rate " << rate << ": " << r.summary() << "\n";
    }
  }
}

}  // namespace
}  // namespace trnsim
