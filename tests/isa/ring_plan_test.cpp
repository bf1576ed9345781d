// The ring collective's plan (firmware/isa/ring_plan.h): the flows, phase orders and shares docs/neuronlink.md
// "Weights" states for trn2-16 and trn2-64, written here from the docs, not computed by the function under test.
#include <gtest/gtest.h>

#include <stdexcept>

#include "firmware/isa/ring_plan.h"

namespace trnsim::isa {
namespace {

// NeuronLink figures of the trn2 configs (BRIEF section 2): 1.28 TB/s per chip over 4 links, both directions ->
// 160 GB/s per link and direction in x and y; 256 GB/s per chip between instances over 2 Z links -> 64 GB/s.
constexpr double kXy = 160.0, kZ = 64.0;

TEST(RingPlan, Trn2_16HasFourEqualFlowsOfFourSlices) {
  const auto flows = ring_plan({4, 4}, {kXy, kXy});
  ASSERT_EQ(flows.size(), 16u);  // (x, +), (x, -), (y, +), (y, -), 4 slices each
  for (size_t i = 0; i < flows.size(); ++i) {
    const RingFlow& f = flows[i];
    EXPECT_EQ(f.weight, 1u);
    EXPECT_EQ(f.slice, int(i % 4));
    EXPECT_EQ(f.direction, (i / 4) % 2 == 0 ? +1 : -1);
    EXPECT_EQ(f.dims, i < 8 ? std::vector<int>({0, 1}) : std::vector<int>({1, 0}));
  }
}

TEST(RingPlan, Trn2_64GivesTheSlowZFirstFlowsLess) {
  const auto flows = ring_plan({4, 4, 4}, {kXy, kXy, kZ});
  ASSERT_EQ(flows.size(), 24u);
  // xyz 41, yxz 41, zxy 18 (docs/neuronlink.md "Weights").
  const std::vector<std::vector<int>> orders = {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}};
  const uint64_t weights[] = {41, 41, 18};
  for (size_t i = 0; i < flows.size(); ++i) {
    EXPECT_EQ(flows[i].dims, orders[i / 8]) << i;
    EXPECT_EQ(flows[i].weight, weights[i / 8]) << i;
  }
}

TEST(RingPlan, SizeOneDimensionsCarryNoFlowAndBadInputThrows) {
  EXPECT_TRUE(ring_plan({1}, {kXy}).empty());
  const auto ring = ring_plan({8, 1}, {kXy, kXy}, 1);
  ASSERT_EQ(ring.size(), 2u);
  EXPECT_EQ(ring[0].dims, std::vector<int>({0}));
  EXPECT_THROW(ring_plan({4, 4}, {kXy}), std::invalid_argument);
  EXPECT_THROW(ring_plan({0, 4}, {kXy, kXy}), std::invalid_argument);
  EXPECT_THROW(ring_plan({4, 4}, {kXy, 0.0}), std::invalid_argument);
}

}  // namespace
}  // namespace trnsim::isa
