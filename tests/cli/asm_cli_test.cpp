// `trnsim asm` / `trnsim disasm` as a user runs them: text -> binary -> text round trips through files, and bad
// input exits 2 with one line naming the file and the line (text) or the instruction index (binary).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/cli/cli_runner.h"

namespace {

using namespace trnsim::test;

constexpr const char* kProgram =
    ".queue dma\n"
    "dma_copy src=hbm:0x1000 dst=sbuf:0x0 type=bf16 count=[16,16] dst_stride=[2,196608]\n"
    "sem_signal sem=0\n"
    "halt\n"
    ".queue te   # tensor engine\n"
    "sem_wait sem=0 value=1\n"
    "load_stationary sbuf=0x0 k=16 m=16\n"
    "multiply_moving dtype=bf16 sbuf=0x0 psum=0x0 k=16 n=16 acc\n"
    "halt\n";

std::string write_text(const std::string& suffix, const std::string& text) {
  const std::string path = scratch(suffix);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(AsmCli, RoundTripThroughFilesIsByteExact) {
  const std::string src = write_text(".s", kProgram);
  const std::string bin = scratch(".bin");
  Result r = run("asm " + src + " -o " + bin);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string bytes = slurp(bin);
  ASSERT_EQ(bytes.size(), 12u + 2 * 8 + 7 * 64);
  EXPECT_EQ(bytes.substr(0, 4), "TRNP");

  // disasm to stdout and to a file agree; the text assembles back to the same bytes.
  r = run("disasm " + bin);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("load_stationary dtype=bf16 sbuf=0x0 k=16 m=16"), std::string::npos) << r.out;
  const std::string text = scratch(".dis.s");
  ASSERT_EQ(run("disasm " + bin + " -o " + text).exit_code, 0);
  EXPECT_EQ(slurp(text), r.out);
  const std::string bin2 = scratch(".2.bin");
  r = run("asm " + text + " -o " + bin2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(bin2), bytes);
}

TEST(AsmCli, BadTextNamesFileLineAndColumn) {
  const std::string src = write_text(".s", ".queue te\nnop\nmultiply_moving sbuf=0 psum=0 k=16 n=600\n");
  const std::string bin = scratch(".bin");
  const Result r = run("asm " + src + " -o " + bin);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find(src + ":3:36: multiply_moving: field free_size: N 600"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(bin).good()) << "no output on error";
}

TEST(AsmCli, RunProgramNamesFileLineAndColumnAsAsmDoes) {
  const std::string src = write_text(".s", ".queue te\nnop\nmultiply_moving sbuf=0 psum=0 k=16 n=600\n");
  const Result a = run("asm " + src + " -o " + scratch(".bin"));
  const Result r = run("run --te tlm --program " + src);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.err.rfind("trnsim: error: " + src + ":3:36: multiply_moving: field free_size: N 600", 0), 0u) << r.err;
  EXPECT_EQ(r.err, a.err);  // the same line as `trnsim asm`
}

TEST(AsmCli, CollectiveDtypeHintListsOnlyTheCollectiveTypes) {
  for (const char* dtype : {"fp32->fp32", "fp16", "int8"}) {
    const std::string src =
        write_text(".s", std::string(".queue cc\nall_reduce hbm=0 count=4 dtype=") + dtype + "\nhalt\n");
    const Result r = run("asm " + src + " -o " + scratch(".bin"));
    EXPECT_EQ(r.exit_code, 2) << dtype;
    EXPECT_EQ(r.err, "trnsim: error: " + src + ":2:32: dtype: '" + dtype +
                         "' is not a collective data type (fp32, bf16)\n");
  }
}

TEST(AsmCli, CorruptedBinaryNamesInstructionIndexAndField) {
  const std::string src = write_text(".s", kProgram);
  const std::string bin = scratch(".bin");
  ASSERT_EQ(run("asm " + src + " -o " + bin).exit_code, 0);
  std::string bytes = slurp(bin);
  // te is listed first: its instruction 2 (multiply_moving) starts at 12 + 16 + 2 * 64; dtype is its byte 2.
  bytes[12 + 16 + 2 * 64 + 2] = 9;  // 0..3 and 5..7 are dtypes
  const std::string bad = write_text(".bad.bin", bytes);
  const Result r = run("disasm " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find(bad + ": queue te, instruction 2: field dtype: value 9 is not a dtype"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(AsmCli, TruncatedBinaryNamesInstruction) {
  const std::string src = write_text(".s", kProgram);
  const std::string bin = scratch(".bin");
  ASSERT_EQ(run("asm " + src + " -o " + bin).exit_code, 0);
  const std::string bytes = slurp(bin);
  const std::string bad = write_text(".cut.bin", bytes.substr(0, bytes.size() - 30));
  const Result r = run("disasm " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("queue dma, instruction 2: truncated"), std::string::npos) << r.err;
}

TEST(AsmCli, MissingFilesAndOptions) {
  Result r = run("asm /nonexistent-dir/p.s -o " + scratch(".bin"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent-dir/p.s"), std::string::npos) << r.err;
  r = run("disasm /nonexistent-dir/p.bin");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent-dir/p.bin"), std::string::npos) << r.err;
  const std::string src = write_text(".s", kProgram);
  r = run("asm " + src);
  EXPECT_EQ(r.exit_code, 2) << "-o is required";
  EXPECT_NE(r.err.find("-o"), std::string::npos) << r.err;
  r = run("asm " + src + " -o /nonexistent-dir/p.bin");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o /nonexistent-dir/p.bin"), std::string::npos) << r.err;
}

}  // namespace
