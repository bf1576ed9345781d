// Functional + cycle-timed TLM model of the Tensor Engine datapath.
//
// Bit-exact with the RTL and the golden GEMM: inputs widen exactly to FP32 (model/fp), and each product and sum is
// one host binary32 operation (SSE: round to nearest even, gradual underflow, no FMA since the project builds with
// -ffp-contract=off), added in partition order 0..K-1 from +0.0; NaN results become 0x7FC00000. The loop order
// keeps that per-column order while letting the compiler vectorise over the moving free dimension.
#pragma once

#include "model/te/te_compute.h"

namespace trnsim::model {

class TeFunctional : public TeCompute {
 public:
  TeFunctional(int rows, int cols) : rows_(rows), cols_(cols) {}
  int rows() const override { return rows_; }
  int cols() const override { return cols_; }
  std::string name() const override { return "tlm"; }
  uint64_t load_stationary(isa::Dtype dtype, int k, int m, const std::vector<uint16_t>& stationary) override;
  uint64_t multiply_moving(isa::Dtype dtype, int k, int n, const std::vector<uint16_t>& moving,
                           std::vector<uint32_t>& out, uint32_t instr_index) override;

 private:
  int rows_, cols_;
  int k_ = 0, m_ = 0;
  std::vector<float> weights_;  ///< [k, m], widened
};

}  // namespace trnsim::model
