// The verilated RTL floating-point units (rtl/fp/) behind a plain C++ call interface.
//
// Wraps the combinational top `trn_fp_units`: each call drives the input ports, evaluates, and reads the output.
// Used by `trnsim fpcheck --rtl` and the exhaustive RTL numerics tests.
#pragma once

#include <cstdint>
#include <memory>

#include "firmware/isa/dtype.h"

namespace trnsim::cosim {

class FpRtl {
 public:
  FpRtl();
  ~FpRtl();
  FpRtl(const FpRtl&) = delete;
  FpRtl& operator=(const FpRtl&) = delete;

  /// trn_fp_widen: narrow pattern (low 8 bits for FP8) -> FP32 bits.
  uint32_t widen(isa::Dtype dt, uint16_t bits);
  /// trn_fp_narrow: FP32 bits -> narrow pattern; `saturate` selects the FP8 overflow mode.
  uint16_t narrow(isa::Dtype dt, uint32_t f32, bool saturate);
  /// trn_fp_narrow with stochastic rounding (BRIEF section 3 rule 9), its random bits from trn_fp_sr_rng for the
  /// element `key` under `seed`.
  uint16_t narrow_stochastic(isa::Dtype dt, uint32_t f32, bool saturate, uint32_t seed, uint64_t key);
  /// trn_fp32_add: a + b.
  uint32_t add(uint32_t a, uint32_t b);
  /// trn_fp32_mul: a * b.
  uint32_t mul(uint32_t a, uint32_t b);
  /// trn_fp32_mul with scale_i: a * b * 2^scale rounded once (the MX product; scale -512..511).
  uint32_t mul_scaled(uint32_t a, uint32_t b, int scale);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trnsim::cosim
