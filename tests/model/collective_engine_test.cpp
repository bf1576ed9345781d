// The collective engine (queue cc) of a 1-chip device (label model): collectives complete as no-ops that leave HBM
// as it is, the cc queue synchronises with the other queues through semaphores, and its faults name queue cc, the
// instruction index and the field. Multi-chip behaviour: tests/collectives/collective_device_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "firmware/kernels/collective_kernel.h"
#include "tests/model/engine_test_util.h"

namespace trnsim::test {
namespace {

using isa::CcAlgorithm;
using isa::DataType;
using isa::Engine;
using isa::Instruction;
using isa::Opcode;

class CollectiveEngineTest : public EngineTest {
 protected:
  std::vector<uint8_t> pattern(size_t bytes, uint8_t seed) {
    std::vector<uint8_t> v(bytes);
    for (size_t i = 0; i < bytes; ++i) v[i] = uint8_t(seed + 7 * i);
    return v;
  }
  std::vector<uint8_t> read_hbm(uint64_t addr, size_t bytes) {
    std::vector<uint8_t> v(bytes);
    drv_->read_hbm(addr, v.data(), bytes);
    return v;
  }
  /// expect_fault() on a freshly reset device (each run leaves the error latched).
  void expect_cc_fault(Engine e, const std::vector<std::array<uint8_t, isa::kInstrBytes>>& program, uint32_t code,
                       uint32_t index, const char* field) {
    dev_->write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
    expect_fault(e, program, code, index, field);
  }
  static Instruction sem(Opcode op, uint8_t s, uint32_t value) {
    Instruction i;
    i.op = op;
    i.sem.sem = s;
    i.sem.value = value;
    return i;
  }
};

TEST_F(CollectiveEngineTest, OneChipCollectivesLeaveHbmAsItIs) {
  const auto data = pattern(64, 3);
  drv_->write_hbm(0x1000, data.data(), data.size());
  const auto r = run_on(Engine::kCc, {kernels::cc_collective(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing,
                                                             0x1000, 16),
                                      kernels::cc_collective(Opcode::kAllGather, DataType::kBf16, CcAlgorithm::kRhd,
                                                             0x1000, 32),
                                      kernels::cc_collective(Opcode::kReduceScatter, DataType::kFp32,
                                                             CcAlgorithm::kRing, 0x1000, 0)});
  EXPECT_EQ(r.retired[size_t(Engine::kCc)], 4u);
  EXPECT_EQ(read_hbm(0x1000, data.size()), data);
  EXPECT_EQ(drv_->info().num_queues, 5u);
}

TEST_F(CollectiveEngineTest, SemaphoresOrderTheCcQueueWithTheDmaQueue) {
  // dma: copy A -> B, signal 0; cc: wait 0, all_reduce B, signal 1; dma: wait 1, copy B -> C.
  const auto data = pattern(256, 9);
  drv_->write_hbm(0x1000, data.data(), data.size());
  Instruction copy;
  copy.op = Opcode::kDmaCopy;
  copy.copy.src_space = copy.copy.dst_space = isa::MemSpace::kHbm;
  copy.copy.src_type = copy.copy.dst_type = DataType::kFp32;
  copy.copy.count = {64, 1, 1, 1};
  copy.copy.src_stride = copy.copy.dst_stride = {4, 0, 0, 0};
  Instruction a_to_b = copy, b_to_c = copy;
  a_to_b.copy.src_addr = 0x1000;
  a_to_b.copy.dst_addr = 0x2000;
  b_to_c.copy.src_addr = 0x2000;
  b_to_c.copy.dst_addr = 0x3000;
  isa::Program p;
  p.queue(Engine::kDma) = {a_to_b, sem(Opcode::kSemSignal, 0, 1), sem(Opcode::kSemWait, 1, 1), b_to_c,
                           Instruction::halt()};
  p.queue(Engine::kCc) = {sem(Opcode::kSemWait, 0, 1),
                          kernels::cc_collective(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing, 0x2000, 64),
                          sem(Opcode::kSemSignal, 1, 1), Instruction::halt()};
  drv_->load_program(p);
  const auto r = drv_->run(50'000'000);
  EXPECT_EQ(r.retired[size_t(Engine::kCc)], 4u);
  EXPECT_EQ(r.retired[size_t(Engine::kDma)], 5u);
  EXPECT_EQ(read_hbm(0x3000, data.size()), data);
}

TEST_F(CollectiveEngineTest, FaultsNameQueueCcIndexAndField) {
  const Instruction nop = Instruction::nop(), halt = Instruction::halt();
  const uint64_t hbm = drv_->info().hbm_bytes;
  const auto enc = [](const Instruction& i) { return isa::encode(i); };
  // No other chip on a 1-chip device.
  expect_cc_fault(Engine::kCc, {enc(nop), enc(kernels::cc_send(1, 0, 8)), enc(halt)}, regs::ERR_BAD_FIELD, 1, "peer");
  expect_cc_fault(Engine::kCc, {enc(kernels::cc_recv(0, 0, 8)), enc(halt)}, regs::ERR_BAD_FIELD, 0, "peer");
  // A buffer past the end of HBM.
  expect_cc_fault(Engine::kCc,
               {enc(kernels::cc_collective(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing, hbm - 8, 3)),
                enc(halt)},
               regs::ERR_HBM_RANGE, 0, "count");
  // A dtype the collective engine does not sum (fp16 = 1), decoded by the device.
  auto bad = enc(kernels::cc_collective(Opcode::kAllGather, DataType::kFp32, CcAlgorithm::kRing, 0, 4));
  bad[2] = 1;
  expect_cc_fault(Engine::kCc, {bad, enc(halt)}, regs::ERR_BAD_FIELD, 0, "dtype");
  // A collective on another queue, and another engine's instruction on cc.
  expect_cc_fault(Engine::kDma,
               {enc(kernels::cc_collective(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing, 0, 4)), enc(halt)},
               regs::ERR_WRONG_ENGINE, 0, "opcode");
  Instruction copy;
  copy.op = Opcode::kDmaCopy;
  expect_cc_fault(Engine::kCc, {enc(copy), enc(halt)}, regs::ERR_WRONG_ENGINE, 0, "opcode");
}

}  // namespace
}  // namespace trnsim::test
