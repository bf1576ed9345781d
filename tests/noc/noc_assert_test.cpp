// NeuronLink RTL assertions fire when a rule is broken on purpose: credits above the buffer depth, an
// acknowledgement outside the sender's window, a flit into a full buffer, flits out of order, a flit on a VC that
// does not exist, a destination outside the torus, a withdrawn valid/ready beat, another VC's flit at an injection
// port while a packet is open there. Faults the link-level retry recovers from (a flit lost or repeated on a link, a
// backward beat lost) are tests/noc/noc_retry_test.cpp's.
#include <string>

#include <fmt/core.h>
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
  EXPECT_TRUE(contains(out, "VC 0: 1 credits returned with 4 credits already (above the buffer depth 4)")) << out;
}

// The same rule broken at a router that a worker thread evaluates (NocOptions::threads; router 3 of 4 is the second
// thread's): the run stops with the same error and the assertion's message.
TEST(NocAssert, AnAssertionOnAWorkerThreadStopsTheRun) {
  NocOptions o = test::torus("2x2");
  o.threads = 2;
  o.faults.push_back({LinkFault::Kind::kExtraCredit, 3, 0, 10, {}});
  NocNetwork net(o);
  const auto [err, out] = test::error_and_output([&] {
    for (int i = 0; i < 20; ++i) net.step();
  });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "node_1_1.trn_noc_router.g_link[0].u_tx.at_edge.a_credit_overflow")) << out;
  EXPECT_TRUE(contains(out, "trn_noc_link_tx: VC 0: 1 credits returned with 4 credits already")) << out;
}

// NocOptions::assertions = false (trnsim noc --no-assertions): the extra credit above goes unreported by the RTL.
TEST(NocAssert, AssertionsOffReportNothing) {
  NocOptions o = test::torus("2x2");
  o.assertions = false;
  o.faults.push_back({LinkFault::Kind::kExtraCredit, 3, 0, 10, {}});
  NocNetwork net(o);
  const auto [err, out] = test::error_and_output([&] {
    for (int i = 0; i < 20; ++i) net.step();
  });
  EXPECT_EQ(err, "") << err;
  EXPECT_FALSE(contains(out, "a_credit_overflow")) << out;
  EXPECT_FALSE(net.rtl_error());
}

// A backward beat with a right CRC that acknowledges flits never sent: the sender's window check names it.
TEST(NocAssert, AnAcknowledgementBeyondTheLastFlitSentFiresAckWindow) {
  NocOptions o = test::torus("2x2");
  o.faults.push_back({LinkFault::Kind::kBadAck, 0, 0, 10, {}});  // after the first refresh beat (edge 31)
  NocNetwork net(o);
  const auto [err, out] = test::error_and_output([&] {
    for (int i = 0; i < 60; ++i) net.step();
  });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "a_ack_window")) << out;
  EXPECT_TRUE(contains(out, "acknowledgement up to sequence number 5, but only 0 .. 0 are unacknowledged")) << out;
}

// A flit that arrives at a full VC buffer would be dropped: the network is stuck (no router ejects), then a credit
// nobody freed lets the sender send one flit more than the buffer holds.
TEST(NocAssert, FlitIntoFullBufferFiresOverflow) {
  NocOptions o = test::torus("2x2");
  o.faults.push_back({LinkFault::Kind::kExtraCredit, 0, 0, 60, {}});
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

// On each VC: the rule is checked over all VCs of a port at once, and the message names the VC that broke it.
TEST(NocAssert, InjectedBodyWithoutHeadFiresArrivalOrder) {
  for (const int vc : {0, 1}) {
    NocNetwork net(test::torus("2x2"));
    Flit body;
    body.tail = true;
    body.vc = static_cast<uint8_t>(vc);
    body.data = 42;
    const auto [err, out] = test::error_and_output([&] { inject_and_run(net, body); });
    EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
    EXPECT_TRUE(contains(out, fmt::format("trn_noc_input_port 0 VC {}: body/tail flit arrived while a packet was not "
                                          "started",
                                          vc)))
        << out;
  }
}

TEST(NocAssert, InjectedFlitOnMissingVcFires) {
  NocNetwork net(test::torus("2x2"));  // d2v2: VCs 0 and 1
  const auto [err, out] = test::error_and_output([&] { inject_and_run(net, single(Coord{{1, 1, 0}}, 5)); });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "injected flit names VC 5, the router has 2 VCs (flit dropped)")) << out;
}

TEST(NocAssert, DestinationOutsideTheTorusFires) {
  for (const int vc : {0, 1}) {
    NocNetwork net(test::torus("2x2"));
    const auto [err, out] = test::error_and_output([&] { inject_and_run(net, single(Coord{{3, 0, 0}}, static_cast<uint8_t>(vc))); });
    EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
    EXPECT_TRUE(contains(out, fmt::format("trn_noc_input_port 0 VC {}: destination (3,0,0) outside the 2-D torus "
                                          "(largest coordinates 1,1,0)",
                                          vc)))
        << out;
  }
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

// One packet at a time per injection port: a single-flit packet on VC 1 while a packet on VC 0 is open there (its
// head taken, its tail not yet). Found by fuzz_noc on the model: the other VC's flits can fill their buffer and then
// block the injection spill register in front of the open packet's tail for ever.
TEST(NocAssert, AnotherVcsFlitWhileAPacketIsOpenAtInjectionFiresWholePacket) {
  NocNetwork net(test::torus("2x2"));  // d2v2
  Flit head;
  head.head = true;
  head.data = make_header(Coord{{1, 0, 0}}, 0, 0);
  const Flit other = single(Coord{{1, 0, 0}}, 1);
  const auto [err, out] = test::error_and_output([&] {
    net.drive_inject(0, &head);
    net.step();
    net.drive_inject(0, &other);
    net.step();
    net.drive_inject(0, nullptr);
    for (int i = 0; i < 5; ++i) net.step();
  });
  EXPECT_TRUE(contains(err, "RTL assertion failed")) << err;
  EXPECT_TRUE(contains(out, "a_inj_whole_packet")) << out;
  EXPECT_TRUE(contains(out, "injected flit names VC 1 while the packet on VC 0 is open (one packet at a time per "
                            "injection port: its tail first)"))
      << out;
  EXPECT_FALSE(contains(out, "a_arrival_order")) << "VC 1 itself was in order: " << out;
}

}  // namespace
}  // namespace trnsim
