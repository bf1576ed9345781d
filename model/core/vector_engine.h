// The Vector engine's queue (BRIEF section 2: 128 lanes, 0.96 GHz): tensor_tensor, tensor_scalar, tensor_reduce,
// tensor_copy, memset, iota, select, transpose and quantize_mx on [partition, free] operands in SBUF or PSUM. One lane per
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

 private:
  /// quantize_mx (BRIEF section 3 rule 10; docs/isa.md): in0 [K, F] -> elements and scales in SBUF. Costs
  /// 2 * max(64, F) cycles (one pass for the block maxima, one for the elements).
  std::optional<Fault> quantize_mx(const isa::VecFields& v);
};

}  // namespace trnsim::model
