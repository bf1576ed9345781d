// The composite workloads of `trnsim run` (workloads.h): each is a list of named input tensors, a builder of the
// programs it launches one after another (firmware/kernels/*_kernel.h) and a golden function
// (firmware/golden/*_golden.h) that gives the expected value of every output it names.
#include "tools/trnsim/workloads.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <stdexcept>

#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "firmware/golden/engine_golden.h"
#include "firmware/golden/nn_golden.h"
#include "firmware/golden/transformer_golden.h"
#include "firmware/kernels/attention_kernel.h"
#include "firmware/kernels/kernel_sequence.h"
#include "firmware/kernels/mlp_kernel.h"
#include "firmware/kernels/norm_kernel.h"
#include "firmware/kernels/softmax_kernel.h"
#include "firmware/kernels/transformer_kernel.h"
#include "tools/trnsim/commands.h"
#include "tools/trnsim/npy_io.h"

namespace trnsim::tool {
namespace {

using golden::Patterns;
using Shape = std::vector<int64_t>;
using isa::DataType;

uint64_t elements(const Shape& s) {
  uint64_t n = 1;
  for (auto d : s) n *= uint64_t(d);
  return n;
}

/// A named input: its shape, the data type it has on the device (float32 .npy values are cast to it, RNE), and the
/// normal distribution it is drawn from when no file gives it.
struct InputSpec {
  std::string name;
  Shape shape;
  DataType type = DataType::kFp32;
  float mean = 0.0f, sigma = 1.0f;
  std::string what;  ///< one line for the report
};

/// A tensor the workload leaves in HBM: the result (the first one) or a named intermediate.
struct OutputSpec {
  std::string name;
  Shape shape;
  DataType type = DataType::kFp32;
  uint64_t hbm = 0;
};

using Tensors = std::map<std::string, Patterns>;
using Addrs = std::map<std::string, uint64_t>;

/// A workload made concrete for one shape.
struct Instance {
  std::string title;
  std::vector<InputSpec> inputs;
  /// Allocates outputs and scratch (inputs are already in HBM at `in`), returns the programs and the outputs.
  std::function<void(driver::Driver&, const Addrs& in, kernels::KernelSequence*, std::vector<OutputSpec>*)> build;
  /// Expected patterns of (some of) the outputs, by name, for `te_rows` TE rows.
  std::function<Tensors(const Tensors& in, int te_rows)> golden;
};

uint64_t alloc(driver::Driver& drv, const Shape& s, DataType t) { return drv.alloc(elements(s) * isa::data_type_bytes(t)); }

// ---------------------------------------------------------------- host <-> device tensors

std::vector<uint8_t> pack(const Patterns& v, DataType t) {
  const unsigned es = isa::data_type_bytes(t);
  std::vector<uint8_t> out(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i)
    for (unsigned b = 0; b < es; ++b) out[i * es + b] = uint8_t(v[i] >> (8 * b));
  return out;
}

Patterns read_tensor(driver::Driver& drv, const OutputSpec& o) {
  const unsigned es = isa::data_type_bytes(o.type);
  std::vector<uint8_t> bytes(elements(o.shape) * es);
  drv.read_hbm(o.hbm, bytes.data(), bytes.size());
  Patterns v(elements(o.shape));
  for (size_t i = 0; i < v.size(); ++i)
    for (unsigned b = 0; b < es; ++b) v[i] |= uint32_t(bytes[i * es + b]) << (8 * b);
  return v;
}

std::string shape_text(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

/// The inputs: NAME.npy from `dir` when present (float32, exactly the spec's shape), else drawn from the seed. Every
/// spec draws its random values (in spec order) whether or not a file replaces them, so a file does not change the
/// others. Values are cast to the spec's device type.
Tensors load_inputs(const std::vector<InputSpec>& specs, const std::string& dir, uint64_t seed,
                    std::vector<std::string>* from_files) {
  if (!dir.empty() && !std::filesystem::is_directory(dir)) {
    throw BadInput(fmt::format("--inputs {}: not a directory", dir));
  }
  std::mt19937_64 rng(seed);
  Tensors t;
  for (const InputSpec& s : specs) {
    std::normal_distribution<float> dist(s.mean, s.sigma);
    Patterns f32(elements(s.shape));
    for (auto& x : f32) {
      const float f = dist(rng);
      std::memcpy(&x, &f, 4);
    }
    const std::string path = dir.empty() ? "" : (std::filesystem::path(dir) / (s.name + ".npy")).string();
    if (!path.empty() && std::filesystem::exists(path)) {
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
      f32 = std::move(file.bits);
      from_files->push_back(s.name);
    }
    Patterns v(f32.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = golden::element_from_f32(s.type, f32[i], /*saturate=*/true);
    t[s.name] = std::move(v);
  }
  return t;
}

std::string step_group(const std::string& name) {
  // "head 3 scores" -> "head * scores"
  if (name.rfind("head ", 0) == 0) {
    const auto sp = name.find(' ', 5);
    if (sp != std::string::npos) return "head * " + name.substr(sp + 1);
  }
  return name;
}

// ---------------------------------------------------------------- the generic run

int run_instance(const WorkloadOptions& o, const ReportHooks& hooks, const Instance& w) {
  std::vector<std::string> from_files;
  const Tensors inputs = load_inputs(w.inputs, o.inputs, o.seed, &from_files);
  if (!o.outputs.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.outputs, ec);
    if (!std::filesystem::is_directory(o.outputs)) {
      throw BadInput(fmt::format("--outputs {}: cannot create the directory", o.outputs));
    }
  }
  DeviceSession s = open_device(o.device);
  fmt::print("trnsim run: {}\n", w.title);
  fmt::print("  config {} ({}x{} Tensor Engine, {} datapath), seed {}\n", s.info().config_name, s.info().te_rows,
             s.info().te_cols, s.info().te_backend, o.seed);
  for (const InputSpec& in : w.inputs) {
    const bool file = std::find(from_files.begin(), from_files.end(), in.name) != from_files.end();
    fmt::print("  input {:<8} {} {} {}{}\n", in.name, shape_text(in.shape), isa::data_type_name(in.type),
               file ? "from " + (std::filesystem::path(o.inputs) / (in.name + ".npy")).string()
                    : fmt::format("N({}, {}^2)", in.mean, in.sigma),
               in.what.empty() ? "" : " (" + in.what + ")");
  }
  std::fflush(stdout);

  driver::Driver& drv = *s.driver;
  Addrs addrs;
  kernels::KernelSequence seq;
  std::vector<OutputSpec> outputs;
  try {
    for (const InputSpec& in : w.inputs) {
      addrs[in.name] = alloc(drv, in.shape, in.type);
      const auto bytes = pack(inputs.at(in.name), in.type);
      drv.write_hbm(addrs[in.name], bytes.data(), bytes.size());
    }
    w.build(drv, addrs, &seq, &outputs);
  } catch (const driver::OutOfDeviceMemory& e) {
    throw BadInput(fmt::format("the workload's tensors do not fit the device's HBM: {}", e.what()));
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  std::size_t total_instr = 0;
  for (const auto& st : seq) for (const auto& q : st.program.queues) total_instr += q.size();
  fmt::print("  {}, {}, launched one after another (intermediates in HBM)\n", counted(seq.size(), "program"),
             counted(total_instr, "instruction"));
  std::fflush(stdout);

  return run_on_device(s, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t failed = 0;
    kernels::SequenceRun r;
    try {
      r = kernels::run_sequence(drv, seq, o.device.timeout_cycles, {}, &failed);
    } catch (const driver::DriverError&) {
      fmt::print(stderr, "  program {} of {} (\"{}\") stopped\n", failed + 1, seq.size(), seq[failed].name);
      throw;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Tensors got;
    for (const auto& out : outputs) got[out.name] = read_tensor(drv, out);
    const Tensors want = w.golden(inputs, int(s.info().te_rows));

    // Per-step figures, grouped ("head * scores" sums the heads).
    std::vector<std::pair<std::string, std::pair<int, uint64_t>>> groups;
    for (const auto& st : r.steps) {
      const std::string g = step_group(st.name);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == g; });
      if (it == groups.end()) {
        groups.push_back({g, {0, 0}});
        it = groups.end() - 1;
      }
      it->second.first += 1;
      it->second.second += st.run.cycles;
    }
    fmt::print("  {:<24} {:>9} {:>12} {:>6}\n", "step", "programs", "cycles", "share");
    for (const auto& [g, v] : groups) {
      fmt::print("  {:<24} {:>9} {:>12} {:>5.1f}%\n", g, v.first, v.second,
                 r.cycles ? 100.0 * double(v.second) / double(r.cycles) : 0.0);
    }
    fmt::print("  retired           te {}, dma {}, act {}, vec {}\n", r.retired[size_t(isa::Engine::kTe)],
               r.retired[size_t(isa::Engine::kDma)], r.retired[size_t(isa::Engine::kAct)],
               r.retired[size_t(isa::Engine::kVec)]);

    // Compare every output the golden function names.
    size_t mismatches = 0, compared = 0;
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& out : outputs) {
      const auto it = want.find(out.name);
      if (it == want.end()) continue;
      const Patterns& g = got.at(out.name);
      size_t bad = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        if (g[i] == it->second[i]) continue;
        if (bad < 3) {
          fmt::print("  MISMATCH {}[{}]: got 0x{:08X}, golden 0x{:08X} ({})\n", out.name, i, g[i], it->second[i],
                     isa::data_type_name(out.type));
        }
        ++bad;
      }
      fmt::print("  check {:<8} {} {}: {}\n", out.name, shape_text(out.shape), isa::data_type_name(out.type),
                 bad ? fmt::format("{} of {} elements differ", bad, g.size()) : "bit-exact");
      checks.push_back({{"name", out.name}, {"elements", g.size()}, {"mismatches", bad}});
      mismatches += bad;
      compared += g.size();
    }
    nlohmann::json j = {{"workload", o.name},   {"config", s.info().config_name},     {"te", s.info().te_backend},
                        {"seed", o.seed},       {"seq", o.seq},                {"d_model", o.d_model},
                        {"heads", o.heads},     {"d_ff", o.d_ff},              {"programs", seq.size()},
                        {"instructions", r.instructions}, {"checks", checks}, {"mismatches", mismatches},
                        {"pass", mismatches == 0}};
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& [g, v] : groups) steps.push_back({{"step", g}, {"programs", v.first}, {"cycles", v.second}});
    j["steps"] = steps;
    hooks.figures(s, r.cycles, r.macs, wall, j);
    if (!o.outputs.empty()) {
      for (const auto& out : outputs) {
        const std::string path = (std::filesystem::path(o.outputs) / (out.name + ".npy")).string();
        save_f32_tensor(path, "--outputs", {out.shape, golden::cast(got.at(out.name), out.type, DataType::kFp32)});
      }
      fmt::print("  outputs           {} .npy files in {} (float32)\n", outputs.size(), o.outputs);
    }
    hooks.write(j);
    if (mismatches) {
      fmt::print("FAIL: {} of {} checked elements differ from the golden host kernels\n", mismatches, compared);
      return kExitFail;
    }
    fmt::print("PASS: {} in {} bit-exact against the golden host kernels\n", counted(compared, "element"),
               counted(checks.size(), "tensor"));
    return kExitOk;
  });
}

// ---------------------------------------------------------------- the workloads

// `uses_heads`: the workload splits d_model into --heads heads (softmax, attention, transformer-block); the others
// ignore --heads, so its default (12) must not reject their d_model.
void check_shape(const WorkloadOptions& o, bool uses_heads) {
  const auto bad = [](const std::string& m) { throw BadInput(m); };
  if (o.seq < 1 || o.d_model < 1 || o.heads < 1 || o.d_ff < 1) bad("--seq, --d-model, --heads, --d-ff must be >= 1");
  if (uses_heads && o.d_model % o.heads) {
    bad(fmt::format("--d-model {} is not a multiple of --heads {}", o.d_model, o.heads));
  }
  const uint64_t scores = uint64_t(uses_heads ? o.heads : 1) * o.seq * o.seq;
  const uint64_t weights = 4ull * o.d_model * o.d_model + 2ull * o.d_model * o.d_ff;
  if (o.seq > 4096 || o.d_model > 16384 || o.d_ff > 65535 || scores > (1ull << 26) || weights > (1ull << 28)) {
    bad(fmt::format("--seq {} --d-model {} --heads {} --d-ff {}: too large for this command (seq <= 4096, d_model "
                    "<= 16384, d_ff <= 65535, heads x seq^2 <= 2^26 and weights <= 2^28 elements: the host keeps "
                    "several copies of each for the golden check)", o.seq, o.d_model, o.heads, o.d_ff));
  }
}

std::string gpt2_dims(const WorkloadOptions& o) {
  return fmt::format("seq {}, d_model {}, heads {} x {}, d_ff {}", o.seq, o.d_model, o.heads, o.d_model / o.heads,
                     o.d_ff);
}

Instance softmax_instance(const WorkloadOptions& o) {
  const int rows = o.heads * o.seq, cols = o.seq, d = o.d_model / o.heads;
  const float scale = kernels::attention_scale(d);
  Instance w;
  w.title = fmt::format("softmax along rows of attention scores [{} = heads x seq, {}] FP32, scale 1/sqrt({})",
                        rows, cols, d);
  w.inputs = {{"x", {rows, cols}, DataType::kFp32, 0.0f, std::sqrt(float(d)), "scores"}};
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    kernels::SoftmaxLayout l;
    l.rows = rows;
    l.cols = cols;
    l.in_hbm = in.at("x");
    l.out_hbm = alloc(drv, {rows, cols}, DataType::kFp32);
    l.scale = scale;
    seq->push_back({"softmax", kernels::make_softmax_program(drv.info(), l), 0});
    outs->push_back({"out", {rows, cols}, DataType::kFp32, l.out_hbm});
  };
  w.golden = [=](const Tensors& in, int) {
    golden::SoftmaxSpec s;
    s.rows = rows;
    s.cols = cols;
    s.scale = scale;
    return Tensors{{"out", golden::softmax_rows(s, in.at("x"))}};
  };
  return w;
}

Instance norm_instance(const WorkloadOptions& o, bool rms) {
  const int rows = o.seq, cols = o.d_model;
  Instance w;
  w.title = fmt::format("{} of [{} tokens, {}] FP32", rms ? "RMSNorm" : "LayerNorm", rows, cols);
  w.inputs = {{"x", {rows, cols}, DataType::kFp32, 0.0f, 1.0f, ""},
              {"gamma", {cols}, DataType::kFp32, 1.0f, 0.1f, ""}};
  if (!rms) w.inputs.push_back({"beta", {cols}, DataType::kFp32, 0.0f, 0.1f, ""});
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    const uint64_t out = alloc(drv, {rows, cols}, DataType::kFp32);
    if (rms) {
      kernels::RmsNormLayout l;
      l.rows = rows, l.cols = cols, l.in_hbm = in.at("x"), l.out_hbm = out, l.gamma_hbm = in.at("gamma");
      seq->push_back({"rmsnorm", kernels::make_rmsnorm_program(drv.info(), l), 0});
    } else {
      kernels::LayerNormLayout l;
      l.rows = rows, l.cols = cols, l.in_hbm = in.at("x"), l.out_hbm = out, l.gamma_hbm = in.at("gamma");
      l.beta_hbm = in.at("beta");
      seq->push_back({"layernorm", kernels::make_layernorm_program(drv.info(), l), 0});
    }
    outs->push_back({"out", {rows, cols}, DataType::kFp32, out});
  };
  w.golden = [=](const Tensors& in, int) {
    golden::NormSpec s;
    s.rows = rows;
    s.cols = cols;
    if (rms) {
      s.eps = kernels::RmsNormLayout{}.eps;
      return Tensors{{"out", golden::rmsnorm_rows(s, in.at("x"), in.at("gamma"))}};
    }
    s.eps = kernels::LayerNormLayout{}.eps;
    return Tensors{{"out", golden::layernorm_rows(s, in.at("x"), in.at("gamma"), in.at("beta"))}};
  };
  return w;
}

Instance mlp_instance(const WorkloadOptions& o) {
  const int T = o.seq, D = o.d_model, F = o.d_ff;
  Instance w;
  w.title = fmt::format("GELU MLP (GPT-2 c_fc, gelu_tanh, c_proj), {} tokens x {} -> {} -> {}", T, D, F, D);
  w.inputs = {{"x", {T, D}, DataType::kFp32, 0.0f, 1.0f, ""},
              {"w1", {D, F}, DataType::kBf16, 0.0f, 0.02f, "c_fc weight"},
              {"b1", {F}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w2", {F, D}, DataType::kBf16, 0.0f, 0.02f, "c_proj weight"},
              {"b2", {D}, DataType::kFp32, 0.0f, 0.02f, ""}};
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    kernels::MlpLayout l;
    l.tokens = T, l.d_model = D, l.d_ff = F;
    l.xT_hbm = alloc(drv, {D, T}, DataType::kBf16);
    l.w1_hbm = in.at("w1"), l.b1_hbm = in.at("b1"), l.w2_hbm = in.at("w2"), l.b2_hbm = in.at("b2");
    l.hT_hbm = alloc(drv, {F, T}, DataType::kFp32);
    l.gT_hbm = alloc(drv, {F, T}, DataType::kBf16);
    l.y_hbm = alloc(drv, {T, D}, DataType::kFp32);
    l.out_hbm = alloc(drv, {T, D}, DataType::kFp32);
    seq->push_back({"x transpose", kernels::dma_program(kernels::transpose_copies(
                                       in.at("x"), DataType::kFp32, l.xT_hbm, DataType::kBf16, T, D)), 0});
    kernels::append(seq, kernels::make_mlp_programs(drv.info(), l));
    *outs = {{"out", {T, D}, DataType::kFp32, l.out_hbm},
             {"xT", {D, T}, DataType::kBf16, l.xT_hbm},
             {"hT", {F, T}, DataType::kFp32, l.hT_hbm},
             {"gT", {F, T}, DataType::kBf16, l.gT_hbm}};
  };
  w.golden = [=](const Tensors& in, int te_rows) {
    const Patterns xT = golden::transpose_cast(T, D, in.at("x"), DataType::kFp32, DataType::kBf16);
    const golden::MlpParams p{in.at("w1"), in.at("b1"), in.at("w2"), in.at("b2")};
    golden::MlpResult r = golden::mlp(T, D, F, xT, p, nullptr, te_rows);
    return Tensors{{"out", r.out}, {"xT", xT}, {"hT", r.hT}, {"gT", r.gT}};
  };
  return w;
}

Instance attention_instance(const WorkloadOptions& o) {
  const int T = o.seq, D = o.d_model, H = o.heads, d = D / H;
  const bool te_t = !o.dma_transpose;
  Instance w;
  w.title = fmt::format("causal multi-head attention, {} tokens, {} head{} x {}: softmax(Q K^T / sqrt({})) V", T, H,
                        H == 1 ? "" : "s", d, d);
  w.inputs = {{"q", {T, D}, DataType::kFp32, 0.0f, 1.0f, "head h: columns h*d .."},
              {"k", {T, D}, DataType::kFp32, 0.0f, 1.0f, ""},
              {"v", {T, D}, DataType::kFp32, 0.0f, 1.0f, ""}};
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    kernels::AttentionLayout l;
    l.seq = T, l.heads = H, l.head_dim = d, l.causal = true, l.te_transpose = te_t;
    l.qT_hbm = alloc(drv, {D, T}, DataType::kBf16);
    l.kT_hbm = alloc(drv, {D, T}, DataType::kBf16);
    l.v_hbm = alloc(drv, {H, T, d}, DataType::kBf16);
    l.scores_hbm = alloc(drv, {H, T, T}, DataType::kFp32);
    l.probs_hbm = alloc(drv, {H, T, T}, DataType::kBf16);
    l.probsT_hbm = alloc(drv, {H, T, T}, DataType::kBf16);
    l.outT_hbm = alloc(drv, {D, T}, DataType::kFp32);
    const uint64_t out = alloc(drv, {T, D}, DataType::kFp32);
    std::vector<isa::CopyFields> prep =
        kernels::transpose_copies(in.at("q"), DataType::kFp32, l.qT_hbm, DataType::kBf16, T, D, 8);
    auto kt = kernels::transpose_copies(in.at("k"), DataType::kFp32, l.kT_hbm, DataType::kBf16, T, D, 8);
    prep.insert(prep.end(), kt.begin(), kt.end());
    for (int h = 0; h < H; ++h) {  // v[:, h*d ..] -> V_h [T, d] BF16
      isa::CopyFields c;
      c.src_type = DataType::kFp32, c.dst_type = DataType::kBf16;
      c.src_space = c.dst_space = isa::MemSpace::kHbm;
      c.src_addr = in.at("v") + uint64_t(h) * d * 4;
      c.dst_addr = l.v_hbm + uint64_t(h) * T * d * 2;
      c.count = {uint16_t(d), uint16_t(T), 1, 1};
      c.src_stride = {4, int32_t(D) * 4, 0, 0};
      c.dst_stride = {2, int32_t(d) * 2, 0, 0};
      prep.push_back(c);
    }
    seq->push_back({"q k v layout", kernels::dma_program(prep), 0});
    kernels::append(seq, kernels::make_attention_programs(drv.info(), l));
    seq->push_back({"out transpose", kernels::dma_program(kernels::transpose_copies(
                                         l.outT_hbm, DataType::kFp32, out, DataType::kFp32, D, T)), 0});
    *outs = {{"out", {T, D}, DataType::kFp32, out},
             {"scores", {H, T, T}, DataType::kFp32, l.scores_hbm},
             {"probs", {H, T, T}, DataType::kBf16, l.probs_hbm}};
  };
  w.golden = [=](const Tensors& in, int te_rows) {
    const Patterns qT = golden::transpose_cast(T, D, in.at("q"), DataType::kFp32, DataType::kBf16);
    const Patterns kT = golden::transpose_cast(T, D, in.at("k"), DataType::kFp32, DataType::kBf16);
    Patterns v(size_t(H) * T * d);
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t)
        for (int j = 0; j < d; ++j) {
          v[(size_t(h) * T + t) * d + j] = golden::element_from_f32(
              DataType::kBf16, in.at("v")[size_t(t) * D + size_t(h) * d + j], true);
        }
    golden::AttentionResult r = golden::attention(T, H, d, true, te_t, qT, kT, v, te_rows);
    return Tensors{{"out", golden::transpose_cast(D, T, r.outT, DataType::kFp32, DataType::kFp32)},
                   {"scores", r.scores},
                   {"probs", r.probs}};
  };
  return w;
}

Instance transformer_instance(const WorkloadOptions& o) {
  kernels::TransformerShape sh;
  sh.seq = o.seq, sh.d_model = o.d_model, sh.heads = o.heads, sh.d_ff = o.d_ff, sh.te_transpose = !o.dma_transpose;
  const int T = o.seq, D = o.d_model, H = o.heads, F = o.d_ff;
  Instance w;
  w.title = fmt::format("GPT-2 transformer block (pre-LN, causal attention, GELU MLP), {}", gpt2_dims(o));
  w.inputs = {{"x", {T, D}, DataType::kFp32, 0.0f, 1.0f, "residual stream"},
              {"ln1_g", {D}, DataType::kFp32, 1.0f, 0.1f, ""},
              {"ln1_b", {D}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w_qkv", {D, 3 * D}, DataType::kBf16, 0.0f, 0.02f, "attn c_attn weight, Q | K | V"},
              {"b_qkv", {3 * D}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w_o", {D, D}, DataType::kBf16, 0.0f, 0.02f, "attn c_proj weight"},
              {"b_o", {D}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"ln2_g", {D}, DataType::kFp32, 1.0f, 0.1f, ""},
              {"ln2_b", {D}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w1", {D, F}, DataType::kBf16, 0.0f, 0.02f, "mlp c_fc weight"},
              {"b1", {F}, DataType::kFp32, 0.0f, 0.02f, ""},
              {"w2", {F, D}, DataType::kBf16, 0.0f, 0.02f, "mlp c_proj weight"},
              {"b2", {D}, DataType::kFp32, 0.0f, 0.02f, ""}};
  w.build = [=](driver::Driver& drv, const Addrs& in, kernels::KernelSequence* seq, std::vector<OutputSpec>* outs) {
    kernels::TransformerInputs ti;
    ti.x = in.at("x"), ti.ln1_g = in.at("ln1_g"), ti.ln1_b = in.at("ln1_b"), ti.w_qkv = in.at("w_qkv");
    ti.b_qkv = in.at("b_qkv"), ti.w_o = in.at("w_o"), ti.b_o = in.at("b_o"), ti.ln2_g = in.at("ln2_g");
    ti.ln2_b = in.at("ln2_b"), ti.w1 = in.at("w1"), ti.b1 = in.at("b1"), ti.w2 = in.at("w2"), ti.b2 = in.at("b2");
    const uint64_t out = alloc(drv, {T, D}, DataType::kFp32);
    const kernels::TransformerBuffers probe = kernels::transformer_buffers(sh, 0);
    const kernels::TransformerBuffers b = kernels::transformer_buffers(sh, drv.alloc(probe.end));
    *seq = kernels::make_transformer_programs(drv.info(), sh, ti, b, out);
    *outs = {{"out", {T, D}, DataType::kFp32, out},
             {"ln1", {T, D}, DataType::kBf16, b.ln1},
             {"qkvT", {3 * D, T}, DataType::kBf16, b.qkvT},
             {"probs", {H, T, T}, DataType::kBf16, b.probs},
             {"attnT", {D, T}, DataType::kBf16, b.attnT},
             {"h1", {T, D}, DataType::kFp32, b.h1},
             {"ln2", {T, D}, DataType::kBf16, b.ln2},
             {"gT", {F, T}, DataType::kBf16, b.mlp_gT}};
  };
  w.golden = [=](const Tensors& in, int te_rows) {
    golden::TransformerSpec s;
    s.seq = T, s.d_model = D, s.heads = H, s.d_ff = F, s.ln_eps = sh.ln_eps, s.causal = sh.causal;
    s.te_transpose = sh.te_transpose;
    golden::TransformerParams p;
    p.ln1_g = in.at("ln1_g"), p.ln1_b = in.at("ln1_b"), p.w_qkv = in.at("w_qkv"), p.b_qkv = in.at("b_qkv");
    p.w_o = in.at("w_o"), p.b_o = in.at("b_o"), p.ln2_g = in.at("ln2_g"), p.ln2_b = in.at("ln2_b");
    p.mlp = {in.at("w1"), in.at("b1"), in.at("w2"), in.at("b2")};
    golden::TransformerResult r = golden::transformer_block(s, in.at("x"), p, te_rows);
    return Tensors{{"out", r.mlp.out}, {"ln1", r.ln1}, {"qkvT", r.qkvT}, {"probs", r.attn.probs},
                   {"attnT", r.attnT}, {"h1", r.h1},  {"ln2", r.ln2},   {"gT", r.mlp.gT}};
  };
  return w;
}

WorkloadEntry entry(const std::string& name, const std::string& summary, bool uses_heads,
                    std::function<Instance(const WorkloadOptions&)> make) {
  return {name, summary, [make, uses_heads](const WorkloadOptions& o, const ReportHooks& hooks) {
            check_shape(o, uses_heads);
            return run_instance(o, hooks, make(o));
          }};
}

}  // namespace

const std::vector<WorkloadEntry>& composite_workloads() {
  static const std::vector<WorkloadEntry> table = {
      entry("softmax", "softmax along keys of attention scores [heads*seq, seq] FP32, scale 1/sqrt(head dim)", true,
            softmax_instance),
      entry("layernorm", "LayerNorm of [seq, d_model] FP32 (gamma, beta)", false,
            [](const WorkloadOptions& o) { return norm_instance(o, false); }),
      entry("rmsnorm", "RMSNorm of [seq, d_model] FP32 (gamma)", false,
            [](const WorkloadOptions& o) { return norm_instance(o, true); }),
      entry("mlp", "GELU MLP: BF16 GEMM d_model->d_ff + bias, gelu_tanh, GEMM d_ff->d_model + bias", false,
            mlp_instance),
      entry("attention", "causal multi-head attention softmax(Q K^T / sqrt(d)) V (--heads 1: one head)", true,
            attention_instance),
      entry("transformer-block", "GPT-2 block: LN1, QKV, attention, projection + residual, LN2, MLP + residual", true,
            transformer_instance),
  };
  return table;
}

}  // namespace trnsim::tool
