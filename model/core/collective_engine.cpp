#include "model/core/collective_engine.h"

#include "model/collective/collective_hub.h"

namespace trnsim::model {

CollectiveEngine::CollectiveEngine(const sc_core::sc_module_name& name, CoreControl& control)
    : QueueEngine(name, isa::Engine::kCc, control) {}

void CollectiveEngine::on_start() {
  if (hub_) hub_->on_start(chip_);
}

void CollectiveEngine::on_halt() {
  if (hub_) hub_->on_halt(chip_);
}

std::optional<Fault> CollectiveEngine::execute(const isa::Instruction& instr, uint32_t index) {
  if (hub_) return hub_->execute(chip_, index, instr);
  // A 1-chip device: the hub's checks, then nothing to move.
  (void)index;
  return collective::check_cc(instr, 0, 1, control_.config().hbm_bytes);
}

}  // namespace trnsim::model
