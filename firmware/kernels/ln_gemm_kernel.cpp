// LayerNorm into a GEMM in one program (ln_gemm_kernel.h).
#include "firmware/kernels/ln_gemm_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "firmware/kernels/pipeline.h"

namespace trnsim::kernels {
namespace {

/// Why `l` does not fit `info`'s device ("" when it does); the operand's K tile bytes in *tile_bytes.
std::string refusal(const driver::DeviceInfo& info, const LnGemmLayout& l, uint64_t* tile_bytes) {
  const GemmLayout& g = l.gemm;
  const LayerNormLayout& n = l.ln;
  if (n.rows < 1 || n.cols < 1 || g.k != n.cols || g.n != n.rows || g.m < 1) {
    return fmt::format("the GEMM's K {} and N {} must be the LayerNorm's cols {} and rows {} (all >= 1, M {})", g.k,
                       g.n, n.cols, n.rows, g.m);
  }
  if ((g.dtype != isa::Dtype::kBf16 && g.dtype != isa::Dtype::kFp16) ||
      static_cast<uint8_t>(g.dtype) != static_cast<uint8_t>(n.out_type)) {
    return fmt::format("the GEMM's dtype {} must be the LayerNorm's out_type {}, bf16 or fp16", isa::dtype_name(g.dtype),
                       isa::data_type_name(n.out_type));
  }
  const uint64_t chunk = std::min(info.te_cols, info.psum_partitions);
  if (isa::te_max_k(g.dtype, info.te_rows) != chunk || chunk > info.sbuf_partitions) {
    return fmt::format("the TE's K tile of {} rows is not the transposes' chunk of {} features",
                       isa::te_max_k(g.dtype, info.te_rows), chunk);
  }
  const uint64_t bytes = (uint64_t(n.rows) * isa::data_type_bytes(n.out_type) + 63) / 64 * 64;
  if (tile_bytes) *tile_bytes = bytes;
  const uint64_t end = l.sbuf_end > 0 ? l.sbuf_end : info.sbuf_partition_bytes;
  if (l.sbuf_base % 64 != 0) return fmt::format("sbuf_base {} must be a multiple of 64", l.sbuf_base);
  if (end > info.sbuf_partition_bytes || l.sbuf_base + ceil_div(uint64_t(n.cols), chunk) * bytes >= end) {
    return fmt::format("the normalised operand [{}, {}] does not fit the SBUF from offset {}", n.cols, n.rows,
                       l.sbuf_base);
  }
  return "";
}

/// The program's ops added to `pipe`, the LayerNorm's row loads after `in_after` and its transposes (the pair's first
/// use of PSUM) after `psum_after` (add_layernorm's); returns the GEMM's drains.
std::vector<Pipeline::OpId> add_ln_gemm(Pipeline& pipe, const driver::DeviceInfo& info, const LnGemmLayout& l,
                                        const std::vector<std::vector<Pipeline::OpId>>& in_after = {},
                                        const std::vector<Pipeline::OpId>& psum_after = {}) {
  uint64_t tile_bytes = 0;
  const std::string why = refusal(info, l, &tile_bytes);
  if (!why.empty()) throw std::invalid_argument("ln+gemm kernel: " + why);
  const uint64_t chunk = std::min(info.te_cols, info.psum_partitions);
  LayerNormLayout ln = l.ln;
  ln.transposed_out = true;
  ln.out_in_sbuf = true;
  ln.out_sbuf = l.sbuf_base;
  ln.out_sbuf_tile_bytes = uint32_t(tile_bytes);
  ln.sbuf_base = uint32_t(l.sbuf_base + ceil_div(uint64_t(ln.cols), chunk) * tile_bytes);
  // The LayerNorm's later row loads in pieces like the GEMM's later waves: the DMA engines are the program's limit.
  ln.load_piece_latencies = l.gemm.wave_piece_latencies;
  ln.sbuf_end = l.sbuf_end;
  const uint64_t end = l.sbuf_end > 0 ? l.sbuf_end : info.sbuf_partition_bytes;
  const LayerNormOps norm = add_layernorm(pipe, info, ln, in_after, psum_after);
  GemmLayout g = l.gemm;
  g.moving_hbm = 0;
  g.moving_ld = 0;
  g.moving_in_sbuf = true;
  g.moving_sbuf = l.sbuf_base;
  g.moving_sbuf_tile_bytes = uint32_t(tile_bytes);
  g.sbuf_base = uint32_t((norm.sbuf_end + 63) / 64 * 64);
  if (g.sbuf_base >= end) {
    throw std::invalid_argument(fmt::format("ln+gemm kernel: the operand and the LayerNorm's buffers take all {} "
                                            "bytes of an SBUF partition it may use",
                                            end));
  }
  g.sbuf_limit = uint32_t(end - g.sbuf_base);
  const std::vector<Pipeline::OpId> drains = add_gemm(pipe, info, g, norm.done);
  add_prefetch(pipe, info, "ln+gemm kernel", l.prefetch, l.sbuf_end, norm.done);
  return drains;
}

}  // namespace

LnGemmLayout ln_gemm_piece(const LnGemmLayout& whole, const GemmPiece& p) {
  LnGemmLayout l = whole;
  l.gemm = p.layout;
  l.ln.rows = p.layout.n;
  l.ln.in_hbm += uint64_t(p.n0) * uint64_t(whole.ln.cols) * isa::data_type_bytes(whole.ln.in_type);
  return l;
}

bool ln_gemm_fits(const driver::DeviceInfo& info, const LnGemmLayout& l) {
  if (!refusal(info, l, nullptr).empty()) return false;
  try {
    Pipeline pipe(info);
    add_ln_gemm(pipe, info, l);
  } catch (const std::invalid_argument&) {
    return false;
  }
  return true;
}

isa::Program make_ln_gemm_program(const driver::DeviceInfo& info, const LnGemmLayout& l) {
  Pipeline pipe(info);
  add_ln_gemm(pipe, info, l);
  return pipe.build();
}

double ln_gemm_estimate(const driver::DeviceInfo& info, const LnGemmLayout& l) {
  Pipeline pipe(info);
  add_ln_gemm(pipe, info, l);
  return pipe.estimated_cycles();
}

namespace {
/// make_gemm_ln_gemm_program's ops added to `pipe`.
void add_gemm_ln_gemm(Pipeline& pipe, const driver::DeviceInfo& info, const GemmLayout& first,
                      const LnGemmLayout& second) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("gemm+ln+gemm kernel: " + what);
  };
  const LayerNormLayout& ln = second.ln;
  // The LayerNorm's row tiles (min(rows, partitions) rows) must be the GEMM's M tiles, or both one tile.
  const uint64_t m_tile = std::min(info.te_cols, info.psum_partitions), rows = uint64_t(std::max(ln.rows, 1));
  const uint64_t row_tile = std::min<uint64_t>(info.sbuf_partitions, rows);
  require(first.out_kept_in_sbuf && first.out_type == isa::DataType::kFp32 && first.m == ln.rows &&
              first.n == ln.cols && ln.in_type == isa::DataType::kFp32 &&
              (row_tile == m_tile || (rows <= m_tile && rows <= row_tile)),
          fmt::format("the first GEMM's output [{}, {}] must be the LayerNorm's FP32 input [{}, {}], kept in SBUF "
                      "(out_kept_in_sbuf, FP32) in M tiles of the LayerNorm's row tiles",
                      first.m, first.n, ln.rows, ln.cols));
  const uint64_t first_end = uint64_t(first.sbuf_base) + plan_gemm(info, first).sbuf_bytes;
  const uint64_t out_end = uint64_t(first.out_sbuf) +
                           (ceil_div(uint64_t(first.m), m_tile) - 1) * first.out_sbuf_tile_bytes + uint64_t(first.n) * 4;
  const uint64_t second_end = second.sbuf_end > 0 ? second.sbuf_end : info.sbuf_partition_bytes;
  require(first_end <= second.sbuf_base && (out_end <= second.sbuf_base || first.out_sbuf >= second_end),
          fmt::format("the first GEMM's bytes [{}, {}) and its output's [{}, {}) must lie outside the fused "
                      "LayerNorm + GEMM's [{}, {}), the GEMM's below",
                      first.sbuf_base, first_end, first.out_sbuf, out_end, second.sbuf_base, second_end));
  LnGemmLayout l = second;
  l.ln.in_in_sbuf = true;
  l.ln.in_sbuf = first.out_sbuf;
  l.ln.in_sbuf_tile_bytes = first.out_sbuf_tile_bytes;
  // The first GEMM's drains (block by block: each group of N tiles over the M tiles) by M tile: row tile t of the
  // LayerNorm waits for the epilogues of M tile t's blocks only. Its transposes, which write PSUM, wait for every
  // drain (the first GEMM's last readers of PSUM: a later block may reuse the banks of an earlier one).
  const std::vector<Pipeline::OpId> drains = add_gemm(pipe, info, first);
  const std::size_t m_tiles = ceil_div(uint64_t(first.m), m_tile);
  std::vector<std::vector<Pipeline::OpId>> by_tile(m_tiles);
  for (std::size_t b = 0; b < drains.size(); ++b) by_tile[b % m_tiles].push_back(drains[b]);
  add_ln_gemm(pipe, info, l, by_tile, drains);
}
}  // namespace

isa::Program make_gemm_ln_gemm_program(const driver::DeviceInfo& info, const GemmLayout& first,
                                       const LnGemmLayout& second) {
  Pipeline pipe(info);
  add_gemm_ln_gemm(pipe, info, first, second);
  return pipe.build();
}

GemmLnGemmEstimate gemm_ln_gemm_estimate(const driver::DeviceInfo& info, const GemmLayout& first,
                                         const LnGemmLayout& second) {
  Pipeline pipe(info);
  add_gemm_ln_gemm(pipe, info, first, second);
  const double cycles = pipe.estimated_cycles();
  return {cycles, cycles - pipe.dma_engine_cycles()};
}

LnGemmSplit ln_gemm_split(const driver::DeviceInfo& info, const LnGemmLayout& whole, int cores) {
  const GemmLayout& g = whole.gemm;
  if (cores < 1 || g.m < 1 || g.n < 1) {
    throw std::invalid_argument(fmt::format("ln+gemm split: {} cores, M {}, N {}", cores, g.m, g.n));
  }
  const int tile = int(std::max<uint32_t>(1, info.te_cols));
  const int m_tiles = (g.m + tile - 1) / tile, n_units = (g.n + kGemmSplitColumns - 1) / kGemmSplitColumns;
  // The grids with as many blocks as cores: mp parts of M, cores / mp of N (fewer where a dimension runs out).
  std::set<std::pair<int, int>> grids;
  for (int mp = 1; mp <= std::min(cores, m_tiles); ++mp) {
    const int np = std::max(1, std::min(cores / mp, n_units));
    grids.insert({rows_per_core(g.m, tile, mp), rows_per_core(g.n, kGemmSplitColumns, np)});
  }
  LnGemmSplit best;
  best.estimate = -1.0;
  std::string last_error;
  for (const auto& [m_per, n_per] : grids) {
    // The GEMM's wave pieces by the fused program's estimate: the LayerNorm's loads beside the GEMM's keep the DMA
    // engines busy throughout, where larger pieces spend less of their time on start latencies.
    for (const double pieces_of : kWavePieceChoices) {
      std::vector<GemmPiece> pieces = split_gemm_grid(g, m_per, n_per);
      for (GemmPiece& p : pieces) p.layout.wave_piece_latencies = pieces_of;
      double cost = 0.0;
      try {
        cost = ln_gemm_estimate(info, ln_gemm_piece(whole, pieces.front()));  // the first block is the largest
      } catch (const std::invalid_argument& e) {
        last_error = e.what();
        continue;
      }
      if (best.pieces.empty() || cost < best.estimate) best = {std::move(pieces), cost};
    }
  }
  if (best.pieces.empty()) throw std::invalid_argument(last_error);
  return best;
}

KernelSequence ln_gemm_steps(const driver::DeviceInfo& info, const std::string& name, const LnGemmLayout& whole,
                             int cores) {
  const GemmLayout& g = whole.gemm;
  KernelSequence seq;
  for (const GemmPiece& p : ln_gemm_split(info, whole, cores).pieces) {
    const uint64_t macs = uint64_t(g.k) * uint64_t(p.layout.m) * uint64_t(p.layout.n);
    seq.push_back({name, make_ln_gemm_program(info, ln_gemm_piece(whole, p)), macs, !seq.empty()});
  }
  return seq;
}

}  // namespace trnsim::kernels
