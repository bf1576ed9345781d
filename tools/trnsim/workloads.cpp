// `trnsim run` of the workload library (workloads.h): the CLI's part is files, printing and exit codes only.
#include "tools/trnsim/workloads.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <fmt/core.h>
#include <fmt/format.h>

#include "firmware/golden/transformer_golden.h"
#include "tools/trnsim/commands.h"
#include "tools/trnsim/engine_report.h"
#include "tools/trnsim/npy_io.h"

namespace trnsim::tool {
namespace {

using workloads::shape_text;

/// NAME.npy of `dir` for every input spec that has one (float32, exactly the spec's shape).
workloads::Tensors read_input_files(const std::vector<workloads::InputSpec>& specs, const std::string& dir,
                                    std::vector<std::string>* from_files) {
  workloads::Tensors given;
  if (dir.empty()) return given;
  if (!std::filesystem::is_directory(dir)) throw BadInput(fmt::format("--inputs {}: not a directory", dir));
  // A .npy that names no input (a typo, "gama.npy") would leave that input drawn from the seed without a word: say
  // so. Not an error: the directory may hold a run's --outputs (out.npy, intermediates) beside its inputs.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::filesystem::path& f = entry.path();
    if (f.extension() != ".npy") continue;
    const std::string stem = f.stem().string();
    if (std::none_of(specs.begin(), specs.end(), [&](const auto& s) { return s.name == stem; })) {
      std::vector<std::string> names;
      for (const workloads::InputSpec& s : specs) names.push_back(s.name);
      fmt::print(stderr, "trnsim: warning: --inputs {}: {} names no input of this workload ({}); not read\n", dir,
                 f.filename().string(), fmt::join(names, ", "));
    }
  }
  for (const workloads::InputSpec& s : specs) {
    const std::string path = (std::filesystem::path(dir) / (s.name + ".npy")).string();
    if (!std::filesystem::exists(path)) continue;
    F32Tensor file;
    try {
      file = load_f32_tensor(path, "--inputs");
    } catch (const BadInput& e) {
      throw BadInput(fmt::format("{}; {} must be {} float32", e.what(), s.name, shape_text(s.shape)));
    }
    if (file.shape != s.shape) {
      throw BadInput(fmt::format("--inputs {}: shape {} float32, but {} must be {} float32", path,
                                 shape_text(file.shape), s.name, shape_text(s.shape)));
    }
    given[s.name] = std::move(file.bits);
    from_files->push_back(s.name);
  }
  return given;
}

}  // namespace

int run_workload(const WorkloadOptions& o, const ReportHooks& hooks) {
  const workloads::Entry* entry = workloads::find(o.name);
  if (entry == nullptr) throw BadInput(fmt::format("--workload {}: unknown", o.name));
  // The programs are built for the cores they run on, so the device comes first.
  DeviceSession s = open_device(o.device);
  DeviceFlags device = o.device;
  open_cores(s, device);
  workloads::Params params = o.params;
  params.cores = device.cores;
  workloads::Workload w;
  try {
    w = entry->make(params);
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  std::vector<std::string> from_files;
  const workloads::Tensors given = read_input_files(w.inputs, o.inputs, &from_files);
  const workloads::Tensors inputs = workloads::make_inputs(w.inputs, o.seed, given);
  if (!o.outputs.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.outputs, ec);
    if (!std::filesystem::is_directory(o.outputs)) {
      throw BadInput(fmt::format("--outputs {}: cannot create the directory", o.outputs));
    }
  }
  fmt::print("trnsim run: {}\n", w.title);
  fmt::print("  config {} ({}x{} Tensor Engine, {} datapath), seed {}{}\n", s.info().config_name, s.info().te_rows,
             s.info().te_cols, s.info().te_backend, o.seed,
             device.cores > 1 ? fmt::format(", split over cores 0..{}", device.cores - 1) : "");
  for (const workloads::InputSpec& in : w.inputs) {
    const bool file = std::find(from_files.begin(), from_files.end(), in.name) != from_files.end();
    fmt::print("  input {:<8} {} {} {}{}\n", in.name, shape_text(in.shape), isa::data_type_name(in.type),
               file ? "from " + (std::filesystem::path(o.inputs) / (in.name + ".npy")).string()
                    : fmt::format("N({}, {}^2)", in.mean, in.sigma),
               in.what.empty() ? "" : " (" + in.what + ")");
  }
  std::fflush(stdout);

  return run_on_device(s, [&] {
    workloads::Report r;
    std::string failed;
    std::size_t total = 0;  // programs, once built
    try {
      if (device.cores > 1 && w.run_cores) {
        r = workloads::run_and_check_cores(s.cores(), w, inputs, o.device.timeout_cycles);
        fmt::print("  {} (one per core that has rows), {}\n", counted(r.programs, "program"),
                   counted(r.instructions, "instruction"));
      } else {
        r = workloads::run_and_check(
            s.cores(), w, inputs, o.device.timeout_cycles,
            [&total, &device](std::size_t programs, std::size_t instructions) {
              total = programs;
              fmt::print("  {}, {}{}\n", counted(programs, "program"), counted(instructions, "instruction"),
                         programs == 1   ? ""
                         : device.cores > 1 ? ", launched over the cores, each wave of independent programs as a "
                                              "work list (intermediates in HBM)"
                                            : ", launched one after another (intermediates in HBM)");
              std::fflush(stdout);
            },
            &failed,
            [&](std::size_t index, const std::string& name) {
              *s.running = fmt::format("program {} of {} ({})", index + 1, total, name);
            });
      }
    } catch (const std::invalid_argument& e) {
      throw BadInput(e.what());
    } catch (const driver::DriverError&) {
      if (!failed.empty()) fmt::print(stderr, "  {} stopped\n", failed);
      throw;
    }
    if (r.steps.size() > 1) {
      std::size_t width = 24;  // the step names' column fits the longest
      for (const workloads::StepGroup& g : r.steps) width = std::max(width, g.name.size());
      fmt::print("  {:<{}} {:>9} {:>12} {:>6}\n", "step", width, "programs", "cycles", "share");
      for (const workloads::StepGroup& g : r.steps) {
        fmt::print("  {:<{}} {:>9} {:>12} {:>5.1f}%\n", g.name, width, g.programs, g.cycles,
                   r.cycles ? 100.0 * double(g.cycles) / double(r.cycles) : 0.0);
      }
    }
    print_retired(r.retired);
    nlohmann::json checks = nlohmann::json::array();
    for (const workloads::Check& c : r.checks) {
      for (size_t i = 0; i < c.first.size() && i < 3; ++i) {
        fmt::print("  MISMATCH {}[{}]: got 0x{:08X}, golden 0x{:08X} ({})\n", c.name, c.first[i].index,
                   c.first[i].got, c.first[i].want, isa::data_type_name(c.type));
      }
      fmt::print("  check {:<8} {} {}: {}\n", c.name, shape_text(c.shape), isa::data_type_name(c.type),
                 c.mismatches ? fmt::format("{} of {} elements differ", c.mismatches, c.elements) : "bit-exact");
      checks.push_back({{"name", c.name}, {"elements", c.elements}, {"mismatches", c.mismatches}});
    }
    nlohmann::json j = {{"workload", o.name},         {"config", s.info().config_name},
                        {"te", s.info().te_backend},  {"seed", o.seed},
                        {"programs", r.programs},     {"instructions", r.instructions},
                        {"checks", checks},           {"mismatches", r.mismatches},
                        {"pass", r.pass}};
    if (entry->uses == workloads::Entry::kGemmShape) {
      j["dtype"] = isa::data_type_name(w.inputs.front().type);  // the operand type (bf16, fp16, fp8e4m3, fp8e5m2)
      j["k"] = w.inputs.front().shape[0];
      j["m"] = w.inputs.front().shape[1];
      j["n"] = w.inputs.back().shape[1];
    } else {
      j["seq"] = o.params.seq, j["d_model"] = o.params.d_model, j["heads"] = o.params.heads;
      j["d_ff"] = o.params.d_ff;
    }
    nlohmann::json steps = nlohmann::json::array();
    for (const workloads::StepGroup& g : r.steps) {
      steps.push_back({{"step", g.name}, {"programs", g.programs}, {"cycles", g.cycles}});
    }
    j["steps"] = steps;
    if (!r.core_runs.empty()) print_core_table(s, r.core_index, r.core_runs, r.core_macs, j);
    hooks.figures(s, r.cycles, r.macs, r.wall_s, j);
    write_wave_layout(o.device.wave, s.info());
    if (!o.outputs.empty()) {
      for (const workloads::OutputSpec& out : r.outputs) {
        const std::string path = (std::filesystem::path(o.outputs) / (out.name + ".npy")).string();
        save_f32_tensor(path, "--outputs",
                        {out.shape, golden::cast(r.got.at(out.name), out.type, isa::DataType::kFp32)});
      }
      fmt::print("  outputs           {} .npy files in {} (float32)\n", r.outputs.size(), o.outputs);
    }
    hooks.write(j);
    if (!r.pass) {
      fmt::print("FAIL: {} of {} checked elements differ from {}\n", r.mismatches, r.compared, r.golden_name);
      return kExitFail;
    }
    if (r.checks.size() == 1) {
      fmt::print("PASS: {} bit-exact against {}\n", counted(r.compared, "element"), r.golden_name);
    } else {
      fmt::print("PASS: {} in {} bit-exact against {}\n", counted(r.compared, "element"),
                 counted(r.checks.size(), "tensor"), r.golden_name);
    }
    return kExitOk;
  }, hooks.fail);
}

}  // namespace trnsim::tool
