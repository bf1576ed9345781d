// The kernels' one DMA copy splitter and copy constructors (firmware/kernels/dma_copies.h): the pieces of a copy
// move exactly the elements of the copy (each once, same source and destination), dimension 0 is never cut, no
// more pieces than 8 KiB units, a wave's engines shared by bytes; transposes and dense casts address what they say.
#include "firmware/kernels/dma_copies.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace trnsim::kernels {
namespace {

using isa::DataType;
using isa::MemSpace;

/// Every (source byte address, destination byte address) pair a copy moves, walking its four dimensions.
std::vector<std::pair<uint64_t, uint64_t>> moves(const isa::CopyFields& c) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (uint32_t i3 = 0; i3 < c.count[3]; ++i3)
    for (uint32_t i2 = 0; i2 < c.count[2]; ++i2)
      for (uint32_t i1 = 0; i1 < c.count[1]; ++i1)
        for (uint32_t i0 = 0; i0 < c.count[0]; ++i0) {
          const std::array<int64_t, 4> i{i0, i1, i2, i3};
          int64_t s = int64_t(c.src_addr), d = int64_t(c.dst_addr);
          for (std::size_t k = 0; k < 4; ++k) {
            s += i[k] * c.src_stride[k];
            d += i[k] * c.dst_stride[k];
          }
          out.emplace_back(uint64_t(s), uint64_t(d));
        }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> moves(const std::vector<isa::Instruction>& pieces) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const auto& p : pieces) {
    EXPECT_EQ(p.op, isa::Opcode::kDmaCopy);
    const auto m = moves(p.copy);
    out.insert(out.end(), m.begin(), m.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// [cols FP32, rows, tiles] HBM -> SBUF, rows one partition apart, tiles `cols * 4` bytes apart.
isa::CopyFields tiles_copy(int cols, int rows, int tiles) {
  isa::CopyFields c = copy_rows(MemSpace::kHbm, 0x1000, DataType::kFp32, int64_t(cols) * 4, MemSpace::kSbuf, 64,
                                DataType::kFp32, 192 * 1024, rows, cols);
  c.count[2] = static_cast<uint16_t>(tiles);
  c.src_stride[2] = cols * rows * 4;
  c.dst_stride[2] = cols * 4;
  return c;
}

TEST(DmaPieces, ASmallCopyStaysWhole) {
  const isa::CopyFields c = tiles_copy(64, 4, 3);  // 3 KiB: less than one 8 KiB unit
  const auto pieces = dma_pieces(c, 16);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(moves(pieces), moves(c));
}

TEST(DmaPieces, CutsTheOuterDimensionThenTheNextAndNeverDimensionZero) {
  const isa::CopyFields c = tiles_copy(512, 16, 3);  // 96 KiB = 12 units of 8 KiB; 3 tiles < 12 pieces
  const auto pieces = dma_pieces(c, 16);
  ASSERT_EQ(pieces.size(), 12u);
  for (const auto& p : pieces) {
    EXPECT_EQ(p.copy.count[0], 512);  // whole rows
    EXPECT_EQ(p.copy.count[2], 1);    // each piece inside one tile: 4 of its 16 rows
    EXPECT_EQ(p.copy.count[1], 4);
  }
  EXPECT_EQ(moves(pieces), moves(c));
  EXPECT_EQ(dma_pieces(c, 5).size(), 5u);  // uneven shares: 2 + 2 + 1 pieces over the tiles
  EXPECT_EQ(moves(dma_pieces(c, 5)), moves(c));
  EXPECT_EQ(dma_pieces(c, 0).size(), 1u);
}

TEST(DmaPieces, CutsStraightAlongRowsWhenTheTilesCannotShareThePiecesEvenly) {
  // 15 pieces of 8 tiles x 128 rows (a GEMM wave: 15 engines for the moving tiles): cutting the tiles first would
  // leave one tile whole (twice the others' pieces); 15 runs of 8 or 9 rows of every tile are within 1/8.
  const isa::CopyFields c = tiles_copy(512, 128, 8);
  const auto pieces = dma_pieces(c, 15);
  ASSERT_EQ(pieces.size(), 15u);
  for (const auto& p : pieces) {
    EXPECT_EQ(p.copy.count[2], 8) << "every piece spans the tiles";
    EXPECT_TRUE(p.copy.count[1] == 8 || p.copy.count[1] == 9) << p.copy.count[1];
  }
  EXPECT_EQ(moves(pieces), moves(c));
}

TEST(DmaPieces, ARowOnlyCopyIsNotCut) {
  isa::CopyFields c = copy_rows(MemSpace::kHbm, 0, DataType::kFp32, 0, MemSpace::kHbm, 1 << 20, DataType::kFp32, 0,
                                1, 60000);
  EXPECT_EQ(dma_pieces(c, 16).size(), 1u);
}

TEST(SpreadCopies, SharesTheEnginesByBytes) {
  const isa::CopyFields big = tiles_copy(512, 16, 12);  // 384 KiB
  isa::CopyFields small = tiles_copy(512, 16, 4);        // 128 KiB, from elsewhere
  small.src_addr = 0x1000000;
  const auto wave = spread_copies({big, small}, 16);
  ASSERT_EQ(wave.size(), 16u);
  const auto from_big = std::count_if(wave.begin(), wave.end(),
                                      [&](const isa::Instruction& i) { return i.copy.src_addr < small.src_addr; });
  EXPECT_EQ(from_big, 12);  // 3/4 of the bytes, 3/4 of the engines
  auto expected = moves(big);
  const auto s = moves(small);
  expected.insert(expected.end(), s.begin(), s.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(moves(wave), expected);
  const isa::Program p = dma_program(driver::DeviceInfo{}, {big});
  ASSERT_EQ(p.queues[std::size_t(isa::Engine::kDma)].size(), 2u);  // no engines reported: one, then halt
  EXPECT_EQ(p.queues[std::size_t(isa::Engine::kDma)].back().op, isa::Opcode::kHalt);
}

TEST(TransposeCopy, MovesInRowCToOutRowC) {
  const uint64_t in = 0x100, out = 0x4000;
  const isa::CopyFields c = transpose_copy(in, DataType::kFp32, out, DataType::kBf16, 3, 5);
  std::vector<std::pair<uint64_t, uint64_t>> expected;
  for (uint64_t r = 0; r < 3; ++r)
    for (uint64_t col = 0; col < 5; ++col) expected.emplace_back(in + (r * 5 + col) * 4, out + (col * 3 + r) * 2);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(moves(c), expected);
  EXPECT_EQ(moves(transpose_copy(in, DataType::kFp32, out, DataType::kFp32, 1, 1)),
            (std::vector<std::pair<uint64_t, uint64_t>>{{in, out}}));
  EXPECT_THROW(transpose_copy(in, DataType::kFp32, out, DataType::kFp32, 0, 5), std::invalid_argument);
  EXPECT_THROW(transpose_copy(in, DataType::kFp32, out, DataType::kFp32, 3, 65536), std::invalid_argument);
}

TEST(DenseCopies, TheFewestCopiesTheCountsAllow) {
  const uint64_t n = 8192ull * 65535 + 8192 * 2 + 5;
  const auto copies = dense_copies(0, DataType::kFp32, 0x100000000ull, DataType::kBf16, n);
  ASSERT_EQ(copies.size(), 3u);
  EXPECT_EQ(copies[0].count[1], 65535);
  EXPECT_EQ(copies[1].count[1], 2);
  EXPECT_EQ(copies[1].src_addr, 8192ull * 65535 * 4);
  EXPECT_EQ(copies[1].dst_addr, 0x100000000ull + 8192ull * 65535 * 2);
  EXPECT_EQ(copies[2].count[0], 5);
  uint64_t total = 0;
  for (const auto& c : copies) total += c.elements();
  EXPECT_EQ(total, n);
  const auto few = dense_copies(64, DataType::kFp32, 4096, DataType::kFp32, 7);
  ASSERT_EQ(few.size(), 1u);
  std::vector<std::pair<uint64_t, uint64_t>> expected;
  for (uint64_t i = 0; i < 7; ++i) expected.emplace_back(64 + 4 * i, 4096 + 4 * i);
  EXPECT_EQ(moves(few[0]), expected);
  EXPECT_TRUE(dense_copies(0, DataType::kFp32, 0, DataType::kFp32, 0).empty());
}

TEST(CopyRows, RejectsCountsAndStridesTheIsaCannotHold) {
  EXPECT_THROW(copy_rows(MemSpace::kHbm, 0, DataType::kFp32, 4, MemSpace::kHbm, 0, DataType::kFp32, 4, 0, 1),
               std::invalid_argument);
  EXPECT_THROW(copy_rows(MemSpace::kHbm, 0, DataType::kFp32, 4, MemSpace::kHbm, 0, DataType::kFp32, 4, 1, 65536),
               std::invalid_argument);
  EXPECT_THROW(copy_rows(MemSpace::kHbm, 0, DataType::kFp32, 1ll << 31, MemSpace::kHbm, 0, DataType::kFp32, 4, 2, 1),
               std::invalid_argument);
}

// te_scale_copies, executed here by walking each copy's four dimensions over a byte image of HBM and SBUF: SBUF
// row j of tile t must hold the scales of block (k0 + t * tile_k + 2j) / 32, for tiles whose K is a multiple of 32
// (one merged copy) and tiles of 8-row arrays (K tile 16: one copy per tile and block).
TEST(TeScaleCopies, EverySbufRowGetsTheScalesOfItsBlock) {
  driver::DeviceInfo info;
  info.sbuf_partitions = 16;
  info.sbuf_partition_bytes = 256;
  const int width = 11, c0 = 3, cols = 6, tile_bytes = 40;
  struct Case {
    int k0, rows, tiles, tile_k;
    size_t copies;
  };
  for (const Case c : {Case{64, 32, 3, 32, 1}, Case{0, 32, 1, 32, 1}, Case{32, 26, 1, 32, 1}, Case{16, 16, 5, 16, 5},
                       Case{48, 11, 1, 16, 1}, Case{256, 16, 1, 16, 1},
                       Case{16, 32, 1, 32, 2}}) {  // the last one straddles two blocks
    SCOPED_TRACE(fmt::format("k0 {} rows {} tiles {} tile_k {}", c.k0, c.rows, c.tiles, c.tile_k));
    const int blocks = (c.k0 + c.tiles * c.tile_k + 31) / 32 + 1;
    std::vector<uint8_t> hbm(size_t(blocks) * width);
    for (size_t i = 0; i < hbm.size(); ++i) hbm[i] = uint8_t(i * 7 + 1);
    std::vector<uint8_t> sbuf(size_t(info.sbuf_partitions) * info.sbuf_partition_bytes, 0);
    const uint64_t base = 0x1000, dst = 8;
    const auto copies = te_scale_copies(info, base, width, c0, cols, c.k0, c.rows, c.tiles, c.tile_k, dst, tile_bytes);
    EXPECT_EQ(copies.size(), c.copies);
    for (const isa::CopyFields& cp : copies) {
      ASSERT_EQ(cp.src_space, MemSpace::kHbm);
      ASSERT_EQ(cp.dst_space, MemSpace::kSbuf);
      ASSERT_EQ(cp.src_type, cp.dst_type);  // a plain copy keeps the bits
      for (int d3 = 0; d3 < cp.count[3]; ++d3)
        for (int d2 = 0; d2 < cp.count[2]; ++d2)
          for (int d1 = 0; d1 < cp.count[1]; ++d1)
            for (int d0 = 0; d0 < cp.count[0]; ++d0) {
              const int64_t so = int64_t(cp.src_addr - base) + int64_t(d0) * cp.src_stride[0] +
                                 int64_t(d1) * cp.src_stride[1] + int64_t(d2) * cp.src_stride[2] +
                                 int64_t(d3) * cp.src_stride[3];
              const int64_t dd = int64_t(cp.dst_addr) + int64_t(d0) * cp.dst_stride[0] +
                                 int64_t(d1) * cp.dst_stride[1] + int64_t(d2) * cp.dst_stride[2] +
                                 int64_t(d3) * cp.dst_stride[3];
              ASSERT_GE(so, 0);
              ASSERT_LT(size_t(so), hbm.size());
              ASSERT_LT(size_t(dd), sbuf.size());
              sbuf[size_t(dd)] = hbm[size_t(so)];
            }
    }
    for (int t = 0; t < c.tiles; ++t) {
      for (int j = 0; j < (c.rows + 1) / 2; ++j) {
        const int block = (c.k0 + t * c.tile_k + 2 * j) / 32;
        for (int f = 0; f < cols; ++f) {
          const size_t at = size_t(j) * info.sbuf_partition_bytes + dst + size_t(t) * tile_bytes + size_t(f);
          ASSERT_EQ(sbuf[at], hbm[size_t(block) * width + size_t(c0 + f)]) << "tile " << t << " row " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace trnsim::kernels
