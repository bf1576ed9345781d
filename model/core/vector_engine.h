// The Vector engine's queue (BRIEF section 2: 128 lanes, 0.96 GHz): tensor_tensor, tensor_scalar, tensor_reduce,
// tensor_copy, memset, iota, select and transpose on [partition, free] operands in SBUF or PSUM. One lane per
// partition; an instruction costs max(64, N) Vector cycles for N elements per partition (docs/isa.md "Costs").
// Numerics: model/fp/engine_ops.h.
#pragma once

#include "model/core/tensor_op_engine.h"

namespace trnsim::model {

class VectorEngine : public TensorOpEngine {
 public:
  VectorEngine(const sc_core::sc_module_name& name, CoreControl& control);

 protected:
  std::optional<Fault> execute(const isa::Instruction& instr, uint32_t index) override;
};

}  // namespace trnsim::model
