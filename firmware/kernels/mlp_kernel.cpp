// The GELU MLP and the element-wise programs around a GEMM (mlp_kernel.h).
#include "firmware/kernels/mlp_kernel.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "firmware/kernels/pipeline.h"

namespace trnsim::kernels {
namespace {

constexpr int kBuffers = 3;
constexpr int kMaxTileCols = 4096;
constexpr int kWantTiles = 4;  // row blocks are grouped only while this many tiles remain (so that they overlap)

uint64_t align64(uint64_t v) { return (v + 63) / 64 * 64; }

/// One tile of a row-major tensor: `blocks` row blocks of `rows` rows (P rows apart; `blocks > 1` only for full
/// blocks), columns [c0, c0 + cols). In SBUF, block g of a tile sits at offset g * tile_cols() of each slot.
struct Tile {
  int r0 = 0, rows = 0, blocks = 1, c0 = 0, cols = 0;
};

/// Streams the tiles of a [rows, cols] tensor through kBuffers SBUF buffers as a Pipeline (pipeline.h): load tile j
/// into buffer j % kBuffers (dma), compute it (act or vec), store it (dma). A buffer is reloaded only after the
/// tile before it in that buffer was computed and stored; the Pipeline turns these dependencies into semaphores.
/// Many row blocks: several full row blocks share a tile (fewer, larger copies: the DMA start latency dominates
/// small ones), as long as kWantTiles tiles remain. (Splitting the columns of a single row block into more tiles
/// measured slower: each tile pays the start latency again.)
class TileStream {
 public:
  /// `bytes_per_col`: SBUF bytes per partition per tile column of all the slots of one buffer;
  /// `bytes_per_block`: further bytes per row block of a tile (a bias column).
  TileStream(const driver::DeviceInfo& info, int rows, int cols, uint64_t bytes_per_col, uint64_t bytes_per_block)
      : info_(info) {
    if (rows < 1 || cols < 1) {
      throw std::invalid_argument(fmt::format("element-wise kernel: shape [{}, {}] is empty", rows, cols));
    }
    p_ = static_cast<int>(std::min<uint32_t>(info.sbuf_partitions, 128));
    const uint64_t per_buffer = info.sbuf_partition_bytes / kBuffers / 64 * 64;
    auto fits = [&](uint64_t c, uint64_t g) { return g * (c * bytes_per_col + bytes_per_block + 64 * 3) <= per_buffer; };
    int c = std::min(cols, kMaxTileCols);
    while (c >= 1 && !fits(uint64_t(c), 1)) c /= 2;
    if (c < 1) {
      throw std::invalid_argument(fmt::format(
          "element-wise kernel: SBUF partitions of {} bytes cannot hold {} buffers", info.sbuf_partition_bytes,
          kBuffers));
    }
    const int chunks = (cols + c - 1) / c;  // balance the column chunks
    c_ = (cols + chunks - 1) / chunks;
    const int full = rows / p_;
    g_ = 1;
    while (g_ < full / kWantTiles && fits(uint64_t(c_), uint64_t(g_) + 1)) ++g_;
    buffer_bytes_ = per_buffer;
    for (int c0 = 0; c0 < cols; c0 += c_) {
      const int w = std::min(c_, cols - c0);
      for (int b = 0; b < full; b += g_) tiles_.push_back({b * p_, p_, std::min(g_, full - b), c0, w});
      if (rows % p_) tiles_.push_back({full * p_, rows % p_, 1, c0, w});
    }
  }

  int tile_cols() const { return c_; }
  int tile_blocks() const { return g_; }
  /// Offset inside a partition of buffer b.
  uint32_t buffer(int b) const { return static_cast<uint32_t>(uint64_t(b) * buffer_bytes_); }

  using Copies = std::function<void(const Tile&, uint32_t buffer, std::vector<isa::CopyFields>*)>;
  using Compute = std::function<void(const Tile&, uint32_t buffer, std::vector<isa::Instruction>*)>;

  isa::Program build(isa::Engine engine, const Copies& loads, const Compute& compute, const Copies& stores) const {
    Pipeline pipe(info_);
    const std::size_t n = tiles_.size();
    std::vector<Pipeline::OpId> load(n), comp(n), store(n);
    auto dma = [&](const Copies& f, std::size_t j) {
      std::vector<isa::CopyFields> copies;
      f(tiles_[j], buffer(int(j % kBuffers)), &copies);
      return spread_copies(copies, info_.num_dma_engines);
    };
    for (std::size_t j = 0; j < n; ++j) {
      std::vector<Pipeline::OpId> reuse;
      if (j >= kBuffers) reuse = {comp[j - kBuffers], store[j - kBuffers]};
      load[j] = pipe.add(isa::Engine::kDma, dma(loads, j), reuse);
      std::vector<isa::Instruction> instrs;
      compute(tiles_[j], buffer(int(j % kBuffers)), &instrs);
      comp[j] = pipe.add(engine, instrs, {load[j]});
      store[j] = pipe.add(isa::Engine::kDma, dma(stores, j), {comp[j]});
    }
    return pipe.build();
  }

  /// The copy between a tile's window of a row-major HBM tensor [.., width] and SBUF (partition 0 up, the slot at
  /// `sbuf_off`, block g at g * tile_cols() elements): a load (HBM -> SBUF) or a store.
  isa::CopyFields tile_copy(const Tile& t, uint64_t hbm, int width, isa::DataType hbm_type, uint32_t sbuf_off,
                            isa::DataType sbuf_type, bool load) const {
    const int64_t hes = isa::data_type_bytes(hbm_type);
    const uint64_t h = hbm + (uint64_t(t.r0) * width + t.c0) * hes;
    const int64_t pb = info_.sbuf_partition_bytes;
    isa::CopyFields c = load ? copy_rows(isa::MemSpace::kHbm, h, hbm_type, width * hes, isa::MemSpace::kSbuf,
                                         sbuf_off, sbuf_type, pb, t.rows, t.cols)
                             : copy_rows(isa::MemSpace::kSbuf, sbuf_off, sbuf_type, pb, isa::MemSpace::kHbm, h,
                                         hbm_type, width * hes, t.rows, t.cols);
    if (t.blocks > 1) {
      const int64_t hbm_block = int64_t(p_) * width * hes;
      if (hbm_block > std::numeric_limits<int32_t>::max()) {
        throw std::invalid_argument("element-wise kernel: a row block does not fit the ISA's 32-bit strides");
      }
      const int32_t sbuf_block = int32_t(int64_t(c_) * isa::data_type_bytes(sbuf_type));
      c.count[2] = static_cast<uint16_t>(t.blocks);
      c.src_stride[2] = load ? int32_t(hbm_block) : sbuf_block;
      c.dst_stride[2] = load ? sbuf_block : int32_t(hbm_block);
    }
    return c;
  }

 private:
  driver::DeviceInfo info_;
  int p_ = 0, c_ = 0, g_ = 1;
  uint64_t buffer_bytes_ = 0;
  std::vector<Tile> tiles_;
};

}  // namespace

isa::Program make_row_bias_activation_program(const driver::DeviceInfo& info, const RowBiasActLayout& l) {
  const uint64_t oes = isa::data_type_bytes(l.out_type);
  TileStream tp(info, l.rows, l.cols, 4 + oes, 4);
  // Buffer layout per partition: in [G blocks x C] FP32, out [G x C] out_type, bias [G] FP32 (one per block).
  const uint64_t slot = uint64_t(tp.tile_blocks()) * tp.tile_cols();
  const uint32_t in_off = 0, out_off = uint32_t(align64(slot * 4));
  const uint32_t bias_off = out_off + uint32_t(align64(slot * oes));
  auto loads = [&](const Tile& t, uint32_t b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.in_hbm, l.cols, isa::DataType::kFp32, b + in_off, isa::DataType::kFp32, true));
    // bias of block g's rows -> one FP32 per partition at bias_off + 4 g
    isa::CopyFields c = copy_rows(isa::MemSpace::kHbm, l.bias_hbm + uint64_t(t.r0) * 4, isa::DataType::kFp32, 4,
                                  isa::MemSpace::kSbuf, b + bias_off, isa::DataType::kFp32,
                                  info.sbuf_partition_bytes, t.rows, 1);
    if (t.blocks > 1) {
      c.count[2] = static_cast<uint16_t>(t.blocks);
      c.src_stride[2] = int32_t(t.rows) * 4;
      c.dst_stride[2] = 4;
    }
    out->push_back(c);
  };
  auto compute = [&](const Tile& t, uint32_t b, std::vector<isa::Instruction>* eng) {
    for (int g = 0; g < t.blocks; ++g) {
      const uint32_t e = uint32_t(g) * uint32_t(tp.tile_cols());
      const isa::Operand bias = column(b + bias_off + 4 * uint32_t(g));
      eng->push_back(activation(l.func, t.rows, t.cols, operand(b + out_off + e * uint32_t(oes), l.out_type),
                                operand(b + in_off + e * 4), 1.0f, 0.0f, &bias, nullptr));
    }
  };
  auto stores = [&](const Tile& t, uint32_t b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.out_hbm, l.cols, l.out_type, b + out_off, l.out_type, false));
  };
  return tp.build(isa::Engine::kAct, loads, compute, stores);
}

isa::Program make_col_bias_add_program(const driver::DeviceInfo& info, const ColBiasAddLayout& l) {
  const uint64_t oes = isa::data_type_bytes(l.out_type);
  // Buffer layout per partition: in [G x C], residual [G x C], sum [G x C] (FP32), out [G x C] out_type, and bias
  // [C] FP32 (the same row in every partition, shared by the blocks).
  TileStream tp(info, l.rows, l.cols, 4 * (l.residual ? 3 : 1) + oes + 4, 0);
  const uint64_t slot = uint64_t(tp.tile_blocks()) * tp.tile_cols();
  const uint32_t cb = uint32_t(align64(slot * 4));
  const uint32_t in_off = 0, bias_off = cb, res_off = bias_off + uint32_t(align64(uint64_t(tp.tile_cols()) * 4));
  const uint32_t sum_off = res_off + cb;
  const uint32_t out_off = l.residual ? sum_off + cb : res_off;
  auto loads = [&](const Tile& t, uint32_t b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.in_hbm, l.cols, isa::DataType::kFp32, b + in_off, isa::DataType::kFp32, true));
    // bias[c0 .. c0 + cols) into every partition of the tile (source rows 0 bytes apart)
    out->push_back(copy_rows(isa::MemSpace::kHbm, l.bias_hbm + uint64_t(t.c0) * 4, isa::DataType::kFp32, 0,
                             isa::MemSpace::kSbuf, b + bias_off, isa::DataType::kFp32, info.sbuf_partition_bytes,
                             t.rows, t.cols));
    if (l.residual) {
      out->push_back(tp.tile_copy(t, l.residual_hbm, l.cols, isa::DataType::kFp32, b + res_off,
                                  isa::DataType::kFp32, true));
    }
  };
  auto compute = [&](const Tile& t, uint32_t b, std::vector<isa::Instruction>* eng) {
    for (int g = 0; g < t.blocks; ++g) {
      const uint32_t e = uint32_t(g) * uint32_t(tp.tile_cols());
      const isa::Operand out = operand(b + out_off + e * uint32_t(oes), l.out_type);
      const isa::Operand in = operand(b + in_off + e * 4), bias = operand(b + bias_off);
      if (!l.residual) {
        eng->push_back(tensor_tensor(isa::AluOp::kAdd, t.rows, t.cols, out, in, bias));
        continue;
      }
      const isa::Operand sum = operand(b + sum_off + e * 4);
      eng->push_back(tensor_tensor(isa::AluOp::kAdd, t.rows, t.cols, sum, in, bias));
      eng->push_back(tensor_tensor(isa::AluOp::kAdd, t.rows, t.cols, out, operand(b + res_off + e * 4), sum));
    }
  };
  auto stores = [&](const Tile& t, uint32_t b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.out_hbm, l.cols, l.out_type, b + out_off, l.out_type, false));
  };
  return tp.build(isa::Engine::kVec, loads, compute, stores);
}

KernelSequence make_mlp_programs(const driver::DeviceInfo& info, const MlpLayout& l) {
  if (l.tokens < 1 || l.d_model < 1 || l.d_ff < 1) {
    throw std::invalid_argument(
        fmt::format("mlp kernel: tokens, d_model and d_ff must be >= 1 (got {}, {}, {})", l.tokens, l.d_model, l.d_ff));
  }
  GemmEpilogue gelu;
  gelu.kind = GemmEpilogue::Kind::kRowBiasAct;
  gelu.bias_hbm = l.b1_hbm;
  gelu.func = isa::ActFunc::kGeluTanh;
  KernelSequence seq = gemm_steps(info, "mlp up gemm+gelu", l.d_model, l.d_ff, l.tokens, l.w1_hbm, l.xT_hbm,
                                  l.gT_hbm, l.cores, isa::DataType::kBf16, gelu);
  GemmEpilogue bias;
  bias.kind = GemmEpilogue::Kind::kColBiasAdd;
  bias.bias_hbm = l.b2_hbm;
  bias.residual = l.residual;
  bias.residual_hbm = l.residual_hbm;
  append(&seq, gemm_steps(info, l.residual ? "mlp down gemm+bias+residual" : "mlp down gemm+bias", l.d_ff, l.tokens,
                          l.d_model, l.gT_hbm, l.w2_hbm, l.out_hbm, l.cores, isa::DataType::kFp32, bias));
  return seq;
}

}  // namespace trnsim::kernels
