// NeuronLink directed tests: a single-flit packet right behind a multi-flit packet's tail on the same output, VC
// allocation with several VCs per class and message-class groups, ejection backpressure, the watchdog, waveforms.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/noc/noc_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim {
namespace {

using cosim::noc::Coord;
using cosim::noc::Flit;
using cosim::noc::flit_payload;
using cosim::noc::make_header;
using cosim::noc::NocNetwork;
using cosim::noc::NocOptions;
using cosim::noc::Pattern;
using cosim::noc::TrafficOptions;

// Packets of the given lengths, back to back on one injection VC of router 0, all to `dst`; returns the flits.
std::vector<Flit> packet_train(const Coord& dst, const std::vector<int>& lengths, uint8_t vc) {
  std::vector<Flit> flits;
  for (size_t p = 0; p < lengths.size(); ++p) {
    for (int i = 0; i < lengths[p]; ++i) {
      Flit f;
      f.vc = vc;
      f.head = i == 0;
      f.tail = i == lengths[p] - 1;
      f.data = f.head ? make_header(dst, 0, p) : flit_payload(0, p, i);
      flits.push_back(f);
    }
  }
  return flits;
}

// Offers the flits on router 0's injection port one per cycle (as fast as it takes them), collects what router
// `dst` ejects, and runs `tail_cycles` more cycles after the last injection so a duplicate would show.
std::vector<Flit> run_train(NocNetwork& net, int dst, const std::vector<Flit>& flits, int tail_cycles = 60) {
  std::vector<Flit> got;
  size_t next = 0;
  int quiet = 0;
  while (quiet < tail_cycles) {
    net.drive_inject(0, next < flits.size() ? &flits[next] : nullptr);
    const bool taken = next < flits.size() && net.inj_ready(0);
    if (net.ej_valid(dst)) got.push_back(net.ej_flit(dst));
    net.step();
    if (taken) ++next;
    if (next == flits.size()) ++quiet;
  }
  return got;
}

// Multi-flit packets each followed at once by a single-flit packet (head = tail), all on one VC through the same
// outputs: every flit arrives exactly once, in the order sent; the ejection VC of each packet is contiguous.
TEST(NocDirected, SingleFlitPacketRightAfterMultiFlitTailIsSentOnceInOrder) {
  for (const std::string router : {"d2v2", "d2v4"}) {
    for (const Coord dst : {Coord{{1, 0, 0}}, Coord{{2, 1, 0}}, Coord{{0, 0, 0}}}) {
      NocNetwork net(test::torus("4x4", router));
      const std::vector<int> lengths = {5, 1, 3, 1, 1, 2, 1, 5, 1, 1, 1, 4, 1};
      const std::vector<Flit> sent = packet_train(dst, lengths, 1);
      const std::vector<Flit> got = run_train(net, net.node(dst), sent);
      ASSERT_EQ(got.size(), sent.size()) << router << " to " << dst.str(2);
      for (size_t i = 0; i < sent.size(); ++i) {
        EXPECT_EQ(got[i].head, sent[i].head) << i;
        EXPECT_EQ(got[i].tail, sent[i].tail) << i;
        EXPECT_EQ(got[i].data, sent[i].data) << router << " to " << dst.str(2) << ": flit " << i;
        if (!got[i].head) {
          EXPECT_EQ(got[i].vc, got[i - 1].vc) << "packet changed VC at flit " << i;
        }
      }
    }
  }
}

// The same, with the single-flit packets arriving from a second input port and competing for the output: every
// packet exactly once and contiguous per VC (the traffic checker), in a hot spot of short and long packets.
TEST(NocDirected, MixedLengthsIntoOneOutputUnderContention) {
  NocNetwork net(test::torus("4x4"));
  TrafficOptions t;
  t.pattern = Pattern::kHotspot;
  t.hotspot_fraction = 0.6;
  t.hotspot_node = 5;
  t.rate = 0.25;
  t.min_len = 1;
  t.max_len = 2;  // half the packets single-flit
  t.inject_cycles = 1500;
  t.seed = test::test_seed();
  t.check_order = true;
  test::expect_clean_run(net, t, "4x4 hotspot, 1-2 flit packets");
}

// Several VCs per dateline class (d2v4): both stages of VC allocation choose; message-class groups (d3v4g2).
TEST(NocDirected, SeveralVcsPerClassNearSaturation) {
  for (Pattern p : {Pattern::kUniform, Pattern::kTranspose, Pattern::kHotspot}) {
    NocNetwork net(test::torus("4x4", "d2v4"));
    TrafficOptions t;
    t.pattern = p;
    t.rate = 0.6;
    t.max_len = 5;
    t.inject_cycles = 1500;
    t.seed = test::test_seed() + static_cast<uint64_t>(p);
    test::expect_clean_run(net, t, "4x4 d2v4 " + to_string(p));
  }
}

TEST(NocDirected, MessageClassesUseTheirVcGroup) {
  NocNetwork net(test::torus("2x2x2"));  // d3v4g2: classes 0, 2 -> VCs 0, 1; classes 1, 3 -> VCs 2, 3
  for (unsigned mclass = 0; mclass < 4; ++mclass) {
    Flit f;
    f.head = f.tail = true;
    f.data = make_header(Coord{{1, 1, 1}}, mclass, mclass);
    net.drive_inject(0, &f);
    net.step();
    net.drive_inject(0, nullptr);
    const int d = net.node(Coord{{1, 1, 1}});
    bool seen = false;
    for (int i = 0; i < 40; ++i) {
      if (net.ej_valid(d)) {
        const Flit g = net.ej_flit(d);
        EXPECT_EQ(g.data, f.data);
        EXPECT_EQ(g.vc / 2, mclass % 2) << "class " << mclass << " ejected on VC " << int(g.vc);
        seen = true;
      }
      net.step();
    }
    EXPECT_TRUE(seen) << "class " << mclass;
  }
}

TEST(NocDirected, EjectionBackpressure) {
  NocNetwork net(test::torus("4x4"));
  TrafficOptions t;
  t.rate = 0.3;
  t.max_len = 5;
  t.eject_stall_prob = 0.5;
  t.inject_cycles = 1500;
  t.seed = test::test_seed();
  t.check_order = true;
  test::expect_clean_run(net, t, "4x4 uniform, sinks stall half the cycles");
}

TEST(NocDirected, WatchdogFailsARunThatStopsMoving) {
  NocNetwork net(test::torus("2x2"));
  TrafficOptions t;
  t.rate = 0.5;
  t.eject_stall_prob = 1.0;  // no sink ever takes a flit: the network fills and stops
  t.inject_cycles = 500;
  const auto [err, out] = test::error_and_output([&] { cosim::noc::run_traffic(net, t); });
  EXPECT_NE(err.find("watchdog: nothing moved for 1000 cycles"), std::string::npos) << err;
  EXPECT_NE(err.find("still queued at their source"), std::string::npos) << err;
}

TEST(NocDirected, WaveformOfEveryRouter) {
  const std::string path = ::testing::TempDir() + "noc_wave_test.fst";
  std::remove(path.c_str());
  {
    NocOptions o = test::torus("2x2");
    o.wave_path = path;
    NocNetwork net(o);
    TrafficOptions t;
    t.rate = 0.2;
    t.inject_cycles = 100;
    test::expect_clean_run(net, t, "2x2 with waveform");
  }
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_GT(std::filesystem::file_size(path), 1000u);
  const std::string vcd = ::testing::TempDir() + "noc_wave_test.vcd";
  if (std::system(("fst2vcd " + path + " > " + vcd + " 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "no fst2vcd";
  std::ifstream in(vcd);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  for (const char* scope : {"node_0_0", "node_1_0", "node_0_1", "node_1_1"}) {
    EXPECT_NE(s.find(std::string("$scope module ") + scope), std::string::npos) << scope;
  }
  EXPECT_NE(s.find("tx_fwd_o"), std::string::npos);
  EXPECT_NE(s.find("crd_q"), std::string::npos);
  std::remove(vcd.c_str());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace trnsim
