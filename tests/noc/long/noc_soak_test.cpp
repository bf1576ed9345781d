// Soak (issue 16, label long): 1e8 flits through a 4x4 torus near saturation with bit errors on every link, in
// windows of traffic on one network that keeps its state (the link layer's sequence numbers, credits and replay
// buffers run on across windows): 0 lost, 0 duplicated, 0 corrupted, never stuck (the harness's watchdog and drain
// limit), every credit back at the end. The TLM carries the 1e8 flits (about 2 minutes); the RTL and the TLM in
// lockstep carry 2e6 with the same faults.
#include <gtest/gtest.h>

#include <iostream>

#include "cosim/noc/noc_lockstep.h"
#include "model/noc/noc_link.h"
#include "tests/noc/noc_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim {
namespace {

using cosim::noc::TrafficOptions;
using cosim::noc::TrafficResult;
namespace mn = model::noc;

// Runs windows of `window` cycles of uniform traffic at `rate` until `flits` flits were delivered; returns them.
uint64_t soak(mn::NocPorts& net, uint64_t flits, double rate, uint64_t window, uint64_t seed) {
  uint64_t delivered = 0, windows = 0;
  while (delivered < flits) {
    TrafficOptions t;
    t.rate = rate;
    t.inject_cycles = window;
    t.seed = seed + windows;
    t.watchdog_cycles = 5000;
    t.drain_limit = 1000000;
    const TrafficResult r = test::expect_clean_run(net, t, "soak window " + std::to_string(windows));
    if (!r.ok() || r.packets_delivered != r.packets_created) break;
    delivered += r.flits_delivered;
    ++windows;
    std::cout << "[ soak     ] " << delivered << " flits delivered; " << net.link_stats().str() << "\n";
  }
  return delivered;
}

TEST(NocSoak, A100MillionFlitsThroughA4x4TorusNearSaturationWithBitErrors) {
  mn::TlmOptions o = test::tlm_net("4x4");
  o.errors = mn::LinkErrors{1e-5, 0, test::test_seed()};
  mn::TlmNetwork net(o);
  const uint64_t delivered = soak(net, 100000000, 0.56, 1000000, test::test_seed());
  EXPECT_GE(delivered, 100000000u);
  const mn::LinkStats s = net.link_stats();
  EXPECT_GT(s.crc_errors, 1000u);
  EXPECT_GT(s.replays, 1000u);
  for (int i = 0; i < 300; ++i) net.step();
  for (int n = 0; n < net.nodes(); ++n) {
    for (int l = 0; l < 4; ++l) {
      EXPECT_EQ(net.unacknowledged(n, l), 0);
      for (int v = 0; v < o.num_vc; ++v) EXPECT_EQ(net.credits(n, l, v), o.depth);
    }
  }
}

TEST(NocSoak, TwoMillionFlitsInLockstepWithBitErrorsAndDrops) {
  cosim::noc::NocOptions o = test::torus("4x4");
  o.errors = mn::LinkErrors{1e-5, 1e-5, test::test_seed()};
  cosim::noc::LockstepNetwork net(o);
  EXPECT_GE(soak(net, 2000000, 0.56, 50000, test::test_seed()), 2000000u);
  EXPECT_GT(net.link_stats().replays, 10u);
}

}  // namespace
}  // namespace trnsim
