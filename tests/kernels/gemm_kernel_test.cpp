// GEMM kernel tests without a device: every generated program is checked (validation, device limits, the areas
// it may touch, semaphores, races under any timing) and executed by the test-side reference machine, whose result
// must equal the golden GEMM bit for bit; on the tiny and trn2 device descriptions, ragged shapes included.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/golden/nn_golden.h"
#include "firmware/golden/transformer_golden.h"
#include "firmware/kernels/gemm_kernel.h"
#include "firmware/kernels/kernel_sequence.h"
#include "firmware/kernels/ln_gemm_kernel.h"
#include "firmware/kernels/mlp_kernel.h"
#include "firmware/kernels/norm_kernel.h"
#include "firmware/kernels/transformer_kernel.h"
#include "tests/kernels/program_sim.h"
#include "tests/support/test_seed.h"

namespace trnsim::kernels {
namespace {

using driver::DeviceInfo;
using test::Area;

/// The named configurations of BRIEF section 2 as the device reports them.
DeviceInfo tiny_info() {
  DeviceInfo i;
  i.te_rows = 16;
  i.te_cols = 16;
  i.sbuf_partitions = 16;
  i.sbuf_partition_bytes = 192 * 1024;
  i.psum_partitions = 16;
  i.psum_partition_bytes = 16 * 1024;
  i.psum_banks = 8;
  i.hbm_bytes = 1ull << 30;
  i.num_queues = 2;
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

DeviceInfo trn2_info() {
  DeviceInfo i = tiny_info();
  i.te_rows = i.te_cols = 128;
  i.sbuf_partitions = i.psum_partitions = 128;
  i.hbm_bytes = 96ull << 30;
  i.vec_elems_per_cycle = 256;  // 2 and 4 elements per lane (VEC_WIDTH)
  i.vec_elems_per_cycle_16 = 512;
  return i;
}

struct Shape {
  int k, m, n;
  isa::Dtype dtype = isa::Dtype::kBf16;
  bool accumulate = false;
  double wave_pieces = 1.0;  ///< GemmLayout::wave_piece_latencies
};

std::string shape_name(const Shape& s) {
  return fmt::format("K{}_M{}_N{}_{}{}{}", s.k, s.m, s.n, isa::dtype_name(s.dtype), s.accumulate ? "_acc" : "",
                     s.wave_pieces > 1.0 ? "_widepieces" : "");
}

/// Tensors placed in HBM with unaligned starts and gaps between them (so that a stray access is noticed).
GemmLayout place(const Shape& s) {
  const uint64_t es = isa::dtype_bits(s.dtype) / 8;
  GemmLayout l;
  l.dtype = s.dtype;
  l.k = s.k;
  l.m = s.m;
  l.n = s.n;
  l.accumulate_into = s.accumulate;
  l.wave_piece_latencies = s.wave_pieces;
  l.stationary_hbm = 0x1002;
  l.moving_hbm = l.stationary_hbm + uint64_t(s.k) * s.m * es + 0x1006;
  l.out_hbm = (l.moving_hbm + uint64_t(s.k) * s.n * es + 0x1000) & ~uint64_t(3);
  return l;
}

uint64_t hbm_end(const GemmLayout& l) { return l.out_hbm + uint64_t(l.m) * l.n * 4; }

/// The areas the kernel may touch: the three tensors (out readable only when accumulating), its SBUF buffers and
/// its PSUM buffers.
std::vector<Area> kernel_areas(const DeviceInfo& info, const GemmLayout& l, const GemmPlan& p) {
  const uint64_t es = isa::dtype_bits(l.dtype) / 8;
  std::vector<Area> a;
  a.push_back({isa::MemSpace::kHbm, 0, 1, l.stationary_hbm, l.stationary_hbm + uint64_t(l.k) * l.m * es, true, false,
               "stationary"});
  a.push_back({isa::MemSpace::kHbm, 0, 1, l.moving_hbm, l.moving_hbm + uint64_t(l.k) * l.n * es, true, false,
               "moving"});
  a.push_back({isa::MemSpace::kHbm, 0, 1, l.out_hbm, hbm_end(l), l.accumulate_into, true, "out"});
  a.push_back({isa::MemSpace::kSbuf, 0, uint32_t(p.k_tile), 0, uint64_t(p.sbuf_bytes), true,
               true, "sbuf buffers"});
  a.push_back({isa::MemSpace::kPsum, 0, uint32_t(p.m_tile), 0,
               uint64_t(p.psum_buffers) * p.banks_per_block * info.psum_bank_bytes(), true, true, "psum buffers"});
  return a;
}

/// Random finite narrow values (and some zeros), as bit patterns.
std::vector<uint16_t> random_tensor(isa::Dtype dt, std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    const float f = (rng() % 16 == 0) ? 0.0f : u(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    x = golden::narrow_from_f32(dt, bits, true);
  }
  return v;
}

void put(std::vector<uint8_t>* hbm, uint64_t addr, const std::vector<uint16_t>& v, unsigned es) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    (*hbm)[addr + i * es] = static_cast<uint8_t>(v[i]);
    if (es == 2) (*hbm)[addr + i * es + 1] = static_cast<uint8_t>(v[i] >> 8);
  }
}

/// Generates, checks and executes one GEMM; compares with the golden GEMM bit for bit.
void check_gemm(const DeviceInfo& info, const Shape& s) {
  SCOPED_TRACE(shape_name(s));
  const GemmLayout l = place(s);
  const GemmPlan plan = plan_gemm(info, l);
  const isa::Program prog = make_gemm_program(info, l);

  test::ProgramCheckOptions opt;
  opt.areas = kernel_areas(info, l, plan);
  const test::ProgramCheck check = test::check_program(info, prog, opt);
  ASSERT_TRUE(check.ok()) << check.summary();
  EXPECT_EQ(prog.queues[0].back().op, isa::Opcode::kHalt);
  EXPECT_EQ(prog.queues[1].back().op, isa::Opcode::kHalt);

  std::mt19937_64 rng(test::test_seed() ^ (uint64_t(s.k) << 40) ^ (uint64_t(s.m) << 20) ^ uint64_t(s.n));
  golden::GemmOperands ops;
  ops.dtype = s.dtype;
  ops.k = s.k;
  ops.m = s.m;
  ops.n = s.n;
  ops.stationary = random_tensor(s.dtype, std::size_t(s.k) * s.m, rng);
  ops.moving = random_tensor(s.dtype, std::size_t(s.k) * s.n, rng);
  std::vector<uint32_t> p_init(std::size_t(s.m) * s.n);
  for (auto& x : p_init) {
    const float f = std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng);
    std::memcpy(&x, &f, 4);
  }
  const unsigned es = isa::dtype_bits(s.dtype) / 8;
  std::vector<uint8_t> hbm(hbm_end(l) + 0x1000, 0xA5);  // poison: uninitialised output reads show up
  put(&hbm, l.stationary_hbm, ops.stationary, es);
  put(&hbm, l.moving_hbm, ops.moving, es);
  if (s.accumulate) std::memcpy(&hbm[l.out_hbm], p_init.data(), p_init.size() * 4);
  const std::vector<uint8_t> before = hbm;

  const test::RefMemory mem = test::run_reference(info, prog, hbm);
  const std::vector<uint32_t> want = golden::gemm(ops, int(info.te_rows), s.accumulate ? &p_init : nullptr);
  std::vector<uint32_t> got(want.size());
  std::memcpy(got.data(), &mem.hbm[l.out_hbm], got.size() * 4);
  int shown = 0;
  for (std::size_t i = 0; i < want.size() && shown < 5; ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << fmt::format("out[{}][{}] = {:#010x}, golden {:#010x}", i / s.n, i % s.n, got[i], want[i]);
      ++shown;
    }
  }
  // Nothing but the output changed in HBM.
  for (uint64_t a = 0; a < hbm.size(); ++a) {
    if (a == l.out_hbm) a = hbm_end(l);
    if (a < hbm.size() && mem.hbm[a] != before[a]) {
      ADD_FAILURE() << fmt::format("HBM byte {:#x} outside out changed", a);
      break;
    }
  }
}

// ---- correctness over shapes

class GemmTiny : public ::testing::TestWithParam<Shape> {};
TEST_P(GemmTiny, ChecksAndMatchesGolden) { check_gemm(tiny_info(), GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmTiny,
    ::testing::Values(Shape{1, 1, 1}, Shape{1, 5, 7}, Shape{16, 16, 512}, Shape{17, 17, 513}, Shape{16, 16, 1},
                      Shape{100, 40, 700}, Shape{33, 1, 1030}, Shape{5, 130, 3}, Shape{128, 128, 128},
                      Shape{300, 20, 2100}, Shape{50, 33, 4097}, Shape{1, 1, 1, isa::Dtype::kBf16, true},
                      Shape{17, 17, 513, isa::Dtype::kBf16, true}, Shape{300, 20, 2100, isa::Dtype::kBf16, true},
                      Shape{16, 3, 512, isa::Dtype::kBf16, true}, Shape{40, 50, 600, isa::Dtype::kFp16},
                      Shape{40, 50, 600, isa::Dtype::kFp8E4M3}, Shape{70, 9, 1500, isa::Dtype::kFp8E5M2, true},
                      Shape{768, 32, 1536}),
    [](const auto& info) { return shape_name(info.param); });

class GemmTrn2 : public ::testing::TestWithParam<Shape> {};
TEST_P(GemmTrn2, ChecksAndMatchesGolden) { check_gemm(trn2_info(), GetParam()); }

INSTANTIATE_TEST_SUITE_P(Shapes, GemmTrn2,
                         ::testing::Values(Shape{1, 1, 1}, Shape{1, 5, 7}, Shape{129, 129, 513},
                                           Shape{128, 128, 512}, Shape{300, 200, 1100},
                                           Shape{129, 129, 513, isa::Dtype::kBf16, true},
                                           Shape{256, 64, 2048, isa::Dtype::kFp8E4M3},
                                           Shape{768, 1152, 512, isa::Dtype::kBf16, false, 2.0}),
                         [](const auto& info) { return shape_name(info.param); });

/// Devices other than the named ones: one PSUM bank, few DMA engines, small SBUF partitions, a non-square array,
/// banks wider than 512 FP32 and narrower than 512.
TEST(GemmOddDevices, ChecksAndMatchesGolden) {
  DeviceInfo one_bank = tiny_info();
  one_bank.psum_banks = 1;
  one_bank.psum_partition_bytes = 2048;
  DeviceInfo few_engines = tiny_info();
  few_engines.num_dma_engines = 1;
  DeviceInfo small_sbuf = tiny_info();
  small_sbuf.sbuf_partition_bytes = 8 * 1024;
  DeviceInfo non_square = tiny_info();
  non_square.te_rows = 8;
  non_square.te_cols = 4;
  non_square.sbuf_partitions = 8;
  non_square.psum_partitions = 4;
  DeviceInfo wide_banks = tiny_info();
  wide_banks.psum_banks = 2;  // 8 KiB banks: 512 FP32 used, with gaps
  DeviceInfo narrow_banks = tiny_info();
  narrow_banks.psum_banks = 16;  // 1 KiB banks: N tiles of 256
  for (const DeviceInfo& info : {one_bank, few_engines, small_sbuf, non_square, wide_banks, narrow_banks}) {
    SCOPED_TRACE(fmt::format("rows {} cols {} banks {} bank bytes {} engines {} sbuf bytes {}", info.te_rows,
                             info.te_cols, info.psum_banks, info.psum_bank_bytes(), info.num_dma_engines,
                             info.sbuf_partition_bytes));
    for (const Shape& s : {Shape{37, 9, 1300}, Shape{37, 9, 1300, isa::Dtype::kBf16, true}, Shape{1, 1, 1}}) {
      check_gemm(info, s);
    }
  }
}

// ---- plan and protocol

TEST(GemmPlan, DefaultWorkloadOnTiny) {
  // GPT-2 small MLP up-projection: 128 tokens x 768 -> 3072 (out = S^T @ M with S = X^T [768, 128]).
  GemmLayout l;
  l.k = 768;
  l.m = 128;
  l.n = 3072;
  const GemmPlan p = plan_gemm(tiny_info(), l);
  EXPECT_EQ(p.k_tile, 16);
  EXPECT_EQ(p.m_tile, 16);
  EXPECT_EQ(p.n_tile, 512);
  EXPECT_EQ(p.k_tiles, 48);
  EXPECT_EQ(p.m_tiles, 8);
  EXPECT_EQ(p.n_tiles, 6);
  // One bank per block lets two moving panels (all K, 512 columns) fit beside the stationary slots: six groups, the
  // next group's panel loaded during this one's M tiles; eight blocks in PSUM at once.
  EXPECT_EQ(p.banks_per_block, 1);
  EXPECT_EQ(p.n_groups, 6);
  EXPECT_TRUE(p.moving_resident);
  EXPECT_EQ(p.moving_panels, 2);
  EXPECT_EQ(p.moving_slots, 2 * p.batches_per_block);
  EXPECT_EQ(p.psum_buffers, 8);
  EXPECT_EQ(p.blocks, 48);
  EXPECT_EQ(p.sbuf_buffers, 6);  // kWantedSbufBuffers: 48 blocks have more batches than that
  // Each operand crosses the DMA: moving once, stationary once per group, and the output.
  EXPECT_EQ(p.dma_bytes, uint64_t(768) * 3072 * 2 + uint64_t(768) * 128 * 2 * 6 + uint64_t(128) * 3072 * 4);
  EXPECT_GE(p.ktiles_per_batch, 2);
  EXPECT_LE(uint64_t(p.sbuf_bytes), tiny_info().sbuf_partition_bytes);
}

// The widest blocks (the stationary loaded once, all of N's panel exposed while the first M tile computes) or two
// moving panels (a stationary load per group of N tiles, the next panel loaded behind), whichever the Pipeline's
// estimate (with the TE's two sequencers) finds shorter. Measured on trn2 (trnsim run --te tlm, both plans forced):
// the GPT-2 block's MLP up GEMM at seq 2048 on 8 cores, a piece of 768 features x 1024 tokens x K 768 with the GELU
// epilogue, 60,705 cycles with the widest blocks against 74,426 with two panels (the step; estimates 60,549 and
// 74,381); one core's 2048^3, 586,996 against 569,545 (estimates 587,057 and 569,580).
TEST(GemmPlan, TheWidestBlocksWhereTheEstimateFindsThemShorter) {
  const DeviceInfo info = trn2_info();
  GemmLayout up;
  up.k = 768, up.m = 768, up.n = 1024;
  up.out_type = isa::DataType::kBf16;
  up.epilogue.kind = GemmEpilogue::Kind::kRowBiasAct;
  up.epilogue.func = isa::ActFunc::kGeluTanh;
  const GemmPlan a = plan_gemm(info, up);
  EXPECT_EQ(a.n_groups, 1);
  EXPECT_EQ(a.banks_per_block, 2);
  // Each operand crosses the DMA once (stationary and moving BF16), and the output once (BF16).
  EXPECT_EQ(a.dma_bytes, 768ull * 768 * 2 + 768ull * 1024 * 2 + 768ull * 1024 * 2);
  GemmLayout cube;
  cube.k = cube.m = cube.n = 2048;
  const GemmPlan b = plan_gemm(info, cube);
  EXPECT_EQ(b.n_groups, 2);
  EXPECT_EQ(b.moving_panels, 2);
  // The stationary twice (once per group), the moving once, the FP32 output once.
  EXPECT_EQ(b.dma_bytes, 2048ull * 2048 * 2 * 2 + 2048ull * 2048 * 2 + 2048ull * 2048 * 4);
}

TEST(GemmPlan, WiderWavePiecesWhereTheEstimateFindsThemShorter) {
  // The block's projection at seq 2048 on 8 trn2 cores (docs/kernels.md "Transformer block"): a 256-token block of
  // out[2048, 768] = attn @ W_o + b_o + x, DMA-bound (the weights and the FP32 residual and output); measured with
  // trnsim run --workload transformer-block --config trn2 --te tlm --seq 2048: 44,266 cycles with the GEMM's own
  // pieces, 41,644 with the estimate's choice.
  GemmEpilogue add;
  add.kind = GemmEpilogue::Kind::kColBiasAdd;
  add.bias_hbm = 0x1000, add.residual = true, add.residual_hbm = 0x100000;
  const GemmLayout proj = bf16_gemm(768, 2048, 768, 0x1000000, 0x2000000, 0x3000000, isa::DataType::kFp32, add);
  const GemmLayout piece = split_gemm(trn2_info(), proj, 8).front().layout;
  EXPECT_GT(with_best_wave_pieces(trn2_info(), piece).wave_piece_latencies, 1.0);
  // A TE-bound GEMM keeps pieces of one start latency's bytes (2048^3 on one core: 562,746 cycles with them and
  // with 1.5, measured with every GEMM forced to it).
  EXPECT_EQ(with_best_wave_pieces(trn2_info(), place(Shape{2048, 2048, 2048})).wave_piece_latencies, 1.0);
}

TEST(GemmPlan, RejectsBadInput) {
  GemmLayout l;
  l.k = 0;
  l.m = l.n = 4;
  EXPECT_THROW(make_gemm_program(tiny_info(), l), std::invalid_argument);
  l.k = 4;
  l.n = -1;
  EXPECT_THROW(make_gemm_program(tiny_info(), l), std::invalid_argument);
  l.n = 4;
  DeviceInfo few_partitions = tiny_info();
  few_partitions.sbuf_partitions = 8;
  EXPECT_THROW(make_gemm_program(few_partitions, l), std::invalid_argument);
  DeviceInfo tiny_sbuf = tiny_info();
  tiny_sbuf.sbuf_partition_bytes = 16;
  l.n = 100;
  EXPECT_THROW(make_gemm_program(tiny_sbuf, l), std::invalid_argument);
  l.n = 1 << 30;  // a row of 2 GiB does not fit an int32 stride
  EXPECT_THROW(make_gemm_program(tiny_info(), l), std::invalid_argument);
  l.n = 100;
  EXPECT_NO_THROW(make_gemm_program(tiny_info(), l));
  for (auto bad : {+[](GemmLayout& g) { g.moving_ld = 99; },  // row strides below N
                   +[](GemmLayout& g) { g.out_ld = 50; },
                   +[](GemmLayout& g) { g.epilogue.kind = GemmEpilogue::Kind::kColBiasAdd, g.accumulate_into = true; },
                   +[](GemmLayout& g) { g.epilogue.kind = static_cast<GemmEpilogue::Kind>(7); },
                   +[](GemmLayout& g) { g.wave_piece_latencies = 0.5; },  // pieces below one start latency's bytes
                   +[](GemmLayout& g) { g.wave_piece_latencies = std::nan(""); }}) {
    GemmLayout b = l;
    bad(b);
    EXPECT_THROW(make_gemm_program(tiny_info(), b), std::invalid_argument);
  }
}

TEST(GemmProtocol, TheTeQueueIsThePlanAndEachQueueSignalsItsOwnSemaphore) {
  // The Pipeline's scheme (first semaphore 0): queue q signals semaphore q; the load waves are published by their
  // copies as they land (done_sem, one of the Pipeline::kLandingSems semaphores after the queues' 5, in turn).
  GemmLayout l = place(Shape{300, 40, 2100, isa::Dtype::kBf16, true});
  const GemmPlan p = plan_gemm(tiny_info(), l);
  const isa::Program prog = make_gemm_program(tiny_info(), l);
  const auto te = std::size_t(isa::Engine::kTe), dma = std::size_t(isa::Engine::kDma);
  const auto landing = [](unsigned s) { return s >= isa::kNumQueues && s < isa::kNumQueues + Pipeline::kLandingSems; };
  std::array<uint64_t, isa::kNumQueues> signals{}, waits{}, loads{}, multiplies{};
  std::array<std::array<uint32_t, isa::kNumSemaphores>, isa::kNumQueues> last_wait{};
  std::array<uint64_t, isa::kNumSemaphores> landed{};  // copies that name each completion semaphore
  uint64_t sbuf_copies = 0, landing_waits_dma = 0;
  for (std::size_t q = 0; q < prog.queues.size(); ++q) {
    if (q != te && q != dma) {
      EXPECT_TRUE(prog.queues[q].empty()) << "queue " << q;
    }
    for (const auto& in : prog.queues[q]) {
      if (in.op == isa::Opcode::kSemSignal) {
        EXPECT_EQ(in.sem.sem, q) << "queue " << q << " signals another queue's semaphore";
        EXPECT_EQ(in.sem.value, 1u);
        ++signals[q];
      }
      if (in.op == isa::Opcode::kSemWait) {
        const unsigned s = in.sem.sem;
        EXPECT_TRUE((q == dma && s == te) || landing(s))
            << "queue " << q << " waits for semaphore " << s << ": the te queue waits for copies (their completion "
            << "semaphores), the dma queue for the te queue's signals or its own earlier copies";
        EXPECT_GT(in.sem.value, last_wait[q][s]) << "queue " << q << ": a wait an earlier one implies";
        last_wait[q][s] = in.sem.value;
        ++waits[q];
        if (q == dma && landing(s)) ++landing_waits_dma;
      }
      if (in.op == isa::Opcode::kDmaCopy || in.op == isa::Opcode::kPsumCopy) {
        if (in.copy.dst_space == isa::MemSpace::kSbuf) {
          ++sbuf_copies;
          EXPECT_TRUE(in.copy.done_sem >= 0 && landing(unsigned(in.copy.done_sem)))
              << "an operand load without a completion semaphore: " << isa::disassemble(in);
        }
        if (in.copy.done_sem >= 0) ++landed[std::size_t(in.copy.done_sem)];
      }
      loads[q] += in.op == isa::Opcode::kLoadStationary;
      multiplies[q] += in.op == isa::Opcode::kMultiplyMoving;
    }
  }
  EXPECT_EQ(loads[te], uint64_t(p.m_tiles) * p.n_groups * p.k_tiles);
  EXPECT_EQ(multiplies[te], uint64_t(p.m_tiles) * p.n_tiles * p.k_tiles);
  EXPECT_GE(sbuf_copies, uint64_t(p.batches));
  for (unsigned s = 0; s < isa::kNumSemaphores; ++s) {  // every wait for a completion semaphore can be met
    for (std::size_t q = 0; q < prog.queues.size(); ++q) EXPECT_LE(last_wait[q][s], landing(s) ? landed[s] : ~0ull);
  }
  // te: one signal per batch another op waits for: the load nbuf batches later, or the drain of its block.
  uint64_t consumed = 0;
  for (int j = 0; j < p.batches; ++j) consumed += j + p.sbuf_buffers < p.batches || (j + 1) % p.batches_per_block == 0;
  EXPECT_EQ(signals[te], consumed);
  // te: a wait for each batch's load (its completion semaphore), and for a block's P -> PSUM copy when that went
  // out in a wave of its own.
  EXPECT_LE(waits[te], 2 * uint64_t(p.batches));
  // dma: no signal after the loads (their copies signal); only barriers, before a P -> PSUM copy whose buffer's drain
  // may still be in flight.
  EXPECT_LE(signals[dma], uint64_t(p.blocks) + 1);
  // dma: a wait before each load that reuses a buffer and each drain, unless an earlier wait implies it, and before
  // each published op (a load wave, or a drain the TE waits for) after the first kLandingSems one for the op before
  // it on the same semaphore.
  EXPECT_LE(waits[dma] - landing_waits_dma, uint64_t(p.batches - p.sbuf_buffers) + p.blocks);
  EXPECT_GE(waits[dma], 1u);
  EXPECT_LE(landing_waits_dma, uint64_t(std::max(0, p.batches + p.blocks - Pipeline::kLandingSems)));
}

TEST(GemmProtocol, WidePiecesCutTheLaterWavesIntoFewerCopies) {
  // A DMA-bound trn2 block of the GPT-2 QKV GEMM: 9 M tiles of one 512-column group, each wave a K batch of the
  // stationary. The first wave goes over every engine either way; the later ones in pieces of at least one (two)
  // engines' start-latency bytes: 478 KB / 16 = 29.9 KB (59.8 KB) on trn2.
  GemmLayout l = place(Shape{768, 1152, 512});
  auto copies = [&](double pieces_of) {
    l.wave_piece_latencies = pieces_of;
    uint64_t n = 0;
    const isa::Program prog = make_gemm_program(trn2_info(), l);
    for (const auto& in : prog.queues[std::size_t(isa::Engine::kDma)]) {
      n += in.op == isa::Opcode::kDmaCopy || in.op == isa::Opcode::kPsumCopy;
    }
    return n;
  };
  const uint64_t one = copies(1.0), two = copies(2.0);
  EXPECT_LT(two, one);
  EXPECT_EQ(plan_gemm(trn2_info(), l).batches, 9);
  // Waves 2..9 move 768 x 128 BF16 of the stationary (196,608 bytes): 6 pieces of at least 29.9 KB, 3 of 59.8 KB.
  EXPECT_GE(one - two, uint64_t(8 * (6 - 3)));
}

TEST(GemmProtocol, ARowBiasIsLoadedInOneCopyPerKindOfMTile) {
  // A row epilogue's bias (one FP32 per output row, one partition each): every whole 128-row M tile in one copy
  // [1, 128, tiles], a ragged last tile in one more. Its 9,216 bytes (M 2304) are worth one engine (29.9 KB per
  // start latency on trn2), so neither is cut: 1 copy for M 2304, 2 for M 300 (2 tiles + 44 rows), 1 for M 100.
  for (const auto& [m, want] : {std::pair{2304, 1}, std::pair{300, 2}, std::pair{100, 1}}) {
    GemmLayout l = place(Shape{256, m, 512});
    l.out_type = isa::DataType::kBf16;
    l.epilogue.kind = GemmEpilogue::Kind::kRowBiasAct;
    l.epilogue.func = isa::ActFunc::kIdentity;
    l.epilogue.bias_hbm = hbm_end(l) + 0x1000;
    const isa::Program prog = make_gemm_program(trn2_info(), l);
    int n = 0, rows = 0;
    for (const auto& in : prog.queues[std::size_t(isa::Engine::kDma)]) {
      if (in.op != isa::Opcode::kDmaCopy || in.copy.src_space != isa::MemSpace::kHbm ||
          in.copy.src_addr < l.epilogue.bias_hbm) {
        continue;
      }
      ++n;
      rows += int(in.copy.elements());
    }
    EXPECT_EQ(n, want) << "M " << m;
    EXPECT_EQ(rows, m) << "every bias element once, M " << m;
  }
}

TEST(GemmProtocol, HugeRowsFallBackToPerTileCopies) {
  // K tiles of 128 rows x 8.4M BF16 columns are 2.15 GB apart: more than an int32 stride, so each K tile of a
  // batch gets its own copy. (Too large to check exhaustively: the moving copies are checked one by one.)
  GemmLayout l;
  l.k = 257;  // 2 full K tiles + 1 row
  l.m = 1;
  l.n = 8'400'000;
  l.stationary_hbm = 0;
  l.moving_hbm = 4096;
  l.out_hbm = l.moving_hbm + uint64_t(l.k) * l.n * 2;
  DeviceInfo info = trn2_info();
  info.psum_banks = 1;  // one N tile per block keeps the program small
  info.psum_partition_bytes = 2048;
  const GemmPlan p = plan_gemm(info, l);
  ASSERT_GT(uint64_t(p.k_tile) * l.n * 2, uint64_t(INT32_MAX));
  ASSERT_GE(p.ktiles_per_batch, 2);
  const isa::Program prog = make_gemm_program(info, l);
  const uint64_t row = uint64_t(l.n) * 2;
  uint64_t moving_rows = 0;
  for (const auto& in : prog.queues[1]) {
    if (in.op != isa::Opcode::kDmaCopy || in.copy.src_space != isa::MemSpace::kHbm) continue;
    const auto& c = in.copy;
    if (c.src_addr < l.moving_hbm || c.src_addr >= l.out_hbm) continue;
    const uint64_t off = c.src_addr - l.moving_hbm;
    ASSERT_EQ(c.count[2], 1) << "a tile stride would overflow";
    ASSERT_EQ(c.count[3], 1);
    ASSERT_EQ((off / row) / 128, (off / row + c.count[1] - 1) / 128);  // inside one K tile
    ASSERT_LE(off % row + uint64_t(c.count[0]) * 2, row);      // stays inside the row
    ASSERT_LE(off / row + c.count[1], uint64_t(l.k));          // stays inside the tensor
    if (c.count[1] > 1) {
      ASSERT_EQ(uint64_t(c.src_stride[1]), row);
    }
    moving_rows += uint64_t(c.count[1]) * c.count[0];
  }
  EXPECT_EQ(moving_rows, uint64_t(l.k) * l.n);  // every moving element loaded exactly once (M is one tile)
}

// ---- the checker itself catches broken programs

TEST(ProgramChecker, CatchesAMissingWait) {
  const GemmLayout l = place(Shape{100, 40, 700});
  isa::Program prog = make_gemm_program(tiny_info(), l);
  auto& te = prog.queues[0];
  // Drop the TE's wait for the second batch: it would read SBUF while the DMA may still be writing it.
  int waits = 0;
  for (auto it = te.begin(); it != te.end(); ++it) {
    if (it->op == isa::Opcode::kSemWait && ++waits == 2) {
      te.erase(it);
      break;
    }
  }
  const test::ProgramCheck check = test::check_program(tiny_info(), prog);
  ASSERT_FALSE(check.ok());
  EXPECT_NE(check.summary().find("race: te["), std::string::npos) << check.summary();
}

TEST(ProgramChecker, CatchesAMissingBarrierBetweenCopies) {
  // Two copies into the same SBUF bytes with no signal between them race on the DMA engines.
  isa::Program prog;
  isa::Instruction c;
  c.op = isa::Opcode::kDmaCopy;
  c.copy.src_type = c.copy.dst_type = isa::DataType::kFp32;
  c.copy.count = {4, 1, 1, 1};
  c.copy.src_stride = {4, 0, 0, 0};
  c.copy.dst_stride = {4, 0, 0, 0};
  prog.queues[1] = {c, c, isa::Instruction::halt()};
  prog.queues[1][1].copy.src_addr = 64;
  EXPECT_FALSE(test::check_program(tiny_info(), prog).ok());
  isa::Instruction sig;
  sig.op = isa::Opcode::kSemSignal;
  sig.sem.sem = 5;
  sig.sem.value = 1;
  prog.queues[1].insert(prog.queues[1].begin() + 1, sig);
  EXPECT_TRUE(test::check_program(tiny_info(), prog).ok()) << test::check_program(tiny_info(), prog).summary();
}

TEST(ProgramChecker, CatchesADeadlockAndAStrayAccess) {
  const GemmLayout l = place(Shape{100, 40, 700});
  const GemmPlan p = plan_gemm(tiny_info(), l);
  isa::Program prog = make_gemm_program(tiny_info(), l);
  isa::Program deadlocked = prog;
  for (auto& in : deadlocked.queues[0]) {
    if (in.op == isa::Opcode::kSemWait) {
      in.sem.value += 1000;
      break;
    }
  }
  const test::ProgramCheck dl = test::check_program(tiny_info(), deadlocked);
  EXPECT_NE(dl.summary().find("deadlock"), std::string::npos) << dl.summary();

  isa::Program stray = prog;
  for (auto& in : stray.queues[1]) {
    if (in.op == isa::Opcode::kDmaCopy && in.copy.src_addr == l.moving_hbm) {
      in.copy.src_addr -= 2;  // one element before the tensor
      break;
    }
  }
  test::ProgramCheckOptions opt;
  opt.areas = kernel_areas(tiny_info(), l, p);
  EXPECT_FALSE(test::check_program(tiny_info(), stray, opt).ok());
}

// ---- performance estimate (the device's cost figures; the model measures the real thing)

TEST(GemmTiming, DefaultWorkloadKeepsTheTensorEngineBusy) {
  GemmLayout l = place(Shape{768, 128, 3072});
  const DeviceInfo info = tiny_info();
  const isa::Program prog = make_gemm_program(info, l);
  const test::TimingEstimate t = test::estimate_timing(info, prog);
  const GemmPlan p = plan_gemm(info, l);
  std::cout << fmt::format(
      "[ estimate ] tiny K768 M128 N3072 bf16: {} cycles ({:.1f} us), TE busy {:.1f}%, MAC utilization {:.1f}%, "
      "TE stalled {} cycles; {} copies, {:.1f} MiB; P={} nbuf={} G={} psum buffers={}; {} te and {} dma "
      "instructions\n",
      t.cycles, info.cycles_to_us(t.cycles), 100 * t.te_utilization(), 100 * t.mac_utilization(info), t.te_stall,
      t.dma_copies, t.dma_bytes / 1048576.0, p.ktiles_per_batch, p.sbuf_buffers, p.banks_per_block,
      p.psum_buffers, prog.queue(isa::Engine::kTe).size(), prog.queue(isa::Engine::kDma).size());
  EXPECT_EQ(t.macs, 768ull * 128 * 3072);
  EXPECT_GE(t.te_utilization(), 0.95);
}

TEST(GemmTiming, Trn2Estimate) {
  GemmLayout l = place(Shape{768, 128, 3072});
  const DeviceInfo info = trn2_info();
  const test::TimingEstimate t = test::estimate_timing(info, make_gemm_program(info, l));
  std::cout << fmt::format("[ estimate ] trn2 K768 M128 N3072 bf16: {} cycles ({:.1f} us), TE busy {:.1f}%, "
                           "MAC utilization {:.1f}%; {} copies\n",
                           t.cycles, info.cycles_to_us(t.cycles), 100 * t.te_utilization(),
                           100 * t.mac_utilization(info),
                           t.dma_copies);
  EXPECT_EQ(t.macs, 768ull * 128 * 3072);
  EXPECT_GT(t.te_utilization(), 0.0);
}

// split_gemm's grid on trn2 (16 DMA engines x 23 B/ns x 1.3 us = 478 KB in one start latency), worked out by hand.
// 4096^3 BF16 on 8 cores: every grid of 8 has the same largest block's TE work (32 K tiles x 4096 x 4096 / 8 / 128);
// bytes per core K x 2 x (M part + N part) + the FP32 block: 8 x 1 (512 + 4096 columns) 46.1 MB, 4 x 2 and 2 x 4
// (1024 + 2048) 33.6 MB, 1 x 8 46.1 MB; of the two smallest, the most M parts: 4 x 2 blocks of 1024 x 2048.
TEST(SplitGemm, ChoosesTheGridByTeWorkThenBytesThenMParts) {
  const DeviceInfo info = trn2_info();
  GemmLayout g;
  g.k = g.m = g.n = 4096;
  std::vector<std::array<int, 4>> got;
  for (const GemmPiece& p : split_gemm(info, g, 8)) got.push_back({p.m0, p.n0, p.layout.m, p.layout.n});
  std::vector<std::array<int, 4>> want;
  for (int m0 = 0; m0 < 4096; m0 += 1024) {
    for (int n0 = 0; n0 < 4096; n0 += 2048) want.push_back({m0, n0, 1024, 2048});
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(split_gemm(info, g, 8)[3].layout.moving_hbm, g.moving_hbm + 2048 * 2) << "columns 2048.. of the moving";
  EXPECT_EQ(split_gemm(info, g, 8)[3].layout.out_hbm, g.out_hbm + (1024ull * 4096 + 2048) * 4) << "block (1024, 2048)";

  // One M tile (M = 128): the 8 cores split N, 512 columns each (4 MiB of moving per piece, well above 478 KB / 4).
  g.m = 128;
  const std::vector<GemmPiece> cols = split_gemm(info, g, 8);
  ASSERT_EQ(cols.size(), 8u);
  for (size_t c = 0; c < cols.size(); ++c) {
    EXPECT_EQ(cols[c].n0, int(c) * 512);
    EXPECT_EQ(cols[c].layout.n, 512);
    EXPECT_EQ(cols[c].layout.m, 128);
  }
  // A softmax needs whole rows: the same GEMM with a softmax epilogue stays one piece of all 4096 columns (whose
  // row is too long for the epilogue, but split_gemm only cuts).
  g.epilogue.kind = GemmEpilogue::Kind::kSoftmax;
  const std::vector<GemmPiece> rows = split_gemm(info, g, 8);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].layout.n, 4096);
  // A small moving operand (K 64 x N 512 x 2 B = 64 KiB, below a quarter of 478 KB) is not cut by N.
  g.epilogue = GemmEpilogue{};
  g.k = 64, g.n = 512;
  EXPECT_EQ(split_gemm(info, g, 8).size(), 1u);
}

// ---- operands and outputs kept in SBUF between two GEMMs of one program (the MLP's rows programs)

/// Random FP32 bit patterns in [-scale, scale).
golden::Patterns random_f32(std::size_t n, float scale, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  golden::Patterns v(n);
  for (auto& x : v) {
    const float f = u(rng);
    std::memcpy(&x, &f, 4);
  }
  return v;
}

/// make_mlp_rows_program over each token block of `per` tokens: checked, executed by the reference machine, out
/// bit for bit the golden MLP's (the two GEMM steps' bits), and HBM unchanged outside out.
void check_mlp_rows(const DeviceInfo& info, int T, int D, int F, int per) {
  SCOPED_TRACE(fmt::format("T {} D {} F {}, {} tokens per program", T, D, F, per));
  std::mt19937_64 rng(test::test_seed() ^ (uint64_t(T) << 32) ^ (uint64_t(D) << 16) ^ uint64_t(F));
  const auto bf16 = isa::Dtype::kBf16;
  auto widen = [](const std::vector<uint16_t>& v) { return golden::Patterns(v.begin(), v.end()); };
  const golden::Patterns xT = widen(random_tensor(bf16, std::size_t(D) * T, rng));
  const golden::MlpParams p{widen(random_tensor(bf16, std::size_t(D) * F, rng)), random_f32(F, 0.5f, rng),
                            widen(random_tensor(bf16, std::size_t(F) * D, rng)), random_f32(D, 0.5f, rng)};
  const golden::Patterns res = random_f32(std::size_t(T) * D, 4.0f, rng);
  MlpLayout l;
  l.tokens = T, l.d_model = D, l.d_ff = F, l.residual = true;
  uint64_t at = 0x1002;  // unaligned starts, gaps between the tensors
  auto take = [&](uint64_t bytes) {
    const uint64_t a = at;
    at = (at + bytes + 0x1003) & ~uint64_t(1);
    return a;
  };
  l.xT_hbm = take(uint64_t(D) * T * 2), l.w1_hbm = take(uint64_t(D) * F * 2), l.w2_hbm = take(uint64_t(F) * D * 2);
  l.b1_hbm = take(uint64_t(F) * 4) & ~uint64_t(3), l.b2_hbm = take(uint64_t(D) * 4) & ~uint64_t(3);
  l.residual_hbm = take(uint64_t(T) * D * 4) & ~uint64_t(3);
  l.gT_hbm = take(uint64_t(F) * T * 2);
  l.out_hbm = take(uint64_t(T) * D * 4) & ~uint64_t(3);
  std::vector<uint8_t> hbm(at + 0x1000, 0xA5);
  auto put32 = [&](uint64_t a, const golden::Patterns& v) { std::memcpy(&hbm[a], v.data(), v.size() * 4); };
  auto put16 = [&](uint64_t a, const golden::Patterns& v) {
    put(&hbm, a, std::vector<uint16_t>(v.begin(), v.end()), 2);
  };
  put16(l.xT_hbm, xT), put16(l.w1_hbm, p.w1), put16(l.w2_hbm, p.w2);
  put32(l.b1_hbm, p.b1), put32(l.b2_hbm, p.b2), put32(l.residual_hbm, res);
  const std::vector<uint8_t> before = hbm;
  for (int t0 = 0; t0 < T; t0 += per) {
    const isa::Program prog = make_mlp_rows_program(info, l, t0, std::min(per, T - t0));
    const test::ProgramCheck check = test::check_program(info, prog);
    ASSERT_TRUE(check.ok()) << check.summary();
    hbm = test::run_reference(info, prog, hbm).hbm;
  }
  const golden::MlpResult want = golden::mlp(T, D, F, xT, p, &res, int(info.te_rows));
  golden::Patterns got(want.out.size());
  std::memcpy(got.data(), &hbm[l.out_hbm], got.size() * 4);
  int shown = 0;
  for (std::size_t i = 0; i < want.out.size() && shown < 5; ++i) {
    if (got[i] != want.out[i]) {
      ADD_FAILURE() << fmt::format("out[{}][{}] = {:#010x}, golden {:#010x}", i / D, i % D, got[i], want.out[i]);
      ++shown;
    }
  }
  for (uint64_t a = 0; a < hbm.size(); ++a) {  // g^T stayed on chip: only out changed
    if (a == l.out_hbm) a = l.out_hbm + uint64_t(T) * D * 4;
    if (a < hbm.size() && hbm[a] != before[a]) {
      ADD_FAILURE() << fmt::format("HBM byte {:#x} outside out changed", a);
      break;
    }
  }
}

TEST(GemmInSbuf, MlpRowsProgramsMatchTheGoldenMlp) {
  // Ragged everywhere: K of either GEMM not a multiple of the TE rows, g^T's last M tile (down's last K tile)
  // partial, token blocks of a whole and a partial tile.
  check_mlp_rows(tiny_info(), 21, 40, 70, 16);
  check_mlp_rows(tiny_info(), 7, 16, 33, 7);
  check_mlp_rows(trn2_info(), 150, 200, 300, 128);
}

/// make_ln_gemm_program of N rows of K features into M outputs: checked race-free, run on the reference machine,
/// out bit for bit the golden LayerNorm, TE transpose, GEMM and row bias (the steps it fuses), and HBM unchanged
/// outside out (the normalised rows stayed on chip).
/// sbuf_end > 0: the program keeps to SBUF bytes [0, sbuf_end) of each partition (LnGemmLayout::sbuf_end).
void check_ln_gemm(const DeviceInfo& info, int N, int K, int M, uint32_t sbuf_end = 0) {
  SCOPED_TRACE(fmt::format("LayerNorm of [{}, {}] into a GEMM of M {}, sbuf_end {}", N, K, M, sbuf_end));
  std::mt19937_64 rng(test::test_seed() ^ (uint64_t(N) << 32) ^ (uint64_t(K) << 16) ^ uint64_t(M));
  auto widen = [](const std::vector<uint16_t>& v) { return golden::Patterns(v.begin(), v.end()); };
  const golden::Patterns x = random_f32(std::size_t(N) * K, 4.0f, rng), gamma = random_f32(K, 2.0f, rng),
                         beta = random_f32(K, 0.5f, rng), bias = random_f32(M, 0.5f, rng);
  const golden::Patterns w = widen(random_tensor(isa::Dtype::kBf16, std::size_t(K) * M, rng));
  LnGemmLayout l;
  l.ln.rows = N, l.ln.cols = K, l.ln.eps = 1e-5f;
  l.ln.in_type = isa::DataType::kFp32, l.ln.out_type = isa::DataType::kBf16;
  uint64_t at = 0x1000;
  auto take = [&](uint64_t bytes) {
    const uint64_t a = at;
    at = (at + bytes + 0x1043) & ~uint64_t(3);  // gaps between the tensors
    return a;
  };
  l.ln.in_hbm = take(uint64_t(N) * K * 4), l.ln.gamma_hbm = take(uint64_t(K) * 4), l.ln.beta_hbm = take(uint64_t(K) * 4);
  GemmEpilogue epi;
  epi.kind = GemmEpilogue::Kind::kRowBiasAct;
  epi.bias_hbm = take(uint64_t(M) * 4);
  epi.func = isa::ActFunc::kIdentity;
  const uint64_t w_hbm = take(uint64_t(K) * M * 2), out_hbm = take(uint64_t(M) * N * 2);
  l.gemm = bf16_gemm(K, M, N, w_hbm, 0, out_hbm, isa::DataType::kBf16, epi);
  l.sbuf_end = sbuf_end;
  std::vector<uint8_t> hbm(at + 0x1000, 0xA5);
  auto put32 = [&](uint64_t a, const golden::Patterns& v) { std::memcpy(&hbm[a], v.data(), v.size() * 4); };
  put32(l.ln.in_hbm, x), put32(l.ln.gamma_hbm, gamma), put32(l.ln.beta_hbm, beta), put32(epi.bias_hbm, bias);
  put(&hbm, w_hbm, std::vector<uint16_t>(w.begin(), w.end()), 2);
  const std::vector<uint8_t> before = hbm;
  ASSERT_TRUE(ln_gemm_fits(info, l));
  const isa::Program prog = make_ln_gemm_program(info, l);
  test::ProgramCheckOptions opt;
  if (sbuf_end > 0) {
    opt.areas = {{isa::MemSpace::kHbm, 0, 1, 0, info.hbm_bytes, true, true, "HBM"},
                 {isa::MemSpace::kPsum, 0, info.psum_partitions, 0, info.psum_partition_bytes, true, true, "PSUM"},
                 {isa::MemSpace::kSbuf, 0, info.sbuf_partitions, 0, sbuf_end, true, true, "below sbuf_end"}};
  }
  const test::ProgramCheck check = test::check_program(info, prog, opt);
  ASSERT_TRUE(check.ok()) << check.summary();
  if (sbuf_end > 0) {  // the bound binds: unbounded, the program reaches past it
    LnGemmLayout unbounded = l;
    unbounded.sbuf_end = 0;
    EXPECT_FALSE(test::check_program(info, make_ln_gemm_program(info, unbounded), opt).ok());
  }
  hbm = test::run_reference(info, prog, hbm).hbm;

  golden::NormSpec ns;
  ns.rows = N, ns.cols = K, ns.eps = 1e-5f, ns.in_type = isa::DataType::kFp32, ns.out_type = isa::DataType::kBf16;
  const golden::Patterns lnT = golden::transpose_te(isa::Dtype::kBf16, N, K, golden::layernorm_rows(ns, x, gamma, beta),
                                                    int(info.te_rows), isa::DataType::kBf16);
  const golden::Patterns want =
      golden::row_bias_activation(M, N, golden::gemm_bf16(K, M, N, w, lnT, int(info.te_rows)), bias,
                                  isa::ActFunc::kIdentity, isa::DataType::kBf16);
  int shown = 0;
  for (std::size_t i = 0; i < want.size() && shown < 5; ++i) {
    uint16_t got = 0;
    std::memcpy(&got, &hbm[out_hbm + 2 * i], 2);
    if (got != want[i]) {
      ADD_FAILURE() << fmt::format("out[{}][{}] = {:#06x}, golden {:#06x}", i / N, i % N, got, want[i]);
      ++shown;
    }
  }
  for (uint64_t a = 0; a < hbm.size(); ++a) {  // only out changed
    if (a == out_hbm) a = out_hbm + uint64_t(M) * N * 2;
    if (a < hbm.size() && hbm[a] != before[a]) {
      ADD_FAILURE() << fmt::format("HBM byte {:#x} outside out changed", a);
      break;
    }
  }
}

TEST(GemmInSbuf, ALayerNormIntoItsGemmMatchesTheGoldenSteps) {
  // Ragged everywhere: rows not a multiple of the transposes' tile, features (K) not a multiple of the TE rows,
  // outputs (M) not a multiple of its columns; several row tiles and K tiles.
  check_ln_gemm(tiny_info(), 37, 40, 21);
  check_ln_gemm(tiny_info(), 5, 16, 3);
  check_ln_gemm(trn2_info(), 200, 300, 150);
}

TEST(GemmInSbuf, ALayerNormIntoItsGemmKeepsBelowSbufEnd) {
  // Data of a later program above sbuf_end survives (docs/kernels.md "Weights resident in SBUF"): the program
  // checker's areas hold both kernels below it, with the golden bits. Unbounded, the same program uses 4,160 bytes
  // of each tiny partition; below 4,096 the LayerNorm's three row buffers leave the GEMM no K tile.
  check_ln_gemm(tiny_info(), 37, 40, 21, 4096);
}

/// The message of the std::invalid_argument that `f` throws, or "no error".
template <class F>
std::string refusal_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

/// make_gemm_ln_gemm_program on `info`: h[R, C] = x + (a^T[K1, R]^T @ b[K1, C] + bias[C]) (FP32, kept in SBUF and
/// stored), then y[M, R] = W[C, M]^T @ LN(h)^T + b2[M] (BF16), against the golden steps on the reference machine;
/// every HBM byte but h's and y's unchanged.
void check_gemm_ln_gemm(const DeviceInfo& info, int R, int C, int K1, int M) {
  SCOPED_TRACE(fmt::format("GEMM [{}, {}] (K {}) into a LayerNorm into a GEMM of M {}", R, C, K1, M));
  std::mt19937_64 rng(test::test_seed() ^ (uint64_t(R) << 32) ^ (uint64_t(C) << 16) ^ uint64_t(M));
  auto widen = [](const std::vector<uint16_t>& v) { return golden::Patterns(v.begin(), v.end()); };
  const golden::Patterns a = widen(random_tensor(isa::Dtype::kBf16, std::size_t(K1) * R, rng)),
                         b = widen(random_tensor(isa::Dtype::kBf16, std::size_t(K1) * C, rng)),
                         w = widen(random_tensor(isa::Dtype::kBf16, std::size_t(C) * M, rng));
  const golden::Patterns x = random_f32(std::size_t(R) * C, 4.0f, rng), bias = random_f32(C, 0.5f, rng),
                         gamma = random_f32(C, 2.0f, rng), beta = random_f32(C, 0.5f, rng),
                         b2 = random_f32(M, 0.5f, rng);
  uint64_t at = 0x1000;
  auto take = [&](uint64_t bytes) { return std::exchange(at, (at + bytes + 0x1043) & ~uint64_t(3)); };
  const uint64_t a_hbm = take(uint64_t(K1) * R * 2), b_hbm = take(uint64_t(K1) * C * 2), x_hbm = take(uint64_t(R) * C * 4);
  const uint64_t bias_hbm = take(uint64_t(C) * 4), h_hbm = take(uint64_t(R) * C * 4), g_hbm = take(uint64_t(C) * 4);
  const uint64_t beta_hbm = take(uint64_t(C) * 4), w_hbm = take(uint64_t(C) * M * 2), b2_hbm = take(uint64_t(M) * 4);
  const uint64_t y_hbm = take(uint64_t(M) * R * 2);
  GemmEpilogue col;
  col.kind = GemmEpilogue::Kind::kColBiasAdd, col.bias_hbm = bias_hbm, col.residual = true, col.residual_hbm = x_hbm;
  GemmLayout first = bf16_gemm(K1, R, C, a_hbm, b_hbm, h_hbm, isa::DataType::kFp32, col);
  const uint32_t mt = std::min(info.te_cols, info.psum_partitions), tile = uint32_t((uint64_t(C) * 4 + 63) / 64 * 64);
  const uint32_t limit = uint32_t(info.sbuf_partition_bytes / 4 / 64 * 64);
  first.sbuf_limit = limit, first.out_kept_in_sbuf = true, first.out_sbuf = limit, first.out_sbuf_tile_bytes = tile;
  LnGemmLayout second;
  second.ln.rows = R, second.ln.cols = C, second.ln.eps = 1e-5f, second.ln.in_hbm = h_hbm;
  second.ln.gamma_hbm = g_hbm, second.ln.beta_hbm = beta_hbm;
  second.ln.in_type = isa::DataType::kFp32, second.ln.out_type = isa::DataType::kBf16;
  GemmEpilogue row;
  row.kind = GemmEpilogue::Kind::kRowBiasAct, row.bias_hbm = b2_hbm, row.func = isa::ActFunc::kIdentity;
  second.gemm = bf16_gemm(C, M, R, w_hbm, 0, y_hbm, isa::DataType::kBf16, row);
  second.sbuf_base = limit + uint32_t((uint64_t(R) + mt - 1) / mt) * tile;
  std::vector<uint8_t> hbm(at + 0x1000, 0xA5);
  auto put32 = [&](uint64_t addr, const golden::Patterns& v) { std::memcpy(&hbm[addr], v.data(), v.size() * 4); };
  put32(x_hbm, x), put32(bias_hbm, bias), put32(g_hbm, gamma), put32(beta_hbm, beta), put32(b2_hbm, b2);
  put(&hbm, a_hbm, std::vector<uint16_t>(a.begin(), a.end()), 2);
  put(&hbm, b_hbm, std::vector<uint16_t>(b.begin(), b.end()), 2);
  put(&hbm, w_hbm, std::vector<uint16_t>(w.begin(), w.end()), 2);
  const std::vector<uint8_t> before = hbm;
  const isa::Program prog = make_gemm_ln_gemm_program(info, first, second);
  const test::ProgramCheck check = test::check_program(info, prog);
  ASSERT_TRUE(check.ok()) << check.summary();
  EXPECT_EQ(test::hbm_bytes_read(prog, h_hbm, h_hbm + uint64_t(R) * C * 4), 0u) << "the LayerNorm reads h in SBUF";
  hbm = test::run_reference(info, prog, hbm).hbm;

  const golden::Patterns h =
      golden::col_bias_add(R, C, golden::gemm_bf16(K1, R, C, a, b, int(info.te_rows)), bias, &x, isa::DataType::kFp32);
  golden::NormSpec ns;
  ns.rows = R, ns.cols = C, ns.eps = 1e-5f, ns.in_type = isa::DataType::kFp32, ns.out_type = isa::DataType::kBf16;
  const golden::Patterns lnT = golden::transpose_te(isa::Dtype::kBf16, R, C, golden::layernorm_rows(ns, h, gamma, beta),
                                                    int(info.te_rows), isa::DataType::kBf16);
  const golden::Patterns y = golden::row_bias_activation(M, R, golden::gemm_bf16(C, M, R, w, lnT, int(info.te_rows)),
                                                         b2, isa::ActFunc::kIdentity, isa::DataType::kBf16);
  int shown = 0;
  for (std::size_t i = 0; i < h.size() && shown < 5; ++i) {
    uint32_t got = 0;
    std::memcpy(&got, &hbm[h_hbm + 4 * i], 4);
    if (got != h[i]) ADD_FAILURE() << fmt::format("h[{}][{}] = {:#010x}, golden {:#010x}", i / C, i % C, got, h[i]), ++shown;
  }
  for (std::size_t i = 0; i < y.size() && shown < 5; ++i) {
    uint16_t got = 0;
    std::memcpy(&got, &hbm[y_hbm + 2 * i], 2);
    if (got != y[i]) ADD_FAILURE() << fmt::format("y[{}][{}] = {:#06x}, golden {:#06x}", i / R, i % R, got, y[i]), ++shown;
  }
  for (uint64_t addr = 0; addr < hbm.size(); ++addr) {  // only h and y changed
    const bool in_h = addr >= h_hbm && addr < h_hbm + uint64_t(R) * C * 4;
    const bool in_y = addr >= y_hbm && addr < y_hbm + uint64_t(M) * R * 2;
    if (!in_h && !in_y && hbm[addr] != before[addr]) {
      ADD_FAILURE() << fmt::format("HBM byte {:#x} outside h and y changed", addr);
      break;
    }
  }
  // What does not match: an output not kept in SBUF, a LayerNorm of other rows, a kept output inside the second's
  // bytes.
  auto message = [&](const GemmLayout& f, const LnGemmLayout& l) {
    return refusal_of([&] { make_gemm_ln_gemm_program(info, f, l); });
  };
  GemmLayout not_kept = first;
  not_kept.out_kept_in_sbuf = false;
  EXPECT_NE(message(not_kept, second).find("kept in SBUF"), std::string::npos) << message(not_kept, second);
  LnGemmLayout fewer = second;
  fewer.ln.rows = R - 1, fewer.gemm.n = R - 1;
  EXPECT_NE(message(first, fewer).find(fmt::format("output [{}, {}] must be the LayerNorm's FP32 input [{}, {}]", R, C,
                                                   R - 1, C)),
            std::string::npos)
      << message(first, fewer);
  LnGemmLayout over = second;
  over.sbuf_base = limit;  // the kept rows would lie inside it
  EXPECT_NE(message(first, over).find("must lie outside the fused LayerNorm + GEMM's"), std::string::npos)
      << message(first, over);
}

TEST(GemmInSbuf, AGemmIntoALayerNormIntoAGemmInOneProgramMatchesTheGoldenSteps) {
  // The transformer block's projection, ln2 and up GEMM (proj+ln2+mlp up): ragged row tiles (37 rows: 16, 16, 5 on
  // tiny), features not a multiple of the TE rows, several K tiles in both GEMMs; more M tiles than PSUM buffers (150
  // rows: 10 tiles, 8 one-bank buffers, so the first GEMM's ninth tile takes the bank of the LayerNorm's first
  // transposes: a race without add_layernorm's psum_after); one row tile (5 rows); trn2.
  check_gemm_ln_gemm(tiny_info(), 37, 40, 24, 21);
  check_gemm_ln_gemm(tiny_info(), 150, 40, 24, 21);
  check_gemm_ln_gemm(tiny_info(), 5, 16, 16, 3);
  check_gemm_ln_gemm(trn2_info(), 200, 300, 130, 150);
}

TEST(GemmInSbuf, ALayerNormIntoItsGemmCarriesAPrefetchAboveItsBytes) {
  // LnGemmLayout::prefetch (the block's up GEMM programs load a share of W2 for the down GEMM): a [24, 40] LayerNorm
  // into a GEMM of M 21 on tiny that also loads a [40, 30] BF16 operand into the top of its SBUF
  // (sbuf_operand_copies' layout: K tiles of 16 rows, the last of 8). The program checker holds the program below
  // sbuf_end and the prefetch alone above it; on the reference machine the region ends up holding the operand's rows
  // and HBM is what the program alone leaves. A prefetch below sbuf_end is refused, naming it.
  const DeviceInfo info = tiny_info();
  const int N = 24, C = 40, M = 21, K = 40, W = 30;
  std::mt19937_64 rng(test::test_seed());
  LnGemmLayout l;
  l.ln.rows = N, l.ln.cols = C, l.ln.eps = 1e-5f, l.ln.in_type = isa::DataType::kFp32;
  l.ln.out_type = isa::DataType::kBf16;
  l.ln.in_hbm = 0x1000, l.ln.gamma_hbm = 0x3000, l.ln.beta_hbm = 0x3100;
  const uint64_t w_hbm = 0x4000, out_hbm = 0x6000, op_hbm = 0x8000;
  l.gemm = bf16_gemm(C, M, N, w_hbm, 0, out_hbm, isa::DataType::kBf16);
  const uint32_t tile = sbuf_operand_tile_bytes(isa::Dtype::kBf16, W), pb = info.sbuf_partition_bytes;
  const uint32_t at = pb - 3 * tile;
  l.sbuf_end = at;
  std::vector<uint8_t> hbm(op_hbm + uint64_t(K) * W * 2);
  const golden::Patterns x = random_f32(std::size_t(N) * C, 4.0f, rng), g = random_f32(C, 2.0f, rng);
  std::memcpy(&hbm[l.ln.in_hbm], x.data(), x.size() * 4);
  std::memcpy(&hbm[l.ln.gamma_hbm], g.data(), g.size() * 4);
  std::memcpy(&hbm[l.ln.beta_hbm], g.data(), g.size() * 4);
  for (uint64_t i = w_hbm; i < w_hbm + uint64_t(C) * M * 2; i += 2) hbm[i] = uint8_t(rng() & 0x7F), hbm[i + 1] = 0x3F;
  for (uint64_t i = op_hbm; i < hbm.size(); ++i) hbm[i] = uint8_t(rng());
  LnGemmLayout with = l;
  with.prefetch = prefetch_pieces(info, sbuf_operand_copies(info, isa::Dtype::kBf16, op_hbm, K, W, at, tile), 1.0);
  const isa::Program p = make_ln_gemm_program(info, with);
  const test::ProgramCheck c = test::check_program(info, p, test::prefetch_areas(info, at));
  EXPECT_TRUE(c.ok()) << c.summary();
  const test::RefMemory got = test::run_reference(info, p, hbm);
  EXPECT_TRUE(got.hbm == test::run_reference(info, make_ln_gemm_program(info, l), hbm).hbm)
      << "HBM is not what the program alone leaves";
  EXPECT_EQ(test::operand_rows_missing(info, got, hbm, op_hbm, K, W, 16, at, tile), std::vector<int>{})
      << "rows of the operand not where sbuf_operand_copies puts them";
  LnGemmLayout low = with;
  low.prefetch = sbuf_operand_copies(info, isa::Dtype::kBf16, op_hbm, K, W, at - 64, tile);
  const std::string why = refusal_of([&] { make_ln_gemm_program(info, low); });
  EXPECT_NE(why.find(fmt::format("ln+gemm kernel: prefetch copy 0 must go to SBUF at or above sbuf_end {}", at)),
            std::string::npos)
      << why;
}

TEST(GemmInSbuf, ALayerNormIntoItsGemmRefusesWhatDoesNotMatch) {
  LnGemmLayout l;
  l.ln.rows = 24, l.ln.cols = 40, l.ln.in_hbm = 0x1000, l.ln.gamma_hbm = 0x8000, l.ln.beta_hbm = 0x9000;
  l.ln.out_type = isa::DataType::kBf16;
  l.gemm = bf16_gemm(40, 20, 24, 0x10000, 0, 0x20000);
  EXPECT_TRUE(ln_gemm_fits(tiny_info(), l));
  auto message = [&](const LnGemmLayout& g) { return refusal_of([&] { make_ln_gemm_program(tiny_info(), g); }); };
  LnGemmLayout k = l;
  k.gemm.k = 41;
  EXPECT_FALSE(ln_gemm_fits(tiny_info(), k));
  EXPECT_NE(message(k).find("the GEMM's K 41 and N 24 must be the LayerNorm's cols 40 and rows 24"), std::string::npos)
      << message(k);
  LnGemmLayout t = l;
  t.ln.out_type = isa::DataType::kFp16;  // the GEMM's operands are BF16
  EXPECT_NE(message(t).find("the GEMM's dtype bf16 must be the LayerNorm's out_type fp16"), std::string::npos)
      << message(t);
  // The LayerNorm alone cannot keep its output in SBUF: no op of its program would read it.
  LayerNormLayout n = l.ln;
  n.transposed_out = true, n.out_in_sbuf = true, n.out_sbuf_tile_bytes = 64;
  EXPECT_THROW(make_layernorm_program(tiny_info(), n), std::invalid_argument);
  // In a program of its own making (add_layernorm) the output must lie outside the kernel's bytes: here it starts
  // inside them (its buffers start at sbuf_base 4096).
  n.sbuf_base = 4096, n.out_sbuf = 4096 + 64;
  const std::string inside = refusal_of([&] {
    Pipeline pipe(tiny_info());
    add_layernorm(pipe, tiny_info(), n);
  });
  EXPECT_NE(inside.find("layernorm kernel: the SBUF output at 4160 (3 chunks of 64 bytes, 24 rows each) must lie "
                        "within the partition and outside the kernel's bytes [4096,"),
            std::string::npos)
      << inside;
  n.out_sbuf = 0;  // below them: fine
  Pipeline pipe(tiny_info());
  EXPECT_FALSE(add_layernorm(pipe, tiny_info(), n).done.empty());
  n.transposed_out = false;  // an SBUF output is the transposed one
  EXPECT_THROW(add_layernorm(pipe, tiny_info(), n), std::invalid_argument);
  // A moving operand in SBUF inside the GEMM's own buffers.
  GemmLayout g = l.gemm;
  g.moving_in_sbuf = true;
  g.sbuf_base = 64 * 1024, g.sbuf_limit = 32 * 1024;
  g.moving_sbuf = 70 * 1024, g.moving_sbuf_tile_bytes = 64;
  const std::string moving = refusal_of([&] { plan_gemm(tiny_info(), g); });
  EXPECT_NE(moving.find("the SBUF moving at 71680 (3 K tiles of 64 bytes) is not outside the GEMM's bytes [65536, "
                        "98304)"),
            std::string::npos)
      << moving;
  g.moving_sbuf = 0;
  EXPECT_NO_THROW(plan_gemm(tiny_info(), g));
  EXPECT_EQ(plan_gemm(tiny_info(), g).moving_row_bytes, 0u) << "no buffer for an operand that is already there";
}

/// The block's LN1 into its QKV GEMM at seq 2048 (GPT-2 small: 768 features, 2304 outputs, a row bias), the weights
/// (the stationary) at 0x10000000.
LnGemmLayout block_ln1_qkv_2048() {
  LnGemmLayout qkv;
  qkv.ln.rows = 2048, qkv.ln.cols = 768, qkv.ln.out_type = isa::DataType::kBf16;
  qkv.ln.in_hbm = 0x100000, qkv.ln.gamma_hbm = 0x40, qkv.ln.beta_hbm = 0x1000;
  GemmEpilogue bias;
  bias.kind = GemmEpilogue::Kind::kRowBiasAct;
  bias.bias_hbm = 0x2000;
  qkv.gemm = bf16_gemm(768, 2304, 2048, 0x10000000, 0, 0x20000000, isa::DataType::kBf16, bias);
  return qkv;
}

TEST(GemmInSbuf, TheBlockFusesItsLayerNormsWhereTheCostModelFindsThemShorter) {
  // GPT-2 small's block on trn2 over 8 cores (docs/kernels.md "Transformer block"; measured with trnsim run --workload
  // transformer-block --config trn2 --te tlm, each path forced: T 128 fused 125,004 cycles, apart 150,189; T 2048
  // fused 474,302 (ln1+qkv 80,241 against 36,797 + 50,060 apart, ln2+mlp up 96,851 against 36,797 + 60,705), apart
  // 481,569; fused with the GEMM's waves cut as a GEMM alone cuts them, 496,501 against 486,198).
  TransformerShape s;
  s.cores = 8;
  s.seq = 128;
  TransformerFusion f = transformer_fusion(trn2_info(), s);
  EXPECT_TRUE(f.ln1_qkv);
  EXPECT_TRUE(f.ln2_up);
  s.seq = 2048;
  f = transformer_fusion(trn2_info(), s);
  EXPECT_TRUE(f.ln1_qkv);
  EXPECT_TRUE(f.ln2_up);
  // At T 2048 the fused block's DMA engines are busy throughout (the weights' share and the rows): it wins with
  // wave pieces of more than one engine's start-latency bytes, not with a GEMM's own.
  const LnGemmLayout qkv = block_ln1_qkv_2048();
  const LnGemmSplit split = ln_gemm_split(trn2_info(), qkv, 8);
  ASSERT_EQ(split.pieces.size(), 8u);
  EXPECT_GT(split.pieces.front().layout.wave_piece_latencies, 1.0);
  s.seq = 128;
  s.te_transpose = false;  // the LayerNorm's transpose then goes through HBM: nothing to keep on chip
  f = transformer_fusion(trn2_info(), s);
  EXPECT_FALSE(f.ln1_qkv || f.ln2_up);
}

TEST(GemmInSbuf, AFusedGemmCutsItsFirstWaveLikeItsLaterOnes) {
  // The block's ln1 + qkv at seq 2048 on 8 trn2 cores: the GEMM's TE waits for the LayerNorm of its rows anyway, so
  // its first wave of weights (a K batch of 196,608 bytes) is cut like the later ones, into pieces of at least one
  // engine's start-latency bytes (29,900 on trn2, docs/driver.md "The GEMM kernel"), not over all 16 engines (16
  // copies of 12,288 bytes, nearly all start latency). So no copy of the weights is below 24 KiB.
  const LnGemmLayout qkv = block_ln1_qkv_2048();
  const uint64_t w = qkv.gemm.stationary_hbm, w_end = w + 768ull * 2304 * 2;
  const KernelSequence steps = ln_gemm_steps(trn2_info(), "ln1+qkv", qkv, 8);
  ASSERT_EQ(steps.size(), 8u);
  uint64_t copies = 0, smallest = UINT64_MAX;
  for (const isa::Instruction& in : steps.front().program.queue(isa::Engine::kDma)) {
    if (in.op != isa::Opcode::kDmaCopy || in.copy.src_space != isa::MemSpace::kHbm || in.copy.src_addr < w ||
        in.copy.src_addr >= w_end) {
      continue;
    }
    ++copies;
    smallest = std::min<uint64_t>(smallest, in.copy.elements() * 2);
  }
  ASSERT_GT(copies, 0u);
  EXPECT_GE(smallest, 24u * 1024) << copies << " copies of the weights";
}

TEST(GemmProtocol, AColumnEpiloguesLateLoadsAreCutLikeAWave) {
  // The block's projection at seq 2048 on 8 trn2 cores (K 768, M 2048 tokens, N 768, FP32 out with a column bias
  // and the residual). The bias rows and residual tiles of the blocks whose epilogue comes after the last load wave
  // were an op of their own over all 16 DMA engines: a group's bias row broadcast to 128 partitions (196,608 bytes)
  // and a residual tile (196,608) in pieces of 16 rows, 24,576 bytes each. Cut like a wave (latency_engines: pieces of
  // at least one engine's 29,900 start-latency bytes, over both copies), no piece is below 26 KiB.
  GemmEpilogue add;
  add.kind = GemmEpilogue::Kind::kColBiasAdd;
  add.residual = true;
  add.bias_hbm = 0x1000;
  add.residual_hbm = 0x4000000;
  const uint64_t res_end = add.residual_hbm + 2048ull * 768 * 4;
  const KernelSequence steps =
      gemm_steps(trn2_info(), "proj", 768, 2048, 768, 0x100000, 0x2000000, 0x8000000, 8, isa::DataType::kFp32, add);
  ASSERT_EQ(steps.size(), 8u);
  uint64_t copies = 0, smallest = UINT64_MAX;
  for (const isa::Instruction& in : steps.front().program.queue(isa::Engine::kDma)) {
    const bool bias = in.copy.src_addr >= add.bias_hbm && in.copy.src_addr < add.bias_hbm + 768 * 4;
    const bool residual = in.copy.src_addr >= add.residual_hbm && in.copy.src_addr < res_end;
    if (in.op != isa::Opcode::kDmaCopy || in.copy.src_space != isa::MemSpace::kHbm || !(bias || residual)) continue;
    ++copies;
    smallest = std::min<uint64_t>(smallest, in.copy.elements() * 4);
  }
  ASSERT_GT(copies, 0u);
  EXPECT_GE(smallest, 26u * 1024) << copies << " copies of the bias rows and residual";
}

TEST(GemmInSbuf, RegionsMustNotOverlapTheGemmsOwnBuffers) {
  const DeviceInfo info = tiny_info();
  GemmLayout l;
  l.k = 40, l.m = 20, l.n = 24;
  l.moving_hbm = 0x10000, l.out_hbm = 0x20000;
  l.sbuf_base = 64 * 1024;
  l.sbuf_limit = 32 * 1024;
  EXPECT_NO_THROW(plan_gemm(info, l));
  auto message = [&](const GemmLayout& g) {
    try {
      plan_gemm(info, g);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  GemmLayout s = l;  // the stationary read in SBUF, inside the GEMM's [64 KiB, 96 KiB)
  s.stationary_in_sbuf = true;
  s.stationary_sbuf = 80 * 1024;
  s.stationary_sbuf_tile_bytes = 64;
  EXPECT_NE(message(s).find("the SBUF stationary at 81920 (3 K tiles of 64 bytes) is not outside the GEMM's bytes "
                            "[65536, 98304)"),
            std::string::npos)
      << message(s);
  s.stationary_sbuf = 0;  // below it: fine
  EXPECT_NO_THROW(plan_gemm(info, s));
  s.stationary_sbuf_tile_bytes = 32;  // a row of 20 BF16 is 40 bytes
  EXPECT_NE(message(s).find("stationary_sbuf_tile_bytes 32 holds no row of 20"), std::string::npos) << message(s);
  s.stationary_sbuf_tile_bytes = 64;
  s.dtype = isa::Dtype::kFp8E4M3;  // two K rows per partition: not the layout of an SBUF output
  EXPECT_NE(message(s).find("a stationary operand kept in SBUF is bf16 or fp16 (a row per partition), not fp8e4m3"),
            std::string::npos)
      << message(s);

  GemmLayout o = l;  // a row bias + activation output kept in SBUF, overlapping the GEMM's buffers
  o.epilogue.kind = GemmEpilogue::Kind::kRowBiasAct;
  o.out_type = isa::DataType::kBf16;
  o.out_in_sbuf = true;
  o.out_sbuf = 96 * 1024 - 64;
  o.out_sbuf_tile_bytes = 64;
  EXPECT_NE(message(o).find("is not outside the GEMM's bytes [65536, 98304)"), std::string::npos) << message(o);
  o.out_sbuf = 96 * 1024;
  EXPECT_NO_THROW(plan_gemm(info, o));
  o.epilogue.kind = GemmEpilogue::Kind::kColBiasAdd;  // a column epilogue stores through HBM
  o.out_type = isa::DataType::kFp32;
  EXPECT_NE(message(o).find("needs a softmax or a row bias + activation epilogue"), std::string::npos) << message(o);

  GemmLayout b = l;
  b.sbuf_base = uint32_t(info.sbuf_partition_bytes);
  EXPECT_NE(message(b).find("sbuf_base 196608 is past the SBUF partition's 196608 bytes"), std::string::npos)
      << message(b);
}

TEST(GemmInSbuf, TheMlpTakesRowsProgramsWhereTheCostModelFindsThemShorter) {
  // GPT-2 small's MLP on trn2 (docs/kernels.md "GELU MLP"; the whole workload measured with trnsim run --workload
  // mlp --config trn2 --te tlm, each path forced: T 2048 on 8 cores split 190 k cycles, rows 219 k; on one core
  // rows 746 k, split 774 k; T 4096 on 8 cores rows 311 k, split 344 k; T 1024 on 8 cores split 117 k, rows 171 k).
  MlpLayout l;
  l.d_model = 768, l.d_ff = 3072;
  l.tokens = 1024, l.cores = 8;
  EXPECT_FALSE(mlp_in_rows(trn2_info(), l)) << "128 tokens per core: all of W1 and W2 per core for little work";
  l.tokens = 2048;
  EXPECT_FALSE(mlp_in_rows(trn2_info(), l)) << "256 tokens per core: up's 256-column blocks leave the TE's loads bare";
  l.cores = 1;
  EXPECT_TRUE(mlp_in_rows(trn2_info(), l)) << "one core: g^T stays on chip";
  l.tokens = 4096, l.cores = 8;
  EXPECT_TRUE(mlp_in_rows(trn2_info(), l));
  l.rows_programs = false;
  EXPECT_FALSE(mlp_in_rows(trn2_info(), l));
  l.rows_programs = true;
  l.cores = 1;  // g^T of 4096 tokens (192 KiB a partition) does not fit beside the GEMMs
  EXPECT_FALSE(mlp_in_rows(trn2_info(), l));
  EXPECT_EQ(make_mlp_programs(trn2_info(), l).size(), 2u);
  l.cores = 0;
  EXPECT_THROW(mlp_in_rows(trn2_info(), l), std::invalid_argument);
}

TEST(ResidentWeights, TheBlockKeepsThemWhereTheEstimateFindsItShorter) {
  // GPT-2 small's block on trn2 over 8 cores (trnsim run --workload transformer-block --config trn2 --te tlm --seq S,
  // docs/kernels.md "Weights resident in SBUF"): at T 2048 442,652 cycles without, 397,265 with W_o, W2 and W1
  // resident (the attention 165,158 -> 169,486; 381,889 with g^T on chip too); forced by hand at T 1024 304,138 against 260,899, at T 512 259,233
  // against 189,720, at T 128 215,997 against 121,092 (the loads lengthen the short pieces more than the GEMMs save).
  TransformerShape s;
  s.cores = 8;
  s.seq = 2048;
  const TransformerResidency r = transformer_residency(trn2_info(), s);
  ASSERT_TRUE(r.resident);
  // W_o: 6 K tiles and W2: 24 of 768 BF16 columns (1,536 bytes), W1: 6 of 3,072 (6,144), at the top of the
  // 196,608-byte partitions.
  EXPECT_EQ(r.sbuf_end, 196608u - 30 * 1536 - 6 * 6144);
  EXPECT_EQ(r.w_o, r.sbuf_end);
  EXPECT_EQ(r.w2, r.w_o + 6 * 1536);
  EXPECT_EQ(r.w1, r.w2 + 24 * 1536);
  // g^T below: 256 tokens per core, 24 M tiles of 512 bytes.
  EXPECT_EQ(r.g_tokens, 256);
  EXPECT_EQ(r.g, r.sbuf_end - 24 * 512);
  s.seq = 1024;
  EXPECT_FALSE(transformer_residency(trn2_info(), s).resident);
  EXPECT_TRUE(transformer_residency(trn2_info(), s, false).resident) << "it fits, it is only longer";
  // One core runs the MLP as one rows program, with no fused ln2 + up GEMM for the weights to wait across.
  s.seq = 2048;
  s.cores = 1;
  EXPECT_FALSE(transformer_residency(trn2_info(), s, false).resident);
}

TEST(ResidentWeights, TheGemmsTakeTheirBlockWidthsByEstimate) {
  // With the moving operand in SBUF there is nothing to load beside the TE, and narrower blocks only shorten the
  // last block's epilogue and store; plan_gemm takes the width its estimate finds shortest. Measured on the block at
  // seq 2048 on 8 trn2 cores, each width forced: the down GEMM 45,007 cycles with 2 banks per block, 42,363 with 1;
  // the projection 31,750 with 2, 36,829 with 1.
  TransformerShape s;
  s.cores = 8;
  s.seq = 2048;
  const DeviceInfo info = trn2_info();
  const TransformerResidency r = transformer_residency(info, s);
  ASSERT_TRUE(r.resident);
  ASSERT_GT(r.g, 0u);
  MlpLayout m;
  m.tokens = 2048, m.d_model = 768, m.d_ff = 3072, m.cores = 8, m.residual = true;
  m.xT_hbm = 0x1000000, m.w1_hbm = 0x2000000, m.b1_hbm = 0x3000000, m.w2_hbm = 0x4000000, m.b2_hbm = 0x5000000;
  m.gT_hbm = 0x6000000, m.residual_hbm = 0x7000000, m.out_hbm = 0x8000000;
  GemmLayout down = split_gemm_grid(mlp_down_gemm(m, r.w2, r.g), r.g_tokens, 768).front().layout;
  down.stationary_in_sbuf = true, down.stationary_sbuf = r.g, down.stationary_sbuf_tile_bytes = r.g_tile_bytes;
  EXPECT_EQ(plan_gemm(info, down).banks_per_block, 1);
  GemmEpilogue add;
  add.kind = GemmEpilogue::Kind::kColBiasAdd, add.residual = true, add.bias_hbm = 0x9000000, add.residual_hbm = 0xA000000;
  GemmLayout proj = bf16_gemm(768, 2048, 768, 0xB000000, 0xC000000, 0xD000000, isa::DataType::kFp32, add);
  proj.moving_in_sbuf = true, proj.moving_sbuf = r.w_o, proj.moving_sbuf_tile_bytes = 1536, proj.sbuf_limit = r.sbuf_end;
  EXPECT_EQ(plan_gemm(info, split_gemm_grid(proj, 256, 768).front().layout).banks_per_block, 2);
}

TEST(ResidentWeights, EveryProgramKeepsOutOfThemButToLoadOrReadThem) {
  // The block on trn2 over 8 cores at T 256 with the weights forced resident: from the attention to the down GEMM
  // every program keeps its own SBUF bytes below sbuf_end; above it only the attention pieces write (the prefetch;
  // the projection + ln2 + up GEMM programs a share of W2) and only the projection and the MLP's GEMMs read. g^T below that (TransformerResidency::g): the projection +
  // ln2 + up GEMM programs write it, the down GEMM reads it, and the MLP's programs keep their own bytes below it. Checked by the program
  // checker's areas.
  TransformerShape s;
  s.cores = 8;
  s.seq = 256;
  const DeviceInfo info = trn2_info();
  const TransformerResidency r = transformer_residency(info, s, false);
  ASSERT_TRUE(r.resident);
  // 128 tokens per core (T 256 is two TE-column tiles): 24 M tiles of 256 bytes below the weights.
  EXPECT_EQ(r.g_tokens, 128);
  EXPECT_EQ(r.g_tile_bytes, 256u);
  EXPECT_EQ(r.g, r.sbuf_end - 24 * 256);
  TransformerInputs in;
  const uint64_t D = 768, F = 3072, T = 256;
  uint64_t at = 0x1000;
  auto take = [&](uint64_t bytes) { return std::exchange(at, (at + bytes + 63) / 64 * 64); };
  in.x = take(T * D * 4), in.ln1_g = take(D * 4), in.ln1_b = take(D * 4), in.w_qkv = take(D * 3 * D * 2);
  in.b_qkv = take(3 * D * 4), in.w_o = take(D * D * 2), in.b_o = take(D * 4), in.ln2_g = take(D * 4);
  in.ln2_b = take(D * 4), in.w1 = take(D * F * 2), in.b1 = take(F * 4), in.w2 = take(F * D * 2), in.b2 = take(D * 4);
  const uint64_t out = take(T * D * 4);
  const TransformerBuffers b = transformer_buffers(s, at);
  const KernelSequence seq = make_transformer_programs(info, s, in, b, out, r);
  const uint32_t P = info.sbuf_partitions, pb = info.sbuf_partition_bytes;
  const Area hbm{isa::MemSpace::kHbm, 0, 1, 0, info.hbm_bytes, true, true, "HBM"};
  const Area psum{isa::MemSpace::kPsum, 0, info.psum_partitions, 0, info.psum_partition_bytes, true, true, "PSUM"};
  int attention = 0, after = 0, ups = 0, downs = 0;
  for (const KernelStep& st : seq) {
    const bool piece = st.name.find("attention") != std::string::npos;
    attention += piece;
    if (attention == 0) continue;  // before the attention the SBUF is the programs' own
    const bool reader = !piece;    // the projection, ln2 + the up GEMM, the down GEMM
    const bool up = st.name.rfind("proj+ln2+mlp up", 0) == 0, down = st.name.rfind("mlp down", 0) == 0;
    after += reader;
    test::ProgramCheckOptions opt;
    opt.areas = {hbm, psum, {isa::MemSpace::kSbuf, 0, P, r.sbuf_end, pb, reader, !reader, "the weights"}};
    if (up || down) {
      opt.areas.push_back({isa::MemSpace::kSbuf, 0, P, 0, r.g, true, true, "below g"});
      opt.areas.push_back({isa::MemSpace::kSbuf, 0, P, r.g, r.sbuf_end, down, up, "g^T"});
      // The up programs load a share of W2 for the down GEMM (the rest comes with the attention pieces).
      if (up) opt.areas.push_back({isa::MemSpace::kSbuf, 0, P, r.w2, r.w1, true, true, "W2"});
      // Each of the MLP's pieces on its own core, the down GEMM's with the tokens of the up GEMM's there.
      EXPECT_EQ(st.core, up ? ups++ : downs++) << st.name;
    } else {
      opt.areas.push_back({isa::MemSpace::kSbuf, 0, P, 0, r.sbuf_end, true, true, "below sbuf_end"});
    }
    const test::ProgramCheck c = test::check_program(info, st.program, opt);
    EXPECT_TRUE(c.ok()) << st.name << ":\n" << c.summary();
  }
  EXPECT_EQ(attention, 12) << "12 heads in one piece each (T 256 is two query tiles: attention_pieces keeps whole heads)";
  // Each split by the tokens alone, two M tiles of 128: the projection's and the down GEMM's M, the up GEMM's N; the
  // projection and ln2 + the up GEMM in one program (make_gemm_ln_gemm_program).
  EXPECT_EQ(after, 2 + 2) << "the steps after the attention";
}

}  // namespace
}  // namespace trnsim::kernels
