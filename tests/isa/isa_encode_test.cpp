// ISA v0 encoding: the bytes encode() writes at the offsets docs/isa.md gives, round trips at the field edges,
// every decode() error with its field, validate(), engine_accepts() and the field-id table.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>

#include "firmware/isa/isa.h"
#include "tests/isa/isa_test_util.h"

namespace trnsim::isa {
namespace {

using test::Bytes;
using test::copy_instr;
using test::le;
using test::sem_instr;
using test::te_instr;

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

std::string hex2(int v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", v);
  return buf;
}

std::optional<IsaError> decode_bytes(const Bytes& b, Instruction* out = nullptr) {
  Instruction scratch;
  return decode(b.data(), out ? out : &scratch);
}

/// Decodes and expects an error of `code` on `field` whose message contains `text`.
void expect_error(const Bytes& b, IsaError::Code code, const std::string& field, const std::string& text = "") {
  const auto err = decode_bytes(b);
  ASSERT_TRUE(err.has_value()) << "decoded without error";
  EXPECT_EQ(err->code, code) << err->message;
  EXPECT_EQ(err->field, field) << err->message;
  EXPECT_NE(err->message.find(text), std::string::npos) << err->message;
  EXPECT_NE(field_id(err->field), 0) << err->field;
}

TEST(IsaNames, OpcodeValuesAndMnemonics) {
  const std::pair<Opcode, uint8_t> values[] = {
      {Opcode::kNop, 0x00},     {Opcode::kHalt, 0x01},           {Opcode::kSemSignal, 0x02},
      {Opcode::kSemWait, 0x03}, {Opcode::kDmaCopy, 0x10},        {Opcode::kLoadStationary, 0x20},
      {Opcode::kMultiplyMoving, 0x21}, {Opcode::kPsumCopy, 0x30}};
  const char* names[] = {"nop", "halt", "sem_signal", "sem_wait", "dma_copy", "load_stationary", "multiply_moving",
                         "psum_copy"};
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(static_cast<uint8_t>(values[i].first), values[i].second);
    EXPECT_EQ(opcode_name(values[i].first).value_or("?"), names[i]);
    EXPECT_EQ(kAllOpcodes[i], values[i].first);
  }
  EXPECT_FALSE(opcode_name(static_cast<Opcode>(0x04)).has_value());
  EXPECT_EQ(engine_name(Engine::kTe), "te");
  EXPECT_EQ(engine_name(Engine::kDma), "dma");
  EXPECT_EQ(engine_name(Engine::kAct), "act");
  EXPECT_EQ(engine_name(Engine::kVec), "vec");
  EXPECT_EQ(engine_name(Engine::kCc), "cc");
  EXPECT_EQ(kNumQueues, 5);
  EXPECT_EQ(mem_space_name(MemSpace::kPsum), "psum");
  EXPECT_EQ(data_type_name(DataType::kFp32), "fp32");
  EXPECT_EQ(data_type_name(DataType::kFp8E5M2), "fp8e5m2");
}

TEST(IsaNames, FieldIdsFollowTheDocumentedOrder) {
  const char* fields[] = {
      "opcode",        "flags",       "dtype",         "src_type",       "dst_type",    "src_space",
      "dst_space",     "src_addr",    "dst_addr",      "count",          "src_stride",  "dst_stride",
      "sbuf_addr",     "psum_addr",   "k",             "free_size",      "sem",         "value",
      "reserved",      "op",          "op1",           "func",           "axis",        "partitions",
      "free",          "out_space",   "out_type",      "out_partition",  "out_offset",  "out_stride",
      "in0_space",     "in0_type",    "in0_partition", "in0_offset",     "in0_stride",  "in1_space",
      "in1_type",      "in1_partition", "in1_offset",  "in1_stride",     "in2_space",   "in2_type",
      "in2_partition", "in2_offset",  "in2_stride",    "imm0",           "imm1",        "scale",
      "bias",          "bias_space",  "bias_type",     "bias_partition", "bias_offset", "sum_space",
      "sum_type",      "sum_partition", "sum_offset",  "base",           "pstep",       "step",
      "algorithm",     "peer",        "hbm_addr",      "bytes",          "scale_addr",  "scales_space",
      "scales_partition", "scales_offset", "core",  "done_sem",      "scale_space",    "scale_type",
      "scale_partition", "scale_offset"};
  constexpr int kCount = static_cast<int>(sizeof(fields) / sizeof(fields[0]));
  ASSERT_EQ(kNumFields, kCount);
  ASSERT_EQ(kCount, 74);
  for (int id = 1; id <= kCount; ++id) {
    EXPECT_EQ(field_name(id), fields[id - 1]);
    EXPECT_EQ(field_id(fields[id - 1]), id);
  }
  EXPECT_EQ(field_id("count[2]"), 0);
  EXPECT_EQ(field_id(""), 0);
  EXPECT_EQ(field_name(0), "");
  EXPECT_EQ(field_name(kCount + 1), "");
  EXPECT_EQ(field_name(-1), "");
}

TEST(IsaEngines, QueuesAcceptTheirOpcodes) {
  for (const Opcode op : kAllOpcodes) {
    const bool everywhere = op == Opcode::kNop || op == Opcode::kHalt || op == Opcode::kSemSignal ||
                            op == Opcode::kSemWait;
    const bool te = everywhere || op == Opcode::kLoadStationary || op == Opcode::kMultiplyMoving;
    const bool dma = everywhere || op == Opcode::kDmaCopy || op == Opcode::kPsumCopy;
    const bool act = everywhere || op == Opcode::kActivation;
    const uint8_t code = static_cast<uint8_t>(op);
    const bool vec = everywhere || (code >= 0x40 && code <= 0x48);
    EXPECT_EQ(engine_accepts(Engine::kTe, op), te) << *opcode_name(op);
    EXPECT_EQ(engine_accepts(Engine::kDma, op), dma) << *opcode_name(op);
    EXPECT_EQ(engine_accepts(Engine::kAct, op), act) << *opcode_name(op);
    EXPECT_EQ(engine_accepts(Engine::kVec, op), vec) << *opcode_name(op);
    const bool cc = everywhere || (code >= 0x60 && code <= 0x64);
    EXPECT_EQ(engine_accepts(Engine::kCc, op), cc) << *opcode_name(op);
    EXPECT_FALSE(engine_accepts(static_cast<Engine>(5), op));
  }
}

TEST(IsaEncode, PlainFormatIsOpcodeThenZeros) {
  const Bytes nop = encode(Instruction::nop());
  const Bytes halt = encode(Instruction::halt());
  EXPECT_EQ(nop, Bytes{});
  Bytes expected{};
  expected[0] = 0x01;
  EXPECT_EQ(halt, expected);
}

TEST(IsaEncode, SemFormatLayout) {
  const Bytes b = encode(sem_instr(Opcode::kSemWait, 31, 0xA1B2C3D4u));
  Bytes expected{};
  expected[0] = 0x03;
  expected[4] = 31;
  expected[8] = 0xD4;
  expected[9] = 0xC3;
  expected[10] = 0xB2;
  expected[11] = 0xA1;
  EXPECT_EQ(b, expected);
}

TEST(IsaEncode, CopyFormatLayout) {
  CopyFields c;
  c.no_sat = true;
  c.src_type = DataType::kFp8E5M2;
  c.dst_type = DataType::kFp32;
  c.src_space = MemSpace::kSbuf;
  c.dst_space = MemSpace::kPsum;
  c.src_addr = 0x0123456789ABCDEFull;
  c.dst_addr = 0x1122334455667788ull;
  c.count = {0x0102, 0x0304, 0x0506, 0xFFFF};
  c.src_stride = {-2, 0x7FFFFFFF, std::numeric_limits<int32_t>::min(), 0};
  c.dst_stride = {4, -196608, 1, 0x12345678};
  const Bytes b = encode(copy_instr(Opcode::kDmaCopy, c));
  EXPECT_EQ(b[0], 0x10);
  EXPECT_EQ(b[1], 0x02) << "flags: bit 1 = no_sat";
  EXPECT_EQ(b[2], 3) << "src_type fp8e5m2";
  EXPECT_EQ(b[3], 4) << "dst_type fp32";
  EXPECT_EQ(b[4], 1) << "src_space sbuf";
  EXPECT_EQ(b[5], 2) << "dst_space psum";
  EXPECT_EQ(b[6], 0);
  EXPECT_EQ(b[7], 0);
  EXPECT_EQ(b[8], 0xEF);
  EXPECT_EQ(b[15], 0x01);
  EXPECT_EQ(le(b, 8, 8), 0x0123456789ABCDEFull);
  EXPECT_EQ(le(b, 16, 8), 0x1122334455667788ull);
  EXPECT_EQ(b[24], 0x02);
  EXPECT_EQ(b[25], 0x01);
  EXPECT_EQ(le(b, 26, 2), 0x0304u);
  EXPECT_EQ(le(b, 28, 2), 0x0506u);
  EXPECT_EQ(le(b, 30, 2), 0xFFFFu);
  EXPECT_EQ(le(b, 32, 4), 0xFFFFFFFEu);
  EXPECT_EQ(le(b, 36, 4), 0x7FFFFFFFu);
  EXPECT_EQ(le(b, 40, 4), 0x80000000u);
  EXPECT_EQ(le(b, 44, 4), 0u);
  EXPECT_EQ(le(b, 48, 4), 4u);
  EXPECT_EQ(le(b, 52, 4), static_cast<uint32_t>(-196608));
  EXPECT_EQ(le(b, 56, 4), 1u);
  EXPECT_EQ(le(b, 60, 4), 0x12345678u);
  EXPECT_EQ(encode(copy_instr(Opcode::kPsumCopy, CopyFields{}))[0], 0x30);
  EXPECT_EQ(encode(copy_instr(Opcode::kDmaCopy, CopyFields{}))[1], 0x00) << "saturating: no flag";
}

TEST(IsaEncode, TeFormatLayout) {
  const Bytes mm = encode(te_instr(Opcode::kMultiplyMoving, Dtype::kFp8E5M2, 0xFEDCBA9876543210ull, 0x4004, 0x1234,
                                   512, true));
  Bytes expected{};
  expected[0] = 0x21;
  expected[1] = 0x01;
  expected[2] = 3;
  const uint8_t sbuf[] = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE};
  for (int i = 0; i < 8; ++i) expected[8 + i] = sbuf[i];
  expected[16] = 0x04;
  expected[17] = 0x40;
  expected[24] = 0x34;
  expected[25] = 0x12;
  expected[26] = 0x00;
  expected[27] = 0x02;
  EXPECT_EQ(mm, expected);

  const Bytes ls = encode(te_instr(Opcode::kLoadStationary, Dtype::kFp16, 0x200, 0, 1, 16, false));
  EXPECT_EQ(ls[0], 0x20);
  EXPECT_EQ(ls[1], 0);
  EXPECT_EQ(ls[2], 1);
  EXPECT_EQ(le(ls, 8, 8), 0x200u);
  EXPECT_EQ(le(ls, 16, 8), 0u);
  EXPECT_EQ(le(ls, 24, 2), 1u);
  EXPECT_EQ(le(ls, 26, 2), 16u);
}

TEST(IsaEncode, FieldsOfOtherFormatsAreIgnored) {
  Instruction i = Instruction::halt();
  i.sem = {7, 9};
  i.te.k = 99;
  i.copy.src_addr = 5;
  EXPECT_EQ(encode(i), encode(Instruction::halt()));
  EXPECT_EQ(i, Instruction::halt()) << "operator== compares only the opcode's format";
  i.op = Opcode::kSemSignal;
  EXPECT_NE(i, sem_instr(Opcode::kSemSignal, 7, 10));
  EXPECT_EQ(i, sem_instr(Opcode::kSemSignal, 7, 9));
}

/// Edge instructions of every opcode: all must validate and round trip through encode/decode unchanged.
std::vector<Instruction> edge_instructions() {
  std::vector<Instruction> out = test::one_of_each();
  for (uint8_t sem : {0, 31}) {
    for (uint32_t value : {0u, 1u, 0xFFFFFFFFu}) {
      out.push_back(sem_instr(Opcode::kSemSignal, sem, value));
      out.push_back(sem_instr(Opcode::kSemWait, sem, value));
    }
  }
  for (const Dtype dt : kAllDtypes) {
    for (const uint16_t k : {uint16_t{1}, uint16_t{128}, uint16_t{0xFFFF}}) {
      out.push_back(te_instr(Opcode::kLoadStationary, dt, 0, 0, k, 1, false));
      out.push_back(te_instr(Opcode::kLoadStationary, dt, kMaxU64, 0, k, 0xFFFF, false));
      out.push_back(te_instr(Opcode::kMultiplyMoving, dt, kMaxU64, kMaxU64 - 3, k, 512, true));
      out.push_back(te_instr(Opcode::kMultiplyMoving, dt, 0, 0, k, 1, false));
    }
  }
  const DataType types[] = {DataType::kBf16, DataType::kFp16, DataType::kFp8E4M3, DataType::kFp8E5M2,
                            DataType::kFp32};
  const MemSpace spaces[] = {MemSpace::kHbm, MemSpace::kSbuf, MemSpace::kPsum, MemSpace::kHost};
  for (const DataType src : types) {
    for (const DataType dst : types) {
      for (const MemSpace ss : spaces) {
        for (const MemSpace ds : spaces) {
          // PSUM holds FP32 only (every engine's rule).
          if ((ss == MemSpace::kPsum && src != DataType::kFp32) || (ds == MemSpace::kPsum && dst != DataType::kFp32)) {
            continue;
          }
          CopyFields c;
          c.src_type = src;
          c.dst_type = dst;
          c.src_space = ss;
          c.dst_space = ds;
          c.no_sat = (static_cast<int>(src) + static_cast<int>(ds)) % 2 == 1;
          c.src_addr = ss == MemSpace::kPsum ? kMaxU64 - 3 : kMaxU64;
          c.dst_addr = 0;
          c.count = {0xFFFF, 1, 0xFFFF, 1};
          c.src_stride = {std::numeric_limits<int32_t>::min(), -1, 0, std::numeric_limits<int32_t>::max()};
          c.dst_stride = {-4, 1, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
          out.push_back(copy_instr(Opcode::kDmaCopy, c));
          if (ss == MemSpace::kPsum && ds == MemSpace::kSbuf && src == DataType::kFp32) {
            out.push_back(copy_instr(Opcode::kPsumCopy, c));
          }
        }
      }
    }
  }
  return out;
}

TEST(IsaEncode, EdgeInstructionsRoundTrip) {
  const auto edges = edge_instructions();
  EXPECT_GT(edges.size(), 250u);
  for (const Instruction& i : edges) {
    SCOPED_TRACE(disassemble(i));
    EXPECT_FALSE(validate(i).has_value()) << describe(*validate(i));
    Instruction back = Instruction::halt();
    const auto err = decode_bytes(encode(i), &back);
    ASSERT_FALSE(err.has_value()) << describe(*err);
    EXPECT_EQ(back, i);
    EXPECT_EQ(encode(back), encode(i));
  }
}

TEST(IsaDecode, DecodedInstructionKeepsOtherFormatsAtDefaults) {
  Instruction out;
  out.te.k = 77;
  ASSERT_FALSE(decode_bytes(encode(sem_instr(Opcode::kSemSignal, 2, 5)), &out));
  EXPECT_EQ(out.te.k, 1);
  EXPECT_EQ(out.copy.count, (std::array<uint16_t, 4>{1, 1, 1, 1}));
  EXPECT_EQ(out.sem.sem, 2);
  EXPECT_EQ(out.sem.value, 5u);
}

TEST(IsaDecode, EveryByteThatIsNoOpcodeIsRejected) {
  int rejected = 0;
  for (int v = 0; v < 256; ++v) {
    Bytes b{};
    b[0] = static_cast<uint8_t>(v);
    const bool is_op = v == 0x00 || v == 0x01 || v == 0x02 || v == 0x03 || v == 0x10 || v == 0x20 || v == 0x21 ||
                       v == 0x30 || (v >= 0x40 && v <= 0x48) || v == 0x50 || (v >= 0x60 && v <= 0x64);
    if (is_op) continue;
    SCOPED_TRACE(v);
    expect_error(b, IsaError::Code::kBadOpcode, "opcode", "byte " + hex2(v) + " is not an opcode");
    ++rejected;
  }
  EXPECT_EQ(rejected, 256 - 23);
}

TEST(IsaDecode, EveryReservedByteOfEveryOpcodeIsChecked) {
  for (const Instruction& base : test::one_of_each()) {
    const auto reserved = test::reserved_offsets(base.op);
    for (std::size_t at = 1; at < kInstrBytes; ++at) {
      Bytes b = encode(base);
      b[at] ^= 0x80;
      const auto err = decode_bytes(b);
      SCOPED_TRACE(std::string(*opcode_name(base.op)) + " byte " + std::to_string(at));
      if (reserved.count(at) != 0) {
        ASSERT_TRUE(err.has_value());
        EXPECT_EQ(err->code, IsaError::Code::kReservedNonZero);
        EXPECT_EQ(err->field, "reserved");
        EXPECT_NE(err->message.find("byte " + std::to_string(at) + " "), std::string::npos) << err->message;
      } else if (err) {
        EXPECT_NE(err->field, "reserved") << "byte " << at << " is a field: " << err->message;
      }
    }
  }
}

TEST(IsaDecode, ReservedBytesAreCheckedBeforeFieldsLowestFirst) {
  Bytes b = encode(te_instr(Opcode::kMultiplyMoving, Dtype::kBf16, 0, 0, 1, 1, false));
  b[2] = 9;   // dtype out of range
  b[40] = 1;  // reserved
  b[5] = 1;   // reserved, lower
  expect_error(b, IsaError::Code::kReservedNonZero, "reserved", "byte 5 ");
}

TEST(IsaDecode, CopyEnumFieldsOutOfRange) {
  const Instruction base = test::one_of_each()[4];
  const std::pair<std::size_t, std::string> fields[] = {
      {2, "src_type"}, {3, "dst_type"}, {4, "src_space"}, {5, "dst_space"}};
  for (const auto& [at, name] : fields) {
    const unsigned first = name.find("type") != std::string::npos ? 5 : 4;  // spaces: 0 hbm .. 3 host
    for (unsigned v = first; v < 256; ++v) {
      Bytes b = encode(base);
      b[at] = static_cast<uint8_t>(v);
      SCOPED_TRACE(name + "=" + std::to_string(v));
      expect_error(b, IsaError::Code::kBadField, name, "value " + std::to_string(v) + " is not a");
    }
  }
}

TEST(IsaDecode, DtypeThatIsNotATeTypeIsRejectedForBothTeOps) {
  // 0..3 narrow, 5..7 MX (spec/isa.json); 4 (fp32) and 8..255 are not TE operand types.
  for (const Opcode op : {Opcode::kLoadStationary, Opcode::kMultiplyMoving}) {
    for (unsigned v = 4; v < 256; ++v) {
      if (v >= 5 && v <= 7) continue;
      Bytes b = encode(te_instr(op, Dtype::kBf16, 0, 0, 1, 1, false));
      b[2] = static_cast<uint8_t>(v);
      SCOPED_TRACE(v);
      expect_error(b, IsaError::Code::kBadField, "dtype", "value " + std::to_string(v) + " is not a dtype");
    }
  }
}

TEST(IsaDecode, MxDtypesDecodeWithTheirScaleAddress) {
  for (const Opcode op : {Opcode::kLoadStationary, Opcode::kMultiplyMoving}) {
    for (const Dtype dt : kMxTypes) {
      Instruction i = te_instr(op, dt, 0x40, 0, 32, 4, false);
      i.te.scale_addr = 0x123456789Aull;
      const Bytes b = encode(i);
      EXPECT_EQ(b[32], 0x9A);  // scale_addr is bytes 32..39, little-endian
      EXPECT_EQ(b[36], 0x12);
      Instruction d;
      const auto err = decode_bytes(b, &d);
      ASSERT_FALSE(err.has_value()) << err->message;
      EXPECT_EQ(d.te.dtype, dt);
      EXPECT_EQ(d.te.scale_addr, 0x123456789Aull);
    }
  }
}

TEST(IsaDecode, ScaleAddressOfANarrowDtypeIsReserved) {
  Bytes b = encode(te_instr(Opcode::kLoadStationary, Dtype::kFp8E4M3, 0, 0, 1, 1, false));
  b[35] = 1;
  expect_error(b, IsaError::Code::kReservedNonZero, "reserved", "byte 35 ");
  Instruction i = te_instr(Opcode::kMultiplyMoving, Dtype::kBf16, 0, 0, 1, 1, false);
  i.te.scale_addr = 64;
  const auto err = validate(i);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->field, "scale_addr");
  EXPECT_NE(err->message.find("must be 0 for dtype bf16"), std::string::npos) << err->message;
}

TEST(IsaDecode, UndefinedFlagBitsAreRejected) {
  const std::pair<Instruction, uint8_t> cases[] = {
      {test::one_of_each()[4], 0x32},  // dma_copy: no_sat, sr, done_sem (byte 6 = 0: semaphore 0)
      {test::one_of_each()[7], 0x32},  // psum_copy: no_sat, sr, done_sem
      {te_instr(Opcode::kLoadStationary, Dtype::kBf16, 0, 0, 1, 1, false), 0x00},
      {te_instr(Opcode::kMultiplyMoving, Dtype::kBf16, 0, 0, 1, 1, false), 0x01},  // accumulate
  };
  for (const auto& [base, defined] : cases) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes b = encode(base);
      b[1] = static_cast<uint8_t>(1u << bit);
      SCOPED_TRACE(std::string(*opcode_name(base.op)) + " bit " + std::to_string(bit));
      if ((defined >> bit) & 1) {
        EXPECT_FALSE(decode_bytes(b).has_value());
      } else {
        expect_error(b, IsaError::Code::kBadField, "flags", "not defined for " + std::string(*opcode_name(base.op)));
      }
    }
  }
}

TEST(IsaDecode, DecodeRunsValidate) {
  struct Case {
    Instruction base;
    std::vector<std::pair<std::size_t, uint8_t>> writes;  // {offset, byte}
    std::string field;
    std::string text;
  };
  const auto all = test::one_of_each();
  const Instruction mm = te_instr(Opcode::kMultiplyMoving, Dtype::kBf16, 0, 0, 1, 1, false);
  const Instruction ls = te_instr(Opcode::kLoadStationary, Dtype::kBf16, 0, 0, 1, 1, false);
  const std::vector<Case> cases = {
      {all[2], {{4, 32}}, "sem", "sem 32 is out of range 0..31"},
      {all[3], {{4, 255}}, "sem", "sem 255"},
      {all[4], {{24, 0}, {25, 0}}, "count", "count[0] is 0"},
      {all[4], {{26, 0}, {27, 0}}, "count", "count[1] is 0"},
      {all[4], {{28, 0}, {29, 0}}, "count", "count[2] is 0"},
      {all[4], {{30, 0}, {31, 0}}, "count", "count[3] is 0"},
      {mm, {{24, 0}}, "k", "k is 0"},
      {ls, {{24, 0}}, "k", "k is 0"},
      {mm, {{26, 0}}, "free_size", "N is 0"},
      {mm, {{26, 0x01}, {27, 0x02}}, "free_size", "N 513 is out of range 1..512"},
      {mm, {{26, 0xFF}, {27, 0xFF}}, "free_size", "N 65535"},
      {ls, {{26, 0}}, "free_size", "M is 0"},
      {mm, {{16, 2}}, "psum_addr", "0x2 is not 4-byte aligned"},
      {ls, {{16, 4}}, "psum_addr", "must be 0 for load_stationary"},
      {ls, {{23, 0x80}}, "psum_addr", "must be 0 for load_stationary"},
      {all[7], {{4, 0}}, "src_space", "psum_copy reads PSUM, not hbm"},
      {all[7], {{5, 2}}, "dst_space", "psum_copy writes SBUF, not psum"},
      {all[7], {{2, 0}}, "src_type", "psum_copy reads fp32, not bf16"},
      {all[7], {{8, 1}}, "src_addr", "PSUM address 0x1 is not 4-byte aligned"},
      {all[4], {{5, 2}, {16, 6}}, "dst_addr", "PSUM address 0x6 is not 4-byte aligned"},
      // PSUM holds FP32 for the DMA as for the Vector and Scalar engines.
      {all[4], {{5, 2}, {3, 2}, {16, 0}}, "dst_type", "PSUM holds fp32, not fp8e4m3"},
      {all[4], {{4, 2}, {2, 0}, {8, 0}, {9, 0}, {10, 0}, {11, 0}, {12, 0}, {13, 0}, {14, 0}, {15, 0}}, "src_type",
       "PSUM holds fp32, not bf16"},
  };
  for (const Case& c : cases) {
    Bytes b = encode(c.base);
    for (const auto& [at, byte] : c.writes) b[at] = byte;
    SCOPED_TRACE(c.field + ": " + c.text);
    expect_error(b, IsaError::Code::kBadField, c.field, c.text);
  }
}

TEST(IsaDecode, ErrorLeavesOutputUnchanged) {
  Instruction out = sem_instr(Opcode::kSemWait, 4, 44);
  Bytes b = encode(Instruction::halt());
  b[63] = 1;
  ASSERT_TRUE(decode_bytes(b, &out).has_value());
  EXPECT_EQ(out, sem_instr(Opcode::kSemWait, 4, 44));
}

TEST(IsaValidate, HandBuiltInstructionsOutOfEnum) {
  Instruction i = test::one_of_each()[4];
  i.copy.dst_type = static_cast<DataType>(5);
  ASSERT_TRUE(validate(i));
  EXPECT_EQ(validate(i)->field, "dst_type");
  i = test::one_of_each()[4];
  i.copy.src_space = static_cast<MemSpace>(4);
  EXPECT_EQ(validate(i)->field, "src_space");
  i.copy.src_space = MemSpace::kHost;  // bus-master DMA: legal in a dma_copy
  EXPECT_FALSE(validate(i));
  i = te_instr(Opcode::kLoadStationary, static_cast<Dtype>(4), 0, 0, 1, 1, false);
  EXPECT_EQ(validate(i)->field, "dtype");
  i = te_instr(Opcode::kLoadStationary, Dtype::kBf16, 0, 0, 1, 1, true);
  EXPECT_EQ(validate(i)->field, "flags");
  i.op = static_cast<Opcode>(0x04);
  EXPECT_EQ(validate(i)->field, "opcode");
  EXPECT_EQ(validate(i)->code, IsaError::Code::kBadOpcode);
  EXPECT_EQ(describe(*validate(sem_instr(Opcode::kSemSignal, 40, 1))), "field sem: sem 40 is out of range 0..31");
}

}  // namespace
}  // namespace trnsim::isa
