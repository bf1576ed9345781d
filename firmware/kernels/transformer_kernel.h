// A GPT-2 transformer block (Radford et al. 2019; pre-LayerNorm): for x[T, D],
//   h1  = x + c_proj(attention(LN1(x)))          (causal multi-head attention, H heads of D/H)
//   out = h1 + mlp(LN2(h1))                      (GELU MLP, d_ff F)
// as a sequence of programs (kernel_sequence.h), each reading and writing HBM, built from the LayerNorm, GEMM (the
// element-wise steps after a GEMM fused into its drain), softmax and TE-transpose kernels. Steps, numerics and layouts:
// docs/kernels.md, "Transformer block".
#pragma once

#include <cstdint>

#include "firmware/driver/driver.h"
#include "firmware/kernels/kernel_sequence.h"

namespace trnsim::kernels {

/// Shape of a block. GPT-2 small: D 768, H 12, F 3072, LayerNorm eps 1e-5.
struct TransformerShape {
  int seq = 128;       ///< T, tokens
  int d_model = 768;   ///< D, a multiple of heads
  int heads = 12;      ///< H
  int d_ff = 3072;     ///< F
  float ln_eps = 1e-5f;
  bool causal = true;
  bool te_transpose = true;  ///< activation transposes on the TE (identity matmul); else strided DMA copies
  int cores = 1;             ///< GEMMs split by M and attention heads spread over this many cores
  int head_dim() const { return d_model / heads; }
};

/// Inputs in HBM: x FP32; GEMM weights BF16 row-major [in, out] (GPT-2's Conv1D layout); biases, LayerNorm gamma and
/// beta FP32 vectors.
struct TransformerInputs {
  uint64_t x = 0;                  ///< [T, D] FP32
  uint64_t ln1_g = 0, ln1_b = 0;   ///< [D]
  uint64_t w_qkv = 0;              ///< [D, 3D] BF16 (c_attn: columns Q | K | V, head h at columns h*d ..)
  uint64_t b_qkv = 0;              ///< [3D]
  uint64_t w_o = 0;                ///< [D, D] BF16 (attention c_proj)
  uint64_t b_o = 0;                ///< [D]
  uint64_t ln2_g = 0, ln2_b = 0;   ///< [D]
  uint64_t w1 = 0;                 ///< [D, F] BF16 (mlp c_fc)
  uint64_t b1 = 0;                 ///< [F]
  uint64_t w2 = 0;                 ///< [F, D] BF16 (mlp c_proj)
  uint64_t b2 = 0;                 ///< [D]
};

/// The intermediates, in the scratch area (HBM addresses; see transformer_buffers()).
struct TransformerBuffers {
  uint64_t ln1 = 0;       ///< [T, D] BF16, LN1(x) (written only without te_transpose)
  uint64_t ln1T = 0;      ///< [D, T] BF16
  uint64_t qkvT = 0;      ///< [3D, T] BF16, W_qkv^T @ ln1^T + b_qkv per row: Q^T (rows 0..D-1), K^T (D..2D-1),
                          ///< V^T (2D..3D-1)
  uint64_t v = 0;         ///< [H, T, d] BF16, V per head token-major
  uint64_t scores = 0;    ///< [H, T, T] FP32
  uint64_t probs = 0;     ///< [H, T, T] BF16
  uint64_t probsT = 0;    ///< [H, T, T] BF16
  uint64_t attnT = 0;     ///< [D, T] BF16, heads' outputs feature-major
  uint64_t h1 = 0;        ///< [T, D] FP32, x + (attn @ W_o + b_o)
  uint64_t ln2 = 0;       ///< [T, D] BF16 (written only without te_transpose)
  uint64_t ln2T = 0;      ///< [D, T] BF16
  uint64_t mlp_gT = 0;    ///< [F, T] BF16, gelu_tanh(W1^T @ ln2^T + b1 per row)
  uint64_t end = 0;       ///< first byte after the scratch area
};

/// The intermediates laid out from `scratch_hbm` up (each 64-byte aligned). Throws std::invalid_argument for a
/// shape with a dimension < 1 or d_model not a multiple of heads.
TransformerBuffers transformer_buffers(const TransformerShape& shape, uint64_t scratch_hbm);

/// Whether the block's attention runs as "head h attention" pieces on `info`'s device (attention_pieces), whose
/// order is their own: golden::TransformerSpec::piece_order. Throws std::invalid_argument for a bad shape.
bool transformer_attention_in_pieces(const driver::DeviceInfo& info, const TransformerShape& shape);

/// Which of the block's LayerNorms run in the programs of the GEMM that reads them on `info`'s device
/// (ln_gemm_kernel.h; docs/kernels.md "Transformer block"): with te_transpose, where the fused step fits and the
/// Pipeline's cost model finds it shorter than the two steps (ln2: and the MLP does not run as rows programs). A
/// fused LayerNorm's output stays in SBUF: ln1T (ln2T) is then not written.
struct TransformerFusion {
  bool ln1_qkv = false;  ///< "ln1+qkv gemm+bias" instead of "ln1", "qkv gemm+bias"
  bool ln2_up = false;   ///< "ln2+mlp up gemm+gelu" instead of "ln2", "mlp up gemm+gelu"
};
/// Throws std::invalid_argument for a bad shape.
TransformerFusion transformer_fusion(const driver::DeviceInfo& info, const TransformerShape& shape);

/// Whether the block's MLP runs as "mlp rows" programs on `info`'s device (mlp_in_rows): then g^T stays on chip and
/// TransformerBuffers::mlp_gT is not written. Throws std::invalid_argument for a bad shape.
bool transformer_mlp_in_rows(const driver::DeviceInfo& info, const TransformerShape& shape);

/// Where the block keeps the weights of its steps after the attention resident in SBUF (docs/kernels.md "Weights
/// resident in SBUF"): W_o (the projection's moving operand) and W2 (the down GEMM's), each [K, D] in K tiles of
/// sbuf_operand_tile_bytes(D), and W1 (the up GEMM's stationary, [D, F]) in K tiles of sbuf_operand_tile_bytes(F),
/// at the top of every core's SBUF partitions, loaded by the attention pieces pinned to each core while their DMA
/// engines wait for the softmax (AttentionLayout::prefetch); every program from there to the down GEMM keeps below
/// sbuf_end. Where the attention runs in pieces (transformer_attention_in_pieces) with at least one per core, the
/// LayerNorm fused into the up GEMM (transformer_fusion) and the weights fit the SBUF.
struct TransformerResidency {
  bool resident = false;
  uint32_t sbuf_end = 0;  ///< the programs' SBUF bytes end here; the weights lie above
  uint32_t w_o = 0, w2 = 0, w1 = 0;  ///< SBUF offsets of W_o's, W2's and W1's first K tile
  /// g^T, the up GEMM's GELU output, stays in each core's SBUF for the down GEMM: the projection, ln2 and the up
  /// GEMM in one program ("proj+ln2+mlp up", make_gemm_ln_gemm_program: h1's rows go to ln2 through SBUF) and the
  /// down GEMM run as one piece per core over the same g_tokens tokens, piece i pinned to core i, and
  /// TransformerBuffers::mlp_gT is not written. M tile i of g^T (the down GEMM's K tile i) at g + i * g_tile_bytes;
  /// both programs keep their own bytes below g. g 0: not kept (the up GEMM's M tile is not the TE's K tile, or
  /// g^T or those programs do not fit).
  uint32_t g = 0, g_tile_bytes = 0;
  int g_tokens = 0;
};
/// With `by_estimate`, only where the Pipeline's estimates find the block shorter so: the projection's, the fused
/// ln2 + up GEMM's and the down GEMM's largest pieces save more than the loads add to the attention's busiest core
/// (attention_prefetch_cost; on trn2 over 8 cores at seq 2048, not at seq 128 to 1024, whose pieces are too short to
/// hide them); without it, wherever it fits. Throws std::invalid_argument for a bad shape.
TransformerResidency transformer_residency(const driver::DeviceInfo& info, const TransformerShape& shape,
                                           bool by_estimate = true);

/// The block's programs, in order: "ln1" (with te_transpose the LayerNorm writes ln1T through the TE and ln1 stays
/// unwritten; else the LayerNorm into ln1, then "ln1 transpose", a strided DMA copy), "qkv gemm+bias" (the bias and
/// the BF16 cast in the GEMM's drain, GemmEpilogue), or instead of both "ln1+qkv gemm+bias" (transformer_fusion), "v heads" (DMA re-layout of V^T into per-head token-major V_h;
/// not where the attention runs in pieces, which read V^T themselves), the attention steps (attention_kernel.h; the
/// pv GEMMs cast to BF16), "proj gemm+bias+residual", "ln2" (as "ln1", into ln2T), the MLP steps (mlp_kernel.h, the
/// two GEMMs or the rows programs; or "ln2+mlp up gemm+gelu" then the down GEMM's, transformer_fusion; or, with g^T
/// kept on chip, "proj+ln2+mlp up" instead of the projection and the up GEMM, TransformerResidency::g; the residual
/// h1) into out[T, D] FP32. No FP32 GEMM output goes through HBM but the attention scores (and h1, which the down
/// GEMM adds). Throws std::invalid_argument like the kernels it uses.
KernelSequence make_transformer_programs(const driver::DeviceInfo& info, const TransformerShape& shape,
                                         const TransformerInputs& in, const TransformerBuffers& buf,
                                         uint64_t out_hbm);
/// The same with the weights kept as `resident` says (transformer_residency, by its estimate or not). Throws
/// std::invalid_argument as above and for a residency the shape does not take.
KernelSequence make_transformer_programs(const driver::DeviceInfo& info, const TransformerShape& shape,
                                         const TransformerInputs& in, const TransformerBuffers& buf,
                                         uint64_t out_hbm, const TransformerResidency& resident);

}  // namespace trnsim::kernels
