// The Tensor Engine's datapath behind one interface, so the chip model can use the functional TLM model
// (model/te/te_functional.h), the verilated RTL (cosim/te/te_rtl_compute.h) or both in lockstep.
//
// The datapath computes column sums only (BRIEF section 3 rules 1-3, 5); PSUM accumulation (rule 4) is the PSUM
// adder's job in the engine that calls it. The datapath carries each command's PSUM write-back mode with its result
// columns, as the RTL does (trn_te's cmd_acc_i -> out_acc_o), and the PSUM adder applies the mode the result came
// back with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "firmware/isa/dtype.h"
#include "firmware/isa/te_stream.h"

namespace trnsim::model {

/// PSUM write-back mode of a MultiplyMoving's result columns (BRIEF section 3 rule 4; the ISA's `accumulate` flag):
/// the PSUM adder overwrites the addressed FP32 entries with the column sums, or adds the sums to them.
enum class PsumWrite : uint8_t { kOverwrite = 0, kAccumulate = 1 };

/// "accumulate" or "overwrite", for messages.
inline const char* psum_write_name(PsumWrite w) { return w == PsumWrite::kAccumulate ? "accumulate" : "overwrite"; }

class TeCompute {
 public:
  virtual ~TeCompute() = default;
  virtual int rows() const = 0;  ///< array rows (PE rows; K per pass is max_k)
  /// Largest K of one pass with `dtype` operands: rows for BF16/FP16, 2 * rows for FP8 (BRIEF section 3 rule 8,
  /// double-row: each PE contracts two partitions per cycle).
  int max_k(isa::Dtype dtype) const { return int(isa::te_max_k(dtype, unsigned(rows()))); }
  virtual int cols() const = 0;  ///< array columns (M per pass)
  /// Backend name for reports ("tlm", "rtl", "lockstep").
  virtual std::string name() const = 0;
  /// True when the datapath computes with `dtype` operands: the narrow types here; the TLM model and the RTL
  /// engine also take the MX types (BRIEF section 3 rule 10).
  virtual bool supports(isa::Dtype dtype) const { return isa::is_narrow(dtype); }

  /// Loads stationary[k, m] (row-major narrow bit patterns, FP8 in the low 8 bits); 1 <= k <= max_k(dtype),
  /// 1 <= m <= cols. `scales`: for an MX dtype the E8M0 scale code of every element, [k, m] (rule 10), else
  /// empty. Returns the TE cycles the command occupies.
  virtual uint64_t load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary,
                                   const std::vector<uint8_t>& scales) = 0;
  /// The same for a narrow dtype (no scales).
  uint64_t load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary) {
    return load_stationary(dtype, k, m, stationary, {});
  }
  /// out[m, n] (row-major FP32 bits, m = the loaded M) = column sums of stationary^T @ moving[k, n], k equal to
  /// the loaded K, 1 <= n <= 512; `scales` as for load_stationary, [k, n]. Returns the TE cycles. `instr_index`
  /// is for error messages only.
  /// `psum_write`: on entry the instruction's PSUM write-back mode, sent with the command; on return the mode the
  /// result columns came back with (the RTL's out_acc_o), which is the one the PSUM adder applies.
  /// Throws std::runtime_error on an engine failure (RTL error, a result in the wrong mode, lockstep mismatch) with a
  /// readable message.
  virtual uint64_t multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                                   const std::vector<uint8_t>& scales, std::vector<uint32_t>& out,
                                   PsumWrite& psum_write, uint32_t instr_index) = 0;
  /// Of the last command: cycles from its handshake until the engine takes the next command (through its last
  /// stationary or moving beat), which the returned latency exceeds by the pipeline depth for a MultiplyMoving
  /// (TeTiming::issue_*; the RTL's measured on its pins).
  virtual uint64_t issue_cycles() const = 0;
  /// The same for a narrow dtype (no scales).
  uint64_t multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                           std::vector<uint32_t>& out, PsumWrite& psum_write, uint32_t instr_index) {
    return multiply_moving(dtype, k, n, moving, {}, out, psum_write, instr_index);
  }
  /// The same in overwrite mode (tests and benchmarks of the datapath alone).
  uint64_t multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                           std::vector<uint32_t>& out, uint32_t instr_index) {
    PsumWrite psum_write = PsumWrite::kOverwrite;
    return multiply_moving(dtype, k, n, moving, {}, out, psum_write, instr_index);
  }
};

/// Cycle cost of the engine's commands (docs/architecture.md, "Timing"; tests/te/te_timing_test.cpp asserts the same
/// formulas on the RTL). Latency, a command alone: LoadStationary(K) = 1 + ceil(K / P), one beat per PE row's P
/// partitions (P = 2 for FP8 and MX, rule 8; 1 for BF16/FP16); MultiplyMoving(N) = N + R + C + 2 for every dtype.
/// In a stream: the next command is taken `issue_*` cycles after a command's handshake. Shadow weights: a
/// LoadStationary's beat j writes PE row j once the swap of the previous stationary has passed that row, no earlier
/// than `swap_row_clear + j` cycles after the first moving beat of the MultiplyMoving that swapped it in, and its
/// last beat (which sets the rows past K inactive) once the swap has left the array, `swap_clear` cycles after it.
struct TeTiming {
  static uint64_t load_stationary(isa::Dtype dtype, int k) {
    return 1u + uint64_t(isa::te_sbuf_partitions(dtype, unsigned(k)));
  }
  static uint64_t multiply_moving(int rows, int cols, int n) { return uint64_t(n) + rows + cols + 2u; }
  static uint64_t issue_load(isa::Dtype dtype, int k) { return load_stationary(dtype, k); }
  static uint64_t issue_multiply(int n) { return 1u + uint64_t(n); }
  static uint64_t swap_clear(int rows, int cols) { return isa::te_swap_clear(unsigned(rows), unsigned(cols)); }
  static uint64_t swap_row_clear(int cols) { return isa::te_swap_row_clear(unsigned(cols)); }
};

}  // namespace trnsim::model
