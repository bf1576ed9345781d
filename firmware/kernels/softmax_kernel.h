// Softmax along the free axis of a [rows, cols] tensor in HBM, as a program for the trnsim ISA (dma, vec and act
// queues, software-pipelined over row tiles; docs/kernels.md "Softmax").
//
// Per row (every step one FP32 RNE operation, BRIEF section 3 rules 6-7; the same order as golden::softmax_rows):
//   causal: the columns j > row + causal_offset are masked: they take no part below and their outputs are +0,
//           whatever their inputs (NaN and Inf included); j runs over the unmasked columns
//   x_j   = widen(in[row, j])                         (exact; the DMA load casts in_type -> FP32)
//   m     = max_j x_j                                  (IEEE maximum, increasing j: a NaN anywhere gives NaN)
//   b     = -(m * scale)                               (one multiply; the negation is exact)
//   e_j   = exp(x_j * scale + b)                       (activation: multiply, add, exp as docs/isa.md defines it)
//   s     = sum_j e_j                                  (from +0.0, increasing j, in the same activation pass)
//   r     = 1 / s                                      (one FP32 division)
//   out_j = cast(e_j * r)                              (one multiply, then the DMA store casts FP32 -> out_type)
// For scale > 0 rounding is monotonic, so m * scale is the largest x_j * scale: the largest z is exactly 0, s >= 1
// and no e_j overflows. A row whose maximum is +-inf or NaN gives NaN (inf - inf); see docs/kernels.md.
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"

namespace trnsim::kernels {

/// Where one softmax's tensors are in HBM (HBM-space byte addresses) and what to compute.
struct SoftmaxLayout {
  int rows = 0;                                   ///< >= 1, any number (row tiles of the partition count)
  int cols = 0;                                   ///< >= 1, the free axis the softmax runs along
  uint64_t in_hbm = 0;                            ///< [rows, cols] in_type, row-major
  uint64_t out_hbm = 0;                           ///< [rows, cols] out_type, row-major (may equal in_hbm if same type)
  float scale = 1.0f;                             ///< applied before the max (attention: 1/sqrt(d)); finite, > 0
  isa::DataType in_type = isa::DataType::kFp32;   ///< any data type (widened exactly on load)
  isa::DataType out_type = isa::DataType::kFp32;  ///< any data type (cast once on store, FP8 saturating)
  bool causal = false;                            ///< mask columns j > row + causal_offset (header)
  int causal_offset = 0;                          ///< >= 0 (so that no row is fully masked)
};

/// The softmax's instructions on `g` tiles of `p` rows: one mechanism for make_softmax_program (row groups in SBUF)
/// and the GEMM's softmax epilogue (a block of scores in PSUM, GemmEpilogue::kSoftmax). The caller places the
/// operands and orders the three lists (vmax on vec, then exps on act, then norm on vec).
struct SoftmaxTiles {
  int p = 0;                                   ///< partitions: rows per tile
  int w = 0;                                   ///< columns computed per row (those past w are the caller's)
  int g = 1;                                   ///< tiles, `stride` elements apart in x and y
  int stride = 0;                              ///< elements between tiles (0 when g = 1 needs none)
  isa::MemSpace space = isa::MemSpace::kSbuf;  ///< where x is (SBUF or PSUM)
  uint32_t x = 0;                              ///< FP32 scores [p, w] per tile
  /// Where the exponentials go (FP32 [p, w] per tile, `stride` apart, in z_space): x itself (in place), or a
  /// scratch so that x is free once they are written.
  uint32_t z = 0;
  isa::MemSpace z_space = isa::MemSpace::kSbuf;
  isa::DataType z_type = isa::DataType::kFp32;  ///< the exponentials' type in z (cast once; their sums are FP32's)
  /// false: no normalisation (`norm` stays empty): z, in z_type, is the output, and the row sums in `sum` are the
  /// caller's (the attention piece's deferred normalisation, docs/kernels.md "Attention").
  bool normalise = true;
  uint32_t y = 0;                              ///< SBUF output [p, w] per tile, y_type (may be x)
  isa::DataType y_type = isa::DataType::kFp32;
  float scale = 1.0f;                          ///< as SoftmaxLayout::scale
  /// Causal: per tile, its first masked column a_t; column a_t + c of partition q is masked iff c >= q (the
  /// predicate `pred`, causal_softmax_constants), none at or past w. Empty: nothing masked.
  std::vector<int> window;
  uint32_t pred = 0;                           ///< SBUF: the predicate tile (FP32, 1.0 where c < q)
  uint32_t consts = 0;                         ///< SBUF: +0 then -inf (FP32)
  uint32_t mx = 0, nbias = 0, sum = 0, rcp = 0;  ///< SBUF column scratch, 4 bytes per tile each
  /// One tile (g = 1) in PSUM banks of this many columns (0: not cut): the row maxima bank by bank, into partial
  /// columns at `partials` (FP32, one per bank), then the maximum of those (exact: a maximum does not depend on how
  /// its elements are grouped), so that each bank's maxima can start as soon as the TE has written the bank.
  int bank_cols = 0;
  uint32_t partials = 0;
};
struct SoftmaxOps {
  std::vector<isa::Instruction> vmax;  ///< vec: the windows to -inf, the row maxima, the biases -(max * scale)
  /// With bank_cols, when w spans more than one bank: per bank, its columns' windows to -inf and its row maxima
  /// into its partial column; `vmax` then holds the maximum of the partials and the biases.
  std::vector<std::vector<isa::Instruction>> vmax_banks;
  std::vector<isa::Instruction> exps;  ///< act: z = exp(x * scale + bias), with the row sums (x's last reader)
  /// With bank_cols, when w spans more than one bank: `exps` cut by bank, each bank's columns in one instruction
  /// whose row sums continue those of the banks before it (activation `sum_acc`: the same sums bit for bit), so that
  /// each bank is free as soon as its exponentials are written; `exps` then stays empty.
  std::vector<std::vector<isa::Instruction>> exps_banks;
  std::vector<isa::Instruction> norm;  ///< vec: 1 / sum, y = z * (1 / sum), the windows of y to +0
  bool masked = false;                 ///< some window is not empty (vmax and norm read the constants)
};
SoftmaxOps softmax_ops(const SoftmaxTiles& tiles);

/// The softmax as a program on queues dma, vec and act, each ending with halt. Uses SBUF from offset 0 of the
/// first min(rows, sbuf_partitions) partitions, semaphores 0..3 (which must start at 0; Driver::run resets them),
/// no PSUM; touches HBM only inside the two tensors. Throws std::invalid_argument for rows or cols < 1, a scale
/// that is not finite and > 0, a negative causal_offset, a tensor outside HBM, or rows that do not fit the SBUF
/// (cols too large for one row tile of FP32 plus scratch).
isa::Program make_softmax_program(const driver::DeviceInfo& info, const SoftmaxLayout& layout);

}  // namespace trnsim::kernels
