// Transpose on the Tensor Engine: out[cols, rows] = in[rows, cols]^T as identity matmuls (docs/kernels.md
// "TE transpose").
//
// A tile of in, [K <= te_rows rows, M <= te_cols columns], is the stationary matrix; the moving matrix is the
// identity [K, K] (built once in SBUF by the Vector engine); the TE writes PSUM[M, K] = tile^T @ I = tile^T, and
// the DMA copies PSUM to out_hbm, casting FP32 -> out_type (for large groups of tiles the Scalar engine first copies
// them to SBUF in out_type, identity activation, and the DMA stores that: docs/kernels.md "TE transpose"). The TE
// takes only narrow inputs (BF16, FP16, FP8), so the input is a narrow tensor. FP8 input is widened to BF16 by the
// DMA on its way into SBUF (exact) and transposed as BF16, which gives the same result and keeps one input row per
// SBUF partition (FP8 TE operands are pairs).
//
// Numerics (BRIEF section 3 rules 2-5, the same as golden::transpose_te): out[c][r] is the column sum
// +0 + sum_k in[k][c] * I[k][r] over the K rows k of r's row tile, which is exactly in[r][c] (x * 1 and x * 0 are
// exact, adding zeros is exact) except:
//   - -0 becomes +0 (the sum starts at +0.0, and +0 + -0 = +0);
//   - NaN becomes the canonical NaN of out_type (no payload);
//   - an Inf or NaN at in[k][c] makes *every* out[c][r] of the same row tile NaN, for r != k (Inf * 0 = NaN,
//     NaN * 0 = NaN); out[c][k] itself keeps the Inf.
// For finite inputs the transpose is therefore bit-exact except for the sign of zeros; with out_type equal to the
// input dtype the values round-trip (widening then narrowing a narrow value is exact).
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"

namespace trnsim::kernels {

/// One transpose's tensors in HBM (HBM-space byte addresses).
struct TransposeLayout {
  int rows = 0;                                   ///< >= 1: rows of in (= columns of out)
  int cols = 0;                                   ///< >= 1: columns of in (= rows of out)
  uint64_t in_hbm = 0;                            ///< [rows, cols] dtype, row-major
  uint64_t out_hbm = 0;                           ///< [cols, rows] out_type, row-major
  /// Elements from one output row to the next; 0: rows (dense). A column slice of a wider [cols, out_ld] output:
  /// out_hbm at its first column (the rows of in split over cores, each core writing its columns of out).
  int out_ld = 0;
  isa::Dtype dtype = isa::Dtype::kBf16;           ///< element type of in (a TE input type)
  isa::DataType out_type = isa::DataType::kBf16;  ///< any data type; the input's type keeps every finite value
};

/// The input rows per TE tile the kernel uses on `info` (the `tile_rows` of golden::transpose_te):
/// min(te_rows, sbuf_partitions, PSUM bank bytes / 4, 512); te_rows on every named configuration.
int transpose_tile_rows(const driver::DeviceInfo& info);

/// The identity [k, k] in SBUF partitions 0..k-1 at `ident_off` (elements of `type`, a TE input type), built by
/// the Vector engine through an FP32 scratch row of k elements at `scratch_off`: the moving operand of a TE transpose.
std::vector<isa::Instruction> te_identity(int k, uint32_t scratch_off, uint32_t ident_off, isa::DataType type);

/// The TE instructions that transpose one tile: load_stationary of the [k rows, m columns] tile at `tile_sbuf`, then
/// multiply_moving of the identity [k, k] at `ident_sbuf` into PSUM [m partitions, k FP32] at `psum_addr`.
std::vector<isa::Instruction> te_transpose_tile(isa::Dtype dtype, uint64_t tile_sbuf, int k, int m,
                                                uint64_t ident_sbuf, uint64_t psum_addr);

/// The PSUM slots TE transposes write, for tiles of `kt` rows (transpose_tile_rows or fewer): [m partitions, kt FP32]
/// each, never crossing a bank, taken as a ring. Consecutive slots drain together (one DMA copy, or one Scalar-engine
/// copy, for several column chunks): within a bank, or across banks when the slots fill them exactly (then they are
/// one run, slot s at s * kt * 4), up to half the slots, so that the TE fills the other half meanwhile.
struct TransposeSlots {
  TransposeSlots(const driver::DeviceInfo& info, int kt);
  int kt = 0, per_bank = 0, count = 0, max_group = 1;
  bool linear = false;
  uint32_t bank_bytes = 0;
  /// PSUM offset (partition 0) of slot s.
  uint32_t offset(int s) const;
  /// Whether slot s, a chunk of m of mt partitions, may join the drain group of `size` slots from `first`; a chunk
  /// of fewer partitions drains alone, and so does every chunk when the output's chunk stride does not fit the ISA's
  /// 32-bit strides (`stride_fits` false).
  bool joins(int first, int size, int s, int m, int mt, bool stride_fits) const;
};

/// The DMA copy that drains `g` consecutive slots from `first` (chunks of mt columns; the first m partitions, k FP32
/// each) into rows [c0, c0 + ...) of a [*, out_ld] `out_type` output at columns [r0, r0 + k): out row c0 + i * mt
/// + p, column r0 + j gets slot first + i's partition p, element j (one RNE cast, exact for TE-transposed narrow
/// values).
isa::CopyFields transpose_drain_copy(const driver::DeviceInfo& info, const TransposeSlots& slots, int first, int g,
                                     int m, int k, int mt, uint64_t out_hbm, uint64_t out_ld, isa::DataType out_type,
                                     uint64_t c0, uint64_t r0);

/// The transpose as a program on queues te, dma, act and vec (each ending with halt). Uses SBUF from offset 0 of the
/// first max(min(rows, te_rows), min(cols, te_cols)) partitions, PSUM from offset 0 of the first min(cols, te_cols)
/// partitions and
/// semaphores 0..3 (starting at 0); touches HBM only inside the two tensors. Throws std::invalid_argument for rows
/// or cols < 1, an out_ld below rows, a tensor outside HBM, or a device whose SBUF/PSUM cannot hold one tile.
isa::Program make_transpose_program(const driver::DeviceInfo& info, const TransposeLayout& layout);

}  // namespace trnsim::kernels
