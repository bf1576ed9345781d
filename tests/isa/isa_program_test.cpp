// The binary program file (docs/isa.md, "Binary program file"): its header bytes, canonical form, and every way
// read_program_binary() rejects a file, with the message naming queue, instruction index and field.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "firmware/isa/isa.h"
#include "tests/isa/isa_test_util.h"
#include "tests/support/test_seed.h"

namespace trnsim::isa {
namespace {

using Blob = std::vector<uint8_t>;

void put_u32(Blob& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

/// A file written by hand: header, queue table {engine, count}..., then `instrs` (already encoded).
Blob file(uint32_t version, const std::vector<std::pair<uint32_t, uint32_t>>& table,
          const std::vector<Instruction>& instrs) {
  Blob b = {'T', 'R', 'N', 'P'};
  put_u32(b, version);
  put_u32(b, static_cast<uint32_t>(table.size()));
  for (const auto& [engine, count] : table) {
    put_u32(b, engine);
    put_u32(b, count);
  }
  for (const Instruction& i : instrs) {
    const auto e = encode(i);
    b.insert(b.end(), e.begin(), e.end());
  }
  return b;
}

/// The program of one_of_each(), split over the queues that accept each instruction.
Program sample_program() {
  Program p;
  for (const Instruction& i : test::one_of_each()) {
    if (engine_accepts(Engine::kTe, i.op)) p.queue(Engine::kTe).push_back(i);
    if (engine_accepts(Engine::kDma, i.op)) p.queue(Engine::kDma).push_back(i);
  }
  return p;
}

/// Expects read_program_binary to throw a ProgramError whose message contains every piece of `parts`.
void expect_rejected(const Blob& b, const std::vector<std::string>& parts) {
  try {
    read_program_binary(b);
    ADD_FAILURE() << "accepted; expected: " << parts.front();
  } catch (const ProgramError& e) {
    const std::string what = e.what();
    for (const std::string& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(IsaProgramBinary, HeaderAndQueueTableLayout) {
  const Program p = sample_program();
  const Blob b = write_program_binary(p);
  const std::size_t te = p.queue(Engine::kTe).size();
  const std::size_t dma = p.queue(Engine::kDma).size();
  ASSERT_EQ(te, 6u);
  ASSERT_EQ(dma, 6u);
  ASSERT_EQ(b.size(), 12 + 2 * 8 + (te + dma) * 64);
  const Blob header = {'T', 'R', 'N', 'P', 0, 0, 0, 0, 2, 0, 0, 0,  // magic, version 0, 2 queues
                       0,   0,   0,   0,   6, 0, 0, 0,              // engine te, 6 instructions
                       1,   0,   0,   0,   6, 0, 0, 0};             // engine dma, 6 instructions
  EXPECT_EQ(Blob(b.begin(), b.begin() + 28), header);
  for (std::size_t i = 0; i < te; ++i) {
    const auto e = encode(p.queue(Engine::kTe)[i]);
    EXPECT_TRUE(std::equal(e.begin(), e.end(), b.begin() + 28 + 64 * i)) << "te instruction " << i;
  }
  for (std::size_t i = 0; i < dma; ++i) {
    const auto e = encode(p.queue(Engine::kDma)[i]);
    EXPECT_TRUE(std::equal(e.begin(), e.end(), b.begin() + 28 + 64 * (te + i))) << "dma instruction " << i;
  }
  EXPECT_EQ(read_program_binary(b), p);
}

TEST(IsaProgramBinary, EmptyQueuesAreNotListed) {
  EXPECT_EQ(write_program_binary(Program{}), (Blob{'T', 'R', 'N', 'P', 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(read_program_binary(write_program_binary(Program{})), Program{});
  Program dma_only;
  dma_only.queue(Engine::kDma) = {Instruction::halt()};
  const Blob b = write_program_binary(dma_only);
  EXPECT_EQ(b, file(0, {{1, 1}}, {Instruction::halt()}));
  EXPECT_EQ(read_program_binary(b), dma_only);
}

TEST(IsaProgramBinary, ShortFile) {
  const Blob good = write_program_binary(sample_program());
  for (std::size_t n = 0; n < 12; ++n) expect_rejected(Blob(good.begin(), good.begin() + n), {"short file"});
  expect_rejected(Blob(good.begin(), good.begin() + 20), {"short file", "queue table"});
}

TEST(IsaProgramBinary, BadMagicAndVersion) {
  Blob b = write_program_binary(sample_program());
  b[3] = 'Q';
  expect_rejected(b, {"bad magic", "TRNP"});
  expect_rejected(file(1, {}, {}), {"version 1 is not supported"});
  expect_rejected(file(0xFFFFFFFF, {}, {}), {"version 4294967295"});
}

TEST(IsaProgramBinary, QueueTableErrors) {
  const Instruction h = Instruction::halt();
  expect_rejected(file(0, {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}, {h, h, h, h, h, h}), {"queue count 6"});
  expect_rejected(file(0, {{5, 1}}, {h}), {"unknown engine id 5"});
  expect_rejected(file(0, {{0, 1}, {7, 1}}, {h, h}), {"entry 1", "unknown engine id 7"});
  expect_rejected(file(0, {{1, 1}, {1, 1}}, {h, h}), {"duplicate engine dma"});
  expect_rejected(file(0, {{1, 1}, {0, 1}}, {h, h}), {"engine te out of order"});
  expect_rejected(file(0, {{0, 0}}, {}), {"queue te", "instruction count 0"});
}

TEST(IsaProgramBinary, TruncatedInstructions) {
  const Blob b = write_program_binary(sample_program());
  expect_rejected(Blob(b.begin(), b.end() - 1), {"queue dma, instruction 5: truncated"});
  expect_rejected(Blob(b.begin(), b.begin() + 28 + 64 * 3 + 10), {"queue te, instruction 3: truncated"});
  expect_rejected(file(0, {{0, 0xFFFFFFFF}}, {Instruction::halt()}), {"queue te, instruction 1: truncated"});
}

TEST(IsaProgramBinary, TrailingBytes) {
  Blob b = write_program_binary(sample_program());
  b.push_back(0);
  expect_rejected(b, {"1 trailing bytes"});
  b = file(0, {}, {Instruction::halt()});
  expect_rejected(b, {"64 trailing bytes", "byte 12"});
}

TEST(IsaProgramBinary, DecodeErrorsNameQueueInstructionAndField) {
  const Program p = sample_program();
  Blob b = write_program_binary(p);
  // te queue: nop, halt, sem_signal, sem_wait, load_stationary, multiply_moving.
  ASSERT_EQ(p.queue(Engine::kTe)[4].op, Opcode::kLoadStationary);
  std::size_t at = 28 + 64 * 4;
  b[at + 2] = 9;  // 0..3 narrow, 5..7 MX
  expect_rejected(b, {"queue te, instruction 4: field dtype: value 9 is not a dtype"});

  b = write_program_binary(p);
  at = 28 + 64 * (6 + 4);  // dma instruction 4: dma_copy
  ASSERT_EQ(p.queue(Engine::kDma)[4].op, Opcode::kDmaCopy);
  b[at + 6] = 1;
  expect_rejected(b, {"queue dma, instruction 4: field reserved: byte 6 is 0x01"});
  b = write_program_binary(p);
  b[at + 28] = 0;
  b[at + 29] = 0;
  expect_rejected(b, {"queue dma, instruction 4: field count: count[2] is 0"});
  b = write_program_binary(p);
  b[28 + 64 * 2] = 0x7F;
  expect_rejected(b, {"queue te, instruction 2: field opcode: byte 0x7f is not an opcode"});
}

TEST(IsaProgramBinary, OpcodeOfAnotherEngineIsRejected) {
  const Instruction ls = test::te_instr(Opcode::kLoadStationary, Dtype::kBf16, 0, 0, 1, 1, false);
  expect_rejected(file(0, {{1, 2}}, {Instruction::nop(), ls}),
                  {"queue dma, instruction 1: field opcode: load_stationary is not accepted by the dma queue"});
  expect_rejected(file(0, {{0, 1}}, {test::one_of_each()[4]}),
                  {"queue te, instruction 0: field opcode: dma_copy is not accepted by the te queue"});
}

TEST(IsaProgramBinary, MutatedFilesAreRejectedOrCanonical) {
  // Any file the reader accepts is in canonical form: writing the program back gives the same bytes.
  std::mt19937_64 rng(trnsim::test::test_seed());
  const Blob good = write_program_binary(sample_program());
  int accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    Blob b = good;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % b.size();
      switch (rng() % 4) {
        case 0: b[at] = static_cast<uint8_t>(rng()); break;
        case 1: b[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 2: b.resize(at); break;
        default: b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(rng())); break;
      }
      if (b.empty()) b.push_back(0);
    }
    try {
      const Program p = read_program_binary(b);
      ++accepted;
      ASSERT_EQ(write_program_binary(p), b) << "round " << round;
    } catch (const ProgramError&) {
    }
  }
  EXPECT_GT(accepted, 0);
}

TEST(IsaProgramBinary, TextAndBinaryAreToldApartByTheirBytesNotOnlyTheMagic) {
  auto bytes = [](std::string_view s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  EXPECT_FALSE(is_binary_program(bytes(".queue te\n\tnop  # a comment\r\nhalt\f\n")));
  EXPECT_FALSE(is_binary_program(bytes("# UTF-8 in a comment: \xc3\xa9\n.queue te\nhalt\n")));
  EXPECT_FALSE(is_binary_program({}));
  EXPECT_TRUE(is_binary_program(bytes("TRNP")));
  EXPECT_TRUE(is_binary_program(write_program_binary(Program{})));
  std::vector<uint8_t> damaged = write_program_binary(Program{});
  damaged[3] = 'X';  // "TRNX", then the zero bytes of version and count
  EXPECT_TRUE(is_binary_program(damaged));
  EXPECT_TRUE(is_binary_program(bytes(std::string_view("halt\0", 5))));
  EXPECT_TRUE(is_binary_program(bytes("halt\x7f\n")));
}

}  // namespace
}  // namespace trnsim::isa
