// Multi-chip systems and collectives: the torus topology, the link fabric's timing, and every collective on 1..64
// chips bit for bit against the golden host collectives (firmware/golden/collective_golden.*).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "firmware/golden/collective_golden.h"
#include "model/collective/collective_system.h"
#include "model/collective/partition.h"
#include "model/config/chip_config.h"
#include "tests/collectives/collective_check.h"

namespace trnsim::model::collective {
namespace {

constexpr uint64_t kHbm = 1ull << 30;
using test::element;
using test::fill;
using test::gold_algo;
using test::kSeed;
using test::run_and_check;

Topology torus(std::vector<int> dims) {
  return Topology(dims, std::vector<double>(dims.size(), 160.0), 1500.0);
}

// ---- topology ----

TEST(CollectiveTopology, ConfigsAreTheBriefsTori) {
  const Topology t16 = Topology::from_config(chip_config("trn2-16"));
  EXPECT_EQ(t16.dims(), (std::vector<int>{4, 4}));
  EXPECT_EQ(t16.chips(), 16);
  EXPECT_DOUBLE_EQ(t16.gbytes_per_s(0), 160.0);  // 1.28 TB/s / 4 links / 2 directions
  EXPECT_DOUBLE_EQ(t16.chip_egress_gbytes_per_s(), 640.0);
  EXPECT_DOUBLE_EQ(t16.hop_latency_ns(), 1500.0);
  const Topology t64 = Topology::from_config(chip_config("trn2-64"));
  EXPECT_EQ(t64.dims(), (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(t64.chips(), 64);
  EXPECT_DOUBLE_EQ(t64.gbytes_per_s(2), 64.0);  // 256 GB/s / 2 Z links / 2 directions
  EXPECT_DOUBLE_EQ(t64.chip_egress_gbytes_per_s(), 768.0);
  EXPECT_EQ(Topology::from_config(chip_config("trn2")).chips(), 1);
}

TEST(CollectiveTopology, DimensionOrderRouteShorterWayTiesByCoordinateParity) {
  const Topology t = torus({4, 4});
  // (0,0) -> (3,2): x the short way is -1 (one hop), y is 2 either way: from y = 0 (even), positive.
  const auto r = t.route(0, 3 + 4 * 2);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].dim, 0);
  EXPECT_FALSE(r[0].positive);
  EXPECT_EQ(r[1].chip, 3);
  EXPECT_EQ(r[1].dim, 1);
  EXPECT_TRUE(r[1].positive);
  EXPECT_EQ(r[2].chip, 3 + 4);
  // (1,1) -> (3,3): x is 2 either way, from x = 1 (odd): negative, (1,1) -> (0,1) -> (3,1); then y from y = 1
  // (odd): negative, (3,1) -> (3,0) -> (3,3).
  const auto q = t.route(1 + 4 * 1, 3 + 4 * 3);
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[0].chip, 1 + 4);
  EXPECT_EQ(q[1].chip, 0 + 4);
  EXPECT_EQ(q[2].chip, 3 + 4);
  EXPECT_EQ(q[3].chip, 3 + 0);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(q[size_t(i)].dim, i / 2);
    EXPECT_FALSE(q[size_t(i)].positive);
  }
  // (2,1) -> (0,1): x tie from x = 2 (even): positive, (2,1) -> (3,1) -> (0,1).
  const auto p = t.route(2 + 4, 0 + 4);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].chip, 2 + 4);
  EXPECT_EQ(p[1].chip, 3 + 4);
  EXPECT_TRUE(p[0].positive && p[1].positive);
  EXPECT_TRUE(t.route(5, 5).empty());
  EXPECT_EQ(t.with_coord(5, 1, -1), 1 + 4 * 3);
  EXPECT_THROW(Topology({4, 0}, {1, 1}, 1), std::invalid_argument);
  EXPECT_THROW(Topology({4}, {1, 1}, 1), std::invalid_argument);
}

// ---- link fabric timing ----

TEST(CollectivePartition, RanksOwnConsecutiveBlocksOfChipsAsEvenlyAsTheyDivide) {
  using model::collective::Partition;
  // 16 chips on 3 ranks: floor(q * 16 / 3) = 0, 5, 10.
  const Partition p(16, 3, 1);
  EXPECT_EQ(p.first_chip(0), 0);
  EXPECT_EQ(p.first_chip(1), 5);
  EXPECT_EQ(p.first_chip(2), 10);
  EXPECT_EQ(p.end_chip(2), 16);
  EXPECT_EQ(p.chips_text(2), "chips 10..15");
  EXPECT_FALSE(p.local(4));
  EXPECT_TRUE(p.local(5));
  EXPECT_TRUE(p.local(9));
  EXPECT_FALSE(p.local(10));
  // Every chip's owner is the rank whose block holds it, for every chip and rank count up to the chips.
  for (const int chips : {1, 2, 7, 16, 64}) {
    for (int ranks = 1; ranks <= chips; ++ranks) {
      const Partition q(chips, ranks, 0);
      for (int c = 0; c < chips; ++c) {
        const int o = q.owner(c);
        ASSERT_TRUE(q.first_chip(o) <= c && c < q.end_chip(o)) << chips << " chips, " << ranks << " ranks, chip " << c;
      }
    }
  }
  EXPECT_EQ(Partition(64, 64, 0).chips_text(63), "chip 63");
  EXPECT_THROW(Partition(16, 17, 0), std::invalid_argument);
  EXPECT_THROW(Partition(16, 2, 2), std::invalid_argument);
  EXPECT_THROW(Partition(16, 0, 0), std::invalid_argument);
  EXPECT_THROW(p.owner(16), std::out_of_range);
}

TEST(CollectiveFabric, OneMessageIsHopsTimesLatencyPlusSerialisation) {
  const Topology t = torus({4, 4});
  Fabric f(t);
  double got = -1;
  f.send(0, 2 + 4 * 1, 160'000, 0.0, [&](double d) { got = d; });  // 3 hops, 1 us on the wire
  f.run();
  EXPECT_DOUBLE_EQ(got, 3 * 1500.0 + 1000.0);
}

TEST(CollectiveFabric, MessagesOnOneLinkSerialise) {
  const Topology t = torus({4});
  Fabric f(t);
  std::vector<double> got;
  for (int i = 0; i < 3; ++i) f.send(0, 1, 160'000, 0.0, [&](double d) { got.push_back(d); });
  f.send(0, 3, 160'000, 0.0, [&](double d) { got.push_back(d); });  // the other direction: no contention
  f.run();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_DOUBLE_EQ(got[0], 2500.0);  // the -x message and the first +x one arrive together
  EXPECT_DOUBLE_EQ(got[1], 2500.0);
  EXPECT_DOUBLE_EQ(got[2], 3500.0);
  EXPECT_DOUBLE_EQ(got[3], 4500.0);
}

// ---- collectives against the golden ----

/// (torus, collective, algorithm, element counts): every count runs in FP32 and in BF16.
using Case = std::tuple<std::vector<int>, Op, Algorithm, std::vector<uint64_t>>;

class CollectiveGolden : public ::testing::TestWithParam<Case> {};

TEST_P(CollectiveGolden, EveryChipMatchesTheGoldenBitForBit) {
  const auto& [dims, op, algo, counts] = GetParam();
  CollectiveSystem sys(torus(dims), kHbm);
  for (ElemType type : {ElemType::kFp32, ElemType::kBf16}) {
    for (uint64_t count : counts) {
      SCOPED_TRACE(std::string(type == ElemType::kFp32 ? "fp32" : "bf16") + ", " + std::to_string(count) +
                   " elements");
      const Result r = run_and_check(sys, op, algo, type, count);
      EXPECT_EQ(r.time_ns > 0.0, sys.chips() > 1);  // one chip: nothing to send, nothing to wait for
      EXPECT_EQ(r.messages > 0, sys.chips() > 1);
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto& [dims, op, algo, counts] = info.param;
  std::string s;
  for (int d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  const char* ops[] = {"allreduce", "allgather", "reducescatter"};
  return s + "_" + ops[int(op)] + "_" + algorithm_name(algo) + (counts.back() > 10'000 ? "_large" : "");
}

std::vector<Case> cases() {
  std::vector<Case> c;
  const std::vector<std::vector<int>> pow2 = {{2}, {4}, {2, 2}, {4, 4}, {4, 4, 4}};
  for (const auto& dims : pow2) {
    int n = 1;
    for (int d : dims) n *= d;
    for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter}) {
      for (Algorithm a : {Algorithm::kRing, Algorithm::kRhd}) {
        // 1, 2, 3 elements (fewer than the chips: empty blocks) and a count no chip count divides evenly.
        c.emplace_back(dims, op, a, std::vector<uint64_t>{1, 2, 3, uint64_t(n) * 5 + 3});
      }
    }
  }
  // Larger buffers (every flow's share of every block uneven), and ring on tori that are not powers of two.
  for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter}) {
    c.emplace_back(std::vector<int>{4, 4}, op, Algorithm::kRing, std::vector<uint64_t>{100'003});
    c.emplace_back(std::vector<int>{4, 4}, op, Algorithm::kRhd, std::vector<uint64_t>{100'003});
    c.emplace_back(std::vector<int>{3}, op, Algorithm::kRing, std::vector<uint64_t>{1, 1000});
    c.emplace_back(std::vector<int>{5, 3, 2}, op, Algorithm::kRing, std::vector<uint64_t>{7, 1001});
  }
  c.emplace_back(std::vector<int>{4, 4, 4}, Op::kAllReduce, Algorithm::kRing, std::vector<uint64_t>{20'011});
  c.emplace_back(std::vector<int>{4, 4, 4}, Op::kAllReduce, Algorithm::kRhd, std::vector<uint64_t>{20'011});
  c.emplace_back(std::vector<int>{1}, Op::kAllReduce, Algorithm::kRing, std::vector<uint64_t>{10});
  return c;
}

INSTANTIATE_TEST_SUITE_P(Systems, CollectiveGolden, ::testing::ValuesIn(cases()), case_name);

// ---- several UltraServers (pods) joined by EFA ----

/// `pods` copies of the torus `dims` at the BRIEF's link figures, joined by EFA at 25 GB/s and 5 us per pass.
Topology pods_of(std::vector<int> dims, int pods) {
  const Topology t = torus(dims);
  std::vector<double> bw;
  for (int d = 0; d < t.num_dims(); ++d) bw.push_back(t.gbytes_per_s(d));
  return Topology(t.dims(), bw, t.hop_latency_ns(), pods, 25.0, 5000.0);
}

TEST(CollectivePods, ChipsAreNumberedTorusFirstAndPodsGoThroughTheSwitch) {
  const Topology t = pods_of({4, 4}, 3);
  EXPECT_EQ(t.chips(), 48);
  EXPECT_EQ(t.torus_chips(), 16);
  EXPECT_EQ(t.coord(37, 0), 1);  // 37 = 1 + 4 * (1 + 4 * 2)
  EXPECT_EQ(t.coord(37, 1), 1);
  EXPECT_EQ(t.coord(37, 2), 2);  // the pod is dimension num_dims()
  EXPECT_EQ(t.dim(2), 3);
  EXPECT_EQ(t.with_coord(37, 2, 0), 5);
  EXPECT_EQ(t.with_coord(37, 2, 4), 21);  // wraps
  EXPECT_EQ(t.num_links(), 2 * 48 * 2 + 2 * 48);
  // Within a pod: the torus route; between pods: the sender's EFA link up, the switch's down to the receiver.
  EXPECT_EQ(t.route(16, 18).size(), 2u);
  const auto r = t.route(5, 37);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].chip, 5);
  EXPECT_EQ(r[0].dim, 2);
  EXPECT_TRUE(r[0].positive);
  EXPECT_EQ(r[1].chip, 37);
  EXPECT_FALSE(r[1].positive);
  EXPECT_NE(t.link_index(r[0]), t.link_index(r[1]));
  EXPECT_EQ(t.min_link_latency_ns(), 1500.0);
  EXPECT_THROW(Topology({4}, {160.0}, 1500.0, 2, 0.0, 5000.0), std::invalid_argument);  // pods need EFA
}

TEST(CollectivePods, AMessageBetweenPodsCrossesTwoEfaLinks) {
  const Topology t = pods_of({4}, 2);
  Fabric f(t);
  double got = -1;
  f.send(1, 5, 25'000, 0.0, [&](double d) { got = d; });  // 1 us on an EFA link at 25 GB/s
  f.run();
  EXPECT_DOUBLE_EQ(got, 2 * 5000.0 + 1000.0);  // up, down (cut through), each 5 us
  EXPECT_EQ(f.link_stats({1, 1, true}).bytes, 25'000u);
  EXPECT_EQ(f.link_stats({5, 1, false}).bytes, 25'000u);
}

TEST(CollectivePods, TheGoldenSumsEachUltraServerFirstThenAcrossThem) {
  // Two pods of a 2-chip ring: chips 0, 1 in pod 0, chips 2, 3 in pod 1; block 0 is element 0 (4 elements). The
  // documented order for block 0: each pod's ring first, (v1 + v0) and (v3 + v2), then the ring over the pods ending
  // at pod 0: (v3 + v2) + (v1 + v0). With v0 = 1 and the others 2^-24: 1 + 2^-24 rounds to 1 (a tie, to even) and
  // 2^-24 + 2^-24 = 2^-23, so the sum is 1 + 2^-23 = 0x3F800001; summing the four in any chip order gives 1 + 2^-22
  // or 1.
  const auto input = [](int r, uint64_t) { return r == 0 ? 0x3F800000u : 0x33800000u; };  // 1.0, 2^-24
  golden::CollectiveAlgorithm g{false, {2}, {160.0}, 4, 2};
  EXPECT_EQ(golden::collective_reduced(g, golden::CollectiveDtype::kFp32, 4, input)[0], 0x3F800001u);
  g.pods = 1;
  g.dims = {4};  // one ring of all four: the three 2^-24 first, 1.5 ulp of 1, then + 1: rounds to 1 + 2^-22
  EXPECT_EQ(golden::collective_reduced(g, golden::CollectiveDtype::kFp32, 4, input)[0], 0x3F800002u);
}

std::vector<std::tuple<std::vector<int>, int, Op, Algorithm>> pod_cases() {
  std::vector<std::tuple<std::vector<int>, int, Op, Algorithm>> out;
  for (const Op op : {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter}) {
    out.emplace_back(std::vector<int>{2, 2}, 3, op, Algorithm::kRing);
    out.emplace_back(std::vector<int>{4}, 2, op, Algorithm::kRing);
    out.emplace_back(std::vector<int>{4}, 2, op, Algorithm::kRhd);
    out.emplace_back(std::vector<int>{2, 2, 2}, 4, op, Algorithm::kRhd);
  }
  return out;
}

TEST(CollectivePods, EveryCollectiveOnSeveralPodsMatchesTheGoldenBitForBit) {
  for (const auto& [dims, pods, op, algo] : pod_cases()) {
    CollectiveSystem sys(pods_of(dims, pods), kHbm);
    for (ElemType type : {ElemType::kFp32, ElemType::kBf16}) {
      for (const uint64_t count : {uint64_t{1}, uint64_t(sys.chips()) * 3 + 1, uint64_t{1000}}) {
        SCOPED_TRACE(std::to_string(pods) + " pods of " + std::to_string(sys.topology().torus_chips()) + " chips, " +
                     op_name(op) + " " + algorithm_name(algo) + ", " + std::to_string(count) + " elements");
        const Result r = run_and_check(sys, op, algo, type, count);
        // Every pod's chips talk to the other pods over EFA: its links carried bytes.
        uint64_t efa = 0;
        for (int c = 0; c < sys.chips(); ++c) {
          efa += r.links[size_t(sys.topology().link_index({c, sys.topology().num_dims(), true}))].bytes;
        }
        EXPECT_GT(efa, 0u);
      }
    }
  }
}

TEST(Collective, TheOrderMattersSoTheCheckCanFail) {
  // Ring and rhd sum in different orders: on this input some elements differ, so a model that summed in another
  // order than the golden's would be caught.
  CollectiveSystem sys(torus({4, 4}), kHbm);
  const uint64_t count = 1000;
  const auto input = [](int r, uint64_t j) {
    return golden::collective_test_value(golden::CollectiveDtype::kFp32, kSeed, r, j);
  };
  const auto ring = golden::collective_reduced(gold_algo(sys, Algorithm::kRing), golden::CollectiveDtype::kFp32,
                                               count, input);
  const auto rhd = golden::collective_reduced(gold_algo(sys, Algorithm::kRhd), golden::CollectiveDtype::kFp32,
                                              count, input);
  size_t differ = 0;
  for (uint64_t j = 0; j < count; ++j) differ += ring[j] != rhd[j];
  EXPECT_GT(differ, count / 10);
  // And the model's ring result is not the rhd golden.
  fill(sys, ElemType::kFp32, count, 0);
  sys.run({Op::kAllReduce, Algorithm::kRing, ElemType::kFp32, count, 0});
  size_t same_as_rhd = 0;
  for (uint64_t j = 0; j < count; ++j) same_as_rhd += element(sys, ElemType::kFp32, 5, 0, j) == rhd[j];
  EXPECT_LT(same_as_rhd, count);
}

TEST(Collective, ZeroElementsIsANoOp) {
  CollectiveSystem sys(torus({4, 4}), kHbm);
  fill(sys, ElemType::kFp32, 4, 0);
  const Result r = sys.run({Op::kAllReduce, Algorithm::kRing, ElemType::kFp32, 0, 0});
  EXPECT_EQ(r.time_ns, 0.0);
  EXPECT_EQ(r.messages, 0u);
  EXPECT_EQ(element(sys, ElemType::kFp32, 3, 0, 0), golden::collective_test_value(golden::CollectiveDtype::kFp32,
                                                                                   kSeed, 3, 0));
}

TEST(Collective, RhdNeedsAPowerOfTwoAndBuffersMustFitHbm) {
  CollectiveSystem sys(torus({3, 2}), 1 << 20);
  try {
    sys.run({Op::kAllReduce, Algorithm::kRhd, ElemType::kFp32, 6, 0});
    FAIL() << "rhd on 6 chips ran";
  } catch (const CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("power-of-two"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sys.run({Op::kAllReduce, Algorithm::kRing, ElemType::kFp32, (1 << 18) + 1, 0}), CollectiveError);
  EXPECT_THROW(sys.run({Op::kAllReduce, Algorithm::kRing, ElemType::kBf16, 4, (1 << 20) - 6}), CollectiveError);
  EXPECT_THROW(golden::collective_reduced({true, {3, 2}, {}}, golden::CollectiveDtype::kFp32, 6,
                                          [](int, uint64_t) { return 0u; }),
               std::invalid_argument);
}

TEST(Collective, SendRecvCopiesAndTakesHopsPlusSerialisation) {
  CollectiveSystem sys(torus({4, 4}), kHbm);
  std::vector<uint8_t> data(160'000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 + 1);
  sys.hbm(1).write(100, data.data(), data.size());
  const Result r = sys.send_recv(1, 100, 1 + 4 * 2, 5000, data.size());  // 2 hops in y
  std::vector<uint8_t> got(data.size());
  sys.hbm(9).read(5000, got.data(), got.size());
  EXPECT_EQ(got, data);
  EXPECT_DOUBLE_EQ(r.time_ns, 2 * 1500.0 + 1000.0);
  EXPECT_THROW(sys.send_recv(0, 0, 16, 0, 4), CollectiveError);
  EXPECT_THROW(sys.send_recv(0, kHbm - 2, 1, 0, 4), CollectiveError);
}

TEST(Collective, RingOnAOneDimensionalRingKeepsTheLinksBusyAndShowsOneLatency) {
  // 4 chips, two flows (+ and -) of 4 slices each; 3 reduce-scatter + 3 all-gather steps, each slice's message a
  // quarter of its share of the buffer, one hop. Each link carries 6 x S / 8 bytes; a slice's message is 819 ns on
  // the wire, so the 3 other slices cover its 1.5 us latency and the link never idles: 6 x (S / 8) / 160 GB/s + one
  // hop latency at the end. No contention (the + and - flows use different links).
  CollectiveSystem sys(torus({4}), kHbm);
  const uint64_t count = 1 << 20;  // 4 MiB of FP32
  fill(sys, ElemType::kFp32, count, 0);
  const Result r = sys.run({Op::kAllReduce, Algorithm::kRing, ElemType::kFp32, count, 0});
  EXPECT_NEAR(r.time_ns, 6 * (4.0 * count / 8) / 160.0 + 1500.0, 1e-6);
  EXPECT_EQ(r.steps, 6);
  EXPECT_EQ(r.messages, 4u * 2 * CollectiveSystem::ring_slices() * 6);
}

TEST(Collective, RingOnTheTwoDimensionalTorusIsBoundByItsLinksPlusLatencies) {
  // 4x4: four flows, one per output link and phase. Every link carries 2 x (3 S/16 + 3 S/64) = 30 S / 64 bytes: the
  // bandwidth-optimal 2 (n - 1) / n of the buffer spread over 4 links. The time is that over 160 GB/s plus between
  // one hop latency (all hidden but the last) and one per step (12).
  CollectiveSystem sys(torus({4, 4}), kHbm);
  const uint64_t count = 1 << 20;
  const double s = 4.0 * count, link_ns = 30 * s / 64 / 160.0;
  fill(sys, ElemType::kFp32, count, 0);
  const Result r = sys.run({Op::kAllReduce, Algorithm::kRing, ElemType::kFp32, count, 0});
  EXPECT_GE(r.time_ns, link_ns + 1500.0);
  EXPECT_LE(r.time_ns, link_ns + 12 * 1500.0);
  EXPECT_NEAR(r.max_link_busy_ns, link_ns, 1.0);
  EXPECT_NEAR(double(r.link_bytes), 16 * 2 * 15.0 / 16 * s, 16 * 64.0);  // every chip sent 2 (n-1)/n of S
}

}  // namespace
}  // namespace trnsim::model::collective
