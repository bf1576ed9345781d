// The TLM network (model/noc) against the verilated routers (cosim/noc), cycle by cycle: the same injected traffic
// through both, every router's local ports and the link flit count compared after every cycle (LockstepNetwork),
// and separate runs whose per-packet records (who, when created, injected, delivered) must be identical.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>

#include "cosim/noc/noc_lockstep.h"
#include "tests/noc/noc_test_util.h"
#include "tests/support/fst_read.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {
namespace {

using cosim::noc::LockstepNetwork;
using cosim::noc::NocNetwork;
using cosim::noc::Pattern;
using cosim::noc::TrafficOptions;

std::string slurp_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct LockCase {
  std::string name;
  std::string dims;
  std::string router;
  int link_latency;
  Pattern pattern;
  double rate;
  double eject_stall;
};

std::ostream& operator<<(std::ostream& os, const LockCase& c) { return os << c.name; }

class NocLockstep : public ::testing::TestWithParam<LockCase> {};

// Low load and near saturation (about 90 % of the saturation throughput in docs/neuronlink.md) on the 4x4 and
// 2x2x2 tori, every router build, link latency, a stalling sink.
TEST_P(NocLockstep, SameFlitsSameCyclesAsTheRtl) {
  const LockCase& c = GetParam();
  LockstepNetwork net(torus(c.dims, c.router, c.link_latency));
  TrafficOptions t;
  t.pattern = c.pattern;
  t.rate = c.rate;
  t.min_len = 1;
  t.max_len = 5;
  t.inject_cycles = 1500;
  t.eject_stall_prob = c.eject_stall;
  t.seed = test_seed();
  const auto r = expect_clean_run(net, t, c.name);
  std::cout << "[ lockstep ] " << c.name << ": " << net.comparisons() << " port values compared over " << net.cycle()
            << " cycles, all equal\n";
  EXPECT_GT(r.packets_delivered, 20u);
  EXPECT_EQ(net.rtl().link_flits(), net.tlm().link_flits());
}

INSTANTIATE_TEST_SUITE_P(
    Tori, NocLockstep,
    ::testing::Values(LockCase{"t4x4_uniform_low", "4x4", "d2v2", 0, Pattern::kUniform, 0.05, 0},
                      LockCase{"t4x4_uniform_sat", "4x4", "d2v2", 0, Pattern::kUniform, 0.40, 0},
                      LockCase{"t4x4_transpose_sat", "4x4", "d2v2", 0, Pattern::kTranspose, 0.34, 0},
                      LockCase{"t4x4_hotspot_sat", "4x4", "d2v2", 0, Pattern::kHotspot, 0.19, 0},
                      LockCase{"t4x4_bitcomp_sat_stall", "4x4", "d2v2", 0, Pattern::kBitComp, 0.64, 0.2},
                      LockCase{"t4x4_d2v4_uniform_sat", "4x4", "d2v4", 0, Pattern::kUniform, 0.58, 0},
                      LockCase{"t4x4_d2v4_neighbor_lat2", "4x4", "d2v4", 2, Pattern::kNeighbor, 0.8, 0},
                      LockCase{"t4x4_uniform_overload_lat1", "4x4", "d2v2", 1, Pattern::kUniform, 1.0, 0},
                      LockCase{"t2x2x2_uniform_low", "2x2x2", "d3v4g2", 0, Pattern::kUniform, 0.05, 0},
                      LockCase{"t2x2x2_uniform_sat", "2x2x2", "d3v4g2", 0, Pattern::kUniform, 0.65, 0},
                      LockCase{"t2x2x2_hotspot_sat_stall", "2x2x2", "d3v4g2", 0, Pattern::kHotspot, 0.4, 0.1},
                      LockCase{"t3x5_uniform_sat_lat3", "3x5", "d2v2", 3, Pattern::kUniform, 0.44, 0}),
    [](const auto& info) { return info.param.name; });

// The 8-flit-buffer build (d2v4b8: BookSim2's default vc_buf_size, for the saturation comparison in
// docs/neuronlink.md): the TLM takes DEPTH 8 from the routers and stays in lockstep, single-flit packets past the
// 4x4 saturation point and 1-5-flit packets near it.
TEST(NocLockstepDepth8, TheEightFlitBufferBuildMatchesTheModel) {
  for (const auto& [min_len, max_len, rate] : {std::tuple{1, 1, 0.95}, std::tuple{1, 5, 0.80}}) {
    std::ostringstream name;
    name << "4x4 d2v4b8 uniform, " << min_len << "-" << max_len << "-flit packets, rate " << rate;
    const std::string what = name.str();
    LockstepNetwork net(torus("4x4", "d2v4b8"));
    ASSERT_EQ(net.rtl().build(0).depth, 8) << net.rtl().build(0).str();
    ASSERT_EQ(net.rtl().build(0).num_vc, 4) << net.rtl().build(0).str();
    TrafficOptions t;
    t.pattern = Pattern::kUniform;
    t.rate = rate;
    t.min_len = min_len;
    t.max_len = max_len;
    t.seed = test_seed();
    const auto r = expect_clean_run(net, t, what);
    std::cout << "[ lockstep ] " << what << ": " << net.comparisons() << " port values compared over " << net.cycle()
              << " cycles, all equal\n";
    EXPECT_GT(r.packets_delivered, 1000u) << what;
    EXPECT_EQ(net.rtl().link_flits(), net.tlm().link_flits()) << what;
  }
}

// Separate runs, same seed: the delivered packets and each one's latency are the same, packet by packet.
TEST(NocLockstepRecords, SeparateRunsDeliverTheSamePacketsWithTheSameLatency) {
  for (const char* router : {"d2v2", "d2v4"}) {
    TrafficOptions t;
    t.rate = 0.45;
    t.min_len = 1;
    t.max_len = 5;
    t.inject_cycles = 1500;
    t.seed = test_seed();
    t.record_packets = true;
    NocNetwork rtl(torus("4x4", router));
    model::noc::TlmNetwork tlm(cosim::noc::tlm_options_for(rtl));
    const auto a = expect_clean_run(rtl, t, std::string("rtl ") + router);
    const auto b = expect_clean_run(tlm, t, std::string("tlm ") + router);
    ASSERT_EQ(a.packets.size(), b.packets.size()) << router;
    ASSERT_GT(a.packets.size(), 100u);
    size_t diff = 0;
    for (size_t i = 0; i < a.packets.size(); ++i) diff += !(a.packets[i] == b.packets[i]);
    EXPECT_EQ(diff, 0u) << router << ": packets with a different route through time";
    EXPECT_EQ(a.p99_latency, b.p99_latency);
    EXPECT_DOUBLE_EQ(a.avg_latency, b.avg_latency);
  }
}

// The comparison can fail: a flit lost on one RTL link (and not in the TLM) is replayed there only, which shows as a
// mismatch (first in the link-layer counters or the count of flits on links, before any local port differs).
TEST(NocLockstepRecords, ADivergenceIsReportedWithCycleAndRouter) {
  auto o = torus("4x4", "d2v2");
  o.faults.push_back({cosim::noc::LinkFault::Kind::kDropFlit, 5, 0, 10, {}});
  LockstepNetwork net(o);
  TrafficOptions t;
  t.pattern = Pattern::kNeighbor;
  t.rate = 0.9;
  t.inject_cycles = 2000;
  t.seed = test_seed();
  std::string error;
  try {
    cosim::noc::run_traffic(net, t);
  } catch (const cosim::noc::NocError& e) {
    error = e.what();
  }
  std::cout << error << "\n";
  EXPECT_NE(error.find("lockstep mismatch at cycle"), std::string::npos) << error;
}

// The mismatch message ends with one command that re-runs the network with a waveform of the cycles around the
// mismatch (NocOptions::rerun_command, as `trnsim noc` passes it), and the [ fail-at  ] line of the regression
// runner. The command is run here: it records exactly that window (it runs without the injected fault, so it
// passes).
TEST(NocLockstepReRun, AMismatchNamesARunnableReRunCommandWithItsWindow) {
  auto o = torus("4x4", "d2v2");
  o.faults.push_back({cosim::noc::LinkFault::Kind::kDropFlit, 5, 0, 100, {}});  // a mismatch soon after cycle 100
  const std::string command = "trnsim noc --dims 4x4 --traffic neighbor --rate 0.9 --cycles 300 --seed 1 --lockstep";
  o.rerun_command = command;
  std::string error;
  uint64_t cycle = 0;
  ::testing::internal::CaptureStderr();
  {
    LockstepNetwork net(o);
    TrafficOptions t;
    t.pattern = Pattern::kNeighbor;
    t.rate = 0.9;
    t.inject_cycles = 300;
    try {
      cosim::noc::run_traffic(net, t);
    } catch (const cosim::noc::NocError& e) {
      error = e.what();
    }
    cycle = net.cycle();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(error.find("lockstep mismatch at cycle " + std::to_string(cycle)), std::string::npos) << error;
  ASSERT_GT(cycle, 60u);
  const std::string from = std::to_string(cycle - 50), to = std::to_string(cycle + 10);
  const std::string intro = "re-run with a waveform around it: ";
  const std::string rerun = command + " --wave noc-fail.fst --wave-from " + from + " --wave-to " + to;
  ASSERT_NE(error.find(intro + rerun), std::string::npos) << error;
  EXPECT_NE(err.find("[ fail-at  ] block=noc-lockstep 4x4 cycle=" + std::to_string(cycle) + " wave-from=" + from +
                     " wave-to=" + to),
            std::string::npos)
      << err;

  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "trnsim_noc_rerun";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string args = rerun.substr(std::string("trnsim").size());
  const std::string shell = "cd '" + dir.string() + "' && '" TRNSIM_BIN "'" + args + " > run.log 2>&1";
  const int status = std::system(shell.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << shell << "\n" << slurp_file(dir / "run.log");
  const test::VcdDump v = test::read_fst((dir / "noc-fail.fst").string());
  ASSERT_FALSE(v.times.empty()) << v.text.substr(0, 2000);
  EXPECT_EQ(v.times.front(), (cycle - 50) * 1000);  // 1000 ps a cycle (cosim/noc/noc_rtl.cpp)
  EXPECT_LE(v.times.back(), (cycle + 11) * 1000);
}

}  // namespace
}  // namespace trnsim::test
