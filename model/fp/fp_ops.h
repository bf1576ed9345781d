// The chip model's floating-point operations (BRIEF section 3): what the TLM engines compute with.
//
// Written separately from firmware/golden/ (which checks this code) and from the RTL: bit-level integer
// implementations of the conversions, host FP32 arithmetic (SSE, RNE, no FTZ/DAZ, no FMA) for add/mul.
#pragma once

#include <cstdint>

#include "firmware/isa/dtype.h"

namespace trnsim::model::fp {

inline constexpr uint32_t kF32Qnan = 0x7FC00000u;

/// Narrow pattern (low 8 bits for FP8) -> FP32 bits, exact; NaN -> 0x7FC00000. An MX type (mxfp8e4m3, mxfp8e5m2,
/// mxfp4) stands for its element format: FP8 E4M3, FP8 E5M2, FP4 E2M1 (a 4-bit code, the low nibble).
uint32_t widen(isa::Dtype dt, uint16_t bits);

/// FP32 bits -> narrow pattern, single RNE rounding; FP8 saturating or OCP non-saturating overflow. E2M1 (mxfp4)
/// has no Inf or NaN: it always saturates, and NaN gives +0.
uint16_t narrow(isa::Dtype dt, uint32_t f32, bool saturate);

/// FP32 RNE add / multiply; NaN results canonical (0x7FC00000).
uint32_t add(uint32_t a, uint32_t b);
uint32_t mul(uint32_t a, uint32_t b);

}  // namespace trnsim::model::fp
