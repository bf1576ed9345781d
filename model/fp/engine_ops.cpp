// The Vector and Scalar engines' arithmetic (see engine_ops.h).
#include "model/fp/engine_ops.h"

#include <cmath>
#include <cstring>

#include "model/fp/fp_ops.h"

namespace trnsim::model::fp {
namespace {

float f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t bits(float f) {
  if (std::isnan(f)) return kF32Qnan;
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

constexpr uint32_t kOne = 0x3F800000u;  // 1.0f

/// IEEE 754-2019 maximum (section 9.6): NaN if either operand is NaN; +0 is larger than -0.
float maximum(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::nanf("");
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

/// IEEE 754-2019 minimum: NaN if either operand is NaN; -0 is smaller than +0.
float minimum(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::nanf("");
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// A transcendental function of z in double precision (z is an FP32 value, exact in double). Forms chosen to avoid
/// cancellation: 1 + tanh(u) = 2 / (1 + exp(-2u)) and 1 + erf(x) = erfc(-x).
double transcendental(isa::ActFunc f, double z) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
  constexpr double kRsqrt2 = 0.70710678118654752440;       // 1 / sqrt(2)
  switch (f) {
    case isa::ActFunc::kGeluTanh:
      if (std::isinf(z)) return z > 0 ? z : -0.0;
      return z / (1.0 + std::exp(-2.0 * (kSqrt2OverPi * (z + 0.044715 * (z * z * z)))));
    case isa::ActFunc::kGelu:
      if (std::isinf(z)) return z > 0 ? z : -0.0;
      return 0.5 * z * std::erfc(-z * kRsqrt2);
    case isa::ActFunc::kSigmoid: return 1.0 / (1.0 + std::exp(-z));
    case isa::ActFunc::kTanh: return std::tanh(z);
    case isa::ActFunc::kExp: return std::exp(z);
    case isa::ActFunc::kSilu:
      if (std::isinf(z)) return z > 0 ? z : -0.0;
      return z / (1.0 + std::exp(-z));
    case isa::ActFunc::kRsqrt: return 1.0 / std::sqrt(z);
    case isa::ActFunc::kLog: return std::log(z);
    default: return std::nan("");
  }
}

}  // namespace

uint32_t to_f32(isa::DataType t, uint32_t b) {
  if (t == isa::DataType::kFp32) return b;
  return widen(static_cast<isa::Dtype>(t), static_cast<uint16_t>(b));
}

uint32_t from_f32(isa::DataType t, uint32_t v, bool saturate) {
  if (t == isa::DataType::kFp32) return bits(f32(v));
  return narrow(static_cast<isa::Dtype>(t), v, saturate);
}

uint32_t from_f32_stochastic(isa::DataType t, uint32_t v, bool saturate, uint16_t random_bits) {
  if (t == isa::DataType::kFp32) return bits(f32(v));
  return narrow_stochastic(static_cast<isa::Dtype>(t), v, saturate, random_bits);
}

uint32_t alu(isa::AluOp op, uint32_t a, uint32_t b) {
  const float x = f32(a), y = f32(b);
  switch (op) {
    case isa::AluOp::kAdd: return bits(x + y);
    case isa::AluOp::kSubtract: return bits(x - y);
    case isa::AluOp::kMultiply: return bits(x * y);
    case isa::AluOp::kMax: return bits(maximum(x, y));
    case isa::AluOp::kMin: return bits(minimum(x, y));
    case isa::AluOp::kDivide: return bits(x / y);
    case isa::AluOp::kIsEqual: return x == y ? kOne : 0;
    case isa::AluOp::kNotEqual: return x != y ? kOne : 0;
    case isa::AluOp::kIsGt: return x > y ? kOne : 0;
    case isa::AluOp::kIsGe: return x >= y ? kOne : 0;
    case isa::AluOp::kIsLt: return x < y ? kOne : 0;
    case isa::AluOp::kIsLe: return x <= y ? kOne : 0;
    case isa::AluOp::kRsubtract: return bits(y - x);
    case isa::AluOp::kRdivide: return bits(y / x);
    case isa::AluOp::kNone: break;
  }
  return kF32Qnan;
}

uint32_t activate(isa::ActFunc f, uint32_t zb) {
  const float z = f32(zb);
  switch (f) {
    case isa::ActFunc::kIdentity: return bits(z);
    case isa::ActFunc::kRelu: return std::isnan(z) ? kF32Qnan : z > 0.0f ? zb : 0u;
    case isa::ActFunc::kSquare: return bits(z * z);
    case isa::ActFunc::kReciprocal: return bits(1.0f / z);
    default: return bits(static_cast<float>(transcendental(f, static_cast<double>(z))));
  }
}

}  // namespace trnsim::model::fp
