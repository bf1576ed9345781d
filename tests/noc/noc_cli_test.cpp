// `trnsim noc` as a user runs it: the report and its last line, exit 0 on a clean run, 2 with a one-line reason for
// every kind of bad flag, --rtl picking the right router build or naming the builds, --lockstep.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/support/fst_read.h"

namespace trnsim::test {
namespace {

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// A bad flag: exit 2, one line on stderr containing `reason`, nothing simulated.
void expect_bad(const std::string& args, const std::string& reason) {
  const Result r = run("noc " + args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
  EXPECT_NE(r.err.find(reason), std::string::npos) << args << ": stderr was: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  EXPECT_EQ(r.out.find("injected="), std::string::npos) << args;
}

TEST(NocCli, CleanRunReportsAndEndsWithInjectedDelivered) {
  const Result r = run("noc --topology torus --dims 4x4 --traffic uniform --rate 0.2 --cycles 2000 --seed 7");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::smatch o, a;
  ASSERT_TRUE(std::regex_search(r.out, o, std::regex("offered: +([0-9.]+) flits/node/cycle"))) << r.out;
  ASSERT_TRUE(std::regex_search(r.out, a, std::regex("accepted: +([0-9.]+) flits/node/cycle"))) << r.out;
  EXPECT_NEAR(std::stod(o[1]), 0.2, 0.01);  // Bernoulli arrivals over 2000 cycles x 16 nodes
  EXPECT_NEAR(std::stod(a[1]), std::stod(o[1]), 0.01);  // far below saturation: all of it is accepted
  EXPECT_NE(r.out.find("latency:    mean "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" p99 "), std::string::npos) << r.out;
  std::smatch m;
  const std::string last = last_line(r.out);
  ASSERT_TRUE(std::regex_match(last, m, std::regex("injected=([0-9]+) delivered=([0-9]+)"))) << last;
  EXPECT_EQ(m[1], m[2]);
  EXPECT_GT(std::stoull(m[1]), 100u);  // 16 nodes x 2000 cycles x 0.2 / 3 flits per packet ~ 2100
}

TEST(NocCli, EveryPatternTopologyAndDimensionRuns) {
  for (const std::string args :
       {"--traffic transpose --dims 4x4 --rate 0.3", "--traffic bitcomp --dims 3x5 --rate 0.3",
        "--traffic hotspot --dims 2x2x2 --rate 0.2", "--traffic neighbor --topology mesh --dims 4x4 --rate 0.5",
        "--traffic uniform --topology mesh --dims 3x3x3 --rate 0.1 --vcs 4", "--dims 8 --rate 0.3",
        "--dims 4x4 --vcs 8 --vc-groups 2 --buf-depth 8 --link-latency 2 --packet-flits 4 --rate 0.5"}) {
    const Result r = run("noc --cycles 1000 " + args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("injected=", 0), 0u) << args << "\n" << r.out;
  }
}

TEST(NocCli, RtlPicksTheBuildAndLockstepCompares) {
  Result r = run("noc --rtl --dims 4x4 --vcs 4 --rate 0.3 --cycles 500");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("RTL (verilated router build d2v4)"), std::string::npos) << r.out;
  r = run("noc --rtl --dims 2x2x2 --rate 0.3 --cycles 500");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("build d3v4g2"), std::string::npos) << r.out;
  r = run("noc --lockstep --dims 4x4 --vcs 4 --buf-depth 8 --packet-flits 1 --rate 0.5 --cycles 500");  // 8 flits
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("RTL (d2v4b8) and TLM in lockstep"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("port values compared, all equal"), std::string::npos) << r.out;
  r = run("noc --lockstep --dims 4x4 --traffic hotspot --rate 0.3 --cycles 500");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("port values compared, all equal"), std::string::npos) << r.out;
  EXPECT_EQ(last_line(r.out).rfind("injected=", 0), 0u) << r.out;
}

// --no-assertions: the verilated routers only; the lockstep still compares every port (the same flits, the same
// cycles), the last line still counts every packet.
TEST(NocCli, NoAssertionsIsForTheVerilatedRoutersOnly) {
  expect_bad("--no-assertions", "--no-assertions turns the verilated routers' assertions off: use it with --rtl or "
                                "--lockstep");
  const Result r = run("noc --lockstep --no-assertions --dims 4x4 --vcs 4 --rate 0.3 --cycles 500");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("port values compared, all equal"), std::string::npos) << r.out;
  std::smatch m;
  const std::string last = last_line(r.out);
  ASSERT_TRUE(std::regex_match(last, m, std::regex("injected=([0-9]+) delivered=([0-9]+)"))) << last;
  EXPECT_EQ(m[1], m[2]);
}

TEST(NocCli, BadFlagsExitTwoWithTheReason) {
  expect_bad("--traffic random", "--traffic random: unknown (uniform, transpose, bitcomp, hotspot, neighbor)");
  expect_bad("--topology ring", "--topology ring: unknown (torus, mesh)");
  expect_bad("--dims 4x1", "dimension 1 has 1 routers");
  expect_bad("--dims 4x4x4x4", "4 dimensions, at most 3");
  expect_bad("--dims 4x17", "every dimension needs 2..16");
  expect_bad("--dims 4xx4", "expected sizes like 4x4");
  expect_bad("--traffic transpose --dims 3x5", "transpose needs the same size in every dimension");
  expect_bad("--rate 1.5", "--rate 1.5: outside [0, 1]");
  expect_bad("--rate -0.1", "outside [0, 1]");
  expect_bad("--vcs 3", "--vcs 3: 3 VCs in 1 group is not a multiple of 2 x groups");
  expect_bad("--buf-depth 0", "--buf-depth 0: buffer depth 0 outside 1..63");
  expect_bad("--packet-flits 0", "--packet-flits 0");
  expect_bad("--packet-flits 5-2", "MIN-MAX");
  expect_bad("--rtl --dims 2x2x2 --vcs 2", "no RTL router build for a 3-D torus with 2 VCs");
  expect_bad("--rtl --dims 4x4 --vcs 8", "built: d2v2 (2-D, 2 VCs, 1 group, depth 4)");
  expect_bad("--rtl --dims 4x4 --buf-depth 8", "and depth 8");
  expect_bad("--rtl --dims 4x4 --vcs 4 --buf-depth 6", "with 4 VCs and depth 6; built: d2v2 (2-D, 2 VCs, 1 group, "
             "depth 4), d2v4 (2-D, 4 VCs, 1 group, depth 4), d3v4g2 (3-D, 4 VCs, 2 groups, depth 4), d2v4b8 (2-D, "
             "4 VCs, 1 group, depth 8)");
  expect_bad("--rtl --dims 8", "no RTL router build for a 1-D torus");
  expect_bad("--rtl --topology mesh", "the RTL router is built for tori only");
  expect_bad("--cycles 0", "--cycles 0: outside 1..1e9");
  expect_bad("--cycles -1", "--cycles: -1 is negative");  // the number typed, not 2^64 - 1
  expect_bad("--cycles 1000000001", "--cycles 1000000001: outside 1..1e9");
  expect_bad("--traffic hotspot --hotspot-fraction 2", "--hotspot-fraction 2");
  expect_bad("--ber 0.7", "--ber 0.7: bit error rate 0.7: a probability 0..0.5");
  expect_bad("--ber -1e-3", "--ber -0.001: bit error rate");
  expect_bad("--drop 2", "--drop 2: flit drop rate 2: a probability 0..1");
  expect_bad("--fault-seed -3", "--fault-seed: -3 is negative");
  expect_bad("--threads 0", "--threads: Value 0 not in range 1 to 256");
  expect_bad("--rtl --threads 300", "--threads: Value 300 not in range 1 to 256");
}

// Faults on every link: the report counts what was injected and what the link layer did about it; the traffic is
// delivered intact (exit 0) on the TLM, the RTL and both in lockstep, with the same counts, for the same seed.
TEST(NocCli, BitErrorsAndDropsAreRecoveredAndCounted) {
  std::string link_line;
  for (const std::string backend :
       {"", " --rtl", " --lockstep", " --threads 2", " --rtl --threads 3", " --lockstep --threads 2"}) {
    const Result r = run("noc --dims 4x4 --rate 0.2 --cycles 800 --ber 1e-3 --drop 1e-3 --fault-seed 9" + backend);
    ASSERT_EQ(r.exit_code, 0) << backend << "\n" << r.out << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\nlink: +([0-9]+) flits sent, ([0-9]+) of them replays "
                                                       "\\(([0-9.]+) % first copies\\); ([0-9]+) CRC errors, "
                                                       "([0-9]+) backward errors, ([0-9]+) replays\n")))
        << r.out;
    EXPECT_GT(std::stoull(m[2]), 0u) << m[0];
    EXPECT_GT(std::stoull(m[4]), 0u) << m[0];
    EXPECT_GT(std::stoull(m[6]), 0u) << m[0];
    if (link_line.empty()) link_line = m[0];
    EXPECT_EQ(m[0], link_line) << backend << ": other counts than the TLM's";
    EXPECT_TRUE(std::regex_search(r.out, std::regex("\nfaults: +BER 0.001, drop 0.001, seed 9: [1-9][0-9]* beats "
                                                    "corrupted, [1-9][0-9]* flits dropped\n")))
        << r.out;
    EXPECT_NE(r.out.find(" 0 duplicated, 0 corrupted, 0 out of order"), std::string::npos) << r.out;
    // Several host threads: the speed figures are by the wall clock, and the line says how many threads ran.
    if (backend.find("--threads") != std::string::npos) {
      EXPECT_TRUE(std::regex_search(r.out, std::regex("checking [0-9.]+ s wall = [0-9]+ cycles/s \\([23] host "
                                                      "threads evaluate the routers\\)\n")))
          << r.out;
    }
  }
  const Result clean = run("noc --dims 4x4 --rate 0.2 --cycles 800");
  EXPECT_NE(clean.out.find(" of them replays (100.00 % first copies); 0 CRC errors, 0 backward errors, 0 replays"),
            std::string::npos)
      << clean.out;
  EXPECT_EQ(clean.out.find("faults:"), std::string::npos) << clean.out;
}

// A link that keeps failing goes down: exit 1 with the router and port named, not a hang or a watchdog timeout.
TEST(NocCli, ALinkThatKeepsFailingEndsTheRunWithLinkDown) {
  for (const std::string backend : {"", " --rtl"}) {
    const Result r = run("noc --dims 2x2 --rate 0.2 --cycles 5000 --ber 0.5" + backend);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex("FAIL: cycle [0-9]+: link down: router \\([01],[01]\\) "
                                                    "port [-+][xy] \\(link to router")))
        << r.err;
    EXPECT_EQ(r.err.find("watchdog"), std::string::npos) << r.err;
  }
}

// 0 or a negative count is an error, not "use the default"; each message names the one flag that is wrong, and a
// mesh is not told about datelines.
TEST(NocCli, VcFlagsAreCheckedOneByOne) {
  expect_bad("--vcs 0", "--vcs 0: outside 2..8 VCs per port");
  expect_bad("--vcs -1", "--vcs -1: outside 2..8 VCs per port");
  expect_bad("--vcs 64", "--vcs 64: outside 2..8");
  expect_bad("--vc-groups 0", "--vc-groups 0: outside 1..4 message-class groups");
  expect_bad("--vc-groups -5", "--vc-groups -5: outside 1..4");
  expect_bad("--vc-groups 2", "--vc-groups 2: 2 VCs in 2 groups is not a multiple of 2 x groups");
  expect_bad("--vcs 6 --vc-groups 2", "--vcs 6 with --vc-groups 2: 6 VCs in 2 groups");
  expect_bad("--vcs 1", "the dateline classes that keep a torus ring deadlock-free");
  expect_bad("--topology mesh --vcs 1", "--vcs 1: 1 VCs in 1 group is not a multiple of 2 x groups; every group "
                                        "has two VC classes (a mesh needs no dateline, but the router keeps");
  for (const std::string args : {"--buf-depth 0", "--buf-depth 64", "--link-latency 33", "--link-latency -1"}) {
    const Result r = run("noc " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find("trnsim: error: " + args + ": "), 0u) << args << ": " << r.err;  // that flag and no other
  }
  const Result r = run("noc --topology mesh --dims 3x3 --vcs 4 --vc-groups 2 --cycles 300 --rate 0.2");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("3x3 mesh, 4 VCs (2 groups)"), std::string::npos) << r.out;
}

// A pattern that sends nothing on these dims is an error, not a clean run of 0 packets; a flag that belongs to
// another pattern is an error, not ignored.
TEST(NocCli, PatternsMustApply) {
  expect_bad("--traffic transpose --dims 2", "--traffic transpose with --dims 2: a 1-D ring has no transpose");
  expect_bad("--traffic transpose --dims 8", "a 1-D ring has no transpose");
  expect_bad("--hotspot-fraction 0.5", "--hotspot-fraction does not apply to --traffic uniform");
  expect_bad("--traffic neighbor --hotspot-fraction 0.5", "does not apply to --traffic neighbor");
  // Every other pattern sends packets on a 1-D ring.
  for (const std::string t : {"uniform", "bitcomp", "hotspot", "neighbor"}) {
    const Result r = run("noc --dims 4 --rate 0.3 --cycles 300 --traffic " + t);
    EXPECT_EQ(r.exit_code, 0) << t << "\n" << r.out << r.err;
    std::smatch m;
    const std::string last = last_line(r.out);
    ASSERT_TRUE(std::regex_match(last, m, std::regex("injected=([0-9]+) delivered=([0-9]+)"))) << t << last;
    EXPECT_GT(std::stoull(m[1]), 10u) << t;  // 4 nodes x 300 cycles x 0.3 / 3 flits ~ 120 packets
  }
}

// --lockstep includes --rtl: both together run the lockstep.
TEST(NocCli, RtlWithLockstepRunsTheLockstep) {
  const Result r = run("noc --rtl --lockstep --dims 4x4 --rate 0.3 --cycles 300");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("RTL (d2v2) and TLM in lockstep"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("port values compared, all equal"), std::string::npos) << r.out;
}

// Exit 1 when packets are not delivered: a run whose drain limit is too short to empty the source queues. The
// last line counts the packets that entered the network (not those still queued at their source), and nothing is
// called lost: the report says how many were still queued and how many in the network.
TEST(NocCli, UndeliveredPacketsExitOne) {
  const Result r = run("noc --rate 1 --cycles 1000 --drain-cycles 5 --packet-flits 15 --traffic hotspot "
                       "--hotspot-fraction 1");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("FAIL: drain limit"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("lost"), std::string::npos) << r.out;
  std::smatch p, n, m;
  ASSERT_TRUE(std::regex_search(r.out, p, std::regex("packets: +([0-9]+) created, ([0-9]+) injected, ([0-9]+) "
                                                     "delivered, 0 duplicated, 0 corrupted, 0 out of order\n")))
      << r.out;
  ASSERT_TRUE(std::regex_search(r.out, n, std::regex("not drained: ([0-9]+) queued at sources, ([0-9]+) in the "
                                                     "network\n")))
      << r.out;
  const std::string last = last_line(r.out);
  ASSERT_TRUE(std::regex_match(last, m, std::regex("injected=([0-9]+) delivered=([0-9]+)"))) << last;
  const uint64_t created = std::stoull(p[1]), injected = std::stoull(p[2]), delivered = std::stoull(p[3]);
  EXPECT_EQ(std::stoull(m[1]), injected);
  EXPECT_EQ(std::stoull(m[2]), delivered);
  EXPECT_EQ(std::stoull(n[1]), created - injected);
  EXPECT_EQ(std::stoull(n[2]), injected - delivered);
  // 15 sources x ~1000 cycles / 15 flits per packet ~ 1000 packets created, all to router 0, whose one ejection port
  // takes a flit per cycle: at most ~1005 / 15 = 67 of them are delivered, plus at most 67 of router 0's own
  // (which go elsewhere); most of the rest wait at their sources.
  EXPECT_GT(created - injected, created / 2);
  EXPECT_GT(injected, delivered);
  EXPECT_LE(delivered, 2 * 67u);
  // The same flags with a long enough drain: no "not drained", injected = delivered = created, exit 0.
  const Result ok = run("noc --rate 0.2 --cycles 300 --packet-flits 15 --traffic hotspot --hotspot-fraction 1");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_EQ(ok.out.find("not drained"), std::string::npos) << ok.out;
  ASSERT_TRUE(std::regex_search(ok.out, p, std::regex("packets: +([0-9]+) created, ([0-9]+) injected, ([0-9]+) "
                                                      "delivered")))
      << ok.out;
  EXPECT_EQ(p[1], p[2]);
  EXPECT_EQ(p[2], p[3]);
  EXPECT_EQ(last_line(ok.out), "injected=" + std::string(p[2]) + " delivered=" + std::string(p[3]));
}

// --wave and its window: only with the verilated routers, FST only, each window flag only with --wave, a window that
// ends before it starts and a scope naming no router are exit 2 naming the flag, before any file is written.
TEST(NocCli, WaveFlagsAreChecked) {
  const std::string fst = scratch(".fst");
  std::remove(fst.c_str());
  expect_bad("--wave " + fst, "--wave records the verilated routers' signals: use it with --rtl or --lockstep");
  expect_bad("--rtl --wave " + scratch(".vcd"), ".vcd: waveforms are written as FST; give a file name ending in .fst");
  expect_bad("--rtl --wave-from 5", "--wave-from chooses what --wave FILE.fst records: give --wave too");
  expect_bad("--rtl --wave-to 9", "--wave-to chooses what --wave FILE.fst records");
  expect_bad("--lockstep --wave-scope node_0_0", "--wave-scope chooses what --wave FILE.fst records");
  expect_bad("--rtl --wave " + fst + " --wave-from 50 --wave-to 10", "--wave-from 50 is after --wave-to 10");
  expect_bad("--rtl --wave " + fst + " --wave-from -1", "--wave-from");
  expect_bad("--rtl --dims 2x2 --wave " + fst + " --wave-scope node_2_0",
             "--wave-scope 'node_2_0': no router 'node_2_0' in the 2x2 torus; its routers are node_0_0 .. node_1_1");
  expect_bad("--rtl --wave " + fst + " --wave-scope 'node_*'", "wildcards are not supported");
  expect_bad("--rtl --dims 2x2 --wave /nonexistent/x.fst", "--wave /nonexistent/x.fst: cannot open waveform file");
  EXPECT_FALSE(std::ifstream(fst).good()) << "a refused run wrote " << fst;
  const Result help = run("noc --help");
  for (const char* flag : {"--wave ", "--wave-from", "--wave-to", "--wave-scope"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag << "\n" << help.out;
  }
}

// Waveform problems found when the network is built or has run: a scope inside a router that matches no signal and
// an unusable TRNSIM_WAVE are exit 2 naming them with no file written; a window after the run warns naming its last
// cycle (exit 0).
TEST(NocCli, WaveScopeTyposTrnsimWaveAndLateWindowsAreReported) {
  const std::string fst = scratch(".fst");
  std::remove(fst.c_str());
  expect_bad("--rtl --dims 2x2 --cycles 20 --wave " + fst + " --wave-scope node_1_1.bogus",
             "--wave-scope node_1_1.bogus: matched no signal of the 2x2 router network");
  expect_bad("--rtl --dims 2x2 --cycles 20 --wave " + fst + " --wave-scope 'node_1_1.trn_noc_router.g_in[7]'",
             "--wave-scope node_1_1.trn_noc_router.g_in[7]: matched no signal");
  EXPECT_FALSE(std::ifstream(fst).good()) << "a refused scope left " << fst;
  const std::string vcd = scratch(".vcd");
  std::remove(vcd.c_str());
  const Result env = run("noc --rtl --dims 2x2 --cycles 20", "TRNSIM_WAVE=" + vcd + " ");
  EXPECT_EQ(env.exit_code, 2) << env.out << env.err;
  EXPECT_NE(env.err.find("TRNSIM_WAVE=" + vcd + ": trnsim writes waveforms as FST"), std::string::npos) << env.err;
  EXPECT_FALSE(std::ifstream(vcd).good()) << "TRNSIM_WAVE wrote " << vcd;
  const Result late = run("noc --rtl --dims 2x2 --rate 0.3 --cycles 100 --wave " + fst +
                          " --wave-from 100000 --wave-to 200000");
  EXPECT_EQ(late.exit_code, 0) << late.out << late.err;
  EXPECT_NE(late.err.find("trnsim: warning: --wave-from 100000 is after the last cycle of the run ("),
            std::string::npos) << late.err;
  EXPECT_NE(late.err.find("): " + fst + " holds no window"), std::string::npos) << late.err;
}

// A recorded run: the window's cycles only, one router only, and the report names the file.
TEST(NocCli, WaveRecordsTheWindowAndScopeAsked) {
  const std::string fst = scratch(".fst");
  std::remove(fst.c_str());
  const Result r = run("noc --rtl --dims 2x2 --rate 0.3 --cycles 200 --wave " + fst +
                       " --wave-from 20 --wave-to 40 --wave-scope node_1_0");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("waveform:   " + fst + " (open with: scripts/wave " + fst + ")"), std::string::npos) << r.out;
  EXPECT_EQ(last_line(r.out).rfind("injected=", 0), 0u) << r.out;
  const VcdDump v = read_fst(fst);
  ASSERT_FALSE(v.times.empty()) << v.text.substr(0, 2000);
  EXPECT_EQ(v.times.front(), 20000u);  // 1000 ps a cycle (cosim/noc/noc_rtl.cpp)
  EXPECT_LE(v.times.back(), 41500u);
  EXPECT_GE(v.times.size(), 42u);
  EXPECT_TRUE(v.signals.count("node_1_0.clk_i"));
  for (const std::string& s : v.signals) EXPECT_EQ(s.rfind("node_1_0.", 0), 0u) << "outside the scope: " << s;
}

// An RTL run that fails (here: not drained, exit 1) prints one command that re-runs it with a waveform of the
// cycles around the failure; that command runs, fails the same way, and its file is closed (readable) on that exit
// 1 path and holds exactly the window.
TEST(NocCli, AFailingRtlRunPrintsARunnableReRunCommand) {
  const std::string flags = "noc --dims 2x2 --traffic uniform --rate 0.9 --cycles 150 --seed 3 --drain-cycles 0";
  const Result r = run(flags + " --rtl");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("\\[ fail-at  \\] block=noc 2x2 cycle=([0-9]+) wave-from=([0-9]+) "
                                                     "wave-to=([0-9]+)\n")))
      << r.err;
  const uint64_t cycle = std::stoull(m[1]), from = std::stoull(m[2]), to = std::stoull(m[3]);
  EXPECT_EQ(from, cycle - 50);
  EXPECT_EQ(to, cycle + 10);
  EXPECT_NE(r.err.find("trnsim noc: FAIL: drain limit: 0 cycles after injection stopped"), std::string::npos) << r.err;
  const std::string intro = "\n  re-run with a waveform around it: trnsim ";
  const std::string expected = flags + " --rtl --wave noc-fail.fst --wave-from " + std::to_string(from) +
                               " --wave-to " + std::to_string(to) + "\n";
  ASSERT_NE(r.err.find(intro + expected), std::string::npos) << r.err;

  const std::string dir = scratch(".rerun");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const Result again = run(expected.substr(0, expected.size() - 1), "cd '" + dir + "' && ");
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_NE(again.out.find("waveform:   noc-fail.fst"), std::string::npos) << again.out;
  const VcdDump v = read_fst(dir + "/noc-fail.fst");
  ASSERT_FALSE(v.times.empty()) << v.text.substr(0, 2000);
  EXPECT_EQ(v.times.front(), from * 1000);
  EXPECT_LE(v.times.back(), cycle * 1000 + 1000);  // the run ends at `cycle`, before the end of the window
  EXPECT_TRUE(v.signals.count("node_0_0.trn_noc_router.inj_valid_i"));
}

// scripts/noc-sweep's booksim step (NOC_STEPS=booksim): BookSim2 itself is never part of the tree, so a stand-in
// takes its place here. It checks that the step writes BookSim2's configuration for the torus asked for, runs the
// rounds interleaved with trnsim's TLM and RTL (each program twice per round, the fastest kept), and tabulates each
// round's rates and ratios; and that a missing BookSim2, a torus BookSim2 cannot build or a bad knob is exit 2 naming
// the knob.
TEST(NocSweepScript, BooksimStepTabulatesEachRoundAgainstTheGivenBinary) {
  const std::string dir = scratch(".sweep");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fake = dir + "/booksim";
  // Reads its one argument (the configuration) and spends some CPU time, as BookSim2 would: little on its odd calls,
  // 50 times as much on its even ones (a counter file beside it), so that with two runs per round the fastest is
  // the first run of each round, not the last.
  std::ofstream(fake) << "#!/bin/bash\ntest -r \"$1\" || exit 3\nc=$(cat \"$0.calls\" 2>/dev/null || echo 0)\n"
                         "c=$((c + 1)); echo $c > \"$0.calls\"\nk=20000; [ $((c % 2)) = 0 ] && k=1000000\n"
                         "n=0; for i in $(seq $k); do n=$((n + i)); done\necho \"Total run time $n\"\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const std::string env = "NOC_STEPS=booksim NOC_BOOKSIM='" + fake + "' NOC_BOOKSIM_ROUNDS=2 NOC_BOOKSIM_DIMS=4x4 " +
                          "NOC_BOOKSIM_VCS=4 NOC_BOOKSIM_CYCLES=300 NOC_BOOKSIM_RATE=0.2 NOC_BOOKSIM_THREADS='1 2' " +
                          "NOC_BOOKSIM_REPEATS=2 ";
  const Result r = run_command(env + "bash " + NOC_SWEEP_SCRIPT + " " + TRNSIM_BIN + " '" + dir + "/out'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string cfg = slurp(dir + "/out/booksim.cfg");
  for (const char* line : {"topology = torus;", "k = 4;", "n = 2;", "routing_function = dim_order;", "num_vcs = 4;",
                           "vc_buf_size = 4;", "packet_size = 1;", "injection_rate = 0.2;", "sample_period = 300;"}) {
    EXPECT_NE(cfg.find(line), std::string::npos) << line << "\n" << cfg;
  }
  // One row per round: BookSim2's rate, then trnsim's four rates on one host thread and four on two, each with its
  // ratio to BookSim2's. (Which rate is higher is not checked: the network alone is timed by the monotonic clock,
  // the run with traffic by CPU time, so on a loaded machine either may be.)
  std::string pattern = "\\| ([12]) \\| ([0-9]+) \\|";
  for (int i = 0; i < 8; ++i) pattern += " ([0-9]+) \\(([0-9.]+)x\\) \\|";
  const std::regex row(pattern + "\n");
  EXPECT_NE(r.out.find("| RTL with traffic | TLM network, 2 threads | TLM with traffic, 2 threads | RTL network, 2 "
                       "threads | RTL with traffic, 2 threads |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("each program's fastest of 2 run(s) per"), std::string::npos) << r.out;
  int rows = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), row); it != std::sregex_iterator(); ++it, ++rows) {
    const std::smatch& m = *it;
    EXPECT_EQ(std::stoi(m[1]), rows + 1);
    const double booksim = std::stod(m[2]);
    ASSERT_GT(booksim, 0) << r.out;
    // 300 cycles over the quick run's CPU time (about 0.04 s), not the slow one's (about 2 s: 150 cycles/s).
    EXPECT_GT(booksim, 1500) << "the round did not keep BookSim2's fastest run\n" << r.out;
    for (int k = 3; k <= 17; k += 2) {
      const double rate = std::stod(m[size_t(k)]);
      EXPECT_GT(rate, 0) << m.str();
      EXPECT_NEAR(std::stod(m[size_t(k + 1)]), rate / booksim, 0.006 + 0.003 * rate / booksim) << m.str();
    }
  }
  EXPECT_EQ(rows, 2) << r.out;
  const Result bad = run_command("NOC_STEPS=booksim NOC_BOOKSIM='" + fake + "' NOC_BOOKSIM_THREADS='1 two' bash " +
                                 NOC_SWEEP_SCRIPT + " " + TRNSIM_BIN + " '" + dir + "/out4'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("NOC_BOOKSIM_THREADS='1 two': expected host thread counts"), std::string::npos) << bad.err;

  const Result zero = run_command("NOC_STEPS=booksim NOC_BOOKSIM='" + fake + "' NOC_BOOKSIM_REPEATS=0 bash " +
                                  NOC_SWEEP_SCRIPT + " " + TRNSIM_BIN + " '" + dir + "/out5'");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("NOC_BOOKSIM_REPEATS='0': expected a count of runs per round, >= 1"), std::string::npos)
      << zero.err;

  const Result missing = run_command("NOC_STEPS=booksim NOC_BOOKSIM='" + dir + "/nothing' bash " + NOC_SWEEP_SCRIPT +
                                     " " + TRNSIM_BIN + " '" + dir + "/out2'");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("NOC_BOOKSIM='" + dir + "/nothing' is not an executable booksim binary"),
            std::string::npos)
      << missing.err;
  const Result ragged = run_command("NOC_STEPS=booksim NOC_BOOKSIM='" + fake + "' NOC_BOOKSIM_DIMS=4x8 bash " +
                                    NOC_SWEEP_SCRIPT + " " + TRNSIM_BIN + " '" + dir + "/out3'");
  EXPECT_EQ(ragged.exit_code, 2);
  EXPECT_NE(ragged.err.find("NOC_BOOKSIM_DIMS=4x8: BookSim2's torus is a k-ary n-cube"), std::string::npos)
      << ragged.err;
}

}  // namespace
}  // namespace trnsim::test
