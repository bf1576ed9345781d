// The GELU MLP of a transformer (GPT-2: c_fc, GELU, c_proj) and the element-wise programs around a GEMM: bias add
// per row with an activation function (Scalar engine), bias add per column with an optional residual add (Vector
// engine). Layouts and numerics: docs/kernels.md, "GELU MLP".
//
// Activations are kept in HBM in two orientations, because the Tensor Engine contracts over partitions: a GEMM's
// input activation must be *feature-major* ([features, tokens], the transpose of the usual [tokens, features]),
// and its output comes out feature-major (stationary = W, moving = x^T: out = W^T @ x^T = (x @ W)^T) or
// token-major (stationary = x^T, moving = W: out = x @ W) as the next step needs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"
#include "firmware/kernels/kernel_sequence.h"

namespace trnsim::kernels {

/// out[r, c] = func(in[r, c] + bias[r]), cast once to out_type: the bias of a feature-major GEMM output (one bias
/// per row = per partition) fused with an activation in one Scalar-engine `activation` per tile (scale 1, bias
/// column operand): two FP32 operations (in * 1, + bias) then func, as docs/isa.md defines it.
struct RowBiasActLayout {
  int rows = 0, cols = 0;                       ///< >= 1
  uint64_t in_hbm = 0;                          ///< [rows, cols] FP32
  uint64_t bias_hbm = 0;                        ///< [rows] FP32
  isa::ActFunc func = isa::ActFunc::kIdentity;
  uint64_t out_hbm = 0;                         ///< [rows, cols] out_type
  isa::DataType out_type = isa::DataType::kBf16;
};

/// out[r, c] = residual[r, c] + (in[r, c] + bias[c]) (without residual: in[r, c] + bias[c]), each add one FP32
/// operation on the Vector engine (`tensor_tensor add`; the bias row is replicated over the partitions by the DMA),
/// cast once to out_type: the bias of a token-major GEMM output and the transformer's residual connection.
struct ColBiasAddLayout {
  int rows = 0, cols = 0;                       ///< >= 1
  uint64_t in_hbm = 0;                          ///< [rows, cols] FP32
  uint64_t bias_hbm = 0;                        ///< [cols] FP32
  bool residual = false;
  uint64_t residual_hbm = 0;                    ///< [rows, cols] FP32, when `residual`
  uint64_t out_hbm = 0;                         ///< [rows, cols] out_type
  isa::DataType out_type = isa::DataType::kFp32;
};

/// Both element-wise programs tile the tensor into [P rows, C columns] tiles (P = SBUF partitions, at most 128;
/// C as many columns as three tile buffers allow, at most 4096) and stream them through three SBUF buffers as a
/// Pipeline (pipeline.h: per tile a dma load, one or two compute instructions, a dma store; semaphores 0..3). They
/// use SBUF from offset 0 of partitions 0..P-1 and touch HBM only inside their tensors. Throw std::invalid_argument
/// for empty shapes or a device whose SBUF partitions cannot hold one column of the buffers.
isa::Program make_row_bias_activation_program(const driver::DeviceInfo& info, const RowBiasActLayout& layout);
isa::Program make_col_bias_add_program(const driver::DeviceInfo& info, const ColBiasAddLayout& layout);


/// The GELU MLP of `tokens` tokens: out[T, D] = (residual +) (gelu_tanh(x @ W1 + b1) @ W2 + b2), with the input given
/// feature-major and BF16 GEMM operands, as two GEMMs whose drains do the element-wise steps (GemmEpilogue):
///   1. "mlp up gemm+gelu"   g^T[F, T] = bf16(gelu_tanh(W1^T @ x^T + b1[row]))
///                           (stationary W1 [D, F], moving x^T [D, T]; the Scalar engine drains PSUM)
///   2. "mlp down gemm+bias" out[T, D] = (residual +) ((g^T)^T @ W2 + b2[col])
///                           (stationary g^T [F, T], moving W2 [F, D]; the Vector engine drains PSUM; FP32)
/// The FP32 GEMM outputs h^T and y stay in PSUM; the bits are those of the GEMMs followed by
/// make_row_bias_activation_program and make_col_bias_add_program.
struct MlpLayout {
  int tokens = 0, d_model = 0, d_ff = 0;        ///< T, D, F >= 1
  int cores = 1;                                ///< the GEMMs are split by M over this many cores (gemm_steps)
  uint64_t xT_hbm = 0;                          ///< [D, T] BF16 (feature-major input)
  uint64_t w1_hbm = 0;                          ///< [D, F] BF16
  uint64_t b1_hbm = 0;                          ///< [F] FP32
  uint64_t w2_hbm = 0;                          ///< [F, D] BF16
  uint64_t b2_hbm = 0;                          ///< [D] FP32
  uint64_t gT_hbm = 0;                          ///< scratch [F, T] BF16
  bool residual = false;
  uint64_t residual_hbm = 0;                    ///< [T, D] FP32, when `residual`
  uint64_t out_hbm = 0;                         ///< [T, D] FP32
  /// Let make_mlp_programs take the rows programs where mlp_in_rows finds them shorter; false: always the two GEMM
  /// steps (g^T written to gT_hbm, e.g. to check it).
  bool rows_programs = true;
};

/// The two steps above (each split over `cores`, gemm_steps), or, where mlp_in_rows says so, one "mlp rows" step per
/// core: make_mlp_rows_program over the core's tokens (rows_per_core in TE-column tiles). Throws
/// std::invalid_argument like the GEMM kernel and the element-wise programs.
KernelSequence make_mlp_programs(const driver::DeviceInfo& info, const MlpLayout& layout);

/// The two GEMMs of the whole MLP (make_mlp_programs' steps 1 and 2, before any split): up g^T[F, T] (its drain the
/// GELU of the row bias) and down out[T, D] (its drain the column bias and the residual).
std::pair<GemmLayout, GemmLayout> mlp_gemms(const MlpLayout& layout);

/// Step 2 alone ("mlp down gemm+bias[+residual]", split over `cores`, gemm_steps): for a caller that computes g^T
/// in a program of its own (the transformer block's LayerNorm fused into the up GEMM). With w2_sbuf > 0, W2 is
/// already in SBUF on every core at that offset (sbuf_operand_copies' layout; the GEMM's moving operand, loaded by
/// an earlier program) and the GEMM keeps its own bytes below sbuf_end.
KernelSequence mlp_down_steps(const driver::DeviceInfo& info, const MlpLayout& layout, uint32_t w2_sbuf = 0,
                              uint32_t sbuf_end = 0);
/// The down GEMM's step name: "mlp down gemm+bias", "+residual" with a residual.
std::string mlp_down_name(const MlpLayout& layout);
/// The down GEMM mlp_down_steps splits (mlp_gemms' second, W2 in SBUF at w2_sbuf > 0, the GEMM below sbuf_end).
GemmLayout mlp_down_gemm(const MlpLayout& layout, uint32_t w2_sbuf = 0, uint32_t sbuf_end = 0);

/// Whether make_mlp_programs runs the MLP as rows programs on `info`'s device: rows_programs is set, every core's
/// rows program fits, and the Pipeline's cost model (Pipeline::estimated_cycles) finds the busiest rows program
/// shorter than the two split GEMMs' busiest pieces back to back. (Rows programs load all of W1 and W2 on every core
/// and keep g^T on chip; the split GEMMs load shares of the weights, g^T twice, and stream wider blocks.) Then
/// gT_hbm is not written. Throws std::invalid_argument for an empty shape or cores < 1.
bool mlp_in_rows(const driver::DeviceInfo& info, const MlpLayout& layout);

/// Both GEMMs of the MLP for tokens [t0, t0 + n) in one program (docs/kernels.md "GELU MLP"): the up GEMM's drain
/// writes gelu_tanh(W1^T @ x^T + b1) for those tokens as BF16 into SBUF (g^T stays on chip), and the down GEMM
/// reads it there as its stationary operand, streams W2 and writes out rows [t0, t0 + n) (with bias and residual).
/// The bits are the two steps' (each element keeps its K order). Throws std::invalid_argument for tokens outside
/// [0, tokens) or a device whose SBUF cannot hold g^T beside both GEMMs' buffers.
isa::Program make_mlp_rows_program(const driver::DeviceInfo& info, const MlpLayout& layout, int t0, int n);

}  // namespace trnsim::kernels
