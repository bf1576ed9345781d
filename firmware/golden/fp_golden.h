// Golden host floating-point conversions and FP32 arithmetic (numerics contract, BRIEF section 3).
//
// Written independently of the model and the RTL: nothing here includes model/, cosim/ or rtl/. The conversions
// are defined by value, not by bit tricks: a narrow pattern widens to the real number it encodes, and FP32 narrows
// to the nearest representable value of the target format (ties to the even significand), found by searching the
// format's sorted table of values. Sources: IEEE 754-2019 section 4.3.1 (roundTiesToEven) and 7.4 (overflow);
// OCP 8-bit Floating Point Specification (OFP8) rev 1.0, section 5 (E4M3/E5M2 encodings, saturation); OCP
// Microscaling Formats (MX) v1.0, section 5.3 (the MX element formats: FP8 E4M3/E5M2 as OFP8, FP4 E2M1 with bias 1,
// values 0, 0.5, 1, 1.5, 2, 3, 4, 6, no Inf or NaN).
//
// Every function taking a dtype also takes an MX type (mxfp8e4m3, mxfp8e5m2, mxfp4) and then works on its element
// format; an MXFP4 element is a 4-bit code (the low nibble).
#pragma once

#include <cstdint>

#include "firmware/isa/dtype.h"

namespace trnsim::golden {

/// Canonical quiet NaNs written for any NaN result (BRIEF section 3 rule 5).
inline constexpr uint32_t kF32CanonicalNan = 0x7FC00000u;
inline constexpr uint16_t kBf16CanonicalNan = 0x7FC0u;
inline constexpr uint16_t kFp16CanonicalNan = 0x7E00u;
inline constexpr uint16_t kE4M3CanonicalNan = 0x7Fu;
inline constexpr uint16_t kE5M2CanonicalNan = 0x7Eu;

/// Canonical NaN pattern of a narrow dtype (low 8 bits for FP8). Throws std::invalid_argument for MXFP4 (E2M1
/// has no NaN) and FP32.
uint16_t canonical_nan(isa::Dtype dt);

/// True when `bits` (low 8 bits for FP8) encodes a NaN in `dt`.
bool is_nan(isa::Dtype dt, uint16_t bits);

/// Widens one narrow element to FP32 bits. Exact for every finite value (subnormals kept, sign of zero kept);
/// +-Inf stays +-Inf; any NaN becomes kF32CanonicalNan. FP8 patterns use the low 8 bits (upper bits ignored).
uint32_t widen_to_f32(isa::Dtype dt, uint16_t bits);

/// Narrows FP32 bits to `dt` with one round-to-nearest-even step (BRIEF rule 6).
/// Overflow (a value whose rounding reaches past the largest finite value): BF16/FP16 -> +-Inf; FP8 with
/// `saturate` -> +-max finite (also for +-Inf inputs), without -> E4M3 NaN (0x7F) / E5M2 +-Inf.
/// NaN -> canonical_nan(dt). Result in the low 8 bits for FP8. MXFP4 elements (E2M1, no Inf, no NaN) always
/// saturate, and NaN gives +0 (rule 10 never rounds a NaN to an element: a block holding one gets elements 0).
uint16_t narrow_from_f32(isa::Dtype dt, uint32_t f32, bool saturate);

/// Rounds the real number f32 * 2^-shift once to `dt` (as narrow_from_f32; the scaling is exact, so a subnormal
/// result is rounded once, not twice): the MX element rounding of BRIEF rule 10 with shift = scale code - 127.
/// Throws std::invalid_argument for |shift| > 300.
uint16_t narrow_scaled(isa::Dtype dt, uint32_t f32, int shift, bool saturate);

/// The isa::kSrBits (16) random bits of one stochastically rounded cast (BRIEF section 3 rule 9; docs/numerics.md
/// "Stochastic rounding"): a counter-based generator with no running state,
///   h = fmix32(fmix32(fmix32(seed) ^ lo32(key)) ^ hi32(key)), bits = h >> 16,
/// fmix32 being MurmurHash3's 32-bit finalizer (A. Appleby, SMHasher, src/MurmurHash3.cpp: x ^= x >> 16;
/// x *= 0x85EBCA6B; x ^= x >> 13; x *= 0xC2B2AE35; x ^= x >> 16). `key` names the element: the device uses its
/// destination (space << 56 | byte address), fpcheck the vector's index.
uint16_t sr_random_bits(uint32_t seed, uint64_t key);

/// Narrows FP32 bits to `dt` with stochastic rounding (rule 9) using the 16 random bits `r`. A value of `dt` is
/// returned as it is. Otherwise |x| lies strictly between adjacent magnitudes lo < hi of `dt` (hi may be the one
/// past the largest finite value), f = (|x| - lo) / (hi - lo) is truncated to F = floor(f * 2^16), and the result
/// is hi (sign kept) when F + r >= 2^16, else lo: hi with probability F / 2^16, within 2^-16 of f. A hi past the
/// largest finite value, an |x| at or past that one, +-Inf and NaN give rule 6's results (narrow_from_f32 with
/// `saturate`).
uint16_t narrow_stochastic(isa::Dtype dt, uint32_t f32, bool saturate, uint16_t r);

/// FP32 a + b with RNE, gradual underflow; any NaN result is kF32CanonicalNan.
uint32_t f32_add(uint32_t a, uint32_t b);

/// FP32 a * b with RNE, gradual underflow; any NaN result is kF32CanonicalNan.
uint32_t f32_mul(uint32_t a, uint32_t b);

/// FP32 a * b * 2^scale rounded once (RNE, gradual underflow, overflow to +-Inf; NaN canonical): the MX product
/// of BRIEF section 3 rule 10 with scale = ca + cb - 254. The product and the scaling are exact in double (48
/// significant bits; magnitudes within 2^-900 .. 2^860 for |scale| <= 600), and the conversion to float rounds
/// once. Throws std::invalid_argument for |scale| > 600.
uint32_t f32_mul_scaled(uint32_t a, uint32_t b, int scale);

}  // namespace trnsim::golden
