// LayerNorm and RMSNorm along the free axis of a [rows, cols] tensor in HBM, as programs for the trnsim ISA (dma,
// vec and act queues, software-pipelined over row tiles; docs/kernels.md "LayerNorm and RMSNorm").
//
// LayerNorm, per row (every step one FP32 RNE operation; the order of golden::layernorm_rows):
//   x_j = widen(in[row, j]);  s = sum_j x_j (from +0.0, increasing j);  mean = s / cols;  n = -mean (exact)
//   c_j = x_j + n;  q = sum_j c_j * c_j (from +0.0);  v = q / cols + eps;  r = rsqrt(v) (docs/isa.md definition)
//   out_j = cast((c_j * r) * gamma_j + beta_j)
// RMSNorm, per row:
//   q = sum_j x_j * x_j (from +0.0);  v = q / cols + eps;  r = rsqrt(v);  out_j = cast((x_j * r) * gamma_j)
// gamma and beta are FP32 [cols] vectors shared by all rows. `cols` is converted to FP32 (exact up to 2^24).
#pragma once

#include <cstdint>

#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"
#include "firmware/kernels/pipeline.h"

namespace trnsim::kernels {

/// One LayerNorm's tensors in HBM (HBM-space byte addresses).
struct LayerNormLayout {
  int rows = 0;            ///< >= 1
  int cols = 0;            ///< >= 1, the normalized (free) axis
  uint64_t in_hbm = 0;     ///< [rows, cols] in_type, row-major
  uint64_t out_hbm = 0;    ///< [rows, cols] out_type, row-major
  uint64_t gamma_hbm = 0;  ///< [cols] FP32
  uint64_t beta_hbm = 0;   ///< [cols] FP32
  float eps = 1e-5f;       ///< added to the variance; finite, >= 0
  isa::DataType in_type = isa::DataType::kFp32;
  isa::DataType out_type = isa::DataType::kFp32;
  /// Write the output transposed, out[c, r] at out_hbm + (c * out_ld + r) elements, without the row-major copy
  /// going through HBM: the Vector engine casts each row tile to out_type (bf16 or fp16, a Tensor Engine input
  /// type) in SBUF and the TE transposes it (identity matmuls in tiles of transpose_tile_rows() rows from the
  /// tile's first row, transpose_kernel.h: finite values exact but -0 -> +0; an Inf or NaN poisons its tile's
  /// column), then the DMA stores PSUM (the bits of make_layernorm_program followed by make_transpose_program).
  bool transposed_out = false;
  /// transposed_out: elements from one output row to the next (0: rows); a column slice of a wider [cols, out_ld]
  /// output at out_hbm's first column (rows of one tensor split over cores, each writing its columns).
  int out_ld = 0;
  /// transposed_out into SBUF instead of HBM, for a later op of the same program (add_layernorm; out_hbm and out_ld
  /// are not used): features [t * mt, (t + 1) * mt) (mt = min(te_cols, psum_partitions)) on partitions 0..mt-1 at
  /// out_sbuf + t * out_sbuf_tile_bytes, the rows as columns (row r at + r * 2 bytes): the layout a GEMM reads its
  /// moving operand from (GemmLayout::moving_in_sbuf, where mt equals the TE's rows). The Scalar engine copies each
  /// transposed tile out of PSUM (exact). The region must lie outside the kernel's own SBUF bytes.
  bool out_in_sbuf = false;
  uint32_t out_sbuf = 0;
  uint32_t out_sbuf_tile_bytes = 0;
  /// Offset in each SBUF partition where the kernel's own buffers start (a multiple of 64).
  uint32_t sbuf_base = 0;
  /// Offset in each SBUF partition past the kernel's last byte (0: the partition's end), so that data of a later
  /// program above it survives (docs/kernels.md "Weights resident in SBUF").
  uint32_t sbuf_end = 0;
  /// 0: every group of rows is loaded over all DMA engines. >= 1: the groups after the first in pieces of at least
  /// this many engines' start-latency bytes each (latency_engines, dma_copies.h): fewer, larger copies, for a
  /// program whose DMA engines are its limit (the GEMM that reads the output, ln_gemm_kernel.h). Finite.
  double load_piece_latencies = 0;
  /// The input rows are already in SBUF, written by an earlier op of the program (add_layernorm's in_after; e.g. a
  /// GEMM's output kept there, GemmLayout::out_kept_in_sbuf): row tile t (rows t * P .., P = min(rows, SBUF
  /// partitions)) on partitions 0.. at in_sbuf + t * in_sbuf_tile_bytes, cols FP32 dense; in_hbm is not read. The
  /// first pass (the sums) reads them there into the kernel's buffers, so they are left as they are. FP32 input and
  /// LayerNorm only; the region must lie outside the kernel's bytes.
  bool in_in_sbuf = false;
  uint32_t in_sbuf = 0;
  uint32_t in_sbuf_tile_bytes = 0;
};

/// What add_layernorm added: when every op of `done` has completed, the output is written (in SBUF with
/// out_in_sbuf: the GEMM that reads it takes them as te_after); the kernel's SBUF bytes are [sbuf_base, sbuf_end).
struct LayerNormOps {
  std::vector<Pipeline::OpId> done;
  uint64_t sbuf_end = 0;
};

/// One RMSNorm's tensors in HBM.
struct RmsNormLayout {
  int rows = 0;
  int cols = 0;
  uint64_t in_hbm = 0;     ///< [rows, cols] in_type, row-major
  uint64_t out_hbm = 0;    ///< [rows, cols] out_type, row-major
  uint64_t gamma_hbm = 0;  ///< [cols] FP32
  float eps = 1e-6f;       ///< added to the mean square; finite, >= 0
  isa::DataType in_type = isa::DataType::kFp32;
  isa::DataType out_type = isa::DataType::kFp32;
};

/// LayerNorm as a program on queues dma, vec and act (each ending with halt; te too with transposed_out). Uses SBUF
/// from offset sbuf_base of the first min(rows, sbuf_partitions) partitions, the Pipeline's semaphores (starting at 0), PSUM
/// only with transposed_out (from offset 0); touches HBM only inside the four tensors (in, gamma, beta read; out
/// written). Throws std::invalid_argument for rows or cols < 1, an eps that is negative or not finite, a tensor
/// outside HBM, cols too large for the SBUF, or transposed_out with an out_type the TE does not take (bf16, fp16),
/// an out_ld below rows, or a device whose PSUM holds no tile.
isa::Program make_layernorm_program(const driver::DeviceInfo& info, const LayerNormLayout& layout);

/// make_layernorm_program's length in TE cycles by the Pipeline's cost model (Pipeline::estimated_cycles: a planning
/// aid). Throws like make_layernorm_program.
double layernorm_estimate(const driver::DeviceInfo& info, const LayerNormLayout& layout);

/// The LayerNorm's ops added to `pipe` (built on `info`'s device), with the resources of make_layernorm_program; its
/// PSUM (transposed_out) is read for the last time by the ops of `done`. Its row loads (in_in_sbuf: its first reads of
/// the rows) wait for the ops of `in_after` (earlier ops of `pipe` that write the input rows): one list for every row
/// tile, or one list per row tile of min(rows, SBUF partitions) rows (a GEMM's drains by M tile); gamma and beta do
/// not. Its transposes (transposed_out) also wait for `psum_after`: earlier ops of `pipe` that still use its PSUM.
/// The same errors, and for an out_in_sbuf output that is not transposed, or overlaps the kernel's bytes or the
/// partition's end, and an in_after of another length. make_layernorm_program refuses out_in_sbuf (nothing would read
/// it) and in_in_sbuf (nothing would write it).
LayerNormOps add_layernorm(Pipeline& pipe, const driver::DeviceInfo& info, const LayerNormLayout& layout,
                           const std::vector<std::vector<Pipeline::OpId>>& in_after = {},
                           const std::vector<Pipeline::OpId>& psum_after = {});

/// RMSNorm as a program; the same resources and errors as make_layernorm_program (no beta).
isa::Program make_rmsnorm_program(const driver::DeviceInfo& info, const RmsNormLayout& layout);

}  // namespace trnsim::kernels
