// Helpers of the Vector/Scalar engine tests on the device: instruction builders, tiles in SBUF/PSUM written and read
// straight through device memory, special values of every data type, and one-queue programs run through the
// driver.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/golden/engine_golden.h"
#include "firmware/golden/fp_golden.h"
#include "tests/model/device_fixture.h"

namespace trnsim::test {

using isa::DataType;
using isa::MemSpace;
using isa::Opcode;

inline constexpr DataType kAllTypes[] = {DataType::kBf16, DataType::kFp16, DataType::kFp8E4M3, DataType::kFp8E5M2,
                                         DataType::kFp32};

inline std::string type_name(DataType t) { return std::string(isa::data_type_name(t)); }

inline uint32_t fbits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

inline isa::Operand opnd(MemSpace space, DataType type, int partition, uint32_t offset, int s0 = 1, int s1 = 0) {
  isa::Operand o;
  o.space = space;
  o.type = type;
  o.partition = uint16_t(partition);
  o.offset = offset;
  o.stride = {int16_t(s0), int16_t(s1)};
  return o;
}

/// A dense [P, n] SBUF operand at partition 0 (one row of n elements per partition).
inline isa::Operand sbuf(DataType type, uint32_t offset, int n = 2) {
  return opnd(MemSpace::kSbuf, type, 0, offset, 1, n);
}

inline isa::Instruction vec(Opcode op, int partitions, int n0, int n1, const isa::Operand& out,
                            const isa::Operand& in0 = {}, const isa::Operand& in1 = {},
                            const isa::Operand& in2 = {}) {
  isa::Instruction i;
  i.op = op;
  i.vec.partitions = uint16_t(partitions);
  i.vec.free = {uint16_t(n0), uint16_t(n1)};
  i.vec.out = out;
  i.vec.in0 = in0;
  i.vec.in1 = in1;
  i.vec.in2 = in2;
  return i;
}

inline isa::Instruction activation(isa::ActFunc f, int partitions, int n0, int n1, const isa::Operand& out,
                                   const isa::Operand& in0, uint32_t scale = 0x3F800000u, uint32_t bias = 0) {
  isa::Instruction i;
  i.op = Opcode::kActivation;
  i.act.func = f;
  i.act.partitions = uint16_t(partitions);
  i.act.free = {uint16_t(n0), uint16_t(n1)};
  i.act.out = out;
  i.act.in0 = in0;
  i.act.scale = scale;
  i.act.bias = bias;
  return i;
}

/// Patterns that matter for a data type: zeros, subnormal and normal edges, one, max, infinities, NaNs, FP8 edges,
/// and (FP32) values whose narrowing ties or overflows.
inline std::vector<uint32_t> special_values(DataType t) {
  switch (t) {
    case DataType::kFp32:
      return {0u,          0x80000000u, 1u,          0x80000001u, 0x007FFFFFu, 0x00800000u, 0x3F800000u,
              0xBF800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u,
              0xFFFFFFFFu, 0x47800000u, 0x477FF000u, 0x43E80000u, 0x43E88000u, 0x47700000u, 0x3FA88000u,
              0x3F828000u, 0x4B800000u, 0x33800000u, 0xC2C80000u};
    case DataType::kBf16:
      return {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80,
              0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x4B80};
    case DataType::kFp16:
      return {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00,
              0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF, 0x6400};
    case DataType::kFp8E4M3:
      return {0x00, 0x80, 0x01, 0x81, 0x07, 0x08, 0x38, 0xB8, 0x7E, 0xFE, 0x7F, 0xFF, 0x77, 0x78, 0x30, 0x40};
    case DataType::kFp8E5M2:
      return {0x00, 0x80, 0x01, 0x81, 0x03, 0x04, 0x3C, 0xBC, 0x7B, 0xFB, 0x7C, 0xFC, 0x7D, 0x7E, 0x7F, 0x40};
    case DataType::kMxFp8E4M3:
    case DataType::kMxFp8E5M2:
    case DataType::kMxFp4:  // Tensor Engine operands only, not engine or copy types
      break;
  }
  return {};
}

/// Random patterns of a type: half arbitrary bits (every class of value), half "ordinary" values N(0, scale).
inline std::vector<uint32_t> random_values(DataType t, size_t n, std::mt19937_64& rng, float scale = 4.0f) {
  std::vector<uint32_t> v(n);
  std::normal_distribution<float> normal(0.0f, scale);
  const uint32_t mask = t == DataType::kFp32 ? 0xFFFFFFFFu : isa::data_type_bytes(t) == 2 ? 0xFFFFu : 0xFFu;
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 2) {
      v[i] = uint32_t(rng()) & mask;
    } else {
      v[i] = golden::element_from_f32(t, fbits(normal(rng)), true);
    }
  }
  return v;
}

class EngineTest : public DeviceTest {
 protected:
  uint32_t partition_bytes(MemSpace s) const {
    return s == MemSpace::kPsum ? drv_->info().psum_partition_bytes : drv_->info().sbuf_partition_bytes;
  }
  uint64_t address(MemSpace s, int partition, uint32_t offset) const {
    return (s == MemSpace::kPsum ? regs::PSUM_BASE : regs::SBUF_BASE) + uint64_t(partition) * partition_bytes(s) +
           offset;
  }

  /// Writes `values` (patterns of `t`) as a dense [P, n] tile at partition p0, byte `offset` of each partition.
  void put(MemSpace s, int p0, uint32_t offset, DataType t, int P, int n, const std::vector<uint32_t>& values) {
    ASSERT_EQ(values.size(), size_t(P) * n);
    const unsigned es = isa::data_type_bytes(t);
    std::vector<uint8_t> row(size_t(n) * es);
    for (int p = 0; p < P; ++p) {
      for (int i = 0; i < n; ++i) {
        for (unsigned b = 0; b < es; ++b) row[size_t(i) * es + b] = uint8_t(values[size_t(p) * n + i] >> (8 * b));
      }
      dev_->write_mem(address(s, p0 + p, offset), row.data(), row.size());
    }
  }
  void put(int p0, uint32_t offset, DataType t, int P, int n, const std::vector<uint32_t>& values) {
    put(MemSpace::kSbuf, p0, offset, t, P, n, values);
  }

  /// Reads a dense [P, n] tile of `t` patterns.
  std::vector<uint32_t> get(MemSpace s, int p0, uint32_t offset, DataType t, int P, int n) {
    const unsigned es = isa::data_type_bytes(t);
    std::vector<uint32_t> out(size_t(P) * n);
    std::vector<uint8_t> row(size_t(n) * es);
    for (int p = 0; p < P; ++p) {
      dev_->read_mem(address(s, p0 + p, offset), row.data(), row.size());
      for (int i = 0; i < n; ++i) {
        uint32_t v = 0;
        for (unsigned b = 0; b < es; ++b) v |= uint32_t(row[size_t(i) * es + b]) << (8 * b);
        out[size_t(p) * n + i] = v;
      }
    }
    return out;
  }
  std::vector<uint32_t> get(int p0, uint32_t offset, DataType t, int P, int n) {
    return get(MemSpace::kSbuf, p0, offset, t, P, n);
  }

  /// Fills `bytes` bytes of every partition from `offset` with `byte` (SBUF or PSUM).
  void fill(MemSpace s, uint32_t offset, uint32_t bytes, uint8_t byte) {
    const std::vector<uint8_t> v(bytes, byte);
    const int parts = int(s == MemSpace::kPsum ? drv_->info().psum_partitions : drv_->info().sbuf_partitions);
    for (int p = 0; p < parts; ++p) dev_->write_mem(address(s, p, offset), v.data(), v.size());
  }

  /// Runs `instrs` (then halt) on one queue through the driver.
  driver::RunResult run_on(isa::Engine e, std::vector<isa::Instruction> instrs) {
    isa::Program p;
    instrs.push_back(isa::Instruction::halt());
    p.queue(e) = instrs;
    drv_->load_program(p);
    return drv_->run(50'000'000);
  }
  driver::RunResult run_vec(std::vector<isa::Instruction> instrs) { return run_on(isa::Engine::kVec, instrs); }
  driver::RunResult run_act(std::vector<isa::Instruction> instrs) { return run_on(isa::Engine::kAct, instrs); }

  /// Runs a program expected to fail and checks the error registers.
  void expect_fault(isa::Engine e, const std::vector<std::array<uint8_t, isa::kInstrBytes>>& program, uint32_t code,
                    uint32_t index, const char* field) {
    run_raw(int(e), program);
    EXPECT_EQ(dev_->read_reg(regs::STATUS) & regs::STATUS_ERROR_MASK, regs::STATUS_ERROR_MASK);
    EXPECT_EQ(dev_->read_reg(regs::ERR_CODE), code) << regs::err_code_name(dev_->read_reg(regs::ERR_CODE)) << ": "
                                                    << dev_->fault_detail();
    EXPECT_EQ(dev_->read_reg(regs::ERR_QUEUE), uint32_t(e));
    EXPECT_EQ(dev_->read_reg(regs::ERR_INDEX), index);
    EXPECT_EQ(isa::field_name(int(dev_->read_reg(regs::ERR_INFO))), field) << dev_->fault_detail();
    EXPECT_FALSE(dev_->fault_detail().empty());
  }
};

}  // namespace trnsim::test
