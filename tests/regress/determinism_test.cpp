// Determinism (issue 6; BRIEF section 5): the same seed gives the same bits and cycle counts, run after run, in
// fresh processes; another seed gives other data. Runs the probes of determinism_probe_test.cpp (a random TE RTL
// GEMM under random backpressure, and the GEMM kernel on the device with TLM and RTL in lockstep) three times each,
// and `trnsim run --workload gemm --te lockstep --seed S --report R.json` twice.
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/regress/regress_test_util.h"

namespace trnsim::regress_test {
namespace {

struct Digest {
  std::string line;  // "[ digest   ] te_rtl dtype=bf16 k=3 m=5 n=17 bits=... cycles=..."
  std::string bits, cycles;
};

Digest probe(const std::string& test, uint64_t seed) {
  const Result r = sh("TRNSIM_SEED=" + std::to_string(seed) + " '" + REGRESS_PROBE + "' --gtest_filter=DeterminismProbe." + test);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  Digest d;
  for (const std::string& l : lines_of(r.out)) {
    if (l.rfind("[ digest   ] ", 0) == 0) d.line = l;
  }
  std::smatch m;
  EXPECT_TRUE(std::regex_search(d.line, m, std::regex(R"(bits=([0-9a-f]{16}) cycles=(\d+))"))) << r.out;
  if (m.size() == 3) {
    d.bits = m[1];
    d.cycles = m[2];
  }
  return d;
}

void same_seed_same_result(const std::string& test) {
  const uint64_t seed = 20240607, other = 20240608;
  const Digest a = probe(test, seed), b = probe(test, seed), c = probe(test, other);
  ASSERT_FALSE(a.line.empty());
  EXPECT_EQ(a.line, b.line) << "same seed, different result bits or cycles";
  EXPECT_NE(a.bits, c.bits) << "seeds " << seed << " and " << other << " gave the same data:\n" << a.line << "\n" << c.line;
  EXPECT_NE(std::stoull(a.cycles), 0u);
  std::cout << "seed " << seed << " twice: " << a.line << "\nseed " << other << ":       " << c.line << "\n";
}

TEST(Determinism, TeRtlRandomGemmSameSeedSameBitsAndCycles) { same_seed_same_result("TeRtlRandomGemm"); }

TEST(Determinism, GemmKernelLockstepSameSeedSameBitsAndCycles) { same_seed_same_result("GemmKernelLockstep"); }

// The report of `trnsim run`, without the host-dependent figures.
nlohmann::json report(uint64_t seed) {
  const std::string path = scratch_dir() + "/report-" + std::to_string(seed) + "-" +
                           std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".json";
  static int n = 0;
  const std::string file = path + std::to_string(n++);
  const Result r = sh(std::string("'") + REGRESS_TRNSIM + "' run --workload gemm --te lockstep --dtype fp8e4m3 -m 20 -k 37 -n 45 --seed " +
                      std::to_string(seed) + " --report '" + file + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(slurp(file), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << slurp(file);
  for (const char* host : {"wall_s", "macs_per_host_s", "peak_rss_gib"}) j.erase(host);
  return j;
}

TEST(Determinism, TrnsimRunLockstepReportRepeatsForASeed) {
  const nlohmann::json a = report(77), b = report(77), c = report(78);
  EXPECT_EQ(a, b) << a.dump(2) << "\n" << b.dump(2);
  EXPECT_EQ(a.value("pass", false), true);
  EXPECT_GT(a.value("cycles", 0), 0);
  EXPECT_EQ(c.value("pass", false), true);
  EXPECT_EQ(c.value("seed", 0), 78);
}

}  // namespace
}  // namespace trnsim::regress_test
