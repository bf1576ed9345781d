// The CLI contract (BRIEF section 4) on the corners a tester found: output files whose writes fail, options that do
// not apply to the chosen workload, negative values for unsigned options, directories given as files, blank lines
// in vector files. Each case exits 2 with a one-line reason naming the flag or file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli/cli_runner.h"
#include "tests/cli/npy_files.h"

namespace {

using namespace trnsim::test;

/// Runs trnsim under `ulimit -f 1` (1 KiB files) with SIGXFSZ ignored, so writes past 1 KiB fail with EFBIG.
Result run_file_size_limited(const std::string& args) { return run(args, "ulimit -f 1; trap '' XFSZ; "); }

std::vector<uint32_t> random_f32(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint32_t> v(n);
  for (auto& b : v) {
    const float f = u(rng);
    std::memcpy(&b, &f, 4);
  }
  return v;
}

std::string matmul_operands(std::mt19937_64& rng, int k, int m, int n) {
  return " --stationary " + write_npy(random_f32(size_t(k) * m, rng), k, m) + " --moving " +
         write_npy(random_f32(size_t(k) * n, rng), k, n);
}

TEST(CliContract, MatmulOutToAFullDeviceIsAWriteFailure) {
  std::mt19937_64 rng(11);
  const Result r = run("matmul --te tlm --dtype bf16" + matmul_operands(rng, 8, 8, 8) + " --out /dev/full");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--out /dev/full: write failed"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("PASS"), std::string::npos) << r.out;
}

TEST(CliContract, MatmulOutPastTheFileSizeLimitLeavesNoTruncatedFile) {
  std::mt19937_64 rng(12);
  const std::string out = next_scratch(".npy");
  std::filesystem::remove(out);
  const Result r = run_file_size_limited("matmul --te tlm --dtype bf16" + matmul_operands(rng, 16, 16, 32) +
                                         " --out " + out);  // 16 x 32 float32 = 2 KiB > 1 KiB
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--out " + out + ": write failed"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CliContract, WorkloadOutputsPastTheFileSizeLimitAreAWriteFailure) {
  const std::string dir = scratch(".outputs");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const Result r = run_file_size_limited(
      "run --te tlm --workload layernorm --seq 64 --d-model 64 --heads 2 --outputs " + dir);  // 16 KiB of y
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--outputs " + dir), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("write failed"), std::string::npos) << r.err;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {  // no .npy cut at the 1 KiB limit is left behind
    EXPECT_NE(std::filesystem::file_size(f.path()), 1024u) << f.path();
  }
}

}  // namespace

namespace {

// Every option a workload does not use exits 2 naming the option and the workload.
TEST(CliContract, OptionsThatDoNotApplyToTheWorkloadAreBadInput) {
  const std::string coll = "run --config trn2-16 --workload allreduce --bytes 4K";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {coll + " --timeline " + scratch(".json"), "--timeline does not apply to --workload allreduce"},
      {coll + " --outputs " + scratch(".o"), "--outputs does not apply to --workload allreduce"},
      {coll + " --inputs " + scratch(".i"), "--inputs does not apply to --workload allreduce"},
      {coll + " --te tlm --wave " + scratch(".fst"), "--te does not apply to --workload allreduce"},
      {coll + " --wave " + scratch(".fst"), "--wave does not apply to --workload allreduce"},
      {coll + " --check-hazards", "--check-hazards does not apply to --workload allreduce"},
      {coll + " --check-uninit", "--check-uninit does not apply to --workload allreduce"},
      {coll + " --te rtl", "--te does not apply to --workload allreduce"},
      {coll + " --dma-transpose", "--dma-transpose does not apply to --workload allreduce"},
      {"run --workload gemm -m 4 -k 4 -n 4 --te tlm --inputs " + scratch(".i"),
       "--inputs does not apply to --workload gemm"},
      {"run --workload gemm -m 4 -k 4 -n 4 --te tlm --outputs " + scratch(".o"),
       "--outputs does not apply to --workload gemm"},
      {"run --workload gpt2-mlp-up --te tlm --outputs " + scratch(".o"),
       "--outputs does not apply to --workload gpt2-mlp-up"},
      {"run --workload gpt2-mlp-up --te tlm --inputs " + scratch(".i"),
       "--inputs does not apply to --workload gpt2-mlp-up"},
      {"run --workload layernorm --te tlm --seq 8 --d-model 16 --bytes 4K",
       "--bytes does not apply to --workload layernorm"},
      {"run --program " + scratch(".s") + " --outputs " + scratch(".o"), "--outputs does not apply to --program"},
      {"run --program " + scratch(".s") + " --inputs " + scratch(".i"), "--inputs does not apply to --program"},
  };
  for (const auto& [args, reason] : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << args << "\n" << r.err;
  }
}

TEST(CliContract, WaveWindowWithoutWaveIsBadInput) {
  for (const std::string w : {"--wave-from 5", "--wave-to 9", "--wave-scope trn_te"}) {
    for (const std::string cmd : {"run --workload gemm -m 4 -k 4 -n 4 --te tlm ",
                                  "run --config trn2-16 --workload allreduce --bytes 4K "}) {
      const Result r = run(cmd + w);
      EXPECT_EQ(r.exit_code, 2) << cmd << w << "\n" << r.out << r.err;
      EXPECT_NE(r.err.find(w.substr(0, w.find(' ')) + " requires --wave"), std::string::npos) << r.err;
    }
  }
}

}  // namespace

namespace {

// --heads (default 12) only constrains --d-model for the workloads that split it into heads.
TEST(CliContract, HeadsIsCheckedOnlyByTheWorkloadsThatUseIt) {
  for (const std::string w : {"layernorm", "rmsnorm", "mlp"}) {
    const Result r = run("run --te tlm --workload " + w + " --seq 8 --d-model 16 --d-ff 16");
    EXPECT_EQ(r.exit_code, 0) << w << "\n" << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << w << "\n" << r.out;
  }
  for (const std::string w : {"softmax", "attention", "transformer-block"}) {
    const Result r = run("run --te tlm --workload " + w + " --seq 8 --d-model 16 --d-ff 16");
    EXPECT_EQ(r.exit_code, 2) << w << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("--d-model 16 is not a multiple of --heads 12"), std::string::npos) << w << "\n" << r.err;
  }
}

}  // namespace

namespace {

// A negative value for an unsigned option is exit 2 naming the flag, never wrapped to 2^64 - N.
TEST(CliContract, NegativeValuesOfUnsignedOptionsAreBadInput) {
  std::mt19937_64 rng(13);
  const std::string mm = "matmul --te tlm --dtype bf16" + matmul_operands(rng, 4, 4, 4) + " --out " +
                         next_scratch(".npy");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run --workload gemm -m 4 -k 4 -n 4 --te tlm --seed -1", "--seed"},
      {"run --workload gemm -m 4 -k 4 -n 4 --te tlm --timeout-cycles -1", "--timeout-cycles"},
      {"run --workload gemm -m 4 -k 4 -n 4 --wave " + scratch(".fst") + " --wave-from -1", "--wave-from"},
      {"run --workload gemm -m 4 -k 4 -n 4 --wave " + scratch(".fst") + " --wave-to -1", "--wave-to"},
      {"run --config trn2-16 --workload allreduce --bytes 4K --seed -1", "--seed"},
      {mm + " --timeout-cycles -1", "--timeout-cycles"},
      {"noc --seed -3", "--seed"},
      {"noc --drain-cycles -1", "--drain-cycles"},
      {"noc --cycles -1", "--cycles"},
  };
  for (const auto& [args, flag] : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("negative"), std::string::npos) << args << "\n" << r.err;
  }
}

}  // namespace

namespace {

// The asm summary names every queue that has instructions (a Scalar/Vector program has no te or dma ones).
TEST(CliContract, AsmSummaryCountsEveryQueue) {
  const std::string src = scratch(".s");
  std::ofstream(src) << ".queue act\n"
                        "activation func=exp partitions=16 free=[128] out=sbuf:0:0x200 in0=psum:0:0x0\n"
                        "halt\n"
                        ".queue vec\n"
                        "memset value=0 partitions=16 free=[4] out=sbuf:0:0x0\n"
                        "memset value=1 partitions=16 free=[4] out=sbuf:0:0x10\n"
                        "halt\n";
  const Result r = run("asm " + src + " -o " + scratch(".bin"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": act 2 instructions, vec 3 instructions, "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("te "), std::string::npos) << r.out;
}

}  // namespace

namespace {

// A directory where a file is expected is named, with "is a directory"; a pipe or a device, which would block the
// read or never end it (a FIFO nobody writes, /dev/zero), with "is not a regular file".
TEST(CliContract, ADirectoryGivenAsAFileIsNamed) {
  const std::string dir = scratch(".dir");
  std::filesystem::create_directories(dir);
  std::mt19937_64 rng(14);
  const std::string good = write_npy(random_f32(16, rng), 4, 4);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"asm " + dir + " -o " + scratch(".bin"), dir + ": is a directory"},
      {"disasm " + dir, dir + ": is a directory"},
      {"run --program " + dir, "--program " + dir + ": is a directory"},
      {"matmul --te tlm --dtype bf16 --stationary " + dir + " --moving " + good + " --out " + scratch(".npy"),
       "--stationary " + dir + ": is a directory"},
      {"run --program /dev/zero", "--program /dev/zero: is not a regular file (a pipe or a device)"},
      {"asm /dev/zero -o " + scratch(".bin"), "/dev/zero: is not a regular file (a pipe or a device)"},
      {"disasm /dev/zero", "/dev/zero: is not a regular file (a pipe or a device)"},
      {"fpcheck --op f32_add --vectors /dev/zero", "--vectors /dev/zero: is not a regular file (a pipe or a device)"},
  };
  for (const auto& [args, reason] : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << args << "\n" << r.err;
  }
}

}  // namespace

namespace {

// Blank and whitespace-only lines of a vector file (a trailing newline too many, an editor's indent) are skipped;
// a bad vector after them still reports its own line number.
TEST(CliContract, FpcheckSkipsBlankLines) {
  Result r = run("fpcheck --op f32_add --vectors " +
                 write_file("3F800000 3F800000 40000000 00\n\n   \t\n3F800000 40000000 40400000 00\n\n"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 "), std::string::npos) << r.out;
  const std::string bad = write_file("3F800000 3F800000 40000000 00\n \n3F800000 40000000\n");
  r = run("fpcheck --op f32_add --vectors " + bad);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(bad + ":3: expected 4 fields"), std::string::npos) << r.err;
}


TEST(CliContract, EmptyFileNamesAreBadInputNamingTheFlag) {
  struct Case {
    const char* args;
    const char* reason;
  };
  for (const Case& c : {Case{"run --te tlm --wave ''", "--wave: empty file name"},
                        Case{"matmul --stationary s.npy --moving m.npy --dtype bf16 --out o.npy --wave ''",
                             "--wave: empty file name"},
                        Case{"noc --rtl --wave ''", "--wave: empty file name"},
                        Case{"run --workload gemm --te tlm --report ''", "--report: empty file name"},
                        Case{"run --workload gemm --te tlm --timeline ''", "--timeline: empty file name"},
                        Case{"run --workload layernorm --outputs ''", "--outputs: empty directory name"},
                        Case{"run --workload layernorm --inputs ''", "--inputs: empty directory name"},
                        Case{"run --wave w.fst --wave-scope ''", "--wave-scope: empty hierarchy path"},
                        Case{"run --program ''", "--program: empty file name"},
                        Case{"asm '' -o x.bin", "file: empty file name"}}) {
    const Result r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_EQ(r.err, std::string("trnsim: error: ") + c.reason + "\n") << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

TEST(CliContract, AnOutputOnThePathOfAnotherOutputOrAnInputIsBadInput) {
  // The file written last would replace the other without a word (a report over a timeline, a program's binary
  // over its source); d/./x and d/x are the same file.
  std::mt19937_64 rng(5);
  const std::string report = next_scratch(".json");
  const std::filesystem::path rp(report);
  const std::string dot = (rp.parent_path() / "." / rp.filename()).string();
  struct Case {
    std::string args, reason;
  };
  const std::string src = write_file(".queue te\nhalt\n");
  const std::string operands = matmul_operands(rng, 4, 3, 2);
  const std::string s_path = operands.substr(std::string(" --stationary ").size(),
                                             operands.find(" --moving") - std::string(" --stationary ").size());
  for (const Case& c :
       {Case{"run --workload gemm --te tlm --report " + report + " --timeline " + dot,
             "--timeline " + dot + ": the same file as --report; give each output its own path"},
        Case{"asm " + src + " -o " + src, "--output " + src + ": the same file as file; give each output its own path"},
        Case{"matmul --te tlm --dtype bf16" + operands + " --out " + s_path,
             "--out " + s_path + ": the same file as --stationary; give each output its own path"}}) {
    const Result r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_EQ(r.err, "trnsim: error: " + c.reason + "\n") << c.args;
  }
  EXPECT_EQ(slurp(src), ".queue te\nhalt\n") << "the source is left as it was";
}

TEST(CliContract, AFailedMatmulLeavesNoOutputFileItMadeToProbe) {
  // --out is opened before the run to fail early on a path that cannot be written; a run that then fails (here
  // --timeout-cycles) must not leave that empty file behind, and an earlier file at the path is not touched.
  std::mt19937_64 rng(6);
  const std::string out = next_scratch(".npy");
  std::filesystem::remove(out);  // a scratch path of an earlier run of this test
  Result r = run("matmul --te tlm --dtype bf16 --timeout-cycles 10" + matmul_operands(rng, 4, 3, 2) + " --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << out;
  std::ofstream(out) << "earlier";
  r = run("matmul --te tlm --dtype bf16 --timeout-cycles 10" + matmul_operands(rng, 4, 3, 2) + " --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(slurp(out), "earlier");
}

TEST(CliContract, AnUnknownCommandIsNamed) {
  const Result r = run("frobnicate --x 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("trnsim: error: unknown command 'frobnicate' (commands: fpcheck, run, matmul, asm", 0), 0u)
      << r.err;
}

TEST(CliContract, ParserErrorsHaveTheSameFormAsTheOthers) {
  // CLI11's own errors (a value not in a set, a missing required option) carry the "trnsim: error: " prefix too.
  Result r = run("run --workload allreduce --config trn2-16 --algo tree");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.err.rfind("trnsim: error: --algo: tree not in {ring,rhd}", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  r = run("matmul --stationary s.npy --moving m.npy --out o.npy");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.err.rfind("trnsim: error: --dtype is required", 0), 0u) << r.err;
}

TEST(CliContract, CountsOfOneAreSingular) {
  Result r = run("run --workload gemm --te tlm -m 1 -k 1 -n 1");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(lines_of(r.out).back(), "PASS: 1 element bit-exact against the golden GEMM") << r.out;
  r = run("noc --packet-flits 1 --cycles 50");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(", packets of 1 flit, 50 cycles"), std::string::npos) << r.out;
  r = run("noc --packet-flits 2 --cycles 50");
  EXPECT_NE(r.out.find(", packets of 2 flits, 50 cycles"), std::string::npos) << r.out;
  r = run("run --workload reducescatter --config trn2-16 --bytes 4 --dtype fp32");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4 bytes per chip (1 fp32 element),"), std::string::npos) << r.out;
  EXPECT_EQ(lines_of(r.out).back(),
            "PASS: 1 element on 16 chips bit-exact against the golden reduce-scatter (ring order)") << r.out;
}

}  // namespace
