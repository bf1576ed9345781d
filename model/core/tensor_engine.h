// The Tensor Engine's queue: load_stationary and multiply_moving read SBUF over the bus, run on a TeCompute
// backend (TLM, RTL or lockstep) and write PSUM through the PSUM adder (BRIEF section 3 rule 4).
//
// Timing in a stream (docs/architecture.md "Timing", TeTiming): the queue issues the next instruction as soon as the
// engine takes its command (issue_cycles), so a MultiplyMoving's pipeline drain overlaps what follows; a
// load_stationary's first beat waits until the swap of the previous weights has left the array (shadow weights);
// sem_signal and halt wait for the last results (drain). The PSUM adder's writes are made when the instruction is
// issued: nothing can observe them earlier, since every reader waits for a semaphore that the drain delays.
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
  /// Waits until the last multiply_moving's results are in PSUM (before sem_signal and halt).
  void drain() override;

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
  sc_core::sc_time results_at_;     ///< the last multiply_moving's last result column is in PSUM
  sc_core::sc_time swap_clear_at_;  ///< a stationary beat may be taken from then on (the last swap left the array)
  bool swap_pending_ = false;       ///< a load_stationary since the last multiply_moving: the next one swaps
};

}  // namespace trnsim::model
