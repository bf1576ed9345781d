// NeuronLink RTL waveform windows (docs/verification.md, "Waveform debugging"): wave_from/wave_to record only the
// cycles asked for, wave_scope only the router (or the part of one) asked for, a scope naming no router is refused
// before any file is written, a run that fails on an RTL assertion still leaves an FST that reads back and names the
// window around the failing cycle, and the TRNSIM_WAVE environment hook records a network built without a wave path.
// Every file is read back with GTKWave's fst2vcd (tests/support/fst_read.h).
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/noc/noc_test_util.h"
#include "tests/support/fst_read.h"

namespace trnsim {
namespace {

namespace fs = std::filesystem;
using cosim::noc::LinkFault;
using cosim::noc::NocError;
using cosim::noc::NocNetwork;
using cosim::noc::NocOptions;
using cosim::noc::TrafficOptions;
using test::read_fst;
using test::VcdDump;

constexpr uint64_t kCyclePs = 1000;  // cosim/noc/noc_rtl.cpp: 500 ps per clock edge, no reset edges recorded

fs::path temp_dir() {
  const fs::path dir = fs::path(::testing::TempDir()) / "trnsim_noc_wave";
  fs::create_directories(dir);
  return dir;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A 2x2 torus with uniform traffic for `cycles` cycles, recorded as `o` asks.
void run_2x2(NocOptions o, uint64_t cycles = 120) {
  NocNetwork net(o);
  TrafficOptions t;
  t.rate = 0.3;
  t.inject_cycles = cycles;
  test::expect_clean_run(net, t, "2x2 with waveform");
}

// A 2x2 torus recording to `fst` (a file left by an earlier run is removed first).
NocOptions recorded(const fs::path& fst) {
  fs::remove(fst);
  NocOptions o = test::torus("2x2");
  o.wave_path = fst.string();
  return o;
}

TEST(NocWave, FromAndToRecordOnlyThoseCycles) {
  const fs::path fst = temp_dir() / "window.fst";
  NocOptions o = recorded(fst);
  o.wave_from = 30;
  o.wave_to = 60;
  run_2x2(o);
  const VcdDump v = read_fst(fst.string());
  ASSERT_FALSE(v.times.empty()) << "no value changes in " << fst << "\n" << v.text.substr(0, 2000);
  const uint64_t first = 30 * kCyclePs, last = 60 * kCyclePs + kCyclePs / 2;
  EXPECT_EQ(v.times.front(), first);
  // FST may end with one last timestamp (the end of the file); every value change is inside the window.
  for (const uint64_t t : v.times) EXPECT_TRUE(t >= first && t <= last + kCyclePs) << "time " << t << " ps";
  EXPECT_GE(v.times.size(), 62u);  // two edges a cycle over the 31 cycles of the window
  EXPECT_TRUE(v.signals.count("node_0_0.clk_i"));
  EXPECT_TRUE(v.signals.count("node_1_1.clk_i"));
}

TEST(NocWave, ScopeRecordsOnlyThatRouterOrPart) {
  for (const std::string scope : {"node_1_0", "node_1_0.trn_noc_router.g_in[1]"}) {
    const fs::path fst = temp_dir() / "scope.fst";
    NocOptions o = recorded(fst);
    o.wave_scope = scope;
    run_2x2(o);
    const VcdDump v = read_fst(fst.string());
    ASSERT_GT(v.signals.size(), 5u) << scope << ": the scope matched (almost) no signal";
    EXPECT_TRUE(v.signals.count("node_1_0.clk_i")) << scope << ": the router's clock is always recorded";
    for (const std::string& s : v.signals) {
      if (s == "node_1_0.clk_i") continue;
      EXPECT_EQ(s.rfind(scope + ".", 0), 0u) << scope << ": outside the scope: " << s;
    }
    EXPECT_FALSE(v.signals.count("node_0_0.clk_i")) << scope;
  }
}

// A scope whose root is no router of this network, or with a wildcard, is refused before the file is created; one
// inside a router that names no instance leaves a readable file with only that router's clock (Verilator 5.006's FST
// writer crashes on a filter that leaves no signal).
TEST(NocWave, ScopesOutsideTheNetworkAreRefused) {
  const fs::path fst = temp_dir() / "bad_scope.fst";
  for (const char* scope : {"node_2_0", "node_0_0_0", "node_01_0", "TOP.trn_te", "node_1_0*", "node_0_0, bogus"}) {
    NocOptions o = recorded(fst);
    o.wave_scope = scope;
    try {
      NocNetwork net(o);
      FAIL() << "--wave-scope " << scope << " was accepted";
    } catch (const NocError& e) {
      EXPECT_TRUE(contains(e.what(), "--wave-scope '")) << e.what();
      if (!contains(scope, "*")) {
        EXPECT_TRUE(contains(e.what(), "routers are node_0_0 .. node_1_1")) << e.what();
      }
    }
    EXPECT_FALSE(fs::exists(fst)) << scope << ": a refused scope created " << fst;
  }
  // A router that exists but a part of it that matches no signal: refused the same way, naming the scope.
  for (const char* scope : {"node_1_0.trn_noc_router.nosuch", "node_1_1.trn_noc_router.g_in[7]", "node_1_1.bogus"}) {
    NocOptions o = recorded(fst);
    o.wave_scope = scope;
    try {
      NocNetwork net(o);
      FAIL() << "--wave-scope " << scope << " was accepted";
    } catch (const NocError& e) {
      EXPECT_TRUE(contains(e.what(), std::string("--wave-scope ") + scope + ": matched no signal of the 2x2 router "
                                     "network")) << e.what();
    }
    EXPECT_FALSE(fs::exists(fst)) << scope << ": a refused scope left " << fst;
  }
}

// A window that starts after the last simulated cycle records nothing: a warning names that cycle.
TEST(NocWave, AWindowAfterTheRunWarnsNamingTheLastCycle) {
  const fs::path fst = temp_dir() / "late.fst";
  NocOptions o = recorded(fst);
  o.wave_from = 100000;
  o.wave_to = 200000;
  uint64_t last = 0;
  ::testing::internal::CaptureStderr();
  {
    NocNetwork net(o);
    TrafficOptions t;
    t.rate = 0.3;
    t.inject_cycles = 40;
    test::expect_clean_run(net, t, "2x2 with a late window");
    last = net.cycle();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_GT(last, 40u);
  EXPECT_TRUE(contains(err, "warning: --wave-from 100000 is after the last cycle of the run (" +
                                std::to_string(last) + "): " + fst.string() + " holds no window")) << err;
}

// TRNSIM_WAVE is checked before anything runs: a name that is not .fst, or a directory that cannot be written, is
// refused naming the variable and the path.
TEST(NocWave, UnusableTrnsimWaveIsRefusedNamingIt) {
  const struct {
    std::string path, message;
  } cases[] = {
      {(temp_dir() / "x.vcd").string(), "trnsim writes waveforms as FST"},
      {"/nonexistent/c.fst", "cannot write in directory '/nonexistent'"},
  };
  for (const auto& c : cases) {
    fs::remove(c.path);
    setenv("TRNSIM_WAVE", c.path.c_str(), 1);
    try {
      NocNetwork net(test::torus("2x2"));
      ADD_FAILURE() << "TRNSIM_WAVE=" << c.path << " was accepted";
    } catch (const NocError& e) {
      EXPECT_TRUE(contains(e.what(), "TRNSIM_WAVE=" + c.path + ": " + c.message)) << e.what();
    }
    unsetenv("TRNSIM_WAVE");
    EXPECT_FALSE(fs::exists(c.path));
  }
}

TEST(NocWave, FailingRunLeavesAReadableFstAndNamesTheWindow) {
  const fs::path fst = temp_dir() / "failing.fst";
  NocOptions o = recorded(fst);
  o.faults.push_back({LinkFault::Kind::kExtraCredit, 0, 0, 10, {}});  // a_credit_overflow fires soon after cycle 10
  std::string error;
  uint64_t failed_at = 0;
  ::testing::internal::CaptureStderr();
  {
    NocNetwork net(o);
    error = test::error_and_output([&] {
              for (int i = 0; i < 40; ++i) net.step();
            }).first;
    failed_at = net.cycle();
  }  // the network is destroyed after the failure: the file is closed here
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(contains(error, "RTL assertion failed")) << error;
  const cosim::WaveWindow w = cosim::noc::noc_wave_window(failed_at);
  EXPECT_EQ(w.from, failed_at > 50 ? failed_at - 50 : 0);
  EXPECT_EQ(w.to, failed_at + 10);
  EXPECT_TRUE(contains(error, "re-run with a waveform around it: TRNSIM_WAVE=noc.fst TRNSIM_WAVE_FROM=" +
                                  std::to_string(w.from) + " TRNSIM_WAVE_TO=" + std::to_string(w.to)))
      << error;
  EXPECT_TRUE(contains(err, "[ fail-at  ] block=noc 2x2 cycle=" + std::to_string(failed_at) + " wave-from=" +
                                std::to_string(w.from) + " wave-to=" + std::to_string(w.to) + "\n"))
      << err;
  const VcdDump v = read_fst(fst.string());
  EXPECT_TRUE(v.signals.count("node_0_0.trn_noc_router.rx_bwd_o")) << v.text.substr(0, 2000);
  ASSERT_FALSE(v.times.empty());
  EXPECT_GE(v.times.back(), (failed_at - 1) * kCyclePs);  // recorded up to the failing edge
}

TEST(NocWave, EnvironmentRecordsANetworkBuiltWithoutAWavePath) {
  const fs::path dir = temp_dir() / "env";
  fs::remove_all(dir);
  fs::create_directories(dir);
  setenv("TRNSIM_WAVE", (dir / "env.fst").c_str(), 1);
  setenv("TRNSIM_WAVE_FROM", "5", 1);
  setenv("TRNSIM_WAVE_TO", "9", 1);
  setenv("TRNSIM_WAVE_SCOPE", "node_0_1", 1);
  run_2x2(test::torus("2x2"), 30);
  for (const char* name : {"TRNSIM_WAVE", "TRNSIM_WAVE_FROM", "TRNSIM_WAVE_TO", "TRNSIM_WAVE_SCOPE"}) unsetenv(name);
  // The first harness of the process that takes TRNSIM_WAVE writes env.fst, a later one env.N.fst.
  std::vector<fs::path> written;
  for (const auto& e : fs::directory_iterator(dir)) written.push_back(e.path());
  ASSERT_EQ(written.size(), 1u) << "expected one FST in " << dir;
  const VcdDump v = read_fst(written[0].string());
  ASSERT_FALSE(v.times.empty());
  EXPECT_EQ(v.times.front(), 5 * kCyclePs);
  EXPECT_LE(v.times.back(), 11 * kCyclePs);
  EXPECT_TRUE(v.signals.count("node_0_1.clk_i"));
  EXPECT_FALSE(v.signals.count("node_0_0.clk_i"));
}

TEST(NocWave, BadWindowsAreRefusedNamingTheValues) {
  const fs::path fst = temp_dir() / "bad_window.fst";
  NocOptions o = recorded(fst);
  o.wave_from = 50;
  o.wave_to = 10;
  try {
    NocNetwork net(o);
    FAIL() << "a window ending before it starts was accepted";
  } catch (const NocError& e) {
    EXPECT_TRUE(contains(e.what(), "--wave-from 50 is after --wave-to 10")) << e.what();
  }
  EXPECT_FALSE(fs::exists(fst));
  setenv("TRNSIM_WAVE", fst.c_str(), 1);
  setenv("TRNSIM_WAVE_TO", "-3", 1);
  try {
    NocNetwork net(test::torus("2x2"));
    FAIL() << "TRNSIM_WAVE_TO=-3 was accepted";
  } catch (const NocError& e) {
    EXPECT_TRUE(contains(e.what(), "TRNSIM_WAVE_TO='-3' is not a cycle number")) << e.what();
  }
  unsetenv("TRNSIM_WAVE");
  unsetenv("TRNSIM_WAVE_TO");
}

}  // namespace
}  // namespace trnsim
