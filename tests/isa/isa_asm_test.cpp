// Program text (docs/isa.md, "Program text"): what each line assembles to, the documented defaults, the canonical
// disassembly, round trips text -> program -> text and binary -> text -> binary, and "LINE:COL:" errors.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <random>
#include <string>

#include "firmware/isa/isa.h"
#include "tests/isa/isa_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim::isa {
namespace {

using test::copy_instr;
using test::sem_instr;
using test::te_instr;

/// Every opcode, every field, at its edges.
constexpr const char* kEdgeProgram = R"(# every opcode and field edge
.queue te
load_stationary dtype=bf16 sbuf=0x0 k=16 m=16
load_stationary dtype=fp8e5m2 sbuf=0xffffffffffffffff k=65535 m=65535
multiply_moving dtype=fp8e4m3 sbuf=0x200 psum=0x0 k=16 n=512 acc
multiply_moving dtype=fp16 sbuf=0 psum=0xfffffffffffffffc k=1 n=1 no_acc
sem_signal sem=31 value=0xFFFFFFFF
sem_wait sem=0 value=0
nop
.queue dma   # a second section
dma_copy src=hbm:0x1000 dst=sbuf:0x0 type=bf16->bf16 count=[64,16,1,1] src_stride=[2,128,0,0] dst_stride=[2,196608,0,0] no_sat
dma_copy src=psum:0xfffffffffffffffc dst=hbm:18446744073709551615 type=fp32->fp8e5m2 count=[65535, 1, 65535, 1] src_stride=[-2147483648,-1,0,2147483647] dst_stride=[-0x80000000,0x7fffffff,-4,4] sat
psum_copy src=psum:0x4 dst=sbuf:0x10 type=fp32->fp8e4m3 count=[512,16,1,1] src_stride=[4,16384,0,0] dst_stride=[1,196608,0,0]
sem_wait sem=3 value=2
halt
.queue te
halt
)";

TEST(IsaAsm, SemSignalToAnotherCoreRoundTripsThroughTheEncodingAndTheText) {
  const Program p = assemble(".queue dma\nsem_signal sem=7 value=3 core=5\nsem_signal sem=7 value=3\nhalt\n");
  const auto& dma = p.queue(Engine::kDma);
  ASSERT_EQ(dma.size(), 3u);
  EXPECT_EQ(dma[0].sem.core, 5);
  EXPECT_EQ(dma[1].sem.core, -1) << "no core=: this core";
  const auto bytes = encode(dma[0]);
  EXPECT_EQ(bytes[1], 0x01) << "flag bit 0: byte 5 names the core";
  EXPECT_EQ(bytes[5], 5);
  EXPECT_EQ(encode(dma[1])[1], 0x00);
  Instruction back;
  EXPECT_FALSE(decode(bytes.data(), &back).has_value());
  EXPECT_EQ(back, dma[0]);
  EXPECT_EQ(disassemble(dma[0]), "sem_signal sem=7 value=3 core=5");
  EXPECT_EQ(disassemble(dma[1]), "sem_signal sem=7 value=3");
  // Byte 5 without the flag is reserved; sem_wait takes no flag.
  auto stray = encode(dma[1]);
  stray[5] = 2;
  EXPECT_TRUE(decode(stray.data(), &back).has_value());
  auto wait = encode(assemble(".queue dma\nsem_wait sem=1 value=1\nhalt\n").queue(Engine::kDma)[0]);
  wait[1] = 0x01;
  EXPECT_TRUE(decode(wait.data(), &back).has_value());
}

TEST(IsaAsm, CopyCompletionSemaphoreRoundTripsThroughTheEncodingAndTheText) {
  const Program p = assemble(
      ".queue dma\n"
      "dma_copy src=hbm:0x0 dst=sbuf:0x40 type=bf16 count=[8] done_sem=31\n"
      "psum_copy src=psum:0x0 dst=sbuf:0x0 type=fp32 count=[4] done_sem=0\n"
      "dma_copy src=hbm:0x0 dst=sbuf:0x40 type=bf16 count=[8]\n"
      "halt\n");
  const auto& dma = p.queue(Engine::kDma);
  ASSERT_EQ(dma.size(), 4u);
  EXPECT_EQ(dma[0].copy.done_sem, 31);
  EXPECT_EQ(dma[1].copy.done_sem, 0);
  EXPECT_EQ(dma[2].copy.done_sem, -1) << "no done_sem=: no completion signal";
  const auto bytes = encode(dma[0]);
  EXPECT_EQ(bytes[1], 0x20) << "flag bit 5: byte 6 names the semaphore";
  EXPECT_EQ(bytes[6], 31);
  EXPECT_EQ(encode(dma[1])[1], 0x20);
  EXPECT_EQ(encode(dma[1])[6], 0) << "semaphore 0 is a semaphore: the flag says so";
  EXPECT_EQ(encode(dma[2])[1], 0x00);
  for (const Instruction& in : {dma[0], dma[1], dma[2]}) {
    Instruction back;
    const auto b = encode(in);
    ASSERT_FALSE(decode(b.data(), &back).has_value());
    EXPECT_EQ(back, in);
    EXPECT_EQ(assemble(".queue dma\n" + disassemble(in) + "\nhalt\n").queue(Engine::kDma)[0], in);
  }
  EXPECT_NE(disassemble(dma[0]).find(" done_sem=31"), std::string::npos) << disassemble(dma[0]);
  EXPECT_EQ(disassemble(dma[2]).find("done_sem"), std::string::npos) << disassemble(dma[2]);
  // Byte 6 without the flag is reserved; byte 7 stays reserved with it.
  Instruction back;
  auto stray = encode(dma[2]);
  stray[6] = 3;
  const auto e6 = decode(stray.data(), &back);
  ASSERT_TRUE(e6.has_value());
  EXPECT_EQ(e6->field, "reserved");
  auto seven = encode(dma[0]);
  seven[7] = 1;
  const auto e7 = decode(seven.data(), &back);
  ASSERT_TRUE(e7.has_value());
  EXPECT_NE(e7->message.find("byte 7"), std::string::npos) << e7->message;
  // A semaphore past 31, in the bytes and in the text.
  auto big = encode(dma[0]);
  big[6] = 32;
  const auto e32 = decode(big.data(), &back);
  ASSERT_TRUE(e32.has_value());
  EXPECT_EQ(e32->field, "done_sem");
  EXPECT_NE(e32->message.find("done_sem 32 is out of range 0..31"), std::string::npos) << e32->message;
  EXPECT_EQ(field_id("done_sem"), 70);
  try {
    assemble(".queue dma\ndma_copy src=hbm:0x0 dst=sbuf:0x0 count=[1] done_sem=32\nhalt\n");
    ADD_FAILURE() << "done_sem=32 assembled";
  } catch (const ProgramError& e) {
    EXPECT_NE(std::string(e.what()).find("done_sem"), std::string::npos) << e.what();
  }
}

TEST(IsaAsm, EdgeProgramAssemblesToTheWrittenFields) {
  const Program p = assemble(kEdgeProgram);
  const auto& te = p.queue(Engine::kTe);
  const auto& dma = p.queue(Engine::kDma);
  ASSERT_EQ(te.size(), 8u);
  ASSERT_EQ(dma.size(), 5u);
  EXPECT_EQ(te[0], te_instr(Opcode::kLoadStationary, Dtype::kBf16, 0, 0, 16, 16, false));
  EXPECT_EQ(te[1], te_instr(Opcode::kLoadStationary, Dtype::kFp8E5M2, ~0ull, 0, 65535, 65535, false));
  EXPECT_EQ(te[2], te_instr(Opcode::kMultiplyMoving, Dtype::kFp8E4M3, 0x200, 0, 16, 512, true));
  EXPECT_EQ(te[3], te_instr(Opcode::kMultiplyMoving, Dtype::kFp16, 0, ~0ull - 3, 1, 1, false));
  EXPECT_EQ(te[4], sem_instr(Opcode::kSemSignal, 31, 0xFFFFFFFFu));
  EXPECT_EQ(te[5], sem_instr(Opcode::kSemWait, 0, 0));
  EXPECT_EQ(te[6], Instruction::nop());
  EXPECT_EQ(te[7], Instruction::halt());

  const CopyFields& c0 = dma[0].copy;
  EXPECT_EQ(dma[0].op, Opcode::kDmaCopy);
  EXPECT_EQ(c0.src_space, MemSpace::kHbm);
  EXPECT_EQ(c0.src_addr, 0x1000u);
  EXPECT_EQ(c0.dst_space, MemSpace::kSbuf);
  EXPECT_EQ(c0.dst_addr, 0u);
  EXPECT_EQ(c0.src_type, DataType::kBf16);
  EXPECT_EQ(c0.dst_type, DataType::kBf16);
  EXPECT_EQ(c0.count, (std::array<uint16_t, 4>{64, 16, 1, 1}));
  EXPECT_EQ(c0.src_stride, (std::array<int32_t, 4>{2, 128, 0, 0}));
  EXPECT_EQ(c0.dst_stride, (std::array<int32_t, 4>{2, 196608, 0, 0}));
  EXPECT_TRUE(c0.no_sat);

  const CopyFields& c1 = dma[1].copy;
  EXPECT_EQ(c1.src_space, MemSpace::kPsum);
  EXPECT_EQ(c1.dst_addr, ~0ull);
  EXPECT_EQ(c1.src_type, DataType::kFp32);
  EXPECT_EQ(c1.dst_type, DataType::kFp8E5M2);
  EXPECT_EQ(c1.count, (std::array<uint16_t, 4>{65535, 1, 65535, 1}));
  EXPECT_EQ(c1.src_stride, (std::array<int32_t, 4>{std::numeric_limits<int32_t>::min(), -1, 0, 2147483647}));
  EXPECT_EQ(c1.dst_stride, (std::array<int32_t, 4>{std::numeric_limits<int32_t>::min(), 0x7fffffff, -4, 4}));
  EXPECT_FALSE(c1.no_sat);
  EXPECT_EQ(dma[2].op, Opcode::kPsumCopy);
  EXPECT_EQ(dma[2].copy.dst_type, DataType::kFp8E4M3);
  EXPECT_EQ(dma[3], sem_instr(Opcode::kSemWait, 3, 2));
  EXPECT_EQ(dma[4], Instruction::halt());
}

TEST(IsaAsm, OmittedFieldsTakeTheDocumentedDefaults) {
  const Program p = assemble(
      ".queue te\n"
      "load_stationary sbuf=0x40 k=4 m=8\n"
      "multiply_moving sbuf=0 psum=0 k=4 n=8\n"
      "sem_signal sem=5\n"
      ".queue dma\n"
      "dma_copy src=hbm:0 dst=sbuf:0 count=[8]\n"
      "dma_copy src=hbm:0 dst=sbuf:0 type=fp8e4m3 count=[3,1,5,7]\n"
      "dma_copy src=hbm:0 dst=sbuf:0 type=bf16->fp32 count=[3,4] src_stride=[6] \n");
  const auto& te = p.queue(Engine::kTe);
  EXPECT_EQ(te[0], te_instr(Opcode::kLoadStationary, Dtype::kBf16, 0x40, 0, 4, 8, false));
  EXPECT_EQ(te[1], te_instr(Opcode::kMultiplyMoving, Dtype::kBf16, 0, 0, 4, 8, false));
  EXPECT_EQ(te[2], sem_instr(Opcode::kSemSignal, 5, 1));
  const auto& dma = p.queue(Engine::kDma);
  EXPECT_EQ(dma[0].copy.src_type, DataType::kFp32);
  EXPECT_EQ(dma[0].copy.dst_type, DataType::kFp32);
  EXPECT_FALSE(dma[0].copy.no_sat);
  EXPECT_EQ(dma[0].copy.count, (std::array<uint16_t, 4>{8, 1, 1, 1}));
  EXPECT_EQ(dma[0].copy.src_stride, (std::array<int32_t, 4>{4, 0, 0, 0}));
  EXPECT_EQ(dma[0].copy.dst_stride, (std::array<int32_t, 4>{4, 0, 0, 0}));
  EXPECT_EQ(dma[1].copy.src_type, DataType::kFp8E4M3);
  EXPECT_EQ(dma[1].copy.dst_type, DataType::kFp8E4M3);
  // dense over count [3,1,5,7] with 1-byte elements; the count-1 dimension gets stride 0
  EXPECT_EQ(dma[1].copy.src_stride, (std::array<int32_t, 4>{1, 0, 3, 15}));
  EXPECT_EQ(dma[2].copy.src_stride, (std::array<int32_t, 4>{6, 0, 0, 0}));
  EXPECT_EQ(dma[2].copy.dst_stride, (std::array<int32_t, 4>{4, 12, 0, 0}));
}

TEST(IsaAsm, CanonicalDisassembly) {
  const Program p = assemble(
      ".queue dma\n"
      "dma_copy src=hbm:4096 dst=sbuf:0 type=bf16 count=[64,16] no_sat\n"
      "sem_signal sem=3\n"
      "halt\n"
      ".queue te\n"
      "sem_wait sem=3 value=1\n"
      "load_stationary sbuf=0 k=16 m=16\n"
      "multiply_moving dtype=fp8e4m3 sbuf=512 psum=0 k=16 n=512 acc\n");
  EXPECT_EQ(disassemble(p),
            "# trnsim ISA v0 program (canonical text; '# N' is the instruction index in its queue)\n"
            ".queue te\n"
            "sem_wait sem=3 value=1  # 0\n"
            "load_stationary dtype=bf16 sbuf=0x0 k=16 m=16  # 1\n"
            "multiply_moving dtype=fp8e4m3 sbuf=0x200 psum=0x0 k=16 n=512 acc  # 2\n"
            ".queue dma\n"
            "dma_copy src=hbm:0x1000 dst=sbuf:0x0 type=bf16->bf16 count=[64,16,1,1] src_stride=[2,128,0,0] "
            "dst_stride=[2,128,0,0] no_sat rne  # 0\n"
            "sem_signal sem=3 value=1  # 1\n"
            "halt  # 2\n");
  EXPECT_EQ(disassemble(Program{}),
            "# trnsim ISA v0 program (canonical text; '# N' is the instruction index in its queue)\n");
  EXPECT_EQ(disassemble(copy_instr(Opcode::kPsumCopy, CopyFields{})),
            "psum_copy src=hbm:0x0 dst=sbuf:0x0 type=fp32->fp32 count=[1,1,1,1] src_stride=[0,0,0,0] "
            "dst_stride=[0,0,0,0] sat rne");
  CopyFields stochastic;
  stochastic.dst_type = DataType::kBf16;
  stochastic.sr = true;
  const std::string sr_text = disassemble(copy_instr(Opcode::kDmaCopy, stochastic));
  EXPECT_EQ(sr_text, "dma_copy src=hbm:0x0 dst=sbuf:0x0 type=fp32->bf16 count=[1,1,1,1] src_stride=[0,0,0,0] "
                     "dst_stride=[0,0,0,0] sat sr");
  EXPECT_TRUE(assemble(".queue dma\n" + sr_text + "\n").queue(Engine::kDma).at(0).copy.sr);
  EXPECT_EQ(encode(assemble(".queue dma\n" + sr_text + "\n").queue(Engine::kDma).at(0))[1], 0x10) << "flags bit 4 = sr";
}

TEST(IsaAsm, MxInstructionsCarryTheirScaleAddress) {
  const Program p = assemble(
      ".queue te\n"
      "load_stationary dtype=mxfp4 sbuf=0x40 k=32 m=16 scales=0x2000\n"
      "multiply_moving dtype=mxfp8e5m2 sbuf=0 psum=0 k=3 n=8 scales=4096\n");
  ASSERT_EQ(p.queue(Engine::kTe).size(), 2u);
  EXPECT_EQ(p.queue(Engine::kTe)[0].te.dtype, Dtype::kMxFp4);
  EXPECT_EQ(p.queue(Engine::kTe)[0].te.scale_addr, 0x2000u);
  EXPECT_EQ(p.queue(Engine::kTe)[1].te.scale_addr, 4096u);
  EXPECT_EQ(disassemble(p),
            "# trnsim ISA v0 program (canonical text; '# N' is the instruction index in its queue)\n"
            ".queue te\n"
            "load_stationary dtype=mxfp4 sbuf=0x40 k=32 m=16 scales=0x2000  # 0\n"
            "multiply_moving dtype=mxfp8e5m2 sbuf=0x0 psum=0x0 k=3 n=8 no_acc scales=0x1000  # 1\n");
  EXPECT_EQ(assemble(disassemble(p)), p);
  // A narrow dtype has no scales.
  try {
    assemble(".queue te\nload_stationary dtype=bf16 sbuf=0 k=1 m=1 scales=64\n");
    ADD_FAILURE() << "accepted scales on bf16";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("scale"), std::string::npos) << e.what();
  }
}

TEST(IsaAsm, TextRoundTrip) {
  const Program p = assemble(kEdgeProgram);
  const std::string text = disassemble(p);
  const Program back = assemble(text);
  EXPECT_EQ(back, p);
  EXPECT_EQ(disassemble(back), text);
}

TEST(IsaAsm, BinaryToTextToBinaryIsByteExact) {
  const std::vector<uint8_t> bin = write_program_binary(assemble(kEdgeProgram));
  const std::vector<uint8_t> again = write_program_binary(assemble(disassemble(read_program_binary(bin))));
  EXPECT_EQ(again, bin);
}

/// A random valid instruction for `engine` (fields anywhere in their legal range).
Instruction random_instruction(std::mt19937_64& rng, Engine engine) {
  std::vector<Opcode> ops;
  for (const Opcode op : kAllOpcodes) {
    if (engine_accepts(engine, op)) ops.push_back(op);
  }
  const auto pick = [&](uint64_t n) { return rng() % n; };
  Instruction i;
  i.op = ops[pick(ops.size())];
  i.sem = {static_cast<uint8_t>(pick(kNumSemaphores)), static_cast<uint32_t>(rng())};
  i.te.dtype = static_cast<Dtype>(pick(4));
  i.te.sbuf_addr = rng();
  i.te.k = static_cast<uint16_t>(1 + pick(0xFFFF));
  if (i.op == Opcode::kMultiplyMoving) {
    i.te.accumulate = pick(2) == 1;
    i.te.psum_addr = rng() & ~3ull;
    i.te.free_size = static_cast<uint16_t>(1 + pick(kMaxMovingN));
  } else {
    i.te.free_size = static_cast<uint16_t>(1 + pick(0xFFFF));
  }
  CopyFields& c = i.copy;
  c.src_type = static_cast<DataType>(pick(5));
  c.dst_type = static_cast<DataType>(pick(5));
  c.src_space = static_cast<MemSpace>(pick(4));  // hbm, sbuf, psum, host
  c.dst_space = static_cast<MemSpace>(pick(4));
  if (c.src_space == MemSpace::kPsum) c.src_type = DataType::kFp32;  // PSUM holds FP32
  if (c.dst_space == MemSpace::kPsum) c.dst_type = DataType::kFp32;
  if (i.op == Opcode::kPsumCopy) {
    c.src_space = MemSpace::kPsum;
    c.dst_space = MemSpace::kSbuf;
    c.src_type = DataType::kFp32;
  }
  c.no_sat = pick(2) == 1;
  c.src_addr = c.src_space == MemSpace::kPsum ? rng() & ~3ull : rng();
  c.dst_addr = c.dst_space == MemSpace::kPsum ? rng() & ~3ull : rng();
  for (int d = 0; d < kApDims; ++d) {
    c.count[d] = static_cast<uint16_t>(1 + pick(0xFFFF));
    c.src_stride[d] = static_cast<int32_t>(static_cast<uint32_t>(rng()));
    c.dst_stride[d] = static_cast<int32_t>(static_cast<uint32_t>(rng()));
  }
  return i;
}

TEST(IsaAsm, RandomProgramsRoundTrip) {
  std::mt19937_64 rng(trnsim::test::test_seed());
  for (int round = 0; round < 200; ++round) {
    Program p;
    for (const Engine e : {Engine::kTe, Engine::kDma}) {
      const int n = static_cast<int>(rng() % 8);
      for (int i = 0; i < n; ++i) p.queue(e).push_back(random_instruction(rng, e));
    }
    const std::string text = disassemble(p);
    SCOPED_TRACE(text);
    for (const auto& q : p.queues) {
      for (const Instruction& i : q) ASSERT_FALSE(validate(i).has_value()) << describe(*validate(i));
    }
    EXPECT_EQ(assemble(text), p);
    const auto bin = write_program_binary(p);
    EXPECT_EQ(read_program_binary(bin), p);
    EXPECT_EQ(write_program_binary(assemble(disassemble(read_program_binary(bin)))), bin);
  }
}

TEST(IsaAsm, CommentsBlankLinesAndLineEndings) {
  const Program p = assemble("\n   # only a comment\n\t.queue te # te queue\r\n  nop#no space\r\n\nhalt");
  ASSERT_EQ(p.queue(Engine::kTe).size(), 2u);
  EXPECT_EQ(p.queue(Engine::kTe)[1], Instruction::halt());
  EXPECT_EQ(assemble(""), Program{});
  EXPECT_EQ(assemble("# nothing\n.queue dma\n"), Program{});
}

TEST(IsaAsm, MutatedTextIsRejectedWithPositionOrAssembles) {
  // Random edits of a valid program never crash the assembler: the result is a program or a "LINE:COL: " error.
  std::mt19937_64 rng(trnsim::test::test_seed());
  const std::string good = kEdgeProgram;
  const std::string alphabet = " \t\n#.=[],:-0123456789abcdefxz_>";
  for (int round = 0; round < 5000; ++round) {
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % text.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: text[at] = c; break;
        case 1: text.erase(at, 1 + rng() % 3); break;
        default: text.insert(at, 1, c); break;
      }
    }
    try {
      const Program p = assemble(text);
      EXPECT_EQ(assemble(disassemble(p)), p);
    } catch (const ProgramError& e) {
      const std::string what = e.what();
      const std::size_t colon = what.find(':');
      ASSERT_NE(colon, std::string::npos) << what;
      EXPECT_GT(std::stoi(what.substr(0, colon)), 0) << what;
      EXPECT_GT(std::stoi(what.substr(colon + 1)), 0) << what;
    }
  }
}

TEST(IsaAsm, ExamplesInTheDocsAssemble) {
  std::ifstream in(TRNSIM_ISA_DOC);
  ASSERT_TRUE(in.good()) << TRNSIM_ISA_DOC;
  std::string line;
  std::string block;
  bool inside = false;
  int examples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      if (inside && block.find(".queue") != std::string::npos) {
        SCOPED_TRACE(block);
        EXPECT_NO_THROW(assemble(block));
        ++examples;
      }
      inside = !inside;
      block.clear();
    } else if (inside) {
      block += line + "\n";
    }
  }
  EXPECT_GE(examples, 2);
}

struct BadText {
  const char* text;
  const char* position;  // "LINE:COL:"
  const char* reason;    // a piece of the message
};

class IsaAsmErrors : public ::testing::TestWithParam<BadText> {};

TEST_P(IsaAsmErrors, NameLineColumnAndCause) {
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

// Columns are 1-based and point at the mnemonic, field or value that is wrong.
INSTANTIATE_TEST_SUITE_P(
    Cases, IsaAsmErrors,
    ::testing::Values(
        BadText{"nop\n", "1:1:", "nop before any .queue directive"},
        BadText{".queue te\n  mul k=1\n", "2:3:", "unknown mnemonic 'mul'"},
        BadText{".queue te\nnop\n.queue vector\n", "3:8:", "'vector' is not a queue"},
        BadText{".queue\n", "1:1:", "missing queue name"},
        BadText{".queue te dma\n", "1:11:", "unexpected 'dma'"},
        BadText{".section te\n", "1:1:", "unknown directive '.section'"},
        BadText{".queue dma\nload_stationary sbuf=0 k=1 m=1\n", "2:1:",
                "load_stationary is not accepted by the dma queue"},
        BadText{".queue te\ndma_copy src=hbm:0 dst=sbuf:0 count=[1]\n", "2:1:",
                "dma_copy is not accepted by the te queue"},
        BadText{".queue te\nload_stationary sbuf=0 k=1 m=1 n=4\n", "2:32:", "load_stationary: unknown field 'n'"},
        BadText{".queue te\nnop k=1\n", "2:5:", "nop: unknown field 'k' (fields: none)"},
        BadText{".queue te\nload_stationary sbuf=0 k=1 m=1 k=2\n", "2:32:", "duplicate field 'k'"},
        BadText{".queue te\nmultiply_moving sbuf=0 psum=0 k=1 n=1 acc no_acc\n", "2:43:",
                "duplicate field 'no_acc' (already set by 'acc')"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 count=[1] sat sat\n", "2:45:", "duplicate field 'sat'"},
        BadText{".queue te\nmultiply_moving sbuf=0 psum=0 k=1 n=1 acc=1\n", "2:39:", "'acc' is a flag"},
        BadText{".queue te\nload_stationary sbuf=0 k m=1\n", "2:24:", "field 'k' needs a value"},
        BadText{".queue te\nload_stationary sbuf=0 k= m=1\n", "2:24:", "field 'k' needs a value"},
        BadText{".queue te\nload_stationary sbuf=0 =3 k=1 m=1\n", "2:24:", "missing field name"},
        BadText{".queue te\nload_stationary sbuf=0 k=1\n", "2:1:", "load_stationary: missing field 'm'"},
        BadText{".queue te\nsem_wait sem=1\n", "2:1:", "sem_wait: missing field 'value'"},
        BadText{".queue te\nload_stationary sbuf=0x k=1 m=1\n", "2:22:", "sbuf: bad number '0x'"},
        BadText{".queue te\nload_stationary sbuf=12a k=1 m=1\n", "2:22:", "sbuf: bad number '12a'"},
        BadText{".queue te\nload_stationary sbuf=-1 k=1 m=1\n", "2:22:", "sbuf: bad number '-1'"},
        BadText{".queue te\nload_stationary sbuf=0x10000000000000000 k=1 m=1\n", "2:22:", "bad number"},
        BadText{".queue te\nload_stationary sbuf=0 k=65536 m=1\n", "2:26:", "k: value 65536 is out of range 0..65535"},
        BadText{".queue te\nsem_signal sem=32\n", "2:16:", "sem: value 32 is out of range 0..31"},
        BadText{".queue te\nsem_signal sem=1 core=8\n", "2:23:", "core: value 8 is out of range 0..7"},
        BadText{".queue te\nsem_wait sem=1 value=1 core=1\n", "2:24:", "sem_wait: unknown field 'core'"},
        BadText{".queue te\nsem_signal sem=1 value=0x100000000\n", "2:24:", "value: value 0x100000000 is out of"},
        BadText{".queue te\nload_stationary dtype=fp32 sbuf=0 k=1 m=1\n", "2:23:", "'fp32' is not a dtype"},
        BadText{".queue te\nload_stationary sbuf=0 k=0 m=1\n", "2:24:", "load_stationary: field k: k is 0"},
        BadText{".queue te\nmultiply_moving sbuf=0 psum=0 k=1 n=513\n", "2:35:",
                "multiply_moving: field free_size: N 513 is out of range 1..512"},
        BadText{".queue te\nmultiply_moving sbuf=0 psum=0x6 k=1 n=1\n", "2:24:",
                "field psum_addr: PSUM address 0x6 is not 4-byte aligned"},
        BadText{".queue dma\ndma_copy dst=sbuf:0 count=[1]\n", "2:1:", "dma_copy: missing field 'src'"},
        BadText{".queue dma\ndma_copy src=0x100 dst=sbuf:0 count=[1]\n", "2:14:", "src: expected SPACE:ADDRESS"},
        BadText{".queue dma\ndma_copy src=dram:0 dst=sbuf:0 count=[1]\n", "2:14:", "'dram' is not a memory space"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 type=bf16->int8 count=[1]\n", "2:42:",
                "type: 'int8' is not a data type"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 count=64\n", "2:37:", "count: expected a list"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 count=[1,2,3,4,5]\n", "2:46:", "5 entries, at most 4"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 count=[1,,3]\n", "2:40:", "count: empty list entry"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 count=[1, 2\n", "2:31:", "unterminated '['"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 count=[1,0]\n", "2:31:",
                "dma_copy: field count: count[1] is 0"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 count=[1,70000]\n", "2:40:",
                "count: value 70000 is out of range 0..65535"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 count=[2] src_stride=[2147483648]\n", "2:53:",
                "src_stride: value 2147483648 is out of range -2147483648..2147483647"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 count=[2] dst_stride=[-2147483649]\n", "2:53:",
                "dst_stride: value -2147483649 is out of range"},
        BadText{".queue dma\ndma_copy src=hbm:0 dst=sbuf:0 type=fp32 count=[65535,65535,65535]\n", "2:41:",
                "default src_stride[2] = 17179344900 does not fit i32"},
        BadText{".queue dma\npsum_copy src=hbm:0 dst=sbuf:0 count=[1]\n", "2:11:",
                "psum_copy: field src_space: psum_copy reads PSUM, not hbm"},
        BadText{".queue dma\npsum_copy src=psum:0 dst=sbuf:0 type=bf16 count=[1]\n", "2:33:",
                "field src_type: psum_copy reads fp32"},
        BadText{".queue dma\nnop\nhalt\n\n  # fine\n dma_copy src=hbm:0 dst=psum:0x2 count=[1]\n", "6:21:",
                "field dst_addr: PSUM address 0x2"}),
    [](const auto& i) { return test::case_name(i.index, i.param.reason); });

}  // namespace
}  // namespace trnsim::isa
