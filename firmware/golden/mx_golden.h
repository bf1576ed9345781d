// Golden host OCP MX (microscaling) quantization, BRIEF section 3 rule 10.
//
// Independent of the model and the RTL. Source: OCP Microscaling Formats (MX) Specification v1.0, section 5 (block
// size 32, E8M0 scale 2^(code - 127) with 0xFF = NaN, element formats) and section 6.3 (the conversion from FP32:
// shared exponent floor(log2(max |v|)) - emax, element rounding with saturation). The element rounding is
// golden::narrow_scaled (fp_golden.h).
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/isa/dtype.h"

namespace trnsim::golden {

/// emax of an MX type's element format: the exponent of its largest normal power of two (OCP MX v1.0 table 1):
/// 8 for MXFP8 E4M3, 15 for MXFP8 E5M2, 2 for MXFP4 (E2M1). Throws std::invalid_argument for a non-MX dtype.
int mx_emax(isa::Dtype mx);

/// One MX operand: elements [K, F] and their scales [ceil(K / 32), F], both row-major.
struct MxTensor {
  std::vector<uint16_t> elements;  ///< element codes (low 8 bits; low 4 for MXFP4)
  std::vector<uint8_t> scales;     ///< E8M0 codes: block b of column f at b * F + f
};

/// Quantizes FP32 bits [K, F] (row-major) to `mx` along K (the partition dimension), block by block of 32
/// partitions per column, per rule 10: a block holding a NaN or an Inf gets code 0xFF and elements 0; an all-zero
/// block code 0 and elements +-0 (sign kept); otherwise code = clamp(floor(log2 max|v|) - emax + 127, 0, 254) and
/// each element v / 2^(code - 127) rounded once, nearest-even, saturating. A last block shorter than 32 behaves as
/// if padded with zeros. Throws std::invalid_argument for a non-MX dtype or a size mismatch.
MxTensor quantize_mx(isa::Dtype mx, int k, int f, const std::vector<uint32_t>& values);

/// The real value of element `code` of `mx` under scale `scale` (E8M0): element * 2^(scale - 127), exact in
/// double; NaN for scale 0xFF or a NaN element, +-Inf for an infinite (E5M2) element.
double mx_value(isa::Dtype mx, uint16_t code, uint8_t scale);

}  // namespace trnsim::golden
