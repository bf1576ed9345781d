// `trnsim run`: a workload (or a program file) on the simulated device, through the driver, checked bit for bit
// against the golden host kernels.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cosim/te/te_rtl.h"
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/gemm_golden.h"
#include "firmware/isa/isa.h"
#include "firmware/kernels/gemm_launch.h"
#include "cosim/mpi/mpi_system.h"
#include "tools/trnsim/collective_cmd.h"
#include "tools/trnsim/commands.h"
#include "tools/trnsim/device_session.h"
#include "tools/trnsim/engine_report.h"
#include "tools/trnsim/workloads.h"
#include "firmware/workloads/collectives.h"

namespace trnsim::tool {
namespace {

struct RunOptions {
  std::string workload = "transformer-block";
  std::string program;
  DeviceFlags device;
  std::string dtype = "bf16";
  int m = 128, k = 128, n = 128;
  uint64_t seed = 1;
  std::string report;
  WorkloadOptions composite;  ///< shape, --inputs, --outputs of the library's workloads (workloads.h)
  CollectiveOptions collective;  ///< --bytes, --algo of the collective workloads (collective_cmd.h)
};

double peak_rss_gib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB on Linux
}

/// --report FILE: opened before the run, so that a path that cannot be written fails at once. A run that ends
/// without its figures (an error, a device fault, a timeout) still leaves a report, {"pass": false, "error": why}
/// with what the run was, instead of an empty file: fail() says why, and the destructor says it stopped before its
/// figures if nothing else did.
class ReportFile {
 public:
  ReportFile(std::string path, nlohmann::json what) : path_(std::move(path)), what_(std::move(what)) {
    if (path_.empty()) return;
    out_.open(path_);
    if (!out_) throw BadInput(fmt::format("--report {}: cannot open for writing", path_));
  }
  ReportFile(const ReportFile&) = delete;
  ReportFile& operator=(const ReportFile&) = delete;
  ~ReportFile() { fail("the run stopped before its figures"); }

  /// The run's report. BadInput when the write fails.
  void write(const nlohmann::json& j) {
    if (path_.empty() || done_) return;
    done_ = true;
    out_ << j.dump(2) << '\n';
    out_.close();
    if (!out_) throw BadInput(fmt::format("--report {}: write failed", path_));
    fmt::print("  report            {}\n", path_);
  }

  /// Runs `body`; an exception it throws is recorded (fail) and rethrown.
  int guard(const std::function<int()>& body) {
    try {
      return body();
    } catch (const std::exception& e) {
      fail(e.what());
      throw;
    }
  }

  /// A report of a run that failed, once (the first reason wins); never throws.
  void fail(const std::string& why) noexcept {
    if (path_.empty() || done_) return;
    done_ = true;
    try {
      nlohmann::json j = what_;
      j["pass"] = false;
      j["error"] = why;
      out_ << j.dump(2) << '\n';
      out_.close();
    } catch (...) {  // a report is best effort once the run has failed
    }
  }

 private:
  std::string path_;
  nlohmann::json what_;
  std::ofstream out_;
  bool done_ = false;
};

void print_figures(const DeviceSession& s, uint64_t cycles, uint64_t macs, double wall, nlohmann::json& j) {
  const int pes = s.info().te_rows * s.info().te_cols * int(s.cores().size());  // every core's array
  const double util = cycles ? double(macs) / (double(cycles) * pes) : 0.0;
  const double sim_us = double(cycles) / s.info().te_clock_mhz;
  fmt::print("  device cycles     {} (TE clock)\n", cycles);
  fmt::print("  MACs              {}\n", macs);
  fmt::print("  TE utilization    {:.1f}% (MACs / (cycles x {} PEs))\n", 100.0 * util, pes);
  fmt::print("  simulated time    {:.3f} us at {:.1f} GHz\n", sim_us, s.info().te_clock_mhz / 1000.0);
  fmt::print("  host wall time    {:.3f} s ({:.3g} simulated MACs/s, {:.0f} cycles/s)\n", wall, macs / wall,
             cycles / wall);
  fmt::print("  host peak memory  {:.2f} GiB\n", peak_rss_gib());
  j["cycles"] = cycles;
  j["macs"] = macs;
  j["te_utilization"] = util;
  j["simulated_us"] = sim_us;
  j["wall_s"] = wall;
  j["macs_per_host_s"] = macs / wall;
  j["peak_rss_gib"] = peak_rss_gib();
  print_engine_report(s, j);  // per-engine utilization; writes --timeline
}

int run_program_on_device(const RunOptions& o, const isa::Program& program, ReportFile& report);

// --program FILE: a binary (.bin, "TRNP") or text program; it runs to its halts, there is no golden result. With
// --cores N it runs on each of cores 0 .. N-1 at once (a program file is one core's; each core has its own SBUF and
// PSUM, and HBM is shared, so a program that writes HBM writes the same bytes from every core).
int run_program_file(const RunOptions& o) {
  check_input_file(o.program, "--program " + o.program);
  std::ifstream in(o.program, std::ios::binary);
  if (!in) throw BadInput(fmt::format("--program {}: cannot open", o.program));
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  isa::Program program;
  const bool binary = isa::is_binary_program(bytes);
  try {
    program = binary ? isa::read_program_binary(bytes)
                     : isa::assemble(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const isa::ProgramError& e) {
    // As `trnsim asm` and `disasm` say it: FILE:LINE:COL: reason for text, FILE: reason for a binary.
    throw BadInput(fmt::format("{}:{}{}", o.program, binary ? " " : "", e.what()));
  }
  ReportFile report(o.report, {{"program", o.program}, {"config", o.device.config}});
  return report.guard([&] { return run_program_on_device(o, program, report); });
}

int run_program_on_device(const RunOptions& o, const isa::Program& program, ReportFile& report) {
  DeviceSession s = open_device(o.device);
  DeviceFlags device = o.device;
  if (device.cores == 0) device.cores = 1;  // a program file is one core's unless --cores says more
  open_cores(s, device);
  const std::vector<driver::Driver*> cores = s.cores();
  fmt::print("trnsim run: program {}\n", o.program);
  fmt::print("  config {} ({}x{} Tensor Engine, {} datapath){}\n", s.info().config_name, s.info().te_rows,
             s.info().te_cols, s.info().te_backend,
             cores.size() > 1 ? fmt::format(", on cores 0..{} (each runs the program)", cores.size() - 1) : "");
  std::fflush(stdout);
  return run_on_device(s, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<uint64_t> macs0;
    for (driver::Driver* d : cores) {
      macs0.push_back(d->read_counters().te_macs);
      d->load_program(program);
    }
    // Every core's doorbell first, then each core's interrupt (docs/driver.md, "Cores").
    for (driver::Driver* d : cores) d->start();
    const std::vector<driver::RunResult> runs = wait_cores(cores, o.device.timeout_cycles);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::array<uint64_t, isa::kNumQueues> retired{};
    for (const driver::RunResult& r : runs) {
      for (size_t q = 0; q < retired.size(); ++q) retired[q] += r.retired[q];
    }
    print_retired(retired);
    nlohmann::json j = {{"program", o.program}, {"config", s.info().config_name}, {"te", s.info().te_backend},
                        {"pass", true}};
    uint64_t cycles = 0, macs = 0;
    std::vector<int> which;
    std::vector<uint64_t> core_macs;
    for (size_t c = 0; c < cores.size(); ++c) {
      cycles = std::max(cycles, runs[c].cycles);
      which.push_back(int(c));
      core_macs.push_back(cores[c]->read_counters().te_macs - macs0[c]);
      macs += core_macs.back();
    }
    if (cores.size() > 1) print_core_table(s, which, runs, core_macs, j);
    print_figures(s, cycles, macs, wall, j);
    report.write(j);
    fmt::print("PASS: the program ran to its halts (no golden result for a program file)\n");
    return kExitOk;
  }, [&](const std::string& why) { report.fail(why); });
}

// The options only some workloads use, and which ones each workload uses (the rest: --config, --report). Giving an
// option the chosen workload does not use is bad input, not silently ignored.
/// Every single-chip run takes these (a program file, every workload but the collectives).
const std::vector<std::string> kDeviceOptions = {"--te",           "--timeout-cycles", "--watchdog-cycles",
                                                 "--sr-seed",      "--wave",           "--timeline",
                                                 "--check-hazards", "--check-uninit",   "--connect",
                                                 "--cores"};
const std::vector<std::string> kSelectiveOptions = {
    "--dtype", "-m", "-k", "-n", "--seed", "--seq", "--d-model", "--heads", "--d-ff", "--dma-transpose", "--inputs",
    "--outputs", "--bytes", "--algo", "--fabric", "--ber", "--drop", "--fault-seed", "--rank-progress", "--te",
    "--timeout-cycles", "--watchdog-cycles", "--sr-seed", "--wave", "--timeline", "--check-hazards", "--check-uninit",
    "--connect", "--cores"};

std::vector<std::string> options_used_by(const RunOptions& o) {
  const auto with_device = [](std::vector<std::string> v) {
    v.insert(v.end(), kDeviceOptions.begin(), kDeviceOptions.end());
    return v;
  };
  if (!o.program.empty()) return kDeviceOptions;
  if (is_collective_workload(o.workload)) {
    return {"--dtype", "--seed", "--bytes", "--algo", "--fabric", "--ber", "--drop", "--fault-seed", "--rank-progress",
            "--connect"};
  }
  if (o.workload == "gemm") return with_device({"--dtype", "-m", "-k", "-n", "--seed"});
  if (o.workload == "gpt2-mlp-up") return with_device({"--seed"});
  return with_device({"--seed", "--seq", "--d-model", "--heads", "--d-ff", "--dma-transpose", "--inputs",
                      "--outputs"});  // the composite workloads
}

void check_options_apply(const CLI::App& cmd, const RunOptions& o) {
  const std::vector<std::string> used = options_used_by(o);
  for (const std::string& opt : kSelectiveOptions) {
    if (cmd.count(opt) == 0 || std::find(used.begin(), used.end(), opt) != used.end()) continue;
    throw BadInput(o.program.empty() ? fmt::format("{} does not apply to --workload {}", opt, o.workload)
                                     : fmt::format("{} does not apply to --program", opt));
  }
}

}  // namespace

Action add_run(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a workload on the simulated device through the driver and check it against the golden host kernels");
  // The workload table: the library's registry (firmware/workloads), then the collective workloads.
  std::vector<std::string> names;
  std::string workload_help = "Workload (the first line of the report names its shape):";
  for (const workloads::Entry& w : workloads::registry()) {
    names.push_back(w.name);
    workload_help += fmt::format("\n  {:<18} {}", w.name, w.summary);
  }
  for (const workloads::CollectiveEntry& w : workloads::collective_registry()) {
    names.push_back(w.name);
    workload_help += fmt::format("\n  {:<18} {}", w.name, w.summary);
  }
  auto* workload = cmd->add_option("--workload", opts->workload, workload_help)
                       ->check(CLI::IsMember(names))
                       ->capture_default_str();
  cmd->add_option("--program", opts->program, "Run a program file (.bin from `trnsim asm`, or program text)")
      ->excludes(workload);
  cmd->add_option("--config", opts->device.config,
                  "Machine configuration: tiny (2 cores, 16x16 TE), trn2 (8 cores, 128x128 TE) or trn3; trn2-16 "
                  "(4x4 torus of chips), trn2-64 (4x4x4) or trn2-256 (four trn2-64 joined by EFA) for the "
                  "collective workloads")
      ->capture_default_str();
  cmd->add_option("--te", opts->device.te, "Tensor Engine datapath: rtl (verilated), tlm, or lockstep (both)")
      ->capture_default_str();
  cmd->add_option("--dtype", opts->dtype,
                  "Input dtype: bf16, fp16, fp8e4m3, fp8e5m2 (--workload gemm); fp32, bf16 (collective workloads)")
      ->capture_default_str();
  cmd->add_option("-m,--m", opts->m, "GEMM M (stationary free size)")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd->add_option("-k,--k", opts->k, "GEMM K (contraction, partitions)")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd->add_option("-n,--n", opts->n, "GEMM N (moving free size)")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Seed of the random operands")->check(kNonNegative)->capture_default_str();
  cmd->add_option("--seq", opts->composite.params.seq, "Tokens of the composite workloads (softmax .. transformer-block)")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--d-model", opts->composite.params.d_model, "Model width of the composite workloads")
      ->check(CLI::Range(1, 16384))->capture_default_str();
  cmd->add_option("--heads", opts->composite.params.heads, "Attention heads (d_model / heads each)")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--d-ff", opts->composite.params.d_ff, "MLP hidden width")->check(CLI::Range(1, 65535))->capture_default_str();
  cmd->add_flag("--dma-transpose", opts->composite.params.dma_transpose,
                "Transpose activations by strided DMA copies instead of on the Tensor Engine (identity matmul)");
  cmd->add_option("--inputs", opts->composite.inputs,
                  "Directory of input tensors NAME.npy (float32; the report lists the names and shapes); missing "
                  "ones are drawn from --seed");
  cmd->add_option("--outputs", opts->composite.outputs,
                  "Directory to write the result and named intermediates to, as NAME.npy (float32)");
  cmd->add_option("--timeout-cycles", opts->device.timeout_cycles,
                  "Give up when one program launch runs this many device cycles without finishing (every launch of "
                  "a multi-program run has the whole limit)")
      ->check(kNonNegative)
      ->capture_default_str();
  add_watchdog_flag(*cmd, opts->device);
  add_sr_seed_flag(*cmd, opts->device);
  add_cores_flag(*cmd, opts->device, true);
  cmd->add_option("--wave", opts->device.wave, "Write an FST waveform of the RTL Tensor Engine");
  add_wave_window_flags(*cmd, opts->device);
  cmd->add_option("--report", opts->report, "Write the figures as JSON");
  add_trace_flags(*cmd, opts->device);
  add_connect_flag(*cmd, opts->device);
  add_collective_options(*cmd, opts->collective);
  return [opts, cmd] {
    check_options_apply(*cmd, *opts);
    check_connect_flags(*cmd, opts->device);
    const auto* mpi = cosim::mpi::Session::current();
    if (mpi && mpi->ranks() > 1 && (!opts->program.empty() || !is_collective_workload(opts->workload))) {
      throw BadInput(fmt::format("{} runs on one chip: MPI ranks split multi-chip systems (the collective "
                                 "workloads); start it without mpirun, or with -np 1",
                                 opts->program.empty() ? "--workload " + opts->workload : std::string("--program")));
    }
    if (!opts->program.empty()) return run_program_file(*opts);
    if (is_collective_workload(opts->workload)) {
      CollectiveOptions c = opts->collective;
      c.workload = opts->workload;
      c.config = opts->device.config;
      c.dtype = opts->dtype;
      c.seed = opts->seed;
      c.connect = opts->device.connect;
      if (cmd->count("--fault-seed") > 0 && c.fabric == "message") {
        throw BadInput("--fault-seed seeds the faults of the router network's links: give --fabric tlm, rtl or "
                       "lockstep (the message-level link model has no flits to corrupt)");
      }
      if (mpi && mpi->rank() != 0) return run_collective_workload(c, [](const nlohmann::json&) {});  // rank 0 reports
      ReportFile report(opts->report, {{"workload", c.workload}, {"config", c.config}});
      return report.guard(
          [&] { return run_collective_workload(c, [&](const nlohmann::json& j) { report.write(j); }); });
    }
    WorkloadOptions o = opts->composite;
    o.name = opts->workload;
    o.device = opts->device;
    o.seed = opts->seed;
    o.params.m = opts->m, o.params.k = opts->k, o.params.n = opts->n;
    const auto dt = isa::parse_dtype(opts->dtype);
    if (!dt || isa::is_mx(*dt)) {
      throw BadInput(fmt::format("--dtype {}: {} (bf16, fp16, fp8e4m3, fp8e5m2; the MX types run through `trnsim "
                                 "matmul --dtype`)", opts->dtype, dt ? "not a workload dtype" : "unknown"));
    }
    o.params.dtype = *dt;
    ReportFile report(opts->report, {{"workload", o.name}, {"config", o.device.config}});
    const ReportHooks hooks{print_figures, [&](const nlohmann::json& j) { report.write(j); },
                            [&](const std::string& why) { report.fail(why); }};
    return report.guard([&] { return run_workload(o, hooks); });
  };
}

}  // namespace trnsim::tool
