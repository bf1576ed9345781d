// The Sync/DMA queue and its DMA engines (BRIEF section 2: 16 per NeuronCore, ~23 B/ns each, ~1.3 us start
// latency). dma_copy and psum_copy are checked when issued, then run asynchronously on the earliest free engine:
// the data moves when the copy completes, start latency + bytes / bandwidth after it started, or later when the
// chip's HBM, shared by every core, cannot carry its HBM bytes at that pace (model/mem/hbm_model.h). The queue only
// stalls when every engine is busy; sem_signal and halt wait for all copies the queue issued before them. A copy with
// a completion semaphore (done_sem) adds 1 to it when its data has moved (docs/isa.md "Execution").
#pragma once

#include <vector>

#include "model/core/host_port.h"
#include "model/core/queue_engine.h"
#include "model/mem/hbm_model.h"

namespace trnsim::model {

class DmaEngine : public QueueEngine {
 public:
  DmaEngine(const sc_core::sc_module_name& name, CoreControl& control);

  /// Bytes one copy may move (count product x the wider element's bytes); more faults ERR_BAD_FIELD naming count.
  /// Zero strides make such copies legal in range (a few bytes repeated), and their byte count would otherwise wrap.
  static constexpr uint64_t kMaxCopyBytes = uint64_t{1} << 50;

  /// Bytes moved by completed copies (the larger of the read and written sizes of each).
  uint64_t bytes_moved() const { return bytes_moved_; }
  /// Per DMA engine: time spent on copies since the device was created (start latency included).
  const std::vector<sc_core::sc_time>& engine_busy() const { return engine_busy_; }
  /// Per DMA engine: copies completed.
  const std::vector<uint64_t>& engine_copies() const { return engine_copies_; }
  /// Copies in flight: each is a SystemC process with a stack of its own until it lands or, abandoned by a soft
  /// reset or a doorbell, wakes and ends (at once, not at its end time).
  int live_copies() const { return live_copies_; }
  /// The port copies of space host go through (for the reason of a failed access); set by the NeuronCore.
  void use_host_port(const HostPort* port) { host_port_ = port; }
  /// The chip's HBM bandwidth model every copy that reads or writes HBM books (not owned); set by the NeuronCore.
  /// Null: HBM has no bandwidth limit of its own.
  void use_hbm(HbmModel* hbm) { hbm_ = hbm; }

 protected:
  std::optional<Fault> execute(const isa::Instruction& instr, uint32_t index) override;
  void drain() override;
  void on_start() override;

 private:
  std::optional<Fault> check_side(isa::MemSpace space, uint64_t addr, const std::array<int32_t, isa::kApDims>& stride,
                                  const isa::CopyFields& c, unsigned elem_bytes, bool is_src) const;
  /// Moves the data of one copy (runs at its completion time); `who` names it to the checker (null: no checker).
  /// A bus access that fails (host memory that cannot be reached) ends the copy with its fault.
  std::optional<Fault> perform(const isa::CopyFields& c, const AccessChecker::Actor* who);
  /// The fault of a failed bus access of copy `c` at `device_addr` (its source side when `is_src`).
  Fault bus_fault(const isa::CopyFields& c, bool is_src, uint64_t device_addr) const;
  uint64_t space_base(isa::MemSpace s) const;
  uint64_t space_size(isa::MemSpace s) const;

  std::vector<sc_core::sc_time> engine_free_at_;
  int outstanding_ = 0;
  int live_copies_ = 0;
  sc_core::sc_event copy_done_;
  sc_core::sc_event engine_freed_;  ///< a copy whose end the HBM decided has ended
  uint64_t bytes_moved_ = 0;
  std::vector<sc_core::sc_time> engine_busy_;
  std::vector<uint64_t> engine_copies_;
  const HostPort* host_port_ = nullptr;
  HbmModel* hbm_ = nullptr;
};

}  // namespace trnsim::model
