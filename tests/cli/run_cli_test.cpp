// `trnsim run` as a user runs it: a small GEMM passes and writes its report; bad flags and unwritable output paths
// exit 2 with a one-line reason naming the flag (BRIEF section 4).
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_runner.h"

namespace {

using namespace trnsim::test;

TEST(RunCli, SmallGemmPassesAndWritesReport) {
  const std::string report = scratch(".json");
  const Result r = run("run -m 5 -k 19 -n 3 --dtype fp16 --report " + report);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  const std::string json = slurp(report);
  EXPECT_NE(json.find("\"pass\": true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"k\": 19"), std::string::npos) << json;
}

TEST(RunCli, UnwritableReportIsBadInputBeforeTheRun) {
  const Result r = run("run -m 4 -k 4 -n 4 --report /nonexistent-dir/r.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--report /nonexistent-dir/r.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("PASS"), std::string::npos) << "must fail before running: " << r.out;
}

TEST(RunCli, UnwritableWaveformIsBadInput) {
  const Result r = run("run -m 4 -k 4 -n 4 --wave /nonexistent-dir/w.fst");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--wave /nonexistent-dir/w.fst"), std::string::npos) << r.err;
}

TEST(RunCli, UnknownOrUnbuiltConfigNamesIt) {
  Result r = run("run --config bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--config bogus"), std::string::npos) << r.err;
  r = run("run --config trn2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("128x128"), std::string::npos) << r.err;
}

TEST(RunCli, BadDtypeAndDimensionsAreUsageErrors) {
  Result r = run("run --dtype fp7");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fp7"), std::string::npos) << r.err;
  r = run("run -n 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--n"), std::string::npos) << r.err;
  r = run("run --te tlm");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--te tlm"), std::string::npos) << r.err;
}

}  // namespace
