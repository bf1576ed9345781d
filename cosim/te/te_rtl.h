// Cycle-level driver of the verilated Tensor Engine (rtl/te/trn_te.sv).
//
// Drives the engine's valid/ready streams from C++ one clock at a time, optionally with random input gaps and
// output backpressure, records when each command's beats were taken, and can write an FST waveform. This is the
// pin-level half of the TE transactor; the tests and `trnsim run` use it directly.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cosim/wave_window.h"
#include "firmware/isa/dtype.h"

namespace trnsim::cosim {

/// An engine-level failure: watchdog expiry, a raised err_o, a size the binary was not built with.
class TeRtlError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How the harness drives the engine.
struct TeRtlOptions {
  std::string wave_path;            ///< FST file to write; empty = no waveform
  uint64_t wave_from = 0;           ///< first cycle recorded (cycles since reset release; 0 also records the reset)
  uint64_t wave_to = UINT64_MAX;    ///< last cycle recorded, inclusive; the file stays open (and valid) after it
  std::string wave_scope;           ///< hierarchy to record, e.g. "trn_te.u_array.g_row[2]" (a leading "TOP." is
                                    ///< optional; several scopes separated by commas); empty = the whole engine
  double in_gap_prob = 0.0;         ///< per cycle, probability a source with data holds valid low
  double out_stall_prob = 0.0;      ///< per cycle, probability out_ready_i is low (backpressure)
  uint64_t seed = 1;                ///< seed of the gap/stall generator
  uint64_t watchdog_cycles = 20000; ///< cycles without any handshake before TeRtlError
  bool break_hold_rule = false;     ///< negative testing: withdraw a beat that was not taken (a protocol violation
                                    ///< the engine's hold assertions must catch), on every input stream
  unsigned break_hold_streams = 0;  ///< the same on some streams only: bit 0 cmd, bit 1 stat, bit 2 mov
  /// Negative testing of the engine's own output (flat-verilated sizes only; rtl/te/trn_te_force.vlt): result beat
  /// number `force_out_acc_beat` of a run (0 = its first) comes out with out_acc_o forced to the wrong PSUM
  /// write-back mode for as long as it is presented; -1 = off. The engine's a_out_acc_cmd assertion and the
  /// transactor's check of out_acc_o must catch it.
  long force_out_acc_beat = -1;
  /// With force_out_acc_beat: the beat comes out in the right mode and is forced to the wrong one from its second
  /// cycle on (it must be stalled, out_stall_prob = 1): out_acc_o changes while stalled, which a_out_acc_hold catches.
  bool force_out_acc_late = false;
};

/// One engine command with its stream data.
struct TeCommand {
  enum class Op : uint8_t { kLoadStationary = 0, kMultiplyMoving = 1 };
  Op op = Op::kLoadStationary;
  uint8_t dtype_code = 0;       ///< ISA dtype code (3-bit field); 4..7 are illegal (for error tests)
  int count = 0;                ///< K (LoadStationary, 1..rows, FP8 1..2 * rows) or N (MultiplyMoving, 1..512)
  /// The 16-bit lanes of every beat, beat after beat: LoadStationary ceil(K / P) beats x cols lanes (beat j = PE
  /// row j's stationary row), MultiplyMoving N beats x rows lanes (beat n = moving[:, n], lane r = PE row r). P
  /// (isa::te_pe_partitions of the dtype, 1 for an illegal code) is 1 for BF16/FP16, one partition per lane; 2 for
  /// FP8 (double-row, BRIEF section 3 rule 8): lane bits [7:0] = partition 2j, [15:8] = partition 2j + 1.
  std::vector<uint16_t> beats;
  bool accumulate = false;      ///< cmd_acc_i, the PSUM write-back mode of a MultiplyMoving's results: true = add
                                ///< to PSUM, false = overwrite (a LoadStationary with it set is illegal)
  /// MX dtypes (BRIEF section 3 rule 10): the E8M0 scale of every lane of every beat (stat_scale_i / mov_scale_i),
  /// the same shape as `beats`; both partitions of an FP8-style pair share one (they lie in one 32-partition
  /// block). Empty for the other dtypes (the ports are driven 0 and the engine ignores them).
  std::vector<uint8_t> scales = {};
};

/// A LoadStationary of stationary[k, m] (row-major narrow patterns) for an engine of `cols` columns: its beats in
/// the lane layout of TeCommand::beats (FP8 partitions paired), columns >= m and a missing last partner zero.
/// `scales` (MX dtypes only, else empty): the E8M0 code of every element, [k, m]; the two elements of a pair must
/// have the same code (std::invalid_argument otherwise).
TeCommand stationary_command(isa::Dtype dtype, int k, int m, int cols, const std::vector<uint16_t>& stationary,
                             const std::vector<uint8_t>& scales = {});
/// A MultiplyMoving of moving[k, n] for an engine of `rows` PE rows, in the same layout; partitions >= k zero.
/// `scales` as for stationary_command, [k, n].
TeCommand moving_command(isa::Dtype dtype, int k, int n, int rows, const std::vector<uint16_t>& moving,
                         bool accumulate, const std::vector<uint8_t>& scales = {});

/// Stat/mov beats of `c`: N for a MultiplyMoving; ceil(K / P) for a LoadStationary (TeCommand::beats).
inline int beat_count(const TeCommand& c) {
  if (c.op == TeCommand::Op::kMultiplyMoving) return c.count;
  const unsigned p = isa::te_pe_partitions(static_cast<isa::DataType>(c.dtype_code));
  return p == 2 ? (c.count + 1) / 2 : c.count;
}

// The waveform window, the TRNSIM_WAVE* environment hook (apply_wave_env<TeRtlError>, applied by TeRtl::create) and
// the window around a failing cycle (wave_window_around) are shared with the NeuronLink harness: cosim/wave_window.h.

/// When a command's handshakes happened, in cycles since reset release (cycle 0 is the first active edge).
struct TeCommandTiming {
  uint64_t cmd_cycle = 0;        ///< cycle of the cmd handshake
  uint64_t last_beat_cycle = 0;  ///< cycle of the last stat/mov handshake
  uint64_t last_out_cycle = 0;   ///< MultiplyMoving: cycle of the last result handshake (else = last_beat_cycle)
  /// Cycles the command occupied, cmd handshake to its last handshake inclusive.
  uint64_t latency() const { return last_out_cycle - cmd_cycle + 1; }
};

/// What a run() returns.
struct TeRunResult {
  std::vector<std::vector<uint32_t>> results;  ///< per MultiplyMoving, in order: N x cols FP32 bits (beat n, col c)
  std::vector<std::vector<uint8_t>> out_acc;   ///< per MultiplyMoving, in order: out_acc_o of each result beat (N)
  std::vector<TeCommandTiming> timing;         ///< per command, in order
  uint64_t cycles = 0;                         ///< clock cycles the run took, until the engine was idle again
};

/// A verilated Tensor Engine of one array size.
class TeRtl {
 public:
  /// Creates the engine for rows x cols. Sizes are compiled in: 4x4, 8x4, 8x8, 16x16, and 64x64 and 128x128 when
  /// built with -DTRNSIM_LARGE_TE=ON (verilated hierarchically, rtl/CMakeLists.txt). Throws TeRtlError for any
  /// other size, naming the sizes available.
  static std::unique_ptr<TeRtl> create(int rows, int cols, const TeRtlOptions& options = {});
  /// The sizes this binary was built with, as "RxC".
  static std::vector<std::string> built_sizes();
  /// Whether a waveform of the rows x cols engine shows each PE's registers (the flat-verilated sizes), or stops at
  /// the partition rows' ports (the hierarchically verilated 64x64 and 128x128; rtl/te/trn_te_hier.vlt).
  static bool traces_pe_registers(int rows, int cols);

  virtual ~TeRtl() = default;
  virtual int rows() const = 0;
  virtual int cols() const = 0;

  /// Runs the commands through the engine in order, pipelined as the engine allows, and returns the results.
  /// Throws TeRtlError on watchdog expiry, if the engine raises err_o (an illegal command field), or if a result
  /// beat's out_last_o or out_acc_o (PSUM write-back mode) does not match its MultiplyMoving.
  virtual TeRunResult run(const std::vector<TeCommand>& commands) = 0;

  /// Total cycles clocked since creation (after reset).
  virtual uint64_t cycle() const = 0;
  /// The engine's sticky err_o.
  virtual bool error_flag() const = 0;
  /// Drives only the clock for `cycles` cycles with all valids low (used to pad waveforms, test idling).
  virtual void idle(uint64_t cycles) = 0;

  /// One pass: result[M, N] = stationary[K, M]^T @ moving[K, N] with K <= rows (FP8: 2 * rows), M <= cols,
  /// N <= 512.
  /// `stationary` is [K, M] and `moving` is [K, N], row-major narrow patterns; returns [M, N] FP32 bits,
  /// row-major. Columns >= M and partitions >= K are padded with zeros. `timing`, if given, receives
  /// {load, multiply}. Throws std::invalid_argument on a shape outside the limits.
  std::vector<uint32_t> matmul(isa::Dtype dtype, int k, int m, int n, const std::vector<uint16_t>& stationary,
                               const std::vector<uint16_t>& moving, std::vector<TeCommandTiming>* timing = nullptr);
};

/// Writes a GTKWave save file that opens `fst_path` with the engine's signals grouped (control, streams, each PE
/// row, each column's de-skew and result) for a rows x cols engine. scripts/wave builds its layout from the file
/// itself instead (tools/regress/wave_layout.cpp), which also fits a --wave-scope recording.
void write_te_gtkw(const std::string& gtkw_path, const std::string& fst_path, int rows, int cols);

}  // namespace trnsim::cosim
