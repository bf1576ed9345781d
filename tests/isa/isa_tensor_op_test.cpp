// The Vector and Scalar engines' instructions (docs/isa.md, "tensor-op formats"): opcodes, ALU ops and activation
// functions, the byte layout written out here from the document, round trips, every decode and validate error,
// program text (fields, defaults, canonical form, FP32 immediates, LINE:COL errors) and 4-queue program files.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "firmware/isa/isa.h"
#include "tests/isa/isa_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim::isa {
namespace {

using test::act_instr;
using test::Bytes;
using test::le;
using test::operand;
using test::vec_instr;

uint32_t fbits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

std::optional<IsaError> decode_bytes(const Bytes& b, Instruction* out = nullptr) {
  Instruction scratch;
  return decode(b.data(), out ? out : &scratch);
}

void expect_error(const Bytes& b, IsaError::Code code, const std::string& field, const std::string& text = "") {
  const auto err = decode_bytes(b);
  ASSERT_TRUE(err.has_value()) << "decoded without error";
  EXPECT_EQ(err->code, code) << err->message;
  EXPECT_EQ(err->field, field) << err->message;
  EXPECT_NE(err->message.find(text), std::string::npos) << err->message;
  EXPECT_NE(field_id(err->field), 0) << err->field;
}

const std::vector<Instruction>& ops() {
  static const std::vector<Instruction> v = test::tensor_ops();
  return v;
}
const Instruction& op_of(Opcode code) {
  for (const Instruction& i : ops()) {
    if (i.op == code) return i;
  }
  throw std::logic_error("no such tensor op");
}

// ---- names

TEST(IsaTensorOpNames, OpcodesQueuesOpsAndFunctions) {
  const std::pair<Opcode, uint8_t> values[] = {
      {Opcode::kTensorTensor, 0x40}, {Opcode::kTensorScalar, 0x41}, {Opcode::kTensorReduce, 0x42},
      {Opcode::kTensorCopy, 0x43},   {Opcode::kMemset, 0x44},       {Opcode::kIota, 0x45},
      {Opcode::kSelect, 0x46},       {Opcode::kTranspose, 0x47},    {Opcode::kQuantizeMx, 0x48},
      {Opcode::kActivation, 0x50}};
  const char* names[] = {"tensor_tensor", "tensor_scalar", "tensor_reduce", "tensor_copy", "memset",
                         "iota",          "select",        "transpose",     "quantize_mx", "activation"};
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(static_cast<uint8_t>(values[i].first), values[i].second);
    EXPECT_EQ(opcode_name(values[i].first).value_or("?"), names[i]);
    EXPECT_EQ(kAllOpcodes[8 + i], values[i].first);
    EXPECT_TRUE(is_tensor_op(values[i].first));
  }
  EXPECT_EQ(std::size(kAllOpcodes), 23u);
  EXPECT_FALSE(is_tensor_op(Opcode::kPsumCopy));
  EXPECT_FALSE(is_tensor_op(static_cast<Opcode>(0x49)));
  const char* alu[] = {"none",     "add",   "subtract", "multiply", "max",   "min",       "divide", "is_equal",
                       "not_equal", "is_gt", "is_ge",    "is_lt",    "is_le", "rsubtract", "rdivide"};
  ASSERT_EQ(kNumAluOps, 15);
  for (int i = 0; i < kNumAluOps; ++i) EXPECT_EQ(alu_op_name(static_cast<AluOp>(i)), alu[i]);
  EXPECT_EQ(alu_op_name(static_cast<AluOp>(15)), "?");
  const char* act[] = {"identity", "relu", "gelu_tanh", "gelu",       "sigmoid", "tanh",
                       "exp",      "silu", "rsqrt",     "reciprocal", "square",  "log"};
  ASSERT_EQ(kNumActFuncs, 12);
  for (int i = 0; i < kNumActFuncs; ++i) EXPECT_EQ(act_func_name(static_cast<ActFunc>(i)), act[i]);
  EXPECT_EQ(act_func_name(static_cast<ActFunc>(12)), "?");
  EXPECT_EQ(static_cast<int>(ReduceAxis::kAll), 0);
  EXPECT_EQ(static_cast<int>(ReduceAxis::kInner), 1);
}

// ---- byte layout (docs/isa.md, written out independently)

/// Checks a 12-byte operand slot at `at`.
void expect_operand(const Bytes& b, std::size_t at, int space, int type, uint16_t partition, uint32_t offset,
                    int16_t s0, int16_t s1) {
  SCOPED_TRACE("operand at byte " + std::to_string(at));
  EXPECT_EQ(b[at], space);
  EXPECT_EQ(b[at + 1], type);
  EXPECT_EQ(le(b, at + 2, 2), partition);
  EXPECT_EQ(le(b, at + 4, 4), offset);
  EXPECT_EQ(le(b, at + 8, 2), static_cast<uint16_t>(s0));
  EXPECT_EQ(le(b, at + 10, 2), static_cast<uint16_t>(s1));
}

void expect_zero(const Bytes& b, std::size_t first, std::size_t last) {
  for (std::size_t i = first; i <= last; ++i) EXPECT_EQ(b[i], 0) << "byte " << i;
}

TEST(IsaTensorOpEncode, HeaderAndOperandSlots) {
  VecFields v;
  v.no_sat = true;
  v.op = AluOp::kRdivide;
  v.partitions = 0x0102;
  v.free = {0x0304, 0x0506};
  v.out = operand(MemSpace::kPsum, DataType::kFp32, 0x1122, 0x33445568, -2, 0x7FFF);
  v.in0 = operand(MemSpace::kSbuf, DataType::kFp16, 0x0A0B, 0x0C0D0E10, -32768, 7);
  v.in1 = operand(MemSpace::kSbuf, DataType::kFp8E5M2, 96, 0xFFFFFFFF, 0, -1);
  const Bytes b = encode(vec_instr(Opcode::kTensorTensor, v));
  EXPECT_EQ(b[0], 0x40);
  EXPECT_EQ(b[1], 0x02) << "flags: bit 1 no_sat";
  EXPECT_EQ(b[2], 14) << "op rdivide";
  EXPECT_EQ(b[3], 0);
  EXPECT_EQ(le(b, 4, 2), 0x0102u);
  EXPECT_EQ(le(b, 6, 2), 0x0304u);
  EXPECT_EQ(le(b, 8, 2), 0x0506u);
  expect_zero(b, 10, 11);
  expect_operand(b, 12, 2, 4, 0x1122, 0x33445568, -2, 0x7FFF);
  expect_operand(b, 24, 1, 1, 0x0A0B, 0x0C0D0E10, -32768, 7);
  expect_operand(b, 36, 1, 3, 96, 0xFFFFFFFF, 0, -1);
  expect_zero(b, 48, 63);
  // The byte order of each little-endian field, once.
  EXPECT_EQ(b[4], 0x02);
  EXPECT_EQ(b[5], 0x01);
  EXPECT_EQ(b[16], 0x68);
  EXPECT_EQ(b[19], 0x33);
}

TEST(IsaTensorOpEncode, PerOpcodeFields) {
  VecFields v;
  v.partitions = 3;
  v.free = {4, 5};
  v.out = operand(MemSpace::kSbuf, DataType::kFp32, 0, 0x10, 1, 4);
  v.in0 = operand(MemSpace::kSbuf, DataType::kBf16, 0, 0x20, 1, 4);
  v.in1 = operand(MemSpace::kSbuf, DataType::kBf16, 0, 0x40, 1, 4);
  v.in2 = operand(MemSpace::kSbuf, DataType::kBf16, 0, 0x60, 1, 4);

  VecFields ts = v;
  ts.op = AluOp::kIsGe;
  ts.op1 = AluOp::kMultiply;
  ts.imm0 = 0xA1B2C3D4u;
  ts.imm1 = 0x01020304u;
  Bytes b = encode(vec_instr(Opcode::kTensorScalar, ts));
  EXPECT_EQ(b[0], 0x41);
  EXPECT_EQ(b[2], 10) << "op is_ge";
  EXPECT_EQ(b[3], 3) << "op1 multiply";
  EXPECT_EQ(le(b, 36, 4), 0xA1B2C3D4u) << "imm0";
  EXPECT_EQ(le(b, 40, 4), 0x01020304u) << "imm1";
  expect_zero(b, 44, 63);

  VecFields tr = v;
  tr.op = AluOp::kMin;
  tr.axis = ReduceAxis::kInner;
  tr.out.stride = {0, 2};
  b = encode(vec_instr(Opcode::kTensorReduce, tr));
  EXPECT_EQ(b[0], 0x42);
  EXPECT_EQ(b[2], 5) << "op min";
  EXPECT_EQ(b[3], 1) << "axis inner";
  expect_operand(b, 24, 1, 0, 0, 0x20, 1, 4);
  expect_zero(b, 36, 63);

  b = encode(vec_instr(Opcode::kTensorCopy, v));
  EXPECT_EQ(b[0], 0x43);
  expect_zero(b, 2, 3);
  expect_operand(b, 24, 1, 0, 0, 0x20, 1, 4);
  expect_zero(b, 36, 63);

  VecFields ms = v;
  ms.imm0 = 0x7F800000u;
  b = encode(vec_instr(Opcode::kMemset, ms));
  EXPECT_EQ(b[0], 0x44);
  expect_zero(b, 24, 35);
  EXPECT_EQ(le(b, 36, 4), 0x7F800000u) << "value";
  expect_zero(b, 40, 63);

  VecFields io = v;
  io.base = -2;
  io.pstep = 0x12345678;
  io.step = {-3, 0x7FFFFFFF};
  b = encode(vec_instr(Opcode::kIota, io));
  EXPECT_EQ(b[0], 0x45);
  expect_zero(b, 24, 35);
  EXPECT_EQ(le(b, 36, 4), 0xFFFFFFFEu) << "base";
  EXPECT_EQ(le(b, 40, 4), 0x12345678u) << "pstep";
  EXPECT_EQ(le(b, 44, 4), 0xFFFFFFFDu) << "step[0]";
  EXPECT_EQ(le(b, 48, 4), 0x7FFFFFFFu) << "step[1]";
  expect_zero(b, 52, 63);

  b = encode(vec_instr(Opcode::kSelect, v));
  EXPECT_EQ(b[0], 0x46);
  expect_operand(b, 24, 1, 0, 0, 0x20, 1, 4);
  expect_operand(b, 36, 1, 0, 0, 0x40, 1, 4);
  expect_operand(b, 48, 1, 0, 0, 0x60, 1, 4);
  expect_zero(b, 60, 63);

  b = encode(vec_instr(Opcode::kTranspose, v));
  EXPECT_EQ(b[0], 0x47);
  expect_zero(b, 36, 63);
}

TEST(IsaTensorOpEncode, ActivationLayout) {
  ActFields a;
  a.func = ActFunc::kLog;
  a.partitions = 128;
  a.free = {512, 2};
  a.out = operand(MemSpace::kSbuf, DataType::kFp8E4M3, 64, 0x3000, 1, 512);
  a.in0 = operand(MemSpace::kPsum, DataType::kFp32, 0, 0x800, 1, 512);
  a.scale = 0x40490FDBu;
  a.bias = 0xBF000000u;
  a.no_sat = true;
  a.reduce = true;
  a.sum = operand(MemSpace::kSbuf, DataType::kFp32, 0x0102, 0x0A0B0C0C);
  Bytes b = encode(act_instr(a));
  EXPECT_EQ(b[0], 0x50);
  EXPECT_EQ(b[1], 0x02 | 0x08) << "flags: no_sat, reduce";
  EXPECT_EQ(b[2], 11) << "func log";
  EXPECT_EQ(b[3], 0);
  EXPECT_EQ(le(b, 4, 2), 128u);
  EXPECT_EQ(le(b, 6, 2), 512u);
  EXPECT_EQ(le(b, 8, 2), 2u);
  expect_operand(b, 12, 1, 2, 64, 0x3000, 1, 512);
  expect_operand(b, 24, 2, 4, 0, 0x800, 1, 512);
  EXPECT_EQ(le(b, 36, 4), 0x40490FDBu) << "scale";
  EXPECT_EQ(le(b, 40, 4), 0xBF000000u) << "bias";
  expect_zero(b, 44, 51);
  EXPECT_EQ(b[52], 1) << "sum space";
  EXPECT_EQ(b[53], 4) << "sum type";
  EXPECT_EQ(le(b, 54, 2), 0x0102u) << "sum partition";
  EXPECT_EQ(le(b, 56, 4), 0x0A0B0C0Cu) << "sum offset";
  expect_zero(b, 60, 63);
  a.sum_acc = true;
  EXPECT_EQ(encode(act_instr(a))[1], 0x02 | 0x08 | 0x20) << "flags: no_sat, reduce, sum_acc";
  a.sum_acc = false;
  {  // a scale tensor: its column in 36..43, the bias immediate in 60..63
    ActFields t = a;
    t.scale_tensor = true;
    t.scale = 0;
    t.scale_ap = operand(MemSpace::kSbuf, DataType::kFp32, 0x0203, 0x0A0B0C10);
    const Bytes c = encode(act_instr(t));
    EXPECT_EQ(c[1], 0x02 | 0x08 | 0x40) << "flags: no_sat, reduce, scale tensor";
    EXPECT_EQ(c[36], 1) << "scale space";
    EXPECT_EQ(c[37], 4) << "scale type";
    EXPECT_EQ(le(c, 38, 2), 0x0203u) << "scale partition";
    EXPECT_EQ(le(c, 40, 4), 0x0A0B0C10u) << "scale offset";
    EXPECT_EQ(le(c, 60, 4), 0xBF000000u) << "bias immediate";
    Instruction back;
    const auto err = decode(c.data(), &back);
    ASSERT_FALSE(err.has_value()) << describe(*err);
    EXPECT_EQ(back.act.scale_ap.offset, 0x0A0B0C10u);
    EXPECT_EQ(back.act.bias, 0xBF000000u);
  }

  a.reduce = false;
  a.bias_tensor = true;
  a.bias = 0;
  a.bias_ap = operand(MemSpace::kPsum, DataType::kFp32, 3, 0x44);
  b = encode(act_instr(a));
  EXPECT_EQ(b[1], 0x02 | 0x04) << "flags: no_sat, bias_tensor";
  expect_zero(b, 40, 43);
  EXPECT_EQ(b[44], 2);
  EXPECT_EQ(b[45], 4);
  EXPECT_EQ(le(b, 46, 2), 3u);
  EXPECT_EQ(le(b, 48, 4), 0x44u);
  expect_zero(b, 52, 63);
}

TEST(IsaTensorOpEncode, UnusedOperandsAndImmediatesAreNotEncoded) {
  Instruction ms = op_of(Opcode::kMemset);
  Instruction with_junk = ms;
  with_junk.vec.in0 = operand(MemSpace::kPsum, DataType::kFp32, 9, 0x40, 1, 1);
  with_junk.vec.in1.offset = 77;
  with_junk.vec.op = AluOp::kDivide;
  with_junk.vec.base = 5;
  EXPECT_EQ(encode(with_junk), encode(ms));
  EXPECT_EQ(with_junk, ms) << "operator== compares what the opcode encodes";
  Instruction act = op_of(Opcode::kActivation);
  Instruction no_sum = act;
  no_sum.act.reduce = false;
  Instruction other_sum = no_sum;
  other_sum.act.sum.offset = 0x400;
  EXPECT_EQ(no_sum, other_sum);
  EXPECT_NE(no_sum, act);
}

// ---- round trips

/// A random valid Vector or Scalar instruction.
Instruction random_tensor_op(std::mt19937_64& rng, Opcode op) {
  const auto pick = [&](uint64_t n) { return rng() % n; };
  const auto rand_operand = [&](bool column) {
    Operand o;
    o.space = pick(2) ? MemSpace::kSbuf : MemSpace::kPsum;
    o.type = o.space == MemSpace::kPsum ? DataType::kFp32 : static_cast<DataType>(pick(5));
    o.partition = static_cast<uint16_t>(rng());
    o.offset = static_cast<uint32_t>(rng()) / data_type_bytes(o.type) * data_type_bytes(o.type);
    if (!column) o.stride = {static_cast<int16_t>(rng()), static_cast<int16_t>(rng())};
    return o;
  };
  Instruction i;
  i.op = op;
  if (op == Opcode::kActivation) {
    ActFields& a = i.act;
    a.func = static_cast<ActFunc>(pick(kNumActFuncs));
    a.no_sat = pick(2);
    a.partitions = static_cast<uint16_t>(1 + pick(0xFFFF));
    a.free = {static_cast<uint16_t>(1 + pick(0xFFFF)), static_cast<uint16_t>(1 + pick(0xFFFF))};
    a.out = rand_operand(false);
    a.in0 = rand_operand(false);
    a.scale = static_cast<uint32_t>(rng());
    a.bias_tensor = pick(2);
    a.bias = a.bias_tensor ? 0 : static_cast<uint32_t>(rng());
    if (a.bias_tensor) a.bias_ap = rand_operand(true);
    a.reduce = pick(2);
    if (a.reduce) a.sum = rand_operand(true);
    a.sum_acc = a.reduce && pick(2);
    a.scale_tensor = pick(2);
    if (a.scale_tensor) {
      a.scale = 0;
      a.scale_ap = rand_operand(true);
    }
    return i;
  }
  VecFields& v = i.vec;
  v.no_sat = pick(2);
  v.partitions = static_cast<uint16_t>(1 + pick(0xFFFF));
  v.free = {static_cast<uint16_t>(1 + pick(0xFFFF)), static_cast<uint16_t>(1 + pick(0xFFFF))};
  v.out = rand_operand(false);
  v.in0 = rand_operand(false);
  v.in1 = rand_operand(false);
  v.in2 = rand_operand(false);
  v.op = static_cast<AluOp>(1 + pick(kNumAluOps - 1));
  v.op1 = static_cast<AluOp>(pick(kNumAluOps));
  v.imm0 = static_cast<uint32_t>(rng());
  v.imm1 = v.op1 == AluOp::kNone ? 0 : static_cast<uint32_t>(rng());
  v.base = static_cast<int32_t>(rng());
  v.pstep = static_cast<int32_t>(rng());
  v.step = {static_cast<int32_t>(rng()), static_cast<int32_t>(rng())};
  if (op == Opcode::kTensorReduce) {
    const AluOp ok[] = {AluOp::kAdd, AluOp::kMax, AluOp::kMin};
    v.op = ok[pick(3)];
    v.axis = pick(2) ? ReduceAxis::kInner : ReduceAxis::kAll;
    v.out.stride[0] = 0;
    if (v.axis == ReduceAxis::kAll) v.out.stride[1] = 0;
  }
  if (op == Opcode::kTranspose) {
    v.partitions = static_cast<uint16_t>(1 + pick(kMaxTranspose));
    v.free = {static_cast<uint16_t>(1 + pick(kMaxTranspose)), 1};
    v.out.stride[1] = 0;
  }
  if (op == Opcode::kQuantizeMx) {  // no flags, free[1] = 1, locations in SBUF (their type and strides unused)
    v.no_sat = false;
    v.mx_dtype = isa::kMxTypes[pick(3)];
    v.free[1] = 1;
    v.out = Operand{};
    v.out.space = MemSpace::kSbuf;
    v.out.partition = static_cast<uint16_t>(pick(0xFFFF));
    v.out.offset = static_cast<uint32_t>(rng());
    v.scales = v.out;
    v.scales.partition = static_cast<uint16_t>(pick(0xFFFF));
    v.scales.offset = static_cast<uint32_t>(rng());
    v.out.type = v.scales.type = DataType::kBf16;  // what a decoded location holds (type byte 0)
  }
  return i;
}

std::vector<Opcode> tensor_opcodes() {
  std::vector<Opcode> out;
  for (const Opcode op : kAllOpcodes) {
    if (is_tensor_op(op)) out.push_back(op);
  }
  return out;
}

TEST(IsaTensorOpEncode, RandomInstructionsRoundTrip) {
  std::mt19937_64 rng(trnsim::test::test_seed());
  for (int round = 0; round < 3000; ++round) {
    for (const Opcode op : tensor_opcodes()) {
      const Instruction i = random_tensor_op(rng, op);
      SCOPED_TRACE(disassemble(i));
      ASSERT_FALSE(validate(i).has_value()) << describe(*validate(i));
      Instruction back = Instruction::halt();
      const auto err = decode_bytes(encode(i), &back);
      ASSERT_FALSE(err.has_value()) << describe(*err);
      ASSERT_EQ(back, i);
      ASSERT_EQ(encode(back), encode(i));
    }
  }
}

// ---- decode and validate errors

TEST(IsaTensorOpDecode, AccumulateFlagIsATensorEngineFlag) {
  for (const Instruction& i : ops()) {
    Bytes b = encode(i);
    b[1] |= 0x01;
    SCOPED_TRACE(*opcode_name(i.op));
    expect_error(b, IsaError::Code::kBadField, "flags", "only the TE accumulates into PSUM");
    expect_error(b, IsaError::Code::kBadField, "flags", std::string(*opcode_name(i.op)) + " runs on the " +
                                                            (i.op == Opcode::kActivation ? "act" : "vec"));
  }
}

TEST(IsaTensorOpDecode, UndefinedFlagBits) {
  for (const Instruction& i : ops()) {
    // no_sat, sr (act: also bias tensor, sum, sum_acc, scale tensor)
    const uint8_t defined = i.op == Opcode::kActivation ? 0x7E : 0x12;
    for (int bit = 1; bit < 8; ++bit) {
      Bytes b = encode(i);
      b[1] = static_cast<uint8_t>(1u << bit);
      if (i.op == Opcode::kActivation) {
        // Keep the operands that the flags make present / absent consistent with the bytes.
        if (bit != 2) std::fill(b.begin() + 44, b.begin() + 52, 0);
        if (bit != 3) std::fill(b.begin() + 52, b.begin() + 60, 0);
      }
      SCOPED_TRACE(std::string(*opcode_name(i.op)) + " bit " + std::to_string(bit));
      if (i.op == Opcode::kActivation && bit == 5) {  // sum_acc: defined, but only with sum
        expect_error(b, IsaError::Code::kBadField, "flags", "sum_acc (flag 0x20");
        b[1] |= 0x08;
        b[52] = 1, b[53] = 4;  // the sum column: sbuf, fp32
        const auto err = decode_bytes(b);
        EXPECT_FALSE(err.has_value()) << describe(*err);
      } else if (i.op == Opcode::kActivation && bit == 6) {  // scale tensor: bytes 36..43 become its column
        std::fill(b.begin() + 36, b.begin() + 44, 0);
        b[36] = 1, b[37] = 4;  // sbuf, fp32
        const auto err = decode_bytes(b);
        EXPECT_FALSE(err.has_value()) << describe(*err);
      } else if ((defined >> bit) & 1) {
        const auto err = decode_bytes(b);
        EXPECT_FALSE(err.has_value()) << describe(*err);
      } else {
        expect_error(b, IsaError::Code::kBadField, "flags", "not defined for " + std::string(*opcode_name(i.op)));
      }
    }
  }
}

TEST(IsaTensorOpDecode, EnumBytesOutOfRange) {
  for (const Opcode op : {Opcode::kTensorTensor, Opcode::kTensorScalar, Opcode::kTensorReduce}) {
    for (unsigned v = 15; v < 256; ++v) {
      Bytes b = encode(op_of(op));
      b[2] = static_cast<uint8_t>(v);
      SCOPED_TRACE(std::string(*opcode_name(op)) + " op=" + std::to_string(v));
      expect_error(b, IsaError::Code::kBadField, "op", "value " + std::to_string(v) + " is not an ALU op");
    }
  }
  Bytes b = encode(op_of(Opcode::kTensorTensor));
  b[2] = 0;
  expect_error(b, IsaError::Code::kBadField, "op", "needs an operation");
  for (const AluOp bad_reduce : {AluOp::kSubtract, AluOp::kMultiply, AluOp::kDivide, AluOp::kIsGt}) {
    b = encode(op_of(Opcode::kTensorReduce));
    b[2] = static_cast<uint8_t>(bad_reduce);
    expect_error(b, IsaError::Code::kBadField, "op", "tensor_reduce op must be add, max or min");
  }
  for (unsigned v = 15; v < 256; ++v) {
    b = encode(op_of(Opcode::kTensorScalar));
    b[3] = static_cast<uint8_t>(v);
    expect_error(b, IsaError::Code::kBadField, "op1", "value " + std::to_string(v) + " is not an ALU op");
  }
  for (unsigned v = 2; v < 256; ++v) {
    b = encode(op_of(Opcode::kTensorReduce));
    b[3] = static_cast<uint8_t>(v);
    expect_error(b, IsaError::Code::kBadField, "axis", "value " + std::to_string(v) + " is not a reduce axis");
  }
  for (unsigned v = 12; v < 256; ++v) {
    b = encode(op_of(Opcode::kActivation));
    b[2] = static_cast<uint8_t>(v);
    expect_error(b, IsaError::Code::kBadField, "func", "value " + std::to_string(v) + " is not an activation");
  }
}

/// The operand slots each opcode uses: {name, byte offset, column}.
struct Slot {
  const char* name;
  std::size_t at;
  bool column;
};
std::vector<Slot> slots_of(Opcode op) {
  switch (op) {
    case Opcode::kTensorTensor: return {{"out", 12, false}, {"in0", 24, false}, {"in1", 36, false}};
    case Opcode::kSelect: return {{"out", 12, false}, {"in0", 24, false}, {"in1", 36, false}, {"in2", 48, false}};
    case Opcode::kMemset:
    case Opcode::kIota: return {{"out", 12, false}};
    case Opcode::kActivation:
      return {{"out", 12, false}, {"in0", 24, false}, {"bias", 44, true}, {"sum", 52, true}};
    default: return {{"out", 12, false}, {"in0", 24, false}};
  }
}

TEST(IsaTensorOpDecode, OperandSpaceTypeAndOffset) {
  for (const Instruction& i : ops()) {
    for (const Slot& s : slots_of(i.op)) {
      const std::string name = s.name;
      SCOPED_TRACE(std::string(*opcode_name(i.op)) + " " + name);
      Bytes b = encode(i);
      b[s.at] = 0;  // hbm
      expect_error(b, IsaError::Code::kBadField, name + "_space", "hbm: Vector and Scalar engine operands");
      b[s.at] = 3;  // host: a dma_copy's space only
      expect_error(b, IsaError::Code::kBadField, name + "_space", "host: Vector and Scalar engine operands");
      for (unsigned v = 4; v < 256; v += 17) {
        b = encode(i);
        b[s.at] = static_cast<uint8_t>(v);
        expect_error(b, IsaError::Code::kBadField, name + "_space", "is not a memory space");
      }
      for (unsigned v = 5; v < 256; v += 13) {
        b = encode(i);
        b[s.at] = 1;  // sbuf, so that any type would be legal
        b[s.at + 1] = static_cast<uint8_t>(v);
        expect_error(b, IsaError::Code::kBadField, name + "_type", "is not a data type");
      }
      b = encode(i);
      b[s.at] = 2;      // psum
      b[s.at + 1] = 0;  // bf16
      b[s.at + 4] = 0;  // offset 0: aligned either way
      expect_error(b, IsaError::Code::kBadField, name + "_type", "PSUM holds fp32, not bf16");
      for (const auto& [type, offset] : {std::pair<int, int>{0, 1}, {1, 3}, {4, 2}, {4, 6}}) {
        b = encode(i);
        b[s.at] = 1;
        b[s.at + 1] = static_cast<uint8_t>(type);
        b[s.at + 4] = static_cast<uint8_t>(offset);
        expect_error(b, IsaError::Code::kBadField, name + "_offset", "is not a multiple of the");
      }
      for (int type = 2; type <= 3; ++type) {  // fp8: any offset
        b = encode(i);
        b[s.at] = 1;
        b[s.at + 1] = static_cast<uint8_t>(type);
        b[s.at + 4] = 0x35;
        EXPECT_FALSE(decode_bytes(b).has_value());
      }
    }
  }
}

TEST(IsaTensorOpDecode, CountsAndPerOpcodeRules) {
  for (const Instruction& i : ops()) {
    SCOPED_TRACE(*opcode_name(i.op));
    Bytes b = encode(i);
    b[4] = b[5] = 0;
    expect_error(b, IsaError::Code::kBadField, "partitions", "partitions is 0");
    b = encode(i);
    b[6] = b[7] = 0;
    expect_error(b, IsaError::Code::kBadField, "free", "free[0] is 0");
    b = encode(i);
    b[8] = b[9] = 0;
    expect_error(b, IsaError::Code::kBadField, "free", "free[1] is 0");
  }
  Bytes b = encode(op_of(Opcode::kTensorReduce));
  b[20] = 1;  // out_stride[0]
  expect_error(b, IsaError::Code::kBadField, "out_stride", "out_stride[0] is 1, must be 0");
  b = encode(op_of(Opcode::kTensorReduce));
  b[3] = 0;  // axis all: out_stride[1] must be 0 too
  expect_error(b, IsaError::Code::kBadField, "out_stride", "out_stride[1] is 1, must be 0 for axis all");
  b[22] = 0;
  EXPECT_FALSE(decode_bytes(b).has_value());

  const Instruction tp = op_of(Opcode::kTranspose);
  b = encode(tp);
  b[4] = 33;
  expect_error(b, IsaError::Code::kBadField, "partitions", "transpose of 33 partitions, at most 32");
  b = encode(tp);
  b[6] = 33;
  expect_error(b, IsaError::Code::kBadField, "free", "transpose of free[0] = 33, at most 32");
  b = encode(tp);
  b[8] = 2;
  expect_error(b, IsaError::Code::kBadField, "free", "transpose takes free[1] = 1, not 2");
  b = encode(tp);
  b[22] = 1;
  expect_error(b, IsaError::Code::kBadField, "out_stride", "must be 0 for transpose");
}

TEST(IsaTensorOpDecode, ReservedBytesThatDependOnOtherFields) {
  // tensor_scalar without op1: imm1 is reserved.
  Bytes b = encode(op_of(Opcode::kTensorScalar));
  b[3] = 0;
  expect_error(b, IsaError::Code::kReservedNonZero, "reserved", "byte 43 is 0xc0");
  b[40] = b[41] = b[42] = b[43] = 0;
  EXPECT_FALSE(decode_bytes(b).has_value());
  // activation: with a bias tensor the bias immediate is reserved; without one, the bias operand.
  const Instruction act = op_of(Opcode::kActivation);
  b = encode(act);
  b[41] = 1;
  expect_error(b, IsaError::Code::kReservedNonZero, "reserved", "byte 41 is 0x01");
  b = encode(act);
  b[1] &= static_cast<uint8_t>(~0x04);
  expect_error(b, IsaError::Code::kReservedNonZero, "reserved", "byte 44 is 0x01");
  b = encode(act);
  b[1] &= static_cast<uint8_t>(~0x08);
  expect_error(b, IsaError::Code::kReservedNonZero, "reserved", "byte 52 is 0x01");
  std::fill(b.begin() + 52, b.begin() + 60, 0);
  EXPECT_FALSE(decode_bytes(b).has_value());
}

TEST(IsaTensorOpValidate, HandBuiltInstructions) {
  Instruction ts = op_of(Opcode::kTensorScalar);
  ts.vec.op1 = AluOp::kNone;
  ASSERT_TRUE(validate(ts));
  EXPECT_EQ(validate(ts)->field, "imm1");
  ts.vec.imm1 = 0;
  EXPECT_FALSE(validate(ts));
  Instruction act = op_of(Opcode::kActivation);
  act.act.bias = 0x3F800000u;
  ASSERT_TRUE(validate(act));
  EXPECT_EQ(validate(act)->field, "bias");
  act.act.bias_tensor = false;
  EXPECT_FALSE(validate(act)) << "the immediate is the bias now";
  act.act.func = static_cast<ActFunc>(12);
  EXPECT_EQ(validate(act)->field, "func");
  Instruction tt = op_of(Opcode::kTensorTensor);
  tt.vec.in1.space = MemSpace::kHbm;
  EXPECT_EQ(validate(tt)->field, "in1_space");
  tt.vec.in1.space = static_cast<MemSpace>(7);
  EXPECT_EQ(validate(tt)->field, "in1_space");
  Instruction ms = op_of(Opcode::kMemset);
  ms.vec.in0.space = MemSpace::kHbm;  // not used by memset: ignored
  EXPECT_FALSE(validate(ms));
}

// ---- program text

constexpr const char* kTensorProgram = R"(# Vector and Scalar engine instructions
.queue vec
tensor_tensor op=add partitions=16 free=[64,2] out=sbuf:0:0x100 in0=sbuf:0:0x0 type=bf16 in1=psum:0:0x40 in1_type=fp32 no_sat sr
tensor_scalar op=multiply imm0=2.5 op1=rsubtract imm1=-0 partitions=128 free=[512] out=sbuf:64:0 in0=sbuf:0:0x40 in0_type=fp16
tensor_reduce op=max axis=inner partitions=16 free=[64,4] out=sbuf:0:0x0 in0=sbuf:0:0x100 in0_stride=[4,1]
tensor_reduce op=add partitions=1 free=[3] out=psum:0:4 in0=sbuf:0:1 in0_type=fp8e4m3 in0_stride=[-1]
tensor_copy partitions=1 free=[3] out=sbuf:0:0 out_type=fp8e5m2 in0=psum:0:0
memset value=nan partitions=2 free=[5,5] out=sbuf:0:0
memset value=0xff800001 partitions=2 free=[5,5] out=sbuf:0:0 out_type=bf16 out_stride=[0,0]
iota base=-3 pstep=1 step=[1,16] partitions=16 free=[16,2] out=sbuf:0:0
iota partitions=1 free=[1] out=sbuf:0:8
select partitions=16 free=[16] out=sbuf:0:0 in0=sbuf:0:0x40 in1=sbuf:0:0x80 in2=sbuf:0:0x100 in2_stride=[0,0]
transpose partitions=32 free=[32] out=sbuf:32:0 in0=sbuf:0:0x400 type=bf16
halt
.queue act
activation func=exp scale=-1 bias=sbuf:0:0x40 partitions=16 free=[128] out=sbuf:0:0 out_type=bf16 in0=psum:0:0 sum=sbuf:0:0x80
activation func=gelu_tanh bias=0.5 partitions=16 free=[128] out=sbuf:0:0 in0=sbuf:0:0x200 type=bf16 sat
activation func=rsqrt scale=1e-45 bias=-inf partitions=1 free=[1,1] out=psum:0:0 in0=psum:0:4 sum=psum:0:8 sum_type=fp32
halt
)";

TEST(IsaTensorOpAsm, ProgramAssemblesToTheWrittenFields) {
  const Program p = assemble(kTensorProgram);
  const auto& vec = p.queue(Engine::kVec);
  const auto& act = p.queue(Engine::kAct);
  ASSERT_EQ(vec.size(), 12u);
  ASSERT_EQ(act.size(), 4u);

  const VecFields& tt = vec[0].vec;
  EXPECT_EQ(vec[0].op, Opcode::kTensorTensor);
  EXPECT_EQ(tt.op, AluOp::kAdd);
  EXPECT_EQ(tt.partitions, 16);
  EXPECT_EQ(tt.free, (std::array<uint16_t, 2>{64, 2}));
  EXPECT_TRUE(tt.no_sat);
  EXPECT_EQ(tt.out.type, DataType::kBf16) << "type= sets every operand";
  EXPECT_EQ(tt.out.offset, 0x100u);
  EXPECT_EQ(tt.out.stride, (std::array<int16_t, 2>{1, 64})) << "dense in elements";
  EXPECT_EQ(tt.in0.type, DataType::kBf16);
  EXPECT_EQ(tt.in1.space, MemSpace::kPsum);
  EXPECT_EQ(tt.in1.type, DataType::kFp32) << "in1_type overrides type=";
  EXPECT_EQ(tt.in1.offset, 0x40u);

  const VecFields& ts = vec[1].vec;
  EXPECT_EQ(ts.op, AluOp::kMultiply);
  EXPECT_EQ(ts.imm0, fbits(2.5f));
  EXPECT_EQ(ts.op1, AluOp::kRsubtract);
  EXPECT_EQ(ts.imm1, 0x80000000u);
  EXPECT_EQ(ts.free, (std::array<uint16_t, 2>{512, 1}));
  EXPECT_EQ(ts.out.partition, 64);
  EXPECT_EQ(ts.out.type, DataType::kFp32) << "default type";
  EXPECT_EQ(ts.out.stride, (std::array<int16_t, 2>{1, 0}));
  EXPECT_EQ(ts.in0.type, DataType::kFp16);

  const VecFields& tr = vec[2].vec;
  EXPECT_EQ(tr.op, AluOp::kMax);
  EXPECT_EQ(tr.axis, ReduceAxis::kInner);
  EXPECT_EQ(tr.out.stride, (std::array<int16_t, 2>{0, 1})) << "out is [P, n1]";
  EXPECT_EQ(tr.in0.stride, (std::array<int16_t, 2>{4, 1}));
  const VecFields& tr2 = vec[3].vec;
  EXPECT_EQ(tr2.axis, ReduceAxis::kAll);
  EXPECT_EQ(tr2.out.stride, (std::array<int16_t, 2>{0, 0}));
  EXPECT_EQ(tr2.in0.stride, (std::array<int16_t, 2>{-1, 0})) << "a missing stride entry is 0";
  EXPECT_EQ(vec[4].vec.out.type, DataType::kFp8E5M2);
  EXPECT_EQ(vec[5].vec.imm0, 0x7FC00000u);
  EXPECT_EQ(vec[6].vec.imm0, 0xFF800001u) << "0x is the bit pattern";
  EXPECT_EQ(vec[6].vec.out.stride, (std::array<int16_t, 2>{0, 0}));
  EXPECT_EQ(vec[7].vec.base, -3);
  EXPECT_EQ(vec[7].vec.pstep, 1);
  EXPECT_EQ(vec[7].vec.step, (std::array<int32_t, 2>{1, 16}));
  EXPECT_EQ(vec[8].vec.base, 0);
  EXPECT_EQ(vec[8].vec.step, (std::array<int32_t, 2>{0, 0}));
  EXPECT_EQ(vec[9].vec.in2.stride, (std::array<int16_t, 2>{0, 0}));
  EXPECT_EQ(vec[9].vec.in1.stride, (std::array<int16_t, 2>{1, 0}));
  const VecFields& tp = vec[10].vec;
  EXPECT_EQ(tp.out.partition, 32);
  EXPECT_EQ(tp.out.stride, (std::array<int16_t, 2>{1, 0})) << "out of a transpose is [n0, P]";
  EXPECT_EQ(tp.out.type, DataType::kBf16);

  const ActFields& a0 = act[0].act;
  EXPECT_EQ(a0.func, ActFunc::kExp);
  EXPECT_EQ(a0.scale, fbits(-1.0f));
  EXPECT_TRUE(a0.bias_tensor);
  EXPECT_EQ(a0.bias, 0u);
  EXPECT_EQ(a0.bias_ap.offset, 0x40u);
  EXPECT_EQ(a0.bias_ap.type, DataType::kFp32);
  EXPECT_TRUE(a0.reduce);
  EXPECT_EQ(a0.sum.offset, 0x80u);
  EXPECT_EQ(a0.out.type, DataType::kBf16);
  EXPECT_EQ(a0.in0.space, MemSpace::kPsum);
  const ActFields& a1 = act[1].act;
  EXPECT_EQ(a1.scale, 0x3F800000u) << "default scale 1";
  EXPECT_FALSE(a1.bias_tensor);
  EXPECT_EQ(a1.bias, fbits(0.5f));
  EXPECT_FALSE(a1.reduce);
  EXPECT_EQ(a1.in0.type, DataType::kBf16);
  const ActFields& a2 = act[2].act;
  EXPECT_EQ(a2.scale, 0x00000001u) << "1e-45 rounds to the smallest subnormal";
  EXPECT_EQ(a2.bias, 0xFF800000u);
}

TEST(IsaTensorOpAsm, CanonicalTextRoundTrips) {
  const Program p = assemble(kTensorProgram);
  const std::string text = disassemble(p);
  EXPECT_EQ(assemble(text), p);
  EXPECT_EQ(disassemble(assemble(text)), text);
  const auto bin = write_program_binary(p);
  EXPECT_EQ(read_program_binary(bin), p);
  EXPECT_EQ(write_program_binary(assemble(disassemble(read_program_binary(bin)))), bin);
  EXPECT_EQ(disassemble(p.queue(Engine::kVec)[0]),
            "tensor_tensor op=add partitions=16 free=[64,2] out=sbuf:0:0x100 out_type=bf16 out_stride=[1,64] "
            "in0=sbuf:0:0x0 in0_type=bf16 in0_stride=[1,64] in1=psum:0:0x40 in1_type=fp32 in1_stride=[1,64] no_sat sr");
  EXPECT_EQ(disassemble(p.queue(Engine::kVec)[1]),
            "tensor_scalar op=multiply imm0=2.5 op1=rsubtract imm1=-0 partitions=128 free=[512,1] "
            "out=sbuf:64:0x0 out_type=fp32 out_stride=[1,0] in0=sbuf:0:0x40 in0_type=fp16 in0_stride=[1,0] sat rne");
  EXPECT_EQ(disassemble(p.queue(Engine::kVec)[5]),
            "memset value=0x7fc00000 partitions=2 free=[5,5] out=sbuf:0:0x0 out_type=fp32 out_stride=[1,5] sat rne");
  EXPECT_EQ(disassemble(p.queue(Engine::kVec)[7]),
            "iota base=-3 pstep=1 step=[1,16] partitions=16 free=[16,2] out=sbuf:0:0x0 out_type=fp32 "
            "out_stride=[1,16] sat rne");
  EXPECT_EQ(disassemble(p.queue(Engine::kAct)[0]),
            "activation func=exp scale=-1 bias=sbuf:0:0x40 bias_type=fp32 partitions=16 free=[128,1] "
            "out=sbuf:0:0x0 out_type=bf16 out_stride=[1,0] in0=psum:0:0x0 in0_type=fp32 in0_stride=[1,0] "
            "sum=sbuf:0:0x80 sum_type=fp32 sat rne");
  EXPECT_EQ(disassemble(p.queue(Engine::kAct)[2]),
            "activation func=rsqrt scale=1.40129846e-45 bias=-inf partitions=1 free=[1,1] out=psum:0:0x0 "
            "out_type=fp32 out_stride=[0,0] in0=psum:0:0x4 in0_type=fp32 in0_stride=[0,0] sum=psum:0:0x8 "
            "sum_type=fp32 sat rne");
}

TEST(IsaTensorOpAsm, FloatImmediatesRoundTripEveryPattern) {
  // Every FP32 pattern class prints as text that assembles to the same bits (NaN payloads as 0x bits).
  std::mt19937_64 rng(trnsim::test::test_seed());
  std::vector<uint32_t> patterns = {0u,          0x80000000u, 1u,          0x807FFFFFu, 0x00800000u, 0x7F7FFFFFu,
                                    0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u,
                                    0x3F800001u, 0x33D6BF95u};
  for (int i = 0; i < 2000; ++i) patterns.push_back(static_cast<uint32_t>(rng()));
  for (const uint32_t bits : patterns) {
    Instruction i = op_of(Opcode::kMemset);
    i.vec.imm0 = bits;
    const std::string text = ".queue vec\n" + disassemble(i) + "\n";
    SCOPED_TRACE(text);
    EXPECT_EQ(assemble(text).queue(Engine::kVec).at(0).vec.imm0, bits);
  }
}

TEST(IsaTensorOpAsm, RandomProgramsOverFourQueuesRoundTrip) {
  std::mt19937_64 rng(trnsim::test::test_seed());
  const auto opcodes = tensor_opcodes();
  for (int round = 0; round < 300; ++round) {
    Program p;
    for (const Engine e : kAllEngines) {
      const int n = static_cast<int>(rng() % 6);
      for (int k = 0; k < n; ++k) {
        std::vector<Opcode> mine;
        for (const Opcode op : opcodes) {
          if (engine_accepts(e, op)) mine.push_back(op);
        }
        if (mine.empty()) {
          p.queue(e).push_back(Instruction::nop());
        } else {
          p.queue(e).push_back(random_tensor_op(rng, mine[rng() % mine.size()]));
        }
      }
    }
    const std::string text = disassemble(p);
    SCOPED_TRACE(text);
    ASSERT_EQ(assemble(text), p);
    const auto bin = write_program_binary(p);
    ASSERT_EQ(read_program_binary(bin), p);
    ASSERT_EQ(write_program_binary(assemble(disassemble(read_program_binary(bin)))), bin);
  }
}

struct BadText {
  const char* text;
  const char* position;
  const char* reason;
};

class IsaTensorOpAsmErrors : public ::testing::TestWithParam<BadText> {};

TEST_P(IsaTensorOpAsmErrors, NameLineColumnAndCause) {
  const BadText& c = GetParam();
  try {
    assemble(c.text);
    ADD_FAILURE() << "accepted: " << c.text;
  } catch (const ProgramError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(std::string(c.position) + " ", 0), 0u) << what;
    EXPECT_NE(what.find(c.reason), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, IsaTensorOpAsmErrors,
    ::testing::Values(
        BadText{".queue vector\n", "1:8:", "'vector' is not a queue (te, dma, act, vec, cc)"},
        BadText{".queue act\ntensor_copy partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:1:",
                "tensor_copy is not accepted by the act queue (it takes nop, halt, sem_signal, sem_wait, activation)"},
        BadText{".queue vec\nactivation func=exp partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:1:",
                "activation is not accepted by the vec queue"},
        BadText{".queue dma\ntensor_copy partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:1:",
                "not accepted by the dma queue"},
        BadText{".queue vec\ntensor_copy free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:1:", "missing field 'partitions'"},
        BadText{".queue vec\ntensor_copy partitions=1 out=sbuf:0:0 in0=sbuf:0:0\n", "2:1:", "missing field 'free'"},
        BadText{".queue vec\ntensor_tensor partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0 in1=sbuf:0:0\n", "2:1:",
                "missing field 'op'"},
        BadText{".queue vec\ntensor_tensor op=pow partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0 in1=sbuf:0:0\n",
                "2:18:", "op: 'pow' is not an ALU op"},
        BadText{".queue vec\ntensor_tensor op=none partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0 in1=sbuf:0:0\n",
                "2:15:", "field op: op none"},
        BadText{".queue vec\ntensor_reduce op=subtract partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:15:",
                "tensor_reduce op must be add, max or min, not subtract"},
        BadText{".queue vec\ntensor_reduce op=add axis=outer partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n",
                "2:27:", "axis: 'outer' is not a reduce axis (all, inner)"},
        BadText{".queue vec\ntensor_reduce op=add partitions=1 free=[4] out=sbuf:0:0 out_stride=[1] in0=sbuf:0:0\n",
                "2:57:", "field out_stride: out_stride[0] is 1, must be 0"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[1,2,3] out=sbuf:0:0 in0=sbuf:0:0\n", "2:36:",
                "free: 3 entries, at most 2"},
        BadText{".queue vec\ntensor_copy partitions=0 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:13:",
                "field partitions: partitions is 0"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[0] out=sbuf:0:0 in0=sbuf:0:0\n", "2:26:",
                "field free: free[0] is 0"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[1] out=sbuf:0 in0=sbuf:0:0\n", "2:39:",
                "out: expected SPACE:PARTITION:OFFSET"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[1] out=dram:0:0 in0=sbuf:0:0\n", "2:39:",
                "'dram' is not a memory space"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[1] out=sbuf:70000:0 in0=sbuf:0:0\n", "2:44:",
                "out: value 70000 is out of range 0..65535"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[1] out=hbm:0:0 in0=sbuf:0:0\n", "2:35:",
                "field out_space: hbm: Vector and Scalar engine operands are in sbuf or psum"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[1] out=psum:0:0 out_type=bf16 in0=sbuf:0:0\n", "2:48:",
                "field out_type: PSUM holds fp32, not bf16"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:6 type=fp32\n", "2:48:",
                "field in0_offset: offset 0x6 is not a multiple of the 4-byte fp32 element"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0 in0_stride=[32768]\n",
                "2:73:", "in0_stride: value 32768 is out of range -32768..32767"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[40000,2] out=sbuf:0:0 in0=sbuf:0:0\n", "2:26:",
                "default out_stride[1] = 40000 does not fit i16"},
        BadText{".queue vec\ntensor_copy partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0 in0_type=int8\n", "2:70:",
                "in0_type: 'int8' is not a data type"},
        BadText{".queue vec\ntensor_scalar op=add partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:1:",
                "missing field 'imm0'"},
        BadText{".queue vec\ntensor_scalar op=add imm0=1.5x partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n",
                "2:27:", "imm0: bad FP32 value '1.5x'"},
        BadText{".queue vec\ntensor_scalar op=add imm0=0x1p3 partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n",
                "2:27:", "imm0: bad number '0x1p3'"},
        BadText{".queue vec\ntensor_scalar op=add imm0=0x100000000 partitions=1 free=[1] out=sbuf:0:0 "
                "in0=sbuf:0:0\n",
                "2:27:", "imm0: value 0x100000000 is out of range"},
        BadText{".queue vec\ntensor_scalar op=add imm0=1 imm1=2 partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n",
                "2:29:", "field imm1: imm1 0x40000000 must be 0 without op1"},
        BadText{".queue vec\ntranspose partitions=33 free=[4] out=sbuf:0:0 in0=sbuf:0:0\n", "2:11:",
                "transpose of 33 partitions, at most 32"},
        BadText{".queue vec\ntranspose partitions=4 free=[4,2] out=sbuf:0:0 in0=sbuf:0:0\n", "2:24:",
                "transpose takes free[1] = 1, not 2"},
        BadText{".queue vec\niota base=2147483648 partitions=1 free=[1] out=sbuf:0:0\n", "2:11:",
                "base: value 2147483648 is out of range"},
        BadText{".queue vec\niota step=[1,2,3] partitions=1 free=[1] out=sbuf:0:0\n", "2:16:",
                "step: 3 entries, at most 2"},
        BadText{".queue vec\nmemset partitions=1 free=[1] out=sbuf:0:0\n", "2:1:", "missing field 'value'"},
        BadText{".queue vec\nmemset value=1 partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:51:",
                "memset: unknown field 'in0'"},
        BadText{".queue act\nactivation func=softmax partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:17:",
                "func: 'softmax' is not an activation function"},
        BadText{".queue act\nactivation partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n", "2:1:",
                "missing field 'func'"},
        BadText{".queue act\nactivation func=exp bias=sbuf:0 partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n",
                "2:26:", "bias: expected SPACE:PARTITION:OFFSET"},
        BadText{".queue act\nactivation func=exp bias=1 bias_type=fp32 partitions=1 free=[1] out=sbuf:0:0 "
                "in0=sbuf:0:0\n",
                "2:28:", "bias_type needs a bias tensor"},
        BadText{".queue act\nactivation func=exp sum_type=fp32 partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n",
                "2:21:", "sum_type needs sum="},
        BadText{".queue act\nactivation func=exp scale=2 scale_type=fp32 partitions=1 free=[1] out=sbuf:0:0 "
                "in0=sbuf:0:0\n",
                "2:29:", "scale_type needs a scale tensor"},
        BadText{".queue act\nactivation func=exp scale=psum:0:0 scale_type=bf16 partitions=1 free=[1] out=sbuf:0:0 "
                "in0=sbuf:0:0\n",
                "2:36:", "field scale_type: PSUM holds fp32"},
        BadText{".queue act\nactivation func=exp partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0 sum_acc\n", "2:69:",
                "sum_acc (continue the sum from the column's value) needs sum="},
        BadText{".queue act\nactivation func=exp bias=psum:0:0 bias_type=bf16 partitions=1 free=[1] out=sbuf:0:0 "
                "in0=sbuf:0:0\n",
                "2:35:", "field bias_type: PSUM holds fp32"},
        BadText{".queue act\nactivation func=exp sum=hbm:0:0 partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0\n",
                "2:21:", "field sum_space: hbm"},
        BadText{".queue act\nactivation func=exp partitions=1 free=[1] out=sbuf:0:0 in0=sbuf:0:0 acc\n", "2:69:",
                "activation: unknown field 'acc'"}),
    [](const auto& i) { return test::case_name(i.index, i.param.reason); });

// ---- program files with four queues

TEST(IsaTensorOpProgramBinary, FourQueuesInEngineOrder) {
  Program p;
  p.queue(Engine::kVec) = {op_of(Opcode::kTensorCopy), Instruction::halt()};
  p.queue(Engine::kAct) = {op_of(Opcode::kActivation)};
  p.queue(Engine::kTe) = {Instruction::halt()};
  p.queue(Engine::kDma) = {Instruction::nop(), Instruction::halt()};
  const std::vector<uint8_t> b = write_program_binary(p);
  ASSERT_EQ(b.size(), 12u + 4 * 8 + 6 * 64);
  const std::vector<uint8_t> header = {'T', 'R', 'N', 'P', 0, 0, 0, 0, 4, 0, 0, 0,  // 4 queues
                                       0,   0,   0,   0,   1, 0, 0, 0,              // te, 1
                                       1,   0,   0,   0,   2, 0, 0, 0,              // dma, 2
                                       2,   0,   0,   0,   1, 0, 0, 0,              // act, 1
                                       3,   0,   0,   0,   2, 0, 0, 0};             // vec, 2
  EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.begin() + 44), header);
  EXPECT_EQ(b[44 + 3 * 64], 0x50) << "act's instruction after te's and dma's";
  EXPECT_EQ(b[44 + 4 * 64], 0x43);
  EXPECT_EQ(read_program_binary(b), p);

  // An activation in the vec queue's table entry is rejected naming queue, instruction and field.
  std::vector<uint8_t> wrong = b;
  std::swap_ranges(wrong.begin() + 44 + 3 * 64, wrong.begin() + 44 + 4 * 64, wrong.begin() + 44 + 4 * 64);
  try {
    read_program_binary(wrong);
    ADD_FAILURE() << "accepted";
  } catch (const ProgramError& e) {
    EXPECT_NE(std::string(e.what()).find("queue act, instruction 0: field opcode: tensor_copy is not accepted by "
                                         "the act queue"),
              std::string::npos)
        << e.what();
  }
  std::vector<uint8_t> acc = b;
  acc[44 + 4 * 64 + 1] |= 1;
  try {
    read_program_binary(acc);
    ADD_FAILURE() << "accepted";
  } catch (const ProgramError& e) {
    EXPECT_NE(std::string(e.what()).find("queue vec, instruction 0: field flags: flags 0x01: bit 0 is accumulate"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trnsim::isa

namespace trnsim::isa {
namespace {

TEST(IsaVectorCycles, TheDataPathByOperandTypes) {
  // Worked by hand from docs/isa.md "Costs": max(64, ceil(N / w)) with w = elems_16 / lanes when every operand the
  // opcode reads or writes is BF16 or FP16, else elems / lanes; quantize_mx two passes over F at elems.
  const VecDataPath trn2{128, 256, 512}, tiny{16, 16, 16};
  VecFields v;
  v.partitions = 128;
  v.free = {100, 10};  // N = 1000
  v.out = test::operand(MemSpace::kSbuf, DataType::kBf16, 0, 0, 1, 100);
  v.in0 = test::operand(MemSpace::kSbuf, DataType::kFp16, 0, 0x1000, 1, 100);
  v.in1 = test::operand(MemSpace::kPsum, DataType::kFp32, 0, 0, 1, 100);  // read by tensor_tensor and select only
  v.in2 = v.in1;
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kTensorCopy, v), trn2), 250u) << "BF16 <- FP16: 4 per lane";
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kTensorScalar, v), trn2), 250u);
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kTensorReduce, v), trn2), 250u) << "N is the input's elements";
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kTensorTensor, v), trn2), 500u) << "in1 FP32: 2 per lane";
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kSelect, v), trn2), 500u);
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kMemset, v), trn2), 250u) << "memset writes out only";
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kTensorCopy, v), tiny), 1000u) << "one per lane";
  v.in0.type = DataType::kFp8E5M2;
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kTensorCopy, v), trn2), 500u) << "FP8 takes the 256 path";
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kIota, v), trn2), 250u) << "iota reads no input";
  v.free = {7, 1};
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kTensorCopy, v), trn2), 64u) << "the minimum interval";
  v.partitions = 32;
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kTranspose, v), tiny), 64u) << "transpose: N = P = 32";
  v.free = {300, 1};
  v.in0.type = DataType::kBf16;
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kQuantizeMx, v), trn2), 2u * 150u) << "two passes, 2 per lane";
  EXPECT_EQ(vector_cycles(test::vec_instr(Opcode::kTensorCopy, v), VecDataPath{128, 0, 0}), 300u)
      << "fewer elements than lanes count as one per lane";
  EXPECT_THROW(vector_cycles(test::act_instr(ActFields{}), trn2), std::invalid_argument);
  EXPECT_THROW(vector_cycles(Instruction::halt(), trn2), std::invalid_argument);
}

}  // namespace
}  // namespace trnsim::isa
