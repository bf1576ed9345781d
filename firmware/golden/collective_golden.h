// Golden host collectives: the result every chip of a torus system must hold after all-reduce, reduce-scatter and
// all-gather, following the reduction order of the ring and recursive halving-doubling algorithms bit for bit
// (docs/neuronlink.md "Collectives", "Reduction order").
//
// Written from that order's definition, independently of the model: nothing here includes model/, cosim/ or rtl/.
// The model runs the algorithms step by step on chips and messages; this file computes each element's sum directly
// as the nested sum the algorithm defines.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "firmware/isa/isa.h"

namespace trnsim::golden {

/// kFp32 or kBf16: the ISA's one data-type enum (spec/isa.json).
using CollectiveDtype = isa::DataType;

/// The algorithm as the golden needs it: the machine (torus sizes, link bandwidths) and the algorithm's name.
///   ring: dims = torus sizes (x fastest: rank = x + X * (y + Y * z)), link_gbytes_per_s = each dimension's link
///         bandwidth; the flows, their phase orders and shares are isa::ring_plan(dims, link_gbytes_per_s, slices)
///         (firmware/isa/ring_plan.h: the documented plan, computed here as in the model, never asked of it).
///         Slices of one (dimension, direction) sum in the same order.
///   rhd:  recursive halving-doubling over the ranks' bits; dims only give the chip count (a power of two).
///   pods: tori (UltraServers) of `dims` joined by EFA, rank = torus position + torus chips x pod. ring: every flow
///         ends its reduce-scatter phases with a ring over the pods (from pod p + s to p, between the chips of one
///         torus position); rhd: the pod bits are the rank's high bits, as any other.
struct CollectiveAlgorithm {
  bool rhd = false;
  std::vector<int> dims;
  std::vector<double> link_gbytes_per_s;
  int slices = 4;  ///< isa::kRingSlices
  int pods = 1;
};

/// Element bits: FP32 patterns, or BF16 patterns in the low 16 bits.
using CollectiveInput = std::function<uint32_t(int rank, uint64_t element)>;

/// The input pattern of `trnsim run --workload allreduce|allgather|reducescatter` and the collective tests: chip r
/// element j is a number from splitmix64(seed, r, j) with a random sign, a random significand and an exponent in
/// [-8, 8] (|x| in [2^-8, 2^9)), so sums over chips round differently in different orders and any departure from the
/// documented order shows. Distinct per chip and element (up to 2^-23 odds of a repeat).
uint32_t collective_test_value(CollectiveDtype dtype, uint64_t seed, int rank, uint64_t element);

/// First element of chip r's block of a count-element buffer over n chips: floor(r * count / n).
uint64_t collective_block_begin(uint64_t count, int n, int r);

/// The reduced buffer: element j = sum over ranks of input(rank, j) in the algorithm's order; FP32 adds are RNE
/// with canonical NaN; BF16 adds widen both operands to FP32, add (RNE) and round the sum to BF16 (RNE) once per
/// add. All-reduce leaves this on every chip, reduce-scatter leaves block r of it on chip r.
/// Throws std::invalid_argument: rhd with a chip count that is not a power of two, weights not matching the flows.
/// Large buffers are summed by one thread per host core: `input` is called from several threads at once.
std::vector<uint32_t> collective_reduced(const CollectiveAlgorithm& algo, CollectiveDtype dtype, uint64_t count,
                                         const CollectiveInput& input);

/// The all-gathered buffer: element j = input(r, j) for the chip r whose block holds j.
std::vector<uint32_t> collective_gathered(int chips, uint64_t count, const CollectiveInput& input);

}  // namespace trnsim::golden
