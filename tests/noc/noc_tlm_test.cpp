// The TLM NeuronLink network (model/noc/noc_tlm.h) on its own: every traffic pattern at low load, near saturation and
// far above it on the 4x4, 3x5 and 2x2x2 tori and a 4x4 mesh (every packet exactly once, intact, in order; the
// network drains; the 1k-cycle watchdog never fires), the zero-load latency formula of docs/neuronlink.md, options
// the RTL builds do not have (8 VCs, deep buffers, 1-D rings), bad options. Its agreement with the RTL is
// noc_lockstep_test's job.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <thread>
#include <utility>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/core.h>

#include "cosim/noc/noc_traffic.h"
#include "model/noc/noc_endpoints.h"
#include "model/noc/noc_tlm.h"
#include "tests/noc/noc_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {
namespace {

using cosim::noc::Pattern;
using cosim::noc::TrafficOptions;
using model::noc::NocError;
using model::noc::TlmNetwork;
using model::noc::TlmOptions;

struct TlmCase {
  std::string dims;
  bool torus;
  Pattern pattern;
  double rate;
  std::string load;  // low, sat, over
};

std::string case_name(const TlmCase& c) {
  return std::string(c.torus ? "t" : "m") + c.dims + "_" + cosim::noc::to_string(c.pattern) + "_" + c.load;
}

class NocTlmTraffic : public ::testing::TestWithParam<TlmCase> {};

TEST_P(NocTlmTraffic, EveryPacketOnceIntactInOrderAndDrains) {
  const TlmCase& c = GetParam();
  TlmNetwork net(tlm_net(c.dims, c.torus));
  TrafficOptions t;
  t.pattern = c.pattern;
  t.rate = c.rate;
  t.min_len = 1;
  t.max_len = 5;
  t.inject_cycles = 3000;
  // Torus: one VC per (group, dateline class), so the packets of a pair stay in order. A mesh lets a packet use
  // either VC of its group (no dateline), so packets of a pair may overtake each other there.
  t.check_order = c.torus;
  t.seed = test_seed();
  const auto r = expect_clean_run(net, t, case_name(c));
  EXPECT_GT(r.packets_delivered, 50u);
  EXPECT_EQ(net.flits_in_network(), 0u);
  if (c.load == "low") {
    EXPECT_NEAR(r.accepted, r.offered, 0.02);  // below saturation, everything offered goes through
  }
}

// Near saturation = about 90 % of the saturation throughput per pattern (docs/neuronlink.md, "Saturation
// throughput"); "over" offers a flit every cycle, far above it (source queues grow, the network must still drain).
std::vector<TlmCase> tlm_cases() {
  struct Sat { std::string dims; bool torus; std::vector<double> sat; };
  const std::vector<Sat> nets = {{"4x4", true, {0.53, 0.36, 0.64, 0.23, 0.64}},
                                 {"3x5", true, {0.48, 0.37, 0.64, 0.24, 0.64}},
                                 {"2x2x2", true, {0.65, 0.78, 0.78, 0.40, 0.78}},
                                 {"4x4", false, {0.30, 0.25, 0.25, 0.19, 0.64}}};
  const Pattern pats[] = {Pattern::kUniform, Pattern::kTranspose, Pattern::kBitComp, Pattern::kHotspot,
                          Pattern::kNeighbor};
  std::vector<TlmCase> v;
  for (const Sat& n : nets) {
    for (size_t p = 0; p < 5; ++p) {
      v.push_back({n.dims, n.torus, pats[p], 0.05, "low"});
      v.push_back({n.dims, n.torus, pats[p], n.sat[p], "sat"});
      v.push_back({n.dims, n.torus, pats[p], 1.0, "over"});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Nets, NocTlmTraffic, ::testing::ValuesIn(tlm_cases()),
                         [](const auto& info) { return case_name(info.param); });

// One single-flit packet from (0,0) to (h,0) through an idle 8x8 network: 4 + h * (3 + L) cycles from the injection
// handshake to the ejection handshake (the RTL's pipeline, docs/neuronlink.md "The router").
// flits_in_network() counts every flit once wherever it is: one flit from injection to ejection is 1 every cycle,
// on links of any latency (found by the noc fuzz target: a flit in a router's output register was counted a second
// time in the link pipe slot that copies the register).
TEST(NocTlm, OneFlitInFlightCountsOnceEveryCycleAtEveryLinkLatency) {
  for (int latency = 0; latency <= 3; ++latency) {
    TlmOptions o;
    o.ndim = 1;
    o.size = {4, 1, 1};
    o.link_latency = latency;
    TlmNetwork net(o);
    model::noc::Flit f;
    f.head = f.tail = true;
    f.data = model::noc::make_header(net.coord(2), 0, 7);
    bool ejected = false;
    for (int c = 0; c < 40 && !ejected; ++c) {
      net.drive_inject(0, c == 0 ? &f : nullptr);
      for (int n = 0; n < net.nodes(); ++n) net.drive_eject_ready(n, true);
      ejected = net.ej_valid(2);
      net.step();
      ASSERT_EQ(net.flits_in_network(), ejected ? 0u : 1u) << "link latency " << latency << ", cycle " << c;
    }
    EXPECT_TRUE(ejected) << "link latency " << latency;
  }
}

TEST(NocTlm, ZeroLoadLatencyIsFourPlusThreePlusLinkLatencyPerHop) {
  for (bool torus : {true, false}) {
    for (int lat : {0, 1, 3}) {
      for (int h = 0; h <= 4; ++h) {
        TlmOptions o;
        o.size = {8, 8, 1};
        o.torus = torus;
        o.link_latency = lat;
        TlmNetwork net(o);
        model::noc::Coord dst;
        dst[0] = h;
        model::noc::Flit f{true, true, 0, model::noc::make_header(dst, 0, 0x123)};
        ASSERT_TRUE(net.inj_ready(0));
        net.drive_inject(0, &f);
        const uint64_t start = net.cycle();
        net.step();
        net.drive_inject(0, nullptr);
        const int d = net.node(dst);
        while (!net.ej_valid(d) && net.cycle() - start < 200) net.step();
        ASSERT_TRUE(net.ej_valid(d));
        EXPECT_EQ(net.ej_flit(d).data, f.data);
        EXPECT_EQ(net.cycle() - start, uint64_t(4 + h * (3 + lat))) << "torus " << torus << " hops " << h
                                                                     << " link latency " << lat;
      }
    }
  }
}

// A destination exactly half a ring away (even ring size k) is as far either way: routing sends the packet + from a
// router at an even coordinate in that dimension and - from an odd one (docs/neuronlink.md, "Routing"), so each
// direction carries half the tied traffic. One single-flit packet at a time through an idle torus: the links it
// used (counted per router and link port) must be exactly the k/2 links of the documented direction, in x then y,
// and it takes 4 + 3 H cycles for H = the hand-counted hops.
TEST(NocTlm, TiedDestinationGoesPlusFromEvenCoordinateMinusFromOdd) {
  struct Trip { int sx, sy, dx, dy; };
  for (int k : {2, 4, 8}) {
    const int h = k / 2;
    std::vector<Trip> trips;
    for (int s = 0; s < k; ++s) {
      trips.push_back({s, 1 % k, (s + h) % k, 1 % k});          // tie in x only
      trips.push_back({1 % k, s, 1 % k, (s + h) % k});          // tie in y only
      trips.push_back({s, (s + 1) % k, (s + h) % k, (s + 1 + h) % k});  // ties in x, then y
    }
    for (const Trip& t : trips) {
      TlmOptions o;
      o.size = {k, k, 1};
      TlmNetwork net(o);
      // Expected links, walked by hand: x first (+ if sx even), then y (+ if sy even).
      std::map<std::pair<int, int>, uint64_t> want;  // (node, link port) -> flits
      int x = t.sx, y = t.sy, hops = 0;
      const int xdir = t.sx % 2 == 0 ? 1 : -1, ydir = t.sy % 2 == 0 ? 1 : -1;
      while (x != t.dx) {
        ++want[{net.node(model::noc::Coord{{x, y, 0}}), xdir > 0 ? 0 : 1}];
        x = (x + xdir + k) % k;
        ++hops;
      }
      while (y != t.dy) {
        ++want[{net.node(model::noc::Coord{{x, y, 0}}), ydir > 0 ? 2 : 3}];
        y = (y + ydir + k) % k;
        ++hops;
      }
      const model::noc::Coord dst{{t.dx, t.dy, 0}};
      const int src = net.node(model::noc::Coord{{t.sx, t.sy, 0}}), d = net.node(dst);
      const std::string what = "k=" + std::to_string(k) + " from " + net.node_name(src) + " to " + net.node_name(d);
      model::noc::Flit f{true, true, 0, model::noc::make_header(dst, 0, 0x77)};
      ASSERT_TRUE(net.inj_ready(src));
      net.drive_inject(src, &f);
      const uint64_t start = net.cycle();
      net.step();
      net.drive_inject(src, nullptr);
      while (!net.ej_valid(d) && net.cycle() - start < 200) net.step();
      ASSERT_TRUE(net.ej_valid(d)) << what;
      EXPECT_EQ(net.cycle() - start, uint64_t(4 + 3 * hops)) << what;
      for (int n = 0; n < net.nodes(); ++n) {
        for (int l = 0; l < 4; ++l) {
          const auto it = want.find({n, l});
          EXPECT_EQ(net.link_port_flits(n, l), it == want.end() ? 0u : it->second)
              << what << ": router " << net.node_name(n) << " link port " << l;
        }
      }
    }
  }
}

// Parameters beyond the three RTL builds: 8 VCs in 2 groups with 8-flit buffers, 2 VCs of depth 1, a 1-D ring,
// a 16x16 torus, a 3-D mesh.
TEST(NocTlm, OtherParametersRunClean) {
  struct P { std::string name; TlmOptions o; double rate; };
  std::vector<P> ps;
  TlmOptions a = tlm_net("4x4");
  a.num_vc = 8;
  a.vc_groups = 2;
  a.depth = 8;
  ps.push_back({"4x4 8 VCs 2 groups depth 8", a, 0.6});
  TlmOptions b = tlm_net("4x4");
  b.depth = 1;
  ps.push_back({"4x4 depth 1", b, 0.3});
  TlmOptions c;
  c.ndim = 1;
  c.size = {8, 1, 1};
  ps.push_back({"8-ring", c, 0.5});
  TlmOptions d = tlm_net("4x4");
  d.size = {16, 16, 1};
  ps.push_back({"16x16", d, 0.2});
  TlmOptions e = tlm_net("2x2x2", false);
  e.size = {3, 3, 3};
  ps.push_back({"3x3x3 mesh", e, 0.3});
  for (const P& p : ps) {
    TlmNetwork net(p.o);
    TrafficOptions t;
    t.rate = p.rate;
    t.inject_cycles = 1500;
    t.seed = test_seed();
    expect_clean_run(net, t, p.name);
  }
}

// A sink that never takes a flit: nothing moves, the watchdog ends the run naming the packets in the network.
TEST(NocTlm, WatchdogFiresWhenNothingMoves) {
  TlmNetwork net(tlm_net("4x4"));
  TrafficOptions t;
  t.rate = 0.3;
  t.inject_cycles = 3000;
  t.eject_stall_prob = 1.0;
  t.seed = test_seed();
  try {
    cosim::noc::run_traffic(net, t);
    FAIL() << "the watchdog did not fire";
  } catch (const NocError& e) {
    EXPECT_NE(std::string(e.what()).find("watchdog: nothing moved for 1000 cycles"), std::string::npos) << e.what();
  }
}

TEST(NocTlm, BadOptionsAreRejectedWithTheReason) {
  auto reason = [](TlmOptions o) {
    try {
      TlmNetwork net(o);
    } catch (const NocError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  TlmOptions o;
  o.size = {4, 1, 1};
  EXPECT_NE(reason(o).find("size 1 in dimension 1"), std::string::npos) << reason(o);
  o = TlmOptions{};
  o.size = {4, 17, 1};
  EXPECT_NE(reason(o).find("2..16 routers"), std::string::npos) << reason(o);
  o = TlmOptions{};
  o.num_vc = 3;
  EXPECT_NE(reason(o).find("3 VCs in 1 groups"), std::string::npos) << reason(o);
  o = TlmOptions{};
  o.num_vc = 4;
  o.vc_groups = 4;
  EXPECT_NE(reason(o).find("multiple of 2 x groups"), std::string::npos) << reason(o);
  o = TlmOptions{};
  o.depth = 64;
  EXPECT_NE(reason(o).find("depth 64"), std::string::npos) << reason(o);
  o = TlmOptions{};
  o.ndim = 4;
  EXPECT_NE(reason(o).find("4 dimensions"), std::string::npos) << reason(o);
  o = TlmOptions{};
  o.link_latency = 33;
  EXPECT_NE(reason(o).find("link latency 33"), std::string::npos) << reason(o);
  o = TlmOptions{};
  o.threads = 0;
  EXPECT_NE(reason(o).find("0 host threads: outside 1..256"), std::string::npos) << reason(o);
}

// The pool itself: contiguous ranges whose sizes differ by at most one, larger first; every thread's part run once
// per run(), part 0 on the caller's thread; a worker's exception rethrown on the caller's thread, the pool usable
// after it; counts outside 1..256 refused.
TEST(StepPool, RangesJobsAndErrors) {
  using model::noc::StepPool;
  EXPECT_EQ(StepPool::range(16, 3, 0), std::make_pair(0, 6));
  EXPECT_EQ(StepPool::range(16, 3, 1), std::make_pair(6, 11));
  EXPECT_EQ(StepPool::range(16, 3, 2), std::make_pair(11, 16));
  EXPECT_EQ(StepPool::range(2, 4, 1), std::make_pair(1, 2));
  EXPECT_EQ(StepPool::range(2, 4, 3), std::make_pair(2, 2));
  StepPool pool(3);
  for (int round = 0; round < 1000; ++round) {
    std::vector<int> calls(3, 0);
    std::vector<std::thread::id> who(3);
    pool.run([&](int t) {
      ++calls[size_t(t)];
      who[size_t(t)] = std::this_thread::get_id();
    });
    ASSERT_EQ(calls, std::vector<int>({1, 1, 1})) << "round " << round;
    EXPECT_EQ(who[0], std::this_thread::get_id());
    EXPECT_NE(who[1], std::this_thread::get_id());
    EXPECT_NE(who[2], who[1]);
  }
  try {
    pool.run([](int t) {
      if (t >= 1) throw std::runtime_error("part " + std::to_string(t));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 1");  // the lowest part's
  }
  int sum = 0;
  pool.run([&](int t) {
    if (t == 0) sum = 1;
  });
  EXPECT_EQ(sum, 1);
  EXPECT_THROW(StepPool(0), std::invalid_argument);
  EXPECT_THROW(StepPool(257), std::invalid_argument);
}

// Routers evaluated by several host threads (TlmOptions::threads): on a 4x4 torus near saturation with bit errors
// and lost flits on the links, every packet takes the same cycles as on one thread, and the link counters (replays,
// CRC errors, the injector's faults, summed over the threads) are the same. 3 threads: ranges of 6, 5 and 5
// routers. More threads than routers start one per router (a 2x2 torus, not stepped: 16 spinning threads on a
// 2-core machine would take seconds).
TEST(NocTlm, EveryPacketAndLinkCountIsTheSameOnSeveralThreads) {
  TlmOptions o = tlm_net("4x4");
  o.errors.ber = 1e-3;
  o.errors.drop = 1e-3;
  TrafficOptions t;
  t.rate = 0.5;
  t.inject_cycles = 2000;
  t.seed = test_seed();
  t.record_packets = true;
  TlmNetwork one(o);
  const cosim::noc::TrafficResult r1 = expect_clean_run(one, t, "4x4 faults, one thread");
  EXPECT_GT(one.link_stats().replays, 10u) << one.link_stats().str();
  EXPECT_GT(one.link_stats().crc_errors, 10u) << one.link_stats().str();
  for (const int threads : {2, 3}) {
    o.threads = threads;
    TlmNetwork net(o);
    EXPECT_EQ(net.threads(), threads);
    const cosim::noc::TrafficResult r = expect_clean_run(net, t, "4x4 faults, threads");
    EXPECT_EQ(r.cycles, r1.cycles) << threads << " threads";
    EXPECT_TRUE(r.packets == r1.packets) << threads << " threads: the packets' cycles differ";
    EXPECT_EQ(net.link_stats(), one.link_stats()) << threads << " threads: " << net.link_stats().str() << " vs "
                                                  << one.link_stats().str();
  }
  TlmOptions small = tlm_net("2x2");
  small.threads = 100;
  EXPECT_EQ(TlmNetwork(small).threads(), 4);
}

// Fault-free links skip the replay buffer and timer (noc_tlm.h, fast_links_) when the replay timeout exceeds the
// acknowledgement's round trip: a flit sent at edge e is acknowledged at edge e + 2 latency + 2, so the timer reaches
// at most 2 latency. Against the exact evaluation on the same traffic: the same packets in the same cycles, the same
// flits on every link port, credits and unacknowledged flits at the end. At the smallest timeout the fast evaluation
// takes (2 latency + 2) the exact one never replays; one edge shorter it does (the bound is tight) and the fast
// evaluation is off.
TEST(NocTlm, FaultFreeLinksSkipTheReplayStateWithTheSameFlitsAndCycles) {
  struct Case {
    std::string dims;
    bool torus;
    int latency, min_len, max_len;
    double rate;
  };
  for (const Case& c : {Case{"4x4", true, 0, 1, 5, 0.9}, Case{"4x4", true, 1, 1, 1, 0.3}, Case{"3x3", false, 2, 1, 3, 0.5},
                        Case{"2x2x3", true, 3, 2, 4, 0.4}, Case{"5", true, 1, 1, 2, 0.95}}) {
    for (const int timeout : {2 * c.latency + 2, 128}) {
      const std::string what = fmt::format("{} {} latency {} timeout {}", c.dims, c.torus ? "torus" : "mesh",
                                           c.latency, timeout);
      TlmOptions o = tlm_net(c.dims, c.torus);
      o.link_latency = c.latency;
      o.retry.replay_timeout = timeout;
      TrafficOptions t;
      t.rate = c.rate;
      t.min_len = c.min_len;
      t.max_len = c.max_len;
      t.inject_cycles = 1500;
      t.seed = test_seed();
      t.record_packets = true;
      TlmNetwork fast(o);
      o.exact_links = true;
      TlmNetwork exact(o);
      ASSERT_TRUE(fast.fast_links()) << what;
      ASSERT_FALSE(exact.fast_links()) << what;
      const cosim::noc::TrafficResult rf = expect_clean_run(fast, t, what + " fast");
      const cosim::noc::TrafficResult re = expect_clean_run(exact, t, what + " exact");
      EXPECT_EQ(exact.link_stats().replays, 0u) << what;
      EXPECT_GT(rf.packets_delivered, 100u) << what;
      EXPECT_EQ(rf.cycles, re.cycles) << what;
      EXPECT_TRUE(rf.packets == re.packets) << what << ": the packets' cycles differ";
      EXPECT_EQ(fast.link_stats(), exact.link_stats()) << what;
      for (int n = 0; n < fast.nodes(); ++n) {
        for (int l = 0; l < 2 * fast.ndim(); ++l) {
          if (!fast.link_up(n, l)) continue;
          EXPECT_EQ(fast.link_port_flits(n, l), exact.link_port_flits(n, l)) << what << " router " << n << " port " << l;
          EXPECT_EQ(fast.unacknowledged(n, l), exact.unacknowledged(n, l)) << what << " router " << n << " port " << l;
          for (int v = 0; v < fast.num_vc(n); ++v) EXPECT_EQ(fast.credits(n, l, v), exact.credits(n, l, v)) << what;
        }
      }
    }
    if (c.latency == 0) continue;  // a timeout of 1 is not allowed
    TlmOptions o = tlm_net(c.dims, c.torus);
    o.link_latency = c.latency;
    o.retry.replay_timeout = 2 * c.latency + 1;
    TlmNetwork shorter(o);
    EXPECT_FALSE(shorter.fast_links()) << c.dims;
    TrafficOptions t;
    t.rate = 0.05;  // isolated flits: nothing acknowledges them before their own acknowledgement
    t.inject_cycles = 500;
    t.seed = test_seed();
    expect_clean_run(shorter, t, c.dims + " timeout 2 latency + 1");
    EXPECT_GT(shorter.link_stats().replays, 0u) << c.dims << ": " << shorter.link_stats().str();
  }
}

// The traffic harness's figures against its own packet list, worked out here by sorting: the mean latency, p50 (the
// element at n / 2 of the sorted latencies), p99 (at min(n - 1, 99 n / 100)), the maximum, and the offered load
// (flits created per router and injection cycle). An overloaded hotspot queues packets at their sources for
// thousands of cycles, past the latencies the harness counts per value (noc_traffic.cpp, kLatencyBins), so both
// of its ways of keeping them are used.
TEST(NocTraffic, LatencyFiguresMatchThePacketList) {
  TlmNetwork net(tlm_net("4x4"));
  TrafficOptions t;
  t.pattern = Pattern::kHotspot;
  t.hotspot_fraction = 0.5;
  t.rate = 0.6;
  t.inject_cycles = 4000;
  t.seed = test_seed();
  t.record_packets = true;
  const cosim::noc::TrafficResult r = expect_clean_run(net, t, "4x4 hotspot overload");
  ASSERT_EQ(r.packets.size(), r.packets_delivered);
  std::vector<uint64_t> lat;
  double sum = 0, net_sum = 0;
  uint64_t flits = 0;
  for (const cosim::noc::PacketRecord& p : r.packets) {
    lat.push_back(p.delivered - p.created);
    sum += double(p.delivered - p.created);
    net_sum += double(p.delivered - p.injected);
    flits += uint64_t(p.len);
  }
  std::sort(lat.begin(), lat.end());
  const size_t n = lat.size();
  EXPECT_GT(lat.back(), 4096u) << "the hotspot did not queue long enough to test the long latencies";
  EXPECT_LT(lat.front(), 4096u);
  EXPECT_EQ(r.p50_latency, lat[n / 2]);
  EXPECT_EQ(r.p99_latency, lat[std::min(n - 1, n * 99 / 100)]);
  EXPECT_EQ(r.max_latency, lat.back());
  EXPECT_DOUBLE_EQ(r.avg_latency, sum / double(n));
  EXPECT_DOUBLE_EQ(r.avg_network_latency, net_sum / double(n));
  EXPECT_DOUBLE_EQ(r.offered, double(flits) / (4000.0 * net.nodes()));
}

// The checker against a network that misbehaves: a TLM network behind ports that, at chosen cycles, hold router 0's
// ejection and offer instead a copy of a packet router 0 took earlier (single-flit packets). A copy of the first
// packet delivered, long after (its source no longer keeps a record of it), and a copy of the latest one are both
// duplicates, named at the cycle and router they were offered; nothing is lost or corrupted, and the run drains.
class ReplayingPorts final : public model::noc::NocPorts {
 public:
  explicit ReplayingPorts(TlmNetwork& net) : net_(net) {}
  std::vector<uint64_t> replay_at;  // cycles at which router 0 offers a copy instead of its own ejection

  int ndim() const override { return net_.ndim(); }
  int size(int d) const override { return net_.size(d); }
  int num_vc(int n) const override { return net_.num_vc(n); }
  bool inj_ready(int n) const override { return net_.inj_ready(n); }
  void drive_inject(int n, const model::noc::Flit* f) override { net_.drive_inject(n, f); }
  bool ej_valid(int n) const override { return replaying(n) || net_.ej_valid(n); }
  model::noc::Flit ej_flit(int n) const override {
    if (!replaying(n)) return net_.ej_flit(n);
    return net_.cycle() == replay_at.front() ? taken_.front() : taken_.back();
  }
  void drive_eject_ready(int n, bool ready) override {
    if (n == 0 && net_.ej_valid(0) && ready && !replaying(0)) taken_.push_back(net_.ej_flit(0));
    net_.drive_eject_ready(n, ready && !replaying(n));
  }
  void step() override { net_.step(); }
  uint64_t cycle() const override { return net_.cycle(); }
  uint64_t link_flits() const override { return net_.link_flits(); }
  double step_seconds() const override { return net_.step_seconds(); }
  std::string backend() const override { return "replaying"; }
  model::noc::LinkStats link_stats() const override { return net_.link_stats(); }

 private:
  bool replaying(int n) const {
    return n == 0 && !taken_.empty() &&
           std::find(replay_at.begin(), replay_at.end(), net_.cycle()) != replay_at.end();
  }
  TlmNetwork& net_;
  std::vector<model::noc::Flit> taken_;  // router 0's ejected flits, in order
};

TEST(NocTraffic, TheCheckerCountsPacketsDeliveredAgain) {
  TlmNetwork net(tlm_net("4x4"));
  ReplayingPorts ports(net);
  const uint64_t start = net.cycle();
  ports.replay_at = {start + 1500, start + 1700};
  TrafficOptions t;
  t.rate = 0.2;
  t.min_len = t.max_len = 1;
  t.inject_cycles = 2000;
  t.seed = test_seed();
  t.throw_on_stall = false;
  const cosim::noc::TrafficResult r = cosim::noc::run_traffic(ports, t);
  EXPECT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_EQ(r.duplicated, 2u) << r.summary();
  EXPECT_EQ(r.corrupted, 0u) << r.summary();
  EXPECT_EQ(r.out_of_order, 0u) << r.summary();
  EXPECT_EQ(r.lost, 0u) << r.summary();
  EXPECT_EQ(r.packets_delivered, r.packets_created);
  ASSERT_EQ(r.errors.size(), 2u);
  for (const std::string& e : r.errors) EXPECT_NE(e.find("delivered again"), std::string::npos) << e;
  EXPECT_NE(r.errors[0].find("cycle " + std::to_string(start + 1500) + " router (0,0)"), std::string::npos)
      << r.errors[0];
}

// A head flit for a router outside the network is a protocol error, as the RTL's a_dst_in_torus.
TEST(NocTlm, DestinationOutsideTheNetworkIsAnError) {
  TlmNetwork net(tlm_net("4x4"));
  model::noc::Coord dst;
  dst[0] = 5;
  const model::noc::Flit f{true, true, 0, model::noc::make_header(dst, 0, 0)};
  net.drive_inject(0, &f);
  std::string error;
  try {
    for (int i = 0; i < 10; ++i) {
      net.step();
      net.drive_inject(0, nullptr);
    }
  } catch (const NocError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("outside the 4x4 torus"), std::string::npos) << error;
}

// Flits on one VC out of packet order, as trn_noc_input_port's a_arrival_order rejects them: a second head before
// the first packet's tail (found by fuzz_noc: the model took it and the network stuck), a body without a head.
TEST(NocTlm, FlitsOutOfPacketOrderOnAVcAreRejectedAsTheRtlDoes) {
  const model::noc::Coord dst{{1, 0, 0}};
  const model::noc::Flit head{true, false, 0, model::noc::make_header(dst, 0, 0)};
  const model::noc::Flit body{false, false, 0, 42};
  for (const auto& [first, second, want] :
       {std::tuple{head, head, "head flit arrived while a packet was in progress"},
        std::tuple{body, body, "body/tail flit arrived while a packet was not started"}}) {
    TlmNetwork net(tlm_net("2x2"));
    std::string error;
    try {
      for (const model::noc::Flit* f : {&first, &second}) {
        while (!net.inj_ready(0)) net.step();
        net.drive_inject(0, f);
        net.step();
      }
      net.drive_inject(0, nullptr);
      for (int i = 0; i < 10; ++i) net.step();
    } catch (const NocError& e) {
      error = e.what();
    }
    EXPECT_NE(error.find(want), std::string::npos) << error;
    EXPECT_NE(error.find("router (0,0) port 0 VC 0"), std::string::npos) << error;
  }
}

// One packet at a time per injection port, as the RTL's a_inj_whole_packet: a flit of another VC while a packet is
// open there is rejected, naming the router and both VCs (found by fuzz_noc: a second VC's flits filled their
// buffer and then sat in the injection spill register in front of the open packet's tail, which never came through,
// and the network never drained). The same flits with the open packet finished first are delivered.
TEST(NocTlm, APacketOnAnotherVcWhileOneIsOpenAtTheInjectionPortIsRejected) {
  const model::noc::Coord dst{{1, 0, 0}};
  const model::noc::Flit head0{true, false, 0, model::noc::make_header(dst, 0, 1)};
  const model::noc::Flit tail0{false, true, 0, 42};
  const model::noc::Flit single1{true, true, 1, model::noc::make_header(dst, 0, 2)};
  // Offers `flits` on router (0,0)'s injection port as fast as it takes them, then lets the network drain; returns
  // the NocError text ("" if none) and counts what router (1,0) ejects.
  auto run = [&](TlmNetwork& net, const std::vector<model::noc::Flit>& flits, int& ejected) {
    ejected = 0;
    try {
      for (size_t i = 0; i < flits.size();) {
        net.drive_inject(0, &flits[i]);
        if (net.inj_ready(0)) ++i;
        ejected += net.ej_valid(1);
        net.step();
      }
      net.drive_inject(0, nullptr);
      for (int c = 0; c < 50; ++c) {
        ejected += net.ej_valid(1);
        net.step();
      }
    } catch (const NocError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  int ejected = 0;
  {
    TlmNetwork net(tlm_net("2x2"));
    const std::string error = run(net, {head0, single1, tail0}, ejected);
    EXPECT_NE(error.find("router (0,0) port 0: flit on VC 1 injected while the packet on VC 0 is open (one packet at "
                         "a time per injection port"),
              std::string::npos)
        << error;
  }
  {
    TlmNetwork net(tlm_net("2x2"));
    EXPECT_EQ(run(net, {head0, tail0, single1}, ejected), "");
    EXPECT_EQ(ejected, 3);
    EXPECT_EQ(net.flits_in_network(), 0u);
  }
}

// Message-level endpoints (the library interface for collective engines): messages of 0..20 payload words between
// random routers all arrive once with their payload; an idle one-hop message takes the zero-load latency.
TEST(NocEndpoints, MessagesArriveOnceWithTheirPayload) {
  TlmNetwork net(tlm_net("4x4"));
  model::noc::NocEndpoints ep(net);
  std::mt19937_64 rng(test_seed());
  std::map<uint64_t, std::vector<uint64_t>> sent;
  std::map<uint64_t, int> got;
  ep.on_delivered([&](const model::noc::NocMessage& m) {
    ++got[m.id];
    EXPECT_EQ(m.payload, sent[m.id]);
    EXPECT_EQ(m.tag, m.id * 3);
    EXPECT_LE(m.queued, m.injected);
    EXPECT_LT(m.injected, m.delivered);
  });
  for (int i = 0; i < 300; ++i) {
    std::vector<uint64_t> words(rng() % 21);
    for (auto& w : words) w = rng();
    const int src = int(rng() % 16), dst = int(rng() % 16);
    const uint64_t id = ep.inject(src, dst, unsigned(rng() % 4), words, uint64_t(i) * 3);
    sent[id] = words;
    if (i % 3 == 0) ep.step();
  }
  ASSERT_TRUE(ep.drain(100000));
  EXPECT_EQ(got.size(), sent.size());
  for (const auto& [id, n] : got) EXPECT_EQ(n, 1) << "message " << id;

  uint64_t latency = 0;
  ep.on_delivered([&](const model::noc::NocMessage& m) { latency = m.delivered - m.injected; });
  ep.inject(0, 1, 0, {});
  ASSERT_TRUE(ep.drain(100));
  EXPECT_EQ(latency, 7u);  // 4 + 1 hop x 3
  EXPECT_THROW(ep.inject(0, 16, 0, {}), NocError);
}

}  // namespace
}  // namespace trnsim::test
