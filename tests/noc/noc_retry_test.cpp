// NeuronLink link-level retry (docs/neuronlink.md, "Link-level retry"): the CRCs against the CRC catalogue and an
// independent long division, the CRC the RTL puts on the wire, recovery from every fault the link layer handles (a
// lost, repeated or corrupted flit, a lost or corrupted backward beat) with the traffic delivered intact, the RTL and
// the TLM in lockstep under random bit errors and drops (the same replays, counters and cycles), credits and replay
// buffers all back after the retries, and a link that keeps failing going down with an error naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cosim/noc/noc_lockstep.h"
#include "model/noc/noc_link.h"
#include "tests/noc/noc_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim {
namespace {

using cosim::noc::Coord;
using cosim::noc::Flit;
using cosim::noc::LinkFault;
using cosim::noc::LockstepNetwork;
using cosim::noc::NocError;
using cosim::noc::NocNetwork;
using cosim::noc::NocOptions;
using cosim::noc::Pattern;
using cosim::noc::TrafficOptions;
using cosim::noc::TrafficResult;
namespace mn = model::noc;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- CRCs -----------------------------------------------------------------------------------------------------

// The catalogue's check values (CRC of the ASCII bytes "123456789"; reveng.sourceforge.io/crc-catalogue).
TEST(LinkCrc, CatalogueCheckValues) {
  const char* check = "123456789";
  const auto* b = reinterpret_cast<const uint8_t*>(check);
  EXPECT_EQ(mn::crc32_mpeg2(b, std::strlen(check)), 0x0376E6E7u);
}

// The forward CRC over the 79-bit message {seq, head, tail, vc, data} by polynomial long division, written out here
// independently of the bit-serial code: init 0xFFFFFFFF inverts the first 32 message bits, then the remainder of
// M(x) x^32 modulo the generator.
uint32_t long_division_crc32(unsigned seq, const Flit& f) {
  const unsigned ctl = (f.head ? 16u : 0u) | (f.tail ? 8u : 0u) | (f.vc & 7u);
  unsigned __int128 m = (unsigned __int128)(seq & 0x3FFu) << 69 | (unsigned __int128)ctl << 64 | f.data;
  m ^= (unsigned __int128)0xFFFFFFFFu << 47;  // the first 32 of 79 bits
  unsigned __int128 r = m << 32;
  const unsigned __int128 g = (unsigned __int128)0x104C11DB7ull;  // x^32 + 0x04C11DB7
  for (int bit = 79 + 32 - 1; bit >= 32; --bit) {
    if ((r >> bit) & 1) r ^= g << (bit - 32);
  }
  return static_cast<uint32_t>(r);
}

TEST(LinkCrc, ForwardCrcIsTheLongDivisionRemainder) {
  uint64_t x = test::test_seed();
  for (int i = 0; i < 2000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    Flit f{bool(x >> 63 & 1), bool(x >> 62 & 1), uint8_t(x >> 59 & 7), x * 0x9E3779B97F4A7C15ull};
    const unsigned seq = unsigned(x >> 40) & 0x3FF;
    ASSERT_EQ(mn::fwd_crc(seq, f), long_division_crc32(seq, f)) << "seq " << seq << " data " << f.data;
  }
}

// Every beat a verilated router drives on a link carries the CRC the C++ functions compute: the RTL's fwd_crc and
// bwd_crc are the catalogue's CRC-32/MPEG-2.
TEST(LinkCrc, TheRtlPutsTheCatalogueCrcOnTheWire) {
  NocNetwork net(test::torus("4x4"));
  TrafficOptions t;
  t.rate = 0.4;
  t.inject_cycles = 300;
  t.seed = test::test_seed();
  uint64_t flits = 0, beats = 0;
  t.progress_cycles = 1;
  t.progress = [&](uint64_t, const TrafficResult&) {
    for (int n = 0; n < net.nodes(); ++n) {
      for (int l = 0; l < 4; ++l) {
        const mn::FwdBeat f = net.tx_beat(n, l);
        if (f.valid()) {
          ++flits;
          ASSERT_TRUE(mn::crc_ok(f)) << "router " << n << " port " << l << " seq " << f.seq();
        }
        const mn::BwdBeat b = net.rx_beat(n, l);
        if (b.valid()) {
          ++beats;
          ASSERT_TRUE(mn::crc_ok(b)) << "router " << n << " port " << l << " ack " << b.ack();
        }
      }
    }
  };
  test::expect_clean_run(net, t, "4x4 rate 0.4");
  EXPECT_GT(flits, 1000u);
  EXPECT_GT(beats, 1000u);
}

// ---- Faults the retry recovers from -----------------------------------------------------------------------------

Flit single(const Coord& dst) {
  Flit f;
  f.head = f.tail = true;
  f.data = cosim::noc::make_header(dst, 0, 0);
  return f;
}

// Router 0 sends one flit to router (1,0) on link port +x; returns the cycle it is ejected there. (The tests build
// one verilated network at a time: Verilator 5.006 deadlocks destroying a model while another context holds
// models with the same scope names.)
uint64_t one_flit_to_the_right(NocNetwork& net) {
  const Flit f = single(Coord{{1, 0, 0}});
  net.drive_inject(0, &f);
  net.step();
  net.drive_inject(0, nullptr);
  const uint64_t start = net.cycle();
  for (int i = 0; i < 400; ++i) {
    if (net.ej_valid(1)) {
      EXPECT_EQ(net.ej_flit(1).data, f.data);
      const uint64_t c = net.cycle() - start;
      net.step();
      for (int k = 0; k < 300; ++k) {
        EXPECT_FALSE(net.ej_valid(1)) << "delivered twice";
        net.step();
      }
      return c;
    }
    net.step();
  }
  ADD_FAILURE() << "the flit never arrived";
  return 0;
}

// The same on a 2x2 torus without faults (the network is gone before the caller builds its own).
uint64_t on_time_on_a_clean_link() {
  NocNetwork clean(test::torus("2x2"));
  return one_flit_to_the_right(clean);
}

TEST(LinkRetry, AFlitRepeatedOnTheLinkIsDroppedByItsSequenceNumber) {
  NocOptions o = test::torus("2x2");
  o.faults.push_back({LinkFault::Kind::kDuplicateFlit, 0, 0, 0, {}});
  const uint64_t on_time = on_time_on_a_clean_link();
  NocNetwork net(o);
  EXPECT_EQ(one_flit_to_the_right(net), on_time);  // on time, once
  EXPECT_EQ(net.link_stats().replays, 0u);
  EXPECT_EQ(net.link_stats().crc_errors, 0u);
}

// The only flit lost: nothing behind it shows the gap, so the sender's timeout (REPLAY_TIMEOUT cycles without an
// acknowledgement) replays it.
TEST(LinkRetry, ALostLastFlitIsReplayedAfterTheTimeout) {
  NocOptions o = test::torus("2x2");
  o.faults.push_back({LinkFault::Kind::kDropFlit, 0, 0, 0, {}});
  const uint64_t on_time = on_time_on_a_clean_link();
  NocNetwork net(o);
  const uint64_t late = one_flit_to_the_right(net);
  const int timeout = net.build(0).retry.replay_timeout;
  EXPECT_EQ(timeout, 128);
  EXPECT_GE(late, on_time + uint64_t(timeout) - 1);
  EXPECT_LE(late, on_time + uint64_t(timeout) + 4);
  EXPECT_EQ(net.link_stats().replays, 1u);
  EXPECT_EQ(net.link_stats().replayed, 1u);
}

// A flit lost in a stream: the next one arrives out of sequence, the receiver NAKs, the sender goes back (much
// sooner than the timeout). Multi-flit packets, so a lost head or body would break the packet rules if it got through.
TEST(LinkRetry, ALostFlitInAStreamIsNakedAndReplayedInOrder) {
  NocOptions o = test::torus("4x4");
  o.faults.push_back({LinkFault::Kind::kDropFlit, 0, 0, 50, {}});
  TrafficOptions t;
  t.pattern = Pattern::kNeighbor;
  t.min_len = t.max_len = 3;
  t.rate = 0.5;
  t.inject_cycles = 300;
  t.seed = test::test_seed();
  TrafficResult c;
  {
    NocNetwork ref(test::torus("4x4"));  // the same traffic without the fault
    c = test::expect_clean_run(ref, t, "no fault");
  }
  NocNetwork net(o);
  const TrafficResult r = test::expect_clean_run(net, t, "dropped flit");
  EXPECT_EQ(r.packets_delivered, c.packets_delivered);
  EXPECT_EQ(net.link_stats().replays, 1u);
  EXPECT_GE(net.link_stats().replayed, 1u);
  EXPECT_LT(r.max_latency, c.max_latency + 64) << "the NAK, not the 128-cycle timeout, started the replay";
}

// A backward beat lost: the credits and acknowledgement it carried are cumulative, so the next beat makes up for it.
TEST(LinkRetry, ALostBackwardBeatCostsNothingOnceTheNextArrives) {
  NocOptions o = test::torus("4x4");
  for (uint64_t c : {40u, 41u, 42u, 90u}) o.faults.push_back({LinkFault::Kind::kDropCredit, 5, 1, c, {}});
  NocNetwork net(o);
  TrafficOptions t;
  t.rate = 0.6;
  t.inject_cycles = 400;
  t.seed = test::test_seed();
  test::expect_clean_run(net, t, "lost backward beats");
}

// ---- Random faults, RTL and TLM in lockstep -------------------------------------------------------------------

struct FaultCase {
  const char* dims;
  const char* router;
  int latency;
  double ber, drop;
};

class LinkRetryLockstep : public ::testing::TestWithParam<FaultCase> {};

TEST_P(LinkRetryLockstep, TrafficIsIntactAndBothModelsRetryAlike) {
  const FaultCase& p = GetParam();
  NocOptions o = test::torus(p.dims, p.router, p.latency);
  o.errors = mn::LinkErrors{p.ber, p.drop, test::test_seed()};
  LockstepNetwork net(o);
  TrafficOptions t;
  t.rate = 0.25;
  t.inject_cycles = 1500;
  t.seed = test::test_seed() + 1;
  t.watchdog_cycles = 3000;
  test::expect_clean_run(net, t, o.errors.str());
  const mn::LinkStats s = net.link_stats();  // equal in the RTL and the TLM, or the lockstep had failed
  std::cout << "[ link     ] " << s.str() << "\n";
  EXPECT_EQ(s, net.tlm().link_stats());
  EXPECT_GT(s.replays, 0u);
  EXPECT_GT(s.replayed, 0u);
  if (p.ber > 0) {
    EXPECT_GT(s.crc_errors, 0u);
    EXPECT_GT(s.bwd_errors, 0u);
    EXPECT_GT(s.injected_flips, 0u);
  }
  if (p.drop > 0) {
    EXPECT_GT(s.injected_drops, 0u);
  }
  EXPECT_EQ(net.tlm().flits_in_network(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Faults, LinkRetryLockstep,
                         ::testing::Values(FaultCase{"4x4", "d2v2", 0, 1e-3, 0}, FaultCase{"4x4", "d2v2", 0, 0, 1e-2},
                                           FaultCase{"3x5", "d2v4", 3, 3e-4, 3e-3},
                                           FaultCase{"2x2x2", "d3v4g2", 1, 1e-3, 1e-3}),
                         [](const auto& info) {
                           return std::string(info.param.router) + "_latency" + std::to_string(info.param.latency) +
                                  (info.param.ber > 0 ? "_ber" : "") + (info.param.drop > 0 ? "_drop" : "");
                         });

// After a run full of replays every credit is back and every replay buffer is empty: a replay neither takes nor
// returns credits (TLM, the lockstep above shows the RTL does the same).
TEST(LinkRetry, EveryCreditIsBackAndEveryReplayBufferEmptyAfterTheRetries) {
  mn::TlmOptions o = test::tlm_net("4x4");
  o.errors = mn::LinkErrors{1e-3, 1e-3, test::test_seed()};
  mn::TlmNetwork net(o);
  TrafficOptions t;
  t.rate = 0.3;
  t.inject_cycles = 3000;
  t.seed = test::test_seed();
  t.watchdog_cycles = 3000;
  test::expect_clean_run(net, t, "TLM with faults");
  EXPECT_GT(net.link_stats().replays, 50u);
  for (int i = 0; i < 300; ++i) net.step();  // the last acknowledgements and refresh beats
  for (int n = 0; n < net.nodes(); ++n) {
    for (int l = 0; l < 4; ++l) {
      EXPECT_EQ(net.unacknowledged(n, l), 0) << net.node_name(n) << " port " << l;
      for (int v = 0; v < o.num_vc; ++v) EXPECT_EQ(net.credits(n, l, v), o.depth) << net.node_name(n) << " " << l;
    }
  }
  EXPECT_EQ(net.flits_in_network(), 0u);
}

TEST(LinkRetry, TheFaultsFollowTheirSeed) {
  const auto stats = [](uint64_t seed) {
    mn::TlmOptions o = test::tlm_net("4x4");
    o.errors = mn::LinkErrors{1e-3, 0, seed};
    mn::TlmNetwork net(o);
    TrafficOptions t;
    t.rate = 0.2;
    t.inject_cycles = 1000;
    t.seed = 5;
    cosim::noc::run_traffic(net, t);
    return net.link_stats();
  };
  EXPECT_EQ(stats(3), stats(3));
  EXPECT_NE(stats(3), stats(4));
}

TEST(LinkRetry, NoFaultsNoReplays) {
  LockstepNetwork net(test::torus("4x4"));
  TrafficOptions t;
  t.rate = 0.5;
  t.inject_cycles = 1000;
  t.seed = test::test_seed();
  test::expect_clean_run(net, t, "no faults");
  EXPECT_EQ(net.link_stats().replays, 0u);
  EXPECT_EQ(net.link_stats().replayed, 0u);
  EXPECT_EQ(net.link_stats().crc_errors, 0u);
  EXPECT_EQ(net.link_stats().flits, net.link_flits());
}

// ---- A link that keeps failing --------------------------------------------------------------------------------

TEST(LinkRetry, ALinkThatKeepsFailingGoesDownWithAnErrorNamingIt) {
  NocOptions o = test::torus("2x2");
  o.errors = mn::LinkErrors{0.5, 0, test::test_seed()};
  LockstepNetwork net(o);
  TrafficOptions t;
  t.rate = 0.2;
  t.inject_cycles = 5000;
  t.seed = test::test_seed();
  const std::string error = test::error_and_output([&] { cosim::noc::run_traffic(net, t); }).first;
  EXPECT_TRUE(contains(error, "link down:")) << error;
  EXPECT_TRUE(contains(error, "router (")) << error;
  EXPECT_TRUE(contains(error, "8 replays in a row got no acknowledgement (REPLAY_LIMIT)")) << error;
  EXPECT_FALSE(contains(error, "watchdog")) << error;
  EXPECT_FALSE(contains(error, "lockstep mismatch")) << error;
  // Down within the limit's worth of timeouts (8 + 1 replays of 128 cycles, plus the traffic's start).
  EXPECT_LT(net.cycle(), 2000u);
}

TEST(LinkRetry, TheTlmAloneReportsTheSameLinkDown) {
  mn::TlmOptions o = test::tlm_net("2x2");
  o.errors = mn::LinkErrors{0.5, 0, 11};
  mn::TlmNetwork net(o);
  TrafficOptions t;
  t.rate = 0.2;
  t.inject_cycles = 5000;
  const std::string error = test::error_and_output([&] { cosim::noc::run_traffic(net, t); }).first;
  EXPECT_TRUE(contains(error, "link down: router (")) << error;
  EXPECT_TRUE(contains(error, "REPLAY_LIMIT")) << error;
}

TEST(LinkRetry, BadFaultRatesAreRejected) {
  for (const mn::LinkErrors& e : {mn::LinkErrors{0.6, 0, 1}, mn::LinkErrors{-1e-3, 0, 1}, mn::LinkErrors{0, 1.5, 1}}) {
    mn::TlmOptions o = test::tlm_net("2x2");
    o.errors = e;
    EXPECT_THROW(mn::TlmNetwork net(o), NocError) << e.str();
  }
}

}  // namespace
}  // namespace trnsim
