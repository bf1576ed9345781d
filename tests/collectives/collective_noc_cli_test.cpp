// `trnsim run --workload allreduce|allgather|reducescatter --fabric message|tlm|rtl|lockstep`: the collectives over
// the router network from the command line (PASS against the golden, the network figures, the JSON report) and the
// flag's errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"

namespace trnsim::test {
namespace {

TEST(CollectiveNocCli, AllReduceOverTheRouterModelPassesAndReportsTheNetwork) {
  const std::string report = scratch(".json");
  const Result r = run("run --workload allreduce --config trn2-16 --bytes 4K --dtype fp32 --fabric tlm --report " +
                       report);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS: 16384 elements on 16 chips bit-exact against the golden all-reduce (ring order)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fabric            tlm: packets through the C++ router model (4x4, build d2v2), at most 32 "
                       "payload flits each"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("network           "), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(report));
  EXPECT_EQ(j["fabric"], "tlm");
  EXPECT_TRUE(j["pass"].get<bool>());
  const uint64_t cycles = j["network_cycles"];
  EXPECT_GT(cycles, 0u);
  EXPECT_GT(j["network_packets"].get<uint64_t>(), 0u);
  EXPECT_GE(j["network_max_latency_cycles"].get<double>(), j["network_mean_latency_cycles"].get<double>());
  // The collective's time is the router cycles at 8 bytes per cycle and 160 GB/s per link (0.05 ns per cycle); the
  // reported time may add the issue of the collective instruction on the chips, well under a microsecond.
  const double network_us = double(cycles) * 0.05 / 1000.0, us = j["simulated_us"];
  EXPECT_GE(us, network_us - 1e-9);
  EXPECT_LT(us, network_us + 1.0);
}

TEST(CollectiveNocCli, EveryWorkloadOnTheVerilatedRoutersAndInLockstep) {
  for (const char* fabric : {"rtl", "lockstep"}) {
    for (const char* w : {"allreduce", "allgather", "reducescatter"}) {
      for (const char* algo : {"ring", "rhd"}) {
        // 1002 bytes of BF16: 501 elements, not a multiple of 16.
        const std::string args = std::string("run --workload ") + w + " --config trn2-16 --algo " + algo +
                                 " --bytes 1002 --dtype bf16 --fabric " + fabric;
        const Result r = run(args);
        EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out << r.err;
        EXPECT_NE(r.out.find("PASS"), std::string::npos) << args << "\n" << r.out;
      }
    }
  }
}

TEST(CollectiveNocCli, Trn2x64RunsOnThe3DRouterModelAndSaysTheZLinksAreNotModelled) {
  const Result r = run("run --workload reducescatter --config trn2-64 --bytes 1284 --dtype fp32 --fabric tlm");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS: 321 elements on 64 chips"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(4x4x4, build d3v4g2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the 64 GB/s Z links are not modelled"), std::string::npos) << r.out;
}

TEST(CollectiveNocCli, TheMessageFabricIsTheDefault) {
  const std::string report = scratch(".json");
  const Result r = run("run --workload allreduce --config trn2-16 --bytes 1K --dtype fp32 --report " + report);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fabric            message"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("network           "), std::string::npos) << r.out;
  // The report's network_* figures belong to the router network (tlm, rtl, lockstep) only.
  const auto j = nlohmann::json::parse(slurp(report));
  EXPECT_EQ(j["fabric"], "message");
  EXPECT_TRUE(j["pass"].get<bool>());
  for (const auto& [key, value] : j.items()) EXPECT_NE(key.rfind("network_", 0), 0u) << key;
}

TEST(CollectiveNocCli, BadFabricFlagsExitTwoNamingTheFlag) {
  Result r = run("run --workload allreduce --config trn2-16 --bytes 1K --fabric booksim");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--fabric"), std::string::npos) << r.err;
  r = run("run --workload gemm --fabric tlm");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--fabric does not apply to --workload gemm"), std::string::npos) << r.err;
  r = run("run --help");
  EXPECT_NE(r.out.find("--fabric"), std::string::npos) << r.out;
}

// Link faults (issue 16): a collective over links with bit errors and drops still passes bit-exact, and the report
// counts the link-level replays; the faults are refused where there are no links with flits.
TEST(CollectiveNocCli, LinkFaultsAreRepairedCountedAndRefusedWithoutARouterNetwork) {
  const std::string report = scratch(".json");
  Result r = run("run --workload allreduce --config trn2-16 --bytes 16K --dtype fp32 --fabric tlm --ber 1e-4 "
                 "--drop 1e-4 --fault-seed 3 --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS: 65536 elements on 16 chips bit-exact"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(injected faults: BER 0.0001, drop 0.0001, seed 3)"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(report));
  EXPECT_GT(j["network_replays"].get<uint64_t>(), 0u);
  EXPECT_GT(j["network_crc_errors"].get<uint64_t>(), 0u);
  EXPECT_NE(r.out.find("link retry        " + std::to_string(j["network_replays"].get<uint64_t>()) + " replays"),
            std::string::npos)
      << r.out;
  r = run("run --workload allreduce --config trn2-16 --bytes 1K --ber 1e-4");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("give --fabric tlm, rtl or lockstep"), std::string::npos) << r.err;
  r = run("run --workload allreduce --config trn2-16 --bytes 1K --fault-seed 4");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--fault-seed seeds the faults of the router network's links"), std::string::npos) << r.err;
  r = run("run --workload allreduce --config trn2-16 --bytes 1K --fabric tlm --ber 0.9");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--ber: bit error rate 0.9"), std::string::npos) << r.err;
  r = run("run --workload gemm --ber 1e-4");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--ber does not apply to --workload gemm"), std::string::npos) << r.err;
  r = run("run --workload allreduce --config trn2-16 --bytes 4K --fabric tlm --ber 0.5");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL: the router network (--fabric tlm) stopped: cycle "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": link down: router ("), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trnsim::test
