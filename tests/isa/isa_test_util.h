// Shared helpers of the ISA tests: instruction builders and the byte layout of docs/isa.md, written out here
// independently of the library so that the tests check the library against the document.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "firmware/isa/isa.h"

namespace trnsim::isa::test {

using Bytes = std::array<uint8_t, kInstrBytes>;

/// Reserved byte offsets of each opcode's format (docs/isa.md, "Formats").
inline std::set<std::size_t> reserved_offsets(Opcode op) {
  std::set<std::size_t> out;
  auto add = [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i <= last; ++i) out.insert(i);
  };
  switch (op) {
    case Opcode::kNop:
    case Opcode::kHalt: add(1, 63); break;
    case Opcode::kSemSignal:
    case Opcode::kSemWait: add(1, 3); add(5, 7); add(12, 63); break;
    case Opcode::kDmaCopy:
    case Opcode::kPsumCopy: add(6, 7); break;
    case Opcode::kLoadStationary:
    case Opcode::kMultiplyMoving: add(3, 7); add(28, 63); break;
  }
  return out;
}

inline Instruction sem_instr(Opcode op, uint8_t sem, uint32_t value) {
  Instruction i;
  i.op = op;
  i.sem = {sem, value};
  return i;
}

inline Instruction copy_instr(Opcode op, const CopyFields& c) {
  Instruction i;
  i.op = op;
  i.copy = c;
  return i;
}

inline Instruction te_instr(Opcode op, Dtype dt, uint64_t sbuf, uint64_t psum, uint16_t k, uint16_t free_size,
                            bool acc) {
  Instruction i;
  i.op = op;
  i.te.dtype = dt;
  i.te.sbuf_addr = sbuf;
  i.te.psum_addr = psum;
  i.te.k = k;
  i.te.free_size = free_size;
  i.te.accumulate = acc;
  return i;
}

/// A valid instruction of every opcode (psum_copy reads PSUM fp32 and writes SBUF).
inline std::vector<Instruction> one_of_each() {
  CopyFields dma;
  dma.src_type = DataType::kBf16;
  dma.dst_type = DataType::kBf16;
  dma.src_space = MemSpace::kHbm;
  dma.dst_space = MemSpace::kSbuf;
  dma.src_addr = 0x1000;
  dma.count = {64, 16, 1, 1};
  dma.src_stride = {2, 128, 0, 0};
  dma.dst_stride = {2, 196608, 0, 0};
  CopyFields pc;
  pc.src_type = DataType::kFp32;
  pc.dst_type = DataType::kFp8E4M3;
  pc.src_space = MemSpace::kPsum;
  pc.dst_space = MemSpace::kSbuf;
  pc.count = {512, 16, 1, 1};
  pc.src_stride = {4, 16384, 0, 0};
  pc.dst_stride = {1, 196608, 0, 0};
  return {Instruction::nop(),
          Instruction::halt(),
          sem_instr(Opcode::kSemSignal, 3, 1),
          sem_instr(Opcode::kSemWait, 3, 2),
          copy_instr(Opcode::kDmaCopy, dma),
          te_instr(Opcode::kLoadStationary, Dtype::kBf16, 0, 0, 16, 16, false),
          te_instr(Opcode::kMultiplyMoving, Dtype::kFp8E4M3, 0x200, 0, 16, 512, true),
          copy_instr(Opcode::kPsumCopy, pc)};
}

inline uint64_t le(const Bytes& b, std::size_t at, std::size_t n) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(b[at + i]) << (8 * i);
  return v;
}

}  // namespace trnsim::isa::test
