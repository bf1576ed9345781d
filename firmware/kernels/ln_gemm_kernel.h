// A LayerNorm whose output is the moving operand of the GEMM after it, in one program: the LayerNorm's rows
// (tokens) are the GEMM's N columns and its features the GEMM's K. The LayerNorm transposes its output on the TE and
// leaves it in SBUF in the layout the GEMM reads (LayerNormLayout::out_in_sbuf, GemmLayout::moving_in_sbuf), so the
// normalised activations never go through HBM and the GEMM's stationary loads (the weights) start with the
// LayerNorm's loads. The bits are those of make_layernorm_program (transposed_out) followed by the GEMM kernel.
// docs/kernels.md "LayerNorm into a GEMM".
#pragma once

#include <string>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/kernels/gemm_kernel.h"
#include "firmware/kernels/kernel_sequence.h"
#include "firmware/kernels/norm_kernel.h"

namespace trnsim::kernels {

/// One fused LayerNorm + GEMM: out[M, N] = stationary[K, M]^T @ LN(in)^T, in [N, K].
struct LnGemmLayout {
  /// rows = N, cols = K: in_hbm, gamma_hbm, beta_hbm, eps, in_type; out_type the GEMM's operand type (bf16 or fp16).
  /// Its output fields (out_hbm, out_ld, transposed_out, out_in_sbuf, ...) are the kernel's to set.
  LayerNormLayout ln;
  /// k = ln.cols, n = ln.rows, dtype = ln.out_type; the stationary, output and epilogue as the GEMM kernel takes
  /// them. Its moving fields (moving_hbm, moving_in_sbuf, ...) and SBUF placement (sbuf_base, sbuf_limit) are the
  /// kernel's to set.
  GemmLayout gemm;
  /// Offset in each SBUF partition past the program's last byte (0: the partition's end), so that data a later
  /// program reads above it survives (docs/kernels.md "Weights resident in SBUF").
  uint32_t sbuf_end = 0;
  /// Offset in each SBUF partition where the program's bytes start (a multiple of 64): the operand, then the
  /// LayerNorm's buffers, then the GEMM's (make_gemm_ln_gemm_program puts another GEMM below).
  uint32_t sbuf_base = 0;
  /// Copies HBM -> SBUF at or above sbuf_end (> 0) for the programs after this one (docs/kernels.md "Weights resident
  /// in SBUF"), issued as they are, a share after each of the LayerNorm's transposed tiles: the program's own loads go
  /// first, the copies then fill the DMA engines while the GEMM runs.
  std::vector<isa::CopyFields> prefetch = {};
};

/// Whether make_ln_gemm_program takes `layout` on `info`'s device: a TE whose rows equal the transposes' column
/// chunk (min(te_cols, psum_partitions)), and SBUF for the normalised [K, N] operand beside both kernels' buffers.
bool ln_gemm_fits(const driver::DeviceInfo& info, const LnGemmLayout& layout);

/// The program (queues te, dma, act, vec). SBUF: the operand (K tiles of N BF16/FP16 at multiples of 64 bytes) from
/// offset 0, then the LayerNorm's buffers, then the GEMM's; PSUM: the LayerNorm's transposes, then (after them)
/// the GEMM's. Throws std::invalid_argument for a layout ln_gemm_fits refuses (naming why), mismatched sizes or
/// types, and like make_layernorm_program and make_gemm_program.
isa::Program make_ln_gemm_program(const driver::DeviceInfo& info, const LnGemmLayout& layout);

/// The program's length in TE cycles by the Pipeline's cost model (Pipeline::estimated_cycles; a planning aid).
double ln_gemm_estimate(const driver::DeviceInfo& info, const LnGemmLayout& layout);

/// A GEMM whose output the fused LayerNorm + GEMM `second` normalises, in one program (the transformer block's
/// projection into h1, then ln2 and the MLP's up GEMM): `first` (FP32 out [M, N] = the LayerNorm's [rows, cols], a
/// row or column bias epilogue) keeps its output in SBUF as well as storing it (GemmLayout::out_kept_in_sbuf, in M
/// tiles of the LayerNorm's row tiles), and the LayerNorm reads each row tile there once its epilogue is done
/// (LayerNormLayout::in_in_sbuf): no HBM round trip, no program boundary, and gamma, beta and `second`'s GEMM loads
/// go out beside the first GEMM. SBUF: `first` from its sbuf_base (plan_gemm's sbuf_bytes) and its output below
/// second.sbuf_base (or from second's end on), `second` from its sbuf_base; PSUM: each from bank 0, `second`'s only
/// once `first` is done with it. Throws std::invalid_argument for shapes or places that do not match, and like
/// make_gemm_program and make_ln_gemm_program.
isa::Program make_gemm_ln_gemm_program(const driver::DeviceInfo& info, const GemmLayout& first,
                                       const LnGemmLayout& second);

/// make_gemm_ln_gemm_program's length in TE cycles by the Pipeline's cost model (a planning aid), and the part of it
/// an average DMA engine is idle (less Pipeline::dma_engine_cycles): room for a prefetch (LnGemmLayout::prefetch).
struct GemmLnGemmEstimate {
  double cycles = 0;
  double dma_idle = 0;
};
GemmLnGemmEstimate gemm_ln_gemm_estimate(const driver::DeviceInfo& info, const GemmLayout& first,
                                         const LnGemmLayout& second);

/// The fused LayerNorm + GEMM over up to `cores` cores: the GEMM cut into a grid of blocks (split_gemm_grid; M in
/// TE-column tiles, N in multiples of kGemmSplitColumns), each block one program that normalises its own N rows (a
/// row is normalised once per block of its columns: blocks that share columns repeat the LayerNorm). Of the grids
/// with as many blocks as cores (or fewer where a dimension runs out), and of the GEMM's wave pieces of 1, 1.5, 2 or 3
/// engines' start-latency bytes (GemmLayout::wave_piece_latencies), the one whose first, largest block the Pipeline
/// estimates shortest (a DMA-bound block is shortest with a share of the weights, a LayerNorm-bound one with a share
/// of the rows).
struct LnGemmSplit {
  std::vector<GemmPiece> pieces;  ///< GemmPiece::layout: the block's GEMM (its moving fields unused)
  double estimate = 0.0;          ///< the first block's ln_gemm_estimate, TE cycles
};
/// Throws std::invalid_argument for cores < 1 and like make_ln_gemm_program when no grid fits.
LnGemmSplit ln_gemm_split(const driver::DeviceInfo& info, const LnGemmLayout& whole, int cores);

/// Block `piece` of `whole`'s GEMM (split_gemm_grid's) as a fused layout of its own: the LayerNorm of its N rows.
LnGemmLayout ln_gemm_piece(const LnGemmLayout& whole, const GemmPiece& piece);

/// ln_gemm_split's blocks, one step each, named `name`, the ones after the first with_previous; MACs K x M x N each.
KernelSequence ln_gemm_steps(const driver::DeviceInfo& info, const std::string& name, const LnGemmLayout& whole,
                             int cores);

}  // namespace trnsim::kernels
