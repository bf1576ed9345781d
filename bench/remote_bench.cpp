// The device in another process (docs/performance.md, "Served device"): the cost of the wire protocol.
//
//   remote_bench TRNSIM_BIN [ROUNDS]
//
// Starts `TRNSIM_BIN serve --te tlm` on a socket in /tmp and measures, through driver::RemoteDevice:
//   - register round trip: read_reg(ID), median of ROUNDS rounds of 20000 reads (us per read), and a protocol-only
//     PING the same way;
//   - bulk bandwidth through the shared window: write_mem / read_mem of 64 MiB into HBM, median of ROUNDS (GB/s);
//   - the default workload (the GPT-2 transformer block, --te tlm) in process and over --connect, alternating,
//     ROUNDS runs each: the median host wall time of each (the report's wall_s) and their ratio.
// Prints one `key=value` line per figure (scripts/bench.sh reads them) after a human-readable line for each.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "firmware/driver/remote_device.h"
#include "spec/trn_regs.h"

namespace {

using clk = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double wall_of_run(const std::string& trnsim, const std::string& args, const std::string& report) {
  const std::string cmd = "'" + trnsim + "' run " + args + " --report " + report + " > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "remote_bench: failed: %s\n", cmd.c_str());
    std::exit(1);
  }
  return nlohmann::json::parse(slurp(report)).at("wall_s").get<double>();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: remote_bench TRNSIM_BIN [ROUNDS]\n");
    return 2;
  }
  const std::string trnsim = argv[1];
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  char tmpl[] = "/tmp/trnsim-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string sock = dir + "/dev.sock", out = dir + "/serve.out";
  const pid_t server = ::fork();
  if (server == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::execl(trnsim.c_str(), trnsim.c_str(), "serve", "--quiet", "--te", "tlm", "--socket", sock.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto t0 = clk::now();
  while (slurp(out).find("listening on") == std::string::npos) {
    if (clk::now() - t0 > std::chrono::seconds(60)) {
      std::fprintf(stderr, "remote_bench: trnsim serve did not come up\n");
      ::kill(server, SIGKILL);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  {
    trnsim::driver::RemoteDevice dev(sock);
    constexpr int kOps = 20000;
    std::vector<double> reg_us, ping_us, write_gbps, read_gbps;
    for (int r = 0; r < rounds; ++r) {
      auto a = clk::now();
      uint32_t sink = 0;
      for (int i = 0; i < kOps; ++i) sink ^= dev.read_reg(trnsim::regs::ID);
      reg_us.push_back(std::chrono::duration<double, std::micro>(clk::now() - a).count() / kOps);
      if (sink == 12345) std::puts("");  // keeps the loop
      a = clk::now();
      for (int i = 0; i < kOps; ++i) dev.ping();
      ping_us.push_back(std::chrono::duration<double, std::micro>(clk::now() - a).count() / kOps);
    }
    std::vector<uint8_t> buf(64u << 20);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = uint8_t(i * 131);
    for (int r = 0; r < rounds; ++r) {
      auto a = clk::now();
      dev.write_mem(trnsim::regs::HBM_BASE, buf.data(), buf.size());
      write_gbps.push_back(double(buf.size()) / std::chrono::duration<double>(clk::now() - a).count() / 1e9);
      a = clk::now();
      dev.read_mem(trnsim::regs::HBM_BASE, buf.data(), buf.size());
      read_gbps.push_back(double(buf.size()) / std::chrono::duration<double>(clk::now() - a).count() / 1e9);
    }
    std::printf("register round trip (read_reg): %.1f us median of %d x %d (ping: %.1f us)\n", median(reg_us), rounds,
                kOps, median(ping_us));
    std::printf("bulk write_mem 64 MiB: %.2f GB/s, read_mem: %.2f GB/s (median of %d)\n", median(write_gbps),
                median(read_gbps), rounds);
    std::printf("round_trip_us=%.2f\nping_us=%.2f\nbulk_write_gbps=%.3f\nbulk_read_gbps=%.3f\n", median(reg_us),
                median(ping_us), median(write_gbps), median(read_gbps));
  }
  std::vector<double> local, remote;
  for (int r = 0; r < rounds; ++r) {
    local.push_back(wall_of_run(trnsim, "--te tlm", dir + "/local.json"));
    remote.push_back(wall_of_run(trnsim, "--connect " + sock, dir + "/remote.json"));
  }
  const double ratio = median(remote) / median(local);
  std::printf("transformer-block --te tlm: in process %.3f s, over --connect %.3f s (medians of %d): ratio %.3f\n",
              median(local), median(remote), rounds, ratio);
  std::printf("block_local_s=%.4f\nblock_remote_s=%.4f\nblock_ratio=%.4f\n", median(local), median(remote), ratio);
  ::kill(server, SIGTERM);
  ::waitpid(server, nullptr, 0);
  std::system(("rm -rf '" + dir + "'").c_str());
  return 0;
}
