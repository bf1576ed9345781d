// Golden host GEMM (see gemm_golden.h): the Tensor Engine's sum order written out as plain loops.
#include "firmware/golden/gemm_golden.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "firmware/golden/fp_golden.h"
#include "firmware/golden/float_bits.h"
#include "firmware/golden/mx_golden.h"

namespace trnsim::golden {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("golden::gemm: " + what);
}

/// Widens a row-major [rows, cols] tensor of narrow patterns and stores it transposed, [cols, rows], so that the
/// contraction loop below reads both operands contiguously.
std::vector<float> widen_transposed(isa::Dtype dt, const std::vector<uint16_t>& in, int rows, int cols) {
  std::vector<float> out(in.size());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      out[static_cast<size_t>(c) * rows + r] = float_from_bits(widen_to_f32(dt, in[static_cast<size_t>(r) * cols + c]));
    }
  }
  return out;
}

/// The MX operand as real values, transposed to [cols, rows] like widen_transposed: element * 2^(scale - 127) in
/// double (exact: at most 4 significant bits, exponents within -160..160).
std::vector<double> mx_values_transposed(isa::Dtype dt, const std::vector<uint16_t>& in,
                                         const std::vector<uint8_t>& scales, int rows, int cols) {
  std::vector<double> out(in.size());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const uint8_t scale = scales[size_t(r) / isa::kMxBlockSize * size_t(cols) + size_t(c)];
      out[static_cast<size_t>(c) * rows + r] = mx_value(dt, in[static_cast<size_t>(r) * cols + c], scale);
    }
  }
  return out;
}

}  // namespace

int k_tile(isa::Dtype dtype, int array_rows) {
  const bool fp8 = dtype == isa::Dtype::kFp8E4M3 || dtype == isa::Dtype::kFp8E5M2;  // rule 8
  return fp8 || isa::is_mx(dtype) ? 2 * array_rows : array_rows;
}

std::vector<uint32_t> gemm(const GemmOperands& ops, int array_rows, const std::vector<uint32_t>* accumulate_into) {
  require(ops.k >= 1 && ops.m >= 1 && ops.n >= 1, "K, M and N must be >= 1");
  require(array_rows >= 1, "array_rows must be >= 1");
  const size_t k = static_cast<size_t>(ops.k);
  const size_t m = static_cast<size_t>(ops.m);
  const size_t n = static_cast<size_t>(ops.n);
  require(ops.stationary.size() == k * m, "stationary must hold K*M elements");
  require(ops.moving.size() == k * n, "moving must hold K*N elements");
  require(accumulate_into == nullptr || accumulate_into->size() == m * n, "accumulate_into must hold M*N elements");

  const bool mx = isa::is_mx(ops.dtype);
  const size_t blocks = isa::mx_blocks(unsigned(k));
  require(!mx || (ops.stationary_scales.size() == blocks * m && ops.moving_scales.size() == blocks * n),
          "an MX GEMM needs ceil(K/32)*M stationary and ceil(K/32)*N moving scales");
  require(mx || (ops.stationary_scales.empty() && ops.moving_scales.empty()), "only MX dtypes have scales");
  // Narrow types: FP32 values (the products are FP32 operations). MX: exact real values (the product is rounded
  // once, from double).
  std::vector<float> st, mv;
  std::vector<double> st_mx, mv_mx;
  if (mx) {
    st_mx = mx_values_transposed(ops.dtype, ops.stationary, ops.stationary_scales, ops.k, ops.m);  // [M, K]
    mv_mx = mx_values_transposed(ops.dtype, ops.moving, ops.moving_scales, ops.k, ops.n);          // [N, K]
  } else {
    st = widen_transposed(ops.dtype, ops.stationary, ops.k, ops.m);  // [M, K]
    mv = widen_transposed(ops.dtype, ops.moving, ops.k, ops.n);      // [N, K]
  }
  const size_t tile = static_cast<size_t>(k_tile(ops.dtype, array_rows));

  std::vector<uint32_t> out(m * n);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      // Rule 2 (narrow): one FP32 RNE multiply. Rule 10 (MX): the exact product (at most 8 significant bits,
      // exponent within -320..320) rounded once to FP32, gradual underflow, overflow to +-Inf.
      auto product = [&](size_t kk) -> float {
        if (mx) return static_cast<float>(st_mx[i * k + kk] * mv_mx[j * k + kk]);
        return st[i * k + kk] * mv[j * k + kk];
      };
      float psum = accumulate_into ? float_from_bits((*accumulate_into)[i * n + j]) : 0.0f;
      for (size_t k0 = 0; k0 < k; k0 += tile) {
        const size_t k1 = std::min(k, k0 + tile);
        float column_sum = +0.0f;  // rule 3: starts at +0.0 in the tile's first partition
        for (size_t kk = k0; kk < k1; ++kk) {
          column_sum = column_sum + product(kk);  // rule 3: one FP32 RNE rounding, in partition order
        }
        // Rule 4: the first tile writes PSUM (unless accumulating into given data), later tiles add to it.
        const bool writes = (k0 == 0 && accumulate_into == nullptr);
        psum = writes ? column_sum : psum + column_sum;
      }
      out[i * n + j] = std::isnan(psum) ? kF32CanonicalNan : bits_from_float(psum);  // rule 5
    }
  }
  return out;
}

}  // namespace trnsim::golden
