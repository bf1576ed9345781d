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

/// A row-major [rows, cols] operand as values `value(r, c)`, keeping the layout; `transposed` stores it [cols, rows].
template <typename T, typename Value>
std::vector<T> operand_values(int rows, int cols, bool transposed, Value value) {
  std::vector<T> out(size_t(rows) * size_t(cols));
  for (size_t r = 0; r < size_t(rows); ++r) {
    for (size_t c = 0; c < size_t(cols); ++c) out[transposed ? c * rows + r : r * cols + c] = value(r, c);
  }
  return out;
}

/// Narrow patterns widened to FP32 values (exact).
std::vector<float> widen(isa::Dtype dt, const std::vector<uint16_t>& in, int rows, int cols, bool transposed) {
  return operand_values<float>(rows, cols, transposed, [&](size_t r, size_t c) {
    return float_from_bits(widen_to_f32(dt, in[r * cols + c]));
  });
}

/// The MX operand as real values, element * 2^(scale - 127) in double (exact: at most 4 significant bits, exponents
/// within -160..160).
std::vector<double> mx_values(isa::Dtype dt, const std::vector<uint16_t>& in, const std::vector<uint8_t>& scales,
                              int rows, int cols, bool transposed) {
  return operand_values<double>(rows, cols, transposed, [&](size_t r, size_t c) {
    return mx_value(dt, in[r * cols + c], scales[r / isa::kMxBlockSize * size_t(cols) + c]);
  });
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
  // once, from double). Stationary transposed to [M, K], moving kept [K, N], so that the loops below run across
  // output columns: every column's sum still adds its products one by one in partition order, but a block of
  // columns advances together, which the compiler vectorises (-ffp-contract=off keeps product and sum two roundings).
  std::vector<float> st, mv;
  std::vector<double> st_mx, mv_mx;
  if (mx) {
    st_mx = mx_values(ops.dtype, ops.stationary, ops.stationary_scales, ops.k, ops.m, true);  // [M, K]
    mv_mx = mx_values(ops.dtype, ops.moving, ops.moving_scales, ops.k, ops.n, false);         // [K, N]
  } else {
    st = widen(ops.dtype, ops.stationary, ops.k, ops.m, true);  // [M, K]
    mv = widen(ops.dtype, ops.moving, ops.k, ops.n, false);     // [K, N]
  }
  const size_t tile = static_cast<size_t>(k_tile(ops.dtype, array_rows));
  constexpr size_t kCols = 256;  // output columns per block
  constexpr size_t kRows = 8;    // output rows per block: each moving row read once for all of them

  std::vector<uint32_t> out(m * n);
  std::vector<float> psum(kRows * kCols), column_sum(kRows * kCols);
  for (size_t i0 = 0; i0 < m; i0 += kRows) {
    const size_t rows = std::min(kRows, m - i0);
    for (size_t j0 = 0; j0 < n; j0 += kCols) {
      const size_t cols = std::min(kCols, n - j0);
      for (size_t r = 0; r < rows; ++r) {
        for (size_t j = 0; j < cols; ++j) {
          psum[r * kCols + j] = accumulate_into ? float_from_bits((*accumulate_into)[(i0 + r) * n + j0 + j]) : 0.0f;
        }
      }
      for (size_t k0 = 0; k0 < k; k0 += tile) {
        const size_t k1 = std::min(k, k0 + tile);
        std::fill(column_sum.begin(), column_sum.end(), +0.0f);  // rule 3: +0.0 at the tile's first partition
        for (size_t kk = k0; kk < k1; ++kk) {
          for (size_t r = 0; r < rows; ++r) {
            // Rule 2 (narrow): one FP32 RNE multiply. Rule 10 (MX): the exact product (at most 8 significant bits,
            // exponent within -320..320) rounded once to FP32, gradual underflow, overflow to +-Inf. Rule 3: one
            // FP32 RNE addition per partition, in partition order.
            float* sum = &column_sum[r * kCols];
            if (mx) {
              const double s = st_mx[(i0 + r) * k + kk];
              const double* row = &mv_mx[kk * n + j0];
              for (size_t j = 0; j < cols; ++j) sum[j] = sum[j] + static_cast<float>(s * row[j]);
            } else {
              const float s = st[(i0 + r) * k + kk];
              const float* row = &mv[kk * n + j0];
              for (size_t j = 0; j < cols; ++j) sum[j] = sum[j] + s * row[j];
            }
          }
        }
        // Rule 4: the first tile writes PSUM (unless accumulating into given data), later tiles add to it.
        const bool writes = (k0 == 0 && accumulate_into == nullptr);
        for (size_t r = 0; r < rows; ++r) {
          for (size_t j = 0; j < cols; ++j) {
            float& p = psum[r * kCols + j];
            p = writes ? column_sum[r * kCols + j] : p + column_sum[r * kCols + j];
          }
        }
      }
      for (size_t r = 0; r < rows; ++r) {
        for (size_t j = 0; j < cols; ++j) {
          const float p = psum[r * kCols + j];
          out[(i0 + r) * n + j0 + j] = std::isnan(p) ? kF32CanonicalNan : bits_from_float(p);  // rule 5
        }
      }
    }
  }
  return out;
}

}  // namespace trnsim::golden
