// Shared helpers of the ISA tests: instruction builders and the byte layout of docs/isa.md, written out here
// independently of the library so that the tests check the library against the document.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "firmware/isa/isa.h"

namespace trnsim::isa::test {

using Bytes = std::array<uint8_t, kInstrBytes>;

/// Reserved byte offsets of each opcode's format (docs/isa.md, "Encoding"). For tensor_scalar the instruction is
/// taken to have an op1 (bytes 40..43 hold imm1), for activation a bias tensor and a sum (bytes 44..59 hold them).
inline std::set<std::size_t> reserved_offsets(Opcode op) {
  std::set<std::size_t> out;
  auto add = [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i <= last; ++i) out.insert(i);
  };
  switch (op) {
    case Opcode::kNop:
    case Opcode::kHalt: add(1, 63); break;
    case Opcode::kSemSignal: add(2, 3); add(5, 7); add(12, 63); break;  // byte 1: flags (bit 0: core in byte 5)
    case Opcode::kSemWait: add(1, 3); add(5, 7); add(12, 63); break;
    case Opcode::kDmaCopy:
    case Opcode::kPsumCopy: add(6, 7); break;
    case Opcode::kLoadStationary:
    case Opcode::kMultiplyMoving: add(3, 7); add(28, 63); break;
    case Opcode::kTensorTensor: add(3, 3); add(10, 11); add(48, 63); break;
    case Opcode::kTensorScalar: add(10, 11); add(44, 63); break;
    case Opcode::kTensorReduce: add(10, 11); add(36, 63); break;
    case Opcode::kTensorCopy:
    case Opcode::kTranspose: add(2, 3); add(10, 11); add(36, 63); break;
    case Opcode::kMemset: add(2, 3); add(10, 11); add(24, 35); add(40, 63); break;
    case Opcode::kIota: add(2, 3); add(10, 11); add(24, 35); add(52, 63); break;
    case Opcode::kSelect: add(2, 3); add(10, 11); add(60, 63); break;
    case Opcode::kQuantizeMx:  // out and scales are locations: their type bytes (13, 37) and strides are reserved
      add(3, 3); add(10, 11); add(13, 13); add(20, 23); add(37, 37); add(44, 63); break;
    case Opcode::kActivation: add(3, 3); add(10, 11); add(40, 43); add(60, 63); break;
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter: add(1, 1); add(4, 7); add(24, 63); break;
    case Opcode::kSend:
    case Opcode::kRecv: add(1, 3); add(24, 63); break;
  }
  return out;
}

inline Operand operand(MemSpace space, DataType type, uint16_t partition, uint32_t offset, int16_t s0 = 0,
                       int16_t s1 = 0) {
  Operand o;
  o.space = space;
  o.type = type;
  o.partition = partition;
  o.offset = offset;
  o.stride = {s0, s1};
  return o;
}

inline Instruction vec_instr(Opcode op, const VecFields& v) {
  Instruction i;
  i.op = op;
  i.vec = v;
  return i;
}

inline Instruction act_instr(const ActFields& a) {
  Instruction i;
  i.op = Opcode::kActivation;
  i.act = a;
  return i;
}

/// A valid instruction of each Vector/Scalar opcode, in opcode order (tensor_tensor .. transpose, activation).
inline std::vector<Instruction> tensor_ops() {
  VecFields base;
  base.partitions = 16;
  base.free = {64, 2};
  base.out = operand(MemSpace::kSbuf, DataType::kBf16, 0, 0x100, 1, 64);
  base.in0 = operand(MemSpace::kPsum, DataType::kFp32, 0, 0x40, 1, 64);
  std::vector<Instruction> out;
  VecFields tt = base;
  tt.op = AluOp::kMultiply;
  tt.no_sat = true;
  tt.in1 = operand(MemSpace::kSbuf, DataType::kFp8E4M3, 0, 0x801, 0, 0);
  out.push_back(vec_instr(Opcode::kTensorTensor, tt));
  VecFields ts = base;
  ts.op = AluOp::kSubtract;
  ts.imm0 = 0x3F800000u;
  ts.op1 = AluOp::kMultiply;
  ts.imm1 = 0xC0000000u;
  out.push_back(vec_instr(Opcode::kTensorScalar, ts));
  VecFields tr = base;
  tr.op = AluOp::kMax;
  tr.axis = ReduceAxis::kInner;
  tr.out = operand(MemSpace::kSbuf, DataType::kFp32, 0, 0x200, 0, 1);
  out.push_back(vec_instr(Opcode::kTensorReduce, tr));
  VecFields tc = base;
  tc.out.type = DataType::kFp8E5M2;
  out.push_back(vec_instr(Opcode::kTensorCopy, tc));
  VecFields ms = base;
  ms.in0 = Operand{};
  ms.imm0 = 0xFF800000u;  // -inf
  out.push_back(vec_instr(Opcode::kMemset, ms));
  VecFields io = base;
  io.in0 = Operand{};
  io.base = -5;
  io.pstep = 3;
  io.step = {1, 64};
  out.push_back(vec_instr(Opcode::kIota, io));
  VecFields sel = base;
  sel.in1 = operand(MemSpace::kSbuf, DataType::kFp16, 0, 0x400, 1, 64);
  sel.in2 = operand(MemSpace::kSbuf, DataType::kFp32, 0, 0x800, 0, 0);
  out.push_back(vec_instr(Opcode::kSelect, sel));
  VecFields tp;
  tp.partitions = 32;
  tp.free = {32, 1};
  tp.out = operand(MemSpace::kSbuf, DataType::kBf16, 32, 0x40, 1, 0);
  tp.in0 = operand(MemSpace::kSbuf, DataType::kBf16, 0, 0, 1, 0);
  out.push_back(vec_instr(Opcode::kTranspose, tp));
  ActFields act;
  act.func = ActFunc::kGelu;
  act.partitions = 128;
  act.free = {512, 1};
  act.out = operand(MemSpace::kSbuf, DataType::kBf16, 0, 0x1000, 1, 0);
  act.in0 = operand(MemSpace::kPsum, DataType::kFp32, 0, 0x800, 1, 0);
  act.scale = 0x3E000000u;  // 0.125
  act.bias_tensor = true;
  act.bias_ap = operand(MemSpace::kSbuf, DataType::kFp32, 0, 0x20);
  act.reduce = true;
  act.sum = operand(MemSpace::kSbuf, DataType::kFp32, 0, 0x24);
  out.push_back(act_instr(act));
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

/// A valid instruction of every opcode (psum_copy reads PSUM fp32 and writes SBUF); indices 0..7 are the TE/DMA
/// opcodes in opcode order, then tensor_ops().
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
  std::vector<Instruction> out = {Instruction::nop(),
                                  Instruction::halt(),
                                  sem_instr(Opcode::kSemSignal, 3, 1),
                                  sem_instr(Opcode::kSemWait, 3, 2),
                                  copy_instr(Opcode::kDmaCopy, dma),
                                  te_instr(Opcode::kLoadStationary, Dtype::kBf16, 0, 0, 16, 16, false),
                                  te_instr(Opcode::kMultiplyMoving, Dtype::kFp8E4M3, 0x200, 0, 16, 512, true),
                                  copy_instr(Opcode::kPsumCopy, pc)};
  for (const Instruction& i : tensor_ops()) out.push_back(i);
  // quantize_mx has rules of its own (no flags, locations for out and scales), so it is not among tensor_ops().
  VecFields qm;
  qm.mx_dtype = Dtype::kMxFp8E4M3;
  qm.partitions = 64;
  qm.free = {16, 1};
  qm.out = operand(MemSpace::kSbuf, DataType::kFp32, 0, 0x300);
  qm.in0 = operand(MemSpace::kSbuf, DataType::kFp32, 0, 0x100, 1, 0);
  qm.scales = operand(MemSpace::kSbuf, DataType::kFp32, 64, 0x40);
  out.push_back(vec_instr(Opcode::kQuantizeMx, qm));
  return out;
}

inline uint64_t le(const Bytes& b, std::size_t at, std::size_t n) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(b[at + i]) << (8 * i);
  return v;
}

/// A gtest parameter name for error case `index` that expects `reason` in its message: "c07_unknown_mnemonic_mul"
/// (the index, then the reason's letters and digits, runs of anything else as one '_', at most 40 characters), so
/// that the names are stable from build to build and readable in ctest's list.
inline std::string case_name(std::size_t index, const char* reason) {
  std::string name = (index < 10 ? "c0" : "c") + std::to_string(index) + "_";
  for (const char* c = reason; *c != '\0' && name.size() < 44; ++c) {
    const bool alnum = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
    if (alnum) {
      name += *c;
    } else if (name.back() != '_') {
      name += '_';
    }
  }
  while (name.back() == '_') name.pop_back();
  return name;
}

}  // namespace trnsim::isa::test
