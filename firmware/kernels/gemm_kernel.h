// The tiled GEMM kernel: out[M, N] (+)= stationary[K, M]^T @ moving[K, N] for any K, M, N >= 1, as ops of a
// Pipeline (pipeline.h) on the te and dma queues of a trnsim ISA program.
//
// Numerics (BRIEF section 3 rules 4 and 8; the same as golden::gemm(ops, te_rows, accumulate_into)): K is cut into
// tiles of te_rows partitions (2 * te_rows for FP8: double-row) that are accumulated into PSUM in increasing order;
// the first tile writes PSUM unless `accumulate_into`, in which case the old output P is first copied HBM -> PSUM and
// every tile adds to it. FP8 operands go to SBUF as byte pairs, two K rows per partition (firmware/isa/dtype.h).
// MX operands (rule 10) lie as FP8's, with their scales beside them in the batch buffer: each SBUF row of a K tile
// gets the scale of its block per column (te_scale_copies), which the TE instructions find at scale_addr.
//
// Tiling and ops are described in docs/driver.md ("The GEMM kernel"). In short:
//   - a *block* is one M tile (<= te_cols rows, PSUM partitions) x one group of G N tiles (<= 512 FP32 columns
//     each, one PSUM bank each); the stationary tile stays loaded while the TE sweeps the block's G banks; the
//     blocks go group by group, each group's M tiles in turn, and when the group's moving panel (all K) fits in
//     SBUF beside the stationary slots it is loaded once, with the group's first M tile (moving_resident);
//   - the blocks alternate between PSUM buffers (psum_banks / G of them) so that the DMA drains one block to HBM
//     while the TE fills the next;
//   - each block's K tiles arrive in *batches* of P K tiles (stationary [P*K_tile, M tile] into one of nbuf
//     stationary slots, moving [P*K_tile, block columns] into a moving slot unless resident), each batch loaded by
//     a few large 4-D copies spread over the DMA engines, so that DMA and TE overlap.
// Per batch j three kinds of op: load j (dma, after compute j - nbuf: its stationary slot is free, and after the
// last reader of its moving slot; published at once),
// compute j (te, after load j and compute j - 1; a block's first batch also after the drain of the block that used
// its PSUM buffer before) and, after a block's last batch, drain (dma). The Pipeline turns these dependencies into
// semaphores; the program is free of races under any timing (tests/kernels check this by a happens-before
// analysis).
#pragma once

#include <cstdint>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"
#include "firmware/kernels/pipeline.h"

namespace trnsim::kernels {

/// What the drain does to each block's FP32 sums on their way to out_hbm (docs/kernels.md "Fused epilogues"): the
/// element-wise step that would otherwise follow the GEMM as a program of its own (mlp_kernel.h), reading the sums
/// from PSUM instead of from an FP32 copy in HBM. The FP32 operations and their order are that program's, so the
/// bits are the same; the GEMM's FP32 output never reaches HBM.
struct GemmEpilogue {
  enum class Kind : uint8_t {
    kNone,        ///< the sums, cast to out_type by the drain's DMA copies
    /// out[m, n] = func(sum[m, n] * 1 + bias[m]), cast to out_type: RowBiasActLayout's Scalar-engine `activation`
    /// (a feature-major output: one bias per output row, i.e. per PSUM partition)
    kRowBiasAct,
    /// out[m, n] = residual[m, n] + (sum[m, n] + bias[n]) (without residual: sum + bias), cast to out_type:
    /// ColBiasAddLayout's Vector-engine adds (a token-major output: one bias per column)
    kColBiasAdd,
    /// out[m, :] = softmax(sum[m, :] * scale) along the whole row (N columns, at most psum_banks / 2 PSUM banks:
    /// one block holds whole rows), causal if asked (row m sees columns j <= m + causal_offset; the others are +0):
    /// make_softmax_program's operations and order, on the sums in PSUM (Vector and Scalar engines)
    kSoftmax,
  };
  Kind kind = Kind::kNone;
  uint64_t bias_hbm = 0;                        ///< [M] FP32 (kRowBiasAct) or [N] FP32 (kColBiasAdd)
  isa::ActFunc func = isa::ActFunc::kIdentity;  ///< kRowBiasAct
  float scale = 1.0f;                           ///< kSoftmax: finite, > 0
  bool causal = false;                          ///< kSoftmax
  int causal_offset = 0;                        ///< kSoftmax, >= 0
  bool residual = false;                        ///< kColBiasAdd
  uint64_t residual_hbm = 0;                    ///< [M, N] FP32, rows GemmLayout::out_ld apart (with residual)
  /// kSoftmax with GemmLayout::out_in_sbuf: false leaves the rows unnormalised (the attention piece's deferred
  /// normalisation, docs/kernels.md "Attention"): the output is the exponentials cast once to out_type, and M tile
  /// i's row sums (FP32, one per partition) go to the SBUF column at sums_sbuf + 4 i, above sbuf_limit.
  bool normalise = true;
  uint32_t sums_sbuf = 0;
};

/// Where the operands of one GEMM are in HBM (HBM-space byte addresses), and what to compute.
struct GemmLayout {
  isa::Dtype dtype = isa::Dtype::kBf16;  ///< element type of stationary and moving
  int k = 0;                             ///< contraction size, >= 1
  int m = 0;                             ///< stationary free size (output rows), >= 1
  int n = 0;                             ///< moving free size (output columns), >= 1
  uint64_t stationary_hbm = 0;           ///< [K, M] narrow elements, row-major
  /// Elements from one stationary row to the next in HBM, and from one row of its MX scales to the next; 0: m
  /// (dense). A column slice of a wider [K, ld] tensor: stationary_hbm at its first column (run_gemm_cores).
  int stationary_ld = 0;
  uint64_t moving_hbm = 0;               ///< [K, N] narrow elements, row-major
  /// Elements from one moving row to the next in HBM, and from one row of its MX scales to the next; 0: n (dense).
  /// A column slice of a wider [K, ld] tensor: moving_hbm at its first column (a GEMM split by N).
  int moving_ld = 0;
  uint64_t out_hbm = 0;                  ///< [M, N] of out_type, row-major
  /// Elements from one output row to the next (and from one row of an epilogue's residual to the next); 0: n.
  int out_ld = 0;
  /// Type of out in HBM: FP32, or a narrow type the drain casts the FP32 sums to (one rule 6 rounding, FP8
  /// saturating; with out_sr, stochastic per rule 9 with the device's SR_SEED). A narrow out_type needs
  /// accumulate_into false.
  isa::DataType out_type = isa::DataType::kFp32;
  bool out_sr = false;
  /// MX dtypes only (BRIEF section 3 rule 10): E8M0 scales [ceil(K / 32), M] and [ceil(K / 32), N], one byte each.
  uint64_t stationary_scales_hbm = 0, moving_scales_hbm = 0;
  /// out_hbm already holds P[M, N] (FP32); the result is P + S^T @ M, accumulated in PSUM starting from P.
  bool accumulate_into = false;
  /// The drain's element-wise step (GemmEpilogue); one needs accumulate_into and out_sr false.
  GemmEpilogue epilogue;
  /// Bytes per SBUF partition the GEMM may use from offset sbuf_base (0: all up to the partition's end), so that a
  /// program can keep data of its own beside it.
  uint32_t sbuf_limit = 0;
  /// Offset in each SBUF partition where the GEMM's buffers start (two GEMMs of one program side by side).
  uint32_t sbuf_base = 0;
  /// The load waves after the first are cut into pieces of at least this many times one DMA engine's start-latency
  /// bytes (latency_engines; >= 1): larger pieces cost less start latency per byte but keep fewer engines busy per
  /// wave. 1 suits most GEMMs; one whose DMA engines are busy throughout (a DMA-bound block of a split GEMM, a
  /// LayerNorm's loads beside the GEMM's, ln_gemm_kernel.h) can be shorter with more: gemm_steps and ln_gemm_split
  /// choose it by the Pipeline's estimate (with_best_wave_pieces, kWavePieceChoices).
  double wave_piece_latencies = 1.0;
  /// PSUM banks the GEMM may use from bank 0 (0: all); a softmax epilogue then takes one block of whole rows at a
  /// time when two do not fit.
  uint32_t psum_bank_limit = 0;
  /// A softmax or row bias + activation epilogue's output stays in SBUF for a later step of the same program
  /// instead of going to out_hbm: M tile i's rows on partitions 0..m_tile-1 at out_sbuf + i * out_sbuf_tile_bytes,
  /// columns dense in out_type (the layout stationary_in_sbuf reads: a K tile per M tile). Causal softmax: a row's
  /// columns past its M tile's last live column (plan m_tile rows from row m0: m0 + causal_offset + m_tile) are not
  /// written. The region must lie outside the GEMM's own [sbuf_base, sbuf_base + sbuf_limit).
  bool out_in_sbuf = false;
  uint32_t out_sbuf = 0;
  uint32_t out_sbuf_tile_bytes = 0;
  /// A row or column bias epilogue's output goes to out_hbm and stays in SBUF too, at out_sbuf in out_in_sbuf's
  /// layout (whole M tiles, every column): the epilogue writes each block there instead of into its staging slot and
  /// the store reads it from there, so a later op of the program can read the rows without loading them back
  /// (LayerNormLayout::in_in_sbuf; make_gemm_ln_gemm_program). add_gemm's drains are then the epilogues: the
  /// output is in SBUF when they are done, its stores land before the program ends. Not with out_in_sbuf.
  bool out_kept_in_sbuf = false;
  /// The stationary operand (bf16 or fp16: a row per partition) is already in SBUF, written by an earlier op of the
  /// program (add_gemm's te_after) or by an earlier program on the same core (docs/kernels.md "Weights resident in
  /// SBUF"): K tile t (rows t * te_rows ..) on partitions 0.. at stationary_sbuf + t *
  /// stationary_sbuf_tile_bytes, its M columns dense (an out_in_sbuf output of M = this GEMM's K, where the TE's
  /// columns equal its rows). Nothing is loaded for it; stationary_hbm is not read. The region must lie outside the
  /// GEMM's own.
  bool stationary_in_sbuf = false;
  uint32_t stationary_sbuf = 0;
  uint32_t stationary_sbuf_tile_bytes = 0;
  /// The moving operand (bf16 or fp16: a row per partition) is already in SBUF, written by an earlier op of the
  /// program (add_gemm's te_after) or by an earlier program on the same core: K tile t (rows t * te_rows ..) on
  /// partitions 0.. at moving_sbuf + t * moving_sbuf_tile_bytes, its N columns dense (e.g. a LayerNorm's transposed
  /// output, LayerNormLayout::out_in_sbuf). Nothing is loaded for it; moving_hbm is not read. The region must lie
  /// outside the GEMM's own. Both operands in SBUF: the GEMM loads nothing, a block's K tiles in one batch.
  bool moving_in_sbuf = false;
  uint32_t moving_sbuf = 0;
  uint32_t moving_sbuf_tile_bytes = 0;

  /// The row strides in elements: the _ld field, or the dense width when it is 0.
  int stationary_stride() const { return stationary_ld > 0 ? stationary_ld : m; }
  int moving_stride() const { return moving_ld > 0 ? moving_ld : n; }
  int out_stride() const { return out_ld > 0 ? out_ld : n; }
};

/// The tiling make_gemm_program() chose (all sizes in elements unless named _bytes).
struct GemmPlan {
  int k_tile = 0;            ///< partitions per K tile (te_rows; 2 * te_rows for FP8)
  int m_tile = 0;            ///< output rows per M tile (min(te_cols, psum_partitions))
  int n_tile = 0;            ///< columns per N tile (one PSUM bank: min(512, bank bytes / 4))
  int k_tiles = 0, m_tiles = 0, n_tiles = 0;
  int banks_per_block = 0;   ///< G: N tiles (PSUM banks) per block
  int n_groups = 0;          ///< blocks per M tile
  int psum_buffers = 0;      ///< blocks in PSUM at once (psum_banks / G)
  int blocks = 0;            ///< m_tiles * n_groups
  int ktiles_per_batch = 0;  ///< P
  int batches_per_block = 0;
  int batches = 0;           ///< blocks * batches_per_block = DMA load waves
  int sbuf_buffers = 0;      ///< stationary slots in SBUF (nbuf), a ring: batch j uses slot j % nbuf
  /// The moving panel of a group of N tiles (all K) stays in SBUF while the group's M tiles are computed (loaded
  /// with the group's first M tile); else the moving tiles are loaded with every batch, into a ring like the
  /// stationary's.
  bool moving_resident = false;
  /// Moving panels in SBUF when resident: 2 = double-buffered, group g in panel g % 2, the next group's loaded
  /// with this group's M tiles after the first (so only the first panel's load is exposed); 0 when not resident.
  int moving_panels = 0;
  int moving_slots = 0;      ///< moving slots: moving_panels x batches_per_block when resident, else sbuf_buffers
  uint32_t moving_slot_bytes = 0;      ///< bytes per partition of one moving slot (P K tiles, then their MX scales)
  uint32_t stationary_slot_bytes = 0;  ///< the same for a stationary slot
  uint32_t sbuf_bytes = 0;   ///< bytes per partition used from offset 0: the moving slots, the stationary ones, then
                             ///< the epilogue's buffers
  /// Epilogue buffers (GemmEpilogue; none without one), offsets in each SBUF partition: epilogue_slots slots, each
  /// an output staging area of a block's columns in out_type and for kColBiasAdd with a residual a residual area
  /// (FP32), for kSoftmax four FP32 columns (max, bias, sum, reciprocal); then for kRowBiasAct one bias column (FP32)
  /// per M tile, for kColBiasAdd a bias row (FP32) per group of N tiles (two, by the group's parity: every M tile of
  /// a group reads the same row), for kSoftmax +0, -inf and the causal predicate [M tile, M tile].
  uint32_t epilogue_offset = 0;
  uint32_t epilogue_slot_bytes = 0;  ///< bytes of one slot (staging, residual)
  /// Epilogue slots (0 without an epilogue): one per PSUM buffer, block b's is b % slots; a softmax kept in SBUF
  /// (out_in_sbuf) with one PSUM buffer has two, so that a block's exponentials go to one while the block before is
  /// normalised from the other.
  int epilogue_slots = 0;
  /// Bytes the GEMM moves over the DMA: operand loads (the moving once per M tile, or once when resident; the
  /// stationary once per group; none for an operand in SBUF), the P -> PSUM copies with accumulate_into and the output
  /// (none when it stays in SBUF).
  uint64_t dma_bytes = 0;
  uint32_t moving_row_bytes = 0;   ///< bytes per partition of one K tile's moving columns in a buffer (2 per column;
                                   ///< 0: moving_in_sbuf, no buffer)
  uint32_t stationary_row_bytes = 0;  ///< the same for the stationary (0: stationary_in_sbuf, no buffer)
  uint32_t moving_scale_bytes = 0;      ///< MX: bytes per partition of one K tile's moving scales (1 per column)
  uint32_t stationary_scale_bytes = 0;  ///< MX: the same for the stationary scales
};

/// The tiling for `layout` on a device described by `info`. Throws std::invalid_argument for a dimension < 1, a
/// narrow out_type with accumulate_into or out_sr with an FP32 out_type, an epilogue with accumulate_into or out_sr,
/// a moving_ld or out_ld below N, a tensor too large for the ISA's 32-bit strides, or a device too small for one K
/// tile (fewer SBUF partitions than TE rows or than an M tile, a PSUM bank smaller than one FP32, SBUF partitions
/// too small for one buffer).
GemmPlan plan_gemm(const driver::DeviceInfo& info, const GemmLayout& layout);

/// Whether a softmax epilogue (GemmEpilogue::kSoftmax) takes rows of `n` columns on `info`'s device: whole rows in
/// one block, at most psum_banks / 2 PSUM banks of 512 FP32 (2048 columns on trn2 and tiny).
bool softmax_epilogue_fits(const driver::DeviceInfo& info, int n);

/// Adds the GEMM's ops to `pipe` (built on `info`'s device) and returns its drains: when all of them have completed,
/// out[M, N] is in HBM (or in SBUF, out_in_sbuf), and the GEMM no longer touches PSUM. Its TE ops come after the ops
/// `te_after` (an operand in SBUF, stationary_in_sbuf, and PSUM that an earlier op of `pipe` still reads); its loads
/// wait for nothing outside it. Uses SBUF from offset sbuf_base of
/// partitions 0..max(te_rows, m_tile)-1 (plan.sbuf_bytes each, within sbuf_limit), the act (kRowBiasAct) or vec
/// (kColBiasAdd, kSoftmax; act too for kSoftmax) queue for an epilogue, and PSUM partitions 0..m_tile-1 from offset
/// 0 (plan.psum_buffers * G banks, within psum_bank_limit), so other ops of `pipe` must not touch those while the
/// GEMM runs. Touches HBM only inside the three tensors. Throws like plan_gemm().
std::vector<Pipeline::OpId> add_gemm(Pipeline& pipe, const driver::DeviceInfo& info, const GemmLayout& layout,
                                     const std::vector<Pipeline::OpId>& te_after = {});

/// The wave pieces the planners try (GemmLayout::wave_piece_latencies), keeping the one the Pipeline's estimate finds
/// shortest: wider pieces spend less of each DMA engine's time on start latencies but keep fewer engines busy per
/// wave, which pays only where the engines are busy throughout.
inline constexpr double kWavePieceChoices[] = {1.0, 1.5, 2.0, 3.0};

/// `layout` with the wave_piece_latencies of kWavePieceChoices whose GEMM program the Pipeline estimates shortest
/// (the smallest of equals). Throws like plan_gemm().
GemmLayout with_best_wave_pieces(const driver::DeviceInfo& info, const GemmLayout& layout);

/// The GEMM as a program of its own (a Pipeline with first semaphore 0): queues te and dma, each ending with halt;
/// the semaphores 0..kNumQueues-1 must start at 0 (Driver::run soft-resets them). Throws like plan_gemm().
isa::Program make_gemm_program(const driver::DeviceInfo& info, const GemmLayout& layout);

}  // namespace trnsim::kernels
