// The chip model's floating-point operations (BRIEF section 3): what the TLM engines compute with.
//
// Written separately from firmware/golden/ (which checks this code) and from the RTL: bit-level integer
// implementations of the conversions, host FP32 arithmetic (SSE, RNE, no FTZ/DAZ, no FMA) for add/mul.
#pragma once

#include <cstdint>

#include "firmware/isa/dtype.h"

namespace trnsim::model::fp {

inline constexpr uint32_t kF32Qnan = 0x7FC00000u;

/// Narrow pattern (low 8 bits for FP8) -> FP32 bits, exact; NaN -> 0x7FC00000.
uint32_t widen(isa::Dtype dt, uint16_t bits);

/// FP32 bits -> narrow pattern, single RNE rounding; FP8 saturating or OCP non-saturating overflow.
uint16_t narrow(isa::Dtype dt, uint32_t f32, bool saturate);

/// FP32 RNE add / multiply; NaN results canonical (0x7FC00000).
uint32_t add(uint32_t a, uint32_t b);
uint32_t mul(uint32_t a, uint32_t b);

}  // namespace trnsim::model::fp
