// DMA copies for the kernels: how a copy is described (copy_rows, transpose_copy, dense_copies) and the one way a
// copy, or a wave of copies issued back to back, is cut into pieces so that it spreads over the DMA engines
// (dma_pieces, spread_copies). Every kernel and every DMA-only program goes through these.
//
// Why cut at all (docs/isa.md "Costs", the figures of BRIEF section 2): a dma_copy runs on one of NUM_DMA_ENGINES
// engines, pays a start latency (DMA_LATENCY_NS, 1.3 us) and then moves bytes at one engine's bandwidth
// (DMA_BW_MBPS, about 23 B/ns); a large copy cut into P pieces finishes about P times sooner, and a piece below
// kMinPieceBytes costs more in latency than it saves in bandwidth.
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"

namespace trnsim::kernels {

/// Pieces are not cut below this many bytes (at 23 B/ns, 8 KiB take 0.36 us against a 1.3 us start latency).
inline constexpr uint64_t kMinPieceBytes = 8 * 1024;

/// Bytes a copy moves, counted in the wider of its two element types (what the device's cost figure counts).
uint64_t copy_bytes(const isa::CopyFields& c);
/// copy_bytes summed over `copies`.
uint64_t copy_bytes(const std::vector<isa::CopyFields>& copies);

/// `c` as dma_copy instructions: at most `parts` pieces and no more than it has kMinPieceBytes units, cut along its
/// outermost dimension with more than one entry into runs as equal as the counts allow; when that dimension has
/// fewer entries than pieces are wanted, each run is cut further along the next dimension, unless cutting straight
/// along one dimension that has enough entries gives a smaller largest piece. Dimension 0 (the contiguous run of
/// elements) is never cut. The pieces together are exactly `c`: every element once, in no
/// particular order of completion.
std::vector<isa::Instruction> dma_pieces(const isa::CopyFields& c, uint64_t parts);

/// A wave of copies issued back to back, cut so that it spreads over `engines` DMA engines: each copy gets a share
/// of the engines proportional to its bytes (at least one; the rest by largest remainder), then dma_pieces.
std::vector<isa::Instruction> spread_copies(const std::vector<isa::CopyFields>& copies, uint32_t engines);

/// Bytes all of the device's DMA engines move in one start latency (engines x bytes per ns x latency ns; 478 KB on
/// trn2): the size below which a copy, or a cut of work into pieces, mostly pays start latency. At least 1.
double dma_latency_bytes(const driver::DeviceInfo& info);

/// The DMA engines worth spreading copies of `bytes` over: as many as get a piece of at least what one engine moves
/// in one start latency (dma_latency_bytes / engines) times `pieces_of` (>= 1; larger pieces spend less of each
/// engine's time on start latencies but keep fewer engines busy), between 1 and all of them. More pieces would each
/// spend more engine time on their start latency than they save in bytes.
uint32_t latency_engines(const driver::DeviceInfo& info, uint64_t bytes, double pieces_of = 1.0);

/// A DMA-only program: `copies` spread over the device's DMA engines (spread_copies), then halt (which waits for all
/// of them).
isa::Program dma_program(const driver::DeviceInfo& info, const std::vector<isa::CopyFields>& copies);

/// A copy of `rows` rows of `n` elements: source rows `src_row_stride` bytes apart, destination rows
/// `dst_row_stride` bytes apart (one SBUF/PSUM partition per row: the partition bytes), elements dense. Throws
/// std::invalid_argument for counts beyond the ISA's 16 bits or strides beyond its 32 bits.
isa::CopyFields copy_rows(isa::MemSpace src_space, uint64_t src_addr, isa::DataType src_type, int64_t src_row_stride,
                          isa::MemSpace dst_space, uint64_t dst_addr, isa::DataType dst_type, int64_t dst_row_stride,
                          int rows, int n);

/// Copies that put a TE operand into SBUF in the layout load_stationary / multiply_moving read (firmware/isa/dtype.h;
/// FP8 pairs two rows per partition): `tiles` operands of [rows, cols] `dtype` elements, each row `src_row_bytes`
/// apart in HBM from `src_hbm` (row r of tile t at src_hbm + t * src_tile_bytes + r * src_row_bytes, elements
/// dense), operand t starting at SBUF address `dst + t * dst_tile_bytes`. One copy, or for FP8 with an odd `rows`
/// two (the pairs, then the last row alone). MX elements are moved as FP8 bytes of one type on both sides (a plain
/// copy keeps the bits). Throws std::invalid_argument for counts beyond the ISA's 16 bits or strides beyond its 32
/// bits.
std::vector<isa::CopyFields> te_operand_copies(const driver::DeviceInfo& info, isa::Dtype dtype, uint64_t src_hbm,
                                               uint64_t src_row_bytes, int rows, int cols, int tiles,
                                               uint64_t src_tile_bytes, uint64_t dst, uint64_t dst_tile_bytes);

/// Copies that put the E8M0 scales of MX TE operands into SBUF where load_stationary / multiply_moving read them
/// (firmware/isa/dtype.h "MX scales"): SBUF row j of operand t gets, at `dst + t * dst_tile_bytes` (partition j
/// counted from dst's), the scales of columns [c0, c0 + cols) of the block (k0 + t * tile_k + 2j) / 32 of an HBM
/// scale tensor [ceil(K / 32), width] at `scales_hbm` (one byte each). `rows`: operand partitions of each tile
/// (ceil(rows / 2) SBUF rows); k0 and tile_k even. One copy when tile_k is a multiple of 32 (every tile has the
/// same blocks), else one per tile and block. Throws std::invalid_argument as te_operand_copies.
std::vector<isa::CopyFields> te_scale_copies(const driver::DeviceInfo& info, uint64_t scales_hbm, int width, int c0,
                                             int cols, int k0, int rows, int tiles, int tile_k, uint64_t dst,
                                             uint64_t dst_tile_bytes);

/// The copy out[c, r] = cast(in[r, c]) of a row-major [rows, cols] HBM tensor into its row-major [cols, rows]
/// transpose (element types `in_type` -> `out_type`, one RNE cast, FP8 saturating): dimension 0 walks r (dense in
/// the output), dimension 1 walks c. Throws std::invalid_argument for a dimension outside 1..65535 (the ISA's
/// 16-bit counts).
isa::CopyFields transpose_copy(uint64_t in_hbm, isa::DataType in_type, uint64_t out_hbm, isa::DataType out_type,
                               int rows, int cols);

/// `elements` consecutive elements from `src_space`:`src` to `dst_space`:`dst` with a cast (`in_type` ->
/// `out_type`), as the fewest 2-D copies the ISA's 16-bit counts allow (rows of 8192 elements, at most 65535 rows
/// each, and the remainder). E.g. a tensor staged from a DMA buffer in host RAM (space host) into HBM.
std::vector<isa::CopyFields> dense_copies(isa::MemSpace src_space, uint64_t src, isa::DataType in_type,
                                          isa::MemSpace dst_space, uint64_t dst, isa::DataType out_type,
                                          uint64_t elements);
/// The same HBM -> HBM.
std::vector<isa::CopyFields> dense_copies(uint64_t in_hbm, isa::DataType in_type, uint64_t out_hbm,
                                          isa::DataType out_type, uint64_t elements);

}  // namespace trnsim::kernels
