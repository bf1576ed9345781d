// Collectives over the NeuronLink router network (model/collective/noc_transport.h): trn2-16 and trn2-64 on the C++
// router model, the verilated routers and both in lockstep, every result bit for bit against the golden host
// collectives; chip index = router index; the data really crosses the network; the time conversion.
// Built twice: collective_noc_test (default) and, with TRNSIM_COLLECTIVE_NOC_LONG, the 64 verilated routers
// (label long).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "cosim/collective/noc_transports.h"
#include "model/config/chip_config.h"
#include "tests/collectives/collective_check.h"

namespace trnsim::model::collective {
namespace {

using cosim::collective::FabricKind;
using cosim::collective::fabric_name;
using cosim::collective::router_network;
using cosim::collective::transport_factory;
using test::run_and_check;
using test::run_and_count_mismatches;

/// A system of `config` whose collectives run on the router network `kind`.
std::unique_ptr<CollectiveSystem> system_on(const char* config, FabricKind kind,
                                            std::function<void(NocTransport&)> setup = {}) {
  auto sys = std::make_unique<CollectiveSystem>(chip_config(config));
  sys->set_transport(transport_factory(kind, {}, std::move(setup)));
  return sys;
}

#ifndef TRNSIM_COLLECTIVE_NOC_LONG
// ---- chip index = router index ----

TEST(CollectiveNoc, TopologyRanksAndRouterNodesHaveTheSameCoordinates) {
  for (const char* config : {"trn2-16", "trn2-64"}) {
    const Topology topo = Topology::from_config(chip_config(config));
    for (FabricKind kind : {FabricKind::kTlm, FabricKind::kRtl}) {
      const auto net = router_network(kind, topo);
      ASSERT_EQ(net->nodes(), topo.chips()) << config << " " << fabric_name(kind);
      for (int r = 0; r < topo.chips(); ++r) {
        for (int d = 0; d < topo.num_dims(); ++d) {
          EXPECT_EQ(net->coord(r)[d], topo.coord(r, d)) << config << " " << fabric_name(kind) << " rank " << r;
        }
      }
    }
  }
}

TEST(CollectiveNoc, TopologyRouteIsTheLinksTheRouterModelUses) {
  // NocTransport counts per-link load on Topology::route, so it must be the routers' routing function, ties (k/2
  // away: + from an even coordinate, - from an odd one) included. For every (src, dst) pair one single-flit packet
  // goes through the C++ router model; the link ports it was sent on must be exactly the route's links.
  for (const std::vector<int>& dims : {std::vector<int>{4, 4}, std::vector<int>{4, 4, 4}, std::vector<int>{8, 8}}) {
    const Topology t(dims, std::vector<double>(dims.size(), 160.0), 1500.0);
    noc::TlmNetwork net(tlm_options_for(t));
    const int nports = 2 * t.num_dims();
    std::vector<uint64_t> before(size_t(t.chips() * nports), 0);
    int ties = 0;
    for (int src = 0; src < t.chips(); ++src) {
      for (int dst = 0; dst < t.chips(); ++dst) {
        std::vector<uint64_t> want = before;
        for (const LinkId& l : t.route(src, dst)) ++want[size_t(l.chip * nports + 2 * l.dim + (l.positive ? 0 : 1))];
        for (int d = 0; d < t.num_dims(); ++d) ties += 2 * std::abs(t.coord(dst, d) - t.coord(src, d)) == t.dim(d);
        const noc::Flit f{true, true, 0, noc::make_header(net.coord(dst), 0, 0x5a)};
        ASSERT_TRUE(net.inj_ready(src));
        net.drive_inject(src, &f);
        net.step();
        net.drive_inject(src, nullptr);
        const uint64_t start = net.cycle();
        while (!net.ej_valid(dst) && net.cycle() - start < 200) net.step();
        ASSERT_TRUE(net.ej_valid(dst)) << net.node_name(src) << " -> " << net.node_name(dst);
        net.step();  // ejection is always ready: the flit leaves
        ASSERT_EQ(net.flits_in_network(), 0u);
        for (int n = 0; n < t.chips(); ++n) {
          for (int l = 0; l < nports; ++l) {
            before[size_t(n * nports + l)] = net.link_port_flits(n, l);
            EXPECT_EQ(before[size_t(n * nports + l)], want[size_t(n * nports + l)])
                << t.chips() << " chips, " << net.node_name(src) << " -> " << net.node_name(dst) << ": router "
                << net.node_name(n) << " link port " << l;
          }
        }
      }
    }
    EXPECT_GT(ties, t.chips());  // the tied pairs were there to check
  }
}

TEST(CollectiveNoc, SendRecvLandsOnTheRouterOfTheDestinationChip) {
  // Every chip sends its own bytes to the chip one +x, +y (and +z) step away; NocEndpoints throws if a head flit
  // is ejected at another router than its message's destination, and the bytes must land at the right chip.
  for (const char* config : {"trn2-16", "trn2-64"}) {
    auto sys = system_on(config, FabricKind::kTlm);
    const Topology& t = sys->topology();
    for (int src = 0; src < sys->chips(); src += 5) {
      int dst = src;
      for (int d = 0; d < t.num_dims(); ++d) dst = t.with_coord(dst, d, t.coord(dst, d) + 1);
      std::vector<uint8_t> data(37);
      for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(src * 7 + i);
      sys->hbm(src).write(0, data.data(), data.size());
      const Result r = sys->send_recv(src, 0, dst, 1 << 20, data.size());
      std::vector<uint8_t> got(data.size());
      sys->hbm(dst).read(1 << 20, got.data(), got.size());
      EXPECT_EQ(got, data) << config << " chip " << src << " -> " << dst;
      EXPECT_EQ(r.network.packets, 1u);
      EXPECT_EQ(r.network.flits, 1u + 5u);  // head + ceil(37 / 8) payload flits
      EXPECT_EQ(r.link_bytes, 37u * unsigned(t.num_dims()));
    }
  }
}

// ---- timing ----

TEST(CollectiveNoc, OneMessageTakesTheRouterPipelineAndOneCyclePerFlit) {
  // One packet of F flits over H hops, alone: the head is taken at cycle 0, reaches the destination's ejection port
  // 4 + 3H cycles later (docs/neuronlink.md, zero-load latency), the tail F - 1 cycles after it, and the message is
  // delivered at the clock edge that takes the tail: 4 + 3H + F cycles. A packet right behind another on the same
  // path waits one cycle at each of the H + 1 routers (an output VC is not re-granted in the cycle it is released,
  // and the 2-D build has one VC per dateline class). Time = cycles x 8 bytes / 160 GB/s.
  auto sys = system_on("trn2-16", FabricKind::kTlm);
  for (const auto& [dst, hops] : std::vector<std::pair<int, int>>{{1, 1}, {2, 2}, {10, 4}}) {
    for (uint64_t bytes : {8u, 256u, 1024u}) {
      const Result r = sys->send_recv(0, 0, dst, 0, bytes);
      const uint64_t words = bytes / 8, packets = (words + 31) / 32, flits = words + packets;
      EXPECT_EQ(r.network.packets, packets);
      EXPECT_EQ(r.network.ns_per_cycle, 0.05);
      const uint64_t cycles = 4 + 3 * uint64_t(hops) + flits + (packets - 1) * uint64_t(hops + 1);
      EXPECT_EQ(r.network.cycles, cycles) << bytes << " bytes, " << hops << " hops";
      EXPECT_DOUBLE_EQ(r.time_ns, double(cycles) * 0.05);
      EXPECT_DOUBLE_EQ(r.max_link_busy_ns, double(flits) * 0.05);
    }
  }
}

TEST(CollectiveNoc, LongMessagesAreSplitIntoPacketsOfAtMost32PayloadFlits) {
  auto sys = system_on("trn2-16", FabricKind::kTlm);
  const uint64_t bytes = 32 * 8 * 3 + 12;  // 3 full packets and one of 2 words
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = uint8_t(i * 31 + 5);
  sys->hbm(3).write(64, data.data(), bytes);
  const Result r = sys->send_recv(3, 64, 12, 128, bytes);
  std::vector<uint8_t> got(bytes);
  sys->hbm(12).read(128, got.data(), bytes);
  EXPECT_EQ(got, data);
  EXPECT_EQ(r.network.packets, 4u);
  EXPECT_EQ(r.network.flits, 4u + 3 * 32 + 2);
  EXPECT_LE(r.network.max_latency_cycles, 4u + 3 * 2 + 32 + 8);  // no packet waits long behind another
}

// ---- the data crosses the network ----

TEST(CollectiveNoc, CorruptingADeliveredPacketMakesTheResultDifferFromTheGolden) {
  // The receiving engines reduce and copy what the network delivered: one flipped bit in every packet from chip 5
  // must show in the result (a transport that handed over a copy kept beside the message would still pass).
  uint64_t flipped = 0;
  auto sys = system_on("trn2-16", FabricKind::kTlm, [&](NocTransport& t) {
    t.on_packet_delivered([&](int src, int, std::vector<uint64_t>& words) {
      if (src == 5 && !words.empty()) {
        words[0] ^= uint64_t{1} << 20;
        ++flipped;
      }
    });
  });
  for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter}) {
    flipped = 0;
    EXPECT_GT(run_and_count_mismatches(*sys, op, Algorithm::kRing, ElemType::kFp32, 16 * 5 + 3, nullptr, false), 0u)
        << op_name(op);
    EXPECT_GT(flipped, 0u);
  }
  // Without the hook the same runs match.
  sys->set_transport(transport_factory(FabricKind::kTlm));
  for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter}) {
    run_and_check(*sys, op, Algorithm::kRing, ElemType::kFp32, 16 * 5 + 3);
  }
}

// Bit errors and lost flits on every link of the router network (issue 16): the link-level retry repairs them below
// the packets, so every chip's result is still the golden bit for bit, and the figures count the replays. The RTL
// and the lockstep replay exactly as the TLM (the same faults on the same beats): the same counts.
TEST(CollectiveNoc, UnderBitErrorsAndDropsEveryChipStaysBitExactAndTheReplaysAreCounted) {
  NocTransportOptions o;
  o.link_errors = noc::LinkErrors{1e-4, 1e-4, 7};
  std::vector<uint64_t> replays;
  for (FabricKind kind : {FabricKind::kTlm, FabricKind::kRtl, FabricKind::kLockstep}) {
    CollectiveSystem sys(chip_config("trn2-16"));
    sys.set_transport(transport_factory(kind, o));
    for (Algorithm algo : {Algorithm::kRing, Algorithm::kRhd}) {
      const Result r = run_and_check(sys, Op::kAllReduce, algo, ElemType::kFp32, 16 * 64);
      EXPECT_GT(r.network.link.replays, 0u) << fabric_name(kind);
      EXPECT_GT(r.network.link.crc_errors, 0u) << fabric_name(kind);
      EXPECT_GT(r.network.link.injected_drops + r.network.link.injected_flips, 0u) << fabric_name(kind);
      replays.push_back(r.network.link.replays);
    }
  }
  ASSERT_EQ(replays.size(), 6u);
  EXPECT_EQ(replays[0], replays[2]);  // ring: TLM = RTL
  EXPECT_EQ(replays[1], replays[3]);  // rhd
  EXPECT_EQ(replays[0], replays[4]);
}

// A link that keeps failing stops the collective with the link named, not a hang or the transport's watchdog.
TEST(CollectiveNoc, ALinkThatKeepsFailingStopsTheCollectiveNamingTheLink) {
  NocTransportOptions o;
  o.link_errors = noc::LinkErrors{0.5, 0, 3};
  CollectiveSystem sys(chip_config("trn2-16"));
  sys.set_transport(transport_factory(FabricKind::kTlm, o));
  test::fill(sys, ElemType::kFp32, 256, 0);
  try {
    sys.run({Op::kAllReduce, Algorithm::kRing, ElemType::kFp32, 256, 0});
    ADD_FAILURE() << "the run went through a link with BER 0.5";
  } catch (const noc::NocError& e) {
    EXPECT_NE(std::string(e.what()).find("link down: router ("), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("watchdog"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

/// A network whose ejection port of one router flips a bit of every payload flit (a fault in the network).
class BitFlippingNetwork final : public noc::NocPorts {
 public:
  BitFlippingNetwork(std::unique_ptr<noc::NocPorts> net, int node) : net_(std::move(net)), node_(node) {}
  int ndim() const override { return net_->ndim(); }
  int size(int d) const override { return net_->size(d); }
  int num_vc(int n) const override { return net_->num_vc(n); }
  bool inj_ready(int n) const override { return net_->inj_ready(n); }
  void drive_inject(int n, const noc::Flit* f) override { net_->drive_inject(n, f); }
  bool ej_valid(int n) const override { return net_->ej_valid(n); }
  noc::Flit ej_flit(int n) const override {
    noc::Flit f = net_->ej_flit(n);
    if (n == node_ && !f.head) f.data ^= 1;
    return f;
  }
  void drive_eject_ready(int n, bool ready) override { net_->drive_eject_ready(n, ready); }
  void step() override { net_->step(); }
  uint64_t cycle() const override { return net_->cycle(); }
  uint64_t link_flits() const override { return net_->link_flits(); }
  double step_seconds() const override { return net_->step_seconds(); }
  std::string backend() const override { return "bit-flipping " + net_->backend(); }
  noc::LinkStats link_stats() const override { return net_->link_stats(); }

 private:
  std::unique_ptr<noc::NocPorts> net_;
  int node_;
};

TEST(CollectiveNoc, AFlitCorruptedInTheNetworkIsCaughtAtTheReceiver) {
  CollectiveSystem sys(chip_config("trn2-16"));
  sys.set_transport([](const Topology& t) -> std::unique_ptr<Transport> {
    return std::make_unique<NocTransport>(
        t, std::make_unique<BitFlippingNetwork>(router_network(FabricKind::kRtl, t), 6));
  });
  test::fill(sys, ElemType::kFp32, 100, 0);
  try {
    sys.run({Op::kAllReduce, Algorithm::kRing, ElemType::kFp32, 100, 0});
    ADD_FAILURE() << "a corrupted flit went unnoticed";
  } catch (const noc::NocError& e) {
    EXPECT_NE(std::string(e.what()).find("differs from what was sent"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("router (2,1)"), std::string::npos) << e.what();
  }
}

TEST(CollectiveNoc, ANetworkOfAnotherShapeIsRejected) {
  const Topology t16 = Topology::from_config(chip_config("trn2-16"));
  noc::TlmOptions o;
  o.size = {4, 2, 1};
  EXPECT_THROW(NocTransport(t16, std::make_unique<noc::TlmNetwork>(o)), std::invalid_argument);
  EXPECT_THROW(noc_shape(Topology({17, 2}, {1, 1}, 1)), std::invalid_argument);
  EXPECT_THROW(noc_shape(Topology({1}, {1}, 1)), std::invalid_argument);
}

#endif  // TRNSIM_COLLECTIVE_NOC_LONG

// ---- collectives against the golden ----

/// (config, network, collective, algorithm, element counts); every count runs in FP32 and BF16.
using Case = std::tuple<const char*, FabricKind, Op, Algorithm, std::vector<uint64_t>>;

class CollectiveNocGolden : public ::testing::TestWithParam<Case> {};

TEST_P(CollectiveNocGolden, EveryChipMatchesTheGoldenBitForBit) {
  const auto& [config, kind, op, algo, counts] = GetParam();
  auto sys = system_on(config, kind);
  for (ElemType type : {ElemType::kFp32, ElemType::kBf16}) {
    for (uint64_t count : counts) {
      SCOPED_TRACE(std::string(type == ElemType::kFp32 ? "fp32" : "bf16") + ", " + std::to_string(count) +
                   " elements");
      const Result r = run_and_check(*sys, op, algo, type, count);
      EXPECT_GT(r.network.cycles, 0u);
      EXPECT_GE(r.network.packets, r.messages);
      EXPECT_GT(r.network.link_flits, 0u);
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto& [config, kind, op, algo, counts] = info.param;
  const char* ops[] = {"allreduce", "allgather", "reducescatter"};
  std::string c = config;
  c.erase(c.find('-'), 1);
  return c + "_" + fabric_name(kind) + "_" + ops[int(op)] + "_" + algorithm_name(algo);
}

std::vector<Case> cases() {
  struct Net {
    const char* config;
    FabricKind kind;
    std::vector<uint64_t> counts;
  };
#ifndef TRNSIM_COLLECTIVE_NOC_LONG
  // 1, 2, 3 elements (empty blocks), a count no chip count divides, and 4 KiB of FP32 (2 KiB of BF16).
  const std::vector<Net> nets = {{"trn2-16", FabricKind::kTlm, {1, 2, 3, 16 * 5 + 3, 1024}},
                                 {"trn2-16", FabricKind::kRtl, {1, 2, 3, 16 * 5 + 3, 1024}},
                                 {"trn2-16", FabricKind::kLockstep, {3, 16 * 5 + 3}},
                                 {"trn2-64", FabricKind::kTlm, {1, 3, 64 * 5 + 3, 1024}}};
#else
  const std::vector<Net> nets = {{"trn2-64", FabricKind::kRtl, {3, 64 * 5 + 3}},
                                 {"trn2-64", FabricKind::kLockstep, {64 * 5 + 3}}};
#endif
  std::vector<Case> c;
  for (const Net& n : nets) {
    for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter}) {
      for (Algorithm a : {Algorithm::kRing, Algorithm::kRhd}) c.emplace_back(n.config, n.kind, op, a, n.counts);
    }
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(Networks, CollectiveNocGolden, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace trnsim::model::collective
