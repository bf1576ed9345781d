// The Vector and Scalar engines on a trn2 NeuronCore (128 partitions), through the driver: the start-partition
// quadrant rule of docs/isa.md for every operand, 32 x 32 transposes between quadrants, and full-height operands.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/golden/engine_golden.h"
#include "tests/model/engine_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {
namespace {

using isa::ActFunc;
using isa::Instruction;

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

using PartitionTest = EngineTest;

TEST_F(PartitionTest, DeviceIsTrn2) {
  ASSERT_EQ(drv_->info().sbuf_partitions, 128u);
  ASSERT_EQ(drv_->info().psum_partitions, 128u);
}

/// The rule, written out from docs/isa.md: up to 32 partitions start at 0/32/64/96, 33..64 at 0/64, more at 0.
bool start_allowed(int start, int partitions) {
  if (partitions <= 32) return start % 32 == 0;
  if (partitions <= 64) return start % 64 == 0;
  return start == 0;
}

TEST_F(PartitionTest, QuadrantRuleForEveryOperand) {
  std::mt19937_64 rng(test_seed());
  const int n = 8;
  const auto x = random_values(DataType::kFp32, 128 * n, rng);
  put(0, 0x0, DataType::kFp32, 128, n, x);
  int accepted = 0, misaligned = 0, out_of_range = 0;
  for (const int parts : {1, 16, 31, 32, 33, 48, 64, 65, 96, 127, 128}) {
    for (const int start : {0, 1, 16, 32, 48, 64, 96, 100}) {
      SCOPED_TRACE(std::to_string(parts) + " partitions from " + std::to_string(start));
      for (const char* which : {"out", "in0"}) {
        const bool out_moves = std::string(which) == "out";
        Instruction i = vec(Opcode::kTensorCopy, parts, n, 1,
                            opnd(MemSpace::kSbuf, DataType::kFp32, out_moves ? start : 0, 0x100, 1, 0),
                            opnd(MemSpace::kSbuf, DataType::kFp32, out_moves ? 0 : start, 0x0, 1, 0));
        isa::Program p;
        p.queue(isa::Engine::kVec) = {i, Instruction::halt()};
        drv_->load_program(p);
        const bool in_range = start + parts <= 128;
        try {
          drv_->run(1'000'000);
          EXPECT_TRUE(in_range && start_allowed(start, parts)) << which << " accepted";
          ++accepted;
        } catch (const driver::DeviceFault& e) {
          EXPECT_EQ(e.index(), 0u);
          EXPECT_EQ(isa::field_name(int(e.info())), std::string(which) + "_partition") << e.what();
          if (!in_range) {
            EXPECT_EQ(e.code(), regs::ERR_SBUF_RANGE) << e.what();
            ++out_of_range;
          } else {
            EXPECT_FALSE(start_allowed(start, parts)) << e.what();
            EXPECT_EQ(e.code(), regs::ERR_PARTITION_ALIGN) << e.what();
            ++misaligned;
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 20);
  EXPECT_GT(misaligned, 40);
  EXPECT_GT(out_of_range, 10);
}

TEST_F(PartitionTest, QuadrantRuleAppliesToPsumAndColumnOperands) {
  const isa::Operand in = opnd(MemSpace::kPsum, DataType::kFp32, 64, 0x0, 1, 0);
  Instruction ok = activation(ActFunc::kRelu, 64, 4, 1, opnd(MemSpace::kSbuf, DataType::kFp32, 64, 0, 1, 0), in);
  ok.act.reduce = true;
  ok.act.sum = opnd(MemSpace::kPsum, DataType::kFp32, 0, 0x100);
  ok.act.bias_tensor = true;
  ok.act.bias_ap = opnd(MemSpace::kSbuf, DataType::kFp32, 64, 0x200);
  run_act({ok});
  Instruction bad = ok;
  bad.act.sum.partition = 32;  // 64 partitions from 32
  isa::Program p;
  p.queue(isa::Engine::kAct) = {bad, Instruction::halt()};
  drv_->load_program(p);
  try {
    drv_->run(1'000'000);
    FAIL() << "expected a DeviceFault";
  } catch (const driver::DeviceFault& e) {
    EXPECT_EQ(e.code(), regs::ERR_PARTITION_ALIGN);
    EXPECT_EQ(isa::field_name(int(e.info())), "sum_partition") << e.what();
    EXPECT_EQ(e.queue(), uint32_t(isa::Engine::kAct));
  }
}

TEST_F(PartitionTest, Transpose32x32BetweenQuadrants) {
  std::mt19937_64 rng(test_seed());
  struct Case {
    int in_start, out_start, p, n0;
  };
  for (const Case c : {Case{0, 32, 32, 32}, Case{0, 96, 32, 32}, Case{96, 0, 32, 32}, Case{64, 64, 32, 32},
                       Case{32, 64, 20, 7}, Case{0, 0, 32, 32}}) {
    SCOPED_TRACE(std::to_string(c.p) + "x" + std::to_string(c.n0) + " from partition " + std::to_string(c.in_start) +
                 " to " + std::to_string(c.out_start));
    const auto x = random_values(DataType::kBf16, size_t(c.p) * c.n0, rng);
    put(c.in_start, 0x0, DataType::kBf16, c.p, c.n0, x);
    run_vec({vec(Opcode::kTranspose, c.p, c.n0, 1, opnd(MemSpace::kSbuf, DataType::kFp32, c.out_start, 0x1000, 1, 0),
                 opnd(MemSpace::kSbuf, DataType::kBf16, c.in_start, 0x0, 1, 0))});
    const auto got = get(c.out_start, 0x1000, DataType::kFp32, c.n0, c.p);
    for (int j = 0; j < c.n0; ++j) {
      for (int i = 0; i < c.p; ++i) {
        ASSERT_EQ(hex(got[size_t(j) * c.p + i]),
                  hex(golden::element_to_f32(DataType::kBf16, x[size_t(i) * c.n0 + j])))
            << "out[" << j << "][" << i << "]";
      }
    }
  }
}

TEST_F(PartitionTest, TheVectorEngineTakesTheTrainium2DataPath) {
  // AWS Neuron, "Trainium2 Architecture Guide for NKI", "Compute Engine Specifications": the Vector engine moves 512
  // BF16/FP16 elements per cycle, 256 of other types: 4 and 2 per lane of 128 (VEC_WIDTH). So an instruction of N
  // elements per partition takes max(64, ceil(N / 4)) Vector cycles when every operand is BF16 or FP16, else
  // max(64, ceil(N / 2)); x 2.5 TE cycles at 0.96 GHz, rounded up; + 1 issue cycle + 1 for the halt.
  ASSERT_EQ(drv_->info().vec_elems_per_cycle, 256u);
  ASSERT_EQ(drv_->info().vec_elems_per_cycle_16, 512u);
  const auto copy = [](DataType out, DataType in, int n, MemSpace in_space = MemSpace::kSbuf) {
    return vec(Opcode::kTensorCopy, 128, n, 1, opnd(MemSpace::kSbuf, out, 0, 0x4000, 1, 0),
               opnd(in_space, in, 0, 0, 1, 0));
  };
  EXPECT_EQ(run_vec({copy(DataType::kBf16, DataType::kBf16, 1000)}).cycles, 2u + 625u) << "250 cycles: 4 per lane";
  EXPECT_EQ(run_vec({copy(DataType::kFp16, DataType::kFp16, 1001)}).cycles, 2u + 628u) << "251 cycles = 627.5";
  EXPECT_EQ(run_vec({copy(DataType::kFp32, DataType::kFp32, 1000)}).cycles, 2u + 1250u) << "500 cycles: 2 per lane";
  EXPECT_EQ(run_vec({copy(DataType::kBf16, DataType::kFp32, 1000, MemSpace::kPsum)}).cycles, 2u + 1250u)
      << "an FP32 input (PSUM) takes the other types' path";
  EXPECT_EQ(run_vec({copy(DataType::kFp8E4M3, DataType::kFp8E4M3, 1000)}).cycles, 2u + 1250u)
      << "FP8 is not among Trainium2's 512-element types";
  EXPECT_EQ(run_vec({copy(DataType::kBf16, DataType::kBf16, 200)}).cycles, 2u + 160u) << "50 -> the 64-cycle minimum";
  const Instruction mixed = vec(Opcode::kTensorTensor, 128, 1000, 1, opnd(MemSpace::kSbuf, DataType::kBf16, 0, 0x4000),
                                opnd(MemSpace::kSbuf, DataType::kBf16, 0, 0), opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x8000));
  EXPECT_EQ(run_vec({mixed}).cycles, 2u + 1250u) << "one FP32 input is enough for the narrower path";
  Instruction tp = vec(Opcode::kTranspose, 32, 32, 1, opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x4000, 1, 0),
                       opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0, 1, 0));
  EXPECT_EQ(run_vec({tp}).cycles, 2u + 160u) << "transpose N = P = 32 -> 16 -> the 64-cycle minimum";
  // The Scalar engine keeps one element per lane per cycle (the table's 128 at 1.2 GHz).
  EXPECT_EQ(run_act({activation(ActFunc::kIdentity, 128, 1000, 1, opnd(MemSpace::kSbuf, DataType::kBf16, 0, 0x4000),
                                opnd(MemSpace::kSbuf, DataType::kBf16, 0, 0))})
                .cycles,
            2u + 2000u);
}

TEST_F(PartitionTest, FullHeightActivationWithBiasTensorAndSum) {
  std::mt19937_64 rng(test_seed());
  const int n = 96;
  const auto x = random_values(DataType::kBf16, 128 * n, rng);
  const auto bias = random_values(DataType::kFp32, 128, rng);
  put(0, 0x0, DataType::kBf16, 128, n, x);
  put(0, 0x400, DataType::kFp32, 128, 1, bias);
  Instruction i = activation(ActFunc::kSquare, 128, n, 1, opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x800, 1, 0),
                             opnd(MemSpace::kSbuf, DataType::kBf16, 0, 0, 1, 0), fbits(0.5f));
  i.act.bias_tensor = true;
  i.act.bias_ap = opnd(MemSpace::kSbuf, DataType::kFp32, 0, 0x400);
  i.act.reduce = true;
  i.act.sum = opnd(MemSpace::kSbuf, DataType::kBf16, 0, 0x600);
  const auto r = run_act({i});
  EXPECT_EQ(r.cycles, 2u + 2 * (96u + 64u)) << "one lane per partition: (max(64, 96) + 64 for the sum) x 2 TE cycles";
  const auto got = get(0, 0x800, DataType::kFp32, 128, n);
  const auto sums = get(0, 0x600, DataType::kBf16, 128, 1);
  for (int p = 0; p < 128; ++p) {
    std::vector<uint32_t> results;
    for (int e = 0; e < n; ++e) {
      const uint32_t z = golden::activation_input(golden::element_to_f32(DataType::kBf16, x[size_t(p) * n + e]),
                                                  fbits(0.5f), bias[size_t(p)]);
      results.push_back(golden::activation_exact(ActFunc::kSquare, z));
      ASSERT_EQ(hex(got[size_t(p) * n + e]), hex(results.back())) << "partition " << p << " element " << e;
    }
    ASSERT_EQ(hex(sums[size_t(p)]),
              hex(golden::element_from_f32(DataType::kBf16, golden::reduce(isa::AluOp::kAdd, results), true)))
        << "sum of partition " << p;
  }
}

}  // namespace
}  // namespace trnsim::test
