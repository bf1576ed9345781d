// Golden host GEMM (see gemm_golden.h): the Tensor Engine's sum order written out as plain loops.
#include "firmware/golden/gemm_golden.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "firmware/golden/fp_golden.h"
#include "firmware/golden/float_bits.h"

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

}  // namespace

int k_tile(isa::Dtype dtype, int array_rows) {
  const bool fp8 = dtype == isa::Dtype::kFp8E4M3 || dtype == isa::Dtype::kFp8E5M2;  // rule 8
  return fp8 ? 2 * array_rows : array_rows;
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

  const std::vector<float> st = widen_transposed(ops.dtype, ops.stationary, ops.k, ops.m);  // [M, K]
  const std::vector<float> mv = widen_transposed(ops.dtype, ops.moving, ops.k, ops.n);      // [N, K]
  const size_t tile = static_cast<size_t>(k_tile(ops.dtype, array_rows));

  std::vector<uint32_t> out(m * n);
  for (size_t i = 0; i < m; ++i) {
    const float* s_col = &st[i * k];
    for (size_t j = 0; j < n; ++j) {
      const float* m_col = &mv[j * k];
      float psum = accumulate_into ? float_from_bits((*accumulate_into)[i * n + j]) : 0.0f;
      for (size_t k0 = 0; k0 < k; k0 += tile) {
        const size_t k1 = std::min(k, k0 + tile);
        float column_sum = +0.0f;  // rule 3: starts at +0.0 in the tile's first partition
        for (size_t kk = k0; kk < k1; ++kk) {
          const float product = s_col[kk] * m_col[kk];  // rule 2: one FP32 RNE rounding
          column_sum = column_sum + product;            // rule 3: one FP32 RNE rounding, in partition order
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
