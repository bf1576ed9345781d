// Data-type codes of the trnsim ISA: isa::DataType from spec/isa.json (generated spec/isa_spec.h), the same codes
// the Tensor Engine RTL decodes (rtl/fp/trn_fp_pkg.sv `dtype_e`, generated from the same file).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "spec/isa_spec.h"

namespace trnsim::isa {

/// The Tensor Engine's operand types: the narrow data types and the MX (block-scaled) types, one enum
/// (spec/isa.json), Dtype its TE-side name. kAllDtypes are the narrow ones, which every backend (RTL included)
/// implements; kMxTypes (BRIEF section 3 rule 10) add one E8M0 scale per block of kMxBlockSize partitions and run
/// on the TLM engine. isa::validate rejects any other dtype of a TE instruction (BAD_FIELD dtype).
using Dtype = DataType;

inline constexpr const DataType (&kAllDtypes)[4] = kNarrowTypes;

/// True for a Tensor Engine operand type: a narrow type or an MX type.
constexpr bool is_te_dtype(Dtype dt) { return is_narrow(dt) || is_mx(dt); }

/// Canonical command-line / file name of a dtype: bf16, fp16, fp8e4m3, fp8e5m2, mxfp8e4m3, mxfp8e5m2, mxfp4.
constexpr std::string_view dtype_name(Dtype dt) { return data_type_name(dt); }

/// Parses a TE dtype name as printed by dtype_name(); std::nullopt for anything else (fp32 included).
constexpr std::optional<Dtype> parse_dtype(std::string_view name) {
  for (Dtype dt : kAllDtypes) {
    if (dtype_name(dt) == name) return dt;
  }
  for (Dtype dt : kMxTypes) {
    if (dtype_name(dt) == name) return dt;
  }
  return std::nullopt;
}

/// Parses an element data type name (bf16, fp16, fp8e4m3, fp8e5m2, fp32: the narrow types and FP32, as
/// data_type_name() prints them); std::nullopt for anything else (the MX types included).
constexpr std::optional<DataType> parse_data_type(std::string_view name) {
  for (DataType t : kNarrowTypes) {
    if (data_type_name(t) == name) return t;
  }
  if (data_type_name(DataType::kFp32) == name) return DataType::kFp32;
  return std::nullopt;
}

/// The TE dtype names, for messages: "bf16, fp16, fp8e4m3, fp8e5m2, mxfp8e4m3, mxfp8e5m2, mxfp4".
inline constexpr std::string_view kTeDtypeNames = "bf16, fp16, fp8e4m3, fp8e5m2, mxfp8e4m3, mxfp8e5m2, mxfp4";

/// Storage size of one element, in bits (16 or 8 for the narrow types, 8 for the MX types: an MXFP4 element takes
/// one byte, its code in the low nibble).
constexpr unsigned dtype_bits(Dtype dt) { return 8 * data_type_bytes(dt); }

// ---- Tensor Engine operands in SBUF (docs/isa.md, "load_stationary"; BRIEF section 3 rule 8)
// A TE operand [K, F] of `dt` (stationary: F = M, moving: F = N) starts at one SBUF address. Each PE contracts
// P = te_pe_partitions(dt) partitions per cycle (2 for FP8, double-row; 1 for BF16/FP16), and the SBUF partition
// that feeds a PE row holds the elements of its P operand partitions side by side: operand partition k' lies in SBUF
// partition k' / P (counted from the operand's), and its element f at byte f * P * bytes + (k' % P) * bytes from the
// operand's start offset. BF16/FP16: one operand partition per SBUF partition, 2 bytes per element; FP8: pairs,
// partition 2j in the low byte and 2j + 1 in the high byte of each 2-byte element slot.

/// P: operand partitions per SBUF partition (te_pe_partitions; 1 for a type that is not a TE operand).
constexpr unsigned te_partitions_per_sbuf(Dtype dt) { return te_pe_partitions(dt) == 0 ? 1 : te_pe_partitions(dt); }

/// SBUF partitions a TE operand of K partitions occupies: ceil(K / P).
constexpr unsigned te_sbuf_partitions(Dtype dt, unsigned k) {
  const unsigned p = te_partitions_per_sbuf(dt);
  return (k + p - 1) / p;
}
/// Bytes per SBUF partition of a TE operand with free size F: F * P * bytes (2 * F for every TE operand type).
constexpr uint64_t te_sbuf_row_bytes(Dtype dt, uint64_t free_size) {
  return free_size * te_pe_partitions(dt) * data_type_bytes(dt);
}
/// Byte of element (k', f) relative to the operand's start in SBUF partition te_sbuf_partition(dt, k').
constexpr uint64_t te_sbuf_byte(Dtype dt, unsigned k, uint64_t f) {
  const unsigned p = te_partitions_per_sbuf(dt);
  return (f * p + k % p) * data_type_bytes(dt);
}
/// SBUF partition (relative to the operand's first) of operand partition k'.
constexpr unsigned te_sbuf_partition(Dtype dt, unsigned k) { return k / te_partitions_per_sbuf(dt); }
/// Largest K of one load_stationary / multiply_moving on an array of `rows` rows: rows * P.
constexpr unsigned te_max_k(Dtype dt, unsigned rows) { return rows * te_pe_partitions(dt); }

// ---- MX scales of a TE operand (BRIEF section 3 rule 10; docs/isa.md "MX operands")
// An MX operand's elements lie as FP8's (pairs, P = 2). Its E8M0 scale codes are a second SBUF operand at the
// instruction's scale_addr, one byte per element column and SBUF row: scale partition j (counted from scale_addr's
// partition) holds at byte (offset of scale_addr) + f the scale of element f of both operand partitions that SBUF
// row j of the elements feeds (2j and 2j + 1). The GEMM kernel fills row j with the scale of the block
// (k0 + 2j) / kMxBlockSize its partitions belong to (a K tile starts at an even partition, so both lie in one
// block); in HBM the scales are kept as [ceil(K / kMxBlockSize), F] (mx_blocks).

/// Scale blocks of an MX operand of K partitions: ceil(K / kMxBlockSize).
constexpr unsigned mx_blocks(unsigned k) { return (k + kMxBlockSize - 1) / kMxBlockSize; }
/// The E8M0 code of a NaN scale (OCP MX v1.0 section 5.4.1); codes 0..254 mean 2^(code - 127).
inline constexpr uint8_t kE8M0Nan = 0xFF;

}  // namespace trnsim::isa
