// `trnsim serve`, `trnsim run|matmul --connect` and `trnsim attach` as a user runs them (BRIEF section 4): the
// served device gives the same report as the one in process, attach looks beside the driver, and every failure
// (nothing listening, a server that dies mid-run, flags the server owns, bad names) is one line and exit 2.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/cli/cli_runner.h"
#include "tests/cli/npy_files.h"
#include "tests/support/child_process.h"

namespace trnsim::test {
namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

/// A socket directory short enough for sun_path (the build tree may not be).
class SocketDir {
 public:
  SocketDir() {
    char t[] = "/tmp/trnsim-serve-XXXXXX";
    path_ = ::mkdtemp(t);
  }
  ~SocketDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string sock(const std::string& name = "dev.sock") const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// `trnsim serve --socket PATH ARGS` in the background (tests/support/child_process.h).
class Server : public ServeProcess {
 public:
  explicit Server(const std::string& path, const std::string& args = "--te tlm")
      : ServeProcess(TRNSIM_BIN, path, args, next_scratch(".serve.out"), next_scratch(".serve.err")) {}
};

/// The report without the figures of the host (wall time, memory): what must be equal across backends.
json device_figures(const std::string& path) {
  json j = json::parse(slurp(path));
  for (const char* host : {"wall_s", "macs_per_host_s", "peak_rss_gib", "collective_wall_s"}) j.erase(host);
  return j;
}

std::string without_host_lines(const std::string& text) {
  std::string kept;
  for (const std::string& l : lines_of(text)) {
    if (l.find("host wall time") == std::string::npos && l.find("host peak memory") == std::string::npos &&
        l.find("  report ") != 0) {
      kept += l + "\n";
    }
  }
  return kept;
}

/// `run WORKLOAD` in process (with `local_flags`) and `--connect socket`: both PASS with the same report, JSON and
/// text, but for the host's figures (and a collective's "fabric", which says "served" for the served system).
void expect_same_report(const std::string& local_flags, const std::string& socket, const std::string& workload) {
  const std::string a = next_scratch(".json"), b = next_scratch(".json");
  const Result local = run("run " + local_flags + " --workload " + workload + " --report " + a);
  const Result remote = run("run --connect " + socket + " --workload " + workload + " --report " + b);
  ASSERT_EQ(local.exit_code, 0) << local.out << local.err;
  ASSERT_EQ(remote.exit_code, 0) << remote.out << remote.err;
  EXPECT_EQ(last_line(remote.out).rfind("PASS", 0), 0u) << remote.out;
  json fa = device_figures(a), fb = device_figures(b);
  if (fb.contains("fabric")) {
    EXPECT_EQ(fb["fabric"], "served");
    fa.erase("fabric");
    fb.erase("fabric");
  }
  EXPECT_EQ(fa, fb) << workload;
  EXPECT_EQ(without_host_lines(local.out), without_host_lines(remote.out)) << workload;
}

TEST(ServeCli, ConnectPrintsTheSameReportAsInProcess) {
  SocketDir dir;
  Server server(dir.sock());
  for (const std::string workload : {"gemm -m 40 -k 50 -n 70 --dtype fp8e4m3", "layernorm --seq 24 --d-model 40"}) {
    expect_same_report("--te tlm", server.path(), workload);
  }
  // A second client of the same server: the device is reset on connect, so the figures repeat to the cycle.
  const std::string c = next_scratch(".json"), d = next_scratch(".json");
  ASSERT_EQ(
      run("run --connect " + server.path() + " --workload layernorm --seq 24 --d-model 40 --report " + c).exit_code, 0);
  ASSERT_EQ(
      run("run --connect " + server.path() + " --workload layernorm --seq 24 --d-model 40 --report " + d).exit_code, 0);
  EXPECT_EQ(device_figures(c), device_figures(d));
}

TEST(ServeCli, AMultiChipSystemIsServedOneSocketPerChipWithTheSameCollectiveReport) {
  SocketDir dir;
  Server server(dir.sock("sys"), "--config trn2-16");
  const std::string out = server.proc().out();
  EXPECT_NE(out.find("listening on " + server.path() + ".0 .. " + server.path() + ".15 (16 chips"), std::string::npos)
      << out;
  for (const std::string workload : {"allreduce --bytes 96K", "reducescatter --bytes 32K --dtype fp32 --algo rhd"}) {
    expect_same_report("--config trn2-16", server.path(), workload);
  }
  // attach beside a chip names it and counts what its collective engine did (one collective per run above).
  const Result seen = run("attach " + server.path() + ".5");
  EXPECT_EQ(seen.exit_code, 0) << seen.err;
  EXPECT_NE(seen.out.find("CHIP_ID           5 of 16 (4x4 torus), 1 collectives"), std::string::npos) << seen.out;
  // A chip's own socket is a device like any other: a single-chip workload runs on chip 3 alone.
  const Result one = run("run --connect " + server.path() + ".3 --workload gemm -m 16 -k 16 -n 16");
  EXPECT_EQ(one.exit_code, 0) << one.out << one.err;
}

TEST(ServeCli, MatmulOverConnectWritesTheSameBits) {
  SocketDir dir;
  Server server(dir.sock());
  std::vector<uint32_t> s(20 * 12), m(20 * 9);
  for (size_t i = 0; i < s.size(); ++i) s[i] = 0x3F800000u + uint32_t(i * 0x1357);  // 1.0 and a spread above it
  for (size_t i = 0; i < m.size(); ++i) m[i] = 0xBF000000u + uint32_t(i * 0x2468);
  const std::string sp = write_npy(s, 20, 12), mp = write_npy(m, 20, 9);
  const std::string o1 = next_scratch(".npy"), o2 = next_scratch(".npy");
  const std::string args = "matmul --stationary " + sp + " --moving " + mp + " --dtype bf16 --out ";
  const Result local = run(args + o1 + " --te tlm");
  const Result remote = run(args + o2 + " --connect " + server.path());
  ASSERT_EQ(local.exit_code, 0) << local.err;
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(read_npy_f32(o1, 12 * 9), read_npy_f32(o2, 12 * 9));
}

TEST(ServeCli, AttachShowsStateReadsWritesAndDumpsBesideTheDriver) {
  SocketDir dir;
  Server server(dir.sock());
  // memset 2.5 into 16 partitions x 8 FP32 at SBUF offset 0x40 (docs/isa.md: memset out = value).
  const std::string prog = next_scratch(".s");
  std::ofstream(prog) << ".queue vec\nmemset value=2.5 partitions=16 free=[8] out=sbuf:0:0x40\nhalt\n";
  ASSERT_EQ(run("run --program " + prog + " --connect " + server.path()).exit_code, 0);
  const std::string npy = next_scratch(".npy");
  const Result dump = run("attach " + server.path() + " --dump sbuf:5:0x40 --count 8 --dtype fp32 --out " + npy);
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_EQ(read_npy_f32(npy, 8), std::vector<uint32_t>(8, 0x40200000u));  // 2.5f
  // The run left the queues halted, vec having retired 2 instructions.
  const Result status = run("attach " + server.path());
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("STATUS            0x00000002 (done)"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("vec           2        2 halted            2"), std::string::npos) << status.out;
  const Result rw = run("attach " + server.path() +
                        " --write WATCHDOG_CYCLES=0x1234 --read watchdog_cycles "
                        "--read Q_RETIRED[vec] --read P_RETIRED_LO[3]");
  ASSERT_EQ(rw.exit_code, 0) << rw.err;
  EXPECT_NE(rw.out.find("WATCHDOG_CYCLES        0x00001234 = 4660"), std::string::npos) << rw.out;
  EXPECT_NE(rw.out.find("Q_RETIRED[3]           0x00000002 = 2"), std::string::npos) << rw.out;
  EXPECT_NE(rw.out.find("P_RETIRED_LO[3]        0x00000002 = 2"), std::string::npos) << rw.out;
  // Another core's block and the chip's registers by name (tiny: 2 cores).
  const Result cores = run("attach " + server.path() + " --read core1.core_id --read core1.Q_PC[te] --read chip_cores");
  ASSERT_EQ(cores.exit_code, 0) << cores.err;
  EXPECT_NE(cores.out.find("CORE1.CORE_ID"), std::string::npos) << cores.out;
  EXPECT_NE(cores.out.find("0x00000001 = 1"), std::string::npos) << cores.out;
  EXPECT_NE(cores.out.find("CORE1.Q_PC[0]"), std::string::npos) << cores.out;
  EXPECT_NE(cores.out.find("CHIP_CORES"), std::string::npos) << cores.out;
}

TEST(ServeCli, BadInputIsOneLineAndExitTwo) {
  SocketDir dir;
  Server server(dir.sock());
  struct Case {
    std::string args, reason;
  };
  const std::string s = server.path();
  const Case cases[] = {
      {"run --workload gemm --connect " + dir.sock("none.sock"), "is `trnsim serve --socket` running?"},
      {"run --workload gemm --te rtl --connect " + s, "--te configures the device"},
      {"run --workload gemm --config trn2 --connect " + s, "--config configures the device"},
      {"attach " + s + " --read NO_SUCH_REG", "no register named NO_SUCH_REG"},
      {"attach " + s + " --read Q_PC[9]", "the index must be 0 .. 7"},
      {"attach " + s + " --read core8.STATUS", "register CORE[8]: the index must be 0 .. 7"},
      {"attach " + s + " --read core1.CHIP_CORES", "CHIP_CORES is the chip's, not a core's"},
      {"attach " + s + " --write STATUS=1", "STATUS: the register is read-only"},
      {"attach " + s + " --dump hbm:0x1000 --count 4", "--dump needs --out"},
      {"attach " + s + " --dump sbuf:99:0 --count 4 --out x.npy", "partition 99 of 16"},
      {"attach " + s + " --dump psum:0:2 --count 1 --out x.npy", "offset 2: PSUM holds FP32 words, 4-byte aligned"},
      {"attach " + dir.sock("none.sock"), "cannot connect"},
      {"serve --socket " + s, "a server is listening there already"},
      {"serve --socket " + dir.sock("sys") + " --config trn2-16 --te rtl", "TLM datapath only"},
      {"serve --socket " + dir.sock("sys") + " --config trn2-16 --timeline t.json", "applies to a single-chip"},
      {"run --workload allreduce --connect " + s + " --bytes 4K", "a chip on its own"},
      {"run --workload allreduce --connect " + s + " --bytes 4K --fabric tlm", "with --connect the server's"},
      {"serve", "give --socket PATH"},
      {"serve --qemu " + dir.sock("q") + " --config trn2-16", "--qemu serves one chip as one PCI function"},
      {"serve --qemu " + s, "a server is listening there already"},
      {"qemu --socket " + dir.sock("none.sock") + " --initrd /etc/hostname", "no `trnsim serve --qemu"},
      {"qemu --socket " + s + " --initrd " + dir.sock("no.gz"), "--initrd " + dir.sock("no.gz") + ": not a readable"},
      {"qemu --socket " + s + " --initrd /etc/hostname --kernel /nonexistent", "--kernel /nonexistent: not a"},
      {"qemu --socket " + s + " --initrd /etc/hostname --accel hvf", "--accel hvf: tcg or kvm"},
      {"qemu --socket " + s + " --initrd /etc/hostname --memory-mib 8", "--memory-mib 8: must be 64 .. 65536"},
  };
  for (const Case& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(c.reason), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << c.args << "\n" << r.err;
  }
  // The server survived all of it.
  EXPECT_EQ(run("run --workload gemm -m 16 -k 16 -n 16 --connect " + s).exit_code, 0);
}

TEST(ServeCli, AServerThatDiesMidRunFailsTheClientWithinASecond) {
  SocketDir dir;
  Server server(dir.sock());
  Proc client(std::string("'") + TRNSIM_BIN + "' run --connect " + server.path(), next_scratch(".client.out"),
              next_scratch(".client.err"));
  // Wait until the transformer block is running (its first progress line would take 2 s; the input table is
  // printed before the first program starts).
  const auto t0 = clock_type::now();
  while (client.out().find(", launched ") == std::string::npos && seconds_since(t0) < 30) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  server.proc().signal(SIGKILL);
  const auto killed = clock_type::now();
  const int rc = client.wait(10);
  // The client fails as soon as the socket closes; the kernel closes a killed process's sockets after tearing down
  // its memory. About 0.1 s on an idle machine; a loaded 2-core CI machine was seen at 1.1 s, hence the margin.
  const double took = seconds_since(killed);
  std::cout << "[ measure  ] client failed " << took << " s after the server was killed\n";
  EXPECT_LT(took, 3.0);
  EXPECT_EQ(rc, 2) << client.out() << client.err();
  EXPECT_NE(client.err().find(server.path()), std::string::npos) << client.err();
  EXPECT_EQ(lines_of(client.err()).size(), 1u) << client.err();
}

TEST(ServeCli, ARunCutShortLeavesNothingForTheNextOwner) {
  // A run that times out leaves copies and a TE instruction in flight; the next owner's run must not see them land:
  // the same bits and the same cycles as in process.
  SocketDir dir;
  Server server(dir.sock());
  const std::string gemm = "run --workload gemm -m 40 -k 50 -n 70 --report ";
  EXPECT_EQ(run("run --workload gemm -m 40 -k 50 -n 70 --timeout-cycles 100 --connect " + server.path()).exit_code, 2);
  const std::string a = next_scratch(".json"), b = next_scratch(".json");
  const Result remote = run(gemm + b + " --connect " + server.path());
  EXPECT_EQ(remote.exit_code, 0) << remote.out << remote.err;
  ASSERT_EQ(run(gemm + a + " --te tlm").exit_code, 0);
  EXPECT_EQ(device_figures(a), device_figures(b));
}

TEST(ServeCli, OnceServesOneDriverThenExitsAndRemovesTheSocket) {
  SocketDir dir;
  Server server(dir.sock(), "--te tlm --once");
  EXPECT_EQ(run("attach " + server.path()).exit_code, 0);  // an attach client does not end it
  EXPECT_EQ(run("run --workload gemm -m 16 -k 16 -n 16 --connect " + server.path()).exit_code, 0);
  EXPECT_EQ(server.proc().wait(10), 0) << server.proc().err();
  EXPECT_NE(::access(server.path().c_str(), F_OK), 0);  // the socket file is gone
}

// `trnsim qemu --timeout-s`: a guest that never powers off is killed after the bound, with one line saying so and
// exit 1 (here QEMU is a stand-in that only sleeps: the bound, not the guest, is under test).
TEST(ServeCli, AGuestThatNeverPowersOffIsKilledAfterTimeoutS) {
  SocketDir dir;
  ServeProcess server(TRNSIM_BIN, dir.sock("q.sock"), "--te tlm", next_scratch(".serve.out"),
                      next_scratch(".serve.err"), "--qemu");
  const std::string fake_qemu = next_scratch(".sh"), file = next_scratch(".img");
  std::ofstream(fake_qemu) << "#!/bin/sh\nexec sleep 60\n";
  ::chmod(fake_qemu.c_str(), 0755);
  std::ofstream(file) << "not a kernel\n";
  const auto t0 = clock_type::now();
  const Result r = run("qemu --socket " + server.path() + " --initrd " + file + " --kernel " + file +
                       " --qemu-binary " + fake_qemu + " --timeout-s 1");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("the guest did not power off within 1 s (--timeout-s): QEMU killed"), std::string::npos)
      << r.err;
  EXPECT_LT(std::chrono::duration<double>(clock_type::now() - t0).count(), 20.0);
}

}  // namespace
}  // namespace trnsim::test
