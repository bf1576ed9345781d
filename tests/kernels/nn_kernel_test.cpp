// Softmax, LayerNorm, RMSNorm and TE-transpose kernels without a device: every generated program is checked
// (validation, device limits, the areas it may touch, semaphores, races between the four queues under any timing)
// and executed by the test-side reference machine; the result must equal the golden kernel bit for bit. Shapes
// that are not multiples of the partition count or the tiles, on the tiny and trn2 device descriptions; special
// values; bad layouts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "firmware/golden/nn_golden.h"
#include "firmware/kernels/attention_kernel.h"
#include "firmware/kernels/kernel_sequence.h"
#include "firmware/kernels/norm_kernel.h"
#include "firmware/kernels/softmax_kernel.h"
#include "firmware/kernels/transpose_kernel.h"
#include "tests/kernels/nn_test_util.h"
#include "tests/kernels/program_sim.h"
#include "tests/support/test_seed.h"

namespace trnsim::kernels {
namespace {

using driver::DeviceInfo;
using isa::DataType;
using test::Area;

DeviceInfo tiny() {
  DeviceInfo i;
  i.te_rows = i.te_cols = 16;
  i.sbuf_partitions = i.psum_partitions = 16;
  i.sbuf_partition_bytes = 192 * 1024;
  i.psum_partition_bytes = 16 * 1024;
  i.psum_banks = 8;
  i.hbm_bytes = 1ull << 30;
  i.num_queues = 4;
  i.num_semaphores = 32;
  i.num_dma_engines = 16;
  i.te_clock_mhz = 2400;
  i.act_clock_mhz = 1200;  // BRIEF section 2 figures, as the device's registers give them
  i.vec_clock_mhz = 960;
  i.vec_elems_per_cycle = i.vec_elems_per_cycle_16 = 16;  // one element per lane
  i.dma_latency_ns = 1300;
  i.dma_bytes_per_ns = 23.0;
  return i;
}

DeviceInfo trn2() {
  DeviceInfo i = tiny();
  i.te_rows = i.te_cols = 128;
  i.sbuf_partitions = i.psum_partitions = 128;
  i.hbm_bytes = 96ull << 30;
  i.vec_elems_per_cycle = 256;  // 2 and 4 elements per lane (VEC_WIDTH)
  i.vec_elems_per_cycle_16 = 512;
  return i;
}

/// One tensor of the HBM image.
struct Tensor {
  uint64_t addr;
  DataType type;
  std::vector<uint32_t> v;  ///< input patterns (empty for the output)
  std::size_t elements;
  uint64_t bytes() const { return elements * isa::data_type_bytes(type); }
};

/// Places tensors one after the other with odd gaps, so that a stray access is noticed.
uint64_t next_addr(const Tensor& t) { return (t.addr + t.bytes() + 0x1003) & ~uint64_t(3); }

/// Checks `prog` (areas: the inputs read-only, the output write-only, SBUF/PSUM partitions the kernel may use),
/// runs it on the reference machine and returns the output's patterns; fails the test if any other HBM byte
/// changed.
std::vector<uint32_t> run_checked(const DeviceInfo& info, const isa::Program& prog, const std::vector<Tensor>& ins,
                                  const Tensor& out, uint32_t sbuf_parts, uint32_t psum_parts) {
  test::ProgramCheckOptions opt;
  for (const Tensor& t : ins)
    opt.areas.push_back({isa::MemSpace::kHbm, 0, 1, t.addr, t.addr + t.bytes(), true, false, "in"});
  opt.areas.push_back({isa::MemSpace::kHbm, 0, 1, out.addr, out.addr + out.bytes(), false, true, "out"});
  opt.areas.push_back({isa::MemSpace::kSbuf, 0, sbuf_parts, 0, info.sbuf_partition_bytes, true, true, "sbuf"});
  if (psum_parts > 0) {
    opt.areas.push_back({isa::MemSpace::kPsum, 0, psum_parts, 0, info.psum_partition_bytes, true, true, "psum"});
  }
  const test::ProgramCheck check = test::check_program(info, prog, opt);
  EXPECT_TRUE(check.ok()) << check.summary();
  if (!check.ok()) return {};

  std::vector<uint8_t> hbm(out.addr + out.bytes() + 0x1000, 0xA5);  // poison
  for (const Tensor& t : ins) {
    const unsigned es = isa::data_type_bytes(t.type);
    for (std::size_t i = 0; i < t.v.size(); ++i) {
      for (unsigned b = 0; b < es; ++b) hbm[t.addr + i * es + b] = uint8_t(t.v[i] >> (8 * b));
    }
  }
  const std::vector<uint8_t> before = hbm;
  const test::RefMemory mem = test::run_reference(info, prog, hbm);
  const unsigned es = isa::data_type_bytes(out.type);
  std::vector<uint32_t> got(out.elements, 0);
  for (std::size_t i = 0; i < got.size(); ++i) {
    for (unsigned b = 0; b < es; ++b) got[i] |= uint32_t(mem.hbm[out.addr + i * es + b]) << (8 * b);
  }
  std::size_t changed = 0;
  for (uint64_t a = 0; a < hbm.size(); ++a) {
    if ((a < out.addr || a >= out.addr + out.bytes()) && mem.hbm[a] != before[a]) ++changed;
  }
  EXPECT_EQ(changed, 0u) << "HBM bytes outside the output changed";
  return got;
}

uint32_t parts(const DeviceInfo& info, int rows) { return std::min<uint32_t>(info.sbuf_partitions, uint32_t(rows)); }

// ---------------------------------------------------------------------------------------------------------------
// Softmax

struct SoftmaxCase {
  int rows, cols;
  bool trn2 = false;
  float scale = 1.0f;
  bool causal = false;
  int offset = 0;
  DataType in = DataType::kFp32, out = DataType::kFp32;
  bool specials = false;
};

std::string name_of(const SoftmaxCase& c) {
  return fmt::format("{}x{}_{}_s{}{}{}_{}_{}{}", c.rows, c.cols, c.trn2 ? "trn2" : "tiny", int(c.scale * 1000),
                     c.causal ? "_causal" : "", c.causal ? std::to_string(c.offset) : "", isa::data_type_name(c.in),
                     isa::data_type_name(c.out), c.specials ? "_special" : "");
}

class SoftmaxRef : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxRef, MatchesGoldenBitForBit) {
  const SoftmaxCase c = GetParam();
  const DeviceInfo info = c.trn2 ? trn2() : tiny();
  std::mt19937_64 rng(test::test_seed());
  const std::size_t n = std::size_t(c.rows) * c.cols;
  Tensor in{0x1002 & ~uint64_t(3), c.in, test::random_elements(c.in, n, rng, 3.0f, c.specials), n};
  Tensor out{next_addr(in), c.out, {}, n};
  SoftmaxLayout l;
  l.rows = c.rows;
  l.cols = c.cols;
  l.in_hbm = in.addr;
  l.out_hbm = out.addr;
  l.scale = c.scale;
  l.causal = c.causal;
  l.causal_offset = c.offset;
  l.in_type = c.in;
  l.out_type = c.out;
  const isa::Program prog = make_softmax_program(info, l);
  EXPECT_TRUE(prog.queue(isa::Engine::kTe).empty());
  const std::vector<uint32_t> got = run_checked(info, prog, {in}, out, parts(info, c.rows), 0);
  golden::SoftmaxSpec s{c.rows, c.cols, c.scale, c.causal, c.offset, c.in, c.out};
  test::expect_same_bits(got, golden::softmax_rows(s, in.v), c.cols, "softmax");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SoftmaxRef,
    ::testing::Values(SoftmaxCase{1, 1}, SoftmaxCase{17, 33}, SoftmaxCase{45, 700}, SoftmaxCase{130, 5},
                      SoftmaxCase{130, 5, true}, SoftmaxCase{300, 70, true, 0.125f},
                      SoftmaxCase{33, 64, false, 0.125f, true},
                      // row groups of 3 tiles with a causal mask: all tiles masked / the last tile of a masked group not
                      SoftmaxCase{150, 40, false, 1.0f, true, 5}, SoftmaxCase{150, 20, false, 1.0f, true}, SoftmaxCase{40, 29, false, 1.0f, true, 3},
                      SoftmaxCase{200, 128, true, 0.0883883f, true},
                      SoftmaxCase{37, 50, false, 1.0f, false, 0, DataType::kBf16, DataType::kBf16},
                      SoftmaxCase{20, 40, false, 1.0f, false, 0, DataType::kFp16, DataType::kFp8E4M3},
                      SoftmaxCase{50, 61, false, 1.0f, false, 0, DataType::kFp32, DataType::kFp32, true},
                      SoftmaxCase{50, 61, false, 4.0f, true, 2, DataType::kFp32, DataType::kBf16, true}),
    [](const auto& i) { return name_of(i.param); });

TEST(SoftmaxKernel, InPlace) {
  const DeviceInfo info = tiny();
  std::mt19937_64 rng(test::test_seed());
  const int rows = 70, cols = 45;
  const std::size_t n = std::size_t(rows) * cols;
  Tensor in{0x2000, DataType::kFp32, test::random_elements(DataType::kFp32, n, rng, 3.0f), n};
  Tensor out{in.addr, DataType::kFp32, {}, n};
  SoftmaxLayout l;
  l.rows = rows;
  l.cols = cols;
  l.in_hbm = l.out_hbm = in.addr;
  l.causal = true;
  const auto got = run_checked(info, make_softmax_program(info, l), {in}, out, 16, 0);
  golden::SoftmaxSpec s{rows, cols, 1.0f, true, 0};
  test::expect_same_bits(got, golden::softmax_rows(s, in.v), cols, "softmax in place");
}

TEST(SoftmaxKernel, BadLayoutsThrow) {
  const DeviceInfo info = tiny();
  SoftmaxLayout ok;
  ok.rows = 4;
  ok.cols = 8;
  ok.out_hbm = 0x1000;
  EXPECT_NO_THROW(make_softmax_program(info, ok));
  auto bad = [&](auto change) {
    SoftmaxLayout l = ok;
    change(l);
    EXPECT_THROW(make_softmax_program(info, l), std::invalid_argument);
  };
  bad([](SoftmaxLayout& l) { l.rows = 0; });
  bad([](SoftmaxLayout& l) { l.cols = -1; });
  bad([](SoftmaxLayout& l) { l.cols = 70000; });
  bad([](SoftmaxLayout& l) { l.scale = 0.0f; });
  bad([](SoftmaxLayout& l) { l.scale = -1.0f; });
  bad([](SoftmaxLayout& l) { l.scale = INFINITY; });
  bad([](SoftmaxLayout& l) { l.scale = NAN; });
  bad([](SoftmaxLayout& l) { l.causal = true, l.causal_offset = -1; });
  bad([](SoftmaxLayout& l) { l.out_hbm = (1ull << 30) - 16; });
  bad([](SoftmaxLayout& l) { l.cols = 60000; });  // one FP32 row tile does not fit 192 KiB partitions
  try {
    SoftmaxLayout l = ok;
    l.scale = -2.0f;
    make_softmax_program(info, l);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("scale"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// LayerNorm and RMSNorm

struct NormCase {
  int rows, cols;
  bool trn2 = false;
  bool rms = false;
  float eps = 1e-5f;
  DataType in = DataType::kFp32, out = DataType::kFp32;
  bool specials = false;
};

std::string name_of(const NormCase& c) {
  return fmt::format("{}_{}x{}_{}_{}_{}{}", c.rms ? "rms" : "layer", c.rows, c.cols, c.trn2 ? "trn2" : "tiny",
                     isa::data_type_name(c.in), isa::data_type_name(c.out), c.specials ? "_special" : "");
}

/// A norm's inputs, one after the other in HBM: in [rows, cols] of `type` (N(0, 3^2), special values if asked),
/// gamma and beta [cols] FP32.
std::array<Tensor, 3> norm_inputs(int rows, int cols, DataType type, bool specials, std::mt19937_64& rng) {
  const std::size_t n = std::size_t(rows) * std::size_t(cols), nc = std::size_t(cols);
  Tensor in{0x2000, type, test::random_elements(type, n, rng, 3.0f, specials), n};
  Tensor gamma{next_addr(in), DataType::kFp32, test::random_elements(DataType::kFp32, nc, rng, 1.0f), nc};
  Tensor beta{next_addr(gamma), DataType::kFp32, test::random_elements(DataType::kFp32, nc, rng, 1.0f), nc};
  return {in, gamma, beta};
}

class NormRef : public ::testing::TestWithParam<NormCase> {};

TEST_P(NormRef, MatchesGoldenBitForBit) {
  const NormCase c = GetParam();
  const DeviceInfo info = c.trn2 ? trn2() : tiny();
  std::mt19937_64 rng(test::test_seed());
  const std::size_t n = std::size_t(c.rows) * c.cols;
  const auto [in, gamma, beta] = norm_inputs(c.rows, c.cols, c.in, c.specials, rng);
  Tensor out{next_addr(beta), c.out, {}, n};
  const golden::NormSpec s{c.rows, c.cols, c.eps, c.in, c.out};
  if (c.rms) {
    RmsNormLayout l;
    l.rows = c.rows;
    l.cols = c.cols;
    l.in_hbm = in.addr;
    l.gamma_hbm = gamma.addr;
    l.out_hbm = out.addr;
    l.eps = c.eps;
    l.in_type = c.in;
    l.out_type = c.out;
    const auto got = run_checked(info, make_rmsnorm_program(info, l), {in, gamma}, out, parts(info, c.rows), 0);
    test::expect_same_bits(got, golden::rmsnorm_rows(s, in.v, gamma.v), c.cols, "rmsnorm");
  } else {
    LayerNormLayout l;
    l.rows = c.rows;
    l.cols = c.cols;
    l.in_hbm = in.addr;
    l.gamma_hbm = gamma.addr;
    l.beta_hbm = beta.addr;
    l.out_hbm = out.addr;
    l.eps = c.eps;
    l.in_type = c.in;
    l.out_type = c.out;
    const auto got = run_checked(info, make_layernorm_program(info, l), {in, gamma, beta}, out, parts(info, c.rows), 0);
    test::expect_same_bits(got, golden::layernorm_rows(s, in.v, gamma.v, beta.v), c.cols, "layernorm");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, NormRef,
    ::testing::Values(NormCase{1, 1}, NormCase{17, 33}, NormCase{45, 700}, NormCase{130, 5}, NormCase{130, 5, true},
                      NormCase{200, 768, true}, NormCase{1, 1, false, true}, NormCase{17, 33, false, true},
                      NormCase{45, 700, false, true}, NormCase{130, 5, true, true, 1e-6f},
                      NormCase{33, 48, false, false, 0.0f, DataType::kBf16, DataType::kBf16},
                      NormCase{33, 48, false, true, 1e-6f, DataType::kFp16, DataType::kFp8E5M2},
                      NormCase{50, 61, false, false, 1e-5f, DataType::kFp32, DataType::kFp32, true},
                      NormCase{50, 61, false, true, 1e-5f, DataType::kFp32, DataType::kFp32, true}),
    [](const auto& i) { return name_of(i.param); });

// LayerNorm with its output transposed on the TE (LayerNormLayout::transposed_out): the bits of the LayerNorm
// followed by the TE transpose (golden::layernorm_rows, then golden::transpose_te in tiles of the TE's rows), into a
// dense [cols, rows] output or the columns [c0, c0 + rows) of a wider one; nothing else of the output is written.
struct NormTCase {
  int rows, cols;
  bool trn2 = false;
  DataType out = DataType::kBf16;
  int out_ld = 0, c0 = 0;  // a column slice of a [cols, out_ld] output
  bool specials = false;
};

class NormTransposedRef : public ::testing::TestWithParam<NormTCase> {};

TEST_P(NormTransposedRef, MatchesTheLayerNormThenTheTeTranspose) {
  const NormTCase c = GetParam();
  const DeviceInfo info = c.trn2 ? trn2() : tiny();
  std::mt19937_64 rng(test::test_seed());
  const std::size_t n = std::size_t(c.rows) * c.cols;
  const int ld = c.out_ld > 0 ? c.out_ld : c.rows;
  const auto [in, gamma, beta] = norm_inputs(c.rows, c.cols, DataType::kFp32, c.specials, rng);
  Tensor out{next_addr(beta), c.out, {}, std::size_t(c.cols) * std::size_t(ld)};
  LayerNormLayout l;
  l.rows = c.rows;
  l.cols = c.cols;
  l.in_hbm = in.addr;
  l.gamma_hbm = gamma.addr;
  l.beta_hbm = beta.addr;
  l.out_hbm = out.addr + uint64_t(c.c0) * isa::data_type_bytes(c.out);
  l.out_type = c.out;
  l.transposed_out = true;
  l.out_ld = c.out_ld;
  const isa::Program prog = make_layernorm_program(info, l);
  EXPECT_FALSE(prog.queues[std::size_t(isa::Engine::kTe)].empty());
  const auto got = run_checked(info, prog, {in, gamma, beta}, out, parts(info, c.rows), info.psum_partitions);
  ASSERT_EQ(got.size(), out.elements);
  const golden::NormSpec s{c.rows, c.cols, 1e-5f, DataType::kFp32, c.out};
  const std::vector<uint32_t> ln = golden::layernorm_rows(s, in.v, gamma.v, beta.v);
  const auto dtype = static_cast<isa::Dtype>(static_cast<uint8_t>(c.out));
  const std::vector<uint32_t> want = golden::transpose_te(dtype, c.rows, c.cols, ln, transpose_tile_rows(info), c.out);
  std::vector<uint32_t> slice(n);
  std::size_t untouched = 0;
  for (int col = 0; col < c.cols; ++col) {
    for (int x = 0; x < ld; ++x) {
      const uint32_t v = got[std::size_t(col) * std::size_t(ld) + std::size_t(x)];
      if (x >= c.c0 && x < c.c0 + c.rows) {
        slice[std::size_t(col) * std::size_t(c.rows) + std::size_t(x - c.c0)] = v;
      } else {
        untouched += v == 0xA5A5u ? 0 : 1;
      }
    }
  }
  EXPECT_EQ(untouched, 0u) << "output elements outside the column slice were written";
  test::expect_same_bits(slice, want, c.rows, "layernorm transposed");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, NormTransposedRef,
    ::testing::Values(NormTCase{1, 1}, NormTCase{17, 33}, NormTCase{45, 700}, NormTCase{33, 48, false, DataType::kFp16},
                      NormTCase{200, 768, true}, NormTCase{130, 5, true}, NormTCase{20, 37, false, DataType::kBf16, 41, 9},
                      NormTCase{256, 130, true, DataType::kBf16, 300, 44}, NormTCase{50, 61, false, DataType::kBf16, 0, 0,
                                                                                      true}),
    [](const auto& i) {
      const NormTCase& c = i.param;
      return fmt::format("{}x{}_{}_{}_ld{}_c{}{}", c.rows, c.cols, c.trn2 ? "trn2" : "tiny",
                         isa::data_type_name(c.out), c.out_ld, c.c0, c.specials ? "_special" : "");
    });

TEST(NormKernel, LaterRowGroupsLoadInPiecesOfStartLatencyBytes) {
  // trn2, [512, 768] FP32: one 128-row tile per group (3 KB rows > the 2 KB group bytes), 393,216 bytes each. The
  // first group is loaded over all 16 DMA engines (8 rows a copy); with load_piece_latencies 2 the later ones in
  // pieces of at least 2 x 29,900 bytes (16 engines x 23 B/ns x 1.3 us = 478,400 bytes per start latency, over 16):
  // 393,216 / 59,800 -> 6 pieces. So 16 + 3 x 6 = 34 loads of x instead of 4 x 16 = 64; the bits stay the golden's.
  const DeviceInfo info = trn2();
  std::mt19937_64 rng(test::test_seed());
  const int rows = 512, cols = 768;
  const auto [in, gamma, beta] = norm_inputs(rows, cols, DataType::kFp32, false, rng);
  Tensor out{next_addr(beta), DataType::kFp32, {}, std::size_t(rows) * cols};
  LayerNormLayout l;
  l.rows = rows, l.cols = cols;
  l.in_hbm = in.addr, l.gamma_hbm = gamma.addr, l.beta_hbm = beta.addr, l.out_hbm = out.addr;
  const auto x_loads = [&](const isa::Program& p) {
    int n = 0;
    for (const isa::Instruction& i : p.queue(isa::Engine::kDma)) {
      n += i.op == isa::Opcode::kDmaCopy && i.copy.src_space == isa::MemSpace::kHbm && i.copy.src_addr >= in.addr &&
           i.copy.src_addr < in.addr + uint64_t(rows) * cols * 4;
    }
    return n;
  };
  EXPECT_EQ(x_loads(make_layernorm_program(info, l)), 64);
  l.load_piece_latencies = 2.0;
  const isa::Program prog = make_layernorm_program(info, l);
  EXPECT_EQ(x_loads(prog), 34);
  const auto got = run_checked(info, prog, {in, gamma, beta}, out, parts(info, rows), 0);
  const golden::NormSpec s{rows, cols, 1e-5f, DataType::kFp32, DataType::kFp32};
  test::expect_same_bits(got, golden::layernorm_rows(s, in.v, gamma.v, beta.v), cols, "layernorm, pieces");
  for (const double bad : {0.5, -1.0, double(NAN), double(INFINITY)}) {
    l.load_piece_latencies = bad;
    EXPECT_THROW(make_layernorm_program(info, l), std::invalid_argument) << bad;
  }
}

TEST(NormKernel, KeepsBelowSbufEnd) {
  // trn2, [512, 768] FP32: gamma, beta and the squares' row take 9,216 bytes of each partition and a buffer of one
  // 128-row group 3,072 + 4 columns; unbounded the kernel takes three buffers. Bounded at 16,384 it takes two and
  // keeps every SBUF access below (the program checker's areas), with the golden bits.
  const DeviceInfo info = trn2();
  std::mt19937_64 rng(test::test_seed());
  const int rows = 512, cols = 768;
  const uint32_t end = 16384;
  const auto [in, gamma, beta] = norm_inputs(rows, cols, DataType::kFp32, false, rng);
  Tensor out{next_addr(beta), DataType::kFp32, {}, std::size_t(rows) * cols};
  LayerNormLayout l;
  l.rows = rows, l.cols = cols;
  l.in_hbm = in.addr, l.gamma_hbm = gamma.addr, l.beta_hbm = beta.addr, l.out_hbm = out.addr;
  test::ProgramCheckOptions below;
  below.areas = {{isa::MemSpace::kHbm, 0, 1, 0, info.hbm_bytes, true, true, "HBM"},
                 {isa::MemSpace::kSbuf, 0, info.sbuf_partitions, 0, end, true, true, "below sbuf_end"}};
  EXPECT_FALSE(test::check_program(info, make_layernorm_program(info, l), below).ok()) << "unbounded, it reaches past";
  l.sbuf_end = end;
  const isa::Program prog = make_layernorm_program(info, l);
  const test::ProgramCheck c = test::check_program(info, prog, below);
  EXPECT_TRUE(c.ok()) << c.summary();
  const auto got = run_checked(info, prog, {in, gamma, beta}, out, parts(info, rows), 0);
  const golden::NormSpec s{rows, cols, 1e-5f, DataType::kFp32, DataType::kFp32};
  test::expect_same_bits(got, golden::layernorm_rows(s, in.v, gamma.v, beta.v), cols, "layernorm below sbuf_end");
  l.sbuf_end = 9216;  // gamma, beta and the squares alone: no room for a buffer
  EXPECT_THROW(make_layernorm_program(info, l), std::invalid_argument);
  l.sbuf_end = uint32_t(info.sbuf_partition_bytes) + 64;
  EXPECT_THROW(make_layernorm_program(info, l), std::invalid_argument);
}

TEST(NormKernel, TransposedOutputNeedsATeTypeAndRoomForItsRows) {
  const DeviceInfo info = tiny();
  LayerNormLayout l;
  l.rows = 3;
  l.cols = 10;
  l.out_hbm = 0x1000;
  l.out_type = DataType::kBf16;
  l.transposed_out = true;
  EXPECT_NO_THROW(make_layernorm_program(info, l));
  l.out_type = DataType::kFp32;
  try {
    make_layernorm_program(info, l);
    ADD_FAILURE() << "an FP32 transposed output was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("out_type bf16 or fp16, not fp32"), std::string::npos) << e.what();
  }
  l.out_type = DataType::kBf16;
  l.out_ld = 2;
  try {
    make_layernorm_program(info, l);
    ADD_FAILURE() << "out_ld below rows was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("out_ld 2 is smaller than rows 3"), std::string::npos) << e.what();
  }
  l.out_ld = 0;
  l.out_hbm = (1ull << 30) - 40;  // [10, 3] BF16 = 60 bytes: past the end of HBM
  EXPECT_THROW(make_layernorm_program(info, l), std::invalid_argument);
}

TEST(NormKernel, BadLayoutsThrow) {
  const DeviceInfo info = tiny();
  LayerNormLayout ok;
  ok.rows = 3;
  ok.cols = 10;
  ok.out_hbm = 0x1000;
  EXPECT_NO_THROW(make_layernorm_program(info, ok));
  RmsNormLayout rok;
  rok.rows = 3;
  rok.cols = 10;
  EXPECT_NO_THROW(make_rmsnorm_program(info, rok));
  auto bad = [&](auto change) {
    LayerNormLayout l = ok;
    change(l);
    EXPECT_THROW(make_layernorm_program(info, l), std::invalid_argument);
    RmsNormLayout r = rok;
    r.rows = l.rows;
    r.cols = l.cols;
    r.eps = l.eps;
    r.in_hbm = l.in_hbm;
    r.gamma_hbm = l.gamma_hbm;
    EXPECT_THROW(make_rmsnorm_program(info, r), std::invalid_argument);
  };
  bad([](LayerNormLayout& l) { l.rows = 0; });
  bad([](LayerNormLayout& l) { l.cols = 0; });
  bad([](LayerNormLayout& l) { l.cols = 100000; });
  bad([](LayerNormLayout& l) { l.eps = -1e-5f; });
  bad([](LayerNormLayout& l) { l.eps = NAN; });
  bad([](LayerNormLayout& l) { l.in_hbm = (1ull << 30) - 8; });
  bad([](LayerNormLayout& l) { l.gamma_hbm = (1ull << 30) - 8; });
  bad([](LayerNormLayout& l) { l.cols = 17000; });  // gamma, (beta,) squares and one row tile exceed 192 KiB
  LayerNormLayout l = ok;
  l.beta_hbm = (1ull << 30) - 8;
  EXPECT_THROW(make_layernorm_program(info, l), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------------------------
// TE transpose

struct TransposeCase {
  int rows, cols;
  bool trn2 = false;
  isa::Dtype dtype = isa::Dtype::kBf16;
  DataType out = DataType::kBf16;
  bool specials = false;
};

std::string name_of(const TransposeCase& c) {
  return fmt::format("{}x{}_{}_{}_{}{}", c.rows, c.cols, c.trn2 ? "trn2" : "tiny", isa::dtype_name(c.dtype),
                     isa::data_type_name(c.out), c.specials ? "_special" : "");
}

class TransposeRef : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(TransposeRef, MatchesGoldenBitForBit) {
  const TransposeCase c = GetParam();
  const DeviceInfo info = c.trn2 ? trn2() : tiny();
  std::mt19937_64 rng(test::test_seed());
  const std::size_t n = std::size_t(c.rows) * c.cols;
  const DataType in_type = static_cast<DataType>(static_cast<uint8_t>(c.dtype));
  Tensor in{0x1001, in_type, test::random_elements(in_type, n, rng, 3.0f, c.specials, 23), n};
  Tensor out{next_addr(in), c.out, {}, n};
  TransposeLayout l;
  l.rows = c.rows;
  l.cols = c.cols;
  l.in_hbm = in.addr;
  l.out_hbm = out.addr;
  l.dtype = c.dtype;
  l.out_type = c.out;
  const isa::Program prog = make_transpose_program(info, l);
  if (c.trn2 && c.cols >= 2048) {  // groups of 16 tiles: the Scalar engine copies them out of PSUM (not only halt)
    EXPECT_GT(prog.queues[std::size_t(isa::Engine::kAct)].size(), 1u);
  }
  // SBUF: the input's row tile partitions and the drains' staging (one partition per PSUM partition).
  const uint32_t psum_parts = std::min<uint32_t>(info.te_cols, uint32_t(c.cols));
  const auto got = run_checked(info, prog, {in}, out,
                               std::max(std::min<uint32_t>(info.te_rows, uint32_t(c.rows)), psum_parts), psum_parts);
  test::expect_same_bits(got, golden::transpose_te(c.dtype, c.rows, c.cols, in.v, transpose_tile_rows(info), c.out),
                         c.rows, "transpose");
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransposeRef,
                         ::testing::Values(TransposeCase{1, 1}, TransposeCase{17, 33}, TransposeCase{45, 700},
                                           TransposeCase{130, 5}, TransposeCase{16, 16}, TransposeCase{130, 300, true},
                                           TransposeCase{128, 128, true},
                                           TransposeCase{40, 70, false, isa::Dtype::kFp16, DataType::kFp32},
                                           TransposeCase{33, 20, false, isa::Dtype::kFp8E4M3, DataType::kFp8E4M3},
                                           TransposeCase{33, 20, false, isa::Dtype::kFp8E5M2, DataType::kFp16},
                                           TransposeCase{50, 45, false, isa::Dtype::kBf16, DataType::kBf16, true},
                                           TransposeCase{150, 140, true, isa::Dtype::kFp16, DataType::kFp16, true},
                                           TransposeCase{3, 2100},
                                           // trn2, groups of 16 tiles: drained through the Scalar engine's staging
                                           // (a ragged second row tile too), with specials, and into FP8
                                           TransposeCase{130, 2100, true, isa::Dtype::kBf16, DataType::kBf16, true},
                                           TransposeCase{129, 2048, true, isa::Dtype::kFp16, DataType::kFp8E5M2}),
                         [](const auto& i) { return name_of(i.param); });

// A device whose PSUM banks hold fewer FP32 than the TE has rows: the row tile shrinks to the bank (8 rows here).
TEST(TransposeKernel, SmallPsumBanksShrinkTheRowTile) {
  DeviceInfo info = tiny();
  info.psum_partition_bytes = 256;  // 8 banks of 32 bytes = 8 FP32
  info.sbuf_partitions = 12;
  ASSERT_EQ(transpose_tile_rows(info), 8);
  std::mt19937_64 rng(test::test_seed());
  const int rows = 21, cols = 19;
  Tensor in{0x1000, DataType::kBf16,
            test::random_elements(DataType::kBf16, std::size_t(rows) * cols, rng, 3.0f, true, 23),
            std::size_t(rows) * cols};
  Tensor out{next_addr(in), DataType::kBf16, {}, std::size_t(rows) * cols};
  TransposeLayout l;
  l.rows = rows;
  l.cols = cols;
  l.in_hbm = in.addr;
  l.out_hbm = out.addr;
  const auto got = run_checked(info, make_transpose_program(info, l), {in}, out, 12, 12);  // M tiles of 12 columns
  test::expect_same_bits(got, golden::transpose_te(l.dtype, rows, cols, in.v, 8, DataType::kBf16), rows, "transpose");
}

// Rows [16, 37) of a [37, 19] input (whole row tiles of tiny's 16, as a core's share) into their columns of the
// [19, 37] output (out_ld 37): those columns are the whole transpose's, every other byte of the output untouched.
TEST(TransposeKernel, ARowSliceWritesItsColumnsOfAWiderOutput) {
  const DeviceInfo info = tiny();
  std::mt19937_64 rng(test::test_seed());
  const int rows = 37, cols = 19, r0 = 16, n = rows - r0;
  Tensor in{0x1000, DataType::kBf16,
            test::random_elements(DataType::kBf16, std::size_t(rows) * cols, rng, 3.0f, true, 23),
            std::size_t(rows) * cols};
  Tensor out{next_addr(in), DataType::kBf16, {}, std::size_t(rows) * cols};
  TransposeLayout l;
  l.rows = n;
  l.cols = cols;
  l.in_hbm = in.addr + uint64_t(r0) * cols * 2;
  l.out_hbm = out.addr + uint64_t(r0) * 2;
  l.out_ld = rows;
  const auto got = run_checked(info, make_transpose_program(info, l), {in}, out, 16, 16);
  ASSERT_EQ(got.size(), out.elements);
  const auto want = golden::transpose_te(l.dtype, rows, cols, in.v, 16, DataType::kBf16);
  std::size_t bad = 0;
  for (int c = 0; c < cols; ++c) {
    for (int r = 0; r < rows; ++r) {
      const std::size_t i = std::size_t(c) * rows + std::size_t(r);
      if (got[i] != (r < r0 ? 0xA5A5u : want[i])) ++bad;
    }
  }
  EXPECT_EQ(bad, 0u) << "elements differ from the golden transpose (columns >= 16) or from the poison (< 16)";
}

TEST(TransposeKernel, BadLayoutsThrow) {
  const DeviceInfo info = tiny();
  TransposeLayout ok;
  ok.rows = 5;
  ok.cols = 7;
  ok.out_hbm = 0x1000;
  EXPECT_NO_THROW(make_transpose_program(info, ok));
  auto bad = [&](auto change) {
    TransposeLayout l = ok;
    change(l);
    EXPECT_THROW(make_transpose_program(info, l), std::invalid_argument);
  };
  bad([](TransposeLayout& l) { l.rows = 0; });
  bad([](TransposeLayout& l) { l.cols = 0; });
  bad([](TransposeLayout& l) { l.dtype = static_cast<isa::Dtype>(4); });
  bad([](TransposeLayout& l) { l.in_hbm = (1ull << 30) - 4; });
  bad([](TransposeLayout& l) { l.out_hbm = (1ull << 30) - 4; });
  bad([](TransposeLayout& l) { l.out_ld = 4; });  // below rows (5)
  DeviceInfo no_psum = info;
  no_psum.psum_banks = 0;
  EXPECT_THROW(make_transpose_program(no_psum, ok), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------------------------
// The race checker knows the Vector and Scalar operands: dropping one wait of a kernel is caught.

TEST(NnKernelPrograms, RemovedWaitIsARace) {
  const DeviceInfo info = tiny();
  SoftmaxLayout l;
  l.rows = 40;
  l.cols = 20;
  l.out_hbm = 0x10000;
  const isa::Program prog = make_softmax_program(info, l);
  ASSERT_TRUE(test::check_program(info, prog).ok());
  int variants = 0;
  for (const isa::Engine e : {isa::Engine::kAct, isa::Engine::kVec}) {
    const auto& q = prog.queue(e);
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (q[i].op != isa::Opcode::kSemWait) continue;
      isa::Program broken = prog;
      broken.queue(e)[i] = isa::Instruction::nop();
      const test::ProgramCheck check = test::check_program(info, broken);
      EXPECT_FALSE(check.ok()) << isa::engine_name(e) << " wait " << i << " removed, still race-free";
      EXPECT_NE(check.summary().find("race"), std::string::npos) << check.summary();
      ++variants;
    }
  }
  EXPECT_GT(variants, 4);
}

}  // namespace
}  // namespace trnsim::kernels

namespace trnsim::kernels {
namespace {

// program_sim's view of Vector / Scalar instructions, on hand-written programs.
isa::Program assemble_or_die(const char* text) { return isa::assemble(text); }

TEST(ProgramSimTensorOps, UnorderedActAndVecWritesRace) {
  const isa::Program p = assemble_or_die(R"(
.queue vec
memset value=1 partitions=16 free=[8] out=sbuf:0:0x0
halt
.queue act
activation func=exp partitions=16 free=[8] out=sbuf:0:0x10 in0=sbuf:0:0x40
halt
)");
  const test::ProgramCheck c = test::check_program(tiny(), p);
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.summary().find(
                "race: vec[0] memset writes SBUF partition 0 [0x0, 0x20) while act[0] activation may still write it"),
            std::string::npos)
      << c.summary();
}

TEST(ProgramSimTensorOps, SemaphoreOrdersThem) {
  const isa::Program p = assemble_or_die(R"(
.queue vec
memset value=1 partitions=16 free=[8] out=sbuf:0:0x0
sem_signal sem=3 value=1
halt
.queue act
sem_wait sem=3 value=1
activation func=exp partitions=16 free=[8] out=sbuf:0:0x10 in0=sbuf:0:0x0
halt
)");
  const test::ProgramCheck c = test::check_program(tiny(), p);
  EXPECT_TRUE(c.ok()) << c.summary();
  // ... and the reference machine computes exp(1) in every element.
  const test::RefMemory m = test::run_reference(tiny(), p, std::vector<uint8_t>(64, 0));
  uint32_t got;
  std::memcpy(&got, &m.sbuf[5 * tiny().sbuf_partition_bytes + 0x10 + 12], 4);
  EXPECT_EQ(got, golden::activation_device(isa::ActFunc::kExp, 0x3F800000u));
}

TEST(ProgramSimTensorOps, VectorReadOfPsumBeforeTheTeFinishedRaces) {
  const isa::Program p = assemble_or_die(R"(
.queue te
load_stationary dtype=bf16 sbuf=0x0 k=16 m=16
multiply_moving dtype=bf16 sbuf=0x0 psum=0x0 k=16 n=16
halt
.queue vec
tensor_copy partitions=16 free=[16] out=sbuf:0:0x100 in0=psum:0:0x0
halt
)");
  const test::ProgramCheck c = test::check_program(tiny(), p);
  EXPECT_NE(c.summary().find("race"), std::string::npos) << c.summary();
  EXPECT_NE(c.summary().find("PSUM"), std::string::npos) << c.summary();
}

TEST(ProgramSimTensorOps, QuadrantRuleAndRangesAreChecked) {
  DeviceInfo info = trn2();
  const isa::Program p = assemble_or_die(R"(
.queue vec
memset value=0 partitions=4 free=[8] out=sbuf:0:0x2fffc
memset value=0 partitions=40 free=[4] out=sbuf:32:0x0
tensor_reduce op=max partitions=16 free=[8] out=sbuf:0:0x0 in0=sbuf:120:0x0
halt
)");
  test::ProgramCheckOptions opt;
  opt.max_errors = 100;
  const test::ProgramCheck c = test::check_program(info, p, opt);
  EXPECT_NE(c.summary().find("vec[1] memset: out starts at partition 32"), std::string::npos) << c.summary();
  EXPECT_NE(c.summary().find("vec[2] tensor_reduce reads SBUF partition 128"), std::string::npos) << c.summary();
  EXPECT_NE(c.summary().find("vec[0] memset writes SBUF partition 0 bytes [0x2fffc, 0x3001c): outside the device"),
            std::string::npos)
      << c.summary();
}

/// GPT-2 small's causal attention as the trn2 block runs it over 8 cores: 12 heads of 64, every step of a head in
/// one program per piece (fused_pieces), Q^T, K^T, V^T and O^T one after another in HBM.
AttentionLayout gpt2_attention(int seq) {
  AttentionLayout l;
  l.seq = seq, l.heads = 12, l.head_dim = 64, l.causal = true, l.te_transpose = true, l.cores = 8;
  l.fused_softmax = l.fused_pieces = true;
  const uint64_t DT = uint64_t(l.heads) * l.head_dim * l.seq * 2;
  l.qT_hbm = 0, l.kT_hbm = DT, l.vT_hbm = 2 * DT, l.outT_hbm = 3 * DT;
  return l;
}

TEST(AttentionPieces, EachHeadIsCutWhereTheEstimatedWaveEndsSoonest) {
  // GPT-2 small's causal attention at seq 2048 on trn2's 8 cores: 12 heads in two pieces each. The equal halves
  // (8 + 8 query tiles) differ most: the later queries see more keys. Measured on the block (trnsim run --workload
  // transformer-block --config trn2 --te tlm --seq 2048, the cut forced by hand): attention 254,635 cycles at 5 + 11
  // query tiles, 241,806 at 6 + 10, 245,381 at 7 + 9, 248,660 at 8 + 8, 246,596 at 10 + 6; the estimates (228 k,
  // 234 k, 240 k, 234 k for 6, 7, 8, 10) put 6 + 10 first too: 12 long pieces on 8 cores, the 12 short ones in the
  // gaps of the four cores that take one long piece.
  AttentionLayout l = gpt2_attention(2048);
  ASSERT_EQ(attention_pieces(trn2(), l), 2);
  const KernelSequence seq = make_attention_programs(trn2(), l);
  ASSERT_EQ(seq.size(), 24u);
  // MACs of a piece of queries [q0, q0 + n): S over the keys up to its last query, PV per query tile of 128 over
  // the key tiles up to its own: for [0, 768) 768 x 64 x 768 + 128 x 64 x 128 x (1 + .. + 6); for [768, 2048)
  // 1280 x 64 x 2048 + 128 x 64 x 128 x (7 + .. + 16).
  const uint64_t first = 768ull * 64 * 768 + 128ull * 64 * 128 * 21;
  const uint64_t second = 1280ull * 64 * 2048 + 128ull * 64 * 128 * 115;
  for (size_t i = 0; i < seq.size(); ++i) {
    EXPECT_EQ(seq[i].macs, i < 12 ? second : first) << i << " " << seq[i].name << ": the longer pieces first";
    EXPECT_EQ(seq[i].with_previous, i > 0) << i;
  }
  // Not causal, the halves are alike: the equal cut.
  l.causal = false;
  const KernelSequence flat = make_attention_programs(trn2(), l);
  ASSERT_EQ(flat.size(), 24u);
  EXPECT_EQ(flat[0].macs, 1024ull * 64 * 2048 * 2);
}

TEST(AttentionPieces, AShortSequenceThatCutsIntoUnequalPiecesRunsOnePiecePerHead) {
  // pieces_per_head counts rounds of equal pieces: 12 heads on 8 cores in 2 pieces each is 3 rounds of half a head
  // against 2 rounds of a whole one. At seq 129 the cut can only be 128 + 1 queries, and the 1-query piece pays a
  // whole program's start, so the estimates keep one piece per head. Measured on the block (trnsim run --workload
  // transformer-block --config trn2 --te tlm --seq 129, the eleventh session): attention 31,415 cycles in 24 pieces,
  // 22,332 in 12 (the block 142,403 -> 133,320); on 7 cores 41,058 -> 22,332; at seq 512 36,412 against 42,502.
  const AttentionLayout l = gpt2_attention(129);
  ASSERT_EQ(attention_pieces(trn2(), l), 1);
  const KernelSequence seq = make_attention_programs(trn2(), l);
  ASSERT_EQ(seq.size(), 12u);
  // A whole head: S over the 129 keys, PV for query tile 0 (128 queries) over key tile 0 and for tile 1 (1 query)
  // over keys 0 .. 128.
  for (const KernelStep& step : seq) EXPECT_EQ(step.macs, 129ull * 64 * 129 + 128ull * 64 * 128 + 1ull * 64 * 129);
}

TEST(AttentionPieces, WithAPrefetchEveryCoreKeepsAPieceToCarryIt) {
  // 4 heads on 8 cores at seq 129 with a prefetch, which is dealt over every core's pieces: one piece per head
  // (the choice a lopsided 128 + 1 cut may get) would leave 4 cores none, so attention_pieces keeps the heads cut
  // in two where there are fewer heads than cores: 8 pieces, one per core.
  AttentionLayout l = gpt2_attention(129);
  l.heads = 4;
  const uint64_t DT = uint64_t(l.heads) * l.head_dim * l.seq * 2;
  l.kT_hbm = DT, l.vT_hbm = 2 * DT, l.outT_hbm = 3 * DT;
  const DeviceInfo info = trn2();
  const uint32_t tile = sbuf_operand_tile_bytes(isa::Dtype::kBf16, 30);
  l.sbuf_end = info.sbuf_partition_bytes - 3 * tile;
  l.prefetch = sbuf_operand_copies(info, isa::Dtype::kBf16, 4 * DT, 40, 30, l.sbuf_end, tile);
  EXPECT_EQ(attention_pieces(info, l), 2);
  const KernelSequence seq = make_attention_programs(info, l);
  std::vector<int> per_core(8, 0);
  for (const KernelStep& st : seq) ++per_core[std::size_t(st.core)];
  EXPECT_EQ(per_core, std::vector<int>(8, 1));
}

// The transposes' PSUM slots of an attention piece start right after the accumulator's last column, so the spare
// end of its last bank holds slots too: GPT-2's last 1280 queries of a head at seq 2048 on trn2 (the block's long
// piece). PSUM by hand: 8 banks of 2 KiB per partition; the scores take banks 0-3 (one block of whole rows, 2048
// FP32); the accumulator O^T [64, 1280] FP32 takes 5 KiB from bank 4 (banks 4, 5 and the first half of 6); a slot
// is [128 keys, 128 queries] FP32, 512 bytes: 2 slots in the rest of bank 6 and 4 in bank 7. The PV multiplies stay
// inside the accumulator's 5 KiB, the transposes (128-column multiplies that overwrite) in the slots, each write
// inside one bank, and the program checker finds no race.
/// The block's long attention piece at seq 2048 on 8 cores: the last 1280 queries of a head (d 64), causal.
AttentionPieceLayout long_piece_at_2048() {
  AttentionPieceLayout l;
  l.seq = 2048, l.head_dim = 64, l.query0 = 768, l.queries = 1280, l.causal = true;
  l.scale = attention_scale(64);
  const uint64_t T = 64ull * 2048 * 2;
  l.qT_hbm = 0, l.kT_hbm = T, l.v_hbm = 2 * T, l.outT_hbm = 3 * T;
  return l;
}

TEST(AttentionPieces, TransposeSlotsStartAfterTheAccumulatorsLastColumn) {
  const DeviceInfo info = trn2();
  const AttentionPieceLayout l = long_piece_at_2048();
  const isa::Program p = make_attention_piece_program(info, l);
  const uint64_t bank = 2048, acc0 = 4 * bank, acc_end = acc0 + 1280 * 4;
  std::vector<int> slot_writes(16, 0);  // per 512-byte slot position from acc0
  for (const isa::Instruction& in : p.queues[size_t(isa::Engine::kTe)]) {
    if (in.op != isa::Opcode::kMultiplyMoving) continue;
    const uint64_t a = in.te.psum_addr % info.psum_partition_bytes, e = a + 4ull * in.te.free_size;
    EXPECT_EQ(a / bank, (e - 1) / bank) << "a write across a bank at " << a;
    if (a < acc0) continue;  // the scores
    if (a < acc_end) {
      EXPECT_LE(e, acc_end) << "a multiply into the accumulator runs past its last column";
    } else {
      EXPECT_EQ(in.te.free_size, 128) << "a transpose writes one [128, 128] slot";
      EXPECT_FALSE(in.te.accumulate);
      EXPECT_EQ((a - acc_end) % 512, 0u);
      ++slot_writes[std::size_t((a - acc0) / 512)];
    }
  }
  for (int s = 10; s < 16; ++s) EXPECT_GT(slot_writes[std::size_t(s)], 0) << "slot at byte " << s * 512;
  const test::ProgramCheck c = test::check_program(info, p);
  EXPECT_TRUE(c.ok()) << c.summary();
}

/// The P^T copies of a piece (PSUM -> SBUF): {on the Vector engine, on the Scalar engine}.
std::pair<int, int> pt_copies(const isa::Program& p) {
  std::pair<int, int> n{0, 0};
  for (const isa::Instruction& in : p.queue(isa::Engine::kVec)) {
    n.first += in.op == isa::Opcode::kTensorCopy && in.vec.in0.space == isa::MemSpace::kPsum;
  }
  for (const isa::Instruction& in : p.queue(isa::Engine::kAct)) {
    n.second += in.op == isa::Opcode::kActivation && in.act.func == isa::ActFunc::kIdentity &&
                in.act.in0.space == isa::MemSpace::kPsum;
  }
  return n;
}

TEST(AttentionPieces, TheWiderVectorEngineTakesTheTransposesCopies) {
  // trn2's Vector engine copies a [128, 128] P^T tile out of FP32 PSUM at two elements per lane (64 Vector cycles =
  // 160 TE cycles; VEC_WIDTH 256), the Scalar engine at one (128 = 256 TE cycles). The block's long piece at seq 2048
  // gives the Vector engine half of its copies or more by its estimate (measured on the device when the choice was
  // made: the block took 457,232 cycles with all of them there, 457,480 with half, 466,904 with none). Its query tiles
  // i = 0..9 see key tiles 0..6 + i: 115 copies.
  const DeviceInfo info = trn2();
  const AttentionPieceLayout l = long_piece_at_2048();
  const isa::Program p = make_attention_piece_program(info, l);
  const auto [on_vec, on_act] = pt_copies(p);
  EXPECT_EQ(on_vec + on_act, 115);
  EXPECT_GE(on_vec, 115 / 2);
  const test::ProgramCheck c = test::check_program(info, p);
  EXPECT_TRUE(c.ok()) << c.summary();
  // tiny: one element per lane, so a [16, 16] copy costs the Vector engine more than the Scalar engine (the 64-cycle
  // minimum: 160 TE cycles at 0.96 GHz against 128 at 1.2 GHz), and the Vector engine also carries the row maxima:
  // the copies stay on the Scalar engine.
  const DeviceInfo t = tiny();
  AttentionPieceLayout s = l;
  s.seq = 64, s.head_dim = 16, s.query0 = 0, s.queries = 64;
  s.scale = attention_scale(16);
  const uint64_t U = 16ull * 64 * 2;
  s.qT_hbm = 0, s.kT_hbm = U, s.v_hbm = 2 * U, s.outT_hbm = 3 * U;
  EXPECT_EQ(pt_copies(make_attention_piece_program(t, s)), std::make_pair(0, 10)) << "4 query tiles see 1..4 key tiles";
}

TEST(AttentionPieces, APrefetchLandsAboveTheBytesThePieceUsesAndLeavesItsOutputAlone) {
  // A causal piece of 64 queries on tiny that also loads a [40, 30] BF16 operand into the top of its SBUF
  // (AttentionPieceLayout::prefetch; sbuf_operand_copies' layout: K tiles of 16 rows, the last of 8): the program
  // checker holds the piece below sbuf_end and the prefetch alone above it, and on the reference machine the region
  // ends up holding the operand's rows from HBM, while HBM is what the piece alone leaves.
  const DeviceInfo t = tiny();
  AttentionPieceLayout s;
  s.seq = 64, s.head_dim = 16, s.query0 = 0, s.queries = 64, s.causal = true;
  s.scale = attention_scale(16);
  const uint64_t U = 16ull * 64 * 2, w_hbm = 4 * U;
  s.qT_hbm = 0, s.kT_hbm = U, s.v_hbm = 2 * U, s.outT_hbm = 3 * U;
  const int K = 40, N = 30;
  const uint32_t tile = sbuf_operand_tile_bytes(isa::Dtype::kBf16, N), pb = t.sbuf_partition_bytes;
  const uint32_t w_sbuf = pb - 3 * tile;
  AttentionPieceLayout with = s;
  with.sbuf_end = w_sbuf;
  with.prefetch = sbuf_operand_copies(t, isa::Dtype::kBf16, w_hbm, K, N, w_sbuf, tile);
  const isa::Program p = make_attention_piece_program(t, with);
  const test::ProgramCheck c = test::check_program(t, p, test::prefetch_areas(t, w_sbuf));
  EXPECT_TRUE(c.ok()) << c.summary();

  std::mt19937 rng(uint32_t(test::test_seed()));
  std::vector<uint8_t> hbm(w_hbm + uint64_t(K) * N * 2);
  for (std::size_t i = 0; i < 4 * U; i += 2) {  // BF16 of magnitude 1..2: no Inf or NaN in the scores
    const uint16_t v = uint16_t(uint16_t(0x3F80 + rng() % 0x80) | uint16_t((rng() & 1) << 15));
    std::memcpy(&hbm[i], &v, 2);
  }
  for (std::size_t i = 4 * U; i < hbm.size(); ++i) hbm[i] = uint8_t(rng());
  const test::RefMemory got = test::run_reference(t, p, hbm);
  const test::RefMemory plain = test::run_reference(t, make_attention_piece_program(t, s), hbm);
  EXPECT_TRUE(got.hbm == plain.hbm) << "HBM is not what the piece alone leaves";
  EXPECT_EQ(test::operand_rows_missing(t, got, hbm, w_hbm, K, N, 16, w_sbuf, tile), std::vector<int>{})
      << "rows of the operand not where sbuf_operand_copies puts them";
  // What a prefetch may not do: land below sbuf_end, or come without one.
  AttentionPieceLayout low = with;
  low.prefetch = sbuf_operand_copies(t, isa::Dtype::kBf16, w_hbm, K, N, w_sbuf - 64, tile);
  std::string why;
  try {
    make_attention_piece_program(t, low);
  } catch (const std::invalid_argument& e) {
    why = e.what();
  }
  EXPECT_NE(why.find(fmt::format("prefetch copy 0 must go to SBUF at or above sbuf_end {} within the partition's {} "
                                 "bytes (it starts at offset {}",
                                 w_sbuf, pb, w_sbuf - 64)),
            std::string::npos)
      << why;
  AttentionPieceLayout unbounded = with;
  unbounded.sbuf_end = 0;
  EXPECT_THROW(make_attention_piece_program(t, unbounded), std::invalid_argument);
}

}  // namespace
}  // namespace trnsim::kernels
