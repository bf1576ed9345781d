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

/// narrow() of the real number f32 * 2^-shift (exact scaling, one rounding; NaN, Inf and zero as narrow()): the
/// MX element rounding of BRIEF section 3 rule 10 with shift = scale code - 127.
uint16_t narrow_scaled(isa::Dtype dt, uint32_t f32, int shift, bool saturate);

/// The E8M0 scale code of an MX block (BRIEF rule 10) of type `dt` whose largest |v| as an FP32 pattern (sign bit
/// clear; NaN and Inf compare above every finite value) is `max_abs`: 0xFF for NaN or Inf, 0 for zero, else
/// clamp(floor(log2 max) - emax + 127, 0, 254) with emax 8 (E4M3), 15 (E5M2), 2 (E2M1).
uint8_t mx_scale_code(isa::Dtype dt, uint32_t max_abs);

/// FP32 bits -> narrow pattern with stochastic rounding (BRIEF section 3 rule 9; docs/numerics.md "Stochastic
/// rounding"): the bits dropped below the target's last mantissa bit, as a fraction of it truncated to
/// isa::kSrBits (16) bits, are added to `random_bits`; a carry out of those 16 bits rounds the magnitude up.
/// Exact values, NaN, Inf, overflow and the FP8 saturation mode as narrow().
uint16_t narrow_stochastic(isa::Dtype dt, uint32_t f32, bool saturate, uint16_t random_bits);

/// Stochastic rounding's 16 random bits for the element `key` under `seed`: the top half of three rounds of
/// MurmurHash3's 32-bit finalizer fmix32 (A. Appleby, SMHasher) over seed, then the low and the high word of key.
uint16_t sr_bits(uint32_t seed, uint64_t key);

/// FP32 RNE add / multiply; NaN results canonical (0x7FC00000).
uint32_t add(uint32_t a, uint32_t b);
uint32_t mul(uint32_t a, uint32_t b);

}  // namespace trnsim::model::fp
