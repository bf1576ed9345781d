// Every example program in docs/isa.md (each fenced code block with a `.queue` line) assembles with `trnsim asm`,
// and each complete one (with `halt`) runs to its halts with `trnsim run --program` on tiny: the docs cannot drift
// from the assembler or from the device's rules (e.g. multiply_moving's dtype equals the loaded stationary's).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

namespace {

using namespace trnsim::test;

struct CodeBlock {
  int line = 0;  ///< line of the opening fence in docs/isa.md
  std::string text;
};

std::vector<CodeBlock> program_blocks(const std::string& path) {
  std::ifstream in(path);
  std::vector<CodeBlock> blocks;
  CodeBlock cur;
  bool inside = false;
  int n = 0;
  for (std::string l; std::getline(in, l);) {
    ++n;
    if (l.rfind("```", 0) == 0) {
      if (inside && cur.text.find(".queue") != std::string::npos) blocks.push_back(cur);
      inside = !inside;
      cur = {n, ""};
    } else if (inside) {
      cur.text += l + "\n";
    }
  }
  return blocks;
}

TEST(IsaDocExamples, EveryExampleProgramAssemblesAndTheCompleteOnesRun) {
  const std::vector<CodeBlock> blocks = program_blocks(TRNSIM_ISA_DOC);
  ASSERT_GE(blocks.size(), 3u) << "no example programs found in " << TRNSIM_ISA_DOC;
  int ran = 0;
  for (const CodeBlock& b : blocks) {
    const std::string src = next_scratch(".s");
    std::ofstream(src) << b.text;
    const std::string bin = next_scratch(".bin");
    Result r = run("asm " + src + " -o " + bin);
    ASSERT_EQ(r.exit_code, 0) << "docs/isa.md:" << b.line << "\n" << b.text << r.err;
    if (b.text.find("halt") == std::string::npos) continue;  // a fragment (the canonical-text example)
    r = run("run --te tlm --program " + bin);
    EXPECT_EQ(r.exit_code, 0) << "docs/isa.md:" << b.line << "\n" << b.text << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << "docs/isa.md:" << b.line << "\n" << r.out;
    ++ran;
  }
  EXPECT_GE(ran, 2);
}

}  // namespace
