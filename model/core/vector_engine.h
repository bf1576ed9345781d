// The Vector engine's queue (BRIEF section 2: 128 lanes, 0.96 GHz): tensor_tensor, tensor_scalar, tensor_reduce,
// tensor_copy, memset, iota, select, transpose and quantize_mx on [partition, free] operands in SBUF or PSUM. One lane per
// partition, each taking the configuration's elements per cycle (ChipConfig::vector_elems_per_cycle, _16); an
// instruction costs isa::vector_cycles: max(64, ceil(N / w)) Vector cycles for N elements per partition (docs/isa.md
// "Costs").
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
  /// quantize_mx (BRIEF section 3 rule 10; docs/isa.md): in0 [K, F] -> elements and scales in SBUF. Costs two
  /// passes over F (the block maxima, then the elements; isa::vector_cycles).
  std::optional<Fault> quantize_mx(const isa::Instruction& instr);

  const isa::VecDataPath path_;  ///< lanes and elements per cycle (ChipConfig)
};

}  // namespace trnsim::model
