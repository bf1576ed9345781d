// Golden host functions of the Vector and Scalar engines (see engine_golden.h).
#include "firmware/golden/engine_golden.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "firmware/golden/float_bits.h"
#include "firmware/golden/fp_golden.h"

namespace trnsim::golden {
namespace {

constexpr uint32_t kOne = 0x3F800000u;

uint32_t result(float f) { return std::isnan(f) ? kF32CanonicalNan : bits_from_float(f); }

/// The position of an FP32 value on the number line of FP32 values: consecutive values differ by 1, +0 and -0 are 0.
int64_t ordinal(uint32_t bits) {
  const int64_t magnitude = bits & 0x7FFFFFFFu;
  return (bits & 0x80000000u) ? -magnitude : magnitude;
}

uint32_t from_ordinal(int64_t ord) {
  return ord >= 0 ? static_cast<uint32_t>(ord) : (0x80000000u | static_cast<uint32_t>(-ord));
}

}  // namespace

uint32_t element_to_f32(isa::DataType t, uint32_t bits) {
  if (t == isa::DataType::kFp32) return bits;
  return widen_to_f32(static_cast<isa::Dtype>(t), static_cast<uint16_t>(bits));
}

uint32_t element_from_f32(isa::DataType t, uint32_t f32, bool saturate) {
  if (t == isa::DataType::kFp32) return result(float_from_bits(f32));
  return narrow_from_f32(static_cast<isa::Dtype>(t), f32, saturate);
}

uint32_t alu(isa::AluOp op, uint32_t a, uint32_t b) {
  const float x = float_from_bits(a), y = float_from_bits(b);
  switch (op) {
    case isa::AluOp::kAdd: return result(x + y);
    case isa::AluOp::kSubtract: return result(x - y);
    case isa::AluOp::kMultiply: return result(x * y);
    case isa::AluOp::kDivide: return result(x / y);
    case isa::AluOp::kRsubtract: return result(y - x);
    case isa::AluOp::kRdivide: return result(y / x);
    case isa::AluOp::kMax:
    case isa::AluOp::kMin: {
      // IEEE 754-2019 section 9.6 maximum / minimum: a NaN operand gives NaN; -0 counts as less than +0.
      if (std::isnan(x) || std::isnan(y)) return kF32CanonicalNan;
      const bool x_less = x < y || (x == y && std::signbit(x) && !std::signbit(y));
      return bits_from_float(op == isa::AluOp::kMax ? (x_less ? y : x) : (x_less ? x : y));
    }
    case isa::AluOp::kIsEqual: return x == y ? kOne : 0u;
    case isa::AluOp::kNotEqual: return !(x == y) ? kOne : 0u;
    case isa::AluOp::kIsGt: return x > y ? kOne : 0u;
    case isa::AluOp::kIsGe: return x >= y ? kOne : 0u;
    case isa::AluOp::kIsLt: return x < y ? kOne : 0u;
    case isa::AluOp::kIsLe: return x <= y ? kOne : 0u;
    case isa::AluOp::kNone: break;
  }
  throw std::invalid_argument("golden::alu: not an operation");
}

uint32_t tensor_scalar(isa::AluOp op0, uint32_t imm0, isa::AluOp op1, uint32_t imm1, uint32_t x) {
  const uint32_t first = alu(op0, x, imm0);
  return op1 == isa::AluOp::kNone ? first : alu(op1, first, imm1);
}

uint32_t reduce(isa::AluOp op, const std::vector<uint32_t>& values) {
  if (op == isa::AluOp::kAdd) {
    uint32_t sum = 0;  // +0.0
    for (const uint32_t v : values) sum = alu(isa::AluOp::kAdd, sum, v);
    return sum;
  }
  if (values.empty()) throw std::invalid_argument("golden::reduce: max/min of nothing");
  uint32_t acc = values[0];
  for (std::size_t i = 1; i < values.size(); ++i) acc = alu(op, acc, values[i]);
  // A lone NaN element is still a NaN result: canonical.
  return result(float_from_bits(acc));
}

uint32_t iota(int32_t base, int32_t pstep, int32_t step0, int32_t step1, int p, int i0, int i1) {
  const long long exact = static_cast<long long>(base) + static_cast<long long>(p) * pstep +
                          static_cast<long long>(i0) * step0 + static_cast<long long>(i1) * step1;
  // |exact| < 2^50: a double holds it exactly; the conversion to float is the one rounding.
  return bits_from_float(static_cast<float>(static_cast<double>(exact)));
}

bool select_predicate(uint32_t f32) {
  const float v = float_from_bits(f32);
  return !(v == 0.0f);
}

uint32_t activation_input(uint32_t x, uint32_t scale, uint32_t bias) {
  return alu(isa::AluOp::kAdd, alu(isa::AluOp::kMultiply, x, scale), bias);
}

bool activation_is_exact(isa::ActFunc f) {
  return f == isa::ActFunc::kIdentity || f == isa::ActFunc::kRelu || f == isa::ActFunc::kSquare ||
         f == isa::ActFunc::kReciprocal;
}

uint32_t activation_exact(isa::ActFunc f, uint32_t z) {
  const float v = float_from_bits(z);
  switch (f) {
    case isa::ActFunc::kIdentity: return result(v);
    case isa::ActFunc::kRelu:
      if (std::isnan(v)) return kF32CanonicalNan;
      return v > 0.0f ? z : 0u;  // relu(-0) = +0
    case isa::ActFunc::kSquare: return result(v * v);
    case isa::ActFunc::kReciprocal: return result(1.0f / v);
    default: break;
  }
  throw std::invalid_argument("golden::activation_exact: not an exact function");
}

long double activation_reference(isa::ActFunc f, uint32_t zb) {
  const long double z = float_from_bits(zb);
  const long double pi = 3.141592653589793238462643383279502884L;
  if (std::isnan(z)) return std::numeric_limits<long double>::quiet_NaN();
  switch (f) {
    case isa::ActFunc::kIdentity: return z;
    case isa::ActFunc::kRelu: return z > 0 ? z : 0.0L;
    case isa::ActFunc::kSquare: return z * z;
    case isa::ActFunc::kReciprocal: return 1.0L / z;
    case isa::ActFunc::kExp: return expl(z);
    case isa::ActFunc::kLog: return logl(z);
    case isa::ActFunc::kTanh: return tanhl(z);
    case isa::ActFunc::kRsqrt: return 1.0L / sqrtl(z);
    case isa::ActFunc::kSigmoid:
      // 1 / (1 + e^-z); for z < 0 written as e^z / (1 + e^z) so that e^-z cannot overflow first.
      if (z >= 0) return 1.0L / (1.0L + expl(-z));
      return expl(z) / (1.0L + expl(z));
    case isa::ActFunc::kSilu:
      if (std::isinf(z)) return z > 0 ? z : -0.0L;
      if (z >= 0) return z / (1.0L + expl(-z));
      return z * expl(z) / (1.0L + expl(z));
    case isa::ActFunc::kGelu: {
      // 0.5 z (1 + erf(z / sqrt 2)); for z < 0, 1 + erf(x) = erfc(-x) avoids the cancellation.
      if (std::isinf(z)) return z > 0 ? z : -0.0L;
      const long double x = z / sqrtl(2.0L);
      if (z >= 0) return 0.5L * z * (1.0L + erfl(x));
      return 0.5L * z * erfcl(-x);
    }
    case isa::ActFunc::kGeluTanh: {
      // 0.5 z (1 + tanh(u)), u = sqrt(2 / pi) (z + 0.044715 z^3); for z < 0, 1 + tanh(u) = 2 e^(2u) / (1 + e^(2u)).
      if (std::isinf(z)) return z > 0 ? z : -0.0L;
      const long double u = sqrtl(2.0L / pi) * (z + 0.044715L * z * z * z);
      if (z >= 0) return 0.5L * z * (1.0L + tanhl(u));
      const long double e = expl(2.0L * u);
      return z * e / (1.0L + e);
    }
  }
  throw std::invalid_argument("golden::activation_reference: unknown function");
}

int64_t f32_ulp_distance(uint32_t a, uint32_t b) {
  if (std::isnan(float_from_bits(a)) || std::isnan(float_from_bits(b))) return -1;
  const int64_t d = ordinal(a) - ordinal(b);
  return d < 0 ? -d : d;
}

bool within_ulps(isa::DataType out_type, bool saturate, uint32_t got, long double ref, int ulps, std::string* why) {
  const auto say = [&](const std::string& text) {
    if (why) *why = text;
    return false;
  };
  const bool got_nan = out_type == isa::DataType::kFp32
                           ? std::isnan(float_from_bits(got))
                           : is_nan(static_cast<isa::Dtype>(out_type), static_cast<uint16_t>(got));
  if (std::isnan(ref)) return got_nan ? true : say("expected NaN");
  // A NaN result is only right when the cast of a candidate is one (E4M3 overflow without saturation).
  // The correctly rounded FP32 value (the x87 conversion rounds to nearest even), then its neighbours.
  const uint32_t nearest = bits_from_float(static_cast<float>(ref));
  const int64_t center = ordinal(nearest);
  const int64_t top = ordinal(0x7F800000u), bottom = ordinal(0xFF800000u);
  std::string allowed;
  for (int64_t o = center - ulps; o <= center + ulps; ++o) {
    if (o < bottom || o > top) continue;
    const uint32_t cand = element_from_f32(out_type, from_ordinal(o), saturate);
    if (cand == got) return true;
    // +0 and -0 are one point on the FP32 line; accept either sign for a zero candidate.
    if (o == 0 && element_from_f32(out_type, 0x80000000u, saturate) == got) return true;
    char buf[16];
    std::snprintf(buf, sizeof buf, "%#x", cand);
    allowed += (allowed.empty() ? "" : ", ") + std::string(buf);
  }
  char ref_text[64];
  std::snprintf(ref_text, sizeof ref_text, "%.21Lg", ref);
  return say("reference " + std::string(ref_text) + " allows " + allowed);
}

}  // namespace trnsim::golden
