// The ring collective's plan: which flows a ring all-reduce / reduce-scatter / all-gather on a torus uses, the
// dimension order of each flow's phases and each flow's share of every block (docs/neuronlink.md "Collectives",
// "Blocks and flows", "Weights").
//
// A pure function of the torus (its sizes and link bandwidths), beside the ISA because both sides need the same
// plan: the model's collective engine runs it, and the golden collective (firmware/golden) derives its reduction
// order from it without asking the model (BRIEF section 7: a golden must not depend on the code it checks).
#pragma once

#include <cstdint>
#include <vector>

namespace trnsim::isa {

/// One flow of the ring algorithm: the rings of dims[0] first, then dims[1], ..., all in one direction.
struct RingFlow {
  int direction = +1;     ///< +1: each chip sends to coordinate + 1; -1: to coordinate - 1
  std::vector<int> dims;  ///< dimension order of the reduce-scatter phases (all-gather: reversed)
  uint64_t weight = 1;    ///< share of every block this flow carries: weight / sum of weights
  int slice = 0;          ///< which of the `slices` flows with the same dims and direction this is
};

/// Flows per (first dimension, direction): slices keep a link busy while another slice waits for its data.
inline constexpr int kRingSlices = 4;

/// The flows on a torus of sizes `dims` (each >= 1, x first) whose links carry `link_gbytes_per_s[d]` per
/// direction: for every dimension of size > 1 (ascending) a + and a - flow, each as `slices` flows of equal weight,
/// whose phases start in that dimension and continue with the others in ascending order. The shares (hundredths,
/// reduced by their gcd) minimise the larger of the busiest dimension's link time and the longest flow's chain of
/// phases; ties go to the first split in enumeration order. Empty when no dimension has size > 1. Throws
/// std::invalid_argument when the lengths differ, a size is < 1 or a bandwidth <= 0.
std::vector<RingFlow> ring_plan(const std::vector<int>& dims, const std::vector<double>& link_gbytes_per_s,
                                 int slices = kRingSlices);

}  // namespace trnsim::isa
