// `trnsim run`: a workload on the simulated Tensor Engine, checked bit for bit against the golden host kernels.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cosim/te/te_gemm.h"
#include "cosim/te/te_rtl.h"
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "tools/trnsim/commands.h"

namespace trnsim::tool {
namespace {

constexpr double kTeClockHz = 2.4e9;  // Trainium2 TE clock (BRIEF section 2)

struct RunOptions {
  std::string workload = "gemm";
  std::string config = "tiny";
  std::string te = "rtl";
  std::string dtype = "bf16";
  int m = 128, k = 128, n = 128;
  uint64_t seed = 1;
  std::string wave;
  std::string report;
};

// Array size of a named configuration (BRIEF section 2).
int config_array_size(const std::string& config) {
  if (config == "tiny") return 16;
  if (config == "trn2") return 128;
  throw BadInput(fmt::format("--config {}: unknown configuration (known: tiny, trn2)", config));
}

// Random finite operands of moderate magnitude, as the golden conversion rounds them (float32 -> dtype, RNE).
std::vector<uint16_t> random_operand(isa::Dtype dt, size_t count, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> v(count);
  for (uint16_t& x : v) {
    const float f = dist(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    x = golden::narrow_from_f32(dt, bits, /*saturate=*/true);
  }
  return v;
}

int run_gemm(const RunOptions& o) {
  const auto dt = isa::parse_dtype(o.dtype);
  if (!dt) throw BadInput(fmt::format("--dtype {}: unknown (bf16, fp16, fp8e4m3, fp8e5m2)", o.dtype));
  if (o.te != "rtl") {
    throw BadInput(fmt::format("--te {}: only the verilated RTL Tensor Engine ('rtl') exists in this build; the "
                               "TLM engine comes with the chip model", o.te));
  }
  const int size = config_array_size(o.config);
  const std::string size_name = fmt::format("{}x{}", size, size);
  const std::vector<std::string> built = cosim::TeRtl::built_sizes();
  if (std::find(built.begin(), built.end(), size_name) == built.end()) {
    throw BadInput(fmt::format("--config {}: this build has no verilated {} Tensor Engine (built: {})", o.config,
                               size_name, fmt::join(built, ", ")));
  }
  if (!o.wave.empty() && std::filesystem::path(o.wave).extension() != ".fst") {
    throw BadInput(fmt::format("--wave {}: waveforms are written as FST; give a file name ending in .fst", o.wave));
  }
  // Dimensions: every operand and the result are held in host memory (16-bit inputs, 32-bit results).
  const uint64_t elements = static_cast<uint64_t>(o.k) * o.m + static_cast<uint64_t>(o.k) * o.n +
                            static_cast<uint64_t>(o.m) * o.n;
  if (elements > (uint64_t{1} << 28)) {
    throw BadInput(fmt::format("-m {} -k {} -n {}: {} operand and result elements, more than this command holds "
                               "in memory (2^28)", o.m, o.k, o.n, elements));
  }
  // Open the report now, so a bad path fails before the run rather than after it.
  std::ofstream report;
  if (!o.report.empty()) {
    report.open(o.report);
    if (!report) throw BadInput(fmt::format("--report {}: cannot open for writing", o.report));
  }
  cosim::TeRtlOptions te_opts;
  te_opts.wave_path = o.wave;
  std::unique_ptr<cosim::TeRtl> te;
  try {
    te = cosim::TeRtl::create(size, size, te_opts);
  } catch (const cosim::TeRtlError& e) {
    throw BadInput(fmt::format("--wave {}: {}", o.wave, e.what()));
  }

  fmt::print("trnsim run: workload gemm  out[M={}, N={}] = stationary[K={}, M]^T @ moving[K, N]  dtype {}\n", o.m,
             o.n, o.k, o.dtype);
  fmt::print("  config {} ({}x{} Tensor Engine, RTL), seed {}\n", o.config, size, size, o.seed);
  std::mt19937_64 rng(o.seed);
  const auto s = random_operand(*dt, static_cast<size_t>(o.k) * o.m, rng);
  const auto mv = random_operand(*dt, static_cast<size_t>(o.k) * o.n, rng);

  const auto t0 = std::chrono::steady_clock::now();
  auto last_print = t0;
  cosim::TeGemmStats st;
  const std::vector<uint32_t> got =
      cosim::te_tiled_gemm(*te, *dt, o.k, o.m, o.n, s, mv, &st, [&](uint64_t done, uint64_t total) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last_print > std::chrono::seconds(2) && done < total) {
          fmt::print(stderr, "  ... pass {}/{} ({:.0f}%)\n", done, total, 100.0 * done / total);
          last_print = now;
        }
      });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  te.reset();  // closes the waveform

  const std::vector<uint32_t> want = golden::gemm({*dt, o.k, o.m, o.n, s, mv}, size);
  size_t mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      if (mismatches < 5) {
        fmt::print("  MISMATCH out[{}][{}]: got 0x{:08X}, golden 0x{:08X}\n", i / o.n, i % o.n, got[i], want[i]);
      }
      ++mismatches;
    }
  }

  const double util = static_cast<double>(st.macs) / (static_cast<double>(st.cycles) * size * size);
  const double sim_us = static_cast<double>(st.cycles) / kTeClockHz * 1e6;
  fmt::print("  passes            {} (LoadStationary + MultiplyMoving)\n", st.passes);
  fmt::print("  TE cycles         {}\n", st.cycles);
  fmt::print("  MACs              {}\n", st.macs);
  fmt::print("  TE utilization    {:.1f}% (MACs / (cycles x {} PEs))\n", 100.0 * util, size * size);
  fmt::print("  simulated time    {:.3f} us at {:.1f} GHz\n", sim_us, kTeClockHz / 1e9);
  fmt::print("  host wall time    {:.3f} s ({:.0f} cycles/s)\n", wall, st.cycles / wall);
  if (!o.wave.empty()) {
    const std::string gtkw = std::filesystem::path(o.wave).replace_extension(".gtkw").string();
    cosim::write_te_gtkw(gtkw, o.wave, size, size);
    fmt::print("  waveform          {} (layout {}; open with: gtkwave {})\n", o.wave, gtkw, gtkw);
  }
  if (!o.report.empty()) {
    const nlohmann::json j = {{"workload", "gemm"},  {"config", o.config},      {"te", o.te},
                              {"dtype", o.dtype},    {"m", o.m},                {"k", o.k},
                              {"n", o.n},            {"seed", o.seed},          {"passes", st.passes},
                              {"te_cycles", st.cycles}, {"macs", st.macs},      {"te_utilization", util},
                              {"simulated_us", sim_us}, {"wall_s", wall},       {"mismatches", mismatches},
                              {"pass", mismatches == 0}};
    report << j.dump(2) << '\n';
    report.close();
    if (!report) throw BadInput(fmt::format("--report {}: write failed", o.report));
    fmt::print("  report            {}\n", o.report);
  }
  if (mismatches) {
    fmt::print("FAIL: {} of {} elements differ from the golden GEMM\n", mismatches, got.size());
    return kExitFail;
  }
  fmt::print("PASS: {} elements bit-exact against the golden GEMM\n", got.size());
  return kExitOk;
}

}  // namespace

Action add_run(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a workload on the simulated device and check it against the golden host kernels");
  cmd->add_option("--workload", opts->workload, "Workload to run")->check(CLI::IsMember({"gemm"}))->capture_default_str();
  cmd->add_option("--config", opts->config, "Machine configuration: tiny (16x16 TE) or trn2 (128x128 TE)")
      ->capture_default_str();
  cmd->add_option("--te", opts->te, "Tensor Engine implementation: rtl (verilated) or tlm")
      ->check(CLI::IsMember({"rtl", "tlm"}))
      ->capture_default_str();
  cmd->add_option("--dtype", opts->dtype, "Input dtype: bf16, fp16, fp8e4m3, fp8e5m2")->capture_default_str();
  cmd->add_option("-m,--m", opts->m, "GEMM M (stationary free size)")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd->add_option("-k,--k", opts->k, "GEMM K (contraction, partitions)")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd->add_option("-n,--n", opts->n, "GEMM N (moving free size)")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Seed of the random operands")->capture_default_str();
  cmd->add_option("--wave", opts->wave, "Write an FST waveform of the Tensor Engine (and a .gtkw layout beside it)");
  cmd->add_option("--report", opts->report, "Write the figures as JSON");
  return [opts] { return run_gemm(*opts); };
}

}  // namespace trnsim::tool
