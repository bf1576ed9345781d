// The GELU MLP and the element-wise programs around a GEMM (mlp_kernel.h).
#include "firmware/kernels/mlp_kernel.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "firmware/kernels/pipeline.h"

namespace trnsim::kernels {
namespace {

constexpr int kBuffers = 3;
constexpr int kMaxTileCols = 4096;

uint64_t align64(uint64_t v) { return (v + 63) / 64 * 64; }

/// One [rows, cols] tile of a row-major tensor.
struct Tile {
  int r0 = 0, rows = 0, c0 = 0, cols = 0;
};

/// Streams the tiles of a [rows, cols] tensor through kBuffers SBUF buffers as a Pipeline (pipeline.h): load tile j
/// into buffer j % kBuffers (dma), compute it (act or vec), store it (dma). A buffer is reloaded only after the
/// tile before it in that buffer was computed and stored; the Pipeline turns these dependencies into semaphores.
class TileStream {
 public:
  /// `bytes_per_col`: SBUF bytes per partition per tile column of all the slots of one buffer.
  TileStream(const driver::DeviceInfo& info, int rows, int cols, uint64_t bytes_per_col) : info_(info) {
    if (rows < 1 || cols < 1) {
      throw std::invalid_argument(fmt::format("element-wise kernel: shape [{}, {}] is empty", rows, cols));
    }
    p_ = static_cast<int>(std::min<uint32_t>(info.sbuf_partitions, 128));
    const uint64_t per_buffer = info.sbuf_partition_bytes / kBuffers / 64 * 64;
    int c = std::min(cols, kMaxTileCols);
    while (c >= 1 && uint64_t(c) * bytes_per_col + 64 * 5 > per_buffer) c /= 2;
    if (c < 1) {
      throw std::invalid_argument(fmt::format(
          "element-wise kernel: SBUF partitions of {} bytes cannot hold {} buffers", info.sbuf_partition_bytes,
          kBuffers));
    }
    const int chunks = (cols + c - 1) / c;  // balance the column chunks
    c_ = (cols + chunks - 1) / chunks;
    buffer_bytes_ = per_buffer;
    for (int r0 = 0; r0 < rows; r0 += p_) {
      for (int c0 = 0; c0 < cols; c0 += c_) tiles_.push_back({r0, std::min(p_, rows - r0), c0, std::min(c_, cols - c0)});
    }
  }

  int tile_cols() const { return c_; }
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
      std::vector<isa::Instruction> instrs;
      for (const auto& c : copies) {
        for (auto& i : dma_pieces(c, info_.num_dma_engines)) instrs.push_back(i);
      }
      return instrs;
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

  /// The copy between a [tile rows, tile cols] window of a row-major HBM tensor [.., width] and SBUF (partition 0
  /// up, offset `sbuf_off`): a load (HBM -> SBUF) or a store.
  isa::CopyFields tile_copy(const Tile& t, uint64_t hbm, int width, isa::DataType hbm_type, uint32_t sbuf_off,
                            isa::DataType sbuf_type, bool load) const {
    const int64_t hes = isa::data_type_bytes(hbm_type);
    const uint64_t h = hbm + (uint64_t(t.r0) * width + t.c0) * hes;
    const int64_t pb = info_.sbuf_partition_bytes;
    return load ? copy_rows(isa::MemSpace::kHbm, h, hbm_type, width * hes, isa::MemSpace::kSbuf, sbuf_off, sbuf_type,
                            pb, t.rows, t.cols)
                : copy_rows(isa::MemSpace::kSbuf, sbuf_off, sbuf_type, pb, isa::MemSpace::kHbm, h, hbm_type,
                            width * hes, t.rows, t.cols);
  }

 private:
  driver::DeviceInfo info_;
  int p_ = 0, c_ = 0;
  uint64_t buffer_bytes_ = 0;
  std::vector<Tile> tiles_;
};

}  // namespace

isa::Program make_row_bias_activation_program(const driver::DeviceInfo& info, const RowBiasActLayout& l) {
  const uint64_t oes = isa::data_type_bytes(l.out_type);
  TileStream tp(info, l.rows, l.cols, 4 + oes);
  // Buffer layout per partition: in [C] FP32, out [C] out_type, bias [1] FP32.
  const uint32_t in_off = 0, out_off = uint32_t(align64(uint64_t(tp.tile_cols()) * 4));
  const uint32_t bias_off = out_off + uint32_t(align64(uint64_t(tp.tile_cols()) * oes));
  auto loads = [&](const Tile& t, uint32_t b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.in_hbm, l.cols, isa::DataType::kFp32, b + in_off, isa::DataType::kFp32, true));
    // bias[r0 .. r0 + rows): one FP32 per partition
    out->push_back(copy_rows(isa::MemSpace::kHbm, l.bias_hbm + uint64_t(t.r0) * 4, isa::DataType::kFp32, 4,
                             isa::MemSpace::kSbuf, b + bias_off, isa::DataType::kFp32, info.sbuf_partition_bytes,
                             t.rows, 1));
  };
  auto compute = [&](const Tile& t, uint32_t b, std::vector<isa::Instruction>* eng) {
    const isa::Operand bias = column(b + bias_off);
    eng->push_back(activation(l.func, t.rows, t.cols, operand(b + out_off, l.out_type),
                              operand(b + in_off), 1.0f, 0.0f, &bias, nullptr));
  };
  auto stores = [&](const Tile& t, uint32_t b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.out_hbm, l.cols, l.out_type, b + out_off, l.out_type, false));
  };
  return tp.build(isa::Engine::kAct, loads, compute, stores);
}

isa::Program make_col_bias_add_program(const driver::DeviceInfo& info, const ColBiasAddLayout& l) {
  const uint64_t oes = isa::data_type_bytes(l.out_type);
  // Buffer layout per partition: in [C], bias [C] (the same row in every partition), residual [C], sum [C] (all
  // FP32), out [C] out_type.
  TileStream tp(info, l.rows, l.cols, 4 * (l.residual ? 4 : 2) + oes);
  const uint32_t cb = uint32_t(align64(uint64_t(tp.tile_cols()) * 4));
  const uint32_t in_off = 0, bias_off = cb, res_off = 2 * cb, sum_off = 3 * cb;
  const uint32_t out_off = l.residual ? 4 * cb : 2 * cb;
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
    if (!l.residual) {
      eng->push_back(tensor_tensor(isa::AluOp::kAdd, t.rows, t.cols, operand(b + out_off, l.out_type),
                                   operand(b + in_off), operand(b + bias_off)));
      return;
    }
    eng->push_back(tensor_tensor(isa::AluOp::kAdd, t.rows, t.cols, operand(b + sum_off), operand(b + in_off),
                                 operand(b + bias_off)));
    eng->push_back(tensor_tensor(isa::AluOp::kAdd, t.rows, t.cols, operand(b + out_off, l.out_type),
                                 operand(b + res_off), operand(b + sum_off)));
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
  KernelSequence seq;
  seq.push_back(gemm_step(info, "mlp up gemm", l.d_model, l.d_ff, l.tokens, l.w1_hbm, l.xT_hbm, l.hT_hbm));

  RowBiasActLayout act;
  act.rows = l.d_ff;
  act.cols = l.tokens;
  act.in_hbm = l.hT_hbm;
  act.bias_hbm = l.b1_hbm;
  act.func = isa::ActFunc::kGeluTanh;
  act.out_hbm = l.gT_hbm;
  act.out_type = isa::DataType::kBf16;
  seq.push_back({"mlp bias+gelu", make_row_bias_activation_program(info, act), 0});

  seq.push_back(gemm_step(info, "mlp down gemm", l.d_ff, l.tokens, l.d_model, l.gT_hbm, l.w2_hbm, l.y_hbm));

  ColBiasAddLayout bias;
  bias.rows = l.tokens;
  bias.cols = l.d_model;
  bias.in_hbm = l.y_hbm;
  bias.bias_hbm = l.b2_hbm;
  bias.residual = l.residual;
  bias.residual_hbm = l.residual_hbm;
  bias.out_hbm = l.out_hbm;
  bias.out_type = isa::DataType::kFp32;
  seq.push_back({l.residual ? "mlp bias+residual" : "mlp bias", make_col_bias_add_program(info, bias), 0});
  return seq;
}

}  // namespace trnsim::kernels
