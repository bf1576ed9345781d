// The Scalar (activation) engine's queue (BRIEF section 2: 1.2 GHz): activation, out = func(in0 * scale + bias)
// with an optional sum along the free axes in the same pass. One lane per partition; an instruction costs
// max(64, N) Scalar cycles for N elements per partition, plus 64 when it writes the sum (docs/isa.md "Costs").
// Numerics: model/fp/engine_ops.h.
#pragma once

#include "model/core/tensor_op_engine.h"

namespace trnsim::model {

class ScalarEngine : public TensorOpEngine {
 public:
  ScalarEngine(const sc_core::sc_module_name& name, CoreControl& control);

 protected:
  std::optional<Fault> execute(const isa::Instruction& instr, uint32_t index) override;
};

}  // namespace trnsim::model
