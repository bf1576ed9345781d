// Golden softmax, LayerNorm, RMSNorm and TE transpose (see nn_golden.h).
#include "firmware/golden/nn_golden.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "firmware/golden/engine_golden.h"
#include "firmware/golden/float_bits.h"
#include "firmware/golden/fp_golden.h"

namespace trnsim::golden {
namespace {

using isa::AluOp;

constexpr uint32_t kOneBits = 0x3F800000u;
constexpr uint32_t kMinusOneBits = 0xBF800000u;
constexpr uint32_t kMinusZeroBits = 0x80000000u;

uint32_t rounded(double v) {
  const float f = static_cast<float>(v);
  return std::isnan(f) ? kF32CanonicalNan : bits_from_float(f);
}

void check_shape(const char* what, int rows, int cols, std::size_t have) {
  if (rows < 1 || cols < 1 || have != std::size_t(rows) * std::size_t(cols)) {
    throw std::invalid_argument(std::string("golden::") + what + ": " + std::to_string(have) +
                                " elements do not make a [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "] tensor (rows and cols >= 1)");
  }
}

uint32_t f32(float f) { return bits_from_float(f); }

/// Row `r` of `in` widened to FP32.
std::vector<uint32_t> widen_row(isa::DataType t, const std::vector<uint32_t>& in, int r, int cols) {
  std::vector<uint32_t> x(static_cast<std::size_t>(cols));
  for (int j = 0; j < cols; ++j) x[std::size_t(j)] = element_to_f32(t, in[std::size_t(r) * cols + j]);
  return x;
}

/// activation's pass over a row: f(x_j * scale + bias) for every j, and the in-order sum of the results from +0.
uint32_t activation_pass(isa::ActFunc f, std::vector<uint32_t>* x, uint32_t scale, uint32_t bias) {
  uint32_t sum = 0;
  for (auto& v : *x) {
    v = activation_device(f, activation_input(v, scale, bias));
    sum = alu(AluOp::kAdd, sum, v);
  }
  return sum;
}

/// q / cols + eps, then rsqrt: the per-row scale of both norms.
uint32_t rsqrt_of_mean_plus_eps(uint32_t q, int cols, float eps) {
  const uint32_t v = tensor_scalar(AluOp::kDivide, f32(float(cols)), AluOp::kAdd, f32(eps), q);
  return activation_device(isa::ActFunc::kRsqrt, activation_input(v, kOneBits, kMinusZeroBits));
}

}  // namespace

uint32_t activation_device(isa::ActFunc f, uint32_t zb) {
  if (activation_is_exact(f)) return activation_exact(f, zb);
  const double z = float_from_bits(zb);  // exact
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  constexpr double kRsqrt2 = 0.70710678118654752440;
  switch (f) {
    case isa::ActFunc::kExp:
      return rounded(std::exp(z));
    case isa::ActFunc::kRsqrt:
      return rounded(1.0 / std::sqrt(z));
    case isa::ActFunc::kLog:
      return rounded(std::log(z));
    case isa::ActFunc::kTanh:
      return rounded(std::tanh(z));
    case isa::ActFunc::kSigmoid:
      return rounded(1.0 / (1.0 + std::exp(-z)));
    case isa::ActFunc::kSilu:
      return rounded(std::isinf(z) ? (z > 0 ? z : -0.0) : z / (1.0 + std::exp(-z)));
    case isa::ActFunc::kGelu:
      return rounded(std::isinf(z) ? (z > 0 ? z : -0.0) : 0.5 * z * std::erfc(-z * kRsqrt2));
    case isa::ActFunc::kGeluTanh:
      return rounded(std::isinf(z) ? (z > 0 ? z : -0.0)
                                   : z / (1.0 + std::exp(-2.0 * (kSqrt2OverPi * (z + 0.044715 * (z * z * z))))));
    default:
      break;
  }
  throw std::invalid_argument("golden::activation_device: unknown function");
}

std::vector<uint32_t> softmax_rows(const SoftmaxSpec& s, const std::vector<uint32_t>& in,
                                   std::vector<uint32_t>* reciprocals) {
  check_shape("softmax_rows", s.rows, s.cols, in.size());
  std::vector<uint32_t> out(in.size());
  if (reciprocals) reciprocals->assign(std::size_t(s.rows), 0u);
  const uint32_t scale = f32(s.scale);
  for (int r = 0; r < s.rows; ++r) {
    std::vector<uint32_t> x = widen_row(s.in_type, in, r, s.cols);
    // Causal: columns j > r + offset are masked: they take no part (their values, NaN or Inf included, never
    // matter) and their outputs are +0. The softmax runs over the unmasked prefix (at least one column: offset >= 0).
    const int n = s.causal ? int(std::min<int64_t>(s.cols, int64_t(r) + s.causal_offset + 1)) : s.cols;
    x.resize(std::size_t(n));
    const uint32_t m = reduce(AluOp::kMax, x);
    const uint32_t bias = tensor_scalar(AluOp::kMultiply, scale, AluOp::kMultiply, kMinusOneBits, m);
    const uint32_t sum = activation_pass(isa::ActFunc::kExp, &x, scale, bias);
    const uint32_t recip = alu(AluOp::kRdivide, sum, kOneBits);  // 1 / sum
    if (reciprocals) (*reciprocals)[std::size_t(r)] = recip;
    for (int j = 0; j < s.cols; ++j) {
      const uint32_t e = x[std::size_t(std::min(j, n - 1))];
      const uint32_t y = j >= n ? 0u : s.normalise ? alu(AluOp::kMultiply, e, recip) : e;  // +0 where masked
      out[std::size_t(r) * s.cols + j] = element_from_f32(s.out_type, y, true);
    }
  }
  return out;
}

std::vector<uint32_t> layernorm_rows(const NormSpec& s, const std::vector<uint32_t>& in,
                                     const std::vector<uint32_t>& gamma, const std::vector<uint32_t>& beta) {
  check_shape("layernorm_rows", s.rows, s.cols, in.size());
  check_shape("layernorm_rows (gamma)", 1, s.cols, gamma.size());
  check_shape("layernorm_rows (beta)", 1, s.cols, beta.size());
  std::vector<uint32_t> out(in.size());
  for (int r = 0; r < s.rows; ++r) {
    std::vector<uint32_t> x = widen_row(s.in_type, in, r, s.cols);
    const uint32_t sum = reduce(AluOp::kAdd, x);
    const uint32_t neg_mean = tensor_scalar(AluOp::kDivide, f32(float(s.cols)), AluOp::kMultiply, kMinusOneBits, sum);
    activation_pass(isa::ActFunc::kIdentity, &x, kOneBits, neg_mean);  // x_j - mean
    std::vector<uint32_t> sq = x;
    const uint32_t q = activation_pass(isa::ActFunc::kSquare, &sq, kOneBits, kMinusZeroBits);
    const uint32_t rs = rsqrt_of_mean_plus_eps(q, s.cols, s.eps);
    for (int j = 0; j < s.cols; ++j) {
      const uint32_t y = alu(AluOp::kMultiply, x[std::size_t(j)], rs);
      const uint32_t g = alu(AluOp::kMultiply, y, gamma[std::size_t(j)]);
      out[std::size_t(r) * s.cols + j] = element_from_f32(s.out_type, alu(AluOp::kAdd, g, beta[std::size_t(j)]), true);
    }
  }
  return out;
}

std::vector<uint32_t> rmsnorm_rows(const NormSpec& s, const std::vector<uint32_t>& in,
                                   const std::vector<uint32_t>& gamma) {
  check_shape("rmsnorm_rows", s.rows, s.cols, in.size());
  check_shape("rmsnorm_rows (gamma)", 1, s.cols, gamma.size());
  std::vector<uint32_t> out(in.size());
  for (int r = 0; r < s.rows; ++r) {
    const std::vector<uint32_t> x = widen_row(s.in_type, in, r, s.cols);
    std::vector<uint32_t> sq = x;
    const uint32_t q = activation_pass(isa::ActFunc::kSquare, &sq, kOneBits, kMinusZeroBits);
    const uint32_t rs = rsqrt_of_mean_plus_eps(q, s.cols, s.eps);
    for (int j = 0; j < s.cols; ++j) {
      const uint32_t y = alu(AluOp::kMultiply, x[std::size_t(j)], rs);
      out[std::size_t(r) * s.cols + j] =
          element_from_f32(s.out_type, alu(AluOp::kMultiply, y, gamma[std::size_t(j)]), true);
    }
  }
  return out;
}

std::vector<uint32_t> transpose_te(isa::Dtype dtype, int rows, int cols, const std::vector<uint32_t>& in, int tile_rows,
                                   isa::DataType out_type) {
  check_shape("transpose_te", rows, cols, in.size());
  if (tile_rows < 1) throw std::invalid_argument("golden::transpose_te: tile_rows must be >= 1");
  // The sum written out has a closed form, used here because the literal loop costs tile_rows operations per
  // element: every product in[k][c] * 0 (k != r) is +-0 for a finite input and NaN for an Inf or NaN (IEEE 754
  // section 7.2: 0 x Inf is invalid); in[r][c] * 1 is in[r][c]. Summed from +0 in RNE, the +-0 terms leave a nonzero
  // value unchanged and turn -0 into +0 (+0 + -0 = +0, section 6.3). So out[c][r] is NaN when another row of r's
  // tile holds an Inf or NaN in column c, else in[r][c] with -0 as +0 (NaN stays NaN, Inf stays Inf).
  // GoldenTranspose.EqualsGoldenGemmWithIdentity checks this form against golden::gemm with an identity operand.
  std::vector<uint32_t> out(in.size());
  std::vector<uint32_t> x(std::size_t(std::min(rows, tile_rows)));
  for (int r0 = 0; r0 < rows; r0 += tile_rows) {
    const int r1 = std::min(rows, r0 + tile_rows);
    for (int c = 0; c < cols; ++c) {
      int nonfinite = 0;  // Inf or NaN inputs in this tile's column c
      for (int k = r0; k < r1; ++k) {
        x[std::size_t(k - r0)] = widen_to_f32(dtype, static_cast<uint16_t>(in[std::size_t(k) * cols + c]));
        nonfinite += !std::isfinite(float_from_bits(x[std::size_t(k - r0)]));
      }
      for (int r = r0; r < r1; ++r) {
        const uint32_t v = x[std::size_t(r - r0)];
        const bool own = !std::isfinite(float_from_bits(v));
        uint32_t sum = v == kMinusZeroBits ? 0u : v;
        if (nonfinite > (own ? 1 : 0)) sum = kF32CanonicalNan;
        out[std::size_t(c) * rows + r] = element_from_f32(out_type, sum, true);
      }
    }
  }
  return out;
}

}  // namespace trnsim::golden
