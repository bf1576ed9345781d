// The Vector and Scalar engines' arithmetic (BRIEF section 3 rule 7; docs/isa.md "Vector and Scalar numerics").
//
// Values are FP32 bit patterns. Inputs of any data type widen exactly to FP32 (to_f32), every ALU operation is one
// FP32 operation rounded to nearest even (host float arithmetic: SSE, no FTZ/DAZ, built with -ffp-contract=off), and
// outputs are cast once (from_f32, BRIEF section 3 rule 6). Any NaN result is the canonical 0x7FC00000.
// Transcendental activation functions are evaluated in double precision and rounded once to FP32: at most 1 ULP
// from the correctly rounded result. Written separately from firmware/golden/ (which checks this code).
#pragma once

#include <cstdint>

#include "firmware/isa/isa.h"

namespace trnsim::model::fp {

/// An element of type `t` (FP32 bits, or a narrow pattern in the low bits) widened exactly to FP32 bits. FP32
/// inputs are returned as they are (a NaN keeps its payload until the next operation canonicalizes it).
uint32_t to_f32(isa::DataType t, uint32_t bits);
/// FP32 bits cast to `t` with one RNE rounding (FP8 overflow saturating when `saturate`); FP32 outputs are the
/// value itself with any NaN canonical.
uint32_t from_f32(isa::DataType t, uint32_t f32, bool saturate);

/// from_f32 with stochastic rounding (BRIEF section 3 rule 9) using `random_bits` (fp::sr_bits) when `t` is
/// narrow; an FP32 output is the value itself, as from_f32.
uint32_t from_f32_stochastic(isa::DataType t, uint32_t f32, bool saturate, uint16_t random_bits);

/// One ALU operation (isa::AluOp, not kNone): a <op> b. Comparisons give 1.0 or 0.0.
uint32_t alu(isa::AluOp op, uint32_t a, uint32_t b);

/// The activation function `f` of FP32 bits `z` (the already scaled and biased input).
/// Exact (one FP32 operation or none): identity, relu, square, reciprocal. The others: evaluated in double,
/// rounded once to FP32.
uint32_t activate(isa::ActFunc f, uint32_t z);

}  // namespace trnsim::model::fp
