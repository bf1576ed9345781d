// Multi-head scaled dot-product attention (Vaswani et al. 2017, "Attention is all you need", eq. 1):
// O_h = softmax(Q_h K_h^T / sqrt(d)) V_h for every head h, as a sequence of programs (kernel_sequence.h) built on
// the GEMM, softmax and TE-transpose kernels. Layouts and numerics: docs/kernels.md, "Attention".
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"
#include "firmware/kernels/kernel_sequence.h"

namespace trnsim::kernels {

/// Where one attention's tensors are in HBM. Q and K come feature-major (the layout a feature-major QKV projection
/// produces, and the one the Tensor Engine contracts over), V token-major per head, the output feature-major.
struct AttentionLayout {
  int seq = 0;                 ///< T, tokens (queries = keys), >= 1
  int heads = 0;               ///< H, >= 1
  int head_dim = 0;            ///< d, >= 1
  bool causal = false;         ///< query q attends to keys k <= q only (GPT-2)
  bool te_transpose = true;    ///< transpose the probabilities on the TE (identity matmul); else by strided DMA
  int cores = 1;               ///< the heads' programs of each step are one wave over this many cores
  uint64_t qT_hbm = 0;         ///< [H*d, T] BF16: rows h*d .. h*d+d-1 are Q_h^T
  uint64_t kT_hbm = 0;         ///< [H*d, T] BF16: K_h^T likewise
  uint64_t v_hbm = 0;          ///< [H, T, d] BF16: V_h, token-major
  /// [H*d, T] BF16, V^T feature-major like qT (0: none). Where the heads run as pieces (attention_pieces > 0) and
  /// this is set, the pieces read V from it with transposing loads and v_hbm is not read.
  uint64_t vT_hbm = 0;
  uint64_t scores_hbm = 0;     ///< scratch [H, T, T] FP32: S_h = Q_h K_h^T (unscaled)
  uint64_t probs_hbm = 0;      ///< scratch [H, T, T] BF16: P_h = softmax(S_h / sqrt(d)) along keys
  uint64_t probsT_hbm = 0;     ///< scratch [H, T, T] BF16: P_h^T (keys x queries)
  uint64_t outT_hbm = 0;       ///< [H*d, T] out_type: rows h*d .. are O_h^T = (P_h V_h)^T
  /// Type of the output: FP32, or a narrow type the pv GEMMs' drains cast to (one rounding, rule 6; FP8 saturating)
  isa::DataType out_type = isa::DataType::kFp32;
  /// The softmax in the scores GEMMs' drains ("head h scores+softmax", GemmEpilogue::kSoftmax) when a row of keys
  /// fits one block (softmax_epilogue_fits: T <= 2048 on trn2 and tiny): the scores then stay in PSUM and
  /// scores_hbm is not used. The same bits either way.
  bool fused_softmax = false;
  /// Each head's steps in one program per piece of its queries, P never leaving the chip ("head h attention",
  /// make_attention_piece_program), where attention_piece_fits and with te_transpose: scores_hbm, probs_hbm and
  /// probsT_hbm are then not written. The same bits.
  bool fused_pieces = false;
  /// Pieces (fused_pieces): offset in each SBUF partition past a piece's last byte (0: the partition's end), so that
  /// the `prefetch` region above it survives the later pieces.
  uint32_t sbuf_end = 0;
  /// Pieces: copies HBM -> SBUF above sbuf_end that every core makes for the programs after the attention (weights
  /// they read where they are, docs/kernels.md "Weights resident in SBUF"). The pieces are then pinned to cores
  /// (KernelStep::core) as the work list would run them on their estimates, and each core's pieces share its
  /// prefetch, cut into pieces of 2 to 6 engines' start-latency bytes (the size the estimates find cheapest) and
  /// dealt by the time each piece's DMA engines wait for the softmax.
  std::vector<isa::CopyFields> prefetch;
};

/// The steps, in order:
///   "head h scores"     S_h[T, T] = (Q_h^T)^T @ K_h^T         GEMM, stationary Q_h^T [d, T], moving K_h^T [d, T]
///                                                              ("head h scores+softmax" with fused_softmax)
///   "softmax"           P = softmax(S * (1/sqrt d)) per row   one program over all H*T rows (per head when causal:
///                                                              "head h softmax", the mask is per query row)
///   "head h transpose"  P_h^T[T, T]                           TE transpose (or "probs transpose", one DMA program)
///   "head h pv"         O_h^T[d, T] = V_h^T @ P_h^T            GEMM, stationary V_h [T, d], moving P_h^T [T, T]
///   or "head h transpose+pv" (fused_softmax with the TE transpose, where transpose_pv_fits): the two in one program,
///                       P^T kept in SBUF (make_transpose_pv_program), cut into the heads' pieces by queries
///   or "head h attention" (fused_pieces with the TE transpose, where attention_piece_fits): every step above in one
///                       program per piece of queries, P kept in SBUF (make_attention_piece_program); this replaces
///                       all the others
/// 1/sqrt(d) is rounded to FP32 once. Throws std::invalid_argument for sizes < 1 and like the kernels it uses.
KernelSequence make_attention_programs(const driver::DeviceInfo& info, const AttentionLayout& layout);

/// The pieces of queries each head is cut into when make_attention_programs runs `layout` as "head h attention"
/// programs (AttentionLayout::fused_pieces with te_transpose, where attention_piece_fits), else 0. Those programs
/// have their own order (golden::attention's piece_order, docs/kernels.md "Attention"), so a result is checked
/// against the golden of that order where this is > 0.
int attention_pieces(const driver::DeviceInfo& info, const AttentionLayout& layout);

/// TE cycles the prefetch (AttentionLayout::prefetch) adds to the attention by the Pipeline's estimates: per core,
/// its pieces' attention_piece_estimate with their shares less without, the most of any core (0 without pieces or
/// prefetch): what the weights cost where the DMA engines are not idle enough to take them. Throws like
/// make_attention_piece_program, and std::invalid_argument when a core gets no piece.
double attention_prefetch_cost(const driver::DeviceInfo& info, const AttentionLayout& layout);

/// TE cycles the DMA engines of each core's attention pieces are idle without the prefetch, by the Pipeline's cost
/// figures (each piece's estimate less Pipeline::dma_engine_cycles, summed over the core's pieces as piece_wave pins
/// them), the least of any core: how much of a prefetch the pieces can take (0 without pieces or prefetch). Throws
/// like attention_prefetch_cost.
double attention_dma_idle(const driver::DeviceInfo& info, const AttentionLayout& layout);

/// 1/sqrt(head_dim) as the FP32 scale the softmax applies (double, rounded once).
float attention_scale(int head_dim);

/// One head's O^T = V^T @ P^T with the transpose of P done on the way (docs/kernels.md "Attention"): for each key
/// tile the program loads P's columns of that tile (all queries of the piece), transposes its query tiles on the TE
/// into PSUM (identity matmuls, as make_transpose_program), copies them to SBUF as BF16 (Scalar engine, exact: BF16
/// values) and multiplies them in as the moving operand of that key tile, accumulating O^T over the key tiles in
/// increasing order in PSUM; P^T never reaches HBM. The bits are those of make_transpose_program then the GEMM
/// kernel (golden::transpose_te, golden::gemm).
struct TransposePvLayout {
  int keys = 0;           ///< T_k, >= 1: P's columns, V's rows (the contraction)
  int queries = 0;        ///< queries of this piece, >= 1: P's rows from q0
  int head_dim = 0;       ///< d, >= 1, at most te_cols
  int p_ld = 0;           ///< elements between P's rows (its full width, >= keys)
  int out_ld = 0;         ///< elements between O^T's rows (>= queries)
  uint64_t p_hbm = 0;     ///< P [queries, keys] BF16 (row q of the piece at p_hbm + q * p_ld * 2)
  uint64_t v_hbm = 0;     ///< V [keys, d] BF16
  uint64_t out_hbm = 0;   ///< O^T [d, queries] out_type (row j at out_hbm + j * out_ld * element bytes)
  isa::DataType out_type = isa::DataType::kBf16;
  /// Causal: the caller's promise that row i of the piece is query `query0 + i` and P[i, k] is +0 for every key
  /// k > query0 + i (the causal softmax stores its masked columns as +0). The kernel then loads and transposes only
  /// the query tiles of a key tile that have a live key in it, and no key tile past the piece's last query; the +0
  /// parts of P^T are written on chip and still multiplied in (the same bits: +0 x V as before, so an Inf or NaN in
  /// V still gives NaN).
  bool causal = false;
  int query0 = 0;
};

/// Whether make_transpose_pv_program takes `queries` queries of head_dim d on `info`'s device: the accumulator
/// [d, queries] FP32 in half of PSUM, the transposes' slots in the other half, query tiles of transpose_tile_rows.
bool transpose_pv_fits(const driver::DeviceInfo& info, int queries, int head_dim);

/// The program (queues dma, te, act, vec). Throws std::invalid_argument for a layout transpose_pv_fits refuses, sizes
/// < 1, row strides below the widths or a negative query0.
isa::Program make_transpose_pv_program(const driver::DeviceInfo& info, const TransposePvLayout& layout);

/// One head's attention for a piece of its queries as one program, P never leaving the chip (docs/kernels.md
/// "Attention"): S = Q K^T for the piece's queries (the GEMM kernel; causal: only the keys up to the piece's last
/// query), the softmax in the GEMM's drains writing P into SBUF (GemmLayout::out_in_sbuf), then
/// make_transpose_pv_program's transposes and PV reading that P where it is. Its own order, not the bits of the
/// "scores+softmax" and "transpose+pv" steps it replaces: P holds the exponentials, each output column is multiplied
/// by its query's 1 / s at the end, and, causal, each query tile's PV runs over the key tiles up to its own only
/// (golden::attention with piece_order; docs/kernels.md "Attention", "The pieces' own order").
struct AttentionPieceLayout {
  int seq = 0;          ///< T, >= 1: keys (queries = keys)
  int head_dim = 0;     ///< d, >= 1
  int query0 = 0;       ///< the piece's first query, a multiple of transpose_tile_rows, >= 0
  int queries = 0;      ///< >= 1, query0 + queries <= T
  bool causal = false;  ///< query q attends to keys k <= q only
  float scale = 1.0f;   ///< the softmax's scale (attention_scale)
  uint64_t qT_hbm = 0;  ///< Q_h^T [d, T] BF16
  uint64_t kT_hbm = 0;  ///< K_h^T [d, T] BF16
  uint64_t v_hbm = 0;   ///< V_h [T, d] BF16, or with v_ld > 0 V_h^T [d, T] BF16 with rows v_ld elements apart
  int v_ld = 0;         ///< 0: v_hbm is token-major; > 0 (>= T): feature-major, read transposed
  uint64_t outT_hbm = 0;  ///< O_h^T [d, T] out_type: columns query0 .. query0 + queries - 1 are written
  isa::DataType out_type = isa::DataType::kBf16;
  /// Offset in each SBUF partition past the piece's last byte (0: the partition's end).
  uint32_t sbuf_end = 0;
  /// Copies HBM -> SBUF (at or above sbuf_end) for later programs, which the DMA queue issues as they are, a share
  /// as the softmax releases each query tile: they fill the DMA engines' idle time (AttentionLayout::prefetch cuts
  /// them into pieces of a few start latencies' bytes). Each must be a copy into SBUF that the piece's own bytes do
  /// not overlap.
  std::vector<isa::CopyFields> prefetch;
};

/// Whether make_attention_piece_program takes `queries` queries of head_dim d over `seq` keys on `info`'s device:
/// the softmax epilogue's whole rows, transpose_pv_fits, the GEMM's M tile equal to the transposes' tile, and SBUF
/// for the GEMM, the piece's P and the transposes' buffers together.
bool attention_piece_fits(const driver::DeviceInfo& info, int seq, int queries, int head_dim,
                          uint32_t sbuf_end = 0);

/// The program (queues dma, te, act, vec). Throws std::invalid_argument for a layout attention_piece_fits refuses,
/// sizes < 1, a query0 that is negative, not a multiple of the tile or past T - queries, and tensors outside HBM.
isa::Program make_attention_piece_program(const driver::DeviceInfo& info, const AttentionPieceLayout& layout);

/// The piece program's length in TE cycles by the Pipeline's cost model (Pipeline::estimated_cycles: a planning aid,
/// not a promise). Throws like make_attention_piece_program.
double attention_piece_estimate(const driver::DeviceInfo& info, const AttentionPieceLayout& layout);

}  // namespace trnsim::kernels
