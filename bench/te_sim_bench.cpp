// Simulation speed of the verilated Tensor Engine, driven through trnsim::cosim::TeRtl (one thread).
//
// Workload, per engine size R x C: one LoadStationary (K = R, BF16), then MultiplyMoving commands of N = 512 back to
// back with every valid/ready high, so the array streams one moving column per cycle. Each benchmark iteration is
// one TeRtl::run() of kCommandsPerRun MultiplyMoving commands (the pipeline drains once per run, R + C + 1 cycles).
// The stimulus is the one bench/iverilog/trn_te_bench_tb.sv generates, so `--hash` results can be compared with
// the Icarus run.
//
// Counters (Google Benchmark divides rates by CPU time unless told otherwise):
//   cycles/s      engine clock cycles simulated per CPU second, drain cycles included
//   PE_updates/s  cycles/s x R x C
//   cycles        cycles per iteration
//
// Usage:
//   te_sim_bench [--sizes=16x16,64x64] [Google Benchmark flags]    run the benchmarks
//   te_sim_bench --hash RxC NCMD                                    one run from reset, print cycles and result hash
//   te_sim_bench --list-sizes                                       the engine sizes this binary was built with
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "cosim/te/te_rtl.h"

namespace {

using trnsim::cosim::TeCommand;
using trnsim::cosim::TeRtl;

constexpr int kN = 512;                 // moving columns per MultiplyMoving (NMAX)
constexpr int kCommandsPerRun = 8;      // MultiplyMoving commands per benchmark iteration
constexpr uint32_t kSeed = 0x2545F491u; // must match SEED in bench/iverilog/trn_te_bench_tb.sv

uint32_t xorshift32(uint32_t x) {
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}

// BF16 with a random sign, exponent field 120..135 and a random 7-bit mantissa (as in the Icarus testbench).
uint16_t to_bf16(uint32_t x) {
  const uint32_t exp = 120u + ((x >> 7) & 15u);
  return static_cast<uint16_t>((((x >> 15) & 1u) << 15) | (exp << 7) | (x & 0x7Fu));
}

struct Workload {
  TeCommand load;
  TeCommand multiply;
};

Workload make_workload(int rows, int cols) {
  Workload w;
  uint32_t s = kSeed;
  w.load.op = TeCommand::Op::kLoadStationary;
  w.load.dtype_code = 0;  // BF16
  w.load.count = rows;
  w.load.beats.resize(static_cast<size_t>(rows) * cols);
  for (auto& v : w.load.beats) v = to_bf16(s = xorshift32(s));  // beat k = partition k's row, column order
  w.multiply.op = TeCommand::Op::kMultiplyMoving;
  w.multiply.dtype_code = 0;
  w.multiply.count = kN;
  w.multiply.beats.resize(static_cast<size_t>(kN) * rows);
  for (auto& v : w.multiply.beats) v = to_bf16(s = xorshift32(s));  // beat n = moving[:, n], partition order
  return w;
}

bool parse_size(const std::string& s, int* rows, int* cols) {
  return std::sscanf(s.c_str(), "%dx%d", rows, cols) == 2 && *rows > 0 && *cols > 0;
}

bool size_built(const std::string& size) {
  for (const std::string& s : TeRtl::built_sizes())
    if (s == size) return true;
  return false;
}

void BM_TeStream(benchmark::State& state, int rows, int cols) {
  std::unique_ptr<TeRtl> te;
  Workload w;
  try {
    te = TeRtl::create(rows, cols);
    w = make_workload(rows, cols);
    te->run({w.load});
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  const std::vector<TeCommand> commands(kCommandsPerRun, w.multiply);
  uint64_t cycles = 0;
  for (auto _ : state) {
    const trnsim::cosim::TeRunResult r = te->run(commands);
    benchmark::DoNotOptimize(r.results.data());
    cycles += r.cycles;
  }
  const double c = static_cast<double>(cycles);
  state.counters["cycles/s"] = benchmark::Counter(c, benchmark::Counter::kIsRate);
  state.counters["PE_updates/s"] =
      benchmark::Counter(c * rows * cols, benchmark::Counter::kIsRate);
  state.counters["cycles"] = benchmark::Counter(c, benchmark::Counter::kAvgIterations);
}

// One run from reset: LoadStationary, then ncmd MultiplyMoving commands; prints what the Icarus testbench prints.
int print_hash(const std::string& size, int ncmd) {
  int rows = 0, cols = 0;
  if (!parse_size(size, &rows, &cols) || ncmd < 1) {
    std::fprintf(stderr, "usage: te_sim_bench --hash RxC NCMD\n");
    return 2;
  }
  try {
    std::unique_ptr<TeRtl> te = TeRtl::create(rows, cols);
    const Workload w = make_workload(rows, cols);
    std::vector<TeCommand> commands{w.load};
    commands.insert(commands.end(), static_cast<size_t>(ncmd), w.multiply);
    const trnsim::cosim::TeRunResult r = te->run(commands);
    uint32_t h = 0x811C9DC5u;
    uint64_t beats = 0;
    for (const auto& result : r.results) {
      for (uint32_t word : result) h = (h ^ word) * 16777619u;
      beats += result.size() / static_cast<size_t>(cols);
    }
    std::printf("BENCH done cycles=%llu beats=%llu hash=%08x\n", static_cast<unsigned long long>(r.cycles),
                static_cast<unsigned long long>(beats), h);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "te_sim_bench: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list-sizes") == 0) {
    for (const std::string& s : TeRtl::built_sizes()) std::printf("%s\n", s.c_str());
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--hash") == 0) {
    if (argc != 4) {
      std::fprintf(stderr, "usage: te_sim_bench --hash RxC NCMD\n");
      return 2;
    }
    return print_hash(argv[2], std::atoi(argv[3]));
  }

  // Our own flag first; everything else goes to Google Benchmark.
  std::string sizes = "16x16,64x64";
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strncmp(argv[i], "--sizes=", 8) == 0) {
      sizes = argv[i] + 8;
    } else {
      args.push_back(argv[i]);
    }
  }
  size_t start = 0;
  while (start <= sizes.size()) {
    const size_t end = std::min(sizes.find(',', start), sizes.size());
    const std::string size = sizes.substr(start, end - start);
    start = end + 1;
    if (size.empty()) continue;
    int rows = 0, cols = 0;
    if (!parse_size(size, &rows, &cols)) {
      std::fprintf(stderr, "te_sim_bench: bad size '%s' (want RxC)\n", size.c_str());
      return 2;
    }
    if (!size_built(size)) {
      std::fprintf(stderr, "te_sim_bench: %s is not built in (configure with -DTRNSIM_LARGE_TE=ON); skipped\n",
                   size.c_str());
    }
    benchmark::RegisterBenchmark(("TeStream/" + size).c_str(), BM_TeStream, rows, cols)
        ->Unit(benchmark::kMillisecond);
  }

  int bargc = static_cast<int>(args.size());
  benchmark::Initialize(&bargc, args.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, args.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
