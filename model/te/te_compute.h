// The Tensor Engine's datapath behind one interface, so the chip model can use the functional TLM model
// (model/te/te_functional.h), the verilated RTL (cosim/te/te_rtl_compute.h) or both in lockstep.
//
// The datapath computes column sums only (BRIEF section 3 rules 1-3, 5); PSUM accumulation (rule 4) is the PSUM
// adder's job in the engine that calls it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "firmware/isa/dtype.h"

namespace trnsim::model {

class TeCompute {
 public:
  virtual ~TeCompute() = default;
  virtual int rows() const = 0;  ///< array rows (partitions, K per pass)
  virtual int cols() const = 0;  ///< array columns (M per pass)
  /// Backend name for reports ("tlm", "rtl", "lockstep").
  virtual std::string name() const = 0;

  /// Loads stationary[k, m] (row-major narrow bit patterns, FP8 in the low 8 bits); 1 <= k <= rows,
  /// 1 <= m <= cols. Returns the TE cycles the command occupies.
  virtual uint64_t load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary) = 0;
  /// out[m, n] (row-major FP32 bits, m = the loaded M) = column sums of stationary^T @ moving[k, n], k equal to
  /// the loaded K, 1 <= n <= 512. Returns the TE cycles. `instr_index` is for error messages only.
  /// Throws std::runtime_error on an engine failure (RTL error, lockstep mismatch) with a readable message.
  virtual uint64_t multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                                   std::vector<uint32_t>& out, uint32_t instr_index) = 0;
};

/// Cycle cost of the engine's commands, issued one at a time (docs/architecture.md, "Timing"; the RTL tests
/// assert the same formulas): LoadStationary(K) = 1 + K; MultiplyMoving(N) = N + R + C + 2.
struct TeTiming {
  static uint64_t load_stationary(int k) { return 1u + uint64_t(k); }
  static uint64_t multiply_moving(int rows, int cols, int n) { return uint64_t(n) + rows + cols + 2u; }
};

}  // namespace trnsim::model
