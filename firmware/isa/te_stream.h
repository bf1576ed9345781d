// The Tensor Engine's command timing in a stream, in TE cycles: the one statement of the rules that the chip model's
// te queue (model::TeTiming), the kernels' cost model (kernels::Pipeline::estimated_cycles) and the tests' timing
// simulator (tests/kernels/program_sim.cpp) follow. The RTL (rtl/te/trn_te.sv) is the reference; tests/te/
// te_timing_test.cpp checks it against the same rules (docs/architecture.md "Timing" and "In a stream").
#pragma once

#include <algorithm>

namespace trnsim::isa {

/// Cycles after the handshake of a swapping moving column (the first column of the first multiply_moving after a
/// load_stationary) at which the next load's beats may be taken (shadow weights): beat j, which writes PE row j, from
/// `te_swap_row_clear(cols) + j` on (the swap has passed every PE of row j); the last beat, which also marks the rows
/// past K inactive, from `te_swap_clear(rows, cols)` on (the swap has left the array).
constexpr unsigned te_swap_row_clear(unsigned cols) { return cols + 1u; }
constexpr unsigned te_swap_clear(unsigned rows, unsigned cols) { return rows + cols; }

/// The two sequencers of a rows x cols array over a stream of commands, each issued (handed to the engine) at a
/// cycle: a load_stationary is taken once the previous load's beats are done and the multiply that swaps the weights
/// before it has taken its first column, its beats follow (the rule above); a multiply_moving is taken once both
/// sequencers are idle, takes a column per cycle and has its last results in PSUM rows + cols + 1 cycles after its
/// last column. Times are TE cycles (double, as the simulators that use it count).
class TeStream {
 public:
  TeStream(unsigned rows, unsigned cols) : rows_(rows), cols_(cols) {}

  /// A load_stationary of `beats` beats (isa::te_sbuf_partitions) issued at `now`: the cycle its command is taken.
  double load(double now, unsigned beats) {
    const double taken = std::max({now, load_free_, swap_taken_});
    const double first = std::max(taken + 1.0, swap_row_clear_);
    load_free_ = std::max(first + double(beats) - 1.0, swap_clear_) + 1.0;
    swap_pending_ = true;
    return taken;
  }
  /// A multiply_moving of n columns issued at `now`: the cycle its command is taken; its last results are in PSUM
  /// at results().
  double multiply(double now, unsigned n) {
    const double taken = std::max({now, load_free_, stream_free_});
    if (swap_pending_) {  // its first column, a cycle after the command, swaps the loaded weights in
      swap_clear_ = taken + 1.0 + te_swap_clear(rows_, cols_);
      swap_row_clear_ = taken + 1.0 + te_swap_row_clear(cols_);
      swap_taken_ = taken + 2.0;
      swap_pending_ = false;
    }
    stream_free_ = taken + 1.0 + double(n);
    results_ = taken + double(n) + rows_ + cols_ + 2.0;
    return taken;
  }
  /// When the last multiply's last results are in PSUM.
  double results() const { return results_; }
  /// When every command so far is done: the loads' beats taken and the results in PSUM.
  double done() const { return std::max({load_free_, stream_free_, results_}); }

 private:
  unsigned rows_, cols_;
  double load_free_ = 0.0, stream_free_ = 0.0, results_ = 0.0;
  double swap_clear_ = 0.0, swap_row_clear_ = 0.0, swap_taken_ = 0.0;
  bool swap_pending_ = false;
};

}  // namespace trnsim::isa
