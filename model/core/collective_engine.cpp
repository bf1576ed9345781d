#include "model/core/collective_engine.h"

#include <fmt/core.h>

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
  if (refuse_chip_ >= 0) {
    return Fault{regs::ERR_CC_UNSUPPORTED, uint32_t(isa::field_id("opcode")),
                 fmt::format("{} on core {} of chip {}: a chip's collectives are issued by its core 0 (hand it the data "
                             "through HBM and sem_signal core=0)",
                             *isa::opcode_name(instr.op), control_.core_index(), refuse_chip_)};
  }
  if (hub_) return hub_->execute(chip_, index, instr);
  // A 1-chip device: the hub's checks, then nothing to move.
  (void)index;
  return collective::check_cc(instr, 0, 1, control_.config().hbm_bytes);
}

}  // namespace trnsim::model
