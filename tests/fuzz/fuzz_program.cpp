// Fuzz target: the program loader of `trnsim run --program` / `disasm` (isa::is_binary_program, then
// isa::read_program_binary or isa::assemble) and the instruction decoder (isa::decode).
// Documented outcomes: a Program or isa::ProgramError; decode() returns an IsaError or an instruction. Oracles: a
// binary that reads is canonical (write_program_binary gives the same bytes back); an instruction that decodes
// encodes to the same 64 bytes and passes validate().
#include <vector>

#include "firmware/isa/isa.h"
#include "tests/fuzz/fuzz_support.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  for (size_t at = 0; at + isa::kInstrBytes <= size; at += isa::kInstrBytes) {
    isa::Instruction instr;
    if (isa::decode(data + at, &instr)) continue;
    if (const auto e = isa::validate(instr)) fuzz::fail("decode: accepted, validate: {}", isa::describe(*e));
    const auto again = isa::encode(instr);
    if (!std::equal(again.begin(), again.end(), data + at)) {
      fuzz::fail("decode: an instruction at byte {} re-encodes differently ({})", at, isa::disassemble(instr));
    }
  }
  try {
    if (isa::is_binary_program(bytes)) {
      const isa::Program program = isa::read_program_binary(bytes);
      if (isa::write_program_binary(program) != bytes) fuzz::fail("program: a binary that reads is not canonical");
    } else {
      isa::assemble(std::string_view(reinterpret_cast<const char*>(data), size));
    }
  } catch (const isa::ProgramError&) {
  }
  return 0;
}
