// The collective engine's format "cc" (docs/isa.md): byte layout, round trips at the field edges, every decode
// error with its field, the cc queue in engine_accepts(), and the program text (assemble/disassemble) of cc.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "firmware/isa/isa.h"
#include "tests/isa/isa_test_util.h"

namespace trnsim::isa {
namespace {

using test::Bytes;

Instruction cc_instr(Opcode op, DataType dtype, CcAlgorithm algo, uint32_t peer, uint64_t addr, uint64_t count) {
  Instruction i;
  i.op = op;
  i.cc.dtype = dtype;
  i.cc.algorithm = algo;
  i.cc.peer = peer;
  i.cc.hbm_addr = addr;
  i.cc.count = count;
  return i;
}

uint64_t le_at(const Bytes& b, std::size_t off, std::size_t n) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= uint64_t(b[off + i]) << (8 * i);
  return v;
}

TEST(IsaCc, OpcodesNamesAndQueue) {
  const std::pair<Opcode, uint8_t> values[] = {{Opcode::kAllReduce, 0x60},
                                               {Opcode::kAllGather, 0x61},
                                               {Opcode::kReduceScatter, 0x62},
                                               {Opcode::kSend, 0x63},
                                               {Opcode::kRecv, 0x64}};
  const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "send", "recv"};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(static_cast<uint8_t>(values[i].first), values[i].second);
    EXPECT_EQ(opcode_name(values[i].first).value_or("?"), names[i]);
    EXPECT_TRUE(is_collective(values[i].first));
    EXPECT_FALSE(is_tensor_op(values[i].first));
    EXPECT_TRUE(engine_accepts(Engine::kCc, values[i].first));
    for (const Engine e : {Engine::kTe, Engine::kDma, Engine::kAct, Engine::kVec}) {
      EXPECT_FALSE(engine_accepts(e, values[i].first)) << names[i];
    }
  }
  EXPECT_FALSE(is_collective(Opcode::kActivation));
  EXPECT_FALSE(is_collective(static_cast<Opcode>(0x65)));
  EXPECT_FALSE(engine_accepts(Engine::kCc, Opcode::kDmaCopy));
  EXPECT_TRUE(engine_accepts(Engine::kCc, Opcode::kSemWait));
  EXPECT_EQ(static_cast<int>(Engine::kCc), 4);
  EXPECT_EQ(kAllEngines[4], Engine::kCc);
  EXPECT_EQ(cc_algorithm_name(CcAlgorithm::kRing), "ring");
  EXPECT_EQ(cc_algorithm_name(CcAlgorithm::kRhd), "rhd");
  EXPECT_EQ(cc_algorithm_name(static_cast<CcAlgorithm>(2)), "?");
}

TEST(IsaCc, CollectiveLayout) {
  const Bytes b = encode(cc_instr(Opcode::kReduceScatter, DataType::kBf16, CcAlgorithm::kRhd, 7,
                                  0x0123456789abcdefull, 0xfedcba9876543210ull));
  EXPECT_EQ(b[0], 0x62);
  EXPECT_EQ(b[1], 0);
  EXPECT_EQ(b[2], 0);  // bf16 is DataType code 0
  EXPECT_EQ(b[3], 1);  // rhd
  EXPECT_EQ(le_at(b, 4, 4), 0u) << "peer is not encoded for a collective";
  EXPECT_EQ(le_at(b, 8, 8), 0x0123456789abcdefull);
  EXPECT_EQ(le_at(b, 16, 8), 0xfedcba9876543210ull);
  for (std::size_t i = 24; i < 64; ++i) EXPECT_EQ(b[i], 0) << i;
  const Bytes f = encode(cc_instr(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing, 0, 0, 1));
  EXPECT_EQ(f[2], 4);
  EXPECT_EQ(f[3], 0);
}

TEST(IsaCc, SendRecvLayout) {
  const Bytes b = encode(cc_instr(Opcode::kRecv, DataType::kBf16, CcAlgorithm::kRhd, 0xdeadbeef, 0x40, 256));
  EXPECT_EQ(b[0], 0x64);
  EXPECT_EQ(b[2], 0) << "dtype is not encoded for send/recv";
  EXPECT_EQ(b[3], 0) << "algorithm is not encoded for send/recv";
  EXPECT_EQ(le_at(b, 4, 4), 0xdeadbeefu);
  EXPECT_EQ(le_at(b, 8, 8), 0x40u);
  EXPECT_EQ(le_at(b, 16, 8), 256u);
}

TEST(IsaCc, RoundTripAtFieldEdges) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (const Opcode op : {Opcode::kAllReduce, Opcode::kAllGather, Opcode::kReduceScatter}) {
    for (const DataType t : {DataType::kFp32, DataType::kBf16}) {
      for (const CcAlgorithm a : {CcAlgorithm::kRing, CcAlgorithm::kRhd}) {
        for (const uint64_t v : {uint64_t(0), uint64_t(1), kMax}) {
          const Instruction in = cc_instr(op, t, a, 0, v, kMax - v);
          Instruction out;
          const Bytes b = encode(in);
          ASSERT_FALSE(decode(b.data(), &out).has_value());
          EXPECT_EQ(out, in);
          EXPECT_EQ(out.cc.count, kMax - v);
          EXPECT_EQ(out.cc.dtype, t);
          EXPECT_EQ(out.cc.algorithm, a);
        }
      }
    }
  }
  for (const Opcode op : {Opcode::kSend, Opcode::kRecv}) {
    for (const uint32_t peer : {0u, 1u, 0xffffffffu}) {
      const Instruction in = cc_instr(op, DataType::kFp32, CcAlgorithm::kRing, peer, 64, 0);
      Instruction out;
      const Bytes b = encode(in);
      ASSERT_FALSE(decode(b.data(), &out).has_value());
      EXPECT_EQ(out, in);
      EXPECT_EQ(out.cc.peer, peer);
    }
  }
  // operator== compares the fields of the opcode's format only.
  EXPECT_EQ(cc_instr(Opcode::kSend, DataType::kFp32, CcAlgorithm::kRing, 3, 0, 8),
            cc_instr(Opcode::kSend, DataType::kBf16, CcAlgorithm::kRhd, 3, 0, 8));
  EXPECT_NE(cc_instr(Opcode::kSend, DataType::kFp32, CcAlgorithm::kRing, 3, 0, 8),
            cc_instr(Opcode::kSend, DataType::kFp32, CcAlgorithm::kRing, 4, 0, 8));
  EXPECT_NE(cc_instr(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing, 0, 0, 8),
            cc_instr(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRhd, 0, 0, 8));
}

void expect_error(const Bytes& b, IsaError::Code code, const std::string& field, const std::string& text) {
  Instruction out;
  const auto err = decode(b.data(), &out);
  ASSERT_TRUE(err.has_value()) << "decoded without error";
  EXPECT_EQ(err->code, code) << err->message;
  EXPECT_EQ(err->field, field) << err->message;
  EXPECT_NE(err->message.find(text), std::string::npos) << err->message;
  EXPECT_NE(field_id(err->field), 0);
}

TEST(IsaCc, DecodeErrorsNameTheirField) {
  const Bytes good = encode(cc_instr(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing, 0, 0x100, 16));
  // Every narrow type is refused as a collective dtype, and codes past fp32.
  for (const int t : {1, 2, 3, 5, 255}) {
    Bytes b = good;
    b[2] = uint8_t(t);
    SCOPED_TRACE(t);
    expect_error(b, IsaError::Code::kBadField, "dtype", "value " + std::to_string(t) + " is not a collective data type");
  }
  for (const int a : {2, 255}) {
    Bytes b = good;
    b[3] = uint8_t(a);
    expect_error(b, IsaError::Code::kBadField, "algorithm", "value " + std::to_string(a) + " is not a collective");
  }
  // dtype is checked before algorithm (byte order).
  Bytes both = good;
  both[2] = 9;
  both[3] = 9;
  expect_error(both, IsaError::Code::kBadField, "dtype", "value 9");
  // Reserved bytes, every one, for a collective and for send/recv; the lowest offset is named.
  const Bytes send = encode(cc_instr(Opcode::kSend, DataType::kFp32, CcAlgorithm::kRing, 1, 0, 8));
  for (const auto& [op, base] : {std::pair{Opcode::kAllReduce, good}, std::pair{Opcode::kSend, send}}) {
    for (const std::size_t off : test::reserved_offsets(op)) {
      Bytes b = base;
      b[off] = 0x5a;
      SCOPED_TRACE(off);
      expect_error(b, IsaError::Code::kReservedNonZero, "reserved", "byte " + std::to_string(off) + " is 0x5a");
    }
  }
  // A send's dtype/algorithm bytes are reserved: a non-zero value there is not read as a dtype.
  Bytes s = send;
  s[2] = 4;
  expect_error(s, IsaError::Code::kReservedNonZero, "reserved", "byte 2");
  // validate() on a struct agrees with decode.
  Instruction bad = cc_instr(Opcode::kAllGather, DataType::kFp8E4M3, CcAlgorithm::kRing, 0, 0, 1);
  ASSERT_TRUE(validate(bad).has_value());
  EXPECT_EQ(validate(bad)->field, "dtype");
  bad.cc.dtype = DataType::kBf16;
  bad.cc.algorithm = static_cast<CcAlgorithm>(7);
  ASSERT_TRUE(validate(bad).has_value());
  EXPECT_EQ(validate(bad)->field, "algorithm");
  // count 0 is valid (a no-op that still takes part in the rendezvous).
  EXPECT_FALSE(validate(cc_instr(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRhd, 0, 0, 0)).has_value());
}

TEST(IsaCc, AssembleAndDisassemble) {
  const Program p = assemble(
      ".queue cc\n"
      "all_reduce hbm=0x1000 count=1024            # defaults: fp32, ring\n"
      "all_gather dtype=bf16 algorithm=rhd hbm=64 count=3\n"
      "reduce_scatter dtype=fp32 algorithm=ring hbm=0x0 count=0\n"
      "sem_wait sem=2 value=1\n"
      "send peer=3 hbm=0x200 bytes=256\n"
      "recv peer=0 hbm=0x300 bytes=256\n"
      "halt\n");
  const auto& q = p.queue(Engine::kCc);
  ASSERT_EQ(q.size(), 7u);
  EXPECT_EQ(q[0], cc_instr(Opcode::kAllReduce, DataType::kFp32, CcAlgorithm::kRing, 0, 0x1000, 1024));
  EXPECT_EQ(q[1], cc_instr(Opcode::kAllGather, DataType::kBf16, CcAlgorithm::kRhd, 0, 64, 3));
  EXPECT_EQ(q[4], cc_instr(Opcode::kSend, DataType::kFp32, CcAlgorithm::kRing, 3, 0x200, 256));
  EXPECT_EQ(q[5], cc_instr(Opcode::kRecv, DataType::kFp32, CcAlgorithm::kRing, 0, 0x300, 256));
  EXPECT_EQ(disassemble(q[0]), "all_reduce dtype=fp32 algorithm=ring hbm=0x1000 count=1024");
  EXPECT_EQ(disassemble(q[1]), "all_gather dtype=bf16 algorithm=rhd hbm=0x40 count=3");
  EXPECT_EQ(disassemble(q[4]), "send peer=3 hbm=0x200 bytes=256");
  EXPECT_EQ(disassemble(q[5]), "recv peer=0 hbm=0x300 bytes=256");
  const std::string text = disassemble(p);
  EXPECT_NE(text.find(".queue cc\n"), std::string::npos) << text;
  EXPECT_EQ(assemble(text), p);
  EXPECT_EQ(read_program_binary(write_program_binary(p)), p);
}

TEST(IsaCc, AssemblerErrorsNameLineColumnAndCause) {
  const std::pair<const char*, const char*> cases[] = {
      {".queue cc\nall_reduce hbm=0 count=4 dtype=fp16\n", "2:32: dtype: 'fp16' is not a collective data type"},
      {".queue cc\nall_reduce hbm=0 count=4 algorithm=tree\n", "2:36: algorithm: 'tree' is not a collective"},
      {".queue cc\nall_reduce hbm=0\n", "2:1: all_reduce: missing field 'count'"},
      {".queue cc\nsend hbm=0 bytes=4\n", "2:1: send: missing field 'peer'"},
      {".queue cc\nsend peer=1 hbm=0 bytes=4 dtype=fp32\n", "unknown field 'dtype'"},
      {".queue cc\nrecv peer=-1 hbm=0 bytes=4\n", "peer: bad number '-1'"},
      {".queue cc\ndma_copy src=hbm:0 dst=sbuf:0 count=[1]\n", "dma_copy is not accepted by the cc queue"},
      {".queue vec\nall_reduce hbm=0 count=4\n", "all_reduce is not accepted by the vec queue"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      assemble(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ProgramError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what() << "\nexpected: " << expected;
    }
  }
}

}  // namespace
}  // namespace trnsim::isa
