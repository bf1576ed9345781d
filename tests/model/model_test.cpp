// The SystemC chip model end to end through the driver: DMA casts, a hand-written TE program, PSUM accumulation,
// the documented cycle cost, and every device error register path. Golden values come from firmware/golden.
#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/kernels/dma_copies.h"
#include "model/core/chip.h"
#include "model/core/neuron_core.h"
#include "model/te/te_compute.h"
#include "tests/model/device_fixture.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {
namespace {

using isa::DataType;
using isa::Instruction;
using isa::MemSpace;
using isa::Opcode;

Instruction copy(Opcode op, MemSpace ss, uint64_t sa, DataType st, MemSpace ds, uint64_t da, DataType dt,
                 std::array<uint16_t, 4> count, std::array<int32_t, 4> sstride, std::array<int32_t, 4> dstride) {
  Instruction i;
  i.op = op;
  i.copy.src_space = ss;
  i.copy.src_addr = sa;
  i.copy.src_type = st;
  i.copy.dst_space = ds;
  i.copy.dst_addr = da;
  i.copy.dst_type = dt;
  i.copy.count = count;
  i.copy.src_stride = sstride;
  i.copy.dst_stride = dstride;
  return i;
}

Instruction sem(Opcode op, int s, uint32_t v) {
  Instruction i;
  i.op = op;
  i.sem.sem = uint8_t(s);
  i.sem.value = v;
  return i;
}

Instruction te(Opcode op, isa::Dtype dt, uint64_t sbuf, uint64_t psum, int k, int free, bool acc = false) {
  Instruction i;
  i.op = op;
  i.te.dtype = dt;
  i.te.sbuf_addr = sbuf;
  i.te.psum_addr = psum;
  i.te.k = uint16_t(k);
  i.te.free_size = uint16_t(free);
  i.te.accumulate = acc;
  return i;
}

std::vector<uint16_t> random_narrow(isa::Dtype dt, size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    const float f = dist(rng);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    x = golden::narrow_from_f32(dt, b, true);
  }
  return v;
}

std::vector<uint8_t> to_bytes(const std::vector<uint16_t>& v, isa::Dtype dt) {
  const unsigned es = isa::dtype_bits(dt) / 8;
  std::vector<uint8_t> out(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) {
    out[i * es] = uint8_t(v[i]);
    if (es == 2) out[i * es + 1] = uint8_t(v[i] >> 8);
  }
  return out;
}

using ModelTest = DeviceTest;

TEST_F(ModelTest, DmaCastsThroughSbufAndBackWithOneRoundingEach) {
  const uint32_t pbytes = drv_->info().sbuf_partition_bytes;
  const int rows = 5, cols = 37;
  std::mt19937_64 rng(test_seed(11));
  std::vector<uint32_t> x(size_t(rows) * cols);
  for (auto& v : x) v = uint32_t(rng());
  x[0] = 0x3F828000u;  // BF16 tie that rounds to even (0x3F82)
  x[1] = 0x7F800001u;  // signalling NaN stays NaN
  x[2] = 0x80000000u;  // -0
  const uint64_t src = drv_->alloc(x.size() * 4), dst = drv_->alloc(x.size() * 2);
  drv_->write_hbm(src, x.data(), x.size() * 4);

  isa::Program p;
  auto& dma = p.queues[size_t(isa::Engine::kDma)];
  // HBM fp32 [5, 37] -> SBUF bf16, one row per partition, at byte offset 6 of partitions 2..6.
  dma.push_back(copy(Opcode::kDmaCopy, MemSpace::kHbm, src, DataType::kFp32, MemSpace::kSbuf, 2ull * pbytes + 6,
                     DataType::kBf16, {cols, rows, 1, 1}, {4, cols * 4, 0, 0}, {2, int32_t(pbytes), 0, 0}));
  dma.push_back(sem(Opcode::kSemSignal, 0, 1));  // a fence: waits for the copy above
  // SBUF bf16 -> HBM fp16 (widen exactly, then one RNE rounding).
  dma.push_back(copy(Opcode::kDmaCopy, MemSpace::kSbuf, 2ull * pbytes + 6, DataType::kBf16, MemSpace::kHbm, dst,
                     DataType::kFp16, {cols, rows, 1, 1}, {2, int32_t(pbytes), 0, 0}, {2, cols * 2, 0, 0}));
  dma.push_back(Instruction::halt());
  drv_->load_program(p);
  drv_->run(10'000'000);

  std::vector<uint16_t> out(x.size());
  drv_->read_hbm(dst, out.data(), out.size() * 2);
  for (int r = 0; r < rows; ++r) {
    std::vector<uint8_t> sb(cols * 2 + 12);
    drv_->read_sbuf(uint32_t(2 + r), 0, sb.data(), sb.size());
    for (int i = 0; i < 6; ++i) EXPECT_EQ(sb[i], 0) << "SBUF byte before the tile, partition " << 2 + r;
    for (int i = 6 + cols * 2; i < int(sb.size()); ++i) EXPECT_EQ(sb[i], 0) << "SBUF byte after the tile";
    for (int c = 0; c < cols; ++c) {
      const size_t e = size_t(r) * cols + c;
      const uint16_t bf = golden::narrow_from_f32(isa::Dtype::kBf16, x[e], true);
      const uint16_t got_bf = uint16_t(sb[6 + 2 * c] | (sb[7 + 2 * c] << 8));
      if (golden::is_nan(isa::Dtype::kBf16, bf)) {
        EXPECT_TRUE(golden::is_nan(isa::Dtype::kBf16, got_bf)) << "element " << e;
      } else {
        EXPECT_EQ(got_bf, bf) << "bf16 of element " << e << " (0x" << std::hex << x[e] << ")";
      }
      const uint16_t h = golden::narrow_from_f32(isa::Dtype::kFp16, golden::widen_to_f32(isa::Dtype::kBf16, bf), true);
      EXPECT_EQ(out[e], h) << "fp16 of element " << e;
    }
  }
  EXPECT_EQ(out[0], golden::narrow_from_f32(isa::Dtype::kFp16, 0x3F820000u, true));
  std::vector<uint8_t> untouched(16);
  drv_->read_sbuf(7, 0, untouched.data(), untouched.size());
  for (uint8_t b : untouched) EXPECT_EQ(b, 0) << "partition 7 was never written";
}

struct TeProgramCase {
  isa::Dtype dtype;
  int k, m, n;
};

class TeProgramTest : public DeviceTest, public ::testing::WithParamInterface<TeProgramCase> {};

// A hand-written two-queue program: DMA in, semaphore, LoadStationary, MultiplyMoving (twice, the second
// accumulating), semaphore, DMA PSUM -> HBM. Checked against the golden GEMM, including untouched PSUM around.
TEST_P(TeProgramTest, MatchesGoldenGemmAndLeavesPsumAroundUntouched) {
  const auto [dtype, k, m, n] = GetParam();
  const auto& info = drv_->info();
  std::mt19937_64 rng(test_seed(42));
  const auto s = random_narrow(dtype, size_t(k) * m, rng);
  const auto mv = random_narrow(dtype, size_t(k) * n, rng);
  const auto mv2 = random_narrow(dtype, size_t(k) * n, rng);
  const unsigned es = isa::dtype_bits(dtype) / 8;
  const uint64_t s_hbm = drv_->alloc(s.size() * es), m_hbm = drv_->alloc(mv.size() * es),
                 m2_hbm = drv_->alloc(mv2.size() * es), out_hbm = drv_->alloc(size_t(m) * n * 4);
  drv_->write_hbm(s_hbm, to_bytes(s, dtype).data(), s.size() * es);
  drv_->write_hbm(m_hbm, to_bytes(mv, dtype).data(), mv.size() * es);
  drv_->write_hbm(m2_hbm, to_bytes(mv2, dtype).data(), mv2.size() * es);

  const uint32_t ppb = info.psum_partition_bytes;
  // The device is shared by the tests of this process: clear PSUM so that "untouched" reads as zero.
  const std::vector<uint8_t> zeros(size_t(info.psum_partitions) * ppb, 0);
  dev_->write_mem(regs::PSUM_BASE, zeros.data(), zeros.size());
  const uint64_t s_sb = 0, m_sb = 2048, m2_sb = 4096;
  const uint64_t psum = 2 * info.psum_bank_bytes();  // bank 2
  isa::Program p;
  auto& dq = p.queues[size_t(isa::Engine::kDma)];
  auto& tq = p.queues[size_t(isa::Engine::kTe)];
  // HBM row-major -> the TE operand layout in SBUF (FP8: two rows per partition, firmware/isa/dtype.h).
  auto load = [&](uint64_t hbm, int cols, uint64_t sbuf) {
    for (const isa::CopyFields& c : kernels::te_operand_copies(info, dtype, hbm, uint64_t(cols) * es, k, cols, 1, 0,
                                                               sbuf, 0)) {
      Instruction in;
      in.op = Opcode::kDmaCopy;
      in.copy = c;
      dq.push_back(in);
    }
  };
  load(s_hbm, m, s_sb);
  load(m_hbm, n, m_sb);
  load(m2_hbm, n, m2_sb);
  dq.push_back(sem(Opcode::kSemSignal, 1, 1));
  dq.push_back(sem(Opcode::kSemWait, 2, 1));
  dq.push_back(copy(Opcode::kDmaCopy, MemSpace::kPsum, psum, DataType::kFp32, MemSpace::kHbm, out_hbm,
                    DataType::kFp32, {uint16_t(n), uint16_t(m), 1, 1}, {4, int32_t(ppb), 0, 0}, {4, n * 4, 0, 0}));
  dq.push_back(Instruction::halt());
  tq.push_back(sem(Opcode::kSemWait, 1, 1));
  tq.push_back(te(Opcode::kLoadStationary, dtype, s_sb, 0, k, m));
  tq.push_back(te(Opcode::kMultiplyMoving, dtype, m_sb, psum, k, n, false));
  tq.push_back(te(Opcode::kMultiplyMoving, dtype, m2_sb, psum, k, n, true));
  tq.push_back(sem(Opcode::kSemSignal, 2, 1));
  tq.push_back(Instruction::halt());
  drv_->load_program(p);
  const auto result = drv_->run(10'000'000);
  EXPECT_EQ(result.retired[size_t(isa::Engine::kTe)], tq.size());
  EXPECT_EQ(result.retired[size_t(isa::Engine::kDma)], dq.size());

  const auto first = golden::gemm({dtype, k, m, n, s, mv}, int(info.te_rows));
  const auto want = golden::gemm({dtype, k, m, n, s, mv2}, int(info.te_rows), &first);
  std::vector<uint32_t> got(size_t(m) * n);
  drv_->read_hbm(out_hbm, got.data(), got.size() * 4);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "out[" << i / n << "][" << i % n << "]";
  }
  // PSUM outside [partitions 0..m-1] x [bank 2, n FP32] is untouched (still zero).
  std::vector<uint32_t> row(ppb / 4);
  for (uint32_t part = 0; part < info.psum_partitions; ++part) {
    drv_->read_psum(part, 0, row.data(), ppb);
    for (uint32_t w = 0; w < row.size(); ++w) {
      const bool inside = part < uint32_t(m) && w * 4 >= psum && w * 4 < psum + 4ull * n;
      if (!inside) {
        ASSERT_EQ(row[w], 0u) << "PSUM partition " << part << " word " << w;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TeProgramTest,
                         ::testing::Values(TeProgramCase{isa::Dtype::kBf16, 12, 10, 33},
                                           TeProgramCase{isa::Dtype::kFp16, 16, 16, 512},
                                           TeProgramCase{isa::Dtype::kFp8E4M3, 1, 1, 1},
                                           TeProgramCase{isa::Dtype::kFp8E5M2, 7, 16, 100},
                                           // FP8 double-row: K up to 2 x 16 rows in one pass, odd and full.
                                           TeProgramCase{isa::Dtype::kFp8E4M3, 29, 16, 64},
                                           TeProgramCase{isa::Dtype::kFp8E5M2, 32, 9, 512}));

// Cost model of docs/architecture.md: every instruction takes 1 issue cycle, then LoadStationary 1 + K and
// MultiplyMoving N + R + C + 2 (the RTL's latencies).
TEST_F(ModelTest, TeProgramCyclesFollowTheDocumentedCostModel) {
  isa::Program p;
  auto& tq = p.queues[size_t(isa::Engine::kTe)];
  tq.push_back(te(Opcode::kLoadStationary, isa::Dtype::kBf16, 0, 0, 9, 16));
  tq.push_back(te(Opcode::kMultiplyMoving, isa::Dtype::kBf16, 0, 0, 9, 64));
  tq.push_back(te(Opcode::kMultiplyMoving, isa::Dtype::kBf16, 0, 0, 9, 3));
  tq.push_back(Instruction::halt());
  drv_->load_program(p);
  const auto r = drv_->run(1'000'000);
  const uint64_t R = 16, C = 16;
  // An issue cycle, then the load (1 + K); each multiply is taken the cycle after the last beat before it, and halt
  // waits for the last multiply's results: the pipeline depth is paid once (the other issue cycles hide).
  EXPECT_EQ(r.cycles, 1 + (1 + 9) + (1 + 64) + (3 + R + C + 2));
}

// The two TE sequencers (docs/architecture.md "In a stream"), for the program load(K), multiply(n), load(K),
// multiply on a 16 x 16 array: the cycle the second multiply is taken in. The first multiply is taken after an
// issue cycle and the load (1 + K); the second load the cycle after its first (swapping) column; that load's beat j
// (PE row j) no earlier than COLS + 1 + j cycles after the swapping column (the swap has passed row j), its last
// beat no earlier than ROWS + COLS cycles after it (the swap has left the array); the second multiply once both the
// load and the first multiply's columns are done.
uint64_t second_multiply_taken(uint64_t k, uint64_t n) {
  const uint64_t R = 16, C = 16;
  const uint64_t mm1 = 1 + (1 + k), swap_col = mm1 + 1, ls2 = mm1 + 2;
  const uint64_t first_beat = std::max(ls2 + 1, swap_col + C + 1);
  const uint64_t last_beat = std::max(first_beat + k - 1, swap_col + R + C);
  return std::max(last_beat + 1, mm1 + 1 + n);
}

// Shadow weights and the two sequencers: a load after a multiply is taken the cycle after the multiply's first
// (swapping) column, its beats wait for that column to pass their PE rows (the last for it to leave the array), and
// the next multiply follows both the load and the earlier multiply's last column. A full-height load (K = ROWS)
// ends as the swap leaves the array; a shorter one's last beat waits for that.
TEST_F(ModelTest, TeLoadAfterAMultiplyOverlapsItAndWaitsOnlyForTheSwap) {
  const uint64_t R = 16, C = 16;
  for (const uint64_t k : {uint64_t{9}, uint64_t{16}}) {
    for (const uint64_t n : {uint64_t{20}, uint64_t{100}}) {
      isa::Program p;
      auto& tq = p.queues[size_t(isa::Engine::kTe)];
      tq.push_back(te(Opcode::kLoadStationary, isa::Dtype::kBf16, 0, 0, int(k), 16));
      tq.push_back(te(Opcode::kMultiplyMoving, isa::Dtype::kBf16, 0, 0, int(k), int(n)));
      tq.push_back(te(Opcode::kLoadStationary, isa::Dtype::kBf16, 0, 0, int(k), 16));
      tq.push_back(te(Opcode::kMultiplyMoving, isa::Dtype::kBf16, 0, 0, int(k), 3));
      tq.push_back(Instruction::halt());
      drv_->load_program(p);
      const auto r = drv_->run(1'000'000);
      EXPECT_EQ(r.cycles, second_multiply_taken(k, n) + 3 + R + C + 2) << "k = " << k << ", n = " << n;
    }
  }
}

// A te queue's sem_signal lands when the results of the multiplies before it are in PSUM, and the queue goes on
// issuing meanwhile (docs/isa.md "Execution"): the program with the signal between two load/multiply pairs takes the
// cycles of the same program without it plus the signal's issue cycle, and the vec queue waiting for it starts when
// the first multiply's results are out: taken at 1 + (1 + K), its last column N later, then ROWS + COLS + 1.
TEST_F(ModelTest, ATeSignalLandsWithItsResultsWhileTheQueueGoesOn) {
  const uint64_t R = 16, C = 16, k = 9, n = 64;
  auto program = [&](bool signal) {
    isa::Program p;
    auto& tq = p.queues[size_t(isa::Engine::kTe)];
    tq.push_back(te(Opcode::kLoadStationary, isa::Dtype::kBf16, 0, 0, k, 16));
    tq.push_back(te(Opcode::kMultiplyMoving, isa::Dtype::kBf16, 0, 0, k, n));
    if (signal) tq.push_back(sem(Opcode::kSemSignal, 5, 1));
    tq.push_back(te(Opcode::kLoadStationary, isa::Dtype::kBf16, 0, 0, k, 16));
    tq.push_back(te(Opcode::kMultiplyMoving, isa::Dtype::kBf16, 0, 2048, k, n));
    tq.push_back(Instruction::halt());
    if (signal) {
      auto& vq = p.queues[size_t(isa::Engine::kVec)];
      vq.push_back(sem(Opcode::kSemWait, 5, 1));
      vq.push_back(Instruction::halt());
    }
    return p;
  };
  drv_->load_program(program(false));
  const uint64_t without = drv_->run(1'000'000).cycles;
  drv_->clear_counters();
  drv_->load_program(program(true));
  const driver::RunResult r = drv_->run(1'000'000);
  const driver::DeviceCounters c = drv_->read_counters();
  EXPECT_LE(r.cycles, without + 1) << "the signal held the te queue";
  // Without the signal: TeLoadAfterAMultiplyOverlapsItAndWaitsOnlyForTheSwap's program and formula.
  EXPECT_EQ(without, second_multiply_taken(k, n) + n + R + C + 2);
  const uint64_t mm1 = 1 + (1 + k), first_results = mm1 + n + R + C + 1;
  EXPECT_GE(c.queues.at(3).sem_wait + 3, first_results) << "the semaphore landed before the first results";
  EXPECT_LE(c.queues.at(3).sem_wait, first_results + 3);
  EXPECT_EQ(dev_->read_reg(regs::sem_reg(5)), 1u);
}

struct ErrorCase {
  const char* name;
  int queue;
  std::vector<std::array<uint8_t, isa::kInstrBytes>> program;
  uint32_t code;
  uint32_t index;
  const char* field;  ///< expected ERR_INFO field name (nullptr: check info_value)
  uint32_t info_value;
};

std::array<uint8_t, isa::kInstrBytes> enc(const Instruction& i) { return isa::encode(i); }

std::vector<ErrorCase> error_cases() {
  const auto cfg = model::chip_config("tiny");
  const auto halt = enc(Instruction::halt());
  const auto nop = enc(Instruction::nop());
  auto bad_opcode = nop;
  bad_opcode[0] = 0x7F;
  auto reserved = halt;
  reserved[5] = 1;
  auto bad_dtype = enc(te(Opcode::kLoadStationary, isa::Dtype::kBf16, 0, 0, 4, 4));
  bad_dtype[2] = 9;  // 0..3 narrow, 5..7 MX
  auto big_n = enc(te(Opcode::kMultiplyMoving, isa::Dtype::kBf16, 0, 0, 4, 4));
  big_n[26] = 600 & 0xFF;
  big_n[27] = 600 >> 8;
  const auto sbuf_range =
      enc(te(Opcode::kLoadStationary, isa::Dtype::kBf16, 15ull * cfg.sbuf_partition_bytes, 0, 4, 4));
  const auto psum_range = enc(copy(Opcode::kDmaCopy, MemSpace::kHbm, 0, DataType::kFp32, MemSpace::kPsum,
                                   cfg.psum_bytes() - 8, DataType::kFp32, {4, 1, 1, 1}, {4, 0, 0, 0}, {4, 0, 0, 0}));
  const auto hbm_range = enc(copy(Opcode::kDmaCopy, MemSpace::kHbm, cfg.hbm_bytes - 2, DataType::kFp32,
                                  MemSpace::kSbuf, 0, DataType::kFp32, {4, 1, 1, 1}, {4, 0, 0, 0}, {4, 0, 0, 0}));
  // Found by the mmio fuzz target: a source near 2^63 with a negative stride (the range was computed in signed
  // 64-bit arithmetic: overflow), and one near 2^64 whose end wrapped to a small address and was taken as in range.
  const auto hbm_high = enc(copy(Opcode::kDmaCopy, MemSpace::kHbm, 0x8000000000001000ull, DataType::kFp32,
                                 MemSpace::kSbuf, 0, DataType::kFp32, {4, 1, 1, 1}, {-1024, 0, 0, 0}, {4, 0, 0, 0}));
  const auto hbm_wrap = enc(copy(Opcode::kDmaCopy, MemSpace::kHbm, 0xFFFFFFFFFFFFFFF0ull, DataType::kFp32,
                                 MemSpace::kSbuf, 0, DataType::kFp32, {8, 1, 1, 1}, {4, 0, 0, 0}, {4, 0, 0, 0}));
  const auto dma_on_te = enc(copy(Opcode::kDmaCopy, MemSpace::kHbm, 0, DataType::kFp32, MemSpace::kSbuf, 0,
                                  DataType::kFp32, {1, 1, 1, 1}, {4, 0, 0, 0}, {4, 0, 0, 0}));
  const auto mult = enc(te(Opcode::kMultiplyMoving, isa::Dtype::kBf16, 0, 0, 4, 4));
  const auto big_k = enc(te(Opcode::kLoadStationary, isa::Dtype::kBf16, 0, 0, 17, 4));
  const auto wait5 = enc(sem(Opcode::kSemWait, 5, 1));
  // 65535^4 FP32 elements with zero strides: four bytes of HBM repeated, in range, but 2^66 bytes to move.
  const auto huge_copy = enc(copy(Opcode::kDmaCopy, MemSpace::kHbm, 0, DataType::kFp32, MemSpace::kHbm, 64,
                                  DataType::kFp32, {65535, 65535, 65535, 65535}, {0, 0, 0, 0}, {0, 0, 0, 0}));
  return {
      {"bad_opcode", 0, {nop, bad_opcode, halt}, regs::ERR_BAD_OPCODE, 1, "opcode", 0},
      {"reserved", 1, {nop, nop, reserved}, regs::ERR_RESERVED_NONZERO, 2, "reserved", 0},
      {"bad_dtype", 0, {bad_dtype, halt}, regs::ERR_BAD_FIELD, 0, "dtype", 0},
      {"n_over_512", 0, {big_n, halt}, regs::ERR_BAD_FIELD, 0, "free_size", 0},
      {"sbuf_range", 0, {nop, sbuf_range, halt}, regs::ERR_SBUF_RANGE, 1, "sbuf_addr", 0},
      {"psum_range", 1, {psum_range, halt}, regs::ERR_PSUM_RANGE, 0, "dst_addr", 0},
      {"hbm_range", 1, {hbm_range, halt}, regs::ERR_HBM_RANGE, 0, "src_addr", 0},
      {"hbm_range_near_2_63", 1, {hbm_high, halt}, regs::ERR_HBM_RANGE, 0, "src_addr", 0},
      {"hbm_range_wraps_2_64", 1, {nop, hbm_wrap, halt}, regs::ERR_HBM_RANGE, 1, "src_addr", 0},
      {"wrong_engine", 0, {dma_on_te, halt}, regs::ERR_WRONG_ENGINE, 0, "opcode", 0},
      {"no_stationary", 0, {mult, halt}, regs::ERR_NO_STATIONARY, 0, nullptr, 0},
      {"copy_bytes_wrap", 1, {nop, huge_copy, halt}, regs::ERR_BAD_FIELD, 1, "count", 0},
      {"k_over_rows", 0, {big_k, halt}, regs::ERR_TE_SHAPE, 0, "k", 0},
      {"no_halt", 0, {nop, nop}, regs::ERR_NO_HALT, 2, nullptr, 0},
      {"deadlock", 1, {nop, wait5, halt}, regs::ERR_DEADLOCK, 1, nullptr, 5},
  };
}

class DeviceErrorTest : public DeviceTest, public ::testing::WithParamInterface<ErrorCase> {};

TEST_P(DeviceErrorTest, StopsWithErrorRegistersNamingQueueIndexAndField) {
  const ErrorCase& c = GetParam();
  run_raw(c.queue, c.program);
  EXPECT_EQ(dev_->read_reg(regs::STATUS) & regs::STATUS_ERROR_MASK, regs::STATUS_ERROR_MASK);
  EXPECT_EQ(dev_->read_reg(regs::ERR_CODE), c.code) << regs::err_code_name(dev_->read_reg(regs::ERR_CODE));
  EXPECT_EQ(dev_->read_reg(regs::ERR_QUEUE), uint32_t(c.queue));
  EXPECT_EQ(dev_->read_reg(regs::ERR_INDEX), c.index);
  const uint32_t info = dev_->read_reg(regs::ERR_INFO);
  if (c.field) {
    EXPECT_EQ(isa::field_name(int(info)), c.field);
  } else {
    EXPECT_EQ(info, c.info_value);
  }
  EXPECT_EQ(dev_->read_reg(regs::queue_reg(c.queue, regs::Q_STATE)), regs::QSTATE_ERROR);
  EXPECT_FALSE(dev_->fault_detail().empty());
  // The same text through the registers (ERR_DETAIL_LEN bytes of ERR_DETAIL, 4 per register, at most 256).
  const uint32_t len = dev_->read_reg(regs::ERR_DETAIL_LEN);
  EXPECT_EQ(len, std::min<size_t>(dev_->fault_detail().size(), 4 * regs::ERR_DETAIL_COUNT));
  std::string text;
  for (uint32_t i = 0; i < len; ++i) text.push_back(char(dev_->read_reg(regs::err_detail_reg(i / 4)) >> (8 * (i % 4))));
  EXPECT_EQ(text, dev_->fault_detail().substr(0, len));
}

INSTANTIATE_TEST_SUITE_P(Malformed, DeviceErrorTest, ::testing::ValuesIn(error_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// Device::read_reg/write_reg outside the 1 MiB register map (every core's block and the chip's) or unaligned: std::out_of_range naming the offset
// (driver/device.h), as a memory access outside the mapped spaces is; a hole stays a plain access (found by the mmio
// fuzz target: the errors were the TLM bridge's "TLM_ADDRESS_ERROR_RESPONSE" and "TLM_BURST_ERROR_RESPONSE").
TEST_F(ModelTest, RegisterOffsetsOutsideTheMapOrUnalignedAreOutOfRangeNamingTheOffset) {
  const uint32_t size = uint32_t(regs::MMIO_SIZE);
  for (const uint32_t off : {size, size - 2, 0x1040100u, 0xFFFFFFFCu}) {
    try {
      dev_->write_reg(off, 1);
      ADD_FAILURE() << "write at " << off << " was taken";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("offset 0x{:x}: outside the 1024 KiB register map", off)),
                std::string::npos) << e.what();
    }
    EXPECT_THROW(dev_->read_reg(off), std::out_of_range);
  }
  for (const uint32_t off : {regs::STATUS + 1, regs::STATUS + 2, regs::ID + 3}) {
    try {
      dev_->read_reg(off);
      ADD_FAILURE() << "unaligned read at " << off << " was taken";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("offset 0x{:x}: not 4-byte aligned", off)), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(dev_->read_reg(size - 4), 0u);  // a hole reads 0
  EXPECT_EQ(dev_->read_reg(regs::ID), regs::kIdValue);
}

// The error latch belongs to one run: a doorbell after an error (no soft reset between) starts a run that ends DONE
// with ERR_CODE 0, not the previous run's code (found by the mmio fuzz target; docs/registers.md ERR_CODE).
TEST_F(ModelTest, ADoorbellThatStartsARunClearsThePreviousRunsError) {
  isa::Program p;
  p.queue(isa::Engine::kTe).push_back(isa::Instruction::halt());
  drv_->load_program(p);
  dev_->write_reg(regs::INT_ENABLE, regs::INT_STATUS_DONE_MASK | regs::INT_STATUS_ERROR_MASK);
  dev_->write_reg(regs::DOORBELL, 1u << static_cast<int>(isa::Engine::kVec));  // a queue with Q_LEN 0
  ASSERT_TRUE(dev_->wait_interrupt(1000));
  ASSERT_EQ(dev_->read_reg(regs::STATUS), regs::STATUS_ERROR_MASK);
  ASSERT_EQ(dev_->read_reg(regs::ERR_CODE), regs::ERR_BAD_DOORBELL);
  dev_->write_reg(regs::INT_STATUS, regs::INT_STATUS_DONE_MASK | regs::INT_STATUS_ERROR_MASK);
  dev_->write_reg(regs::DOORBELL, 1u << static_cast<int>(isa::Engine::kTe));
  ASSERT_TRUE(dev_->wait_interrupt(1000));
  EXPECT_EQ(dev_->read_reg(regs::STATUS), regs::STATUS_DONE_MASK);
  EXPECT_EQ(dev_->read_reg(regs::ERR_CODE), 0u);
  EXPECT_EQ(dev_->read_reg(regs::ERR_QUEUE), 0u);
  EXPECT_EQ(dev_->read_reg(regs::ERR_DETAIL_LEN), 0u);
}

TEST_F(ModelTest, WatchdogStopsAQueueThatMakesNoProgress) {
  // A memset of 40000 elements per partition keeps the Vector engine 100,001 TE cycles on one instruction (docs/isa.md
  // costs): no instruction retires and no copy moves for longer than a 100-cycle watchdog.
  dev_->write_reg(regs::WATCHDOG_CYCLES, 100);
  drv_->load_program(isa::assemble(".queue vec\nmemset value=1 partitions=16 free=[40000] out=sbuf:0:0x0\nhalt\n"));
  EXPECT_THROW(drv_->run(10'000'000), driver::DeviceFault);
  EXPECT_EQ(dev_->read_reg(regs::ERR_CODE), regs::ERR_WATCHDOG);
  EXPECT_EQ(dev_->read_reg(regs::ERR_QUEUE), uint32_t(isa::Engine::kVec));
  EXPECT_EQ(dev_->read_reg(regs::ERR_INDEX), 0u);
  EXPECT_NE(dev_->fault_detail().find("no DMA copy moving for 100 cycles"), std::string::npos) << dev_->fault_detail();
  dev_->write_reg(regs::WATCHDOG_CYCLES, regs::WATCHDOG_CYCLES_RESET);
}

TEST_F(ModelTest, WatchdogLetsALongDmaCopyRunItIsProgress) {
  // One copy of 4 MiB takes ~1.3 us + 4 MiB / 23 B/ns, ~440,000 TE cycles, with nothing retiring meanwhile: far
  // longer than a 1000-cycle watchdog, which must not stop it (bytes are moving).
  dev_->write_reg(regs::WATCHDOG_CYCLES, 1000);
  drv_->load_program(isa::assemble(".queue dma\ndma_copy src=hbm:0x0 dst=hbm:0x1000000 type=fp32 count=[1024,1024]\n"
                                   "halt\n"));
  const driver::RunResult r = drv_->run(10'000'000);
  EXPECT_GT(r.cycles, 400'000u);
  EXPECT_EQ(r.retired[size_t(isa::Engine::kDma)], 2u);
  dev_->write_reg(regs::WATCHDOG_CYCLES, regs::WATCHDOG_CYCLES_RESET);
}

// A soft reset abandons the DMA copies in flight: their processes end at the reset, not at their end time (found by
// the mmio fuzz target: after some 900,000 inputs, abandoned copies of huge durations held so many SystemC stacks that
// the process ran out of memory mappings).
TEST_F(ModelTest, ASoftResetEndsTheCopiesItAbandons) {
  // Three copies of 4 MiB each (~440,000 TE cycles each, docs/isa.md costs), on three engines at once.
  drv_->load_program(isa::assemble(".queue dma\n"
                                   "dma_copy src=hbm:0x0 dst=hbm:0x1000000 type=fp32 count=[1024,1024]\n"
                                   "dma_copy src=hbm:0x0 dst=hbm:0x1400000 type=fp32 count=[1024,1024]\n"
                                   "dma_copy src=hbm:0x0 dst=hbm:0x1800000 type=fp32 count=[1024,1024]\n"
                                   "halt\n"));
  const model::DmaEngine& dma = dev_->core(0).dma;
  drv_->start();
  EXPECT_FALSE(dev_->wait_interrupt(10'000));  // 10,000 cycles in: the copies are under way
  EXPECT_EQ(dma.live_copies(), 3);
  EXPECT_EQ(dev_->chip().hbm_model.streams(), 3u) << "each streams through the chip's HBM";
  dev_->write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
  EXPECT_FALSE(dev_->wait_interrupt(10));  // a few cycles after the reset, far before their end
  EXPECT_EQ(dma.live_copies(), 0);
  EXPECT_EQ(dev_->chip().hbm_model.streams(), 0u) << "their HBM streams are withdrawn";
}

// A copy of any length costs the host the same (found by the mmio fuzz target: the first HBM model booked a copy of
// about 2^60 bytes slot by slot and hung at issue): 2^48 bytes, four HBM bytes repeated (zero strides), are one
// stream of the fluid HBM model, abandoned at once by a soft reset; the next program runs as usual.
TEST_F(ModelTest, AHugeCopyIsOneStreamAndASoftResetWithdrawsIt) {
  drv_->load_program(isa::assemble(".queue dma\n"
                                   "dma_copy src=hbm:0x0 dst=sbuf:0x0 type=fp32 count=[65535,65535,16384,1] "
                                   "src_stride=[0,0,0,0] dst_stride=[0,0,0,0]\n"
                                   "halt\n"));
  drv_->start();
  EXPECT_FALSE(dev_->wait_interrupt(10'000));
  EXPECT_EQ(dev_->chip().hbm_model.streams(), 1u);
  dev_->write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
  EXPECT_FALSE(dev_->wait_interrupt(10));
  EXPECT_EQ(dev_->chip().hbm_model.streams(), 0u);
  drv_->load_program(isa::assemble(".queue dma\ndma_copy src=hbm:0x0 dst=sbuf:0x0 type=fp32 count=[16]\nhalt\n"));
  EXPECT_GT(drv_->run(1'000'000).cycles, 0u);
}

TEST_F(ModelTest, PerfCountersCountTheDocumentedCostsAndPerfClearRestartsThem) {
  // docs/isa.md costs: memset of 1000 elements per partition = 1 + 1000 x 2.5 = 2501 TE cycles, halt 1; a
  // load_stationary / multiply_moving pair of K = 16, M = 16, N = 32 does K x M x N = 8192 MACs.
  drv_->clear_counters();
  const driver::DeviceCounters zero = drv_->read_counters();
  EXPECT_EQ(zero.uptime, 0u);
  EXPECT_EQ(zero.queues.at(3).retired, 0u);
  drv_->load_program(isa::assemble(
      ".queue vec\n"
      "memset value=1 partitions=16 free=[1000] out=sbuf:0:0x0\n"
      "halt\n"
      ".queue te\n"
      "load_stationary dtype=bf16 sbuf=0x8000 k=16 m=16\n"
      "multiply_moving dtype=bf16 sbuf=0x8000 psum=0x0 k=16 n=32\n"
      "halt\n"));
  const driver::RunResult r = drv_->run(1'000'000);
  const driver::DeviceCounters c = drv_->read_counters();
  EXPECT_EQ(c.queues.at(3).busy, 2502u);
  EXPECT_EQ(c.queues.at(3).retired, 2u);
  EXPECT_EQ(c.queues.at(3).sem_wait, 0u);
  EXPECT_EQ(c.queues.at(3).busy + c.queues.at(3).idle, c.uptime);
  EXPECT_GE(c.uptime, r.cycles);
  EXPECT_EQ(c.te_macs, 16u * 16 * 32);
  EXPECT_EQ(c.queues.at(0).retired, 3u);
  EXPECT_GT(c.te_busy, 0u);
  EXPECT_EQ(c.queues.at(2).busy, 0u);  // act ran nothing
  EXPECT_EQ(c.queues.at(2).idle, c.uptime);
  // A soft reset (every run starts with one) leaves them; PERF_CLEAR restarts them.
  dev_->write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
  EXPECT_EQ(drv_->read_counters().te_macs, 16u * 16 * 32);
  drv_->clear_counters();
  const driver::DeviceCounters cleared = drv_->read_counters();
  EXPECT_EQ(cleared.uptime, 0u);
  EXPECT_EQ(cleared.te_macs, 0u);
  EXPECT_EQ(cleared.queues.at(3).busy, 0u);
  EXPECT_EQ(cleared.queues.at(3).retired, 0u);
  for (const auto& e : cleared.dma) EXPECT_EQ(e.busy + e.copies, 0u);
}

// A copy with a completion semaphore (done_sem, docs/isa.md "Execution") signals when it lands, without the dma
// queue's barrier: here a 256-byte copy behind a 4 MiB one. Times from docs/isa.md "Costs" (BRIEF section 2): a copy
// takes 1.3 us x 2.4 GHz = 3120 TE cycles of start latency + bytes / 23 B/ns; the 4 MiB copy ~440,000 cycles.
TEST_F(ModelTest, ACopysCompletionSemaphoreSignalsWhenThatCopyLandsNotWhenTheQueueDrains) {
  const uint32_t value = 0x40490FDBu;  // pi as FP32: what the small copy brings into SBUF
  drv_->write_hbm(0x2000000, &value, 4);
  drv_->clear_counters();
  drv_->load_program(isa::assemble(
      ".queue dma\n"
      "dma_copy src=hbm:0x0 dst=hbm:0x1000000 type=fp32 count=[1024,1024]\n"
      "dma_copy src=hbm:0x2000000 dst=sbuf:0x0 type=fp32 count=[64] done_sem=5\n"
      "halt\n"
      ".queue vec\n"
      "sem_wait sem=5 value=1\n"
      "tensor_copy partitions=1 free=[1] out=sbuf:0:0x100 in0=sbuf:0:0x0\n"
      "halt\n"));
  const driver::RunResult r = drv_->run(10'000'000);
  const driver::DeviceCounters c = drv_->read_counters();
  EXPECT_GT(r.cycles, 400'000u) << "the dma queue's halt waits for the 4 MiB copy";
  // The small copy is issued 2 cycles in (one issue cycle per instruction) and lands 3120 + 256 / 23 x 2.4 = 3147
  // cycles later; the vec queue waits for that, not for the big copy.
  EXPECT_GE(c.queues.at(3).sem_wait, 3140u);
  EXPECT_LE(c.queues.at(3).sem_wait, 3160u);
  uint32_t got = 0;
  dev_->read_mem(regs::SBUF_BASE + 0x100, &got, 4);
  EXPECT_EQ(got, value) << "the waiter saw the landed bytes";
  EXPECT_EQ(dev_->read_reg(regs::sem_reg(5)), 1u);
}

// A queue waiting for a completion semaphore is not deadlocked while the copy that will raise it is in flight (even
// when it is the dma queue itself and nothing else runs), and is once that copy landed short of the count.
TEST_F(ModelTest, AWaitOnACompletionSemaphoreIsADeadlockOnlyOnceTheCopiesLandedShortOfIt) {
  drv_->load_program(isa::assemble(".queue dma\n"
                                   "dma_copy src=hbm:0x0 dst=sbuf:0x0 type=fp32 count=[64] done_sem=7\n"
                                   "sem_wait sem=7 value=1\n"
                                   "halt\n"));
  const driver::RunResult ok = drv_->run(1'000'000);
  EXPECT_GE(ok.cycles, 3140u);
  drv_->load_program(isa::assemble(".queue dma\n"
                                   "dma_copy src=hbm:0x0 dst=sbuf:0x0 type=fp32 count=[64] done_sem=7\n"
                                   "sem_wait sem=7 value=2\n"
                                   "halt\n"));
  try {
    drv_->run(1'000'000);
    FAIL() << "expected a DeviceFault";
  } catch (const driver::DeviceFault& e) {
    EXPECT_EQ(e.code(), regs::ERR_DEADLOCK);
    EXPECT_EQ(e.queue(), uint32_t(isa::Engine::kDma));
    EXPECT_EQ(e.index(), 1u);
    EXPECT_EQ(e.info(), 7u);
    EXPECT_GE(dev_->read_reg(regs::CYCLE_LO), 3140u) << "not before the copy landed";
  }
}

TEST_F(ModelTest, DriverTurnsADeadlockIntoADeviceFaultNamingTheInstruction) {
  isa::Program p;
  p.queues[0] = {sem(Opcode::kSemWait, 3, 2), Instruction::halt()};
  p.queues[1] = {sem(Opcode::kSemSignal, 3, 1), Instruction::halt()};
  drv_->load_program(p);
  try {
    drv_->run(1'000'000);
    FAIL() << "expected a DeviceFault";
  } catch (const driver::DeviceFault& e) {
    EXPECT_EQ(e.code(), regs::ERR_DEADLOCK);
    EXPECT_EQ(e.queue(), 0u);
    EXPECT_EQ(e.index(), 0u);
    EXPECT_EQ(e.info(), 3u);
    EXPECT_NE(std::string(e.what()).find("instruction 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trnsim::test
