// The Tensor Engine's queue: load_stationary and multiply_moving read SBUF over the bus, run on a TeCompute
// backend (TLM, RTL or lockstep) and write PSUM through the PSUM adder (BRIEF section 3 rule 4).
//
// Timing in a stream (docs/architecture.md "Timing", TeTiming; the RTL's two sequencers): an instruction retires
// when the engine takes its command. A load_stationary is taken once the previous load is done and the multiply
// that swaps the weights before it has taken its first column; its beats follow, one per PE row (each once that
// swap has passed the row, the last once it has left the array), while earlier multiplies stream. A
// multiply_moving is taken once both sequencers are idle, and its results leave the pipeline ROWS + COLS + 1
// cycles after its last column. halt waits for all of it (drain); a
// sem_signal adds to its semaphore when all of it is done (completion_time) while the queue goes on issuing. The
// datapath computes, and the PSUM adder writes, when the command is taken: nothing can observe them earlier, since
// every reader waits for a semaphore that lands only then.
#pragma once

#include <memory>

#include "model/core/queue_engine.h"
#include "model/te/te_compute.h"

namespace trnsim::model {

class TensorEngine : public QueueEngine {
 public:
  /// `compute` is the datapath; its rows/cols must equal the config's array size.
  TensorEngine(const sc_core::sc_module_name& name, CoreControl& control, std::unique_ptr<TeCompute> compute);

  TeCompute& compute() { return *compute_; }
  /// Multiply-accumulates issued (useful MACs: K x M x N per multiply_moving).
  uint64_t macs() const { return macs_; }

 protected:
  std::optional<Fault> execute(const isa::Instruction& instr, uint32_t index) override;
  void on_start() override;
  /// Waits until the last load's beats are taken and the last multiply_moving's results are in PSUM (before halt).
  void drain() override;
  /// When drain() would end: a sem_signal adds then, and the queue goes on issuing.
  std::optional<sc_core::sc_time> completion_time() const override;

 private:
  std::optional<Fault> load_stationary(const isa::TeFields& f);
  std::optional<Fault> multiply_moving(const isa::TeFields& f, uint32_t index);
  /// Checks and reads [k, elems] narrow elements from SBUF partitions starting at `sbuf_addr`.
  std::optional<Fault> read_sbuf_rows(uint64_t sbuf_addr, int k, int elems, isa::Dtype dtype,
                                      std::vector<uint16_t>& out);
  /// For an MX dtype, checks and reads the E8M0 scales at `scale_addr` (firmware/isa/dtype.h "MX scales") as one
  /// code per element, [k, elems]; for the others `out` is left empty. Also faults (ERR_BAD_FIELD dtype) when the
  /// datapath has no such dtype (an MX dtype on the RTL engine).
  std::optional<Fault> read_sbuf_scales(const isa::TeFields& f, int elems, std::vector<uint8_t>& out);

  std::unique_ptr<TeCompute> compute_;
  bool loaded_ = false;
  isa::Dtype loaded_dtype_ = isa::Dtype::kBf16;
  int loaded_k_ = 0, loaded_m_ = 0;
  uint64_t macs_ = 0;
  /// Waits until `t`, counting the time as the TE's (the queue is held by the engine).
  void busy_until(const sc_core::sc_time& t);
  /// When the last load's beats are taken and the last multiply's results are in PSUM.
  sc_core::sc_time done_at() const;
  /// Whole TE cycles from now until `t` (0 when `t` has passed).
  uint64_t cycles_until(const sc_core::sc_time& t) const;

  sc_core::sc_time load_free_at_;       ///< the load sequencer is idle: the last stationary beat was taken
  sc_core::sc_time stream_free_at_;     ///< the stream sequencer is idle: the last moving column was taken
  sc_core::sc_time results_at_;         ///< the last multiply_moving's last result column is in PSUM
  sc_core::sc_time swap_clear_at_;      ///< a load's last beat may be taken from then on (the swap left the array)
  sc_core::sc_time swap_row_clear_at_;  ///< its first (PE row 0) may be taken from then on (the swap passed row 0)
  sc_core::sc_time swap_taken_at_;      ///< a load may be taken from then on (the swapping multiply took its column)
  bool swap_pending_ = false;           ///< a load_stationary since the last multiply_moving: the next one swaps
};

}  // namespace trnsim::model
