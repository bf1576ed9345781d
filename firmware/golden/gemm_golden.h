// Golden host GEMM in the Tensor Engine's numerics (BRIEF section 3 rules 1-5).
//
// Independent of the model and the RTL. Shapes are row-major; element (r, c) of an [R, C] tensor is at r * C + c.
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/isa/dtype.h"

namespace trnsim::golden {

/// Operands of one GEMM `out[M, N] = stationary[K, M]^T @ moving[K, N]`.
struct GemmOperands {
  isa::Dtype dtype;                 ///< element type of both inputs
  int k = 0;                        ///< contraction size (partitions), >= 1
  int m = 0;                        ///< stationary free size, >= 1
  int n = 0;                        ///< moving free size, >= 1
  std::vector<uint16_t> stationary; ///< [K, M] narrow bit patterns (low 8 bits for FP8)
  std::vector<uint16_t> moving;     ///< [K, N] narrow bit patterns
  /// MX dtypes only (rule 10): E8M0 scale codes, [ceil(K / 32), M] and [ceil(K / 32), N] (mx_golden.h).
  std::vector<uint8_t> stationary_scales = {};
  std::vector<uint8_t> moving_scales = {};
};

/// Computes out[M, N] as FP32 bit patterns.
///
/// Each column sum starts at +0.0 and adds widen(S[k][m]) * widen(Mv[k][n]) for k in increasing order, product and
/// sum each one FP32 RNE operation (no FMA). For an MX dtype the product is instead
/// S[k][m] * 2^(cs - 127) * M[k][n] * 2^(cm - 127) rounded once to FP32 (rule 10; cs, cm the scales of partition k's
/// block in column m of S and column n of M; NaN for a NaN scale). K is split into tiles of k_tile(dtype, array_rows) partitions (rule 4
/// with rule 8's tile: `array_rows` for BF16/FP16, twice that for FP8 and MX): each tile's column sum is added to the
/// running PSUM value in tile order; the first tile writes (or, when `accumulate_into` is given, adds to it).
/// `accumulate_into`, if non-null, holds [M, N] FP32 bits. NaN results are 0x7FC00000. Throws
/// std::invalid_argument on a size mismatch or a non-positive dimension.
std::vector<uint32_t> gemm(const GemmOperands& ops, int array_rows,
                           const std::vector<uint32_t>* accumulate_into = nullptr);

/// Partitions of one K tile (one pass of the array) on an array of `array_rows` rows: BRIEF section 3 rule 8, FP8
/// double-row, 2 * array_rows for FP8 and the MX types (each PE takes two partitions per cycle), array_rows for
/// BF16 and FP16.
int k_tile(isa::Dtype dtype, int array_rows);

}  // namespace trnsim::golden
