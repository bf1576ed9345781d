// The GELU MLP and the element-wise programs around a GEMM (mlp_kernel.h).
#include "firmware/kernels/mlp_kernel.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "firmware/kernels/gemm_kernel.h"

namespace trnsim::kernels {
namespace {

constexpr uint8_t kSemLoadedTile = 0;    // dma -> compute engine: +1 per tile landed in SBUF
constexpr uint8_t kSemComputedTile = 1;  // compute engine -> dma: +1 per tile computed (its inputs are free)
constexpr int kBuffers = 3;
constexpr int kMaxTileCols = 4096;
constexpr uint64_t kMinPieceBytes = 8 * 1024;

uint64_t align64(uint64_t v) { return (v + 63) / 64 * 64; }

isa::Instruction sem(isa::Opcode op, uint8_t id, uint32_t value) {
  isa::Instruction i;
  i.op = op;
  i.sem.sem = id;
  i.sem.value = value;
  return i;
}

/// One [rows, cols] tile of a row-major tensor.
struct Tile {
  int r0 = 0, rows = 0, c0 = 0, cols = 0;
};

/// Streams the tiles of a [rows, cols] tensor through kBuffers SBUF buffers: the dma queue loads tile j into
/// buffer j % kBuffers and signals kSemLoadedTile, the compute engine computes it and signals kSemComputedTile,
/// the dma queue stores it. A buffer is reloaded only after the tile before it in that buffer was computed and
/// stored (its store is issued before the load, and the load's signal is a barrier for both).
class TilePipeline {
 public:
  /// `slot_bytes_per_col`: SBUF bytes per partition per tile column of all the slots of one buffer.
  TilePipeline(const driver::DeviceInfo& info, int rows, int cols, uint64_t slot_bytes_per_col,
               uint64_t fixed_bytes) : info_(info) {
    if (rows < 1 || cols < 1) {
      throw std::invalid_argument(fmt::format("element-wise kernel: shape [{}, {}] is empty", rows, cols));
    }
    p_ = static_cast<int>(std::min<uint32_t>(info.sbuf_partitions, 128));
    const uint64_t per_buffer = info.sbuf_partition_bytes / kBuffers;
    int c = std::min(cols, kMaxTileCols);
    while (c >= 1 && align64(uint64_t(c) * slot_bytes_per_col + fixed_bytes + 64 * 4) > per_buffer) c /= 2;
    if (c < 1) {
      throw std::invalid_argument(fmt::format(
          "element-wise kernel: SBUF partitions of {} bytes cannot hold {} buffers", info.sbuf_partition_bytes,
          kBuffers));
    }
    // Balance the column chunks.
    const int chunks = (cols + c - 1) / c;
    c_ = (cols + chunks - 1) / chunks;
    buffer_bytes_ = per_buffer / 64 * 64;
    for (int r0 = 0; r0 < rows; r0 += p_) {
      for (int c0 = 0; c0 < cols; c0 += c_) {
        tiles_.push_back({r0, std::min(p_, rows - r0), c0, std::min(c_, cols - c0)});
      }
    }
  }

  int partitions() const { return p_; }
  int tile_cols() const { return c_; }
  /// Offset inside a partition of buffer b.
  uint64_t buffer(int b) const { return uint64_t(b) * buffer_bytes_; }

  using Copies = std::function<void(const Tile&, int buffer, std::vector<isa::CopyFields>*)>;
  using Compute = std::function<void(const Tile&, int buffer, std::vector<isa::Instruction>*)>;

  isa::Program build(isa::Engine engine, const Copies& loads, const Compute& compute, const Copies& stores) const {
    isa::Program prog;
    auto& dma = prog.queue(isa::Engine::kDma);
    auto& eng = prog.queue(engine);
    const int n = static_cast<int>(tiles_.size());
    auto emit = [&](const Copies& f, int j) {
      std::vector<isa::CopyFields> copies;
      f(tiles_[size_t(j)], j % kBuffers, &copies);
      for (const auto& c : copies) split_rows(c, &dma);
    };
    for (int j = 0; j < n; ++j) {
      if (j >= kBuffers) {
        dma.push_back(sem(isa::Opcode::kSemWait, kSemComputedTile, uint32_t(j - kBuffers + 1)));
        emit(stores, j - kBuffers);
      }
      emit(loads, j);
      dma.push_back(sem(isa::Opcode::kSemSignal, kSemLoadedTile, 1));
      eng.push_back(sem(isa::Opcode::kSemWait, kSemLoadedTile, uint32_t(j + 1)));
      compute(tiles_[size_t(j)], j % kBuffers, &eng);
      eng.push_back(sem(isa::Opcode::kSemSignal, kSemComputedTile, 1));
    }
    for (int j = std::max(0, n - kBuffers); j < n; ++j) {
      dma.push_back(sem(isa::Opcode::kSemWait, kSemComputedTile, uint32_t(j + 1)));
      emit(stores, j);
    }
    dma.push_back(isa::Instruction::halt());
    eng.push_back(isa::Instruction::halt());
    return prog;
  }

  /// The copy between a [tile rows, tile cols] window of a row-major HBM tensor [.., width] and SBUF (partition 0
  /// up, offset `sbuf_off`): load (HBM -> SBUF) or store.
  isa::CopyFields tile_copy(const Tile& t, uint64_t hbm, int width, isa::DataType hbm_type, uint64_t sbuf_off,
                            isa::DataType sbuf_type, bool load) const {
    const int32_t hes = static_cast<int32_t>(isa::data_type_bytes(hbm_type));
    const int32_t ses = static_cast<int32_t>(isa::data_type_bytes(sbuf_type));
    const uint64_t h = hbm + (uint64_t(t.r0) * width + t.c0) * hes;
    const std::array<int32_t, isa::kApDims> hs{hes, static_cast<int32_t>(int64_t(width) * hes), 0, 0};
    const std::array<int32_t, isa::kApDims> ss{ses, static_cast<int32_t>(info_.sbuf_partition_bytes), 0, 0};
    isa::CopyFields c;
    c.count = {static_cast<uint16_t>(t.cols), static_cast<uint16_t>(t.rows), 1, 1};
    if (load) {
      c.src_type = hbm_type, c.dst_type = sbuf_type;
      c.src_space = isa::MemSpace::kHbm, c.dst_space = isa::MemSpace::kSbuf;
      c.src_addr = h, c.dst_addr = sbuf_off;
      c.src_stride = hs, c.dst_stride = ss;
    } else {
      c.src_type = sbuf_type, c.dst_type = hbm_type;
      c.src_space = isa::MemSpace::kSbuf, c.dst_space = isa::MemSpace::kHbm;
      c.src_addr = sbuf_off, c.dst_addr = h;
      c.src_stride = ss, c.dst_stride = hs;
    }
    return c;
  }

 private:
  /// Splits a copy by rows (dimension 1) into pieces of at least kMinPieceBytes, at most one per DMA engine.
  void split_rows(const isa::CopyFields& c, std::vector<isa::Instruction>* dma) const {
    const uint64_t row_bytes = uint64_t(c.count[0]) * std::max(isa::data_type_bytes(c.src_type),
                                                                isa::data_type_bytes(c.dst_type));
    const uint64_t rows = c.count[1];
    const uint64_t by_size = std::max<uint64_t>(1, rows * row_bytes / kMinPieceBytes);
    const uint64_t parts = std::min<uint64_t>({rows, by_size, std::max<uint32_t>(1, info_.num_dma_engines)});
    for (uint64_t i = 0; i < parts; ++i) {
      const uint64_t a = rows * i / parts, b = rows * (i + 1) / parts;
      isa::Instruction in;
      in.op = isa::Opcode::kDmaCopy;
      in.copy = c;
      in.copy.count[1] = static_cast<uint16_t>(b - a);
      in.copy.src_addr = c.src_addr + uint64_t(int64_t(a) * c.src_stride[1]);
      in.copy.dst_addr = c.dst_addr + uint64_t(int64_t(a) * c.dst_stride[1]);
      dma->push_back(in);
    }
  }

  const driver::DeviceInfo& info_;
  int p_ = 0, c_ = 0;
  uint64_t buffer_bytes_ = 0;
  std::vector<Tile> tiles_;
};

isa::Operand sbuf_operand(isa::DataType t, uint64_t offset) {
  isa::Operand o;
  o.space = isa::MemSpace::kSbuf;
  o.type = t;
  o.partition = 0;
  o.offset = static_cast<uint32_t>(offset);
  o.stride = {1, 0};
  return o;
}

}  // namespace

isa::Program make_row_bias_activation_program(const driver::DeviceInfo& info, const RowBiasActLayout& l) {
  const uint64_t oes = isa::data_type_bytes(l.out_type);
  TilePipeline tp(info, l.rows, l.cols, 4 + oes, 0);
  // Buffer layout per partition: in [C] FP32, out [C] out_type, bias [1] FP32.
  const uint64_t in_off = 0, out_off = align64(uint64_t(tp.tile_cols()) * 4);
  const uint64_t bias_off = out_off + align64(uint64_t(tp.tile_cols()) * oes);
  const uint32_t pb = info.sbuf_partition_bytes;
  auto loads = [&](const Tile& t, int b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.in_hbm, l.cols, isa::DataType::kFp32, tp.buffer(b) + in_off,
                                isa::DataType::kFp32, true));
    isa::CopyFields c;  // bias[r0 .. r0 + rows) -> one FP32 per partition
    c.src_type = c.dst_type = isa::DataType::kFp32;
    c.src_space = isa::MemSpace::kHbm;
    c.dst_space = isa::MemSpace::kSbuf;
    c.src_addr = l.bias_hbm + uint64_t(t.r0) * 4;
    c.dst_addr = tp.buffer(b) + bias_off;
    c.count = {1, static_cast<uint16_t>(t.rows), 1, 1};
    c.src_stride = {0, 4, 0, 0};
    c.dst_stride = {0, static_cast<int32_t>(pb), 0, 0};
    out->push_back(c);
  };
  auto compute = [&](const Tile& t, int b, std::vector<isa::Instruction>* eng) {
    isa::Instruction i;
    i.op = isa::Opcode::kActivation;
    i.act.func = l.func;
    i.act.partitions = static_cast<uint16_t>(t.rows);
    i.act.free = {static_cast<uint16_t>(t.cols), 1};
    i.act.out = sbuf_operand(l.out_type, tp.buffer(b) + out_off);
    i.act.in0 = sbuf_operand(isa::DataType::kFp32, tp.buffer(b) + in_off);
    i.act.bias_tensor = true;
    i.act.bias_ap = sbuf_operand(isa::DataType::kFp32, tp.buffer(b) + bias_off);
    i.act.bias_ap.stride = {0, 0};
    eng->push_back(i);
  };
  auto stores = [&](const Tile& t, int b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.out_hbm, l.cols, l.out_type, tp.buffer(b) + out_off, l.out_type, false));
  };
  return tp.build(isa::Engine::kAct, loads, compute, stores);
}

isa::Program make_col_bias_add_program(const driver::DeviceInfo& info, const ColBiasAddLayout& l) {
  const uint64_t oes = isa::data_type_bytes(l.out_type);
  // Buffer layout per partition: in [C], bias [C] (the same row in every partition), residual [C], sum [C] (all
  // FP32), out [C] out_type.
  TilePipeline tp(info, l.rows, l.cols, 4 * (l.residual ? 4 : 2) + oes, 0);
  const uint64_t cb = align64(uint64_t(tp.tile_cols()) * 4);
  const uint64_t in_off = 0, bias_off = cb, res_off = 2 * cb, sum_off = 3 * cb;
  const uint64_t out_off = l.residual ? 4 * cb : 2 * cb;
  const uint32_t pb = info.sbuf_partition_bytes;
  auto loads = [&](const Tile& t, int b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.in_hbm, l.cols, isa::DataType::kFp32, tp.buffer(b) + in_off,
                                isa::DataType::kFp32, true));
    isa::CopyFields c;  // bias[c0 .. c0 + cols) into every partition of the tile
    c.src_type = c.dst_type = isa::DataType::kFp32;
    c.src_space = isa::MemSpace::kHbm;
    c.dst_space = isa::MemSpace::kSbuf;
    c.src_addr = l.bias_hbm + uint64_t(t.c0) * 4;
    c.dst_addr = tp.buffer(b) + bias_off;
    c.count = {static_cast<uint16_t>(t.cols), static_cast<uint16_t>(t.rows), 1, 1};
    c.src_stride = {4, 0, 0, 0};
    c.dst_stride = {4, static_cast<int32_t>(pb), 0, 0};
    out->push_back(c);
    if (l.residual) {
      out->push_back(tp.tile_copy(t, l.residual_hbm, l.cols, isa::DataType::kFp32, tp.buffer(b) + res_off,
                                  isa::DataType::kFp32, true));
    }
  };
  auto compute = [&](const Tile& t, int b, std::vector<isa::Instruction>* eng) {
    isa::Instruction i;
    i.op = isa::Opcode::kTensorTensor;
    i.vec.op = isa::AluOp::kAdd;
    i.vec.partitions = static_cast<uint16_t>(t.rows);
    i.vec.free = {static_cast<uint16_t>(t.cols), 1};
    i.vec.in0 = sbuf_operand(isa::DataType::kFp32, tp.buffer(b) + in_off);
    i.vec.in1 = sbuf_operand(isa::DataType::kFp32, tp.buffer(b) + bias_off);
    if (!l.residual) {
      i.vec.out = sbuf_operand(l.out_type, tp.buffer(b) + out_off);
      eng->push_back(i);
      return;
    }
    i.vec.out = sbuf_operand(isa::DataType::kFp32, tp.buffer(b) + sum_off);
    eng->push_back(i);
    i.vec.in0 = sbuf_operand(isa::DataType::kFp32, tp.buffer(b) + res_off);
    i.vec.in1 = sbuf_operand(isa::DataType::kFp32, tp.buffer(b) + sum_off);
    i.vec.out = sbuf_operand(l.out_type, tp.buffer(b) + out_off);
    eng->push_back(i);
  };
  auto stores = [&](const Tile& t, int b, std::vector<isa::CopyFields>* out) {
    out->push_back(tp.tile_copy(t, l.out_hbm, l.cols, l.out_type, tp.buffer(b) + out_off, l.out_type, false));
  };
  return tp.build(isa::Engine::kVec, loads, compute, stores);
}

KernelSequence make_mlp_programs(const driver::DeviceInfo& info, const MlpLayout& l) {
  if (l.tokens < 1 || l.d_model < 1 || l.d_ff < 1) {
    throw std::invalid_argument(
        fmt::format("mlp kernel: tokens, d_model and d_ff must be >= 1 (got {}, {}, {})", l.tokens, l.d_model, l.d_ff));
  }
  const uint64_t T = l.tokens, D = l.d_model, F = l.d_ff;
  KernelSequence seq;
  GemmLayout up;
  up.dtype = isa::Dtype::kBf16;
  up.k = l.d_model;
  up.m = l.d_ff;
  up.n = l.tokens;
  up.stationary_hbm = l.w1_hbm;
  up.moving_hbm = l.xT_hbm;
  up.out_hbm = l.hT_hbm;
  seq.push_back({"mlp up gemm", make_gemm_program(info, up), D * F * T});

  RowBiasActLayout act;
  act.rows = l.d_ff;
  act.cols = l.tokens;
  act.in_hbm = l.hT_hbm;
  act.bias_hbm = l.b1_hbm;
  act.func = isa::ActFunc::kGeluTanh;
  act.out_hbm = l.gT_hbm;
  act.out_type = isa::DataType::kBf16;
  seq.push_back({"mlp bias+gelu", make_row_bias_activation_program(info, act), 0});

  GemmLayout down;
  down.dtype = isa::Dtype::kBf16;
  down.k = l.d_ff;
  down.m = l.tokens;
  down.n = l.d_model;
  down.stationary_hbm = l.gT_hbm;
  down.moving_hbm = l.w2_hbm;
  down.out_hbm = l.y_hbm;
  seq.push_back({"mlp down gemm", make_gemm_program(info, down), D * F * T});

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
