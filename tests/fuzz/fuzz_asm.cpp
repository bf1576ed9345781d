// Fuzz target: program text (isa::assemble, docs/isa.md "Program text").
// Documented outcomes: a Program, or isa::ProgramError "LINE:COL: ...". A Program must survive both round trips
// the tools make of it: canonical text (disassemble -> assemble) and the binary file (write -> read).
#include <string_view>

#include "firmware/isa/isa.h"
#include "tests/fuzz/fuzz_support.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  isa::Program program;
  try {
    program = isa::assemble(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const isa::ProgramError&) {
    return 0;
  }
  const std::string text = isa::disassemble(program);
  try {
    if (isa::assemble(text) != program) fuzz::fail("asm: the canonical text assembles to another program:\n{}", text);
  } catch (const isa::ProgramError& e) {
    fuzz::fail("asm: the canonical text does not assemble: {}\n{}", e.what(), text);
  }
  try {
    if (isa::read_program_binary(isa::write_program_binary(program)) != program) {
      fuzz::fail("asm: the binary file reads back as another program:\n{}", text);
    }
  } catch (const isa::ProgramError& e) {
    fuzz::fail("asm: the binary file of an assembled program does not read: {}\n{}", e.what(), text);
  }
  return 0;
}
