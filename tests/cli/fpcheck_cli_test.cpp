// `trnsim fpcheck` as a user runs it: the built binary is spawned with vector files written into this test's build
// directory; exit codes, the stderr reason and the stdout report are checked (BRIEF section 4).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

namespace {

using namespace trnsim::test;

// ---- bad input: exit 2, one line on stderr naming the file (and line) ------------------------------------------

TEST(FpcheckCli, NoArgumentsIsUsageError) {
  const Result r = run("fpcheck");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--op"), std::string::npos) << r.err;
}

TEST(FpcheckCli, MissingFile) {
  const std::string path = scratch(".does-not-exist.tv");
  const Result r = run("fpcheck --op f32_add --vectors " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(FpcheckCli, DirectoryIsNotAVectorFile) {
  const Result r = run(std::string("fpcheck --op f32_add --vectors ") + TRNSIM_CLI_TMP_DIR);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(TRNSIM_CLI_TMP_DIR), std::string::npos) << r.err;
}

TEST(FpcheckCli, UnknownOp) {
  const std::string path = write_file("3F800000 3F800000 40000000 00\n");
  const Result r = run("fpcheck --op f32_div --vectors " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("f32_div"), std::string::npos) << r.err;
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
}

// The MXFP4 element conversions (BRIEF rule 10), vectors worked out by hand from the E2M1 value table of OCP MX v1.0
// (codes 0..7: 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 the sign): ties to the even code, saturation at 6, -0 kept.
TEST(FpcheckCli, Fp4E2M1ConversionsFollowTheOcpTable) {
  const std::string narrow = write_file(
      "40C00000 7 00\n"   // 6 -> 6
      "3F800000 2 00\n"   // 1 -> 1
      "3E800000 0 00\n"   // 0.25: tie between 0 and 0.5 -> 0 (even code)
      "BF400000 A 00\n"   // -0.75: tie between 0.5 and 1 -> -1 (code 2 is even)
      "40A00000 6 00\n"   // 5: tie between 4 and 6 -> 4 (code 6)
      "41000000 7 00\n"   // 8 saturates to 6
      "C1000000 F 00\n"   // -8 -> -6
      "80000000 8 00\n"   // -0 keeps its sign
      "3F200000 1 00\n"   // 0.625 -> 0.5
      "3F400001 2 00\n"); // just above 0.75 -> 1
  const std::string widen = write_file("7 40C00000 00\nF C0C00000 00\n1 3F000000 00\n3 3FC00000 00\n5 40400000 00\n"
                                       "8 80000000 00\n6 40000000 00\n");  // the last is wrong: code 6 is 4.0
  for (const char* backend : {"", " --rtl"}) {  // the model's conversions and the RTL FP units' (MXFP4 code)
    const Result r = run(std::string("fpcheck --op f32_to_fp4e2m1 --vectors ") + narrow + backend);
    EXPECT_EQ(r.exit_code, 0) << backend << r.out << r.err;
    EXPECT_EQ(last_line(r.out), "10 passed, 0 failed") << r.out;
    const Result w = run(std::string("fpcheck --op fp4e2m1_to_f32 --vectors ") + widen + backend);
    EXPECT_EQ(w.exit_code, 1) << backend;
    EXPECT_EQ(last_line(w.out), "6 passed, 1 failed") << w.out;
  }
}

TEST(FpcheckCli, WrongFieldCountNamesFileAndLine) {
  const std::string path = write_file(
      "3F800000 3C00 00\n"
      "40000000 4000 00\n"
      "40400000 4200\n");
  const Result r = run("fpcheck --op f32_to_f16 --vectors " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ":3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expected 3 fields"), std::string::npos) << r.err;
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_EQ(r.out, "") << "no partial report on bad input";
}

TEST(FpcheckCli, NonHexField) {
  const std::string path = write_file(
      "3F800000 3F800000 40000000 00\n"
      "3F800000 3F8000G0 40000000 00\n");
  const Result r = run("fpcheck --op f32_add --vectors " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ":2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3F8000G0"), std::string::npos) << r.err;
}

TEST(FpcheckCli, WrongDigitCount) {
  // An FP16 result written with 8 digits.
  const std::string path = write_file("3F800000 00003C00 00\n");
  const Result r = run("fpcheck --op f32_to_f16 --vectors " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ":1:"), std::string::npos) << r.err;
}

TEST(FpcheckCli, BadFlagsField) {
  const std::string path = write_file("3F800000 3C00 0\n");
  const Result r = run("fpcheck --op f32_to_f16 --vectors " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ":1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("FLAGS"), std::string::npos) << r.err;
}

TEST(FpcheckCli, EmptyFile) {
  const std::string path = write_file("");
  const Result r = run("fpcheck --op f32_add --vectors " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
}

// ---- good runs ----------------------------------------------------------------------------------------------

TEST(FpcheckCli, GoodFilePasses) {
  // 1 + 1 = 2; 1.5 + 2^-24 (tie in FP32 at 1.5) = 1.5; 1 + (-1) = +0.
  const std::string path = write_file(
      "3F800000 3F800000 40000000 00\n"
      "3FC00000 33800000 3FC00000 01\n"
      "3F800000 BF800000 00000000 00\n");
  const Result r = run("fpcheck --op f32_add --vectors " + path);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out), "3 passed, 0 failed");
  EXPECT_EQ(r.err, "");
}

TEST(FpcheckCli, AnyNanMatchesAnyNan) {
  // Inf - Inf: TestFloat (x86 SSE) writes the negative default NaN FFC00000; the FP units write 7FC00000.
  const std::string path = write_file("7F800000 7F800000 FFC00000 10\n");
  const Result r = run("fpcheck --op f32_sub --vectors " + path);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(last_line(r.out), "1 passed, 0 failed");
}

TEST(FpcheckCli, LowerCaseHexAccepted) {
  const std::string path = write_file("3f800000 3c00 00\n");
  const Result r = run("fpcheck --op f32_to_f16 --vectors " + path);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(FpcheckCli, WrongExpectedResultFails) {
  const std::string path = write_file(
      "3F800000 3F800000 40000000 00\n"
      "3F800000 3F800000 40000001 00\n"
      "40000000 40000000 40800000 00\n");
  const Result r = run("fpcheck --op f32_add --vectors " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(path + ":2: f32_add(3F800000, 3F800000) = 40000000, expected 40000001"), std::string::npos)
      << r.out;
  EXPECT_EQ(last_line(r.out), "2 passed, 1 failed");
}

TEST(FpcheckCli, FailureListIsCapped) {
  std::string text;
  for (int i = 0; i < 30; ++i) text += "3F800000 3F800000 40000001 00\n";
  const std::string path = write_file(text);
  const Result r = run("fpcheck --op f32_mul --vectors " + path + " --max-failures 5");
  EXPECT_EQ(r.exit_code, 1);
  int shown = 0;
  for (const std::string& l : lines_of(r.out)) shown += l.find(" = 3F800000, expected 40000001") != std::string::npos;
  EXPECT_EQ(shown, 5) << r.out;
  EXPECT_NE(r.out.find("25 more"), std::string::npos) << r.out;
  EXPECT_EQ(last_line(r.out), "0 passed, 30 failed");
}

TEST(FpcheckCli, NoSatSelectsOcpOverflow) {
  // 465.0 (0x43E88000) overflows E4M3: saturating -> 0x7E (448), non-saturating -> NaN (0x7F).
  const std::string path = write_file("43E88000 7F 05\n");
  const Result sat = run("fpcheck --op f32_to_fp8e4m3 --vectors " + path);
  EXPECT_EQ(sat.exit_code, 1);
  EXPECT_NE(sat.out.find("f32_to_fp8e4m3(43E88000) = 7E, expected 7F"), std::string::npos) << sat.out;
  const Result nosat = run("fpcheck --op f32_to_fp8e4m3 --vectors " + path + " --no-sat");
  EXPECT_EQ(nosat.exit_code, 0) << nosat.out;
}

TEST(FpcheckCli, NoSatOnAnOpWithoutSaturationIsAUsageError) {
  // Only the FP8 narrowing ops saturate: elsewhere --no-sat would be silently ignored.
  const std::string path = write_file("3F800000 3F80 00\n");
  for (const char* op : {"f32_to_bf16", "f32_to_f16", "fp8e4m3_to_f32", "f32_add"}) {
    const Result r = run(std::string("fpcheck --op ") + op + " --vectors " + path + " --no-sat");
    EXPECT_EQ(r.exit_code, 2) << op << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(std::string("--no-sat applies to the FP8 narrowing ops (f32_to_fp8e4m3, f32_to_fp8e5m2) "
                                     "only, not ") + op),
              std::string::npos)
        << r.err;
  }
}

// Stochastic rounding (BRIEF rule 9): each result is compared with the golden's stochastic rounding of the input,
// with the random bits of its line index under the seed, on the model and on the RTL; the file's RNE results are
// not used (one of them, 3F808000 -> 3F80, is a BF16 tie that a stochastic cast rounds either way).
TEST(FpcheckCli, StochasticRoundingMatchesTheGoldenOnModelAndRtl) {
  const std::string path = write_file("3F808000 3F80 00\n3F800000 3F80 00\n7F7F8000 7F80 05\n00000001 0000 03\n"
                                      "BF812345 BF81 01\n7FC00001 7FC0 10\n");
  for (const char* backend : {"", " --rtl"}) {
    for (const char* seed : {"1", "4000000000"}) {
      const Result r = run(std::string("fpcheck --op f32_to_bf16 --round stochastic --seed ") + seed +
                           " --vectors " + path + backend);
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("6 passed, 0 failed"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find(std::string("rounding: stochastic, seed ") + seed), std::string::npos) << r.out;
    }
  }
}

TEST(FpcheckCli, StochasticRoundingOptionsOutsideTheirUseAreUsageErrors) {
  const std::string path = write_file("3F800000 3F80 00\n");
  const std::string widen = write_file("3F80 3F800000 00\n");
  const Result add = run("fpcheck --op bf16_to_f32 --round stochastic --vectors " + widen);
  EXPECT_EQ(add.exit_code, 2);
  EXPECT_NE(add.err.find("--round stochastic applies to the narrowing ops (f32_to_*) only, not bf16_to_f32"),
            std::string::npos)
      << add.err;
  const Result seed = run("fpcheck --op f32_to_bf16 --seed 3 --vectors " + path);
  EXPECT_EQ(seed.exit_code, 2);
  EXPECT_NE(seed.err.find("--seed applies to --round stochastic only"), std::string::npos) << seed.err;
  const Result bad = run("fpcheck --op f32_to_bf16 --round up --vectors " + path);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--round: unknown rounding 'up' (expected rne or stochastic)"), std::string::npos) << bad.err;
  const Result big = run("fpcheck --op f32_to_bf16 --round stochastic --seed 4294967296 --vectors " + path);
  EXPECT_EQ(big.exit_code, 2) << big.out;
}

TEST(FpcheckCli, HelpListsOps) {
  const Result r = run("fpcheck --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* op : {"f32_add", "f32_sub", "f32_mul", "f32_to_fp8e5m2", "fp8e4m3_to_f32", "--no-sat", "--rtl"}) {
    EXPECT_NE(r.out.find(op), std::string::npos) << op;
  }
}

}  // namespace
