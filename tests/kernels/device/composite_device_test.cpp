// The composite kernels end to end on the in-process SystemC model (tiny config, TLM TE datapath), through the
// driver, against the golden composites (firmware/golden/transformer_golden.h) bit for bit: the element-wise
// bias/activation programs, the GELU MLP, one- and multi-head attention and a transformer block, on shapes that are
// not multiples of the 16 partitions / TE rows, nor of the tiles. Every program of a sequence is first checked by
// program_sim (validation, device limits, deadlock- and race-freedom under any timing), and the device runs with
// its hazard checker and uninitialised-read checker on.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "firmware/driver/core_device.h"
#include "firmware/golden/engine_golden.h"
#include "firmware/golden/float_bits.h"
#include "firmware/golden/nn_golden.h"
#include "firmware/golden/transformer_golden.h"
#include "firmware/kernels/attention_kernel.h"
#include "firmware/kernels/kernel_sequence.h"
#include "firmware/kernels/mlp_kernel.h"
#include "firmware/kernels/pipeline.h"
#include "tests/kernels/program_sim.h"
#include "firmware/kernels/transformer_kernel.h"
#include "tests/kernels/program_sim.h"
#include "tests/kernels/device/kernel_device.h"
#include "tests/support/test_seed.h"

namespace trnsim::kernels {
namespace {

using golden::Patterns;
using isa::DataType;

/// The process's device (tiny, TLM datapath) with the hazard and uninitialised-read checkers on.
driver::Device& checked_device() { return test::kernel_device({"tiny", /*checks=*/true}); }

class CompositeOnModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = &checked_device();
    dev_->write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
    drv_ = std::make_unique<driver::Driver>(*dev_);
    rng_.seed(test::test_seed());
  }

  /// Random values N(mean, sigma^2) as patterns of `t`.
  Patterns random(size_t n, DataType t, float sigma = 1.0f, float mean = 0.0f) {
    std::normal_distribution<float> dist(mean, sigma);
    Patterns v(n);
    for (auto& x : v) {
      const float f = dist(rng_);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      x = golden::element_from_f32(t, b, true);
    }
    return v;
  }

  /// Allocates `v.size()` elements of `t` in HBM and writes `v` (Driver::write_tensor).
  uint64_t put(const Patterns& v, DataType t) {
    const uint64_t a = drv_->alloc(v.size() * isa::data_type_bytes(t));
    drv_->write_tensor(a, v, t);
    return a;
  }
  uint64_t scratch(size_t n, DataType t) { return drv_->alloc(n * isa::data_type_bytes(t)); }

  Patterns get(uint64_t a, size_t n, DataType t) { return drv_->read_tensor(a, n, t); }

  /// Drives cores 0 .. n-1 of the chip (each a Driver over a CoreDevice with its own HBM region); drv_ becomes
  /// core 0's, so put() and scratch() allocate from its region.
  void use_cores(uint32_t n) {
    const auto regions = driver::chip_regions(drv_->info().hbm_bytes, n);
    views_.clear();
    cores_.clear();
    for (uint32_t c = 0; c < n; ++c) {
      views_.push_back(std::make_unique<driver::CoreDevice>(*dev_, c));
      cores_.push_back(std::make_unique<driver::Driver>(*views_.back(), regions[c]));
    }
    drv_ = std::move(cores_.front());
  }

  SequenceRun run(const KernelSequence& seq) {
    for (const KernelStep& step : seq) {
      const test::ProgramCheck c = test::check_program(drv_->info(), step.program);
      EXPECT_TRUE(c.ok()) << step.name << ":\n" << c.summary();
    }
    std::vector<driver::Driver*> cores{drv_.get()};
    for (size_t c = 1; c < cores_.size(); ++c) cores.push_back(cores_[c].get());
    const SequenceRun r = run_sequence(cores, seq, 50'000'000);
    std::cout << fmt::format("[ model    ] {} programs, {} cycles\n", r.steps.size(), r.cycles);
    return r;
  }

  static void expect_same(const char* what, const Patterns& got, const Patterns& want) {
    ASSERT_EQ(got.size(), want.size()) << what;
    int shown = 0;
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] == want[i]) continue;
      if (shown++ < 4) ADD_FAILURE() << fmt::format("{}[{}] = {:#010x}, golden {:#010x}", what, i, got[i], want[i]);
      ++bad;
    }
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
  }

  int te_rows() const { return int(drv_->info().te_rows); }
  driver::Device* dev_ = nullptr;
  std::unique_ptr<driver::Driver> drv_;
  std::vector<std::unique_ptr<driver::CoreDevice>> views_;  ///< after use_cores
  std::vector<std::unique_ptr<driver::Driver>> cores_;      ///< after use_cores: [0] moved to drv_, then 1 .. n-1
  std::mt19937_64 rng_;
};

TEST_F(CompositeOnModel, RowBiasGeluAndColumnBiasResidualOnRaggedTiles) {
  // 37 rows = 2 full tiles of 16 partitions + 5; 4100 columns > one 4096-column chunk (and split for overlap);
  // 147 and 230 rows: several full 16-row blocks per tile (3-D copies, one instruction per block) + a ragged block.
  for (const auto& [rows, cols] :
       {std::pair{37, 19}, std::pair{5, 4100}, std::pair{147, 19}, std::pair{230, 130}}) {
    const Patterns in = random(size_t(rows) * cols, DataType::kFp32, 2.0f);
    const Patterns row_bias = random(size_t(rows), DataType::kFp32);
    const Patterns col_bias = random(size_t(cols), DataType::kFp32);
    const Patterns res = random(size_t(rows) * cols, DataType::kFp32);
    RowBiasActLayout a;
    a.rows = rows, a.cols = cols, a.func = isa::ActFunc::kGeluTanh, a.out_type = DataType::kBf16;
    a.in_hbm = put(in, DataType::kFp32);
    a.bias_hbm = put(row_bias, DataType::kFp32);
    a.out_hbm = scratch(in.size(), DataType::kBf16);
    ColBiasAddLayout c;
    c.rows = rows, c.cols = cols, c.residual = true, c.out_type = DataType::kFp32;
    c.in_hbm = a.in_hbm;
    c.bias_hbm = put(col_bias, DataType::kFp32);
    c.residual_hbm = put(res, DataType::kFp32);
    c.out_hbm = scratch(in.size(), DataType::kFp32);
    ColBiasAddLayout plain = c;
    plain.residual = false;
    plain.out_type = DataType::kFp16;
    plain.out_hbm = scratch(in.size(), DataType::kFp16);
    run({{"bias+gelu", make_row_bias_activation_program(drv_->info(), a), 0},
         {"bias+residual", make_col_bias_add_program(drv_->info(), c), 0},
         {"bias", make_col_bias_add_program(drv_->info(), plain), 0}});
    expect_same("gelu", get(a.out_hbm, in.size(), DataType::kBf16),
                golden::row_bias_activation(rows, cols, in, row_bias, isa::ActFunc::kGeluTanh, DataType::kBf16));
    expect_same("residual", get(c.out_hbm, in.size(), DataType::kFp32),
                golden::col_bias_add(rows, cols, in, col_bias, &res, DataType::kFp32));
    expect_same("bias", get(plain.out_hbm, in.size(), DataType::kFp16),
                golden::col_bias_add(rows, cols, in, col_bias, nullptr, DataType::kFp16));
  }
}

/// A [K, M] x [K, N] BF16 GEMM with each epilogue (GemmEpilogue), split over `cores` (split_gemm): the row epilogue
/// (bias + GELU, BF16), the column epilogue with a residual (FP32) and without (FP16) must give the golden GEMM
/// followed by the golden element-wise step, bit for bit.
class GemmEpilogueOnModel : public CompositeOnModel {
 protected:
  void check(int K, int M, int N, int cores) {
    if (cores > 1) use_cores(uint32_t(cores));
    const Patterns st = random(size_t(K) * M, DataType::kBf16), mv = random(size_t(K) * N, DataType::kBf16);
    const Patterns row_bias = random(size_t(M), DataType::kFp32), col_bias = random(size_t(N), DataType::kFp32);
    const Patterns res = random(size_t(M) * N, DataType::kFp32);
    const uint64_t s_hbm = put(st, DataType::kBf16), m_hbm = put(mv, DataType::kBf16);
    GemmEpilogue gelu;
    gelu.kind = GemmEpilogue::Kind::kRowBiasAct, gelu.func = isa::ActFunc::kGeluTanh;
    gelu.bias_hbm = put(row_bias, DataType::kFp32);
    GemmEpilogue add;
    add.kind = GemmEpilogue::Kind::kColBiasAdd, add.residual = true;
    add.bias_hbm = put(col_bias, DataType::kFp32);
    add.residual_hbm = put(res, DataType::kFp32);
    GemmEpilogue plain = add;
    plain.residual = false;
    const size_t mn = size_t(M) * N;
    const uint64_t g_out = scratch(mn, DataType::kBf16), r_out = scratch(mn, DataType::kFp32);
    const uint64_t p_out = scratch(mn, DataType::kFp16);
    const driver::DeviceInfo& info = drv_->info();
    KernelSequence seq = gemm_steps(info, "gelu", K, M, N, s_hbm, m_hbm, g_out, cores, DataType::kBf16, gelu);
    append(&seq, gemm_steps(info, "residual", K, M, N, s_hbm, m_hbm, r_out, cores, DataType::kFp32, add));
    append(&seq, gemm_steps(info, "bias", K, M, N, s_hbm, m_hbm, p_out, cores, DataType::kFp16, plain));
    const SequenceRun r = run(seq);
    EXPECT_EQ(r.macs, 3ull * K * M * N);
    if (cores > 1) {
      EXPECT_TRUE(std::any_of(r.steps.begin(), r.steps.end(), [](const StepRun& st) { return st.core == 1; }));
    }
    const Patterns sums = golden::gemm_bf16(K, M, N, st, mv, te_rows());
    expect_same("gelu", get(g_out, mn, DataType::kBf16),
                golden::row_bias_activation(M, N, sums, row_bias, isa::ActFunc::kGeluTanh, DataType::kBf16));
    expect_same("residual", get(r_out, mn, DataType::kFp32),
                golden::col_bias_add(M, N, sums, col_bias, &res, DataType::kFp32));
    expect_same("bias", get(p_out, mn, DataType::kFp16),
                golden::col_bias_add(M, N, sums, col_bias, nullptr, DataType::kFp16));
  }
};

TEST_F(GemmEpilogueOnModel, RaggedShapeOverSeveralBanksAndMTiles) {
  // K 40 (3 K tiles of 16), M 37 (3 M tiles, the last of 5 rows), N 1100 (3 PSUM banks of 512 FP32, the last ragged)
  check(40, 37, 1100, 1);
}

TEST_F(GemmEpilogueOnModel, ManyBlocksCarryTheirStoresInLaterLoadWaves) {
  // 12 M tiles of one bank each: more blocks than PSUM buffers, so epilogue slots are reused and stores ride in
  // later load waves (and the last ones after the last wave).
  check(70, 190, 300, 1);
}

TEST_F(GemmEpilogueOnModel, SplitOverTwoCoresTheBiasAndResidualFollowEachCoresRows) { check(20, 45, 33, 2); }

/// A GEMM whose operands earlier programs left in SBUF (sbuf_operand_copies: one DMA program per core, the wave's two
/// steps on cores 0 and 1), split over the two cores (gemm_steps: by the operand not in SBUF, by M when both are):
/// the golden bits, and no step loads a resident operand from HBM. The parameter: which operands are resident.
enum class Resident { kStationary, kMoving, kBoth };
class ResidentOperandOnModel : public CompositeOnModel, public ::testing::WithParamInterface<Resident> {};

TEST_P(ResidentOperandOnModel, SplitOverTwoCoresMatchesGolden) {
  use_cores(2);
  const driver::DeviceInfo& info = drv_->info();
  // K 40: tiny's K tiles of 16, 16 and a ragged 8; M 37 (3 M tiles: 32 + 5 rows over the cores); N 1100 (3 PSUM
  // banks of 512 FP32, the last ragged; 576 + 524 columns over the cores when split by N).
  const int K = 40, M = 37, N = 1100;
  const bool moving = GetParam() != Resident::kStationary, stationary = GetParam() != Resident::kMoving;
  const Patterns st = random(size_t(K) * M, DataType::kBf16), mv = random(size_t(K) * N, DataType::kBf16);
  const uint64_t s_hbm = put(st, DataType::kBf16), m_hbm = put(mv, DataType::kBf16);
  const uint64_t out = scratch(size_t(M) * N, DataType::kFp32);
  const uint32_t m_tile = sbuf_operand_tile_bytes(isa::Dtype::kBf16, N);
  const uint32_t s_tile = sbuf_operand_tile_bytes(isa::Dtype::kBf16, M);
  // 3 K tiles of each at the top of the partitions: the moving's, then the stationary's.
  const uint32_t m_at = uint32_t((info.sbuf_partition_bytes - 3 * m_tile - 3 * s_tile) / 64 * 64);
  const uint32_t s_at = m_at + 3 * m_tile;
  std::vector<isa::CopyFields> load;
  if (moving) load = sbuf_operand_copies(info, isa::Dtype::kBf16, m_hbm, K, N, m_at, m_tile);
  if (stationary) {
    const std::vector<isa::CopyFields> s = sbuf_operand_copies(info, isa::Dtype::kBf16, s_hbm, K, M, s_at, s_tile);
    load.insert(load.end(), s.begin(), s.end());
  }
  ASSERT_EQ(load.size(), GetParam() == Resident::kBoth ? 4u : 2u) << "per operand: the whole K tiles, the ragged last";
  KernelSequence seq{{"load", dma_program(info, load), 0}, {"load", dma_program(info, load), 0, true}};
  GemmLayout g = bf16_gemm(K, M, N, s_hbm, m_hbm, out);
  g.sbuf_limit = m_at;
  g.moving_in_sbuf = moving, g.moving_sbuf = m_at, g.moving_sbuf_tile_bytes = m_tile;
  g.stationary_in_sbuf = stationary, g.stationary_sbuf = s_at, g.stationary_sbuf_tile_bytes = s_tile;
  const KernelSequence gemm = gemm_steps(info, "gemm", g, 2);
  ASSERT_EQ(gemm.size(), 2u);
  if (moving) {  // the first core's piece takes blocks narrower than all of N, so the golden check covers them
    const GemmPlan p = plan_gemm(info, split_gemm_grid(g, 32, N).front().layout);
    EXPECT_GT(p.n_groups, 1);
  }
  for (const KernelStep& step : gemm) {
    if (moving) {
      EXPECT_EQ(test::hbm_bytes_read(step.program, m_hbm, m_hbm + uint64_t(K) * N * 2), 0u);
    }
    if (stationary) {
      EXPECT_EQ(test::hbm_bytes_read(step.program, s_hbm, s_hbm + uint64_t(K) * M * 2), 0u);
    }
  }
  append(&seq, gemm);
  const SequenceRun r = run(seq);
  EXPECT_EQ(r.macs, uint64_t(K) * M * N);
  EXPECT_GT(r.core_macs[1], 0u);
  expect_same("out", get(out, size_t(M) * N, DataType::kFp32), golden::gemm_bf16(K, M, N, st, mv, te_rows()));
}

INSTANTIATE_TEST_SUITE_P(Operand, ResidentOperandOnModel,
                         ::testing::Values(Resident::kStationary, Resident::kMoving, Resident::kBoth),
                         [](const ::testing::TestParamInfo<Resident>& i) {
                           return i.param == Resident::kStationary ? "stationary"
                                  : i.param == Resident::kMoving   ? "moving"
                                                                    : "both";
                         });

TEST_F(GemmEpilogueOnModel, OneMTileSplitsByNOverTwoCores) {
  // M 12 is one TE-column tile: the two cores take columns [0, 352) and [352, 700) (moving_ld, out_ld; 280 KB of
  // moving, enough to cut in two), and the column epilogue's bias and residual follow the columns.
  check(200, 12, 700, 2);
}

TEST_F(CompositeOnModel, SoftmaxEpilogueIsTheGemmThenTheSoftmaxSpecialValuesIncluded) {
  // Scores [M 45, N 700] (3 M tiles, 2 PSUM banks) over 2 cores (by M: each piece's rows keep their causal offset),
  // causal from offset 3 and not; a few Inf and NaN operands make whole rows and columns of the scores special.
  use_cores(2);
  const int K = 24, M = 45, N = 700;
  Patterns st = random(size_t(K) * M, DataType::kBf16), mv = random(size_t(K) * N, DataType::kBf16);
  st[5] = 0x7F80;              // +Inf in stationary column 5: row 5 of the scores Inf or NaN
  mv[size_t(3) * N + 40] = 0x7FC0;  // NaN in moving column 40: column 40 NaN (masked in the rows before 37 - 3)
  mv[size_t(7) * N + 650] = 0xFF80;  // -Inf in column 650
  const uint64_t s_hbm = put(st, DataType::kBf16), m_hbm = put(mv, DataType::kBf16);
  const Patterns scores = golden::gemm_bf16(K, M, N, st, mv, te_rows());
  for (const bool causal : {true, false}) {
    GemmEpilogue sm;
    sm.kind = GemmEpilogue::Kind::kSoftmax, sm.scale = 0.125f, sm.causal = causal, sm.causal_offset = 3;
    const uint64_t out = scratch(size_t(M) * N, DataType::kBf16);
    const SequenceRun r =
        run(gemm_steps(drv_->info(), "softmax", K, M, N, s_hbm, m_hbm, out, 2, DataType::kBf16, sm));
    EXPECT_EQ(r.steps.size(), 2u);
    golden::SoftmaxSpec spec{M, N, 0.125f, causal, 3, DataType::kFp32, DataType::kBf16};
    expect_same(causal ? "causal" : "full", get(out, size_t(M) * N, DataType::kBf16),
                golden::softmax_rows(spec, scores));
  }
}

TEST_F(CompositeOnModel, SoftmaxEpilogueMasksTheDiagonalWindowBankByBank) {
  // One M tile of 16 rows, N 700 (2 PSUM banks), causal from offset 500: the diagonal window [501, 516) crosses the
  // banks' boundary at column 512, so the row maxima, which go bank by bank, mask its columns in both banks. Column
  // 513 of the scores is +Inf in every row (stationary row 1 all 1.0, moving [1, 513] +Inf): rows 0..12, which do
  // not see it, must not take it into their maxima or sums.
  const int K = 24, M = 16, N = 700;
  Patterns st = random(size_t(K) * M, DataType::kBf16), mv = random(size_t(K) * N, DataType::kBf16);
  for (int m = 0; m < M; ++m) st[size_t(M) + size_t(m)] = 0x3F80;  // 1.0
  mv[size_t(N) + 513] = 0x7F80;
  const uint64_t s_hbm = put(st, DataType::kBf16), m_hbm = put(mv, DataType::kBf16);
  GemmEpilogue sm;
  sm.kind = GemmEpilogue::Kind::kSoftmax, sm.scale = 0.125f, sm.causal = true, sm.causal_offset = 500;
  const uint64_t out = scratch(size_t(M) * N, DataType::kBf16);
  run(gemm_steps(drv_->info(), "softmax", K, M, N, s_hbm, m_hbm, out, 1, DataType::kBf16, sm));
  golden::SoftmaxSpec spec{M, N, 0.125f, true, 500, DataType::kFp32, DataType::kBf16};
  expect_same("causal from 500", get(out, size_t(M) * N, DataType::kBf16),
              golden::softmax_rows(spec, golden::gemm_bf16(K, M, N, st, mv, te_rows())));
}

TEST_F(CompositeOnModel, TransposePvRefusesWhatItCannotHold) {
  const driver::DeviceInfo& info = drv_->info();
  TransposePvLayout ok;
  ok.keys = ok.queries = 40, ok.head_dim = 16, ok.p_ld = ok.out_ld = 40;
  ok.p_hbm = 0x1000, ok.v_hbm = 0x10000, ok.out_hbm = 0x20000;
  EXPECT_NO_THROW(make_transpose_pv_program(info, ok));
  for (auto bad : {+[](TransposePvLayout& t) { t.head_dim = 17; },   // more than the TE's 16 columns
                   +[](TransposePvLayout& t) { t.queries = t.out_ld = 2049; },  // more than half of PSUM holds
                   +[](TransposePvLayout& t) { t.p_ld = 39; },       // P's rows narrower than the keys
                   +[](TransposePvLayout& t) { t.keys = 0; }}) {
    TransposePvLayout l = ok;
    bad(l);
    EXPECT_THROW(make_transpose_pv_program(info, l), std::invalid_argument);
  }
}

// The attention piece program refuses a layout it cannot build, naming the field (the tiny device: 16-row tiles,
// 16 TE columns, 8 PSUM banks of 512 FP32).
TEST_F(CompositeOnModel, AttentionPieceRefusesWhatItCannotHold) {
  const driver::DeviceInfo& info = drv_->info();
  AttentionPieceLayout ok;
  ok.seq = 40, ok.head_dim = 16, ok.query0 = 16, ok.queries = 16, ok.causal = true, ok.scale = 0.25f;
  ok.qT_hbm = 0x1000, ok.kT_hbm = 0x2000, ok.v_hbm = 0x10000, ok.outT_hbm = 0x20000;
  EXPECT_NO_THROW(make_attention_piece_program(info, ok));
  const auto reason = [&](AttentionPieceLayout l) {
    try {
      make_attention_piece_program(info, l);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  AttentionPieceLayout l = ok;
  l.query0 = 8;  // not a whole query tile
  EXPECT_NE(reason(l).find("query0 8 must be a multiple of 16"), std::string::npos) << reason(l);
  l = ok;
  l.queries = 12;  // a ragged piece that does not end at seq
  EXPECT_NE(reason(l).find("queries a multiple of 16 unless the piece ends at seq"), std::string::npos) << reason(l);
  l = ok;
  l.query0 = 32, l.queries = 16;  // past seq
  EXPECT_NE(reason(l).find("query0 + queries 48 <= seq 40"), std::string::npos) << reason(l);
  l = ok;
  l.head_dim = 17;  // more than the TE's 16 columns
  EXPECT_NE(reason(l).find("16 queries of head_dim 17 over 40 keys do not fit the device"), std::string::npos)
      << reason(l);
  l = ok;
  l.seq = 4096, l.query0 = 0, l.queries = 16;  // a row of keys beyond one block of scores
  EXPECT_NE(reason(l).find("do not fit the device"), std::string::npos) << reason(l);
  l = ok;
  l.queries = 0;
  EXPECT_NE(reason(l).find("must be >= 1"), std::string::npos) << reason(l);
  // 256 keys, 64 queries: PSUM 1 bank of accumulator, 2 of scores (two blocks of 256 columns), 5 of slots.
  EXPECT_TRUE(attention_piece_fits(info, 256, 64, 16));
  // 2048 keys and queries: 4 banks of accumulator and 4 of scores leave none for the slots.
  EXPECT_FALSE(attention_piece_fits(info, 2048, 2048, 16));
}

/// A Vector-only program of `n` memsets of one partition's 1,000 FP32 at SBUF byte `offset`: each costs 1 + 2,500 TE
/// cycles (docs/isa.md "Costs": max(64, 1000) Vector cycles at 0.96 GHz, x 2.5).
isa::Program memsets(int n, uint32_t offset = 0) {
  isa::Program p;
  for (int i = 0; i < n; ++i) p.queue(isa::Engine::kVec).push_back(memset_op(1, 1000, operand(offset), 0.0f));
  p.queue(isa::Engine::kVec).push_back(isa::Instruction::halt());
  return p;
}

/// The steps of `r` as (name, core), in the order they ended.
std::vector<std::pair<std::string, int>> ended(const SequenceRun& r) {
  std::vector<std::pair<std::string, int>> v;
  for (const StepRun& st : r.steps) v.emplace_back(st.name, st.core);
  return v;
}
using Ended = std::vector<std::pair<std::string, int>>;

TEST_F(CompositeOnModel, AWaveRunsAsAWorkListOverTheCores) {
  use_cores(2);
  // Core 0 takes the long step, core 1 the short one and, in the cycle that one ends, the third: the wave lasts as
  // long as the long step (in rounds of two it lasted the long step plus the third).
  const uint64_t before = drv_->read_counters().uptime;
  const SequenceRun r = run({{"long", memsets(8), 0}, {"short", memsets(1), 0, true}, {"third", memsets(2), 0, true}});
  const uint64_t took = drv_->read_counters().uptime - before;  // the device's own clock
  ASSERT_EQ(ended(r), (Ended{{"short", 1}, {"third", 1}, {"long", 0}}));
  const uint64_t lng = r.steps[2].run.cycles, s1 = r.steps[0].run.cycles, s3 = r.steps[1].run.cycles;
  EXPECT_GE(lng, 8u * 2501u);
  EXPECT_LT(lng, 8u * 2501u + 100u);
  EXPECT_GE(s3, 2u * 2501u);
  EXPECT_LT(s1 + s3, lng);
  EXPECT_EQ(r.cycles, lng);
  EXPECT_EQ(r.steps[0].elapsed, s1);
  EXPECT_EQ(r.steps[1].elapsed, s3);
  EXPECT_EQ(r.steps[2].elapsed, lng - s1 - s3);
  EXPECT_EQ(r.core_runs[1].cycles, s1 + s3);
  // The device agrees: the third step ran while the long one did.
  EXPECT_GE(took, lng);
  EXPECT_LT(took, lng + 64) << "the wave took " << took << " cycles of the device's clock, the long step " << lng;
}

TEST_F(CompositeOnModel, APinnedStepWaitsForItsCore) {
  use_cores(2);
  // The same wave with "third" pinned to core 0 (KernelStep::core): core 1 ends "short" and finds nothing it may
  // take; core 0 runs "third" after "long", and the wave lasts both.
  const SequenceRun r =
      run({{"long", memsets(8), 0}, {"short", memsets(1), 0, true}, {"third", memsets(2), 0, true, 0}});
  ASSERT_EQ(ended(r), (Ended{{"short", 1}, {"long", 0}, {"third", 0}}));
  EXPECT_EQ(r.cycles, r.steps[1].run.cycles + r.steps[2].run.cycles);
  // Each core takes the first step it may run: "a" is core 0's, so core 1 takes "b", then its own "c".
  const SequenceRun p = run({{"a", memsets(4), 0, false, 0}, {"b", memsets(1), 0, true}, {"c", memsets(1), 0, true, 1}});
  ASSERT_EQ(ended(p), (Ended{{"b", 1}, {"c", 1}, {"a", 0}}));
  EXPECT_EQ(p.steps[2].index, 0u);
  EXPECT_EQ(p.steps[0].index, 1u);
  // A core the run does not have.
  const std::vector<driver::Driver*> cores{drv_.get(), cores_[1].get()};
  std::string why;
  try {
    run_sequence(cores, {{"x", memsets(1), 0, false, 2}}, 50'000'000);
  } catch (const std::invalid_argument& e) {
    why = e.what();
  }
  EXPECT_EQ(why, "run_sequence: step 0 (x) is pinned to core 2 of a run on 2 cores");
}

TEST_F(CompositeOnModel, AFaultInAWaveNamesItsStepWhileTheOtherCoreRunsOn) {
  use_cores(2);
  const std::vector<driver::Driver*> cores{drv_.get(), cores_[1].get()};
  // The second step's memset runs past the end of the SBUF partition: SBUF_RANGE on core 1.
  const auto past_end = uint32_t(drv_->info().sbuf_partition_bytes - 64);
  const KernelSequence seq{{"long", memsets(8), 0}, {"bad", memsets(1, past_end), 0, true}};
  std::size_t failed = 99;
  try {
    run_sequence(cores, seq, 50'000'000, {}, &failed);
    ADD_FAILURE() << "no DeviceFault";
  } catch (const driver::DeviceFault& e) {
    EXPECT_EQ(e.core(), 1u) << e.what();
    EXPECT_EQ(failed, 1u);
  }
  // Core 0's step runs on to its end.
  const driver::RunResult rest = drv_->wait(50'000'000);
  EXPECT_EQ(rest.retired[size_t(isa::Engine::kVec)], 9u);
  EXPECT_GE(rest.cycles, 8u * 2501u);
}

TEST_F(CompositeOnModel, AStepPastItsTimeoutInAWaveIsReported) {
  use_cores(2);
  const std::vector<driver::Driver*> cores{drv_.get(), cores_[1].get()};
  const KernelSequence seq{{"a", memsets(8), 0}, {"b", memsets(8), 0, true}};
  std::size_t failed = 99;
  try {
    run_sequence(cores, seq, 1000, {}, &failed);
    ADD_FAILURE() << "no DriverTimeout";
  } catch (const driver::DriverTimeout& e) {
    EXPECT_EQ(e.waited_cycles(), 1000u) << e.what();
    EXPECT_GE(e.device_cycles(), 1000u) << e.what();
    EXPECT_LT(e.device_cycles(), 1100u) << e.what();
    EXPECT_EQ(failed, 0u) << "both started together: the lower core's step is reported";
  }
  for (driver::Driver* d : cores) EXPECT_EQ(d->wait(50'000'000).retired[size_t(isa::Engine::kVec)], 9u);
}

TEST_F(CompositeOnModel, MlpOnShapesOffTheTiles) {
  // tokens 21, d_model 40, d_ff 70: none a multiple of the 16 TE rows/partitions.
  const int T = 21, D = 40, F = 70;
  const Patterns xT = random(size_t(D) * T, DataType::kBf16);
  const golden::MlpParams p{random(size_t(D) * F, DataType::kBf16, 0.2f), random(F, DataType::kFp32, 0.1f),
                            random(size_t(F) * D, DataType::kBf16, 0.2f), random(D, DataType::kFp32, 0.1f)};
  const Patterns res = random(size_t(T) * D, DataType::kFp32);
  MlpLayout l;
  l.tokens = T, l.d_model = D, l.d_ff = F, l.residual = true;
  l.xT_hbm = put(xT, DataType::kBf16);
  l.w1_hbm = put(p.w1, DataType::kBf16);
  l.b1_hbm = put(p.b1, DataType::kFp32);
  l.w2_hbm = put(p.w2, DataType::kBf16);
  l.b2_hbm = put(p.b2, DataType::kFp32);
  l.residual_hbm = put(res, DataType::kFp32);
  l.gT_hbm = scratch(size_t(F) * T, DataType::kBf16);
  l.out_hbm = scratch(size_t(T) * D, DataType::kFp32);
  l.rows_programs = false;  // the two GEMM steps, g^T through HBM
  const KernelSequence steps = make_mlp_programs(drv_->info(), l);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].name, "mlp up gemm+gelu");
  const SequenceRun r = run(steps);
  EXPECT_EQ(r.macs, 2ull * T * D * F);
  const golden::MlpResult want = golden::mlp(T, D, F, xT, p, &res, te_rows());
  expect_same("gT", get(l.gT_hbm, want.gT.size(), DataType::kBf16), want.gT);
  expect_same("out", get(l.out_hbm, want.out.size(), DataType::kFp32), want.out);

  // The rows programs on the same shape: tokens [0, 16) and [16, 21) each through both GEMMs in one program, g^T
  // kept in SBUF (gT_hbm is not touched: it keeps a marker), the same bits of out.
  const Patterns marker(size_t(F) * T, 0x7fc0u);
  l.gT_hbm = put(marker, DataType::kBf16);
  l.out_hbm = scratch(size_t(T) * D, DataType::kFp32);
  KernelSequence rows;
  for (const auto& [t0, n] : {std::pair{0, 16}, std::pair{16, 5}}) {
    rows.push_back({"mlp rows", make_mlp_rows_program(drv_->info(), l, t0, n), 2ull * n * D * F, !rows.empty()});
  }
  run(rows);
  expect_same("out (rows)", get(l.out_hbm, want.out.size(), DataType::kFp32), want.out);
  expect_same("gT untouched", get(l.gT_hbm, marker.size(), DataType::kBf16), marker);
  // Tokens outside the MLP's are an error naming them.
  try {
    make_mlp_rows_program(drv_->info(), l, 16, 6);
    ADD_FAILURE() << "no error for tokens [16, 22) of 21";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tokens [16, 22) are not within the 21 tokens"), std::string::npos)
        << e.what();
  }
}

struct AttnCase {
  int seq, heads, head_dim;
  bool causal, te_transpose;
  bool fused = false;  ///< the softmax in the scores GEMMs' drains (the scores never reach HBM)
  int cores = 1;       ///< split over this many cores (heads' pieces by queries)
  int inf_key = -1;    ///< >= 0: V's row of this key is +Inf in its first element
  bool pieces = false; ///< every step of a head in one program per piece, P kept in SBUF (never in HBM)
};

class AttentionOnModel : public CompositeOnModel, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(AttentionOnModel, MatchesGoldenBitForBit) {
  const AttnCase c = GetParam();
  const int T = c.seq, H = c.heads, d = c.head_dim;
  if (c.cores > 1) use_cores(uint32_t(c.cores));
  const Patterns qT = random(size_t(H) * d * T, DataType::kBf16);
  const Patterns kT = random(size_t(H) * d * T, DataType::kBf16);
  Patterns v = random(size_t(H) * T * d, DataType::kBf16);
  if (c.inf_key >= 0) v[size_t(c.inf_key) * d] = 0x7F80;  // +Inf: 0 x Inf is NaN where the key is masked too
  AttentionLayout l;
  l.seq = T, l.heads = H, l.head_dim = d, l.causal = c.causal, l.te_transpose = c.te_transpose;
  l.fused_softmax = c.fused;
  l.fused_pieces = c.pieces;
  l.cores = c.cores;
  l.qT_hbm = put(qT, DataType::kBf16);
  l.kT_hbm = put(kT, DataType::kBf16);
  l.v_hbm = put(v, DataType::kBf16);
  const size_t tt = size_t(H) * T * T;
  l.scores_hbm = scratch(tt, DataType::kFp32);
  l.probs_hbm = scratch(tt, DataType::kBf16);
  l.probsT_hbm = scratch(tt, DataType::kBf16);
  l.outT_hbm = scratch(size_t(H) * d * T, DataType::kFp32);
  const SequenceRun r = run(make_attention_programs(drv_->info(), l));
  const auto has_step = [&](const std::string& name) {
    return std::any_of(r.steps.begin(), r.steps.end(), [&](const StepRun& st) { return st.name == name; });
  };
  if (c.pieces) {  // a head's every step in one program per piece of queries: P stays in SBUF
    EXPECT_TRUE(has_step("head 0 attention"));
    EXPECT_FALSE(has_step("head 0 scores+softmax"));
    EXPECT_EQ(r.steps.size(), size_t(H) * size_t(std::min(c.cores, (T + te_rows() - 1) / te_rows())));
  } else if (c.fused && c.te_transpose) {  // the transpose and PV of a head in one program, P^T kept in SBUF
    EXPECT_TRUE(has_step("head 0 transpose+pv"));
  }
  // The pieces defer the softmax's normalisation to their output: the golden of that order.
  const bool deferred = attention_pieces(drv_->info(), l) > 0;
  EXPECT_EQ(deferred, c.pieces);
  const golden::AttentionResult want =
      golden::attention(T, H, d, c.causal, c.te_transpose, qT, kT, v, te_rows(), deferred);
  if (!c.fused) expect_same("scores", get(l.scores_hbm, tt, DataType::kFp32), want.scores);
  if (!c.pieces) expect_same("probs", get(l.probs_hbm, tt, DataType::kBf16), want.probs);
  const Patterns outT = get(l.outT_hbm, want.outT.size(), DataType::kFp32);
  expect_same("outT", outT, want.outT);
  if (c.inf_key >= 0) {
    // V's Inf at key k reaches feature 0 of every query that multiplies key k's tile in: every query where each
    // key tile is multiplied in (0 x Inf = NaN where masked); in the pieces' order only the queries whose own key
    // tile is at or past k's (golden::attention piece_order), so the queries of earlier tiles stay finite.
    const int tile0 = c.inf_key / te_rows() * te_rows();
    for (int q = 0; q < T; ++q) {
      const bool finite = std::isfinite(golden::float_from_bits(outT[size_t(q)]));
      EXPECT_EQ(finite, c.pieces && q < tile0) << "query " << q;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionOnModel,
                         ::testing::Values(AttnCase{19, 1, 24, false, true}, AttnCase{19, 1, 24, true, false},
                                           AttnCase{33, 3, 10, true, true}, AttnCase{7, 2, 40, false, false},
                                           AttnCase{33, 3, 10, true, true, true},
                                           AttnCase{19, 1, 24, false, false, true},
                                           AttnCase{600, 1, 8, true, true, true},
                                           // Two pieces of queries on two cores: the first piece's last key tiles
                                           // are +0 in every query (not loaded: one +0 P^T tile, still multiplied
                                           // in, so V's Inf at key 70 makes its column NaN there too).
                                           AttnCase{80, 1, 10, true, true, true, 2, 70},
                                           // Every step of a head in one program per piece of queries (P in SBUF):
                                           // causal and not, ragged tiles, several key tiles, two cores with the
                                           // Inf in V at a key masked in the first piece.
                                           AttnCase{33, 3, 10, true, true, true, 1, -1, true},
                                           AttnCase{19, 1, 8, false, true, true, 1, -1, true},
                                           AttnCase{600, 1, 8, true, true, true, 1, -1, true},
                                           AttnCase{80, 1, 10, true, true, true, 2, 70, true}),
                         [](const auto& info) {
                           const AttnCase& c = info.param;
                           return fmt::format("T{}_H{}_d{}_{}_{}{}{}{}{}", c.seq, c.heads, c.head_dim,
                                              c.causal ? "causal" : "full", c.te_transpose ? "te" : "dma",
                                              c.fused ? "_fused" : "", c.pieces ? "_pieces" : "",
                                              c.cores > 1 ? fmt::format("_{}cores", c.cores) : "",
                                              c.inf_key >= 0 ? "_infv" : "");
                         });

/// The block on 1 core and split over 2 (its GEMMs by M, the heads' steps in waves, the row-wise steps by rows),
/// and on 2 with W_o, W2 and W1 resident in SBUF (transformer_residency without its estimate, which tiny's short pieces
/// would not take; a d_ff of 200, where the LayerNorm fuses into the up GEMM instead of the MLP running as rows
/// programs): the same golden bits every way.
struct BlockCase {
  int cores = 1;
  bool resident = false;
  int seq = 18, d_ff = 50;
  /// The query-key pairs the TE multiplies per head, worked out by hand: the scores over the keys up to each
  /// piece's last query and PV over the key tiles up to each query tile's own (tiny's tiles of 16). Each head is one
  /// piece (cut in two, its last query tile of 2 rows would be a piece of its own paying a program's start; the
  /// estimates keep whole heads, attention_pieces). T 18: scores 18 x 18 = 324, PV 16 x 16 + 2 x 18 = 292. T 34:
  /// scores 34 x 34 = 1156, PV 16 x 16 + 16 x 32 + 2 x 34 = 836.
  int pairs = 324 + 292;
};
class TransformerOnCores : public CompositeOnModel, public ::testing::WithParamInterface<BlockCase> {};

TEST_P(TransformerOnCores, BlockOnASmallShapeMatchesGolden) {
  TransformerShape s;
  s.seq = GetParam().seq, s.d_model = 36, s.heads = 3, s.d_ff = GetParam().d_ff;
  s.cores = GetParam().cores;
  use_cores(uint32_t(s.cores));
  const size_t T = s.seq, D = s.d_model, F = s.d_ff;
  golden::TransformerParams p;
  const Patterns x = random(T * D, DataType::kFp32);
  p.ln1_g = random(D, DataType::kFp32, 0.1f, 1.0f);
  p.ln1_b = random(D, DataType::kFp32, 0.1f);
  p.w_qkv = random(D * 3 * D, DataType::kBf16, 0.2f);
  p.b_qkv = random(3 * D, DataType::kFp32, 0.1f);
  p.w_o = random(D * D, DataType::kBf16, 0.2f);
  p.b_o = random(D, DataType::kFp32, 0.1f);
  p.ln2_g = random(D, DataType::kFp32, 0.1f, 1.0f);
  p.ln2_b = random(D, DataType::kFp32, 0.1f);
  p.mlp = {random(D * F, DataType::kBf16, 0.2f), random(F, DataType::kFp32, 0.1f),
           random(F * D, DataType::kBf16, 0.2f), random(D, DataType::kFp32, 0.1f)};
  TransformerInputs in;
  in.x = put(x, DataType::kFp32);
  in.ln1_g = put(p.ln1_g, DataType::kFp32);
  in.ln1_b = put(p.ln1_b, DataType::kFp32);
  in.w_qkv = put(p.w_qkv, DataType::kBf16);
  in.b_qkv = put(p.b_qkv, DataType::kFp32);
  in.w_o = put(p.w_o, DataType::kBf16);
  in.b_o = put(p.b_o, DataType::kFp32);
  in.ln2_g = put(p.ln2_g, DataType::kFp32);
  in.ln2_b = put(p.ln2_b, DataType::kFp32);
  in.w1 = put(p.mlp.w1, DataType::kBf16);
  in.b1 = put(p.mlp.b1, DataType::kFp32);
  in.w2 = put(p.mlp.w2, DataType::kBf16);
  in.b2 = put(p.mlp.b2, DataType::kFp32);
  const uint64_t out = scratch(T * D, DataType::kFp32);
  const TransformerBuffers b = transformer_buffers(s, drv_->alloc(transformer_buffers(s, 0).end));
  TransformerResidency resident;
  if (GetParam().resident) {
    resident = transformer_residency(drv_->info(), s, false);
    ASSERT_TRUE(resident.resident) << "W_o and W2 fit tiny's SBUF beside the block's programs";
  }
  const KernelSequence seq = GetParam().resident ? make_transformer_programs(drv_->info(), s, in, b, out, resident)
                                                 : make_transformer_programs(drv_->info(), s, in, b, out);
  if (GetParam().resident) {
    // Each core's attention pieces (pinned to it) load all of W_o, W2 and W1 between them; the projection and the
    // MLP's GEMMs read none of them from HBM.
    const std::array<std::pair<uint64_t, uint64_t>, 3> w{{{in.w_o, D * D * 2}, {in.w2, F * D * 2}, {in.w1, D * F * 2}}};
    std::vector<std::array<uint64_t, 3>> loaded(size_t(s.cores), std::array<uint64_t, 3>{});
    uint64_t up_w2 = 0;
    int pieces = 0;
    for (const KernelStep& st : seq) {
      const bool piece = st.name.find("attention") != std::string::npos;
      pieces += piece;
      if (piece) {
        ASSERT_TRUE(st.core >= 0 && st.core < s.cores) << st.name << " is not pinned to a core";
      }
      // The projection + ln2 + up GEMM programs may load a share of W2 (k = 1) for the down GEMM on their core.
      const bool up = st.name.rfind("proj+ln2+mlp up", 0) == 0;
      for (size_t k = 0; k < w.size(); ++k) {
        const uint64_t bytes = test::hbm_bytes_read(st.program, w[k].first, w[k].first + w[k].second);
        if (piece || (up && k == 1)) {
          ASSERT_TRUE(st.core >= 0 && st.core < s.cores) << st.name << " is not pinned to a core";
          loaded[size_t(st.core)][k] += bytes;
          up_w2 += up ? bytes : 0;
        } else {
          EXPECT_EQ(bytes, 0u) << st.name << " reads resident weight " << k << " from HBM";
        }
      }
    }
    EXPECT_EQ(pieces, 3) << "3 heads in one piece each";
    // g^T stays on chip: 32 tokens per core (two of tiny's 16-column tiles), the MLP's pieces pinned, nothing
    // written to mlp_gT.
    EXPECT_EQ(resident.g_tokens, 32);
    EXPECT_GT(resident.g, 0u);
    for (const KernelStep& st : seq) {
      if (st.name.rfind("proj+ln2+mlp up", 0) == 0 || st.name.rfind("mlp down", 0) == 0) {
        EXPECT_GE(st.core, 0) << st.name;
      }
      // The projection's program normalises its h1 rows where its drains leave them (make_gemm_ln_gemm_program): it
      // stores h1 and reads none of it back.
      if (st.name.rfind("proj+ln2+mlp up", 0) == 0) {
        EXPECT_EQ(test::hbm_bytes_read(st.program, b.h1, b.h1 + T * D * 4), 0u) << st.name << " reads h1 from HBM";
      }
      for (const auto& queue : st.program.queues) {
        for (const isa::Instruction& ins : queue) {
          const bool to_g = ins.op == isa::Opcode::kDmaCopy && ins.copy.dst_space == isa::MemSpace::kHbm &&
                            ins.copy.dst_addr >= b.mlp_gT && ins.copy.dst_addr < b.mlp_gT + F * T * 2;
          EXPECT_FALSE(to_g) << st.name << " writes g^T to HBM";
        }
      }
    }
    for (int c = 0; c < s.cores; ++c) {
      for (size_t k = 0; k < w.size(); ++k) {
        EXPECT_EQ(loaded[size_t(c)][k], w[k].second) << "core " << c << ", weight " << k;
      }
    }
    std::cout << "[ resident ] the up programs load " << up_w2 << " of W2's " << F * D * 2 * uint64_t(s.cores)
              << " bytes over the cores\n";
  }
  const SequenceRun r = run(seq);
  for (const StepRun& st : r.steps) {  // a pinned step ran on its core
    if (seq[st.index].core >= 0) {
      EXPECT_EQ(st.core, seq[st.index].core) << st.name << " (step " << st.index << ")";
    }
  }
  const TransformerFusion fused = transformer_fusion(drv_->info(), s);
  // On tiny the fused LayerNorms are the shorter (the programs' start costs dominate at this size); one core runs
  // the MLP as one rows program, which keeps ln2 a step of its own.
  EXPECT_TRUE(fused.ln1_qkv);
  EXPECT_EQ(fused.ln2_up, !transformer_mlp_in_rows(drv_->info(), s));
  if (s.cores > 1) {
    // Every split step kind ran on core 1 too (the tiny TE has 16 columns and 16 partitions: 18 tokens are 2 row
    // tiles, 3 x 36 QKV features 7 GEMM tiles, 3 heads).
    std::vector<std::string> kinds{"ln1+qkv gemm+bias", "head 1 attention"};
    if (transformer_mlp_in_rows(drv_->info(), s)) {
      kinds.insert(kinds.end(), {"ln2", "mlp rows gemm+gelu+gemm+bias+residual"});
    } else if (resident.g > 0) {
      kinds.insert(kinds.end(), {"proj+ln2+mlp up", "mlp down gemm+bias+residual"});
    } else {
      kinds.insert(kinds.end(), {"ln2+mlp up gemm+gelu", "mlp down gemm+bias+residual"});
    }
    for (const std::string& kind : kinds) {
      const bool on_core1 = std::any_of(r.steps.begin(), r.steps.end(), [&](const StepRun& st) {
        return st.name == kind && st.core == 1;
      });
      EXPECT_TRUE(on_core1) << kind << " did not run on core 1";
    }
    // The TE's MACs from the shape (d = 12): QKV D x 3D x T; per head d x the pairs (BlockCase::pairs); the
    // projection D x D x T, the MLP 2 x D x F x T.
    const uint64_t d = D / size_t(s.heads);
    const uint64_t macs = D * 3 * D * T + uint64_t(s.heads) * d * uint64_t(GetParam().pairs) + D * D * T + 2 * D * F * T;
    EXPECT_GT(r.core_macs[1], 0u);
    EXPECT_EQ(r.core_macs[0] + r.core_macs[1], macs);
  }
  golden::TransformerSpec gs;
  gs.seq = s.seq, gs.d_model = s.d_model, gs.heads = s.heads, gs.d_ff = s.d_ff;
  gs.piece_order = transformer_attention_in_pieces(drv_->info(), s);
  EXPECT_TRUE(gs.piece_order) << "the block's heads run as attention pieces";
  const golden::TransformerResult want = golden::transformer_block(gs, x, p, te_rows());
  // A LayerNorm writes its output transposed (through the TE), not row-major, and only where it runs alone (fused,
  // it stays in SBUF: the GEMM's output after it is checked).
  if (!fused.ln1_qkv) expect_same("ln1T", get(b.ln1T, D * T, DataType::kBf16), want.ln1T);
  if (!fused.ln2_up) expect_same("ln2T", get(b.ln2T, D * T, DataType::kBf16), want.ln2T);
  expect_same("qkvT", get(b.qkvT, 3 * D * T, DataType::kBf16), want.qkvT);
  // The probabilities stay in SBUF (the attention's pieces): the attention's output is checked instead.
  expect_same("attnT", get(b.attnT, D * T, DataType::kBf16), want.attnT);
  expect_same("h1", get(b.h1, T * D, DataType::kFp32), want.h1);
  expect_same("out", get(out, T * D, DataType::kFp32), want.mlp.out);
}

INSTANTIATE_TEST_SUITE_P(Cores, TransformerOnCores,
                         ::testing::Values(BlockCase{1, false}, BlockCase{2, false},
                                           BlockCase{2, true, 34, 200, 1156 + 836}),
                         [](const ::testing::TestParamInfo<BlockCase>& i) {
                           return std::to_string(i.param.cores) + "core" + (i.param.resident ? "_resident" : "");
                         });

}  // namespace
}  // namespace trnsim::kernels
