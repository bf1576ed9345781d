// Driver unit tests against the mock device: discovery, allocation, memory access, program loading, the run
// protocol and the error texts.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"
#include "spec/trn_regs.h"
#include "tests/driver/backends.h"
#include "tests/driver/mock_device.h"

namespace trnsim::driver {
namespace {

using test::Backend;
using test::BackendDevice;
using test::backend_name;
using test::MockDevice;

// Every suite below but the discovery-failure and error-text ones runs on both backends: the mock itself, and the
// mock served over the wire protocol (tests/driver/backends.h).
const auto kBothBackends = ::testing::Values(Backend::kMock, Backend::kRemote);
class DriverAlloc : public ::testing::TestWithParam<Backend> {};
class DriverFaultDetail : public ::testing::TestWithParam<Backend> {};
class DriverInfo : public ::testing::TestWithParam<Backend> {};
class DriverMemory : public ::testing::TestWithParam<Backend> {};
class DriverProgram : public ::testing::TestWithParam<Backend> {};
class DriverRun : public ::testing::TestWithParam<Backend> {};

isa::Instruction sem_signal(uint8_t sem, uint32_t value) {
  isa::Instruction i;
  i.op = isa::Opcode::kSemSignal;
  i.sem.sem = sem;
  i.sem.value = value;
  return i;
}

isa::Instruction dma_copy(uint64_t src, uint64_t dst, uint16_t n) {
  isa::Instruction i;
  i.op = isa::Opcode::kDmaCopy;
  i.copy.src_type = isa::DataType::kBf16;
  i.copy.dst_type = isa::DataType::kBf16;
  i.copy.src_space = isa::MemSpace::kHbm;
  i.copy.dst_space = isa::MemSpace::kSbuf;
  i.copy.src_addr = src;
  i.copy.dst_addr = dst;
  i.copy.count = {n, 1, 1, 1};
  i.copy.src_stride = {2, 0, 0, 0};
  i.copy.dst_stride = {2, 0, 0, 0};
  return i;
}

isa::Instruction multiply(uint16_t k, uint16_t n) {
  isa::Instruction i;
  i.op = isa::Opcode::kMultiplyMoving;
  i.te.k = k;
  i.te.free_size = n;
  i.te.sbuf_addr = 64;
  i.te.psum_addr = 128;
  return i;
}

/// A small two-queue program: DMA copies then signals, TE waits then multiplies.
isa::Program two_queue_program() {
  isa::Program p;
  auto& dma = p.queue(isa::Engine::kDma);
  dma.push_back(dma_copy(0x1000, 0, 16));
  dma.push_back(dma_copy(0x2000, 0x40, 32));
  dma.push_back(sem_signal(0, 1));
  dma.push_back(isa::Instruction::halt());
  auto& te = p.queue(isa::Engine::kTe);
  isa::Instruction w;
  w.op = isa::Opcode::kSemWait;
  w.sem.sem = 0;
  w.sem.value = 1;
  te.push_back(w);
  isa::Instruction ls;
  ls.op = isa::Opcode::kLoadStationary;
  ls.te.k = 16;
  ls.te.free_size = 16;
  te.push_back(ls);
  te.push_back(multiply(16, 32));
  te.push_back(isa::Instruction::halt());
  return p;
}

// ---- discovery

TEST_P(DriverInfo, DecodesEveryConfigurationRegister) {
  DeviceInfo in = test::mock_tiny_info();
  in.te_rows = 8;  // rows != cols: the two TE_DIM fields must not be swapped
  in.te_cols = 4;
  in.sbuf_partitions = 8;
  in.sbuf_partition_bytes = 200 * 1024;
  in.psum_partitions = 4;
  in.psum_partition_bytes = 8 * 1024;
  in.psum_banks = 4;
  in.hbm_bytes = (5ull << 32) + 12345;  // needs HBM_BYTES_HI
  in.num_queues = 6;  // more than the ISA's queues is fine
  in.num_semaphores = 40;
  in.num_dma_engines = 7;
  in.te_clock_mhz = 1200;
  in.vec_elems_per_cycle = 16;
  in.vec_elems_per_cycle_16 = 40;
  MockDevice dev(in);
  BackendDevice backend(dev, GetParam());
  const Driver drv(backend.device());
  const DeviceInfo& got = drv.info();
  EXPECT_EQ(got.te_rows, 8u);
  EXPECT_EQ(got.te_cols, 4u);
  EXPECT_EQ(got.sbuf_partitions, 8u);
  EXPECT_EQ(got.sbuf_partition_bytes, 200u * 1024);
  EXPECT_EQ(got.psum_partitions, 4u);
  EXPECT_EQ(got.psum_partition_bytes, 8u * 1024);
  EXPECT_EQ(got.psum_banks, 4u);
  EXPECT_EQ(got.psum_bank_bytes(), 2048u);
  EXPECT_EQ(got.hbm_bytes, (5ull << 32) + 12345);
  EXPECT_EQ(got.num_queues, 6u);
  EXPECT_EQ(got.num_semaphores, 40u);
  EXPECT_EQ(got.num_dma_engines, 7u);
  EXPECT_EQ(got.te_clock_mhz, 1200u);
  EXPECT_EQ(got.vec_elems_per_cycle, 16u);
  EXPECT_EQ(got.vec_elems_per_cycle_16, 40u);
  EXPECT_EQ(got.vec_data_path().lanes, 8u) << "a lane per SBUF partition";
  EXPECT_DOUBLE_EQ(got.cycles_to_us(2400), 2.0);
}

TEST_P(DriverInfo, DiscoveryOnlyReads) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  const Driver drv(backend.device());
  for (const auto& a : dev.log) EXPECT_EQ(a.kind, MockDevice::Access::kReadReg) << "register " << a.addr;
  ASSERT_FALSE(dev.log.empty());
  EXPECT_EQ(dev.log.front().addr, regs::ID);
}

TEST(DriverInfo, WrongIdIsDeviceMismatch) {
  MockDevice dev;
  dev.poke(regs::ID, 0xDEADBEEF);
  try {
    Driver drv(dev);
    FAIL() << "no exception";
  } catch (const DeviceMismatch& e) {
    EXPECT_STREQ(e.what(), "not a trnsim device: ID register reads 0xdeadbeef, expected 0x54524e32");
  }
}

TEST(DriverInfo, OtherIsaVersionIsDeviceMismatch) {
  MockDevice dev;
  dev.poke(regs::VERSION, (1u << regs::VERSION_ISA_SHIFT) | 1u);
  EXPECT_THROW(Driver{dev}, DeviceMismatch);
}

TEST(DriverInfo, ZeroConfigurationRegisterIsDeviceMismatch) {
  for (uint32_t reg : {regs::SBUF_PARTITIONS, regs::PSUM_BANKS, regs::NUM_DMA_ENGINES, regs::TE_DIM}) {
    MockDevice dev;
    dev.poke(reg, 0);
    EXPECT_THROW(Driver{dev}, DeviceMismatch) << "register " << reg;
  }
  MockDevice one_queue;
  one_queue.poke(regs::NUM_QUEUES, 1);
  EXPECT_THROW(Driver{one_queue}, DeviceMismatch);
  MockDevice no_vector_queue;  // te, dma and act only: fewer than the ISA's four queues
  no_vector_queue.poke(regs::NUM_QUEUES, isa::kNumQueues - 1);
  EXPECT_THROW(Driver{no_vector_queue}, DeviceMismatch);
  MockDevice few_sems;
  few_sems.poke(regs::NUM_SEMAPHORES, 16);
  EXPECT_THROW(Driver{few_sems}, DeviceMismatch);
}

TEST(DriverInfo, AVectorDataPathNarrowerThanItsLanesIsDeviceMismatch) {
  MockDevice dev;  // 16 partitions
  dev.poke(regs::VEC_WIDTH, (32u << regs::VEC_WIDTH_ELEMS_16_SHIFT) | 8u);
  try {
    Driver drv(dev);
    FAIL() << "no exception";
  } catch (const DeviceMismatch& e) {
    EXPECT_STREQ(e.what(), "VEC_WIDTH reads 0x00200008: ELEMS (8) and ELEMS_16 (32) must each be at least one element "
                           "per lane (SBUF_PARTITIONS 16)");
  }
  MockDevice zero;
  zero.poke(regs::VEC_WIDTH, 0);
  EXPECT_THROW(Driver{zero}, DeviceMismatch);
}

TEST(DriverErrors, AllDeriveFromDriverError) {
  MockDevice dev;
  dev.poke(regs::ID, 0);
  EXPECT_THROW(Driver{dev}, DriverError);
  EXPECT_THROW(Driver{dev}, std::runtime_error);
  static_assert(std::is_base_of_v<DriverError, DeviceFault>);
  static_assert(std::is_base_of_v<DriverError, DriverTimeout>);
  static_assert(std::is_base_of_v<DriverError, OutOfDeviceMemory>);
  static_assert(std::is_base_of_v<DriverError, AddressError>);
  static_assert(std::is_base_of_v<DriverError, DeviceMismatch>);
  static_assert(std::is_base_of_v<std::runtime_error, DriverError>);
}

// ---- allocation

TEST_P(DriverAlloc, RespectsAlignmentAndDoesNotOverlap) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  uint64_t prev_end = 0;
  for (uint64_t align : {1ull, 2ull, 64ull, 4096ull, 8ull, 1ull << 20, 64ull}) {
    for (uint64_t bytes : {1ull, 3ull, 100ull}) {
      const uint64_t a = drv.alloc(bytes, align);
      EXPECT_EQ(a % align, 0u) << "align " << align;
      EXPECT_GE(a, prev_end);
      prev_end = a + bytes;
      EXPECT_EQ(drv.hbm_allocated(), prev_end);
    }
  }
  EXPECT_EQ(drv.alloc(10) % 64, 0u);  // default alignment 64
}

TEST_P(DriverAlloc, ExhaustionAndFreeAll) {
  DeviceInfo in = test::mock_tiny_info();
  in.hbm_bytes = 1 << 20;
  MockDevice dev(in);
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  EXPECT_EQ(drv.alloc(1000), 0u);
  const uint64_t b = drv.alloc((1 << 20) - 1024);
  EXPECT_EQ(b, 1024u);
  try {
    drv.alloc(1);
    FAIL() << "no exception";
  } catch (const OutOfDeviceMemory& e) {
    EXPECT_EQ(e.requested(), 1u);
    EXPECT_EQ(e.available(), 0u);
    EXPECT_NE(std::string(e.what()).find("do not fit in HBM"), std::string::npos) << e.what();
  }
  drv.free_all();
  EXPECT_EQ(drv.hbm_allocated(), 0u);
  EXPECT_EQ(drv.alloc(1 << 20, 1), 0u);  // exactly all of HBM
  drv.free_all();
  EXPECT_THROW(drv.alloc((1 << 20) + 1, 1), OutOfDeviceMemory);
  EXPECT_THROW(drv.alloc(~0ull, 1), OutOfDeviceMemory);  // no wrap-around
  drv.alloc(1);
  EXPECT_THROW(drv.alloc(64, 1ull << 63), OutOfDeviceMemory);
}

TEST_P(DriverAlloc, RejectsZeroSizeAndBadAlignment) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  EXPECT_THROW(drv.alloc(0), DriverError);
  EXPECT_THROW(drv.alloc(8, 0), DriverError);
  EXPECT_THROW(drv.alloc(8, 48), DriverError);
}

TEST_P(DriverAlloc, ProgramAreaAndAllocationsDoNotOverlap) {
  DeviceInfo in = test::mock_tiny_info();
  in.hbm_bytes = 64 * 1024;
  MockDevice dev(in);
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  drv.load_program(two_queue_program());  // two queues, 4 KiB each, at the top
  EXPECT_EQ(drv.program_base(0), 64u * 1024 - 8192);
  EXPECT_EQ(drv.program_base(1), 64u * 1024 - 4096);
  EXPECT_THROW(drv.alloc(64 * 1024 - 8192 + 1, 1), OutOfDeviceMemory);
  EXPECT_EQ(drv.alloc(64 * 1024 - 8192, 1), 0u);
  drv.free_all();
  drv.alloc(56 * 1024, 1);
  isa::Program bigger = two_queue_program();
  bigger.queue(isa::Engine::kTe).insert(bigger.queue(isa::Engine::kTe).begin(), 64, isa::Instruction::nop());
  EXPECT_THROW(drv.load_program(bigger), OutOfDeviceMemory);  // needs 12 KiB, 8 KiB are free
  drv.load_program(two_queue_program());                      // the same size as before still fits
}

// ---- memory access

TEST_P(DriverMemory, HbmRoundTripAtDeviceAddress) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  const uint64_t a = drv.alloc(256);
  std::vector<uint8_t> data(256);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  drv.write_hbm(a, data.data(), data.size());
  EXPECT_EQ(dev.log.back().kind, MockDevice::Access::kWriteMem);
  EXPECT_EQ(dev.log.back().addr, regs::HBM_BASE + a);
  EXPECT_EQ(dev.peek_mem(regs::HBM_BASE + a, 256), data);
  std::vector<uint8_t> back(256);
  drv.read_hbm(a, back.data(), back.size());
  EXPECT_EQ(back, data);
}

TEST_P(DriverMemory, SbufAndPsumDeviceAddresses) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  uint32_t v = 0;
  drv.read_sbuf(3, 100, &v, 4);
  EXPECT_EQ(dev.log.back().addr, regs::SBUF_BASE + 3ull * 192 * 1024 + 100);
  drv.read_psum(15, 16 * 1024 - 4, &v, 4);
  EXPECT_EQ(dev.log.back().addr, regs::PSUM_BASE + 15ull * 16 * 1024 + 16 * 1024 - 4);
}

TEST_P(DriverMemory, OutOfRangeIsAddressError) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  uint8_t buf[8] = {};
  EXPECT_THROW(drv.read_hbm((1ull << 30) - 4, buf, 8), AddressError);
  EXPECT_THROW(drv.write_hbm(~0ull - 2, buf, 8), AddressError);
  EXPECT_THROW(drv.read_sbuf(16, 0, buf, 4), AddressError);
  EXPECT_THROW(drv.read_sbuf(0, 192 * 1024 - 4, buf, 8), AddressError);
  EXPECT_THROW(drv.read_psum(16, 0, buf, 4), AddressError);
  EXPECT_THROW(drv.read_psum(0, 16 * 1024, buf, 1), AddressError);
  try {
    drv.read_sbuf(0, 192 * 1024 - 4, buf, 8);
  } catch (const AddressError& e) {
    EXPECT_STREQ(e.what(), "read_sbuf: bytes [0x2fffc, 0x30004) are outside [0, 0x30000)");
  }
  drv.read_hbm((1ull << 30) - 8, buf, 8);  // the last bytes are fine
}

// ---- programs

TEST_P(DriverProgram, WritesTheEncodedBytesAndProgramsTheQueues) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  const isa::Program p = two_queue_program();
  drv.load_program(p);
  for (uint32_t q = 0; q < 2; ++q) {
    const uint64_t base =
        (uint64_t(dev.peek(regs::queue_reg(q, regs::Q_BASE_HI))) << 32) | dev.peek(regs::queue_reg(q, regs::Q_BASE_LO));
    EXPECT_EQ(base, drv.program_base(q));
    EXPECT_EQ(base % 4096, 0u);
    const auto& instrs = p.queues[q];
    EXPECT_EQ(dev.peek(regs::queue_reg(q, regs::Q_LEN)), instrs.size());
    const auto mem = dev.peek_mem(regs::HBM_BASE + base, instrs.size() * isa::kInstrBytes);
    for (std::size_t i = 0; i < instrs.size(); ++i) {
      const auto enc = isa::encode(instrs[i]);
      EXPECT_EQ(0, std::memcmp(enc.data(), mem.data() + i * isa::kInstrBytes, isa::kInstrBytes))
          << "queue " << q << " instruction " << i;
    }
  }
  // The two queues do not overlap and sit at the top of HBM.
  EXPECT_GE(drv.program_base(1), drv.program_base(0) + p.queues[0].size() * isa::kInstrBytes);
  EXPECT_LE(drv.program_base(1) + p.queues[1].size() * isa::kInstrBytes, uint64_t(1) << 30);
}

TEST_P(DriverProgram, QueuesNotInTheProgramGetLengthZero) {
  DeviceInfo in = test::mock_tiny_info();
  in.num_queues = 5;
  MockDevice dev(in);
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  drv.load_program(two_queue_program());
  isa::Program te_only;
  te_only.queue(isa::Engine::kTe) = {isa::Instruction::nop(), isa::Instruction::halt()};
  drv.load_program(te_only);
  EXPECT_EQ(dev.peek(regs::queue_reg(0, regs::Q_LEN)), 2u);
  for (uint32_t q = 1; q < 5; ++q) EXPECT_EQ(dev.peek(regs::queue_reg(q, regs::Q_LEN)), 0u) << "queue " << q;
  EXPECT_EQ(drv.program_base(1), 0u);
}

TEST_P(DriverProgram, EmptyProgramIsAnError) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  EXPECT_THROW(drv.load_program(isa::Program{}), DriverError);
}

// ---- run

TEST_P(DriverRun, ProtocolAndResult) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  drv.load_program(two_queue_program());
  dev.outcome.cycles = 123456789012ull;  // needs CYCLE_HI
  dev.log.clear();
  const RunResult r = drv.run(1ull << 40);
  EXPECT_EQ(r.cycles, 123456789012ull);
  EXPECT_EQ(r.retired[0], 4u);
  EXPECT_EQ(r.retired[1], 4u);
  EXPECT_EQ(dev.doorbells(), 1);

  // The writes, in order: soft reset, clear and enable interrupts, doorbell for both queues; INT_STATUS cleared last.
  const std::vector<std::pair<uint32_t, uint32_t>> expected = {
      {regs::CTRL, regs::CTRL_SOFT_RESET_MASK},
      {regs::INT_STATUS, regs::INT_STATUS_DONE_MASK | regs::INT_STATUS_ERROR_MASK},
      {regs::INT_ENABLE, regs::INT_ENABLE_DONE_MASK | regs::INT_ENABLE_ERROR_MASK},
      {regs::DOORBELL, 0x3},
      {regs::INT_STATUS, regs::INT_STATUS_DONE_MASK | regs::INT_STATUS_ERROR_MASK},
  };
  EXPECT_EQ(dev.reg_writes(), expected);
  EXPECT_EQ(dev.peek(regs::INT_STATUS), 0u);
  // The wait got the caller's limit: in one call, or (the server runs a wait in slices) in slices that end when the
  // run does, long before the limit.
  uint64_t waited = 0;
  int waits = 0;
  for (const auto& a : dev.log) {
    if (a.kind == MockDevice::Access::kWait) {
      waited += a.value;
      ++waits;
    }
  }
  if (GetParam() == Backend::kMock) {
    EXPECT_EQ(waits, 1);
    EXPECT_EQ(waited, 1ull << 40);
  } else {
    EXPECT_GE(waited, 123456789012ull);
    EXPECT_LE(waited, 1ull << 40);
  }
  // A second run works the same (soft reset clears the previous status).
  EXPECT_EQ(drv.run(1ull << 40).cycles, 123456789012ull);
}

TEST_P(DriverRun, DoorbellOnlyForLoadedQueues) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  isa::Program dma_only;
  dma_only.queue(isa::Engine::kDma) = {isa::Instruction::halt()};
  drv.load_program(dma_only);
  const RunResult r = drv.run(10000);
  EXPECT_EQ(r.retired[0], 0u);
  EXPECT_EQ(r.retired[1], 1u);
  for (const auto& [reg, value] : dev.reg_writes()) {
    if (reg == regs::DOORBELL) {
      EXPECT_EQ(value, 0x2u);
    }
  }
}

TEST_P(DriverRun, WithoutProgramIsAnError) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  EXPECT_THROW(drv.run(100), DriverError);
  EXPECT_EQ(dev.doorbells(), 0);
}

TEST_P(DriverRun, CycleCounterReadRetriesWhenTheHighWordMoves) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  drv.load_program(two_queue_program());
  dev.outcome.cycles = 0x1FFFFFFFFull;
  int hi_reads = 0;
  dev.read_hook = [&](uint32_t off) -> std::optional<uint32_t> {
    if (off == regs::CYCLE_HI && ++hi_reads == 1) return 0u;  // first HI read before the low word wrapped
    return std::nullopt;
  };
  EXPECT_EQ(drv.run(1ull << 40).cycles, 0x1FFFFFFFFull);
  EXPECT_GE(hi_reads, 3);
}

TEST_P(DriverRun, SetWatchdogWritesTheRegister) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  drv.set_watchdog(5000);
  EXPECT_EQ(dev.peek(regs::WATCHDOG_CYCLES), 5000u);
}

// ---- device errors

struct FaultCase {
  uint32_t code, queue, index, info;
  const char* text;
};

class DriverFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(DriverFault, BecomesDeviceFaultWithOneLine) {
  const FaultCase& c = GetParam();
  MockDevice dev;
  Driver drv(dev);
  drv.load_program(two_queue_program());
  dev.outcome.kind = MockDevice::Outcome::kError;
  dev.outcome.cycles = 77;
  dev.outcome.err_code = c.code;
  dev.outcome.err_queue = c.queue;
  dev.outcome.err_index = c.index;
  dev.outcome.err_info = c.info;
  try {
    drv.run(1000);
    FAIL() << "no exception";
  } catch (const DeviceFault& e) {
    EXPECT_STREQ(e.what(), c.text);
    EXPECT_EQ(e.code(), c.code);
    EXPECT_EQ(e.queue(), c.queue);
    EXPECT_EQ(e.index(), c.index);
    EXPECT_EQ(e.info(), c.info);
    EXPECT_EQ(e.cycles(), 77u);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  EXPECT_EQ(dev.peek(regs::INT_STATUS), 0u);  // the driver acknowledged the interrupt
}

INSTANTIATE_TEST_SUITE_P(
    EveryCode, DriverFault,
    ::testing::Values(
        FaultCase{regs::ERR_BAD_OPCODE, 0, 3, 1,
                  "device error bad_opcode (the opcode byte is not an instruction): queue te, instruction 3, "
                  "field opcode"},
        FaultCase{regs::ERR_BAD_FIELD, 0, 4, 3,
                  "device error bad_field (a field holds an illegal value): queue te, instruction 4, field dtype"},
        FaultCase{regs::ERR_RESERVED_NONZERO, 1, 0, 19,
                  "device error reserved_nonzero (a reserved byte is not zero): queue dma, instruction 0, "
                  "field reserved"},
        FaultCase{regs::ERR_WRONG_ENGINE, 1, 2, 1,
                  "device error wrong_engine (opcode not executed by this queue's engine): queue dma, "
                  "instruction 2, field opcode"},
        FaultCase{regs::ERR_SBUF_RANGE, 1, 1, 9,
                  "device error sbuf_range (an SBUF access is outside SBUF): queue dma, instruction 1, "
                  "field dst_addr"},
        FaultCase{regs::ERR_PSUM_RANGE, 0, 2, 14,
                  "device error psum_range (a PSUM access is outside PSUM): queue te, instruction 2, "
                  "field psum_addr"},
        FaultCase{regs::ERR_HBM_RANGE, 1, 0, 8,
                  "device error hbm_range (an HBM access is outside HBM): queue dma, instruction 0, "
                  "field src_addr"},
        FaultCase{regs::ERR_TE_SHAPE, 0, 1, 15,
                  "device error te_shape (k or M larger than the array, or a PSUM write past a bank): queue te, "
                  "instruction 1, field k"},
        FaultCase{regs::ERR_NO_STATIONARY, 0, 2, 0,
                  "device error no_stationary (multiply_moving before any load_stationary): queue te, "
                  "instruction 2"},
        FaultCase{regs::ERR_DEADLOCK, 0, 0, 5,
                  "device error deadlock (every unfinished queue waits on a semaphore that nothing can signal): "
                  "queue te, instruction 0, semaphore 5"},
        FaultCase{regs::ERR_DEADLOCK, 1, 9, 0,
                  "device error deadlock (every unfinished queue waits on a semaphore that nothing can signal): "
                  "queue dma, instruction 9, semaphore 0"},
        FaultCase{regs::ERR_NO_HALT, 1, 4, 0,
                  "device error no_halt (the PC ran past Q_LEN without a halt): queue dma, instruction 4"},
        FaultCase{regs::ERR_WATCHDOG, 0, 7, 0,
                  "device error watchdog (for WATCHDOG_CYCLES cycles no queue retired an instruction and no DMA copy was "
                  "moving bytes): queue te "
                  "at instruction 7"},
        FaultCase{regs::ERR_PROGRAM_RANGE, 1, 0, 0,
                  "device error program_range (the queue's program is not inside HBM): queue dma, instruction 0"},
        FaultCase{regs::ERR_ENGINE_FAULT, 0, 2, 0,
                  "device error engine_fault (the RTL engine raised an error or a lockstep mismatch): queue te, "
                  "instruction 2"},
        FaultCase{regs::ERR_BAD_DOORBELL, 1, 0, 0,
                  "device error bad_doorbell (doorbell for a queue with Q_LEN 0 or while busy): queue dma"},
        FaultCase{regs::ERR_BAD_FIELD, 5, 1, 200,
                  "device error bad_field (a field holds an illegal value): queue 5, instruction 1, field id 200"},
        FaultCase{99, 0, 1, 0, "device error 99 (unknown error code): queue te, instruction 1"}));

TEST_P(DriverFaultDetail, CarriesTheFailingInstruction) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  const isa::Program p = two_queue_program();
  drv.load_program(p);
  dev.outcome.kind = MockDevice::Outcome::kError;
  dev.outcome.err_code = regs::ERR_SBUF_RANGE;
  dev.outcome.err_queue = 0;
  dev.outcome.err_index = 2;
  dev.outcome.err_info = 12;
  try {
    drv.run(1000);
    FAIL() << "no exception";
  } catch (const DeviceFault& e) {
    EXPECT_EQ(e.instruction(), isa::disassemble(p.queues[0][2]));
    EXPECT_FALSE(e.instruction().empty());
  }
}

TEST(DriverFaultDetail, FieldNamesComeFromTheIsa) {
  for (int id = 1; id <= isa::kNumFields; ++id) {
    const std::string text = DeviceFault::describe(regs::ERR_BAD_FIELD, 0, 0, static_cast<uint32_t>(id));
    EXPECT_NE(text.find("field " + std::string(isa::field_name(id))), std::string::npos) << text;
  }
}

TEST(DriverFaultDetail, CollectiveEngineErrors) {
  EXPECT_EQ(DeviceFault::describe(regs::ERR_CC_PEER_STOPPED, 4, 1, 15),
            "device error cc_peer_stopped (" + std::string(regs::err_code_text(regs::ERR_CC_PEER_STOPPED)) +
                "): queue cc, instruction 1, peer chip 15");
  const std::string mismatch = DeviceFault::describe(regs::ERR_CC_MISMATCH, 4, 0, uint32_t(isa::field_id("count")));
  EXPECT_NE(mismatch.find("device error cc_mismatch ("), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("): queue cc, instruction 0, field count"), std::string::npos) << mismatch;
  const std::string deadlock = DeviceFault::describe(regs::ERR_CC_DEADLOCK, 4, 2, 0);
  EXPECT_NE(deadlock.find("cc_deadlock"), std::string::npos) << deadlock;
  EXPECT_EQ(deadlock.substr(deadlock.size() - 25), ": queue cc, instruction 2") << deadlock;
  const std::string rhd = DeviceFault::describe(regs::ERR_CC_UNSUPPORTED, 4, 0, uint32_t(isa::field_id("algorithm")));
  EXPECT_NE(rhd.find("cc_unsupported"), std::string::npos) << rhd;
  EXPECT_NE(rhd.find("field algorithm"), std::string::npos) << rhd;
}

// ---- timeout

TEST_P(DriverRun, TimeoutNamesCyclesAndQueueStates) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  drv.load_program(two_queue_program());
  dev.outcome.kind = MockDevice::Outcome::kHang;
  dev.outcome.pc = {{0, 0}, {1, 2}};
  dev.outcome.state = {{0, regs::QSTATE_WAITING}, {1, regs::QSTATE_RUNNING}};
  try {
    drv.run(5000);
    FAIL() << "no exception";
  } catch (const DriverTimeout& e) {
    EXPECT_STREQ(e.what(),
                 "device did not finish within 5000 cycles (cycle counter 5000): queue te at instruction 0 of 4, "
                 "waiting; queue dma at instruction 2 of 4, running");
    EXPECT_EQ(e.waited_cycles(), 5000u);
    EXPECT_EQ(e.device_cycles(), 5000u);
    ASSERT_EQ(e.queues().size(), 2u);
    EXPECT_EQ(e.queues()[1].pc, 2u);
    EXPECT_EQ(e.queues()[1].state, regs::QSTATE_RUNNING);
    EXPECT_EQ(e.core(), 0u);
  }
}

TEST_P(DriverRun, ATimeoutOnACoreOtherThanCoreZeroNamesItAsADeviceFaultDoes) {
  MockDevice dev;
  dev.poke(regs::CHIP_CORES, 4);
  dev.poke(regs::CORE_ID, 3);  // the driver reads CORE_ID when it opens the core
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  drv.load_program(two_queue_program());
  dev.outcome.kind = MockDevice::Outcome::kHang;
  dev.outcome.pc = {{0, 1}, {1, 3}};
  dev.outcome.state = {{0, regs::QSTATE_WAITING}, {1, regs::QSTATE_WAITING}};
  try {
    drv.run(700);
    FAIL() << "no exception";
  } catch (const DriverTimeout& e) {
    EXPECT_STREQ(e.what(),
                 "device did not finish within 700 cycles (cycle counter 700): queue te at instruction 1 of 4, "
                 "waiting; queue dma at instruction 3 of 4, waiting (core 3)");
    EXPECT_EQ(e.core(), 3u);
    EXPECT_EQ(DriverTimeout::queues_text(e.queues()),
              "queue te at instruction 1 of 4, waiting; queue dma at instruction 3 of 4, waiting");
  }
}

TEST_P(DriverRun, DoneAfterTheLimitIsATimeout) {
  MockDevice dev;
  BackendDevice backend(dev, GetParam());
  Driver drv(backend.device());
  drv.load_program(two_queue_program());
  dev.outcome.cycles = 10001;
  EXPECT_THROW(drv.run(10000), DriverTimeout);
  dev.outcome.cycles = 10000;
  EXPECT_EQ(drv.run(10000).cycles, 10000u);
}

INSTANTIATE_TEST_SUITE_P(Backends, DriverAlloc, kBothBackends, backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, DriverFaultDetail, kBothBackends, backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, DriverInfo, kBothBackends, backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, DriverMemory, kBothBackends, backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, DriverProgram, kBothBackends, backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, DriverRun, kBothBackends, backend_name);

}  // namespace
}  // namespace trnsim::driver
