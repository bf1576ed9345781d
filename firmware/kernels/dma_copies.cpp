// DMA copies for the kernels (dma_copies.h).
#include "firmware/kernels/dma_copies.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <limits>
#include <stdexcept>

namespace trnsim::kernels {
namespace {

constexpr uint64_t kMaxCount = 0xFFFF;  // the ISA's 16-bit counts

int32_t stride32(int64_t bytes, const char* what) {
  if (bytes > std::numeric_limits<int32_t>::max() || bytes < std::numeric_limits<int32_t>::min()) {
    throw std::invalid_argument(fmt::format("a {} stride of {} bytes does not fit the ISA's 32-bit strides", what,
                                            bytes));
  }
  return static_cast<int32_t>(bytes);
}

/// A copy between two spaces: where and what; counts and strides are the caller's.
isa::CopyFields endpoints(isa::MemSpace src_space, uint64_t src_addr, isa::DataType src_type, isa::MemSpace dst_space,
                          uint64_t dst_addr, isa::DataType dst_type) {
  isa::CopyFields c;
  c.src_space = src_space;
  c.dst_space = dst_space;
  c.src_type = src_type;
  c.dst_type = dst_type;
  c.src_addr = src_addr;
  c.dst_addr = dst_addr;
  return c;
}

isa::Instruction copy_instr(const isa::CopyFields& c) {
  isa::Instruction i;
  i.op = isa::Opcode::kDmaCopy;
  i.copy = c;
  return i;
}

/// Cuts `c` into `parts` pieces along dimension `d` (the outermost with more than one entry when d < 0), recursing
/// into the next one with each run's share of the pieces when `d` has fewer entries than `parts`.
void cut(const isa::CopyFields& c, uint64_t parts, std::vector<isa::Instruction>* out, int d = -1) {
  if (d < 0) {
    d = isa::kApDims - 1;
    while (d > 0 && c.count[std::size_t(d)] == 1) --d;
  }
  if (parts <= 1 || d == 0) {
    out->push_back(copy_instr(c));
    return;
  }
  const std::size_t ds = std::size_t(d);
  const uint64_t n = c.count[ds], chunks = std::min<uint64_t>(parts, n);
  for (uint64_t i = 0; i < chunks; ++i) {
    const uint64_t a = n * i / chunks, b = n * (i + 1) / chunks;
    isa::CopyFields piece = c;
    piece.count[ds] = static_cast<uint16_t>(b - a);
    piece.src_addr = uint64_t(int64_t(c.src_addr) + int64_t(a) * c.src_stride[ds]);
    piece.dst_addr = uint64_t(int64_t(c.dst_addr) + int64_t(a) * c.dst_stride[ds]);
    if (b - a == 1) piece.src_stride[ds] = piece.dst_stride[ds] = 0;
    cut(piece, parts * (i + 1) / chunks - parts * i / chunks, out);  // this run's share of the pieces
  }
}

}  // namespace

uint64_t copy_bytes(const isa::CopyFields& c) {
  return c.elements() * std::max(isa::data_type_bytes(c.src_type), isa::data_type_bytes(c.dst_type));
}

std::vector<isa::Instruction> dma_pieces(const isa::CopyFields& c, uint64_t parts) {
  parts = std::min<uint64_t>(std::max<uint64_t>(parts, 1), std::max<uint64_t>(1, copy_bytes(c) / kMinPieceBytes));
  // The cut whose largest piece is smallest: from the outermost dimension down (recursing), or straight along any
  // dimension with at least `parts` entries (e.g. 15 pieces of [cols, 128 rows, 8 tiles]: 8 or 9 rows of every
  // tile each, where cutting the tiles first leaves one tile whole, twice the others' pieces).
  auto largest = [](const std::vector<isa::Instruction>& v) {
    uint64_t m = 0;
    for (const auto& i : v) m = std::max(m, copy_bytes(i.copy));
    return m;
  };
  std::vector<isa::Instruction> out;
  cut(c, parts, &out);
  for (int d = isa::kApDims - 1; d > 0; --d) {
    if (c.count[std::size_t(d)] < parts) continue;
    std::vector<isa::Instruction> straight;
    cut(c, parts, &straight, d);
    if (largest(straight) < largest(out)) out = std::move(straight);
  }
  return out;
}

uint64_t copy_bytes(const std::vector<isa::CopyFields>& copies) {
  uint64_t total = 0;
  for (const auto& c : copies) total += copy_bytes(c);
  return total;
}

std::vector<isa::Instruction> spread_copies(const std::vector<isa::CopyFields>& copies, uint32_t engines) {
  const uint64_t total = copy_bytes(copies);
  const uint64_t e = std::max<uint32_t>(1, engines);
  // Shares by bytes, at least one each; the engines left over go to the largest remainders (Hamilton's method), so
  // that the wave's pieces fill every engine once when the copies allow it.
  std::vector<uint64_t> share(copies.size());
  std::vector<std::pair<uint64_t, std::size_t>> remainder;
  uint64_t given = 0;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    const uint64_t scaled = copy_bytes(copies[i]) * e, t = std::max<uint64_t>(1, total);
    share[i] = std::max<uint64_t>(1, scaled / t);
    given += share[i];
    remainder.emplace_back(scaled % t, i);
  }
  std::stable_sort(remainder.begin(), remainder.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t r = 0; r < remainder.size() && given < e; ++r, ++given) ++share[remainder[r].second];
  std::vector<isa::Instruction> out;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    const auto pieces = dma_pieces(copies[i], share[i]);
    out.insert(out.end(), pieces.begin(), pieces.end());
  }
  return out;
}

double dma_latency_bytes(const driver::DeviceInfo& info) {
  return std::max(1.0,
                  info.dma_bytes_per_ns * double(std::max<uint32_t>(1, info.num_dma_engines)) * info.dma_latency_ns);
}

uint32_t latency_engines(const driver::DeviceInfo& info, uint64_t bytes, double pieces_of) {
  const double engine_bytes =
      std::max(1.0, std::max(1.0, pieces_of) * dma_latency_bytes(info) / std::max(1u, info.num_dma_engines));
  return uint32_t(std::clamp<double>(std::floor(double(bytes) / engine_bytes), 1.0,
                                     double(std::max(1u, info.num_dma_engines))));
}

isa::Program dma_program(const driver::DeviceInfo& info, const std::vector<isa::CopyFields>& copies) {
  isa::Program p;
  auto& dma = p.queue(isa::Engine::kDma);
  dma = spread_copies(copies, info.num_dma_engines);
  dma.push_back(isa::Instruction::halt());
  return p;
}

isa::CopyFields copy_rows(isa::MemSpace src_space, uint64_t src_addr, isa::DataType src_type, int64_t src_row_stride,
                          isa::MemSpace dst_space, uint64_t dst_addr, isa::DataType dst_type, int64_t dst_row_stride,
                          int rows, int n) {
  if (n < 1 || rows < 1 || uint64_t(n) > kMaxCount || uint64_t(rows) > kMaxCount) {
    throw std::invalid_argument(
        fmt::format("a copy of {} rows of {} elements: each must be 1..{} (the ISA's 16-bit counts)", rows, n,
                    kMaxCount));
  }
  isa::CopyFields c = endpoints(src_space, src_addr, src_type, dst_space, dst_addr, dst_type);
  c.count = {static_cast<uint16_t>(n), static_cast<uint16_t>(rows), 1, 1};
  c.src_stride = {n > 1 ? int32_t(isa::data_type_bytes(src_type)) : 0,
                  rows > 1 ? stride32(src_row_stride, "source row") : 0, 0, 0};
  c.dst_stride = {n > 1 ? int32_t(isa::data_type_bytes(dst_type)) : 0,
                  rows > 1 ? stride32(dst_row_stride, "destination row") : 0, 0, 0};
  return c;
}

std::vector<isa::CopyFields> te_operand_copies(const driver::DeviceInfo& info, isa::Dtype dtype, uint64_t src_hbm,
                                               uint64_t src_row_bytes, int rows, int cols, int tiles,
                                               uint64_t src_tile_bytes, uint64_t dst, uint64_t dst_tile_bytes) {
  if (rows < 1 || cols < 1 || tiles < 1 || uint64_t(cols) > kMaxCount || uint64_t(rows) > kMaxCount ||
      uint64_t(tiles) > kMaxCount) {
    throw std::invalid_argument(fmt::format("TE operand copy of {} tiles of [{}, {}]: each must be 1..{} (the ISA's "
                                            "16-bit counts)", tiles, rows, cols, kMaxCount));
  }
  // MX elements (not a copy type) move as bytes: the same 1-byte type on both sides keeps the bits.
  const auto type = isa::is_mx(dtype) ? isa::DataType::kFp8E4M3 : static_cast<isa::DataType>(uint8_t(dtype));
  const int32_t es = int32_t(isa::data_type_bytes(type));
  const int32_t pb = stride32(int64_t(info.sbuf_partition_bytes), "SBUF partition");
  const unsigned P = isa::te_pe_partitions(dtype);
  // Rows [r0, r0 + n) of every tile: for P = 2, r0 and n even (pairs) or n = 1.
  auto copy = [&](int r0, int n) {
    isa::CopyFields c = endpoints(isa::MemSpace::kHbm, src_hbm + uint64_t(r0) * src_row_bytes, type,
                                  isa::MemSpace::kSbuf,
                                  dst + uint64_t(isa::te_sbuf_partition(dtype, unsigned(r0))) * info.sbuf_partition_bytes +
                                      isa::te_sbuf_byte(dtype, unsigned(r0), 0),
                                  type);
    const int32_t elem = int32_t(isa::te_sbuf_byte(dtype, 0, 1));  // bytes between a row's elements in SBUF
    const int32_t tile_src = tiles > 1 ? stride32(int64_t(src_tile_bytes), "source tile") : 0;
    const int32_t tile_dst = tiles > 1 ? stride32(int64_t(dst_tile_bytes), "destination tile") : 0;
    if (P != 2 || n == 1) {  // [cols, rows, tiles]: one row per SBUF partition (or the lone last FP8 row)
      c.count = {uint16_t(cols), uint16_t(n), uint16_t(tiles), 1};
      c.src_stride = {es, n > 1 ? stride32(int64_t(src_row_bytes), "source row") : 0, tile_src, 0};
      c.dst_stride = {elem, n > 1 ? pb : 0, tile_dst, 0};
    } else {  // [cols, the two rows of a pair, n / 2 SBUF partitions, tiles]
      c.count = {uint16_t(cols), 2, uint16_t(n / 2), uint16_t(tiles)};
      c.src_stride = {es, stride32(int64_t(src_row_bytes), "source row"),
                      n > 2 ? stride32(2 * int64_t(src_row_bytes), "source row pair") : 0, tile_src};
      c.dst_stride = {elem, es, n > 2 ? pb : 0, tile_dst};
    }
    return c;
  };
  const int paired = P == 2 ? rows - rows % 2 : rows;
  std::vector<isa::CopyFields> out;
  if (paired > 0) out.push_back(copy(0, paired));
  if (paired < rows) out.push_back(copy(paired, 1));
  return out;
}

std::vector<isa::CopyFields> te_scale_copies(const driver::DeviceInfo& info, uint64_t scales_hbm, int width, int c0,
                                             int cols, int k0, int rows, int tiles, int tile_k, uint64_t dst,
                                             uint64_t dst_tile_bytes) {
  constexpr int kBlock = int(isa::kMxBlockSize);
  if (rows < 1 || cols < 1 || tiles < 1 || uint64_t(cols) > kMaxCount || uint64_t(tiles) > kMaxCount || k0 % 2 ||
      tile_k % 2 || k0 < 0 || width < c0 + cols) {
    throw std::invalid_argument(fmt::format("MX scale copy of {} tiles of [{}, {}] from partition {}: counts must be "
                                            "1..{}, k0 and tile_k even", tiles, rows, cols, k0, kMaxCount));
  }
  const isa::DataType raw = isa::DataType::kFp8E4M3;  // E8M0 codes move as bytes (a plain copy keeps the bits)
  const int32_t pb = stride32(int64_t(info.sbuf_partition_bytes), "SBUF partition");
  const int sbuf_rows = (rows + 1) / 2;
  std::vector<isa::CopyFields> out;
  auto copy = [&](uint64_t src, uint64_t to) {
    return endpoints(isa::MemSpace::kHbm, src, raw, isa::MemSpace::kSbuf, to, raw);
  };
  if (tile_k % kBlock == 0 && k0 % kBlock == 0 && rows == tile_k) {
    // [cols, the 16 SBUF rows of a block (the same source row: stride 0), blocks of a tile, tiles].
    const int blocks = tile_k / kBlock;
    isa::CopyFields c = copy(scales_hbm + uint64_t(k0 / kBlock) * width + c0, dst);
    c.count = {uint16_t(cols), uint16_t(kBlock / 2), uint16_t(blocks), uint16_t(tiles)};
    c.src_stride = {1, 0, blocks > 1 ? stride32(width, "scale row") : 0,
                    tiles > 1 ? stride32(int64_t(blocks) * width, "scale tile") : 0};
    c.dst_stride = {1, pb, blocks > 1 ? stride32(int64_t(kBlock / 2) * pb, "scale block") : 0,
                    tiles > 1 ? stride32(int64_t(dst_tile_bytes), "destination tile") : 0};
    out.push_back(c);
    return out;
  }
  for (int t = 0; t < tiles; ++t) {
    const int first = k0 + t * tile_k;  // the tile's first operand partition
    for (int j0 = 0; j0 < sbuf_rows;) {
      const int block = (first + 2 * j0) / kBlock;
      const int j1 = std::min(sbuf_rows, ((block + 1) * kBlock - first) / 2);  // SBUF rows of this block
      isa::CopyFields c = copy(scales_hbm + uint64_t(block) * width + c0,
                               dst + uint64_t(t) * dst_tile_bytes + uint64_t(j0) * info.sbuf_partition_bytes);
      c.count = {uint16_t(cols), uint16_t(j1 - j0), 1, 1};
      c.src_stride = {1, 0, 0, 0};
      c.dst_stride = {1, j1 - j0 > 1 ? pb : 0, 0, 0};
      out.push_back(c);
      j0 = j1;
    }
  }
  return out;
}

isa::CopyFields transpose_copy(uint64_t in_hbm, isa::DataType in_type, uint64_t out_hbm, isa::DataType out_type,
                               int rows, int cols) {
  if (rows < 1 || cols < 1 || uint64_t(rows) > kMaxCount || uint64_t(cols) > kMaxCount) {
    throw std::invalid_argument(
        fmt::format("transpose of [{}, {}]: each dimension must be 1..{} (the ISA's 16-bit counts)", rows, cols,
                    kMaxCount));
  }
  const int64_t ies = isa::data_type_bytes(in_type), oes = isa::data_type_bytes(out_type);
  isa::CopyFields c = endpoints(isa::MemSpace::kHbm, in_hbm, in_type, isa::MemSpace::kHbm, out_hbm, out_type);
  c.count = {static_cast<uint16_t>(rows), static_cast<uint16_t>(cols), 1, 1};
  // Rows of at most 65535 elements of at most 4 bytes: every stride fits the ISA's 32 bits.
  c.src_stride = {rows > 1 ? int32_t(cols * ies) : 0, cols > 1 ? int32_t(ies) : 0, 0, 0};
  c.dst_stride = {rows > 1 ? int32_t(oes) : 0, cols > 1 ? int32_t(rows * oes) : 0, 0, 0};
  return c;
}

std::vector<isa::CopyFields> dense_copies(uint64_t in_hbm, isa::DataType in_type, uint64_t out_hbm,
                                          isa::DataType out_type, uint64_t elements) {
  return dense_copies(isa::MemSpace::kHbm, in_hbm, in_type, isa::MemSpace::kHbm, out_hbm, out_type, elements);
}

std::vector<isa::CopyFields> dense_copies(isa::MemSpace src_space, uint64_t src, isa::DataType in_type,
                                          isa::MemSpace dst_space, uint64_t dst, isa::DataType out_type,
                                          uint64_t elements) {
  const uint64_t ies = isa::data_type_bytes(in_type), oes = isa::data_type_bytes(out_type);
  constexpr uint64_t kRow = 8192;  // elements per row of the 2-D copies
  std::vector<isa::CopyFields> out;
  auto add = [&](uint64_t first, uint64_t row, uint64_t nrows) {
    isa::CopyFields c = endpoints(src_space, src + first * ies, in_type, dst_space, dst + first * oes, out_type);
    c.count = {static_cast<uint16_t>(row), static_cast<uint16_t>(nrows), 1, 1};
    c.src_stride = {row > 1 ? int32_t(ies) : 0, nrows > 1 ? int32_t(row * ies) : 0, 0, 0};
    c.dst_stride = {row > 1 ? int32_t(oes) : 0, nrows > 1 ? int32_t(row * oes) : 0, 0, 0};
    out.push_back(c);
  };
  const uint64_t full = elements / kRow;
  for (uint64_t r0 = 0; r0 < full; r0 += kMaxCount) add(r0 * kRow, kRow, std::min(full - r0, kMaxCount));
  if (elements % kRow) add(full * kRow, elements % kRow, 1);
  return out;
}

}  // namespace trnsim::kernels
