// Golden host functions of the Vector and Scalar engines' operations (BRIEF section 3 rules 1, 5, 6, 7; the
// semantics are in docs/isa.md, "Vector and Scalar numerics").
//
// Independent of the model: nothing here includes model/, cosim/ or rtl/. Elements are FP32 bit patterns (or narrow
// patterns in the low bits, for element_to_f32 / element_from_f32). Every one-operation result is exact: host
// binary32 arithmetic (round to nearest even, no FTZ, built with -ffp-contract=off) with NaN results canonical.
// The transcendental activation functions have a reference in x87 extended precision (long double, 64-bit
// significand) from their mathematical definitions, and a checker for the ULP bound the device promises.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "firmware/isa/isa.h"

namespace trnsim::golden {

/// The device's promised bound for the transcendental activation functions: the FP32 result is the correctly
/// rounded value of the function or one of its two FP32 neighbours (docs/isa.md).
inline constexpr int kActivationUlpBound = 1;

/// An element of data type `t` widened exactly to FP32 bits (narrow NaN -> 0x7FC00000; FP32 returned unchanged).
uint32_t element_to_f32(isa::DataType t, uint32_t bits);
/// FP32 bits cast to `t` (rule 6: one RNE rounding; FP8 overflow saturating when `saturate`). An FP32 result is
/// the value with any NaN made canonical.
uint32_t element_from_f32(isa::DataType t, uint32_t f32, bool saturate);

/// a <op> b for an ALU op (not kNone); comparisons give 1.0f or 0.0f; max/min are IEEE 754-2019 maximum/minimum.
uint32_t alu(isa::AluOp op, uint32_t a, uint32_t b);
/// tensor_scalar on one element: (x <op0> imm0) <op1> imm1, the second step only when op1 is not kNone.
uint32_t tensor_scalar(isa::AluOp op0, uint32_t imm0, isa::AluOp op1, uint32_t imm1, uint32_t x);
/// The fold of tensor_reduce over `values` in their order: add starts at +0.0, max/min at values[0].
uint32_t reduce(isa::AluOp op, const std::vector<uint32_t>& values);
/// iota's element at partition p (relative to the operand's start), free index (i0, i1), as FP32 bits: the exact
/// integer base + p * pstep + i0 * step0 + i1 * step1 rounded once to FP32.
uint32_t iota(int32_t base, int32_t pstep, int32_t step0, int32_t step1, int p, int i0, int i1);
/// select's predicate: true unless the widened predicate element is +0 or -0 (a NaN is true).
bool select_predicate(uint32_t f32);

/// activation's function input: x * scale + bias, two FP32 RNE operations.
uint32_t activation_input(uint32_t x, uint32_t scale, uint32_t bias);
/// True for identity, relu, square and reciprocal: one FP32 operation (or none), bit-exact.
bool activation_is_exact(isa::ActFunc f);
/// The bit-exact functions (activation_is_exact) of z.
uint32_t activation_exact(isa::ActFunc f, uint32_t z);
/// Reference value of any activation function of FP32 z, in extended precision (NaN for a NaN result).
long double activation_reference(isa::ActFunc f, uint32_t z);

/// Distance of two non-NaN FP32 values in units in the last place: how many FP32 values lie between them, counting
/// one end (+0 and -0 are the same point). -1 when either is NaN.
int64_t f32_ulp_distance(uint32_t a, uint32_t b);

/// Checks a device result `got` (a pattern of `out_type`) of a function whose exact value is `ref`: accepted when it
/// equals the cast (element_from_f32) of an FP32 value within `ulps` of the correctly rounded FP32 value of ref, or
/// both are NaN. On failure `why` (if given) says what was expected.
bool within_ulps(isa::DataType out_type, bool saturate, uint32_t got, long double ref, int ulps,
                 std::string* why = nullptr);

}  // namespace trnsim::golden
