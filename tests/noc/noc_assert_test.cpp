// NeuronLink RTL assertions fire when a rule is broken on purpose: credits above the buffer depth, a flit into a
// full buffer, flits out of order, a flit on a VC that does not exist, a destination outside the torus, a
// withdrawn valid/ready beat. Faults the routers cannot see locally (a flit lost on a link) are caught by the
// harness's end-to-end checker and watchdog instead.
#include <string>

#include <gtest/gtest.h>

#include "tests/noc/noc_test_util.h"

namespace trnsim {
namespace {

using cosim::noc::Coord;
using cosim::noc::Flit;
using cosim::noc::LinkFault;
using cosim::noc::make_header;
using cosim::noc::NocNetwork;
using cosim::noc::NocOptions;
using cosim::noc::TrafficOptions;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Flit single(const Coord& dst, uint8_t vc = 0) {
  Flit f;
  f.head = f.tail = true;
  f.vc = vc;
  f.data = make_header(dst, 0, 0);
  return f;
}

// Steps `net` up to `cycles` cycles, with `f` offered on router 0's injection port in the first one.
void inject_and_run(NocNetwork& net, const Flit& f, int cycles = 20) {
  net.drive_inject(0, &f);
  net.step();
  net.drive_inject(0, nullptr);
  for (int i = 0; i < cycles; ++i) net.step();
}

TEST(NocAssert, ExtraCreditFiresCreditOverflow) {
  NocOptions o = test::torus("2x2");
  o.faults.push_back({LinkFault::Kind::kExtraCredit, 0, 0, 10, {}});
  NocNetwork net(o);
  const auto [err, out] = test::error_and_output([&] {
    for (int i = 0; i < 20; ++i) net.step();
  });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "a_credit_overflow")) << out;
  EXPECT_TRUE(contains(out, "VC 0: credit returned with 4 credits already (above the buffer depth 4)")) << out;
}

// A flit that arrives at a full VC buffer would be dropped: the network is stuck (no router ejects), then the link
// delivers one flit more than the credits allowed.
TEST(NocAssert, FlitIntoFullBufferFiresOverflow) {
  NocOptions o = test::torus("2x2");
  o.faults.push_back({LinkFault::Kind::kDuplicateFlit, 0, 0, 60, {}});
  NocNetwork net(o);
  for (int n = 0; n < net.nodes(); ++n) net.drive_eject_ready(n, false);
  const Flit f = single(Coord{{1, 0, 0}});
  const auto [err, out] = test::error_and_output([&] {
    for (int i = 0; i < 80; ++i) {
      net.drive_inject(0, &f);  // always offered; taken whenever inj_ready
      net.step();
    }
  });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "a_no_overflow")) << out;
  EXPECT_TRUE(contains(out, "with its buffer full (4 flits): flit dropped")) << out;
}

// A single-flit packet delivered twice on a link: the extra credit it earns is caught at the sender.
TEST(NocAssert, DuplicatedFlitOnALinkIsCaught) {
  NocOptions o = test::torus("2x2");
  o.faults.push_back({LinkFault::Kind::kDuplicateFlit, 0, 0, 0, {}});
  NocNetwork net(o);
  const auto [err, out] = test::error_and_output([&] { inject_and_run(net, single(Coord{{1, 0, 0}})); });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "credit returned with 4 credits already")) << out;
}

// The head of a multi-flit packet lost on a link: its body arrives at an idle VC.
TEST(NocAssert, LostHeadFlitFiresArrivalOrder) {
  NocOptions o = test::torus("4x4");
  o.faults.push_back({LinkFault::Kind::kDropFlit, 0, 0, 0, {}});
  NocNetwork net(o);
  TrafficOptions t;
  t.pattern = cosim::noc::Pattern::kNeighbor;
  t.min_len = t.max_len = 3;
  t.rate = 0.2;
  t.inject_cycles = 200;
  const auto [err, out] = test::error_and_output([&] { cosim::noc::run_traffic(net, t); });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "body/tail flit arrived while a packet was not started")) << out;
}

// A lost single-flit packet breaks no local rule; the end-to-end checker's watchdog names it.
TEST(NocAssert, LostSingleFlitPacketIsCaughtByTheWatchdog) {
  NocOptions o = test::torus("2x2");
  o.faults.push_back({LinkFault::Kind::kDropFlit, 0, 0, 0, {}});
  NocNetwork net(o);
  TrafficOptions t;
  t.pattern = cosim::noc::Pattern::kNeighbor;
  t.min_len = t.max_len = 1;
  t.rate = 0.05;
  t.inject_cycles = 300;
  const auto [err, out] = test::error_and_output([&] { cosim::noc::run_traffic(net, t); });
  EXPECT_TRUE(contains(err, "watchdog: nothing moved for 1000 cycles")) << err;
  EXPECT_TRUE(contains(err, "1 in the network: (0,0)#0 -> (1,1)")) << err;
}

TEST(NocAssert, InjectedBodyWithoutHeadFiresArrivalOrder) {
  NocNetwork net(test::torus("2x2"));
  Flit body;
  body.tail = true;
  body.data = 42;
  const auto [err, out] = test::error_and_output([&] { inject_and_run(net, body); });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "trn_noc_input_port 0 VC 0: body/tail flit arrived while a packet was not started"))
      << out;
}

TEST(NocAssert, InjectedFlitOnMissingVcFires) {
  NocNetwork net(test::torus("2x2"));  // d2v2: VCs 0 and 1
  const auto [err, out] = test::error_and_output([&] { inject_and_run(net, single(Coord{{1, 1, 0}}, 5)); });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "injected flit names VC 5, the router has 2 VCs (flit dropped)")) << out;
}

TEST(NocAssert, DestinationOutsideTheTorusFires) {
  NocNetwork net(test::torus("2x2"));
  const auto [err, out] = test::error_and_output([&] { inject_and_run(net, single(Coord{{3, 0, 0}})); });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "destination (3,0,0) outside the 2-D torus (largest coordinates 1,1,0)")) << out;
}

TEST(NocAssert, DestinationInAMissingDimensionFires) {
  NocNetwork net(test::torus("4x4"));
  const auto [err, out] = test::error_and_output([&] { inject_and_run(net, single(Coord{{1, 1, 2}})); });
  EXPECT_TRUE(contains(out, "destination (1,1,2) outside the 2-D torus")) << out;
}

// valid/ready rule on the injection port: a beat offered while inj_ready_o is low must stay until taken.
TEST(NocAssert, WithdrawnInjectionBeatFiresHoldAssertion) {
  NocNetwork net(test::torus("2x2"));
  for (int n = 0; n < net.nodes(); ++n) net.drive_eject_ready(n, false);
  const Flit f = single(Coord{{1, 0, 0}});
  int guard = 0;
  while (net.inj_ready(0) && guard++ < 200) {  // fill the path until the injection port pushes back
    net.drive_inject(0, &f);
    net.step();
  }
  ASSERT_FALSE(net.inj_ready(0)) << "injection never pushed back";
  const auto [err, out] = test::error_and_output([&] {
    net.drive_inject(0, &f);  // offered while not ready ...
    net.step();
    net.drive_inject(0, nullptr);  // ... and withdrawn
    net.step();
    net.step();
  });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "in_valid_i dropped or in_data_i changed while in_ready_o was low")) << out;
}

// A second packet's head on an injection VC before the first packet's tail (interleaving on one VC).
TEST(NocAssert, InterleavedPacketsOnOneVcFire) {
  NocNetwork net(test::torus("2x2"));
  Flit head;
  head.head = true;
  head.data = make_header(Coord{{1, 0, 0}}, 0, 0);
  const auto [err, out] = test::error_and_output([&] {
    net.drive_inject(0, &head);
    net.step();
    net.drive_inject(0, &head);  // another head on VC 0 while the first packet is open
    net.step();
    net.drive_inject(0, nullptr);
    for (int i = 0; i < 5; ++i) net.step();
  });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "head flit arrived while a packet was in progress")) << out;
}

}  // namespace
}  // namespace trnsim
