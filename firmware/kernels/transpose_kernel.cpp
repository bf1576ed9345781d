// TE transpose kernel (transpose_kernel.h); tiling and pipeline: docs/kernels.md "TE transpose".
#include "firmware/kernels/transpose_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "firmware/kernels/pipeline.h"

namespace trnsim::kernels {
namespace {

using isa::AluOp;
using isa::DataType;
using isa::Engine;
using isa::MemSpace;

constexpr int kWantedBuffers = 3;
/// SBUF staging buffers of the drains (one filled by the Scalar engine while others are stored).
constexpr int kStagingBuffers = 3;
/// Column block loaded per row tile, in bytes per partition (a few column tiles: one DMA wave feeds several TE
/// tiles, and loads of the next block overlap the TE).
constexpr uint64_t kBlockBytes = 16 * 1024;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("transpose kernel: " + what);
}

}  // namespace

std::vector<isa::Instruction> te_identity(int k, uint32_t scratch_off, uint32_t ident_off, isa::DataType type) {
  // iota(i0 - p) == 0 -> 1.0 / 0.0, cast to `type` (exact).
  return {iota_op(k, k, scratch_off, -1, 1),
          tensor_scalar(AluOp::kIsEqual, 0.0f, AluOp::kNone, 0.0f, k, k, operand(ident_off, type), operand(scratch_off))};
}

std::vector<isa::Instruction> te_transpose_tile(isa::Dtype dtype, uint64_t tile_sbuf, int k, int m,
                                                uint64_t ident_sbuf, uint64_t psum_addr) {
  isa::Instruction ls;
  ls.op = isa::Opcode::kLoadStationary;
  ls.te.dtype = dtype;
  ls.te.sbuf_addr = tile_sbuf;
  ls.te.k = static_cast<uint16_t>(k);
  ls.te.free_size = static_cast<uint16_t>(m);
  isa::Instruction mm;
  mm.op = isa::Opcode::kMultiplyMoving;
  mm.te.dtype = dtype;
  mm.te.sbuf_addr = ident_sbuf;
  mm.te.psum_addr = psum_addr;
  mm.te.k = static_cast<uint16_t>(k);
  mm.te.free_size = static_cast<uint16_t>(k);
  return {ls, mm};
}

TransposeSlots::TransposeSlots(const driver::DeviceInfo& info, int k) : kt(k), bank_bytes(info.psum_bank_bytes()) {
  if (kt <= 0) return;
  per_bank = static_cast<int>(uint64_t(bank_bytes) / (uint64_t(kt) * 4));
  count = per_bank * static_cast<int>(info.psum_banks);
  linear = uint64_t(per_bank) * uint64_t(kt) * 4 == bank_bytes;
  max_group = linear ? std::max(1, count / 2) : std::max(1, per_bank);
}

uint32_t TransposeSlots::offset(int s) const {
  return uint32_t(uint64_t(s / per_bank) * bank_bytes + uint64_t(s % per_bank) * uint64_t(kt) * 4);
}

bool TransposeSlots::joins(int first, int size, int s, int m, int mt, bool stride_fits) const {
  return size < max_group && (linear || s % per_bank != 0) && m == mt && stride_fits && s == first + size;
}

isa::CopyFields transpose_drain_copy(const driver::DeviceInfo& info, const TransposeSlots& slots, int first, int g,
                                     int m, int k, int mt, uint64_t out_hbm, uint64_t out_ld, isa::DataType out_type,
                                     uint64_t c0, uint64_t r0) {
  const uint64_t eo = isa::data_type_bytes(out_type);
  isa::CopyFields c = copy_rows(MemSpace::kPsum, slots.offset(first), DataType::kFp32,
                                int64_t(info.psum_partition_bytes), MemSpace::kHbm, out_hbm + (c0 * out_ld + r0) * eo,
                                out_type, int64_t(out_ld * eo), m, k);
  if (g > 1) {
    c.count[2] = static_cast<uint16_t>(g);
    c.src_stride[2] = slots.kt * 4;
    c.dst_stride[2] = static_cast<int32_t>(uint64_t(mt) * out_ld * eo);
  }
  return c;
}

int transpose_tile_rows(const driver::DeviceInfo& info) {
  return static_cast<int>(
      std::min<uint64_t>({info.te_rows, info.sbuf_partitions, info.psum_bank_bytes() / 4, uint64_t(isa::kMaxMovingN)}));
}

isa::Program make_transpose_program(const driver::DeviceInfo& info, const TransposeLayout& l) {
  require(l.rows >= 1 && l.cols >= 1, fmt::format("rows and cols must be >= 1 (got {}, {})", l.rows, l.cols));
  require(static_cast<uint8_t>(l.dtype) <= static_cast<uint8_t>(isa::Dtype::kFp8E5M2),
          "dtype must be a Tensor Engine input type (bf16, fp16, fp8e4m3, fp8e5m2)");
  require(info.te_rows >= 1 && info.te_cols >= 1 && info.sbuf_partitions >= 1 && info.psum_partitions >= 1 &&
              info.psum_banks >= 1,
          "the device has no Tensor Engine, SBUF or PSUM");
  const DataType in_type = static_cast<DataType>(static_cast<uint8_t>(l.dtype));
  // FP8 input is widened to BF16 on its way into SBUF (exact: every FP8 E4M3/E5M2 value is a BF16 value, NaN stays
  // NaN) and transposed as BF16: a K tile of te_rows rows then needs no FP8 double-row pairing in SBUF, and the
  // result is the same, since the transpose only multiplies by 1 and 0 (header).
  const bool fp8 = isa::te_pe_partitions(l.dtype) == 2;
  const isa::Dtype te_dtype = fp8 ? isa::Dtype::kBf16 : l.dtype;
  const DataType te_type = static_cast<DataType>(static_cast<uint8_t>(te_dtype));
  const uint64_t ei = isa::data_type_bytes(in_type), es = isa::data_type_bytes(te_type);
  const uint64_t eo = isa::data_type_bytes(l.out_type);
  const uint64_t elems = uint64_t(l.rows) * uint64_t(l.cols);
  require(l.out_ld == 0 || l.out_ld >= l.rows, fmt::format("out_ld {} is smaller than rows {}", l.out_ld, l.rows));
  const uint64_t out_ld = l.out_ld > 0 ? uint64_t(l.out_ld) : uint64_t(l.rows);  // output row stride, elements
  check_hbm_tensor(info, "transpose kernel", "in", l.in_hbm, elems * ei);
  check_hbm_tensor(info, "transpose kernel", "out", l.out_hbm, ((uint64_t(l.cols) - 1) * out_ld + l.rows) * eo);

  // K tile (input rows = TE rows = moving columns) and M tile (input columns = PSUM partitions).
  const uint64_t bank = info.psum_bank_bytes();
  const int kt = std::min(transpose_tile_rows(info), l.rows);
  require(kt >= 1, fmt::format("PSUM banks of {} bytes hold no FP32", bank));
  // (PSUM partitions = staging partitions of the drain, so at most the SBUF's too.)
  const int mt = static_cast<int>(
      std::min<uint64_t>({info.te_cols, info.psum_partitions, info.sbuf_partitions, uint64_t(l.cols)}));
  const int row_tiles = (l.rows + kt - 1) / kt;
  // PSUM slots of [mt partitions, kt FP32], never crossing a bank.
  const TransposeSlots ring(info, kt);
  const int slots = ring.count;
  auto slot_offset = [&](int s) { return ring.offset(s); };
  // A drain group: consecutive slots (TransposeSlots: across banks when they are one run, up to half the slots).
  const int max_group = ring.max_group;

  // SBUF: the FP32 iota scratch and the identity [kt, kt], then nbuf column blocks of [kt, block_cols].
  const uint64_t pb = info.sbuf_partition_bytes;
  PartitionArena arena(pb);
  const uint32_t iota_off = arena.take(uint64_t(kt) * 4, "transpose identity");
  const uint32_t ident_off = arena.take(uint64_t(kt) * es, "transpose identity");
  // Staging of the drains: the Scalar engine copies a group of PSUM slots into SBUF in out_type (identity
  // activation: one rounding, rule 6), and the DMA stores it, reading out_type bytes instead of FP32 ones. Worth it
  // when a group's saved bytes are at least what the DMA engines move in one start latency (the copy is one more
  // op between the TE and the store): trn2 at T = 2048 the heads' transposes 431 k -> 349 k cycles; on tiny (16
  // lanes, small groups) the same made them 54 % slower. Otherwise the DMA drains PSUM directly, casting.
  const uint64_t group_cols = std::min<uint64_t>(uint64_t(max_group), ceil_div(uint64_t(l.cols), uint64_t(mt)));
  const double saved = double(4 - std::min<uint64_t>(4, eo)) * mt * double(group_cols) * kt;
  const bool staged = saved >= dma_latency_bytes(info);
  std::vector<uint32_t> staging;
  for (int b = 0; b < (staged ? kStagingBuffers : 0); ++b) {
    staging.push_back(arena.take(uint64_t(max_group) * uint64_t(kt) * eo, "transpose staging"));
  }
  std::vector<Pipeline::OpId> staging_store(std::max<std::size_t>(1, staging.size()), -1);
  int next_staging = 0;
  const int tiles_per_block = static_cast<int>(std::max<uint64_t>(1, kBlockBytes / (uint64_t(mt) * es)));
  const int block_cols = std::min(l.cols, std::min(tiles_per_block * mt, 0xFFFF / mt * mt));
  const int blocks_per_row = (l.cols + block_cols - 1) / block_cols;
  const int nblocks = row_tiles * blocks_per_row;
  int nbuf = std::min(kWantedBuffers, nblocks);
  const uint64_t buffer_bytes = (uint64_t(block_cols) * es + 63) / 64 * 64;
  while (nbuf > 1 && uint64_t(nbuf) * buffer_bytes > arena.left()) --nbuf;
  std::vector<uint32_t> buffers;
  for (int b = 0; b < nbuf; ++b) buffers.push_back(arena.take(uint64_t(block_cols) * es, "transpose input block"));

  Pipeline pipe(info);
  const Pipeline::OpId ident = pipe.add(Engine::kVec, te_identity(kt, iota_off, ident_off, te_type));

  const bool group_stride_fits = uint64_t(mt) * out_ld * eo <= uint64_t(INT32_MAX);
  std::vector<std::vector<Pipeline::OpId>> block_te(static_cast<std::size_t>(nblocks));
  std::vector<Pipeline::OpId> slot_drain(static_cast<std::size_t>(slots), -1);
  int next_slot = 0;
  // Block bi's load into buffer bi % nbuf, after the TE ops of the block that used the buffer before.
  std::vector<Pipeline::OpId> loads(static_cast<std::size_t>(nblocks), -1);
  const auto add_load = [&](int bi) {
    const int rt = bi / blocks_per_row, cb = bi % blocks_per_row;
    const int r0 = rt * kt, k = std::min(kt, l.rows - r0);
    const int c0 = cb * block_cols, w = std::min(block_cols, l.cols - c0);
    const isa::CopyFields in =
        copy_rows(MemSpace::kHbm, l.in_hbm + (uint64_t(r0) * l.cols + c0) * ei, in_type,
                  int64_t(uint64_t(l.cols) * ei), MemSpace::kSbuf, buffers[std::size_t(bi % nbuf)], te_type, int64_t(pb), k, w);
    loads[std::size_t(bi)] = pipe.add(Engine::kDma, dma_pieces(in, info.num_dma_engines),
                                      bi >= nbuf ? block_te[std::size_t(bi - nbuf)] : std::vector<Pipeline::OpId>{});
  };
  // The DMA queue runs in order: the loads go nbuf - 1 blocks ahead of the drains, so a drain waiting for its TE
  // tiles does not hold back the loads the TE needs next.
  for (int bi = 0; bi < std::min(nbuf - 1, nblocks); ++bi) add_load(bi);
  for (int rt = 0; rt < row_tiles; ++rt) {
    const int r0 = rt * kt, k = std::min(kt, l.rows - r0);
    for (int cb = 0; cb < blocks_per_row; ++cb) {
      const int bi = rt * blocks_per_row + cb;
      const uint32_t buf = buffers[std::size_t(bi % nbuf)];
      const int c0 = cb * block_cols, w = std::min(block_cols, l.cols - c0);
      if (bi + nbuf - 1 < nblocks) add_load(bi + nbuf - 1);  // (nbuf 1: this block's own load)
      const Pipeline::OpId load = loads[std::size_t(bi)];
      // Column tiles of the block; consecutive tiles in consecutive slots drain as one copy (max_group).
      int group_first_slot = 0;
      std::vector<Pipeline::OpId> group_ops;
      // A group of g consecutive slots (contiguous in PSUM: [m, g x k] FP32) leaves PSUM through the Scalar engine
      // into a staging buffer ([m, g x k] out_type), which the DMA stores to the group's rows of out.
      auto drain = [&](int cfirst) {
        if (group_ops.empty()) return;
        const int g = static_cast<int>(group_ops.size());
        const int m = std::min(mt, l.cols - cfirst);
        if (!staged) {  // PSUM FP32 -> HBM out_type by the DMA
          const isa::CopyFields c = transpose_drain_copy(info, ring, group_first_slot, g, m, k, mt, l.out_hbm, out_ld,
                                                         l.out_type, uint64_t(cfirst), uint64_t(r0));
          const Pipeline::OpId d = pipe.add(Engine::kDma, dma_pieces(c, info.num_dma_engines), group_ops);
          for (int s = group_first_slot; s < group_first_slot + g; ++s) slot_drain[std::size_t(s)] = d;
          group_ops.clear();
          return;
        }
        const std::size_t sb = std::size_t(next_staging);
        next_staging = (next_staging + 1) % kStagingBuffers;
        std::vector<Pipeline::OpId> act_after = group_ops;
        act_after.push_back(staging_store[sb]);  // the buffer's previous store has read it
        // Slots are kt FP32 apart: a full row tile's group is one run of g * k, a ragged one's tiles go one by one.
        std::vector<isa::Instruction> copies;
        for (int i = 0; i < (k == kt ? 1 : g); ++i) {
          const int n = k == kt ? g * k : k;
          const isa::Operand psum =
              operand(slot_offset(group_first_slot + i), DataType::kFp32, {1, 0}, MemSpace::kPsum);
          const isa::Operand out = operand(staging[sb] + uint32_t(uint64_t(i) * k * eo), l.out_type);
          copies.push_back(activation(isa::ActFunc::kIdentity, m, n, out, psum, 1.0f, 0.0f, nullptr, nullptr));
        }
        const Pipeline::OpId act = pipe.add(Engine::kAct, std::move(copies), act_after);
        isa::CopyFields c = copy_rows(MemSpace::kSbuf, staging[sb], l.out_type, int64_t(pb), MemSpace::kHbm,
                                      l.out_hbm + (uint64_t(cfirst) * out_ld + r0) * eo, l.out_type,
                                      int64_t(out_ld * eo), m, k);
        if (g > 1) {
          c.count[2] = static_cast<uint16_t>(g);
          c.src_stride[2] = static_cast<int32_t>(uint64_t(k) * eo);
          c.dst_stride[2] = static_cast<int32_t>(uint64_t(mt) * out_ld * eo);
        }
        staging_store[sb] = pipe.add(Engine::kDma, dma_pieces(c, info.num_dma_engines), {act});
        for (int s = group_first_slot; s < group_first_slot + g; ++s) slot_drain[std::size_t(s)] = act;
        group_ops.clear();
      };
      int group_c0 = c0;
      for (int c = c0; c < c0 + w; c += mt) {
        const int m = std::min(mt, l.cols - c);
        const int s = next_slot;
        next_slot = (next_slot + 1) % slots;
        if (!group_ops.empty() &&
            !ring.joins(group_first_slot, int(group_ops.size()), s, m, mt, group_stride_fits)) {
          drain(group_c0);
        }
        if (group_ops.empty()) {
          group_first_slot = s;
          group_c0 = c;
        }
        const Pipeline::OpId te =
            pipe.add(Engine::kTe, te_transpose_tile(te_dtype, buf + uint64_t(c - c0) * es, k, m, ident_off,
                                                    slot_offset(s)),
                     {load, ident, slot_drain[std::size_t(s)]});
        block_te[std::size_t(bi)].push_back(te);
        group_ops.push_back(te);
        if (m < mt) drain(group_c0);
      }
      drain(group_c0);
    }
  }
  return pipe.build();
}

}  // namespace trnsim::kernels
