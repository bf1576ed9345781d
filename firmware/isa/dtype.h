// Data-type codes of the trnsim ISA.
//
// The numeric codes are part of the hardware interface: the Tensor Engine RTL decodes the same values
// (rtl/fp/trn_fp_pkg.sv, `dtype_e`). Codes 4..7 of the 3-bit field are illegal.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace trnsim::isa {

/// Narrow input data types (BRIEF section 2/3). FP32 is the accumulation type and has no code here.
enum class Dtype : uint8_t {
  kBf16 = 0,     ///< bfloat16: 1-8-7, bias 127
  kFp16 = 1,     ///< IEEE 754 binary16: 1-5-10, bias 15
  kFp8E4M3 = 2,  ///< OCP OFP8 E4M3: 1-4-3, bias 7, no Inf, NaN = S.1111.111, max 448
  kFp8E5M2 = 3,  ///< OCP OFP8 E5M2: 1-5-2, bias 15, IEEE-style Inf/NaN, max 57344
};

inline constexpr Dtype kAllDtypes[] = {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8E4M3, Dtype::kFp8E5M2};

/// Width of the 3-bit dtype field in RTL ports and instructions.
inline constexpr unsigned kDtypeFieldBits = 3;

/// Canonical command-line / file name of a dtype: bf16, fp16, fp8e4m3, fp8e5m2.
constexpr std::string_view dtype_name(Dtype dt) {
  switch (dt) {
    case Dtype::kBf16: return "bf16";
    case Dtype::kFp16: return "fp16";
    case Dtype::kFp8E4M3: return "fp8e4m3";
    case Dtype::kFp8E5M2: return "fp8e5m2";
  }
  return "?";
}

/// Parses a dtype name as printed by dtype_name(); std::nullopt for anything else.
constexpr std::optional<Dtype> parse_dtype(std::string_view name) {
  for (Dtype dt : kAllDtypes) {
    if (dtype_name(dt) == name) return dt;
  }
  return std::nullopt;
}

/// Storage size of one element, in bits (16 or 8).
constexpr unsigned dtype_bits(Dtype dt) { return (dt == Dtype::kBf16 || dt == Dtype::kFp16) ? 16 : 8; }

}  // namespace trnsim::isa
