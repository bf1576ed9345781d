// Golden host kernels of the softmax, LayerNorm, RMSNorm and TE-transpose device kernels, in exact FP32 following
// the kernels' documented operation order (firmware/kernels/{softmax,norm,transpose}_kernel.h, docs/kernels.md).
//
// Independent of the model: nothing here includes model/, cosim/ or rtl/. Every step is one FP32 RNE operation
// (host binary32 arithmetic, built with -ffp-contract=off, NaN results canonical: BRIEF section 3 rules 5-7).
// exp and rsqrt are evaluated as docs/isa.md defines the Scalar engine's transcendental functions: in double
// precision from the FP32 argument (exact in double) with the C library's exp / sqrt, then rounded once to FP32.
// Under that definition the results are bit-exact; against the mathematical functions the bound is 1 ULP per
// exp / rsqrt (golden::activation_reference and golden::within_ulps check it).
//
// Tensors are row-major element patterns (uint32 each; narrow patterns in the low bits) of the given data types.
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/isa/isa.h"

namespace trnsim::golden {

/// The Scalar engine's activation function f(z) of FP32 z, as docs/isa.md defines it (exact functions: one FP32
/// operation; transcendental ones: double evaluation rounded once), NaN results canonical.
uint32_t activation_device(isa::ActFunc f, uint32_t z);

/// Parameters of golden::softmax_rows (see SoftmaxLayout).
struct SoftmaxSpec {
  int rows = 0, cols = 0;
  float scale = 1.0f;
  /// Row r sees columns j <= r + causal_offset; the others take no part (their values never matter) and give +0.
  bool causal = false;
  int causal_offset = 0;
  isa::DataType in_type = isa::DataType::kFp32;
  isa::DataType out_type = isa::DataType::kFp32;
  /// false: out_j = cast(e_j), the exponentials not normalised (the attention piece's deferred normalisation,
  /// docs/kernels.md "Attention"); the rows' reciprocals 1 / s then come out through softmax_rows' `reciprocals`.
  bool normalise = true;
};

/// Softmax of each row of in[rows, cols] (patterns of in_type) -> out patterns of out_type, in the operation order
/// of softmax_kernel.h. `reciprocals` (if given) gets each row's 1 / s (FP32 patterns, `rows` of them). Throws
/// std::invalid_argument on a size mismatch or rows/cols < 1.
std::vector<uint32_t> softmax_rows(const SoftmaxSpec& spec, const std::vector<uint32_t>& in,
                                   std::vector<uint32_t>* reciprocals = nullptr);

/// Parameters of golden::layernorm_rows and golden::rmsnorm_rows.
struct NormSpec {
  int rows = 0, cols = 0;
  float eps = 1e-5f;
  isa::DataType in_type = isa::DataType::kFp32;
  isa::DataType out_type = isa::DataType::kFp32;
};

/// LayerNorm of each row (order of norm_kernel.h); gamma and beta are FP32 bits [cols].
std::vector<uint32_t> layernorm_rows(const NormSpec& spec, const std::vector<uint32_t>& in,
                                     const std::vector<uint32_t>& gamma, const std::vector<uint32_t>& beta);

/// RMSNorm of each row (order of norm_kernel.h); gamma is FP32 bits [cols].
std::vector<uint32_t> rmsnorm_rows(const NormSpec& spec, const std::vector<uint32_t>& in,
                                   const std::vector<uint32_t>& gamma);

/// The TE transpose of in[rows, cols] (narrow `dtype` patterns) -> out[cols, rows] patterns of out_type, with the
/// rows cut into tiles of `tile_rows` (the kernel's: kernels::transpose_tile_rows(info), normally the TE's rows):
/// out[c][r] = +0 + sum over the rows k of r's tile of
/// in[k][c] * (k == r ? 1 : 0), each product and sum one FP32 RNE operation (BRIEF rules 2-3), then cast. So -0 ->
/// +0, NaN -> canonical, and an Inf/NaN in column c of a tile turns out[c][r] into NaN for the tile's other rows r.
std::vector<uint32_t> transpose_te(isa::Dtype dtype, int rows, int cols, const std::vector<uint32_t>& in, int tile_rows,
                                   isa::DataType out_type);

}  // namespace trnsim::golden
