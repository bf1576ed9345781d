// NeuronLink links: bring-up on every torus, flow-control parameter mismatches and unconnected links rejected with a
// readable error (never a silent stall), link latency, and the zero-load timing of a hop.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/noc/noc_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim {
namespace {

using cosim::noc::Coord;
using cosim::noc::Flit;
using cosim::noc::LinkCfg;
using cosim::noc::LinkFault;
using cosim::noc::NocError;
using cosim::noc::NocNetwork;
using cosim::noc::NocOptions;
using cosim::noc::TrafficOptions;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(NocLink, EveryLinkComesUpWithMatchingParameters) {
  for (const std::string dims : {"2x2", "4x4", "2x2x2", "3x5"}) {
    NocNetwork net(test::torus(dims));
    for (int n = 0; n < net.nodes(); ++n) {
      for (int l = 0; l < 2 * net.ndim(); ++l) {
        EXPECT_TRUE(net.link_up(n, l)) << dims << " router " << net.node_name(n) << " link " << l;
        EXPECT_EQ(net.link_err_cause(n, l), 0);
        const LinkCfg peer = net.link_peer_cfg(n, l);
        EXPECT_EQ(peer.num_vc, net.build(n).num_vc);
        EXPECT_EQ(peer.depth, net.build(n).depth);
      }
    }
    EXPECT_LE(net.cycle(), 4u) << dims << ": bring-up takes a few cycles";
  }
}

TEST(NocLink, BuildsReportTheirParameters) {
  const auto builds = cosim::noc::built_routers();
  ASSERT_GE(builds.size(), 3u);
  for (const auto& b : builds) {
    std::cout << b.str() << "\n";
    EXPECT_TRUE(b.ndim == 2 || b.ndim == 3) << b.str();
    EXPECT_EQ(b.num_vc % (2 * b.vc_groups), 0) << b.str();
  }
}

// Two real router builds with different VC counts on one link: both ends detect it at bring-up.
TEST(NocLink, VcCountMismatchBetweenBuildsIsRejectedAtBringUp) {
  NocOptions o = test::torus("2x2");
  o.node_router[1] = "d2v4";  // router (1,0): 4 VCs; the others: 2
  try {
    NocNetwork net(o);
    FAIL() << "a 2-VC router linked to a 4-VC router came up";
  } catch (const NocError& e) {
    const std::string msg = e.what();
    std::cout << msg << "\n";
    EXPECT_TRUE(contains(msg, "link bring-up failed")) << msg;
    EXPECT_TRUE(contains(msg, "flow-control mismatch")) << msg;
    // The 2-VC end sees a 4-VC receiver, the 4-VC end sees a 2-VC receiver.
    EXPECT_TRUE(contains(msg, "router (0,0) port +x (link to router (1,0) port -x): flow-control mismatch: the "
                              "receiver at the far end advertises 4 VCs x 4 flits per VC buffer, this router sends "
                              "for 2 VCs x 4 flits (build d2v2)")) << msg;
    EXPECT_TRUE(contains(msg, "router (1,0) port -x (link to router (0,0) port +x): flow-control mismatch: the "
                              "receiver at the far end advertises 2 VCs x 4 flits per VC buffer, this router sends "
                              "for 4 VCs x 4 flits (build d2v4)")) << msg;
  }
}

// A receiver built with deeper buffers (emulated: its credit-init beat says DEPTH = 8).
TEST(NocLink, BufferDepthMismatchIsRejectedAtBringUp) {
  NocOptions o = test::torus("4x4");
  o.faults.push_back({LinkFault::Kind::kPartnerCfg, 5, 0, 0, LinkCfg{2, 8}});
  const auto [err, out] = test::error_and_output([&] { NocNetwork net(o); });
  EXPECT_TRUE(contains(err, "router (1,1) port +x (link to router (2,1) port -x): flow-control mismatch: the "
                            "receiver at the far end advertises 2 VCs x 8 flits per VC buffer, this router sends for "
                            "2 VCs x 4 flits (build d2v2)")) << err;
  EXPECT_TRUE(contains(out, "the receiver has 2 VCs x 8 flits per VC buffer, this sender is built for 2 VCs x 4 "
                            "flits")) << out;
  EXPECT_TRUE(contains(err, "RTL assertions fired too")) << err;
}

// The error outputs themselves: cause codes per port, and the mismatched link stays down (nothing is sent on it).
TEST(NocLink, MismatchRaisesErrorOutputsAndTheLinkStaysDown) {
  NocOptions o = test::torus("2x2");
  o.faults.push_back({LinkFault::Kind::kPartnerCfg, 0, 2, 0, LinkCfg{2, 3}});
  o.fail_on_errors = false;
  NocNetwork net(o);
  EXPECT_TRUE(net.any_link_error());
  EXPECT_TRUE(net.rtl_error());
  EXPECT_FALSE(net.link_up(0, 2));
  EXPECT_EQ(net.link_err_cause(0, 2), 1);                 // LINK_ERR_CREDIT: our sender saw the bad credit-init
  EXPECT_EQ(net.link_peer_cfg(0, 2).depth, 3);
  EXPECT_EQ(net.link_err_cause(net.neighbour(0, 2), 3), 0);  // the far end saw our (correct) bring-up beat
  for (int l : {0, 1, 3}) EXPECT_TRUE(net.link_up(0, l)) << l;
  for (int i = 0; i < 100; ++i) net.step();
  EXPECT_FALSE(net.link_up(0, 2));
  EXPECT_EQ(net.link_err_cause(0, 2), 1);
}

TEST(NocLink, UnconnectedLinkIsReportedNotSilent) {
  NocOptions o = test::torus("2x2x2");
  o.faults.push_back({LinkFault::Kind::kCut, 3, 4, 0, {}});  // router (1,1,0) port +z
  const auto [err, out] = test::error_and_output([&] { NocNetwork net(o); });
  EXPECT_TRUE(contains(err, "router (1,1,0) port +z (link to router (1,1,1) port -z): no bring-up beat from the far "
                            "end within the router's LINK_TIMEOUT (64 cycles) of reset: link not connected?")) << err;
  EXPECT_TRUE(contains(err, "router (1,1,1) port -z")) << err;
  EXPECT_TRUE(contains(out, "no credit-init beat from the receiver within 64 cycles of reset")) << out;
  EXPECT_TRUE(contains(out, "no bring-up beat from the sender within 64 cycles of reset")) << out;
}

// Zero-load latency of a single-flit packet over H hops with links of L extra register stages:
// 4 + H * (3 + L) cycles from the injection handshake to the ejection handshake (docs/neuronlink.md, "Timing").
TEST(NocLink, ZeroLoadLatencyIsFourPlusThreePlusLinkLatencyPerHop) {
  for (int latency : {0, 1, 3}) {
    NocNetwork net(test::torus("4x4", "", latency));
    for (const auto& [dst, hops] : std::vector<std::pair<Coord, int>>{
             {Coord{{0, 0, 0}}, 0}, {Coord{{1, 0, 0}}, 1}, {Coord{{3, 0, 0}}, 1}, {Coord{{2, 0, 0}}, 2},
             {Coord{{2, 3, 0}}, 3}, {Coord{{2, 2, 0}}, 4}}) {
      Flit f;
      f.head = f.tail = true;
      f.data = cosim::noc::make_header(dst, 0, 0x1234);
      ASSERT_TRUE(net.inj_ready(0));
      net.drive_inject(0, &f);
      const uint64_t t0 = net.cycle();
      net.step();
      net.drive_inject(0, nullptr);
      const int d = net.node(dst);
      uint64_t t1 = 0;
      for (int i = 0; i < 100 && t1 == 0; ++i) {
        if (net.ej_valid(d)) {
          EXPECT_EQ(net.ej_flit(d).data, f.data);
          t1 = net.cycle();
        }
        net.step();
      }
      EXPECT_EQ(t1 - t0, uint64_t(4 + hops * (3 + latency))) << "L=" << latency << " to " << dst.str(2);
      for (int i = 0; i < 10; ++i) net.step();
    }
  }
}

// One VC streams a long packet at one flit per cycle while DEPTH covers the credit loop (4 + 2L cycles); with
// longer links the same VC sends DEPTH flits per loop (docs/neuronlink.md, "Credit flow control").
TEST(NocLink, CreditLoopLimitsOneVcToDepthFlitsPerRoundTrip) {
  for (int latency : {0, 1, 2}) {
    NocNetwork net(test::torus("4x4", "", latency));
    const int len = 24;
    const int dst = net.node(Coord{{2, 0, 0}});  // 2 hops, all flits on one VC per link
    std::vector<uint64_t> eject_cycles;
    int sent = 0;
    for (int cycle = 0; cycle < 400 && static_cast<int>(eject_cycles.size()) < len; ++cycle) {
      Flit f;
      f.head = sent == 0;
      f.tail = sent == len - 1;
      f.data = f.head ? cosim::noc::make_header(Coord{{2, 0, 0}}, 0, 0) : uint64_t(sent);
      const bool offer = sent < len;
      net.drive_inject(0, offer ? &f : nullptr);
      const bool taken = offer && net.inj_ready(0);
      if (net.ej_valid(dst)) eject_cycles.push_back(net.cycle());
      net.step();
      if (taken) ++sent;
    }
    ASSERT_EQ(eject_cycles.size(), size_t(len)) << "L=" << latency;
    // Steady state, away from the head: flits per cycle over the last 16 flits.
    const double span = double(eject_cycles[len - 1] - eject_cycles[len - 17]);
    const double rate = 16.0 / span;
    const double expected = std::min(1.0, 4.0 / (4.0 + 2.0 * latency));
    std::cout << "L=" << latency << ": " << rate << " flits/cycle on one VC (expected " << expected << ")\n";
    EXPECT_NEAR(rate, expected, 0.05) << "L=" << latency;
  }
}

// Longer links under load: credits cover the longer round trip, nothing is lost.
TEST(NocLink, TrafficOverLinksWithLatency) {
  for (int latency : {1, 4}) {
    NocNetwork net(test::torus("4x4", "", latency));
    TrafficOptions t;
    t.rate = 0.3;
    t.inject_cycles = 1500;
    t.max_len = 5;
    t.seed = test::test_seed() + static_cast<uint64_t>(latency);
    t.check_order = true;
    test::expect_clean_run(net, t, "4x4 uniform, link latency " + std::to_string(latency));
  }
}

}  // namespace
}  // namespace trnsim
