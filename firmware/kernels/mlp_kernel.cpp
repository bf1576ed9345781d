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

namespace {

void check_mlp(const MlpLayout& l) {
  if (l.tokens < 1 || l.d_model < 1 || l.d_ff < 1 || l.cores < 1) {
    throw std::invalid_argument(fmt::format("mlp kernel: tokens, d_model, d_ff and cores must be >= 1 (got {}, {}, "
                                            "{}, {})", l.tokens, l.d_model, l.d_ff, l.cores));
  }
}

}  // namespace

std::pair<GemmLayout, GemmLayout> mlp_gemms(const MlpLayout& l) {
  GemmEpilogue gelu;
  gelu.kind = GemmEpilogue::Kind::kRowBiasAct;
  gelu.bias_hbm = l.b1_hbm;
  gelu.func = isa::ActFunc::kGeluTanh;
  GemmEpilogue bias;
  bias.kind = GemmEpilogue::Kind::kColBiasAdd;
  bias.bias_hbm = l.b2_hbm;
  bias.residual = l.residual;
  bias.residual_hbm = l.residual_hbm;
  return {bf16_gemm(l.d_model, l.d_ff, l.tokens, l.w1_hbm, l.xT_hbm, l.gT_hbm, isa::DataType::kBf16, gelu),
          bf16_gemm(l.d_ff, l.tokens, l.d_model, l.gT_hbm, l.w2_hbm, l.out_hbm, isa::DataType::kFp32, bias)};
}

namespace {

/// The MLP of tokens [t0, t0 + n) as the two GEMMs of one program (make_mlp_rows_program): up writes g^T's
/// columns [t0, t0 + n) into SBUF (out_in_sbuf: M tile i of g^T, features i * m_tile .., at the top of each
/// partition), down reads them there as its stationary (K tile i) and streams W2.
/// SBUF per partition: down's buffers from 0, up's above them (a third of what g^T leaves), g^T at the top. `fits`
/// false when the device cannot hold them, or up's M tiles are not down's K tiles.
struct RowsPlan {
  GemmLayout up, down;
  bool fits = false;
};

RowsPlan rows_plan(const driver::DeviceInfo& info, const MlpLayout& l, int t0, int n) {
  RowsPlan r;
  auto [u, d] = mlp_gemms(l);
  const uint64_t m_tile = std::min(info.te_cols, info.psum_partitions);
  if (m_tile < 1 || m_tile != isa::te_max_k(isa::Dtype::kBf16, info.te_rows)) return r;
  const uint64_t pb = info.sbuf_partition_bytes, tile = align64(uint64_t(n) * 2);
  const uint64_t g_bytes = ceil_div(uint64_t(l.d_ff), m_tile) * tile;
  if (g_bytes + 2 * 64 >= pb) return r;
  const uint64_t free = (pb - g_bytes) / 64 * 64, up_bytes = free / 3 / 64 * 64;
  const auto g_off = uint32_t(pb - g_bytes);
  // up: g^T[F, n] = W1^T @ x^T[:, t0 ..], cast to BF16 in SBUF.
  u.n = n;
  u.moving_hbm = l.xT_hbm + uint64_t(t0) * 2;
  u.moving_ld = l.tokens;
  u.out_in_sbuf = true;
  u.out_sbuf = g_off;
  u.out_sbuf_tile_bytes = uint32_t(tile);
  u.sbuf_base = uint32_t(free - up_bytes);
  u.sbuf_limit = uint32_t(up_bytes);
  // down: out[t0 .., D] = g[t0 .., F] @ W2 (+ b2, + residual), the stationary g^T from SBUF.
  d.m = n;
  d.stationary_in_sbuf = true;
  d.stationary_sbuf = g_off;
  d.stationary_sbuf_tile_bytes = uint32_t(tile);
  d.out_hbm = l.out_hbm + uint64_t(t0) * uint64_t(l.d_model) * 4;
  if (d.epilogue.residual) d.epilogue.residual_hbm += uint64_t(t0) * uint64_t(l.d_model) * 4;
  d.sbuf_limit = uint32_t(free - up_bytes);
  try {
    plan_gemm(info, u);
    plan_gemm(info, d);
  } catch (const std::invalid_argument&) {
    return r;
  }
  r.up = u, r.down = d, r.fits = true;
  return r;
}

/// A RowsPlan's ops: both GEMMs, added to `pipe`.
void add_rows(Pipeline& pipe, const driver::DeviceInfo& info, const RowsPlan& r) {
  const std::vector<Pipeline::OpId> g_written = add_gemm(pipe, info, r.up);
  add_gemm(pipe, info, r.down, g_written);  // its TE reads g^T (and reuses PSUM) after up's epilogues
}

/// Whether the MLP runs as rows programs (mlp_in_rows), and each core's token count.
struct RowsChoice {
  bool rows = false;
  int per_core = 0;
};

RowsChoice rows_choice(const driver::DeviceInfo& info, const MlpLayout& l) {
  check_mlp(l);
  RowsChoice c;
  const int tile = int(std::max<uint32_t>(1, std::min(info.te_cols, info.psum_partitions)));
  c.per_core = std::min(l.tokens, rows_per_core(l.tokens, tile, l.cores));
  // Rows programs load all of W1 and W2 on every core and keep g^T on chip; the split GEMMs load their shares of
  // the weights, x^T and g^T twice, and their up GEMM streams wider blocks. The one the Pipeline's cost model
  // (Pipeline::estimated_cycles: the busiest core of each wave, the waves back to back) finds shorter; on trn2 the
  // rows win for one core and for 512 tokens per core, the split GEMMs at 256 (docs/kernels.md "GELU MLP").
  if (!l.rows_programs) return c;
  double rows = 0.0, split = 0.0;
  for (int t0 = 0; t0 < l.tokens; t0 += c.per_core) {
    const RowsPlan r = rows_plan(info, l, t0, std::min(c.per_core, l.tokens - t0));
    if (!r.fits) return c;
    Pipeline pipe(info);
    add_rows(pipe, info, r);
    rows = std::max(rows, pipe.estimated_cycles());
  }
  const auto [up, down] = mlp_gemms(l);
  for (const GemmLayout& g : {up, down}) {
    double most = 0.0;
    for (const GemmPiece& p : split_gemm(info, g, l.cores)) {
      Pipeline pipe(info);
      add_gemm(pipe, info, p.layout);
      most = std::max(most, pipe.estimated_cycles());
    }
    split += most;
  }
  c.rows = rows < split;
  return c;
}

}  // namespace

bool mlp_in_rows(const driver::DeviceInfo& info, const MlpLayout& l) { return rows_choice(info, l).rows; }

isa::Program make_mlp_rows_program(const driver::DeviceInfo& info, const MlpLayout& l, int t0, int n) {
  check_mlp(l);
  if (t0 < 0 || n < 1 || t0 + n > l.tokens) {
    throw std::invalid_argument(fmt::format("mlp rows kernel: tokens [{}, {}) are not within the {} tokens", t0,
                                            int64_t(t0) + n, l.tokens));
  }
  const RowsPlan r = rows_plan(info, l, t0, n);
  if (!r.fits) {
    throw std::invalid_argument(fmt::format("mlp rows kernel: {} tokens with d_model {}, d_ff {}: g^T and both "
                                            "GEMMs' buffers do not fit the device's SBUF", n, l.d_model, l.d_ff));
  }
  Pipeline pipe(info);
  add_rows(pipe, info, r);
  return pipe.build();
}

KernelSequence make_mlp_programs(const driver::DeviceInfo& info, const MlpLayout& l) {
  const RowsChoice c = rows_choice(info, l);
  if (c.rows) {  // one program per core's tokens, a wave
    const std::string name = l.residual ? "mlp rows gemm+gelu+gemm+bias+residual" : "mlp rows gemm+gelu+gemm+bias";
    KernelSequence seq;
    for (int t0 = 0; t0 < l.tokens; t0 += c.per_core) {
      const int n = std::min(c.per_core, l.tokens - t0);
      const uint64_t macs = 2 * uint64_t(n) * uint64_t(l.d_model) * uint64_t(l.d_ff);
      seq.push_back({name, make_mlp_rows_program(info, l, t0, n), macs, !seq.empty()});
    }
    return seq;
  }
  const auto [up, down] = mlp_gemms(l);
  KernelSequence seq = gemm_steps(info, "mlp up gemm+gelu", up.k, up.m, up.n, up.stationary_hbm, up.moving_hbm,
                                  up.out_hbm, l.cores, up.out_type, up.epilogue);
  append(&seq, mlp_down_steps(info, l));
  return seq;
}

GemmLayout mlp_down_gemm(const MlpLayout& l, uint32_t w2_sbuf, uint32_t sbuf_end) {
  GemmLayout down = mlp_gemms(l).second;
  if (w2_sbuf > 0) {
    down.moving_in_sbuf = true;
    down.moving_sbuf = w2_sbuf;
    down.moving_sbuf_tile_bytes = sbuf_operand_tile_bytes(down.dtype, down.n);
  }
  down.sbuf_limit = sbuf_end;
  return down;
}

std::string mlp_down_name(const MlpLayout& l) {
  return l.residual ? "mlp down gemm+bias+residual" : "mlp down gemm+bias";
}

KernelSequence mlp_down_steps(const driver::DeviceInfo& info, const MlpLayout& l, uint32_t w2_sbuf,
                              uint32_t sbuf_end) {
  return gemm_steps(info, mlp_down_name(l), mlp_down_gemm(l, w2_sbuf, sbuf_end), l.cores);
}

}  // namespace trnsim::kernels
