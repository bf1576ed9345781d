// Collective tests' common steps: fill every chip with the golden input pattern, run a collective, and compare
// every chip's defined result with the golden host collective (firmware/golden/collective_golden.h).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "firmware/golden/collective_golden.h"
#include "model/collective/collective_system.h"

namespace trnsim::model::collective::test {

constexpr uint64_t kSeed = 7;

inline golden::CollectiveDtype gold_dtype(ElemType t) {
  return t == ElemType::kFp32 ? golden::CollectiveDtype::kFp32 : golden::CollectiveDtype::kBf16;
}

inline golden::CollectiveAlgorithm gold_algo(const CollectiveSystem& sys, Algorithm a) {
  golden::CollectiveAlgorithm g;
  g.rhd = a == Algorithm::kRhd;
  // The machine as configured (sizes, link bandwidths); the golden plans the flows itself (isa::ring_plan).
  g.dims = sys.topology().dims();
  for (int d = 0; d < sys.topology().num_dims(); ++d) g.link_gbytes_per_s.push_back(sys.topology().gbytes_per_s(d));
  g.pods = sys.topology().pods();
  return g;
}

/// Chip r element j = golden::collective_test_value(seed, r, j): distinct per chip and element.
inline void fill(CollectiveSystem& sys, ElemType t, uint64_t count, uint64_t addr) {
  const uint64_t es = elem_bytes(t);
  std::vector<uint8_t> buf(count * es);
  for (int r = 0; r < sys.chips(); ++r) {
    for (uint64_t j = 0; j < count; ++j) {
      const uint32_t v = golden::collective_test_value(gold_dtype(t), kSeed, r, j);
      std::memcpy(&buf[j * es], &v, es);
    }
    sys.hbm(r).write(addr, buf.data(), buf.size());
  }
}

inline uint32_t element(CollectiveSystem& sys, ElemType t, int chip, uint64_t addr, uint64_t j) {
  uint32_t v = 0;
  sys.hbm(chip).read(addr + j * elem_bytes(t), &v, elem_bytes(t));
  return v;
}

/// Fills, runs `op`, and counts the elements (over all chips' defined results) that differ from the golden; the
/// first few are reported with ADD_FAILURE when `report` is set. `res` gets the run's result.
inline uint64_t run_and_count_mismatches(CollectiveSystem& sys, Op op, Algorithm algo, ElemType t, uint64_t count,
                                         Result* res = nullptr, bool report = true) {
  const uint64_t addr = 4096;
  fill(sys, t, count, addr);
  const Result r = sys.run({op, algo, t, count, addr});
  if (res) *res = r;
  const auto input = [&](int rank, uint64_t j) { return golden::collective_test_value(gold_dtype(t), kSeed, rank, j); };
  const std::vector<uint32_t> want =
      op == Op::kAllGather ? golden::collective_gathered(sys.chips(), count, input)
                           : golden::collective_reduced(gold_algo(sys, algo), gold_dtype(t), count, input);
  const int n = sys.chips();
  uint64_t bad = 0;
  for (int rank = 0; rank < n; ++rank) {
    const uint64_t lo = op == Op::kReduceScatter ? golden::collective_block_begin(count, n, rank) : 0;
    const uint64_t hi = op == Op::kReduceScatter ? golden::collective_block_begin(count, n, rank + 1) : count;
    for (uint64_t j = lo; j < hi; ++j) {
      const uint32_t got = element(sys, t, rank, addr, j);
      if (got != want[j] && bad++ < 5 && report) {
        ADD_FAILURE() << op_name(op) << " " << algorithm_name(algo) << " chip " << rank << " element " << j
                      << ": got 0x" << std::hex << got << ", golden 0x" << want[j];
      }
    }
  }
  return bad;
}

/// Runs `op` and expects every chip's defined result to equal the golden one bit for bit.
inline Result run_and_check(CollectiveSystem& sys, Op op, Algorithm algo, ElemType t, uint64_t count) {
  Result r;
  EXPECT_EQ(run_and_count_mismatches(sys, op, algo, t, count, &r), 0u);
  return r;
}

}  // namespace trnsim::model::collective::test
