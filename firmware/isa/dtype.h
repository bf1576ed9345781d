// Data-type codes of the trnsim ISA: isa::DataType from spec/isa.json (generated spec/isa_spec.h), the same codes
// the Tensor Engine RTL decodes (rtl/fp/trn_fp_pkg.sv `dtype_e`, generated from the same file).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "spec/isa_spec.h"

namespace trnsim::isa {

/// The Tensor Engine's operand types are the narrow data types: one enum (spec/isa.json), Dtype its TE-side name.
/// A TE dtype is one of kAllDtypes (isa::validate rejects the others: BAD_FIELD dtype).
using Dtype = DataType;

inline constexpr const DataType (&kAllDtypes)[4] = kNarrowTypes;

/// Canonical command-line / file name of a dtype: bf16, fp16, fp8e4m3, fp8e5m2 (data_type_name).
constexpr std::string_view dtype_name(Dtype dt) { return data_type_name(dt); }

/// Parses a narrow dtype name as printed by dtype_name(); std::nullopt for anything else (fp32 included).
constexpr std::optional<Dtype> parse_dtype(std::string_view name) {
  for (Dtype dt : kAllDtypes) {
    if (dtype_name(dt) == name) return dt;
  }
  return std::nullopt;
}

/// Storage size of one element, in bits (16 or 8 for the narrow types).
constexpr unsigned dtype_bits(Dtype dt) { return 8 * data_type_bytes(dt); }

}  // namespace trnsim::isa
