// `trnsim run --workload allreduce|allgather|reducescatter` as a user runs it: PASS lines, algbw/busbw figures,
// the JSON report, 0 bytes, and every bad flag (exit 2 with the reason).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"

namespace trnsim::test {
namespace {

TEST(CollectiveCli, AllReduceOnTrn2x16PassesAndReportsBusBandwidth) {
  const std::string report = scratch(".json");
  const Result r = run("run --workload allreduce --config trn2-16 --bytes 64K --dtype fp32 --report " + report);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS: 262144 elements on 16 chips bit-exact against the golden all-reduce (ring order)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("busbw"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("link peak         640 GB/s"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(report));
  EXPECT_EQ(j["chips"], 16);
  EXPECT_EQ(j["bytes"], 65536);
  EXPECT_TRUE(j["pass"].get<bool>());
  // nccl-tests: busbw = algbw * 2 (n - 1) / n for all-reduce; algbw = bytes / time.
  const double algbw = j["algbw_gbps"], busbw = j["busbw_gbps"], us = j["simulated_us"];
  EXPECT_NEAR(algbw, 65536.0 / (us * 1000.0), 1e-9 * algbw);
  EXPECT_NEAR(busbw, algbw * 2 * 15 / 16, 1e-9 * busbw);
  EXPECT_LT(busbw, 640.0);
}

TEST(CollectiveCli, EveryWorkloadAlgorithmAndDtypeOnBothSystems) {
  for (const char* w : {"allreduce", "allgather", "reducescatter"}) {
    for (const char* cfg : {"trn2-16", "trn2-64"}) {
      for (const char* algo : {"ring", "rhd"}) {
        // 1002 bytes of BF16: 501 elements, not a multiple of 16 or 64 chips.
        const std::string args = std::string("run --workload ") + w + " --config " + cfg + " --algo " + algo;
        Result r = run(args + " --bytes 1002 --dtype bf16 --seed 3");
        EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out << r.err;
        EXPECT_NE(r.out.find("PASS"), std::string::npos) << args << "\n" << r.out;
        r = run(args + " --bytes 4 --dtype fp32");  // one element
        EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out << r.err;
      }
    }
  }
}

TEST(CollectiveCli, Trn2x256IsFourUltraServersJoinedByEfa) {
  for (const char* algo : {"ring", "rhd"}) {
    const std::string report = next_scratch(".json");
    const Result r = run(std::string("run --workload allreduce --config trn2-256 --bytes 4K --dtype fp32 --algo ") +
                         algo + " --report " + report);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("  UltraServers      4 of 64 chips, joined by EFA: 25 GB/s per chip and direction, 5.00 us "
                         "per pass"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("PASS: 262144 elements on 256 chips bit-exact against the golden all-reduce"),
              std::string::npos)
        << r.out;
    const auto j = nlohmann::json::parse(slurp(report));
    EXPECT_EQ(j["chips"], 256);
    EXPECT_EQ(j["link_peak_gbps"], 768.0 + 25.0);  // the torus links and the EFA link to the switch
    // The EFA bound: every chip sends (n - 1) / n of its 4 KiB out through EFA at 25 GB/s at least once.
    EXPECT_LT(j["busbw_gbps"].get<double>(), 2 * 25.0);
  }
  const Result ring = run("run --workload allreduce --config trn2-256 --bytes 4K");
  EXPECT_NE(ring.out.find("  ring flows        xyzu+ x41, xyzu- x41,"), std::string::npos) << ring.out;
  const Result tlm = run("run --workload allreduce --config trn2-256 --fabric tlm");
  EXPECT_EQ(tlm.exit_code, 2);
  EXPECT_NE(tlm.err.find("--fabric tlm: the router networks are one torus; trn2-256's UltraServers meet over EFA"),
            std::string::npos)
      << tlm.err;
}

TEST(CollectiveCli, ReduceScatterBusBandwidthFactorIsNMinusOneOverN) {
  const std::string report = scratch(".json");
  const Result r = run("run --workload reducescatter --config trn2-64 --bytes 1K --dtype fp32 --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(slurp(report));
  EXPECT_NEAR(j["busbw_gbps"].get<double>(), j["algbw_gbps"].get<double>() * 63 / 64, 1e-9);
  EXPECT_EQ(j["link_peak_gbps"], 768.0);
}

TEST(CollectiveCli, ZeroBytesIsANoOp) {
  const Result r = run("run --workload allgather --config trn2-16 --bytes 0");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0 bytes: the all-gather is a no-op"), std::string::npos) << r.out;
}

TEST(CollectiveCli, ZeroBytesReportEndsWithThePassLine) {
  const std::string report = scratch(".json");
  const Result r = run("run --workload allreduce --config trn2-16 --bytes 0 --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t pass = r.out.rfind("\nPASS: 0 bytes: the all-reduce is a no-op");
  ASSERT_NE(pass, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\n', pass + 1), r.out.size() - 1) << "PASS is the last line:\n" << r.out;
  EXPECT_NE(r.out.find("  report            " + report), std::string::npos) << r.out;
  EXPECT_TRUE(nlohmann::json::parse(slurp(report))["noop"].get<bool>());
}

TEST(CollectiveCli, BadFlagsExitTwoNamingTheProblem) {
  struct Bad {
    const char* args;
    const char* reason;
  };
  for (const Bad& b : {Bad{"--config trn2-16 --bytes 6 --dtype fp32", "not a multiple of the fp32 element size"},
                       Bad{"--config trn2-16 --bytes 3 --dtype bf16", "not a multiple of the bf16 element size"},
                       Bad{"--config trn2-16 --bytes 12X", "--bytes 12X: not a size"},
                       Bad{"--config trn2-16 --bytes -4", "--bytes -4: not a size"},
                       Bad{"--config trn2-16 --bytes 1T", "--bytes 1T: not a size"},
                       Bad{"--config trn2-16 --bytes 4Kb", "--bytes 4Kb: not a size"},
                       Bad{"--config trn2-16 --bytes 4kib", "--bytes 4kib: not a size"},
                       Bad{"--config trn2-16 --bytes 4k", "--bytes 4k: not a size"},
                       Bad{"--config trn2-16 --bytes 18446744073709551615", "--bytes 18446744073709551615: too large"},
                       Bad{"--config trn2-16 --bytes 1048577G", "--bytes 1048577G: too large"},
                       // 2^50 itself is a size (16 digits), one past it is not; 2^50 then needs too much memory.
                       Bad{"--config trn2-16 --bytes 1125899906842625", "--bytes 1125899906842625: too large"},
                       Bad{"--config trn2-16 --bytes 1125899906842624", "more host memory"},
                       Bad{"--config trn2-16 --algo tree", "--algo"},
                       Bad{"--config trn2-16 --dtype fp16", "--dtype fp16: collectives sum fp32 or bf16"},
                       Bad{"--config tiny --bytes 8", "--config trn2-16, trn2-64 or trn2-256"},
                       Bad{"--config trn2 --bytes 8", "--config trn2-16, trn2-64 or trn2-256"},
                       Bad{"--config trn2-128 --bytes 8", "trn2-128"},
                       Bad{"--config trn2-64 --bytes 1G", "more host memory"}}) {
    const Result r = run(std::string("run --workload allreduce ") + b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args << "\n" << r.out;
    EXPECT_NE(r.err.find(b.reason), std::string::npos) << b.args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
}

TEST(CollectiveCli, SizeSuffixesAreBinaryMultiples) {
  Result r = run("run --workload allreduce --config trn2-16 --bytes 1K --dtype fp32");
  EXPECT_NE(r.out.find("1024 bytes per chip (256 fp32 elements)"), std::string::npos) << r.out;
  r = run("run --workload allreduce --config trn2-16 --bytes 00000000000000008 --dtype fp32");  // leading zeros
  EXPECT_NE(r.out.find("8 bytes per chip (2 fp32 elements)"), std::string::npos) << r.out << r.err;
  r = run("run --workload allreduce --config trn2-16 --bytes 2KiB --dtype bf16");
  EXPECT_NE(r.out.find("2048 bytes per chip (1024 bf16 elements)"), std::string::npos) << r.out;
  r = run("run --workload allreduce --config trn2-16 --bytes 3KB --dtype bf16");
  EXPECT_NE(r.out.find("3072 bytes per chip (1536 bf16 elements)"), std::string::npos) << r.out;
  r = run("run --workload allreduce --config trn2-16 --bytes 8B --dtype fp32");
  EXPECT_NE(r.out.find("8 bytes per chip (2 fp32 elements)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trnsim::test
