// Golden host versions of the composite workloads: the element-wise programs around a GEMM, the GELU MLP,
// multi-head attention and a GPT-2 transformer block, each following the device kernels' documented operation
// order step by step (firmware/kernels/{mlp,attention,transformer}_kernel.h, docs/kernels.md), so that the device
// result is bit-exact against them. Built from golden::gemm (gemm_golden.h), the golden softmax / LayerNorm /
// TE transpose (nn_golden.h) and golden::activation_device for GELU.
//
// Independent of the model: nothing here includes model/, cosim/ or rtl/ (or the kernels). Tensors are row-major
// element patterns, one uint32 per element (narrow patterns in the low bits), of the data type each names.
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/isa/isa.h"

namespace trnsim::golden {

using Patterns = std::vector<uint32_t>;

/// Element-wise cast in_type -> out_type (widen exactly, then one RNE cast, FP8 saturating): the DMA's cast.
Patterns cast(const Patterns& in, isa::DataType in_type, isa::DataType out_type);
/// out[c][r] = cast(in[r][c]) of a row-major [rows, cols] tensor: the strided DMA transpose.
Patterns transpose_cast(int rows, int cols, const Patterns& in, isa::DataType in_type, isa::DataType out_type);

/// out[r][c] = cast(f(in[r][c] * 1 + bias[r])) (FP32 in and bias; activation_device for f).
Patterns row_bias_activation(int rows, int cols, const Patterns& in, const Patterns& bias, isa::ActFunc f,
                             isa::DataType out_type);
/// out[r][c] = cast(residual[r][c] + (in[r][c] + bias[c])), or cast(in[r][c] + bias[c]) without residual (FP32).
Patterns col_bias_add(int rows, int cols, const Patterns& in, const Patterns& bias, const Patterns* residual,
                      isa::DataType out_type);

/// golden::gemm of BF16 patterns: stationary [K, M], moving [K, N] -> FP32 [M, N], K tiles of `tile_rows`.
Patterns gemm_bf16(int k, int m, int n, const Patterns& stationary, const Patterns& moving, int tile_rows);

/// The MLP's parameters: w1 BF16 [D, F], b1 FP32 [F], w2 BF16 [F, D], b2 FP32 [D].
struct MlpParams {
  Patterns w1, b1, w2, b2;
};
struct MlpResult {
  Patterns hT;   ///< [F, T] FP32
  Patterns gT;   ///< [F, T] BF16
  Patterns y;    ///< [T, D] FP32
  Patterns out;  ///< [T, D] FP32
};
/// The MLP of mlp_kernel.h from xT [D, T] BF16; `residual` (FP32 [T, D]) optional. tile_rows: the TE's rows.
MlpResult mlp(int tokens, int d_model, int d_ff, const Patterns& xT, const MlpParams& p, const Patterns* residual,
              int tile_rows);

struct AttentionResult {
  Patterns scores;  ///< [H, T, T] FP32
  Patterns probs;   ///< [H, T, T] BF16 (piece_order: the exponentials, not normalised)
  Patterns probsT;  ///< [H, T, T] BF16
  Patterns outT;    ///< [H*d, T] FP32
};
/// The attention of attention_kernel.h: qT, kT [H*d, T] BF16, v [H, T, d] BF16. `te_transpose` selects the TE
/// transpose's numerics (golden::transpose_te with tile_rows) or the DMA's (exact) for P^T. `piece_order`: the order
/// of the attention pieces (kernels::attention_pieces > 0, make_attention_piece_program; docs/kernels.md
/// "Attention"): P holds the exponentials cast to BF16 (softmax_rows with normalise false), each query's column of
/// the product V^T P^T is multiplied by its row's 1 / s (FP32) at the end, and, causal, query q's column sums over
/// the key tiles of tile_rows keys up to its own only (keys [0, (q / tile_rows + 1) tile_rows)), in increasing
/// order; otherwise over every key.
AttentionResult attention(int seq, int heads, int head_dim, bool causal, bool te_transpose, const Patterns& qT,
                          const Patterns& kT, const Patterns& v, int tile_rows, bool piece_order = false);

/// A transformer block's parameters (transformer_kernel.h): GEMM weights BF16, the rest FP32.
struct TransformerParams {
  Patterns ln1_g, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_g, ln2_b;
  MlpParams mlp;
};
struct TransformerSpec {
  int seq = 0, d_model = 0, heads = 0, d_ff = 0;
  float ln_eps = 1e-5f;
  bool causal = true;
  bool te_transpose = true;
  bool piece_order = false;  ///< golden::attention's
};
struct TransformerResult {
  Patterns ln1, ln1T, qkvT32, qkvT, v;
  AttentionResult attn;
  Patterns attnT32, attnT, proj, h1, ln2, ln2T;
  MlpResult mlp;  ///< mlp.out is the block's output [T, D] FP32
};
/// The block of transformer_kernel.h on x [T, D] FP32, step by step. tile_rows: the TE's rows.
TransformerResult transformer_block(const TransformerSpec& spec, const Patterns& x, const TransformerParams& p,
                                    int tile_rows);

}  // namespace trnsim::golden
