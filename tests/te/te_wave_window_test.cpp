// Tensor Engine RTL waveform windows (docs/verification.md, "Waveform debugging"): --wave-from/--wave-to record only
// the cycles asked for, --wave-scope only the hierarchy asked for, a run that fails still leaves an FST that reads
// back, the TRNSIM_WAVE environment hook records any engine, and bad windows are refused with a clear message.
// Every file is read back with GTKWave's fst2vcd.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl.h"
#include "tests/support/fst_read.h"

namespace trnsim {
namespace {

namespace fs = std::filesystem;
using cosim::TeCommand;
using cosim::TeRtl;
using cosim::TeRtlError;
using cosim::TeRtlOptions;

constexpr uint64_t kCyclePs = 416;  // cosim/te/te_rtl.cpp: 208 ps per clock edge
constexpr uint64_t kResetCycles = 4;

using test::read_fst;
using test::VcdDump;

fs::path temp_dir() {
  const fs::path dir = fs::path(::testing::TempDir()) / "trnsim_te_wave_window";
  fs::create_directories(dir);
  return dir;
}

std::vector<uint16_t> ones(size_t n) { return std::vector<uint16_t>(n, 0x3F80); }  // BF16 1.0

TEST(TeWaveWindow, FromAndToRecordOnlyThoseCycles) {
  const fs::path fst = temp_dir() / "window.fst";
  fs::remove(fst);
  {
    TeRtlOptions opts;
    opts.wave_path = fst.string();
    opts.wave_from = 20;
    opts.wave_to = 40;
    auto te = TeRtl::create(4, 4, opts);
    te->matmul(isa::Dtype::kBf16, 4, 4, 64, ones(16), ones(4 * 64));  // ~75 cycles, longer than the window
    ASSERT_GT(te->cycle(), 60u);
  }
  const VcdDump v = read_fst(fst.string());
  ASSERT_FALSE(v.times.empty()) << "no value changes in " << fst;
  const uint64_t first = (kResetCycles + 20) * kCyclePs, last = (kResetCycles + 40) * kCyclePs + kCyclePs / 2;
  EXPECT_EQ(v.times.front(), first);
  // FST may end with one last timestamp (the end of the file); every value change is inside the window.
  for (const uint64_t t : v.times) EXPECT_TRUE(t >= first && t <= last + kCyclePs) << "time " << t << " ps";
  EXPECT_GE(v.times.size(), 40u);  // two edges a cycle over 21 cycles
  EXPECT_TRUE(v.signals.count("TOP.trn_te.out_data_o"));
}

TEST(TeWaveWindow, ScopeRecordsOnlyThatHierarchy) {
  const fs::path fst = temp_dir() / "scope.fst";
  fs::remove(fst);
  {
    TeRtlOptions opts;
    opts.wave_path = fst.string();
    opts.wave_scope = "trn_te.u_array.g_row[1]";
    auto te = TeRtl::create(4, 4, opts);
    te->matmul(isa::Dtype::kBf16, 4, 4, 8, ones(16), ones(32));
  }
  const VcdDump v = read_fst(fst.string());
  ASSERT_FALSE(v.signals.empty()) << "the scope matched no signal";
  EXPECT_TRUE(v.signals.count("TOP.clk_i")) << "the clock is always recorded";
  for (const std::string& s : v.signals) {
    if (s == "TOP.clk_i") continue;
    EXPECT_EQ(s.rfind("TOP.trn_te.u_array.g_row[1].", 0), 0u) << "outside the scope: " << s;
  }
  EXPECT_FALSE(v.signals.count("TOP.trn_te.out_data_o"));
}

// A scope outside the engine's hierarchy, or with a wildcard, is refused up front; so is one inside it that matches
// no signal (a row past the array, a typo): refused naming the scope, before the run, with no file left behind.
TEST(TeWaveWindow, ScopesOutsideTheHierarchyAreRefused) {
  const fs::path fst = temp_dir() / "bad_scope.fst";
  // The TeRtlError message of creating a 4x4 engine recording `scope`; fails the test if it was accepted.
  const auto refusal = [&](const char* scope) -> std::string {
    fs::remove(fst);
    TeRtlOptions opts;
    opts.wave_path = fst.string();
    opts.wave_scope = scope;
    try {
      TeRtl::create(4, 4, opts);
    } catch (const TeRtlError& e) {
      return e.what();
    }
    ADD_FAILURE() << "--wave-scope " << scope << " was accepted";
    return {};
  };
  for (const char* scope : {"nosuch", "*", "trn_te.*", "trn_te, bogus"}) {
    const std::string what = refusal(scope);
    EXPECT_NE(what.find("--wave-scope '"), std::string::npos) << what;
  }
  for (const char* scope : {"trn_te.u_array.g_row[9]", "trn_te.bogus", "trn_te.u_array.g_row[1], trn_te.bogus"}) {
    const std::string what = refusal(scope);
    const std::string bad = std::string(scope).substr(std::string(scope).rfind(' ') + 1);
    EXPECT_NE(what.find("--wave-scope " + bad + ": matched no signal of the 4x4 Tensor Engine"), std::string::npos)
        << what;
    EXPECT_FALSE(fs::exists(fst)) << scope << ": a refused scope left " << fst;
  }
}

// A window that starts after the last simulated cycle records nothing: a warning names that cycle.
TEST(TeWaveWindow, AWindowAfterTheRunWarnsNamingTheLastCycle) {
  const fs::path fst = temp_dir() / "late.fst";
  fs::remove(fst);
  uint64_t last = 0;
  ::testing::internal::CaptureStderr();
  {
    TeRtlOptions opts;
    opts.wave_path = fst.string();
    opts.wave_from = 1000000;
    opts.wave_to = 2000000;
    auto te = TeRtl::create(4, 4, opts);
    te->matmul(isa::Dtype::kBf16, 4, 4, 8, ones(16), ones(32));
    last = te->cycle();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_GT(last, 10u);
  EXPECT_NE(err.find("warning: --wave-from 1000000 is after the last cycle of the run (" + std::to_string(last) +
                     "): " + fst.string() + " holds no window"),
            std::string::npos) << err;
  ::testing::internal::CaptureStderr();
  {
    TeRtlOptions opts;
    opts.wave_path = fst.string();
    opts.wave_from = 2;
    auto te = TeRtl::create(4, 4, opts);
    te->matmul(isa::Dtype::kBf16, 4, 4, 8, ones(16), ones(32));
  }
  const std::string quiet = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(quiet.find("warning"), std::string::npos) << quiet;
}

TEST(TeWaveWindow, FailingRunLeavesAReadableFstAndNamesTheWindow) {
  const fs::path fst = temp_dir() / "failing.fst";
  fs::remove(fst);
  std::string message;
  {
    TeRtlOptions opts;
    opts.wave_path = fst.string();
    opts.break_hold_rule = true;  // withdraws a stationary beat that was not taken: a_stat_hold fires
    auto te = TeRtl::create(8, 4, opts);
    try {
      te->run({{TeCommand::Op::kLoadStationary, 0, 8, ones(32)}});
    } catch (const TeRtlError& e) {
      message = e.what();
    }
  }  // the engine is destroyed after the failure: the file is closed here
  ASSERT_FALSE(message.empty()) << "the broken hold rule was not caught";
  EXPECT_NE(message.find("assertion"), std::string::npos) << message;
  EXPECT_NE(message.find("--wave-from 0 --wave-to"), std::string::npos) << message;
  EXPECT_NE(message.find("Tensor Engine 8x4"), std::string::npos) << message;
  const VcdDump v = read_fst(fst.string());
  EXPECT_TRUE(v.signals.count("TOP.trn_te.stat_valid_i"));
  EXPECT_GT(v.times.size(), 4u);
}

TEST(TeWaveWindow, EnvironmentRecordsAnEngineCreatedWithoutAWavePath) {
  const fs::path dir = temp_dir() / "env";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path fst = dir / "env.fst";
  setenv("TRNSIM_WAVE", fst.c_str(), 1);
  setenv("TRNSIM_WAVE_FROM", "3", 1);
  setenv("TRNSIM_WAVE_TO", "9", 1);
  {
    auto te = TeRtl::create(4, 4);
    te->matmul(isa::Dtype::kBf16, 4, 4, 16, ones(16), ones(64));
  }
  unsetenv("TRNSIM_WAVE");
  unsetenv("TRNSIM_WAVE_FROM");
  unsetenv("TRNSIM_WAVE_TO");
  // The first engine of the process that takes TRNSIM_WAVE writes env.fst, a later one env.N.fst.
  std::vector<fs::path> written;
  for (const auto& e : fs::directory_iterator(dir)) written.push_back(e.path());
  ASSERT_EQ(written.size(), 1u) << "expected one FST in " << dir;
  const VcdDump v = read_fst(written[0].string());
  ASSERT_FALSE(v.times.empty());
  EXPECT_EQ(v.times.front(), (kResetCycles + 3) * kCyclePs);
  EXPECT_LE(v.times.back(), (kResetCycles + 11) * kCyclePs);
}

TEST(TeWaveWindow, BadWindowsAreRefusedNamingTheValues) {
  TeRtlOptions opts;
  opts.wave_path = (temp_dir() / "bad.fst").string();
  opts.wave_from = 50;
  opts.wave_to = 10;
  try {
    TeRtl::create(4, 4, opts);
    FAIL() << "a window ending before it starts was accepted";
  } catch (const TeRtlError& e) {
    EXPECT_NE(std::string(e.what()).find("--wave-from 50 is after --wave-to 10"), std::string::npos) << e.what();
  }
  setenv("TRNSIM_WAVE", (temp_dir() / "bad_env.fst").c_str(), 1);
  setenv("TRNSIM_WAVE_FROM", "12x", 1);
  try {
    TeRtl::create(4, 4);
    FAIL() << "TRNSIM_WAVE_FROM=12x was accepted";
  } catch (const TeRtlError& e) {
    EXPECT_NE(std::string(e.what()).find("TRNSIM_WAVE_FROM='12x' is not a cycle number"), std::string::npos)
        << e.what();
  }
  unsetenv("TRNSIM_WAVE");
  unsetenv("TRNSIM_WAVE_FROM");
}

}  // namespace
}  // namespace trnsim
