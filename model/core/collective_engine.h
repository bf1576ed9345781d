// The collective engine: queue 4 ("cc") of a NeuronCore. It executes all_reduce, all_gather, reduce_scatter, send
// and recv (format "cc", docs/isa.md) by handing them to the system's CollectiveHub, which matches them with the
// other chips' and completes them after the collective's simulated time (docs/neuronlink.md "Collective instructions").
// nop, halt and the semaphores run as on every queue, so compute queues and the cc queue synchronise as usual.
#pragma once

#include "model/core/queue_engine.h"

namespace trnsim::model {

namespace collective {
class CollectiveHub;
}

class CollectiveEngine : public QueueEngine {
 public:
  CollectiveEngine(const sc_core::sc_module_name& name, CoreControl& control);

  /// Joins chip `chip` of a multi-chip system (call during elaboration). Without a hub the chip is a 1-chip
  /// system: a collective checks its buffer and completes after issue, leaving HBM as it is (the sum over one chip
  /// is the chip's own data, the gather of one block the whole buffer); send/recv fault (no peer).
  void attach(collective::CollectiveHub* hub, int chip) {
    hub_ = hub;
    chip_ = chip;
  }
  int chip() const { return chip_; }
  /// A core other than core 0 of a chip in a multi-chip system: the chip's collectives are its core 0's
  /// (docs/neuronlink.md "The cores of a chip"), so every collective this engine meets stops the core with
  /// CC_UNSUPPORTED, field opcode. The other cores take part by handing core 0 their data through HBM and a
  /// semaphore (sem_signal core=0).
  void refuse_collectives(int chip) { refuse_chip_ = chip; }

 protected:
  std::optional<Fault> execute(const isa::Instruction& instr, uint32_t index) override;
  void on_start() override;
  void on_halt() override;

 private:
  collective::CollectiveHub* hub_ = nullptr;
  int chip_ = 0;
  int refuse_chip_ = -1;
};

}  // namespace trnsim::model
